//! The index-notation front end (`.tin` files): TACO/TC-style statements to a checked program.
//!
//! Meaning of a statement `T(I) = e` (spec/frontends.md, "Index notation"):
//! - every index variable ranges over dimensions of one extent, taken from the declarations of
//!   the tensors it indexes (E0503 names the index and labels each occurrence with its extent);
//! - an index of `e` that is not among `I` is *summed over the whole right-hand side*: the sum
//!   distributes over `+` and `-`, and a term that does not mention a summed index is multiplied
//!   by that index's extent (warning W0501, because frameworks disagree here);
//! - an index of `I` that `e` does not mention broadcasts `e` along it;
//! - `T(I) += e` is `T(I) = T(I) + e`, with the sum over the indices of `e` alone.
//!
//! Each term is lowered as an einsum ([`super::lower`]): products are contracted pairwise in
//! the planner's order ([`crate::plan`]), sums of the term's own indices happen as early as possible, and the result is
//! aligned to `I`. Sub-expressions that are not plain products (a parenthesised sum inside a
//! product, a division by an indexed expression) are computed over all their indices first,
//! broadcasting with `expa`, and then enter the product as one factor.
//!
//! Errors and warnings are [`FrontEndError`]s, worded in `error.rs`.

mod syntax;

use super::error::{FrontEndError, IndexUse};
use super::lower::{distinct, Builder, Factor, Idx};
use crate::ast::*;
use crate::check::CheckedProgram;
use crate::diagnostic::Diagnostic;
use std::collections::{BTreeMap, HashMap, HashSet};
use syntax::{Access, Assign, TExpr, TKind, TStmt};

/// Parses, lowers and checks an index-notation program. `Ok` carries the checked TeIL program
/// and warnings; `Err` every diagnostic, at least one an error. All spans point into `src`.
pub fn index_notation(src: &str) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (file, mut diags) = syntax::parse(src);
    let mut table: HashMap<&str, &Decl> = HashMap::new();
    for d in &file.decls {
        table.entry(d.name.name.as_str()).or_insert(d);
    }
    let taken: HashSet<String> = file.decls.iter().map(|d| d.name.name.clone()).collect();
    let mut b = Builder::new(taken, "_t");
    for stmt in &file.stmts {
        lower_statement(stmt, &table, &mut b, &mut diags);
    }
    let mut decls = file.decls.clone();
    if !b.temps.is_empty() && !decls.iter().any(|d| d.qualifier.is_some()) {
        // Without qualifiers every variable is both read and written by the caller (report
        // §5). Temporaries must not join that interface, so the user's variables say so
        // explicitly: `inout` is what an unqualified variable means.
        for d in &mut decls {
            d.qualifier = Some(Qualifier::InOut);
        }
    }
    decls.append(&mut b.temps);
    let program = Program {
        decls,
        stmts: std::mem::take(&mut b.stmts),
    };
    let front_ok = !diags.iter().any(Diagnostic::is_error);
    let result = crate::check(program);
    let sort = |d: &mut Vec<Diagnostic>| {
        d.sort_by_key(|d| (d.primary.span.start, d.primary.span.end, d.code));
    };
    match result {
        Ok((checked, warnings)) if front_ok => {
            diags.extend(warnings);
            sort(&mut diags);
            Ok((checked, diags))
        }
        Ok((_, more)) | Err(more) => {
            // Statements with front-end errors were dropped, so the checker's warnings (an
            // output never assigned, a read before a write) may only echo those errors.
            let echo = !front_ok;
            diags.extend(more.into_iter().filter(|d| d.is_error() || !echo));
            sort(&mut diags);
            Err(diags)
        }
    }
}

/// The index variables of a statement, each with its occurrences.
struct Indices {
    names: Vec<String>,
    occurrences: Vec<Vec<IndexUse>>,
}

impl Indices {
    fn id(&mut self, name: &str) -> Idx {
        match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_string());
                self.occurrences.push(Vec::new());
                self.names.len() - 1
            }
        }
    }

    fn lookup(&self, name: &str) -> Idx {
        self.names.iter().position(|n| n == name).unwrap_or(0)
    }
}

fn accesses<'a>(e: &'a TExpr, out: &mut Vec<&'a Access>) {
    match &e.kind {
        TKind::Num(_) => {}
        TKind::Access(a) => out.push(a),
        TKind::Neg(x) | TKind::Paren(x) => accesses(x, out),
        TKind::Bin(_, a, b) => {
            accesses(a, out);
            accesses(b, out);
        }
    }
}

/// Resolves names and indices; `None` when the statement cannot be lowered (its errors, if
/// any, are in `diags`).
fn resolve(
    stmt: &TStmt,
    table: &HashMap<&str, &Decl>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Indices> {
    let mut ix = Indices {
        names: Vec::new(),
        occurrences: Vec::new(),
    };
    let mut all = vec![&stmt.target];
    accesses(&stmt.rhs, &mut all);
    let mut ok = true;
    let mut undeclared = Vec::new();
    for (k, a) in all.iter().enumerate() {
        let Some(decl) = table.get(a.name.name.as_str()) else {
            undeclared.push((k, *a));
            ok = false;
            continue;
        };
        let shape = decl.shape();
        if shape.contains(&0) {
            // The checker reports the declaration (E0102); nothing sensible to lower.
            ok = false;
            continue;
        }
        if a.indices.len() != shape.len() {
            diags.push(
                FrontEndError::TinRankMismatch {
                    span: a.span.clone(),
                    name: a.name.name.clone(),
                    indices: a.indices.len(),
                    decl: decl.name.span.clone(),
                    shape,
                }
                .into(),
            );
            ok = false;
            continue;
        }
        for (dim, i) in a.indices.iter().enumerate() {
            let id = ix.id(&i.name);
            ix.occurrences[id].push(IndexUse {
                span: i.span.clone(),
                extent: shape[dim],
                tensor: a.name.name.clone(),
                dim: dim + 1,
                shape: shape.clone(),
            });
        }
    }
    for (k, a) in undeclared {
        diags.push(undeclared_error(k == 0, a, &ix).into());
    }
    if !ok {
        return None;
    }
    for (id, occ) in ix.occurrences.iter().enumerate() {
        let first = occ[0].extent;
        if occ.iter().all(|o| o.extent == first) {
            continue;
        }
        diags.push(
            FrontEndError::TinExtentConflict {
                index: ix.names[id].clone(),
                first: occ[0].clone(),
                others: occ[1..].to_vec(),
            }
            .into(),
        );
        ok = false;
    }
    let mut seen: HashMap<&str, &Ident> = HashMap::new();
    for i in &stmt.target.indices {
        if let Some(first) = seen.insert(i.name.as_str(), i) {
            diags.push(
                FrontEndError::TinRepeatedIndex {
                    span: i.span.clone(),
                    index: i.name.clone(),
                    first: first.span.clone(),
                }
                .into(),
            );
            ok = false;
        }
    }
    ok.then_some(ix)
}

/// The labels an expression mentions, each once, in order of first occurrence.
fn labels(e: &TExpr, ix: &Indices) -> Vec<Idx> {
    let mut acc = Vec::new();
    accesses(e, &mut acc);
    let all: Vec<Idx> = acc
        .iter()
        .flat_map(|a| a.indices.iter().map(|i| ix.lookup(&i.name)))
        .collect();
    distinct(&all)
}

/// The additive terms of `e` with their signs (`true` = subtracted).
fn terms<'a>(e: &'a TExpr, neg: bool, out: &mut Vec<(bool, &'a TExpr)>) {
    match &e.kind {
        TKind::Bin(BinOp::Add, a, b) => {
            terms(a, neg, out);
            terms(b, neg, out);
        }
        TKind::Bin(BinOp::Sub, a, b) => {
            terms(a, neg, out);
            terms(b, !neg, out);
        }
        TKind::Paren(x) => terms(x, neg, out),
        TKind::Neg(x) => terms(x, !neg, out),
        _ => out.push((neg, e)),
    }
}

/// A product split into factors and index-free divisors, with the sign it carries.
struct Product<'a> {
    neg: bool,
    factors: Vec<&'a TExpr>,
    divisors: Vec<&'a TExpr>,
}

fn collect<'a>(e: &'a TExpr, ix: &Indices, p: &mut Product<'a>) {
    match &e.kind {
        TKind::Paren(x) if !matches!(x.kind, TKind::Bin(BinOp::Add | BinOp::Sub, ..)) => {
            collect(x, ix, p)
        }
        TKind::Bin(BinOp::Mul, a, b) => {
            collect(a, ix, p);
            collect(b, ix, p);
        }
        TKind::Bin(BinOp::Div, a, c) if labels(c, ix).is_empty() => {
            collect(a, ix, p);
            p.divisors.push(c);
        }
        TKind::Neg(x) => {
            p.neg = !p.neg;
            collect(x, ix, p);
        }
        _ => p.factors.push(e),
    }
}

struct Lowerer<'b> {
    b: &'b mut Builder,
    ix: Indices,
    ext: Vec<u64>,
    keep_all: Vec<bool>,
}

impl Lowerer<'_> {
    fn access(&self, a: &Access) -> Factor {
        let idx = a.indices.iter().map(|i| self.ix.lookup(&i.name)).collect();
        Factor::new(self.b.var(&a.name.name, a.span.clone()), idx)
    }

    /// One factor of a product: an access keeps its repeated indices for the contraction to
    /// resolve; anything else is computed over all its indices.
    fn factor(&mut self, e: &TExpr) -> Factor {
        match &e.kind {
            TKind::Access(a) => self.access(a),
            TKind::Num(v) => Factor::new(self.b.lit(*v), Vec::new()),
            _ => self.full(e),
        }
    }

    /// The product `p`, summed over every label not in `keep`.
    fn product(&mut self, p: &Product<'_>, keep: &[bool]) -> Factor {
        let factors = p.factors.iter().map(|e| self.factor(e)).collect();
        let ext = self.ext.clone();
        let mut f = self.b.contract(factors, keep, &ext);
        for d in &p.divisors {
            let s = self.full(d);
            f.expr = self.b.binary(BinOp::Div, f.expr, s.expr);
            f = self.b.bind(f, &ext);
        }
        f
    }

    fn negate(&mut self, mut f: Factor) -> Factor {
        f.expr = self.b.binary(BinOp::Mul, self.b.lit(-1.0), f.expr);
        let ext = self.ext.clone();
        self.b.bind(f, &ext)
    }

    /// `e` over all of its labels (each once), nothing summed.
    fn full(&mut self, e: &TExpr) -> Factor {
        let ext = self.ext.clone();
        match &e.kind {
            TKind::Paren(x) => self.full(x),
            TKind::Num(v) => Factor::new(self.b.lit(*v), Vec::new()),
            TKind::Bin(op @ (BinOp::Add | BinOp::Sub | BinOp::Div), a, c)
                if *op != BinOp::Div || !labels(c, &self.ix).is_empty() =>
            {
                let fa = self.full(a);
                let fc = self.full(c);
                let f = if *op == BinOp::Div && fc.idx.is_empty() {
                    Factor::new(self.b.binary(BinOp::Div, fa.expr, fc.expr), fa.idx)
                } else {
                    let mut order = fa.idx.clone();
                    order.extend(fc.idx.iter().copied().filter(|l| !fa.idx.contains(l)));
                    self.b.elementwise(*op, fa, fc, &order, &ext)
                };
                self.b.bind(f, &ext)
            }
            _ => {
                let mut p = Product {
                    neg: false,
                    factors: Vec::new(),
                    divisors: Vec::new(),
                };
                collect(e, &self.ix, &mut p);
                let keep = self.keep_all.clone();
                let f = self.product(&p, &keep);
                if p.neg {
                    self.negate(f)
                } else {
                    f
                }
            }
        }
    }
}

fn lower_statement(
    stmt: &TStmt,
    table: &HashMap<&str, &Decl>,
    b: &mut Builder,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(ix) = resolve(stmt, table, diags) else {
        return;
    };
    let ext: Vec<u64> = ix.occurrences.iter().map(|o| o[0].extent).collect();
    let lhs: Vec<Idx> = stmt
        .target
        .indices
        .iter()
        .map(|i| ix.lookup(&i.name))
        .collect();
    let mut keep = vec![false; ext.len()];
    for &l in &lhs {
        keep[l] = true;
    }
    let summed: Vec<Idx> = labels(&stmt.rhs, &ix)
        .into_iter()
        .filter(|l| !keep[*l])
        .collect();
    partial_sum_warnings(stmt, &ix, &summed, &ext, diags);

    b.span = stmt.span.clone();
    // The statement's temporaries compute in its target's element type: an expression of one
    // element type throughout (mixed types are the checker's E0311 on the operands).
    b.elem = table
        .get(stmt.target.name.name.as_str())
        .map_or(ElemType::F64, |d| d.elem);
    let mut lw = Lowerer {
        b,
        keep_all: vec![true; ext.len()],
        ix,
        ext: ext.clone(),
    };
    let mut parts = Vec::new();
    terms(&stmt.rhs, false, &mut parts);
    let mut acc: Option<Factor> = None;
    for (neg, t) in parts {
        let mut p = Product {
            neg,
            factors: Vec::new(),
            divisors: Vec::new(),
        };
        collect(t, &lw.ix, &mut p);
        let mut f = lw.product(&p, &keep);
        let present = labels(t, &lw.ix);
        let coef: f64 = summed
            .iter()
            .filter(|l| !present.contains(l))
            .map(|&l| ext[l] as f64)
            .product();
        if summed.iter().any(|l| !present.contains(l)) {
            f.expr = lw.b.binary(BinOp::Mul, lw.b.lit(coef), f.expr);
        }
        let f = lw.b.align(f, &lhs, &ext);
        let f = lw.b.bind(f, &ext);
        let next = match acc.take() {
            None if p.neg => lw.negate(f),
            None => f,
            Some(a) => {
                let op = if p.neg { BinOp::Sub } else { BinOp::Add };
                Factor::new(lw.b.binary(op, a.expr, f.expr), lhs.clone())
            }
        };
        acc = Some(lw.b.bind(next, &ext));
    }
    let Some(value) = acc else {
        return;
    };
    let target = &stmt.target.name;
    let value = match stmt.assign {
        Assign::Set => value.expr,
        Assign::Add => lw.b.binary(
            BinOp::Add,
            lw.b.var(&target.name, stmt.target.span.clone()),
            value.expr,
        ),
    };
    lw.b.stmts.push(Stmt {
        target: target.clone(),
        value,
        span: stmt.span.clone(),
    });
}

/// W0501: a summed index missing from one side of a `+` or `-`.
fn partial_sum_warnings(
    stmt: &TStmt,
    ix: &Indices,
    summed: &[Idx],
    ext: &[u64],
    diags: &mut Vec<Diagnostic>,
) {
    let mut lacking: BTreeMap<Idx, Vec<Span>> = BTreeMap::new();
    for &l in summed {
        walk_sums(&stmt.rhs, ix, l, &mut lacking);
    }
    for (l, mut spans) in lacking {
        let summed_at = ix.occurrences[l]
            .iter()
            .find(|o| o.span.start >= stmt.rhs.span.start)
            .map(|o| o.span.clone());
        let span = spans.remove(0);
        diags.push(
            FrontEndError::TinPartialSum {
                span,
                index: ix.names[l].clone(),
                others: spans,
                summed_at,
                extent: ext[l],
            }
            .into(),
        );
    }
}

/// Collects, for the summed label `l`, the terms that lack it where the sum reaches them
/// linearly: under `+`, `-`, unary minus, and products or quotients whose other operands do not
/// mention `l`. Inside a product with a factor that mentions `l` (`(B(i,k) + C(i)) * D(k)`), a
/// term without `l` is broadcast along it, which no framework reads differently.
fn walk_sums(e: &TExpr, ix: &Indices, l: Idx, lacking: &mut BTreeMap<Idx, Vec<Span>>) {
    match &e.kind {
        TKind::Num(_) | TKind::Access(_) => {}
        TKind::Neg(x) | TKind::Paren(x) => walk_sums(x, ix, l, lacking),
        TKind::Bin(BinOp::Add | BinOp::Sub, a, b) => {
            let side = match (labels(a, ix).contains(&l), labels(b, ix).contains(&l)) {
                (true, false) => Some(b),
                (false, true) => Some(a),
                _ => None,
            };
            if let Some(side) = side {
                let mut parts = Vec::new();
                terms(side, false, &mut parts);
                lacking
                    .entry(l)
                    .or_default()
                    .extend(parts.iter().map(|(_, t)| t.span.clone()));
            }
            walk_sums(a, ix, l, lacking);
            walk_sums(b, ix, l, lacking);
        }
        TKind::Bin(BinOp::Mul, a, b) => {
            let (la, lb) = (labels(a, ix).contains(&l), labels(b, ix).contains(&l));
            if !lb {
                walk_sums(a, ix, l, lacking);
            }
            if !la {
                walk_sums(b, ix, l, lacking);
            }
        }
        TKind::Bin(BinOp::Div, a, c) => {
            if !labels(c, ix).contains(&l) {
                walk_sums(a, ix, l, lacking);
            }
        }
    }
}

/// E0201 / E0301 for an access to an undeclared tensor, with the extents its indices have
/// elsewhere in the statement (for the declaration the help suggests).
fn undeclared_error(target: bool, a: &Access, ix: &Indices) -> FrontEndError {
    let extents = a
        .indices
        .iter()
        .map(|i| {
            let id = ix.names.iter().position(|n| *n == i.name)?;
            Some(ix.occurrences[id][0].extent)
        })
        .collect();
    FrontEndError::TinUndeclared {
        span: a.name.span.clone(),
        name: a.name.name.clone(),
        target,
        extents,
    }
}
