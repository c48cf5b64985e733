//! In-place statements that read their target: the campaign retargets one statement of some
//! generated programs to a variable its right-hand side reads.
//!
//! The generator's in-place statements assign to the first variable of their shape, which the
//! right-hand side reads only now and then, and mostly element-wise (`x = x + y`). A statement
//! that reads its target at other indices (`x = x ^[1 2] + y`, `x = (x # a) .[2 3]`) is where
//! [St-Stmt]'s "evaluate the whole right-hand side first" matters, and where a backend that
//! updates in place goes wrong. [`retarget`] makes such statements common: it picks a statement
//! and a variable of the target's shape that its right-hand side reads, and assigns the
//! statement to that variable instead. The result is a different program (not a variant of the
//! original): like every generated program it is compared against the oracle. A retargeted
//! `input` variable becomes `inout`, so that its new value is observed.
//!
//! [`self_read`] goes further and adds a term that certainly reads the target elsewhere:
//! `x = e` becomes `x = e ⊕ expa i n (proj i m x)` (every cell reads slice `m` of dimension
//! `i`) or `x = e ⊕ transp i j x` (when dimensions `i` and `j` have equal extents).

use teil::ast::*;
use teil::CheckedProgram;

/// The variables `e` reads, in order of first occurrence.
fn reads(e: &Expr) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    e.walk(&mut |n| {
        if let ExprKind::Var(v) = &n.kind {
            if !out.contains(&v.name) {
                out.push(v.name.clone());
            }
        }
    });
    out
}

/// Retargets the `choice`-th (modulo their number) statement/variable pair where a statement's
/// right-hand side reads another variable of the target's shape. `None` when there is none.
pub fn retarget(checked: &CheckedProgram, choice: u64) -> Option<Program> {
    let p = checked.program();
    let mut pairs: Vec<(usize, String)> = Vec::new();
    for (k, s) in p.stmts.iter().enumerate() {
        let shape = checked.var_shape(&s.target.name)?;
        for x in reads(&s.value) {
            if x != s.target.name && checked.var_shape(&x) == Some(shape) {
                pairs.push((k, x));
            }
        }
    }
    if pairs.is_empty() {
        return None;
    }
    let (k, x) = pairs.swap_remove((choice % pairs.len() as u64) as usize);
    let mut q = p.clone();
    q.stmts[k].target.name = x.clone();
    if let Some(d) = q.decls.iter_mut().find(|d| d.name.name == x) {
        if d.qualifier == Some(Qualifier::Input) {
            d.qualifier = Some(Qualifier::InOut);
        }
    }
    Some(q)
}

fn nat(v: u64) -> Nat {
    Nat::new(v, 0..0)
}

fn node(kind: ExprKind) -> Expr {
    Expr::new(kind, 0..0)
}

/// Adds to the `choice`-th (modulo their number) statement whose target has a value before it
/// (an input, or assigned earlier) and an extent of at least 2 a term reading the target at
/// other indices. `None` when no statement qualifies.
pub fn self_read(checked: &CheckedProgram, choice: u64) -> Option<Program> {
    let p = checked.program();
    let mut candidates = Vec::new();
    for (k, s) in p.stmts.iter().enumerate() {
        let t = &s.target.name;
        let shape = checked.var_shape(t)?;
        let defined = p.decl(t).is_some_and(|d| checked.is_input(d))
            || p.stmts[..k].iter().any(|e| &e.target.name == t);
        if defined && shape.iter().any(|&n| n >= 2) {
            candidates.push(k);
        }
    }
    if candidates.is_empty() {
        return None;
    }
    let k = candidates[(choice % candidates.len() as u64) as usize];
    let c = choice / candidates.len() as u64;
    let t = p.stmts[k].target.name.clone();
    let shape = checked.var_shape(&t)?.to_vec();
    let var = || node(ExprKind::Var(Ident::new(t.clone(), 0..0)));
    let wide: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] >= 2).collect();
    let square: Vec<(usize, usize)> = (0..shape.len())
        .flat_map(|a| (a + 1..shape.len()).map(move |b| (a, b)))
        .filter(|&(a, b)| shape[a] == shape[b] && shape[a] >= 2)
        .collect();
    let term = if !square.is_empty() && c % 2 == 1 {
        let (a, b) = square[((c / 2) % square.len() as u64) as usize];
        node(ExprKind::Transp(
            nat(a as u64 + 1),
            nat(b as u64 + 1),
            Box::new(var()),
        ))
    } else {
        let d = wide[((c / 2) % wide.len() as u64) as usize];
        let n = shape[d];
        let m = 1 + (c / 7) % n;
        let i = nat(d as u64 + 1);
        node(ExprKind::Expa(
            i,
            nat(n),
            Box::new(node(ExprKind::Proj(i, nat(m), Box::new(var())))),
        ))
    };
    let op = [BinOp::Add, BinOp::Sub, BinOp::Mul][((c / 3) % 3) as usize];
    let mut q = p.clone();
    let e = std::mem::replace(&mut q.stmts[k].value, node(ExprKind::Error));
    q.stmts[k].value = node(ExprKind::Binary(op, Box::new(e), Box::new(term)));
    Some(q)
}
