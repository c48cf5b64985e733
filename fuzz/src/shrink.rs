//! Delta debugging for failing programs: reduce the program, its shapes and its input values
//! while a caller-supplied predicate keeps failing.
//!
//! Every candidate is re-checked with [`teil::check()`] before the predicate sees it, so the
//! predicate only ever runs on well-typed programs: a reduction that breaks typing is simply
//! not taken. The reductions, tried in this order until none applies:
//!
//! 1. drop a statement;
//! 2. make a sub-expression the whole right-hand side (assigned to a fresh variable of its
//!    shape); replace an expression by any part of it of the same shape and element type (an
//!    operand, or deeper: `f64 (f32 x)` by `x`; this also removes parentheses), or a scalar
//!    expression by the literal `1`;
//! 3. replace a compound expression by a fresh input variable of its shape holding the value
//!    the expression had (the oracle's, on the current inputs; ones where it has none), so the
//!    operations around it see what they saw: a bug outside it keeps failing, and shrinks to
//!    the operation that has it;
//! 4. shrink an extent: every extent `v > 1` in the program becomes `1`, or else `v - 1`
//!    (in declarations and `expa`, clamping `proj` slices), slicing the inputs to match;
//! 5. simplify input values: all zeros, all ones, then single elements to zero;
//! 6. once nothing smaller fails, write what is left one way (`canonical`): a statement that
//!    assigns to a variable it reads assigns to a fresh one, a scalar literal becomes an input
//!    holding it; each taken where the program still fails.
//!
//! Unused declarations (and their inputs) are removed from every candidate before the predicate
//! sees it, so the result is exactly what was last seen failing; which declarations are unused
//! is read from the checker's initialisation record of the candidate
//! ([`CheckedProgram::initialization`]). The number of predicate calls is bounded.

use std::collections::BTreeMap;
use teil::ast::*;
use teil::CheckedProgram;

pub type Inputs = BTreeMap<String, ndarray::ArrayD<f64>>;

/// Shrinks `(program, inputs)` while `fails` holds, calling it at most `budget` times. The
/// starting pair must fail and be well-typed (an ill-typed one is returned as it is); the
/// result fails too.
pub fn shrink(
    program: Program,
    inputs: Inputs,
    mut fails: impl FnMut(&CheckedProgram, &Inputs) -> bool,
    budget: usize,
) -> (Program, Inputs) {
    let start = (program, inputs);
    let Some(mut cur) = tidy(start.clone()) else {
        return start;
    };
    let mut calls = 0usize;
    'outer: loop {
        for cand in candidates(&cur.0, &cur.1) {
            if calls >= budget {
                break 'outer;
            }
            // Testing exactly what would be reported: no unused declarations, no stale inputs.
            let Some(cand) = tidy(cand) else {
                continue;
            };
            // Only strictly smaller candidates are taken, so shrinking always terminates.
            if size(cand.0.program(), &cand.1) >= size(cur.0.program(), &cur.1) {
                continue;
            }
            calls += 1;
            if fails(&cand.0, &cand.1) {
                cur = cand;
                continue 'outer;
            }
        }
        break;
    }
    // 6. The canonical form of what is left, each rewrite taken once where it still fails (no
    // smaller program than the minimum: the same size, written one way).
    for k in 0..cur.0.program().stmts.len() {
        for cand in canonical(&cur.0, &cur.1, k) {
            if calls >= budget {
                break;
            }
            let Some(cand) = tidy(cand) else {
                continue;
            };
            calls += 1;
            if fails(&cand.0, &cand.1) {
                cur = cand;
            }
        }
    }
    (cur.0.into_program(), cur.1)
}

/// The rewrites of statement `k` towards one way of writing the same minimum, so that one bug
/// shrunk from different programs reads the same ([`crate::signature`]): a statement that
/// assigns to a variable it reads (`x = exp x`) assigns to a fresh one instead (`h = exp x`);
/// a scalar literal (`exp 1`, `exp -2`) becomes a fresh input holding its value (`exp h`).
fn canonical(checked: &CheckedProgram, inputs: &Inputs, k: usize) -> Vec<Candidate> {
    let p = checked.program();
    let s = &p.stmts[k];
    let mut out = Vec::new();
    let mut reads_target = false;
    let mut literals = Vec::new();
    s.value.walk(&mut |e| match &e.kind {
        ExprKind::Var(x) if x.name == s.target.name => reads_target = true,
        ExprKind::Lit(_) => literals.push(e),
        _ => {}
    });
    if reads_target {
        if let Some(d) = p.decl(&s.target.name) {
            let (mut q, ins, name) = with_fresh_output(p, inputs, d.elem, &d.shape());
            q.stmts[k].target = name;
            out.push((q, ins));
        }
    }
    for e in literals {
        let ExprKind::Lit(v) = &e.kind else { continue };
        let elem = checked.elem(e);
        let decl = fresh_decl(p, Qualifier::Input, elem, &[]);
        let var = Expr::new(ExprKind::Var(decl.name.clone()), 0..0);
        let mut q = replace(p, k, e.id, var);
        let mut ins = inputs.clone();
        let value = ndarray::arr0(v.in_type(elem)).into_dyn();
        ins.insert(decl.name.name.clone(), value);
        q.decls.push(decl);
        out.push((q, ins));
    }
    out
}

/// The well-founded order shrinking descends: expression nodes, then declared elements, then
/// the complexity of input values (0 < 1 < anything else), then declarations.
fn size(p: &Program, inputs: &Inputs) -> (usize, u64, u64, usize) {
    let mut nodes = 0;
    for s in &p.stmts {
        s.value.walk(&mut |_| nodes += 1);
    }
    let elements = p
        .decls
        .iter()
        .map(|d| d.shape().iter().product::<u64>())
        .sum();
    let values = inputs
        .values()
        .flatten()
        .map(|&x| match x {
            0.0 => 0,
            1.0 => 1,
            _ => 2,
        })
        .sum();
    (nodes, elements, values, p.decls.len())
}

/// Checks a candidate and removes its unused declarations (those no statement reads or assigns,
/// by the checker's initialisation record) and the inputs of variables no longer declared;
/// `None` when the candidate is ill-typed.
///
/// A declaration nobody mentions cannot make a candidate ill-typed here: every declaration of
/// a candidate comes from the well-typed program it was made from (extents only shrunk) or is a
/// fresh name of an expression's shape, used by construction. So checking before removing
/// accepts exactly the candidates that removing before checking would.
fn tidy((program, inputs): Candidate) -> Option<(CheckedProgram, Inputs)> {
    let (checked, _) = teil::check(program).ok()?;
    let unused: Vec<bool> = checked
        .initialization()
        .iter()
        .map(|v| v.first_read.is_none() && !v.written())
        .collect();
    let checked = if unused.contains(&true) {
        let mut program = checked.into_program();
        let mut it = unused.into_iter();
        program.decls.retain(|_| !it.next().unwrap_or(false));
        // Still well-typed: the statements mention none of the removed names.
        teil::check(program).ok()?.0
    } else {
        checked
    };
    let program = checked.program();
    let inputs = inputs
        .into_iter()
        .filter(|(n, _)| program.decl(n).is_some())
        .collect();
    Some((checked, inputs))
}

type Candidate = (Program, Inputs);

/// All one-step reductions of the current pair, most aggressive first.
fn candidates(checked: &CheckedProgram, inputs: &Inputs) -> Vec<Candidate> {
    let p = checked.program();
    let mut out = Vec::new();
    // 1. Drop a statement.
    for k in (0..p.stmts.len()).rev() {
        let mut q = p.clone();
        q.stmts.remove(k);
        out.push((q, inputs.clone()));
    }
    // 2 and 3. Expression replacements.
    for (k, s) in p.stmts.iter().enumerate() {
        let mut ids = Vec::new();
        s.value.walk(&mut |e| ids.push(e));
        for e in ids {
            let shape = checked.shape(e).to_vec();
            // Hoist a sub-expression into a statement of its own, replacing this statement.
            if e.id != s.value.id && !matches!(e.kind, ExprKind::Var(_) | ExprKind::Lit(_)) {
                let (mut q, ins, target) = with_fresh_output(p, inputs, checked.elem(e), &shape);
                q.stmts[k] = Stmt {
                    target,
                    value: e.clone(),
                    span: 0..0,
                };
                out.push((q, ins));
            }
            // Replace it by an operand, or any part of it, of its shape and type.
            let mut parts = Vec::new();
            e.walk(&mut |c| {
                if c.id != e.id
                    && checked.shape(c) == shape.as_slice()
                    && checked.elem(c) == checked.elem(e)
                {
                    parts.push(c.clone());
                }
            });
            for c in parts {
                out.push((replace(p, k, e.id, c), inputs.clone()));
            }
            let compound = !matches!(e.kind, ExprKind::Var(_) | ExprKind::Lit(_));
            if shape.is_empty() && !matches!(e.kind, ExprKind::Lit(_)) {
                let one = Expr::new(ExprKind::Lit(Literal::from_f64(1.0)), 0..0);
                out.push((replace(p, k, e.id, one), inputs.clone()));
            }
            // Replace it by a fresh input holding the value it had (so that what the
            // operations around it see is unchanged: the canonical form of a bug outside it),
            // or else ones.
            if compound {
                let decl = fresh_decl(p, Qualifier::Input, checked.elem(e), &shape);
                let var = Expr::new(ExprKind::Var(decl.name.clone()), 0..0);
                let mut q = replace(p, k, e.id, var);
                let value = value_of(checked, inputs, k, e).unwrap_or_else(|| {
                    let dims: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
                    ndarray::ArrayD::from_elem(dims, 1.0)
                });
                let mut ins = inputs.clone();
                ins.insert(decl.name.name.clone(), value);
                q.decls.push(decl);
                out.push((q, ins));
            }
        }
    }
    // 4. Smaller extents.
    let mut extents: Vec<u64> = p
        .decls
        .iter()
        .flat_map(|d| d.shape())
        .filter(|&v| v > 1)
        .collect();
    extents.sort_unstable();
    extents.dedup();
    for &v in extents.iter().rev() {
        for to in [1, v - 1] {
            if let Some(c) = shrink_extent(p, inputs, v, to) {
                out.push(c);
            }
            if v - 1 == 1 {
                break;
            }
        }
    }
    // 5. Simpler values.
    for (name, t) in inputs {
        for fill in [0.0, 1.0] {
            if t.iter().any(|&x| x != fill) {
                let mut ins = inputs.clone();
                ins.insert(name.clone(), t.mapv(|_| fill));
                out.push((p.clone(), ins));
            }
        }
        if t.len() <= 64 {
            for (i, &x) in t.iter().enumerate() {
                if x != 0.0 {
                    let mut ins = inputs.clone();
                    let mut u = t.clone();
                    if let Some(cell) = u.iter_mut().nth(i) {
                        *cell = 0.0;
                    }
                    ins.insert(name.clone(), u);
                    out.push((p.clone(), ins));
                }
            }
        }
    }
    out
}

/// The value sub-expression `e` of statement `k` has when the program runs on `inputs`: the
/// statements before `k`, then `e` assigned to a fresh variable, run by the oracle. `None` when
/// that program does not check or run (a value it reads is undefined there, say).
fn value_of(
    checked: &CheckedProgram,
    inputs: &Inputs,
    k: usize,
    e: &Expr,
) -> Option<ndarray::ArrayD<f64>> {
    let p = checked.program();
    let (mut q, ins, name) = with_fresh_output(p, inputs, checked.elem(e), checked.shape(e));
    q.stmts.truncate(k);
    q.stmts.push(Stmt {
        target: name.clone(),
        value: e.clone(),
        span: 0..0,
    });
    let (q, _) = teil::check(q).ok()?;
    let mut all = teil_interp::run_oracle(&q, &ins).ok()?;
    all.remove(&name.name)
}

/// A fresh variable of `p` ([`fresh_name`]) of `elem` and `shape`, `qualifier` where `p` uses
/// qualifiers.
fn fresh_decl(p: &Program, qualifier: Qualifier, elem: ElemType, shape: &[u64]) -> Decl {
    Decl {
        qualifier: p.uses_qualifiers().then_some(qualifier),
        name: Ident::new(fresh_name(p), 0..0),
        elem,
        elem_span: None,
        extents: shape.iter().map(|&n| Nat::new(n, 0..0)).collect(),
        span: 0..0,
    }
}

/// `p` with a fresh variable of `elem` and `shape` declared for a statement to assign, and
/// `inputs`; without qualifiers every variable is supplied, so the fresh one gets zeros (it is
/// assigned before anything reads it). The variable's name.
fn with_fresh_output(
    p: &Program,
    inputs: &Inputs,
    elem: ElemType,
    shape: &[u64],
) -> (Program, Inputs, Ident) {
    let decl = fresh_decl(p, Qualifier::Output, elem, shape);
    let name = decl.name.clone();
    let mut ins = inputs.clone();
    if !p.uses_qualifiers() {
        let dims: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
        ins.insert(name.name.clone(), ndarray::ArrayD::zeros(dims));
    }
    let mut q = p.clone();
    q.decls.push(decl);
    (q, ins, name)
}

fn fresh_name(p: &Program) -> String {
    (0..)
        .map(|k| format!("h{k}"))
        .find(|n| p.decl(n).is_none())
        .unwrap_or_else(|| "h".into())
}

/// `p` with the node `id` of statement `k` replaced by `with`.
fn replace(p: &Program, k: usize, id: ExprId, with: Expr) -> Program {
    fn go(e: &mut Expr, id: ExprId, with: &Expr) -> bool {
        if e.id == id {
            *e = with.clone();
            return true;
        }
        e.children_mut().into_iter().any(|c| go(c, id, with))
    }
    let mut q = p.clone();
    go(&mut q.stmts[k].value, id, &with);
    q
}

/// Every extent `v` becomes `to`: in declarations (slicing inputs to match) and in `expa`;
/// `proj` slices beyond `to` are clamped. The checker decides whether the result still types.
fn shrink_extent(p: &Program, inputs: &Inputs, v: u64, to: u64) -> Option<Candidate> {
    fn go(e: &mut Expr, v: u64, to: u64) {
        match &mut e.kind {
            ExprKind::Expa(_, n, _) if n.value == v => n.value = to,
            ExprKind::Proj(_, m, _) if m.value > to => m.value = to,
            _ => {}
        }
        for c in e.children_mut() {
            go(c, v, to);
        }
    }
    let mut q = p.clone();
    let mut ins = inputs.clone();
    for d in &mut q.decls {
        let mut changed = false;
        for n in &mut d.extents {
            if n.value == v {
                n.value = to;
                changed = true;
            }
        }
        if changed {
            if let Some(t) = ins.get_mut(&d.name.name) {
                let mut s = t.view();
                for (axis, &len) in t.shape().iter().enumerate() {
                    if len as u64 == v {
                        s.slice_axis_inplace(
                            ndarray::Axis(axis),
                            ndarray::Slice::from(0..to as usize),
                        );
                    }
                }
                *t = s.to_owned();
            }
        }
    }
    for s in &mut q.stmts {
        go(&mut s.value, v, to);
    }
    Some((q, ins))
}
