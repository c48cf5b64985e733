//! `teil check`, `teil fmt` and `teil explain`.

use crate::input::{fail, read_source, report};
use crate::{Color, FmtSyntax, Format};
use serde_json::{json, Value};
use teil::ast::{BinOp, Decl, Expr, ExprKind, Program, Qualifier, RedOp};
use teil::{fmt, Code};

/// Checks every file and reports its diagnostics. When every file passes, text mode ends with
/// one line on stdout counting what was checked (`summary`); JSON mode prints only
/// diagnostics.
pub fn check(files: &[String], format: Format, color: Color) -> u8 {
    let mut status = 0;
    let mut counts = Counts::default();
    for path in files {
        let src = match read_source(path) {
            Ok(s) => s,
            Err(e) => {
                status = status.max(e.report(format, color));
                continue;
            }
        };
        let diags = match teil::guard::load(&src.name, &src.text) {
            Ok((p, warnings)) => {
                counts.files += 1;
                counts.decls += p.program().decls.len();
                counts.stmts += p.program().stmts.len();
                counts.warnings += warnings.len();
                warnings
            }
            Err(diags) => {
                status = status.max(1);
                diags
            }
        };
        report(&diags, &src, format, color);
    }
    if status == 0 && format == Format::Text {
        crate::out::println(&summary(&counts));
    }
    status
}

/// `teil check --ast-json`: prints the parsed AST of every file as one JSON line, in order,
/// without checking it: the input of `teil-check`, the checker extracted from the Coq proof
/// (proofs/teil_check.ml, README "The proof"). A file with syntax errors has no AST to give:
/// its errors are reported on standard error, its line is `{"syntax_errors":[codes]}`, and
/// the exit status is 1.
///
/// The form: `{"decls":[{"qualifier":null|"input"|"output"|"inout","name":"A",
/// "shape":[2,3]}],"stmts":[{"target":"A","value":E}]}`, where an expression `E` is an object
/// whose `kind` names its node ([`expr_json`]).
pub fn ast_json(files: &[String], color: Color) -> u8 {
    let mut status = 0;
    for path in files {
        let src = match read_source(path) {
            Ok(s) => s,
            Err(e) => {
                status = status.max(e.report(Format::Text, color));
                continue;
            }
        };
        let parsed = teil::parse(&src.text);
        let errors: Vec<_> = (parsed.diagnostics.iter())
            .filter(|d| d.is_error())
            .cloned()
            .collect();
        let line = if errors.is_empty() {
            program_json(&parsed.program)
        } else {
            report(&errors, &src, Format::Text, color);
            status = status.max(1);
            json!({ "syntax_errors": errors.iter().map(|d| d.code.as_str()).collect::<Vec<_>>() })
        };
        crate::out::println(&line.to_string());
    }
    status
}

/// A program in the form of [`ast_json`].
pub fn program_json(p: &Program) -> Value {
    let decl = |d: &Decl| {
        let qualifier = d.qualifier.map(Qualifier::keyword);
        json!({ "qualifier": qualifier, "name": d.name.name, "shape": d.shape() })
    };
    let stmts = (p.stmts.iter())
        .map(|s| json!({ "target": s.target.name, "value": expr_json(&s.value) }))
        .collect::<Vec<_>>();
    json!({ "decls": p.decls.iter().map(decl).collect::<Vec<_>>(), "stmts": stmts })
}

/// One expression node: `{"kind":"var","name":..}`, `{"kind":"lit","value":"2.5"}`,
/// `{"kind":"paren","e":..}`, `{"kind":"binary","op":"add"|"sub"|"mul"|"div","l":..,"r":..}`,
/// `{"kind":"prod","l":..,"r":..}`, `{"kind":"reduce","op":"red+"|..,"i":2,"e":..}`,
/// `{"kind":"transp"|"diag"|"contr","i":..,"j":..,"e":..}`, `{"kind":"expa","i":..,"n":..,
/// "e":..}`, `{"kind":"proj","i":..,"m":..,"e":..}`; `{"kind":"error"}` stands for what did
/// not parse. Positions are 1-based, as written.
fn expr_json(e: &Expr) -> Value {
    let pair = |kind: &str, a: &str, x: u64, b: &str, y: u64, e: &Expr| json!({ "kind": kind, a: x, b: y, "e": expr_json(e) });
    match &e.kind {
        ExprKind::Var(v) => json!({ "kind": "var", "name": v.name }),
        ExprKind::Lit(c) => json!({ "kind": "lit", "value": c.to_string() }),
        ExprKind::Paren(a) => json!({ "kind": "paren", "e": expr_json(a) }),
        ExprKind::Binary(op, a, b) => {
            let op = match op {
                BinOp::Add => "add",
                BinOp::Sub => "sub",
                BinOp::Mul => "mul",
                BinOp::Div => "div",
            };
            json!({ "kind": "binary", "op": op, "l": expr_json(a), "r": expr_json(b) })
        }
        ExprKind::Prod(a, b) => json!({ "kind": "prod", "l": expr_json(a), "r": expr_json(b) }),
        ExprKind::Reduce(op, i, a) => {
            let op: &str = RedOp::keyword(*op);
            json!({ "kind": "reduce", "op": op, "i": i.value, "e": expr_json(a) })
        }
        ExprKind::Transp(i, j, a) => pair("transp", "i", i.value, "j", j.value, a),
        ExprKind::Diag(i, j, a) => pair("diag", "i", i.value, "j", j.value, a),
        ExprKind::Contr(i, j, a) => pair("contr", "i", i.value, "j", j.value, a),
        ExprKind::Expa(i, n, a) => pair("expa", "i", i.value, "n", n.value, a),
        ExprKind::Proj(i, m, a) => pair("proj", "i", i.value, "m", m.value, a),
        ExprKind::Error => json!({ "kind": "error" }),
    }
}

/// What a successful `teil check` checked, over all its files.
#[derive(Default)]
struct Counts {
    files: usize,
    decls: usize,
    stmts: usize,
    warnings: usize,
}

/// `checked 2 files: 5 declarations, 2 statements, no errors` (`, 1 warning` when there are
/// warnings: they were printed above it).
fn summary(c: &Counts) -> String {
    let n = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    let mut line = format!(
        "checked {}: {}, {}, no errors",
        n(c.files, "file", "files"),
        n(c.decls, "declaration", "declarations"),
        n(c.stmts, "statement", "statements"),
    );
    if c.warnings > 0 {
        line.push_str(&format!(", {}", n(c.warnings, "warning", "warnings")));
    }
    line
}

pub fn fmt(path: &str, syntax: FmtSyntax, core: bool, color: Color) -> u8 {
    let src = match read_source(path) {
        Ok(s) => s,
        Err(e) => return e.report(Format::Text, color),
    };
    let style = match syntax {
        FmtSyntax::Prefix => fmt::Style::Prefix,
        FmtSyntax::Infix => fmt::Style::Infix,
    };
    let text = if core {
        let checked = match teil::compile(&src.text) {
            Ok((checked, _)) => checked,
            Err(diags) => {
                report(&diags, &src, Format::Text, color);
                return 1;
            }
        };
        let program = match teil::core::desugar(&checked) {
            Ok(p) => p,
            Err(d) => {
                report(&[d], &src, Format::Text, color);
                return 1;
            }
        };
        // Desugaring keeps each statement's span, so the comments find their items.
        fmt::read_back(
            &program,
            style,
            "the printed Core-TeIL form of this statement",
        )
        .map(|()| fmt::with_comments(&program, &src.text, style))
        .map_err(|d| vec![d])
    } else {
        fmt::source(&src.text, style)
    };
    match text {
        Ok(text) => {
            crate::out::print(&text);
            0
        }
        Err(diags) => {
            report(&diags, &src, Format::Text, color);
            1
        }
    }
}

pub fn explain(code: &str) -> u8 {
    match Code::parse(code) {
        Some(c) => {
            crate::out::println(&c.explain());
            0
        }
        None => {
            fail(&format!(
                "unknown diagnostic code `{code}`; known codes: {}",
                Code::ALL
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            2
        }
    }
}
