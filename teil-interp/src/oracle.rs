//! The reference interpreter: the denotational semantics of spec/semantics.md made executable.
//!
//! [`Oracle::eval`] evaluates an expression at one 1-based multi-index in the store, with one
//! match arm per equation, each naming it (TeIL paper Fig. 6, report Fig. 12). [`Oracle::step`]
//! is St-Stmt: the whole right-hand side is evaluated against the old store, then the target is
//! replaced, so `A = A ^[1 2]` reads the old `A`. [`Oracle::run`] is St-Seq and Eval-Prog.
//!
//! The oracle prefers clarity to speed: it recomputes sub-expressions at every index and never
//! materialises intermediates. It reads the checker's shapes ([`CheckedProgram::shape`]) where
//! the equations consult `type_Γ` and never re-derives them.
//!
//! **Architecture Invariant:** every store access is checked ([`Store::read`],
//! [`Store::replace`]); for a checked program the check never fails (TeIL paper Lemma 4.3,
//! Lemma 4.5). When it does, the oracle stops with [`RunError::OutOfBounds`]. Recursion depth is
//! the expression depth, at most `teil::limits::MAX_EXPR_DEPTH` ([`check_depth`]).

use crate::budget::{checked_len, oracle_work, try_vec, Budget, Meter};
use crate::domain::Domain;
use crate::error::RunError;
use crate::store::{multi_indices, Store};
use teil::ast::{BinOp, ElemType, Expr, ExprKind, Stmt};
use teil::limits::MAX_EXPR_DEPTH;
use teil::CheckedProgram;

/// An evaluation in progress: the program (for its shapes), the current store μ, and the meter
/// that counts its steps against a [`Budget`] (one step per `eval` call, the unit of
/// [`crate::budget::oracle_work`]).
pub struct Oracle<'p, V> {
    prog: &'p CheckedProgram,
    store: Store<V>,
    meter: Meter,
}

/// Returns an error when some right-hand side of `p` is nested deeper than the recursion of the
/// evaluators allows.
pub fn check_depth(p: &CheckedProgram) -> Result<(), RunError> {
    for s in &p.program().stmts {
        let depth = s.value.depth();
        if depth > MAX_EXPR_DEPTH {
            return Err(RunError::TooDeep {
                depth,
                limit: MAX_EXPR_DEPTH,
            });
        }
    }
    Ok(())
}

fn malformed(what: &str, idx: &[u64]) -> RunError {
    RunError::Internal(format!(
        "{what} applied to a multi-index of the wrong length {idx:?}"
    ))
}

/// `[j1, ..., j(p-1), v, jp, ...]`: `v` inserted at the 1-based position `p`.
pub fn insert_at(idx: &[u64], p: u64, v: u64) -> Result<Vec<u64>, RunError> {
    let p0 = (p as usize).wrapping_sub(1);
    if p0 > idx.len() {
        return Err(malformed("an insertion", idx));
    }
    let mut out = Vec::with_capacity(idx.len() + 1);
    out.extend_from_slice(&idx[..p0]);
    out.push(v);
    out.extend_from_slice(&idx[p0..]);
    Ok(out)
}

/// The component at the 1-based position `p`.
fn component(idx: &[u64], p: u64) -> Result<u64, RunError> {
    (p as usize)
        .checked_sub(1)
        .and_then(|p0| idx.get(p0).copied())
        .ok_or_else(|| malformed("a position", idx))
}

impl<'p, V: Domain> Oracle<'p, V> {
    /// An oracle without limits (for small programs the caller built, e.g. in tests).
    pub fn new(prog: &'p CheckedProgram, store: Store<V>) -> Self {
        Self::with_budget(prog, store, Budget::unlimited())
    }

    /// An oracle that stops with [`RunError::Interrupted`] when `budget`'s flag is set and
    /// refuses runs over its work budget.
    pub fn with_budget(prog: &'p CheckedProgram, store: Store<V>, budget: Budget) -> Self {
        Oracle {
            prog,
            store,
            meter: Meter::new(budget),
        }
    }

    /// Steps taken so far (calls of [`Oracle::eval`]).
    pub fn steps(&self) -> u64 {
        self.meter.steps()
    }

    pub fn store(&self) -> &Store<V> {
        &self.store
    }

    pub fn into_store(self) -> Store<V> {
        self.store
    }

    /// `⟦e⟧ Γ μ ī` at the 1-based multi-index `idx` (which must be below `shape(e)`).
    ///
    /// Every arithmetic result is rounded to `e`'s element type (spec/semantics.md, "Element
    /// types": `round_t`, the identity for `f64`); each fold step of a reduction or
    /// contraction is rounded as it is taken.
    pub fn eval(&self, e: &Expr, idx: &[u64]) -> Result<V, RunError> {
        self.meter.tick()?;
        let t = self.prog.elem(e);
        let v = self.eval_in(e, idx, t)?;
        Ok(v)
    }

    fn eval_in(&self, e: &Expr, idx: &[u64], t: ElemType) -> Result<V, RunError> {
        let shape = |e: &Expr| self.prog.shape(e);
        let op = |o: BinOp, a: V, b: V| V::arith(o, t, &a, &b);
        match &e.kind {
            // [S-Var] ⟦x⟧ μ ī = μ x ī
            ExprKind::Var(x) => self.store.read(&x.name, idx),
            // [S-Paren] ⟦(e)⟧ μ ī = ⟦e⟧ μ ī
            ExprKind::Paren(inner) => self.eval(inner, idx),
            // [S-Lit] ⟦c⟧ μ [] = c, the decimal rounded once to the literal's element type
            ExprKind::Lit(c) => {
                if !idx.is_empty() {
                    return Err(malformed("a literal", idx));
                }
                Ok(V::lit(c.in_type(t)))
            }
            // [S-SMul] ⟦mul e0 e1⟧ μ ī = ⟦e0⟧ μ [] · ⟦e1⟧ μ ī   if type(e0) = []
            ExprKind::Binary(BinOp::Mul, a, b) if shape(a).is_empty() => {
                Ok(op(BinOp::Mul, self.eval(a, &[])?, self.eval(b, idx)?))
            }
            // [S-SDiv] ⟦div e0 e1⟧ μ ī = ⟦e0⟧ μ ī / ⟦e1⟧ μ []   if type(e1) = []
            ExprKind::Binary(BinOp::Div, a, b) if shape(b).is_empty() => {
                Ok(op(BinOp::Div, self.eval(a, idx)?, self.eval(b, &[])?))
            }
            // [S-Add] ⟦add e0 e1⟧ μ ī = ⟦e0⟧ μ ī + ⟦e1⟧ μ ī
            ExprKind::Binary(BinOp::Add, a, b) => {
                Ok(op(BinOp::Add, self.eval(a, idx)?, self.eval(b, idx)?))
            }
            // [S-Sub] ⟦sub e0 e1⟧ μ ī = ⟦e0⟧ μ ī − ⟦e1⟧ μ ī
            ExprKind::Binary(BinOp::Sub, a, b) => {
                Ok(op(BinOp::Sub, self.eval(a, idx)?, self.eval(b, idx)?))
            }
            // [S-Mul] ⟦mul e0 e1⟧ μ ī = ⟦e0⟧ μ ī · ⟦e1⟧ μ ī
            ExprKind::Binary(BinOp::Mul, a, b) => {
                Ok(op(BinOp::Mul, self.eval(a, idx)?, self.eval(b, idx)?))
            }
            // [S-Div] ⟦div e0 e1⟧ μ ī = ⟦e0⟧ μ ī / ⟦e1⟧ μ ī
            ExprKind::Binary(BinOp::Div, a, b) => {
                Ok(op(BinOp::Div, self.eval(a, idx)?, self.eval(b, idx)?))
            }
            // [S-Prod] ⟦prod e0 e1⟧ μ (ī0 # ī1) = ⟦e0⟧ μ ī0 · ⟦e1⟧ μ ī1   with length(ī0) = rank(e0)
            ExprKind::Prod(a, b) => {
                let k = shape(a).len();
                if idx.len() < k {
                    return Err(malformed("a product", idx));
                }
                let (i0, i1) = idx.split_at(k);
                Ok(op(BinOp::Mul, self.eval(a, i0)?, self.eval(b, i1)?))
            }
            // [S-Func] ⟦f e⟧ μ ī = f_t(⟦e⟧ μ ī), correctly rounded in t
            ExprKind::Func(f, a) => Ok(V::func(*f, t, &self.eval(a, idx)?)),
            // [S-Func2] ⟦max e0 e1⟧ μ ī = maximum(⟦e0⟧ μ ī, ⟦e1⟧ μ ī), likewise min
            ExprKind::Func2(f, a, b) => Ok(V::func2(*f, &self.eval(a, idx)?, &self.eval(b, idx)?)),
            // [S-Conv] ⟦t e⟧ μ ī = round_t(⟦e⟧ μ ī)
            ExprKind::Convert(_, a) => Ok(self.eval(a, idx)?.round(t)),
            // [S-Red] ⟦red⊕ i e⟧ μ [j1..j(i-1), ji..jk] = fold⊕ over m = 1..n of
            //         ⟦e⟧ μ [j1..j(i-1), m, ji..jk]   where type(e) has extent n at i;
            //         a left fold in index order starting from the first element
            ExprKind::Reduce(op, i, inner) => {
                let n = component(shape(inner), i.value)?;
                let mut acc = self.eval(inner, &insert_at(idx, i.value, 1)?)?;
                for m in 2..=n {
                    let v = self.eval(inner, &insert_at(idx, i.value, m)?)?;
                    acc = V::fold_step_in(*op, t, &acc, &v);
                }
                Ok(acc)
            }
            // [S-Transp] ⟦transp i0 i1 e⟧ μ [.. j(i0) .. j(i1) ..] = ⟦e⟧ μ [.. j(i1) .. j(i0) ..]
            ExprKind::Transp(i, j, inner) => {
                let (a, b) = (component(idx, i.value)?, component(idx, j.value)?);
                let mut k = idx.to_vec();
                k[i.value as usize - 1] = b;
                k[j.value as usize - 1] = a;
                self.eval(inner, &k)
            }
            // [S-Diag] ⟦diag i0 i1 e⟧ μ [j1..jk] = ⟦e⟧ μ [j1..j(h-1), j(l), jh..jk]
            //          with l = min(i0, i1), h = max(i0, i1): the index at l is repeated at h
            ExprKind::Diag(i, j, inner) => {
                let (l, h) = (i.value.min(j.value), i.value.max(j.value));
                let k = insert_at(idx, h, component(idx, l)?)?;
                self.eval(inner, &k)
            }
            // [S-Contr] ⟦contr i0 i1 e⟧ μ ī = Σ over m = 1..n of ⟦e⟧ μ ī with m inserted at
            //           l = min(i0, i1) and at h = max(i0, i1); = red+ l (diag l h e)
            ExprKind::Contr(i, j, inner) => {
                let (l, h) = (i.value.min(j.value), i.value.max(j.value));
                let n = component(shape(inner), l)?;
                let at = |m: u64| insert_at(&insert_at(idx, l, m)?, h, m);
                let mut acc = self.eval(inner, &at(1)?)?;
                for m in 2..=n {
                    acc = op(BinOp::Add, acc, self.eval(inner, &at(m)?)?);
                }
                Ok(acc)
            }
            // [S-Expa] ⟦expa i n e⟧ μ [j1..j(i-1), ji, j(i+1)..jk] = ⟦e⟧ μ [j1..j(i-1), j(i+1)..jk]
            ExprKind::Expa(i, _, inner) => {
                component(idx, i.value)?;
                let mut k = idx.to_vec();
                k.remove(i.value as usize - 1);
                self.eval(inner, &k)
            }
            // [S-Proj] ⟦proj i m e⟧ μ [j1..j(i-1), ji..jk] = ⟦e⟧ μ [j1..j(i-1), m, ji..jk]
            ExprKind::Proj(i, m, inner) => self.eval(inner, &insert_at(idx, i.value, m.value)?),
            ExprKind::Error => Err(RunError::Internal(
                "an erroneous expression reached the evaluator".to_string(),
            )),
        }
    }

    /// [St-Stmt] ⟨μ, x = e⟩ → μ{x ↦ λk̄. ⟦e⟧ μ k̄} for every k̄ ≤ Γ(x): every cell is computed
    /// against the old store before any is written.
    pub fn step(&mut self, stmt: &Stmt) -> Result<(), RunError> {
        let extents = self.prog.shape(&stmt.value).to_vec();
        self.meter.poll()?;
        let what = format!("the new value of `{}`", stmt.target.name);
        let len = checked_len(&what, &extents)?;
        let mut data = try_vec(&what, len, std::iter::empty())?;
        for k in multi_indices(&extents) {
            data.push(self.eval(&stmt.value, &k)?);
        }
        self.store.replace(&stmt.target.name, &extents, data)
    }

    /// [St-Seq], [Eval-Prog]: the statements in order.
    pub fn run(&mut self) -> Result<(), RunError> {
        check_depth(self.prog)?;
        self.meter
            .budget()
            .check_work("the oracle", oracle_work(self.prog))?;
        for s in &self.prog.program().stmts {
            self.step(s)?;
        }
        Ok(())
    }
}
