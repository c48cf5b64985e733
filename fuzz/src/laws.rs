//! Semantics-preserving rewrites from the equational laws of the TeIL paper §3.6, for
//! metamorphic testing: a rewritten program must compute exactly what the original computes.
//!
//! Each [`Law`] names the equation it applies, left to right or right to left, at one place of a
//! checked program ([`rewrite`]). Every rewrite here is exact in binary64 with `•` — not just
//! over the reals — so the oracle must give bit-identical results for both programs:
//!
//! | law | rewrite | why it is exact |
//! |---|---|---|
//! | (3) [`Law::ProjExpa`] | `e` → `proj i m (expa i n e)` | [S-Proj]/[S-Expa] read `e` at the same index |
//! | (4) [`Law::DiagTransp`] | `diag i j e` → `diag i j (transp i j e)` | the two swapped positions carry the same index |
//! | (6) [`Law::ContrRedDiag`] | `contr i j e` ↔ `red+ i (diag i j e)` (`i < j`) | the same left fold over the same cells |
//! | (5) [`Law::SumExpa`] | `c * e` ↔ `red+ i (expa i c e)`, `c ∈ {1, 2, 3}` | `e + e = 2e` and `(e + e) + e = round(3e)` in IEEE arithmetic |
//! | (5) for max/min [`Law::MaxExpa`], [`Law::MinExpa`] | `e` → `redmax i (expa i n e)` | `max(e, e) = e` (NaN propagates) |
//! | involution [`Law::TranspTwice`] | `e` → `transp i j (transp i j e)` | a permutation and its inverse |
//!
//! (5) does not hold exactly for `c ≥ 4` (`((e + e) + e) + e` rounds twice), so larger
//! literals are left alone.

use teil::ast::*;
use teil::CheckedProgram;

/// A semantics-preserving rewrite (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Law {
    ProjExpa,
    DiagTransp,
    ContrRedDiag,
    SumExpa,
    MaxExpa,
    MinExpa,
    TranspTwice,
}

impl Law {
    pub const ALL: [Law; 7] = [
        Law::ProjExpa,
        Law::DiagTransp,
        Law::ContrRedDiag,
        Law::SumExpa,
        Law::MaxExpa,
        Law::MinExpa,
        Law::TranspTwice,
    ];

    /// The equation of the TeIL paper it applies.
    pub fn equation(self) -> &'static str {
        match self {
            Law::ProjExpa => "(3) proj i m (expa i n e) = e",
            Law::DiagTransp => "(4) diag i j (transp i j e) = diag i j e",
            Law::ContrRedDiag => "(6) contr i j e = red+ i (diag i j e)",
            Law::SumExpa => "(5) red+ i (expa i n e) = n * e",
            Law::MaxExpa => "(5) redmax i (expa i n e) = e",
            Law::MinExpa => "(5) redmin i (expa i n e) = e",
            Law::TranspTwice => "transp i j (transp i j e) = e",
        }
    }
}

fn nat(v: u64) -> Nat {
    Nat::new(v, 0..0)
}

fn node(kind: ExprKind) -> Expr {
    Expr::new(kind, 0..0)
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

/// A literal multiplier for which law (5) is exact.
fn small_count(e: &Expr) -> Option<u64> {
    match e.strip_parens().kind {
        ExprKind::Lit(ref c) if [1.0, 2.0, 3.0].contains(&c.value) => Some(c.value as u64),
        _ => None,
    }
}

/// The replacement for `e` under `law`, or `None` when the law does not apply there. `pick`
/// chooses positions and extents.
fn apply(checked: &CheckedProgram, e: &Expr, law: Law, pick: u64) -> Option<Expr> {
    let r = checked.shape(e).len() as u64;
    let wrap_expa = |op: RedOp| {
        let i = 1 + pick % (r + 1);
        let n = 1 + (pick / 7) % 3;
        node(ExprKind::Reduce(
            op,
            nat(i),
            bx(node(ExprKind::Expa(nat(i), nat(n), bx(e.clone())))),
        ))
    };
    match (law, &e.kind) {
        (Law::ProjExpa, _) => {
            let i = 1 + pick % (r + 1);
            let n = 1 + (pick / 7) % 3;
            let m = 1 + (pick / 31) % n;
            Some(node(ExprKind::Proj(
                nat(i),
                nat(m),
                bx(node(ExprKind::Expa(nat(i), nat(n), bx(e.clone())))),
            )))
        }
        (Law::DiagTransp, ExprKind::Diag(i, j, a)) => Some(node(ExprKind::Diag(
            *i,
            *j,
            bx(node(ExprKind::Transp(*i, *j, a.clone()))),
        ))),
        (Law::ContrRedDiag, ExprKind::Contr(i, j, a)) => {
            let (lo, hi) = (i.value.min(j.value), i.value.max(j.value));
            Some(node(ExprKind::Reduce(
                RedOp::Sum,
                nat(lo),
                bx(node(ExprKind::Diag(nat(lo), nat(hi), a.clone()))),
            )))
        }
        (Law::ContrRedDiag, ExprKind::Reduce(RedOp::Sum, k, a)) => match &a.strip_parens().kind {
            ExprKind::Diag(i, j, b) if k.value == i.value.min(j.value) => {
                Some(node(ExprKind::Contr(*i, *j, b.clone())))
            }
            _ => None,
        },
        (Law::SumExpa, ExprKind::Binary(BinOp::Mul, c, a)) => {
            let n = small_count(c)?;
            let ra = checked.shape(a).len() as u64;
            let i = 1 + pick % (ra + 1);
            Some(node(ExprKind::Reduce(
                RedOp::Sum,
                nat(i),
                bx(node(ExprKind::Expa(nat(i), nat(n), a.clone()))),
            )))
        }
        (Law::SumExpa, ExprKind::Reduce(RedOp::Sum, k, a)) => match &a.strip_parens().kind {
            ExprKind::Expa(i, n, b) if i.value == k.value && (1..=3).contains(&n.value) => {
                Some(node(ExprKind::Binary(
                    BinOp::Mul,
                    bx(node(ExprKind::Lit(Literal::from_f64(n.value as f64)))),
                    b.clone(),
                )))
            }
            _ => None,
        },
        (Law::MaxExpa, _) => Some(wrap_expa(RedOp::Max)),
        (Law::MinExpa, _) => Some(wrap_expa(RedOp::Min)),
        (Law::TranspTwice, _) if r >= 2 => {
            let i = 1 + pick % r;
            let j = 1 + (i + (pick / 5) % (r - 1)) % r;
            let t = |x: Expr| node(ExprKind::Transp(nat(i), nat(j), bx(x)));
            Some(t(t(e.clone())))
        }
        _ => None,
    }
}

/// Applies `law` at one place of `checked`'s program: the `choice`-th node where it applies
/// (modulo their number), with positions and extents drawn from `choice` too. `None` when the
/// law applies nowhere. The result is well-typed whenever the input is (callers re-check it).
pub fn rewrite(checked: &CheckedProgram, law: Law, choice: u64) -> Option<Program> {
    let p = checked.program();
    let mut sites: Vec<(usize, ExprId, Expr)> = Vec::new();
    for (k, s) in p.stmts.iter().enumerate() {
        s.value.walk(&mut |e| {
            if matches!(e.kind, ExprKind::Paren(_)) {
                return;
            }
            if let Some(new) = apply(checked, e, law, choice / 3) {
                sites.push((k, e.id, new));
            }
        });
    }
    if sites.is_empty() {
        return None;
    }
    let (k, id, new) = sites.swap_remove((choice % sites.len() as u64) as usize);
    let mut q = p.clone();
    replace(&mut q.stmts[k].value, id, &new);
    Some(q)
}

fn replace(e: &mut Expr, id: ExprId, with: &Expr) -> bool {
    if e.id == id {
        *e = with.clone();
        return true;
    }
    e.children_mut().into_iter().any(|c| replace(c, id, with))
}
