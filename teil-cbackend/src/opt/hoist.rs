//! Hoisting: a reduction that does not depend on some enclosing loop variable is computed once
//! into a temporary indexed by the labels it does depend on, and read from there.
//!
//! ```text
//! C[l0, l1] = (A[l0, l1] * (red+ l2 < n: w[l2]))
//!   becomes
//! tmp0[] = (red+ l2 < n: w[l2])
//! C[l0, l1] = (A[l0, l1] * tmp0[])
//! ```
//!
//! Exact: every cell of the temporary is the reduction with the same operations in the same
//! order; it only runs fewer times (spec/padding.md, "Scheduling: hoisting and contraction
//! lifting"). Not switchable: the plain lowering of issue 4 hoists too.

use crate::lower::{Assign, Context, IExpr, Walk};
use crate::Error;

/// The pass: every reduction in `a`'s value (outermost first) that leaves loop variables
/// unused — the target's labels and the enclosing reductions' labels it does not read, with
/// more than one index between them — becomes a temporary of `a.pre`. A hoisted reduction's
/// own reductions are left to the temporary's assignment.
pub(crate) fn run(cx: &mut Context, a: &mut Assign) -> Result<(), Error> {
    let Assign {
        index,
        value,
        comment,
        lift,
        pre,
        ..
    } = a;
    value.walk_mut(&mut index.clone(), &mut |e, bound| {
        if !matches!(e, IExpr::Reduce(..)) {
            return Ok(Walk::Into);
        }
        let free = e.free();
        let unused: u128 = bound
            .iter()
            .filter(|b| !free.contains(b))
            .map(|&b| u128::from(cx.extent(b)))
            .fold(1, u128::saturating_mul);
        if unused <= 1 {
            return Ok(Walk::Into);
        }
        let labels: Vec<_> = free.into_iter().collect();
        let value = std::mem::replace(e, IExpr::Lit(0.0));
        *e = cx.materialize(
            pre,
            &labels,
            value,
            *lift,
            format!("hoisted reduction for: {comment}"),
        )?;
        Ok(Walk::Past)
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
            &mut super::run,
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
}
