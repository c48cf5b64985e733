//! `teil lower FILE.tin [-o FILE]`: prints the TeIL program an index-notation file lowers to.
//!
//! The input is read as index notation whatever its name (`-` reads standard input); the
//! program is the one `teil check`, `teil run` and `teil emit-c` use for that file.

use crate::einsum::{style, write_output};
use crate::input::{fail, read_source, report};
use crate::{Color, FmtSyntax, Format};
use teil::fmt;

pub fn lower(
    path: &str,
    output: Option<&str>,
    syntax: FmtSyntax,
    format: Format,
    color: Color,
) -> u8 {
    let src = match read_source(path) {
        Ok(s) => s,
        Err(e) => return e.report(format, color),
    };
    let (checked, warnings) = match teil::guard::index_notation(&src.text) {
        Ok(ok) => ok,
        Err(diags) => {
            report(&diags, &src, format, color);
            return 1;
        }
    };
    report(&warnings, &src, format, color);
    match write_output(output, &fmt::program(checked.program(), style(syntax))) {
        Ok(()) => 0,
        Err(e) => {
            fail(&e);
            2
        }
    }
}
