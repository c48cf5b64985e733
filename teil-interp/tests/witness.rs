//! The type-safety witness: over random well-typed programs, the oracle's bounds check on
//! every store access never fires (TeIL paper Thm. 4.6), and the oracle never fails at all.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use teil_fuzz::gen::{program, GenConfig};
use teil_interp::{random_inputs, run_oracle, RunError};

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7e11),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn witness_never_fires(p in program(GenConfig { division: true, ..GenConfig::default() }), seed in any::<u64>()) {
        let (checked, _) = teil::check(p).expect("generated programs are well-typed");
        match run_oracle(&checked, &random_inputs(&checked, seed)) {
            Ok(out) => prop_assert_eq!(out.len(), checked.program().decls.len()),
            Err(e @ RunError::OutOfBounds { .. }) => prop_assert!(false, "witness fired: {}", e),
            Err(e) => prop_assert!(false, "oracle failed: {}", e),
        }
    }
}

#[test]
fn witness_fires_on_a_bad_access() {
    // The check itself works: reading outside an allocation is reported, not a panic.
    let (p, _) = teil::compile("var A : [2 3]\nvar B : [2 3]\nB = A").unwrap();
    let store = teil_interp::Store::<teil_interp::Val>::undefined(&p).unwrap();
    for idx in [&[3u64, 1][..], &[1, 0], &[1, 4], &[1], &[1, 1, 1]] {
        match store.read("A", idx) {
            Err(RunError::OutOfBounds {
                var,
                index,
                extents,
                ..
            }) => {
                assert_eq!(
                    (var.as_str(), index.as_slice(), extents.as_slice()),
                    ("A", idx, &[2u64, 3][..])
                );
            }
            other => panic!("expected the witness for {idx:?}, got {other:?}"),
        }
    }
    assert!(store.read("A", &[2, 3]).is_ok());
}
