//! Judging functions and binary32 against other implementations (spec/fuzzing.md, "Judging
//! functions"), both ways, on the teaching kernels of `examples/kernels` (softmax,
//! log-softmax, layer normalisation, GELU, attention, a ReLU layer; every one binary32):
//!
//! - the reference evaluator of the ops/1 form, which sums and rounds in its own order
//!   (`einsum` by definition, every step rounded to binary32), passes every case: so does a
//!   target whose `exp` is one ulp off (inside the allowance of 4 ulps);
//! - a target whose `exp` is off by a relative `2^-12` is reported on every kernel with `exp`,
//!   at a cell the bound judges.

use teil_fuzz::case::{Case, FUNCTION_ULPS};
use teil_fuzz::ops_eval::{self, Bug};
use teil_fuzz::target_campaign::judge_output;
use teil_interp::rounding::Permit;

fn kernels() -> Vec<(String, teil::ast::Program)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kernels");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("examples/kernels") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "teil") {
            let src = std::fs::read_to_string(&path).expect("read");
            let (checked, _) = teil::compile(&src).expect("the example checks");
            let program = checked.program().clone();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((name, program));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 6, "{} kernels", out.len());
    out
}

/// The target `bug` on `case`: `Ok` when every output passes, else the first difference.
fn judged(case: &Case, bug: Option<Bug>) -> Result<(), String> {
    let mut env = case.inputs.clone();
    ops_eval::run(&case.ops.steps, &mut env, bug).map_err(|e| e.to_string())?;
    for (name, _) in &case.ops.outputs {
        judge_output(case, name, &env[name]).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn uses_exp(p: &teil::ast::Program) -> bool {
    let mut found = false;
    for s in &p.stmts {
        s.value.walk(&mut |e| {
            found |= matches!(e.kind, teil::ast::ExprKind::Func(teil::ast::Func::Exp, _))
        });
    }
    found
}

#[test]
fn correct_targets_pass_and_an_ulp_is_inside_the_allowance() {
    assert_eq!(FUNCTION_ULPS, 4.0);
    let (mut cells, mut within) = (0usize, 0usize);
    for (name, program) in kernels() {
        for seed in 0..20 {
            let case = Case::new(seed, program.clone(), None, FUNCTION_ULPS).expect("a case");
            let permits = case
                .permits
                .as_ref()
                .expect("binary32 programs are judged by permits");
            assert!(!case.exact, "{name}");
            for p in permits.values().flatten() {
                cells += 1;
                within += usize::from(matches!(p, Permit::Within(_)));
            }
            for bug in [None, Some(Bug::ExpOneUlp)] {
                if let Err(e) = judged(&case, bug) {
                    panic!("{name}, seed {seed}, {bug:?}: {e}");
                }
            }
        }
    }
    // Not vacuous: the random inputs are finite, and almost every cell gets a finite bound.
    assert!(
        within * 10 >= cells * 9,
        "{within} of {cells} cells judged within a bound"
    );
}

#[test]
fn an_exp_off_by_two_to_the_minus_twelve_is_reported() {
    let mut with_exp = 0;
    for (name, program) in kernels() {
        if !uses_exp(&program) {
            continue;
        }
        with_exp += 1;
        let found = (0..20).find_map(|seed| {
            let case = Case::new(seed, program.clone(), None, FUNCTION_ULPS).expect("a case");
            judged(&case, Some(Bug::ExpOff)).err()
        });
        let detail = found.unwrap_or_else(|| panic!("{name}: exp off by 2^-12 not reported"));
        // Reported against a bound, not for a class.
        assert!(detail.contains("the bound is"), "{name}: {detail}");
    }
    assert!(with_exp >= 3, "{with_exp} kernels with exp");
}

/// The allowance is the campaign's (`--function-ulps`): `2^-12` relative is about 2^11 ulps of
/// binary32, inside an allowance of 2^14.
#[test]
fn a_wide_allowance_accepts_the_same_exp() {
    for (name, program) in kernels() {
        for seed in 0..5 {
            let case = Case::new(seed, program.clone(), None, 16384.0).expect("a case");
            if let Err(e) = judged(&case, Some(Bug::ExpOff)) {
                panic!("{name}, seed {seed}: {e}");
            }
        }
    }
}
