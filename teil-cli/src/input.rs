//! Reading program files and reporting diagnostics, shared by every subcommand.

use crate::{Color, Format};
use std::io::{IsTerminal, Read};
use teil::{render, Diagnostic};

/// A program's text with the name to show in diagnostics.
pub struct Source {
    pub name: String,
    pub text: String,
}

/// Why a program file could not be read as text.
pub enum ReadError {
    /// An I/O problem (exit status 2).
    Io(String),
    /// The file is not UTF-8: an ill-formed program (exit status 1), reported as E0002 at the
    /// first invalid byte, shown against the file's text with invalid bytes replaced.
    NotUtf8(Source, Box<Diagnostic>),
}

impl ReadError {
    /// Prints the error (the diagnostic in `format`) and returns the exit status.
    pub fn report(&self, format: Format, color: Color) -> u8 {
        match self {
            ReadError::Io(msg) => {
                fail(msg);
                2
            }
            ReadError::NotUtf8(src, diag) => {
                report(std::slice::from_ref(diag), src, format, color);
                1
            }
        }
    }
}

/// Reads `path`, or standard input for `-`, as UTF-8 text (spec/grammar.md, "Encoding").
pub fn read_source(path: &str) -> Result<Source, ReadError> {
    let (name, bytes) = if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| ReadError::Io(format!("cannot read standard input: {e}")))?;
        ("<stdin>".to_string(), buf)
    } else {
        // A FIFO, directory or device is refused without blocking, as for every file `teil`
        // reads (`teil_io::files::read_regular`, also behind Python's `Program.from_file`).
        let bytes = teil_io::files::read_regular(std::path::Path::new(path))
            .map_err(|e| ReadError::Io(format!("cannot read `{path}`: {e}")))?;
        (path.to_string(), bytes)
    };
    match teil::lexer::decode(bytes) {
        Ok(text) => Ok(Source { name, text }),
        Err(e) => Err(ReadError::NotUtf8(
            Source {
                name,
                text: e.lossy,
            },
            Box::new(e.diagnostic),
        )),
    }
}

pub fn use_color(color: Color) -> bool {
    match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

/// Prints one file's diagnostics: text reports on stderr (at most
/// [`render::MAX_TEXT_DIAGNOSTICS`], then a line counting the rest), or JSON lines on stdout
/// (all of them).
pub fn report(diags: &[Diagnostic], src: &Source, format: Format, color: Color) {
    if diags.is_empty() {
        return;
    }
    let renderer = render::Renderer::new(&src.name, &src.text);
    match format {
        Format::Text => {
            // A closed pipe or a full disk leaves nowhere to report the failure.
            let color = use_color(color);
            let _ = renderer.write_text(&mut std::io::stderr().lock(), diags, color);
        }
        Format::Json => crate::out::write_with(|mut out| renderer.write_json(&mut out, diags)),
    }
}

/// Prints an operational error (I/O, usage) on stderr.
pub fn fail(msg: &str) {
    crate::out::eprint(&format!("error: {msg}\n"));
}

/// Prints an operational error with its diagnostic code, if it has one, as every coded
/// operational error is printed (`error: [E0801] ...`, [`teil::CodedError::coded`];
/// `teil explain E0801` describes it).
pub fn fail_coded(code: Option<teil::Code>, msg: &str) {
    fail(&teil::diagnostic::with_code(code, &msg));
}
