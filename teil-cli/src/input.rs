//! Reading program files and reporting diagnostics, shared by every subcommand.

use crate::{Color, Format};
use std::io::{IsTerminal, Read, Write};
use teil::{render, Diagnostic};

/// A program's text with the name to show in diagnostics.
pub struct Source {
    pub name: String,
    pub text: String,
}

/// Reads `path`, or standard input for `-`. Errors are printed; the caller exits with 2.
pub fn read_source(path: &str) -> Result<Source, String> {
    let (name, bytes) = if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        ("<stdin>".to_string(), buf)
    } else {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
        (path.to_string(), bytes)
    };
    // A file that is not UTF-8 is an ill-formed program, not an I/O problem: each invalid
    // sequence becomes U+FFFD, which the lexer reports as an invalid character (E0002), so the
    // exit code is 1 and the report points at the bad bytes.
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Source { name, text })
}

pub fn use_color(color: Color) -> bool {
    match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

/// Prints diagnostics: text reports on stderr, or JSON lines on stdout.
pub fn report(diags: &[Diagnostic], src: &Source, format: Format, color: Color) {
    match format {
        Format::Text => {
            let color = use_color(color);
            let mut err = std::io::stderr().lock();
            for d in diags {
                let _ =
                    err.write_all(render::render_text(d, &src.name, &src.text, color).as_bytes());
            }
        }
        Format::Json => {
            let mut out = std::io::stdout().lock();
            for d in diags {
                let _ = writeln!(out, "{}", render::render_json(d, &src.name, &src.text));
            }
        }
    }
}

/// Prints an operational error (I/O, usage) on stderr.
pub fn fail(msg: &str) {
    eprintln!("error: {msg}");
}

/// Prints an operational error with its diagnostic code, if it has one (`error[E0801]: ...`;
/// `teil explain E0801` describes it).
pub fn fail_coded(code: Option<teil::Code>, msg: &str) {
    match code {
        Some(c) => eprintln!("error[{}]: {msg}", c.as_str()),
        None => fail(msg),
    }
}
