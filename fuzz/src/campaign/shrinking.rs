//! Shrinking a mismatch with a predicate that re-runs exactly the check that failed.

use super::checks::{run_check, NotPassed};
use super::config::Config;
use super::report::{Mismatch, Shrunk, Stats, Stop};
use crate::check::{Check, FailedCheck};
use crate::shrink::{self, Inputs};
use std::sync::Arc;
use teil::CheckedProgram;

/// Shrinks a mismatch by one of its failures (a C run if there is one) and writes the
/// reproducer. `Err` when the campaign must stop: nothing is written then.
pub(super) fn shrink_mismatch(cfg: &Config, m: &Mismatch) -> Result<Option<Shrunk>, Stop> {
    // A run of the C backend with concrete wrong values makes the most convincing reproducer.
    let first = m
        .failures
        .iter()
        .find(|f| matches!(f.check, Check::C { .. }))
        .or_else(|| m.failures.iter().find(|f| f.check != Check::Generator));
    let Some(first) = first.cloned() else {
        return Ok(None);
    };
    let check = first.check.clone();
    let seed = m.seed;
    let mut scratch = Stats::default();
    // Once the campaign must stop, every further candidate "passes", so the shrinker runs out
    // of candidates at once; its result is then dropped.
    let mut stopped: Option<Stop> = None;
    let fails = |c: &CheckedProgram, inputs: &Inputs| -> bool {
        if stopped.is_none() && cfg.toolchain.cancel.is_cancelled() {
            stopped = Some(Stop::Interrupted);
        }
        if stopped.is_some() {
            return false;
        }
        let mut stats = Stats::default();
        match teil_interp::run_oracle(c, inputs) {
            Err(e) => check == Check::Oracle && e.is_internal(),
            Ok(_) if check == Check::Oracle => false,
            Ok(expected) => match run_check(cfg, &check, c, inputs, &expected, seed, &mut stats) {
                Ok(()) => false,
                Err(NotPassed::Failed(_)) => true,
                Err(NotPassed::Stopped(s)) => {
                    stopped = Some(s);
                    false
                }
            },
        }
    };
    let (program, inputs) = shrink::shrink(
        m.program.clone(),
        m.inputs.clone(),
        fails,
        check.shrink_budget(),
    );
    if let Some(s) = stopped {
        return Err(s);
    }
    let Ok((checked, _)) = teil::check(program.clone()) else {
        return Ok(None);
    };
    let detail = match teil_interp::run_oracle(&checked, &inputs) {
        Err(e) => e.to_string(),
        Ok(expected) => match run_check(
            cfg,
            &check,
            &checked,
            &inputs,
            &expected,
            seed,
            &mut scratch,
        ) {
            Ok(()) => first.detail.clone(),
            Err(NotPassed::Failed(detail)) => detail.to_string(),
            Err(NotPassed::Stopped(s)) => return Err(s),
        },
    };
    let failure = FailedCheck { check, detail };
    let file = cfg.out.as_ref().map(|dir| {
        crate::repro::write(dir, cfg, seed, &failure, &program, &inputs, m.index).map_err(Arc::new)
    });
    Ok(Some(Shrunk {
        program,
        inputs,
        failure,
        file,
    }))
}
