//! The normal form of `teil_interp::symbolic` decides exactly the laws of spec/values.md
//! ("Reassociation"): two terms have equal normal forms if and only if they are equal under
//! associativity and commutativity of `+` and `*` and distributivity of `*` over `+`, applied
//! anywhere in the term, with `-`, `/`, `max`, `min` uninterpreted and literals as constants
//! (no folding, no identities). This is the relation the translation validator checks, so it
//! must identify no more and no fewer terms than the spec permits.
//!
//! - *No fewer*: random law rewrites, at random places and in both directions of the
//!   distributive law, never change the normal form.
//! - *No more*: for arbitrary pairs of terms, equal normal forms coincide with equal values
//!   under random interpretations in the field of integers modulo 2^61 − 1, where leaves and
//!   literals are independent random numbers and each uninterpreted operation is a random
//!   function (a keyed hash of its operands' values). Terms equal under the laws are equal
//!   polynomials (with natural coefficients) in those values, so they agree on every
//!   interpretation; different polynomials agree on three independent random ones with
//!   probability below 3·(degree/2^61) (Schwartz–Zippel), negligible at these sizes.
//!
//! Every `+` and `*` is drawn in binary64 or in binary32 (`Sym::arith`). The laws hold within
//! each type and never across: a maximal binary32 subterm is one atom to binary64 arithmetic,
//! interpreted as a random function of its value as a polynomial over its own operands, and an
//! operand of binary32 arithmetic that is binary64 arithmetic is interpreted as a random
//! function of its value (the rounding `f32(..)` the normal form takes it in).

use proptest::prelude::*;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use teil::ast::{BinOp, ElemType};
use teil_interp::symbolic::Sym;
use teil_interp::Domain;

#[derive(Clone, Debug)]
enum T {
    Leaf(u8),
    Lit(f64),
    /// `+` and `*`, in binary32 where the flag says so.
    Add(bool, Box<T>, Box<T>),
    Mul(bool, Box<T>, Box<T>),
    /// 0: `-`, 1: `/`, 2: `max`, 3: `min`.
    Op(u8, Box<T>, Box<T>),
}

fn b(t: T) -> Box<T> {
    Box::new(t)
}

fn term(leaves: u8, depth: u32) -> impl Strategy<Value = T> {
    let leaf = prop_oneof![
        4 => (0..leaves).prop_map(T::Leaf),
        1 => prop::sample::select(vec![0.0, -0.0, 1.0, 2.0, -1.0]).prop_map(T::Lit),
    ];
    leaf.prop_recursive(depth, 24, 2, |inner| {
        prop_oneof![
            3 => (any::<bool>(), inner.clone(), inner.clone())
                .prop_map(|(w, x, y)| T::Add(w, b(x), b(y))),
            3 => (any::<bool>(), inner.clone(), inner.clone())
                .prop_map(|(w, x, y)| T::Mul(w, b(x), b(y))),
            1 => (0u8..4, inner.clone(), inner).prop_map(|(o, x, y)| T::Op(o, b(x), b(y))),
        ]
    })
}

fn sym(t: &T) -> Sym {
    match t {
        T::Leaf(i) => Sym::input("x", vec![u64::from(*i)]),
        T::Lit(x) => Sym::lit(*x),
        T::Add(w, x, y) => Sym::arith(BinOp::Add, ty(*w), &sym(x), &sym(y)),
        T::Mul(w, x, y) => Sym::arith(BinOp::Mul, ty(*w), &sym(x), &sym(y)),
        T::Op(o, x, y) => {
            let (x, y) = (sym(x), sym(y));
            match o {
                0 => x.sub(&y),
                1 => x.div(&y),
                2 => x.max(&y),
                _ => x.min(&y),
            }
        }
    }
}

fn ty(binary32: bool) -> ElemType {
    if binary32 {
        ElemType::F32
    } else {
        ElemType::F64
    }
}

const P: u128 = (1 << 61) - 1;

fn add(a: u64, c: u64) -> u64 {
    ((u128::from(a) + u128::from(c)) % P) as u64
}

fn mul(a: u64, c: u64) -> u64 {
    ((u128::from(a) * u128::from(c)) % P) as u64
}

fn h(key: u64, parts: &[u64]) -> u64 {
    let mut s = DefaultHasher::new();
    key.hash(&mut s);
    parts.hash(&mut s);
    (u128::from(s.finish()) % P) as u64
}

/// The value of `t` under the interpretation `key`.
fn value(t: &T, key: u64) -> u64 {
    match t {
        T::Leaf(i) => h(key, &[1, u64::from(*i)]),
        T::Lit(x) => h(key, &[2, x.to_bits()]),
        T::Add(false, x, y) => add(value(x, key), value(y, key)),
        T::Mul(false, x, y) => mul(value(x, key), value(y, key)),
        T::Add(true, ..) | T::Mul(true, ..) => h(key, &[4, value32(t, key)]),
        T::Op(o, x, y) => h(key, &[3, u64::from(*o), value(x, key), value(y, key)]),
    }
}

/// The value of `t` as an operand of binary32 arithmetic: binary32 `+` and `*` in the field,
/// a single atom (a leaf, a literal, an operation) its value, binary64 arithmetic (never a
/// single atom) a random function of its value.
fn value32(t: &T, key: u64) -> u64 {
    match t {
        T::Add(true, x, y) => add(value32(x, key), value32(y, key)),
        T::Mul(true, x, y) => mul(value32(x, key), value32(y, key)),
        T::Add(false, ..) | T::Mul(false, ..) => h(key, &[5, value(t, key)]),
        _ => value(t, key),
    }
}

fn same_values(a: &T, c: &T, keys: &[u64]) -> bool {
    keys.iter().all(|&k| value(a, k) == value(c, k))
}

/// One law applied at one place: `choice` picks the place (preorder) and the law; returns
/// whether a law applied.
fn rewrite(t: &mut T, choice: &mut u32, law: u8) -> bool {
    let here = {
        if *choice == 0 {
            let old = std::mem::replace(t, T::Leaf(0));
            let (new, applied) = apply(old, law);
            *t = new;
            if applied {
                return true;
            }
        }
        false
    };
    if here {
        return true;
    }
    *choice = choice.saturating_sub(1);
    match t {
        T::Add(_, x, y) | T::Mul(_, x, y) | T::Op(_, x, y) => {
            rewrite(x, choice, law) || rewrite(y, choice, law)
        }
        _ => false,
    }
}

fn apply(t: T, law: u8) -> (T, bool) {
    match (law, t) {
        // (C+), (C*)
        (0, T::Add(w, x, y)) => (T::Add(w, y, x), true),
        (0, T::Mul(w, x, y)) => (T::Mul(w, y, x), true),
        // (A+), (A*) left to right, within one type
        (1, T::Add(w, xy, z)) => match *xy {
            T::Add(v, x, y) if v == w => (T::Add(w, x, b(T::Add(w, y, z))), true),
            other => (T::Add(w, b(other), z), false),
        },
        (1, T::Mul(w, xy, z)) => match *xy {
            T::Mul(v, x, y) if v == w => (T::Mul(w, x, b(T::Mul(w, y, z))), true),
            other => (T::Mul(w, b(other), z), false),
        },
        // (D) distribute: x * (y + z) -> x*y + x*z, within one type
        (2, T::Mul(w, x, yz)) => match *yz {
            T::Add(v, y, z) if v == w => (
                T::Add(w, b(T::Mul(w, x.clone(), y)), b(T::Mul(w, x, z))),
                true,
            ),
            other => (T::Mul(w, x, b(other)), false),
        },
        // (D) factor: x*y + x'*z -> x*(y + z) when x and x' are the same term, one type
        (3, T::Add(w, l, r)) => match (*l, *r) {
            (T::Mul(u, x, y), T::Mul(v, x2, z))
                if u == w && v == w && format!("{x:?}") == format!("{x2:?}") =>
            {
                (T::Mul(w, x, b(T::Add(w, y, z))), true)
            }
            (l, r) => (T::Add(w, b(l), b(r)), false),
        },
        (_, t) => (t, false),
    }
}

/// Changes that are not laws: each gives a term that differs from `t` in the free
/// commutative semiring (unless `t` had no place for it, then `None`).
fn break_once(t: &T, kind: u8) -> Option<T> {
    match (kind, t) {
        // a + a instead of a
        (0, _) => Some(T::Add(false, b(t.clone()), b(t.clone()))),
        // a * 1 instead of a
        (1, _) => Some(T::Mul(false, b(t.clone()), b(T::Lit(1.0)))),
        // a + (-0) instead of a, in binary32
        (2, _) => Some(T::Add(true, b(t.clone()), b(T::Lit(-0.0)))),
        // swapped operands of an uninterpreted operation (operands that differ)
        (3, T::Op(o, x, y)) if !same_values(x, y, &KEYS) => Some(T::Op(*o, y.clone(), x.clone())),
        // distributing a product over a difference
        (4, T::Mul(w, x, yz)) => match &**yz {
            T::Op(0, y, z) => Some(T::Op(
                0,
                b(T::Mul(*w, x.clone(), y.clone())),
                b(T::Mul(*w, x.clone(), z.clone())),
            )),
            _ => None,
        },
        // an addition of the other type
        (5, T::Add(w, x, y)) => Some(T::Add(!w, x.clone(), y.clone())),
        // reassociating across the types: (x +64 y) +32 z as x +32 (y +32 z)
        (6, T::Add(true, xy, z)) => match &**xy {
            T::Add(false, x, y) => Some(T::Add(
                true,
                x.clone(),
                b(T::Add(true, y.clone(), z.clone())),
            )),
            _ => None,
        },
        _ => None,
    }
}

const KEYS: [u64; 3] = [11, 12, 13];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x15), ..ProptestConfig::default() })]

    #[test]
    fn law_rewrites_never_change_the_normal_form(
        t in term(4, 5),
        steps in prop::collection::vec((0u32..40, 0u8..4), 1..12),
    ) {
        let mut u = t.clone();
        let mut applied = 0;
        for (place, law) in steps {
            let mut c = place;
            if rewrite(&mut u, &mut c, law) {
                applied += 1;
            }
        }
        prop_assert!(same_values(&t, &u, &KEYS), "the rewrites are laws");
        prop_assert_eq!(sym(&t), sym(&u), "{:?} after {} rewrites", u, applied);
    }

    #[test]
    fn equal_normal_forms_are_exactly_equal_polynomials(
        a in term(3, 4),
        c in term(3, 4),
    ) {
        prop_assert_eq!(sym(&a) == sym(&c), same_values(&a, &c, &KEYS), "{:?} vs {:?}", a, c);
    }

    #[test]
    fn changes_that_are_not_laws_change_the_normal_form(t in term(4, 4), kind in 0u8..7) {
        if let Some(u) = break_once(&t, kind) {
            prop_assert!(!same_values(&t, &u, &KEYS));
            prop_assert_ne!(sym(&t), sym(&u));
        }
    }
}

#[test]
fn the_documented_examples() {
    let x = |i| T::Leaf(i);
    let add32 = |l: T, r: T| T::Add(true, b(l), b(r));
    let mul32 = |l: T, r: T| T::Mul(true, b(l), b(r));
    let cases: Vec<(T, T, bool)> = vec![
        // (a + b) * c = a*c + b*c
        (
            T::Mul(false, b(T::Add(false, b(x(0)), b(x(1)))), b(x(2))),
            T::Add(
                false,
                b(T::Mul(false, b(x(0)), b(x(2)))),
                b(T::Mul(false, b(x(1)), b(x(2)))),
            ),
            true,
        ),
        // a + a ≠ 2 * a
        (
            T::Add(false, b(x(0)), b(x(0))),
            T::Mul(false, b(T::Lit(2.0)), b(x(0))),
            false,
        ),
        // 2 * 3 ≠ 6
        (
            T::Mul(false, b(T::Lit(2.0)), b(T::Lit(3.0))),
            T::Lit(6.0),
            false,
        ),
        // a - b ≠ b - a
        (
            T::Op(0, b(x(0)), b(x(1))),
            T::Op(0, b(x(1)), b(x(0))),
            false,
        ),
        // max(a, b) ≠ max(b, a)
        (
            T::Op(2, b(x(0)), b(x(1))),
            T::Op(2, b(x(1)), b(x(0))),
            false,
        ),
        // -0 ≠ +0
        (T::Lit(-0.0), T::Lit(0.0), false),
        // laws inside an uninterpreted operation: (a*(b+c)) / d = (a*b + c*a) / d
        (
            T::Op(
                1,
                b(T::Mul(false, b(x(0)), b(T::Add(false, b(x(1)), b(x(2)))))),
                b(x(3)),
            ),
            T::Op(
                1,
                b(T::Add(
                    false,
                    b(T::Mul(false, b(x(0)), b(x(1)))),
                    b(T::Mul(false, b(x(2)), b(x(0)))),
                )),
                b(x(3)),
            ),
            true,
        ),
        // a * 1 ≠ a
        (T::Mul(false, b(x(0)), b(T::Lit(1.0))), x(0), false),
        // A binary32 dot product in the spec's order and in two lanes:
        // ((a0 b0 + a1 b1) + a2 b2) + a3 b3 = (a0 b0 + a2 b2) + (a1 b1 + a3 b3)
        (
            add32(
                add32(
                    add32(mul32(x(0), x(4)), mul32(x(1), x(5))),
                    mul32(x(2), x(6)),
                ),
                mul32(x(3), x(7)),
            ),
            add32(
                add32(mul32(x(0), x(4)), mul32(x(2), x(6))),
                add32(mul32(x(5), x(1)), mul32(x(3), x(7))),
            ),
            true,
        ),
        // A binary32 sum is not the rounding of the binary64 sum: a +32 b ≠ f32(a +64 b)
        // (here: a +32 b as an operand of binary32 arithmetic, next to the rounding)
        (
            add32(add32(x(0), x(1)), x(2)),
            add32(T::Add(false, b(x(0)), b(x(1))), x(2)),
            false,
        ),
        // nor is it the binary64 sum: (a +32 b) +64 c ≠ a +64 (b +64 c)
        (
            T::Add(false, b(add32(x(0), x(1))), b(x(2))),
            T::Add(false, b(x(0)), b(T::Add(false, b(x(1)), b(x(2))))),
            false,
        ),
        // (a +32 b) *32 c = a c +32 b c, but (a +64 b) *32 c ≠ a c +32 b c
        (
            mul32(add32(x(0), x(1)), x(2)),
            add32(mul32(x(0), x(2)), mul32(x(1), x(2))),
            true,
        ),
        (
            mul32(T::Add(false, b(x(0)), b(x(1))), x(2)),
            add32(mul32(x(0), x(2)), mul32(x(1), x(2))),
            false,
        ),
    ];
    for (l, r, eq) in cases {
        assert_eq!(sym(&l) == sym(&r), eq, "{l:?} vs {r:?}");
        assert_eq!(same_values(&l, &r, &KEYS), eq, "{l:?} vs {r:?}");
    }
}
