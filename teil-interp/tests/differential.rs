//! The fast evaluator against the oracle on random well-typed programs.
//!
//! Without division and on small integer inputs no operation rounds (every intermediate is an
//! integer far below 2^53), so reassociating sums and products changes nothing: the results
//! must be identical (NaN = `•`, `-0 = +0`).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use teil_fuzz::gen::{program, GenConfig};
use teil_interp::{random_inputs, run_fast, run_oracle, same_values};

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0xfa57),
        failure_persistence: None,
        ..Config::default()
    }
}

fn agree(p: teil::Program, seed: u64) -> Result<(), TestCaseError> {
    let (checked, _) = teil::check(p).expect("generated programs are well-typed");
    let inputs = random_inputs(&checked, seed);
    let oracle = run_oracle(&checked, &inputs).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let fast = run_fast(&checked, &inputs).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for (name, want) in &oracle {
        let got = &fast[name];
        prop_assert!(
            same_values(got, want),
            "`{}` differs\nprogram:\n{}\noracle:\n{}\nfast:\n{}",
            name,
            teil::fmt::program(checked.program(), teil::fmt::Style::Infix),
            want,
            got
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn fast_matches_oracle_exactly(p in program(GenConfig::default()), seed in any::<u64>()) {
        agree(p, seed)?;
    }
}

proptest! {
    #![proptest_config(config(100))]

    #[test]
    fn fast_matches_oracle_on_deep_and_wide_programs(
        p in program(GenConfig { max_depth: 6, max_inner_rank: 6, max_elements: 1024, max_stmts: 4, ..GenConfig::default() }),
        seed in any::<u64>(),
    ) {
        agree(p, seed)?;
    }
}

/// Bound on the distance between the evaluators for finite results when division is present
/// (spec/interpreter.md): sums and products are reassociated, and rounding then differs.
const DIVISION_ULPS: u64 = 1 << 10;

/// With division, rounding happens and the fast evaluator's reassociation (and distribution of
/// products over sums) shows: finite cells must agree within [`DIVISION_ULPS`]; a cell where
/// either evaluator has an infinity or NaN may differ only because distributing a product over
/// a sum is not exact for infinities (`inf · (1 + -1)` is NaN, `inf·1 + inf·-1` is NaN, but
/// `inf · (2 + -1)` is `inf` while `inf·2 + inf·-1` is NaN). That escape must stay rare.
#[test]
fn fast_matches_oracle_within_bound_with_division() {
    let strategy = program(GenConfig {
        division: true,
        ..GenConfig::default()
    });
    let cases = 400;
    let mut escapes = 0;
    for seed in 0..cases {
        let p = teil_fuzz::gen::sample(&strategy, seed);
        let (checked, _) = teil::check(p).expect("well-typed");
        let inputs = random_inputs(&checked, seed);
        let oracle = run_oracle(&checked, &inputs).expect("oracle");
        let fast = run_fast(&checked, &inputs).expect("fast");
        let mut escaped = false;
        for (name, want) in &oracle {
            for (&x, &y) in want.iter().zip(fast[name].iter()) {
                let d = teil_interp::ulps_apart(x, y);
                if d == 0 {
                    continue;
                }
                if x.is_finite() && y.is_finite() {
                    assert!(
                        d <= DIVISION_ULPS,
                        "seed {seed}: `{name}` {x} vs {y} ({d} ulps)\n{}",
                        teil::fmt::program(checked.program(), teil::fmt::Style::Infix)
                    );
                } else {
                    escaped = true;
                }
            }
        }
        escapes += u32::from(escaped);
    }
    assert!(
        escapes * 50 <= cases as u32,
        "{escapes} of {cases} programs differ in non-finite cells"
    );
}

/// The definedness run behind `teil run`'s warnings marks exactly the cells the oracle
/// computes as `•`, here with some inputs left out so that undefined values flow.
#[test]
fn definedness_mode_marks_exactly_the_undefined_cells() {
    let strategy = program(GenConfig {
        division: true,
        ..GenConfig::default()
    });
    for seed in 0..300u64 {
        let p = teil_fuzz::gen::sample(&strategy, seed);
        let (checked, _) = teil::check(p).expect("well-typed");
        let mut inputs = random_inputs(&checked, seed);
        // Leave out every other input.
        let names: Vec<String> = inputs.keys().cloned().collect();
        for (k, n) in names.iter().enumerate() {
            if (k as u64 + seed) % 2 == 0 {
                inputs.remove(n);
            }
        }
        let mut oracle = teil_interp::oracle::Oracle::new(
            &checked,
            teil_interp::initial_store(&checked, &inputs).unwrap(),
        );
        oracle.run().expect("oracle");
        let mut mask = teil_interp::fast_store(&checked, &inputs).unwrap();
        for t in mask.values_mut() {
            t.mapv_inplace(|x| if x.is_nan() { f64::NAN } else { 1.0 });
        }
        let (mask, _) =
            teil_interp::fast::run(&checked, mask, teil_interp::fast::Mode::Definedness).unwrap();
        for (name, alloc) in oracle.store().iter() {
            let want: Vec<bool> = alloc.data.iter().map(|v| v.is_undefined()).collect();
            let got: Vec<bool> = mask[name].iter().map(|x| x.is_nan()).collect();
            assert_eq!(
                got,
                want,
                "seed {seed}: `{name}`\n{}",
                teil::fmt::program(checked.program(), teil::fmt::Style::Infix)
            );
        }
    }
}
