//! One step of a kernel in C: a copy, a plain loop nest (with its OpenMP pragmas), a tiled
//! step, or a contraction step, which `contract` prints in its kernel form.

use super::contract;
use super::expr::{comment_text, fused, literal, multiply_add};
use super::writer::Writer;
use crate::ir::*;
use std::collections::BTreeMap;
use teil::ast::{ElemType, RedOp};

/// The state of printing one loop nest: the C names of its labels so far.
pub(super) struct Printer<'k> {
    pub(super) k: &'k Kernel,
    pub(super) names: BTreeMap<Label, String>,
    /// The loop printed with `#pragma omp for schedule(static) nowait` (inside a parallel
    /// region the nest opens: [`shared_cells`]).
    omp_for: Option<Label>,
    /// The element type of each accumulator declared so far in the nest.
    accs: BTreeMap<u32, ElemType>,
}

pub(super) fn step(k: &Kernel, s: &Step, w: &mut Writer) {
    let mut p = Printer {
        k,
        names: BTreeMap::new(),
        omp_for: None,
        accs: BTreeMap::new(),
    };
    match s {
        Step::Copy { comment, dst, src } => {
            w.line(format!("/* {} */", comment_text(comment)));
            if k.openmp {
                w.directive("#pragma omp parallel for");
            }
            w.block(
                format!(
                    "for (long long k0 = 0; k0 < {}; k0++)",
                    k.buffer(*src).padded_len()
                ),
                |w| {
                    w.line(format!(
                        "{}[k0] = {}[k0];",
                        k.buffer(*dst).c_name,
                        k.buffer(*src).c_name
                    ));
                },
            );
        }
        Step::Contract { comment, c } => {
            w.line(format!("/* {} */", comment_text(comment)));
            w.block("", |w| contract::print(k, c, w));
        }
        Step::Tiled { comment, t } => {
            w.line(format!("/* {} */", comment_text(comment)));
            if k.openmp {
                w.directive("#pragma omp parallel for");
            }
            p.tiled(w, t);
        }
        Step::Nest { comment, body } => {
            w.line(format!("/* {} */", comment_text(comment)));
            // Each iteration of a nest's outermost target loop writes its own cells and reads
            // the target only at the cell it writes (spec/padding.md), so the iterations can
            // run in parallel; an interchanged nest's outermost loop may be a reduction loop,
            // whose iterations fold into the same cells, or its accumulators rows shared by
            // every iteration: then the loop does not index every cell written.
            let parallel_for = k.openmp
                && matches!(body.as_slice(), [Node::Loop { var, .. }] if stores_at(body, *var));
            if !parallel_for {
                p.omp_for = shared_cells(body).filter(|_| k.openmp);
            }
            let mut nest = |w: &mut Writer| {
                if parallel_for {
                    w.directive("#pragma omp parallel for");
                } else if p.omp_for.is_some() {
                    w.directive("#pragma omp parallel");
                }
                p.nodes(w, body);
            };
            // A scalar target has no loop around its accumulators: give them a block of
            // their own so that the next nest can reuse their names.
            if body.iter().any(|n| matches!(n, Node::AccInit { .. })) {
                w.block("", nest);
            } else {
                nest(w);
            }
        }
    }
}

impl Printer<'_> {
    /// A new C name for the loop over `l` (`i0`, `i1`, ... in order of appearance).
    pub(super) fn fresh(&mut self, l: Label) -> String {
        let name = format!("i{}", self.names.len());
        self.names.insert(l, name.clone());
        name
    }

    /// A tiled step: the loops in their order with the two tiled labels stepping over blocks,
    /// then the point loops of `q` and `p`, then the store ([`Tiled`]).
    fn tiled(&mut self, w: &mut Writer, t: &Tiled) {
        self.tiled_loops(w, t, &t.loops, &mut BTreeMap::new());
    }

    /// The loops `loops` of `t` and what they enclose; `blocks` names the block variables
    /// of the tiled labels opened so far, with their extents.
    fn tiled_loops(
        &mut self,
        w: &mut Writer,
        t: &Tiled,
        loops: &[Bound],
        blocks: &mut BTreeMap<Label, (String, u64)>,
    ) {
        let Some((
            &Bound {
                var: l,
                extent,
                logical,
            },
            rest,
        )) = loops.split_first()
        else {
            return self.tiled_points(w, t, &[t.q, t.p], blocks);
        };
        let tile = t.block;
        let name = self.fresh(l);
        let note = if extent != logical {
            format!("/* padded; logical extent {logical} */")
        } else {
            String::new()
        };
        let header = if l == t.p || l == t.q {
            let b = format!("teil_b{}", blocks.len());
            blocks.insert(l, (b.clone(), extent));
            format!("for (long long {b} = 0; {b} < {extent}; {b} += {tile})")
        } else {
            format!("for (long long {name} = 0; {name} < {extent}; {name}++)")
        };
        w.block_noted(header, note, |w| self.tiled_loops(w, t, rest, blocks));
    }

    /// The point loops of the tiled labels `labels` inside their blocks, then the store.
    fn tiled_points(
        &mut self,
        w: &mut Writer,
        t: &Tiled,
        labels: &[Label],
        blocks: &BTreeMap<Label, (String, u64)>,
    ) {
        let Some((&l, rest)) = labels.split_first() else {
            let store = Node::Store {
                buf: t.store.buf,
                index: t.store.index.clone(),
                value: t.value.clone(),
            };
            return self.node(w, &store);
        };
        let (Some(name), Some((b, extent))) = (self.names.get(&l).cloned(), blocks.get(&l)) else {
            return self.tiled_points(w, t, rest, blocks);
        };
        let tile = t.block;
        w.block(
            format!(
                "for (long long {name} = {b}; {name} < ({b} + {tile} < {extent} ? {b} + {tile} : {extent}); {name}++)"
            ),
            |w| self.tiled_points(w, t, rest, blocks),
        );
    }

    fn nodes(&mut self, w: &mut Writer, ns: &[Node]) {
        for n in ns {
            self.node(w, n);
        }
    }

    /// The OpenMP work-sharing pragma before the loop over `var`, where the nest shares it.
    fn omp_for(&self, w: &mut Writer, var: Label) {
        if Some(var) == self.omp_for {
            w.directive("#pragma omp for schedule(static) nowait");
        }
    }

    fn node(&mut self, w: &mut Writer, n: &Node) {
        if let Node::Loop { var, .. } = n {
            self.omp_for(w, *var);
        }
        match n {
            Node::Loop {
                var,
                start,
                extent,
                logical,
                body,
            } => {
                let name = self.fresh(*var);
                let note = if *start > 0 {
                    "/* padding only */".to_string()
                } else if extent != logical {
                    format!("/* padded; logical extent {logical} */")
                } else {
                    String::new()
                };
                if let [Node::JamRows(rows), rest @ ..] = body.as_slice() {
                    return self.jammed(w, *var, (&name, *start, *extent), *rows, rest);
                }
                w.block_noted(
                    format!("for (long long {name} = {start}; {name} < {extent}; {name}++)"),
                    note,
                    |w| self.nodes(w, body),
                );
            }
            Node::AccInit { acc, op, elem } => {
                let init = match op {
                    RedOp::Sum => "-0.0",
                    RedOp::Product => "1.0",
                    RedOp::Max => "-teil_inf()",
                    RedOp::Min => "teil_inf()",
                };
                self.accs.insert(*acc, *elem);
                w.line(format!("{} acc{acc} = {init};", c_type(*elem)));
            }
            Node::AccUpdate { acc, op, value } => {
                // fma mode fuses the pair in its type (spec/values.md, "Fused multiply-add").
                if let (true, RedOp::Sum, Some((x, y))) = (self.k.fma, op, value.product()) {
                    let elem = self.elem(value);
                    let (x, y) = (self.val(x, true), self.val(y, true));
                    w.line(multiply_add(true, 1, elem, &format!("acc{acc}"), &x, &y));
                    return;
                }
                let v = self.val(value, true);
                w.line(match op {
                    RedOp::Sum => format!("acc{acc} += {v};"),
                    RedOp::Product => format!("acc{acc} *= {v};"),
                    RedOp::Max => format!("acc{acc} = teil_max(acc{acc}, {v});"),
                    RedOp::Min => format!("acc{acc} = teil_min(acc{acc}, {v});"),
                });
            }
            Node::Store { buf, index, value } => {
                let target = self.access(*buf, index);
                let v = self.val(value, true);
                w.line(format!("{target} = {v};"));
            }
            Node::NoJam => w.line("teil_no_jam();"),
            // Read by the loop it starts (`Printer::jammed`).
            Node::JamRows(_) => {}
            Node::LaneFold(l) => self.lane_fold(w, l),
            Node::Fold {
                buf,
                index,
                op,
                value,
            } => {
                let cell = self.access(*buf, index);
                w.line(fold_line(&cell, *op, &self.val(value, true)));
            }
        }
    }

    /// The loop over `var` (C name, start, extent) whose body `body` ([`crate::ir::jam_shape`]: one loop
    /// of folds into cells of their own) runs `rows` of its iterations per pass of the inner
    /// loop ([`Node::JamRows`]): each cell is loaded into a scalar, folds the rows' terms in
    /// their order and is stored; `teil_no_jam()` keeps the compiler from jamming the passes
    /// again. The iterations after the last whole block of rows run as the plain loop.
    fn jammed(
        &mut self,
        w: &mut Writer,
        var: Label,
        (name, start, extent): (&str, u64, u64),
        rows: u64,
        body: &[Node],
    ) {
        let [Node::Loop {
            var: inner,
            start: inner_start,
            extent: inner_extent,
            body: folds,
            ..
        }] = body
        else {
            return;
        };
        w.block_noted(
            "",
            format!("/* {rows} rows per pass (spec/padding.md, \"Interchanged nests\") */"),
            |w| {
                w.line(format!("long long {name} = {start};"));
                w.block(
                    format!("for (; {name} + {rows} <= {extent}; {name} += {rows})"),
                    |w| {
                        w.line("teil_no_jam();");
                        self.omp_for(w, *inner);
                        let j = self.fresh(*inner);
                        w.block(
                            format!(
                                "for (long long {j} = {inner_start}; {j} < {inner_extent}; {j}++)"
                            ),
                            |w| self.jammed_cells(w, var, name, rows, folds),
                        );
                    },
                );
                // The rows after the last whole block (none: no loop, whose emptiness GCC's
                // -Waggressive-loop-optimizations would remark on).
                if (extent - start) % rows != 0 {
                    w.block(format!("for (; {name} < {extent}; {name}++)"), |w| {
                        self.nodes(w, body)
                    });
                }
            },
        );
    }

    /// One pass of a jammed loop over its cells ([`Printer::jammed`]): each fold's cell into a
    /// scalar, the rows `name`, `name + 1`, ... of `var` folded into it in order, the scalar
    /// stored.
    fn jammed_cells(&mut self, w: &mut Writer, var: Label, name: &str, rows: u64, folds: &[Node]) {
        let cells: Vec<(String, ElemType)> = folds
            .iter()
            .filter_map(|f| match f {
                Node::Fold { buf, index, .. } => {
                    Some((self.access(*buf, index), self.k.buffer(*buf).elem))
                }
                _ => None,
            })
            .collect();
        for (i, (cell, elem)) in cells.iter().enumerate() {
            w.line(format!("{} teil_f{i} = {cell};", c_type(*elem)));
        }
        for r in 0..rows {
            let at = match r {
                0 => name.to_string(),
                _ => format!("{name} + {r}"),
            };
            self.names.insert(var, at);
            for (i, f) in folds.iter().enumerate() {
                if let Node::Fold { op, value, .. } = f {
                    let v = self.val(value, true);
                    w.line(fold_line(&format!("teil_f{i}"), *op, &v));
                }
            }
        }
        self.names.insert(var, name.to_string());
        for (i, (cell, _)) in cells.iter().enumerate() {
            w.line(format!("{cell} = teil_f{i};"));
        }
    }

    pub(super) fn access(&self, b: BufId, idx: &[Ix]) -> String {
        let buf = self.k.buffer(b);
        let strides = buf.strides();
        let mut terms = Vec::new();
        let mut constant = 0u64;
        for (ix, stride) in idx.iter().zip(&strides) {
            match ix {
                Ix::Var(l) => {
                    let name = self
                        .names
                        .get(l)
                        .cloned()
                        .unwrap_or_else(|| format!("l{}", l.0));
                    // A name may be a sum (`i0 + 1`, a jammed row).
                    terms.push(match (*stride, name.contains(' ')) {
                        (1, _) => name,
                        (_, false) => format!("{name} * {stride}"),
                        (_, true) => format!("({name}) * {stride}"),
                    });
                }
                Ix::Const(c) => constant += c * stride,
            }
        }
        if constant > 0 || terms.is_empty() {
            terms.push(constant.to_string());
        }
        format!("{}[{}]", buf.c_name, terms.join(" + "))
    }

    pub(super) fn val(&self, v: &Val, top: bool) -> String {
        match v {
            Val::Load(b, idx) => self.access(*b, idx),
            Val::Lit(x) => literal(*x),
            Val::Acc(a) => format!("acc{a}"),
            Val::Undefined => "teil_nan()".to_string(),
            Val::Func(f, a) => format!("{}({})", function(*f, self.elem(a)), self.val(a, true)),
            Val::Func2(f, a, b) => format!(
                "{}({}, {})",
                function2(*f, self.elem(a)),
                self.val(a, true),
                self.val(b, true)
            ),
            Val::Convert(t, a) => format!("({})({})", c_type(*t), self.val(a, true)),
            Val::Bin(op, a, b) => {
                if let Some((x, y, c)) = v.fused().filter(|_| self.k.fma) {
                    let f = fused(self.elem(v), 1);
                    let (x, y, c) = (self.val(x, true), self.val(y, true), self.val(c, true));
                    return format!("{f}({x}, {y}, {c})");
                }
                let sym = op.symbol();
                let s = format!("{} {sym} {}", self.val(a, false), self.val(b, false));
                if top {
                    s
                } else {
                    format!("({s})")
                }
            }
        }
    }
}

impl Printer<'_> {
    /// The element type of a value of the nest being printed.
    fn elem(&self, v: &Val) -> ElemType {
        self.k
            .val_elem(v, &|a| self.accs.get(&a).copied().unwrap_or(ElemType::F64))
    }
}

/// The C type of an element type.
pub fn c_type(t: ElemType) -> &'static str {
    match t {
        ElemType::F64 => "double",
        ElemType::F32 => "float",
    }
}

/// The C function computing `f` in `t`: CORE-MATH's correctly rounded `cr_*` (linked from
/// [`crate::math`]) or the runtime helper of an IEEE operation (`sqrt`, `abs`), never the C
/// library's `exp`, which is not correctly rounded everywhere and which compilers fold with
/// their own.
pub(super) fn function(f: teil::ast::Func, t: ElemType) -> String {
    if let Some(u) = crate::math::unit(f, t) {
        return u.symbol.to_string();
    }
    let suffix = match t {
        ElemType::F64 => "",
        ElemType::F32 => "f",
    };
    format!("teil_{}{suffix}", f.keyword())
}

/// The runtime helper computing `max`/`min` in `t`: `teil_maximum`, `teil_minimumf`, ...
/// (IEEE 754-2019's names; `teil_max`/`teil_min` are the fold steps of `redmax`/`redmin`, which
/// order zeros by position).
pub(super) fn function2(f: teil::ast::Func2, t: ElemType) -> String {
    let suffix = match t {
        ElemType::F64 => "",
        ElemType::F32 => "f",
    };
    let name = match f {
        teil::ast::Func2::Max => "maximum",
        teil::ast::Func2::Min => "minimum",
    };
    format!("teil_{name}{suffix}")
}

/// `cell = cell op v` as C, for a fold into a cell or into the scalar holding it.
fn fold_line(cell: &str, op: RedOp, v: &str) -> String {
    match op {
        RedOp::Sum => format!("{cell} += {v};"),
        RedOp::Product => format!("{cell} *= {v};"),
        RedOp::Max => format!("{cell} = teil_max({cell}, {v});"),
        RedOp::Min => format!("{cell} = teil_min({cell}, {v});"),
    }
}

/// Whether every store and fold in `ns` is indexed by the loop variable `l`.
/// For a nest whose outer loops fold into the same cells on every iteration (a reduction loop
/// that `crate::opt::interchange` moved outermost, `for k { for i { T[i] = T[i] ⊙ v } }`): the
/// first loop, down a chain of single loops (a [`Node::NoJam`] or [`Node::JamRows`] aside), that
/// indexes every cell
/// the nest writes. With OpenMP every thread runs the outer loops, and the iterations of that
/// loop are shared among the threads with a static schedule, the same for every iteration of
/// the outer loops (OpenMP guarantees it for loops of the same iteration space in one parallel
/// region): each cell is folded by one thread, in the order of the outer loops, so no barrier
/// is needed between their iterations (`nowait`).
fn shared_cells(body: &[Node]) -> Option<Label> {
    let mut ns = body;
    let mut outermost = true;
    loop {
        let ([Node::NoJam | Node::JamRows(_), Node::Loop { var, body, .. }]
        | [Node::Loop { var, body, .. }]) = ns
        else {
            return None;
        };
        if stores_at(ns, *var) {
            return (!outermost).then_some(*var);
        }
        outermost = false;
        ns = body;
    }
}

fn stores_at(ns: &[Node], l: Label) -> bool {
    let mut all = true;
    walk_nodes(ns, &mut |v| {
        if let Visit::Store(_, idx) = v {
            all &= idx.contains(&Ix::Var(l));
        }
    });
    all
}
