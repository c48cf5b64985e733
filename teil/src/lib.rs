//! TeIL, the type-safe imperative tensor intermediate language: syntax, checker, diagnostics.
//!
//! The pipeline is in the types: [`parse()`] turns text into a [`Program`] and diagnostics
//! (it never fails); [`check()`] turns a program into a [`CheckedProgram`], the only way to get
//! one, recording the shape of every expression node; evaluators and code generators take a
//! `CheckedProgram` and read those shapes instead of re-deriving them. [`core`] rewrites a
//! checked program into Core-TeIL; [`fmt`] prints canonical text; [`render`] turns diagnostics
//! into ariadne reports or JSON lines; [`ide`] answers editors' questions (hover, definitions,
//! quick fixes) for `teil lsp`.

// Diagnostics travel in `Result::Err` on the cold path only (a rejected item or statement);
// boxing them would add an allocation and a layer of indirection to every builder call for no
// measurable gain.
#![allow(clippy::result_large_err)]

pub mod ast;
pub mod check;
pub mod core;
pub mod diagnostic;
pub mod fmt;
pub mod guard;
pub mod ide;
pub mod interface;
pub mod lexer;
pub mod limits;
pub mod ops;
pub mod parse;
pub mod render;

pub use ast::{Program, Span};
pub use check::{check, CheckedProgram, Shape};
pub use diagnostic::{Code, Diagnostic, Severity};
pub use parse::parse;

/// Parses and checks `src` in one go. `Ok` carries the checked program and any warnings; `Err`
/// carries every diagnostic, at least one of them an error.
pub fn compile(src: &str) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    let parsed = parse(src);
    let mut diags = parsed.diagnostics;
    let syntax_ok = !diags.iter().any(Diagnostic::is_error);
    match check(parsed.program) {
        Ok((checked, warnings)) if syntax_ok => {
            diags.extend(warnings);
            Ok((checked, diags))
        }
        Ok((_, warnings)) => {
            diags.extend(warnings);
            sort(&mut diags);
            Err(diags)
        }
        Err(errs) => {
            diags.extend(errs);
            sort(&mut diags);
            Err(diags)
        }
    }
}

fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by_key(|d| (d.primary.span.start, d.primary.span.end, d.code));
}
