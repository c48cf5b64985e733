//! The values of the element-wise functions (spec/semantics.md, "Functions"; spec/values.md,
//! "Functions"): the one place every evaluator takes them from.
//!
//! Each of `exp`, `log`, `sqrt`, `tanh`, `erf`, `abs` is the exact mathematical value rounded to
//! nearest (ties to even) in the operand's element type, with IEEE 754-2019's special cases:
//! `exp -∞ = +0`, `log ±0 = -∞`, `log x = NaN` for `x < 0`, `sqrt -0 = -0`, `tanh ±∞ = ±1`,
//! `erf ±∞ = ±1`, NaN in, NaN out. `sqrt` and `abs` are IEEE operations (correctly rounded and
//! exact); `exp`, `log`, `tanh` and `erf` are CORE-MATH's correctly rounded functions
//! (the `core-math` crate, binary64 `cr_exp`, ..., binary32 `cr_expf`, ...), so that any other
//! correctly rounded implementation gives the same bits, and a target's error can be measured
//! in ulps of the true value.
//!
//! `max` and `min` are IEEE 754-2019's `maximum` and `minimum`: NaN if either operand is NaN
//! (as NumPy's `maximum`/`minimum`, which differ on zeros: of two equal operands they return
//! the second), and `-0 < +0`. They differ from the fold steps of
//! `redmax`/`redmin` ([`crate::domain::max_f64`]) only on zeros of different signs, which the
//! fold orders by position (its first operand wins a tie).
//!
//! A binary32 value travels as the binary64 number that holds it exactly, as everywhere in the
//! evaluators; [`apply`] takes and returns such numbers.
//!
//! Natively the `core-math` crate compiles CORE-MATH's C; its build needs a C library for the
//! target, which `wasm32-unknown-unknown` (the playground) lacks. There this crate's `build.rs`
//! compiles the same functions from the vendored, unmodified sources in
//! `third_party/core-math/` with Clang, and they are called through the C ABI: every build
//! computes the same bits (the playground's end-to-end tests compare the browser's values with
//! the native ones, `teil-wasm/tests/function_bits.rs`).

use teil::ast::{ElemType, Func, Func2};

/// `f x` in element type `t`: `x` must be a value of `t` (for `f32`, a binary32 number held in
/// binary64), and so is the result.
pub fn apply(f: Func, t: ElemType, x: f64) -> f64 {
    unary(f, t)(x)
}

/// The function `f` in element type `t`, chosen once (the fast evaluator maps it over whole
/// arrays).
pub fn unary(f: Func, t: ElemType) -> fn(f64) -> f64 {
    match (f, t) {
        (Func::Abs, _) => f64::abs,
        // IEEE square root, correctly rounded in either type (binary32's as f32's own).
        (Func::Sqrt, ElemType::F64) => f64::sqrt,
        (Func::Sqrt, ElemType::F32) => |x| (x as f32).sqrt() as f64,
        (Func::Exp, ElemType::F64) => cr::exp,
        (Func::Log, ElemType::F64) => cr::log,
        (Func::Tanh, ElemType::F64) => cr::tanh,
        (Func::Erf, ElemType::F64) => cr::erf,
        (Func::Exp, ElemType::F32) => |x| cr::expf(x as f32) as f64,
        (Func::Log, ElemType::F32) => |x| cr::logf(x as f32) as f64,
        (Func::Tanh, ElemType::F32) => |x| cr::tanhf(x as f32) as f64,
        (Func::Erf, ElemType::F32) => |x| cr::erff(x as f32) as f64,
    }
}

/// CORE-MATH's functions: natively the `core-math` crate's.
#[cfg(not(target_arch = "wasm32"))]
use core_math as cr;

/// CORE-MATH's functions on `wasm32`: the vendored C (`third_party/core-math/`) that
/// `build.rs` compiles and links, through the C ABI.
#[cfg(target_arch = "wasm32")]
mod cr {
    extern "C" {
        fn cr_exp(x: f64) -> f64;
        fn cr_log(x: f64) -> f64;
        fn cr_tanh(x: f64) -> f64;
        fn cr_erf(x: f64) -> f64;
        fn cr_expf(x: f32) -> f32;
        fn cr_logf(x: f32) -> f32;
        fn cr_tanhf(x: f32) -> f32;
        fn cr_erff(x: f32) -> f32;
    }

    // SAFETY (every function): CORE-MATH's functions are pure functions of one floating-point
    // value, defined for every value (NaN and infinities included); they touch no memory of
    // the caller's and, built without errno (`CORE_MATH_SUPPORT_ERRNO` undefined), no global.
    pub fn exp(x: f64) -> f64 {
        unsafe { cr_exp(x) }
    }
    pub fn log(x: f64) -> f64 {
        unsafe { cr_log(x) }
    }
    pub fn tanh(x: f64) -> f64 {
        unsafe { cr_tanh(x) }
    }
    pub fn erf(x: f64) -> f64 {
        unsafe { cr_erf(x) }
    }
    pub fn expf(x: f32) -> f32 {
        unsafe { cr_expf(x) }
    }
    pub fn logf(x: f32) -> f32 {
        unsafe { cr_logf(x) }
    }
    pub fn tanhf(x: f32) -> f32 {
        unsafe { cr_tanhf(x) }
    }
    pub fn erff(x: f32) -> f32 {
        unsafe { cr_erff(x) }
    }
}

/// `max a b` and `min a b` (IEEE 754-2019 `maximum`, `minimum`): exact in either type.
pub fn apply2(f: Func2, a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    match f {
        // Equal numbers are equal but for zeros of different signs, ordered -0 < +0.
        Func2::Max if a == b => {
            if a.is_sign_negative() {
                b
            } else {
                a
            }
        }
        Func2::Min if a == b => {
            if a.is_sign_negative() {
                a
            } else {
                b
            }
        }
        Func2::Max => a.max(b),
        Func2::Min => a.min(b),
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    const F32: ElemType = ElemType::F32;
    const F64: ElemType = ElemType::F64;

    fn bits(x: f64) -> u64 {
        x.to_bits()
    }

    #[test]
    fn special_cases_follow_ieee_754() {
        let inf = f64::INFINITY;
        for t in ElemType::ALL {
            let f = |g: Func, x: f64| apply(g, t, x);
            assert_eq!(bits(f(Func::Exp, -inf)), bits(0.0));
            assert_eq!(f(Func::Exp, inf), inf);
            assert_eq!(f(Func::Log, 0.0), -inf);
            assert_eq!(f(Func::Log, -0.0), -inf);
            assert!(f(Func::Log, -1.0).is_nan());
            assert_eq!(f(Func::Log, inf), inf);
            assert_eq!(bits(f(Func::Sqrt, -0.0)), bits(-0.0));
            assert!(f(Func::Sqrt, -1.0).is_nan());
            assert_eq!(f(Func::Tanh, inf), 1.0);
            assert_eq!(f(Func::Tanh, -inf), -1.0);
            assert_eq!(bits(f(Func::Tanh, -0.0)), bits(-0.0));
            assert_eq!(f(Func::Erf, inf), 1.0);
            assert_eq!(f(Func::Erf, -inf), -1.0);
            assert_eq!(bits(f(Func::Abs, -0.0)), bits(0.0));
            for g in Func::ALL {
                assert!(f(g, f64::NAN).is_nan(), "{g:?}");
            }
        }
        // Overflow and underflow thresholds of exp: binary32 overflows above ~88.72 and
        // underflows to +0 below ~-103.97; binary64 at ~709.78 and ~-745.13.
        assert_eq!(apply(Func::Exp, F32, 89.0), inf);
        assert!(apply(Func::Exp, F32, 88.0).is_finite());
        assert_eq!(apply(Func::Exp, F32, -104.0), 0.0);
        assert!(apply(Func::Exp, F32, -103.0) > 0.0);
        assert_eq!(apply(Func::Exp, F64, 710.0), inf);
        assert_eq!(apply(Func::Exp, F64, -746.0), 0.0);
        assert!(apply(Func::Exp, F64, -745.0) > 0.0);
    }

    #[test]
    fn binary32_results_are_binary32_values_rounded_once() {
        for k in -2000..2000 {
            let x = F32.round(k as f64 * 0.0137);
            for g in Func::ALL {
                let y = apply(g, F32, x);
                assert!(y.is_nan() || F32.round(y) == y, "{g:?}({x}) = {y}");
            }
            // Correctly rounded in binary32 is at most half an ulp of binary32 from the
            // binary64 value (itself within half a binary64 ulp of the truth).
            let e64 = apply(Func::Exp, F64, x);
            let e32 = apply(Func::Exp, F32, x);
            if e32.is_finite() && e32 > f32::MIN_POSITIVE as f64 {
                let ulp = f64::from(f32::EPSILON) * e32.abs().max(f32::MIN_POSITIVE as f64);
                assert!((e32 - e64).abs() <= 0.5 * ulp * (1.0 + 1e-6), "exp({x})");
            }
        }
    }

    #[test]
    fn known_correctly_rounded_values() {
        // Values whose correct rounding differs from a naive binary64 computation rounded to
        // binary32 or from common libm results are the point of the crate; these are
        // checked against the exact values (computed with mpmath at 60 digits).
        assert_eq!(apply(Func::Exp, F64, 1.0), std::f64::consts::E);
        assert_eq!(apply(Func::Log, F64, std::f64::consts::E), 1.0);
        assert_eq!(apply(Func::Exp, F32, 1.0), std::f32::consts::E as f64);
        assert_eq!(apply(Func::Log, F64, 2.0), std::f64::consts::LN_2);
        assert_eq!(apply(Func::Log, F32, 2.0), std::f32::consts::LN_2 as f64);
        // erf(1) = 0.842700792949714869341220635082609259...
        assert_eq!(apply(Func::Erf, F64, 1.0), 0.8427007929497149);
        assert_eq!(apply(Func::Erf, F32, 1.0), 0.842_700_8_f32 as f64);
        // tanh(0.5) = 0.462117157260009758502318483643672548...
        assert_eq!(apply(Func::Tanh, F64, 0.5), 0.46211715726000974);
    }

    #[test]
    fn maximum_and_minimum_order_zeros_and_propagate_nan() {
        let (p, n) = (0.0f64, -0.0f64);
        for (a, b) in [(p, n), (n, p)] {
            assert_eq!(bits(apply2(Func2::Max, a, b)), bits(p));
            assert_eq!(bits(apply2(Func2::Min, a, b)), bits(n));
        }
        assert!(apply2(Func2::Max, f64::NAN, 1.0).is_nan());
        assert!(apply2(Func2::Min, 1.0, f64::NAN).is_nan());
        assert_eq!(apply2(Func2::Max, -1.0, 2.0), 2.0);
        assert_eq!(apply2(Func2::Min, -1.0, 2.0), -1.0);
        assert_eq!(apply2(Func2::Max, f64::NEG_INFINITY, -5.0), -5.0);
    }
}
