//! Value domains for the oracle (spec/values.md).
//!
//! The oracle ([`crate::oracle`]) is generic over [`Domain`] so that the same transcription of
//! the equations can run on plain numbers ([`Val`], IEEE-754 binary64 extended with the
//! undefined value `•` of report Def. 3/4) and, later, on symbolic values for translation
//! validation. A domain supplies literals, the undefined value and the six operations that the
//! equations of spec/semantics.md use; everything else (indices, reductions as left folds, the
//! store) is the oracle's business and identical for every domain.

use teil::ast::{BinOp, ElemType, Func, Func2, RedOp};

/// What the oracle needs from values.
pub trait Domain: Clone + std::fmt::Debug {
    /// A numeric literal `[S-Lit]`, or a number supplied by the caller.
    fn lit(x: f64) -> Self;
    /// `•`, the contents of an uninitialized cell (report Def. 3).
    fn undefined() -> Self;
    fn add(&self, b: &Self) -> Self;
    fn sub(&self, b: &Self) -> Self;
    fn mul(&self, b: &Self) -> Self;
    fn div(&self, b: &Self) -> Self;
    /// The binary operation folded by `redmax`.
    fn max(&self, b: &Self) -> Self;
    /// The binary operation folded by `redmin`.
    fn min(&self, b: &Self) -> Self;
    /// The value rounded to element type `t` (spec/values.md, "Binary32"): `f32 e`, and, in
    /// every domain but the symbolic one, each operation of a binary32 expression after its
    /// binary64 operation ([`Domain::arith`]). The identity for `f64`.
    fn round(&self, t: ElemType) -> Self;
    /// The function `f` in element type `t` ([`crate::functions`]).
    fn func(f: Func, t: ElemType, a: &Self) -> Self;
    /// `max`/`min` ([`crate::functions::apply2`]).
    fn func2(f: Func2, a: &Self, b: &Self) -> Self;

    /// The element-wise operator `op`.
    fn binary(op: BinOp, a: &Self, b: &Self) -> Self {
        match op {
            BinOp::Add => a.add(b),
            BinOp::Sub => a.sub(b),
            BinOp::Mul => a.mul(b),
            BinOp::Div => a.div(b),
        }
    }

    /// The binary operation that the reduction `op` folds.
    fn fold_step(op: RedOp, acc: &Self, b: &Self) -> Self {
        match op {
            RedOp::Sum => acc.add(b),
            RedOp::Product => acc.mul(b),
            RedOp::Max => acc.max(b),
            RedOp::Min => acc.min(b),
        }
    }

    /// The element-wise operator `op` in element type `t` (spec/values.md, "Binary32"): the
    /// binary64 operation rounded to `t` (exact for binary32 operands, 53 ≥ 2·24 + 2). A
    /// domain that tells binary32 arithmetic apart from a rounding of binary64 arithmetic
    /// (the symbolic one, whose laws of `+` and `*` hold within each type) overrides it.
    fn arith(op: BinOp, t: ElemType, a: &Self, b: &Self) -> Self {
        Self::binary(op, a, b).round(t)
    }

    /// One step of the fold `op` in element type `t`: [`Domain::arith`] for `+` and `*`, the
    /// binary64 step rounded to `t` for `max` and `min` (which round nothing).
    fn fold_step_in(op: RedOp, t: ElemType, acc: &Self, b: &Self) -> Self {
        match op {
            RedOp::Sum => Self::arith(BinOp::Add, t, acc, b),
            RedOp::Product => Self::arith(BinOp::Mul, t, acc, b),
            RedOp::Max | RedOp::Min => Self::fold_step(op, acc, b).round(t),
        }
    }
}

/// A value of the reference domain: a binary64 number or `•`.
///
/// `•` is absorbing for every operation (spec/values.md). A NaN — produced by IEEE arithmetic
/// (`0/0`, `inf - inf`) or supplied by the caller — is a `Num`; the two are distinguishable
/// inside the oracle only, and both are written as NaN at the boundary. Every operation
/// propagates NaN as it absorbs `•`, so the distinction never changes a value, only what
/// `teil run` reports about where a NaN came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Num(f64),
    Undef,
}

impl Val {
    /// The boundary representation: `•` becomes NaN.
    pub fn to_f64(self) -> f64 {
        match self {
            Val::Num(x) => x,
            Val::Undef => f64::NAN,
        }
    }

    /// Reading a value supplied by the caller: every binary64 value, NaN included, is a number;
    /// only cells the caller does not supply start as `•` (spec/values.md, "At the boundary").
    pub fn from_f64(x: f64) -> Val {
        Val::Num(x)
    }

    pub fn is_undefined(self) -> bool {
        matches!(self, Val::Undef)
    }

    fn lift(self, b: Val, f: impl FnOnce(f64, f64) -> f64) -> Val {
        match (self, b) {
            (Val::Num(x), Val::Num(y)) => Val::Num(f(x, y)),
            _ => Val::Undef,
        }
    }
}

/// The left fold `((v ⊕ v) ⊕ v) ⊕ ... ⊕ v` of `n ≥ 1` copies of `v` in binary64, bit for bit
/// what `n − 1` additions give (spec/values.md, "Reassociation": `red+` over a dimension added by
/// `expa` sums copies of one value, and `n ⊗ v` would be another term), in `O(log n)`
/// additions (a few per binade the partial sums cross) instead of `n − 1`.
///
/// Why it is exact: the partial sums have the sign of `v` and grow in magnitude, and RN is
/// symmetric, so work with `|v|`. While a partial sum `s = m·u` stays in one binade (spacing
/// `u`), `RN(s + |v|) = (m + q + c)·u`, where `|v| = (q + f)·u` and `c ∈ {0, 1}` depends only on
/// `f` and, for a tie (`f = 1/2`), on the parity of `m + q`. A rounded tie lands on an even `m`,
/// and from an even `m` a tie always rounds the same way; so once two steps in a row have started
/// and ended in the binade, every further step adds the same increment, until the sum nears the
/// binade's top. Those steps are taken at once (exactly: every partial sum is a multiple of `u`
/// below `2^53·u`); the steps near the top are taken one by one.
pub fn repeated_sum(v: f64, n: u64) -> f64 {
    repeated_sum_in(ElemType::F64, v, n)
}

/// [`repeated_sum`] in element type `t`: the left fold of `n` copies of `v` (a value of `t`)
/// with every addition rounded to `t`. The same argument holds for binary32's binades (24-bit
/// significands, spacing down to 2^-149), and the jumps, multiples of `u` below `2^24·u`, are
/// exact in binary64 and in binary32.
pub fn repeated_sum_in(t: ElemType, v: f64, n: u64) -> f64 {
    if n <= 1 || !v.is_finite() || v == 0.0 {
        // ±0 ⊕ ±0 keeps the sign of equal zeros; ±∞ and NaN are fixed points of ⊕ itself.
        return v;
    }
    let a = v.abs();
    // (binade top T, spacing u) of a positive finite number of `t`.
    let grid = |s: f64| -> (f64, f64) {
        let (e, u) = match t {
            ElemType::F64 => {
                let e = (s.to_bits() >> 52) as i32; // biased exponent; 0 for subnormals
                let e = e.max(1) - 1023; // s < 2^(e+1); subnormals share 2^-1022's spacing
                (e, 2f64.powi((e - 52).max(-1074)))
            }
            ElemType::F32 => {
                let e = ((s as f32).to_bits() >> 23) as i32;
                let e = e.max(1) - 127;
                (e, 2f64.powi((e - 23).max(-149)))
            }
        };
        (2f64.powi(e + 1), u)
    };
    let mut s = a;
    let mut k = 1u64; // terms summed so far
    let mut steady = 0; // consecutive steps that started and ended in one binade
    let mut last = 0.0;
    while k < n {
        let next = t.round(s + a);
        if next.is_infinite() {
            return next.copysign(v);
        }
        if next == s {
            // |v| is below half the spacing: the sum has stopped growing for good.
            break;
        }
        let (top, u) = grid(s);
        let d = next - s; // exact: both are multiples of u, and d < 2^53·u
        steady = if next < top && d == last {
            steady + 1
        } else {
            usize::from(next < top)
        };
        last = d;
        s = next;
        k += 1;
        if steady >= 2 {
            // Jump while the sum stays at least 2·|v| + u below the top (integer units of u).
            let (m, dd) = (s / u, d / u); // exact integers below 2^53
            let room = (top / u) - m - 2.0 * (a / u).ceil() - 1.0;
            if room > 0.0 && dd > 0.0 {
                let j = ((room / dd).floor() as u64).min(n - k);
                s += j as f64 * d; // exact: a multiple of u below the top
                k += j;
            }
            steady = 0;
        }
    }
    s.copysign(v)
}

/// `max(a, b)`: NaN if either operand is NaN, else `a` if `a >= b`, else `b` (spec/values.md).
pub fn max_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

/// `min(a, b)`: NaN if either operand is NaN, else `a` if `a <= b`, else `b`.
pub fn min_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

impl Domain for Val {
    fn lit(x: f64) -> Self {
        Val::Num(x)
    }
    fn undefined() -> Self {
        Val::Undef
    }
    fn add(&self, b: &Self) -> Self {
        self.lift(*b, |x, y| x + y)
    }
    fn sub(&self, b: &Self) -> Self {
        self.lift(*b, |x, y| x - y)
    }
    fn mul(&self, b: &Self) -> Self {
        self.lift(*b, |x, y| x * y)
    }
    /// IEEE division: `x/0` is `±inf` or NaN, never `•` (spec/values.md, "Division").
    fn div(&self, b: &Self) -> Self {
        self.lift(*b, |x, y| x / y)
    }
    fn max(&self, b: &Self) -> Self {
        self.lift(*b, max_f64)
    }
    fn min(&self, b: &Self) -> Self {
        self.lift(*b, min_f64)
    }
    fn round(&self, t: ElemType) -> Self {
        match self {
            Val::Num(x) => Val::Num(t.round(*x)),
            Val::Undef => Val::Undef,
        }
    }
    fn func(f: Func, t: ElemType, a: &Self) -> Self {
        match a {
            Val::Num(x) => Val::Num(crate::functions::apply(f, t, *x)),
            Val::Undef => Val::Undef,
        }
    }
    fn func2(f: Func2, a: &Self, b: &Self) -> Self {
        a.lift(*b, |x, y| crate::functions::apply2(f, x, y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_absorbs_every_operation() {
        let ops: [fn(&Val, &Val) -> Val; 6] =
            [Val::add, Val::sub, Val::mul, Val::div, Val::max, Val::min];
        for op in ops {
            assert_eq!(op(&Val::Undef, &Val::Num(0.0)), Val::Undef);
            assert_eq!(op(&Val::Num(f64::INFINITY), &Val::Undef), Val::Undef);
        }
    }

    #[test]
    fn a_nan_from_the_caller_is_a_number_not_undefined() {
        assert!(matches!(Val::from_f64(f64::NAN), Val::Num(x) if x.is_nan()));
        assert!(!Val::from_f64(f64::NAN).is_undefined());
        // It propagates through every operation as `•` is absorbed, so values agree.
        let ops: [fn(&Val, &Val) -> Val; 6] =
            [Val::add, Val::sub, Val::mul, Val::div, Val::max, Val::min];
        for op in ops {
            for other in [0.0, -0.0, f64::INFINITY, 2.5] {
                let nan = Val::from_f64(f64::NAN);
                assert!(op(&nan, &Val::Num(other)).to_f64().is_nan());
                assert!(op(&Val::Num(other), &nan).to_f64().is_nan());
            }
        }
    }

    fn naive_sum(v: f64, n: u64) -> f64 {
        (1..n).fold(v, |acc, _| acc + v)
    }

    #[test]
    fn repeated_sums_are_the_left_fold() {
        let u = f64::EPSILON; // spacing of [1, 2)
        let values = [
            0.1,
            -0.1,
            1.0 / 3.0,
            1.0,
            0.5 * u, // a tie in [1, 2)
            1.5 * u,
            1.0 + u,
            3.0 * u,
            1e-300,
            5e-324,
            -7e-310,
            1e308,
            -1.7e308,
            1e305, // crosses into the top binade and overflows after about 1,800 terms
            -3e303,
            123456.789,
            0.0,
            -0.0,
            f64::INFINITY,
        ];
        for &v in &values {
            for n in [1, 2, 3, 4, 5, 10, 17, 100, 1000, 4097, 100_000] {
                let (fast, slow) = (repeated_sum(v, n), naive_sum(v, n));
                assert_eq!(fast.to_bits(), slow.to_bits(), "v = {v:e}, n = {n}");
            }
        }
        assert!(repeated_sum(f64::NAN, 7).is_nan());
        assert_eq!(repeated_sum(0.1, 10), 0.9999999999999999);
        // Far beyond a loop: 2^40 copies of 1 are exact; of 0.1 the sum stalls nowhere here.
        assert_eq!(repeated_sum(1.0, 1 << 40), (1u64 << 40) as f64);
        assert_eq!(repeated_sum(-1.0, 1 << 54), -(2f64.powi(53)));
    }

    #[test]
    fn binary32_repeated_sums_are_the_binary32_left_fold() {
        let t = ElemType::F32;
        let naive32 = |v: f64, n: u64| (1..n).fold(v, |acc, _| t.round(acc + v));
        let u = f32::EPSILON as f64;
        let values = [
            0.1,
            -0.1,
            1.0 / 3.0,
            0.5 * u,
            1.5 * u,
            1.0 + u,
            1e-40,   // subnormal in binary32
            1.4e-45, // the smallest binary32 subnormal
            3e38,    // overflows at the second addition
            -1.7e37,
            123456.789,
            -0.0,
        ];
        for &v in &values {
            let v = t.round(v);
            for n in [1, 2, 3, 7, 100, 1000, 40_000] {
                let (fast, slow) = (repeated_sum_in(t, v, n), naive32(v, n));
                assert_eq!(fast.to_bits(), slow.to_bits(), "{v:e} x {n}");
            }
        }
        // 2^24 + 1 copies of 1 stall at 2^24 in binary32; 0.1 stalls at 2^21 (2097152).
        assert_eq!(repeated_sum_in(t, 1.0, (1 << 24) + 5), 16777216.0);
        assert_eq!(repeated_sum_in(t, t.round(0.1), 1 << 40), 2097152.0);
    }

    #[test]
    fn division_is_ieee() {
        assert_eq!(Val::Num(1.0).div(&Val::Num(0.0)), Val::Num(f64::INFINITY));
        assert_eq!(
            Val::Num(-1.0).div(&Val::Num(0.0)),
            Val::Num(f64::NEG_INFINITY)
        );
        assert!(matches!(Val::Num(0.0).div(&Val::Num(0.0)), Val::Num(x) if x.is_nan()));
    }

    #[test]
    fn max_and_min_propagate_nan() {
        assert!(max_f64(f64::NAN, 1.0).is_nan());
        assert!(max_f64(1.0, f64::NAN).is_nan());
        assert!(min_f64(f64::NAN, 1.0).is_nan());
        assert!(min_f64(-1.0, f64::NAN).is_nan());
        assert_eq!(max_f64(-2.0, -3.0), -2.0);
        assert_eq!(min_f64(-2.0, -3.0), -3.0);
        // Ties keep the left operand: max(+0, -0) is +0, max(-0, +0) is -0.
        assert!(max_f64(0.0, -0.0).is_sign_positive());
        assert!(max_f64(-0.0, 0.0).is_sign_negative());
    }
}
