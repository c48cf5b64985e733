//! The specification's examples are executable: every fenced block in `spec/*.md` whose info
//! string starts with `teil` states its verdict, and this test holds the implementation to it.
//!
//! - `teil ok`: compiles with no diagnostic at all;
//! - `teil error E0305 E0301`: is rejected, and the distinct codes reported are exactly these;
//! - `teil warning W0002`: compiles, and the distinct warning codes are exactly these.
//!
//! A `teil` block without a verdict is an error here (fragments that are not programs use
//! `text`), so an example cannot drop out of the suite by a typo in its info string.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use teil::fmt::{self, Style};
use teil::Code;

#[derive(Debug, PartialEq)]
enum Verdict {
    Ok,
    Error(BTreeSet<String>),
    Warning(BTreeSet<String>),
}

struct Example {
    file: PathBuf,
    /// 1-based line of the opening fence.
    line: usize,
    verdict: Verdict,
    source: String,
}

impl Example {
    fn place(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec")
}

fn spec_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(spec_dir())
        .expect("spec/ exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

fn parse_verdict(info: &str) -> Result<Verdict, String> {
    let mut words = info.split_whitespace();
    words.next(); // `teil`
    let kind = words
        .next()
        .ok_or("a `teil` block needs a verdict: ok, error or warning")?;
    let codes: BTreeSet<String> = words.map(str::to_string).collect();
    for c in &codes {
        if Code::parse(c).is_none() {
            return Err(format!("unknown diagnostic code `{c}`"));
        }
    }
    match kind {
        "ok" if codes.is_empty() => Ok(Verdict::Ok),
        "error" if !codes.is_empty() => Ok(Verdict::Error(codes)),
        "warning" if !codes.is_empty() => Ok(Verdict::Warning(codes)),
        other => Err(format!("bad verdict `{other}` (with codes {codes:?})")),
    }
}

/// Every `teil` block of one Markdown file.
fn examples_in(file: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(file).expect("spec file is readable");
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let is_teil = info.split_whitespace().next() == Some("teil");
        let mut body = String::new();
        let mut closed = false;
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                closed = true;
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        assert!(closed, "{}:{}: unclosed code block", file.display(), n + 1);
        if !is_teil {
            continue;
        }
        let verdict =
            parse_verdict(info).unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), n + 1));
        out.push(Example {
            file: file.to_path_buf(),
            line: n + 1,
            verdict,
            source: body,
        });
    }
    out
}

fn all_examples() -> Vec<Example> {
    spec_files().iter().flat_map(|f| examples_in(f)).collect()
}

fn codes(diags: &[teil::Diagnostic]) -> BTreeSet<String> {
    diags.iter().map(|d| d.code.as_str().to_string()).collect()
}

/// Checks one example; `Err` describes the disagreement.
fn run(ex: &Example) -> Result<(), String> {
    let outcome = teil::compile(&ex.source);
    match (&ex.verdict, &outcome) {
        (Verdict::Ok, Ok((_, diags))) if diags.is_empty() => Ok(()),
        (Verdict::Error(want), Err(diags)) if &codes(diags) == want => Ok(()),
        (Verdict::Warning(want), Ok((_, diags))) if &codes(diags) == want => Ok(()),
        (_, Ok((_, diags))) => Err(format!(
            "expected {:?}, but the program compiles with codes {:?}",
            ex.verdict,
            codes(diags)
        )),
        (_, Err(diags)) => Err(format!(
            "expected {:?}, but the program is rejected with {:?}:\n{}",
            ex.verdict,
            codes(diags),
            diags
                .iter()
                .map(|d| teil::render::render_text(d, "example", &ex.source, false))
                .collect::<String>()
        )),
    }
}

#[test]
fn every_spec_example_has_its_documented_verdict() {
    let examples = all_examples();
    let failures: Vec<String> = examples
        .iter()
        .filter_map(|ex| run(ex).err().map(|e| format!("{}: {e}", ex.place())))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} spec examples disagree with the implementation:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_spec_has_enough_examples_in_every_chapter() {
    let examples = all_examples();
    // So that this suite cannot pass vacuously (a renamed directory, a broken extractor).
    assert!(
        examples.len() >= 140,
        "only {} executable examples in spec/",
        examples.len()
    );
    for chapter in [
        "grammar.md",
        "typing.md",
        "semantics.md",
        "values.md",
        "core.md",
        "extensions.md",
        "diagnostics.md",
        "limits.md",
    ] {
        let n = examples
            .iter()
            .filter(|e| e.file.file_name().is_some_and(|f| f == chapter))
            .count();
        assert!(n >= 3, "spec/{chapter} has only {n} executable examples");
    }
    let ok = examples.iter().filter(|e| e.verdict == Verdict::Ok).count();
    let errors = examples
        .iter()
        .filter(|e| matches!(e.verdict, Verdict::Error(_)))
        .count();
    assert!(
        ok >= 40 && errors >= 40,
        "{ok} ok and {errors} error examples"
    );
}

/// Codes a TeIL source file can produce (parser and checker); the other codes belong to the
/// guard front ends (einsum, index notation), whose inputs are not TeIL programs.
fn is_language_code(c: Code) -> bool {
    matches!(&c.as_str()[..3], "E00" | "E01" | "E02" | "E03" | "W00")
}

#[test]
fn every_diagnostic_code_has_an_example_in_diagnostics_md() {
    let examples = examples_in(&spec_dir().join("diagnostics.md"));
    let documented: BTreeSet<String> = examples
        .iter()
        .flat_map(|e| match &e.verdict {
            Verdict::Ok => BTreeSet::new(),
            Verdict::Error(c) | Verdict::Warning(c) => c.clone(),
        })
        .collect();
    let missing: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| is_language_code(**c))
        .map(|c| c.as_str())
        .filter(|c| !documented.contains(*c))
        .collect();
    assert!(
        missing.is_empty(),
        "codes without an example in spec/diagnostics.md: {missing:?}"
    );
    // Each language code has a section of its own there, and every other code is listed.
    let text = std::fs::read_to_string(spec_dir().join("diagnostics.md")).expect("readable");
    for c in Code::ALL {
        let wanted = if is_language_code(*c) {
            format!("### {}", c.as_str())
        } else {
            format!("| {} |", c.as_str())
        };
        assert!(
            text.contains(&wanted),
            "spec/diagnostics.md lacks `{wanted}` for {}",
            c.as_str()
        );
    }
    assert!(Code::ALL.iter().filter(|c| is_language_code(**c)).count() >= 26);
}

/// The accepted examples also survive `teil fmt` in both syntaxes: the printed program parses
/// back to the same tree and gets the same verdict.
#[test]
fn accepted_spec_examples_round_trip_through_fmt() {
    for ex in all_examples() {
        let Ok((checked, warnings)) = teil::compile(&ex.source) else {
            continue;
        };
        for style in [Style::Prefix, Style::Infix] {
            let text = fmt::program(checked.program(), style);
            let parsed = teil::parse(&text);
            assert!(
                parsed.diagnostics.is_empty(),
                "{}: {style:?} output does not parse:\n{text}",
                ex.place()
            );
            assert!(
                parsed.program.same_as(checked.program()),
                "{}: {style:?} output is a different program:\n{text}",
                ex.place()
            );
            assert_eq!(fmt::program(&parsed.program, style), text, "{}", ex.place());
            let again = teil::compile(&text)
                .unwrap_or_else(|d| panic!("{}: {style:?} output rejected: {d:?}", ex.place()));
            assert_eq!(codes(&again.1), codes(&warnings), "{}", ex.place());
        }
    }
}

#[test]
fn the_extractor_reads_verdicts_strictly() {
    assert_eq!(parse_verdict("teil ok"), Ok(Verdict::Ok));
    assert_eq!(
        parse_verdict("teil error E0305 E0301"),
        Ok(Verdict::Error(
            ["E0301", "E0305"].iter().map(|s| s.to_string()).collect()
        ))
    );
    assert!(parse_verdict("teil").is_err());
    assert!(parse_verdict("teil ok E0001").is_err());
    assert!(parse_verdict("teil error").is_err());
    assert!(parse_verdict("teil error E9999").is_err());
    assert!(parse_verdict("teil fine").is_err());
}
