//! `teil run`: evaluate a program on `.npy` inputs and write `.npy` outputs.
//!
//! The steps are separate public functions so that other evaluators reuse them unchanged:
//! [`load_inputs`] (reading, shape checks, random fill), [`Backend::evaluate`] (pluggable
//! evaluators), [`undefined_warnings`] (which cells are undefined and where they came from),
//! [`write_outputs`] (atomic: nothing half-written in the directory) and [`print_results`].
//!
//! Exit codes as for every subcommand: 0 success, 1 the program or an input was rejected
//! (type errors, missing input, wrong shape or dtype, unreadable or corrupt `.npy`), 2 usage or
//! output I/O problems.

use crate::input::{fail, read_source, report};
use crate::{Color, Format};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use teil::ast::ShapeDisplay;
use teil::CheckedProgram;
use teil_interp::{npy, RunError, Tensor};

/// The evaluators `teil run` can use. Add a variant for a new backend and an arm in
/// [`Backend::evaluate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The whole-tensor evaluator with fused contractions (default).
    Fast,
    /// The reference interpreter, pointwise (`--oracle`).
    Oracle,
    /// The padding-aware C backend, compiled and run in a separate process (`--backend c`).
    C(crate::emit_c::CBackend),
}

impl Backend {
    /// Runs `p` on `inputs`; returns the final value of every variable (of every parameter,
    /// for the C backend).
    pub fn evaluate(
        &self,
        p: &CheckedProgram,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>, Failure> {
        let rejected = |e: RunError| Failure::Rejected(vec![e.to_string()]);
        match self {
            Backend::Fast => teil_interp::run_fast(p, inputs).map_err(rejected),
            Backend::Oracle => teil_interp::run_oracle(p, inputs).map_err(rejected),
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
    pub color: Color,
}

pub fn run(args: &RunArgs) -> u8 {
    let p = match compile(&args.file, args.color) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let inputs = match load_inputs(&p, &args.inputs, args.random_inputs) {
        Ok(i) => i,
        Err(f) => return f.report(),
    };
    let results = match args.backend.evaluate(&p, &inputs) {
        Ok(r) => r,
        Err(f) => return f.report(),
    };
    let outputs = output_names(&p);
    for w in undefined_warnings(&p, &inputs, &results, &outputs) {
        eprintln!("warning: {w}");
    }
    if let Some(dir) = &args.out {
        if let Err(f) = write_outputs(dir, &outputs, &results) {
            return f.report();
        }
    }
    if args.print || args.out.is_none() {
        print!("{}", print_results(&outputs, &results));
    }
    0
}

/// Reads and checks a program file (TeIL, or index notation for `.tin`); diagnostics are
/// printed. `Err` carries the exit code.
pub fn compile(file: &str, color: Color) -> Result<CheckedProgram, u8> {
    let src = read_source(file).map_err(|e| {
        fail(&e);
        2
    })?;
    match teil::guard::load(&src.name, &src.text) {
        Ok((p, warnings)) => {
            report(&warnings, &src, Format::Text, color);
            Ok(p)
        }
        Err(diags) => {
            report(&diags, &src, Format::Text, color);
            Err(1)
        }
    }
}

/// The variables the caller receives: `output`/`inout`, or every variable without qualifiers.
pub fn output_names(p: &CheckedProgram) -> Vec<String> {
    p.output_names()
}

/// Whether the caller must supply `d` ([`CheckedProgram::is_required`]).
pub fn required(p: &CheckedProgram, d: &teil::ast::Decl) -> bool {
    p.is_required(d)
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
    let mut inputs = match random {
        Some(seed) => teil_interp::random_inputs(p, seed),
        None => BTreeMap::new(),
    };
    let mut errors = Vec::new();
    for (name, path) in &given {
        let Some(d) = p.program().decl(name) else {
            errors.push(format!("`{name}` is not a variable of the program"));
            continue;
        };
        if !p.is_input(d) {
            errors.push(format!(
                "`{name}` is not an input of the program (only `input` and `inout` variables take `--in`)"
            ));
            continue;
        }
        let expected = d.shape();
        match npy::read(path) {
            Err(e) => errors.push(format!(
                "cannot read input `{name}` (shape {}) from `{}`: {e}",
                ShapeDisplay(&expected),
                path.display()
            )),
            Ok(t) => {
                let found = teil_interp::tensor_shape(&t);
                if found != expected {
                    errors.push(format!(
                        "input `{name}` has the wrong shape: expected {}, found {} in `{}`",
                        ShapeDisplay(&expected),
                        ShapeDisplay(&found),
                        path.display()
                    ));
                } else {
                    inputs.insert(name.clone(), t);
                }
            }
        }
    }
    for d in &p.program().decls {
        if required(p, d) && !inputs.contains_key(&d.name.name) && !given.contains_key(&d.name.name)
        {
            errors.push(format!(
                "missing input `{}` of shape {}: give `--in {}=FILE.npy` or `--random-inputs SEED`",
                d.name.name,
                ShapeDisplay(&d.shape()),
                d.name.name
            ));
        }
    }
    if errors.is_empty() {
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

/// Writes `DIR/NAME.npy` for each name in `outputs`. All files are first written under
/// temporary names in `DIR` and renamed only when every one was written, so a failure leaves
/// no partial output behind.
pub fn write_outputs(
    dir: &Path,
    outputs: &[String],
    results: &BTreeMap<String, Tensor>,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Usage(format!("cannot create `{}`: {e}", dir.display())))?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let cleanup = |staged: &[(PathBuf, PathBuf)]| {
        for (tmp, _) in staged {
            let _ = std::fs::remove_file(tmp);
        }
    };
    for name in outputs {
        let Some(t) = results.get(name) else {
            cleanup(&staged);
            return Err(Failure::Usage(format!(
                "internal error: no result for `{name}`"
            )));
        };
        let tmp = dir.join(format!(".{name}.npy.tmp{}", std::process::id()));
        let dest = dir.join(format!("{name}.npy"));
        if let Err(e) = std::fs::write(&tmp, npy::to_bytes(t)) {
            let _ = std::fs::remove_file(&tmp);
            cleanup(&staged);
            return Err(Failure::Usage(format!(
                "cannot write `{}`: {e}",
                dest.display()
            )));
        }
        staged.push((tmp, dest));
    }
    for (i, (tmp, dest)) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(tmp, dest) {
            cleanup(&staged[i..]);
            return Err(Failure::Usage(format!(
                "cannot write `{}`: {e}",
                dest.display()
            )));
        }
    }
    Ok(())
}

/// The results as readable nested arrays, one block per output variable.
pub fn print_results(outputs: &[String], results: &BTreeMap<String, Tensor>) -> String {
    let mut out = String::new();
    for name in outputs {
        if let Some(t) = results.get(name) {
            let shape = teil_interp::tensor_shape(t);
            out.push_str(&format!(
                "{name} : {} =\n{}\n",
                ShapeDisplay(&shape),
                nested(t)
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
pub fn nested(t: &Tensor) -> String {
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
        if x.is_nan() {
            "NaN".to_string()
        } else if x != 0.0 && x.is_finite() && !(1e-5..1e16).contains(&x.abs()) {
            format!("{x:e}")
        } else {
            format!("{x}")
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
