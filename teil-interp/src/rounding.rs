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

/// The ulps a function result may be from the correctly rounded value in the bounds of
/// [`fma_bounds`]: the C backend's functions are correctly rounded, within half an ulp of the
/// true value.
pub const CORRECTLY_ROUNDED: f64 = 0.5;

/// The smallest positive subnormal of binary64 and of binary32: the spacing near zero, where
/// a rounding's error is absolute, not relative.
const TINY: f64 = f64::from_bits(1);
const TINY_BINARY32: f64 = f32::from_bits(1) as f64;

/// One cell's `M`, `Δ`, `D` and the largest magnitude of any of its subterms (spec/values.md,
/// "Fused multiply-add" and "Functions in the bound"), with the oracle's value of the cell and
/// whether every permitted evaluation is finite exactly where the oracle's is. `•` and NaN
/// inputs have an undefined magnitude (NaN); a term whose bound the rules cannot give (an
/// argument that may cross a function's or a division's singularity) has an infinite one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rounding {
    /// The oracle's (exact mode's) value of the term: what [`crate::Val`] computes, `•` as NaN.
    pub value: f64,
    /// `M`: the term evaluated on the absolute values of its leaves, `⊖` read as `⊕` and
    /// `max`/`min` as the maximum (computed in binary64, round to nearest). A function,
    /// division or `abs` result is a leaf whose absolute value is at most `|value| + Δ`.
    pub magnitude: f64,
    /// `Δ`: how much larger `M` can be when every leaf is moved by its error (the term on
    /// `|leaf| + error` minus the term on `|leaf|`): 0 where every leaf is an input or a
    /// literal.
    pub excess: f64,
    /// `D`: leaves 0, `a ⊕ b` and `a ⊖ b` one more than the deeper operand, `a ⊗ b` the sum of
    /// both plus one, `max`/`min` the deeper operand.
    pub depth: Option<u64>,
    /// The largest `M + Δ` of any subterm: every intermediate value of every evaluation that
    /// the bound covers is at most `(1 + γ_D)` times it, so it tells whether one can overflow.
    pub peak: f64,
    /// Whether some subterm rounds to binary32: the bound then takes binary32's unit roundoff
    /// for every rounding (binary64's is smaller) and binary32's overflow threshold.
    pub binary32: bool,
    /// Whether the value is the same in every evaluation: an input cell or a literal.
    pub exact: bool,
    /// Whether every permitted evaluation is finite where the oracle's value is, and not finite
    /// where it is not (spec/fuzzing.md, "Judging functions").
    pub certain: bool,
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

thread_local! {
    /// The allowance of [`Rounding::func`] (it is a method of [`Domain`], which passes no
    /// settings): set for the length of one run by [`with_allowance`].
    static ALLOWANCE: std::cell::Cell<f64> = const { std::cell::Cell::new(CORRECTLY_ROUNDED) };
}

/// Runs `f` with function results allowed `ulps` ulps from the correctly rounded value (at
/// least half an ulp: the oracle's own results are permitted ones) in the [`Rounding`] values
/// it computes.
pub fn with_allowance<R>(ulps: f64, f: impl FnOnce() -> R) -> R {
    /// Puts the previous allowance back, also when `f` unwinds.
    struct Restore(f64);
    impl Drop for Restore {
        fn drop(&mut self) {
            ALLOWANCE.with(|a| a.set(self.0));
        }
    }
    let _restore = Restore(ALLOWANCE.with(|a| a.replace(ulps.max(CORRECTLY_ROUNDED))));
    f()
}

/// What a function or a division of the oracle's argument(s) gives every permitted evaluation.
enum Leaf {
    /// Finite everywhere, within this distance of the true value.
    Within(f64),
    /// Not finite in every evaluation.
    NotFinite,
    /// Finite in some evaluations and not in others, or not bounded by these rules.
    Unknown,
}

impl Rounding {
    fn unit(&self) -> (f64, f64, f64) {
        if self.binary32 {
            (UNIT_ROUNDOFF_BINARY32, TINY_BINARY32, f64::from(f32::MAX))
        } else {
            (UNIT_ROUNDOFF, TINY, f64::MAX)
        }
    }

    fn node(
        value: f64,
        magnitude: f64,
        excess: f64,
        depth: Option<u64>,
        a: &Self,
        b: &Self,
    ) -> Self {
        let finite_from_finite = value.is_finite() || !(a.value.is_finite() && b.value.is_finite());
        Rounding {
            value,
            magnitude,
            excess,
            depth,
            peak: a.peak.max(b.peak).max(magnitude + excess),
            binary32: a.binary32 || b.binary32,
            exact: false,
            // An operation that overflows may not in another order.
            certain: a.certain && b.certain && finite_from_finite,
        }
    }

    /// A leaf computed from other terms (a function, a division, `abs`): its value `value`
    /// within `error` of the true one in every permitted evaluation.
    fn leaf(value: f64, error: f64, from: &Self) -> Self {
        let magnitude = value.abs() + error;
        Rounding {
            value,
            magnitude,
            excess: error,
            depth: Some(0),
            // Whether the argument can overflow was asked when its bound was taken.
            peak: magnitude + error,
            binary32: from.binary32,
            exact: false,
            certain: from.certain,
        }
    }

    /// A leaf whose value does not follow from the rules (no bound), or that is not finite.
    fn unbounded(value: f64, certain: bool, from: &[&Self]) -> Self {
        Rounding {
            value,
            magnitude: f64::INFINITY,
            excess: 0.0,
            depth: None,
            peak: f64::INFINITY,
            binary32: from.iter().any(|r| r.binary32),
            exact: false,
            certain: certain && from.iter().all(|r| r.certain),
        }
    }

    /// The largest distance between the true value of the term and any permitted evaluation of
    /// it (the oracle's included): `(γ_D (M + Δ) + Δ) / (1 − γ_D)`, enlarged for the binary64
    /// rounding of this computation, plus the spacing near zero per rounding (gradual
    /// underflow). `None` where the spec gives none: an undefined or NaN cell, a depth too
    /// large, magnitudes that could overflow, a term the rules do not bound.
    pub fn real_bound(&self) -> Option<f64> {
        let d = self.depth?;
        let (u, tiny, largest) = self.unit();
        let g = gamma_with(d, u)?;
        let n = self.magnitude + self.excess;
        // A NaN peak (an undefined cell) is not below the threshold either.
        let fits = self.peak * (1.0 + g) * 2.0 <= largest;
        if !n.is_finite() || !fits {
            return None;
        }
        // `M` and `Δ` were computed in binary64 with at most `D` roundings per monomial, each
        // by a factor of at least `1 − u`, so the real ones are at most `1 / (1 − γ_D)` times
        // them; the last factor covers the few roundings of this expression (in binary64).
        let bound =
            ((g * n + self.excess) / (1.0 - g) + d as f64 * tiny) * (1.0 + 8.0 * UNIT_ROUNDOFF);
        bound.is_finite().then_some(bound)
    }

    /// What another implementation may compute for this cell ([`permitted`]).
    pub fn permit(&self) -> Permit {
        if self.value.is_finite() {
            // The oracle's value is one of the evaluations, so two are at most twice the
            // bound apart.
            self.real_bound()
                .filter(|_| self.certain)
                .map_or(Permit::Any, |b| Permit::Within(2.0 * b))
        } else if self.certain {
            Permit::NotFinite
        } else {
            Permit::Any
        }
    }

    /// The largest `|fma − exact|` the spec allows for this cell, where `exact` is the result
    /// of the term in exact mode and `fma` the result of the same term with any of its
    /// product-then-add pairs rounded once: twice [`Rounding::real_bound`] (`2 γ_D M` for a
    /// term of `+ - *`). `None` where the spec gives no bound.
    pub fn fma_bound(&self) -> Option<f64> {
        self.real_bound().map(|b| 2.0 * b)
    }

    /// The interval every permitted evaluation of a finite term lies in, and the term's
    /// [`Rounding::real_bound`].
    fn interval(&self) -> Option<(f64, f64, f64)> {
        let b = self.real_bound()?;
        self.value
            .is_finite()
            .then_some((self.value - 2.0 * b, self.value + 2.0 * b, b))
    }

    /// What `f` in element type `t` gives on every evaluation of `a` (spec/fuzzing.md,
    /// "Judging functions"), each function result within `ulps` ulps of `t` of the true
    /// value of the function at the evaluation's argument.
    fn function(f: Func, t: ElemType, a: &Self, ulps: f64) -> Leaf {
        let Some((lo, hi, b)) = a.interval() else {
            return Leaf::Unknown;
        };
        let (u, tiny, largest) = match t {
            ElemType::F64 => (UNIT_ROUNDOFF, TINY, f64::MAX),
            ElemType::F32 => (UNIT_ROUNDOFF_BINARY32, TINY_BINARY32, f64::from(f32::MAX)),
        };
        // `L b + U ulp(S)`: the argument's error through the function's steepest slope `L` on
        // the interval, and the function's own error at the largest result `S` there.
        let within = |slope: f64, largest_result: f64| {
            let e = slope * b + ulps * (2.0 * u * largest_result).max(tiny);
            Leaf::Within(e * (1.0 + 16.0 * UNIT_ROUNDOFF))
        };
        let up = 1.0 + 4.0 * UNIT_ROUNDOFF;
        match f {
            Func::Exp => {
                let s = hi.exp() * up;
                if s * (1.0 + 4.0 * ulps * u) <= largest {
                    within(s, s)
                } else if lo > largest.ln() + 1e-6 {
                    Leaf::NotFinite
                } else {
                    Leaf::Unknown
                }
            }
            Func::Log | Func::Sqrt if hi < 0.0 => Leaf::NotFinite,
            Func::Log if lo > 0.0 => {
                let s = lo.ln().abs().max(hi.ln().abs()) * up;
                within(up / lo, s)
            }
            // An exact zero: `log ±0 = -∞`, `sqrt ±0 = ±0`.
            Func::Log if b == 0.0 && a.value == 0.0 => Leaf::NotFinite,
            Func::Sqrt if b == 0.0 && a.value == 0.0 => Leaf::Within(0.0),
            Func::Sqrt if lo >= 0.0 => {
                // `|√x − √y| ≤ √|x − y|`, and the slope `1 / (2 √lo)` away from zero.
                let through = if lo > 0.0 {
                    b / (2.0 * lo.sqrt())
                } else {
                    f64::INFINITY
                };
                let e = through.min(b.sqrt() * up) + ulps * (2.0 * u * hi.sqrt() * up).max(tiny);
                Leaf::Within(e * (1.0 + 16.0 * UNIT_ROUNDOFF))
            }
            Func::Log | Func::Sqrt => Leaf::Unknown,
            Func::Tanh => within(1.0, (lo.tanh().abs().max(hi.tanh().abs()) * up).min(1.0)),
            // The slope of erf is at most 2 / √π.
            Func::Erf => within(std::f64::consts::FRAC_2_SQRT_PI * up, up),
            // Exact, with slope 1 (`func` keeps it a node, which is tighter).
            Func::Abs => Leaf::Within(b),
        }
    }
}

impl Domain for Rounding {
    fn lit(x: f64) -> Self {
        Rounding {
            value: x,
            magnitude: x.abs(),
            excess: 0.0,
            depth: Some(0),
            peak: x.abs(),
            binary32: false,
            exact: true,
            certain: true,
        }
    }

    fn undefined() -> Self {
        Rounding {
            value: f64::NAN,
            magnitude: f64::NAN,
            excess: 0.0,
            depth: Some(0),
            peak: f64::NAN,
            binary32: false,
            exact: true,
            certain: true,
        }
    }

    fn add(&self, b: &Self) -> Self {
        let depth = self.depth.zip(b.depth).map(|(x, y)| x.max(y) + 1);
        Rounding::node(
            self.value + b.value,
            self.magnitude + b.magnitude,
            self.excess + b.excess,
            depth,
            self,
            b,
        )
    }

    fn sub(&self, b: &Self) -> Self {
        let depth = self.depth.zip(b.depth).map(|(x, y)| x.max(y) + 1);
        Rounding::node(
            self.value - b.value,
            self.magnitude + b.magnitude,
            self.excess + b.excess,
            depth,
            self,
            b,
        )
    }

    fn mul(&self, b: &Self) -> Self {
        let depth = self
            .depth
            .zip(b.depth)
            .map(|(x, y)| x.saturating_add(y).saturating_add(1));
        // `(M_a + Δ_a)(M_b + Δ_b) − M_a M_b`, without the cancellation of that difference.
        let excess = (self.magnitude + self.excess) * b.excess + b.magnitude * self.excess;
        Rounding::node(
            self.value * b.value,
            self.magnitude * b.magnitude,
            excess,
            depth,
            self,
            b,
        )
    }

    /// A leaf (spec/fuzzing.md, "Judging functions"): where the divisor's interval stays away
    /// from zero, `|â / b̂ − a / b| ≤ B_a / b_min + A_max B_b / b_min²`, plus the rounding of
    /// the quotient.
    fn div(&self, b: &Self) -> Self {
        let value = self.value / b.value;
        if !self.value.is_finite() || !b.value.is_finite() {
            // A NaN or an infinity over a divisor of certain class stays not finite, but
            // `x / ∞ = 0` where another evaluation may divide by a NaN.
            return Rounding::unbounded(value, !value.is_finite(), &[self, b]);
        }
        let (Some((_, _, ba)), Some((blo, bhi, bb))) = (self.interval(), b.interval()) else {
            return Rounding::unbounded(value, false, &[self, b]);
        };
        let min = if blo > 0.0 {
            blo
        } else if bhi < 0.0 {
            -bhi
        } else {
            // A zero divisor in every evaluation: `±∞` or NaN (the sign of the zero is no
            // target's promise, the class is).
            let zero = bb == 0.0 && b.value == 0.0;
            return Rounding::unbounded(value, zero, &[self, b]);
        };
        let a_max = self.value.abs() + 2.0 * ba;
        let e = (ba / min + a_max * bb / (min * min) + UNIT_ROUNDOFF * a_max / min + TINY)
            * (1.0 + 16.0 * UNIT_ROUNDOFF);
        let mut r = Rounding::leaf(value, e, self);
        r.binary32 |= b.binary32;
        r.certain &= b.certain;
        r
    }

    fn max(&self, b: &Self) -> Self {
        let magnitude = if self.magnitude.is_nan() || b.magnitude.is_nan() {
            f64::NAN
        } else {
            self.magnitude.max(b.magnitude)
        };
        let depth = self.depth.zip(b.depth).map(|(x, y)| x.max(y));
        let mut r = Rounding::node(
            crate::domain::max_f64(self.value, b.value),
            magnitude,
            self.excess.max(b.excess),
            depth,
            self,
            b,
        );
        // `max(-∞, x) = x` but `max(NaN, x) = NaN`: a computed value that is not finite may be
        // another one in another evaluation, and then the class of the result differs.
        r.certain &= [self, b].iter().all(|o| o.exact || o.value.is_finite());
        r
    }

    fn min(&self, b: &Self) -> Self {
        Rounding {
            value: crate::domain::min_f64(self.value, b.value),
            ..self.max(b)
        }
    }

    /// A binary32 operation is its binary64 operation (one rounding, counted where it is
    /// taken) rounded to binary32: one more rounding, and the term's bound is binary32's
    /// (`u = 2^-24` for every rounding). Counting two roundings where a binary32 operation
    /// rounds once (53 ≥ 2·24 + 2, spec/values.md) only loosens the bound.
    fn round(&self, t: ElemType) -> Self {
        match t {
            ElemType::F64 => *self,
            ElemType::F32 => {
                let value = t.round(self.value);
                Rounding {
                    value,
                    depth: self.depth.map(|d| d.saturating_add(1)),
                    binary32: true,
                    // Overflow of the rounding, where the operand is not exact.
                    certain: self.certain
                        && (self.exact || value.is_finite() || !self.value.is_finite()),
                    ..*self
                }
            }
        }
    }

    /// A leaf whose error is the argument's through the function's slope plus the allowance
    /// (spec/fuzzing.md, "Judging functions"); `abs` is exact and keeps its operand's term.
    fn func(f: Func, t: ElemType, a: &Self) -> Self {
        let value = crate::functions::apply(f, t, a.value);
        if f == Func::Abs {
            return Rounding { value, ..*a };
        }
        if !a.value.is_finite() {
            // NaN stays NaN; a function of an exact infinity is its special value (`exp -∞ =
            // +0`, `tanh ∞ = 1`), exactly, in every evaluation.
            return if a.exact && value.is_finite() {
                Rounding::leaf(value, 0.0, a)
            } else {
                // A computed NaN may be an infinity elsewhere, and `tanh ∞ = 1`.
                Rounding::unbounded(value, a.exact, &[a])
            };
        }
        match Rounding::function(f, t, a, ALLOWANCE.with(|u| u.get())) {
            Leaf::Within(e) => Rounding::leaf(value, e, a),
            Leaf::NotFinite => Rounding::unbounded(value, true, &[a]),
            Leaf::Unknown => Rounding::unbounded(value, false, &[a]),
        }
    }

    fn func2(f: Func2, a: &Self, b: &Self) -> Self {
        Rounding {
            value: crate::functions::apply2(f, a.value, b.value),
            ..a.max(b)
        }
    }
}

/// The oracle run over [`Rounding`] on `inputs` (as [`crate::run_oracle`] reads them), with
/// function results allowed `ulps` ulps.
fn run(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    ulps: f64,
) -> Result<Store<Rounding>, RunError> {
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
    with_allowance(ulps, || {
        let mut oracle = Oracle::new(p, store);
        oracle.run()?;
        Ok(oracle.into_store())
    })
}

/// Every variable of `store`, cell by cell through `cell`.
fn tensors<T: Clone>(
    store: &Store<Rounding>,
    cell: impl Fn(&Rounding) -> T,
) -> BTreeMap<String, ndarray::ArrayD<T>> {
    store
        .iter()
        .map(|(name, alloc)| {
            let shape: Vec<usize> = alloc.extents.iter().map(|&n| n as usize).collect();
            let data = alloc.data.iter().map(&cell).collect();
            let t = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), data)
                .expect("the store's extents match its data");
            (name.clone(), t)
        })
        .collect()
}

/// For every variable of `p` run on `inputs` (as [`crate::run_oracle`] reads them), the fma
/// bound of every cell ([`Rounding::fma_bound`], functions correctly rounded), `+∞` where the
/// spec gives none.
pub fn fma_bounds(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, RunError> {
    let store = run(p, inputs, CORRECTLY_ROUNDED)?;
    Ok(tensors(&store, |r| r.fma_bound().unwrap_or(f64::INFINITY)))
}

/// What another implementation may give for one cell (spec/fuzzing.md, "Judging functions").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Permit {
    /// A finite value within this distance of the oracle's.
    Within(f64),
    /// A value that is not finite, as the oracle's (NaN and `±∞` alike).
    NotFinite,
    /// Anything: the rules give no bound, or some permitted evaluations are finite and others
    /// not.
    Any,
}

impl Permit {
    /// Whether `got` is permitted where the oracle computed `want`.
    pub fn allows(self, want: f64, got: f64) -> bool {
        match self {
            Permit::Within(b) => got.is_finite() && (want - got).abs() <= b,
            Permit::NotFinite => !got.is_finite(),
            Permit::Any => true,
        }
    }
}

/// For every variable of `p` run on `inputs`, what another implementation may compute in each
/// cell: any order of its sums and products, fused or not, and each function result within
/// `ulps` ulps of the correctly rounded one (at least half an ulp).
pub fn permitted(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    ulps: f64,
) -> Result<BTreeMap<String, ndarray::ArrayD<Permit>>, RunError> {
    let store = run(p, inputs, ulps)?;
    Ok(tensors(&store, Rounding::permit))
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
    fn nan_and_overflow_have_no_bound() {
        // A quotient is a leaf: the rounding of `1/3`, nothing more, where nothing is inexact.
        let third = leaf(1.0).div(&leaf(3.0));
        let b = third.fma_bound().unwrap();
        assert!(
            (2.0 * UNIT_ROUNDOFF / 3.0..=2.0 * UNIT_ROUNDOFF / 3.0 * 1.01).contains(&b),
            "{b}"
        );
        // A divisor that may be zero in some evaluation.
        let residue = leaf(0.1).add(&leaf(0.2)).sub(&leaf(0.3));
        assert_eq!(leaf(1.0).div(&residue).fma_bound(), None);
        assert_eq!(leaf(1.0).div(&residue).permit(), Permit::Any);
        // An exact zero divisor: not finite in every evaluation, whatever its sign.
        assert_eq!(leaf(1.0).div(&leaf(0.0)).permit(), Permit::NotFinite);
        assert_eq!(leaf(0.0).div(&leaf(0.0)).permit(), Permit::NotFinite);
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
