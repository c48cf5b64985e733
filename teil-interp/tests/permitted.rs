//! The bounds of `teil_interp::rounding` hold for evaluations other than the oracle's
//! (spec/fuzzing.md, "Judging functions"): random binary32 terms of `+ - * /`, sums of several
//! terms, `max`, `min`, `abs` and the functions, evaluated
//!
//! - in binary32 with every sum in a random order and tree, the functions of the platform's
//!   `libm` (within a few ulps, the allowance is 4), and
//! - in binary64 with every operation's result moved by a random factor `1 ± u` (`u = 2^-24`,
//!   the largest rounding binary32 allows) and every function's by `1 ± 4u`,
//!
//! always lie where [`Rounding::permit`] says (within the bound of the oracle's value, or not
//! finite with it); and the bound is not vacuous: most cells are judged, and the bound is a
//! small multiple of the distance the perturbed evaluations reach.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use teil::ast::{BinOp, ElemType, Func, Func2, RedOp};
use teil_interp::rounding::{with_allowance, Permit, Rounding};
use teil_interp::Domain;

const F32: ElemType = ElemType::F32;
const U: f64 = 1.0 / 16_777_216.0;
const ALLOWANCE: f64 = 4.0;

#[derive(Clone, Debug)]
enum Term {
    Leaf(f32),
    Bin(BinOp, Box<Term>, Box<Term>),
    /// A sum folded from the first term; other evaluations add in any order.
    Sum(Vec<Term>),
    Func(Func, Box<Term>),
    Func2(Func2, Box<Term>, Box<Term>),
}

fn leaf() -> impl Strategy<Value = Term> {
    prop_oneof![
        (-64i32..64).prop_map(|n| Term::Leaf(n as f32)),
        (-2000i32..2000, 1i32..97).prop_map(|(n, d)| Term::Leaf(n as f32 / d as f32)),
        (-30i32..30).prop_map(|e| Term::Leaf(1.1f32.powi(e) * 3.7)),
    ]
}

fn term() -> impl Strategy<Value = Term> {
    leaf().prop_recursive(5, 40, 6, |inner| {
        prop_oneof![
            (
                prop_oneof![
                    Just(BinOp::Add),
                    Just(BinOp::Sub),
                    Just(BinOp::Mul),
                    Just(BinOp::Div)
                ],
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, a, b)| Term::Bin(op, Box::new(a), Box::new(b))),
            prop::collection::vec(inner.clone(), 2..6).prop_map(Term::Sum),
            (
                prop_oneof![
                    Just(Func::Exp),
                    Just(Func::Log),
                    Just(Func::Sqrt),
                    Just(Func::Tanh),
                    Just(Func::Erf),
                    Just(Func::Abs)
                ],
                inner.clone()
            )
                .prop_map(|(f, a)| Term::Func(f, Box::new(a))),
            (
                prop_oneof![Just(Func2::Max), Just(Func2::Min)],
                inner.clone(),
                inner
            )
                .prop_map(|(f, a, b)| Term::Func2(f, Box::new(a), Box::new(b))),
        ]
    })
}

/// The oracle's evaluation over `Rounding`, as the oracle folds and rounds.
fn oracle(t: &Term) -> Rounding {
    match t {
        Term::Leaf(x) => Rounding::lit(f64::from(*x)),
        Term::Bin(op, a, b) => Rounding::arith(*op, F32, &oracle(a), &oracle(b)),
        Term::Sum(ts) => {
            let mut acc = oracle(&ts[0]);
            for t in &ts[1..] {
                acc = Rounding::fold_step_in(RedOp::Sum, F32, &acc, &oracle(t));
            }
            acc
        }
        Term::Func(f, a) => Rounding::func(*f, F32, &oracle(a)),
        Term::Func2(f, a, b) => Rounding::func2(*f, &oracle(a), &oracle(b)),
    }
}

/// A stream of random choices for one evaluation.
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `±1`, or 0 now and then.
    fn sign(&mut self) -> f64 {
        [1.0, -1.0, 0.0][(self.next() % 3) as usize]
    }
}

fn max_min(f: Func2, a: f64, b: f64) -> f64 {
    teil_interp::functions::apply2(f, a, b)
}

/// Binary32 arithmetic, sums in a random order and tree, `libm`'s functions.
fn in_binary32(t: &Term, c: &mut Choices) -> f32 {
    match t {
        Term::Leaf(x) => *x,
        Term::Bin(op, a, b) => {
            let (a, b) = (in_binary32(a, c), in_binary32(b, c));
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
            }
        }
        Term::Sum(ts) => {
            let mut parts: Vec<f32> = ts.iter().map(|t| in_binary32(t, c)).collect();
            while parts.len() > 1 {
                let i = (c.next() % parts.len() as u64) as usize;
                let x = parts.swap_remove(i);
                let j = (c.next() % parts.len() as u64) as usize;
                parts[j] += x;
            }
            parts[0]
        }
        Term::Func(f, a) => {
            let x = in_binary32(a, c);
            match f {
                Func::Exp => x.exp(),
                Func::Log => x.ln(),
                Func::Sqrt => x.sqrt(),
                Func::Tanh => x.tanh(),
                // No `erff` in std: binary64's, rounded (within an ulp).
                Func::Erf => {
                    teil_interp::functions::apply(Func::Erf, ElemType::F64, f64::from(x)) as f32
                }
                Func::Abs => x.abs(),
            }
        }
        Term::Func2(f, a, b) => max_min(
            *f,
            f64::from(in_binary32(a, c)),
            f64::from(in_binary32(b, c)),
        ) as f32,
    }
}

/// Binary64 arithmetic with every result moved by `1 ± u` and every function's by `1 ± 4u`.
fn perturbed(t: &Term, c: &mut Choices) -> f64 {
    let round = |x: f64, c: &mut Choices| overflow(x * (1.0 + c.sign() * U));
    match t {
        Term::Leaf(x) => f64::from(*x),
        Term::Bin(op, a, b) => {
            let (a, b) = (perturbed(a, c), perturbed(b, c));
            round(<f64 as BinArith>::op(*op, a, b), c)
        }
        Term::Sum(ts) => {
            let mut acc = perturbed(&ts[0], c);
            for t in &ts[1..] {
                acc = round(acc + perturbed(t, c), c);
            }
            acc
        }
        Term::Func(f, a) => {
            let x = perturbed(a, c);
            let y = teil_interp::functions::apply(*f, ElemType::F64, x);
            if *f == Func::Abs {
                y
            } else {
                overflow(y * (1.0 + c.sign() * ALLOWANCE * U))
            }
        }
        Term::Func2(f, a, b) => max_min(*f, perturbed(a, c), perturbed(b, c)),
    }
}

/// Binary32's overflow: beyond its largest finite value (and half an ulp) a result is `±∞`.
fn overflow(x: f64) -> f64 {
    if x.abs() >= f64::from(f32::MAX) * (1.0 + U) {
        x.signum() * f64::INFINITY
    } else {
        x
    }
}

trait BinArith {
    fn op(op: BinOp, a: f64, b: f64) -> f64;
}

impl BinArith for f64 {
    fn op(op: BinOp, a: f64, b: f64) -> f64 {
        match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
        }
    }
}

fn allowed(p: Permit, want: f64, got: f64) -> Result<(), TestCaseError> {
    prop_assert!(
        p.allows(want, got) || (want.is_nan() && got.is_nan()),
        "{p:?}: oracle {want:e}, evaluation {got:e}, distance {:e}",
        (want - got).abs()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn other_evaluations_stay_within_the_bound(t in term(), seed in any::<u64>()) {
        let r = with_allowance(ALLOWANCE, || oracle(&t));
        let p = r.permit();
        let mut c = Choices(seed);
        for _ in 0..4 {
            allowed(p, r.value, f64::from(in_binary32(&t, &mut c)))?;
            allowed(p, r.value, perturbed(&t, &mut c))?;
        }
    }
}

/// Over many random terms most finite cells are judged, and the bound is within a small
/// factor of what the perturbed evaluations reach where they move the value at all.
#[test]
fn the_bound_is_not_vacuous() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut finite, mut judged, mut tight) = (0u32, 0u32, 0u32);
    for _ in 0..2000 {
        let t = term().new_tree(&mut runner).unwrap().current();
        let r = with_allowance(ALLOWANCE, || oracle(&t));
        if !r.value.is_finite() {
            continue;
        }
        finite += 1;
        let Permit::Within(b) = r.permit() else {
            continue;
        };
        judged += 1;
        let mut c = Choices(u64::from(finite));
        let reach = (0..16)
            .map(|_| (perturbed(&t, &mut c) - r.value).abs())
            .fold(0.0, f64::max);
        if reach > 0.0 && b <= 1e4 * reach {
            tight += 1;
        }
    }
    assert!(finite > 1000, "{finite} finite cells");
    assert!(
        judged * 10 >= finite * 7,
        "{judged} of {finite} finite cells judged"
    );
    assert!(
        tight * 2 >= judged,
        "{tight} of {judged} bounds within 10^4 of the reach"
    );
}

#[test]
fn special_values_keep_their_class_where_every_evaluation_does() {
    let f =
        |f: Func, x: f64| with_allowance(ALLOWANCE, || Rounding::func(f, F32, &Rounding::lit(x)));
    // Exact special values: IEEE's results, in every evaluation.
    assert_eq!(
        f(Func::Exp, f64::NEG_INFINITY).permit(),
        Permit::Within(0.0)
    );
    assert_eq!(f(Func::Tanh, f64::INFINITY).permit(), Permit::Within(0.0));
    assert_eq!(f(Func::Log, 0.0).permit(), Permit::NotFinite);
    assert_eq!(f(Func::Log, -1.0).permit(), Permit::NotFinite);
    assert_eq!(f(Func::Sqrt, -0.0).permit(), Permit::Within(0.0));
    assert_eq!(f(Func::Exp, f64::NAN).permit(), Permit::NotFinite);
    // Far past binary32's overflow threshold of exp (88.72...), and near it.
    assert_eq!(f(Func::Exp, 89.0).permit(), Permit::NotFinite);
    let near = f32::MAX.ln() as f64;
    assert_eq!(f(Func::Exp, near).permit(), Permit::Any);
    assert!(matches!(f(Func::Exp, 88.0).permit(), Permit::Within(_)));
    // A computed argument near a singularity: log of a residue that may be negative.
    let residue = Rounding::arith(
        BinOp::Sub,
        F32,
        &Rounding::arith(
            BinOp::Add,
            F32,
            &Rounding::lit(0.1f32 as f64),
            &Rounding::lit(0.2f32 as f64),
        ),
        &Rounding::lit(0.3f32 as f64),
    );
    let log = with_allowance(ALLOWANCE, || Rounding::func(Func::Log, F32, &residue));
    assert_eq!(log.permit(), Permit::Any);
    // A computed NaN may be an infinity elsewhere (`∞ − ∞` against `∞ + 1`), and `tanh ∞ = 1`.
    let inf = Rounding::lit(f64::INFINITY);
    let nan = Rounding::arith(BinOp::Sub, F32, &inf, &inf);
    assert_eq!(nan.permit(), Permit::NotFinite);
    assert_eq!(Rounding::func(Func::Tanh, F32, &nan).permit(), Permit::Any);
}

/// The allowance is the function's error in ulps of its type: one ulp of `exp 1` in binary32
/// is inside an allowance of 4, `2^-12` relative is far outside.
#[test]
fn the_allowance_is_in_ulps_of_the_type() {
    let e = with_allowance(ALLOWANCE, || {
        Rounding::func(Func::Exp, F32, &Rounding::lit(1.0))
    });
    let Permit::Within(b) = e.permit() else {
        panic!("{e:?}")
    };
    let one_ulp = f64::from(f32::from_bits((e.value as f32).to_bits() + 1)) - e.value;
    assert!(
        b >= 4.0 * one_ulp && b <= 20.0 * one_ulp,
        "{b} against an ulp {one_ulp}"
    );
    assert!(e.permit().allows(e.value, e.value + one_ulp));
    assert!(!e.permit().allows(e.value, e.value * (1.0 + 1.0 / 4096.0)));
    // The same in binary64 is 2^29 times tighter.
    let d = with_allowance(ALLOWANCE, || {
        Rounding::func(Func::Exp, ElemType::F64, &Rounding::lit(1.0))
    });
    let Permit::Within(b64) = d.permit() else {
        panic!("{d:?}")
    };
    assert!(b64 * 1e8 < b && b64 > 0.0, "{b64} against {b}");
}
