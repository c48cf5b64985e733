//! The error bound of the C backend's fused multiply-add mode (spec/values.md, "Fused
//! multiply-add"), as a value domain.
//!
//! The oracle run over [`Rounding`] instead of binary64 computes, for every cell, the two
//! quantities the bound is made of: the cell's term evaluated on absolute values (`M`) and its
//! rounding depth (`D`); [`Rounding::fma_bound`] turns them into the largest difference the
//! spec allows between a result computed with fused multiply-adds and the exact-mode result of
//! the same term, `2 γ_D M` (with `γ_n = n u / (1 − n u)`, `u = 2^-53`, or `2^-24` where the
//! term rounds to binary32, which then also counts each rounding to binary32). [`fma_bounds`] does
//! this for every variable of a program. Both are the spec's definitions made executable, for
//! the differential tests and the fuzzer.

use crate::domain::Domain;
use crate::oracle::Oracle;
use crate::store::Store;
use crate::{RunError, Tensor};
use std::collections::BTreeMap;
use teil::ast::{ElemType, Func, Func2};
use teil::CheckedProgram;

/// Unit roundoff of binary64, round to nearest.
pub const UNIT_ROUNDOFF: f64 = 1.0 / 9_007_199_254_740_992.0; // 2^-53

/// Unit roundoff of binary32, round to nearest.
pub const UNIT_ROUNDOFF_BINARY32: f64 = 1.0 / 16_777_216.0; // 2^-24

/// One cell's `M`, `D` and the largest `M` of any of its subterms (spec/values.md, "Fused
/// multiply-add"). `•` and NaN inputs have an undefined magnitude (NaN); a term with a division
/// has no depth (`None`: the spec gives no bound).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rounding {
    /// `M`: the term evaluated on the absolute values of its leaves, `⊖` read as `⊕` and
    /// `max`/`min` as the maximum (computed in binary64, round to nearest).
    pub magnitude: f64,
    /// `D`: leaves 0, `a ⊕ b` and `a ⊖ b` one more than the deeper operand, `a ⊗ b` the sum of
    /// both plus one, `max`/`min` the deeper operand; `None` below a division.
    pub depth: Option<u64>,
    /// The largest magnitude of any subterm: every intermediate value of every evaluation that
    /// the bound covers is at most `(1 + γ_D)` times it, so it tells whether one can overflow.
    pub peak: f64,
    /// Whether some subterm rounds to binary32: the bound then takes binary32's unit roundoff
    /// for every rounding (binary64's is smaller) and binary32's overflow threshold.
    pub binary32: bool,
}

/// `γ_n = n u / (1 − n u)` for binary64's `u`, or `None` when `n u ≥ 1/2` (the bound's
/// derivation needs `n u < 1`; half leaves room for the rounding of the bound itself).
pub fn gamma(n: u64) -> Option<f64> {
    gamma_with(n, UNIT_ROUNDOFF)
}

/// [`gamma`] for the unit roundoff `u`.
pub fn gamma_with(n: u64, u: f64) -> Option<f64> {
    let nu = n as f64 * u;
    (nu < 0.5).then(|| nu / (1.0 - nu))
}

impl Rounding {
    fn node(magnitude: f64, depth: Option<u64>, a: &Self, b: &Self) -> Self {
        Rounding {
            magnitude,
            depth,
            peak: a.peak.max(b.peak).max(magnitude),
            binary32: a.binary32 || b.binary32,
        }
    }

    /// The largest `|fma − exact|` the spec allows for this cell, where `exact` is the result
    /// of the term in exact mode and `fma` the result of the same term with any of its
    /// product-then-add pairs rounded once: `2 γ_D M`, computed so that binary64 rounding of
    /// `M` and of the bound itself cannot make it smaller than the real-number bound. `None`
    /// where the spec gives no bound: a term with a division, an undefined or NaN cell, a depth
    /// too large, or magnitudes that could overflow.
    pub fn fma_bound(&self) -> Option<f64> {
        let d = self.depth?;
        let (u, largest) = if self.binary32 {
            (UNIT_ROUNDOFF_BINARY32, f64::from(f32::MAX))
        } else {
            (UNIT_ROUNDOFF, f64::MAX)
        };
        let g = gamma_with(d, u)?;
        // A NaN peak (an undefined cell) is not below the threshold either.
        let fits = self.peak * (1.0 + g) * 2.0 <= largest;
        if !self.magnitude.is_finite() || !fits {
            return None;
        }
        // `M` was computed in binary64 with at most `D` roundings per monomial, each by a
        // factor of at least `1 − u`, so the real `M` is at most `magnitude / (1 − γ_D)`; the
        // last factor covers the few roundings of this expression (in binary64).
        let bound = 2.0 * g / (1.0 - g) * self.magnitude * (1.0 + 8.0 * UNIT_ROUNDOFF);
        bound.is_finite().then_some(bound)
    }
}

impl Domain for Rounding {
    fn lit(x: f64) -> Self {
        Rounding {
            magnitude: x.abs(),
            depth: Some(0),
            peak: x.abs(),
            binary32: false,
        }
    }

    fn undefined() -> Self {
        Rounding {
            magnitude: f64::NAN,
            depth: Some(0),
            peak: f64::NAN,
            binary32: false,
        }
    }

    fn add(&self, b: &Self) -> Self {
        let depth = self.depth.zip(b.depth).map(|(x, y)| x.max(y) + 1);
        Rounding::node(self.magnitude + b.magnitude, depth, self, b)
    }

    fn sub(&self, b: &Self) -> Self {
        self.add(b)
    }

    fn mul(&self, b: &Self) -> Self {
        let depth = self
            .depth
            .zip(b.depth)
            .map(|(x, y)| x.saturating_add(y).saturating_add(1));
        Rounding::node(self.magnitude * b.magnitude, depth, self, b)
    }

    fn div(&self, b: &Self) -> Self {
        Rounding::node(f64::INFINITY, None, self, b)
    }

    fn max(&self, b: &Self) -> Self {
        let magnitude = if self.magnitude.is_nan() || b.magnitude.is_nan() {
            f64::NAN
        } else {
            self.magnitude.max(b.magnitude)
        };
        let depth = self.depth.zip(b.depth).map(|(x, y)| x.max(y));
        Rounding::node(magnitude, depth, self, b)
    }

    fn min(&self, b: &Self) -> Self {
        self.max(b)
    }

    /// A binary32 operation is its binary64 operation (one rounding, counted where it is
    /// taken) rounded to binary32: one more rounding, and the term's bound is binary32's
    /// (`u = 2^-24` for every rounding). Counting two roundings where a binary32 operation
    /// rounds once (53 ≥ 2·24 + 2, spec/values.md) only loosens the bound.
    fn round(&self, t: ElemType) -> Self {
        match t {
            ElemType::F64 => *self,
            ElemType::F32 => Rounding {
                depth: self.depth.map(|d| d.saturating_add(1)),
                binary32: true,
                ..*self
            },
        }
    }

    fn func(_: Func, _: ElemType, a: &Self) -> Self {
        Rounding::node(f64::INFINITY, None, a, a)
    }

    fn func2(_: Func2, a: &Self, b: &Self) -> Self {
        a.max(b)
    }
}

/// For every variable of `p` run on `inputs` (as [`crate::run_oracle`] reads them), the fma
/// bound of every cell ([`Rounding::fma_bound`]), `+∞` where the spec gives none.
pub fn fma_bounds(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, RunError> {
    let mut store = Store::<Rounding>::undefined(p)?;
    for d in p.program().decls.iter().filter(|d| p.is_input(d)) {
        let name = &d.name.name;
        let Some(t) = inputs.get(name) else {
            continue;
        };
        crate::check_input(p, name, t)?;
        let data = t.iter().map(|&x| Rounding::lit(x)).collect();
        store.replace(name, &d.shape(), data)?;
    }
    let mut oracle = Oracle::new(p, store);
    oracle.run()?;
    Ok(oracle
        .into_store()
        .iter()
        .map(|(name, alloc)| {
            let shape: Vec<usize> = alloc.extents.iter().map(|&n| n as usize).collect();
            let data = alloc
                .data
                .iter()
                .map(|r| r.fma_bound().unwrap_or(f64::INFINITY))
                .collect();
            let t = Tensor::from_shape_vec(ndarray::IxDyn(&shape), data)
                .expect("the store's extents match its data");
            (name.clone(), t)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(x: f64) -> Rounding {
        Rounding::lit(x)
    }

    #[test]
    fn a_contraction_of_length_k_has_depth_k() {
        // Σ_{i=1..k} a_i b_i folded from the first term: depth 1, then one more per addition.
        let (a, b) = ([1.5, -2.0, 0.5, 3.0], [2.0, 0.25, -4.0, 1.0]);
        let mut s = leaf(a[0]).mul(&leaf(b[0]));
        for i in 1..4 {
            s = s.add(&leaf(a[i]).mul(&leaf(b[i])));
        }
        assert_eq!(s.depth, Some(4));
        assert_eq!(s.magnitude, 3.0 + 0.5 + 2.0 + 3.0);
        let g = gamma(4).unwrap();
        let bound = s.fma_bound().unwrap();
        assert!(bound >= 2.0 * g * 8.5 && bound <= 2.0 * g * 8.5 * (1.0 + 1e-12));
    }

    #[test]
    fn a_binary32_contraction_takes_binary32s_unit_roundoff() {
        // The same sum with every product and addition rounded to binary32: each operation
        // counts twice (its binary64 rounding and the binary32 one), u = 2^-24.
        let f32 = |r: Rounding| r.round(ElemType::F32);
        let (a, b) = ([1.5, -2.0, 0.5, 3.0], [2.0, 0.25, -4.0, 1.0]);
        let mut s = f32(leaf(a[0]).mul(&leaf(b[0])));
        for i in 1..4 {
            s = f32(s.add(&f32(leaf(a[i]).mul(&leaf(b[i])))));
        }
        assert!(s.binary32);
        assert_eq!(s.depth, Some(2 + 3 * 2));
        let g = gamma_with(8, UNIT_ROUNDOFF_BINARY32).unwrap();
        let bound = s.fma_bound().unwrap();
        assert!(bound >= 2.0 * g * 8.5 && bound <= 2.0 * g * 8.5 * (1.0 + 1e-6));
        // 2^-24 is far above 2^-53: the binary64 bound of the same term would be too small.
        assert!(bound > 1e8 * 2.0 * gamma(8).unwrap() * 8.5);
        // Binary32 overflows near 3.4e38: no bound where a value could reach it.
        assert_eq!(f32(leaf(1e20).mul(&leaf(1e19))).fma_bound(), None);
        assert!(leaf(1e20).mul(&leaf(1e19)).fma_bound().is_some());
    }

    #[test]
    fn division_nan_and_overflow_have_no_bound() {
        assert_eq!(leaf(1.0).div(&leaf(3.0)).fma_bound(), None);
        assert_eq!(leaf(f64::NAN).add(&leaf(1.0)).fma_bound(), None);
        assert_eq!(Rounding::undefined().mul(&leaf(1.0)).fma_bound(), None);
        assert_eq!(
            leaf(1e308).mul(&leaf(10.0)).mul(&leaf(1e-300)).fma_bound(),
            None
        );
        // max selects: no rounding of its own, magnitude of the larger operand.
        let m = leaf(-3.0).max(&leaf(2.0).mul(&leaf(1.0)));
        assert_eq!((m.magnitude, m.depth), (3.0, Some(1)));
        // Subtraction adds magnitudes: cancellation is what the bound must cover.
        let s = leaf(1.0).sub(&leaf(1.0));
        assert_eq!((s.magnitude, s.depth), (2.0, Some(1)));
        assert_eq!(leaf(2.0).fma_bound(), Some(0.0));
    }
}
