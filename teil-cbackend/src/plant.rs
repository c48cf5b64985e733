//! Planted bugs: deliberate miscompilations, so that the fuzzer (and the translation validator)
//! can be shown to find them (issue 5, "the harness must be able to fail").
//!
//! Each [`Bug`] is a rewrite of a lowered [`Kernel`] ([`apply`]): the lowering itself is
//! untouched, and nothing in the backend applies a bug on its own. Only the fuzzing campaign
//! (`teil_fuzz::campaign::Config::plant`, the hidden `teil fuzz --plant BUG` flag) and the tests
//! do. The rewrites imitate mistakes a backend author could make; every rewritten kernel still
//! accesses memory only inside its (padded) buffers, so a planted bug shows up as wrong values
//! or non-zero padding, never as a crash.
//!
//! | bug | rewrite |
//! |---|---|
//! | [`Bug::OffByOne`] | every reduction loop (a loop directly updating an accumulator, a [`Node::LaneFold`], or one around a fold of a cell it does not index) over an extent `n ≥ 2` stops at `n - 1` |
//! | [`Bug::PaddingNotRezeroed`] | target loops over a broadcast dimension (one the stored value does not depend on: an `expa`) run over the padded extent, and the re-zeroing nest after a broadcast innermost loop is dropped |
//! | [`Bug::AliasingIgnored`] | a statement that reads its target at other indices is computed in place: the alias temporary becomes the target, the copy-back is dropped |
//! | [`Bug::RedmaxPadded`] | `redmax` loops (lane folds included) run over the padded extent, folding padding zeros into the maximum |
//! | [`Bug::WrongStride`] | loads from input parameters of rank ≥ 2 use the row-major strides of the logical shape instead of the padded one (through an extra [`Buffer`] with the parameter's C name and `padded == logical`, which is not in [`Kernel::params`]) |
//! | [`Bug::PanelEdge`] | packed contraction steps compute one row fewer (`m - 1`): the last row panel's edge is wrong |
//! | [`Bug::KBound`] | contraction steps (packed and dot) sum one term fewer: the micro-kernel's `k` loop stops at `K - 1` |
//! | [`Bug::TileEdge`] | tiled steps stop their innermost tiled label one short of its logical extent: the edge tile is wrong |
//! | [`Bug::FoldOverwrite`] | every [`Node::Fold`] (a reduction the interchange pass moved outward) stores its value instead of folding it into the cell: each cell keeps only the last term |
//! | [`Bug::OuterBound`] | contraction steps of two-level sums ([`Contraction::outer`]) add one inner sum fewer: the outer sum stops at `O - 1` |
//!
//! The first five rewrite plain nests and, where the same mistake applies, the kernel forms the
//! optimisation passes chose (a contraction step's `K` is its reduction loop); `PanelEdge`,
//! `KBound` and `TileEdge` rewrite only those kernel forms ([`Step::Contract`],
//! [`Step::Tiled`]), `FoldOverwrite` only interchanged nests, and `OuterBound` only two-level
//! contraction steps. With `M = 1` (no padding) only [`Bug::OffByOne`],
//! [`Bug::AliasingIgnored`] and the last five change a kernel.

use crate::ir::*;
use teil::ast::RedOp;

/// A deliberate miscompilation (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bug {
    OffByOne,
    PaddingNotRezeroed,
    AliasingIgnored,
    RedmaxPadded,
    WrongStride,
    PanelEdge,
    KBound,
    TileEdge,
    FoldOverwrite,
    OuterBound,
}

impl Bug {
    pub const ALL: [Bug; 10] = [
        Bug::OffByOne,
        Bug::PaddingNotRezeroed,
        Bug::AliasingIgnored,
        Bug::RedmaxPadded,
        Bug::WrongStride,
        Bug::PanelEdge,
        Bug::KBound,
        Bug::TileEdge,
        Bug::FoldOverwrite,
        Bug::OuterBound,
    ];

    /// The name used on the command line (`--plant NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Bug::OffByOne => "off-by-one",
            Bug::PaddingNotRezeroed => "no-rezero",
            Bug::AliasingIgnored => "alias",
            Bug::RedmaxPadded => "redmax-padding",
            Bug::WrongStride => "wrong-stride",
            Bug::PanelEdge => "panel-edge",
            Bug::KBound => "k-bound",
            Bug::TileEdge => "tile-edge",
            Bug::FoldOverwrite => "fold-overwrite",
            Bug::OuterBound => "outer-bound",
        }
    }

    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }

    /// One line saying what the bug does.
    pub fn describe(self) -> &'static str {
        match self {
            Bug::OffByOne => "reduction loops stop one iteration early",
            Bug::PaddingNotRezeroed => "padding written by broadcast (expa) loops is not re-zeroed",
            Bug::AliasingIgnored => {
                "statements reading their target at other indices are computed in place"
            }
            Bug::RedmaxPadded => "redmax loops run over padded extents",
            Bug::WrongStride => "input parameters are read with their logical strides",
            Bug::PanelEdge => "packed contraction kernels compute one row fewer",
            Bug::KBound => "contraction kernels sum one term fewer",
            Bug::TileEdge => "tiled nests stop one short along their innermost label",
            Bug::FoldOverwrite => "interchanged reductions overwrite their partial results",
            Bug::OuterBound => "two-level contraction kernels add one inner sum fewer",
        }
    }
}

impl std::fmt::Display for Bug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Plants `bug` in `k`. Returns whether the kernel changed (a kernel without the construct the
/// bug needs stays as it was).
pub fn apply(k: &mut Kernel, bug: Bug) -> bool {
    match bug {
        Bug::OffByOne => reduction_loops(k, &|_, n| (n >= 2).then(|| n - 1)),
        Bug::RedmaxPadded => {
            let pad = k.pad;
            reduction_loops(k, &|op, n| {
                let padded = n.checked_next_multiple_of(pad).unwrap_or(n);
                (op == RedOp::Max && padded > n).then_some(padded)
            })
        }
        Bug::PaddingNotRezeroed => no_rezero(k),
        Bug::FoldOverwrite => fold_overwrite(k),
        Bug::AliasingIgnored => alias(k),
        Bug::WrongStride => wrong_stride(k),
        Bug::PanelEdge => kernel_forms(k, &mut |s| match s {
            Step::Contract {
                c:
                    Contraction {
                        strategy: Strategy::Packed { m, .. },
                        ..
                    },
                ..
            } if *m >= 2 => {
                *m -= 1;
                true
            }
            _ => false,
        }),
        Bug::KBound => kernel_forms(k, &mut |s| match s {
            Step::Contract { c, .. } if c.k.extent >= 2 => {
                c.k.extent -= 1;
                true
            }
            _ => false,
        }),
        Bug::OuterBound => kernel_forms(k, &mut |s| match s {
            Step::Contract {
                c: Contraction { outer: Some(o), .. },
                ..
            } if o.extent >= 2 => {
                o.extent -= 1;
                true
            }
            _ => false,
        }),
        Bug::TileEdge => kernel_forms(k, &mut |s| match s {
            Step::Tiled { t, .. } => {
                let p = t.p;
                match t.loops.iter_mut().find(|l| l.var == p) {
                    Some(l) if l.logical >= 2 => {
                        l.extent = l.logical - 1;
                        true
                    }
                    _ => false,
                }
            }
            _ => false,
        }),
    }
}

/// Every fold `T[..] = T[..] op v` becomes the store `T[..] = v`.
fn fold_overwrite(k: &mut Kernel) -> bool {
    fn go(ns: &mut [Node], changed: &mut bool) {
        for n in ns {
            match n {
                Node::Loop { body, .. } => go(body, changed),
                Node::Fold {
                    buf, index, value, ..
                } => {
                    *n = Node::Store {
                        buf: *buf,
                        index: std::mem::take(index),
                        value: std::mem::replace(value, Val::Undefined),
                    };
                    *changed = true;
                }
                Node::AccInit { .. }
                | Node::AccUpdate { .. }
                | Node::LaneFold(_)
                | Node::Store { .. }
                | Node::NoJam
                | Node::JamRows(_) => {}
            }
        }
    }
    let mut changed = false;
    for s in &mut k.steps {
        if let Step::Nest { body, .. } = s {
            go(body, &mut changed);
        }
    }
    changed
}

/// Applies `f` to every step; whether it changed any.
fn kernel_forms(k: &mut Kernel, f: &mut dyn FnMut(&mut Step) -> bool) -> bool {
    k.steps.iter_mut().fold(false, |changed, s| f(s) | changed)
}

/// Sets the extent of every reduction loop to `new(op, extent)` where that is `Some`.
fn reduction_loops(k: &mut Kernel, new: &dyn Fn(RedOp, u64) -> Option<u64>) -> bool {
    fn go(ns: &mut [Node], new: &dyn Fn(RedOp, u64) -> Option<u64>, changed: &mut bool) {
        for n in ns {
            // A lane fold is a reduction loop printed in lanes: the same mistake applies.
            if let Node::LaneFold(l) = n {
                if let Some(e) = new(l.op, l.extent) {
                    l.extent = e;
                    *changed = true;
                }
            }
            if let Node::Loop {
                var,
                start,
                extent,
                body,
                ..
            } = n
            {
                let op = body
                    .iter()
                    .find_map(|b| match b {
                        Node::AccUpdate { op, .. } => Some(*op),
                        _ => None,
                    })
                    .or_else(|| folded_over(body, *var));
                if let Some(e) = op.and_then(|op| new(op, *extent)).filter(|_| *start == 0) {
                    *extent = e;
                    *changed = true;
                }
                go(body, new, changed);
            }
        }
    }
    let mut changed = false;
    for s in &mut k.steps {
        match s {
            Step::Nest { body, .. } => go(body, new, &mut changed),
            // A contraction step's terms are its reduction loop.
            Step::Contract { c, .. } => {
                if let Some(e) = new(RedOp::Sum, c.k.extent) {
                    c.k.extent = e;
                    changed = true;
                }
            }
            Step::Copy { .. } | Step::Tiled { .. } => {}
        }
    }
    changed
}

/// The operator of a fold in `ns` whose cell does not depend on `l`: `l` is then a reduction
/// loop an interchanged nest runs outside target loops.
fn folded_over(ns: &[Node], l: Label) -> Option<RedOp> {
    let mut op = None;
    walk_nodes(ns, &mut |v| {
        if let Visit::Node(Node::Fold {
            index, op: fold, ..
        }) = v
        {
            if !index.contains(&Ix::Var(l)) {
                op = Some(*fold);
            }
        }
    });
    op
}

fn val_uses(v: &Val, l: Label) -> bool {
    let mut uses = false;
    walk_val(v, &mut |x| {
        if let Visit::Load(_, idx) = x {
            uses |= idx.contains(&Ix::Var(l));
        }
    });
    uses
}

/// Whether any value computed in `ns` (loads of stores and accumulator updates) uses `l`.
fn values_use(ns: &[Node], l: Label) -> bool {
    let mut uses = false;
    walk_nodes(ns, &mut |v| {
        if let Visit::Load(_, idx) = v {
            uses |= idx.contains(&Ix::Var(l));
        }
    });
    uses
}

/// Whether some store in `ns` is indexed by `l`.
fn stores_at(ns: &[Node], l: Label) -> bool {
    let mut at = false;
    walk_nodes(ns, &mut |v| {
        if let Visit::Store(_, idx) = v {
            at |= idx.contains(&Ix::Var(l));
        }
    });
    at
}

fn stores_only_undefined(ns: &[Node]) -> bool {
    let mut only = true;
    walk_nodes(ns, &mut |v| match v {
        Visit::Node(Node::Store { value, .. }) => only &= *value == Val::Undefined,
        Visit::Node(
            Node::AccInit { .. } | Node::AccUpdate { .. } | Node::Fold { .. } | Node::LaneFold(_),
        ) => only = false,
        _ => {}
    });
    only
}

/// The re-zeroing nest the lowering emits after a nest whose innermost loop it padded: stores of
/// the literal zero, with a loop that starts inside the padding.
fn is_rezero(s: &Step) -> bool {
    fn go(ns: &[Node], padding_loop: bool) -> bool {
        ns.iter().all(|n| match n {
            Node::Loop { start, body, .. } => go(body, padding_loop || *start > 0),
            Node::Store { value, .. } => padding_loop && *value == Val::Lit(0.0),
            Node::AccInit { .. } | Node::AccUpdate { .. } | Node::Fold { .. } => false,
            Node::LaneFold(_) => false,
            Node::NoJam | Node::JamRows(_) => true,
        })
    }
    match s {
        Step::Nest { body, .. } => !body.is_empty() && go(body, false),
        Step::Copy { .. } | Step::Contract { .. } | Step::Tiled { .. } => false,
    }
}

/// The label of the innermost target loop of a nest, if the nest is a perfect nest of target
/// loops around its body.
fn innermost_target(ns: &[Node]) -> Option<Label> {
    let mut cur = ns;
    let mut last = None;
    loop {
        match cur {
            [Node::Loop { var, body, .. }] if stores_at(body, *var) => {
                last = Some(*var);
                cur = body;
            }
            _ => return last,
        }
    }
}

fn no_rezero(k: &mut Kernel) -> bool {
    fn go(ns: &mut [Node], pad: u64, changed: &mut bool) {
        for n in ns {
            if let Node::Loop {
                var,
                start,
                extent,
                logical,
                body,
            } = n
            {
                let padded = logical.checked_next_multiple_of(pad).unwrap_or(*logical);
                if *start == 0
                    && *extent < padded
                    && stores_at(body, *var)
                    && !values_use(body, *var)
                {
                    *extent = padded;
                    *changed = true;
                }
                go(body, pad, changed);
            }
        }
    }
    let mut changed = false;
    let pad = k.pad;
    let mut keep = vec![true; k.steps.len()];
    for i in 0..k.steps.len() {
        if is_rezero(&k.steps[i]) {
            continue;
        }
        if let Step::Tiled { t, .. } = &mut k.steps[i] {
            // The same rewrite on the tiled nest's (perfect) loops.
            if t.value == Val::Undefined {
                continue;
            }
            for l in &mut t.loops {
                let padded = l.logical.checked_next_multiple_of(pad).unwrap_or(l.logical);
                if l.extent < padded
                    && t.store.index.contains(&Ix::Var(l.var))
                    && !val_uses(&t.value, l.var)
                {
                    l.extent = padded;
                    changed = true;
                }
            }
            let broadcast_inner = !val_uses(&t.value, t.p);
            if broadcast_inner && k.steps.get(i + 1).is_some_and(is_rezero) {
                keep[i + 1] = false;
                changed = true;
            }
            continue;
        }
        let Step::Nest { body, .. } = &mut k.steps[i] else {
            continue;
        };
        // Filling a variable with `•` is not a broadcast of a computed value.
        if stores_only_undefined(body) {
            continue;
        }
        let broadcast_inner =
            innermost_target(body).is_some_and(|l| stores_at(body, l) && !values_use(body, l));
        go(body, pad, &mut changed);
        if broadcast_inner && k.steps.get(i + 1).is_some_and(is_rezero) {
            keep[i + 1] = false;
            changed = true;
        }
    }
    let mut it = keep.into_iter();
    k.steps.retain(|_| it.next().unwrap_or(true));
    changed
}

/// Every read (and, with `stores`, every write) of `from` reads (writes) `to` instead.
/// Copies are left alone (they are whole-buffer moves the bugs do not concern).
fn rename(s: &mut Step, from: BufId, to: BufId, stores: bool) {
    if matches!(s, Step::Copy { .. }) {
        return;
    }
    walk_buffers_mut(s, &mut |b, store| {
        if *b == from && (stores || !store) {
            *b = to;
        }
    });
}

/// A contraction step whose target became an operand, or a tiled step that now reads its
/// target at other cells, is no longer one (the pass would not have chosen it): it goes back
/// to the plain nest it means, as the mistaken backend would have printed it.
fn demote_if_aliased(s: &mut Step) {
    let plain = match s {
        Step::Contract { comment, c } if c.reads(c.target.buf) => Some((comment.clone(), c.nest())),
        Step::Tiled { comment, t } => {
            let mut other = false;
            walk_val(&t.value, &mut |v| {
                if let Visit::Load(b, idx) = v {
                    other |= b == t.store.buf && idx != t.store.index.as_slice();
                }
            });
            other.then(|| (comment.clone(), t.nest()))
        }
        _ => None,
    };
    if let Some((comment, body)) = plain {
        *s = Step::Nest { comment, body };
    }
}

fn alias(k: &mut Kernel) -> bool {
    let mut changed = false;
    let mut i = 0;
    while i < k.steps.len() {
        if let Step::Copy { dst, src, .. } = k.steps[i] {
            if k.buffer(src).role == Role::Temp {
                for s in &mut k.steps[..i] {
                    rename(s, src, dst, true);
                    demote_if_aliased(s);
                }
                k.steps.remove(i);
                changed = true;
                continue;
            }
        }
        i += 1;
    }
    changed
}

fn wrong_stride(k: &mut Kernel) -> bool {
    let mut changed = false;
    for p in k.params.clone() {
        let b = k.buffer(p).clone();
        let input = matches!(b.role, Role::Param { input: true, .. });
        if !input || b.logical.len() < 2 || b.strides() == logical_strides(&b.logical) {
            continue;
        }
        k.buffers.push(Buffer {
            padded: b.logical.clone(),
            ..b
        });
        let fake = BufId(k.buffers.len() - 1);
        for s in &mut k.steps {
            rename(s, p, fake, false);
        }
        changed = true;
    }
    changed
}

fn logical_strides(logical: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; logical.len()];
    for d in (0..logical.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * logical[d + 1];
    }
    s
}
