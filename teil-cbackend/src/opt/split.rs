//! Splitting nested sums: a reduction whose body is a sum of products of two loads, or a sum
//! of one load whose contiguous index is the inner or the outer label, that depends on the
//! outer label (`Σ_l Σ_k a * b`, `Σ_l Σ_k a`) computes the inner sums into a temporary indexed
//! by their free labels, one cell per outer index.
//!
//! ```text
//! s[] = (red+ l0 < m: (red+ l1 < n: (A[l0, l1] * B[l0, l1])))
//!   becomes
//! tmp0[l0] = (red+ l1 < n: (A[l0, l1] * B[l0, l1]))
//! s[] = (red+ l0 < m: tmp0[l0])
//! ```
//!
//! Exact: each inner sum is computed with the same operations in the same order, once, and the
//! outer reduction folds the same values; the inner sums become a contraction nest
//! ([`crate::opt::contract`]; a sum of rows of one operand becomes dot products that sum
//! several rows side by side instead of one dependent chain of additions per row).
//! `Tuning::split` switches it.
//!
//! A statement whose whole value is such a nested sum over two operands that a packed product
//! can take (a target label read by one operand only, and one by the other only) stays as it
//! is: the contraction pass computes it as a two-level sum without a temporary
//! ([`crate::opt::contract::two_sided`], the one rule).

use crate::ir::{Ix, Label};
use crate::lower::{Assign, Context, IExpr, Walk};
use crate::Error;
use teil::ast::{BinOp, RedOp};

/// Largest temporary (in cells) that splitting a nested sum may create.
const MAX_SPLIT_CELLS: u128 = 1 << 20;

/// The pass: every qualifying reduction of `a`'s value (outermost first) gets its inner sums
/// from a temporary of `a.pre`.
pub(crate) fn run(cx: &mut Context, a: &mut Assign) -> Result<(), Error> {
    if packed_two_level(a) {
        return Ok(());
    }
    let Assign {
        value,
        comment,
        lift,
        pre,
        ..
    } = a;
    value.walk_mut(&mut Vec::new(), &mut |e, _| {
        let IExpr::Reduce(_, l, body) = e else {
            return Ok(Walk::Into);
        };
        if !is_pair_sum(body) && !is_load_sum(body, *l) {
            return Ok(Walk::Into);
        }
        // The outer label first: each outer index's inner sums are one block of the
        // temporary, laid out as the other labels' cells (so that a packed product over the
        // inner label, batched by the outer one, stores whole rows of its tiles).
        let mut labels: Vec<_> = body.free().into_iter().collect();
        if let Some(i) = labels.iter().position(|x| x == l) {
            labels[..=i].rotate_right(1);
        }
        let cells = labels
            .iter()
            .map(|&l| u128::from(cx.extent(l)))
            .fold(1u128, u128::saturating_mul);
        if !labels.contains(l) || cells > MAX_SPLIT_CELLS {
            return Ok(Walk::Into);
        }
        let inner = std::mem::replace(&mut **body, IExpr::Lit(0.0));
        **body = cx.materialize(
            pre,
            &labels,
            inner,
            *lift,
            format!("inner sums for: {comment}"),
        )?;
        Ok(Walk::Past)
    })
}

/// Whether `a`'s whole value is a nested sum `Σ_l Σ_k x * y` (`x`, `y` loads) that the
/// contraction pass computes as a packed two-level product
/// ([`crate::opt::contract::two_sided`]): then it stays as it is.
fn packed_two_level(a: &Assign) -> bool {
    let IExpr::Reduce(RedOp::Sum, _, body) = &a.value else {
        return false;
    };
    if !is_pair_sum(body) {
        return false;
    }
    let IExpr::Reduce(_, _, pair) = &**body else {
        return false;
    };
    let IExpr::Bin(_, x, y) = &**pair else {
        return false;
    };
    let (xs, ys) = (x.free(), y.free());
    crate::opt::contract::two_sided(&a.index, |l| xs.contains(&l), |l| ys.contains(&l))
}

/// `Σ_k a * b` with `a` and `b` loads: what a contraction nest computes.
fn is_pair_sum(e: &IExpr) -> bool {
    matches!(e, IExpr::Reduce(RedOp::Sum, _, body)
        if matches!(&**body, IExpr::Bin(BinOp::Mul, a, b)
            if matches!(**a, IExpr::Load(..)) && matches!(**b, IExpr::Load(..))))
}

/// `Σ_k a` with `a` a load, inside a sum over `outer`, whose inner sums gain from a nest of
/// their own: unless `a`'s last (contiguous) index is a label of neither sum. The inner sums
/// then run along rows (`ij->`: dot-product steps sum several rows side by side) or side by
/// side along them (`ji->`: the outer label contiguous). Where the contiguous label is free in
/// both sums (`lkj,j->j`, `ijba->ab`), the nested sum already runs along rows of it, and a
/// temporary of every inner sum would only add a pass over memory (1.5-1.8x slower, issue 43).
fn is_load_sum(e: &IExpr, outer: Label) -> bool {
    let IExpr::Reduce(RedOp::Sum, inner, body) = e else {
        return false;
    };
    let IExpr::Load(_, idx) = &**body else {
        return false;
    };
    !matches!(idx.last(), Some(Ix::Var(l)) if *l != *inner && *l != outer)
}

#[cfg(test)]
mod tests {
    use crate::opt::testing::rewrite;

    #[test]
    fn the_inner_sums_of_a_trace_of_a_product_go_to_a_temporary() {
        let r = rewrite(
            "input var A : [3 4]\ninput var B : [4 3]\noutput var s : []\n\
             s = (A # B) .[2 3] .[1 2]",
            4,
            &mut super::run,
        );
        assert_eq!(
            r.before,
            "s[] = (red+ l0 < 3: (red+ l1 < 4: (A[l0, l1] * B[l1, l0]))) // s = (A # B) .[2 3] .[1 2]\n"
        );
        assert_eq!(
            r.after,
            concat!(
                "tmp0[l0] = (red+ l1 < 4: (A[l0, l1] * B[l1, l0])) // inner sums for: s = (A # B) .[2 3] .[1 2]\n",
                "s[] = (red+ l0 < 3: tmp0[l0]) // s = (A # B) .[2 3] .[1 2]\n",
            )
        );
        r.assert_same_values(false);
    }

    /// A nested sum of one operand splits when its inner sums run along the operand's rows or
    /// side by side along them (the inner or the outer label contiguous), and stays whole
    /// when a label free in both sums is the contiguous one.
    #[test]
    fn a_nested_sum_of_one_operand_splits_unless_a_free_label_is_contiguous() {
        for (src, split) in [
            (
                "input var A : [3 4]\noutput var s : []\ns = red+ 1 (red+ 2 A)",
                true,
            ),
            (
                "input var A : [3 4]\noutput var s : []\ns = red+ 1 (red+ 1 A)",
                true,
            ),
            (
                "input var A : [3 4 5]\noutput var c : [5]\nc = red+ 1 (red+ 2 A)",
                false,
            ),
            (
                "input var A : [6 4 3 5]\noutput var c : [5 3]\nc = transp 1 2 (red+ 1 (red+ 2 A))",
                false,
            ),
            (
                "input var A : [3 5 4]\noutput var c : [3]\nc = red+ 2 (red+ 2 A)",
                true,
            ),
        ] {
            let r = rewrite(src, 1, &mut super::run);
            assert_eq!(
                r.after.contains("inner sums for"),
                split,
                "{src}\n{}",
                r.after
            );
            r.assert_same_values(false);
        }
    }

    #[test]
    fn a_statement_that_is_a_nested_sum_with_rows_and_columns_stays_whole() {
        // C[d, c] = Σ_b Σ_a F[a, b, c] G[b, d, a]: `c` is read by F only, `d` by G only, so
        // the contraction pass packs it as a two-level sum; a nested sum inside a larger value,
        // or one whose target labels all come from one operand, is still split.
        let whole = rewrite(
            "input var F : [3 4 5]\ninput var G : [4 6 3]\noutput var C : [6 5]\n\
             C = (F # G) .[1 6] .[1 3] ^[1 2]",
            4,
            &mut super::run,
        );
        assert_eq!(whole.before, whole.after);
        for src in [
            "input var F : [3 4 5]\ninput var G : [4 6 3]\ninput var H : [6 5]\n\
             output var C : [6 5]\nC = (F # G) .[1 6] .[1 3] ^[1 2] + H",
            "input var F : [3 4 5]\ninput var G : [4 3]\noutput var c : [5]\n\
             c = (F # G) .[1 5] .[1 3]",
        ] {
            let r = rewrite(src, 4, &mut super::run);
            assert!(r.after.contains("inner sums for"), "{src}\n{}", r.after);
            r.assert_same_values(false);
        }
    }
}
