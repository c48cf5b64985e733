//! Ill-typed programs: a well-typed program with exactly one typing or formation rule broken.
//!
//! Each [`Mutation`] breaks one premise of one rule in `spec/typing.md` and names the
//! diagnostic code the checker must report for it, and no other error. The checker stays
//! silent about consequences of an error it reported (an ill-typed sub-expression has no
//! shape), which is what makes "exactly that code" a sharp expectation.

use teil::ast::*;
use teil::{CheckedProgram, Code};

/// The ways [`ill_typed`] can break a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// S-Var: declare an existing name again.
    Redeclare,
    /// S-Var: an extent of 0.
    ZeroExtent,
    /// OK-Stmt: assign to a name that is not declared.
    AssignUndeclared,
    /// OK-Stmt: assign to a variable of another shape.
    AssignMismatch,
    /// T-Var: read a name that is not declared.
    UndeclaredVar,
    /// T-Add/T-Elem: give one operand of `+`/`-` an extra dimension.
    ElementwiseMismatch,
    /// T-Red/T-Transp/T-Proj/...: a position one past the rank.
    PositionOutOfRange,
    /// T-Diag/T-Contr: the same position twice.
    PositionsNotDistinct,
    /// T-Diag/T-Contr: pair dimensions of different extents.
    ExtentsDiffer,
    /// T-Proj: a slice one past the extent.
    SliceOutOfRange,
    /// T-Expa: a position two past the rank.
    ExpaPositionOutOfRange,
    /// T-Expa: an extent of 0.
    ExpaZeroExtent,
}

impl Mutation {
    pub const ALL: [Mutation; 12] = [
        Mutation::Redeclare,
        Mutation::ZeroExtent,
        Mutation::AssignUndeclared,
        Mutation::AssignMismatch,
        Mutation::UndeclaredVar,
        Mutation::ElementwiseMismatch,
        Mutation::PositionOutOfRange,
        Mutation::PositionsNotDistinct,
        Mutation::ExtentsDiffer,
        Mutation::SliceOutOfRange,
        Mutation::ExpaPositionOutOfRange,
        Mutation::ExpaZeroExtent,
    ];

    /// The one error code the checker must report for this mutation.
    pub fn expected(self) -> Code {
        match self {
            Mutation::Redeclare => Code::Redeclared,
            Mutation::ZeroExtent => Code::ZeroExtent,
            Mutation::AssignUndeclared => Code::AssignUndeclared,
            Mutation::AssignMismatch => Code::AssignMismatch,
            Mutation::UndeclaredVar => Code::UndeclaredVar,
            Mutation::ElementwiseMismatch => Code::ElementwiseMismatch,
            Mutation::PositionOutOfRange => Code::PositionOutOfRange,
            Mutation::PositionsNotDistinct => Code::PositionsNotDistinct,
            Mutation::ExtentsDiffer => Code::ExtentsDiffer,
            Mutation::SliceOutOfRange => Code::SliceOutOfRange,
            Mutation::ExpaPositionOutOfRange => Code::ExpaPositionOutOfRange,
            Mutation::ExpaZeroExtent => Code::ExpaZeroExtent,
        }
    }
}

const FRESH: &str = "undeclared_name";

fn nat(v: u64) -> Nat {
    Nat::new(v, 0..0)
}

/// Applies `m` to a copy of `checked`'s program at the `choice`-th place where it applies
/// (modulo the number of such places). `None` when the program offers no such place.
pub fn ill_typed(checked: &CheckedProgram, m: Mutation, choice: usize) -> Option<Program> {
    let p = checked.program();
    let mut out = p.clone();
    match m {
        Mutation::Redeclare => {
            let d = p.decls.get(choice % p.decls.len().max(1))?;
            let mut again = d.clone();
            again.extents.push(nat(2));
            out.decls.push(again);
        }
        Mutation::ZeroExtent => {
            let with_dims: Vec<usize> = (0..p.decls.len())
                .filter(|&i| !p.decls[i].extents.is_empty())
                .collect();
            let i = *with_dims.get(choice % with_dims.len().max(1))?;
            let d = &mut out.decls[i];
            let k = choice % d.extents.len();
            d.extents[k] = nat(0);
        }
        Mutation::AssignUndeclared => {
            let k = choice % p.stmts.len().max(1);
            out.stmts.get_mut(k)?.target.name = FRESH.into();
        }
        Mutation::AssignMismatch => {
            let k = choice % p.stmts.len().max(1);
            let want = checked.var_shape(&p.stmts.get(k)?.target.name)?.to_vec();
            let other = p
                .decls
                .iter()
                .find(|d| d.shape() != want)
                .map(|d| d.name.name.clone());
            match other {
                Some(name) => out.stmts[k].target.name = name,
                None => {
                    let mut extents: Vec<Nat> = want.iter().map(|&n| nat(n)).collect();
                    extents.push(nat(2));
                    // The target's element type: only the shape may mismatch.
                    let target = &p.stmts[k].target.name;
                    let elem = (p.decls.iter().find(|d| d.name.name == *target))
                        .map_or(ElemType::F64, |d| d.elem);
                    out.decls.push(Decl {
                        qualifier: None,
                        name: Ident::new("mismatched_target", 0..0),
                        elem,
                        elem_span: None,
                        extents,
                        span: 0..0,
                    });
                    out.stmts[k].target.name = "mismatched_target".into();
                }
            }
        }
        _ => {
            let sites = sites(checked, m);
            let id = *sites.get(choice % sites.len().max(1))?;
            let mut done = false;
            for s in &mut out.stmts {
                rewrite(&mut s.value, id, checked, m, &mut done);
            }
            if !done {
                return None;
            }
        }
    }
    Some(out)
}

/// Expression nodes where an expression-level mutation applies.
fn sites(checked: &CheckedProgram, m: Mutation) -> Vec<ExprId> {
    let mut ids = Vec::new();
    for s in &checked.program().stmts {
        s.value.walk(&mut |e| {
            let operand = |a: &Expr| checked.shape(a).to_vec();
            let ok = match (&e.kind, m) {
                (ExprKind::Var(_), Mutation::UndeclaredVar) => true,
                (ExprKind::Binary(BinOp::Add | BinOp::Sub, ..), Mutation::ElementwiseMismatch) => {
                    true
                }
                (ExprKind::Reduce(..), Mutation::PositionOutOfRange) => true,
                (ExprKind::Transp(..), Mutation::PositionOutOfRange) => true,
                (ExprKind::Proj(..), Mutation::PositionOutOfRange) => true,
                (ExprKind::Diag(..) | ExprKind::Contr(..), Mutation::PositionsNotDistinct) => true,
                (ExprKind::Diag(_, j, a) | ExprKind::Contr(_, j, a), Mutation::ExtentsDiffer) => {
                    let t = operand(a);
                    t.iter().any(|&n| n != t[j.value as usize - 1])
                }
                (ExprKind::Proj(..), Mutation::SliceOutOfRange) => true,
                (ExprKind::Expa(..), Mutation::ExpaPositionOutOfRange) => true,
                (ExprKind::Expa(..), Mutation::ExpaZeroExtent) => true,
                _ => false,
            };
            if ok {
                ids.push(e.id);
            }
        });
    }
    ids
}

fn rewrite(e: &mut Expr, id: ExprId, checked: &CheckedProgram, m: Mutation, done: &mut bool) {
    if *done {
        return;
    }
    if e.id != id {
        for c in e.children_mut() {
            rewrite(c, id, checked, m, done);
        }
        return;
    }
    *done = true;
    // The original node, for the checker's shapes (ids are unchanged in the copy).
    let rank_of = |a: &Expr| checked.shape(a).len() as u64;
    match (&mut e.kind, m) {
        (ExprKind::Var(v), Mutation::UndeclaredVar) => v.name = FRESH.into(),
        (ExprKind::Binary(_, _, b), Mutation::ElementwiseMismatch) => {
            let inner = std::mem::replace(b.as_mut(), Expr::new(ExprKind::Error, 0..0));
            **b = Expr::new(ExprKind::Expa(nat(1), nat(2), Box::new(inner)), 0..0);
        }
        (ExprKind::Reduce(_, i, a), Mutation::PositionOutOfRange)
        | (ExprKind::Proj(i, _, a), Mutation::PositionOutOfRange) => {
            *i = nat(rank_of(a) + 1);
        }
        (ExprKind::Transp(_, j, a), Mutation::PositionOutOfRange) => *j = nat(rank_of(a) + 1),
        (ExprKind::Diag(i, j, _) | ExprKind::Contr(i, j, _), Mutation::PositionsNotDistinct) => {
            *j = *i;
        }
        (ExprKind::Diag(i, j, a) | ExprKind::Contr(i, j, a), Mutation::ExtentsDiffer) => {
            let t = checked.shape(a);
            let nj = t[j.value as usize - 1];
            if let Some(k) = (0..t.len()).find(|&k| t[k] != nj) {
                *i = nat(k as u64 + 1);
            }
        }
        (ExprKind::Proj(i, m, a), Mutation::SliceOutOfRange) => {
            *m = nat(checked.shape(a)[i.value as usize - 1] + 1);
        }
        (ExprKind::Expa(i, _, a), Mutation::ExpaPositionOutOfRange) => *i = nat(rank_of(a) + 2),
        (ExprKind::Expa(_, n, _), Mutation::ExpaZeroExtent) => *n = nat(0),
        _ => *done = false,
    }
}
