//! Contraction lifting (TeIL paper §5): a maximal sum-of-products region of an assignment's
//! value — `red+` and `*` nodes over other expressions, its *factors* — is the tensor-network
//! expression `Σ_{summed} Π factors`. It is replaced by pairwise contractions over temporaries
//! when the plan of [`crate::opt::order`] costs less than the fused loop nest over all of the
//! region's labels; the last contraction stays inline.
//!
//! ```text
//! v[l0] = (red+ l1 < n: (red+ l2 < n: ((A[l0, l1] * B[l1, l2]) * u[l2])))
//!   becomes
//! tmp0[l1] = (red+ l2 < n: (B[l1, l2] * u[l2]))
//! v[l0] = (red+ l1 < n: (A[l0, l1] * tmp0[l1]))
//! ```
//!
//! This reassociates sums and products, within the laws spec/values.md ("Reassociation")
//! permits; `Options::lift` switches it (every statement's [`Assign::lift`]). The
//! temporaries of a plan are not lifted again.

use crate::ir::Label;
use crate::lower::{Assign, Context, IExpr, Walk};
use crate::opt::order::{Plan, Region};
use crate::Error;
use teil::ast::{BinOp, RedOp};

/// The pass: every maximal region of `a`'s value, innermost first (the regions inside a
/// region's factors before the region). With `order` (`Tuning::order`) plans are compared by
/// operation counts and their temporaries keep the target's innermost label innermost.
pub(crate) fn run(cx: &mut Context, a: &mut Assign, order: bool) -> Result<(), Error> {
    let Assign {
        value,
        comment,
        pre,
        ..
    } = a;
    lift(cx, value, pre, comment, order)
}

fn lift(
    cx: &mut Context,
    e: &mut IExpr,
    pre: &mut Vec<Assign>,
    origin: &str,
    order: bool,
) -> Result<(), Error> {
    e.walk_mut(&mut Vec::new(), &mut |region, _| {
        if !is_region(region) {
            return Ok(Walk::Into);
        }
        region.walk_mut(&mut Vec::new(), &mut |factor, _| {
            if is_region(factor) {
                return Ok(Walk::Into);
            }
            lift(cx, factor, pre, origin, order)?;
            Ok(Walk::Past)
        })?;
        if let Some(new) = lift_region(cx, region, pre, origin, order)? {
            *region = new;
        }
        Ok(Walk::Past)
    })
}

/// Sum-of-products nodes: the distributive part of the language.
fn is_region(e: &IExpr) -> bool {
    matches!(
        e,
        IExpr::Reduce(RedOp::Sum, ..) | IExpr::Bin(BinOp::Mul, ..)
    )
}

/// Plans the region rooted at `e` as a tree of pairwise contractions; returns the
/// replacement (the last contraction, inline) when it costs less than the fused loop nest over
/// all of the region's labels.
fn lift_region(
    cx: &mut Context,
    e: &IExpr,
    pre: &mut Vec<Assign>,
    origin: &str,
    order: bool,
) -> Result<Option<IExpr>, Error> {
    let mut factors = Vec::new();
    let mut summed = Vec::new();
    e.walk(&mut Vec::new(), &mut |n, _| match n {
        IExpr::Reduce(RedOp::Sum, l, _) => {
            summed.push(*l);
            Walk::Into
        }
        IExpr::Bin(BinOp::Mul, ..) => Walk::Into,
        factor => {
            factors.push(factor);
            Walk::Past
        }
    });
    let n = factors.len();
    if !(2..=64).contains(&n) {
        return Ok(None);
    }
    let free_e = e.free();
    let mut universe: Vec<Label> = free_e.iter().chain(&summed).copied().collect();
    universe.sort();
    universe.dedup();
    if universe.len() > 128 {
        return Ok(None);
    }
    let mask_of = |ls: &mut dyn Iterator<Item = Label>| -> u128 {
        ls.filter_map(|l| universe.binary_search(&l).ok())
            .fold(0u128, |m, b| m | (1u128 << b))
    };
    let fmask = mask_of(&mut free_e.iter().copied());
    let lab: Vec<u128> = factors
        .iter()
        .map(|f| mask_of(&mut f.free().into_iter()))
        .collect();
    let all = lab.iter().fold(0u128, |m, &l| m | l);
    let summed_mask = mask_of(&mut summed.iter().copied());
    let region = Region {
        extents: universe.iter().map(|&l| cx.extent(l)).collect(),
        labels: universe.clone(),
        lab,
        fmask,
        dangling: summed_mask & !all,
        full: if n == 64 { u64::MAX } else { (1u64 << n) - 1 },
        merge_ops: if order { 2.0 } else { 1.0 },
    };
    // The fused nest runs every label's loop; with operation counting (`order`) each
    // iteration costs one multiplication per factor beyond the first and one addition.
    let fused = region.prod(fmask | summed_mask) * if order { n as f64 } else { 1.0 };
    let plan = region.plan();
    if region.cost(&plan, true) >= fused {
        return Ok(None);
    }
    cx.lifted += 1;
    let comment = format!("lifted contraction for: {origin}");
    let mut b = Build {
        cx,
        r: &region,
        factors: &factors,
        pre,
        comment: &comment,
        order,
    };
    b.build(&plan, true).map(Some)
}

/// Turns a plan into assignments of temporaries (added to `pre`) and the root's value.
struct Build<'a, 'c> {
    cx: &'c mut Context,
    r: &'a Region,
    factors: &'a [&'a IExpr],
    pre: &'c mut Vec<Assign>,
    comment: &'a str,
    order: bool,
}

impl Build<'_, '_> {
    fn build(&mut self, plan: &Plan, root: bool) -> Result<IExpr, Error> {
        let r = self.r;
        match plan {
            Plan::Leaf(k) => {
                let f = self.factors[*k].clone();
                let need = r.need(1u64 << k);
                let private = r.lab[*k] & !need;
                if private == 0 {
                    return Ok(f);
                }
                let value = wrap_sum(r, private, f);
                self.temp(&r.labels_of(need), value)
            }
            Plan::Merge(m, a, b) => {
                let ea = self.build(a, false)?;
                let eb = self.build(b, false)?;
                let loops = r.need(a.mask()) | r.need(b.mask());
                let prod = IExpr::Bin(BinOp::Mul, Box::new(ea), Box::new(eb));
                if root {
                    return Ok(wrap_sum(r, (loops & !r.fmask) | r.dangling, prod));
                }
                let keep = r.need(*m);
                let value = wrap_sum(r, loops & !keep, prod);
                let labels = if self.order {
                    r.layout(keep)
                } else {
                    r.labels_of(keep)
                };
                self.temp(&labels, value)
            }
        }
    }

    fn temp(&mut self, labels: &[Label], value: IExpr) -> Result<IExpr, Error> {
        self.cx
            .materialize(self.pre, labels, value, false, self.comment.to_string())
    }
}

/// `Σ_{l in m} e`, outermost label first.
fn wrap_sum(r: &Region, m: u128, e: IExpr) -> IExpr {
    r.labels_of(m)
        .into_iter()
        .rev()
        .fold(e, |acc, l| IExpr::Reduce(RedOp::Sum, l, Box::new(acc)))
}

#[cfg(test)]
mod tests {
    use crate::opt::testing::rewrite;

    #[test]
    fn a_matrix_chain_times_a_vector_becomes_two_matrix_vector_products() {
        let r = rewrite(
            "input var A : [3 4]\ninput var B : [4 5]\ninput var u : [5]\noutput var v : [3]\n\
             v = ((A # B) .[2 3] # u) .[2 3]",
            4,
            &mut |cx, a| super::run(cx, a, true),
        );
        assert_eq!(
            r.before,
            "v[l0] = (red+ l1 < 5: ((red+ l2 < 4: (A[l0, l2] * B[l2, l1])) * u[l1])) // v = ((A # B) .[2 3] # u) .[2 3]\n"
        );
        assert_eq!(
            r.after,
            concat!(
                "tmp0[l2] = (red+ l1 < 5: (B[l2, l1] * u[l1])) // lifted contraction for: v = ((A # B) .[2 3] # u) .[2 3]\n",
                "v[l0] = (red+ l2 < 4: (A[l0, l2] * tmp0[l2])) // v = ((A # B) .[2 3] # u) .[2 3]\n",
            )
        );
        assert_eq!((r.plain.lifted, r.rewritten.lifted), (0, 1));
        r.assert_same_values(true);
    }
}
