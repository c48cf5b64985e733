//! `teil check`, `teil fmt` and `teil explain`.

use crate::input::{fail, read_source, report};
use crate::{Color, FmtSyntax, Format};
use serde_json::json;
use teil::{ast_json, fmt, Code};

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
/// (proofs/teil_check.ml, proofs/README.md). A file with syntax errors has no AST to give:
/// its errors are reported on standard error, its line is `{"syntax_errors":[codes]}`, and
/// the exit status is 1. The form is [`teil::ast_json`]'s.
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
            ast_json::program(&parsed.program)
        } else {
            report(&errors, &src, Format::Text, color);
            status = status.max(1);
            json!({ "syntax_errors": errors.iter().map(|d| d.code.as_str()).collect::<Vec<_>>() })
        };
        crate::out::println(&line.to_string());
    }
    status
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
