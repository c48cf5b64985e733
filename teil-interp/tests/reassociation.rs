//! The fast evaluator and the reassociation rule of spec/values.md ("Reassociation"): a sum
//! over a dimension added by `expa` adds `n` copies of one value, and the fast evaluator
//! computes that left fold bit for bit (`teil_interp::domain::repeated_sum`) instead of the
//! multiplication `n · e` of law (5), which is another term and rounds differently.

use ndarray::{arr0, ArrayD};
use proptest::prelude::*;
use std::collections::BTreeMap;
use teil_interp::domain::repeated_sum;

fn run(src: &str, x: f64) -> (f64, f64) {
    let p = teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}"))
        .0;
    let inputs: BTreeMap<String, ArrayD<f64>> = [("x".to_string(), arr0(x).into_dyn())].into();
    let o = teil_interp::run_oracle(&p, &inputs).unwrap()["s"][[]];
    let f = teil_interp::run_fast(&p, &inputs).unwrap()["s"][[]];
    (o, f)
}

fn broadcast_sum(n: u64) -> String {
    format!("input var x : []\noutput var s : []\ns = red+ 1 (expa 1 {n} x)")
}

#[test]
fn a_sum_over_a_broadcast_is_the_repeated_sum_in_both_evaluators() {
    let (o, f) = run(&broadcast_sum(10), 0.1);
    // The spec: ((0.1 ⊕ 0.1) ⊕ 0.1) ... ten terms, folded from the first; 0.1 ⊗ 10 would be 1.
    assert_eq!(o.to_bits(), 0.9999999999999999f64.to_bits());
    assert_eq!(f.to_bits(), o.to_bits());
    assert_eq!(0.1f64 * 10.0, 1.0);
}

#[test]
fn nested_broadcast_sums_and_broadcast_sums_of_products_agree_bit_for_bit() {
    // Two broadcast labels, and one beside a contraction: each is the fold of its copies.
    let src = "input var x : []\ninput var v : [3]\noutput var s : []\noutput var t : []\n\
               s = red+ 1 (expa 1 7 (red+ 1 (expa 1 9 x)))\n\
               t = red+ 1 (red+ 2 (prod (expa 1 6 x) v))";
    let p = teil::compile(src).unwrap().0;
    let inputs: BTreeMap<String, ArrayD<f64>> = [
        ("x".to_string(), arr0(0.1).into_dyn()),
        ("v".to_string(), ndarray::arr1(&[0.3, 1e-3, 7.0]).into_dyn()),
    ]
    .into();
    let o = teil_interp::run_oracle(&p, &inputs).unwrap();
    let f = teil_interp::run_fast(&p, &inputs).unwrap();
    let s = repeated_sum(repeated_sum(0.1, 9), 7);
    assert_eq!(o["s"][[]].to_bits(), s.to_bits());
    assert_eq!(f["s"][[]].to_bits(), s.to_bits());
    // t = Σ_i Σ_j x·v_j: the oracle folds j inside i; the fast evaluator sums x·v over j once
    // and adds 6 copies: here both orders give the same bits (checked, not assumed).
    let inner = 0.1 * 0.3 + 0.1 * 1e-3 + 0.1 * 7.0;
    assert_eq!(o["t"][[]].to_bits(), repeated_sum(inner, 6).to_bits());
    assert_eq!(f["t"][[]].to_bits(), o["t"][[]].to_bits());
}

#[test]
fn infinities_nan_and_signed_zeros_in_a_broadcast_sum_agree() {
    for x in [f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 3.0, 1e308] {
        let (o, f) = run(&broadcast_sum(10), x);
        assert_eq!(o.to_bits(), f.to_bits(), "x = {x}");
    }
    let (o, f) = run(&broadcast_sum(10), f64::NAN);
    assert!(o.is_nan() && f.is_nan());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x15), ..ProptestConfig::default() })]

    /// `repeated_sum` is the loop, bit for bit, on any binary64 value (normal, subnormal,
    /// huge, ties) and `n` up to 20,000.
    #[test]
    fn repeated_sum_is_the_left_fold(
        v in prop_oneof![
            any::<f64>(),
            prop::num::f64::SUBNORMAL,
            (1u64..64, -60i32..60).prop_map(|(m, e)| m as f64 * 2f64.powi(e) * f64::EPSILON),
            (-1e6f64..1e6),
        ],
        n in prop_oneof![1u64..50, 50u64..20_000],
    ) {
        let slow = (1..n).fold(v, |acc, _| acc + v);
        let fast = repeated_sum(v, n);
        prop_assert!(
            (slow.is_nan() && fast.is_nan()) || slow.to_bits() == fast.to_bits(),
            "v = {v:e}, n = {n}: {fast:e} != {slow:e}"
        );
    }
}
