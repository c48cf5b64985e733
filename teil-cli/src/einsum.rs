//! `teil einsum EQUATION --shapes SHAPES [-o FILE]`: an einsum equation lowered to TeIL.
//!
//! The program (inputs `in0`, `in1`, ..., output `out`) goes to standard output, or atomically
//! to `-o FILE`. Diagnostics point into the equation (shown as `<equation>`) or into the shape
//! list (`<shapes>`); the exit code is 1 when either is rejected.

use crate::input::{fail, report, Source};
use crate::{Color, FmtSyntax, Format};
use std::io::Write;
use std::path::Path;
use teil::fmt;

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
    let (checked, warnings) = match teil::guard::einsum(equation, &shapes) {
        Ok(ok) => ok,
        Err(diags) => {
            report(&diags, &eq_src, format, color);
            return 1;
        }
    };
    report(&warnings, &eq_src, format, color);
    let shown: Vec<String> = shapes
        .iter()
        .map(|s| teil::ast::ShapeDisplay(s).to_string())
        .collect();
    let text = format!(
        "// einsum \"{}\" with shapes [{}]\n{}",
        teil::guard::normalize_equation(equation),
        shown.join(", "),
        fmt::program(checked.program(), style(syntax))
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

/// Writes `text` to standard output, or to `path` atomically: a temporary file in the same
/// directory, renamed over the target once complete.
pub(crate) fn write_output(path: Option<&str>, text: &str) -> Result<(), String> {
    let Some(path) = path else {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write to standard output: {e}"));
    };
    let target = Path::new(path);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = target
        .file_name()
        .ok_or_else(|| format!("`{path}` does not name a file"))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, target)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write `{path}`: {e}")
    })
}
