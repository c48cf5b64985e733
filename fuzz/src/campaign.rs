//! Differential fuzzing campaigns (issue 5; spec/fuzzing.md): random well-typed programs
//! through every evaluator, metamorphic variants, ill-typed mutants, and the C backend at
//! padding multiples drawn per program, batched so that compiling does not dominate.
//!
//! For each program (drawn from [`gen`] with a seed derived from the campaign seed and the
//! program's index, [`program_seed`]):
//!
//! 1. the oracle runs on reproducible small-integer inputs; a well-typed program on which it
//!    trips the out-of-bounds witness or fails internally is a mismatch ([`Check::Oracle`]); a
//!    program too large for it is discarded and counted;
//! 2. the fast evaluator agrees with the oracle ([`Check::Fast`]);
//! 3. metamorphic variants agree: printing in each syntax and re-parsing gives the same program
//!    and the same values ([`Check::RoundTrip`]); the Core-TeIL desugaring evaluates to the same
//!    store under both evaluators ([`Check::Core`]); so does a chain of three rewrites by the
//!    §3.6 laws ([`Check::Laws`], see [`laws`](crate::laws));
//! 4. one ill-typed mutant is rejected with exactly the code of the rule it breaks
//!    ([`Check::IllTyped`]);
//! 5. the C backend at the padding multiple `M` the program's seed draws from the campaign's
//!    ([`drawn_pad`]; at each of them with [`Config::every_pad`]) agrees with the oracle, leaves
//!    every padding cell of every parameter zero and does not write input-only parameters
//!    ([`Check::C`]).
//!    Kernels of a whole chunk of programs are compiled into one translation unit and run by
//!    one driver process. A program with a product-then-add also runs in fma mode without
//!    lifting (`Check::C { fma: true, .. }`), within the bound of spec/values.md ("Fused
//!    multiply-add") of the oracle in every cell that has one;
//! 6. one kernel per program, if its shapes are small, goes through the translation validator
//!    (`teil_cbackend::validate`), which must not reject it ([`Check::Validate`]).
//!
//! A failing program is shrunk ([`crate::shrink`]) with a predicate that re-runs exactly the
//! failing check, and written as a reproducer ([`crate::repro`]) that `teil fuzz --replay FILE`
//! runs again.
//!
//! A campaign can end early ([`Stop`]): when the toolchain's cancellation flag is set (a
//! signal), between programs or while a compiler or driver runs, and when the C compiler times
//! out, which says nothing about the program. The report then counts the chunks that completed;
//! nothing is shrunk. A driver that times out, on the other hand, runs a kernel that does not
//! terminate: that is a failed C check like a crash (spec/fuzzing.md).

mod c;
mod checks;
mod config;
mod report;
mod shrinking;

pub use crate::check::{Check, FailedCheck};
pub use crate::compare::Store;
use crate::gen;
use crate::profile::{Phase, Profile};
use crate::shrink::Inputs;
use c::run_c;
pub use c::{JUDGE_CELLS, JUDGE_OPERATIONS, VALIDATION_CELLS, VALIDATION_OPERATIONS};
pub use checks::law_variant;
use checks::{codes, prepare};
pub use config::{
    drawn_pad, flavour, generate, largest_padded_buffer, program_at, program_seed, CellCount,
    Config, ConfigError, DEFAULT_CFLAGS, DEFAULT_CHUNK, DEFAULT_PADS, FLAVOURS, MAX_CHUNK,
    MAX_JOBS, MAX_PADDED_CELLS,
};
pub use report::{summary_line, Mismatch, Progress, Report, Shrunk, Stats, Stop};
use shrinking::shrink_mismatch;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use teil::ast::Program;

/// Runs a campaign. `progress` is called (from worker threads) after every chunk. The
/// configuration should have passed [`Config::validate`]; out-of-range counts are clamped.
pub fn run(cfg: &Config, progress: &(dyn Fn(Progress) + Sync)) -> Report {
    let start = Instant::now();
    // CORE-MATH's units compiled once for the whole campaign, not in every batch (where the
    // private directory cannot be made, every batch compiles them).
    let with_math;
    let cfg = match teil_cbackend::run::CompiledMath::new(&cfg.toolchain) {
        Ok(math) if cfg.toolchain.math.is_none() => {
            let mut c = cfg.clone();
            c.toolchain.math = Some(std::sync::Arc::new(math));
            with_math = c;
            &with_math
        }
        _ => cfg,
    };
    let total = cfg.programs;
    let jobs = cfg.jobs.clamp(1, MAX_JOBS);
    let chunk = match total {
        Some(n) => (cfg.chunk as u64).min(n.div_ceil(jobs as u64)).max(1),
        None => cfg.chunk.clamp(1, MAX_CHUNK) as u64,
    };
    // No more threads than chunks.
    let jobs = match total {
        Some(n) => jobs.min(usize::try_from(n.div_ceil(chunk)).unwrap_or(jobs)),
        None => jobs,
    };
    let cancel = &cfg.toolchain.cancel;
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let failing = AtomicUsize::new(0);
    let results: Mutex<Vec<(Stats, Vec<Mismatch>)>> = Mutex::new(Vec::new());
    let stop: Mutex<Option<Stop>> = Mutex::new(None);
    let record = |s: Stop| {
        if let Ok(mut slot) = stop.lock() {
            slot.get_or_insert(s);
        }
    };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut gens: BTreeMap<u64, proptest::strategy::BoxedStrategy<Program>> =
                    BTreeMap::new();
                loop {
                    if cancel.is_cancelled() || stop.lock().map_or(true, |s| s.is_some()) {
                        break;
                    }
                    if cfg.time.is_some_and(|t| start.elapsed() >= t)
                        || cfg
                            .stop_after
                            .is_some_and(|n| failing.load(Ordering::SeqCst) >= n)
                    {
                        break;
                    }
                    let c = next.fetch_add(1, Ordering::SeqCst);
                    let first = c.saturating_mul(chunk);
                    let end = match total {
                        Some(n) => n.min(first.saturating_add(chunk)),
                        None => first.saturating_add(chunk),
                    };
                    if first >= end {
                        break;
                    }
                    let mut stats = Stats::default();
                    let mut programs = Vec::new();
                    for k in first..end {
                        if cancel.is_cancelled() {
                            break;
                        }
                        let index = cfg.skip.saturating_add(k);
                        let seed = program_seed(cfg.seed, index);
                        let strategy = gens
                            .entry(index % 4)
                            .or_insert_with(|| gen::program(flavour(index)));
                        let (p, retargeted) = stats
                            .profile
                            .time(Phase::Generate, || program_at(strategy, index, seed));
                        programs.push((index, seed, p));
                        stats.by_flavour[(index % 4) as usize] += 1;
                        stats.retargeted += u64::from(retargeted);
                    }
                    let found = match check_chunk(cfg, programs, &mut stats) {
                        Ok(found) => found,
                        Err(s) => {
                            record(s);
                            break;
                        }
                    };
                    failing.fetch_add(found.len(), Ordering::SeqCst);
                    let d = done.fetch_add(end - first, Ordering::SeqCst) + (end - first);
                    progress(Progress {
                        done: d,
                        total,
                        mismatches: failing.load(Ordering::SeqCst),
                    });
                    if let Ok(mut r) = results.lock() {
                        r.push((stats, found));
                    }
                }
            });
        }
    });
    let mut stats = Stats::default();
    let mut mismatches = Vec::new();
    for (s, m) in results.into_inner().unwrap_or_default() {
        stats.add(&s);
        mismatches.extend(m);
    }
    mismatches.sort_by_key(|m| m.index);
    // A campaign that ends early shrinks nothing: it was asked to stop, or cannot compile.
    let shrink = if stop.lock().map_or(true, |s| s.is_some()) || cancel.is_cancelled() {
        0
    } else {
        cfg.shrink
    };
    // The first failing programs by index, whichever thread found them: which programs are
    // shrunk does not depend on scheduling.
    let queue: Vec<Mutex<&mut Mismatch>> =
        mismatches.iter_mut().take(shrink).map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let shrinking = Mutex::new(Profile::default());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(queue.len()) {
            s.spawn(|| {
                while let Some(slot) = queue.get(next.fetch_add(1, Ordering::SeqCst)) {
                    if let Ok(mut m) = slot.lock() {
                        let started = Instant::now();
                        let shrunk = shrink_mismatch(cfg, &m);
                        if let Ok(mut p) = shrinking.lock() {
                            p.add_time(Phase::Shrink, started.elapsed());
                        }
                        match shrunk {
                            Ok(shrunk) => m.shrunk = shrunk,
                            Err(s) => {
                                record(s);
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    drop(queue);
    stats
        .profile
        .add(&shrinking.into_inner().unwrap_or_default());
    let mut stopped = stop.into_inner().unwrap_or_default();
    if stopped.is_none() && cancel.is_cancelled() {
        stopped = Some(Stop::Interrupted);
    }
    Report {
        stats,
        mismatches,
        elapsed: start.elapsed(),
        stopped,
    }
}

/// Runs every check on one given program and inputs (a reproducer), with `seed` choosing its
/// variants and mutant, the C backend at every multiple of `cfg.pads`. Nothing is shrunk.
pub fn replay(cfg: &Config, program: Program, inputs: Inputs, seed: u64) -> Report {
    // A reproducer names the multiples to run again (one, for a C check): all of them.
    let cfg = &Config {
        every_pad: true,
        ..cfg.clone()
    };
    let start = Instant::now();
    let mut stats = Stats::default();
    let mut stopped = None;
    let mismatches = match teil::check(program.clone()) {
        Err(d) => vec![Mismatch {
            index: None,
            seed,
            failures: vec![FailedCheck {
                check: Check::Generator,
                detail: codes(&d).to_string(),
            }],
            program,
            inputs,
            shrunk: None,
        }],
        Ok((checked, _)) => {
            let mut out = Vec::new();
            let ran = prepare(cfg, None, seed, checked, inputs, 0, &mut stats, &mut out)
                .and_then(|p| run_c(cfg, p.into_iter().collect(), &mut stats, &mut out));
            match ran {
                Ok(()) => out,
                Err(s) => {
                    stopped = Some(s);
                    stats = Stats::default();
                    Vec::new()
                }
            }
        }
    };
    Report {
        stats,
        mismatches,
        elapsed: start.elapsed(),
        stopped,
    }
}

/// Checks a chunk of programs; `Err` when the campaign must stop before the chunk completed.
fn check_chunk(
    cfg: &Config,
    programs: Vec<(u64, u64, Program)>,
    stats: &mut Stats,
) -> Result<Vec<Mismatch>, Stop> {
    let mut out = Vec::new();
    let mut prepared = Vec::new();
    for (slot, (index, seed, program)) in programs.into_iter().enumerate() {
        if cfg.toolchain.cancel.is_cancelled() {
            return Err(Stop::Interrupted);
        }
        match stats
            .profile
            .time(Phase::Check, || teil::check(program.clone()))
        {
            Err(d) => out.push(Mismatch {
                index: Some(index),
                seed,
                failures: vec![FailedCheck {
                    check: Check::Generator,
                    detail: codes(&d).to_string(),
                }],
                program,
                inputs: Inputs::new(),
                shrunk: None,
            }),
            Ok((checked, _)) => {
                let inputs = teil_interp::random_inputs(&checked, seed);
                prepared.extend(prepare(
                    cfg,
                    Some(index),
                    seed,
                    checked,
                    inputs,
                    slot,
                    stats,
                    &mut out,
                )?);
            }
        }
    }
    run_c(cfg, prepared, stats, &mut out)?;
    out.sort_by_key(|m| m.index);
    Ok(out)
}
