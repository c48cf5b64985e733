//! TeIL, the type-safe imperative tensor intermediate language: syntax, checker, diagnostics.
//!
//! The pipeline is in the types: [`parse()`] turns text into a [`Program`] and diagnostics
//! (it never fails); [`check()`] turns a program into a [`CheckedProgram`], the only way to get
//! one, recording the shape of every expression node; evaluators and code generators take a
//! `CheckedProgram` and read those shapes instead of re-deriving them. [`core`] rewrites a
//! checked program into Core-TeIL; [`fmt`] prints canonical text; [`render`] turns diagnostics
//! into ariadne reports or JSON lines; [`ide`] answers editors' questions (hover, definitions,
//! quick fixes) for `teil lsp`.
//!
//! # Checking a program
//!
//! [`compile()`] parses and checks in one go. An ill-typed program yields every diagnostic, each
//! with a stable code, the violated rule and a span into the text:
//!
//! ```
//! let src = "input var A : [3 4]\ninput var B : [4 5]\noutput var C : [3 5]\nC = (A # B) .[2 3]";
//! let (program, warnings) = teil::compile(src).expect("well typed");
//! assert!(warnings.is_empty());
//! assert_eq!(program.var_shape("C"), Some(&[3, 5][..]));
//!
//! // Contracting dimension 1 of `A # B` (extent 3) with dimension 4 (extent 5) is rejected.
//! let bad = "input var A : [3 4]\ninput var B : [4 5]\noutput var C : [4 4]\nC = (A # B) .[1 4]";
//! let diags = teil::compile(bad).unwrap_err();
//! assert_eq!(diags[0].code.as_str(), "E0305");
//! assert_eq!(diags[0].rule, Some("T-Contr"));
//! // The rendered report, as `teil check --color never` prints it:
//! let report = teil::render::render_text(&diags[0], "bad.teil", bad, false);
//! assert!(report.contains("E0305"));
//! ```
//!
//! # Guarding an einsum
//!
//! [`guard::einsum`] lowers a NumPy einsum equation over the operands' shapes to a checked
//! program, or explains, with diagnostics pointing into the equation, why the shapes do not fit:
//!
//! ```
//! let (program, _) = teil::guard::einsum("ij,jk->ik", &[[2, 3], [3, 4]]).expect("fits");
//! assert_eq!(program.var_shape("out"), Some(&[2, 4][..]));
//!
//! let diags = teil::guard::einsum("ij,jk->ik", &[[2, 3], [4, 4]]).unwrap_err();
//! assert_eq!(diags[0].code.as_str(), "E0404"); // index `j` bound to 3 and to 4
//! let span = diags[0].primary.span.clone();
//! assert_eq!(&"ij,jk->ik"[span], "j");
//! ```
//!
//! Running a checked program is `teil_interp::run_fast` (or `run_oracle`); compiling it to C is
//! `teil_cbackend::emit_c`, or `teil_cbackend::shared::SharedKernel` to call it in-process.

// Diagnostics travel in `Result::Err` on the cold path only (a rejected item or statement);
// boxing them would add an allocation and a layer of indirection to every builder call for no
// measurable gain.
#![allow(clippy::result_large_err)]

pub mod ast;
pub mod ast_json;
pub mod check;
pub mod check_error;
pub mod core;
pub mod diagnostic;
pub mod fmt;
pub mod framing;
pub mod guard;
pub mod ide;
pub mod interface;
pub mod json;
pub mod lexer;
pub mod limits;
pub mod lines;
pub mod ops;
pub mod parse;
pub mod parse_error;
pub mod plan;
pub mod render;

pub use ast::{Program, Span};
pub use check::{check, CheckedProgram, Shape};
pub use diagnostic::{Code, CodedError, Diagnostic, Severity};
pub use parse::parse;

/// Parses and checks `src` in one go. `Ok` carries the checked program and any warnings; `Err`
/// carries every diagnostic, at least one of them an error.
///
/// While the text has a syntax error, the warnings of the initialisation analysis (W0001,
/// W0003) are not reported: the program lacks the items that did not parse, so they would be
/// consequences of the syntax error ([`check::check_incomplete`]). `teil check`, `teil lsp`
/// and the playground all report through here.
pub fn compile(src: &str) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    let parsed = parse(src);
    if parsed.diagnostics.iter().any(Diagnostic::is_error) {
        let incomplete = check::check_incomplete(parsed.program);
        return Err(merge(parsed.diagnostics, incomplete).unwrap_or_else(|diags| diags));
    }
    match check(parsed.program) {
        Ok((checked, warnings)) => match merge(parsed.diagnostics, warnings) {
            Ok(diags) => Ok((checked, diags)),
            Err(diags) => Err(diags),
        },
        Err(errs) => Err(merge(parsed.diagnostics, errs).unwrap_or_else(|diags| diags)),
    }
}

/// What [`compile()`] learns about `src`, kept whether or not it is well-typed, for editors
/// ([`ide`]): the checker's [`Partial`](check::Partial) view of the parsed program, and the
/// diagnostics exactly as `compile` reports them. One parse and one check, as `compile`.
pub(crate) fn compile_partial(src: &str) -> (check::Partial, Vec<Diagnostic>) {
    let parsed = parse(src);
    // As in `compile`: no initialisation analysis while the text has a syntax error.
    let complete = !parsed.diagnostics.iter().any(Diagnostic::is_error);
    let partial = check::check_with(parsed.program, complete);
    let diags = merge(parsed.diagnostics, partial.diagnostics.clone()).unwrap_or_else(|d| d);
    (partial, diags)
}

/// The diagnostics of a text from those of its parse and of its check: `Ok` (in that order)
/// when none is an error, `Err` sorted by position otherwise.
fn merge(
    mut diags: Vec<Diagnostic>,
    checked: Vec<Diagnostic>,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    diags.extend(checked);
    if diags.iter().any(Diagnostic::is_error) {
        sort(&mut diags);
        Err(diags)
    } else {
        Ok(diags)
    }
}

fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by_key(|d| (d.primary.span.start, d.primary.span.end, d.code));
}
