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
//! lifted programs also run once more without lifting, bit for bit. Programs are batched: one
//! translation unit and one driver process per batch. The whole suite runs once more under
//! `-fsanitize=address,undefined`, where any sanitizer output fails.

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

/// SplitMix64, for the contraction-chain generator below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

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

/// Lowers every case at every M, runs them in `batches` batches, and returns the failures.
fn differential(cases: &[Case], pads: &[u64], tc: &Toolchain, batches: usize) -> Stats {
    let mut runs = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        for &pad in pads {
            let opts = Options {
                pad,
                name: format!("kernel_{i}_m{pad}"),
                lift: true,
            };
            let kernel = teil_cbackend::lower(&c.program, &opts)
                .unwrap_or_else(|e| panic!("{}: cannot lower at M = {pad}: {e}", c.label));
            let lifted = kernel.lifted > 0;
            let exact = !lifted || (!c.division && small_integers(&c.expected));
            runs.push(Run {
                case: c,
                kernel,
                exact,
            });
            if lifted && (pad == 1 || pad == 4) {
                let opts = Options {
                    name: format!("kernel_{i}_m{pad}_nolift"),
                    lift: false,
                    ..opts
                };
                let kernel = teil_cbackend::lower(&c.program, &opts)
                    .unwrap_or_else(|e| panic!("{}: cannot lower: {e}", c.label));
                assert_eq!(kernel.lifted, 0);
                runs.push(Run {
                    case: c,
                    kernel,
                    exact: true,
                });
            }
        }
    }
    let chunk = runs.len().div_ceil(batches.max(1)).max(1);
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .chunks(chunk)
            .map(|batch| s.spawn(move || check_batch(batch, tc)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec!["a batch panicked".into()]))
            .collect()
    });
    Stats {
        runs: runs.len(),
        lifted: runs.iter().filter(|r| r.kernel.lifted > 0).count(),
        bounded: runs.iter().filter(|r| !r.exact).count(),
        failures,
    }
}

/// What one differential run did.
struct Stats {
    runs: usize,
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

fn assert_clean(what: &str, stats: &Stats) {
    eprintln!(
        "{what}: {} kernel runs, {} lifted, {} compared with the bound",
        stats.runs, stats.lifted, stats.bounded
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
}

fn strict() -> Toolchain {
    Toolchain::default().with_cflags(STRICT)
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
    let stats = differential(&cases, &PADS, &strict(), 1);
    assert_clean(&format!("corpus ({} programs)", cases.len()), &stats);
}

fn random_set(k: usize, tc: &Toolchain) {
    let (seeds, cfg, pads) = random_sets().swap_remove(k);
    let n = seeds.end - seeds.start;
    let cases = random(seeds, cfg);
    assert_eq!(
        cases.len() as u64,
        n,
        "the oracle refused some generated programs"
    );
    let stats = differential(&cases, pads, tc, 2);
    assert_clean(&format!("random program set {k}"), &stats);
    // Lifting is exercised, and most lifted runs are still compared bit for bit.
    assert!(stats.lifted >= 20, "only {} lifted runs", stats.lifted);
}

#[test]
fn random_programs_without_division_agree_exactly() {
    random_set(0, &strict());
}

#[test]
fn random_programs_with_division_agree() {
    random_set(1, &strict());
}

#[test]
fn random_rank5_programs_agree() {
    random_set(2, &strict());
}

fn chain_set(tc: &Toolchain) {
    let mut cases = chains(0, 100, false);
    cases.extend(chains(1_000_000, 100, true));
    assert_eq!(cases.len(), 200);
    let stats = differential(&cases, &PADS, tc, 2);
    assert_clean("contraction chains", &stats);
    assert!(stats.lifted >= 300, "only {} lifted runs", stats.lifted);
}

#[test]
fn random_contraction_chains_agree() {
    chain_set(&strict());
}

#[test]
fn the_same_suite_is_clean_under_address_and_undefined_behaviour_sanitizers() {
    let tc = Toolchain::default().with_cflags(SANITIZE);
    let (cases, _) = corpus();
    let stats = differential(&cases, &PADS, &tc, 1);
    assert_clean("sanitizer run, corpus", &stats);
    for k in 0..random_sets().len() {
        random_set(k, &tc);
    }
    chain_set(&tc);
}
