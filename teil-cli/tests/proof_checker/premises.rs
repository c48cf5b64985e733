//! Ill-typed mutants for the differential test, one per premise of the typing rules that take
//! positions (T-Red, T-Transp, T-Diag, T-Contr, T-Expa, T-Proj) and of the element-wise rules
//! (T-Add, T-Elem, T-Mul, with the scalar on the wrong side of T-SMul and T-SDiv), and one per
//! element-type premise: operands of two element types (T-Add, T-Elem, T-Mul, T-Prod,
//! T-Func2: E0311), a conversion to its operand's own type (T-Conv: E0312), a right-hand side
//! of another element type than its target (OK-Stmt: E0203), a literal beyond binary32's range
//! in an `f32` context (T-Lit: E0313).
//!
//! `teil_fuzz::mutate` breaks each rule once (a position one past the rank, the same position
//! twice, ...); a checker can still be wrong about every premise it does not try: position 0,
//! the first of two positions, a slice of 0, `e * 2`. Here every way out of each premise's
//! range is a [`Premise`] of its own, with the (rule, code) of spec/typing.md it must be
//! reported as. A well-typed program has one node changed, so the mutated statement has exactly
//! that error and every other statement keeps its type.

use teil::ast::*;
use teil::CheckedProgram;

/// One premise of one rule, and the side of its range a mutant falls out on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Premise {
    /// T-Red `1 <= i`: `red 0 e`.
    RedPosZero,
    /// T-Red `i <= rank`.
    RedPosPast,
    /// T-Transp, `i` below and above its range, then `j`.
    TranspIZero,
    TranspIPast,
    TranspJZero,
    TranspJPast,
    /// T-Diag: both positions in range, distinct (E0304), of equal extents (E0305).
    DiagIZero,
    DiagIPast,
    DiagJZero,
    DiagJPast,
    DiagSame,
    DiagExtents,
    /// T-Contr: as T-Diag.
    ContrIZero,
    ContrIPast,
    ContrJZero,
    ContrJPast,
    ContrSame,
    ContrExtents,
    /// T-Expa `1 <= i <= rank + 1` (E0307) and `n >= 1` (E0308).
    ExpaPosZero,
    ExpaPosPast,
    ExpaExtentZero,
    /// T-Proj `1 <= i <= rank` (E0303) and `1 <= m <= n_i` (E0306).
    ProjPosZero,
    ProjPosPast,
    ProjSliceZero,
    ProjSlicePast,
    /// T-Add, T-Elem (`-`), T-Mul, T-Elem (`/`): operands of different types.
    AddShapes,
    SubShapes,
    MulShapes,
    DivShapes,
    /// T-SMul's scalar on the right, `e * 2`: T-Mul's premise, E0302.
    MulScalarRight,
    /// T-SDiv's scalar on the left, `1 / e`: T-Elem's premise, E0302.
    DivScalarLeft,
    /// T-Add, T-Elem (`-`), T-Mul, T-Elem (`/`), T-Prod: operands of two element types, E0311
    /// (one operand converted to the other type).
    AddElem,
    SubElem,
    MulElem,
    DivElem,
    ProdElem,
    /// T-Func2: `max e (f32 e)` for an `e` of type f64 (or the other way round), E0311.
    Func2Elem,
    /// T-Conv: `f64 e` for an `e` of type f64 (or `f32` of an f32 one), E0312.
    ConvSame,
    /// OK-Stmt: `x = f32 e` for an f64 `x` (or the other way round), E0203.
    AssignElem,
    /// T-Lit: a literal beyond binary32's range (1e39) where an f32 one is needed (`f64 1e39`,
    /// where the literal was of type f64), E0313.
    LitF32Range,
}

impl Premise {
    pub const ALL: [Premise; 40] = [
        Premise::RedPosZero,
        Premise::RedPosPast,
        Premise::TranspIZero,
        Premise::TranspIPast,
        Premise::TranspJZero,
        Premise::TranspJPast,
        Premise::DiagIZero,
        Premise::DiagIPast,
        Premise::DiagJZero,
        Premise::DiagJPast,
        Premise::DiagSame,
        Premise::DiagExtents,
        Premise::ContrIZero,
        Premise::ContrIPast,
        Premise::ContrJZero,
        Premise::ContrJPast,
        Premise::ContrSame,
        Premise::ContrExtents,
        Premise::ExpaPosZero,
        Premise::ExpaPosPast,
        Premise::ExpaExtentZero,
        Premise::ProjPosZero,
        Premise::ProjPosPast,
        Premise::ProjSliceZero,
        Premise::ProjSlicePast,
        Premise::AddShapes,
        Premise::SubShapes,
        Premise::MulShapes,
        Premise::DivShapes,
        Premise::MulScalarRight,
        Premise::DivScalarLeft,
        Premise::AddElem,
        Premise::SubElem,
        Premise::MulElem,
        Premise::DivElem,
        Premise::ProdElem,
        Premise::Func2Elem,
        Premise::ConvSame,
        Premise::AssignElem,
        Premise::LitF32Range,
    ];

    /// The rule (as spec/typing.md names it) and code the broken premise is reported as.
    pub fn expected(self) -> (&'static str, &'static str) {
        use Premise::*;
        match self {
            RedPosZero | RedPosPast => ("T-Red", "E0303"),
            TranspIZero | TranspIPast | TranspJZero | TranspJPast => ("T-Transp", "E0303"),
            DiagIZero | DiagIPast | DiagJZero | DiagJPast => ("T-Diag", "E0303"),
            DiagSame => ("T-Diag", "E0304"),
            DiagExtents => ("T-Diag", "E0305"),
            ContrIZero | ContrIPast | ContrJZero | ContrJPast => ("T-Contr", "E0303"),
            ContrSame => ("T-Contr", "E0304"),
            ContrExtents => ("T-Contr", "E0305"),
            ExpaPosZero | ExpaPosPast => ("T-Expa", "E0307"),
            ExpaExtentZero => ("T-Expa", "E0308"),
            ProjPosZero | ProjPosPast => ("T-Proj", "E0303"),
            ProjSliceZero | ProjSlicePast => ("T-Proj", "E0306"),
            AddShapes => ("T-Add", "E0302"),
            SubShapes | DivShapes | DivScalarLeft => ("T-Elem", "E0302"),
            MulShapes | MulScalarRight => ("T-Mul", "E0302"),
            AddElem => ("T-Add", "E0311"),
            SubElem | DivElem => ("T-Elem", "E0311"),
            MulElem => ("T-Mul", "E0311"),
            ProdElem => ("T-Prod", "E0311"),
            Func2Elem => ("T-Func2", "E0311"),
            ConvSame => ("T-Conv", "E0312"),
            AssignElem => ("OK-Stmt", "E0203"),
            LitF32Range => ("T-Lit", "E0313"),
        }
    }
}

fn nat(v: u64) -> Nat {
    Nat::new(v, 0..0)
}

fn node(kind: ExprKind) -> Expr {
    Expr::new(kind, 0..0)
}

/// `expa 1 n e`: `e` with a first dimension of extent `n`.
fn widen(e: &mut Expr, n: u64) {
    let inner = std::mem::replace(e, node(ExprKind::Error));
    *e = node(ExprKind::Expa(nat(1), nat(n), Box::new(inner)));
}

/// `to e`: `e` converted to `to`.
fn convert(e: &mut Expr, to: ElemType) {
    let inner = std::mem::replace(e, node(ExprKind::Error));
    *e = node(ExprKind::Convert(to, Box::new(inner)));
}

/// Whether `e` is made of literals alone, so that its element type is its context's
/// (proofs/Syntax.v, `flexible`; `Elem::Flexible` in teil/src/check.rs).
fn flexible(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Var(_) | ExprKind::Convert(..) | ExprKind::Error => false,
        ExprKind::Lit(_) => true,
        _ => e.children().into_iter().all(flexible),
    }
}

/// Breaks the element-type premise of a node with operands `a` and `b` of one element type:
/// converts one of them to the other type, one whose sibling is not flexible (so that the
/// sibling keeps its type; a flexible operand converted keeps its literals' type, which is
/// the node's). `false` when both are flexible.
fn mix(a: &mut Expr, b: &mut Expr, checked: &CheckedProgram) -> bool {
    let target = if !flexible(b) {
        a
    } else if !flexible(a) {
        b
    } else {
        return false;
    };
    let t = checked.elem(target);
    convert(target, t.other());
    true
}

/// An extent other than the first of `t` (2 when `t` is a scalar).
fn other_extent(t: &[u64]) -> u64 {
    t.first().map_or(2, |n| n + 1)
}

/// Breaks `p` in `e` (a node of `checked`'s program or a copy of it: node ids are kept; `root`
/// when it is a statement's right-hand side), or returns false, leaving `e` as it was, when `p`
/// does not apply to `e`.
fn apply(e: &mut Expr, p: Premise, checked: &CheckedProgram, root: bool) -> bool {
    use Premise::*;
    let shape = |a: &Expr| checked.shape(a).to_vec();
    // The element-type premises of the whole node.
    match p {
        // The right-hand side in the other element type than its target's (which it has, a
        // flexible one as its context gave it).
        AssignElem if root => {
            let t = checked.elem(e);
            convert(e, t.other());
            return true;
        }
        // A conversion to the type `e` already has; `e` must not be flexible (a flexible one
        // would take the other type).
        ConvSame if !flexible(e) && !matches!(e.kind, ExprKind::Error) => {
            let t = checked.elem(e);
            convert(e, t);
            return true;
        }
        // `max e (f32 e)`.
        Func2Elem if !flexible(e) && !matches!(e.kind, ExprKind::Error) => {
            let t = checked.elem(e);
            let mut other = e.clone();
            convert(&mut other, t.other());
            let a = std::mem::replace(e, node(ExprKind::Error));
            *e = node(ExprKind::Func2(Func2::Max, Box::new(a), Box::new(other)));
            return true;
        }
        // 1e39 where the literal had type f32, `f64 1e39` where it had f64.
        LitF32Range if matches!(e.kind, ExprKind::Lit(_)) => {
            let t = checked.elem(e);
            *e = node(ExprKind::Lit(Literal::from_f64(1e39)));
            if t == ElemType::F64 {
                convert(e, ElemType::F64);
            }
            return true;
        }
        AssignElem | ConvSame | Func2Elem | LitF32Range => return false,
        _ => {}
    }
    match (&mut e.kind, p) {
        (ExprKind::Reduce(_, i, _), RedPosZero)
        | (ExprKind::Transp(i, _, _), TranspIZero)
        | (ExprKind::Transp(_, i, _), TranspJZero)
        | (ExprKind::Diag(i, _, _), DiagIZero)
        | (ExprKind::Contr(i, _, _), ContrIZero)
        | (ExprKind::Diag(_, i, _), DiagJZero)
        | (ExprKind::Contr(_, i, _), ContrJZero)
        | (ExprKind::Expa(i, _, _), ExpaPosZero)
        | (ExprKind::Expa(_, i, _), ExpaExtentZero)
        | (ExprKind::Proj(i, _, _), ProjPosZero)
        | (ExprKind::Proj(_, i, _), ProjSliceZero) => *i = nat(0),
        (ExprKind::Reduce(_, i, a), RedPosPast)
        | (ExprKind::Transp(i, _, a), TranspIPast)
        | (ExprKind::Transp(_, i, a), TranspJPast)
        | (ExprKind::Diag(i, _, a), DiagIPast)
        | (ExprKind::Contr(i, _, a), ContrIPast)
        | (ExprKind::Diag(_, i, a), DiagJPast)
        | (ExprKind::Contr(_, i, a), ContrJPast)
        | (ExprKind::Proj(i, _, a), ProjPosPast) => *i = nat(shape(a).len() as u64 + 1),
        (ExprKind::Diag(i, j, _), DiagSame) | (ExprKind::Contr(i, j, _), ContrSame) => *j = *i,
        (ExprKind::Diag(i, j, a), DiagExtents) | (ExprKind::Contr(i, j, a), ContrExtents) => {
            let t = shape(a);
            let nj = t[j.value as usize - 1];
            let Some(k) = (0..t.len()).find(|&k| t[k] != nj) else {
                return false;
            };
            *i = nat(k as u64 + 1);
        }
        (ExprKind::Expa(i, _, a), ExpaPosPast) => *i = nat(shape(a).len() as u64 + 2),
        (ExprKind::Proj(i, m, a), ProjSlicePast) => {
            *m = nat(shape(a)[i.value as usize - 1] + 1);
        }
        (ExprKind::Binary(BinOp::Add, _, b), AddShapes)
        | (ExprKind::Binary(BinOp::Sub, _, b), SubShapes) => widen(b, 2),
        // The left operand, so that T-SMul cannot apply: [n] ++ t0 is not a scalar, and n
        // differs from t1's first extent.
        (ExprKind::Binary(BinOp::Mul, a, b), MulShapes) => {
            let n = other_extent(&shape(b));
            widen(a, n);
        }
        // The right operand, so that T-SDiv cannot apply.
        (ExprKind::Binary(BinOp::Div, a, b), DivShapes) => {
            let n = other_extent(&shape(a));
            widen(b, n);
        }
        (ExprKind::Binary(BinOp::Mul, a, b), MulScalarRight) => {
            if shape(a).is_empty() {
                widen(a, 2);
            }
            **b = node(ExprKind::Lit(Literal::from_f64(2.0)));
        }
        (ExprKind::Binary(BinOp::Div, a, b), DivScalarLeft) => {
            if shape(b).is_empty() {
                widen(b, 2);
            }
            **a = node(ExprKind::Lit(Literal::from_f64(1.0)));
        }
        (ExprKind::Binary(BinOp::Add, a, b), AddElem)
        | (ExprKind::Binary(BinOp::Sub, a, b), SubElem)
        | (ExprKind::Binary(BinOp::Mul, a, b), MulElem)
        | (ExprKind::Binary(BinOp::Div, a, b), DivElem)
        | (ExprKind::Prod(a, b), ProdElem) => return mix(a, b, checked),
        _ => return false,
    }
    true
}

/// `checked`'s program with `p` broken at the `choice`-th node where it applies (modulo their
/// number); `None` when no node offers `p`.
pub fn mutant(checked: &CheckedProgram, p: Premise, choice: usize) -> Option<Program> {
    let mut sites = Vec::new();
    for s in &checked.program().stmts {
        let root = s.value.id;
        s.value.walk(&mut |e| {
            if apply(&mut e.clone(), p, checked, e.id == root) {
                sites.push(e.id);
            }
        });
    }
    let site = *sites.get(choice % sites.len().max(1))?;
    let mut out = checked.program().clone();
    fn find(e: &mut Expr, id: ExprId) -> Option<&mut Expr> {
        if e.id == id {
            return Some(e);
        }
        e.children_mut().into_iter().find_map(|c| find(c, id))
    }
    let e = (out.stmts.iter_mut()).find_map(|s| find(&mut s.value, site))?;
    let root = (checked.program().stmts.iter()).any(|s| s.value.id == site);
    assert!(apply(e, p, checked, root), "{p:?} applies where it applied");
    Some(out)
}
