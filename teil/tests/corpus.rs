//! The file-driven corpus: `tests/check/{pass,fail,warn}/*.teil` and `tests/papers/*.teil` at
//! the workspace root.
//!
//! Every file starts with `// expect: ok` or `// expect: CODE...` (the distinct codes the file
//! must produce, errors and warnings alike). This test asserts that verdict and snapshots the
//! colour-free rendered diagnostics (and, for accepted programs, their canonical prefix form)
//! under `teil/tests/snapshots/`, where they are reviewed as diffs.
//!
//! - `pass/`: one file per typing rule; no diagnostics at all.
//! - `fail/`: one file per side condition of each rule and per way a program fails to form
//!   (report §3.2.1); at least one error.
//! - `warn/`: accepted with exactly the expected warnings.
//! - `papers/`: the examples of both papers, with concrete extents where a paper uses letters.
//!
//! The directories are walked with `std::fs` rather than insta's `glob!`, which would add two
//! crates to the shared lock file for a ten-line loop.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use teil::fmt::{self, Style};
use teil::render::render_text;
use teil::{Code, Diagnostic};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn teil_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "teil"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .teil files in {dir}");
    files
}

/// The codes named on the first line; empty for `ok`.
fn expected(path: &Path, src: &str) -> BTreeSet<String> {
    let first = src.lines().next().unwrap_or_default();
    let list = first
        .strip_prefix("// expect:")
        .unwrap_or_else(|| panic!("{}: first line must be `// expect: ...`", path.display()))
        .trim();
    if list == "ok" {
        return BTreeSet::new();
    }
    let codes: BTreeSet<String> = list.split_whitespace().map(str::to_string).collect();
    for c in &codes {
        assert!(
            Code::parse(c).is_some(),
            "{}: unknown code {c}",
            path.display()
        );
    }
    assert!(!codes.is_empty(), "{}: empty expectation", path.display());
    codes
}

fn codes(diags: &[Diagnostic]) -> BTreeSet<String> {
    diags.iter().map(|d| d.code.as_str().to_string()).collect()
}

/// Codes whose diagnostics come from a typing or formation rule and must name it.
fn has_rule(code: Code) -> bool {
    matches!(
        code,
        Code::Redeclared
            | Code::ZeroExtent
            | Code::AssignUndeclared
            | Code::AssignMismatch
            | Code::UndeclaredVar
            | Code::ElementwiseMismatch
            | Code::PositionOutOfRange
            | Code::PositionsNotDistinct
            | Code::ExtentsDiffer
            | Code::SliceOutOfRange
            | Code::ExpaPositionOutOfRange
            | Code::ExpaZeroExtent
            | Code::TranspSame
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Accepted with no diagnostics.
    Pass,
    /// Rejected with at least one error.
    Fail,
    /// Accepted, with or without warnings.
    Warn,
    /// Whatever the first line says.
    Any,
}

fn check_dir(dir: &str, kind: Kind) {
    for path in teil_files(dir) {
        let src = std::fs::read_to_string(&path).expect("readable");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name");
        let want = expected(&path, &src);
        let outcome = teil::compile(&src);
        let diags: &[Diagnostic] = match &outcome {
            Ok((_, d)) | Err(d) => d,
        };
        let place = path.display();
        match kind {
            Kind::Pass => assert!(want.is_empty(), "{place}: pass files expect ok"),
            Kind::Fail => assert!(outcome.is_err(), "{place}: fail files must be rejected"),
            Kind::Warn => assert!(outcome.is_ok(), "{place}: warn files must be accepted"),
            Kind::Any => {}
        }
        let has_error = want
            .iter()
            .any(|c| Code::parse(c).is_some_and(|c| c.severity() == teil::Severity::Error));
        assert_eq!(
            outcome.is_err(),
            has_error,
            "{place}: expected {want:?}, got {:?}",
            codes(diags)
        );
        assert_eq!(codes(diags), want, "{place}: distinct codes");
        for d in diags {
            assert!(
                d.rule.is_some() || !has_rule(d.code),
                "{place}: {} names no rule",
                d.code.as_str()
            );
            assert!(
                d.primary.span.end <= src.len() && d.primary.span.start <= d.primary.span.end,
                "{place}: primary span {:?} outside the file",
                d.primary.span
            );
        }

        let mut snap = String::new();
        if diags.is_empty() {
            snap.push_str("(no diagnostics)\n");
        }
        for d in diags {
            snap.push_str(&render_text(d, name, &src, false));
        }
        if let Ok((checked, _)) = &outcome {
            snap.push_str("\ncanonical prefix form:\n");
            snap.push_str(&fmt::program(checked.program(), Style::Prefix));
        }
        let stem = name.trim_end_matches(".teil");
        let group = dir.rsplit('/').next().unwrap_or(dir);
        let snapshot = format!("{group}__{stem}");
        insta::with_settings!({
            input_file => &path,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(snapshot, snap);
        });
    }
}

#[test]
fn pass() {
    check_dir("tests/check/pass", Kind::Pass);
}

#[test]
fn fail() {
    check_dir("tests/check/fail", Kind::Fail);
}

#[test]
fn warn() {
    check_dir("tests/check/warn", Kind::Warn);
    // At least the three warning codes are covered.
    let all: BTreeSet<String> = teil_files("tests/check/warn")
        .iter()
        .flat_map(|p| expected(p, &std::fs::read_to_string(p).expect("readable")))
        .collect();
    for c in ["W0001", "W0002", "W0003"] {
        assert!(all.contains(c), "no warn file expects {c}");
    }
}

#[test]
fn papers() {
    check_dir("tests/papers", Kind::Any);
}

/// Every code the checker or parser can emit is exercised by some corpus file.
#[test]
fn the_corpus_covers_every_code() {
    let mut seen = BTreeSet::new();
    for dir in [
        "tests/check/pass",
        "tests/check/fail",
        "tests/check/warn",
        "tests/papers",
    ] {
        for p in teil_files(dir) {
            seen.extend(expected(
                &p,
                &std::fs::read_to_string(&p).expect("readable"),
            ));
        }
    }
    // Codes of TeIL source files; the guard front ends' codes (E04xx, E05xx, W05xx) come from
    // other inputs and are tested with them. E0005 needs a statement hundreds of levels deep;
    // tests/robustness.rs covers it.
    let missing: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| matches!(&c[..3], "E00" | "E01" | "E02" | "E03" | "W00"))
        .filter(|c| !seen.contains(*c) && *c != "E0005")
        .collect();
    assert!(
        missing.is_empty(),
        "codes without a corpus file: {missing:?}"
    );
}

/// The TeIL form of the TVM kernel of the TeIL paper's Fig. 3a is rejected, and the report
/// points at the contraction's positions.
#[test]
fn the_tvm_kernel_is_rejected_at_its_contraction() {
    let path = root().join("tests/papers/teil_fig03a_tvm_rejected.teil");
    let src = std::fs::read_to_string(&path).expect("readable");
    let diags = teil::compile(&src).expect_err("rejected");
    assert_eq!(diags.len(), 1);
    let d = &diags[0];
    assert_eq!(d.code, Code::ExtentsDiffer);
    assert_eq!(d.rule, Some("T-Contr"));
    assert_eq!(&src[d.primary.span.clone()], "1 3");
    assert!(d.primary.message.contains("extent 4") && d.primary.message.contains("extent 5"));
    assert_eq!(d.secondary.len(), 1);
    assert_eq!(&src[d.secondary[0].span.clone()], "(prod A B)");
    assert_eq!(d.secondary[0].message, "this has shape [4, 6, 5, 6]");
}

/// The one E0305 of `src`, with the text `src` becomes when its fix (if any) is applied.
fn extents_differ(src: &str) -> (Diagnostic, Option<String>) {
    let diags = teil::compile(src).expect_err("rejected");
    let e0305: Vec<&Diagnostic> = diags
        .iter()
        .filter(|d| d.code == Code::ExtentsDiffer)
        .collect();
    assert_eq!(e0305.len(), 1, "{diags:?}");
    let d = e0305[0].clone();
    assert!(d.fixes.len() <= 1);
    let fixed = d
        .fixes
        .first()
        .map(|f| f.apply(src).expect("the fix applies"));
    (d, fixed)
}

/// The E0305 help takes the statement's target into account: following it yields a program
/// that type-checks (never E0202), or it says that no pair of positions fits.
#[test]
fn the_e0305_help_fits_the_target() {
    let paper = |name: &str| {
        std::fs::read_to_string(root().join("tests/papers").join(name)).expect("readable")
    };
    // The paper's Fig. 3a kernel: `contr 2 4` gives [4, 5], C's shape.
    let src = paper("teil_fig03a_tvm_rejected.teil");
    let (d, fixed) = extents_differ(&src);
    assert_eq!(d.help.as_deref(), Some("did you mean `contr 2 4`?"));
    assert_eq!(d.fixes[0].title, "replace with `contr 2 4`");
    let fixed = fixed.expect("a fix");
    assert!(fixed.contains("C = contr 2 4 (prod A B)"));
    assert!(teil::compile(&fixed).is_ok(), "{fixed}");
    // The same kernel through `red+ 1 (diag 1 3 ...)`: the only pair of equal extents, (2, 4),
    // gives [6, 5]; the help says so, offers no fix, and taking that pair is indeed E0202.
    let src = paper("teil_fig03a_tvm_rejected_diag.teil");
    let (d, fixed) = extents_differ(&src);
    assert_eq!(
        d.help.as_deref(),
        Some(
            "no diagonal of two dimensions with equal extents gives the right-hand side the \
             shape of `C`, [4, 5]; `diag 2 4` would make it [6, 5]"
        )
    );
    assert!(fixed.is_none());
    let taken = src.replace("diag 1 3", "diag 2 4");
    let codes: Vec<Code> = teil::compile(&taken)
        .expect_err("still rejected")
        .iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(codes, [Code::AssignMismatch]);
    // With C : [6, 6] (as the explanation once had it), no contraction fits either.
    let src = paper("teil_fig03a_tvm_rejected.teil").replace("C : [4, 5]", "C : [6, 6]");
    let (d, fixed) = extents_differ(&src);
    assert_eq!(
        d.help.as_deref(),
        Some(
            "no contraction of two dimensions with equal extents gives the right-hand side the \
             shape of `C`, [6, 6]; `contr 2 4` would make it [4, 5]"
        )
    );
    assert!(fixed.is_none());
}

/// Cases of the E0305 help, each `(program, help, the statement after applying the fix)`;
/// every fixed program must type-check.
#[test]
fn the_e0305_help_cases() {
    let cases: [(&str, &str, Option<&str>); 5] = [
        // The nearest pair of equal extents, (1, 3), gives [3, 3]; the farther (2, 4) fits.
        (
            "alloc A : [2, 3]\nalloc B : [2, 3]\nalloc C : [2, 2]\nC = contr 1 2 (prod A B)\n",
            "did you mean `contr 2 4`?",
            Some("C = contr 2 4 (prod A B)"),
        ),
        // Nested under a reduction: the diagonal that makes `red+ 2` give C's shape.
        (
            "alloc A : [2, 3]\nalloc B : [3, 4]\nalloc C : [2, 4]\nC = red+ 2 (diag 1 3 (prod A B))\n",
            "did you mean `diag 2 3`?",
            Some("C = red+ 2 (diag 2 3 (prod A B))"),
        ),
        // The report's postfix form is suggested in its own spelling.
        (
            "var A : [4 6]\nvar B : [5 6]\nvar C : [4 5]\nC = (A # B) .[1 3]\n",
            "did you mean `.[2 4]`?",
            Some("C = (A # B) .[2 4]"),
        ),
        // No two dimensions of equal extent at all.
        (
            "alloc A : [4, 6]\nalloc B : [5, 7]\nalloc C : [4, 5]\nC = contr 1 3 (prod A B)\n",
            "no two dimensions of this operand have equal extents, so no contraction of it is \
             well-typed",
            None,
        ),
        // An undeclared target: its shape is unknown, so the nearest pair is named.
        (
            "alloc A : [4, 6]\nalloc B : [5, 6]\nD = contr 1 3 (prod A B)\n",
            "did you mean `contr 2 4`?",
            Some("D = contr 2 4 (prod A B)"),
        ),
    ];
    for (src, help, statement) in cases {
        let (d, fixed) = extents_differ(src);
        assert_eq!(d.help.as_deref(), Some(help), "{src}");
        match (statement, fixed) {
            (Some(stmt), Some(fixed)) => {
                assert!(fixed.contains(stmt), "{fixed}");
                // With `D` undeclared, the fixed program still has E0201.
                if !stmt.starts_with('D') {
                    assert!(teil::compile(&fixed).is_ok(), "{fixed}");
                }
            }
            (None, None) => {}
            (want, got) => panic!("{src}: fix {got:?}, expected {want:?}"),
        }
    }
}

/// Every E0305 of the corpus whose statement has no other error: its fix, where it has one,
/// yields a program without E0305 or E0202; otherwise its help says that no pair fits.
#[test]
fn no_e0305_fix_of_the_corpus_leads_to_e0202() {
    let mut fixed = 0;
    for dir in ["tests/check/fail", "tests/papers"] {
        for path in teil_files(dir) {
            let src = std::fs::read_to_string(&path).expect("readable");
            let Err(diags) = teil::compile(&src) else {
                continue;
            };
            let errors = diags.iter().filter(|d| d.is_error()).count();
            for d in diags.iter().filter(|d| d.code == Code::ExtentsDiffer) {
                match d.fixes.first() {
                    Some(f) if errors == 1 => {
                        let text = f.apply(&src).expect("applies");
                        assert!(teil::compile(&text).is_ok(), "{}: {text}", path.display());
                        fixed += 1;
                    }
                    Some(_) => {}
                    None => assert!(
                        d.help.as_deref().is_some_and(|h| h.starts_with("no ")),
                        "{}",
                        path.display()
                    ),
                }
            }
        }
    }
    assert!(fixed >= 2, "only {fixed} E0305 fixes in the corpus");
}
