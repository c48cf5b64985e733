//! Loop interchange: the pass that reorders the loops of plain nests with reductions so that
//! the innermost loop walks memory with unit stride where the nest's shape allows it
//! (spec/padding.md, "Interchanged nests"). It acts on the nests the other kernel-form passes
//! left as they are: the nest of one statement (or temporary),
//!
//! ```text
//! for l_1 < n_1 ... for l_r < n_r {     (the target loops, start 0)
//!     ...                               (accumulators and reduction loops)
//!     T[..] = v                         (the only store; every target label exactly once)
//! }
//! ```
//!
//! where no load reads `T`. Every cell of `T` is then written by exactly one iteration of the
//! target loops, from values no iteration writes, so two rewrites keep every cell's operations
//! and their order:
//!
//! - **A reduction outward.** For a single reduction `acc = id; for k { acc = acc ⊙ v };
//!   T[..] = acc`, the accumulator moves into its cell: a first nest stores the identity of `⊙`
//!   in every cell the nest writes, and a second nest runs the loop `k` outside the innermost
//!   target loops with `T[..] = T[..] ⊙ v` ([`Node::Fold`]) inside. For a fixed cell the
//!   iterations of any loop order come in increasing `k` (every loop counts up), so the cell
//!   folds `v` for `k = 0, 1, ..., K - 1` in turn into the identity, exactly as the
//!   accumulator did; other cells' folds touch other cells. Chosen when the innermost target
//!   loops walk memory (the loads and the target cell) more closely than `k` does (`Σ_j x_j
//!   A[j, i]`: the partial sums of a row of `A` at a time).
//! - **A target loop innermost.** Otherwise, the target loop whose loads walk memory most
//!   closely becomes the innermost target loop (the order of the others stays), when that is
//!   closer than the current innermost one: the iterations of the target loops compute
//!   independent cells, so their order is free, and consecutive cells then share cache lines
//!   (`C[d,f,c,e] = Σ_b Σ_a A[a,b,c,d] B[a,e,b,f]` runs `d` innermost).
//!
//! "Closely" is measured per loop label as the sum, over the accesses the innermost body
//! makes, of the access's stride along the label in doubles, counted up to a cache line
//! ([`LINE`]): a stride of 1 costs 1, a stride of a line or more costs a line.

use crate::ir::{
    identity, walk_nodes, walk_val, Affine, Bound, BufId, Ix, Kernel, Label, Node, Step, Val, Visit,
};
use teil::ast::RedOp;

/// Doubles per 64-byte cache line: a stride at least this large touches a new line per step.
pub const LINE: u64 = 8;
/// Smallest nest (in innermost operations, [`crate::ir::work`]) the pass reorders: smaller
/// nests run in the cache whatever their order.
pub const MIN_WORK: u128 = 512;

/// The pass: every qualifying nest is rewritten in place (a reduction moved outward becomes two
/// nests: the identities, then the folds).
pub fn run(k: &mut Kernel) {
    let steps = std::mem::take(&mut k.steps);
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        match s {
            Step::Nest { comment, body } => match rewrite(k, &body) {
                Some(Rewrite::Outward { init, folds }) => {
                    out.push(Step::Nest {
                        comment: format!("identities for: {comment}"),
                        body: init,
                    });
                    out.push(Step::Nest {
                        comment,
                        body: folds,
                    });
                }
                Some(Rewrite::Reordered(body)) => out.push(Step::Nest { comment, body }),
                None => out.push(Step::Nest { comment, body }),
            },
            other => out.push(other),
        }
    }
    k.steps = out;
}

enum Rewrite {
    /// A reduction moved outward: the nest storing the identities, then the folding nest.
    Outward { init: Vec<Node>, folds: Vec<Node> },
    /// The same nest with another target loop innermost.
    Reordered(Vec<Node>),
}

/// The rewrite of one nest, if it qualifies and gains (the module documentation).
fn rewrite(k: &Kernel, body: &[Node]) -> Option<Rewrite> {
    let (free, nodes) = crate::ir::perfect_nest(body);
    let (Node::Store { buf, index, value }, inner) = nodes.split_last()? else {
        return None;
    };
    if free.is_empty()
        || !inner.iter().any(|n| matches!(n, Node::Loop { .. }))
        || crate::ir::work(body) < MIN_WORK
    {
        return None;
    }
    // Every target label exactly once, so that each iteration of the target loops has its own
    // cell.
    let mut seen: Vec<Label> = Vec::new();
    for ix in index {
        match ix {
            Ix::Var(l) if free.iter().any(|f| f.var == *l) && !seen.contains(l) => seen.push(*l),
            Ix::Var(_) => return None,
            Ix::Const(_) => {}
        }
    }
    if seen.len() != free.len() {
        return None;
    }
    // The store is the only write, and nothing reads the target.
    let mut loads: Vec<(BufId, &[Ix])> = Vec::new();
    let mut clean = true;
    walk_nodes(inner, &mut |v| match v {
        Visit::Load(b, idx) => loads.push((b, idx)),
        Visit::Store(..) => clean = false,
        Visit::Node(_) | Visit::Val(_) => {}
    });
    walk_val(value, &mut |v| {
        if let Visit::Load(b, idx) = v {
            loads.push((b, idx));
        }
    });
    if !clean || loads.iter().any(|(b, _)| b == buf) {
        return None;
    }
    let strides: Vec<Affine> = loads
        .iter()
        .map(|(b, idx)| Affine::of(k, *b, idx))
        .collect();
    let load_cost = |l: Label| -> u64 { strides.iter().map(|s| s.get(l).min(LINE)).sum() };
    let target = Affine::of(k, *buf, index);
    if let Some(r) = outward(&free, inner, value, *buf, index, &load_cost, &target) {
        return Some(r);
    }
    // A target loop innermost.
    let inner_cost = load_cost(free.last()?.var);
    let (best, cost) = free
        .iter()
        .enumerate()
        .map(|(i, f)| (i, load_cost(f.var)))
        .min_by_key(|&(i, c)| (c, i))?;
    if cost >= inner_cost {
        return None;
    }
    let mut order = free.clone();
    let moved = order.remove(best);
    order.push(moved);
    Some(Rewrite::Reordered(wrap(&order, nodes.to_vec())))
}

/// The reduction-outward rewrite of `acc = id; for k { acc = acc ⊙ v }; T[..] = acc`.
fn outward(
    free: &[Bound],
    inner: &[Node],
    value: &Val,
    buf: BufId,
    index: &[Ix],
    load_cost: &dyn Fn(Label) -> u64,
    target: &Affine,
) -> Option<Rewrite> {
    let [Node::AccInit { acc, op }, Node::Loop {
        var: kv,
        start: 0,
        extent,
        logical,
        body,
    }] = inner
    else {
        return None;
    };
    let [Node::AccUpdate {
        acc: updated,
        op: op2,
        value: v,
    }] = body.as_slice()
    else {
        return None;
    };
    if updated != acc || op2 != op || *value != Val::Acc(*acc) || reads_acc(v) {
        return None;
    }
    // The identities stand in the cells between the two nests; in padding only `-0.0` (a
    // zero) may (spec/padding.md, (P2)).
    if *op != RedOp::Sum && free.iter().any(|f| f.extent != f.logical) {
        return None;
    }
    // The target loops that walk memory more closely than `k`, innermost first: the cell is
    // read and written once per iteration.
    let k_cost = load_cost(*kv);
    let cost = |f: &Bound| load_cost(f.var) + 2 * target.get(f.var).min(LINE);
    let inside = free.iter().rev().take_while(|f| cost(f) < k_cost).count();
    if inside == 0 {
        return None;
    }
    let k = Bound {
        var: *kv,
        extent: *extent,
        logical: *logical,
    };
    let split = free.len() - inside;
    let mut order: Vec<Bound> = free[..split].to_vec();
    order.push(k);
    order.extend_from_slice(&free[split..]);
    let init = wrap(
        free,
        vec![Node::Store {
            buf,
            index: index.to_vec(),
            value: Val::Lit(identity(*op)),
        }],
    );
    let folds = wrap(
        &order,
        vec![Node::Fold {
            buf,
            index: index.to_vec(),
            op: *op,
            value: v.clone(),
        }],
    );
    Some(Rewrite::Outward { init, folds })
}

fn reads_acc(v: &Val) -> bool {
    let mut any = false;
    walk_val(v, &mut |x| any |= matches!(x, Visit::Val(Val::Acc(_))));
    any
}

/// `loops` (outermost first) around `body`.
fn wrap(loops: &[Bound], mut body: Vec<Node>) -> Vec<Node> {
    for l in loops.iter().rev() {
        body = vec![l.wrap(body)];
    }
    body
}

#[cfg(test)]
mod tests {
    use crate::opt::{lower_tuned, Tuning};
    use crate::Options;

    /// The IR's steps (the text after the buffer lines) with and without the pass.
    fn steps(src: &str, pad: u64) -> (String, String) {
        steps_with(src, pad, Tuning::default())
    }

    fn steps_with(src: &str, pad: u64, base: Tuning) -> (String, String) {
        let (p, _) = teil::compile(src).expect("checks");
        let opts = Options {
            pad,
            ..Options::default()
        };
        let text = |interchange: bool| {
            let t = Tuning {
                interchange,
                ..base
            };
            let k = lower_tuned(&p, &opts, &t).expect("lowers");
            let s = k.to_string();
            let at = s.find("\nnest").or_else(|| s.find("\ncontract"));
            s[at.map_or(0, |i| i + 1)..].to_string()
        };
        (text(false), text(true))
    }

    #[test]
    fn a_reduction_along_a_long_stride_moves_outside_the_target_loop() {
        // (Seven cells: too few for the dot products' eight lanes; with more, and A larger
        // than 256 KB, they would not take it either: their lanes would read no rows.)
        let src = "input var x : [80]\ninput var A : [80 7]\noutput var y : [7]\n\
                   y = (x # A) .[1 2]\n";
        let (before, after) = steps(src, 1);
        assert_eq!(
            before,
            "nest // y = (x # A) .[1 2]\n  for l0 in 0..7\n    acc0 = identity of Sum\n    \
             for l1 in 0..80\n      acc0 = Sum(acc0, (x[l1] * A[l1, l0]))\n    y[l0] = acc0\n"
        );
        assert_eq!(
            after,
            "nest // identities for: y = (x # A) .[1 2]\n  for l0 in 0..7\n    y[l0] = -0.0\n\
             nest // y = (x # A) .[1 2]\n  for l1 in 0..80\n    for l0 in 0..7\n      \
             y[l0] = Sum(y[l0], (x[l1] * A[l1, l0]))\n"
        );
    }

    #[test]
    fn the_reduction_stays_inside_the_target_loops_that_walk_memory_farther() {
        // Y[i, k] = max_j X[i, j, k]: `j` moves inside `i` (stride 9 · 24 in X) and outside
        // `k` (stride 1).
        let src = "input var X : [5 9 24]\noutput var Y : [5 24]\nY = redmax 2 X\n";
        let (_, after) = steps(src, 1);
        assert_eq!(
            after,
            "nest // identities for: Y = redmax 2 X\n  for l0 in 0..5\n    for l1 in 0..24\n      \
             Y[l0, l1] = -inf\nnest // Y = redmax 2 X\n  for l0 in 0..5\n    for l2 in 0..9\n      \
             for l1 in 0..24\n        Y[l0, l1] = Max(Y[l0, l1], X[l0, l2, l1])\n"
        );
    }

    #[test]
    fn a_maximum_over_padded_target_loops_keeps_its_accumulator() {
        // At M = 4 the target loop of `redmax 1 A` runs over padding (the maximum of zeros is
        // zero), where the identity -inf must never stand.
        let src = "input var A : [64 9]\noutput var m : [9]\nm = redmax 1 A\n";
        let (before, after) = steps(src, 4);
        assert!(before.contains("(logical 9)"), "{before}");
        assert_eq!(before, after);
        // A sum may: its identity -0.0 is a zero.
        let src = "input var A : [64 9]\noutput var s : [9]\ns = red+ 1 A\n";
        let (before, after) = steps(src, 4);
        assert!(before.contains("(logical 9)"), "{before}");
        assert!(after.contains("s[l0] = Sum(s[l0], A[l1, l0])"), "{after}");
    }

    #[test]
    fn reductions_along_unit_stride_are_left_alone() {
        for src in [
            "input var X : [5 9 24]\noutput var Y : [5 9]\nY = redmax 3 X\n",
            "input var A : [21 40]\ninput var x : [40]\noutput var y : [21]\ny = (A # x) .[2 3]\n",
            "input var A : [30 50]\noutput var t : []\nt = red+ 1 (red+ 1 A)\n",
            // Below MIN_WORK.
            "input var A : [3 5]\ninput var B : [5 7]\noutput var C : [3 7]\nC = (A # B) .[2 3]\n",
        ] {
            let (before, after) = steps(src, 1);
            assert_eq!(before, after, "{src}");
        }
    }

    #[test]
    fn nested_sums_get_the_target_loop_with_unit_stride_loads_innermost() {
        // C[d,f,c,e] = Σ_b Σ_a A[a,b,c,d] B[a,e,b,f]: the target's innermost label `e` reads
        // B with stride 32; `d` reads A with stride 1 and becomes the innermost target loop.
        let src = "input var A : [3 4 5 6]\ninput var B : [3 7 4 8]\noutput var C : [6 8 5 7]\n\
                   C = (A # B) .[1 5] .[1 5] ^[1 2] ^[2 4] ^[3 4]\n";
        // (At these sizes splitting would compute the inner sums into a temporary first.)
        let no_split = Tuning {
            split: false,
            ..Tuning::default()
        };
        let (before, after) = steps_with(src, 1, no_split);
        let loops = |s: &str| -> Vec<String> {
            s.lines()
                .filter_map(|l| l.trim().strip_prefix("for "))
                .map(|l| l.split(' ').next().unwrap_or("").to_string())
                .collect()
        };
        assert_eq!(
            loops(&before),
            ["l0", "l1", "l2", "l3", "l4", "l5"],
            "{before}"
        );
        assert_eq!(
            loops(&after),
            ["l1", "l2", "l3", "l0", "l4", "l5"],
            "{after}"
        );
        // Only the order changed.
        assert_eq!(before.lines().count(), after.lines().count());
    }

    #[test]
    fn a_target_that_is_read_is_left_alone() {
        // `s` is both the target and an operand (the alias temporary takes the store, so
        // the nest's target is never read; the copy-back is a copy).
        let src = "inout var s : [9]\ninput var A : [5 9]\ns = red+ 1 A + s\n";
        let (p, _) = teil::compile(src).expect("checks");
        let k = lower_tuned(&p, &Options::default(), &Tuning::default()).expect("lowers");
        crate::validate::validate(&p, &k).unwrap_or_else(|e| panic!("{e}\n{k}"));
    }
}
