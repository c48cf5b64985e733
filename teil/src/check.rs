//! The shape checker: the typing rules of spec/typing.md, one function arm per rule.
//!
//! [`check`] is the only constructor of [`CheckedProgram`]. It numbers every expression node
//! ([`ExprId`]) and records its shape, so evaluators and code generators read shapes instead of
//! re-deriving them (naga's `ModuleInfo` pattern).
//!
//! **Architecture Invariant:** if `check` returns `Ok`, every statement `x = e` satisfies
//! OK-Stmt, so evaluating `e` at any multi-index below `shape(x)` reads the store only in bounds
//! (TeIL paper Lemma 4.3, report Lemma 2).
//!
//! Errors do not cascade: once a sub-expression is ill-typed its shape is unknown (`None`) and
//! the enclosing rules stay silent about it. Errors and warnings are recorded as
//! [`CheckError`] data (spans, shapes, names, rule, suggestion) and worded once, in
//! [`crate::check_error`], when the pass ends.

use crate::ast::*;
use crate::check_error::{CheckError, Elementwise, Operation, PairHelp, Transpose};
use crate::diagnostic::{edit_distance, is_similar, Diagnostic};
use crate::limits::{MAX_DECL_ELEMENTS, MAX_EXPR_DEPTH, MAX_EXPR_ELEMENTS, MAX_RANK};
use std::collections::{HashMap, HashSet};

/// A tensor type: the extents of its dimensions, outermost first. `[]` is a scalar.
pub type Shape = Vec<u64>;

/// A program that satisfies OK-Prog, with the shape of every expression node.
#[derive(Clone, Debug)]
pub struct CheckedProgram {
    program: Program,
    /// Indexed by [`ExprId`].
    shapes: Vec<Shape>,
    /// The element type of every node, indexed by [`ExprId`].
    elems: Vec<ElemType>,
    /// Parallel to `program.decls`.
    decl_shapes: Vec<Shape>,
    init: Initialization,
    /// Each variable's position in `program.decls` (names are unique in a checked program), so
    /// that looking a variable up, or asking whether it is an input, takes constant time: a
    /// caller that asks for every declaration stays linear in their number.
    index: HashMap<String, usize>,
    /// [`Program::uses_qualifiers`], computed once.
    qualified: bool,
}

/// Where a declared variable is first read and first assigned (report §5): the initialisation
/// analysis, computed once by the checker for its warnings (W0001, W0003) and kept in
/// [`CheckedProgram`] for everyone who needs it (which inputs are required, which outputs stay
/// undefined).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VarInit {
    /// The first statement (its index) that reads the variable, and that read's span.
    pub first_read: Option<(usize, Span)>,
    /// The first statement (its index) that assigns the variable.
    pub first_write: Option<usize>,
}

impl VarInit {
    /// Whether some statement reads the variable before any statement assigns it (a statement
    /// reads its right-hand side before it assigns), so that its initial contents are
    /// observable.
    pub fn read_before_written(&self) -> bool {
        match (&self.first_read, self.first_write) {
            (Some((r, _)), Some(w)) => *r <= w,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// Whether some statement assigns the variable.
    pub fn written(&self) -> bool {
        self.first_write.is_some()
    }
}

/// The initialisation analysis of a program: one [`VarInit`] per declaration, in declaration
/// order (for a name declared twice, the first declaration's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Initialization {
    vars: Vec<VarInit>,
}

impl Initialization {
    /// One walk over the statements, in order.
    fn of(program: &Program) -> Self {
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (k, d) in program.decls.iter().enumerate() {
            index.entry(d.name.name.as_str()).or_insert(k);
        }
        let mut vars = vec![VarInit::default(); program.decls.len()];
        for (n, stmt) in program.stmts.iter().enumerate() {
            stmt.value.walk(&mut |e| {
                if let ExprKind::Var(v) = &e.kind {
                    if let Some(&k) = index.get(v.name.as_str()) {
                        vars[k].first_read.get_or_insert((n, v.span.clone()));
                    }
                }
            });
            if let Some(&k) = index.get(stmt.target.name.as_str()) {
                vars[k].first_write.get_or_insert(n);
            }
        }
        Initialization { vars }
    }

    /// The analysis of the `k`-th declaration.
    pub fn decl(&self, k: usize) -> &VarInit {
        &self.vars[k]
    }

    /// The analysis of every declaration, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = &VarInit> {
        self.vars.iter()
    }
}

impl CheckedProgram {
    pub fn program(&self) -> &Program {
        &self.program
    }

    pub fn into_program(self) -> Program {
        self.program
    }

    /// The type the checker derived for `e`, which must be a node of this program.
    pub fn shape(&self, e: &Expr) -> &[u64] {
        &self.shapes[e.id.0 as usize]
    }

    /// The element type the checker derived for `e`, which must be a node of this program (a
    /// literal's is the one its context gives it, T-Lit).
    pub fn elem(&self, e: &Expr) -> ElemType {
        self.elems[e.id.0 as usize]
    }

    /// The declared element type of a variable.
    pub fn var_elem(&self, name: &str) -> Option<ElemType> {
        self.decl(name).map(|d| d.elem)
    }

    /// The initialisation analysis: where each variable is first read and first assigned.
    pub fn initialization(&self) -> &Initialization {
        &self.init
    }

    /// The declaration of the variable `name`, in constant time.
    pub fn decl(&self, name: &str) -> Option<&Decl> {
        self.index.get(name).map(|&k| &self.program.decls[k])
    }

    /// [`VarInit`] of the variable `name`, if declared.
    pub fn var_init(&self, name: &str) -> Option<&VarInit> {
        self.index.get(name).map(|&k| self.init.decl(k))
    }

    /// The declared shape of a variable.
    pub fn var_shape(&self, name: &str) -> Option<&[u64]> {
        self.index
            .get(name)
            .map(|&k| self.decl_shapes[k].as_slice())
    }

    /// The variables the caller passes in or receives, in declaration order: every qualified
    /// variable, or every variable when the program uses no qualifiers (report §5).
    pub fn interface(&self) -> impl Iterator<Item = &Decl> {
        let all = !self.qualified;
        self.program
            .decls
            .iter()
            .filter(move |d| all || d.qualifier.is_some())
    }

    /// Whether the caller supplies `d`'s initial contents.
    pub fn is_input(&self, d: &Decl) -> bool {
        match d.qualifier {
            Some(q) => q.is_read(),
            None => !self.qualified,
        }
    }

    /// Whether the caller receives `d`'s final contents.
    pub fn is_output(&self, d: &Decl) -> bool {
        match d.qualifier {
            Some(q) => q.is_written(),
            None => !self.qualified,
        }
    }

    /// Whether the caller must supply `d`: every `input`/`inout` variable of a qualified
    /// program; without qualifiers, every variable read before it is assigned (its initial
    /// value is observable). The other inputs may be given and start undefined otherwise.
    pub fn is_required(&self, d: &Decl) -> bool {
        self.is_input(d)
            && (d.qualifier.is_some()
                || self
                    .var_init(&d.name.name)
                    .is_some_and(VarInit::read_before_written))
    }

    /// The names of the variables the caller receives ([`Self::is_output`]), in declaration
    /// order.
    pub fn output_names(&self) -> Vec<String> {
        let outputs = self.program.decls.iter().filter(|d| self.is_output(d));
        outputs.map(|d| d.name.name.clone()).collect()
    }
}

/// Checks a whole program (OK-Prog). `Ok` carries the checked program and its warnings; `Err`
/// carries every diagnostic found, warnings included, at least one of them an error.
pub fn check(program: Program) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    let Partial {
        program,
        shapes,
        elems,
        diagnostics: diags,
        init,
    } = check_partial(program);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    let decl_shapes = program.decls.iter().map(Decl::shape).collect();
    let index = (program.decls.iter().enumerate())
        .map(|(k, d)| (d.name.name.clone(), k))
        .collect();
    let qualified = program.uses_qualifiers();
    Ok((
        CheckedProgram {
            index,
            qualified,
            program,
            // Every node of a program without errors has a shape, except `Error` nodes, which
            // only a program with syntax errors has (and which nobody evaluates).
            shapes: shapes.into_iter().map(Option::unwrap_or_default).collect(),
            elems: elems.into_iter().map(Option::unwrap_or_default).collect(),
            decl_shapes,
            init,
        },
        diags,
    ))
}

/// What the checker learnt about a program that need not be well-typed, for editors
/// ([`crate::ide`]): the numbered program, the shape of every node that type-checks (`None`
/// for an ill-typed node and everything above it), and every diagnostic. Not a
/// [`CheckedProgram`]: nothing may evaluate it.
#[derive(Clone, Debug)]
pub struct Partial {
    pub program: Program,
    shapes: Vec<Option<Shape>>,
    elems: Vec<Option<ElemType>>,
    pub diagnostics: Vec<Diagnostic>,
    init: Initialization,
}

impl Partial {
    /// The shape of `e`, a node of this program, if it type-checks.
    pub fn shape(&self, e: &Expr) -> Option<&[u64]> {
        self.shapes.get(e.id.0 as usize)?.as_deref()
    }

    /// The element type of `e`, a node of this program, if it has one: a node whose operands'
    /// element types conflict has none.
    pub fn elem(&self, e: &Expr) -> Option<ElemType> {
        *self.elems.get(e.id.0 as usize)?
    }

    /// The initialisation analysis ([`CheckedProgram::initialization`]).
    pub fn initialization(&self) -> &Initialization {
        &self.init
    }
}

/// Runs every rule on every statement, as [`check`] does, and keeps what it learnt whether or
/// not the program is well-typed. Errors do not cascade (see the module documentation), so
/// the shapes of the parts that check are the ones [`check`] would record.
pub fn check_partial(program: Program) -> Partial {
    check_with(program, true)
}

/// The diagnostics of a program built from a text with syntax errors: it lacks every item that
/// did not parse, so the initialisation analysis, which reasons about all statements together,
/// would report the syntax error's consequences (an `output` "never assigned" by a statement
/// that is only missing) as facts about the program. It is left out; the typing rules, which
/// judge each declaration and statement that did parse on its own, are all applied
/// (spec/diagnostics.md, "Syntax errors").
pub fn check_incomplete(program: Program) -> Vec<Diagnostic> {
    check_with(program, false).diagnostics
}

/// The checker's one pass: every typing rule on every item, and the initialisation analysis
/// when `initialisation` holds (the program is the whole text, not what parsed of it).
pub(crate) fn check_with(mut program: Program, initialisation: bool) -> Partial {
    // Every pass below recurses over expressions: first bound their depth (E0005), as the
    // parser does, so that programs built by the front ends or by library users are covered.
    let mut too_deep = Vec::new();
    for stmt in &mut program.stmts {
        if let Some(d) = depth_limit(stmt) {
            too_deep.push(d);
        }
    }
    let mut next = 0u32;
    for stmt in &mut program.stmts {
        number(&mut stmt.value, &mut next);
    }
    let mut cx = Checker {
        env: HashMap::new(),
        env_elems: HashMap::new(),
        shapes: vec![None; next as usize],
        elems: vec![None; next as usize],
        diags: Vec::new(),
        pairs: Vec::new(),
    };
    cx.diags.extend(too_deep);
    cx.declarations(&program);
    for stmt in &program.stmts {
        cx.statement(stmt);
    }
    // The declaration fix of E0201 goes before the first statement; not while the text has a
    // syntax error, which may be the declaration that was meant.
    let first_statement = program.stmts.first().map(|s| s.span.start);
    for d in &mut cx.diags {
        if let CheckError::AssignUndeclared { declare_at, .. } = d {
            *declare_at = first_statement.filter(|_| initialisation);
        }
    }
    // The analysis is recorded either way; its warnings only for a whole text.
    let init = Initialization::of(&program);
    if initialisation {
        initialization(&program, &init, &mut cx.diags);
    }
    let Checker {
        shapes,
        elems,
        diags,
        ..
    } = cx;
    let mut diags: Vec<Diagnostic> = diags.into_iter().map(Diagnostic::from).collect();
    diags.sort_by_key(|d| (d.primary.span.start, d.primary.span.end, d.code));
    Partial {
        program,
        shapes,
        elems,
        diagnostics: diags,
        init,
    }
}

/// E0005 for a statement whose right-hand side is deeper than [`MAX_EXPR_DEPTH`] (a leaf has
/// depth 1), measured without recursion; the right-hand side is then replaced by an `Error`
/// node, taken apart without recursion too, so no later pass sees the deep tree.
fn depth_limit(stmt: &mut Stmt) -> Option<CheckError> {
    let mut stack = vec![(&stmt.value, 1usize)];
    let mut deepest = 0;
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        if deepest > MAX_EXPR_DEPTH {
            break;
        }
        stack.extend(e.children().into_iter().map(|c| (c, d + 1)));
    }
    if deepest <= MAX_EXPR_DEPTH {
        return None;
    }
    let span = stmt.value.span.clone();
    let error = |span: Span| Expr {
        id: ExprId::default(),
        kind: ExprKind::Error,
        span,
    };
    let mut parts = vec![std::mem::replace(&mut stmt.value, error(span.clone()))];
    while let Some(mut e) = parts.pop() {
        for c in e.children_mut() {
            let leaf = error(c.span.clone());
            parts.push(std::mem::replace(c, leaf));
        }
    }
    Some(CheckError::TooDeep { span })
}

/// Assigns ids in pre-order.
fn number(e: &mut Expr, next: &mut u32) {
    e.id = ExprId(*next);
    *next += 1;
    for c in e.children_mut() {
        number(c, next);
    }
}

struct Checker {
    /// Declared variables; `None` when the declaration itself was rejected, so that uses of it
    /// do not produce further errors.
    env: HashMap<String, Option<Shape>>,
    /// The declared element type of every declared variable.
    env_elems: HashMap<String, ElemType>,
    shapes: Vec<Option<Shape>>,
    elems: Vec<Option<ElemType>>,
    diags: Vec<CheckError>,
    /// The E0305 reports of the statement being checked, whose help waits for the statement's
    /// target ([`Checker::pair_help`]).
    pairs: Vec<UnequalPair>,
}

/// An expression's element type while the checker derives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    Known(ElemType),
    /// Literals and operations over literals alone: the context decides (T-Lit).
    Flexible,
    /// Ill-typed (already reported) or undeclared: the rules above stay silent.
    Unknown,
}

/// A diagonal or contraction rejected with E0305, remembered until its statement's target is
/// known, so that the help suggests only positions that make the whole statement check.
struct UnequalPair {
    /// Index of its error in `Checker::diags`.
    diag: usize,
    /// The `diag`/`contr` node.
    node: ExprId,
    /// The pairs of distinct positions with equal extents, nearest to the written ones first.
    candidates: Vec<(usize, usize)>,
}

/// The help re-checks the statement once per candidate pair; above this many expression nodes
/// re-checked in all, it suggests the nearest pair without checking it (bounded time on any
/// input, spec/limits.md).
const MAX_PAIR_RECHECK_NODES: usize = 1 << 20;

impl Checker {
    /// S-Var for each declaration, plus the shape limits.
    fn declarations(&mut self, program: &Program) {
        let mut first: HashMap<&str, &Decl> = HashMap::new();
        for d in &program.decls {
            if let Some(prev) = first.get(d.name.name.as_str()) {
                self.diags.push(CheckError::Redeclared {
                    span: d.name.span.clone(),
                    name: d.name.name.clone(),
                    first: prev.name.span.clone(),
                });
                continue;
            }
            first.insert(&d.name.name, d);
            self.env_elems.insert(d.name.name.clone(), d.elem);
            let ok = self.declaration_shape_ok(d);
            self.env.insert(d.name.name.clone(), ok.then(|| d.shape()));
        }
    }

    fn declaration_shape_ok(&mut self, d: &Decl) -> bool {
        let mut ok = true;
        for n in &d.extents {
            if n.value == 0 {
                ok = false;
                self.diags.push(CheckError::ZeroExtent {
                    span: n.span(),
                    name: d.name.name.clone(),
                });
            }
        }
        if d.extents.len() > MAX_RANK {
            self.diags.push(CheckError::DeclRankTooLarge {
                span: d.span.clone(),
                name: d.name.name.clone(),
                rank: d.extents.len(),
            });
            return false;
        }
        if ok {
            let count = d
                .extents
                .iter()
                .try_fold(1u64, |acc, n| acc.checked_mul(n.value));
            if count.is_none_or(|c| c > MAX_DECL_ELEMENTS) {
                self.diags.push(CheckError::DeclTooLarge {
                    span: d.span.clone(),
                    name: d.name.name.clone(),
                    elements: count,
                });
                return false;
            }
        }
        ok
    }

    /// OK-Stmt.
    fn statement(&mut self, stmt: &Stmt) {
        let first_diag = self.diags.len();
        let rhs = self.expr(&stmt.value);
        self.statement_elem(stmt);
        let target_shape = self.env.get(&stmt.target.name).cloned().flatten();
        self.pair_help(stmt, target_shape.as_deref(), first_diag);
        let Some(target) = self.env.get(&stmt.target.name) else {
            self.diags.push(CheckError::AssignUndeclared {
                span: stmt.target.span.clone(),
                name: stmt.target.name.clone(),
                similar: self.suggest(&stmt.target.name),
                rhs,
                declare_at: None,
            });
            return;
        };
        let (Some(target), Some(rhs)) = (target.clone(), rhs) else {
            return;
        };
        if target != rhs {
            let transpose = transpose_to(&stmt.value, &rhs, &target);
            self.diags.push(CheckError::AssignMismatch {
                span: stmt.value.span.clone(),
                rhs,
                target: stmt.target.name.clone(),
                target_span: stmt.target.span.clone(),
                target_shape: target,
                transpose,
            });
        }
    }

    fn suggest(&self, name: &str) -> Option<String> {
        let mut best: Option<(usize, &String)> = None;
        for cand in self.env.keys() {
            let d = edit_distance(name, cand);
            if is_similar(name, cand) && best.is_none_or(|(bd, bn)| (d, cand) < (bd, bn)) {
                best = Some((d, cand));
            }
        }
        best.map(|(_, n)| n.clone())
    }

    /// Types `e`, records its shape, and returns it; `None` when `e` is ill-typed (already
    /// reported).
    fn expr(&mut self, e: &Expr) -> Option<Shape> {
        let shape = self.rule(e)?;
        if shape.len() > MAX_RANK {
            self.diags.push(CheckError::ExprRankTooLarge {
                span: e.span.clone(),
                rank: shape.len(),
            });
            return None;
        }
        let count = shape.iter().try_fold(1u64, |acc, n| acc.checked_mul(*n));
        if count.is_none_or(|c| c > MAX_EXPR_ELEMENTS) {
            self.diags.push(CheckError::ExprTooLarge {
                span: e.span.clone(),
                shape,
            });
            return None;
        }
        self.shapes[e.id.0 as usize] = Some(shape.clone());
        Some(shape)
    }

    fn rule(&mut self, e: &Expr) -> Option<Shape> {
        match &e.kind {
            // T-Var
            ExprKind::Var(v) => match self.env.get(&v.name) {
                Some(shape) => shape.clone(),
                None => {
                    self.diags.push(CheckError::UndeclaredVar {
                        span: v.span.clone(),
                        name: v.name.clone(),
                        similar: self.suggest(&v.name),
                    });
                    None
                }
            },
            // T-Lit (extension): numeric literals are scalars.
            ExprKind::Lit(_) => Some(Vec::new()),
            // T-Paren
            ExprKind::Paren(inner) => self.expr(inner),
            ExprKind::Binary(op, a, b) => {
                let (ta, tb) = (self.expr(a), self.expr(b));
                let (ta, tb) = (ta?, tb?);
                self.binary(e, *op, a, b, ta, tb)
            }
            // T-Prod
            ExprKind::Prod(a, b) => {
                let (ta, tb) = (self.expr(a), self.expr(b));
                let (mut ta, tb) = (ta?, tb?);
                ta.extend(tb);
                Some(ta)
            }
            // T-Red
            ExprKind::Reduce(op, i, a) => {
                let t = self.expr(a)?;
                self.position(i, &t, a, Operation::Reduce(*op))?;
                let mut t = t;
                t.remove(i.value as usize - 1);
                Some(t)
            }
            // T-Transp
            ExprKind::Transp(i, j, a) => {
                let t = self.expr(a)?;
                let p = self.position(i, &t, a, Operation::Transp);
                let q = self.position(j, &t, a, Operation::Transp);
                p?;
                q?;
                if i.value == j.value {
                    self.diags.push(CheckError::TranspSame {
                        span: e.span.clone(),
                        dim: i.value,
                        operand: a.span.clone(),
                    });
                }
                let mut t = t;
                t.swap(i.value as usize - 1, j.value as usize - 1);
                Some(t)
            }
            // T-Diag
            ExprKind::Diag(i, j, a) => {
                let t = self.expr(a)?;
                self.pair(e, i, j, &t, a, Operation::Diag)?;
                let mut t = t;
                t.remove(i.value.max(j.value) as usize - 1);
                Some(t)
            }
            // T-Contr
            ExprKind::Contr(i, j, a) => {
                let t = self.expr(a)?;
                self.pair(e, i, j, &t, a, Operation::Contr)?;
                let (lo, hi) = (i.value.min(j.value) as usize, i.value.max(j.value) as usize);
                let mut t = t;
                t.remove(hi - 1);
                t.remove(lo - 1);
                Some(t)
            }
            // T-Expa
            ExprKind::Expa(i, n, a) => {
                let t = self.expr(a)?;
                let mut ok = true;
                if i.value == 0 || i.value > t.len() as u64 + 1 {
                    ok = false;
                    self.diags.push(CheckError::ExpaPositionOutOfRange {
                        span: i.span(),
                        position: i.value,
                        operand: a.span.clone(),
                        shape: t.clone(),
                    });
                }
                if n.value == 0 {
                    ok = false;
                    self.diags
                        .push(CheckError::ExpaZeroExtent { span: n.span() });
                }
                if !ok {
                    return None;
                }
                let mut t = t;
                t.insert(i.value as usize - 1, n.value);
                Some(t)
            }
            // T-Proj
            ExprKind::Proj(i, m, a) => {
                let t = self.expr(a)?;
                self.position(i, &t, a, Operation::Proj)?;
                let n = t[i.value as usize - 1];
                if m.value == 0 || m.value > n {
                    self.diags.push(CheckError::SliceOutOfRange {
                        span: m.span(),
                        slice: m.value,
                        dim: i.value,
                        extent: n,
                        operand: a.span.clone(),
                        shape: t,
                    });
                    return None;
                }
                let mut t = t;
                t.remove(i.value as usize - 1);
                Some(t)
            }
            // T-Func: element-wise, the operand's shape.
            ExprKind::Func(_, a) => self.expr(a),
            // T-Func2: typed like `+`.
            ExprKind::Func2(f, a, b) => {
                let (ta, tb) = (self.expr(a), self.expr(b));
                let (ta, tb) = (ta?, tb?);
                if ta == tb {
                    return Some(ta);
                }
                self.diags.push(CheckError::ElementwiseMismatch {
                    span: e.span.clone(),
                    op: Elementwise::Func(*f),
                    rule: "T-Func2",
                    left: a.span.clone(),
                    transpose: transpose_to(b, &tb, &ta),
                    left_shape: ta,
                    right: b.span.clone(),
                    right_shape: tb,
                });
                None
            }
            // T-Conv: the operand's shape.
            ExprKind::Convert(_, a) => self.expr(a),
            ExprKind::Error => None,
        }
    }

    /// OK-Stmt's element-type premise: the right-hand side has the target's element type; a
    /// right-hand side of literals alone takes it (T-Lit).
    fn statement_elem(&mut self, stmt: &Stmt) {
        let rhs = self.elem(&stmt.value);
        let Some(&target) = self.env_elems.get(&stmt.target.name) else {
            return;
        };
        match rhs {
            Elem::Known(t) if t != target => self.diags.push(CheckError::AssignElemMismatch {
                span: stmt.value.span.clone(),
                rhs: t,
                target: stmt.target.name.clone(),
                target_span: stmt.target.span.clone(),
                target_elem: target,
            }),
            Elem::Flexible => self.settle(&stmt.value, target),
            _ => {}
        }
    }

    /// The element-type rules (spec/typing.md, "Element types"), bottom-up: the element type
    /// of `e`, recorded for every node whose type its operands decide; literals, and nodes
    /// built of literals alone, are [`Elem::Flexible`] until [`Checker::settle`] gives them the
    /// type their context needs. Independent of the shape rules: a node may be wrong in both.
    fn elem(&mut self, e: &Expr) -> Elem {
        let t = match &e.kind {
            ExprKind::Var(v) => match self.env_elems.get(&v.name) {
                Some(&t) => Elem::Known(t),
                None => Elem::Unknown,
            },
            ExprKind::Lit(_) => Elem::Flexible,
            ExprKind::Paren(a)
            | ExprKind::Reduce(_, _, a)
            | ExprKind::Transp(_, _, a)
            | ExprKind::Diag(_, _, a)
            | ExprKind::Contr(_, _, a)
            | ExprKind::Expa(_, _, a)
            | ExprKind::Proj(_, _, a)
            | ExprKind::Func(_, a) => self.elem(a),
            ExprKind::Binary(op, a, b) => {
                let rule = match op {
                    BinOp::Add => "T-Add",
                    BinOp::Mul => "T-Mul",
                    BinOp::Sub | BinOp::Div => "T-Elem",
                };
                self.same_elem(e, Elementwise::Op(*op), rule, a, b)
            }
            ExprKind::Prod(a, b) => self.same_elem(e, Elementwise::Prod, "T-Prod", a, b),
            ExprKind::Func2(f, a, b) => self.same_elem(e, Elementwise::Func(*f), "T-Func2", a, b),
            // T-Conv: the operand has the other element type.
            ExprKind::Convert(to, a) => {
                match self.elem(a) {
                    Elem::Known(t) if t == *to => self.diags.push(CheckError::ConvertSame {
                        span: e.span.clone(),
                        to: *to,
                        operand: a.span.clone(),
                    }),
                    Elem::Flexible => self.settle(a, to.other()),
                    _ => {}
                }
                Elem::Known(*to)
            }
            ExprKind::Error => Elem::Unknown,
        };
        if let Elem::Known(t) = t {
            self.elems[e.id.0 as usize] = Some(t);
        }
        t
    }

    /// Two operands of one element type; a flexible one takes the other's.
    fn same_elem(
        &mut self,
        e: &Expr,
        op: Elementwise,
        rule: &'static str,
        a: &Expr,
        b: &Expr,
    ) -> Elem {
        match (self.elem(a), self.elem(b)) {
            (Elem::Known(x), Elem::Known(y)) if x != y => {
                self.diags.push(CheckError::ElemMismatch {
                    span: e.span.clone(),
                    op,
                    rule,
                    left: a.span.clone(),
                    left_elem: x,
                    right: b.span.clone(),
                    right_elem: y,
                });
                Elem::Unknown
            }
            (Elem::Known(x), Elem::Flexible) => {
                self.settle(b, x);
                Elem::Known(x)
            }
            (Elem::Flexible, Elem::Known(y)) => {
                self.settle(a, y);
                Elem::Known(y)
            }
            (Elem::Known(x), Elem::Known(_)) => Elem::Known(x),
            (Elem::Flexible, Elem::Flexible) => Elem::Flexible,
            _ => Elem::Unknown,
        }
    }

    /// Gives a flexible expression (literals and the operations over them) the element type
    /// `t` its context needs, checking each literal's range in it (T-Lit, E0313).
    fn settle(&mut self, e: &Expr, t: ElemType) {
        if self.elems[e.id.0 as usize].is_some() {
            return;
        }
        self.elems[e.id.0 as usize] = Some(t);
        if let ExprKind::Lit(lit) = &e.kind {
            if t == ElemType::F32 && lit.single.is_infinite() {
                self.diags.push(CheckError::LiteralF32Range {
                    span: e.span.clone(),
                    written: lit.text.clone(),
                });
            }
        }
        for c in e.children() {
            self.settle(c, t);
        }
    }

    /// T-Add, T-Mul, T-Elem, T-SMul, T-SDiv.
    fn binary(
        &mut self,
        e: &Expr,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        ta: Shape,
        tb: Shape,
    ) -> Option<Shape> {
        match op {
            BinOp::Mul if ta.is_empty() => return Some(tb), // T-SMul
            BinOp::Div if tb.is_empty() => return Some(ta), // T-SDiv
            _ if ta == tb => return Some(ta),               // T-Add, T-Mul, T-Elem
            _ => {}
        }
        let rule = match op {
            BinOp::Add => "T-Add",
            BinOp::Mul => "T-Mul",
            BinOp::Sub | BinOp::Div => "T-Elem",
        };
        self.diags.push(CheckError::ElementwiseMismatch {
            span: e.span.clone(),
            op: Elementwise::Op(op),
            rule,
            left: a.span.clone(),
            transpose: transpose_to(b, &tb, &ta),
            left_shape: ta,
            right: b.span.clone(),
            right_shape: tb,
        });
        None
    }

    /// Checks that `i` names a dimension of an operand of shape `t` (1 <= i <= rank).
    fn position(&mut self, i: &Nat, t: &[u64], a: &Expr, operation: Operation) -> Option<()> {
        if i.value >= 1 && i.value <= t.len() as u64 {
            return Some(());
        }
        self.diags.push(CheckError::PositionOutOfRange {
            span: i.span(),
            operation,
            position: i.value,
            operand: a.span.clone(),
            shape: t.to_vec(),
        });
        None
    }

    /// The side conditions shared by T-Diag and T-Contr: both positions in range, distinct,
    /// and naming dimensions of equal extent.
    fn pair(
        &mut self,
        e: &Expr,
        i: &Nat,
        j: &Nat,
        t: &[u64],
        a: &Expr,
        operation: Operation,
    ) -> Option<()> {
        let p = self.position(i, t, a, operation);
        let q = self.position(j, t, a, operation);
        p?;
        q?;
        if i.value == j.value {
            self.diags.push(CheckError::PositionsNotDistinct {
                span: i.span().start..j.span().end,
                operation,
                dim: i.value,
                operand: a.span.clone(),
                shape: t.to_vec(),
            });
            return None;
        }
        let (ni, nj) = (t[i.value as usize - 1], t[j.value as usize - 1]);
        if ni != nj {
            self.pairs.push(UnequalPair {
                diag: self.diags.len(),
                node: e.id,
                candidates: equal_pairs(t, i.value as usize, j.value as usize),
            });
            self.diags.push(CheckError::ExtentsDiffer {
                span: i.span().start..j.span().end,
                operation,
                i: i.value,
                j: j.value,
                extents: (ni, nj),
                operand: a.span.clone(),
                shape: t.to_vec(),
                postfix: a.span.start == e.span.start,
                help: None,
            });
            return None;
        }
        Some(())
    }
}

impl Checker {
    /// Chooses the suggestion ([`PairHelp`]) of the E0305 reports of `stmt` (its right-hand
    /// side just checked, its errors from `first_diag` on), knowing the shape of its target if
    /// declared: the nearest pair of equal extents with which the whole right-hand side has the
    /// target's shape (the fix), or, when no pair does, that none does and what the nearest
    /// pair would give. Following the help never leads to E0202. When the target's shape is unknown
    /// or the statement has other errors (so no choice of positions alone makes it check), the
    /// help names the nearest pair of equal extents.
    fn pair_help(&mut self, stmt: &Stmt, target: Option<&[u64]>, first_diag: usize) {
        if self.pairs.is_empty() {
            return;
        }
        let pairs = std::mem::take(&mut self.pairs);
        let errors = self.diags[first_diag..]
            .iter()
            .filter(|d| d.is_error())
            .count();
        let mut nodes = 0usize;
        stmt.value.walk(&mut |_| nodes += 1);
        for p in pairs {
            let checkable =
                errors == 1 && p.candidates.len().saturating_mul(nodes) <= MAX_PAIR_RECHECK_NODES;
            let help = match (target, p.candidates.first()) {
                (_, None) => PairHelp::NoEqualExtents,
                (Some(target), Some(&nearest)) if checkable => {
                    let results: Vec<((usize, usize), Option<Shape>)> = p
                        .candidates
                        .iter()
                        .map(|&pq| (pq, self.shape_with_pair(&stmt.value, p.node, pq)))
                        .collect();
                    match results.iter().find(|(_, s)| s.as_deref() == Some(target)) {
                        Some(&(pq, _)) => PairHelp::Use(pq),
                        None => PairHelp::NoneFits {
                            target: stmt.target.name.clone(),
                            target_shape: target.to_vec(),
                            nearest,
                            gives: results.into_iter().next().and_then(|(_, s)| s),
                        },
                    }
                }
                (_, Some(&nearest)) => PairHelp::Use(nearest),
            };
            if let CheckError::ExtentsDiffer { help: h, .. } = &mut self.diags[p.diag] {
                *h = Some(help);
            }
        }
    }

    /// The shape of `value` with the positions of its `diag`/`contr` node `node` replaced by
    /// `(p, q)`, by the rules above on a scratch copy (`None`: ill-typed); nothing is recorded.
    fn shape_with_pair(
        &mut self,
        value: &Expr,
        node: ExprId,
        (p, q): (usize, usize),
    ) -> Option<Shape> {
        let mut e = value.clone();
        set_positions(&mut e, node, p as u64, q as u64);
        let mut next = 0u32;
        number(&mut e, &mut next);
        let mut scratch = Checker {
            env: std::mem::take(&mut self.env),
            env_elems: HashMap::new(),
            shapes: vec![None; next as usize],
            elems: Vec::new(),
            diags: Vec::new(),
            pairs: Vec::new(),
        };
        let shape = scratch.expr(&e);
        self.env = scratch.env;
        shape
    }
}

/// Sets the two positions of the `diag`/`contr` node `node` of `e`.
fn set_positions(e: &mut Expr, node: ExprId, p: u64, q: u64) {
    if e.id == node {
        if let ExprKind::Diag(i, j, _) | ExprKind::Contr(i, j, _) = &mut e.kind {
            i.value = p;
            j.value = q;
        }
        return;
    }
    for c in e.children_mut() {
        set_positions(c, node, p, q);
    }
}

/// The typing rule that gives a well-typed node its shape, by its name in spec/typing.md, from
/// the node and its operands' shapes (the element-wise rules depend on which operand is a
/// scalar, in the order `Checker::binary` tries them).
pub fn rule_name(e: &Expr, operands: &[&[u64]]) -> &'static str {
    match &e.kind {
        ExprKind::Var(_) => "T-Var",
        ExprKind::Lit(_) => "T-Lit",
        ExprKind::Paren(_) => "T-Paren",
        ExprKind::Binary(op, ..) => match (op, operands) {
            (BinOp::Mul, [[], _]) => "T-SMul",
            (BinOp::Div, [_, []]) => "T-SDiv",
            (BinOp::Add, _) => "T-Add",
            (BinOp::Mul, _) => "T-Mul",
            (BinOp::Sub | BinOp::Div, _) => "T-Elem",
        },
        ExprKind::Prod(..) => "T-Prod",
        ExprKind::Reduce(..) => "T-Red",
        ExprKind::Transp(..) => "T-Transp",
        ExprKind::Diag(..) => "T-Diag",
        ExprKind::Contr(..) => "T-Contr",
        ExprKind::Expa(..) => "T-Expa",
        ExprKind::Proj(..) => "T-Proj",
        ExprKind::Func(..) => "T-Func",
        ExprKind::Func2(..) => "T-Func2",
        ExprKind::Convert(..) => "T-Conv",
        ExprKind::Error => "none",
    }
}

/// The pairs of distinct positions (1-based, ascending) with equal extents in `t`, the pair
/// closest to `(i, j)` first (ties in position order).
fn equal_pairs(t: &[u64], i: usize, j: usize) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for p in 1..=t.len() {
        for q in p + 1..=t.len() {
            if t[p - 1] == t[q - 1] {
                pairs.push((p, q));
            }
        }
    }
    let (lo, hi) = (i.min(j), i.max(j));
    pairs.sort_by_key(|&(p, q)| p.abs_diff(lo) + q.abs_diff(hi));
    pairs
}

/// The postfix transposition (`^[i j]`) of `e`, of shape `have`, that turns it into shape
/// `want`, if one does.
fn transpose_to(e: &Expr, have: &[u64], want: &[u64]) -> Option<Transpose> {
    if have.len() == want.len() {
        for i in 0..have.len() {
            for j in i + 1..have.len() {
                let mut t = have.to_vec();
                t.swap(i, j);
                if t == want {
                    return Some(Transpose {
                        swap: (i + 1, j + 1),
                        span: e.span.clone(),
                        atom: matches!(e.kind, ExprKind::Var(_) | ExprKind::Paren(_)),
                    });
                }
            }
        }
    }
    None
}

/// The warnings of the initialisation analysis (report §5), for programs that use qualifiers:
/// W0001 for the first read of a variable that is neither `input`/`inout` nor assigned by an
/// earlier statement, and W0003 for an `output` that no statement assigns.
fn initialization(program: &Program, init: &Initialization, diags: &mut Vec<CheckError>) {
    if !program.uses_qualifiers() {
        return;
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for (d, v) in program.decls.iter().zip(init.iter()) {
        let name = d.name.name.as_str();
        if !seen.insert(name) {
            continue;
        }
        let input = d.qualifier.is_some_and(Qualifier::is_read);
        if let (false, true, Some((_, span))) = (input, v.read_before_written(), &v.first_read) {
            diags.push(CheckError::UninitializedRead {
                span: span.clone(),
                name: name.to_string(),
            });
        }
        if d.qualifier == Some(Qualifier::Output) && !v.written() {
            diags.push(CheckError::OutputNeverAssigned {
                span: d.name.span.clone(),
                name: name.to_string(),
            });
        }
    }
}
