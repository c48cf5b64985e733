//! Inputs that round, and bit-for-bit equality, shared by the tests that compare a compiled
//! kernel's binary64 values with its IR's (`validate::evaluate`).

#![allow(dead_code)] // each test file uses a subset

use ndarray::ArrayD;
use std::collections::BTreeMap;

/// The campaign's random small integers `n` as `n / 3 + n / 10`, which round; with
/// `specials: Some(period)`, in every `period` cells one is `∞`, one `−∞` and one NaN, a
/// third of a period apart.
pub fn inputs(
    p: &teil::CheckedProgram,
    seed: u64,
    specials: Option<usize>,
) -> BTreeMap<String, ArrayD<f64>> {
    let mut k = 0usize;
    teil_interp::random_inputs(p, seed)
        .into_iter()
        .map(|(name, t)| {
            let t = t.mapv(|n| {
                k += 1;
                match specials.map(|period| (k % period, period / 3)) {
                    Some((0, _)) => f64::INFINITY,
                    Some((r, third)) if r == third => f64::NEG_INFINITY,
                    Some((r, third)) if r == 2 * third => f64::NAN,
                    _ => n / 3.0 + n / 10.0,
                }
            });
            (name, t)
        })
        .collect()
}

/// Equal bits, NaN equal to NaN (payloads are not part of the semantics).
pub fn same(x: f64, y: f64) -> bool {
    (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
}
