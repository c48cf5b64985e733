//! The step-by-step unfolding of the semantics at one cell (`teil trace`), as in the TeIL
//! paper's Fig. 7.
//!
//! A formula starts as `⟦e⟧[ī]` for the right-hand side of the last statement assigning the
//! variable. Each step rewrites the first `⟦·⟧` (in reading order) by the one equation of
//! spec/semantics.md for its form, and the line names it. Reductions and contractions introduce
//! bound index variables (`k`, `l`, ...) and stay symbolic, so the unfolding has one line per
//! expression node and ends in store reads. With a store (inputs given), three more lines
//! follow: the sums expanded over their indices, the store reads replaced by values, and the
//! value itself, computed by the oracle. Long folds are abbreviated to their first two terms and
//! the last (`a + b + ⋯ (6 more) ⋯ + z`).
//!
//! The output is bounded (spec/limits.md): the symbolic lines are one per expression node, and
//! their total size (the bytes [`render`] prints, every line padded to the widest) is checked
//! against the budget's `max_output` as they are built; an expansion that would show more than
//! [`MAX_EXPANDED_TERMS`] terms (nested folds multiply) is not printed, only the value; the
//! oracle's work for the value is checked against `max_work` before it starts.

use crate::budget::{cell_work, statement_work, Budget};
use crate::domain::Val;
use crate::error::RunError;
use crate::oracle::Oracle;
use crate::store::Store;
use crate::undefined::index;
use crate::Tensor;
use std::collections::BTreeMap;
use std::fmt::Write;
use teil::ast::{BinOp, Expr, ExprKind, RedOp};
use teil::fmt::Style;
use teil::CheckedProgram;

/// One line of a trace: the formula and the equation (or step) that produced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub rule: String,
    /// The sub-expression of the source that this step evaluates (the `⟦·⟧` it rewrote), for
    /// a view that highlights it; `None` for the lines that rewrite no source expression.
    pub span: Option<teil::Span>,
}

/// Why a trace cannot be produced (the caller's mistake, exit 1).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("`{0}` is not a variable of the program")]
    UnknownVariable(String),
    #[error("`{var}` has shape {shape}; {idx} is not one of its cells (indices are 1-based)")]
    BadIndex {
        var: String,
        shape: String,
        idx: String,
    },
    #[error("`{0}` is never assigned, so there is no equation to unfold; its cells keep their initial values")]
    NeverAssigned(String),
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Folds longer than this are shown abbreviated when expanded.
const SHOWN_TERMS: u64 = 4;

/// An expansion with more terms (store reads and literals) than this is not shown.
pub const MAX_EXPANDED_TERMS: u64 = 1000;

/// An index position: a number or a bound index variable.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ix {
    Num(u64),
    Var(usize),
}

#[derive(Clone, Debug)]
enum F<'e> {
    Eval(&'e Expr, Vec<Ix>),
    Read(&'e str, Vec<Ix>),
    Lit(f64),
    Bin(&'static str, Box<F<'e>>, Box<F<'e>>),
    /// A fold over the bound variable `var` from 1 to `n`.
    Fold(RedOp, usize, u64, Box<F<'e>>),
    /// A function applied to its operands: `exp(..)`, `max(.., ..)`, `f32(..)`.
    Call(&'static str, Vec<F<'e>>),
}

/// Expanded formulas: no symbols left, folds as n-ary lists (possibly abbreviated).
enum G {
    Read(String, Vec<u64>, Val),
    Lit(f64),
    Bin(&'static str, Box<G>, Box<G>),
    /// `op` over `shown` terms; `hidden` terms are elided between the last two shown ones.
    Fold(RedOp, Vec<G>, u64),
    Call(&'static str, Vec<G>),
}

/// [`render`], with `hint` (how this surface gives input values) added to the no-values line
/// of a trace without inputs ([`NO_VALUES`]).
pub fn render_with_hint(lines: &[Line], hint: &str) -> String {
    let text = render(lines);
    let end = format!("({NO_VALUES})\n");
    match text.strip_suffix(&end) {
        Some(head) => format!("{head}({NO_VALUES}; {hint})\n"),
        None => text,
    }
}

/// The text of a trace as `teil trace` prints it: formulas on the left, the equations aligned
/// in a column to their right, one line each. Its length in bytes is what is counted against
/// the output budget.
pub fn render(lines: &[Line]) -> String {
    let width = lines
        .iter()
        .map(|l| l.text.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for l in lines {
        let pad = width - l.text.chars().count();
        let line = format!("{}{}  {}", l.text, " ".repeat(pad), l.rule);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The line a trace without inputs ends with, in place of the values. Each surface adds how to
/// give them, in its own words (`teil trace`: `--in` or `--random-inputs`; Python: the inputs
/// as keyword arguments); the playground always gives inputs.
pub const NO_VALUES: &str = "no input values were given";

/// Traces the cell `var[idx]` (1-based) of program `p`. With `inputs`, the values are shown:
/// the statements before the traced one run on the oracle first. The run is within `budget`
/// (see the module documentation).
pub fn trace(
    p: &CheckedProgram,
    var: &str,
    idx: &[u64],
    inputs: Option<&BTreeMap<String, Tensor>>,
    style: Style,
    budget: &Budget,
) -> Result<Vec<Line>, TraceError> {
    let shape = p
        .var_shape(var)
        .ok_or_else(|| TraceError::UnknownVariable(var.to_string()))?;
    let in_bounds =
        idx.len() == shape.len() && idx.iter().zip(shape).all(|(&k, &n)| k >= 1 && k <= n);
    if !in_bounds {
        return Err(TraceError::BadIndex {
            var: var.to_string(),
            shape: teil::ast::ShapeDisplay(shape).to_string(),
            idx: index(idx),
        });
    }
    let stmts = &p.program().stmts;
    // The statement that gives the cell its final value is the *last* assignment of `var`;
    // the checker's initialisation record (`CheckedProgram::var_init`) keeps only the first
    // read and the first assignment, so it cannot say which statement to trace.
    let at = stmts
        .iter()
        .rposition(|s| s.target.name == var)
        .ok_or_else(|| TraceError::NeverAssigned(var.to_string()))?;
    let rhs = &stmts[at].value;
    let oracle = match inputs {
        Some(inputs) => {
            // The statements before the traced one, then one cell of it.
            let work = stmts[..at].iter().fold(cell_work(p, rhs), |acc, s| {
                acc.saturating_add(statement_work(p, s))
            });
            budget.check_work("the oracle (for the values of the trace)", work)?;
            budget.check_memory(&crate::budget::oracle_bytes(p))?;
            let mut o = Oracle::with_budget(p, crate::initial_store(p, inputs)?, budget.clone());
            for s in &stmts[..at] {
                o.step(s)?;
            }
            Some(o)
        }
        None => None,
    };
    let tr = Tracer {
        prog: p,
        style,
        vars: 0,
    };
    let mut tr = tr;
    let ix: Vec<Ix> = idx.iter().map(|&k| Ix::Num(k)).collect();
    let mut f = F::Eval(rhs, ix);
    let head = format!("{var}{} = ", index(idx));
    // Continuation lines start with `=` under the first one, as in the paper's Fig. 7.
    let pad = " ".repeat(head.chars().count() - 2);
    let mut out = Output::new(budget);
    out.push(Line {
        text: format!("{head}{}", tr.show(&f)),
        rule: "[St-Stmt]".to_string(),
        span: Some(rhs.span.clone()),
    })?;
    while let Some((rule, span)) = tr.step(&mut f)? {
        budget.check_cancel()?;
        out.push(Line {
            text: format!("{pad}= {}", tr.show(&f)),
            rule: format!("[{rule}]"),
            span: Some(span),
        })?;
    }
    match oracle {
        None => out.push(Line {
            text: format!("{pad}  ({NO_VALUES})"),
            rule: String::new(),
            span: None,
        })?,
        Some(o) => {
            let terms = expanded_terms(&f);
            if terms <= MAX_EXPANDED_TERMS {
                let store = o.store();
                let mut env = vec![0u64; tr.vars];
                let g = expand(&f, &mut env, store)?;
                out.push(Line {
                    text: format!("{pad}= {}", show_g(&g, false, 0)),
                    rule: "[expand]".to_string(),
                    span: None,
                })?;
                out.push(Line {
                    text: format!("{pad}= {}", show_g(&g, true, 0)),
                    rule: "[store reads]".to_string(),
                    span: None,
                })?;
            } else {
                out.push(Line {
                    text: format!(
                        "{pad}  (the expansion would show {} terms, more than \
                         {MAX_EXPANDED_TERMS}; only the value follows)",
                        if terms == u64::MAX {
                            "2^64 or more".to_string()
                        } else {
                            terms.to_string()
                        }
                    ),
                    rule: String::new(),
                    span: None,
                })?;
            }
            let v = o.eval(rhs, idx)?;
            // A binary32 value with binary32's shortest digits.
            let shown = match (v, p.elem(rhs)) {
                (Val::Num(x), teil::ast::ElemType::F32) if !x.is_nan() => format!("{}", x as f32),
                _ => value(v),
            };
            out.push(Line {
                text: format!("{pad}= {shown}"),
                rule: "[arithmetic]".to_string(),
                span: None,
            })?;
        }
    }
    Ok(out.lines)
}

/// The lines of a trace, with their printed size checked against the output budget as they
/// come: exactly the bytes [`render`] prints, every line padded to the widest formula so far.
struct Output<'b> {
    lines: Vec<Line>,
    /// The widest formula, in characters (the padding is in characters).
    width: u64,
    /// The bytes of every line but the padding up to `width`.
    fixed: u64,
    /// The lines that are padded (those with a rule; [`render`] trims the others' padding).
    padded: u64,
    budget: &'b Budget,
}

impl<'b> Output<'b> {
    fn new(budget: &'b Budget) -> Self {
        Output {
            lines: Vec::new(),
            width: 0,
            fixed: 0,
            padded: 0,
            budget,
        }
    }

    fn push(&mut self, line: Line) -> Result<(), TraceError> {
        // [`render`] prints `text`, spaces up to `width` characters, two spaces, the rule and a
        // newline, trimmed at the end: a line with a rule has `text.len() - chars(text)` bytes
        // over its share of `width` (the multi-byte symbols), 2 + `rule` + 1 more; a line
        // without one is its trimmed text and the newline.
        let chars = line.text.chars().count() as u64;
        let rule = line.rule.trim_end();
        let (fixed, padded) = if rule.is_empty() {
            (line.text.trim_end().len() as u64 + 1, 0)
        } else {
            (
                line.text.len() as u64 - chars + 2 + rule.len() as u64 + 1,
                1,
            )
        };
        let width = self.width.max(chars);
        let (fixed, padded) = (self.fixed + fixed, self.padded + padded);
        let size = padded.saturating_mul(width).saturating_add(fixed);
        let lines = self.lines.len() as u64 + 1;
        if size > self.budget.max_output {
            return Err(TraceError::Run(RunError::OverOutput {
                budget: self.budget.max_output,
                lines,
                bytes: size,
            }));
        }
        (self.width, self.fixed, self.padded) = (width, fixed, padded);
        self.lines.push(line);
        Ok(())
    }
}

/// The number of terms (store reads and literals) [`expand`] would produce for `f`, saturating.
fn expanded_terms(f: &F) -> u64 {
    match f {
        F::Eval(..) | F::Read(..) | F::Lit(_) => 1,
        F::Bin(_, a, b) => expanded_terms(a).saturating_add(expanded_terms(b)),
        F::Call(_, args) => args
            .iter()
            .fold(0u64, |n, a| n.saturating_add(expanded_terms(a))),
        F::Fold(_, _, n, body) => {
            let shown = if *n <= SHOWN_TERMS { *n } else { 3 };
            shown.saturating_mul(expanded_terms(body))
        }
    }
}

struct Tracer<'p> {
    prog: &'p CheckedProgram,
    style: Style,
    vars: usize,
}

fn var_name(v: usize) -> String {
    const NAMES: [&str; 8] = ["k", "l", "m", "p", "q", "r", "s", "t"];
    match NAMES.get(v) {
        Some(n) => n.to_string(),
        None => format!("k{}", v - NAMES.len() + 1),
    }
}

fn bad(what: &str) -> TraceError {
    TraceError::Run(RunError::Internal(format!("trace: {what}")))
}

fn insert(ix: &[Ix], p: u64, v: Ix) -> Result<Vec<Ix>, TraceError> {
    let p0 = (p as usize).wrapping_sub(1);
    if p0 > ix.len() {
        return Err(bad("insertion outside the index"));
    }
    let mut out = ix.to_vec();
    out.insert(p0, v);
    Ok(out)
}

fn pos(ix: &[Ix], p: u64) -> Result<usize, TraceError> {
    let p0 = (p as usize).wrapping_sub(1);
    if p0 < ix.len() {
        Ok(p0)
    } else {
        Err(bad("position outside the index"))
    }
}

impl<'p> Tracer<'p> {
    fn fresh(&mut self) -> usize {
        self.vars += 1;
        self.vars - 1
    }

    /// Rewrites the first `⟦·⟧` of `f`; returns the equation applied and the span of the
    /// expression it rewrote, or `None` when none is left.
    fn step<'e>(&mut self, f: &mut F<'e>) -> Result<Option<(&'static str, teil::Span)>, TraceError>
    where
        'p: 'e,
    {
        match f {
            F::Eval(e, ix) => {
                let span = e.span.clone();
                let (new, rule) = self.unfold(e, ix)?;
                *f = new;
                Ok(Some((rule, span)))
            }
            F::Read(..) | F::Lit(_) => Ok(None),
            F::Bin(_, a, b) => match self.step(a)? {
                Some(r) => Ok(Some(r)),
                None => self.step(b),
            },
            F::Fold(_, _, _, body) => self.step(body),
            F::Call(_, args) => {
                for a in args {
                    if let Some(r) = self.step(a)? {
                        return Ok(Some(r));
                    }
                }
                Ok(None)
            }
        }
    }

    /// One equation of spec/semantics.md, applied to `⟦e⟧[ix]`.
    fn unfold<'e>(&mut self, e: &'e Expr, ix: &[Ix]) -> Result<(F<'e>, &'static str), TraceError>
    where
        'p: 'e,
    {
        let shape = |e: &Expr| self.prog.shape(e).to_vec();
        let ev = |e: &'e Expr, ix: Vec<Ix>| Box::new(F::Eval(e, ix));
        Ok(match &e.kind {
            ExprKind::Var(x) => (F::Read(&x.name, ix.to_vec()), "S-Var"),
            ExprKind::Paren(inner) => (F::Eval(inner, ix.to_vec()), "S-Paren"),
            ExprKind::Lit(c) => (F::Lit(c.in_type(self.prog.elem(e))), "S-Lit"),
            ExprKind::Func(f, a) => (
                F::Call(f.keyword(), vec![F::Eval(a, ix.to_vec())]),
                "S-Func",
            ),
            ExprKind::Func2(f, a, b) => (
                F::Call(
                    f.keyword(),
                    vec![F::Eval(a, ix.to_vec()), F::Eval(b, ix.to_vec())],
                ),
                "S-Func2",
            ),
            ExprKind::Convert(t, a) => (
                F::Call(t.keyword(), vec![F::Eval(a, ix.to_vec())]),
                "S-Conv",
            ),
            ExprKind::Binary(BinOp::Mul, a, b) if shape(a).is_empty() => {
                (F::Bin("·", ev(a, vec![]), ev(b, ix.to_vec())), "S-SMul")
            }
            ExprKind::Binary(BinOp::Div, a, b) if shape(b).is_empty() => {
                (F::Bin("/", ev(a, ix.to_vec()), ev(b, vec![])), "S-SDiv")
            }
            ExprKind::Binary(op, a, b) => {
                let (sym, rule) = match op {
                    BinOp::Add => ("+", "S-Add"),
                    BinOp::Sub => ("-", "S-Sub"),
                    BinOp::Mul => ("·", "S-Mul"),
                    BinOp::Div => ("/", "S-Div"),
                };
                (F::Bin(sym, ev(a, ix.to_vec()), ev(b, ix.to_vec())), rule)
            }
            ExprKind::Prod(a, b) => {
                let k = shape(a).len();
                if ix.len() < k {
                    return Err(bad("product index too short"));
                }
                (
                    F::Bin("·", ev(a, ix[..k].to_vec()), ev(b, ix[k..].to_vec())),
                    "S-Prod",
                )
            }
            ExprKind::Reduce(op, i, inner) => {
                let n = *shape(inner)
                    .get((i.value as usize).wrapping_sub(1))
                    .ok_or_else(|| bad("reduction position"))?;
                let v = self.fresh();
                (
                    F::Fold(*op, v, n, ev(inner, insert(ix, i.value, Ix::Var(v))?)),
                    "S-Red",
                )
            }
            ExprKind::Transp(i, j, inner) => {
                let (p, q) = (pos(ix, i.value)?, pos(ix, j.value)?);
                let mut k = ix.to_vec();
                k.swap(p, q);
                (F::Eval(inner, k), "S-Transp")
            }
            ExprKind::Diag(i, j, inner) => {
                let (l, h) = (i.value.min(j.value), i.value.max(j.value));
                let kept = ix[pos(ix, l)?];
                (F::Eval(inner, insert(ix, h, kept)?), "S-Diag")
            }
            ExprKind::Contr(i, j, inner) => {
                let (l, h) = (i.value.min(j.value), i.value.max(j.value));
                let n = *shape(inner)
                    .get((l as usize).wrapping_sub(1))
                    .ok_or_else(|| bad("contraction position"))?;
                let v = self.fresh();
                let k = insert(&insert(ix, l, Ix::Var(v))?, h, Ix::Var(v))?;
                (F::Fold(RedOp::Sum, v, n, ev(inner, k)), "S-Contr")
            }
            ExprKind::Expa(i, _, inner) => {
                let mut k = ix.to_vec();
                k.remove(pos(ix, i.value)?);
                (F::Eval(inner, k), "S-Expa")
            }
            ExprKind::Proj(i, m, inner) => (
                F::Eval(inner, insert(ix, i.value, Ix::Num(m.value))?),
                "S-Proj",
            ),
            ExprKind::Error => return Err(bad("erroneous expression")),
        })
    }

    fn show_ix(ix: &[Ix]) -> String {
        let parts: Vec<String> = ix
            .iter()
            .map(|i| match i {
                Ix::Num(n) => n.to_string(),
                Ix::Var(v) => var_name(*v),
            })
            .collect();
        format!("[{}]", parts.join(", "))
    }

    fn show_expr(&self, e: &Expr) -> String {
        match &e.kind {
            // The canonical printer drops source parentheses; S-Paren needs to see them.
            ExprKind::Paren(inner) => format!("({})", self.show_expr(inner)),
            _ => teil::fmt::expr(e, self.style),
        }
    }

    fn show(&self, f: &F) -> String {
        let mut out = String::new();
        self.write(f, 0, &mut out);
        out
    }

    /// Writes `f`, parenthesised when its precedence is below `min`.
    fn write(&self, f: &F, min: u8, out: &mut String) {
        match f {
            F::Eval(e, ix) => {
                let _ = write!(out, "⟦{}⟧{}", self.show_expr(e), Self::show_ix(ix));
            }
            F::Read(x, ix) => {
                let _ = write!(out, "{x}{}", Self::show_ix(ix));
            }
            F::Lit(c) => out.push_str(&number(*c)),
            F::Bin(op, a, b) => {
                let prec = prec(op);
                let paren = prec < min;
                if paren {
                    out.push('(');
                }
                self.write(a, prec, out);
                let _ = write!(out, " {op} ");
                self.write(b, prec + 1, out);
                if paren {
                    out.push(')');
                }
            }
            F::Call(name, args) => {
                let _ = write!(out, "{name}(");
                for (k, a) in args.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    self.write(a, 0, out);
                }
                out.push(')');
            }
            F::Fold(op, v, n, body) => {
                let paren = min > 0;
                if paren {
                    out.push('(');
                }
                let _ = write!(out, "{}[{}=1..{n}] ", fold_symbol(*op), var_name(*v));
                self.write(body, 1, out);
                if paren {
                    out.push(')');
                }
            }
        }
    }
}

fn prec(op: &str) -> u8 {
    match op {
        "+" | "-" => 1,
        _ => 2,
    }
}

fn fold_symbol(op: RedOp) -> &'static str {
    match op {
        RedOp::Sum => "Σ",
        RedOp::Product => "Π",
        RedOp::Max => "max",
        RedOp::Min => "min",
    }
}

fn number(c: f64) -> String {
    format!("{c}")
}

fn value(v: Val) -> String {
    match v {
        Val::Undef => "•".to_string(),
        Val::Num(x) => number(x),
    }
}

fn concrete(ix: &[Ix], env: &[u64]) -> Result<Vec<u64>, TraceError> {
    ix.iter()
        .map(|i| match i {
            Ix::Num(n) => Ok(*n),
            Ix::Var(v) => env
                .get(*v)
                .copied()
                .ok_or_else(|| bad("unbound index variable")),
        })
        .collect()
}

/// Expands folds (only the terms that will be shown) and reads the store.
fn expand(f: &F, env: &mut Vec<u64>, store: &Store<Val>) -> Result<G, TraceError> {
    Ok(match f {
        F::Eval(..) => return Err(bad("expansion of an unfolded formula")),
        F::Read(x, ix) => {
            let k = concrete(ix, env)?;
            let v = store.read(x, &k)?;
            G::Read(x.to_string(), k, v)
        }
        F::Lit(c) => G::Lit(*c),
        F::Bin(op, a, b) => G::Bin(
            op,
            Box::new(expand(a, env, store)?),
            Box::new(expand(b, env, store)?),
        ),
        F::Call(name, args) => G::Call(
            name,
            args.iter()
                .map(|a| expand(a, env, store))
                .collect::<Result<_, _>>()?,
        ),
        F::Fold(op, v, n, body) => {
            let shown: Vec<u64> = if *n <= SHOWN_TERMS {
                (1..=*n).collect()
            } else {
                vec![1, 2, *n]
            };
            let mut terms = Vec::with_capacity(shown.len());
            for m in shown {
                env[*v] = m;
                terms.push(expand(body, env, store)?);
            }
            let hidden = n.saturating_sub(terms.len() as u64);
            G::Fold(*op, terms, hidden)
        }
    })
}

/// Writes an expanded formula, with store reads as names or as values.
fn show_g(g: &G, values: bool, min: u8) -> String {
    match g {
        G::Read(x, k, v) => {
            if values {
                let s = value(*v);
                if matches!(v, Val::Num(n) if n.is_sign_negative()) {
                    format!("({s})")
                } else {
                    s
                }
            } else {
                format!("{x}{}", index(k))
            }
        }
        G::Lit(c) => {
            if *c < 0.0 {
                format!("({})", number(*c))
            } else {
                number(*c)
            }
        }
        G::Bin(op, a, b) => {
            let p = prec(op);
            let s = format!("{} {op} {}", show_g(a, values, p), show_g(b, values, p + 1));
            if p < min {
                format!("({s})")
            } else {
                s
            }
        }
        G::Call(name, args) => {
            let args: Vec<String> = args.iter().map(|a| show_g(a, values, 0)).collect();
            format!("{name}({})", args.join(", "))
        }
        G::Fold(op, terms, hidden) => {
            let shown: Vec<String> = match op {
                RedOp::Sum => terms.iter().map(|t| show_g(t, values, 2)).collect(),
                RedOp::Product => terms.iter().map(|t| show_g(t, values, 3)).collect(),
                RedOp::Max | RedOp::Min => terms.iter().map(|t| show_g(t, values, 0)).collect(),
            };
            let mut parts = shown.clone();
            if *hidden > 0 {
                let last = parts.pop().unwrap_or_default();
                parts.push(format!("⋯ ({hidden} more) ⋯"));
                parts.push(last);
            }
            match op {
                RedOp::Sum | RedOp::Product => {
                    let sep = if *op == RedOp::Sum { " + " } else { " · " };
                    let s = parts.join(sep);
                    let p = if *op == RedOp::Sum { 1 } else { 2 };
                    if p < min {
                        format!("({s})")
                    } else {
                        s
                    }
                }
                RedOp::Max | RedOp::Min => {
                    format!("{}({})", fold_symbol(*op), parts.join(", "))
                }
            }
        }
    }
}
