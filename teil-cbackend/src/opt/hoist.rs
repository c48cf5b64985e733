//! Hoisting: a reduction that does not depend on some enclosing loop variable is computed once
//! into a temporary indexed by the labels it does depend on, and read from there; so is a
//! diagonal (a load whose index names a label twice), copied once into consecutive cells
//! instead of read again, a cache line and often a page per cell, for every index of the loop.
//!
//! ```text
//! C[l0, l1] = (A[l0, l1] * (red+ l2 < n: w[l2]))
//!   becomes
//! tmp0[] = (red+ l2 < n: w[l2])
//! C[l0, l1] = (A[l0, l1] * tmp0[])
//!
//! y[l0] = (red+ l1 < n: (X[l0, l1] * D[l1, l1]))
//!   becomes
//! tmp0[l1] = D[l1, l1]
//! y[l0] = (red+ l1 < n: (X[l0, l1] * tmp0[l1]))
//! ```
//!
//! Exact: every cell of the temporary is the reduction with the same operations in the same
//! order, or the cell it copies; it only runs fewer times (spec/padding.md, "Scheduling:
//! hoisting and contraction lifting"). Not switchable: the plain lowering of issue 4 hoists
//! reductions too; diagonals are hoisted where `Tuning::contract` is on.

use crate::ir::{Ix, Label};
use crate::lower::{Assign, Context, IExpr, Walk};
use crate::Error;

/// Largest diagonal (in cells) that hoisting copies into a temporary.
const MAX_DIAGONAL_CELLS: u128 = 1 << 20;

/// The pass: every reduction in `a`'s value (outermost first) that leaves loop variables
/// unused — the target's labels and the enclosing reductions' labels it does not read, with
/// more than one index between them — becomes a temporary of `a.pre`, and so does every such
/// diagonal load where `diagonals` (of at most [`MAX_DIAGONAL_CELLS`] cells). A hoisted
/// reduction's own reductions are left to the temporary's assignment.
pub(crate) fn run(cx: &mut Context, a: &mut Assign, diagonals: bool) -> Result<(), Error> {
    let Assign {
        index,
        value,
        comment,
        lift,
        pre,
        ..
    } = a;
    value.walk_mut(&mut index.clone(), &mut |e, bound| {
        // What is hoisted, and the most cells its temporary may have.
        let (what, most) = match e {
            IExpr::Reduce(..) => ("reduction", u128::MAX),
            IExpr::Load(_, idx) if diagonals && is_diagonal(idx) => {
                ("diagonal", MAX_DIAGONAL_CELLS)
            }
            _ => return Ok(Walk::Into),
        };
        let free = e.free();
        let cells = |l: &Label| u128::from(cx.extent(*l));
        let unused = bound
            .iter()
            .filter(|b| !free.contains(b))
            .map(cells)
            .fold(1, u128::saturating_mul);
        if unused <= 1 || free.iter().map(cells).fold(1, u128::saturating_mul) > most {
            return Ok(Walk::Into);
        }
        let labels: Vec<_> = free.into_iter().collect();
        let value = std::mem::replace(e, IExpr::Lit(0.0));
        *e = cx.materialize(
            pre,
            &labels,
            value,
            *lift,
            format!("hoisted {what} for: {comment}"),
        )?;
        Ok(Walk::Past)
    })
}

/// Whether an index names some label more than once (a diagonal).
fn is_diagonal(idx: &[Ix]) -> bool {
    idx.iter().enumerate().any(|(i, x)| {
        matches!(x, Ix::Var(l) if idx[i + 1..].iter().any(|y| matches!(y, Ix::Var(m) if m == l)))
    })
}

#[cfg(test)]
mod tests {
    use crate::opt::testing::rewrite;

    #[test]
    fn a_reduction_over_none_of_the_loop_variables_is_computed_once() {
        let r = rewrite(
            "input var A : [2 3]\ninput var w : [4]\noutput var C : [2 3]\n\
             C = A * expa 1 2 (expa 1 3 (red+ 1 w))",
            4,
            &mut |cx, a| super::run(cx, a, true),
        );
        assert_eq!(
            r.before,
            "C[l0, l1] = (A[l0, l1] * (red+ l2 < 4: w[l2])) // C = A * expa 1 2 (expa 1 3 (red+ 1 w))\n"
        );
        assert_eq!(
            r.after,
            concat!(
                "tmp0[] = (red+ l2 < 4: w[l2]) // hoisted reduction for: C = A * expa 1 2 (expa 1 3 (red+ 1 w))\n",
                "C[l0, l1] = (A[l0, l1] * tmp0[]) // C = A * expa 1 2 (expa 1 3 (red+ 1 w))\n",
            )
        );
        r.assert_same_values(false);
    }

    #[test]
    fn a_diagonal_read_again_for_every_row_is_copied_once() {
        let r = rewrite(
            "input var X : [3 4]\ninput var D : [4 4]\noutput var y : [3]\n\
             y = (X # diag 1 2 D) .[2 3]",
            1,
            &mut |cx, a| super::run(cx, a, true),
        );
        assert_eq!(
            r.after,
            concat!(
                "tmp0[l1] = D[l1, l1] // hoisted diagonal for: y = (X # diag 1 2 D) .[2 3]\n",
                "y[l0] = (red+ l1 < 4: (X[l0, l1] * tmp0[l1])) // y = (X # diag 1 2 D) .[2 3]\n",
            ),
            "{}",
            r.before
        );
        r.assert_same_values(false);
        // Without the switch, or where no loop reads it again, the diagonal stays.
        let off = rewrite(
            "input var X : [3 4]\ninput var D : [4 4]\noutput var y : [3]\n\
             y = (X # diag 1 2 D) .[2 3]",
            1,
            &mut |cx, a| super::run(cx, a, false),
        );
        assert_eq!(off.before, off.after);
        let once = rewrite(
            "input var D : [4 4]\ninput var w : [4]\noutput var y : [4]\ny = diag 1 2 D * w",
            1,
            &mut |cx, a| super::run(cx, a, true),
        );
        assert_eq!(once.before, once.after);
    }
}
