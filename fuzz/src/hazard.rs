//! Output cells a correct target may compute differently from the oracle by more than the
//! bound: those that depend on a division by a zero whose sign no target promises, or by a
//! value that a reordered sum may have cancelled to another tiny number (spec/fuzzing.md,
//! "Cells not judged").
//!
//! Targets choose the order of sums and may return either sign for a zero result (`einsum` of
//! `-2 · 0` from an accumulator `+0` is `+0`; TeIL's is `-0`). Both choices are invisible to
//! the comparison, until a division makes them visible: `1 / ±0` is `±∞`, and `0 / 0` is NaN
//! where `0 / 1e-17` is `0`. So a division's cell is *hazardous* when its divisor is `±0` and
//! its numerator neither `±0` nor NaN (the quotient's sign is the zero's) and the zero is not a
//! literal's (a `const`, spread or sliced: `1 / 0` is `+∞` on every target), or when its divisor
//! is *inexact* (it may carry rounding: a non-integer, or computed from one) and smaller than
//! [`RESIDUE`] in magnitude (a cancellation residue, or a true zero that another order leaves
//! as a residue). Every cell of an `einsum` with two or more operands that sums a label is
//! hazardous where an operand holds an infinity: a contraction path may sum one operand first
//! (`x · Σ y` for `Σ x · y`, as `jnp.einsum` and `torch.einsum` document), and with `x = ∞`
//! the two differ in class. Every cell computed from a hazardous cell is hazardous. Such cells
//! are not judged: the target's value is taken, and the cells are counted.
//!
//! The analysis runs the ops/1 steps with [`crate::ops_eval`] and tracks two masks per value,
//! cell by cell for element-wise ops, reductions, `expand` and `take`, and for a whole `einsum`
//! result at once (a hazardous or inexact operand cell makes every result cell so: coarser,
//! still sound). Only programs with a division or an infinite input can have hazards.

use crate::campaign::Store;
use crate::ops_eval;
use ndarray::{ArrayD, Axis, IxDyn, Zip};
use std::collections::BTreeMap;
use teil::ops::{Op, Ops};

/// Below this magnitude an inexact divisor may be a cancellation residue. Values the campaigns'
/// programs compute without cancelling (quotients of small integers, products and sums of
/// them) stay far above it.
pub const RESIDUE: f64 = 1e-6;

/// Hazardous cells of each output that has any.
pub type Hazards = BTreeMap<String, ArrayD<bool>>;

#[derive(Clone)]
struct Masks {
    hazard: ArrayD<bool>,
    inexact: ArrayD<bool>,
}

/// A cell's value is the exact real result of integers: an integer below 2^50, or not finite.
fn exact_value(x: f64) -> bool {
    !x.is_finite() || (x.fract() == 0.0 && x.abs() < crate::compare::EXACT_LIMIT)
}

/// The hazardous cells of every output of `ops` run on `inputs` (outputs without any are left
/// out). Empty when the steps cannot be run (the oracle judges those programs anyway).
pub fn hazards(ops: &Ops, inputs: &Store) -> Hazards {
    let mut env: Store = inputs.clone();
    let mut masks: BTreeMap<String, Masks> = inputs
        .iter()
        .map(|(n, t)| {
            let none = ArrayD::from_elem(t.raw_dim(), false);
            (
                n.clone(),
                Masks {
                    hazard: none.clone(),
                    inexact: none,
                },
            )
        })
        .collect();
    // The values that are literals, spread or sliced: their zeros have the sign written.
    let mut literal: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for (k, s) in ops.steps.iter().enumerate() {
        let is_literal = match s.op {
            Op::Const { .. } => true,
            Op::Expand { .. } | Op::Take { .. } => literal.contains(&s.args[0]),
            _ => false,
        };
        let literal_divisor = matches!(s.op, Op::Div) && literal.contains(&s.args[1]);
        if is_literal {
            literal.insert(s.out.clone());
        } else {
            literal.remove(&s.out);
        }
        let args: Option<Vec<(&ArrayD<f64>, &Masks)>> = s
            .args
            .iter()
            .map(|a| Some((env.get(a)?, masks.get(a)?)))
            .collect();
        let Some(args) = args else {
            return Hazards::new();
        };
        // The step alone, on its own arguments (not the whole store).
        let mut local: Store = s
            .args
            .iter()
            .zip(&args)
            .map(|(a, (v, _))| (a.clone(), (*v).clone()))
            .collect();
        if ops_eval::run(&ops.steps[k..=k], &mut local, None).is_err() {
            return Hazards::new();
        }
        let Some(value) = local.remove(&s.out) else {
            return Hazards::new();
        };
        let m = step(&s.op, &args, &value, literal_divisor);
        masks.insert(s.out.clone(), m);
        env.insert(s.out.clone(), value);
    }
    ops.outputs
        .iter()
        .filter_map(|(n, _)| {
            let h = &masks.get(n)?.hazard;
            h.iter().any(|&x| x).then(|| (n.clone(), h.clone()))
        })
        .collect()
}

/// The masks of one step's result `r` from its arguments' values and masks; `literal_divisor`:
/// the step divides by a literal (whose zero has a sign every target keeps).
fn step(op: &Op, args: &[(&ArrayD<f64>, &Masks)], r: &ArrayD<f64>, literal_divisor: bool) -> Masks {
    let shape = r.raw_dim();
    let exact_result = r.mapv(exact_value);
    match op {
        Op::Const { .. } => Masks {
            hazard: ArrayD::from_elem(shape.clone(), false),
            inexact: ArrayD::from_elem(shape, false),
        },
        Op::Add | Op::Sub | Op::Mul | Op::Div => {
            let ((a, ma), (b, mb)) = (args[0], args[1]);
            // A shape-[] operand broadcasts ([S-SMul], [S-SDiv]).
            let a = a.broadcast(shape.clone()).expect("checked shapes");
            let b = b.broadcast(shape.clone()).expect("checked shapes");
            let ha = ma.hazard.broadcast(shape.clone()).expect("checked shapes");
            let hb = mb.hazard.broadcast(shape.clone()).expect("checked shapes");
            let ia = ma.inexact.broadcast(shape.clone()).expect("checked shapes");
            let ib = mb.inexact.broadcast(shape.clone()).expect("checked shapes");
            let divides = matches!(op, Op::Div);
            let mut hazard = ArrayD::from_elem(shape.clone(), false);
            Zip::from(&mut hazard)
                .and(&a)
                .and(&b)
                .and(&ha)
                .and(&hb)
                .and(&ib)
                .for_each(|h, &x, &y, &ha, &hb, &ib| {
                    let signed_zero = !literal_divisor && y == 0.0 && !(x == 0.0 || x.is_nan());
                    let residue = ib && y.abs() < RESIDUE;
                    *h = ha || hb || (divides && (signed_zero || residue));
                });
            let mut inexact = ArrayD::from_elem(shape, false);
            Zip::from(&mut inexact)
                .and(&ia)
                .and(&ib)
                .and(&exact_result)
                .for_each(|i, &ia, &ib, &e| *i = ia || ib || !e);
            Masks { hazard, inexact }
        }
        // A function's result is as hazardous as its operand, and inexact but for `abs`; a cast
        // is inexact where it changed the value.
        Op::Func { func } => {
            let m = args[0].1;
            let inexact = match func {
                teil::ast::Func::Abs => m.inexact.clone(),
                _ => ArrayD::from_elem(shape, true),
            };
            Masks {
                hazard: m.hazard.clone(),
                inexact,
            }
        }
        Op::Cast { .. } => {
            let (a, m) = args[0];
            let mut inexact = m.inexact.clone();
            Zip::from(&mut inexact)
                .and(a)
                .and(r)
                .for_each(|i, &x, &y| *i |= x.to_bits() != y.to_bits() && !x.is_nan());
            Masks {
                hazard: m.hazard.clone(),
                inexact,
            }
        }
        Op::Max | Op::Min => {
            let ((_, ma), (_, mb)) = (args[0], args[1]);
            let or = |x: &ArrayD<bool>, y: &ArrayD<bool>| {
                let mut z = x.clone();
                Zip::from(&mut z).and(y).for_each(|a, &b| *a |= b);
                z
            };
            Masks {
                hazard: or(&ma.hazard, &mb.hazard),
                inexact: or(&ma.inexact, &mb.inexact),
            }
        }
        Op::Reduce { axis, .. } => {
            let m = args[0].1;
            let any = |t: &ArrayD<bool>| t.map_axis(Axis(*axis), |lane| lane.iter().any(|&x| x));
            let mut inexact = any(&m.inexact);
            Zip::from(&mut inexact)
                .and(&exact_result)
                .for_each(|i, &e| *i |= !e);
            Masks {
                hazard: any(&m.hazard),
                inexact,
            }
        }
        Op::Expand { axis, .. } => {
            let m = args[0].1;
            let grow = |t: &ArrayD<bool>| {
                t.clone()
                    .insert_axis(Axis(*axis))
                    .broadcast(IxDyn(r.shape()))
                    .expect("checked shapes")
                    .to_owned()
            };
            Masks {
                hazard: grow(&m.hazard),
                inexact: grow(&m.inexact),
            }
        }
        Op::Take { axis, index } => {
            let m = args[0].1;
            let slice = |t: &ArrayD<bool>| t.index_axis(Axis(*axis), *index as usize).to_owned();
            Masks {
                hazard: slice(&m.hazard),
                inexact: slice(&m.inexact),
            }
        }
        Op::Einsum { equation } => {
            let any =
                |f: fn(&Masks) -> &ArrayD<bool>| args.iter().any(|(_, m)| f(m).iter().any(|&x| x));
            // A contraction path may sum a label out of one operand before multiplying
            // (`x · Σ y` for `Σ x · y`: jnp.einsum and torch.einsum document such paths). With
            // an infinite `x` the two differ in class (`∞ · (1 + -2)` is `-∞`, `∞ + -∞` NaN).
            let distributes = args.len() >= 2
                && sums(equation)
                && args.iter().any(|(v, _)| v.iter().any(|x| x.is_infinite()));
            let hazard = ArrayD::from_elem(shape, distributes || any(|m| &m.hazard));
            let inexact = if any(|m| &m.inexact) {
                ArrayD::from_elem(r.raw_dim(), true)
            } else {
                exact_result.mapv(|e| !e)
            };
            Masks { hazard, inexact }
        }
    }
}

/// Whether an einsum equation (`ab,bc->ac`, explicit output) sums a label.
fn sums(equation: &str) -> bool {
    let (inputs, output) = equation.split_once("->").unwrap_or((equation, ""));
    inputs
        .chars()
        .any(|c| c.is_ascii_alphabetic() && !output.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr1;

    fn run(source: &str, inputs: &[(&str, Vec<f64>)]) -> Hazards {
        let (checked, _) = teil::compile(source).expect("the test program checks");
        let ops = teil::ops::lower(&checked);
        let store: Store = inputs
            .iter()
            .map(|(n, v)| (n.to_string(), arr1(v).into_dyn()))
            .collect();
        hazards(&ops, &store)
    }

    #[test]
    fn a_division_by_a_literal_zero_is_judged() {
        // `1 / 0` is +∞ and `-1 / 0` -∞ on every target: the literal's zero has its sign;
        // divided by a computed zero (`A * 0`), the cell is hazardous.
        let source = "input var A : [2]\noutput var C : [2]\noutput var D : [2]\n\
                      C = A * expa 1 2 (1 / 0) + (-1 / 0) * A\nD = A / (A * expa 1 2 0)";
        let h = run(source, &[("A", vec![1.0, -2.0])]);
        assert!(!h.contains_key("C"), "{h:?}");
        assert_eq!(h["D"].iter().copied().collect::<Vec<_>>(), vec![true, true]);
    }

    #[test]
    fn a_division_by_a_computed_zero_is_hazardous_where_its_numerator_is_not_zero() {
        // C = A / (B * 0-ish): -2 · 0 is -0 for TeIL, +0 for an einsum summing from +0.
        let source = "input var A : [3]\ninput var B : [3]\ninput var Z : [3]\n\
                      output var C : [3]\nC = A / (B * Z)";
        let h = run(
            source,
            &[
                ("A", vec![1.0, 0.0, 5.0]),
                ("B", vec![-2.0, -2.0, 1.0]),
                ("Z", vec![0.0, 0.0, 2.0]),
            ],
        );
        // 1 / ±0 is ±∞ (hazard); 0 / ±0 is NaN either way; 5 / 2 is judged.
        assert_eq!(
            h["C"].iter().copied().collect::<Vec<_>>(),
            [true, false, false]
        );
    }

    #[test]
    fn a_summing_einsum_of_several_operands_with_an_infinity_is_hazardous() {
        // red+ 1 (X # Y): Σ_b x·y_b, or x·Σ_b y_b on a contraction path: with x = -∞ and
        // y = [0, 1] NaN in the one, -∞ in the other.
        let source = "input var X : [1]\ninput var Y : [2]\noutput var C : []\n\
                      output var D : [1 2]\nC = red+ 1 (red+ 1 (X # Y))\nD = X # Y";
        let h = run(
            source,
            &[("X", vec![f64::NEG_INFINITY]), ("Y", vec![0.0, 1.0])],
        );
        assert!(h["C"].iter().all(|&x| x), "{h:?}");
        // No label summed (an outer product), or no infinity: judged.
        assert!(!h.contains_key("D"));
        let h = run(source, &[("X", vec![-3.0]), ("Y", vec![0.0, 1.0])]);
        assert!(h.is_empty(), "{h:?}");
    }

    #[test]
    fn an_inexact_tiny_divisor_is_hazardous_and_hazards_propagate() {
        // S = 1/3 + 1/3 − 2/3 is a rounding residue (or 0) depending on the order; D divides by
        // it, and E reads D.
        let source = "input var A : [3]\ninput var X : [3]\noutput var E : [3]\nvar S : []\n\
                      var D : [3]\nS = red+ 1 (A / X)\nD = A / S\nE = D + A";
        let h = run(
            source,
            &[("A", vec![1.0, 1.0, -2.0]), ("X", vec![3.0, 3.0, 3.0])],
        );
        assert!(h["E"].iter().all(|&x| x), "{h:?}");
        // The same with integers: S = 0 exactly in every order, and 1 / ±0 is hazardous; with
        // S = 2 nothing is.
        let h = run(
            source,
            &[("A", vec![1.0, 1.0, -2.0]), ("X", vec![1.0, 1.0, 1.0])],
        );
        assert!(h["E"].iter().all(|&x| x));
        let h = run(
            source,
            &[("A", vec![1.0, 1.0, 0.0]), ("X", vec![1.0, 1.0, 1.0])],
        );
        assert!(h.is_empty(), "{h:?}");
    }
}
