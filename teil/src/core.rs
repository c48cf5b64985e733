//! Core-TeIL (TeIL paper §4, Fig. 12): the verified core, in which `transp` swaps adjacent
//! dimensions only and `red`, `diag`, `expa`, `proj` act on the first dimension(s).
//!
//! Core-TeIL forms are written here in full-TeIL syntax, so a desugared program is an ordinary
//! [`Program`] that every evaluator and backend accepts:
//!
//! | Core-TeIL      | written as           |
//! |----------------|----------------------|
//! | `transp i e`   | `transp i (i+1) e`   |
//! | `red+ e`       | `red+ 1 e`           |
//! | `diag e`       | `diag 1 2 e`         |
//! | `expa n e`     | `expa 1 n e`         |
//! | `proj m e`     | `proj 1 m e`         |
//!
//! [`desugar`] rewrites every other form by pre- and post-composing adjacent transpositions
//! (spec/core.md gives the equations); `contr i j` becomes `red+ 1 (diag 1 2 ...)`, following
//! the paper's definition (6).

use crate::ast::*;
use crate::check::CheckedProgram;
use crate::diagnostic::{Code, Diagnostic};
use crate::limits::MAX_EXPR_DEPTH;

/// Rewrites a checked program into Core-TeIL. The result must be checked again before it is
/// evaluated; it has the same declarations and, by the equations in spec/core.md, the same
/// meaning. Fails only when the rewritten expressions exceed the nesting limit.
pub fn desugar(checked: &CheckedProgram) -> Result<Program, Diagnostic> {
    let p = checked.program();
    let mut stmts = Vec::with_capacity(p.stmts.len());
    for s in &p.stmts {
        let value = rewrite(&s.value);
        if value.depth() > MAX_EXPR_DEPTH {
            return Err(Diagnostic::new(
                Code::TooDeep,
                "the Core-TeIL form of this statement is nested too deeply",
                s.span.clone(),
                "this statement",
            )
            .with_help("split the statement into several statements over temporaries"));
        }
        stmts.push(Stmt {
            target: s.target.clone(),
            value,
            span: s.span.clone(),
        });
    }
    Ok(Program {
        decls: p.decls.clone(),
        stmts,
    })
}

/// Whether every expression in `p` uses only Core-TeIL forms.
pub fn is_core(p: &Program) -> bool {
    let mut ok = true;
    for s in &p.stmts {
        s.value.walk(&mut |e| {
            ok &= match &e.kind {
                ExprKind::Transp(i, j, _) => j.value == i.value + 1,
                ExprKind::Reduce(_, i, _) => i.value == 1,
                ExprKind::Diag(i, j, _) => i.value == 1 && j.value == 2,
                ExprKind::Expa(i, _, _) | ExprKind::Proj(i, _, _) => i.value == 1,
                ExprKind::Contr(..) => false,
                _ => true,
            }
        });
    }
    ok
}

fn nat(v: u64, span: &Span) -> Nat {
    Nat::new(v, span.clone())
}

/// `transp k (k+1) e`.
fn adjacent(k: usize, e: Expr) -> Expr {
    let span = e.span.clone();
    Expr::new(
        ExprKind::Transp(nat(k as u64, &span), nat(k as u64 + 1, &span), Box::new(e)),
        span,
    )
}

/// Brings dimension `i` (1-based) to the front, keeping the others in order.
fn to_front(mut e: Expr, i: usize) -> Expr {
    for k in (1..i).rev() {
        e = adjacent(k, e);
    }
    e
}

/// Moves the first dimension to position `i`, keeping the others in order.
fn from_front(mut e: Expr, i: usize) -> Expr {
    for k in 1..i {
        e = adjacent(k, e);
    }
    e
}

/// Brings dimensions `i < j` to positions 1 and 2, keeping the others in order.
fn two_to_front(e: Expr, i: usize, j: usize) -> Expr {
    to_front(to_front(e, j), i + 1)
}

/// The Core-TeIL form of one expression; assumes it is well-typed.
fn rewrite(e: &Expr) -> Expr {
    {
        let span = e.span.clone();
        let node = |kind| Expr::new(kind, span.clone());
        let one = || nat(1, &span);
        let two = || nat(2, &span);
        match &e.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error => e.clone(),
            ExprKind::Paren(a) => node(ExprKind::Paren(Box::new(rewrite(a)))),
            ExprKind::Binary(op, a, b) => node(ExprKind::Binary(
                *op,
                Box::new(rewrite(a)),
                Box::new(rewrite(b)),
            )),
            ExprKind::Prod(a, b) => {
                node(ExprKind::Prod(Box::new(rewrite(a)), Box::new(rewrite(b))))
            }
            ExprKind::Reduce(op, i, a) => {
                let a = to_front(rewrite(a), i.value as usize);
                node(ExprKind::Reduce(*op, one(), Box::new(a)))
            }
            ExprKind::Proj(i, m, a) => {
                let a = to_front(rewrite(a), i.value as usize);
                node(ExprKind::Proj(one(), *m, Box::new(a)))
            }
            ExprKind::Expa(i, n, a) => {
                let inner = node(ExprKind::Expa(one(), *n, Box::new(rewrite(a))));
                from_front(inner, i.value as usize)
            }
            ExprKind::Transp(i, j, a) => {
                let (lo, hi) = (
                    i.value.min(j.value) as usize,
                    i.value.max(j.value) as usize,
                );
                let mut out = rewrite(a);
                // Bubble dimension `hi` down to `lo`, then the old `lo` (now at lo+1) up to `hi`.
                for k in (lo..hi).rev() {
                    out = adjacent(k, out);
                }
                for k in lo + 1..hi {
                    out = adjacent(k, out);
                }
                out
            }
            ExprKind::Diag(i, j, a) => {
                let (lo, hi) = (
                    i.value.min(j.value) as usize,
                    i.value.max(j.value) as usize,
                );
                let front = two_to_front(rewrite(a), lo, hi);
                let diag = node(ExprKind::Diag(one(), two(), Box::new(front)));
                from_front(diag, lo)
            }
            ExprKind::Contr(i, j, a) => {
                let (lo, hi) = (
                    i.value.min(j.value) as usize,
                    i.value.max(j.value) as usize,
                );
                let front = two_to_front(rewrite(a), lo, hi);
                let diag = node(ExprKind::Diag(one(), two(), Box::new(front)));
                node(ExprKind::Reduce(RedOp::Sum, one(), Box::new(diag)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core_of(src: &str) -> (CheckedProgram, CheckedProgram) {
        let (checked, _) = crate::compile(src).expect("source checks");
        let core = desugar(&checked).expect("desugars");
        assert!(is_core(&core));
        let (core, _) = crate::check(core).expect("Core-TeIL form checks");
        (checked, core)
    }

    #[test]
    fn desugared_programs_keep_every_statement_shape() {
        let (full, core) = core_of(
            "alloc A : [2, 3, 4, 5]\nalloc B : [5, 3, 4, 2]\nalloc C : [2, 4, 5]\nalloc D : [3, 4, 5, 5, 4]\n\
             alloc E : [2, 3, 6, 4, 5]\nalloc F : [2, 5]\n\
             B = transp 1 4 A\nC = red+ 2 A\nD = contr 1 7 (diag 2 6 (prod A (transp 1 4 A)))\n\
             E = expa 3 6 A\nF = proj 2 3 (proj 2 1 A)",
        );
        for (a, b) in full.program().stmts.iter().zip(&core.program().stmts) {
            assert_eq!(full.shape(&a.value), core.shape(&b.value));
        }
    }
}
