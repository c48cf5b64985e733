//! Canonical text for programs (`teil fmt`).
//!
//! Two canonical styles: [`Style::Prefix`], the TeIL paper's syntax (`alloc`, `add`, `contr`),
//! which can spell every construct, and [`Style::Infix`], the report's operators (`var`, `+`,
//! `#`, `.[ ]`, `^[ ]`) with prefix forms only where the report has no operator. Parentheses in
//! the source are not kept: the printer inserts exactly the ones the grammar needs.
//!
//! **Architecture Invariant:** for every program `p` without syntax errors,
//! `parse(print(p, s))` is [`Program::same_as`] `p`, and printing is idempotent.
//!
//! Comments are trivia: the lexer keeps their spans beside the tokens
//! ([`crate::lexer::lex_with_comments`]) and [`with_comments`] puts them back, each attached to
//! an item (a declaration or statement) by position. A comment after an item on the line where
//! the item ends stays at the end of that line; any other comment is printed on its own line
//! before the next item (a comment inside a multi-line item goes before that item), or at the end
//! of the file. One blank line is kept wherever the source has one or more. Every comment is
//! printed exactly once, so `teil fmt` loses none, and the output formats to itself.

use crate::ast::*;
use crate::diagnostic::{Code, Diagnostic};
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

/// Prints `p` like [`program`], with the comments of `src`, the text `p` was parsed from
/// (spans of `p` must point into `src`; see the module documentation for where comments go).
pub fn with_comments(p: &Program, src: &str, style: Style) -> String {
    let (_, _, comments) = crate::lexer::lex_with_comments(src);
    let items: Vec<(&Span, String)> = p
        .decls
        .iter()
        .map(|d| (&d.span, decl(d, style)))
        .chain(p.stmts.iter().map(|s| {
            (
                &s.span,
                format!("{} = {}", s.target.name, expr(&s.value, style)),
            )
        }))
        .collect();
    let mut leading: Vec<Vec<Span>> = vec![Vec::new(); items.len()];
    let mut trailing: Vec<Option<Span>> = vec![None; items.len()];
    let mut at_end: Vec<Span> = Vec::new();
    for c in comments {
        let line_start = src[..c.start].rfind('\n').map_or(0, |i| i + 1);
        // The last item that starts before the comment (items are in source order).
        let prev = items
            .partition_point(|(s, _)| s.start < c.start)
            .checked_sub(1);
        match prev {
            Some(k) if items[k].0.end <= c.start && items[k].0.end > line_start => {
                if trailing[k].is_none() {
                    trailing[k] = Some(c);
                } else {
                    // Unreachable for parsed text (a comment runs to the end of its line);
                    // kept total so that no comment is ever lost.
                    attach_before(prev.map_or(0, |k| k + 1), c, &mut leading, &mut at_end);
                }
            }
            Some(k) if items[k].0.end > c.start => leading[k].push(c),
            _ => attach_before(prev.map_or(0, |k| k + 1), c, &mut leading, &mut at_end),
        }
    }
    let mut out = String::new();
    // Where the last printed piece ended in `src`, to keep blank lines.
    let mut last: Option<usize> = None;
    let gap = |out: &mut String, last: &mut Option<usize>, start: usize, end: usize| {
        if let Some(prev) = *last {
            let between = src.get(prev..start).unwrap_or("");
            if between.trim().is_empty() && between.matches('\n').count() >= 2 {
                out.push('\n');
            }
        }
        *last = Some(end.max(last.unwrap_or(0)));
    };
    let comment = |c: &Span| src[c.clone()].trim_end();
    for (k, (span, text)) in items.iter().enumerate() {
        for c in &leading[k] {
            gap(&mut out, &mut last, c.start, c.end);
            out.push_str(comment(c));
            out.push('\n');
        }
        gap(&mut out, &mut last, span.start, span.end);
        out.push_str(text);
        if let Some(c) = &trailing[k] {
            out.push(' ');
            out.push_str(comment(c));
            last = Some(c.end);
        }
        out.push('\n');
    }
    for c in &at_end {
        gap(&mut out, &mut last, c.start, c.end);
        out.push_str(comment(c));
        out.push('\n');
    }
    out
}

fn attach_before(k: usize, c: Span, leading: &mut [Vec<Span>], at_end: &mut Vec<Span>) {
    match leading.get_mut(k) {
        Some(l) => l.push(c),
        None => at_end.push(c),
    }
}

/// What `teil fmt` prints for a TeIL source text: the program in `style` with its comments.
/// `Err` carries the syntax errors (formatting needs a syntactically valid program, not a
/// well-typed one), or E0005 when the output could not be read back (see [`read_back`]).
pub fn source(src: &str, style: Style) -> Result<String, Vec<Diagnostic>> {
    let parsed = crate::parse(src);
    let errors: Vec<Diagnostic> = parsed
        .diagnostics
        .into_iter()
        .filter(Diagnostic::is_error)
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let what = match style {
        Style::Prefix => "the prefix form of this statement",
        Style::Infix => "the infix form of this statement",
    };
    read_back(&parsed.program, style, what).map_err(|d| vec![d])?;
    Ok(with_comments(&parsed.program, src, style))
}

/// Checks that the printed form of `p` parses again. Printing can nest deeper than the source
/// did (prefix syntax needs parentheses where infix needs none, and Core-TeIL adds
/// transpositions), so `teil fmt` never prints a program that `teil check` would reject as too
/// deep: the statement whose printed form is too deep gets E0005, `what` naming that form.
pub fn read_back(p: &Program, style: Style, what: &str) -> Result<(), Diagnostic> {
    let text = program(p, style);
    let reparsed = crate::parse(&text).diagnostics;
    let Some(bad) = reparsed.iter().find(|d| d.is_error()) else {
        return Ok(());
    };
    // One line per item in the comment-free form.
    let line = text[..bad.primary.span.start.min(text.len())]
        .matches('\n')
        .count();
    Err(match line.checked_sub(p.decls.len()) {
        Some(k) if bad.code == Code::TooDeep && k < p.stmts.len() => Diagnostic::new(
            Code::TooDeep,
            format!("{what} is nested too deeply to be read back"),
            p.stmts[k].span.clone(),
            "this statement",
        )
        .with_help("split the statement into several statements over temporaries"),
        _ => bad.clone(),
    })
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
    // A written element type is kept (`f64[..]` too); a bare `[..]` is `f64` and stays bare.
    let elem = match (d.elem, &d.elem_span) {
        (ElemType::F64, None) => "",
        (t, _) => t.keyword(),
    };
    let _ = write!(out, "{kw} {} : {elem}[{}]", d.name.name, extents.join(sep));
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

/// The shortest decimal that reads back to the same binary64 bits (`{}` on f64), when it also
/// reads back to the same binary32 value; otherwise the decimal as written, which rounds to
/// both (a decimal near a binary32 tie can round differently once than through binary64).
fn literal(lit: &Literal, out: &mut String) {
    let short = format!("{}", lit.value);
    match short.parse::<f32>() {
        Ok(single) if single.to_bits() == lit.single.to_bits() => out.push_str(&short),
        _ => out.push_str(&lit.text),
    }
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
        ExprKind::Lit(v) => literal(v, out),
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
        ExprKind::Func(f, a) => op(out, f.keyword().into(), &[a]),
        ExprKind::Func2(f, a, b) => op(out, f.keyword().into(), &[a, b]),
        ExprKind::Convert(t, a) => op(out, t.keyword().into(), &[a]),
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
        ExprKind::Lit(v) => literal(v, out),
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
        ExprKind::Func(f, a) => {
            out.push_str(f.keyword());
            atom(a, out);
        }
        ExprKind::Func2(f, a, b) => {
            out.push_str(f.keyword());
            atom(a, out);
            atom(b, out);
        }
        ExprKind::Convert(t, a) => {
            out.push_str(t.keyword());
            atom(a, out);
        }
    }
}
