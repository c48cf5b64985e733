//! The equational laws of the TeIL paper §3.6 at full generality: arbitrary shapes (rank up to
//! 5), every pair or position, expressions other than one instance, extents far beyond 4, and
//! the analogous forms for `red*`, `redmax` and `redmin`. Both sides run through the oracle
//! (the semantics) and the fast evaluator, on values that include NaN, infinities and signed
//! zeros wherever the law is exact in binary64.
//!
//! | law | checked | comparison |
//! |---|---|---|
//! | (3) `proj i m (expa i n e) ≅ e` | any `e` of rank 0..=4 (a variable, a sum, a product of two variables split anywhere, a contraction), any position `i` (1..=rank+1), `n` up to 64, any `1 ≤ m ≤ n` | bit for bit, any values: the left side reads `e` at the same index |
//! | (4) `diag i0 i1 (transp i0 i1 e) ≅ diag i0 i1 e` | any `e` of rank 2..=5 (a variable, a sum, a product of two variables split anywhere, a contraction), any `i0 ≠ i1` in either order | bit for bit, any values: both sides read the same cells |
//! | (5) `red+ i (expa i n e) ≅ n · e` | any position `i` (1..=rank+1), `n` up to 64 | bit for bit on small integers, ±0, ±∞ and NaN (no rounding: `n·e` and the repeated sum are the same number); on arbitrary finite values within the bound of a repeated sum against a rounded product, `|Σ − fl(n·e)| ≤ γ_n · n · |e|`, `γ_k = k·u/(1 − k·u)`, `u = 2^-53` (`γ_{n−1}` for the sum, `u` more for rounding `n·e`) |
//! | (5) for `red*`: `red* i (expa i n e) ≅ e · e · ... · e` (`n` factors, left to right) | any `i`, `n` up to 64 | bit for bit, any values: the same multiplications in the same order (the fast evaluator's `red*` too; its product chain is a permitted reassociation, so it is not compared bit for bit) |
//! | (5) for `redmax`, `redmin`: `≅ e` | any `i`, `n` up to 64 | bit for bit, any values (`max(x, x) = x`, NaN propagates) |
//! | (6) `contr i j e ≅ red+ i (diag i j e)` | any `e` of rank 2..=5 (the four forms of (3)), any `i < j` with equal extents, the contracted extent up to 16 | bit for bit, any values: the same left fold over the same cells (the oracle's and the fast evaluator's, each with itself) |

use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed};
use std::collections::BTreeMap;
use teil_interp::{run_fast, run_oracle, Tensor};

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x3_6),
        failure_persistence: None,
        ..Config::default()
    }
}

fn dims(s: &[u64]) -> String {
    let v: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", v.join(" "))
}

/// A value: small integers most of the time, then signed zeros, infinities and NaN, and, when
/// `rounding`, arbitrary finite numbers (for which sums and products round).
fn value(rounding: bool) -> BoxedStrategy<f64> {
    let ints = (-3i32..=3).prop_map(f64::from);
    if rounding {
        prop_oneof![
            6 => ints,
            1 => Just(-0.0),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(f64::NAN),
            2 => -1e6f64..1e6,
            1 => prop::num::f64::NORMAL,
        ]
        .boxed()
    } else {
        prop_oneof![
            6 => ints,
            1 => Just(-0.0),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(f64::NAN),
        ]
        .boxed()
    }
}

fn tensor(shape: Vec<u64>, rounding: bool) -> impl Strategy<Value = Tensor> {
    let len = shape.iter().product::<u64>() as usize;
    prop::collection::vec(value(rounding), len).prop_map(move |v| {
        let s: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
        ArrayD::from_shape_vec(IxDyn(&s), v).expect("shape")
    })
}

/// Bitwise equality of every cell; NaN equals NaN (payloads are not part of the semantics).
fn bitwise(a: &Tensor, b: &Tensor) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits())
}

/// Runs `src` (which assigns `L` and `R`) through both evaluators; returns `[L, R]` of each.
fn run(src: &str, inputs: &BTreeMap<String, Tensor>) -> [[Tensor; 2]; 2] {
    let p = teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0;
    let o = run_oracle(&p, inputs).expect("oracle");
    let f = run_fast(&p, inputs).expect("fast");
    [
        [o["L"].clone(), o["R"].clone()],
        [f["L"].clone(), f["R"].clone()],
    ]
}

/// An expression of `shape` and its declarations: `X`, `X + Y`, `prod P Q` (split at `split`,
/// `0..=rank`), or a contraction of a larger tensor, for `kind` 0, 1, 2, 3.
fn expression(shape: &[u64], kind: u8, split: usize) -> (String, String) {
    match kind {
        0 => (format!("input var X : {}", dims(shape)), "X".to_string()),
        1 => (
            format!("input var X : {0}\ninput var Y : {0}", dims(shape)),
            "(X + Y)".to_string(),
        ),
        2 => (
            format!(
                "input var P : {}\ninput var Q : {}",
                dims(&shape[..split]),
                dims(&shape[split..])
            ),
            "(prod P Q)".to_string(),
        ),
        _ => {
            // contr 1 2 of a tensor [2, 2, shape...]
            let mut big = vec![2, 2];
            big.extend(shape);
            (
                format!("input var X : {}", dims(&big)),
                "(contr 1 2 X)".to_string(),
            )
        }
    }
}

/// Every input of `src` drawn from `seed` (any values: NaN, ±∞, ±0 and arbitrary finite ones).
fn inputs_from_seed(src: &str, seed: u64) -> BTreeMap<String, Tensor> {
    let p = teil::compile(src)
        .unwrap_or_else(|d| panic!("{d:?}\n{src}"))
        .0;
    let mut inputs = BTreeMap::new();
    for (k, d) in p.program().decls.iter().enumerate() {
        if p.is_input(d) {
            let t = tensor_from_seed(&d.shape(), seed ^ k as u64, true);
            inputs.insert(d.name.name.clone(), t);
        }
    }
    inputs
}

/// Law (4): a shape of rank 2..=5 with extents 1..=3, positions `i0 != i1` with equal extents,
/// and one of four expressions of that shape.
fn law4_case() -> impl Strategy<Value = (Vec<u64>, usize, usize, u8, usize)> {
    (2usize..=5)
        .prop_flat_map(|r| {
            (
                prop::collection::vec(1u64..=3, r),
                0..r,
                0..r - 1,
                0u8..4,
                0..=r,
            )
        })
        .prop_map(|(mut s, a, b, kind, split)| {
            let b = if b >= a { b + 1 } else { b };
            s[b] = s[a];
            (s, a + 1, b + 1, kind, split)
        })
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn law_4_diag_ignores_a_transposition_of_its_dimensions(
        (shape, i0, i1, kind, split) in law4_case(),
        seed in any::<u64>(),
    ) {
        let (decls, e) = expression(&shape, kind, split);
        let mut out = shape.clone();
        out.remove(i0.max(i1) - 1);
        let src = format!(
            "{decls}\noutput var L : {o}\noutput var R : {o}\n\
             L = diag {i0} {i1} (transp {i0} {i1} {e})\nR = diag {i0} {i1} {e}",
            o = dims(&out)
        );
        for [l, r] in run(&src, &inputs_from_seed(&src, seed)) {
            prop_assert!(bitwise(&l, &r), "{src}\nL = {l}\nR = {r}");
        }
    }
}

/// Shape of `e` (rank 0..=4, extents 1..=3), the position `i` of the new dimension, and `n`.
fn law5_case() -> impl Strategy<Value = (Vec<u64>, usize, u64)> {
    prop::collection::vec(1u64..=3, 0..=4).prop_flat_map(|s| {
        let r = s.len();
        (Just(s), 1..=r + 1, prop_oneof![1u64..=8, 9u64..=64])
    })
}

fn law5_src(shape: &[u64], i: usize, n: u64, red: &str, rhs: &str) -> String {
    format!(
        "input var E : {s}\noutput var L : {s}\noutput var R : {s}\n\
         L = {red} {i} (expa {i} {n} E)\nR = {rhs}",
        s = dims(shape)
    )
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn law_5_sum_over_an_expansion_is_exactly_a_multiple_without_rounding(
        (shape, i, n) in law5_case(),
        seed in any::<u64>(),
    ) {
        let src = law5_src(&shape, i, n, "red+", &format!("mul {n} E"));
        let t = tensor_from_seed(&shape, seed, false);
        let inputs: BTreeMap<String, Tensor> = [("E".to_string(), t)].into();
        for [l, r] in run(&src, &inputs) {
            prop_assert!(bitwise(&l, &r), "{src}\nL = {l}\nR = {r}");
        }
    }

    #[test]
    fn law_5_sum_over_an_expansion_is_a_multiple_within_the_rounding_bound(
        (shape, i, n) in law5_case(),
        seed in any::<u64>(),
    ) {
        let src = law5_src(&shape, i, n, "red+", &format!("mul {n} E"));
        let t = tensor_from_seed(&shape, seed, true);
        let inputs: BTreeMap<String, Tensor> = [("E".to_string(), t.clone())].into();
        let [[l, r], _] = run(&src, &inputs);
        // L is the repeated sum, n - 1 rounded additions (the fold's first, `-0 + e`, is
        // exact): |L - n·e| <= γ_{n-1}·n·|e| (Higham, Lemma 3.1 / eq. 4.4). But R is not n·e: it
        // is `mul n E`, n·e rounded once, |R - n·e| <= u·n·|e|. So |L - R| <= (γ_{n-1} + u)·n·|e|,
        // and γ_{n-1} + u <= γ_n (γ_{n-1} + u = ((n-1)u + u - (n-1)u²)/(1 - (n-1)u) <=
        // nu/(1 - nu)): γ_n is the safe bound; γ_{n-1} alone could be exceeded by the rounding of R.
        let u = f64::EPSILON / 2.0;
        let k = n as f64;
        let gamma = k * u / (1.0 - k * u);
        for ((x, y), e) in l.iter().zip(r.iter()).zip(t.iter()) {
            if x.is_finite() && y.is_finite() {
                let bound = gamma * n as f64 * e.abs();
                prop_assert!((x - y).abs() <= bound, "{src}\n{x} vs {y}: over {bound}");
            } else if !e.is_finite() {
                prop_assert!((x.is_nan() && y.is_nan()) || x == y, "{src}\n{x} vs {y}");
            }
        }
    }

    #[test]
    fn law_5_for_products_maxima_and_minima_is_exact(
        (shape, i, n) in law5_case(),
        seed in any::<u64>(),
    ) {
        let t = tensor_from_seed(&shape, seed, true);
        let inputs: BTreeMap<String, Tensor> = [("E".to_string(), t)].into();
        // red*: the left fold e·e·...·e, written as the same left-nested product.
        let power = (1..n).fold("E".to_string(), |acc, _| format!("({acc} * E)"));
        for (red, rhs) in [("red*", power.as_str()), ("redmax", "E"), ("redmin", "E")] {
            let src = law5_src(&shape, i, n, red, rhs);
            let [[ol, or], [fl, fr]] = run(&src, &inputs);
            prop_assert!(bitwise(&ol, &or), "oracle: {src}\nL = {ol}\nR = {or}");
            prop_assert!(bitwise(&fl, &or), "fast L: {src}\nL = {fl}\nR = {or}");
            // The fast evaluator plans an element-wise product chain as one term and multiplies
            // it pairwise in its own order, a reassociation values.md permits; so its R is
            // compared with the semantics only where that order cannot matter.
            if red != "red*" {
                prop_assert!(bitwise(&fr, &or), "fast R: {src}\nR = {fr}\nR = {or}");
            }
        }
    }
}

/// A tensor of `shape` drawn deterministically from `seed`.
fn tensor_from_seed(shape: &[u64], seed: u64, rounding: bool) -> Tensor {
    let mut k = [0u8; 32];
    k[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(
        config(1),
        proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &k),
    );
    tensor(shape.to_vec(), rounding)
        .new_tree(&mut runner)
        .expect("a tensor")
        .current()
}

/// Law (3): the shape of `e` (rank 0..=4, extents 1..=3), its form and split (as
/// [`expression`]), the position `i` of the new dimension, `n` and `1 <= m <= n`.
fn law3_case() -> impl Strategy<Value = (Vec<u64>, u8, usize, usize, u64, u64)> {
    prop::collection::vec(1u64..=3, 0..=4)
        .prop_flat_map(|s| {
            let r = s.len();
            (
                Just(s),
                0u8..4,
                0..=r,
                1..=r + 1,
                prop_oneof![1u64..=8, 9u64..=64],
            )
        })
        .prop_flat_map(|(s, kind, split, i, n)| {
            (Just(s), Just(kind), Just(split), Just(i), Just(n), 1..=n)
        })
}

/// Law (6): a shape of rank 2..=5 (extents 1..=3) whose positions `i < j` (1-based) share an
/// extent of 1..=16, the form of `e` and its split (as [`expression`]).
fn law6_case() -> impl Strategy<Value = (Vec<u64>, usize, usize, u8, usize)> {
    (2usize..=5)
        .prop_flat_map(|r| {
            (
                prop::collection::vec(1u64..=3, r),
                0..r,
                0..r - 1,
                prop_oneof![1u64..=4, 5u64..=16],
                0u8..4,
                0..=r,
            )
        })
        .prop_map(|(mut s, a, b, n, kind, split)| {
            let b = if b >= a { b + 1 } else { b };
            let (i, j) = (a.min(b), a.max(b));
            s[i] = n;
            s[j] = n;
            (s, i + 1, j + 1, kind, split)
        })
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn law_3_a_projection_of_an_expansion_is_the_operand(
        (shape, kind, split, i, n, m) in law3_case(),
        seed in any::<u64>(),
    ) {
        let (decls, e) = expression(&shape, kind, split);
        let src = format!(
            "{decls}\noutput var L : {s}\noutput var R : {s}\n\
             L = proj {i} {m} (expa {i} {n} {e})\nR = {e}",
            s = dims(&shape)
        );
        for [l, r] in run(&src, &inputs_from_seed(&src, seed)) {
            prop_assert!(bitwise(&l, &r), "{src}\nL = {l}\nR = {r}");
        }
    }

    #[test]
    fn law_6_a_contraction_is_a_sum_over_a_diagonal(
        (shape, i, j, kind, split) in law6_case(),
        seed in any::<u64>(),
    ) {
        let (decls, e) = expression(&shape, kind, split);
        let mut out = shape.clone();
        out.remove(j - 1);
        out.remove(i - 1);
        let src = format!(
            "{decls}\noutput var L : {o}\noutput var R : {o}\n\
             L = contr {i} {j} {e}\nR = red+ {i} (diag {i} {j} {e})",
            o = dims(&out)
        );
        for [l, r] in run(&src, &inputs_from_seed(&src, seed)) {
            prop_assert!(bitwise(&l, &r), "{src}\nL = {l}\nR = {r}");
        }
    }
}
