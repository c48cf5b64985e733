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
//! - **A target loop into the reductions.** Otherwise, when some target loop `p` walks memory
//!   more closely than every innermost reduction loop (nested sums with a transposed result,
//!   `C[d,f,c,e] = Σ_b Σ_a A[a,b,c,d] B[a,e,b,f]`: `A` has unit stride along `d`, the sum over
//!   `a` strides 16384), `p` moves inside every node of the body: each accumulator becomes a
//!   row of cells indexed by `p` (a small temporary, `teil_rowN`), each accumulator node a loop
//!   over `p` that initialises, folds ([`Node::Fold`]) or reads the row's cells, and the store
//!   a loop over `p` that stores them. For a fixed `p` the row cells see exactly the operations
//!   the accumulators saw, in the same order, and the cells of different `p` never meet; the
//!   innermost loops now run along `p`.
//!
//! "Closely" is measured per loop label as the sum, over the body's loads (and, for a fold,
//! the target cell, read and written), of the access's stride along the label in doubles,
//! counted up to a cache line ([`LINE`]): a stride of 1 costs 1, a stride of a line or more
//! costs a line. Nests below [`MIN_WORK`] operations are left alone.

use crate::ir::{
    identity, jam_shape, walk_nodes, walk_val, Affine, Bound, BufId, Buffer, Ix, Kernel, Label,
    Node, Role, Step, Val, Visit,
};
use std::collections::BTreeMap;
use teil::ast::RedOp;

/// Doubles per 64-byte cache line: a stride at least this large touches a new line per step.
pub const LINE: u64 = 8;
/// Smallest nest (in innermost operations, [`crate::ir::work`]) the pass reorders: smaller
/// nests run in the cache whatever their order.
pub const MIN_WORK: u128 = 512;
/// Doubles in a 4 KB page of memory (`no_jam`).
pub const PAGE: u64 = 512;
/// Most cells a reduction moved outward folds into between two of its terms when the target
/// loops inside it form one dense block (`outward`): 512 KB, half a level-2 cache of the
/// machines PERFORMANCE.md measures (`redmax_1`, the block a 256 x 256 plane: 4.6 ms against
/// 6.9 ms with the reduction between the two target loops).
pub const BLOCK: u64 = 1 << 16;

/// The pass: every qualifying nest is rewritten in place (a reduction moved outward becomes two
/// nests: the identities, then the folds).
pub fn run(k: &mut Kernel) {
    let steps = std::mem::take(&mut k.steps);
    let mut out = Vec::with_capacity(steps.len());
    for s in steps {
        match s {
            Step::Nest { comment, body } => match rewrite(k, &body) {
                Some(Rewrite::Outward { init, mut folds }) => {
                    no_jam(k, &mut folds);
                    out.push(Step::Nest {
                        comment: format!("identities for: {comment}"),
                        body: init,
                    });
                    out.push(Step::Nest {
                        comment,
                        body: folds,
                    });
                }
                Some(Rewrite::Jam { outer, p, nodes }) => {
                    let rows = rows(k, &nodes, p);
                    let mut body = wrap(&outer, jam(&nodes, p, &rows));
                    no_jam(k, &mut body);
                    out.push(Step::Nest { comment, body });
                }
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
    /// The target loop `p` moved into `nodes` (the body inside the target loops, the store
    /// last); `outer` are the other target loops.
    Jam {
        outer: Vec<Bound>,
        p: Bound,
        nodes: Vec<Node>,
    },
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
    let mut accesses = strides.clone();
    accesses.push(target.clone());
    if let Some(r) = outward(&free, inner, value, *buf, index, &load_cost, &accesses) {
        return Some(r);
    }
    // A target loop into the reductions: the closest one (the innermost of equals), if it
    // walks memory more closely than every innermost reduction loop.
    let (pi, p_cost) = free
        .iter()
        .enumerate()
        .map(|(i, f)| (i, load_cost(f.var)))
        .min_by_key(|&(i, c)| (c, std::cmp::Reverse(i)))?;
    let mut innermost = Vec::new();
    innermost_loops(inner, &mut innermost);
    if innermost.iter().any(|&l| load_cost(l) <= p_cost) {
        return None;
    }
    let mut outer = free.clone();
    let p = outer.remove(pi);
    Some(Rewrite::Jam {
        outer,
        p,
        nodes: nodes.to_vec(),
    })
}

/// The labels of the loops in `ns` that contain no loop.
fn innermost_loops(ns: &[Node], out: &mut Vec<Label>) {
    for n in ns {
        if let Node::Loop { var, body, .. } = n {
            if body.iter().any(|b| matches!(b, Node::Loop { .. })) {
                innermost_loops(body, out);
            } else {
                out.push(*var);
            }
        }
    }
}

/// A row buffer (temporary, `extent(p)` cells of the accumulator's element type, in the
/// workspace) for every accumulator of `nodes`, by accumulator number.
fn rows(k: &mut Kernel, nodes: &[Node], p: Bound) -> BTreeMap<u32, BufId> {
    let mut accs = Vec::new();
    walk_nodes(nodes, &mut |v| {
        if let Visit::Node(Node::AccInit { acc, elem, .. }) = v {
            accs.push((*acc, *elem));
        }
    });
    let mut rows = BTreeMap::new();
    for (acc, elem) in accs {
        let n = k
            .buffers
            .iter()
            .filter(|b| b.c_name.starts_with("teil_row"))
            .count();
        k.buffers.push(Buffer {
            var: None,
            c_name: format!("teil_row{n}"),
            role: Role::Temp,
            logical: vec![p.extent],
            padded: vec![p.extent],
            offset: k.workspace,
            elem,
        });
        k.workspace += p.extent.next_multiple_of(8);
        rows.insert(acc, BufId(k.buffers.len() - 1));
    }
    rows
}

/// `nodes` with the loop `p` inside every accumulator node and the store, and the accumulators
/// in their rows.
fn jam(nodes: &[Node], p: Bound, rows: &BTreeMap<u32, BufId>) -> Vec<Node> {
    let cell = |acc: &u32| (rows[acc], vec![Ix::Var(p.var)]);
    nodes
        .iter()
        .map(|n| match n {
            Node::Loop {
                var,
                start,
                extent,
                logical,
                body,
            } => Node::Loop {
                var: *var,
                start: *start,
                extent: *extent,
                logical: *logical,
                body: jam(body, p, rows),
            },
            Node::AccInit { acc, op, .. } => {
                let (buf, index) = cell(acc);
                p.wrap(vec![Node::Store {
                    buf,
                    index,
                    value: Val::Lit(identity(*op)),
                }])
            }
            Node::AccUpdate { acc, op, value } => {
                let (buf, index) = cell(acc);
                p.wrap(vec![Node::Fold {
                    buf,
                    index,
                    op: *op,
                    value: in_rows(value, p.var, rows),
                }])
            }
            Node::Store { buf, index, value } => p.wrap(vec![Node::Store {
                buf: *buf,
                index: index.clone(),
                value: in_rows(value, p.var, rows),
            }]),
            Node::NoJam => Node::NoJam,
            Node::JamRows(rows) => Node::JamRows(*rows),
            // Lane folds come after this pass; one would be jammed as the loop it means.
            Node::LaneFold(l) => jam(&[l.nest()], p, rows).remove(0),
            Node::Fold {
                buf,
                index,
                op,
                value,
            } => p.wrap(vec![Node::Fold {
                buf: *buf,
                index: index.clone(),
                op: *op,
                value: in_rows(value, p.var, rows),
            }]),
        })
        .collect()
}

/// `v` with every accumulator read from its row at `p`.
fn in_rows(v: &Val, p: Label, rows: &BTreeMap<u32, BufId>) -> Val {
    match v {
        Val::Acc(a) => Val::Load(rows[a], vec![Ix::Var(p)]),
        Val::Bin(op, a, b) => Val::Bin(
            *op,
            Box::new(in_rows(a, p, rows)),
            Box::new(in_rows(b, p, rows)),
        ),
        Val::Func(f, a) => Val::Func(*f, Box::new(in_rows(a, p, rows))),
        Val::Func2(f, a, b) => Val::Func2(
            *f,
            Box::new(in_rows(a, p, rows)),
            Box::new(in_rows(b, p, rows)),
        ),
        Val::Convert(t, a) => Val::Convert(*t, Box::new(in_rows(a, p, rows))),
        Val::Load(..) | Val::Lit(_) | Val::Undefined => v.clone(),
    }
}

/// Rows of a fold over rows a page or more apart ([`Node::JamRows`]) folded per pass over the
/// cells. Measured on `Σ_i x[i] A[i, j]` over 4096 rows of 4096 doubles (PERFORMANCE.md,
/// "Jammed folds"), with GCC kept from jamming further: 2 rows (what GCC's own unroll-and-jam
/// chose) 3.9 ms, 3 rows 3.3, 4 rows 3.1, 6 rows 3.3, 8 rows 3.6.
pub const JAM_ROWS: u64 = 4;

/// Starts with [`Node::NoJam`] every loop of `ns` whose body is one innermost loop that folds
/// into cells not indexed by the outer loop's label (the reduction loop of either rewrite
/// around the target loop it moved past, the loop pair GCC's unroll-and-jam acts on), where
/// the terms it folds lie at most [`PAGE`] doubles apart from one iteration to the next. The
/// jam (on at `-O3`) would fold two or more iterations in one pass over the cells, reading as
/// many rows of one page at once, which the hardware prefetcher of the machine of
/// PERFORMANCE.md streams at less than half the speed of one row after another (`redmax_2`:
/// 8.0 ms jammed, 2.5 ms not). Rows a page or more apart are separate streams, and there the
/// jam pays: it reads and writes the cells once per two terms (a standalone sum of 16384 rows
/// of 4096 doubles: 4.7 ms one row at a time, 3.0 ms two at a time). So such a loop with the
/// shape [`jam_shape`] starts with [`Node::JamRows`] instead, and the printer folds
/// [`JAM_ROWS`] of its rows per pass over the cells itself, not as the compiler's heuristics
/// would — where every term walks the inner loop along a row, as measured. A term gathered
/// across rows (stride above 1 along the inner loop) makes each folded row another gather:
/// `random_25` of `--random 50 --seed 1`, `in1` strided 2058 along the inner loop, was 1.18x
/// slower so than with the loops as they were (issue 43).
fn no_jam(k: &Kernel, ns: &mut [Node]) {
    for n in ns {
        let Node::Loop {
            var,
            start,
            extent,
            body,
            ..
        } = n
        else {
            continue;
        };
        no_jam(k, body);
        let [Node::Loop {
            var: inner_var,
            body: inner,
            ..
        }] = body.as_slice()
        else {
            continue;
        };
        let mut folds = false;
        let mut near = true;
        // Whether every term walks the inner loop along a row (unit stride, or not at all).
        let mut along_rows = true;
        for n in inner {
            match n {
                Node::Loop { .. } => near = false,
                Node::Fold { index, value, .. } if !index.contains(&Ix::Var(*var)) => {
                    folds = true;
                    walk_val(value, &mut |x| {
                        if let Visit::Load(b, idx) = x {
                            let a = Affine::of(k, b, idx);
                            near &= a.get(*var) <= PAGE;
                            along_rows &= a.get(*inner_var) <= 1;
                        }
                    });
                }
                _ => {}
            }
        }
        if folds && near {
            body.insert(0, Node::NoJam);
        } else if folds && along_rows && jam_shape(*var, body) && *extent - *start >= JAM_ROWS {
            body.insert(0, Node::JamRows(JAM_ROWS));
        }
    }
}

/// The reduction-outward rewrite of `acc = id; for k { acc = acc ⊙ v }; T[..] = acc`.
fn outward(
    free: &[Bound],
    inner: &[Node],
    value: &Val,
    buf: BufId,
    index: &[Ix],
    load_cost: &dyn Fn(Label) -> u64,
    accesses: &[Affine],
) -> Option<Rewrite> {
    let target = accesses.last()?;
    let [Node::AccInit { acc, op, .. }, Node::Loop {
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
    let mut inside = free.iter().rev().take_while(|f| cost(f) < k_cost).count();
    if inside == 0 {
        return None;
    }
    // And the loops that continue them into one dense block of cells (`Y[i, j]` over rows
    // `X[k, i, j]`: `i` strides a whole row of `j`): with them inside, each term walks every
    // access as one run of memory from the block's first cell to its last, a single stream,
    // while the block (at most BLOCK cells) waits in cache for the next term.
    while inside < free.len() {
        let block = &free[free.len() - inside - 1..];
        let cells = block.iter().try_fold(1u64, |n, f| n.checked_mul(f.extent));
        if cells.is_none_or(|n| n > BLOCK) || !accesses.iter().all(|s| dense(s, block)) {
            break;
        }
        inside += 1;
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

/// Whether the access `s` walks the loops `block` (outermost first) as one dense row-major
/// run (each loop strides the whole extent of the loops inside it), or does not move with them
/// at all.
fn dense(s: &Affine, block: &[Bound]) -> bool {
    if block.iter().all(|f| s.get(f.var) == 0) {
        return true;
    }
    let mut stride = 1u64;
    for f in block.iter().rev() {
        if s.get(f.var) != stride {
            return false;
        }
        stride = stride.saturating_mul(f.extent);
    }
    true
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
             nest // y = (x # A) .[1 2]\n  for l1 in 0..80\n    no jam\n    for l0 in 0..7\n      \
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
             no jam\n      for l1 in 0..24\n        Y[l0, l1] = Max(Y[l0, l1], X[l0, l2, l1])\n"
        );
    }

    #[test]
    fn a_reduction_over_a_dense_block_of_target_loops_moves_outside_all_of_them() {
        // Y[i, j] = max_k X[k, i, j]: `i` strides a whole row of `j` in X and in Y, so `k`
        // moves outside both and every term is one run through a plane of X.
        let src = "input var X : [7 5 24]\noutput var Y : [5 24]\nY = redmax 1 X\n";
        let (_, after) = steps(src, 1);
        assert_eq!(
            after,
            "nest // identities for: Y = redmax 1 X\n  for l0 in 0..5\n    for l1 in 0..24\n      \
             Y[l0, l1] = -inf\nnest // Y = redmax 1 X\n  for l2 in 0..7\n    for l0 in 0..5\n      \
             for l1 in 0..24\n        Y[l0, l1] = Max(Y[l0, l1], X[l2, l0, l1])\n"
        );
        // A block over BLOCK cells keeps `k` between the target loops (a block that is not
        // dense does too: the next test).
        let src = "input var X : [3 300 256]\noutput var Y : [300 256]\nY = redmax 1 X\n";
        let (_, after) = steps(src, 1);
        assert!(
            after.contains("nest // Y = redmax 1 X\n  for l0 in 0..300\n    for l2 in 0..3\n"),
            "{after}"
        );
    }

    #[test]
    fn a_maximum_over_padded_target_loops_keeps_its_partial_results_out_of_the_target() {
        // At M = 4 the target loop of `redmax 1 A` runs over padding (the maximum of zeros is
        // zero), where the identity -inf must never stand: the partial maxima go to a row.
        let src = "input var A : [64 9]\noutput var m : [9]\nm = redmax 1 A\n";
        let (before, after) = steps(src, 4);
        assert!(before.contains("(logical 9)"), "{before}");
        assert_eq!(
            after,
            "nest // m = redmax 1 A\n  for l0 in 0..12 (logical 9)\n    teil_row0[l0] = -inf\n  \
             for l1 in 0..64\n    no jam\n    for l0 in 0..12 (logical 9)\n      \
             teil_row0[l0] = Max(teil_row0[l0], A[l1, l0])\n  for l0 in 0..12 (logical 9)\n    \
             m[l0] = teil_row0[l0]\n"
        );
        // A sum may: its identity -0.0 is a zero.
        let src = "input var A : [64 9]\noutput var s : [9]\ns = red+ 1 A\n";
        let (before, after) = steps(src, 4);
        assert!(before.contains("(logical 9)"), "{before}");
        assert!(after.contains("s[l0] = Sum(s[l0], A[l1, l0])"), "{after}");
    }

    #[test]
    fn reductions_along_unit_stride_are_left_alone() {
        // The loop order of a maximum along unit stride stays; its reduction loop becomes a
        // lane fold (`opt::lanes`, which runs under the same tuning switch).
        let (before, after) = steps(
            "input var X : [5 9 24]\noutput var Y : [5 9]\nY = redmax 3 X\n",
            1,
        );
        assert_eq!(
            after,
            before.replace("for l2 in 0..24", "lanes for l2 in 0..24"),
            "{before}"
        );
        assert_ne!(before, after);
        for src in [
            "input var A : [21 40]\ninput var x : [40]\noutput var y : [21]\ny = (A # x) .[2 3]\n",
            // The row sums go to a temporary as dot products (`opt::split`, `opt::contract`),
            // then one sum along it.
            "input var A : [30 50]\noutput var t : []\nt = red+ 1 (red+ 2 A)\n",
            // Below MIN_WORK.
            "input var A : [3 5]\ninput var B : [5 7]\noutput var C : [3 7]\nC = (A # B) .[2 3]\n",
        ] {
            let (before, after) = steps(src, 1);
            assert_eq!(before, after, "{src}");
        }
    }

    #[test]
    fn nested_sums_get_the_target_loop_with_unit_stride_loads_inside_the_reductions() {
        // C[d,f,c,e] = Σ_b Σ_a A[a,b,c,d] B[a,e,b,f]: the sum over `a` strides 4 · 5 · 6 in A;
        // `f` (l1, unit stride in B; `d` too in A, `f` is the innermost of equals) moves inside
        // every node, and both accumulators become rows of 8 cells.
        let src = "input var A : [3 4 5 6]\ninput var B : [3 7 4 8]\noutput var C : [6 8 5 7]\n\
                   C = (A # B) .[1 5] .[1 5] ^[1 2] ^[2 4] ^[3 4]\n";
        // (At these sizes the contraction pass would take the nest as a packed two-level
        // sum; below its threshold, or with splitting, the interchange pass sees this nest.)
        let no_split = Tuning {
            split: false,
            contract: false,
            ..Tuning::default()
        };
        let (before, after) = steps_with(src, 1, no_split);
        assert_eq!(
            before,
            "nest // C = (A # B) .[1 5] .[1 5] ^[1 2] ^[2 4] ^[3 4]\n  for l0 in 0..6\n    \
             for l1 in 0..8\n      for l2 in 0..5\n        for l3 in 0..7\n          \
             acc0 = identity of Sum\n          for l4 in 0..4\n            \
             acc1 = identity of Sum\n            for l5 in 0..3\n              \
             acc1 = Sum(acc1, (A[l5, l4, l2, l0] * B[l5, l3, l4, l1]))\n            \
             acc0 = Sum(acc0, acc1)\n          C[l0, l1, l2, l3] = acc0\n"
        );
        assert_eq!(
            after,
            "nest // C = (A # B) .[1 5] .[1 5] ^[1 2] ^[2 4] ^[3 4]\n  for l0 in 0..6\n    \
             for l2 in 0..5\n      for l3 in 0..7\n        for l1 in 0..8\n          \
             teil_row0[l1] = -0.0\n        for l4 in 0..4\n          for l1 in 0..8\n            \
             teil_row1[l1] = -0.0\n          for l5 in 0..3\n            no jam\n            for l1 in 0..8\n              \
             teil_row1[l1] = Sum(teil_row1[l1], (A[l5, l4, l2, l0] * B[l5, l3, l4, l1]))\n          \
             for l1 in 0..8\n            teil_row0[l1] = Sum(teil_row0[l1], teil_row1[l1])\n        \
             for l1 in 0..8\n          C[l0, l1, l2, l3] = teil_row0[l1]\n"
        );
    }

    #[test]
    fn a_maximum_over_padded_target_loops_is_jammed_instead() {
        // Y[i, k] = max_j X[i, j, k] at M = 4: the target runs over padding, so the cells may
        // not hold -inf; the row of `k` holds it instead, and the store writes the maxima of
        // zeros (zeros) into the padding.
        let src = "input var X : [5 9 22]\noutput var Y : [5 22]\nY = redmax 2 X\n";
        let (_, after) = steps(src, 4);
        assert!(
            after.contains("for l1 in 0..24 (logical 22)\n      teil_row0[l1] = -inf"),
            "{after}"
        );
        assert!(after.contains("Y[l0, l1] = teil_row0[l1]"), "{after}");
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
