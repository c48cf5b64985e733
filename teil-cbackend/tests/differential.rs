//! Differential tests: the generated C against the reference interpreter (the oracle).
//!
//! Every corpus program (`tests/**/*.teil`, `tests/**/*.tin`, `examples/*.teil` that check and
//! fit) and 900 random well-typed programs run through the oracle and through the C backend at
//! every padding multiple M in {1, 3, 4, 8, 16}: 700 from the type-directed generator
//! (`teil_fuzz::gen`, sampled from fixed seeds; with and without division; a rank-5 set at
//! M <= 8 so that buffers stay small) and 200 contraction chains built so that lifting fires.
//! After every run, every padding cell of every parameter must be zero. Comparison
//! (spec/padding.md, *Exactness*): bit for bit (NaN = `•`, -0 = +0) unless contraction lifting
//! rewrote a program with division or with large values, where the documented bound applies;
//! lifted programs also run once more without lifting, bit for bit.
//!
//! Kernels are compiled with two flag sets: the strict warning check with optimisation on
//! (`STRICT`, so that vectorised code is exercised) and `-fsanitize=address,undefined`
//! (`SANITIZE`, where any sanitizer output fails). Compiling is nearly all the suite's time
//! (gcc 12: about 11 ms of CPU per kernel at `-O2`, 9 ms with the sanitizers). By default, and
//! in CI, every kernel runs under both flag sets ([`Schedule::Full`]); the oracle's results are
//! computed once for both. For a quicker local iteration, `TEIL_DIFFERENTIAL_QUICK=1` compiles
//! each (program, M) kernel once, under the two flag sets in alternation
//! ([`Schedule::Alternating`], half the compile time): every kernel is still checked, and every
//! program and every M runs under both flag sets, but not every pair (tests/README.md).
//! Programs are batched: one translation unit and one driver process per flag set and test.
//!
//! Every test then runs its programs once more under the flags that make compilers contract
//! `a * b + c` into fused multiply-adds (`compilers::contracting`: `-O3 -march=native` in
//! GCC's GNU mode, `-O2 -mfma`, Clang `-O3 -march=native`): the unlifted kernels at M = 1 and
//! 4, on uniform(-1, 1) inputs whose products and sums round (the small integers above never
//! do, so they cannot see a fused multiply-add), bit for bit against the oracle on the same
//! inputs ([`contracting`]; spec/abi.md, "Floating point").

mod compilers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use teil::ast::{BinOp, ExprKind};
use teil::CheckedProgram;
use teil_cbackend::ir::Kernel;
use teil_cbackend::run::{run_batch, Job, Toolchain};
use teil_cbackend::Options;
use teil_fuzz::gen::{self, GenConfig};
use teil_interp::Tensor;

const PADS: [u64; 5] = [1, 3, 4, 8, 16];

/// Flags of the normal run: the warning check of spec/abi.md, with optimisation on so that
/// vectorised code is exercised.
const STRICT: &str = "-std=c99 -O2 -Wall -Wextra -Werror -pedantic";

/// Flags of the sanitizer run.
const SANITIZE: &str =
    "-std=c99 -O0 -Wall -Wextra -Werror -pedantic -fsanitize=address,undefined -fno-sanitize-recover=all";

struct Case {
    label: String,
    program: CheckedProgram,
    inputs: BTreeMap<String, Tensor>,
    expected: BTreeMap<String, Tensor>,
    division: bool,
}

fn has_division(p: &CheckedProgram) -> bool {
    let mut found = false;
    for s in &p.program().stmts {
        s.value.walk(&mut |e| {
            found |= matches!(e.kind, ExprKind::Binary(BinOp::Div, ..));
        });
    }
    found
}

/// Runs the oracle; `None` when it refuses the program (too large for it), which is not a
/// mismatch (the case is discarded and counted).
fn case(label: String, program: CheckedProgram, seed: u64) -> Option<Case> {
    let inputs = teil_interp::random_inputs(&program, seed);
    match teil_interp::run_oracle(&program, &inputs) {
        Ok(expected) => Some(Case {
            label,
            division: has_division(&program),
            program,
            inputs,
            expected,
        }),
        Err(e) => {
            assert!(!e.is_internal(), "{label}: the oracle failed: {e}");
            None
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            corpus_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "teil" || e == "tin") {
            out.push(p);
        }
    }
}

/// Corpus programs that check and are small enough to run at M = 16.
fn corpus() -> (Vec<Case>, usize) {
    let root = workspace_root();
    let mut files = Vec::new();
    corpus_files(&root.join("tests"), &mut files);
    corpus_files(&root.join("examples"), &mut files);
    let mut cases = Vec::new();
    let mut discarded = 0;
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let name = f.to_string_lossy().into_owned();
        let Ok((program, _)) = teil::guard::load(&name, &text) else {
            continue;
        };
        // Every well-typed program lowers, element types and functions included.
        if let Err(e) = teil_cbackend::lower(&program, &Options::default()) {
            panic!("{name}: {e}");
        }
        let padded: u64 = program
            .program()
            .decls
            .iter()
            .map(|d| {
                d.shape()
                    .iter()
                    .fold(1u64, |acc, n| acc.saturating_mul(n.div_ceil(16) * 16))
            })
            .fold(0u64, u64::saturating_add);
        if padded > 1 << 20 {
            discarded += 1;
            continue;
        }
        let label = f
            .strip_prefix(&root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        match case(label, program, 7) {
            Some(c) => cases.push(c),
            None => discarded += 1,
        }
    }
    (cases, discarded)
}

/// The random program sets: (seeds, generator settings, padding multiples).
fn random_sets() -> Vec<(std::ops::Range<u64>, GenConfig, &'static [u64])> {
    // Rank-4 intermediates keep M = 16 buffers small (16^4 doubles); a third set covers rank 5
    // at the multiples where its buffers stay below a few MiB.
    let rank4 = GenConfig {
        max_inner_rank: 4,
        ..GenConfig::default()
    };
    vec![
        (0..300, rank4.clone(), &PADS),
        (
            1000..1300,
            GenConfig {
                division: true,
                ..rank4
            },
            &PADS,
        ),
        (
            2000..2100,
            GenConfig {
                division: true,
                ..GenConfig::default()
            },
            &PADS[..4],
        ),
    ]
}

fn random(seeds: std::ops::Range<u64>, cfg: GenConfig) -> Vec<Case> {
    let division = cfg.division;
    let strategy = gen::program(cfg);
    seeds
        .filter_map(|seed| {
            let program = gen::sample(&strategy, seed);
            let text = teil::fmt::program(&program, teil::fmt::Style::Infix);
            let (checked, _) = teil::check(program)
                .unwrap_or_else(|d| panic!("generated program does not check: {d:?}\n{text}"));
            case(
                format!("random seed {seed} (division: {division})\n{text}"),
                checked,
                seed,
            )
        })
        .collect()
}

// SplitMix64, for the contraction-chain generator below.
use teil_interp::random::SplitMix64 as Rng;

/// One random contraction chain over fresh inputs: a product of 3 to 5 factors, some
/// transpositions, one to four contractions of equal-extent pairs, maybe a `red+`, a scalar
/// factor or an `expa`. Returns the expression and its shape, declaring its inputs in `decls`.
fn chain(rng: &mut Rng, decls: &mut Vec<String>, division: bool) -> (String, Vec<u64>) {
    let mut dims: Vec<u64> = Vec::new();
    let mut factors = Vec::new();
    for _ in 0..3 + rng.below(3) {
        let name = format!("x{}", decls.len());
        let shape: Vec<u64> = (0..rng.below(4)).map(|_| 2 + rng.below(2) as u64).collect();
        let extents: Vec<String> = shape.iter().map(u64::to_string).collect();
        decls.push(format!("input var {name} : [{}]", extents.join(" ")));
        dims.extend(&shape);
        factors.push(name);
    }
    let mut e = format!("({})", factors.join(" # "));
    let rounds = 1 + rng.below(4);
    let mut round = 0;
    while (round < rounds || dims.len() > 4) && round < 12 {
        round += 1;
        if dims.len() >= 2 && rng.below(3) == 0 {
            let (i, j) = (rng.below(dims.len()), rng.below(dims.len()));
            if i != j {
                dims.swap(i, j);
                e = format!("({e} ^[{} {}])", i + 1, j + 1);
            }
        }
        let pairs: Vec<(usize, usize)> = (0..dims.len())
            .flat_map(|i| (i + 1..dims.len()).map(move |j| (i, j)))
            .filter(|&(i, j)| dims[i] == dims[j])
            .collect();
        if pairs.is_empty() {
            break;
        }
        let (i, j) = pairs[rng.below(pairs.len())];
        dims.remove(j);
        dims.remove(i);
        e = format!("({e} .[{} {}])", i + 1, j + 1);
    }
    if !dims.is_empty() && rng.below(3) == 0 {
        let i = rng.below(dims.len());
        dims.remove(i);
        e = format!("(red+ {} {e})", i + 1);
    }
    match rng.below(5) {
        0 => e = format!("2 * {e}"),
        1 if division && !dims.is_empty() => {
            let name = format!("x{}", decls.len());
            decls.push(format!("input var {name} : []"));
            e = format!("{e} / {name}");
        }
        2 => {
            let i = rng.below(dims.len() + 1);
            dims.insert(i, 3);
            e = format!("(expa {} 3 {e})", i + 1);
        }
        _ => {}
    }
    (e, dims)
}

/// `count` random programs built around contraction chains, so that lifting fires often
/// (seeds from `first` on; chains whose result has rank above 4 are skipped).
fn chains(first: u64, count: usize, division: bool) -> Vec<Case> {
    (first..)
        .filter_map(|seed| {
            let mut rng = Rng(seed);
            let mut decls = Vec::new();
            let (e, shape) = chain(&mut rng, &mut decls, division);
            if shape.len() > 4 {
                return None;
            }
            let mut rhs = e;
            if rng.below(3) == 0 {
                // A second chain of the same shape, if the generator finds one quickly.
                for _ in 0..8 {
                    let mut more = decls.clone();
                    let (e2, s2) = chain(&mut rng, &mut more, division);
                    if s2 == shape {
                        decls = more;
                        rhs = format!("{rhs} + {e2}");
                        break;
                    }
                }
            }
            let extents: Vec<String> = shape.iter().map(u64::to_string).collect();
            let text = format!(
                "{}\noutput var r : [{}]\nr = {rhs}\n",
                decls.join("\n"),
                extents.join(" ")
            );
            let (checked, _) = teil::compile(&text)
                .unwrap_or_else(|d| panic!("chain program does not check: {d:?}\n{text}"));
            case(format!("chain seed {seed}\n{text}"), checked, seed)
        })
        .take(count)
        .collect()
}

/// Whether lifted results `c` are within the bound of spec/padding.md of the oracle's `o`.
fn within_bound(o: &Tensor, c: &Tensor) -> bool {
    o.shape() == c.shape()
        && o.iter().zip(c.iter()).all(|(&x, &y)| {
            if !x.is_finite() || !y.is_finite() {
                !x.is_finite() && !y.is_finite()
            } else {
                (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs()))
            }
        })
}

/// Below this magnitude, small-integer programs without division compute exactly in any order.
const EXACT_LIMIT: f64 = (1u64 << 50) as f64;

fn small_integers(values: &BTreeMap<String, Tensor>) -> bool {
    values
        .values()
        .flat_map(|t| t.iter())
        .all(|x| x.is_nan() || (x.abs() < EXACT_LIMIT && x.fract() == 0.0))
}

struct Run<'c> {
    case: &'c Case,
    kernel: Kernel,
    exact: bool,
}

/// Which of the two flag sets each (program, M) kernel is compiled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Schedule {
    /// Each kernel once: kernel `k` (the index of M in the test's list) of case `i` under the
    /// strict flags when `i + k` is even, under the sanitizers when it is odd
    /// (`TEIL_DIFFERENTIAL_QUICK=1`, for local iteration only).
    Alternating,
    /// Each kernel under both flag sets: the default, and what CI runs.
    Full,
}

impl Schedule {
    fn from_env() -> Schedule {
        match std::env::var("TEIL_DIFFERENTIAL_QUICK").as_deref() {
            Ok("1") => Schedule::Alternating,
            _ => Schedule::Full,
        }
    }

    /// The flag sets (indices into [`toolchains`]) of kernel `k` of case `i`.
    fn flag_sets(self, i: usize, k: usize) -> &'static [usize] {
        match self {
            Schedule::Full => &[0, 1],
            Schedule::Alternating if (i + k) % 2 == 0 => &[0],
            Schedule::Alternating => &[1],
        }
    }
}

/// The two flag sets: the strict warning check at `-O2`, and the sanitizers.
fn toolchains() -> [(&'static str, Toolchain); 2] {
    [
        ("strict", Toolchain::default().with_cflags(STRICT)),
        ("sanitizers", Toolchain::default().with_cflags(SANITIZE)),
    ]
}

/// Lowers every case at every M, compiles each kernel with the flag sets `schedule` gives it
/// (one batch per flag set, the flag sets in parallel), and returns what ran and what failed.
fn differential(cases: &[Case], pads: &[u64], schedule: Schedule) -> Stats {
    let tcs = toolchains();
    let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    for (i, c) in cases.iter().enumerate() {
        for (k, &pad) in pads.iter().enumerate() {
            let opts = Options {
                pad,
                name: format!("kernel_{i}_m{pad}"),
                lift: true,
                ..Options::default()
            };
            let kernel = teil_cbackend::lower(&c.program, &opts)
                .unwrap_or_else(|e| panic!("{}: cannot lower at M = {pad}: {e}", c.label));
            let lifted = kernel.reassociates();
            let exact = !lifted || (!c.division && small_integers(&c.expected));
            let nolift = (lifted && (pad == 1 || pad == 4)).then(|| {
                let opts = Options {
                    name: format!("kernel_{i}_m{pad}_nolift"),
                    lift: false,
                    ..opts
                };
                let kernel = teil_cbackend::lower(&c.program, &opts)
                    .unwrap_or_else(|e| panic!("{}: cannot lower: {e}", c.label));
                assert!(!kernel.reassociates());
                kernel
            });
            for &t in schedule.flag_sets(i, k) {
                runs[t].push(Run {
                    case: c,
                    kernel: kernel.clone(),
                    exact,
                });
                if let Some(kernel) = &nolift {
                    runs[t].push(Run {
                        case: c,
                        kernel: kernel.clone(),
                        exact: true,
                    });
                }
            }
        }
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .zip(&tcs)
            .filter(|(batch, _)| !batch.is_empty())
            .map(|(batch, (flags, tc))| {
                s.spawn(move || {
                    check_batch(batch, tc)
                        .into_iter()
                        .map(|f| format!("[{flags} flags] {f}"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec!["a batch panicked".into()]))
            .collect()
    });
    let pads_of = |batch: &[Run]| -> std::collections::BTreeSet<u64> {
        batch.iter().map(|r| r.kernel.pad).collect()
    };
    let all = || runs.iter().flatten();
    Stats {
        runs: all().count(),
        per_flag_set: [runs[0].len(), runs[1].len()],
        pads: [pads_of(&runs[0]), pads_of(&runs[1])],
        lifted: all().filter(|r| r.kernel.lifted > 0).count(),
        bounded: all().filter(|r| !r.exact).count(),
        failures,
    }
}

/// What one differential run did.
struct Stats {
    runs: usize,
    /// Runs under the strict flags and under the sanitizers.
    per_flag_set: [usize; 2],
    /// The padding multiples that ran under each flag set.
    pads: [std::collections::BTreeSet<u64>; 2],
    /// Runs of kernels in which contraction lifting fired.
    lifted: usize,
    /// Runs compared with the bound rather than bit for bit.
    bounded: usize,
    failures: Vec<String>,
}

fn check_batch(batch: &[Run], tc: &Toolchain) -> Vec<String> {
    let kernels: Vec<&Kernel> = batch.iter().map(|r| &r.kernel).collect();
    let jobs: Vec<Job> = batch
        .iter()
        .enumerate()
        .map(|(k, r)| Job {
            kernel: k,
            inputs: r.case.inputs.clone(),
        })
        .collect();
    let outcomes = match run_batch(tc, &kernels, &jobs) {
        Ok(o) => o,
        Err(e) => return vec![format!("batch failed: {e}")],
    };
    let mut failures = Vec::new();
    for (r, out) in batch.iter().zip(outcomes) {
        let c = r.case;
        let what = format!("{} ({})", c.label, r.kernel.name);
        if !out.nonzero_padding.is_empty() {
            failures.push(format!(
                "{what}: non-zero padding in {:?}",
                out.nonzero_padding
            ));
        }
        for d in c.program.interface().filter(|d| c.program.is_output(d)) {
            let name = &d.name.name;
            let (Some(o), Some(got)) = (c.expected.get(name), out.values.get(name)) else {
                failures.push(format!("{what}: no value for `{name}`"));
                continue;
            };
            let ok = if r.exact {
                teil_interp::same_values(o, got)
            } else {
                within_bound(o, got)
            };
            if !ok {
                failures.push(format!(
                    "{what}: `{name}` differs (exact: {})\noracle: {o}\nC:      {got}",
                    r.exact
                ));
            }
        }
    }
    failures
}

/// Asserts that no run failed, and that both flag sets compiled kernels at every M of `pads`
/// (so that the alternation of [`Schedule`] leaves no M unsanitized or unoptimised).
fn assert_clean(what: &str, stats: &Stats, pads: &[u64]) {
    eprintln!(
        "{what}: {} kernel runs ({} strict, {} sanitized), {} lifted, {} compared with the bound",
        stats.runs, stats.per_flag_set[0], stats.per_flag_set[1], stats.lifted, stats.bounded
    );
    assert!(
        stats.failures.is_empty(),
        "{what}: {} of {} kernel runs failed; first ones:\n{}",
        stats.failures.len(),
        stats.runs,
        stats
            .failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
    for set in &stats.pads {
        assert!(
            pads.iter().all(|p| set.contains(p)),
            "{what}: the flag sets ran at M = {:?}, not at every M of {pads:?}",
            stats.pads
        );
    }
}

#[test]
fn corpus_agrees_with_the_oracle_at_every_padding() {
    let (cases, discarded) = corpus();
    assert!(
        cases.len() >= 20,
        "only {} corpus programs ran",
        cases.len()
    );
    assert!(
        discarded <= 5,
        "{discarded} corpus programs were too large to run"
    );
    let stats = differential(&cases, &PADS, Schedule::from_env());
    assert_clean(&format!("corpus ({} programs)", cases.len()), &stats, &PADS);
    contracting("corpus", &cases);
}

fn random_set(k: usize) {
    let (seeds, cfg, pads) = random_sets().swap_remove(k);
    let n = seeds.end - seeds.start;
    let cases = random(seeds, cfg);
    assert_eq!(
        cases.len() as u64,
        n,
        "the oracle refused some generated programs"
    );
    let stats = differential(&cases, pads, Schedule::from_env());
    assert_clean(&format!("random program set {k}"), &stats, pads);
    contracting(&format!("random program set {k}"), &cases);
    // Lifting is exercised, and most lifted runs are still compared bit for bit.
    assert!(stats.lifted >= 20, "only {} lifted runs", stats.lifted);
}

#[test]
fn random_programs_without_division_agree_exactly() {
    random_set(0);
}

#[test]
fn random_programs_with_division_agree() {
    random_set(1);
}

#[test]
fn random_rank5_programs_agree() {
    random_set(2);
}

#[test]
fn random_contraction_chains_agree() {
    let mut cases = chains(0, 100, false);
    cases.extend(chains(1_000_000, 100, true));
    assert_eq!(cases.len(), 200);
    let stats = differential(&cases, &PADS, Schedule::from_env());
    assert_clean("contraction chains", &stats, &PADS);
    assert!(stats.lifted >= 300, "only {} lifted runs", stats.lifted);
    contracting("contraction chains", &cases);
}

/// The padding multiples of the contracting flag sets' runs.
const CONTRACTING_PADS: [u64; 2] = [1, 4];

/// Every case's unlifted exact-mode kernel at [`CONTRACTING_PADS`] under every contracting flag
/// set, on uniform(-1, 1) inputs, bit for bit against the oracle (module documentation).
fn contracting(what: &str, cases: &[Case]) {
    let uniform: Vec<Case> = cases
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let inputs = teil_interp::uniform_inputs(&c.program, i as u64);
            let expected = teil_interp::run_oracle(&c.program, &inputs).ok()?;
            Some(Case {
                label: c.label.clone(),
                program: c.program.clone(),
                inputs,
                expected,
                division: c.division,
            })
        })
        .collect();
    assert_eq!(
        uniform.len(),
        cases.len(),
        "{what}: the oracle refused some programs"
    );
    let mut runs = Vec::new();
    for (i, c) in uniform.iter().enumerate() {
        for pad in CONTRACTING_PADS {
            let opts = Options {
                pad,
                name: format!("kernel_{i}_m{pad}"),
                lift: false,
                ..Options::default()
            };
            let kernel = teil_cbackend::lower(&c.program, &opts)
                .unwrap_or_else(|e| panic!("{}: cannot lower at M = {pad}: {e}", c.label));
            runs.push(Run {
                case: c,
                kernel,
                exact: true,
            });
        }
    }
    let sets = compilers::contracting();
    let failures: Vec<String> = sets
        .iter()
        .flat_map(|(flags, tc)| {
            check_batch(&runs, tc)
                .into_iter()
                .map(move |f| format!("[{flags}] {f}"))
        })
        .collect();
    eprintln!(
        "{what}: {} unlifted kernel runs on uniform inputs under each of {:?}",
        runs.len(),
        sets.iter().map(|(f, _)| f).collect::<Vec<_>>()
    );
    assert!(
        failures.is_empty(),
        "{what}: {} runs differ from the oracle under contracting flags; first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
}
