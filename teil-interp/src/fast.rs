//! The fast evaluator: whole-tensor evaluation on `ndarray`, with fused contractions.
//!
//! Every right-hand side is split into *terms* and *non-linear nodes*. A term is the part of
//! an expression built from the multilinear forms — variables, literals, `prod`/`#`, scalar and
//! element-wise `mul`, `red+`, `contr`/`.[ ]`, `diag`, `transp`/`^[ ]`, `expa`, `proj` — and is
//! represented like an einsum: a list of factors whose axes carry index labels, the output
//! labels in order, and the labels summed over. `diag` and `contr` unify two labels, `transp`
//! permutes output labels, `expa` adds a label no factor carries (a broadcast), `proj` fixes a
//! label to one slice. Nothing is computed while a term is built; in particular a product is
//! never materialised.
//!
//! A term is then evaluated by pairwise contraction in the order of the contraction planner
//! ([`teil::plan`], `Objective::Memory`: smallest intermediate first, as opt_einsum's greedy
//! strategy): labels summed and carried by one factor only are summed first, then the two
//! factors whose merged result is smallest are contracted, and so on.
//! `C = (A # B) .[2 3]` is one pass over `A` and `B` producing `C`; the CFD operator
//! `(A # B # C # u) .[2 7] .[3 6] .[4 5]` of the TeIL paper §5 is three contractions of
//! `O(n^4)` work each with intermediates the size of `u`.
//!
//! Non-linear nodes (`+`, `-`, `/`, `red*`, `redmax`, `redmin`) materialise their operands and
//! compute element-wise, the reductions as left folds from the first slice (spec/values.md).
//!
//! Element types: every node of a term has the term's element type (operands of `#`, `*` and
//! the sums share it, T-Prod, T-Mul), and so do its contractions: in `f32` each product and each
//! addition of `Evaluator::contract` is rounded to binary32 as it is computed, as the
//! non-linear nodes round each result (spec/semantics.md, "Element types"). Functions and
//! conversions are non-linear nodes ([`crate::functions`]).
//!
//! The evaluator agrees with the oracle exactly whenever no rounding happens (small integer
//! inputs without division): contraction reorders sums and products, which over the reals
//! changes nothing. With rounding, results may differ by reassociation (spec/interpreter.md).
//! The undefined value `•` is NaN here; every operation propagates NaN, so it behaves as `•`.

use crate::budget::{checked_len, try_vec, Budget};
use crate::domain::{max_f64, min_f64, repeated_sum_in};
use crate::error::RunError;
use crate::oracle::check_depth;
use crate::store::filled;
use ndarray::{ArrayD, Axis, IxDyn, Zip};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use teil::ast::{BinOp, ElemType, Expr, ExprKind, Func2, RedOp};
use teil::plan::{LabelSet, Objective, Plan, Problem};
use teil::CheckedProgram;

/// What the evaluator computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The program's values.
    Values,
    /// Definedness only: run on stores holding 1.0 for defined and NaN for undefined cells,
    /// with every literal 1.0, `-` computed as `+` and `/` as `*`. Every operation then yields
    /// a positive number or infinity from defined operands, and NaN exactly when an undefined
    /// operand contributed: a cell of the result is NaN iff the oracle's cell is `•`.
    Definedness,
}

/// Measurements of one run, for tests that assert the plan's structure (not its speed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Elements of the largest tensor the evaluator allocated, statement results included.
    pub peak_elements: u64,
    /// Number of pairwise contractions performed.
    pub contractions: u64,
}

/// The fast evaluator's store: every variable as a row-major array, NaN for `•`.
pub type FastStore = BTreeMap<String, ArrayD<f64>>;

/// Runs every statement of `p` on `store` (which must hold every declared variable with its
/// declared shape) and returns the final store. No budget: see [`run_with`].
pub fn run(
    p: &CheckedProgram,
    store: FastStore,
    mode: Mode,
) -> Result<(FastStore, Stats), RunError> {
    run_with(p, store, mode, &Budget::unlimited())
}

/// [`run`] within `budget`: every intermediate is checked against the memory budget (with the
/// store) before it is allocated, and the cancellation flag is polled per statement and per
/// outer iteration of every contraction. The up-front estimate is the caller's
/// ([`crate::run_fast_with`]).
pub fn run_with(
    p: &CheckedProgram,
    mut store: FastStore,
    mode: Mode,
    budget: &Budget,
) -> Result<(FastStore, Stats), RunError> {
    check_depth(p)?;
    let store_bytes = store.values().fold(0u64, |acc, a| {
        acc.saturating_add((a.len() as u64).saturating_mul(8))
    });
    for d in &p.program().decls {
        let shape: Vec<usize> = d.extents.iter().map(|n| n.value as usize).collect();
        match store.get(&d.name.name) {
            Some(a) if a.shape() == shape.as_slice() && a.is_standard_layout() => {}
            _ => {
                return Err(RunError::Internal(format!(
                    "the fast store lacks `{}` in standard layout",
                    d.name.name
                )))
            }
        }
    }
    let stats = Cell::new(Stats::default());
    for s in &p.program().stmts {
        budget.check_cancel()?;
        // [St-Stmt]: the whole right-hand side against the old store, then the update.
        let value = {
            let ev = Evaluator {
                prog: p,
                store: &store,
                mode,
                stats: &stats,
                labels: Default::default(),
                budget,
                store_bytes,
                target: &s.target.name,
            };
            ev.value(&s.value)?
        };
        let slot = store.get_mut(&s.target.name).ok_or_else(|| {
            RunError::Internal(format!("assignment to unknown `{}`", s.target.name))
        })?;
        if slot.shape() != value.shape() {
            return Err(RunError::OutOfBounds {
                access: crate::error::Access::Write,
                var: s.target.name.clone(),
                index: value.shape().iter().map(|&n| n as u64).collect(),
                extents: slot.shape().iter().map(|&n| n as u64).collect(),
            });
        }
        *slot = value;
    }
    Ok((store, stats.into_inner()))
}

type Label = usize;

/// The array behind a factor: a variable of the store or an intermediate.
enum Data<'s> {
    Borrowed(&'s ArrayD<f64>),
    Owned(ArrayD<f64>),
}

impl Data<'_> {
    fn array(&self) -> &ArrayD<f64> {
        match self {
            Data::Borrowed(a) => a,
            Data::Owned(a) => a,
        }
    }
}

/// One factor of a term: an array viewed through labelled, strided axes. A label may occur on
/// several axes (a diagonal); `base` is the offset of the first element after fixing slices.
struct Factor<'s> {
    data: Data<'s>,
    base: usize,
    axes: Vec<(Label, usize)>,
}

/// A sum of products, as an einsum: the factors, the output labels in order, and the extents
/// of summed labels that no factor carries (`red+ i (expa i n e)` adds `n` copies of `e`).
struct Term<'s> {
    factors: Vec<Factor<'s>>,
    out: Vec<Label>,
    scale: Vec<u64>,
}

struct Evaluator<'p, 's> {
    prog: &'p CheckedProgram,
    store: &'s FastStore,
    mode: Mode,
    stats: &'s Cell<Stats>,
    /// Extent of every label of the statement being evaluated.
    labels: std::cell::RefCell<Vec<u64>>,
    budget: &'s Budget,
    /// Bytes of the store, counted against the memory budget with each new allocation.
    store_bytes: u64,
    /// The variable the statement assigns (for messages).
    target: &'s str,
}

fn bad(what: &str) -> RunError {
    RunError::Internal(format!("fast evaluator: {what}"))
}

impl<'s> Evaluator<'_, 's> {
    fn fresh(&self, extent: u64) -> Label {
        let mut l = self.labels.borrow_mut();
        l.push(extent);
        l.len() - 1
    }

    fn extent(&self, l: Label) -> u64 {
        self.labels.borrow()[l]
    }

    fn note_alloc(&self, elements: u64) {
        let mut s = self.stats.take();
        s.peak_elements = s.peak_elements.max(elements);
        self.stats.set(s);
    }

    fn note_contraction(&self) {
        let mut s = self.stats.take();
        s.contractions += 1;
        self.stats.set(s);
    }

    /// Refuses an allocation of `cells` cells that would take the run over the memory budget.
    fn reserve(&self, cells: u64) -> Result<(), RunError> {
        let bytes = self.store_bytes.saturating_add(cells.saturating_mul(8));
        if bytes > self.budget.max_memory {
            return Err(RunError::OverMemory {
                who: "the fast evaluator",
                bytes,
                budget: self.budget.max_memory,
                largest: format!(
                    "an intermediate of the statement assigning `{}`",
                    self.target
                ),
                largest_cells: cells,
            });
        }
        Ok(())
    }

    /// A zero-filled array of the given extents, within the memory budget.
    fn zeros(&self, what: &str, extents: &[u64]) -> Result<ArrayD<f64>, RunError> {
        self.reserve(crate::budget::cells(extents))?;
        let len = checked_len(what, extents)?;
        self.note_alloc(len as u64);
        let data = filled(what, len, 0.0)?;
        let shape: Vec<usize> = extents.iter().map(|&n| n as usize).collect();
        ArrayD::from_shape_vec(IxDyn(&shape), data).map_err(|e| bad(&e.to_string()))
    }

    /// A row-major copy of `a`, its memory checked against the budget and reserved fallibly.
    fn owned(&self, a: &ndarray::ArrayViewD<'_, f64>) -> Result<ArrayD<f64>, RunError> {
        self.reserve(a.len() as u64)?;
        self.note_alloc(a.len() as u64);
        let data = try_vec("an intermediate result", a.len(), a.iter().copied())?;
        ArrayD::from_shape_vec(IxDyn(a.shape()), data).map_err(|e| bad(&e.to_string()))
    }

    /// A term whose only factor is `data`, with fresh labels for its axes.
    fn leaf(&self, data: Data<'s>) -> Term<'s> {
        let a = data.array();
        let mut axes = Vec::with_capacity(a.ndim());
        let mut out = Vec::with_capacity(a.ndim());
        for (&n, &s) in a.shape().iter().zip(a.strides()) {
            let l = self.fresh(n as u64);
            axes.push((l, s as usize));
            out.push(l);
        }
        Term {
            factors: vec![Factor {
                data,
                base: 0,
                axes,
            }],
            out,
            scale: Vec::new(),
        }
    }

    /// The value of `e` as a materialised array of `shape(e)`.
    fn value(&self, e: &Expr) -> Result<ArrayD<f64>, RunError> {
        let t = self.term(e)?;
        let v = self.materialise(t, self.prog.elem(e))?;
        let want = self.prog.shape(e);
        if v.shape().iter().map(|&n| n as u64).ne(want.iter().copied()) {
            return Err(bad("a term evaluated to the wrong shape"));
        }
        Ok(v)
    }

    fn position(out: &[Label], p: u64) -> Result<usize, RunError> {
        let p0 = (p as usize).wrapping_sub(1);
        if p0 < out.len() {
            Ok(p0)
        } else {
            Err(bad("a position outside the term"))
        }
    }

    /// Builds the term of `e` (see the module documentation). Equation names as in the oracle.
    fn term(&self, e: &Expr) -> Result<Term<'s>, RunError> {
        let shape = |e: &Expr| self.prog.shape(e);
        Ok(match &e.kind {
            // [S-Var]
            ExprKind::Var(x) => {
                let a = self
                    .store
                    .get(&x.name)
                    .ok_or_else(|| bad("read of an unknown variable"))?;
                self.leaf(Data::Borrowed(a))
            }
            // [S-Lit]
            ExprKind::Lit(c) => {
                let c = match self.mode {
                    Mode::Values => c.in_type(self.prog.elem(e)),
                    Mode::Definedness => 1.0,
                };
                self.leaf(Data::Owned(ndarray::arr0(c).into_dyn()))
            }
            // [S-Paren]
            ExprKind::Paren(inner) => self.term(inner)?,
            // [S-SMul], [S-Prod]: the factors of both, output labels concatenated.
            ExprKind::Binary(BinOp::Mul, a, b) if shape(a).is_empty() => self.product(a, b)?,
            ExprKind::Prod(a, b) => self.product(a, b)?,
            // [S-Mul] element-wise: a product whose output labels are unified pairwise.
            ExprKind::Binary(BinOp::Mul, a, b) => {
                let mut t = self.product(a, b)?;
                let k = shape(a).len();
                if t.out.len() != 2 * k {
                    return Err(bad("element-wise product of different ranks"));
                }
                for i in 0..k {
                    let (keep, gone) = (t.out[i], t.out[k + i]);
                    t.unify(keep, gone);
                }
                t.out.truncate(k);
                t
            }
            // [S-Red] for red+: the label becomes summed.
            ExprKind::Reduce(RedOp::Sum, i, inner) => {
                let mut t = self.term(inner)?;
                let p = Self::position(&t.out, i.value)?;
                let l = t.out.remove(p);
                t.sum(l, self.extent(l));
                t
            }
            // [S-Transp]
            ExprKind::Transp(i, j, inner) => {
                let mut t = self.term(inner)?;
                let (p, q) = (
                    Self::position(&t.out, i.value)?,
                    Self::position(&t.out, j.value)?,
                );
                t.out.swap(p, q);
                t
            }
            // [S-Diag]: the label at h is identified with the one at l and leaves the output.
            ExprKind::Diag(i, j, inner) => {
                let mut t = self.term(inner)?;
                let (l, h) = (i.value.min(j.value), i.value.max(j.value));
                let (pl, ph) = (Self::position(&t.out, l)?, Self::position(&t.out, h)?);
                let (keep, gone) = (t.out[pl], t.out[ph]);
                t.out.remove(ph);
                t.unify(keep, gone);
                t
            }
            // [S-Contr] = red+ l (diag l h e)
            ExprKind::Contr(i, j, inner) => {
                let mut t = self.term(inner)?;
                let (l, h) = (i.value.min(j.value), i.value.max(j.value));
                let (pl, ph) = (Self::position(&t.out, l)?, Self::position(&t.out, h)?);
                let (keep, gone) = (t.out[pl], t.out[ph]);
                t.out.remove(ph);
                t.out.remove(pl);
                t.unify(keep, gone);
                t.sum(keep, self.extent(keep));
                t
            }
            // [S-Expa]: a new output label that no factor carries.
            ExprKind::Expa(i, n, inner) => {
                let mut t = self.term(inner)?;
                let p0 = (i.value as usize).wrapping_sub(1);
                if p0 > t.out.len() {
                    return Err(bad("expansion position outside the term"));
                }
                let l = self.fresh(n.value);
                t.out.insert(p0, l);
                t
            }
            // [S-Proj]: the label is fixed to slice m.
            ExprKind::Proj(i, m, inner) => {
                let mut t = self.term(inner)?;
                let p = Self::position(&t.out, i.value)?;
                let l = t.out.remove(p);
                t.fix(l, m.value)?;
                t
            }
            _ => self.leaf(Data::Owned(self.nonlinear(e)?)),
        })
    }

    fn product(&self, a: &Expr, b: &Expr) -> Result<Term<'s>, RunError> {
        let mut ta = self.term(a)?;
        let tb = self.term(b)?;
        ta.factors.extend(tb.factors);
        ta.out.extend(tb.out);
        ta.scale.extend(tb.scale);
        Ok(ta)
    }

    /// `+`, `-`, `/` and the non-linear reductions: operands materialised, then element-wise.
    fn nonlinear(&self, e: &Expr) -> Result<ArrayD<f64>, RunError> {
        let t = self.prog.elem(e);
        let mut x = self.nonlinear_in(e)?;
        if t != ElemType::F64 {
            x.mapv_inplace(|v| t.round(v));
        }
        Ok(x)
    }

    /// [`Self::nonlinear`] before rounding to the node's element type; a reduction's fold
    /// steps are rounded here, as they are taken.
    fn nonlinear_in(&self, e: &Expr) -> Result<ArrayD<f64>, RunError> {
        let shape = |e: &Expr| self.prog.shape(e);
        let defin = self.mode == Mode::Definedness;
        let t = self.prog.elem(e);
        match &e.kind {
            // [S-Func]: the definedness of `f x` is that of `x` (functions never make `•`).
            ExprKind::Func(f, a) => {
                let mut x = self.value(a)?;
                if !defin {
                    x.mapv_inplace(crate::functions::unary(*f, t));
                }
                Ok(x)
            }
            // [S-Func2]: NaN iff either operand is, as `+` in definedness mode.
            ExprKind::Func2(f, a, b) => {
                let (mut x, y) = (self.value(a)?, self.value(b)?);
                if x.shape() != y.shape() {
                    return Err(bad("element-wise function on different shapes"));
                }
                let f: Func2 = *f;
                Zip::from(&mut x).and(&y).for_each(|a, &b| {
                    *a = if defin {
                        *a + b
                    } else {
                        crate::functions::apply2(f, *a, b)
                    }
                });
                Ok(x)
            }
            // [S-Conv]: rounded by the caller to the node's element type.
            ExprKind::Convert(_, a) => self.value(a),
            // [S-SDiv]
            ExprKind::Binary(BinOp::Div, a, b) if shape(b).is_empty() => {
                let x = self.value(a)?;
                let s = self
                    .value(b)?
                    .first()
                    .copied()
                    .ok_or_else(|| bad("empty scalar"))?;
                let mut x = x;
                if defin {
                    x.mapv_inplace(|v| v * s);
                } else {
                    x.mapv_inplace(|v| v / s);
                }
                Ok(x)
            }
            // [S-Add], [S-Sub], [S-Div]
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.value(a)?, self.value(b)?);
                if x.shape() != y.shape() {
                    return Err(bad("element-wise operation on different shapes"));
                }
                let f: fn(f64, f64) -> f64 = match (op, defin) {
                    (BinOp::Add, _) | (BinOp::Sub, true) => |a, b| a + b,
                    (BinOp::Sub, false) => |a, b| a - b,
                    (BinOp::Div, false) => |a, b| a / b,
                    (BinOp::Div, true) | (BinOp::Mul, _) => |a, b| a * b,
                };
                let mut x = x;
                Zip::from(&mut x).and(&y).for_each(|a, &b| *a = f(*a, b));
                Ok(x)
            }
            // [S-Red] for red*, redmax, redmin: a left fold over the slices, from the first.
            ExprKind::Reduce(op, i, inner) => {
                let x = self.value(inner)?;
                let p0 = (i.value as usize).wrapping_sub(1);
                if p0 >= x.ndim() {
                    return Err(bad("reduction position outside the operand"));
                }
                let ax = Axis(p0);
                let f: fn(f64, f64) -> f64 = match op {
                    RedOp::Sum => |a, b| a + b,
                    RedOp::Product => |a, b| a * b,
                    RedOp::Max => max_f64,
                    RedOp::Min => min_f64,
                };
                let mut acc = self.owned(&x.index_axis(ax, 0))?;
                for m in 1..x.len_of(ax) {
                    Zip::from(&mut acc)
                        .and(&x.index_axis(ax, m))
                        .for_each(|a, &b| *a = t.round(f(*a, b)));
                }
                Ok(acc)
            }
            _ => Err(bad("unexpected expression form")),
        }
    }

    /// Evaluates a term to an array over its output labels.
    /// Evaluates a term of element type `elem` to an array over its output labels.
    fn materialise(&self, t: Term<'s>, elem: ElemType) -> Result<ArrayD<f64>, RunError> {
        let Term {
            factors,
            out,
            scale,
        } = t;
        let fs: Vec<Factor<'s>> = factors.into_iter().map(Factor::merged).collect();
        // The planner sees the term's labels by dense numbers; it minimises the size of each
        // next intermediate (the evaluator allocates every one under the memory budget).
        let mut number: BTreeMap<Label, usize> = BTreeMap::new();
        let mut extents = Vec::new();
        let mut sets = Vec::with_capacity(fs.len());
        for f in &fs {
            let mut set = LabelSet::new();
            for l in f.labels() {
                let n = *number.entry(l).or_insert_with(|| {
                    extents.push(self.extent(l));
                    extents.len() - 1
                });
                set.insert(n);
            }
            sets.push(set);
        }
        let problem = Problem {
            extents,
            free: out.iter().filter_map(|l| number.get(l).copied()).collect(),
            factors: sets,
            dangling: LabelSet::new(),
        };
        let result = match problem.plan(Objective::Memory) {
            Some(plan) => {
                let mut slots: Vec<Option<Factor<'s>>> = fs.into_iter().map(Some).collect();
                let f = self.run_plan(&plan, &mut slots, &number, elem)?;
                if f.is_plain(&out) {
                    f
                } else {
                    // Broadcast to the output labels in order (labels no factor carries come
                    // from `expa`).
                    self.contract(&[&f], &out, elem)?
                }
            }
            None => self.contract(&[&Factor::scalar(1.0)], &out, elem)?,
        };
        let mut arr = match result.data {
            Data::Owned(a) => a,
            Data::Borrowed(a) => self.owned(&a.view())?,
        };
        // A sum over a label no factor carries adds `n` copies of one value: the left fold
        // itself, not `n · value`, which is another term (spec/values.md, "Reassociation").
        for n in scale {
            arr.mapv_inplace(|v| repeated_sum_in(elem, v, n));
        }
        Ok(arr)
    }

    /// Evaluates `plan` over the term's factors (`slots`, each taken once); `number` gives the
    /// planner's number of each label. A node's axes are its operands' labels in order, those
    /// it keeps.
    fn run_plan(
        &self,
        plan: &Plan,
        slots: &mut [Option<Factor<'s>>],
        number: &BTreeMap<Label, usize>,
        elem: ElemType,
    ) -> Result<Factor<'s>, RunError> {
        let kept = |labels: Vec<Label>, keep: &LabelSet| -> Vec<Label> {
            labels
                .into_iter()
                .filter(|l| number.get(l).is_some_and(|&n| keep.contains(n)))
                .collect()
        };
        match plan {
            Plan::Leaf { factor, keep } => {
                let f = slots
                    .get_mut(*factor)
                    .and_then(Option::take)
                    .ok_or_else(|| bad("a plan uses a factor twice"))?;
                let labels = f.labels();
                let keep = kept(labels.clone(), keep);
                if keep.len() == labels.len() {
                    return Ok(f);
                }
                // Sum the labels this factor alone carries and nothing else needs.
                self.contract(&[&f], &keep, elem)
            }
            Plan::Merge { left, right, keep } => {
                let a = self.run_plan(left, slots, number, elem)?;
                let b = self.run_plan(right, slots, number, elem)?;
                let mut union = a.labels();
                union.extend(b.labels().into_iter().filter(|l| !a.has(*l)));
                self.note_contraction();
                self.contract(&[&a, &b], &kept(union, keep), elem)
            }
        }
    }

    /// `Σ over the labels of `ops` not in `keep` of the product of `ops``, as a new factor whose
    /// axes are `keep` in order (labels no operand carries are broadcast).
    /// In `f32` (`elem`) every product and addition is rounded to binary32.
    fn contract(
        &self,
        ops: &[&Factor<'s>],
        keep: &[Label],
        elem: ElemType,
    ) -> Result<Factor<'s>, RunError> {
        let extents: Vec<u64> = keep.iter().map(|&l| self.extent(l)).collect();
        let mut z = self.zeros("an intermediate result", &extents)?;
        // Sums start from -0, the identity of IEEE addition (+0 + -0 would be +0), so a sum
        // equals the left fold from its first term, signed zeros included.
        z.fill(-0.0);
        // Output strides (row-major) per kept label.
        let mut zstride = vec![0usize; keep.len()];
        let mut acc = 1usize;
        for p in (0..keep.len()).rev() {
            zstride[p] = acc;
            acc *= extents[p] as usize;
        }
        let mut summed: Vec<Label> = Vec::new();
        for f in ops {
            for l in f.labels() {
                if !keep.contains(&l) && !summed.contains(&l) {
                    summed.push(l);
                }
            }
        }
        summed.sort_unstable();
        // Loop order: kept labels but the last, summed labels, the last kept label innermost.
        let mut order: Vec<(Label, usize)> = Vec::new();
        let split = keep.len().saturating_sub(1);
        for p in 0..split {
            order.push((keep[p], zstride[p]));
        }
        for &l in &summed {
            order.push((l, 0));
        }
        if let Some(&l) = keep.last() {
            order.push((l, 1));
        }
        let loops: Vec<Loop> = order
            .iter()
            .map(|&(l, sz)| Loop {
                n: self.extent(l) as usize,
                sz,
                s: [
                    ops.first().map_or(0, |f| f.stride(l)),
                    ops.get(1).map_or(0, |f| f.stride(l)),
                ],
            })
            .collect();
        let zs = z
            .as_slice_mut()
            .ok_or_else(|| bad("intermediate not contiguous"))?;
        let accumulate = !summed.is_empty();
        let cancel = self.budget.cancel.as_deref();
        match ops {
            [x] => {
                let xs = x
                    .data
                    .array()
                    .as_slice()
                    .ok_or_else(|| bad("operand not contiguous"))?;
                match elem {
                    ElemType::F64 => nest1::<false>(&loops, xs, x.base, zs, 0, accumulate, cancel),
                    ElemType::F32 => nest1::<true>(&loops, xs, x.base, zs, 0, accumulate, cancel),
                }
            }
            [x, y] => {
                let xs = x
                    .data
                    .array()
                    .as_slice()
                    .ok_or_else(|| bad("operand not contiguous"))?;
                let ys = y
                    .data
                    .array()
                    .as_slice()
                    .ok_or_else(|| bad("operand not contiguous"))?;
                let (x0, y0) = (x.base, y.base);
                match elem {
                    ElemType::F64 => {
                        nest2::<false>(&loops, xs, x0, ys, y0, zs, 0, accumulate, cancel)
                    }
                    ElemType::F32 => {
                        nest2::<true>(&loops, xs, x0, ys, y0, zs, 0, accumulate, cancel)
                    }
                }
            }
            _ => return Err(bad("contraction of more than two factors")),
        }
        self.budget.check_cancel()?;
        let axes = keep.iter().copied().zip(zstride).collect();
        Ok(Factor {
            data: Data::Owned(z),
            base: 0,
            axes,
        })
    }
}

impl Term<'_> {
    /// Identifies label `gone` with `keep` everywhere (`diag`, `contr`, element-wise `mul`).
    fn unify(&mut self, keep: Label, gone: Label) {
        for f in &mut self.factors {
            for (l, _) in &mut f.axes {
                if *l == gone {
                    *l = keep;
                }
            }
        }
        for l in &mut self.out {
            if *l == gone {
                *l = keep;
            }
        }
    }

    /// Marks `l` summed; when no factor carries it, the sum adds `extent` copies of the value.
    fn sum(&mut self, l: Label, extent: u64) {
        if !self
            .factors
            .iter()
            .any(|f| f.axes.iter().any(|(m, _)| *m == l))
        {
            self.scale.push(extent);
        }
    }

    /// Fixes `l` to the 1-based slice `m` in every factor (`proj`).
    fn fix(&mut self, l: Label, m: u64) -> Result<(), RunError> {
        let m0 = (m as usize).checked_sub(1).ok_or_else(|| bad("slice 0"))?;
        for f in &mut self.factors {
            f.axes.retain(|&(k, s)| {
                if k == l {
                    f.base += m0 * s;
                    false
                } else {
                    true
                }
            });
        }
        Ok(())
    }
}

impl<'s> Factor<'s> {
    fn scalar(v: f64) -> Self {
        Factor {
            data: Data::Owned(ndarray::arr0(v).into_dyn()),
            base: 0,
            axes: Vec::new(),
        }
    }

    /// Combines axes carrying the same label into one axis (a diagonal view).
    fn merged(mut self) -> Self {
        let mut axes: Vec<(Label, usize)> = Vec::with_capacity(self.axes.len());
        for (l, s) in self.axes.drain(..) {
            match axes.iter_mut().find(|(m, _)| *m == l) {
                Some((_, t)) => *t += s,
                None => axes.push((l, s)),
            }
        }
        self.axes = axes;
        self
    }

    /// Whether this factor is an owned row-major array with exactly the axes `out`.
    fn is_plain(&self, out: &[Label]) -> bool {
        let Data::Owned(a) = &self.data else {
            return false;
        };
        self.base == 0
            && a.is_standard_layout()
            && a.ndim() == out.len()
            && self.axes.len() == out.len()
            && self.axes.iter().zip(out).all(|((l, _), m)| l == m)
    }

    fn labels(&self) -> Vec<Label> {
        self.axes.iter().map(|&(l, _)| l).collect()
    }

    fn has(&self, l: Label) -> bool {
        self.axes.iter().any(|&(m, _)| m == l)
    }

    fn stride(&self, l: Label) -> usize {
        self.axes
            .iter()
            .find(|&&(m, _)| m == l)
            .map_or(0, |&(_, s)| s)
    }
}

/// One loop of a loop nest: trip count, output stride, operand strides.
struct Loop {
    n: usize,
    sz: usize,
    s: [usize; 2],
}

/// `cancel`, polled per iteration of the outermost loop only, stops the nest early (the caller
/// then reports the interruption).
/// `x` rounded to binary32 when `F32` (the nests' products and sums in `f32`).
#[inline(always)]
fn r<const F32: bool>(x: f64) -> f64 {
    if F32 {
        x as f32 as f64
    } else {
        x
    }
}

#[allow(clippy::too_many_arguments)]
fn nest1<const F32: bool>(
    loops: &[Loop],
    x: &[f64],
    ox: usize,
    z: &mut [f64],
    oz: usize,
    acc: bool,
    cancel: Option<&AtomicBool>,
) {
    match loops {
        [] => {
            if acc {
                z[oz] = r::<F32>(z[oz] + x[ox]);
            } else {
                z[oz] = x[ox];
            }
        }
        [l] => {
            let (mut ox, mut oz) = (ox, oz);
            for _ in 0..l.n {
                if acc {
                    z[oz] = r::<F32>(z[oz] + x[ox]);
                } else {
                    z[oz] = x[ox];
                }
                ox += l.s[0];
                oz += l.sz;
            }
        }
        [l, rest @ ..] => {
            for i in 0..l.n {
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return;
                }
                nest1::<F32>(rest, x, ox + i * l.s[0], z, oz + i * l.sz, acc, None);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn nest2<const F32: bool>(
    loops: &[Loop],
    x: &[f64],
    ox: usize,
    y: &[f64],
    oy: usize,
    z: &mut [f64],
    oz: usize,
    acc: bool,
    cancel: Option<&AtomicBool>,
) {
    match loops {
        [] => {
            let v = r::<F32>(x[ox] * y[oy]);
            if acc {
                z[oz] = r::<F32>(z[oz] + v);
            } else {
                z[oz] = v;
            }
        }
        [l] => {
            let (mut ox, mut oy, mut oz) = (ox, oy, oz);
            if acc {
                for _ in 0..l.n {
                    z[oz] = r::<F32>(z[oz] + r::<F32>(x[ox] * y[oy]));
                    ox += l.s[0];
                    oy += l.s[1];
                    oz += l.sz;
                }
            } else {
                for _ in 0..l.n {
                    z[oz] = r::<F32>(x[ox] * y[oy]);
                    ox += l.s[0];
                    oy += l.s[1];
                    oz += l.sz;
                }
            }
        }
        [l, rest @ ..] => {
            for i in 0..l.n {
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return;
                }
                nest2::<F32>(
                    rest,
                    x,
                    ox + i * l.s[0],
                    y,
                    oy + i * l.s[1],
                    z,
                    oz + i * l.sz,
                    acc,
                    None,
                );
            }
        }
    }
}
