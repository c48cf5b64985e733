//! `teil run`: evaluate a program on `.npy` inputs and write `.npy` outputs.
//!
//! The steps are separate public functions so that other evaluators reuse them unchanged:
//! [`load_inputs`] (reading, shape checks, random fill), [`Backend::evaluate`] (pluggable
//! evaluators), [`undefined_warnings`] (which cells are undefined and where they came from),
//! `teil_io::files::write_outputs` (all or nothing) and [`print_results`].
//!
//! Exit codes as for every subcommand: 0 success, 1 the program or an input was rejected
//! (type errors, missing input, wrong shape or dtype, corrupt `.npy`), 2 usage or I/O problems
//! (an unreadable program or `.npy` file, an output that cannot be written).

use crate::input::{fail, read_source, report, Source};
use crate::{Color, Format};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use teil::ast::{ElemType, ShapeDisplay};
use teil::interface::{self, Coded, InterfaceError};
use teil::CheckedProgram;
use teil::CodedError;
use teil_cbackend::run::Toolchain;
use teil_cbackend::{Options, ProgramError};
use teil_interp::budget::{fast_bytes, oracle_bytes, oracle_work, Budget};
use teil_interp::{RunError, Tensor};
use teil_io::npy;

/// The budget flags of `teil run` and `teil trace` (spec/limits.md, "Evaluation budgets").
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BudgetArgs {
    /// Refuse a run whose estimated memory is over BYTES (suffixes K, M, G, T: binary
    /// multiples; default: half of the machine's memory).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub max_memory: Option<u64>,
    /// Refuse an oracle run (`--backend oracle`, the values of `trace`) of more than STEPS evaluation
    /// steps (default 1e8, a few seconds).
    #[arg(long, value_name = "STEPS", value_parser = parse_count)]
    pub max_work: Option<u64>,
}

impl BudgetArgs {
    /// The budget: the flags given, the defaults of `teil_interp::budget` for the others.
    pub fn budget(&self, max_output: Option<u64>) -> Budget {
        let mut b = Budget::default();
        if let Some(m) = self.max_memory {
            b.max_memory = m;
        }
        if let Some(w) = self.max_work {
            b.max_work = w;
        }
        if let Some(o) = max_output {
            b.max_output = o;
        }
        b
    }
}

/// The suffixes a size may end with, as the flags' help lists them: binary multiples.
const SIZE_SUFFIXES: [(char, u32); 4] = [('K', 10), ('M', 20), ('G', 30), ('T', 40)];

/// A size in bytes, the one parser of `--max-memory` and `--max-output`: digits, optionally
/// followed by exactly one of the suffixes their help lists, K, M, G or T (binary multiples:
/// `512K` is 524288). Anything else (`1P`, `8 MB`, `2GiB`, `1k`, `1.5G`) is a usage error.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("`{text}` is not a size: write bytes, or a whole number followed by K, M, G or T")
    };
    let (num, shift) = match text.chars().last() {
        Some(c) if !c.is_ascii_digit() => {
            let (_, shift) = SIZE_SUFFIXES
                .iter()
                .find(|(s, _)| *s == c)
                .ok_or_else(bad)?;
            (&text[..text.len() - c.len_utf8()], *shift)
        }
        _ => (text, 0),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(bad)
}

/// A count: `1000000`, or `1e9` (a power of ten, written as such).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a count: write a whole number such as 1000000 or 1e9");
    let t = text.trim();
    match t.split_once(['e', 'E']) {
        None => t.parse::<u64>().map_err(|_| bad()),
        Some((m, e)) => {
            let m: u64 = m.parse().map_err(|_| bad())?;
            let e: u32 = e.parse().map_err(|_| bad())?;
            10u64
                .checked_pow(e)
                .and_then(|p| p.checked_mul(m))
                .ok_or_else(bad)
        }
    }
}

/// An evaluation error as `teil run` and `teil trace` print it: its code, the message, and for
/// a budget the flag that raises it.
pub fn describe(e: &RunError) -> String {
    let hint = match e {
        RunError::OverMemory { .. } => "; raise it with `--max-memory BYTES` (spec/limits.md)",
        RunError::OverWork { .. } => {
            "; the fast evaluator (`teil run` without `--backend oracle`) shares sub-results and has no \
             such cost; raise the budget with `--max-work STEPS` (spec/limits.md)"
        }
        RunError::OverOutput { .. } => "; raise it with `--max-output BYTES` (spec/limits.md)",
        _ => "",
    };
    format!("{}{hint}", e.coded())
}

/// Refuses, before anything is allocated or evaluated, a run of `backend` whose estimated
/// memory or work is over `budget`.
pub fn preflight(p: &CheckedProgram, backend: &Backend, budget: &Budget) -> Result<(), Failure> {
    let rejected = |e: RunError| Failure::Rejected(vec![describe(&e)]);
    match backend {
        Backend::Fast => budget.check_memory(&fast_bytes(p)).map_err(rejected),
        Backend::Oracle => {
            budget.check_memory(&oracle_bytes(p)).map_err(rejected)?;
            budget
                .check_work("the oracle", oracle_work(p))
                .map_err(rejected)
        }
        Backend::C(_) => {
            // The driver holds the inputs and every parameter as `f64`, as the fast store does.
            let mut est = fast_bytes(p);
            est.who = "the C backend";
            budget.check_memory(&est).map_err(rejected)
        }
    }
}

/// The evaluators `teil run` can use. Add a variant for a new backend and an arm in
/// [`Backend::evaluate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The whole-tensor evaluator with fused contractions (default).
    Fast,
    /// The reference interpreter, pointwise (`--backend oracle`; `--oracle` is a hidden alias).
    Oracle,
    /// The padding-aware C backend, compiled and run in a separate process (`--backend c`).
    C(CBackend),
}

impl Backend {
    /// Runs `p` on `inputs`; returns the final value of every variable (of every parameter,
    /// for the C backend).
    pub fn evaluate(
        &self,
        p: &CheckedProgram,
        inputs: &BTreeMap<String, Tensor>,
        budget: &Budget,
    ) -> Result<BTreeMap<String, Tensor>, Failure> {
        let rejected = |e: RunError| Failure::Rejected(vec![describe(&e)]);
        match self {
            Backend::Fast => teil_interp::run_fast_with(p, inputs, budget).map_err(rejected),
            Backend::Oracle => teil_interp::run_oracle_with(p, inputs, budget).map_err(rejected),
            Backend::C(c) => c.run(p, inputs),
        }
    }
}

/// Why `teil run` stops, with its exit code.
#[derive(Debug)]
pub enum Failure {
    /// The program or an input was rejected (exit 1); one message per problem.
    Rejected(Vec<String>),
    /// Usage or I/O problems (exit 2).
    Usage(String),
    /// Input files that cannot be read (missing, not a regular file, ...), listed first, and
    /// the other input problems found (exit 2, an I/O problem).
    Unreadable(Vec<String>),
    /// Like `Usage`, with a diagnostic code (exit 2).
    Coded(teil::Code, String),
    /// Stopped by SIGINT or SIGTERM (exit 130, `crate::interrupt`).
    Interrupted,
}

impl Failure {
    /// Prints the messages and returns the exit code.
    pub fn report(&self) -> u8 {
        match self {
            Failure::Rejected(msgs) => {
                for m in msgs {
                    fail(m);
                }
                1
            }
            Failure::Usage(m) => {
                fail(m);
                2
            }
            Failure::Unreadable(msgs) => {
                for m in msgs {
                    fail(m);
                }
                2
            }
            Failure::Coded(code, m) => {
                crate::input::fail_coded(Some(*code), m);
                2
            }
            Failure::Interrupted => {
                fail("interrupted");
                crate::interrupt::EXIT_INTERRUPTED
            }
        }
    }
}

pub struct RunArgs {
    pub file: String,
    pub inputs: Vec<String>,
    pub random_inputs: Option<u64>,
    pub out: Option<PathBuf>,
    pub print: bool,
    pub backend: Backend,
    pub budget: Budget,
    pub color: Color,
}

pub fn run(args: &RunArgs) -> u8 {
    let p = match compile(&args.file, args.color) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let Err(f) = preflight(&p, &args.backend, &args.budget) {
        return f.report();
    }
    let inputs = match load_inputs(&p, &args.inputs, args.random_inputs) {
        Ok(i) => i,
        Err(f) => return f.report(),
    };
    let results = match args.backend.evaluate(&p, &inputs, &args.budget) {
        Ok(r) => r,
        Err(f) => return f.report(),
    };
    let outputs = p.output_names();
    for w in undefined_warnings(&p, &inputs, &results, &outputs) {
        crate::out::eprint(&format!("warning: {w}\n"));
    }
    let typed: Vec<(String, ElemType)> = (outputs.iter())
        .map(|n| (n.clone(), p.var_elem(n).unwrap_or_default()))
        .collect();
    if let Some(dir) = &args.out {
        if let Err(e) = teil_io::files::write_outputs(dir, &typed, &results) {
            return Failure::Usage(e.to_string()).report();
        }
    }
    if args.print || args.out.is_none() {
        crate::out::print(&print_results(&typed, &results));
    }
    0
}

/// Reads and checks a program file (TeIL, or index notation for `.tin`); diagnostics are
/// printed. `Err` carries the exit code.
pub fn compile(file: &str, color: Color) -> Result<CheckedProgram, u8> {
    compile_source(file, color).map(|(p, _)| p)
}

/// [`compile`], also returning the text read (standard input can be read only once).
pub fn compile_source(file: &str, color: Color) -> Result<(CheckedProgram, Source), u8> {
    let src = read_source(file).map_err(|e| e.report(Format::Text, color))?;
    match teil::guard::load(&src.name, &src.text) {
        Ok((p, warnings)) => {
            report(&warnings, &src, Format::Text, color);
            Ok((p, src))
        }
        Err(diags) => {
            report(&diags, &src, Format::Text, color);
            Err(1)
        }
    }
}

/// Builds the caller's inputs from `--in NAME=FILE` specs and `--random-inputs SEED`
/// (files win over random values). Every problem is reported, not just the first.
pub fn load_inputs(
    p: &CheckedProgram,
    specs: &[String],
    random: Option<u64>,
) -> Result<BTreeMap<String, Tensor>, Failure> {
    let mut given: BTreeMap<String, PathBuf> = BTreeMap::new();
    for spec in specs {
        let Some((name, path)) = spec.split_once('=') else {
            return Err(Failure::Usage(format!(
                "`--in {spec}` should be `--in NAME=FILE.npy`"
            )));
        };
        if given
            .insert(name.to_string(), PathBuf::from(path))
            .is_some()
        {
            return Err(Failure::Usage(format!("`--in` gives `{name}` twice")));
        }
    }
    let mut errors = Vec::new();
    let mut unreadable = Vec::new();
    let mut inputs = match random.map(|seed| teil_interp::try_random_inputs(p, seed)) {
        Some(Ok(i)) => i,
        Some(Err(e)) => return Err(Failure::Rejected(vec![describe(&e)])),
        None => BTreeMap::new(),
    };
    // What the caller gives, by name: the shape of each file that could be read (the others
    // have `None`, so only their names are checked), and the random values not overridden.
    let mut shapes: BTreeMap<String, Option<Vec<u64>>> = inputs
        .iter()
        .filter(|(name, _)| !given.contains_key(*name))
        .map(|(name, t)| (name.clone(), Some(teil_interp::tensor_shape(t))))
        .collect();
    for (name, path) in &given {
        shapes.insert(name.clone(), None);
        // Only an input's file is read: the interface reports any other name.
        let Some(d) = p.decl(name).filter(|d| p.is_input(d)) else {
            continue;
        };
        // A file that cannot be read at all is an I/O problem (exit 2), as for the program
        // file; one that is read but holds no acceptable array is a rejected input (exit 1).
        if let Err(e) = teil_io::files::check_regular(path) {
            unreadable.push(format!(
                "cannot read input `{name}` from `{}`: {e}",
                path.display()
            ));
            continue;
        }
        match npy::read_typed(path, None) {
            Err(npy::NpyError::Io(e)) => unreadable.push(format!(
                "cannot read input `{name}` from `{}`: {e}",
                path.display()
            )),
            Err(e) => {
                let code = matches!(e, npy::NpyError::OutOfMemory { .. })
                    .then_some(teil::Code::OutOfMemory);
                let message = format!(
                    "cannot read input `{name}` (shape {}) from `{}`: {e}",
                    ShapeDisplay(&d.shape()),
                    path.display()
                );
                errors.push(teil::diagnostic::with_code(code, &message));
            }
            // A variable declared f32 takes float32 data only (E0605); an f64 one either
            // (float32 widens exactly).
            Ok((_, ElemType::F64)) if d.elem == ElemType::F32 => {
                let e = InterfaceError::InputElemType {
                    name: name.clone(),
                    declared: ElemType::F32,
                    found: "float64".to_string(),
                    value: None,
                };
                let coded = Coded(std::slice::from_ref(&e));
                errors.push(format!("{coded} (in `{}`)", path.display()));
            }
            Ok((t, _)) => {
                shapes.insert(name.clone(), Some(teil_interp::tensor_shape(&t)));
                inputs.insert(name.clone(), t);
            }
        }
    }
    // The caller boundary's verdict (`teil::interface`), with where each value came from.
    let shapes = shapes
        .iter()
        .map(|(name, shape)| (name.as_str(), shape.as_ref()));
    if let Err(problems) = interface::check_inputs(p, shapes) {
        for e in &problems {
            let coded = Coded(std::slice::from_ref(e));
            errors.push(match e {
                InterfaceError::MissingInput { name, .. } => {
                    format!("{coded}: give `--in {name}=FILE.npy` or `--random-inputs SEED`")
                }
                InterfaceError::InputShape { name, .. } => match given.get(name) {
                    Some(path) => format!("{coded} (in `{}`)", path.display()),
                    None => coded.to_string(),
                },
                _ => coded.to_string(),
            });
        }
    }
    if !unreadable.is_empty() {
        unreadable.extend(errors);
        Err(Failure::Unreadable(unreadable))
    } else if errors.is_empty() {
        Ok(inputs)
    } else {
        Err(Failure::Rejected(errors))
    }
}

/// One warning per output variable holding NaN: how many cells are undefined, the first one,
/// and the uninitialized variables they came from (see `teil_interp::undefined`).
pub fn undefined_warnings(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    results: &BTreeMap<String, Tensor>,
    outputs: &[String],
) -> Vec<String> {
    match teil_interp::undefined::analyse(p, inputs, results, outputs) {
        Ok(reports) => reports.iter().flat_map(|r| r.messages()).collect(),
        Err(e) => vec![format!("cannot tell where the NaN cells come from: {e}")],
    }
}

/// The results as readable nested arrays, one block per output variable.
/// An `f32` output's type reads `f32[2, 3]` and its values are binary32's shortest round-trip
/// decimals; an `f64` one's reads `[2, 3]`, as it always has.
pub fn print_results(outputs: &[(String, ElemType)], results: &BTreeMap<String, Tensor>) -> String {
    let mut out = String::new();
    for (name, elem) in outputs {
        if let Some(t) = results.get(name) {
            let shape = teil_interp::tensor_shape(t);
            let ty = match elem {
                ElemType::F64 => "",
                t => t.keyword(),
            };
            out.push_str(&format!(
                "{name} : {ty}{} =\n{}\n",
                ShapeDisplay(&shape),
                nested(t, *elem)
            ));
        }
    }
    out
}

/// Axes longer than this are shown as their first and last `EDGE` entries when the tensor has
/// more than `SUMMARY_ELEMENTS` cells (as NumPy does).
const SUMMARY_ELEMENTS: usize = 1000;
const EDGE: usize = 3;

/// `[[1, 2], [3, 4]]` over several lines, columns right-aligned.
pub fn nested(t: &Tensor, elem: ElemType) -> String {
    let summarise = t.len() > SUMMARY_ELEMENTS;
    let shown = |n: usize| -> Vec<Option<usize>> {
        if summarise && n > 2 * EDGE {
            (0..EDGE)
                .map(Some)
                .chain(std::iter::once(None))
                .chain((n - EDGE..n).map(Some))
                .collect()
        } else {
            (0..n).map(Some).collect()
        }
    };
    // Shortest round-trip decimals; exponent notation for very large or very small magnitudes.
    let num = |x: f64| {
        let single = x as f32;
        match elem {
            _ if x.is_nan() => "NaN".to_string(),
            ElemType::F64 if x != 0.0 && x.is_finite() && !(1e-5..1e16).contains(&x.abs()) => {
                format!("{x:e}")
            }
            ElemType::F64 => format!("{x}"),
            ElemType::F32 if x != 0.0 && x.is_finite() && !(1e-5..1e16).contains(&x.abs()) => {
                format!("{single:e}")
            }
            ElemType::F32 => format!("{single}"),
        }
    };
    let width = t.iter().map(|&x| num(x).len()).max().unwrap_or(1);
    fn rec(
        t: &Tensor,
        idx: &mut Vec<usize>,
        depth: usize,
        out: &mut String,
        shown: &dyn Fn(usize) -> Vec<Option<usize>>,
        cell: &dyn Fn(f64) -> String,
    ) {
        let shape = t.shape();
        if depth == shape.len() {
            out.push_str(&cell(t[idx.as_slice()]));
            return;
        }
        out.push('[');
        let entries = shown(shape[depth]);
        for (k, e) in entries.iter().enumerate() {
            if k > 0 {
                out.push(',');
                if depth + 1 == shape.len() {
                    out.push(' ');
                } else {
                    out.push_str(&"\n".repeat(shape.len() - depth - 1));
                    out.push_str(&" ".repeat(depth + 1));
                }
            }
            match e {
                Some(i) => {
                    idx.push(*i);
                    rec(t, idx, depth + 1, out, shown, cell);
                    idx.pop();
                }
                None => out.push_str("..."),
            }
        }
        out.push(']');
    }
    let mut out = String::new();
    let cell = |x: f64| format!("{:>width$}", num(x));
    rec(t, &mut Vec::new(), 0, &mut out, &shown, &cell);
    out
}

#[cfg(test)]
mod budget_flag_tests {
    use super::{parse_bytes, parse_count};

    #[test]
    fn sizes_and_counts() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("0"), Ok(0));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("16M"), Ok(16 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("1T"), Ok(1 << 40));
        assert_eq!(parse_bytes("16777215T"), Ok(16_777_215 << 40));
        // Issue 23: exactly the help's suffixes, K, M, G and T; nothing else.
        for bad in [
            "",
            "G",
            "1.5G",
            "-1",
            "+1",
            "1P",
            "1E",
            "99999999999T",
            "16777216T",
            "1e9",
            "2GiB",
            "8 MB",
            "1KB",
            "1B",
            "1t",
            "1k",
            " 1K",
            "1K ",
            "1KK",
            "K1",
            "1\u{0}",
            "1é",
        ] {
            assert_eq!(
                parse_bytes(bad),
                Err(format!(
                    "`{bad}` is not a size: write bytes, or a whole number followed by K, M, G or T"
                )),
                "{bad}"
            );
        }
        assert_eq!(parse_count("1000000"), Ok(1_000_000));
        assert_eq!(parse_count("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_count("3E2"), Ok(300));
        for bad in ["", "1e", "e9", "1.5e9", "-5", "1e20", "2e19x"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }
}

/// The default of `--cc-timeout`, in seconds.
pub const DEFAULT_CC_TIMEOUT: u64 = teil_cbackend::run::DEFAULT_TIMEOUT.as_secs();

/// `teil run --backend c`: lowers the program, compiles it with a generated driver, runs the
/// driver in its own process, and returns every parameter's final value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CBackend {
    pub pad: u64,
    pub toolchain: Toolchain,
    /// Parallel outer loops (`--openmp`); the toolchain then has `-fopenmp`.
    pub openmp: bool,
    /// Fused multiply-add mode (`--fma`, spec/values.md).
    pub fma: bool,
    /// Reassociation within the laws of spec/values.md ([`Options::lift`]; off with
    /// `--no-reassociate`).
    pub reassociate: bool,
    /// The machine the kernels are sized for (`--target-cpu`; `None`: `$TEIL_TARGET_CPU`,
    /// else the host), resolved by `teil_cbackend::machine::Machine::target`.
    pub target_cpu: Option<String>,
}

impl CBackend {
    /// `cflags`, when given, replaces the default `-O2` (split on whitespace).
    pub fn new(pad: u64, cc: String, cflags: Option<&str>) -> Self {
        let toolchain = Toolchain {
            cc,
            ..Toolchain::default()
        };
        let toolchain = match cflags {
            Some(f) => toolchain.with_cflags(f),
            None => toolchain,
        };
        CBackend {
            pad,
            toolchain,
            openmp: false,
            fma: false,
            reassociate: true,
            target_cpu: None,
        }
    }

    /// Sizes the kernels for `machine` (`--target-cpu`).
    pub fn with_target_cpu(mut self, machine: Option<String>) -> Self {
        self.target_cpu = machine;
        self
    }

    /// Bounds each compiler run and each driver run to `seconds` (`--cc-timeout`).
    pub fn with_timeout(mut self, seconds: u64) -> Self {
        self.toolchain.timeout = Duration::from_secs(seconds);
        self
    }

    /// With `on`, kernels get OpenMP pragmas and are compiled with `-fopenmp`.
    pub fn with_openmp(mut self, on: bool) -> Self {
        if on && !self.openmp {
            self.toolchain.cflags.push("-fopenmp".to_string());
        }
        self.openmp |= on;
        self
    }

    /// With `on`, kernels are lowered in fma mode.
    pub fn with_fma(mut self, on: bool) -> Self {
        self.fma = on;
        self
    }

    /// With `on` (the default), kernels may reassociate sums (contraction lifting, sums in
    /// lanes); off, every sum keeps the spec's fold.
    pub fn with_reassociate(mut self, on: bool) -> Self {
        self.reassociate = on;
        self
    }

    pub fn run(
        &self,
        p: &CheckedProgram,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>, Failure> {
        let machine = teil_cbackend::machine::Machine::target(self.target_cpu.as_deref())
            .map_err(|e| Failure::Usage(format!("--target-cpu: {e}")))?;
        if let Some(hint) = teil_cbackend::machine::hint_for_target(self.target_cpu.as_deref()) {
            crate::out::eprint(&format!("{hint}\n"));
        }
        let opts = Options {
            pad: self.pad,
            fma: self.fma,
            openmp: self.openmp,
            lift: self.reassociate,
            sizes: machine.sizes(),
            ..Options::default()
        };
        let toolchain = Toolchain {
            cancel: crate::interrupt::cancel_on_signal(),
            ..self.toolchain.clone()
        };
        teil_cbackend::run_program(p, &opts, &toolchain, inputs).map_err(|e| match e {
            ProgramError::Lower(teil_cbackend::Error::BadPad(_)) => Failure::Usage(e.to_string()),
            ProgramError::Lower(_) => Failure::Rejected(vec![e.coded()]),
            ProgramError::Inputs(errors) => Failure::Rejected(
                errors
                    .iter()
                    .map(|e| Coded(std::slice::from_ref(e)).to_string())
                    .collect(),
            ),
            ProgramError::Run(teil_cbackend::run::DriverError::Input(_)) => {
                Failure::Rejected(vec![e.coded()])
            }
            ProgramError::Run(teil_cbackend::run::DriverError::Interrupted) => Failure::Interrupted,
            ProgramError::Run(e) => match e.code() {
                Some(code) => Failure::Coded(code, e.to_string()),
                None => Failure::Usage(e.to_string()),
            },
            ProgramError::NonzeroPadding(_) => Failure::Usage(e.to_string()),
        })
    }
}
