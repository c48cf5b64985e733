//! The one place diagnostics become text: ariadne reports for people, JSON lines for tools.

use crate::diagnostic::{Diagnostic, Severity};
use ariadne::{Color, Config, IndexType, Label, Report, ReportKind};

/// Renders `diag` against the source it was found in. `color` is off for snapshots, pipes and
/// files. Spans are byte offsets (`IndexType::Byte`), as everywhere in TeIL.
pub fn render_text(diag: &Diagnostic, file: &str, src: &str, color: bool) -> String {
    let clamp = |s: &std::ops::Range<usize>| clamp_span(src, s);
    let kind = match diag.severity {
        Severity::Error => ReportKind::Error,
        Severity::Warning => ReportKind::Warning,
    };
    let file = file.to_string();
    let primary_color = if diag.is_error() {
        Color::Red
    } else {
        Color::Yellow
    };
    // Labels are ordered by the line they end on, primary first within a line: ariadne starts
    // a new section (repeating the file header) whenever a label ends on an earlier line than
    // the one before it, which would split a report whose context precedes the error.
    let mut labels: Vec<(std::ops::Range<usize>, &str, Color)> = vec![(
        clamp(&diag.primary.span),
        &diag.primary.message,
        primary_color,
    )];
    labels.extend(
        diag.secondary
            .iter()
            .map(|l| (clamp(&l.span), l.message.as_str(), Color::Blue)),
    );
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&k| {
        let span = &labels[k].0;
        (
            line_col(src, span.end.saturating_sub(1).max(span.start)).0,
            k,
        )
    });
    let mut report = Report::build(kind, (file.clone(), clamp(&diag.primary.span)))
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
            Label::new((file.clone(), span.clone()))
                .with_message(message)
                .with_color(*color)
                .with_order(rank as i32),
        );
    }
    if let Some(rule) = diag.rule {
        // A warning does not violate its rule (T-Transp allows `transp i i`); it points at it.
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
    let cache = ariadne::sources([(file, src.to_string())]);
    // Writing into a Vec cannot fail.
    let _ = report.finish().write(cache, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Keeps a span inside the source and on character boundaries, so that a diagnostic built
/// against one text can be shown against any other without panicking.
fn clamp_span(src: &str, s: &std::ops::Range<usize>) -> std::ops::Range<usize> {
    let fix = |mut i: usize| {
        i = i.min(src.len());
        while !src.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let (a, b) = (fix(s.start), fix(s.end));
    a..b.max(a)
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = clamp_span(src, &(offset..offset)).start;
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = src[line_start..offset].chars().count() + 1;
    (line, col)
}

/// One JSON object (no trailing newline) describing `diag`, for `--format json`.
pub fn render_json(diag: &Diagnostic, file: &str, src: &str) -> String {
    use serde_json::json;
    let span = |s: &std::ops::Range<usize>| {
        let (line, column) = line_col(src, s.start);
        let (end_line, end_column) = line_col(src, s.end);
        json!({
            "start": s.start, "end": s.end,
            "line": line, "column": column,
            "end_line": end_line, "end_column": end_column,
        })
    };
    let (line, column) = line_col(src, diag.primary.span.start);
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
        "file": file,
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
