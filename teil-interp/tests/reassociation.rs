//! The fast evaluator and the reassociation rule of spec/values.md ("Reassociation"): its
//! pairwise contractions return a permitted result, and its one documented exception, a sum over
//! a dimension added by `expa` computed as a multiplication by the extent (law (5)).

use ndarray::{arr0, ArrayD};
use std::collections::BTreeMap;

fn run(src: &str, x: f64) -> (f64, f64) {
    let p = teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}"))
        .0;
    let inputs: BTreeMap<String, ArrayD<f64>> = [("x".to_string(), arr0(x).into_dyn())].into();
    let o = teil_interp::run_oracle(&p, &inputs).unwrap()["s"][[]];
    let f = teil_interp::run_fast(&p, &inputs).unwrap()["s"][[]];
    (o, f)
}

const TEN: &str = "input var x : []\noutput var s : []\ns = red+ 1 (expa 1 10 x)";

#[test]
fn a_sum_over_a_broadcast_is_a_repeated_sum_in_the_spec_and_a_product_in_the_fast_evaluator() {
    let (o, f) = run(TEN, 0.1);
    // The spec: ((0.1 ⊕ 0.1) ⊕ 0.1) ... ten terms, folded from the first.
    let spec = (1..10).fold(0.1f64, |acc, _| acc + 0.1);
    assert_eq!(spec, 0.9999999999999999);
    assert_eq!(o.to_bits(), spec.to_bits());
    // The fast evaluator: 0.1 ⊗ 10, outside the permitted set (n ⊗ e is not e ⊕ ... ⊕ e).
    assert_eq!(f.to_bits(), (0.1f64 * 10.0).to_bits());
    assert_eq!(f, 1.0);
}

#[test]
fn infinities_nan_and_signed_zeros_in_a_broadcast_sum_agree() {
    for x in [f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 3.0] {
        let (o, f) = run(TEN, x);
        assert_eq!(o.to_bits(), f.to_bits(), "x = {x}");
    }
    let (o, f) = run(TEN, f64::NAN);
    assert!(o.is_nan() && f.is_nan());
}
