//! `teil check`, `teil fmt` and `teil explain`.

use crate::input::{fail, read_source, report};
use crate::{Color, FmtSyntax, Format};
use teil::{fmt, Code, Diagnostic};

pub fn check(files: &[String], format: Format, color: Color) -> u8 {
    let mut status = 0;
    for path in files {
        let src = match read_source(path) {
            Ok(s) => s,
            Err(e) => {
                status = status.max(e.report(format, color));
                continue;
            }
        };
        let diags = match teil::guard::load(&src.name, &src.text) {
            Ok((_, warnings)) => warnings,
            Err(diags) => {
                status = status.max(1);
                diags
            }
        };
        report(&diags, &src, format, color);
    }
    status
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
    let program = if core {
        let checked = match teil::compile(&src.text) {
            Ok((checked, _)) => checked,
            Err(diags) => {
                report(&diags, &src, Format::Text, color);
                return 1;
            }
        };
        match teil::core::desugar(&checked) {
            Ok(p) => p,
            Err(d) => {
                report(&[d], &src, Format::Text, color);
                return 1;
            }
        }
    } else {
        // Formatting needs a syntactically valid program, not a well-typed one.
        let parsed = teil::parse(&src.text);
        let errors: Vec<Diagnostic> = parsed
            .diagnostics
            .into_iter()
            .filter(Diagnostic::is_error)
            .collect();
        if !errors.is_empty() {
            report(&errors, &src, Format::Text, color);
            return 1;
        }
        parsed.program
    };
    let text = fmt::program(&program, style);
    // Printing can nest deeper than the source did (prefix syntax needs parentheses where infix
    // needs none, and Core-TeIL adds transpositions), so the output is parsed back before it
    // is printed: `teil fmt` never prints a program that `teil check` would reject as too deep.
    let reparsed = teil::parse(&text).diagnostics;
    if let Some(bad) = reparsed.iter().find(|d| d.is_error()) {
        let line = text[..bad.primary.span.start.min(text.len())]
            .matches('\n')
            .count();
        let diag = match line.checked_sub(program.decls.len()) {
            Some(k) if bad.code == Code::TooDeep && k < program.stmts.len() => Diagnostic::new(
                Code::TooDeep,
                format!(
                    "{} is nested too deeply to be read back",
                    what_printed(style, core)
                ),
                program.stmts[k].span.clone(),
                "this statement",
            )
            .with_help("split the statement into several statements over temporaries"),
            _ => bad.clone(),
        };
        report(&[diag], &src, Format::Text, color);
        return 1;
    }
    print!("{text}");
    0
}

fn what_printed(style: fmt::Style, core: bool) -> &'static str {
    match (core, style) {
        (true, _) => "the printed Core-TeIL form of this statement",
        (false, fmt::Style::Prefix) => "the prefix form of this statement",
        (false, fmt::Style::Infix) => "the infix form of this statement",
    }
}

pub fn explain(code: &str) -> u8 {
    match Code::parse(code) {
        Some(c) => {
            println!("{}: {}\n\n{}", c.as_str(), c.title(), c.explanation());
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
