//! Contraction lifting (TeIL paper §5): a maximal sum-of-products region of an assignment's
//! value — `red+` and `*` nodes over other expressions, its *factors* — is the tensor-network
//! expression `Σ_{summed} Π factors`. It is replaced by pairwise contractions over temporaries
//! when the plan of [`teil::plan`] costs less than the fused loop nest over all of the
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
use crate::Error;
use teil::ast::{BinOp, RedOp};
use teil::plan::{Count, LabelSet, Objective, Plan, Problem};

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

/// Plans the region rooted at `e` as a tree of pairwise contractions ([`teil::plan`], by
/// iterations, or by operations with `order`); returns the replacement (the last contraction,
/// inline) when it costs less than the fused loop nest over all of the region's labels.
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
    if factors.len() < 2 {
        return Ok(None);
    }
    let free_e = e.free();
    let mut universe: Vec<Label> = free_e.iter().chain(&summed).copied().collect();
    universe.sort();
    universe.dedup();
    let set_of = |ls: &mut dyn Iterator<Item = Label>| -> LabelSet {
        ls.filter_map(|l| universe.binary_search(&l).ok()).collect()
    };
    let free = set_of(&mut free_e.iter().copied());
    let lab: Vec<LabelSet> = factors
        .iter()
        .map(|f| set_of(&mut f.free().into_iter()))
        .collect();
    let all = lab.iter().fold(LabelSet::new(), |m, l| m.union(l));
    let problem = Problem {
        extents: universe.iter().map(|&l| cx.extent(l)).collect(),
        dangling: set_of(&mut summed.iter().copied()).difference(&all),
        factors: lab,
        free,
    };
    let count = if order {
        Count::Operations
    } else {
        Count::Iterations
    };
    let Some(plan) = problem.plan(Objective::Work(count)) else {
        return Ok(None);
    };
    if problem.cost(&plan, count) >= problem.fused_cost(count) {
        return Ok(None);
    }
    cx.lifted += 1;
    let comment = format!("lifted contraction for: {origin}");
    let mut b = Build {
        cx,
        problem: &problem,
        universe: &universe,
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
    problem: &'a Problem,
    /// The region's labels, by their number in `problem`.
    universe: &'a [Label],
    factors: &'a [&'a IExpr],
    pre: &'c mut Vec<Assign>,
    comment: &'a str,
    order: bool,
}

impl Build<'_, '_> {
    fn build(&mut self, plan: &Plan, root: bool) -> Result<IExpr, Error> {
        let r = self.problem;
        match plan {
            Plan::Leaf { factor, keep } => {
                let f = self.factors[*factor].clone();
                let private = r.factors[*factor].difference(keep);
                if private.is_empty() {
                    return Ok(f);
                }
                let value = self.wrap_sum(&private, f);
                let labels = self.labels(keep);
                self.temp(&labels, value)
            }
            Plan::Merge { left, right, keep } => {
                let ea = self.build(left, false)?;
                let eb = self.build(right, false)?;
                let loops = left.keep().union(right.keep());
                let prod = IExpr::Bin(BinOp::Mul, Box::new(ea), Box::new(eb));
                if root {
                    let summed = loops.difference(&r.free).union(&r.dangling);
                    return Ok(self.wrap_sum(&summed, prod));
                }
                let value = self.wrap_sum(&loops.difference(keep), prod);
                let labels = if self.order {
                    self.layout(keep)
                } else {
                    self.labels(keep)
                };
                self.temp(&labels, value)
            }
        }
    }

    fn labels(&self, set: &LabelSet) -> Vec<Label> {
        set.iter().map(|b| self.universe[b]).collect()
    }

    /// The dimension order of a temporary holding `keep` (`Tuning::order`): label order,
    /// except that the region's last free label (the statement target's innermost
    /// dimension), if the temporary has it, is innermost. The kernels that compute and read
    /// the temporary then run along the target's innermost dimension, as the statement's own
    /// nest does.
    fn layout(&self, keep: &LabelSet) -> Vec<Label> {
        let mut labels = self.labels(keep);
        let last = self.labels(&self.problem.free).pop();
        if let Some(p) = labels.iter().position(|&l| Some(l) == last) {
            let l = labels.remove(p);
            labels.push(l);
        }
        labels
    }

    /// `Σ_{l in set} e`, outermost label first.
    fn wrap_sum(&self, set: &LabelSet, e: IExpr) -> IExpr {
        self.labels(set)
            .into_iter()
            .rev()
            .fold(e, |acc, l| IExpr::Reduce(RedOp::Sum, l, Box::new(acc)))
    }

    fn temp(&mut self, labels: &[Label], value: IExpr) -> Result<IExpr, Error> {
        self.cx
            .materialize(self.pre, labels, value, false, self.comment.to_string())
    }
}
