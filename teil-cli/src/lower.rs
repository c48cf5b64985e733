//! `teil lower FILE.tin [-o FILE]`: prints the TeIL program an index-notation file lowers to.
//!
//! The input is read as index notation whatever its name (`-` reads standard input); the
//! program is the one `teil check`, `teil run` and `teil emit-c` use for that file.
//!
//! `teil lower --ops FILE` prints instead the ops/1 form (`teil::ops`, spec/fuzzing.md) of a
//! `.teil` or `.tin` file (chosen by the extension, as for every other subcommand).

use crate::einsum::{style, write_output};
use crate::input::{fail, read_source, report};
use crate::{Color, FmtSyntax, Format};
use teil::fmt;

pub fn lower(
    path: &str,
    output: Option<&str>,
    syntax: FmtSyntax,
    ops: bool,
    format: Format,
    color: Color,
) -> u8 {
    let src = match read_source(path) {
        Ok(s) => s,
        Err(e) => return e.report(format, color),
    };
    let loaded = if ops {
        teil::guard::load(&src.name, &src.text)
    } else {
        teil::guard::index_notation(&src.text)
    };
    let (checked, warnings) = match loaded {
        Ok(ok) => ok,
        Err(diags) => {
            report(&diags, &src, format, color);
            return 1;
        }
    };
    report(&warnings, &src, format, color);
    let text = if ops {
        teil::ops::lower(&checked).to_json()
    } else {
        fmt::program(checked.program(), style(syntax))
    };
    match write_output(output, &text) {
        Ok(()) => 0,
        Err(e) => {
            fail(&e);
            2
        }
    }
}
