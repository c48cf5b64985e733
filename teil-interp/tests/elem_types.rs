//! Element types and functions in both evaluators (spec/semantics.md, "Element types",
//! "Functions and conversions"; spec/values.md, "Binary32", "Functions"): every binary32
//! operation and fold step is rounded as it is taken, literals are rounded once to their
//! context's type, functions are the correctly rounded values of `teil_interp::functions`, and
//! the oracle and the fast evaluator agree bit for bit wherever no sum is reassociated.

use ndarray::{arr0, arr1, ArrayD};
use std::collections::BTreeMap;
use teil::ast::{ElemType, Func};
use teil::CodedError;
use teil_interp::functions::apply;

type Inputs = BTreeMap<String, ArrayD<f64>>;

fn compile(src: &str) -> teil::CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}"))
        .0
}

/// Runs both evaluators and returns the oracle's `out`, after checking the fast evaluator
/// gives the same bits.
fn both(src: &str, inputs: &Inputs, out: &str) -> ArrayD<f64> {
    let p = compile(src);
    let o = teil_interp::run_oracle(&p, inputs).unwrap()[out].clone();
    let f = teil_interp::run_fast(&p, inputs).unwrap()[out].clone();
    let bits = |t: &ArrayD<f64>| t.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&o),
        bits(&f),
        "oracle {o} and fast {f} differ for\n{src}"
    );
    o
}

fn scalar(name: &str, x: f64) -> Inputs {
    [(name.to_string(), arr0(x).into_dyn())].into()
}

const U32: f64 = 5.960464477539063e-8; // 2^-24, half an ulp of 1 in binary32

#[test]
fn each_binary32_addition_rounds_not_the_whole_expression() {
    // 1 + 2^-24 is a tie that rounds to 1, twice; in binary64 the sum is 1 + 2^-23, which
    // binary32 holds: rounding once at the end would give another number.
    let src = "input var a : f32[]\ninput var b : f32[]\noutput var s : f32[]\ns = a + b + b";
    let mut inputs = scalar("a", 1.0);
    inputs.extend(scalar("b", U32));
    assert_eq!(both(src, &inputs, "s")[[]], 1.0);
    let src64 = "input var a : []\ninput var b : []\noutput var s : []\ns = a + b + b";
    assert_eq!(both(src64, &inputs, "s")[[]], 1.0 + 2.0 * U32);
}

#[test]
fn binary32_folds_round_every_step_in_both_evaluators() {
    // A sum of 1 and three 2^-24 in index order: every step is a tie back to 1 in binary32.
    let v = arr1(&[1.0, U32, U32, U32]).into_dyn();
    let inputs: Inputs = [("v".to_string(), v.clone())].into();
    let sum = "input var v : f32[4]\noutput var s : f32[]\ns = red+ 1 v";
    assert_eq!(both(sum, &inputs, "s")[[]], 1.0);
    // The same terms as a contraction with ones: products and sums rounded alike.
    let ones: Inputs = [
        ("v".to_string(), v),
        ("w".to_string(), arr1(&[1.0; 4]).into_dyn()),
    ]
    .into();
    let dot =
        "input var v : f32[4]\ninput var w : f32[4]\noutput var s : f32[]\ns = (v # w) .[1 2]";
    assert_eq!(both(dot, &ones, "s")[[]], 1.0);
    // A product of two binary32 numbers whose exact product needs more than 24 bits.
    let (x, y) = (1.0 + 2.0 * U32, 1.0 + 2.0 * U32); // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46
    let mut inputs = scalar("x", x);
    inputs.extend(scalar("y", y));
    let mul = "input var x : f32[]\ninput var y : f32[]\noutput var p : f32[]\np = x * y";
    assert_eq!(both(mul, &inputs, "p")[[]], 1.0 + 4.0 * U32);
}

#[test]
fn a_binary32_sum_over_a_broadcast_is_the_binary32_fold() {
    // 2^24 + 3 copies of 1: binary32 stops counting at 2^24 (the fast evaluator takes the
    // fold in binades, spec/values.md "Reassociation", here in binary32).
    let src = "input var x : f32[]\noutput var s : f32[]\ns = red+ 1 (expa 1 16777219 x)";
    let p = compile(src);
    let f = teil_interp::run_fast(&p, &scalar("x", 1.0)).unwrap()["s"][[]];
    assert_eq!(f, 16777216.0);
    // Small enough for the oracle too: 0.1 ten times, in binary32.
    let src = "input var x : f32[]\noutput var s : f32[]\ns = red+ 1 (expa 1 10 x)";
    let tenth = ElemType::F32.round(0.1);
    let fold = (1..10).fold(tenth, |acc, _| ElemType::F32.round(acc + tenth));
    assert_eq!(both(src, &scalar("x", tenth), "s")[[]], fold);
}

#[test]
fn a_literal_is_its_decimal_rounded_once_to_its_context_type() {
    // Just above the binary32 midpoint 1 + 2^-24: binary64 rounds the decimal to the midpoint
    // itself, which binary32 rounds to even (1); rounded once, it is 1 + 2^-23.
    let decimal = "1.0000000596046447753906250000001";
    let out = |ty: &str| {
        let src = format!("output var s : {ty}[]\ns = {decimal}");
        both(&src, &Inputs::new(), "s")[[]]
    };
    assert_eq!(out("f32"), 1.0 + 2.0 * U32);
    assert_eq!(out("f64"), 1.0 + U32);
    // A literal takes the other operand's type: 0.1 in f32 is binary32's 0.1.
    let src = "input var x : f32[]\noutput var s : f32[]\ns = x * 0.1";
    assert_eq!(both(src, &scalar("x", 1.0), "s")[[]], 0.1f32 as f64);
    // Under a conversion a literal takes the other type: f32 0.1 rounds binary64's 0.1.
    let src = "output var s : f32[]\ns = f32 0.1";
    assert_eq!(both(src, &Inputs::new(), "s")[[]], 0.1f64 as f32 as f64);
}

#[test]
fn conversions_round_to_binary32_and_widen_exactly() {
    let src = "input var x : []\noutput var s : f32[]\noutput var t : []\n\
               s = f32 x\nt = f64 (f32 x) - x";
    let x = 0.1f64;
    let o = teil_interp::run_oracle(&compile(src), &scalar("x", x)).unwrap();
    assert_eq!(o["s"][[]], x as f32 as f64);
    assert_eq!(o["t"][[]], x as f32 as f64 - x);
    // Beyond binary32's range a conversion gives ±∞, never an error.
    let inf = both(
        "input var x : []\noutput var s : f32[]\ns = f32 x",
        &scalar("x", -1e300),
        "s",
    );
    assert_eq!(inf[[]], f64::NEG_INFINITY);
}

#[test]
fn functions_are_the_correctly_rounded_values_in_their_type() {
    let xs = [
        -745.2, -104.0, -20.0, -1.5, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.0, 88.7, 709.0, 1e300,
    ];
    for (kw, f) in [
        ("exp", Func::Exp),
        ("log", Func::Log),
        ("sqrt", Func::Sqrt),
        ("tanh", Func::Tanh),
        ("erf", Func::Erf),
        ("abs", Func::Abs),
    ] {
        for t in ElemType::ALL {
            let src = format!("input var x : {t}[13]\noutput var y : {t}[13]\ny = {kw} x");
            let x: Vec<f64> = xs.iter().map(|&v| t.round(v)).collect();
            let inputs: Inputs = [("x".to_string(), arr1(&x).into_dyn())].into();
            let y = both(&src, &inputs, "y");
            for (xi, yi) in x.iter().zip(y.iter()) {
                let want = apply(f, t, *xi);
                assert!(
                    want.to_bits() == yi.to_bits() || (want.is_nan() && yi.is_nan()),
                    "{kw} {t} {xi}: {yi} != {want}"
                );
            }
        }
    }
}

#[test]
fn max_and_min_order_zeros_and_keep_nan_unlike_the_fold_of_redmax() {
    let v = |xs: &[f64]| arr1(xs).into_dyn();
    let inputs: Inputs = [
        ("a".to_string(), v(&[-0.0, 0.0, f64::NAN, 1.0])),
        ("b".to_string(), v(&[0.0, -0.0, 2.0, f64::NAN])),
    ]
    .into();
    let src = "input var a : [4]\ninput var b : [4]\noutput var hi : [4]\noutput var lo : [4]\n\
               hi = max a b\nlo = min a b";
    let p = compile(src);
    let o = teil_interp::run_oracle(&p, &inputs).unwrap();
    let f = teil_interp::run_fast(&p, &inputs).unwrap();
    for r in [&o, &f] {
        let hi: Vec<u64> = r["hi"].iter().map(|x| x.to_bits()).collect();
        let lo: Vec<u64> = r["lo"].iter().map(|x| x.to_bits()).collect();
        assert_eq!(hi[0], 0.0f64.to_bits());
        assert_eq!(hi[1], 0.0f64.to_bits());
        assert_eq!(lo[0], (-0.0f64).to_bits());
        assert_eq!(lo[1], (-0.0f64).to_bits());
        assert!(r["hi"][2].is_nan() && r["hi"][3].is_nan());
        assert!(r["lo"][2].is_nan() && r["lo"][3].is_nan());
    }
    // redmax's fold keeps its first operand on a tie of zeros: max(-0, +0) = -0 there.
    let fold = compile("input var a : [2]\noutput var s : []\ns = redmax 1 a");
    let s = teil_interp::run_oracle(&fold, &[("a".to_string(), v(&[-0.0, 0.0]))].into()).unwrap()
        ["s"][[]];
    assert_eq!(s.to_bits(), (-0.0f64).to_bits());
}

#[test]
fn an_f32_input_must_hold_binary32_values() {
    let p = compile("input var x : f32[2]\noutput var y : f32[2]\ny = exp x");
    let ok: Inputs = [("x".to_string(), arr1(&[0.5, 0.25]).into_dyn())].into();
    assert!(teil_interp::run_fast(&p, &ok).is_ok());
    let bad: Inputs = [("x".to_string(), arr1(&[0.5, 0.1]).into_dyn())].into();
    for e in [
        teil_interp::run_fast(&p, &bad).unwrap_err(),
        teil_interp::run_oracle(&p, &bad).unwrap_err(),
    ] {
        assert_eq!(e.code(), Some(teil::Code::InputElemType));
        assert_eq!(
            e.coded(),
            "[E0605] input `x` is declared f32 but element 1 (0.1) is not an f32 value"
        );
    }
    // NaN of any payload is a binary32 value.
    let nan: Inputs = [("x".to_string(), arr1(&[f64::NAN, 1.0]).into_dyn())].into();
    assert!(teil_interp::run_oracle(&p, &nan).unwrap()["y"][0].is_nan());
}

#[test]
fn the_softmax_of_a_row_of_minus_infinity_is_nan_and_the_others_are_exact_zeros() {
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels/softmax.teil"),
    )
    .unwrap();
    let inf = f64::INFINITY;
    let mut x = vec![0.0; 32];
    x[..8].fill(-inf); // row 1: all -∞
    x[8] = -inf; // row 2: one -∞ among finite values
    for (k, v) in x.iter_mut().enumerate().skip(9) {
        *v = ElemType::F32.round((k as f64 * 0.37).sin() * 4.0);
    }
    let inputs: Inputs = [(
        "X".to_string(),
        ArrayD::from_shape_vec(vec![4, 8], x).unwrap(),
    )]
    .into();
    let y = both(&src, &inputs, "Y");
    assert!((0..8).all(|c| y[[0, c]].is_nan()));
    assert_eq!(y[[1, 0]].to_bits(), 0.0f64.to_bits());
    for r in 1..4 {
        let s: f64 = (0..8).map(|c| y[[r, c]]).sum();
        assert!((s - 1.0).abs() < 8.0 * 2.0 * U32, "row {r} sums to {s}");
    }
}
