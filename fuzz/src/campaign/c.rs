//! The C backend's checks (step 5 and 6 of the campaign's documentation): lowering each
//! program's kernels, the translation validator, one translation unit and driver per chunk,
//! and the comparison of what the kernels left with the oracle's values.

use super::config::Config;
use super::report::{Mismatch, Stats, Stop};
use crate::check::{Check, FailedCheck};
use crate::compare::{self, Store, Tolerance};
use crate::error::{CheckFailed, Difference, NotPermitted};
use crate::isa::Isa;
use crate::profile::Phase;
use crate::shrink::Inputs;
use std::time::Instant;
use teil::CheckedProgram;
use teil_cbackend::ir::Kernel;
use teil_cbackend::plant;
use teil_cbackend::run::{self, Job, Outcome, Toolchain};
use teil_cbackend::{validate, Options};

/// A program that passed the interpreter-side checks, with its C kernels.
pub(super) struct Prepared {
    pub(super) index: Option<u64>,
    pub(super) seed: u64,
    pub(super) checked: CheckedProgram,
    pub(super) inputs: Inputs,
    pub(super) expected: Store,
    pub(super) division: bool,
    pub(super) kernels: Vec<(Check, Kernel)>,
    pub(super) failures: Vec<FailedCheck>,
}

/// The kernel target of a C check (the default for the others, which compile nothing).
pub(super) fn check_isa(c: &Check) -> Isa {
    match c {
        Check::C { isa, .. } => *isa,
        _ => Isa::Default,
    }
}

pub(super) fn lower(
    cfg: &Config,
    checked: &CheckedProgram,
    pad: u64,
    lift: bool,
    fma: bool,
    name: &str,
    stats: &mut Stats,
) -> Result<Kernel, CheckFailed> {
    let opts = Options {
        pad,
        name: name.to_string(),
        lift,
        fma,
        openmp: false,
        // The reference machine's sizes on every machine, so that a campaign and its
        // reproducers print the same C wherever they run.
        sizes: Default::default(),
    };
    let lowered = stats.profile.time(Phase::Lower, || {
        guarded(|| teil_cbackend::lower(checked, &opts))
    });
    let mut k = lowered?.map_err(CheckFailed::Lowering)?;
    if let Some(bug) = cfg.plant {
        if plant::apply(&mut k, bug) {
            stats.planted += 1;
        }
    }
    Ok(k)
}

/// Bounds of the validator in a campaign: small shapes only (the defaults of
/// `teil_cbackend::validate` allow far larger programs, at seconds each).
pub(super) fn validation_limits() -> validate::Limits {
    validate::Limits {
        max_operations: VALIDATION_OPERATIONS,
        max_cells: VALIDATION_CELLS,
        ..validate::Limits::default()
    }
}

/// Largest symbolic work (oracle operations plus kernel work) of a validated kernel.
pub const VALIDATION_OPERATIONS: u128 = 20_000;

/// Largest number of cells (padded parameters and workspace) of a validated kernel. Checking
/// every padding cell symbolically is what makes validation slow at large `M`: at `M = 8` a
/// rank-4 buffer alone has 4096 cells.
pub const VALIDATION_CELLS: u64 = 20_000;

/// Validates `k`; `Err` when the validator shows it wrong. Kernels beyond the bounds count as
/// not validated.
pub(super) fn validate(
    checked: &CheckedProgram,
    k: &Kernel,
    stats: &mut Stats,
) -> Result<(), CheckFailed> {
    let validated = stats.profile.time(Phase::Validate, || {
        guarded(|| validate::validate_with(checked, k, &validation_limits()))
    });
    match validated? {
        Ok(_) => {
            stats.validated += 1;
            Ok(())
        }
        Err(f) if f.is_rejection() => Err(CheckFailed::Rejected(f)),
        Err(_) => {
            stats.not_validated += 1;
            Ok(())
        }
    }
}

/// Runs every kernel of `prepared` in one batch and turns every program with a failure into a
/// [`Mismatch`].
pub(super) fn run_c(
    cfg: &Config,
    prepared: Vec<Prepared>,
    stats: &mut Stats,
    out: &mut Vec<Mismatch>,
) -> Result<(), Stop> {
    let runs: Vec<(Isa, &Kernel, &Inputs)> = prepared
        .iter()
        .flat_map(|p| {
            p.kernels
                .iter()
                .map(move |(c, k)| (check_isa(c), k, &p.inputs))
        })
        .collect();
    // One batch (translation unit, driver) per kernel target, in the order they first appear.
    let mut outcomes: Vec<Option<Result<Outcome, CheckFailed>>> = Vec::new();
    outcomes.resize_with(runs.len(), || None);
    let mut isas: Vec<Isa> = runs.iter().map(|r| r.0).collect();
    isas.dedup();
    let mut done = Vec::new();
    for isa in isas {
        if done.contains(&isa) {
            continue;
        }
        done.push(isa);
        let (at, batch): (Vec<usize>, Vec<(&Kernel, &Inputs)>) = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.0 == isa)
            .map(|(i, r)| (i, (r.1, r.2)))
            .unzip();
        let results = run_kernels(&cfg.toolchain_for(isa), &batch, stats)?;
        for (i, o) in at.into_iter().zip(results) {
            outcomes[i] = Some(o);
        }
    }
    let mut outcomes = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Err(CheckFailed::TooFewResults)));
    for p in prepared {
        let mut failures = p.failures.clone();
        stats.programs += 1;
        for (check, k) in &p.kernels {
            let outcome = outcomes
                .next()
                .unwrap_or_else(|| Err(CheckFailed::TooFewResults));
            stats.kernels += 1;
            stats.lifted += u64::from(k.lifted > 0);
            stats.unlifted += u64::from(matches!(
                check,
                Check::C {
                    lift: false,
                    fma: false,
                    ..
                }
            ));
            let started = Instant::now();
            let result = outcome.and_then(|o| {
                compare_c(&p.checked, &p.inputs, &p.expected, p.division, k, &o, stats)
            });
            stats.profile.add_time(Phase::Compare, started.elapsed());
            if let Err(detail) = result {
                failures.push(FailedCheck {
                    check: check.clone(),
                    detail: detail.to_string(),
                });
            }
        }
        if !failures.is_empty() {
            out.push(Mismatch {
                index: p.index,
                seed: p.seed,
                failures,
                program: p.checked.program().clone(),
                inputs: p.inputs,
                shrunk: None,
            });
        }
    }
    Ok(())
}

/// Runs `runs` in one driver process; when the batch fails (a compile error, a crash, a driver
/// that times out), splits it until the failing kernels are isolated. One result per run, in
/// order. `Err` when the campaign must stop (interrupted, or the compiler timed out).
pub(super) fn run_kernels(
    tc: &Toolchain,
    runs: &[(&Kernel, &Inputs)],
    stats: &mut Stats,
) -> Result<Vec<Result<Outcome, CheckFailed>>, Stop> {
    let kernels: Vec<&Kernel> = runs.iter().map(|r| r.0).collect();
    let jobs: Vec<Job> = runs
        .iter()
        .enumerate()
        .map(|(kernel, r)| Job {
            kernel,
            inputs: r.1.clone(),
        })
        .collect();
    stats.compiles += 1;
    let mut times = run::BatchTimes::default();
    let ran = guarded(|| run::run_batch_timed(tc, &kernels, &jobs, &mut times));
    stats.profile.add_time(Phase::Compile, times.compile);
    stats.profile.add_time(Phase::Driver, times.driver);
    let result = match ran {
        Ok(Ok(o)) => Ok(o),
        Ok(Err(e)) => {
            if let Some(stop) = Stop::from_driver_error(&e) {
                return Err(stop);
            }
            // The source of a batch that is split further is not interesting on its own.
            if runs.len() > 1 {
                remove_kept(&e);
            }
            Err(CheckFailed::Run(e))
        }
        Err(panic) => Err(panic),
    };
    Ok(match result {
        Ok(o) if o.len() == runs.len() => o.into_iter().map(Ok).collect(),
        Ok(_) => (0..runs.len())
            .map(|_| Err(CheckFailed::WrongCount))
            .collect(),
        Err(e) if runs.len() == 1 => vec![Err(CheckFailed::DidNotRun(Box::new(e)))],
        Err(_) => {
            let (a, b) = runs.split_at(runs.len() / 2);
            let mut out = run_kernels(tc, a, stats)?;
            out.extend(run_kernels(tc, b, stats)?);
            out
        }
    })
}

/// Runs `f`, turning a panic (a bug in the code under test) into an error.
pub(super) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, CheckFailed> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string());
        CheckFailed::Panicked(msg)
    })
}

pub(super) fn remove_kept(e: &run::DriverError) {
    let kept = match e {
        run::DriverError::CompilerNotFound { kept, .. }
        | run::DriverError::CompileFailed { kept, .. }
        | run::DriverError::KernelFailed { kept, .. } => kept,
        _ => return,
    };
    if let Some(dir) = kept.parent() {
        if dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("teil-cc-"))
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The C backend's results against the oracle's (spec/fuzzing.md): outputs equal (exactly,
/// or within the bound for lifted kernels that round), padding zero, inputs untouched.
pub(super) fn compare_c(
    checked: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    division: bool,
    k: &Kernel,
    o: &Outcome,
    stats: &mut Stats,
) -> Result<(), CheckFailed> {
    if !o.nonzero_padding.is_empty() {
        return Err(CheckFailed::NonzeroPadding {
            names: o.nonzero_padding.clone(),
        });
    }
    let outputs = checked.output_names();
    let label = format!("C backend at M = {}", k.pad);
    if k.fma {
        // Unlifted: the oracle's own term, with the bound of spec/values.md per cell.
        stats.fma += 1;
        let bounds =
            teil_interp::rounding::fma_bounds(checked, inputs).map_err(CheckFailed::FmaBound)?;
        let label = format!("{label} in fma mode");
        let cells =
            compare::stores_within(&outputs, expected, &o.values, &bounds, ("oracle", &label))?;
        stats.cells.add(cells);
        return compare_inputs(checked, inputs, o);
    }
    let exact = !k.reassociates()
        || (!division && compare::small_integers(outputs.iter().filter_map(|n| expected.get(n))));
    stats.bounded += u64::from(!exact);
    let tol = if exact {
        Tolerance::Exact
    } else {
        Tolerance::Rounding
    };
    match compare::stores(&outputs, expected, &o.values, tol, ("oracle", &label)) {
        Ok(cells) => stats.cells.add(cells),
        // Lifting and sums in lanes may give another permitted result than the oracle's
        // canonical one.
        Err(detail) if k.reassociates() => {
            let fallback = (!exact).then_some(Tolerance::Bound);
            judge_lifted(checked, inputs, expected, k, o, detail, fallback, stats)?
        }
        Err(detail) => return Err(detail.into()),
    }
    compare_inputs(checked, inputs, o)
}

/// Largest symbolic work of a kernel judged after its comparison with the oracle failed. Only
/// those few kernels are validated, so the bound is far above the campaign's sampling bound
/// ([`VALIDATION_OPERATIONS`]): a second or so of symbolic evaluation at most.
pub const JUDGE_OPERATIONS: u128 = 1_000_000;

/// Largest number of cells of a kernel judged after its comparison with the oracle failed.
pub const JUDGE_CELLS: u64 = 1 << 18;

/// The judgement of spec/fuzzing.md (*Lifted kernels*) on a lifted kernel whose outputs differ
/// from the oracle's (`detail`): permitted when the compiled kernel returned its IR's binary64
/// values and the validator proves every output cell `eval(T′)` for a `T′ ≡ T`
/// (`teil_cbackend::validate::judge`); otherwise a mismatch, saying which law, if any, is
/// behind the difference. A kernel too large to validate whose values are its IR's is compared
/// with the oracle again under `fallback` (the bound rule; `None`: the difference stands).
#[allow(clippy::too_many_arguments)]
pub(super) fn judge_lifted(
    checked: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    k: &Kernel,
    o: &Outcome,
    detail: Difference,
    fallback: Option<Tolerance>,
    stats: &mut Stats,
) -> Result<(), CheckFailed> {
    let limits = validate::Limits {
        max_operations: JUDGE_OPERATIONS,
        max_cells: JUDGE_CELLS,
        ..validate::Limits::default()
    };
    let verdict = guarded(|| validate::judge(checked, k, inputs, &o.values, &limits))?;
    let judgement = match verdict {
        validate::Judgement::Permitted(_) => {
            stats.permitted += 1;
            return Ok(());
        }
        validate::Judgement::NotTheIr {
            target,
            var,
            index,
            ir,
            kernel,
        } => NotPermitted::NotTheIr {
            target,
            var,
            index,
            ir,
            kernel,
        },
        validate::Judgement::Rejected(f) => NotPermitted::Rejected(f),
        validate::Judgement::Undecided(f) => {
            let outputs = checked.output_names();
            let label = format!("C backend at M = {}", k.pad);
            let again = fallback
                .map(|tol| compare::stores(&outputs, expected, &o.values, tol, ("oracle", &label)));
            if let Some(Ok(cells)) = again {
                stats.undecided += 1;
                stats.cells.add(cells);
                return Ok(());
            }
            NotPermitted::Undecided(f)
        }
    };
    Err(CheckFailed::Judged {
        difference: Box::new(detail),
        judgement: Box::new(judgement),
    })
}

/// Input-only parameters are left as the caller gave them.
fn compare_inputs(
    checked: &CheckedProgram,
    inputs: &Inputs,
    o: &Outcome,
) -> Result<(), CheckFailed> {
    for d in checked
        .interface()
        .filter(|d| checked.is_input(d) && !checked.is_output(d))
    {
        let name = &d.name.name;
        if let (Some(given), Some(after)) = (inputs.get(name), o.values.get(name)) {
            compare::tensors(name, given, after, Tolerance::Exact, ("input", "kernel"))
                .map_err(|d| CheckFailed::WroteInput(Box::new(d)))?;
        }
    }
    Ok(())
}
