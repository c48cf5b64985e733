//! Lane reductions: the pass that marks reduction loops along a unit-stride label as
//! [`Node::LaneFold`], which the printer computes in independent lanes of vectors
//! (spec/padding.md, "Lane reductions" and "Sums in lanes").
//!
//! A loop qualifies when it is
//!
//! ```text
//! for l < n { acc = acc ⊙ v }       (start 0, n its logical extent)
//! ```
//!
//! with `⊙` max or min and `n ≥ LANES`, or `⊙` a sum, `n ≥ MIN_SUM_TERMS` and the kernel
//! allowed to reassociate ([`crate::ir::Kernel::reassociate`]); every load of `v` that depends
//! on `l` reads it with stride 1 (at least one does), `v` does not read `acc`, and in fma mode
//! `v` has no product-then-add pair of its own (the lanes compute `v` with plain vector
//! operations; a sum's `acc + x * y` is fused lane by lane, as the loop fuses it).
//!
//! Such a loop is one dependent chain per cell. A C compiler vectorises neither: `teil_max`
//! keeps the earlier of tied zeros and propagates NaN, so it is not the compiler's max, and a
//! sum in another order has other roundings. Lanes of max and min give the loop's bits (the
//! validator executes the loop); lanes of a sum give another permitted result, which the
//! validator checks as such, and only where the kernel may reassociate (without it, `Options {
//! lift: false, .. }`, every sum keeps its fold). Products keep their loops, and folds into
//! cells ([`Node::Fold`], what `crate::opt::interchange` makes of reductions along other axes)
//! already vectorise across the cells.

use crate::ir::{walk_val, Affine, Kernel, LaneFold, Node, Step, Val, Visit};
use teil::ast::RedOp;

/// Fewest terms of a sum computed in lanes. Below it the chain of additions is short (64
/// additions, a few hundred cycles), and the sum keeps the spec's own fold: the lanes would
/// change its bits for no measurable gain (PERFORMANCE.md, "Sums in lanes").
pub const MIN_SUM_TERMS: u64 = 64;

/// The pass: every qualifying loop of every nest becomes a [`Node::LaneFold`].
pub fn run(k: &mut Kernel) {
    let mut steps = std::mem::take(&mut k.steps);
    for s in &mut steps {
        if let Step::Nest { body, .. } = s {
            if crate::ir::binary64(k, body) {
                nodes(k, body);
            }
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
    let fewest = match op {
        RedOp::Max | RedOp::Min => LaneFold::LANES,
        RedOp::Sum if k.reassociate => MIN_SUM_TERMS,
        _ => return None,
    };
    if extent != logical || *extent < fewest {
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
