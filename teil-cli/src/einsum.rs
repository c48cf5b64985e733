//! `teil einsum EQUATION --shapes SHAPES [-o FILE]`: an einsum equation lowered to TeIL.
//!
//! The program (inputs `in0`, `in1`, ..., output `out`) goes to standard output, or atomically
//! to `-o FILE`. Diagnostics point into the equation (shown as `<equation>`) or into the shape
//! list (`<shapes>`); the exit code is 1 when either is rejected. An operand with an extent
//! of 0 has no program: the output is a comment giving the result's shape (spec/frontends.md,
//! "Extents of 0").

use crate::input::{fail, report, Source};
use crate::{Color, FmtSyntax, Format};

use std::path::Path;
use teil::ast::ShapeDisplay;
use teil::fmt;
use teil::guard::EinsumOutcome;

pub fn einsum(
    equation: &str,
    shapes: &str,
    output: Option<&str>,
    syntax: FmtSyntax,
    format: Format,
    color: Color,
) -> u8 {
    let shapes_src = Source {
        name: "<shapes>".to_string(),
        text: shapes.to_string(),
    };
    let shapes = match teil::guard::parse_shapes(shapes) {
        Ok(s) => s,
        Err(d) => {
            report(&[d], &shapes_src, format, color);
            return 1;
        }
    };
    let eq_src = Source {
        name: "<equation>".to_string(),
        text: equation.to_string(),
    };
    let body = match teil::guard::einsum_outcome(equation, &shapes) {
        Ok(EinsumOutcome::Program(checked, warnings)) => {
            report(&warnings, &eq_src, format, color);
            fmt::program(checked.program(), style(syntax))
        }
        // spec/frontends.md, "Extents of 0": the result's shape, and no program.
        Ok(EinsumOutcome::Empty { shape, operand }) => format!(
            "// no TeIL program: operand {operand} has an extent of 0 and TeIL tensors have no \
             empty dimensions\n// the result has shape {} and holds only zeros\n",
            ShapeDisplay(&shape)
        ),
        Err(diags) => {
            report(&diags, &eq_src, format, color);
            return 1;
        }
    };
    let shown: Vec<String> = shapes.iter().map(|s| ShapeDisplay(s).to_string()).collect();
    let text = format!(
        "// einsum \"{}\" with shapes [{}]\n{body}",
        teil::guard::normalize_equation(equation),
        shown.join(", "),
    );
    match write_output(output, &text) {
        Ok(()) => 0,
        Err(e) => {
            fail(&e);
            2
        }
    }
}

pub(crate) fn style(syntax: FmtSyntax) -> fmt::Style {
    match syntax {
        FmtSyntax::Prefix => fmt::Style::Prefix,
        FmtSyntax::Infix => fmt::Style::Infix,
    }
}

/// Writes `text` to standard output, or to `path` atomically
/// (`teil_io::files::write_atomically`: a reader sees the old file or the new one, and a
/// failure leaves it as it was).
pub(crate) fn write_output(path: Option<&str>, text: &str) -> Result<(), String> {
    match path {
        Some(path) => teil_io::files::write_atomically(Path::new(path), text.as_bytes())
            .map_err(|e| e.to_string()),
        None => {
            // A closed pipe or a full disk is handled where all standard output is (`out`).
            crate::out::print(text);
            Ok(())
        }
    }
}
