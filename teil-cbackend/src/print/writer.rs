//! The C writer: the one owner of indentation and braces in the printer.
//!
//! A [`Writer`] holds the text written so far and the current depth. Statements are written
//! as lines at the current depth ([`Writer::line`]); preprocessor lines (`#if`, `#pragma`) at
//! the start of the line wherever they stand ([`Writer::directive`]). A block is opened with
//! its header and closed by construction: [`Writer::block`] writes `header {`, the body one
//! level deeper, then `}`, so no printer code counts braces or spaces. [`Writer::chain`] writes
//! `if (..) { .. } else if (..) { .. } else { .. }`, and [`Writer::nested`] a brace-less body
//! one level deeper (`for (..)` over one statement). One level is four spaces.

use std::fmt::Write as _;

/// Text being written, and the depth of the next line (see the module documentation).
#[derive(Default)]
pub(crate) struct Writer {
    out: String,
    depth: usize,
}

/// One arm of [`Writer::chain`]: its header (`if (..)`, `else if (..)`, `else`) and body.
pub(crate) type Arm<'a> = (&'a str, &'a mut dyn FnMut(&mut Writer));

/// One level of indentation.
const INDENT: &str = "    ";

impl Writer {
    /// An empty writer at depth 0.
    pub(crate) fn new() -> Writer {
        Writer::default()
    }

    /// The text written.
    pub(crate) fn finish(self) -> String {
        self.out
    }

    /// The line `s` at the current depth.
    pub(crate) fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.out.push_str(INDENT);
        }
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    /// The line `s` (a preprocessor line) at the start of the line, whatever the depth.
    pub(crate) fn directive(&mut self, s: impl AsRef<str>) {
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    /// An empty line.
    pub(crate) fn blank(&mut self) {
        self.out.push('\n');
    }

    /// Fixed text, written as it is (a constant of the printer: its own lines, at depth 0).
    pub(crate) fn text(&mut self, s: impl AsRef<str>) {
        self.out.push_str(s.as_ref());
    }

    /// `header {`, then `body` one level deeper, then `}`; a block of its own (`{`) where
    /// `header` is empty.
    pub(crate) fn block(&mut self, header: impl AsRef<str>, body: impl FnOnce(&mut Writer)) {
        self.block_noted(header, "", body);
    }

    /// [`Writer::block`] with a comment `note` after the opening brace (`for (..) { /* .. */`).
    pub(crate) fn block_noted(
        &mut self,
        header: impl AsRef<str>,
        note: impl AsRef<str>,
        body: impl FnOnce(&mut Writer),
    ) {
        let mut open = header.as_ref().to_string();
        if !open.is_empty() {
            open.push(' ');
        }
        open.push('{');
        if !note.as_ref().is_empty() {
            let _ = write!(open, " {}", note.as_ref());
        }
        self.line(open);
        self.depth += 1;
        body(self);
        self.depth -= 1;
        self.line("}");
    }

    /// `header`, then `body` one level deeper, without braces (the body of a `for` or `if`
    /// that is one statement).
    pub(crate) fn nested(&mut self, header: impl AsRef<str>, body: impl FnOnce(&mut Writer)) {
        self.line(header);
        self.depth += 1;
        body(self);
        self.depth -= 1;
    }

    /// The blocks of `arms` one after the other, each closing brace on the line of the next
    /// header: `if (a) {`, body, `} else if (b) {`, body, `} else {`, body, `}`.
    pub(crate) fn chain(&mut self, arms: &mut [Arm<'_>]) {
        for (i, (header, body)) in arms.iter_mut().enumerate() {
            if i == 0 {
                self.line(format!("{header} {{"));
            } else {
                self.line(format!("}} {header} {{"));
            }
            self.depth += 1;
            body(self);
            self.depth -= 1;
        }
        if !arms.is_empty() {
            self.line("}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Writer;

    #[test]
    fn blocks_close_themselves_at_their_depth() {
        let mut w = Writer::new();
        w.line("void f(void)");
        w.block("", |w| {
            w.block_noted("for (i = 0; i < 4; i++)", "/* note */", |w| {
                w.directive("#pragma omp simd");
                w.nested("for (j = 0; j < 4; j++)", |w| w.line("x += 1;"));
                w.chain(&mut [
                    ("if (a)", &mut |w: &mut Writer| w.line("b;")),
                    ("else", &mut |w: &mut Writer| w.line("c;")),
                ]);
            });
        });
        assert_eq!(
            w.finish(),
            "void f(void)\n{\n    for (i = 0; i < 4; i++) { /* note */\n#pragma omp simd\n        \
             for (j = 0; j < 4; j++)\n            x += 1;\n        if (a) {\n            b;\n        \
             } else {\n            c;\n        }\n    }\n}\n"
        );
    }
}
