//! Lowering of labelled products to TeIL: the machinery shared by both front ends.
//!
//! A front end describes a tensor computation as [`Factor`]s: TeIL expressions whose dimensions
//! carry index labels ([`Idx`]). [`Builder::contract`] multiplies factors and sums the labels
//! that are not kept, in the pairwise order of the contraction planner ([`crate::plan`], by
//! loop iterations: the emitted program's own cost); [`Builder::align`] brings the result into
//! a requested label order. Everything built here is ordinary TeIL ([`crate::ast`]) and goes
//! through [`crate::check()`] afterwards: this module decides *which* program to emit, the
//! checker decides whether it is well-typed.
//!
//! How each operation maps to TeIL (spec/frontends.md, "Lowering"):
//! - a label repeated inside one factor: `diag p q` (or `contr p q` when the label is summed and
//!   occurs nowhere else);
//! - a summed label that occurs in one factor only: `red+ p`, applied before any product;
//! - two factors with the same label set: element-wise `*` after a transposition;
//! - two factors otherwise: `prod` (`#`), then `contr p q` for each shared label that is summed
//!   and `diag p q` for each shared label that is kept;
//! - scalar factors: scalar multiplication `s * e` (T-SMul) at the end;
//! - the final label order: `transp`, and `expa` for labels no factor mentions.
//!
//! Every intermediate of a contraction over three or more factors is bound to a temporary by
//! its own statement, so each statement holds a single pairwise contraction and no statement
//! forms the product of all operands. Expressions deeper than [`SPILL_DEPTH`] are also bound to
//! temporaries, which keeps every emitted statement well inside
//! [`crate::limits::MAX_EXPR_DEPTH`] when printed and parsed again.

use crate::ast::*;
use crate::limits::MAX_RANK;
use crate::plan::{Count, LabelSet, Objective, Plan, Problem};
use std::collections::HashSet;

/// An index label: a position in the front end's table of index variables.
pub(crate) type Idx = usize;

/// Expressions deeper than this are bound to a temporary before they grow further.
pub(crate) const SPILL_DEPTH: usize = 40;

/// A TeIL expression whose dimensions, in order, carry the labels `idx`.
#[derive(Clone, Debug)]
pub(crate) struct Factor {
    pub expr: Expr,
    pub idx: Vec<Idx>,
}

impl Factor {
    pub fn new(expr: Expr, idx: Vec<Idx>) -> Self {
        Factor { expr, idx }
    }
}

/// Statements and temporaries under construction. Generated nodes carry `span`, the place in
/// the front end's source they stand for.
pub(crate) struct Builder {
    taken: HashSet<String>,
    prefix: &'static str,
    next: usize,
    pub temps: Vec<Decl>,
    pub stmts: Vec<Stmt>,
    pub span: Span,
    /// The element type of the temporaries [`Builder::spill`] declares (`f64` unless the front
    /// end sets another: the einsum front end's operands' type).
    pub elem: ElemType,
}

impl Builder {
    /// `taken` are the names the program already uses; temporaries are named `prefix` followed
    /// by a number, skipping taken names.
    pub fn new(taken: HashSet<String>, prefix: &'static str) -> Self {
        Builder {
            taken,
            prefix,
            next: 0,
            temps: Vec::new(),
            stmts: Vec::new(),
            span: 0..0,
            elem: ElemType::F64,
        }
    }

    fn node(&self, kind: ExprKind) -> Expr {
        Expr::new(kind, self.span.clone())
    }

    fn nat(&self, value: u64) -> Nat {
        Nat::new(value, self.span.clone())
    }

    pub fn var(&self, name: &str, span: Span) -> Expr {
        Expr::new(ExprKind::Var(Ident::new(name, span.clone())), span)
    }

    pub fn lit(&self, value: f64) -> Expr {
        self.node(ExprKind::Lit(Literal::from_f64(value)))
    }

    pub fn binary(&self, op: BinOp, a: Expr, b: Expr) -> Expr {
        self.node(ExprKind::Binary(op, Box::new(a), Box::new(b)))
    }

    /// `red+ (p+1) e` — removes the label at 0-based position `p`.
    pub fn reduce(&self, mut f: Factor, p: usize) -> Factor {
        f.expr = self.node(ExprKind::Reduce(
            RedOp::Sum,
            self.nat(p as u64 + 1),
            Box::new(f.expr),
        ));
        f.idx.remove(p);
        f
    }

    /// `diag (p+1) (q+1) e` for `p < q` — keeps position `p`, removes `q` (T-Diag).
    pub fn diag(&self, mut f: Factor, p: usize, q: usize) -> Factor {
        debug_assert!(p < q);
        f.expr = self.node(ExprKind::Diag(
            self.nat(p as u64 + 1),
            self.nat(q as u64 + 1),
            Box::new(f.expr),
        ));
        f.idx.remove(q);
        f
    }

    /// `contr (p+1) (q+1) e` for `p < q` — removes both positions (T-Contr).
    pub fn contr(&self, mut f: Factor, p: usize, q: usize) -> Factor {
        debug_assert!(p < q);
        f.expr = self.node(ExprKind::Contr(
            self.nat(p as u64 + 1),
            self.nat(q as u64 + 1),
            Box::new(f.expr),
        ));
        f.idx.remove(q);
        f.idx.remove(p);
        f
    }

    /// `transp (p+1) (q+1) e`.
    pub fn transp(&self, mut f: Factor, p: usize, q: usize) -> Factor {
        f.expr = self.node(ExprKind::Transp(
            self.nat(p as u64 + 1),
            self.nat(q as u64 + 1),
            Box::new(f.expr),
        ));
        f.idx.swap(p, q);
        f
    }

    /// `expa (p+1) n e` — a new dimension labelled `l` of extent `n` at position `p`.
    pub fn expa(&self, mut f: Factor, p: usize, l: Idx, n: u64) -> Factor {
        f.expr = self.node(ExprKind::Expa(
            self.nat(p as u64 + 1),
            self.nat(n),
            Box::new(f.expr),
        ));
        f.idx.insert(p, l);
        f
    }

    /// `proj (p+1) m e` — drops position `p`, keeping slice `m`.
    pub fn proj(&self, mut f: Factor, p: usize, m: u64) -> Factor {
        f.expr = self.node(ExprKind::Proj(
            self.nat(p as u64 + 1),
            self.nat(m),
            Box::new(f.expr),
        ));
        f.idx.remove(p);
        f
    }

    pub fn prod(&self, a: Factor, b: Factor) -> Factor {
        let mut idx = a.idx;
        idx.extend(b.idx);
        Factor::new(
            self.node(ExprKind::Prod(Box::new(a.expr), Box::new(b.expr))),
            idx,
        )
    }

    /// Brings `f` (distinct labels, all in `order`) into exactly the label order `order`:
    /// transpositions for the labels it has, `expa` for the ones it lacks.
    pub fn align(&self, mut f: Factor, order: &[Idx], ext: &[u64]) -> Factor {
        let present: Vec<Idx> = order
            .iter()
            .copied()
            .filter(|l| f.idx.contains(l))
            .collect();
        debug_assert_eq!(
            present.len(),
            f.idx.len(),
            "factor has labels outside the order"
        );
        for (k, want) in present.iter().enumerate() {
            if f.idx[k] != *want {
                let p = f.idx.iter().position(|l| l == want).unwrap_or(k);
                f = self.transp(f, k, p);
            }
        }
        for (k, &l) in order.iter().enumerate() {
            if !f.idx.contains(&l) {
                f = self.expa(f, k, l, ext[l]);
            }
        }
        f
    }

    /// Broadcasts `f` to the labels `order` and applies `op` element-wise with `g` broadcast
    /// the same way. `order` must contain every label of both.
    pub fn elementwise(
        &self,
        op: BinOp,
        f: Factor,
        g: Factor,
        order: &[Idx],
        ext: &[u64],
    ) -> Factor {
        let f = self.align(f, order, ext);
        let g = self.align(g, order, ext);
        Factor::new(self.binary(op, f.expr, g.expr), f.idx)
    }

    fn fresh_name(&mut self) -> String {
        loop {
            let name = format!("{}{}", self.prefix, self.next);
            self.next += 1;
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }

    /// Binds `f` to a new temporary by a statement of its own and returns the temporary.
    pub fn spill(&mut self, f: Factor, ext: &[u64]) -> Factor {
        if matches!(f.expr.kind, ExprKind::Var(_)) {
            return f;
        }
        let name = self.fresh_name();
        let extents = f.idx.iter().map(|&l| self.nat(ext[l])).collect();
        self.temps.push(Decl {
            qualifier: None,
            name: Ident::new(name.clone(), self.span.clone()),
            elem: self.elem,
            elem_span: None,
            extents,
            span: self.span.clone(),
        });
        self.stmts.push(Stmt {
            target: Ident::new(name.clone(), self.span.clone()),
            value: f.expr,
            span: self.span.clone(),
        });
        Factor::new(self.var(&name, self.span.clone()), f.idx)
    }

    /// Spills `f` only when its expression has grown deeper than [`SPILL_DEPTH`].
    pub fn bind(&mut self, f: Factor, ext: &[u64]) -> Factor {
        if f.expr.depth() > SPILL_DEPTH {
            self.spill(f, ext)
        } else {
            f
        }
    }

    /// The product of `factors`, summed over every label that is not in `keep` (indexed by
    /// label). The result's labels are the kept labels that occur in some factor, each once, in
    /// an order chosen here (align it afterwards). An empty product is the literal 1.
    pub fn contract(&mut self, factors: Vec<Factor>, keep: &[bool], ext: &[u64]) -> Factor {
        let mut count = vec![0usize; ext.len()];
        for f in &factors {
            for l in distinct(&f.idx) {
                count[l] += 1;
            }
        }
        let mut tensors = Vec::new();
        let mut scalars = Vec::new();
        for f in factors {
            let f = self.own_labels(f, keep, &count);
            let f = self.bind(f, ext);
            if f.idx.is_empty() {
                scalars.push(f.expr);
            } else {
                tensors.push(f);
            }
        }
        let problem = Problem {
            extents: ext.to_vec(),
            factors: tensors
                .iter()
                .map(|t| t.idx.iter().copied().collect())
                .collect(),
            free: (0..ext.len()).filter(|&l| keep[l]).collect(),
            dangling: LabelSet::new(),
        };
        let plan = problem.plan(Objective::Work(Count::Iterations));
        let mut slots: Vec<Option<Factor>> = tensors.into_iter().map(Some).collect();
        let tensor = match &plan {
            Some(plan) => self.run_plan(plan, &mut slots, true, &mut scalars, ext),
            None => None,
        };
        let mut acc = match tensor {
            Some(t) => t,
            None if scalars.is_empty() => Factor::new(self.lit(1.0), Vec::new()),
            None => Factor::new(scalars.remove(0), Vec::new()),
        };
        // T-SMul: the scalar on the left. Written in the order the factors came in.
        for s in scalars.into_iter().rev() {
            acc.expr = self.binary(BinOp::Mul, s, acc.expr);
            acc = self.bind(acc, ext);
        }
        acc
    }

    /// Emits the pairwise products of `plan` over the factors in `slots` (each taken once).
    /// Every intermediate is bound to a temporary, except the result of the last product
    /// (`last`); a product that sums every label is a scalar and joins `scalars` (multiplied
    /// in at the end), so `None` means the group is all scalar.
    fn run_plan(
        &mut self,
        plan: &Plan,
        slots: &mut [Option<Factor>],
        last: bool,
        scalars: &mut Vec<Expr>,
        ext: &[u64],
    ) -> Option<Factor> {
        match plan {
            Plan::Leaf { factor, .. } => slots.get_mut(*factor).and_then(Option::take),
            Plan::Merge { left, right, keep } => {
                // A side that ends as a scalar leaves the other side's product last.
                let a = self.run_plan(left, slots, last && right.keep().is_empty(), scalars, ext);
                let b = self.run_plan(right, slots, last && left.keep().is_empty(), scalars, ext);
                let (a, b) = match (a, b) {
                    (Some(a), Some(b)) => (a, b),
                    (one, other) => return one.or(other),
                };
                let merged = self.merge(a, b, keep, ext);
                let merged = if last {
                    self.bind(merged, ext)
                } else {
                    self.spill(merged, ext)
                };
                if merged.idx.is_empty() {
                    scalars.push(merged.expr);
                    None
                } else {
                    Some(merged)
                }
            }
        }
    }

    /// Takes the diagonals of labels repeated inside `f` and sums the labels that are summed
    /// and occur in no other factor.
    fn own_labels(&self, mut f: Factor, keep: &[bool], count: &[usize]) -> Factor {
        while let Some((p, q)) = first_repeat(&f.idx) {
            let l = f.idx[p];
            let times = f.idx.iter().filter(|&&x| x == l).count();
            if times == 2 && !keep[l] && count[l] == 1 {
                f = self.contr(f, p, q);
            } else {
                f = self.diag(f, p, q);
            }
        }
        for p in (0..f.idx.len()).rev() {
            let l = f.idx[p];
            if !keep[l] && count[l] == 1 {
                f = self.reduce(f, p);
            }
        }
        f
    }

    /// Multiplies two factors, summing the shared labels the product does not keep (the
    /// plan's `keep`: labels kept by the result or carried by another factor).
    fn merge(&self, a: Factor, b: Factor, keep: &LabelSet, ext: &[u64]) -> Factor {
        let shared: Vec<Idx> = a
            .idx
            .iter()
            .copied()
            .filter(|l| b.idx.contains(l))
            .collect();
        let summed = |l: Idx| !keep.contains(l);
        let mut f;
        if same_set(&a.idx, &b.idx) {
            let order = a.idx.clone();
            f = self.elementwise(BinOp::Mul, a, b, &order, ext);
            for p in (0..f.idx.len()).rev() {
                if summed(f.idx[p]) {
                    f = self.reduce(f, p);
                }
            }
        } else if a.idx.len() + b.idx.len() <= MAX_RANK {
            f = self.prod(a, b);
            for &l in &shared {
                let p = f.idx.iter().position(|&x| x == l).unwrap_or(0);
                let q = f.idx.iter().rposition(|&x| x == l).unwrap_or(0);
                f = if summed(l) {
                    self.contr(f, p, q)
                } else {
                    self.diag(f, p, q)
                };
            }
        } else {
            // The product would exceed the rank limit (E0310): broadcast both operands to the
            // union of their labels instead and multiply element-wise.
            let mut order = a.idx.clone();
            order.extend(b.idx.iter().copied().filter(|l| !a.idx.contains(l)));
            f = self.elementwise(BinOp::Mul, a, b, &order, ext);
            for p in (0..f.idx.len()).rev() {
                if shared.contains(&f.idx[p]) && summed(f.idx[p]) {
                    f = self.reduce(f, p);
                }
            }
        }
        f
    }
}

/// The labels of `idx`, each once, in order of first occurrence.
pub(crate) fn distinct(idx: &[Idx]) -> Vec<Idx> {
    let mut out = Vec::new();
    for &l in idx {
        if !out.contains(&l) {
            out.push(l);
        }
    }
    out
}

fn first_repeat(idx: &[Idx]) -> Option<(usize, usize)> {
    for p in 0..idx.len() {
        if let Some(d) = idx[p + 1..].iter().position(|&l| l == idx[p]) {
            return Some((p, p + 1 + d));
        }
    }
    None
}

fn same_set(a: &[Idx], b: &[Idx]) -> bool {
    a.len() == b.len() && a.iter().all(|l| b.contains(l))
}
