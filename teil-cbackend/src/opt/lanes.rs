//! Lane reductions: the pass that marks `max`/`min` reduction loops along a unit-stride label
//! as [`Node::LaneFold`], which the printer computes in independent lanes of vectors and the
//! validator executes as the loop it means (spec/padding.md, "Lane reductions").
//!
//! A loop qualifies when it is
//!
//! ```text
//! for l < n { acc = acc ⊙ v }       (⊙ max or min, start 0, n its logical extent, n ≥ LANES)
//! ```
//!
//! and every load of `v` that depends on `l` reads it with stride 1 (at least one does), `v`
//! does not read `acc`, and in fma mode `v` has no product-then-add pair (the lanes compute `v`
//! with plain vector operations). Such a loop is one dependent chain of compare-and-select per
//! cell, which no C compiler vectorises: the operation keeps the earlier of tied zeros and
//! propagates NaN, so it is not the compiler's max. Other reductions along unit stride stay as
//! they are: sums and products are not exact in another order, and folds into cells
//! ([`Node::Fold`], what `crate::opt::interchange` makes of reductions along other axes)
//! already vectorise across the cells.

use crate::ir::{walk_val, Affine, Kernel, LaneFold, Node, Step, Val, Visit};
use teil::ast::RedOp;

/// The pass: every qualifying loop of every nest becomes a [`Node::LaneFold`].
pub fn run(k: &mut Kernel) {
    let mut steps = std::mem::take(&mut k.steps);
    for s in &mut steps {
        if let Step::Nest { body, .. } = s {
            nodes(k, body);
        }
    }
    k.steps = steps;
}

fn nodes(k: &Kernel, ns: &mut [Node]) {
    for n in ns {
        if let Some(l) = lane_fold(k, n) {
            *n = Node::LaneFold(l);
        } else if let Node::Loop { body, .. } = n {
            nodes(k, body);
        }
    }
}

/// The lane fold `n` is, if it qualifies (the module documentation).
fn lane_fold(k: &Kernel, n: &Node) -> Option<LaneFold> {
    let Node::Loop {
        var,
        start: 0,
        extent,
        logical,
        body,
    } = n
    else {
        return None;
    };
    let [Node::AccUpdate { acc, op, value }] = body.as_slice() else {
        return None;
    };
    if !matches!(op, RedOp::Max | RedOp::Min) || extent != logical || *extent < LaneFold::LANES {
        return None;
    }
    let (mut unit, mut ok) = (false, true);
    walk_val(value, &mut |v| match v {
        Visit::Load(b, idx) => {
            let stride = Affine::of(k, b, idx).get(*var);
            unit |= stride == 1;
            ok &= stride <= 1;
        }
        Visit::Val(Val::Acc(a)) => ok &= a != acc,
        Visit::Val(v) => ok &= !(k.fma && v.fused().is_some()),
        Visit::Node(_) | Visit::Store(..) => {}
    });
    (unit && ok).then(|| LaneFold {
        acc: *acc,
        op: *op,
        var: *var,
        extent: *extent,
        value: value.clone(),
    })
}
