//! The one place diagnostics become text: ariadne reports for people, JSON lines for tools.
//!
//! A [`Renderer`] prepares one source file once (its line index for ariadne and for line and
//! column numbers) and then renders any number of diagnostics against it, each in time
//! logarithmic in the file's size plus the length of the lines it shows, so that a file with N
//! diagnostics renders in O(file + N log file) rather than O(N * file). Text output of a file
//! stops after [`MAX_TEXT_DIAGNOSTICS`] reports with one line counting the rest
//! (spec/diagnostics.md, "How many diagnostics are shown"); JSON output lists every diagnostic.
//! A report on a line longer than `LONG_LINE` (1,024 bytes) shows a window of the line around
//! its labels, so that the text of a report never grows with the line (spec/limits.md,
//! "Diagnostics").
//!
//! Spans are byte offsets into the file as read. A leading byte-order mark (spec/grammar.md,
//! "Encoding") is not shown: reports and line/column numbers are those of the text after it,
//! while the JSON `start`/`end` offsets stay offsets into the file.

use crate::diagnostic::{Diagnostic, Severity};
use crate::lines::LineIndex;
use ariadne::{Color, Config, IndexType, Label, Report, ReportKind, Source};
use std::borrow::Cow;
use std::io::{self, Write};
use std::ops::Range;

/// Most diagnostics of one file rendered as text; the rest are counted in one closing line.
/// A person reads the first few; past this many, more reports only hide the summary and cost
/// time (a file of garbage has one diagnostic per stray character).
pub const MAX_TEXT_DIAGNOSTICS: usize = 100;

/// Most diagnostics of one file an editor is sent, by the language server and the playground
/// (spec/limits.md, "Diagnostics"); a closing note counts the rest ([`omitted`]). An editor
/// shows them all at once, and a megabyte of garbage has some 180,000 (680 MB of LSP messages).
pub const MAX_EDITOR_DIAGNOSTICS: usize = 1000;

/// One source file, indexed once, against which diagnostics are rendered.
pub struct Renderer<'s> {
    file: String,
    /// The text shown: the file without a leading byte-order mark.
    shown: &'s str,
    /// Bytes dropped from the front of the file (3 for a byte-order mark, else 0).
    shift: usize,
    lines: LineIndex,
    /// The shown text as ariadne is given it: [`for_ariadne`].
    source: Source<Cow<'s, str>>,
}

impl<'s> Renderer<'s> {
    /// Indexes `src`, the text diagnostics were found in, shown under the name `file`.
    pub fn new(file: &str, src: &'s str) -> Self {
        let shift = if src.starts_with(BOM) {
            BOM.len_utf8()
        } else {
            0
        };
        let shown = &src[shift..];
        Renderer {
            file: file.to_string(),
            shown,
            shift,
            lines: LineIndex::new(shown),
            source: Source::from(for_ariadne(shown)),
        }
    }

    /// Renders `diag` as an ariadne report. `color` is off for snapshots, pipes and files.
    /// Spans are byte offsets (`IndexType::Byte`), as everywhere in TeIL.
    pub fn text(&self, diag: &Diagnostic, color: bool) -> String {
        let kind = match diag.severity {
            Severity::Error => ReportKind::Error,
            Severity::Warning => ReportKind::Warning,
        };
        let primary_color = if diag.is_error() {
            Color::Red
        } else {
            Color::Yellow
        };
        // Labels are ordered by the line they end on, primary first within a line: ariadne
        // starts a new section (repeating the file header) whenever a label ends on an earlier
        // line than the one before it, which would split a report whose context precedes the
        // error.
        let mut labels: Vec<(Range<usize>, &str, Color)> = vec![(
            self.clamp(&diag.primary.span),
            &diag.primary.message,
            primary_color,
        )];
        labels.extend(
            diag.secondary
                .iter()
                .map(|l| (self.clamp(&l.span), l.message.as_str(), Color::Blue)),
        );
        let mut order: Vec<usize> = (0..labels.len()).collect();
        order.sort_by_key(|&k| {
            let span = &labels[k].0;
            (
                self.lines.line(span.end.saturating_sub(1).max(span.start)),
                k,
            )
        });
        // On a very long line, the report shows a window of the line around its labels.
        let crop = self.crop(labels.iter().map(|l| &l.0));
        let place = |span: &Range<usize>| match &crop {
            Some(c) => c.place(span),
            None => span.clone(),
        };
        let file = self.file.as_str();
        let mut report = Report::build(kind, (file, place(&labels[0].0)))
            .with_config(
                Config::new()
                    .with_index_type(IndexType::Byte)
                    .with_color(color),
            )
            .with_code(diag.code.as_str())
            .with_message(&diag.message);
        for (rank, &k) in order.iter().enumerate() {
            let (span, message, color) = &labels[k];
            report = report.with_label(
                Label::new((file, place(span)))
                    .with_message(message)
                    .with_color(*color)
                    .with_order(rank as i32),
            );
        }
        if let Some(rule) = diag.rule {
            // A warning does not violate its rule (T-Transp allows `transp i i`); it points at
            // it.
            let note = match diag.severity {
                Severity::Error => format!("violates rule {rule} (spec/typing.md)"),
                Severity::Warning => format!("see rule {rule} (spec/typing.md)"),
            };
            report = report.with_note(note);
        }
        for n in &diag.notes {
            report = report.with_note(n);
        }
        if let Some(h) = &diag.help {
            report = report.with_help(h);
        }
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = match &crop {
            Some(c) => report.finish().write((file, &c.source), &mut out),
            None => report.finish().write((file, &self.source), &mut out),
        };
        let text = String::from_utf8_lossy(&out).into_owned();
        match &crop {
            // Ariadne computes the header's column in the window; the file's column replaces it
            // (the header is the first place `FILE:LINE:COL` occurs: messages come before it
            // but never contain a position).
            Some(c) => {
                let primary = labels[0].0.start;
                let col = self.lines.chars_before(self.shown, primary)
                    - self.lines.chars_before(self.shown, c.line_start)
                    + 1;
                // The window's line starts after the `c.line` empty lines above it.
                let window_col = c.source.text()[c.line..c.place(&(primary..primary)).start]
                    .chars()
                    .count()
                    + 1;
                let line = c.line + 1;
                text.replacen(
                    &format!(" {file}:{line}:{window_col} "),
                    &format!(" {file}:{line}:{col} "),
                    1,
                )
            }
            None => text,
        }
    }

    /// A window of one long line holding every label of a report, or `None` when the report
    /// is shown against the whole source: its labels span several lines, or their line is at
    /// most [`LONG_LINE`] bytes, or the window would be the whole line. Without it, a report
    /// on a line of a megabyte prints the megabyte, and a file of garbage on one line prints it
    /// once per report.
    fn crop<'a>(&self, spans: impl Iterator<Item = &'a Range<usize>>) -> Option<Crop> {
        let mut line = None;
        let (mut lo, mut hi) = (usize::MAX, 0);
        for span in spans {
            for at in [span.start, span.end.saturating_sub(1).max(span.start)] {
                let (_, idx, _) = self.source.get_byte_line(at)?;
                if *line.get_or_insert(idx) != idx {
                    return None;
                }
            }
            lo = lo.min(span.start);
            hi = hi.max(span.end);
        }
        let idx = line?;
        let (l, _, col) = self.source.get_byte_line(lo)?;
        let start = lo - col;
        let text = self.source.get_line_text(l)?;
        let end = start + text.trim_end_matches(LINE_ENDS).len();
        if end - start <= LONG_LINE {
            return None;
        }
        let src = self.shown;
        let mut w0 = lo.saturating_sub(CONTEXT).max(start);
        while !src.is_char_boundary(w0) {
            w0 -= 1;
        }
        let mut w1 = hi.saturating_add(CONTEXT).min(end).max(w0);
        while !src.is_char_boundary(w1) {
            w1 += 1;
        }
        if w0 == start && w1 == end {
            return None;
        }
        let before = if w0 > start { ELLIPSIS } else { "" };
        let after = if w1 < end { ELLIPSIS } else { "" };
        // Empty lines stand for the lines above, so that ariadne numbers the window's line as
        // in the file (`Source::with_display_line_offset` moves the header's line number but
        // not the margin's). They cost a byte and an index entry per line above, for at most
        // `MAX_TEXT_DIAGNOSTICS` reports of a file.
        let above = "\n".repeat(idx);
        Some(Crop {
            line: idx,
            line_start: start,
            from: w0,
            shift: above.len() + before.len(),
            len: w1 - w0,
            source: Source::from(
                for_ariadne(&format!("{above}{before}{}{after}", &src[w0..w1])).into_owned(),
            ),
        })
    }

    /// One JSON object (no trailing newline) describing `diag`, for `--format json`. `start`
    /// and `end` are the span's byte offsets into the file; lines and columns are 1-based,
    /// columns counted in characters.
    pub fn json(&self, diag: &Diagnostic) -> String {
        use serde_json::json;
        let span = |s: &Range<usize>| {
            let (line, column) = self.line_col(s.start);
            let (end_line, end_column) = self.line_col(s.end);
            json!({
                "start": s.start, "end": s.end,
                "line": line, "column": column,
                "end_line": end_line, "end_column": end_column,
            })
        };
        let (line, column) = self.line_col(diag.primary.span.start);
        let labels: Vec<_> = diag
            .secondary
            .iter()
            .map(|l| json!({ "span": span(&l.span), "message": l.message }))
            .collect();
        json!({
            "code": diag.code.as_str(),
            "severity": diag.severity.as_str(),
            "message": diag.message,
            "rule": diag.rule,
            "file": self.file,
            "span": span(&diag.primary.span),
            "line": line,
            "column": column,
            "label": diag.primary.message,
            "labels": labels,
            "notes": diag.notes,
            "help": diag.help,
            "fixes": diag.fixes.iter().map(|f| json!({
                "title": f.title,
                "edits": f.edits.iter().map(|e| json!({
                    "span": span(&e.span), "replacement": e.replacement,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
        .to_string()
    }

    /// Writes the text reports of `diags` (one file's, in the order given): the first
    /// [`MAX_TEXT_DIAGNOSTICS`], then, if any are left, one line counting them.
    pub fn write_text(
        &self,
        out: &mut impl Write,
        diags: &[Diagnostic],
        color: bool,
    ) -> io::Result<()> {
        let (shown, rest) = diags.split_at(diags.len().min(MAX_TEXT_DIAGNOSTICS));
        for d in shown {
            out.write_all(self.text(d, color).as_bytes())?;
        }
        if let Some(line) = omitted_line(&self.file, rest) {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    /// Writes every diagnostic of `diags` as one JSON line. JSON output is not capped: tools
    /// get the complete list, whose size is linear in the file's.
    pub fn write_json(&self, out: &mut impl Write, diags: &[Diagnostic]) -> io::Result<()> {
        for d in diags {
            writeln!(out, "{}", self.json(d))?;
        }
        Ok(())
    }

    /// Moves a span of the file into the shown text, inside it and on character boundaries, so
    /// that a diagnostic built against one text can be shown against any other without
    /// panicking. The start rounds down and the end up to a character boundary, so a span over
    /// part of a character (an invalid byte shown as U+FFFD) covers that character.
    fn clamp(&self, s: &Range<usize>) -> Range<usize> {
        let src = self.shown;
        let inside = |i: usize| i.saturating_sub(self.shift).min(src.len());
        let mut a = inside(s.start);
        while !src.is_char_boundary(a) {
            a -= 1;
        }
        let mut b = inside(s.end).max(a);
        while !src.is_char_boundary(b) {
            b += 1;
        }
        a..b
    }

    /// 1-based line and column (in characters) of a byte offset of the file. Building a
    /// `Renderer` reads the whole text: for many offsets of one text, build it once.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        self.lines
            .line_col(self.shown, self.clamp(&(offset..offset)).start)
    }
}

/// A line longer than this many bytes is shown as a window around the labels of a report.
const LONG_LINE: usize = 1024;

/// Bytes of a long line shown on each side of the labels.
const CONTEXT: usize = 60;

/// Marks where a window cuts a long line.
const ELLIPSIS: &str = "...";

/// The line ends of TeIL and LSP ([`crate::lines`]); ariadne is given no others.
const LINE_ENDS: &[char] = &['\r', '\n'];

/// The text as ariadne is given it: ariadne also ends lines at `\x0b`, `\x0c`, U+0085, U+2028
/// and U+2029, which are characters on a line in TeIL ([`crate::lines`]). Each is replaced by a
/// visible character of the same length in bytes (one character, as before), so that byte
/// offsets, character columns and line numbers in a report are the ones of [`LineIndex`].
fn for_ariadne(text: &str) -> Cow<'_, str> {
    const OTHER_ENDS: &[char] = &['\x0B', '\x0C', '\u{85}', '\u{2028}', '\u{2029}'];
    if !text.contains(OTHER_ENDS) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| match c {
                // `\x0b`, `\x0c`: one byte; a space.
                '\x0B' | '\x0C' => ' ',
                // U+0085: two bytes; a no-break space.
                '\u{85}' => '\u{A0}',
                // U+2028, U+2029: three bytes; the symbol for a newline (U+2424).
                '\u{2028}' | '\u{2029}' => '\u{2424}',
                c => c,
            })
            .collect(),
    )
}

/// A window of one long line: the text ariadne is given instead of the file.
struct Crop {
    /// 0-based line (in ariadne's numbering) the window is cut from.
    line: usize,
    /// Byte offset in the shown text where that line starts.
    line_start: usize,
    /// Byte offset in the shown text where the window starts, and its length.
    from: usize,
    len: usize,
    /// Bytes of the ellipsis before the window.
    shift: usize,
    source: Source<String>,
}

impl Crop {
    /// A span of the shown text as a span of the window.
    fn place(&self, span: &Range<usize>) -> Range<usize> {
        let at = |i: usize| i.saturating_sub(self.from).min(self.len) + self.shift;
        at(span.start)..at(span.end)
    }
}

/// The byte-order mark: skipped at the start of a file (spec/grammar.md, "Encoding").
const BOM: char = '\u{FEFF}';

/// The closing line of a file's text output when `rest`, the diagnostics past the cap, is not
/// empty: `NAME: and 1,234 more errors not shown (...)`.
fn omitted_line(file: &str, rest: &[Diagnostic]) -> Option<String> {
    let what = omitted(rest)?;
    Some(format!(
        "{file}: and {what} not shown (text output shows the first {MAX_TEXT_DIAGNOSTICS} \
         diagnostics of a file; JSON output lists all)"
    ))
}

/// How many diagnostics `rest` holds, by severity (`7 more errors and 1 more warning`); `None`
/// when it is empty. The count that closes a capped list of diagnostics, wherever it is capped.
pub fn omitted(rest: &[Diagnostic]) -> Option<String> {
    if rest.is_empty() {
        return None;
    }
    let errors = rest.iter().filter(|d| d.is_error()).count();
    let warnings = rest.len() - errors;
    let count = |n: usize, what: &str| format!("{n} more {what}{}", if n == 1 { "" } else { "s" });
    Some(match (errors, warnings) {
        (e, 0) => count(e, "error"),
        (0, w) => count(w, "warning"),
        (e, w) => format!("{} and {}", count(e, "error"), count(w, "warning")),
    })
}

/// Renders one diagnostic against `src`. Indexes the whole source: to render many diagnostics
/// of one file, build a [`Renderer`] once.
pub fn render_text(diag: &Diagnostic, file: &str, src: &str, color: bool) -> String {
    Renderer::new(file, src).text(diag, color)
}

/// One JSON object for one diagnostic; see [`Renderer::json`].
pub fn render_json(diag: &Diagnostic, file: &str, src: &str) -> String {
    Renderer::new(file, src).json(diag)
}

/// 1-based line and column (in characters) of a byte offset of `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    Renderer::new("", src).line_col(offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Code;

    #[test]
    fn line_col_counts_characters_across_blocks() {
        // Multi-byte characters straddling the index's block boundaries.
        let src = format!("{}\n{}x", "é".repeat(300), "ü".repeat(200));
        let x = src.len() - 1;
        assert_eq!(line_col(&src, x), (2, 201));
        assert_eq!(line_col(&src, 0), (1, 1));
        assert_eq!(line_col(&src, 601), (2, 1));
        assert_eq!(line_col(&src, src.len() + 10), (2, 202));
    }

    #[test]
    fn a_byte_order_mark_is_not_shown() {
        let src = "\u{FEFF}alloc A : [2]\n$";
        let d = Diagnostic::new(Code::InvalidChar, "invalid character '$'", 17..18, "here");
        let json: serde_json::Value = serde_json::from_str(&render_json(&d, "f", src)).unwrap();
        assert_eq!(json["span"]["start"], 17);
        assert_eq!(
            (json["line"].as_u64(), json["column"].as_u64()),
            (Some(2), Some(1))
        );
        let text = render_text(&d, "f", src, false);
        assert!(text.contains("f:2:1"), "{text}");
        assert!(!text.contains('\u{FEFF}'), "{text}");
    }

    #[test]
    fn a_report_on_a_long_line_shows_a_window_of_it() {
        let src = format!(
            "alloc A : [2]\nA = {}$ A {}\n",
            "A + ".repeat(300),
            "+ A ".repeat(300)
        );
        let at = src.find('$').unwrap();
        let d = Diagnostic::new(
            Code::InvalidChar,
            "invalid character '$'",
            at..at + 1,
            "here",
        );
        let text = render_text(&d, "f", &src, false);
        let window = format!("...{}...", &src[at - 60..at + 61]);
        let expected = format!(
            "[E0002] Error: invalid character '$'\n   \
             ╭─[ f:2:1205 ]\n   \
             │\n \
             2 │ {}\n   \
             │ {}┬  \n   \
             │ {}╰── here\n\
             ───╯\n",
            window.trim_end(),
            " ".repeat(63),
            " ".repeat(63),
        );
        assert_eq!(text, expected);
        // A line that is long but fully covered by the labels is shown whole.
        let whole = Diagnostic::new(Code::TooDeep, "too deep", 14..src.len() - 1, "this");
        assert!(render_text(&whole, "f", &src, false).contains(src[14..src.len() - 1].trim_end()));
    }

    #[test]
    fn text_output_stops_at_the_cap_and_counts_the_rest() {
        let src = "$".repeat(MAX_TEXT_DIAGNOSTICS + 7);
        let mut diags: Vec<Diagnostic> = (0..src.len())
            .map(|i| Diagnostic::new(Code::InvalidChar, "invalid character '$'", i..i + 1, "x"))
            .collect();
        diags.push(Diagnostic::new(Code::TranspSame, "w", 0..1, "w"));
        let r = Renderer::new("f.teil", &src);
        let mut out = Vec::new();
        r.write_text(&mut out, &diags, false).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(out.matches("[E0002] Error").count(), MAX_TEXT_DIAGNOSTICS);
        assert!(
            out.ends_with(
                "f.teil: and 7 more errors and 1 more warning not shown (text output shows the \
                 first 100 diagnostics of a file; JSON output lists all)\n"
            ),
            "{out}"
        );
        let mut json = Vec::new();
        r.write_json(&mut json, &diags).unwrap();
        assert_eq!(json.split(|&b| b == b'\n').count() - 1, diags.len());
    }

    #[test]
    fn text_and_json_agree_on_lines_after_lone_cr_and_unicode_separators() {
        // Lines end at `\r\n` and the lone `\r`; U+2028, `\x0b` and U+0085 are on the line
        // (ariadne alone starts a line at each: its header said 2:5 where JSON said 1:19).
        let src = "alloc A : [2]\r\nA = A\rB\u{2028}C\x0bD\u{85} $ \u{2029}\n";
        let at = src.find('$').unwrap();
        let d = Diagnostic::new(
            Code::InvalidChar,
            "invalid character '$'",
            at..at + 1,
            "here",
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&d, "f", src)).unwrap();
        assert_eq!(
            (json["line"].as_u64(), json["column"].as_u64()),
            (Some(3), Some(8))
        );
        let text = render_text(&d, "f", src, false);
        assert!(text.contains("╭─[ f:3:8 ]"), "{text}");
        assert!(text.contains(" 3 │ B\u{2424}C D"), "{text}");
        // The same on a long line, shown as a window.
        let long = src.replace("B\u{2028}", &format!("B{}", "\u{2028}".repeat(2000)));
        let at = long.find('$').unwrap();
        let d = Diagnostic::new(Code::InvalidChar, "x", at..at + 1, "here");
        assert_eq!(line_col(&long, at), (3, 2007));
        let text = render_text(&d, "f", &long, false);
        assert!(text.contains("╭─[ f:3:2007 ]"), "{text}");
    }
}
