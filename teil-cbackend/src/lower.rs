//! Lowering a checked program to the loop IR: the semantic lowering, in two stages (1 and 3
//! below) with the scheduling passes of `crate::opt` between them.
//!
//! 1. **Assignments** ([`assignments`]). Each statement `x = e` ([St-Stmt]) becomes a
//!    tensor-level [`Assign`]: `x[l_1, ..., l_r] = v` for every index, with one fresh [`Label`]
//!    per dimension of `x` and `v` an [`IExpr`], the meaning of `e` at that symbolic
//!    multi-index. The labels are pushed down through the tree exactly as the equations of
//!    spec/semantics.md push indices down ([S-Transp] permutes them, [S-Diag] duplicates one,
//!    [S-Expa] drops one, [S-Proj] inserts a constant, [S-Prod] splits them, [S-Red] and
//!    [S-Contr] bind a fresh summation label). No product, diagonal or transposition is ever
//!    materialised: they only change index lists. Private copies of assigned inputs and the
//!    NaN fill of variables whose undefined value is observable are items of the same list
//!    ([`Item`]). The result, [`Assignments`], is this module's intermediate form; its
//!    `Display` is the text the pass tests assert on.
//! 2. **Scheduling** (`crate::opt::schedule`, not here). Passes rewrite one assignment at a
//!    time: they replace parts of its value by loads of temporaries and add the assignments
//!    computing those temporaries to [`Assign::pre`]. Every temporary is made by
//!    [`Context::materialize`] (through [`Context::temp`], which names it and fixes its place in
//!    the workspace), and every assignment's loops get their extents from [`zero_labels`] at
//!    emission, so neither rule has a second copy.
//! 3. **Emission** ([`Assignments::emit`]). Each assignment becomes one loop nest, after the
//!    assignments of its `pre` (recursively). A loop over a dimension of the target runs over
//!    the padded extent only when [`zero_labels`] proves the value computed in padding is
//!    zero; reduction loops always run over logical extents. A statement whose value still
//!    reads its target at a different index is computed into a temporary and copied back
//!    ([St-Stmt] evaluates the whole right-hand side first).
//!
//! Emission calls the scheduling of each assignment just before emitting it, statement by
//! statement: temporaries are therefore named (`tmp0`, `tmp1`, ...) and laid out in the order
//! the statements create them — a statement's own temporaries, then those of its temporaries'
//! assignments, depth first, then its alias temporary — before the next statement's.
//!
//! Which nests become contraction kernels or tiled nests is decided afterwards, by the
//! kernel-form passes of `crate::opt` (`opt::pipeline`). This module imports nothing from
//! `crate::opt`.
//!
//! Shapes are read from the checker ([`CheckedProgram::shape`]), never re-derived.

use crate::ir::*;
use crate::names::Names;
use crate::{Error, Options};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use teil::ast::{BinOp, ElemType, Expr, ExprKind, Func, Func2, RedOp};
use teil::fmt::Style;
use teil::CheckedProgram;

/// A scalar expression evaluated at one point of an index space.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum IExpr {
    Load(BufId, Vec<Ix>),
    Lit(f64),
    Bin(BinOp, Box<IExpr>, Box<IExpr>),
    /// A left fold of `op` over the logical extent of the label ([S-Red], [S-Contr]).
    Reduce(RedOp, Label, Box<IExpr>),
    /// [S-Func]: `f` in its operand's element type.
    Func(Func, Box<IExpr>),
    /// [S-Func2].
    Func2(Func2, Box<IExpr>, Box<IExpr>),
    /// [S-Conv], and a binary32 literal: `Convert(F32, Lit(x))` with `x` its value, exactly
    /// representable ([`Val::Convert`]).
    Convert(ElemType, Box<IExpr>),
}

/// The visitor of [`IExpr::walk_mut`].
pub(crate) type Rewrite<'a> = dyn FnMut(&mut IExpr, &[Label]) -> Result<Walk, Error> + 'a;

/// What a walk over an [`IExpr`] does after visiting a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Visit the node's operands (or body) next.
    Into,
    /// Skip them.
    Past,
}

impl IExpr {
    /// Visits `self` and its subexpressions in pre-order, left operand first, entering a
    /// node's operands only when `f` says [`Walk::Into`]. `f` also sees the labels in scope:
    /// `bound` as given, then the labels of the reductions around the node inside `self`,
    /// outermost first. The one read-only traversal of index expressions; [`IExpr::walk_mut`]
    /// is the same walk for rewrites.
    pub(crate) fn walk<'a>(
        &'a self,
        bound: &mut Vec<Label>,
        f: &mut dyn FnMut(&'a IExpr, &[Label]) -> Walk,
    ) {
        if f(self, bound) == Walk::Past {
            return;
        }
        match self {
            IExpr::Load(..) | IExpr::Lit(_) => {}
            IExpr::Bin(_, a, b) | IExpr::Func2(_, a, b) => {
                a.walk(bound, f);
                b.walk(bound, f);
            }
            IExpr::Func(_, a) | IExpr::Convert(_, a) => a.walk(bound, f),
            IExpr::Reduce(_, l, body) => {
                bound.push(*l);
                body.walk(bound, f);
                bound.pop();
            }
        }
    }

    /// [`IExpr::walk`] for rewrites: `f` may replace the node it is given (and then usually
    /// says [`Walk::Past`]); the first error stops the walk.
    pub(crate) fn walk_mut(
        &mut self,
        bound: &mut Vec<Label>,
        f: &mut Rewrite<'_>,
    ) -> Result<(), Error> {
        if f(self, bound)? == Walk::Past {
            return Ok(());
        }
        match self {
            IExpr::Load(..) | IExpr::Lit(_) => Ok(()),
            IExpr::Bin(_, a, b) | IExpr::Func2(_, a, b) => {
                a.walk_mut(bound, f)?;
                b.walk_mut(bound, f)
            }
            IExpr::Func(_, a) | IExpr::Convert(_, a) => a.walk_mut(bound, f),
            IExpr::Reduce(_, l, body) => {
                bound.push(*l);
                let r = body.walk_mut(bound, f);
                bound.pop();
                r
            }
        }
    }

    /// Labels that occur in `self` and are not bound inside it.
    pub(crate) fn free(&self) -> BTreeSet<Label> {
        let mut out = BTreeSet::new();
        self.walk(&mut Vec::new(), &mut |e, bound| {
            if let IExpr::Load(_, idx) = e {
                out.extend(vars(idx).filter(|l| !bound.contains(l)));
            }
            Walk::Into
        });
        out
    }

    fn has_reduction(&self) -> bool {
        let mut found = false;
        self.walk(&mut Vec::new(), &mut |e, _| {
            found |= matches!(e, IExpr::Reduce(..));
            if found {
                Walk::Past
            } else {
                Walk::Into
            }
        });
        found
    }

    /// The element type of the value (as [`Kernel::val_elem`]): a load's buffer's, a
    /// conversion's target, an operation's operands'; binary64 for a bare literal.
    pub(crate) fn elem(&self, buffers: &[Buffer]) -> ElemType {
        match self {
            IExpr::Load(b, _) => buffers[b.0].elem,
            IExpr::Lit(_) => ElemType::F64,
            IExpr::Convert(t, _) => *t,
            IExpr::Func(_, a) | IExpr::Reduce(_, _, a) => a.elem(buffers),
            IExpr::Bin(_, a, b) | IExpr::Func2(_, a, b) => a.elem(buffers).max(b.elem(buffers)),
        }
    }

    /// Whether the value computes in binary64 with `+ - * /` and folds only: every buffer it
    /// reads is binary64 and it applies no function or conversion. The passes that reassociate
    /// (contraction lifting) or print kernel forms written for binary64 arithmetic act only on
    /// such values.
    pub(crate) fn binary64(&self, buffers: &[Buffer]) -> bool {
        let mut plain = true;
        self.walk(&mut Vec::new(), &mut |e, _| {
            plain &= match e {
                IExpr::Load(b, _) => buffers[b.0].elem == ElemType::F64,
                IExpr::Func(..) | IExpr::Func2(..) | IExpr::Convert(..) => false,
                IExpr::Lit(_) | IExpr::Bin(..) | IExpr::Reduce(..) => true,
            };
            Walk::Into
        });
        plain
    }

    /// The value of a literal, in either element type (`c` or `Convert(t, c)`).
    pub(crate) fn literal(&self) -> Option<f64> {
        match self {
            IExpr::Lit(x) => Some(*x),
            IExpr::Convert(_, a) => match **a {
                IExpr::Lit(x) => Some(x),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether `self` reads buffer `b` at an index other than `idx`.
    fn reads_elsewhere(&self, b: BufId, idx: &[Ix]) -> bool {
        let mut found = false;
        self.walk(&mut Vec::new(), &mut |e, _| {
            found |= matches!(e, IExpr::Load(c, i) if *c == b && i.as_slice() != idx);
            Walk::Into
        });
        found
    }
}

/// The loop variables of an index, in order.
fn vars(idx: &[Ix]) -> impl Iterator<Item = Label> + '_ {
    idx.iter().filter_map(|i| match i {
        Ix::Var(l) => Some(*l),
        Ix::Const(_) => None,
    })
}

/// `target[index] = value` for every index of the target's shape.
#[derive(Clone, Debug)]
pub(crate) struct Assign {
    pub target: BufId,
    /// One label per dimension of the target, each once.
    pub index: Vec<Label>,
    pub value: IExpr,
    /// The TeIL statement (or the reason for a temporary), kept as the nest's comment.
    pub comment: String,
    /// Whether contraction lifting may rewrite this assignment (`Options::lift` for
    /// statements; temporaries of lifted plans are not lifted again).
    pub lift: bool,
    /// Whether `value` may read `target` (only user statements can), so that emission must
    /// check for reads at other indices.
    pub check_alias: bool,
    /// The assignments of the temporaries `value` reads, computed first, in this order (each
    /// with its own `pre`). Stage 1 leaves it empty; the scheduling passes fill it.
    pub pre: Vec<Assign>,
}

/// One action of the program, in order.
#[derive(Clone, Debug)]
pub(crate) enum Item {
    Assign(Assign),
    /// Copies a whole padded buffer (a private copy of an input the program assigns).
    Copy {
        comment: String,
        dst: BufId,
        src: BufId,
    },
    /// Stores `•` into every logical cell of `buf` (`index`: one fresh label per dimension).
    Fill {
        comment: String,
        buf: BufId,
        index: Vec<Label>,
    },
}

/// The buffers and labels of the kernel being lowered: what the scheduling passes read
/// (extents) and extend (temporaries), and what emission turns into a [`Kernel`].
pub(crate) struct Context {
    name: String,
    pad: u64,
    /// Fused multiply-add mode ([`Kernel::fma`]).
    fma: bool,
    /// Parallel outer loops ([`Kernel::openmp`]).
    openmp: bool,
    /// The machine's sizes ([`Kernel::sizes`]).
    sizes: crate::machine::Sizes,
    /// Logical extent of each label.
    labels: Vec<u64>,
    buffers: Vec<Buffer>,
    params: Vec<BufId>,
    temps: usize,
    /// How many sum-of-products regions contraction lifting rewrote ([`Kernel::lifted`]).
    pub lifted: usize,
    /// Whether sums may be reassociated ([`Kernel::reassociate`]).
    reassociate: bool,
}

/// What emission calls on each assignment before emitting it: the scheduling passes.
pub(crate) type Schedule<'a> = dyn FnMut(&mut Context, &mut Assign) -> Result<(), Error> + 'a;

/// A program as tensor-level assignments: the result of stage 1, rewritten by the scheduling
/// passes and turned into the loop IR by [`Assignments::emit`].
pub(crate) struct Assignments {
    pub cx: Context,
    pub items: Vec<Item>,
}

/// Temporaries one program may create before lowering gives up (a guard, not a real limit).
const MAX_TEMPS: usize = 100_000;

/// The most doubles one buffer (padded), and the workspace, may hold: 2^60 - 1, so that its
/// size in bytes fits `ptrdiff_t` (at most 2^63 - 1 on the 64-bit targets of spec/abi.md). C
/// defines pointer arithmetic and differences only within one object, and compilers and
/// `malloc` (glibc refuses larger requests) assume an object is smaller than `PTRDIFF_MAX`
/// bytes; the `long long` element indices of the loops are then far from overflowing. (The
/// element count alone, 2^63 - 1 at the checker, would put the byte size at 2^66.)
const MAX_ELEMENTS: u64 = i64::MAX as u64 / 8;

/// Longest statement comment kept in the C source.
const MAX_COMMENT: usize = 240;

/// Stage 1: the checked program as a list of assignments (and copies and fills).
pub(crate) fn assignments(prog: &CheckedProgram, opts: &Options) -> Result<Assignments, Error> {
    if opts.pad == 0 {
        return Err(Error::BadPad(opts.pad));
    }
    crate::names::check_function_name(&opts.name)
        .map_err(|why| Error::BadName(opts.name.clone(), why))?;
    let mut lw = Lowerer {
        prog,
        lift: opts.lift,
        cx: Context {
            name: opts.name.clone(),
            pad: opts.pad,
            fma: opts.fma,
            openmp: opts.openmp,
            sizes: opts.sizes,
            labels: Vec::new(),
            buffers: Vec::new(),
            params: Vec::new(),
            temps: 0,
            lifted: 0,
            reassociate: opts.lift,
        },
        var_buf: BTreeMap::new(),
        items: Vec::new(),
        names: Names::default(),
    };
    let program = prog.program();
    let interface: BTreeSet<&str> = prog.interface().map(|d| d.name.name.as_str()).collect();

    // Parameters and internal variables, in declaration order.
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
        let b = lw
            .cx
            .buffer(Some(name.to_string()), c_name, role, shape, d.elem)?;
        if role != Role::Internal {
            lw.cx.params.push(b);
        }
        lw.var_buf.insert(name.to_string(), b);
    }
    // Input-only parameters the program assigns get a private copy: the caller's buffer is
    // never written (spec/abi.md).
    for d in &program.decls {
        let name = d.name.name.as_str();
        let b = lw.var_buf[name];
        if lw.cx.buffers[b.0].role
            == (Role::Param {
                input: true,
                output: false,
            })
            && prog.var_init(name).is_some_and(|v| v.written())
        {
            let c_name = lw.names.variable(&format!("{name}_copy"));
            let logical = lw.cx.buffers[b.0].logical.clone();
            let copy = lw.cx.buffer(
                Some(name.to_string()),
                c_name,
                Role::InputCopy,
                logical,
                d.elem,
            )?;
            lw.items.push(Item::Copy {
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
            let buf = lw.var_buf[name];
            let shape = lw.cx.buffers[buf.0].logical.clone();
            let index = shape.iter().map(|&n| lw.cx.label(n)).collect();
            lw.items.push(Item::Fill {
                comment: format!("`{name}` {why}: it holds the undefined value (NaN)"),
                buf,
                index,
            });
        }
    }
    for stmt in &program.stmts {
        let target =
            lw.var_buf.get(&stmt.target.name).copied().ok_or_else(|| {
                Error::Internal(format!("undeclared target `{}`", stmt.target.name))
            })?;
        let shape = lw.cx.buffers[target.0].logical.clone();
        let index: Vec<Label> = shape.iter().map(|&n| lw.cx.label(n)).collect();
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
        lw.items.push(Item::Assign(Assign {
            target,
            index,
            value,
            comment,
            lift: lw.lift,
            check_alias: true,
            pre: Vec::new(),
        }));
    }
    Ok(Assignments {
        cx: lw.cx,
        items: lw.items,
    })
}

/// Stage 1's state: the variables' buffers and the items built so far.
struct Lowerer<'p> {
    prog: &'p CheckedProgram,
    lift: bool,
    cx: Context,
    /// The buffer statements read and write for each variable.
    var_buf: BTreeMap<String, BufId>,
    items: Vec<Item>,
    names: Names,
}

impl Lowerer<'_> {
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
            // [S-Lit], the decimal rounded once to the literal's element type
            ExprKind::Lit(x) => match self.prog.elem(e) {
                ElemType::F64 => IExpr::Lit(x.value),
                t => IExpr::Convert(t, bx(IExpr::Lit(x.in_type(t)))),
            },
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
                let l = self.cx.label(n);
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
                let l = self.cx.label(n);
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
            // [S-Func]
            ExprKind::Func(f, a) => IExpr::Func(*f, bx(self.expr(a, idx)?)),
            // [S-Func2]
            ExprKind::Func2(f, a, b) => {
                IExpr::Func2(*f, bx(self.expr(a, idx.clone())?), bx(self.expr(b, idx)?))
            }
            // [S-Conv]
            ExprKind::Convert(t, a) => IExpr::Convert(*t, bx(self.expr(a, idx)?)),
            ExprKind::Error => {
                return Err(Error::Internal("an error node in a checked program".into()));
            }
        })
    }
}

impl Context {
    fn label(&mut self, extent: u64) -> Label {
        self.labels.push(extent);
        Label(self.labels.len() as u32 - 1)
    }

    /// The logical extent of a label.
    pub(crate) fn extent(&self, l: Label) -> u64 {
        self.labels[l.0 as usize]
    }

    /// Whether `e` computes in binary64 with `+ - * /` only ([`IExpr::binary64`]).
    pub(crate) fn binary64(&self, e: &IExpr) -> bool {
        e.binary64(&self.buffers)
    }

    fn buffer(
        &mut self,
        var: Option<String>,
        c_name: String,
        role: Role,
        logical: Vec<u64>,
        elem: ElemType,
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
            elem,
        });
        Ok(BufId(self.buffers.len() - 1))
    }

    /// A new temporary of the given logical shape and element type: the one place temporaries
    /// are made. It is named `tmp<n>` by creation order, and its buffer comes after every
    /// buffer made before it, which is its order in the workspace.
    fn temp(&mut self, logical: Vec<u64>, elem: ElemType) -> Result<BufId, Error> {
        if self.temps >= MAX_TEMPS {
            return Err(Error::TooComplex);
        }
        let name = format!("tmp{}", self.temps);
        self.temps += 1;
        self.buffer(None, name, Role::Temp, logical, elem)
    }

    /// Adds `tmp[labels] = value` to `pre` (a new temporary, [`Context::temp`]) and returns
    /// the load that replaces `value`. `lift` is the new assignment's [`Assign::lift`].
    pub(crate) fn materialize(
        &mut self,
        pre: &mut Vec<Assign>,
        labels: &[Label],
        value: IExpr,
        lift: bool,
        comment: String,
    ) -> Result<IExpr, Error> {
        let shape = labels.iter().map(|&l| self.extent(l)).collect();
        let elem = value.elem(&self.buffers);
        let t = self.temp(shape, elem)?;
        pre.push(Assign {
            target: t,
            index: labels.to_vec(),
            value,
            comment,
            lift,
            check_alias: false,
            pre: Vec::new(),
        });
        Ok(IExpr::Load(t, labels.iter().map(|&l| Ix::Var(l)).collect()))
    }

    /// Emits one assignment: the assignments of its `pre` first (recursively), then its nest,
    /// through a temporary and a copy when a statement reads its target at other indices.
    fn assign(&mut self, a: Assign, steps: &mut Vec<Step>) -> Result<(), Error> {
        let Assign {
            target,
            index,
            value,
            comment,
            check_alias,
            pre,
            ..
        } = a;
        for p in pre {
            self.assign(p, steps)?;
        }
        let idx: Vec<Ix> = index.iter().map(|&l| Ix::Var(l)).collect();
        if check_alias && value.reads_elsewhere(target, &idx) {
            // [St-Stmt] evaluates the whole right-hand side before the target changes.
            let b = &self.buffers[target.0];
            let t = self.temp(b.logical.clone(), b.elem)?;
            let name = self.buffers[target.0].c_name.clone();
            self.nest(t, &index, value, format!("{comment}  (into a temporary: the right-hand side reads `{name}` at other indices)"), steps);
            steps.push(Step::Copy {
                comment: format!("{comment}  (copy back)"),
                dst: target,
                src: t,
            });
        } else {
            self.nest(target, &index, value, comment, steps);
        }
        Ok(())
    }

    /// One loop nest for `target[index] = value`. A loop over a target dimension runs over the
    /// padded extent when the value there is provably zero (spec/padding.md). The innermost
    /// loop of a nest without reductions also runs over the padded extent when it is not (for
    /// vectorisation); a second nest then re-zeroes the padding it wrote.
    fn nest(
        &self,
        target: BufId,
        index: &[Label],
        value: IExpr,
        comment: String,
        steps: &mut Vec<Step>,
    ) {
        let zero = zero_labels(&value);
        let padded = |n: u64, pad: u64| n.checked_next_multiple_of(pad).unwrap_or(n);
        let rezero = index.last().copied().filter(|&l| {
            let n = self.extent(l);
            !zero.contains(&l) && padded(n, self.pad) > n && !value.has_reduction()
        });
        let extent = |l: Label| {
            let n = self.extent(l);
            if zero.contains(&l) || rezero == Some(l) {
                padded(n, self.pad)
            } else {
                n
            }
        };
        let mut accs = 0u32;
        let mut body = Vec::new();
        let v = scalar(&value, &mut body, &mut accs, &self.labels, &self.buffers);
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
                extent: extent(l),
                logical: n,
                body,
            }];
            fix = vec![Node::Loop {
                var: l,
                start: if rezero == Some(l) { n } else { 0 },
                extent: extent(l),
                logical: n,
                body: fix,
            }];
        }
        steps.push(Step::Nest { comment, body });
        if rezero.is_some() {
            steps.push(Step::Nest {
                comment: "re-zero the padding the innermost loop above wrote".to_string(),
                body: fix,
            });
        }
    }

    /// The nest storing `•` into every logical cell of `buf`.
    fn fill(&self, buf: BufId, index: &[Label], comment: String) -> Step {
        let mut body = vec![Node::Store {
            buf,
            index: index.iter().map(|&l| Ix::Var(l)).collect(),
            value: Val::Undefined,
        }];
        for &l in index.iter().rev() {
            let n = self.extent(l);
            body = vec![Node::Loop {
                var: l,
                start: 0,
                extent: n,
                logical: n,
                body,
            }];
        }
        Step::Nest { comment, body }
    }

    /// The kernel of the emitted steps, with every used non-parameter buffer laid out in the
    /// workspace in buffer order, each at a 64-byte multiple.
    fn finish(self, steps: Vec<Step>) -> Result<Kernel, Error> {
        let mut kernel = Kernel {
            name: self.name,
            pad: self.pad,
            buffers: self.buffers,
            params: self.params,
            steps,
            workspace: 0,
            lifted: self.lifted,
            reassociate: self.reassociate,
            openmp: self.openmp,
            fma: self.fma,
            sizes: self.sizes,
        };
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

    /// One assignment and its `pre` as text, in emission order (the `pre` assignments first),
    /// one line each: `target[l0, l1] = value // comment`.
    pub(crate) fn text(&self, a: &Assign) -> String {
        let mut out = String::new();
        self.write_assign(&mut out, a);
        out
    }

    fn write_assign(&self, out: &mut String, a: &Assign) {
        for p in &a.pre {
            self.write_assign(out, p);
        }
        let idx: Vec<Ix> = a.index.iter().map(|&l| Ix::Var(l)).collect();
        out.push_str(&format!(
            "{} = {} // {}\n",
            self.access(a.target, &idx),
            self.expr_text(&a.value),
            a.comment.replace('\n', " ")
        ));
    }

    fn access(&self, b: BufId, idx: &[Ix]) -> String {
        format!("{}[{}]", self.name(b), crate::ir::index_text(idx))
    }

    fn name(&self, b: BufId) -> String {
        self.buffers
            .get(b.0)
            .map_or_else(|| format!("#{}", b.0), |b| b.c_name.clone())
    }

    /// An index expression as text: loads `A[l0, 2]`, `(a op b)`, `(red+ l3 < 4: body)`.
    fn expr_text(&self, e: &IExpr) -> String {
        match e {
            IExpr::Load(b, idx) => self.access(*b, idx),
            IExpr::Lit(x) => format!("{x:?}"),
            IExpr::Bin(op, a, b) => format!(
                "({} {} {})",
                self.expr_text(a),
                op.symbol(),
                self.expr_text(b)
            ),
            IExpr::Reduce(op, l, body) => format!(
                "({} l{} < {}: {})",
                op.keyword(),
                l.0,
                self.extent(*l),
                self.expr_text(body)
            ),
            IExpr::Func(f, a) => format!("({} {})", f.keyword(), self.expr_text(a)),
            IExpr::Func2(f, a, b) => format!(
                "({} {} {})",
                f.keyword(),
                self.expr_text(a),
                self.expr_text(b)
            ),
            IExpr::Convert(t, a) => format!("({t} {})", self.expr_text(a)),
        }
    }
}

impl Assignments {
    /// Stage 3: emits every item in order into a [`Kernel`], calling `schedule` on each
    /// assignment just before emitting it (the scheduling passes; `|_, _| Ok(())` for none).
    pub(crate) fn emit(self, schedule: &mut Schedule<'_>) -> Result<Kernel, Error> {
        let Assignments { mut cx, items } = self;
        let mut steps = Vec::new();
        for item in items {
            match item {
                Item::Assign(mut a) => {
                    schedule(&mut cx, &mut a)?;
                    cx.assign(a, &mut steps)?;
                }
                Item::Copy { comment, dst, src } => steps.push(Step::Copy { comment, dst, src }),
                Item::Fill {
                    comment,
                    buf,
                    index,
                } => steps.push(cx.fill(buf, &index, comment)),
            }
        }
        cx.finish(steps)
    }
}

/// The program as text: one line per item, each assignment after its `pre` assignments.
impl fmt::Display for Assignments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cx = &self.cx;
        for item in &self.items {
            match item {
                Item::Assign(a) => f.write_str(&cx.text(a))?,
                Item::Copy { comment, dst, src } => writeln!(
                    f,
                    "copy {} <- {} // {comment}",
                    cx.name(*dst),
                    cx.name(*src)
                )?,
                Item::Fill {
                    comment,
                    buf,
                    index,
                } => {
                    let idx: Vec<Ix> = index.iter().map(|&l| Ix::Var(l)).collect();
                    writeln!(f, "{} = undefined // {comment}", cx.access(*buf, &idx))?
                }
            }
        }
        Ok(())
    }
}

/// Turns an index expression into accumulator code appended to `out` and the value it leaves.
fn scalar(
    e: &IExpr,
    out: &mut Vec<Node>,
    accs: &mut u32,
    labels: &[u64],
    buffers: &[Buffer],
) -> Val {
    let mut go = |e: &IExpr, out: &mut Vec<Node>| Box::new(scalar(e, out, accs, labels, buffers));
    match e {
        IExpr::Load(b, idx) => Val::Load(*b, idx.clone()),
        IExpr::Lit(x) => Val::Lit(*x),
        IExpr::Bin(op, a, b) => {
            let va = go(a, out);
            Val::Bin(*op, va, go(b, out))
        }
        IExpr::Func(f, a) => Val::Func(*f, go(a, out)),
        IExpr::Func2(f, a, b) => {
            let va = go(a, out);
            Val::Func2(*f, va, go(b, out))
        }
        IExpr::Convert(t, a) => Val::Convert(*t, go(a, out)),
        IExpr::Reduce(op, l, body) => {
            let acc = *accs;
            *accs += 1;
            let elem = body.elem(buffers);
            out.push(Node::AccInit { acc, op: *op, elem });
            let mut inner = Vec::new();
            let v = scalar(body, &mut inner, accs, labels, buffers);
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

/// The labels `l` such that `e` is exactly zero (+0 or −0) whenever `l` takes a value in the
/// padding range, whatever the other labels are — given that every buffer's padding is zero.
/// This is the per-construct form of the report's Lemma 5(ii), restricted to what holds in
/// IEEE arithmetic with NaN and infinities (spec/padding.md):
///
/// - a load is zero when any of its index variables is in padding;
/// - `a ± b` and `a * b` are zero when both operands are (`0 * inf` is NaN, so one is not
///   enough), `c * a` and `a / c` with a finite (non-zero) literal `c` when `a` is;
/// - `a / b` is never known to be zero (`0 / 0` is NaN);
/// - a reduction over a logical range of zeros is zero;
/// - a conversion, `abs`, `sqrt`, `tanh` and `erf` are zero when their operand is, `max` and
///   `min` when both operands are; `exp` and `log` never are.
pub(crate) fn zero_labels(e: &IExpr) -> BTreeSet<Label> {
    let finite = |e: &IExpr| e.literal().is_some_and(f64::is_finite);
    match e {
        IExpr::Load(_, idx) => vars(idx).collect(),
        IExpr::Lit(_) => BTreeSet::new(),
        // A conversion rounds a zero to the same zero.
        IExpr::Convert(_, a) => zero_labels(a),
        // Zero to zero: |±0| = +0, √±0 = ±0, tanh ±0 = ±0, erf ±0 = ±0; not exp 0 = 1 or
        // log 0 = -∞.
        IExpr::Func(Func::Abs | Func::Sqrt | Func::Tanh | Func::Erf, a) => zero_labels(a),
        IExpr::Func(Func::Exp | Func::Log, _) => BTreeSet::new(),
        // maximum and minimum of two zeros are a zero.
        IExpr::Func2(_, a, b) => {
            let za = zero_labels(a);
            let zb = zero_labels(b);
            za.intersection(&zb).copied().collect()
        }
        IExpr::Bin(BinOp::Mul, a, b) if finite(a) => zero_labels(b),
        IExpr::Bin(BinOp::Mul, a, b) if finite(b) => zero_labels(a),
        IExpr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
            let za = zero_labels(a);
            let zb = zero_labels(b);
            za.intersection(&zb).copied().collect()
        }
        IExpr::Bin(BinOp::Div, a, b) if b.literal().is_some_and(|c| c.is_finite() && c != 0.0) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(src: &str) -> Assignments {
        let (p, _) = teil::compile(src).unwrap_or_else(|d| panic!("does not check: {d:?}"));
        assignments(&p, &Options::default()).expect("lowers")
    }

    #[test]
    fn statements_become_assignments_at_symbolic_indices() {
        let a = lowered(
            "input var A : [2 3]\nvar t : [3]\noutput var y : [3]\n\
             A = 2 * A\ny = t + red+ 1 (A ^[1 2] ^[1 2])",
        );
        assert_eq!(
            a.to_string(),
            concat!(
                "copy A_copy <- A // private copy of input `A`, which the program assigns\n",
                "t[l0] = undefined // `t` is read before it is assigned: it holds the undefined \
                 value (NaN)\n",
                "A_copy[l1, l2] = (2.0 * A_copy[l1, l2]) // A = 2 * A\n",
                "y[l3] = (t[l3] + (red+ l4 < 2: A_copy[l4, l3])) // y = t + red+ 1 (A ^[1 2] ^[1 2])\n",
            )
        );
    }

    #[test]
    fn binary32_values_keep_their_type_through_literals_accumulators_and_temporaries() {
        // The literal is its binary32 value under a conversion (exact); the accumulator is a
        // binary32 one; the alias temporary has its target's type; the function keeps its
        // operand's.
        let k = lowered(
            "input var X : f32[2 3]\ninout var Y : f32[3 3]\noutput var s : f32[2]\n\
             s = red+ 2 (0.1 * exp X)\nY = Y ^[1 2]",
        )
        .emit(&mut |_, _| Ok(()))
        .expect("emits");
        assert_eq!(
            k.to_string(),
            concat!(
                "kernel teil_kernel (M = 1, workspace 16, lifted 0)\n",
                "  buffer X: input, logical [2, 3], padded [2, 3], f32\n",
                "  buffer Y: inout, logical [3, 3], padded [3, 3], f32\n",
                "  buffer s: output, logical [2], padded [2], f32\n",
                "  buffer tmp0: temporary at 0, logical [3, 3], padded [3, 3], f32\n",
                "nest // s = red+ 2 (0.1 * exp X)\n",
                "  for l0 in 0..2\n",
                "    acc0 = identity of Sum in f32\n",
                "    for l1 in 0..3\n",
                "      acc0 = Sum(acc0, (f32(0.10000000149011612) * exp(X[l0, l1])))\n",
                "    s[l0] = acc0\n",
                "nest // Y = Y ^[1 2]  (into a temporary: the right-hand side reads `Y` at other \
                 indices)\n",
                "  for l2 in 0..3\n",
                "    for l3 in 0..3\n",
                "      tmp0[l2, l3] = Y[l3, l2]\n",
                "copy Y <- tmp0 // Y = Y ^[1 2]  (copy back)\n",
            )
        );
        assert_eq!(
            k.functions().into_iter().collect::<Vec<_>>(),
            [(teil::ast::Func::Exp, ElemType::F32)]
        );
    }

    #[test]
    fn a_statement_reading_its_target_elsewhere_goes_through_a_temporary() {
        let a = lowered("inout var A : [2 2]\nA = A ^[1 2]");
        assert_eq!(a.to_string(), "A[l0, l1] = A[l1, l0] // A = A ^[1 2]\n");
        let k = a.emit(&mut |_, _| Ok(())).expect("emits");
        assert_eq!(
            k.to_string(),
            concat!(
                "kernel teil_kernel (M = 1, workspace 8, lifted 0)\n",
                "  buffer A: inout, logical [2, 2], padded [2, 2]\n",
                "  buffer tmp0: temporary at 0, logical [2, 2], padded [2, 2]\n",
                "nest // A = A ^[1 2]  (into a temporary: the right-hand side reads `A` at other \
                 indices)\n",
                "  for l0 in 0..2\n",
                "    for l1 in 0..2\n",
                "      tmp0[l0, l1] = A[l1, l0]\n",
                "copy A <- tmp0 // A = A ^[1 2]  (copy back)\n",
            )
        );
    }
}
