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

    #[test]
    fn fast_matches_oracle_on_deep_and_wide_programs(
        p in program(GenConfig { max_depth: 6, max_inner_rank: 6, max_elements: 1024, max_stmts: 4, ..GenConfig::default() }),
        seed in any::<u64>(),
    ) {
        agree(p, seed)?;
    }
}
