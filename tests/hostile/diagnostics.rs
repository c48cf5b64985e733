//! Hostile inputs: diagnostics. Files full of errors must be rejected in time linear in their
//! size (spec/limits.md, "Diagnostics"), text output stops after 100 reports with an exact count
//! of the rest (spec/diagnostics.md), and the encoding rules of spec/grammar.md hold: a leading
//! byte-order mark is skipped, bytes that are not UTF-8 are E0002 at the first invalid byte.
//!
//! The bounds are on CPU time ([`Outcome::within_cpu`]), generous for a debug build; the
//! release-build measurements are in spec/limits.md. Before the fix, 40 KB of random bytes took 7 s in a
//! release build, so a quadratic renderer fails these cases at 100 KB, and at 1 MB in long mode.

use crate::support::*;
use std::time::Duration;

/// Bound on every case here. Linear work on 100 KB takes well under a second; the long mode's
/// 1 MB inputs (up to 200,000 JSON lines) get 20 s, still far below the minutes a quadratic
/// renderer needs at that size.
fn fast() -> Duration {
    Duration::from_secs(if long_mode() { 20 } else { 5 })
}

/// [`Case::run`] kills a case at its deadline; it must not come before [`fast`].
fn case<const N: usize>(args: [&str; N]) -> Case {
    Case::new(args).deadline(fast() + Duration::from_secs(10))
}

/// Size of the garbage files: 100 KB, 1 MB in long mode.
fn garbage_size() -> usize {
    if long_mode() {
        1 << 20
    } else {
        100_000
    }
}

/// A deterministic byte stream (xorshift64*), so a failure reproduces.
struct Bytes(u64);

impl Bytes {
    fn next(&mut self) -> u8 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
    }

    fn random(seed: u64, n: usize) -> Vec<u8> {
        let mut g = Bytes(seed);
        (0..n).map(|_| g.next()).collect()
    }

    /// Printable ASCII and newlines: valid UTF-8 in which many characters (`$`, `?`, `{`, ...)
    /// cannot start a token and the rest form random tokens.
    fn printable(seed: u64, n: usize) -> String {
        let mut g = Bytes(seed);
        (0..n)
            .map(|_| match g.next() % 96 {
                95 => '\n',
                k => char::from(b' ' + k),
            })
            .collect()
    }
}

/// The JSON diagnostics of an outcome, one per line of standard output.
fn json_lines(o: &Outcome) -> Vec<serde_json::Value> {
    o.stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// The closing line of text output for a file whose diagnostics (in JSON) are `all`.
fn omitted_line(name: &str, all: &[serde_json::Value]) -> String {
    let rest = &all[100..];
    let errors = rest.iter().filter(|d| d["severity"] == "error").count();
    let warnings = rest.len() - errors;
    let count = |n: usize, what: &str| format!("{n} more {what}{}", if n == 1 { "" } else { "s" });
    let what = match (errors, warnings) {
        (e, 0) => count(e, "error"),
        (0, w) => count(w, "warning"),
        (e, w) => format!("{} and {}", count(e, "error"), count(w, "warning")),
    };
    format!(
        "{name}: and {what} not shown (text output shows the first 100 diagnostics of a file; \
         JSON output lists all)"
    )
}

/// Writes `bytes` to `name` in a fresh directory, kept alive by the returned guard.
fn file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path.to_string_lossy().into_owned())
}

#[test]
fn random_bytes_are_one_e0002_at_the_first_invalid_byte() {
    let bytes = Bytes::random(1, garbage_size());
    let first_bad = std::str::from_utf8(&bytes).unwrap_err().valid_up_to();
    let o = case(["check", "-"]).stdin(bytes.clone()).run();
    o.exits(1).reports("E0002").within_cpu(fast());
    let o = case(["check", "--format", "json", "-"]).stdin(bytes).run();
    o.exits(1).within_cpu(fast());
    let diags = json_lines(&o);
    assert_eq!(diags.len(), 1, "{}", o.stdout);
    assert_eq!(diags[0]["code"], "E0002");
    assert_eq!(diags[0]["span"]["start"], first_bad);
}

#[test]
fn printable_garbage_is_rejected_quickly_with_an_exact_count_of_the_rest() {
    let text = Bytes::printable(2, garbage_size());
    let o = case(["check", "--format", "json", "-"])
        .stdin(text.clone())
        .run();
    o.exits(1).within_cpu(fast());
    let all = json_lines(&o);
    assert!(all.len() > 1000, "{} diagnostics", all.len());
    assert!(all.iter().any(|d| d["code"] == "E0002"));

    let o = case(["check", "-"]).stdin(text).run();
    o.exits(1).reports("E0002").within_cpu(fast());
    assert_eq!(o.stderr.matches("] Error: ").count(), 100);
    assert_eq!(
        o.stderr.lines().last(),
        Some(omitted_line("<stdin>", &all).as_str())
    );
}

#[test]
fn sixteen_thousand_type_errors_are_capped_and_counted() {
    let n = if long_mode() { 80_000 } else { 16_000 };
    let src = format!("alloc A : [2]\n{}", "A = prod A A\n".repeat(n));
    let o = case(["check", "-"]).stdin(src.clone()).run();
    o.exits(1).reports("E0202").within_cpu(fast());
    assert_eq!(o.stderr.matches("[E0202] Error: ").count(), 100);
    assert_eq!(
        o.stderr.lines().last(),
        Some(
            format!(
                "<stdin>: and {} more errors not shown (text output shows the first 100 \
                 diagnostics of a file; JSON output lists all)",
                n - 100
            )
            .as_str()
        )
    );
    // JSON lists every one, each pointing at its own statement.
    let o = case(["check", "--format", "json", "-"]).stdin(src).run();
    o.exits(1).within_cpu(fast());
    let all = json_lines(&o);
    assert_eq!(all.len(), n);
    assert!(all.iter().all(|d| d["code"] == "E0202"));
    assert_eq!(all[n - 1]["line"], n + 1);
}

#[test]
fn errors_on_one_long_line_show_a_window_of_it_not_the_line() {
    // Every `$` and `?` is an error on the same line (alternating, since a run of one
    // character is one report): each report shows a window of about 120 characters around its
    // label, so the output stays small however long the line.
    let src = format!(
        "alloc A : [2]\nA = A{}\n",
        " $ ?".repeat(garbage_size() / 4)
    );
    let o = case(["check", "-"]).stdin(src).run();
    o.exits(1).reports("E0002").within_cpu(fast());
    assert_eq!(o.stderr.matches("[E0002] Error: ").count(), 100);
    assert!(
        o.stderr.len() < 100_000,
        "{} bytes of reports",
        o.stderr.len()
    );
    // The header names the file's column, not the window's.
    assert!(o.stderr.contains("<stdin>:2:7 ]"), "{}", &o.stderr[..2000]);
    assert!(o.stderr.contains("<stdin>:2:205 ]"));
    assert!(o.stderr.contains(" 2 │ A = A $ ? $ ?"));
    assert!(o.stderr.contains(" 2 │ ...$ ? $ ?"));
}

#[test]
fn fmt_of_garbage_is_rejected_quickly() {
    let size = if long_mode() { 1 << 20 } else { 40_000 };
    let text = Bytes::printable(3, size);
    let o = case(["fmt", "-"]).stdin(text).run();
    o.exits(1).reports("E0002").within_cpu(fast());
    assert!(o.stdout.is_empty());
    assert!(o
        .stderr
        .lines()
        .last()
        .unwrap()
        .contains("more errors not shown"));
}

#[test]
fn index_notation_and_einsum_garbage_are_rejected_quickly() {
    let text = Bytes::printable(4, garbage_size());
    let (_dir, path) = file("garbage.tin", text.as_bytes());
    let o = case(["lower", path.as_str()]).run();
    o.exits(1).reports("E0002").within_cpu(fast());
    let o = case(["check", path.as_str()]).run();
    o.exits(1).reports("E0002").within_cpu(fast());
    // One argument holds at most 128 KiB on Linux, so the equation stays at 100 KB.
    let equation: String = Bytes::printable(5, 100_000)
        .chars()
        .filter(|c| *c != '\n')
        .collect();
    let o = case(["einsum", equation.as_str(), "--shapes", "[[2,3]]"]).run();
    o.exits(1).reports("E0401").within_cpu(fast());
}

#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let src = b"\xEF\xBB\xBFalloc A : [2]\nA = A\n";
    let o = case(["check", "-"]).stdin(&src[..]).run();
    o.exits(0);
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    let o = case(["fmt", "-"]).stdin(&src[..]).run();
    o.exits(0);
    assert_eq!(o.stdout, "alloc A : [2]\nA = A\n");
    let (_dir, path) = file(
        "bom.tin",
        b"\xEF\xBB\xBFalloc A : [2]\nalloc B : [2]\nA(i) = B(i)\n",
    );
    case(["check", path.as_str()]).run().exits(0);

    // Spans stay file offsets; lines and columns are those of the text after the mark.
    let bad = b"\xEF\xBB\xBFalloc A : [2]\nA = A $\n";
    let o = case(["check", "--format", "json", "-"])
        .stdin(&bad[..])
        .run();
    o.exits(1);
    let d = &json_lines(&o)[0];
    assert_eq!(d["code"], "E0002");
    assert_eq!(d["span"]["start"], 23);
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(7))
    );
    let o = case(["check", "-"]).stdin(&bad[..]).run();
    o.exits(1);
    assert!(o.stderr.contains("<stdin>:2:7"), "{}", o.stderr);
    assert!(!o.stderr.contains('\u{FEFF}'), "{}", o.stderr);

    // Anywhere but at the start, U+FEFF is an invalid character.
    let o = case(["check", "-"])
        .stdin("alloc A : [2]\nA = \u{FEFF}A\n")
        .run();
    o.exits(1).reports("E0002");
}

#[test]
fn bytes_that_are_not_utf8_inside_a_comment_are_e0002_at_the_first_of_them() {
    let src = b"alloc A : [2]   // caf\xE9, d\xE9j\xE0 vu\nA = A\n";
    let o = case(["check", "--format", "json", "-"])
        .stdin(&src[..])
        .run();
    o.exits(1);
    let diags = json_lines(&o);
    assert_eq!(diags.len(), 1, "{}", o.stdout);
    let d = &diags[0];
    assert_eq!(d["code"], "E0002");
    assert_eq!(
        (d["span"]["start"].as_u64(), d["span"]["end"].as_u64()),
        (Some(22), Some(23))
    );
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(1), Some(23))
    );
    assert_eq!(d["label"], "byte 0xE9 is not UTF-8 here");

    for args in [&["check", "-"][..], &["fmt", "-"], &["run", "-"]] {
        let o = Case::new(args.iter().copied()).stdin(&src[..]).run();
        o.exits(1).reports("E0002");
        assert!(o.stderr.contains("<stdin>:1:23"), "{args:?}: {}", o.stderr);
    }
    // A sequence cut off by the end of the file.
    let o = case(["check", "--format", "json", "-"])
        .stdin(&b"alloc A : [2] // \xE2\x82"[..])
        .run();
    o.exits(1);
    let d = &json_lines(&o)[0];
    assert_eq!(
        (d["span"]["start"].as_u64(), d["span"]["end"].as_u64()),
        (Some(17), Some(19))
    );
}
