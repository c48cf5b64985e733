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
///
/// The rewriting can make a tree much deeper than its source (one full-TeIL `transp 1 32`
/// becomes 61 adjacent transpositions), so the depth is tracked while building and rewriting
/// stops as soon as it would pass [`MAX_EXPR_DEPTH`]: no over-deep tree is ever built, and
/// none has to be walked or dropped recursively.
pub fn desugar(checked: &CheckedProgram) -> Result<Program, Diagnostic> {
    let p = checked.program();
    let mut stmts = Vec::with_capacity(p.stmts.len());
    for s in &p.stmts {
        let Some(Built { expr: value, .. }) = rewrite(&s.value) else {
            return Err(Diagnostic::new(
                Code::TooDeep,
                format!(
                    "the Core-TeIL form of this statement is nested more than {MAX_EXPR_DEPTH} levels deep"
                ),
                s.span.clone(),
                "this statement",
            )
            .with_help("split the statement into several statements over temporaries"));
        };
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

/// An expression under construction with its depth ([`Expr::depth`]), so that the depth is
/// known without walking the tree.
struct Built {
    expr: Expr,
    depth: usize,
}

impl Built {
    fn leaf(expr: Expr) -> Built {
        Built { expr, depth: 1 }
    }

    /// Wraps the operands in a new node; `None` when that node would pass the nesting limit.
    fn node(span: &Span, depth: usize, kind: ExprKind) -> Option<Built> {
        (depth < MAX_EXPR_DEPTH).then(|| Built {
            expr: Expr::new(kind, span.clone()),
            depth: depth + 1,
        })
    }
}

/// `transp k (k+1) e`.
fn adjacent(k: usize, e: Built) -> Option<Built> {
    let span = e.expr.span.clone();
    let (i, j) = (nat(k as u64, &span), nat(k as u64 + 1, &span));
    Built::node(&span, e.depth, ExprKind::Transp(i, j, Box::new(e.expr)))
}

/// Brings dimension `i` (1-based) to the front, keeping the others in order.
fn to_front(mut e: Built, i: usize) -> Option<Built> {
    for k in (1..i).rev() {
        e = adjacent(k, e)?;
    }
    Some(e)
}

/// Moves the first dimension to position `i`, keeping the others in order.
fn from_front(mut e: Built, i: usize) -> Option<Built> {
    for k in 1..i {
        e = adjacent(k, e)?;
    }
    Some(e)
}

/// Brings dimensions `i < j` to positions 1 and 2, keeping the others in order.
fn two_to_front(e: Built, i: usize, j: usize) -> Option<Built> {
    to_front(to_front(e, j)?, i + 1)
}

/// The Core-TeIL form of one expression; assumes it is well-typed. `None` when the form is
/// nested more deeply than [`MAX_EXPR_DEPTH`].
fn rewrite(e: &Expr) -> Option<Built> {
    let span = e.span.clone();
    let one = || nat(1, &span);
    let two = || nat(2, &span);
    let unary = |a: Built, kind: &dyn Fn(Box<Expr>) -> ExprKind| {
        Built::node(&span, a.depth, kind(Box::new(a.expr)))
    };
    match &e.kind {
        ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error => Some(Built::leaf(e.clone())),
        ExprKind::Paren(a) => unary(rewrite(a)?, &ExprKind::Paren),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (rewrite(a)?, rewrite(b)?);
            let depth = a.depth.max(b.depth);
            let kind = ExprKind::Binary(*op, Box::new(a.expr), Box::new(b.expr));
            Built::node(&span, depth, kind)
        }
        // Element-wise functions and conversions are Core-TeIL forms of their own.
        ExprKind::Func(f, a) => unary(rewrite(a)?, &|a| ExprKind::Func(*f, a)),
        ExprKind::Convert(t, a) => unary(rewrite(a)?, &|a| ExprKind::Convert(*t, a)),
        ExprKind::Func2(f, a, b) => {
            let (a, b) = (rewrite(a)?, rewrite(b)?);
            let depth = a.depth.max(b.depth);
            let kind = ExprKind::Func2(*f, Box::new(a.expr), Box::new(b.expr));
            Built::node(&span, depth, kind)
        }
        ExprKind::Prod(a, b) => {
            let (a, b) = (rewrite(a)?, rewrite(b)?);
            let depth = a.depth.max(b.depth);
            Built::node(
                &span,
                depth,
                ExprKind::Prod(Box::new(a.expr), Box::new(b.expr)),
            )
        }
        ExprKind::Reduce(op, i, a) => {
            let a = to_front(rewrite(a)?, i.value as usize)?;
            unary(a, &|a| ExprKind::Reduce(*op, one(), a))
        }
        ExprKind::Proj(i, m, a) => {
            let a = to_front(rewrite(a)?, i.value as usize)?;
            unary(a, &|a| ExprKind::Proj(one(), *m, a))
        }
        ExprKind::Expa(i, n, a) => {
            let inner = unary(rewrite(a)?, &|a| ExprKind::Expa(one(), *n, a))?;
            from_front(inner, i.value as usize)
        }
        ExprKind::Transp(i, j, a) => {
            let (lo, hi) = (i.value.min(j.value) as usize, i.value.max(j.value) as usize);
            let mut out = rewrite(a)?;
            // Bubble dimension `hi` down to `lo`, then the old `lo` (now at lo+1) up to `hi`.
            for k in (lo..hi).rev() {
                out = adjacent(k, out)?;
            }
            for k in lo + 1..hi {
                out = adjacent(k, out)?;
            }
            Some(out)
        }
        ExprKind::Diag(i, j, a) => {
            let (lo, hi) = (i.value.min(j.value) as usize, i.value.max(j.value) as usize);
            let front = two_to_front(rewrite(a)?, lo, hi)?;
            let diag = unary(front, &|a| ExprKind::Diag(one(), two(), a))?;
            from_front(diag, lo)
        }
        ExprKind::Contr(i, j, a) => {
            let (lo, hi) = (i.value.min(j.value) as usize, i.value.max(j.value) as usize);
            let front = two_to_front(rewrite(a)?, lo, hi)?;
            let diag = unary(front, &|a| ExprKind::Diag(one(), two(), a))?;
            unary(diag, &|a| ExprKind::Reduce(RedOp::Sum, one(), a))
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

    #[test]
    fn over_deep_core_forms_are_refused_without_building_them() {
        // Each `^[1 32]` on a rank-32 tensor becomes 61 adjacent transpositions.
        let extents = vec!["2"; 32].join(", ");
        let src = format!("alloc A : [{extents}]\nA = A{}", " ^[1 32]".repeat(500));
        let (checked, _) = crate::compile(&src).expect("source checks");
        let err = desugar(&checked).expect_err("the Core-TeIL form is too deep");
        assert_eq!(err.code, Code::TooDeep);
        // Eight of them (8 * 61 + 1 levels) still fit.
        let src = format!("alloc A : [{extents}]\nA = A{}", " ^[1 32]".repeat(8));
        let (checked, _) = crate::compile(&src).expect("source checks");
        let core = desugar(&checked).expect("fits the limit");
        assert_eq!(core.stmts[0].value.depth(), 8 * 61 + 1);
    }
}
