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
                fail(&e);
                status = 2;
                continue;
            }
        };
        let diags = match teil::compile(&src.text) {
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
        Err(e) => {
            fail(&e);
            return 2;
        }
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
    print!("{}", fmt::program(&program, style));
    0
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
                Code::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            ));
            2
        }
    }
}
