//! Canonical text for programs (`teil fmt`).
//!
//! Two canonical styles: [`Style::Prefix`], the TeIL paper's syntax (`alloc`, `add`, `contr`),
//! which can spell every construct, and [`Style::Infix`], the report's operators (`var`, `+`,
//! `#`, `.[ ]`, `^[ ]`) with prefix forms only where the report has no operator. Parentheses in
//! the source are not kept: the printer inserts exactly the ones the grammar needs.
//!
//! **Architecture Invariant:** for every program `p` without syntax errors,
//! `parse(print(p, s))` is [`Program::same_as`] `p`, and printing is idempotent.

use crate::ast::*;
use std::fmt::Write;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    #[default]
    Prefix,
    Infix,
}

pub fn program(p: &Program, style: Style) -> String {
    let mut out = String::new();
    for d in &p.decls {
        out.push_str(&decl(d, style));
        out.push('\n');
    }
    for s in &p.stmts {
        let _ = writeln!(out, "{} = {}", s.target.name, expr(&s.value, style));
    }
    out
}

pub fn decl(d: &Decl, style: Style) -> String {
    let mut out = String::new();
    if let Some(q) = d.qualifier {
        out.push_str(q.keyword());
        out.push(' ');
    }
    let (kw, sep) = match style {
        Style::Prefix => ("alloc", ", "),
        Style::Infix => ("var", " "),
    };
    let extents: Vec<String> = d.extents.iter().map(|n| n.value.to_string()).collect();
    let _ = write!(out, "{kw} {} : [{}]", d.name.name, extents.join(sep));
    out
}

/// Prints an expression at the top level of a statement.
pub fn expr(e: &Expr, style: Style) -> String {
    let mut out = String::new();
    match style {
        Style::Prefix => prefix(e, &mut out, false),
        Style::Infix => infix(e, &mut out, 0),
    }
    out
}

fn literal(v: f64, out: &mut String) {
    // `{}` on f64 prints the shortest decimal that reads back to the same bits.
    let _ = write!(out, "{v}");
}

fn is_atom(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error
    )
}

/// Prefix style; `atom` asks for an operand position, where anything but a name or a number
/// needs parentheses.
fn prefix(e: &Expr, out: &mut String, atom: bool) {
    let e = e.strip_parens();
    if atom && !is_atom(e) {
        out.push('(');
        prefix(e, out, false);
        out.push(')');
        return;
    }
    let op = |out: &mut String, head: String, args: &[&Expr]| {
        out.push_str(&head);
        for a in args {
            out.push(' ');
            prefix(a, out, true);
        }
    };
    match &e.kind {
        ExprKind::Var(v) => out.push_str(&v.name),
        ExprKind::Lit(v) => literal(*v, out),
        ExprKind::Error => out.push_str("<error>"),
        ExprKind::Paren(_) => unreachable!("parentheses were stripped"),
        ExprKind::Binary(o, a, b) => op(out, o.prefix_keyword().into(), &[a, b]),
        ExprKind::Prod(a, b) => op(out, "prod".into(), &[a, b]),
        ExprKind::Reduce(o, i, a) => op(out, format!("{} {}", o.keyword(), i.value), &[a]),
        ExprKind::Transp(i, j, a) => op(out, format!("transp {} {}", i.value, j.value), &[a]),
        ExprKind::Diag(i, j, a) => op(out, format!("diag {} {}", i.value, j.value), &[a]),
        ExprKind::Contr(i, j, a) => op(out, format!("contr {} {}", i.value, j.value), &[a]),
        ExprKind::Expa(i, n, a) => op(out, format!("expa {} {}", i.value, n.value), &[a]),
        ExprKind::Proj(i, m, a) => op(out, format!("proj {} {}", i.value, m.value), &[a]),
    }
}

/// Binding strength in the infix grammar: 1 `+ -`, 2 `* /`, 3 `#`, 4 postfix, 5 primary.
fn level(e: &Expr) -> u8 {
    match &e.strip_parens().kind {
        ExprKind::Binary(BinOp::Add | BinOp::Sub, ..) => 1,
        ExprKind::Binary(BinOp::Mul | BinOp::Div, ..) => 2,
        ExprKind::Prod(..) => 3,
        ExprKind::Contr(..) | ExprKind::Transp(..) => 4,
        _ => 5,
    }
}

/// Infix style; `min` is the weakest binding the context accepts without parentheses.
fn infix(e: &Expr, out: &mut String, min: u8) {
    let e = e.strip_parens();
    if level(e) < min {
        out.push('(');
        infix(e, out, 0);
        out.push(')');
        return;
    }
    let atom = |a: &Expr, out: &mut String| {
        out.push(' ');
        if is_atom(a.strip_parens()) {
            infix(a, out, 5);
        } else {
            out.push('(');
            infix(a, out, 0);
            out.push(')');
        }
    };
    match &e.kind {
        ExprKind::Var(v) => out.push_str(&v.name),
        ExprKind::Lit(v) => literal(*v, out),
        ExprKind::Error => out.push_str("<error>"),
        ExprKind::Paren(_) => unreachable!("parentheses were stripped"),
        ExprKind::Binary(o, a, b) => {
            let l = level(e);
            infix(a, out, l);
            let _ = write!(out, " {} ", o.symbol());
            infix(b, out, l + 1);
        }
        ExprKind::Prod(a, b) => {
            infix(a, out, 3);
            out.push_str(" # ");
            infix(b, out, 4);
        }
        ExprKind::Contr(i, j, a) | ExprKind::Transp(i, j, a) => {
            infix(a, out, 4);
            let sym = if matches!(e.kind, ExprKind::Contr(..)) {
                '.'
            } else {
                '^'
            };
            let _ = write!(out, " {sym}[{} {}]", i.value, j.value);
        }
        ExprKind::Reduce(o, i, a) => {
            let _ = write!(out, "{} {}", o.keyword(), i.value);
            atom(a, out);
        }
        ExprKind::Diag(i, j, a) | ExprKind::Expa(i, j, a) | ExprKind::Proj(i, j, a) => {
            let kw = match e.kind {
                ExprKind::Diag(..) => "diag",
                ExprKind::Expa(..) => "expa",
                _ => "proj",
            };
            let _ = write!(out, "{kw} {} {}", i.value, j.value);
            atom(a, out);
        }
    }
}
