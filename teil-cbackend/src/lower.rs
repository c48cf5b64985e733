//! Lowering a checked program to the loop IR.
//!
//! Three stages per statement `x = e` ([St-Stmt]):
//!
//! 1. **Index expressions.** `e` is turned into an [`IExpr`], its meaning at a symbolic
//!    multi-index: one fresh [`Label`] per dimension of `x`, pushed down through the tree exactly
//!    as the equations of spec/semantics.md push indices down ([S-Transp] permutes them,
//!    [S-Diag] duplicates one, [S-Expa] drops one, [S-Proj] inserts a constant, [S-Prod] splits
//!    them, [S-Red] and [S-Contr] bind a fresh summation label). No product, diagonal or
//!    transposition is ever materialised: they only change index lists.
//! 2. **Scheduling.** Exact rewrites first: a reduction that does not depend on some enclosing
//!    loop variable is *hoisted* into a temporary (same operations, fewer times). Then
//!    *contraction lifting* (TeIL paper §5): a maximal sum-of-products region is split into a
//!    sequence of pairwise contractions over temporaries when that lowers the iteration count
//!    (this reassociates, see spec/padding.md for the numerical consequences); with
//!    [`Rewrites::order`] plans are compared by operation counts and their temporaries keep the
//!    target's innermost dimension innermost. Then, with [`Rewrites::split`], a sum whose body is
//!    a sum of products of two loads computes the inner sums into a temporary (exact). A
//!    statement whose target is read at a different index is computed into a temporary and
//!    copied back.
//! 3. **Loop nests.** Each assignment becomes one loop nest. A loop over a dimension of the
//!    target runs over the padded extent only when [`zero_labels`] proves the value computed in
//!    padding is zero; reduction loops always run over logical extents.
//!
//! Which nests become contraction kernels or tiled nests is decided afterwards, by the passes
//! of `crate::opt` (`opt::pipeline`).
//!
//! Shapes are read from the checker ([`CheckedProgram::shape`]), never re-derived.

use crate::ir::*;
use crate::names::Names;
use crate::{Error, Options};
use std::collections::{BTreeMap, BTreeSet};
use teil::ast::{BinOp, Expr, ExprKind, RedOp};
use teil::fmt::Style;
use teil::CheckedProgram;

/// The scheduling rewrites of stage 2 that can be switched off (`crate::opt` sets them from
/// its `Tuning`). They stay in the lowering, not in `opt/`, because they decide on and rewrite
/// [`IExpr`] trees and they create temporaries whose names and workspace order are those of
/// the lowering (`tmp0`, `tmp1`, ... in creation order): the loop IR no longer has the
/// reductions as trees, and a pass after lowering would create its temporaries last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rewrites {
    /// Contraction lifting compares plans by counting multiplications and additions instead
    /// of loop iterations, and lays temporaries out with the target's innermost label
    /// innermost.
    pub order: bool,
    /// A sum whose body is a sum of products of two loads computes the inner sums into a
    /// temporary first (exact).
    pub split: bool,
}

/// A scalar expression evaluated at one point of an index space.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum IExpr {
    Load(BufId, Vec<Ix>),
    Lit(f64),
    Bin(BinOp, Box<IExpr>, Box<IExpr>),
    /// A left fold of `op` over the logical extent of the label ([S-Red], [S-Contr]).
    Reduce(RedOp, Label, Box<IExpr>),
}

/// `target[index] = value` for every index of the target's shape.
struct Assign {
    target: BufId,
    index: Vec<Label>,
    value: IExpr,
    comment: String,
    /// Whether contraction lifting may rewrite this assignment.
    lift: bool,
    /// Whether `value` may read `target` (only user statements can).
    check_alias: bool,
}

/// Temporaries one program may create before lowering gives up (a guard, not a real limit).
const MAX_TEMPS: usize = 100_000;

/// Buffers larger than this many doubles are rejected (index arithmetic uses `long long`).
const MAX_ELEMENTS: u64 = 1 << 62;

/// Largest temporary (in cells) that splitting a nested sum may create (Rewrites::split).
const MAX_SPLIT_CELLS: u128 = 1 << 20;

/// Longest statement comment kept in the C source.
const MAX_COMMENT: usize = 240;

struct Lowerer<'p> {
    prog: &'p CheckedProgram,
    pad: u64,
    lift: bool,
    rewrites: Rewrites,
    /// Logical extent of each label.
    labels: Vec<u64>,
    buffers: Vec<Buffer>,
    /// The buffer statements read and write for each variable.
    var_buf: BTreeMap<String, BufId>,
    steps: Vec<Step>,
    names: Names,
    temps: usize,
    lifted: usize,
}

pub(crate) fn lower_kernel(
    prog: &CheckedProgram,
    opts: &Options,
    rewrites: Rewrites,
) -> Result<Kernel, Error> {
    if opts.pad == 0 {
        return Err(Error::BadPad(opts.pad));
    }
    crate::names::check_function_name(&opts.name)
        .map_err(|why| Error::BadName(opts.name.clone(), why))?;
    let mut lw = Lowerer {
        prog,
        pad: opts.pad,
        lift: opts.lift,
        rewrites,
        labels: Vec::new(),
        buffers: Vec::new(),
        var_buf: BTreeMap::new(),
        steps: Vec::new(),
        names: Names::default(),
        temps: 0,
        lifted: 0,
    };
    let program = prog.program();
    let interface: BTreeSet<&str> = prog.interface().map(|d| d.name.name.as_str()).collect();

    // Parameters and internal variables, in declaration order.
    let mut params = Vec::new();
    for d in &program.decls {
        let name = d.name.name.as_str();
        let shape = prog
            .var_shape(name)
            .map(<[u64]>::to_vec)
            .unwrap_or_default();
        let c_name = lw.names.variable(name);
        let role = if interface.contains(name) {
            Role::Param {
                input: prog.is_input(d),
                output: prog.is_output(d),
            }
        } else {
            Role::Internal
        };
        let b = lw.buffer(Some(name.to_string()), c_name, role, shape)?;
        if role != Role::Internal {
            params.push(b);
        }
        lw.var_buf.insert(name.to_string(), b);
    }
    // Input-only parameters the program assigns get a private copy: the caller's buffer is
    // never written (spec/abi.md).
    for d in &program.decls {
        let name = d.name.name.as_str();
        let b = lw.var_buf[name];
        if lw.buffers[b.0].role
            == (Role::Param {
                input: true,
                output: false,
            })
            && prog.var_init(name).is_some_and(|v| v.written())
        {
            let c_name = lw.names.variable(&format!("{name}_copy"));
            let logical = lw.buffers[b.0].logical.clone();
            let copy = lw.buffer(Some(name.to_string()), c_name, Role::InputCopy, logical)?;
            lw.steps.push(Step::Copy {
                comment: format!("private copy of input `{name}`, which the program assigns"),
                dst: copy,
                src: b,
            });
            lw.var_buf.insert(name.to_string(), copy);
        }
    }
    // Variables whose undefined initial value is observable start as NaN ([Eval-Prog]).
    // The checker's initialisation analysis says which (one entry per declaration, in order).
    for (d, init) in program.decls.iter().zip(prog.initialization().iter()) {
        if prog.is_input(d) {
            continue;
        }
        let name = d.name.name.as_str();
        let read_early = init.read_before_written();
        let returned_undefined = prog.is_output(d) && !init.written();
        if read_early || returned_undefined {
            let why = if read_early {
                "is read before it is assigned"
            } else {
                "is an output that is never assigned"
            };
            let b = lw.var_buf[name];
            lw.fill_undefined(
                b,
                format!("`{name}` {why}: it holds the undefined value (NaN)"),
            );
        }
    }
    for stmt in &program.stmts {
        let target =
            lw.var_buf.get(&stmt.target.name).copied().ok_or_else(|| {
                Error::Internal(format!("undeclared target `{}`", stmt.target.name))
            })?;
        let shape = lw.buffers[target.0].logical.clone();
        let index: Vec<Label> = shape.iter().map(|&n| lw.label(n)).collect();
        let value = lw.expr(&stmt.value, index.iter().map(|&l| Ix::Var(l)).collect())?;
        let mut comment = format!(
            "{} = {}",
            stmt.target.name,
            teil::fmt::expr(&stmt.value, Style::Infix)
        );
        if comment.len() > MAX_COMMENT {
            let mut cut = MAX_COMMENT;
            while !comment.is_char_boundary(cut) {
                cut -= 1;
            }
            comment.truncate(cut);
            comment.push_str(" ...");
        }
        let lift = lw.lift;
        lw.schedule(Assign {
            target,
            index,
            value,
            comment,
            lift,
            check_alias: true,
        })?;
    }

    let mut kernel = Kernel {
        name: opts.name.clone(),
        pad: opts.pad,
        buffers: lw.buffers,
        params,
        steps: lw.steps,
        workspace: 0,
        lifted: lw.lifted,
        openmp: false,
        fma: opts.fma,
    };
    // Workspace layout: every used non-parameter buffer at a 64-byte multiple.
    let used = kernel.referenced();
    let mut cursor = 0u64;
    for (b, _) in kernel
        .buffers
        .iter_mut()
        .zip(used)
        .filter(|(b, used)| *used && !b.is_param())
    {
        b.offset = cursor;
        cursor = b
            .padded_len()
            .checked_next_multiple_of(8)
            .and_then(|n| cursor.checked_add(n))
            .filter(|&c| c <= MAX_ELEMENTS)
            .ok_or(Error::TooLarge {
                what: "the workspace".to_string(),
            })?;
    }
    kernel.workspace = cursor;
    Ok(kernel)
}

impl Lowerer<'_> {
    fn label(&mut self, extent: u64) -> Label {
        self.labels.push(extent);
        Label(self.labels.len() as u32 - 1)
    }

    fn extent(&self, l: Label) -> u64 {
        self.labels[l.0 as usize]
    }

    fn buffer(
        &mut self,
        var: Option<String>,
        c_name: String,
        role: Role,
        logical: Vec<u64>,
    ) -> Result<BufId, Error> {
        let too_large = || Error::TooLarge {
            what: match &var {
                Some(v) => format!("`{v}`"),
                None => "a temporary".to_string(),
            },
        };
        let padded = logical
            .iter()
            .map(|&n| n.checked_next_multiple_of(self.pad))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(too_large)?;
        padded
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n))
            .filter(|&n| n <= MAX_ELEMENTS)
            .ok_or_else(too_large)?;
        self.buffers.push(Buffer {
            var,
            c_name,
            role,
            logical,
            padded,
            offset: 0,
        });
        Ok(BufId(self.buffers.len() - 1))
    }

    fn temp(&mut self, logical: Vec<u64>) -> Result<BufId, Error> {
        if self.temps >= MAX_TEMPS {
            return Err(Error::TooComplex);
        }
        let name = format!("tmp{}", self.temps);
        self.temps += 1;
        self.buffer(None, name, Role::Temp, logical)
    }

    /// Stores `•` into every logical cell of `b`.
    fn fill_undefined(&mut self, b: BufId, comment: String) {
        let shape = self.buffers[b.0].logical.clone();
        let index: Vec<Label> = shape.iter().map(|&n| self.label(n)).collect();
        let mut body = vec![Node::Store {
            buf: b,
            index: index.iter().map(|&l| Ix::Var(l)).collect(),
            value: Val::Undefined,
        }];
        for (&l, &n) in index.iter().zip(&shape).rev() {
            body = vec![Node::Loop {
                var: l,
                start: 0,
                extent: n,
                logical: n,
                body,
            }];
        }
        self.steps.push(Step::Nest { comment, body });
    }

    /// The meaning of `e` at the multi-index `idx` (spec/semantics.md, one arm per equation).
    fn expr(&mut self, e: &Expr, mut idx: Vec<Ix>) -> Result<IExpr, Error> {
        let shape = self.prog.shape(e);
        if idx.len() != shape.len() {
            return Err(Error::Internal(format!(
                "index of length {} for a node of rank {}",
                idx.len(),
                shape.len()
            )));
        }
        let bx = Box::new;
        Ok(match &e.kind {
            // [S-Var]
            ExprKind::Var(v) => {
                let b =
                    self.var_buf.get(&v.name).copied().ok_or_else(|| {
                        Error::Internal(format!("undeclared variable `{}`", v.name))
                    })?;
                IExpr::Load(b, idx)
            }
            // [S-Lit]
            ExprKind::Lit(x) => IExpr::Lit(*x),
            // [S-Paren]
            ExprKind::Paren(inner) => self.expr(inner, idx)?,
            // [S-Add], [S-Sub], [S-Mul], [S-Div], [S-SMul], [S-SDiv]
            ExprKind::Binary(op, a, b) => {
                let (sa, sb) = (self.prog.shape(a), self.prog.shape(b));
                match op {
                    BinOp::Mul if sa.is_empty() => {
                        IExpr::Bin(*op, bx(self.expr(a, Vec::new())?), bx(self.expr(b, idx)?))
                    }
                    BinOp::Div if sb.is_empty() => {
                        IExpr::Bin(*op, bx(self.expr(a, idx)?), bx(self.expr(b, Vec::new())?))
                    }
                    _ => IExpr::Bin(*op, bx(self.expr(a, idx.clone())?), bx(self.expr(b, idx)?)),
                }
            }
            // [S-Prod]
            ExprKind::Prod(a, b) => {
                let ra = self.prog.shape(a).len().min(idx.len());
                let ib = idx.split_off(ra);
                IExpr::Bin(BinOp::Mul, bx(self.expr(a, idx)?), bx(self.expr(b, ib)?))
            }
            // [S-Red]
            ExprKind::Reduce(op, i, a) => {
                let sa = self.prog.shape(a);
                let p = insertion(i.value, idx.len())?;
                let n = sa.get(p).copied().ok_or_else(bad_position)?;
                let l = self.label(n);
                idx.insert(p, Ix::Var(l));
                IExpr::Reduce(*op, l, bx(self.expr(a, idx)?))
            }
            // [S-Transp]
            ExprKind::Transp(i, j, a) => {
                let (p, q) = (existing(i.value, idx.len())?, existing(j.value, idx.len())?);
                idx.swap(p, q);
                self.expr(a, idx)?
            }
            // [S-Diag]: the result keeps the dimension at min(i, j); the operand repeats its
            // index at max(i, j).
            ExprKind::Diag(i, j, a) => {
                let (lo, hi) = (i.value.min(j.value), i.value.max(j.value));
                let p = existing(lo, idx.len())?;
                let q = insertion(hi, idx.len())?;
                let k = idx[p];
                idx.insert(q, k);
                self.expr(a, idx)?
            }
            // [S-Contr]
            ExprKind::Contr(i, j, a) => {
                let (lo, hi) = (i.value.min(j.value), i.value.max(j.value));
                let p = insertion(lo, idx.len())?;
                let q = insertion(hi, idx.len() + 1)?;
                let n = self
                    .prog
                    .shape(a)
                    .get(p)
                    .copied()
                    .ok_or_else(bad_position)?;
                let l = self.label(n);
                idx.insert(p, Ix::Var(l));
                idx.insert(q, Ix::Var(l));
                IExpr::Reduce(RedOp::Sum, l, bx(self.expr(a, idx)?))
            }
            // [S-Expa]
            ExprKind::Expa(i, _, a) => {
                let p = existing(i.value, idx.len())?;
                idx.remove(p);
                self.expr(a, idx)?
            }
            // [S-Proj]
            ExprKind::Proj(i, m, a) => {
                let p = insertion(i.value, idx.len())?;
                if m.value == 0 {
                    return Err(bad_position());
                }
                idx.insert(p, Ix::Const(m.value - 1));
                self.expr(a, idx)?
            }
            ExprKind::Error => {
                return Err(Error::Internal("an error node in a checked program".into()));
            }
        })
    }

    /// Turns one assignment into steps: hoisting, lifting, alias handling, loop nests.
    fn schedule(&mut self, a: Assign) -> Result<(), Error> {
        let Assign {
            target,
            index,
            mut value,
            comment,
            lift,
            check_alias,
        } = a;
        let mut pre = Vec::new();
        let mut bound = index.clone();
        self.hoist(&mut value, &mut bound, lift, &mut pre, &comment)?;
        if lift {
            self.lift(&mut value, &mut pre, &comment)?;
            self.hoist(&mut value, &mut bound, lift, &mut pre, &comment)?;
        }
        if self.rewrites.split {
            self.split(&mut value, lift, &mut pre, &comment)?;
        }
        for p in pre {
            self.schedule(p)?;
        }
        let idx: Vec<Ix> = index.iter().map(|&l| Ix::Var(l)).collect();
        if check_alias && reads_elsewhere(&value, target, &idx) {
            // [St-Stmt] evaluates the whole right-hand side before the target changes.
            let t = self.temp(self.buffers[target.0].logical.clone())?;
            let name = self.buffers[target.0].c_name.clone();
            self.nest(t, &index, value, format!("{comment}  (into a temporary: the right-hand side reads `{name}` at other indices)"));
            self.steps.push(Step::Copy {
                comment: format!("{comment}  (copy back)"),
                dst: target,
                src: t,
            });
        } else {
            self.nest(target, &index, value, comment);
        }
        Ok(())
    }

    /// Moves every reduction that does not depend on some enclosing loop variable into a
    /// temporary indexed by the variables it does depend on. Exact: the same operations run,
    /// only fewer times.
    fn hoist(
        &mut self,
        e: &mut IExpr,
        bound: &mut Vec<Label>,
        lift: bool,
        pre: &mut Vec<Assign>,
        origin: &str,
    ) -> Result<(), Error> {
        let fr = matches!(e, IExpr::Reduce(..)).then(|| free(e));
        match e {
            IExpr::Reduce(_, l, body) => {
                let fr = fr.unwrap_or_default();
                let unused: u128 = bound
                    .iter()
                    .filter(|b| !fr.contains(b))
                    .map(|&b| u128::from(self.extent(b)))
                    .fold(1, u128::saturating_mul);
                if unused > 1 {
                    let labels: Vec<Label> = fr.into_iter().collect();
                    let value = std::mem::replace(e, IExpr::Lit(0.0));
                    *e = self.materialize(
                        &labels,
                        value,
                        lift,
                        pre,
                        format!("hoisted reduction for: {origin}"),
                    )?;
                    return Ok(());
                }
                bound.push(*l);
                let r = self.hoist(body, bound, lift, pre, origin);
                bound.pop();
                r
            }
            IExpr::Bin(_, a, b) => {
                self.hoist(a, bound, lift, pre, origin)?;
                self.hoist(b, bound, lift, pre, origin)
            }
            IExpr::Load(..) | IExpr::Lit(_) => Ok(()),
        }
    }

    /// Computes the inner sums of `Σ_l Σ_k a * b` (any outer reduction whose body is a sum of
    /// products of two loads that depends on `l`) into a temporary indexed by the inner sum's
    /// free labels (Rewrites::split). Exact: each inner sum is computed with the same operations
    /// in the same order, once, and the outer reduction folds the same values.
    fn split(
        &mut self,
        e: &mut IExpr,
        lift: bool,
        pre: &mut Vec<Assign>,
        origin: &str,
    ) -> Result<(), Error> {
        match e {
            IExpr::Reduce(_, l, body) => {
                if is_pair_sum(body) {
                    let labels: Vec<Label> = free(body).into_iter().collect();
                    let cells = labels
                        .iter()
                        .map(|&l| u128::from(self.extent(l)))
                        .fold(1u128, u128::saturating_mul);
                    if labels.contains(l) && cells <= MAX_SPLIT_CELLS {
                        let value = std::mem::replace(&mut **body, IExpr::Lit(0.0));
                        **body = self.materialize(
                            &labels,
                            value,
                            lift,
                            pre,
                            format!("inner sums for: {origin}"),
                        )?;
                        return Ok(());
                    }
                }
                self.split(body, lift, pre, origin)
            }
            IExpr::Bin(_, a, b) => {
                self.split(a, lift, pre, origin)?;
                self.split(b, lift, pre, origin)
            }
            IExpr::Load(..) | IExpr::Lit(_) => Ok(()),
        }
    }

    /// Schedules `tmp[labels] = value` before the current assignment and returns the load
    /// that replaces `value`.
    fn materialize(
        &mut self,
        labels: &[Label],
        value: IExpr,
        lift: bool,
        pre: &mut Vec<Assign>,
        comment: String,
    ) -> Result<IExpr, Error> {
        let shape = labels.iter().map(|&l| self.extent(l)).collect();
        let t = self.temp(shape)?;
        pre.push(Assign {
            target: t,
            index: labels.to_vec(),
            value,
            comment,
            lift,
            check_alias: false,
        });
        Ok(IExpr::Load(t, labels.iter().map(|&l| Ix::Var(l)).collect()))
    }

    /// Contraction lifting over every maximal sum-of-products region of `e`, innermost first.
    fn lift(&mut self, e: &mut IExpr, pre: &mut Vec<Assign>, origin: &str) -> Result<(), Error> {
        if is_region(e) {
            let mut leaves = Vec::new();
            region_leaves_mut(e, &mut leaves);
            for leaf in leaves {
                self.lift(leaf, pre, origin)?;
            }
            if let Some(new) = self.lift_region(e, pre, origin)? {
                *e = new;
            }
            return Ok(());
        }
        match e {
            IExpr::Bin(_, a, b) => {
                self.lift(a, pre, origin)?;
                self.lift(b, pre, origin)
            }
            IExpr::Reduce(_, _, b) => self.lift(b, pre, origin),
            IExpr::Load(..) | IExpr::Lit(_) => Ok(()),
        }
    }

    /// Plans the region rooted at `e` as a tree of pairwise contractions; returns the
    /// replacement (the last contraction, inline) when it takes fewer iterations than the
    /// fused loop nest over all of the region's labels.
    fn lift_region(
        &mut self,
        e: &IExpr,
        pre: &mut Vec<Assign>,
        origin: &str,
    ) -> Result<Option<IExpr>, Error> {
        let mut factors = Vec::new();
        let mut summed = Vec::new();
        region_parts(e, &mut factors, &mut summed);
        let n = factors.len();
        if !(2..=64).contains(&n) {
            return Ok(None);
        }
        let free_e = free(e);
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
            .map(|f| mask_of(&mut free(f).into_iter()))
            .collect();
        let all = lab.iter().fold(0u128, |m, &l| m | l);
        let dangling = mask_of(&mut summed.iter().copied()) & !all;
        let region = Region {
            extents: universe.iter().map(|&l| self.extent(l)).collect(),
            labels: universe.clone(),
            lab,
            fmask,
            dangling,
            full: if n == 64 { u64::MAX } else { (1u64 << n) - 1 },
            merge_ops: if self.rewrites.order { 2.0 } else { 1.0 },
        };
        // The fused nest runs every label's loop; with operation counting (Rewrites::order) each
        // iteration costs one multiplication per factor beyond the first and one addition.
        let fused = region.prod(fmask | mask_of(&mut summed.iter().copied()))
            * if self.rewrites.order { n as f64 } else { 1.0 };
        let plan = if n <= 10 {
            region.dp()
        } else {
            region.greedy()
        };
        let lifted = region.cost(&plan, true);
        if lifted >= fused {
            return Ok(None);
        }
        self.lifted += 1;
        let comment = format!("lifted contraction for: {origin}");
        self.build(&region, &factors, &plan, true, pre, &comment)
            .map(Some)
    }

    fn build(
        &mut self,
        r: &Region,
        factors: &[&IExpr],
        plan: &Plan,
        root: bool,
        pre: &mut Vec<Assign>,
        comment: &str,
    ) -> Result<IExpr, Error> {
        match plan {
            Plan::Leaf(k) => {
                let f = factors[*k].clone();
                let need = r.need(1u64 << k);
                let private = r.lab[*k] & !need;
                if private == 0 {
                    return Ok(f);
                }
                let value = r.wrap_sum(private, f);
                self.materialize(&r.labels_of(need), value, false, pre, comment.to_string())
            }
            Plan::Merge(m, a, b) => {
                let ea = self.build(r, factors, a, false, pre, comment)?;
                let eb = self.build(r, factors, b, false, pre, comment)?;
                let loops = r.need(a.mask()) | r.need(b.mask());
                let prod = IExpr::Bin(BinOp::Mul, Box::new(ea), Box::new(eb));
                if root {
                    return Ok(r.wrap_sum((loops & !r.fmask) | r.dangling, prod));
                }
                let keep = r.need(*m);
                let value = r.wrap_sum(loops & !keep, prod);
                let labels = if self.rewrites.order {
                    r.layout(keep)
                } else {
                    r.labels_of(keep)
                };
                self.materialize(&labels, value, false, pre, comment.to_string())
            }
        }
    }

    /// One loop nest for `target[index] = value`. A loop over a target dimension runs over the
    /// padded extent when the value there is provably zero (spec/padding.md). The innermost
    /// loop of a nest without reductions also runs over the padded extent when it is not (for
    /// vectorisation); a second nest then re-zeroes the padding it wrote.
    fn nest(&mut self, target: BufId, index: &[Label], value: IExpr, comment: String) {
        let zero = zero_labels(&value);
        let padded = |n: u64, pad: u64| n.checked_next_multiple_of(pad).unwrap_or(n);
        let rezero = index.last().copied().filter(|&l| {
            let n = self.extent(l);
            !zero.contains(&l) && padded(n, self.pad) > n && !has_reduction(&value)
        });
        let extent = |l: Label, lw: &Self| {
            let n = lw.extent(l);
            if zero.contains(&l) || rezero == Some(l) {
                padded(n, lw.pad)
            } else {
                n
            }
        };
        let mut accs = 0u32;
        let mut body = Vec::new();
        let v = emit(&value, &mut body, &mut accs, &self.labels);
        let store = |value| Node::Store {
            buf: target,
            index: index.iter().map(|&l| Ix::Var(l)).collect(),
            value,
        };
        body.push(store(v));
        let mut fix = vec![store(Val::Lit(0.0))];
        for &l in index.iter().rev() {
            let n = self.extent(l);
            body = vec![Node::Loop {
                var: l,
                start: 0,
                extent: extent(l, self),
                logical: n,
                body,
            }];
            fix = vec![Node::Loop {
                var: l,
                start: if rezero == Some(l) { n } else { 0 },
                extent: extent(l, self),
                logical: n,
                body: fix,
            }];
        }
        self.steps.push(Step::Nest { comment, body });
        if rezero.is_some() {
            self.steps.push(Step::Nest {
                comment: "re-zero the padding the innermost loop above wrote".to_string(),
                body: fix,
            });
        }
    }
}

/// `Σ_k a * b` with `a` and `b` loads: what a contraction nest computes.
fn is_pair_sum(e: &IExpr) -> bool {
    matches!(e, IExpr::Reduce(RedOp::Sum, _, body)
        if matches!(&**body, IExpr::Bin(BinOp::Mul, a, b)
            if matches!(**a, IExpr::Load(..)) && matches!(**b, IExpr::Load(..))))
}

fn has_reduction(e: &IExpr) -> bool {
    match e {
        IExpr::Reduce(..) => true,
        IExpr::Bin(_, a, b) => has_reduction(a) || has_reduction(b),
        IExpr::Load(..) | IExpr::Lit(_) => false,
    }
}

fn bad_position() -> Error {
    Error::Internal("a position outside the checker's shape".into())
}

/// The 0-based position of the 1-based `p` naming one of `len` existing dimensions.
fn existing(p: u64, len: usize) -> Result<usize, Error> {
    match usize::try_from(p) {
        Ok(p) if p >= 1 && p <= len => Ok(p - 1),
        _ => Err(bad_position()),
    }
}

/// The 0-based position of the 1-based `p` at which a dimension is inserted into `len`.
fn insertion(p: u64, len: usize) -> Result<usize, Error> {
    existing(p, len + 1)
}

/// Turns an index expression into accumulator code appended to `out` and the value it leaves.
fn emit(e: &IExpr, out: &mut Vec<Node>, accs: &mut u32, labels: &[u64]) -> Val {
    match e {
        IExpr::Load(b, idx) => Val::Load(*b, idx.clone()),
        IExpr::Lit(x) => Val::Lit(*x),
        IExpr::Bin(op, a, b) => {
            let va = emit(a, out, accs, labels);
            let vb = emit(b, out, accs, labels);
            Val::Bin(*op, Box::new(va), Box::new(vb))
        }
        IExpr::Reduce(op, l, body) => {
            let acc = *accs;
            *accs += 1;
            out.push(Node::AccInit { acc, op: *op });
            let mut inner = Vec::new();
            let v = emit(body, &mut inner, accs, labels);
            inner.push(Node::AccUpdate {
                acc,
                op: *op,
                value: v,
            });
            let n = labels[l.0 as usize];
            out.push(Node::Loop {
                var: *l,
                start: 0,
                extent: n,
                logical: n,
                body: inner,
            });
            Val::Acc(acc)
        }
    }
}

/// Labels that occur in `e` and are not bound inside it.
pub(crate) fn free(e: &IExpr) -> BTreeSet<Label> {
    let mut out = BTreeSet::new();
    fn go(e: &IExpr, out: &mut BTreeSet<Label>) {
        match e {
            IExpr::Load(_, idx) => out.extend(idx.iter().filter_map(|i| match i {
                Ix::Var(l) => Some(*l),
                Ix::Const(_) => None,
            })),
            IExpr::Lit(_) => {}
            IExpr::Bin(_, a, b) => {
                go(a, out);
                go(b, out);
            }
            IExpr::Reduce(_, l, body) => {
                let mut inner = BTreeSet::new();
                go(body, &mut inner);
                inner.remove(l);
                out.extend(inner);
            }
        }
    }
    go(e, &mut out);
    out
}

/// The labels `l` such that `e` is exactly zero (+0 or −0) whenever `l` takes a value in the
/// padding range, whatever the other labels are — given that every buffer's padding is zero.
/// This is the per-construct form of the report's Lemma 5(ii), restricted to what holds in
/// IEEE arithmetic with NaN and infinities (spec/padding.md):
///
/// - a load is zero when any of its index variables is in padding;
/// - `a ± b` and `a * b` are zero when both operands are (`0 * inf` is NaN, so one is not
///   enough), `c * a` and `a / c` with a finite (non-zero) literal `c` when `a` is;
/// - `a / b` is never known to be zero (`0 / 0` is NaN);
/// - a reduction over a logical range of zeros is zero.
pub(crate) fn zero_labels(e: &IExpr) -> BTreeSet<Label> {
    let finite = |e: &IExpr| matches!(e, IExpr::Lit(c) if c.is_finite());
    match e {
        IExpr::Load(_, idx) => idx
            .iter()
            .filter_map(|i| match i {
                Ix::Var(l) => Some(*l),
                Ix::Const(_) => None,
            })
            .collect(),
        IExpr::Lit(_) => BTreeSet::new(),
        IExpr::Bin(BinOp::Mul, a, b) if finite(a) => zero_labels(b),
        IExpr::Bin(BinOp::Mul, a, b) if finite(b) => zero_labels(a),
        IExpr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
            let za = zero_labels(a);
            let zb = zero_labels(b);
            za.intersection(&zb).copied().collect()
        }
        IExpr::Bin(BinOp::Div, a, b) if matches!(**b, IExpr::Lit(c) if c.is_finite() && c != 0.0) => {
            zero_labels(a)
        }
        IExpr::Bin(BinOp::Div, ..) => BTreeSet::new(),
        IExpr::Reduce(_, l, body) => {
            let mut z = zero_labels(body);
            z.remove(l);
            z
        }
    }
}

/// Whether `e` reads buffer `b` at an index other than `idx`.
fn reads_elsewhere(e: &IExpr, b: BufId, idx: &[Ix]) -> bool {
    match e {
        IExpr::Load(c, i) => *c == b && i.as_slice() != idx,
        IExpr::Lit(_) => false,
        IExpr::Bin(_, x, y) => reads_elsewhere(x, b, idx) || reads_elsewhere(y, b, idx),
        IExpr::Reduce(_, _, body) => reads_elsewhere(body, b, idx),
    }
}

/// Sum-of-products nodes: the distributive part of the language.
fn is_region(e: &IExpr) -> bool {
    matches!(
        e,
        IExpr::Reduce(RedOp::Sum, ..) | IExpr::Bin(BinOp::Mul, ..)
    )
}

fn region_leaves_mut<'a>(e: &'a mut IExpr, out: &mut Vec<&'a mut IExpr>) {
    match e {
        IExpr::Reduce(RedOp::Sum, _, b) => region_leaves_mut(b, out),
        IExpr::Bin(BinOp::Mul, a, b) => {
            region_leaves_mut(a, out);
            region_leaves_mut(b, out);
        }
        other => out.push(other),
    }
}

fn region_parts<'a>(e: &'a IExpr, factors: &mut Vec<&'a IExpr>, summed: &mut Vec<Label>) {
    match e {
        IExpr::Reduce(RedOp::Sum, l, b) => {
            summed.push(*l);
            region_parts(b, factors, summed);
        }
        IExpr::Bin(BinOp::Mul, a, b) => {
            region_parts(a, factors, summed);
            region_parts(b, factors, summed);
        }
        other => factors.push(other),
    }
}

/// A contraction order: which factors are multiplied (and summed) together first.
#[derive(Debug)]
enum Plan {
    Leaf(usize),
    /// The group of factors in the mask, made from two smaller groups.
    Merge(u64, Box<Plan>, Box<Plan>),
}

impl Plan {
    fn mask(&self) -> u64 {
        match self {
            Plan::Leaf(k) => 1u64 << k,
            Plan::Merge(m, ..) => *m,
        }
    }
}

/// A sum-of-products region `Σ_{summed} Π factors` as label bit masks over `labels`.
struct Region {
    labels: Vec<Label>,
    extents: Vec<u64>,
    /// Labels of each factor.
    lab: Vec<u128>,
    /// The region's free labels (bound outside it).
    fmask: u128,
    /// Summed labels no factor uses (each multiplies the result by its extent).
    dangling: u128,
    full: u64,
    /// Operations per iteration of a pairwise contraction: 1 counts iterations (issue 4's
    /// model), 2 counts a multiplication and an addition (Rewrites::order).
    merge_ops: f64,
}

impl Region {
    fn lab_of(&self, s: u64) -> u128 {
        (0..self.lab.len())
            .filter(|k| s >> k & 1 == 1)
            .fold(0, |m, k| m | self.lab[k])
    }

    /// The labels a group must keep: those used outside it.
    fn need(&self, s: u64) -> u128 {
        self.lab_of(s) & (self.fmask | self.lab_of(self.full & !s))
    }

    fn prod(&self, m: u128) -> f64 {
        (0..self.extents.len())
            .filter(|b| m >> b & 1 == 1)
            .map(|b| self.extents[b] as f64)
            .product()
    }

    fn labels_of(&self, m: u128) -> Vec<Label> {
        (0..self.labels.len())
            .filter(|b| m >> b & 1 == 1)
            .map(|b| self.labels[b])
            .collect()
    }

    /// The dimension order of a temporary of a lifted plan holding the labels `keep`
    /// (Rewrites::order): label order, except that the region's last free label (the statement
    /// target's innermost dimension), if the temporary has it, is innermost. The kernels that
    /// compute and read the temporary then run along the target's innermost dimension, as the
    /// statement's own nest does.
    fn layout(&self, keep: u128) -> Vec<Label> {
        let mut labels = self.labels_of(keep);
        let last = self.labels_of(self.fmask).pop();
        if let Some(p) = labels.iter().position(|&l| Some(l) == last) {
            let l = labels.remove(p);
            labels.push(l);
        }
        labels
    }

    /// `Σ_{l in m} e`, outermost label first.
    fn wrap_sum(&self, m: u128, e: IExpr) -> IExpr {
        self.labels_of(m)
            .into_iter()
            .rev()
            .fold(e, |acc, l| IExpr::Reduce(RedOp::Sum, l, Box::new(acc)))
    }

    fn single(&self, k: usize) -> f64 {
        if self.lab[k] & !self.need(1u64 << k) == 0 {
            0.0
        } else {
            self.prod(self.lab[k])
        }
    }

    fn merge(&self, a: u64, b: u64, root: bool) -> f64 {
        let loops = self.prod(self.need(a) | self.need(b)) * self.merge_ops;
        if root {
            loops * self.prod(self.dangling)
        } else {
            loops
        }
    }

    /// Iterations of all loop nests the plan produces.
    fn cost(&self, p: &Plan, root: bool) -> f64 {
        match p {
            Plan::Leaf(k) => self.single(*k),
            Plan::Merge(_, a, b) => {
                self.cost(a, false) + self.cost(b, false) + self.merge(a.mask(), b.mask(), root)
            }
        }
    }

    /// The cheapest plan, by dynamic programming over subsets (few factors).
    fn dp(&self) -> Plan {
        let n = self.lab.len();
        let size = 1usize << n;
        let mut best = vec![0.0f64; size];
        let mut choice = vec![0u64; size];
        for s in 1..size as u64 {
            if s.count_ones() == 1 {
                best[s as usize] = self.single(s.trailing_zeros() as usize);
                continue;
            }
            let root = s == self.full;
            let mut b = f64::INFINITY;
            let mut c = 0;
            let mut sub = (s - 1) & s;
            while sub > 0 {
                let other = s ^ sub;
                if sub < other {
                    let cost =
                        best[sub as usize] + best[other as usize] + self.merge(sub, other, root);
                    if cost < b {
                        b = cost;
                        c = sub;
                    }
                }
                sub = (sub - 1) & s;
            }
            best[s as usize] = b;
            choice[s as usize] = c;
        }
        fn plan(s: u64, choice: &[u64]) -> Plan {
            if s.count_ones() == 1 {
                return Plan::Leaf(s.trailing_zeros() as usize);
            }
            let c = choice[s as usize];
            Plan::Merge(s, Box::new(plan(c, choice)), Box::new(plan(s ^ c, choice)))
        }
        plan(self.full, &choice)
    }

    /// A good plan for many factors: repeatedly contract the pair with the smallest loop nest.
    fn greedy(&self) -> Plan {
        let mut groups: Vec<Plan> = (0..self.lab.len()).map(Plan::Leaf).collect();
        while groups.len() > 2 {
            let mut best = (f64::INFINITY, 0, 1);
            for i in 0..groups.len() {
                for j in i + 1..groups.len() {
                    let c = self.merge(groups[i].mask(), groups[j].mask(), false);
                    if c < best.0 {
                        best = (c, i, j);
                    }
                }
            }
            let (_, i, j) = best;
            let b = groups.remove(j);
            let a = groups.remove(i);
            groups.push(Plan::Merge(a.mask() | b.mask(), Box::new(a), Box::new(b)));
        }
        let b = groups.pop();
        let a = groups.pop();
        match (a, b) {
            (Some(a), Some(b)) => Plan::Merge(self.full, Box::new(a), Box::new(b)),
            (None, Some(b)) | (Some(b), None) => b,
            (None, None) => Plan::Leaf(0),
        }
    }
}
