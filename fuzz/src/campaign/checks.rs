//! The interpreter-side checks (steps 1 to 4 of the campaign's documentation) and the one
//! check a shrinker or a replay re-runs ([`run_check`]): the evaluators, the metamorphic
//! variants and the ill-typed mutant.

use super::c::{compare_c, lower, run_kernels, validate, Prepared};
use super::config::{drawn_pad, Config};
use super::report::{Mismatch, Stats, Stop};
use crate::check::{Check, FailedCheck};
use crate::compare::{self, Store, Tolerance};
use crate::error::{CheckFailed, Codes, Difference};
use crate::isa::Isa;
use crate::laws::{self, Law};
use crate::mutate::{self, Mutation};
use crate::profile::Phase;
use crate::shrink::Inputs;
use std::collections::BTreeSet;
use std::time::Instant;
use teil::ast::{BinOp, ExprKind};
use teil::fmt::Style;
use teil::CheckedProgram;
use teil_cbackend::ir::Kernel;
use teil_interp::random::mix;

/// The interpreter-side checks of one program (steps 1 to 4 of the module documentation) and
/// its lowered kernels; their failures travel with the result. A program on which the oracle
/// fails is pushed to `out` at once; one the oracle refuses as too large is discarded.
/// `Err` when the campaign must stop.
#[allow(clippy::too_many_arguments)]
pub(super) fn prepare(
    cfg: &Config,
    index: Option<u64>,
    seed: u64,
    checked: CheckedProgram,
    inputs: Inputs,
    slot: usize,
    stats: &mut Stats,
    out: &mut Vec<Mismatch>,
) -> Result<Option<Prepared>, Stop> {
    let fail = |failures: Vec<FailedCheck>, checked: &CheckedProgram, inputs: &Inputs| Mismatch {
        index,
        seed,
        failures,
        program: checked.program().clone(),
        inputs: inputs.clone(),
        shrunk: None,
    };
    let expected = match stats
        .profile
        .time(Phase::Oracle, || teil_interp::run_oracle(&checked, &inputs))
    {
        Ok(e) => e,
        Err(e) if e.is_internal() => {
            let f = FailedCheck {
                check: Check::Oracle,
                detail: e.to_string(),
            };
            out.push(fail(vec![f], &checked, &inputs));
            return Ok(None);
        }
        Err(_) => {
            stats.discarded += 1;
            return Ok(None);
        }
    };
    let division = has_division(&checked);
    stats.division += u64::from(division);
    let vocabulary = crate::case::Vocabulary::of(&checked);
    stats.binary32 += u64::from(vocabulary.binary32);
    stats.functions += u64::from(vocabulary.functions);
    let mut failures = Vec::new();
    let mut interpreter_checks = vec![
        Check::Fast,
        Check::RoundTrip(Style::Prefix),
        Check::RoundTrip(Style::Infix),
        Check::Core,
    ];
    // The law chain and the mutant are determined by the seed; `Laws` records which laws it
    // applied, `IllTyped` the mutation.
    match law_variant(&checked, seed) {
        Ok(Some((_, applied))) => {
            for l in &applied {
                if let Some(i) = Law::ALL.iter().position(|x| x == l) {
                    stats.laws[i] += 1;
                }
            }
            interpreter_checks.push(Check::Laws(applied));
        }
        Ok(None) => {}
        Err(detail) => failures.push(FailedCheck {
            check: Check::Laws(Vec::new()),
            detail: detail.to_string(),
        }),
    }
    if let Some((mutation, choice)) = pick_mutant(&checked, seed) {
        stats.mutants += 1;
        interpreter_checks.push(Check::IllTyped { mutation, choice });
    }
    for check in interpreter_checks {
        if cfg.toolchain.cancel.is_cancelled() {
            return Err(Stop::Interrupted);
        }
        if matches!(check, Check::RoundTrip(_) | Check::Core | Check::Laws(_)) {
            stats.variants += 1;
        }
        let started = Instant::now();
        let result = run_check(cfg, &check, &checked, &inputs, &expected, seed, stats);
        if let Some(phase) = check.phase() {
            stats.profile.add_time(phase, started.elapsed());
        }
        match result {
            Ok(()) => {}
            Err(NotPassed::Failed(detail)) => failures.push(FailedCheck {
                check,
                detail: detail.to_string(),
            }),
            Err(NotPassed::Stopped(s)) => return Err(s),
        }
    }
    let mut kernels = Vec::new();
    let isa = cfg.isa(index);
    let drawn = drawn_pad(&cfg.pads, seed);
    // The multiples of the lifted kernels, and the one of the unlifted exact and fma kernels.
    let (lifted_pads, unlifted_pad) = if cfg.every_pad {
        (cfg.pads.clone(), cfg.pads.first().copied())
    } else {
        (drawn.into_iter().collect(), drawn)
    };
    if cfg.c_backend {
        let mut reassociated_somewhere = false;
        for &pad in &lifted_pads {
            let c = c_kernel(
                cfg,
                &checked,
                slot,
                (pad, true, false, isa),
                stats,
                &mut failures,
            );
            if let Some((check, k)) = c {
                reassociated_somewhere |= k.reassociates();
                kernels.push((check, k));
            }
        }
        // A lifted program (or one with a sum in lanes) also runs once without
        // reassociation, where it must agree bit for bit.
        if let (true, Some(pad)) = (reassociated_somewhere, unlifted_pad) {
            let c = c_kernel(
                cfg,
                &checked,
                slot,
                (pad, false, false, isa),
                stats,
                &mut failures,
            );
            kernels.extend(c);
        }
        // A program with a product-then-add also runs in fma mode, unlifted (so that it
        // evaluates the oracle's own term, whose bound the oracle computes), at the same `M`.
        if let Some(pad) = unlifted_pad {
            let c = c_kernel(
                cfg,
                &checked,
                slot,
                (pad, false, true, isa),
                stats,
                &mut failures,
            );
            kernels.extend(c.filter(|(_, k)| k.has_fusable()));
        }
    }
    // One kernel per program also goes through the translation validator, when it is small
    // enough for symbolic evaluation: the lifted kernel at the drawn multiple, so that a replay
    // with just that multiple validates the same kernel.
    let kernel = kernels.iter().find(|(c, _)| {
        Some(c)
            == drawn
                .map(|pad| Check::C {
                    pad,
                    lift: true,
                    fma: false,
                    isa,
                })
                .as_ref()
    });
    if let Some((_, k)) = kernel.filter(|_| cfg.validation) {
        if let Err(detail) = validate(&checked, k, stats) {
            failures.push(FailedCheck {
                check: Check::Validate { pad: k.pad },
                detail: detail.to_string(),
            });
        }
    }
    Ok(Some(Prepared {
        index,
        seed,
        checked,
        inputs,
        expected,
        division,
        kernels,
        failures,
    }))
}

/// Compares the fast evaluator's results `got` for `c` with the oracle's (`expected`): it
/// reassociates, so exactly where nothing rounds, by the loose rule with division, and for a
/// program with functions or binary32 values by what each cell permits (spec/fuzzing.md,
/// "Comparisons and tolerances"; its functions are correctly rounded, so the allowance is
/// half an ulp).
pub(super) fn compare_fast(
    c: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    got: &Store,
    label: &str,
) -> Result<compare::Cells, CheckFailed> {
    let all = names(expected);
    let sides = ("oracle", label);
    if crate::case::new_vocabulary(c) {
        let permits =
            teil_interp::rounding::permitted(c, inputs, teil_interp::rounding::CORRECTLY_ROUNDED)
                .map_err(CheckFailed::Permits)?;
        return Ok(compare::stores_permitted(
            &all, expected, got, &permits, sides,
        )?);
    }
    let tol = if has_division(c) {
        Tolerance::Loose
    } else {
        Tolerance::Exact
    };
    Ok(compare::stores(&all, expected, got, tol, sides)?)
}

pub(super) fn names(s: &Store) -> Vec<String> {
    s.keys().cloned().collect()
}

/// Why a check did not pass.
pub(super) enum NotPassed {
    /// The check failed; how.
    Failed(CheckFailed),
    /// The check could not run to its end (only the C check can stop so).
    Stopped(Stop),
}

impl From<CheckFailed> for NotPassed {
    fn from(detail: CheckFailed) -> Self {
        NotPassed::Failed(detail)
    }
}

impl From<Difference> for NotPassed {
    fn from(detail: Difference) -> Self {
        NotPassed::Failed(detail.into())
    }
}

/// Runs one non-C check (or one C kernel, compiled on its own) on a program whose oracle
/// results are `expected`. `Err` says how it failed.
pub(super) fn run_check(
    cfg: &Config,
    check: &Check,
    c: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    seed: u64,
    stats: &mut Stats,
) -> Result<(), NotPassed> {
    let division = has_division(c);
    match check {
        Check::Generator | Check::Oracle => Ok(()),
        Check::Fast => {
            let got = teil_interp::run_fast(c, inputs).map_err(CheckFailed::Fast)?;
            let cells = compare_fast(c, inputs, expected, &got, "fast evaluator")?;
            stats.cells.add(cells);
            Ok(())
        }
        Check::RoundTrip(style) => {
            let text = teil::fmt::program(c.program(), *style);
            let parsed = teil::parse(&text);
            if parsed.diagnostics.iter().any(|d| d.is_error()) {
                return Err(CheckFailed::DoesNotParse {
                    codes: codes(&parsed.diagnostics),
                    text,
                }
                .into());
            }
            if !parsed.program.same_as(c.program()) {
                return Err(CheckFailed::AnotherProgram { text }.into());
            }
            let (again, _) = teil::check(parsed.program)
                .map_err(|d| CheckFailed::ReparsedDoesNotCheck(codes(&d)))?;
            Ok(evaluate_variant(&again, inputs, expected, false, stats)?)
        }
        Check::Core => {
            let core = teil::core::desugar(c).map_err(|d| CheckFailed::Desugar {
                code: d.code.as_str(),
                message: d.message,
            })?;
            let (core, _) =
                teil::check(core).map_err(|d| CheckFailed::CoreDoesNotCheck(codes(&d)))?;
            Ok(evaluate_variant(&core, inputs, expected, true, stats)?)
        }
        Check::Laws(_) => match law_variant(c, seed)? {
            None => Ok(()),
            Some((variant, _)) => evaluate_variant(&variant, inputs, expected, true, stats)
                .map_err(|e| {
                    NotPassed::Failed(CheckFailed::LawVariant {
                        failed: Box::new(e),
                        text: teil::fmt::program(variant.program(), Style::Infix),
                    })
                }),
        },
        Check::IllTyped { mutation, choice } => {
            let Some(bad) = mutate::ill_typed(c, *mutation, *choice) else {
                return Ok(());
            };
            let style = if seed % 2 == 0 {
                Style::Prefix
            } else {
                Style::Infix
            };
            let text = teil::fmt::program(&bad, style);
            let want = BTreeSet::from([mutation.expected().as_str()]);
            match teil::compile(&text) {
                Ok(_) => Err(CheckFailed::MutantAccepted { text }.into()),
                Err(d) => {
                    let got: BTreeSet<&'static str> = d
                        .iter()
                        .filter(|d| d.is_error())
                        .map(|d| d.code.as_str())
                        .collect();
                    if got == want {
                        Ok(())
                    } else {
                        Err(CheckFailed::MutantCodes {
                            expected: mutation.expected().as_str(),
                            reported: got.into_iter().collect(),
                            text,
                        }
                        .into())
                    }
                }
            }
        }
        Check::Lower { pad } => {
            Ok(lower(cfg, c, *pad, true, false, "teil_kernel", stats).map(|_| ())?)
        }
        Check::Validate { pad } => {
            let k = lower(cfg, c, *pad, true, false, "teil_kernel", stats)?;
            Ok(validate(c, &k, stats)?)
        }
        Check::C {
            pad,
            lift,
            fma,
            isa,
        } => {
            let k = lower(cfg, c, *pad, *lift, *fma, "teil_kernel", stats)?;
            let runs = [(&k, inputs)];
            let o = run_kernels(&cfg.toolchain_for(*isa), &runs, stats)
                .map_err(NotPassed::Stopped)?
                .pop()
                .unwrap_or_else(|| Err(CheckFailed::NoResult))?;
            Ok(compare_c(c, inputs, expected, division, &k, &o, stats)?)
        }
    }
}

/// A variant must give the original's store: under the oracle bit for bit when `exact_oracle`
/// (law rewrites and Core-TeIL perform the same operations on the same cells), and under the
/// fast evaluator within its tolerance.
pub(super) fn evaluate_variant(
    v: &CheckedProgram,
    inputs: &Inputs,
    expected: &Store,
    oracle: bool,
    stats: &mut Stats,
) -> Result<(), CheckFailed> {
    let all = names(expected);
    if oracle {
        let got = teil_interp::run_oracle(v, inputs).map_err(CheckFailed::OracleOnVariant)?;
        let cells = compare::stores(
            &all,
            expected,
            &got,
            Tolerance::Exact,
            ("oracle", "variant"),
        )?;
        stats.cells.add(cells);
    }
    let got = teil_interp::run_fast(v, inputs).map_err(CheckFailed::FastOnVariant)?;
    let cells = compare_fast(v, inputs, expected, &got, "fast evaluator on the variant")?;
    stats.cells.add(cells);
    Ok(())
}

/// Number of law rewrites chained in one variant.
pub(super) const LAW_CHAIN: usize = 3;

/// The law variant of `c` for `seed`: `LAW_CHAIN` rewrites, each by the first law (from a
/// seed-chosen starting point in [`Law::ALL`]) that applies. `Err` when a rewrite produced an
/// ill-typed program.
#[allow(clippy::type_complexity)]
pub fn law_variant(
    c: &CheckedProgram,
    seed: u64,
) -> Result<Option<(CheckedProgram, Vec<Law>)>, CheckFailed> {
    let mut state = seed ^ 0x6c61_7773;
    let mut cur: Option<CheckedProgram> = None;
    let mut applied = Vec::new();
    for _ in 0..LAW_CHAIN {
        state = mix(state);
        let start = (state % Law::ALL.len() as u64) as usize;
        state = mix(state);
        let choice = state;
        let base = cur.as_ref().unwrap_or(c);
        let found = (0..Law::ALL.len()).find_map(|t| {
            let law = Law::ALL[(start + t) % Law::ALL.len()];
            laws::rewrite(base, law, choice).map(|p| (law, p))
        });
        let Some((law, p)) = found else {
            break;
        };
        let text = teil::fmt::program(&p, Style::Infix);
        let (checked, _) = teil::check(p).map_err(|d| CheckFailed::IllTypedRewrite {
            equation: law.equation(),
            codes: codes(&d),
            text,
        })?;
        applied.push(law);
        cur = Some(checked);
    }
    Ok(cur.map(|c| (c, applied)))
}

/// The mutation for `seed`: the first of [`Mutation::ALL`], from a seed-chosen starting point,
/// that applies to the program.
pub(super) fn pick_mutant(c: &CheckedProgram, seed: u64) -> Option<(Mutation, usize)> {
    let n = Mutation::ALL.len();
    let start = (mix(seed ^ 0x6d75_7461) % n as u64) as usize;
    let choice = (seed >> 16) as usize;
    (0..n)
        .map(|t| Mutation::ALL[(start + t) % n])
        .find(|&m| mutate::ill_typed(c, m, choice).is_some())
        .map(|m| (m, choice))
}

pub(super) fn codes(d: &[teil::Diagnostic]) -> Codes {
    let codes: BTreeSet<&'static str> = d
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.code.as_str())
        .collect();
    Codes(codes.into_iter().collect())
}

pub(super) fn has_division(p: &CheckedProgram) -> bool {
    let mut found = false;
    for s in &p.program().stmts {
        s.value.walk(&mut |e| {
            found |= matches!(e.kind, ExprKind::Binary(BinOp::Div, ..));
        });
    }
    found
}

/// The [`Check::C`] of multiple `pad`, lifting, fma mode and target `isa` for the program in
/// chunk slot `slot`, with its kernel, named after the slot, the multiple and the mode (`p3_m8`,
/// `p3_m8_exact` unlifted, `p3_m8_fma`); where it does not lower, the failed [`Check::Lower`]
/// goes to `failures` instead.
fn c_kernel(
    cfg: &Config,
    checked: &CheckedProgram,
    slot: usize,
    (pad, lift, fma, isa): (u64, bool, bool, Isa),
    stats: &mut Stats,
    failures: &mut Vec<FailedCheck>,
) -> Option<(Check, Kernel)> {
    let mode = match (lift, fma) {
        (_, true) => "_fma",
        (true, false) => "",
        (false, false) => "_exact",
    };
    let name = format!("p{slot}_m{pad}{mode}");
    match lower(cfg, checked, pad, lift, fma, &name, stats) {
        Ok(k) => Some((
            Check::C {
                pad,
                lift,
                fma,
                isa,
            },
            k,
        )),
        Err(detail) => {
            failures.push(FailedCheck {
                check: Check::Lower { pad },
                detail: detail.to_string(),
            });
            None
        }
    }
}
