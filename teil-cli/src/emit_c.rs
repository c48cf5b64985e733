//! `teil emit-c FILE [--pad M] [--name NAME] [-o out.c]`: prints the C99 translation unit the
//! padding-aware backend generates for a program (spec/abi.md), on standard output or
//! atomically into a file.
//!
//! Exit codes as for every subcommand: 0 success, 1 the program was rejected, 2 usage or I/O
//! problems (including a `--pad` or `--name` the backend cannot use).

use crate::einsum::write_output;
use crate::input::{fail, read_source, report};
use crate::{Color, Format};
use teil_cbackend::Options;

pub fn emit_c(path: &str, pad: u64, name: &str, output: Option<&str>, color: Color) -> u8 {
    let src = match read_source(path) {
        Ok(s) => s,
        Err(e) => {
            fail(&e);
            return 2;
        }
    };
    let (checked, warnings) = match teil::guard::load(&src.name, &src.text) {
        Ok(ok) => ok,
        Err(diags) => {
            report(&diags, &src, Format::Text, color);
            return 1;
        }
    };
    report(&warnings, &src, Format::Text, color);
    let opts = Options {
        pad,
        name: name.to_string(),
        ..Options::default()
    };
    let c = match teil_cbackend::emit_c(&checked, &opts) {
        Ok(c) => c,
        Err(e) => {
            fail(&e.to_string());
            return 2;
        }
    };
    match write_output(output, &c) {
        Ok(()) => 0,
        Err(e) => {
            fail(&e);
            2
        }
    }
}
