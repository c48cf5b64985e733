//! The `teil` binary as users and tools see it: exit codes, standard input, JSON lines, syntax
//! error recovery, `explain`, `fmt` round trips, and the pathological inputs of issue 2.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use support::{root, stderr, stdout, teil, teil_stdin};

/// Writes `src` to a fresh file and returns its directory (kept alive) and path.
fn file(name: &str, src: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, src).expect("write");
    (dir, path.to_str().expect("utf-8 path").to_string())
}

const GOOD: &str =
    "alloc A : [2, 3]\nalloc B : [3, 4]\nalloc C : [2, 4]\nC = contr 2 3 (prod A B)\n";
const WARN: &str = "alloc A : [2, 2]\nA = transp 1 1 A\n";
const BAD: &str =
    "alloc A : [4, 6]\nalloc B : [5, 6]\nalloc C : [4, 5]\nC = contr 1 3 (prod A B)\n";
const TWO_SYNTAX_ERRORS: &str = "alloc A : [2]\nA = add A\nA = A + A\nA = A + + A\n";

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// Every field tools rely on is present and has the right type.
fn assert_diagnostic_fields(v: &serde_json::Value, file: &str) {
    let code = v["code"].as_str().expect("code");
    assert!(teil::Code::parse(code).is_some(), "{code}");
    assert!(matches!(v["severity"].as_str(), Some("error" | "warning")));
    let message = v["message"].as_str().expect("message");
    assert!(!message.is_empty());
    assert!(
        message.chars().next().is_some_and(|c| !c.is_uppercase()),
        "{message}"
    );
    assert!(!message.ends_with('.'), "{message}");
    assert!(v["rule"].is_null() || v["rule"].is_string());
    assert_eq!(v["file"].as_str(), Some(file));
    let span = &v["span"];
    let (start, end) = (
        span["start"].as_u64().expect("start"),
        span["end"].as_u64().expect("end"),
    );
    assert!(start <= end);
    assert!(v["line"].as_u64().expect("line") >= 1);
    assert!(v["column"].as_u64().expect("column") >= 1);
    assert_eq!(v["line"], span["line"]);
    assert!(v["notes"].is_array());
}

#[test]
fn check_exit_codes() {
    let (_d, good) = file("good.teil", GOOD);
    let (_e, warn) = file("warn.teil", WARN);
    let (_f, bad) = file("bad.teil", BAD);
    assert_eq!(teil(&["check", &good]).status.code(), Some(0));
    let w = teil(&["check", &warn]);
    assert_eq!(w.status.code(), Some(0), "warnings do not fail the check");
    assert!(stderr(&w).contains("[W0002] Warning"));
    let b = teil(&["check", &bad]);
    assert_eq!(b.status.code(), Some(1));
    assert!(stderr(&b).contains("[E0305] Error"));
    // Several files: the worst outcome wins, every file is reported.
    let all = teil(&["check", &good, &bad, &warn]);
    assert_eq!(all.status.code(), Some(1));
    assert!(stderr(&all).contains("E0305") && stderr(&all).contains("W0002"));
}

#[test]
fn usage_and_io_problems_exit_2() {
    let missing = teil(&["check", "/nonexistent/dir/prog.teil"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).starts_with("error: cannot read"));
    let (_f, bad) = file("bad.teil", BAD);
    // A missing file outranks a rejected one.
    assert_eq!(
        teil(&["check", &bad, "/nonexistent/prog.teil"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        teil(&["check", "--no-such-flag", &bad]).status.code(),
        Some(2)
    );
    assert_eq!(teil(&["check"]).status.code(), Some(2), "no files");
    assert_eq!(
        teil(&["check", "--format", "xml", &bad]).status.code(),
        Some(2)
    );
    assert_eq!(teil(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        teil(&["fmt", "/nonexistent/prog.teil"]).status.code(),
        Some(2)
    );
}

#[test]
fn check_reads_standard_input() {
    let ok = teil_stdin(&["check", "-"], GOOD.as_bytes());
    assert_eq!(ok.status.code(), Some(0));
    assert!(stderr(&ok).is_empty());
    let bad = teil_stdin(&["check", "-"], BAD.as_bytes());
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("<stdin>:4:11"), "{}", stderr(&bad));
    let json = teil_stdin(&["check", "--format", "json", "-"], BAD.as_bytes());
    let lines = json_lines(&json);
    assert_eq!(lines.len(), 1);
    assert_diagnostic_fields(&lines[0], "<stdin>");
}

#[test]
fn json_lines_carry_every_field() {
    let (_f, bad) = file("bad.teil", BAD);
    let o = teil(&["check", "--format", "json", &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).is_empty(), "JSON mode prints nothing on stderr");
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 1);
    let v = &lines[0];
    assert_diagnostic_fields(v, &bad);
    assert_eq!(v["code"], "E0305");
    assert_eq!(v["severity"], "error");
    assert_eq!(v["rule"], "T-Contr");
    assert_eq!(v["line"], 4);
    assert_eq!(v["column"], 11);
    let (start, end) = (
        v["span"]["start"].as_u64().unwrap() as usize,
        v["span"]["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&BAD[start..end], "1 3");
    assert_eq!(v["labels"][0]["message"], "this has shape [4, 6, 5, 6]");
    // The help's suggestion as an edit: the nearest pair of equal extents.
    let fix = &v["fixes"][0];
    assert_eq!(fix["title"], "replace with `contr 2 4`");
    assert_eq!(fix["edits"][0]["span"]["start"], v["span"]["start"]);
    assert_eq!(fix["edits"][0]["span"]["end"], v["span"]["end"]);
    assert_eq!(fix["edits"][0]["replacement"], "2 4");
    // Warnings are JSON lines too.
    let (_w, warn) = file("warn.teil", WARN);
    let o = teil(&["check", "--format", "json", &warn]);
    assert_eq!(o.status.code(), Some(0));
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 1);
    assert_diagnostic_fields(&lines[0], &warn);
    assert_eq!(lines[0]["severity"], "warning");
    assert_eq!(lines[0]["code"], "W0002");
    // A clean file prints nothing.
    let (_g, good) = file("good.teil", GOOD);
    assert!(stdout(&teil(&["check", "--format", "json", &good])).is_empty());
}

#[test]
fn two_syntax_errors_are_both_reported() {
    let (_f, path) = file("two.teil", TWO_SYNTAX_ERRORS);
    let text = teil(&["check", &path]);
    assert_eq!(text.status.code(), Some(1));
    let err = stderr(&text);
    assert_eq!(err.matches("[E0001] Error").count(), 2, "{err}");
    assert!(
        err.contains("two.teil:2:10") && err.contains("two.teil:4:9"),
        "{err}"
    );
    let json = teil(&["check", "--format", "json", &path]);
    assert_eq!(json.status.code(), Some(1));
    let lines = json_lines(&json);
    assert_eq!(lines.len(), 2);
    for v in &lines {
        assert_diagnostic_fields(v, &path);
        assert_eq!(v["code"], "E0001");
    }
    assert_eq!(lines[0]["line"], 2);
    assert_eq!(lines[1]["line"], 4);
}

#[test]
fn explain_prints_the_long_explanation() {
    let o = teil(&["explain", "E0305"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(
        out.starts_with("E0305: paired dimensions have different extents"),
        "{out}"
    );
    assert!(out.contains("T-Contr") && out.contains("contr 1 3 (prod A B)"));
    // Codes are case-insensitive.
    assert_eq!(
        stdout(&teil(&["explain", "w0002"])),
        stdout(&teil(&["explain", "W0002"]))
    );
    for code in teil::Code::ALL {
        let o = teil(&["explain", code.as_str()]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains(code.explanation()));
    }
    let unknown = teil(&["explain", "E9999"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("unknown diagnostic code `E9999`"));
}

/// `teil fmt` prints a program that checks, that is the same program, and that formats to
/// itself, in both syntaxes and for the Core-TeIL form.
#[test]
fn fmt_round_trips_in_both_syntaxes() {
    let mut files = vec![root().join("examples/matmul.teil")];
    for dir in ["tests/check/pass", "tests/papers"] {
        let mut more: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .expect("corpus")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "teil"))
            .collect();
        more.sort();
        files.extend(more);
    }
    let scratch = tempfile::tempdir().expect("temp dir");
    for path in files {
        let path = path.to_str().expect("utf-8").to_string();
        let original = teil(&["check", &path]);
        for args in [
            vec!["fmt"],
            vec!["fmt", "--syntax", "prefix"],
            vec!["fmt", "--syntax", "infix"],
            vec!["fmt", "--core"],
            vec!["fmt", "--core", "--syntax", "infix"],
        ] {
            let core = args.contains(&"--core");
            let first = teil(&[args.as_slice(), &[path.as_str()]].concat());
            if core && original.status.code() != Some(0) {
                // The Core-TeIL form needs a well-typed program.
                assert_eq!(first.status.code(), Some(1), "{path} {args:?}");
                continue;
            }
            assert_eq!(
                first.status.code(),
                Some(0),
                "{path} {args:?}: {}",
                stderr(&first)
            );
            let printed = stdout(&first);
            let again_path = scratch.path().join("again.teil");
            std::fs::write(&again_path, &printed).expect("write");
            let again_path = again_path.to_str().expect("utf-8");
            // Re-checks with the same verdict as the original.
            let recheck = teil(&["check", again_path]);
            assert_eq!(
                recheck.status.code(),
                original.status.code(),
                "{path} {args:?}\n{printed}"
            );
            // Idempotent: formatting the output (without --core) gives the output.
            let style: Vec<&str> = args.iter().copied().filter(|a| *a != "--core").collect();
            let second = teil(&[style.as_slice(), &[again_path]].concat());
            assert_eq!(stdout(&second), printed, "{path} {args:?}");
            // Every comment of the source is kept.
            let src = std::fs::read_to_string(&path).expect("read");
            let comments = |t: &str| teil::lexer::lex_with_comments(t).2.len();
            assert_eq!(
                comments(&printed),
                comments(&src),
                "{path} {args:?}\n{printed}"
            );
            // Same program as the source, by the library's structural equality.
            if !core {
                let src = std::fs::read_to_string(&path).expect("read");
                let a = teil::parse(&src).program;
                let b = teil::parse(&printed).program;
                assert!(a.same_as(&b), "{path} {args:?}\n{printed}");
            }
        }
    }
}

#[test]
fn fmt_output_is_canonical() {
    let (_f, path) = file(
        "mixed.teil",
        "input var A : [2 3]\n  input alloc B:[3,4] // comment\noutput var C : [2 4]\nC = (A # B) .[2 3]\n",
    );
    let prefix = teil(&["fmt", &path]);
    // Comments are kept (spec/grammar.md).
    assert_eq!(
        stdout(&prefix),
        "input alloc A : [2, 3]\ninput alloc B : [3, 4] // comment\noutput alloc C : [2, 4]\nC = contr 2 3 (prod A B)\n"
    );
    let infix = teil(&["fmt", "--syntax", "infix", &path]);
    assert_eq!(
        stdout(&infix),
        "input var A : [2 3]\ninput var B : [3 4] // comment\noutput var C : [2 4]\nC = (A # B) .[2 3]\n"
    );
    let core = teil(&["fmt", "--core", &path]);
    assert_eq!(
        stdout(&core),
        "input alloc A : [2, 3]\ninput alloc B : [3, 4] // comment\noutput alloc C : [2, 4]\n\
         C = red+ 1 (diag 1 2 (transp 1 2 (transp 2 3 (transp 1 2 (transp 2 3 (prod A B))))))\n"
    );
    // A syntax error: nothing on stdout, the diagnostic on stderr, exit 1.
    let (_g, bad) = file("bad.teil", TWO_SYNTAX_ERRORS);
    let o = teil(&["fmt", &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).is_empty());
    assert_eq!(stderr(&o).matches("[E0001]").count(), 2);
}

#[test]
fn fmt_refuses_to_print_what_it_could_not_read_back() {
    // 512 levels as a left-nested sum; in prefix syntax each level needs parentheses.
    let src = format!("alloc A : [2]\nA = A{}\n", " + A".repeat(511));
    let (_f, path) = file("deep.teil", &src);
    assert_eq!(teil(&["check", &path]).status.code(), Some(0));
    let infix = teil(&["fmt", "--syntax", "infix", &path]);
    assert_eq!(infix.status.code(), Some(0));
    let prefix = teil(&["fmt", "--syntax", "prefix", &path]);
    assert_eq!(prefix.status.code(), Some(1));
    assert!(stdout(&prefix).is_empty());
    assert!(stderr(&prefix).contains("[E0005]"));
    // The Core-TeIL form of many long transpositions is too deep to build at all.
    let extents = vec!["2"; 32].join(", ");
    let src = format!("alloc A : [{extents}]\nA = A{}\n", " ^[1 32]".repeat(100));
    let (_g, path) = file("core.teil", &src);
    let core = teil(&["fmt", "--core", &path]);
    assert_eq!(core.status.code(), Some(1));
    assert!(stderr(&core).contains("[E0005]") && !stderr(&core).contains("panicked"));
}

/// Asserts the common contract for a rejected input: exit 1, a code in both output formats, and
/// no panic or abort.
fn assert_rejected_cleanly(src: &[u8], code: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("input.teil");
    std::fs::write(&path, src).expect("write");
    let path = path.to_str().expect("utf-8");
    let text = teil(&["check", path]);
    assert_eq!(text.status.code(), Some(1), "{}", stderr(&text));
    let err = stderr(&text);
    assert!(
        !err.contains("panicked") && !err.contains("overflow"),
        "{err}"
    );
    assert!(err.contains(&format!("[{code}] Error")), "expected {code}");
    let json = teil(&["check", "--format", "json", path]);
    assert_eq!(json.status.code(), Some(1));
    assert!(!stderr(&json).contains("panicked"));
    let lines = json_lines(&json);
    assert!(!lines.is_empty());
    for v in &lines {
        assert_diagnostic_fields(v, path);
    }
    assert!(lines.iter().any(|v| v["code"] == code));
    let fmt = teil(&["fmt", path]);
    assert!(matches!(fmt.status.code(), Some(0 | 1)));
    assert!(!stderr(&fmt).contains("panicked"));
}

#[test]
fn pathological_inputs_are_rejected_without_crashing() {
    let n = 10_000;
    let parens = format!("alloc A : [2]\nA = {}A{}\n", "(".repeat(n), ")".repeat(n));
    assert_rejected_cleanly(parens.as_bytes(), "E0005");
    let chained = format!("alloc A : [2, 2]\nA = {}A\n", "transp 1 2 ".repeat(5_000));
    assert_rejected_cleanly(chained.as_bytes(), "E0005");
    let nested = format!(
        "alloc A : [2, 2]\nA = {}A{}\n",
        "transp 1 2 (".repeat(5_000),
        ")".repeat(5_000)
    );
    assert_rejected_cleanly(nested.as_bytes(), "E0005");
    let extents = format!("alloc A : [{}]\n", vec!["2"; 100_000].join(", "));
    assert_rejected_cleanly(extents.as_bytes(), "E0104");
    let sum = format!("alloc A : [2]\nA = A{}\n", " + A".repeat(100_000));
    assert_rejected_cleanly(sum.as_bytes(), "E0005");
}

#[test]
fn bytes_that_are_not_utf8_are_an_ill_formed_program() {
    assert_rejected_cleanly(b"alloc A : [2]\nA = A \xff\xfe A\n", "E0002");
    assert_rejected_cleanly(&[0x00, 0x9f, 0x92, 0x96, b'(', 0xc3], "E0002");
    let o = teil_stdin(&["check", "-"], b"\xffalloc");
    assert_eq!(o.status.code(), Some(1));
}

/// Issue 13, item 6: a check that passes says what it checked, in one line on stdout (text
/// mode only), after any warnings; a check that fails does not.
#[test]
fn check_says_what_it_checked() {
    let (_d, good) = file("good.teil", GOOD);
    let (_e, warn) = file("warn.teil", WARN);
    let (_f, bad) = file("bad.teil", BAD);
    let o = teil(&["check", &good]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "checked 1 file: 3 declarations, 1 statement, no errors\n"
    );
    assert!(stderr(&o).is_empty());
    let o = teil(&["check", &good, &warn]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "checked 2 files: 4 declarations, 2 statements, no errors, 1 warning\n"
    );
    let o = teil_stdin(&["check", "-"], GOOD.as_bytes());
    assert_eq!(
        stdout(&o),
        "checked 1 file: 3 declarations, 1 statement, no errors\n"
    );
    // Index notation counts the TeIL program it lowers to.
    let tin = root().join("tests/tin/fig2a.tin");
    let o = teil(&["check", tin.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "checked 1 file: 3 declarations, 1 statement, no errors\n"
    );
    // Nothing extra in JSON mode, nothing on failure.
    assert_eq!(stdout(&teil(&["check", "--format", "json", &good])), "");
    let o = teil(&["check", &good, &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "");
}

/// The E0305 help of the paper's Fig. 3a kernels, as the binary prints it: a suggestion whose
/// result fits `C`, or the statement that none does.
#[test]
fn e0305_help_fits_the_target() {
    let paper = |name: &str| {
        root()
            .join("tests/papers")
            .join(name)
            .to_string_lossy()
            .into_owned()
    };
    let o = teil(&["check", &paper("teil_fig03a_tvm_rejected.teil")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("   │ Help: did you mean `contr 2 4`?\n"),
        "{}",
        stderr(&o)
    );
    let o = teil(&["check", &paper("teil_fig03a_tvm_rejected_diag.teil")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "   │ Help: no diagonal of two dimensions with equal extents gives the right-hand \
             side the shape of `C`, [4, 5]; `diag 2 4` would make it [6, 5]\n"
        ),
        "{}",
        stderr(&o)
    );
    // Following the first help gives a program that checks.
    let fixed = std::fs::read_to_string(paper("teil_fig03a_tvm_rejected.teil"))
        .expect("readable")
        .replace("contr 1 3", "contr 2 4");
    let o = teil_stdin(&["check", "-"], fixed.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Every positional argument of every subcommand has help text.
#[test]
fn positional_arguments_have_help() {
    let expected: [(&str, &[&str]); 9] = [
        ("check", &["  <FILE>...  The programs: `.teil`, or `.tin` index notation; `-` reads standard input"]),
        ("fmt", &["  <FILE>  The program (`.teil`); `-` reads standard input"]),
        ("explain", &["  <CODE>  The code, e.g. `E0305` or `W0001` (listed in spec/diagnostics.md)"]),
        ("einsum", &["  <EQUATION>  The equation, e.g. `ij,jk->ik`"]),
        ("run", &["  <FILE>  The program: `.teil`, or `.tin` index notation; `-` reads standard input"]),
        (
            "trace",
            &[
                "  <FILE>  The program: `.teil`, or `.tin` index notation; `-` reads standard input",
                "  <CELL>  The cell: `NAME[i, j, ...]` with 1-based indices, or `NAME` for a scalar",
            ],
        ),
        ("lower", &["  <FILE>  The index-notation file (`.tin`), or a `.teil` file with `--ops`; `-` reads standard input"]),
        ("emit-c", &["  <FILE>  The program: `.teil`, or `.tin` index notation; `-` reads standard input"]),
        ("fuzz", &[]),
    ];
    for (cmd, args) in expected {
        let help = stdout(&teil(&[cmd, "-h"]));
        let section: Vec<&str> = help
            .lines()
            .skip_while(|l| *l != "Arguments:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(section, args, "teil {cmd} -h:\n{help}");
    }
    assert!(!stdout(&teil(&["lsp", "-h"])).contains("Arguments:"));
}

/// One spelling for the oracle in the help: `--backend oracle`; `--oracle` still works, as a
/// hidden alias, with the same results.
#[test]
fn the_oracle_has_one_spelling() {
    let help = stdout(&teil(&["run", "--help"]));
    assert!(!help.contains("--oracle"), "{help}");
    assert!(
        help.contains("          - oracle: The reference interpreter\n"),
        "{help}"
    );
    let file = root().join("examples/matmul.teil");
    let file = file.to_str().expect("utf-8");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", file, "--random-inputs", "3"];
        args.extend_from_slice(extra);
        let o = teil(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    let oracle = run(&["--backend", "oracle"]);
    assert!(oracle.starts_with("C : [3, 5] =\n"), "{oracle}");
    assert_eq!(run(&["--oracle"]), oracle);
    assert_eq!(
        run(&[]),
        oracle,
        "the fast evaluator agrees on small integers"
    );
    let both = teil(&["run", file, "--oracle", "--backend", "c"]);
    assert_eq!(both.status.code(), Some(2));
}

/// `teil trace` shows expressions in the syntax the source uses, read from its tokens
/// (comments aside), also from standard input.
#[test]
fn trace_speaks_the_source_syntax() {
    const INFIX: &str = "var A : [2 3]\nvar B : [3 2]\nvar C : [2 2]\nC = (A # B) .[2 3]\n";
    const PREFIX: &str = "// var and # in a comment do not make this infix\n\
                          alloc A : [2, 3]\nalloc B : [3, 2]\nalloc C : [2, 2]\n\
                          C = contr 2 3 (prod A B)\n";
    let first = |o: Output| {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
            .lines()
            .next()
            .expect("a line")
            .trim_end()
            .to_string()
    };
    assert_eq!(
        first(teil_stdin(&["trace", "-", "C[1,2]"], INFIX.as_bytes())),
        "C[1, 2] = ⟦(A # B) .[2 3]⟧[1, 2]           [St-Stmt]"
    );
    let (_d, prefix) = file("prefix.teil", PREFIX);
    assert_eq!(
        first(teil(&["trace", &prefix, "C[1,2]"])),
        "C[1, 2] = ⟦contr 2 3 (prod A B)⟧[1, 2]        [St-Stmt]"
    );
    assert_eq!(
        first(teil_stdin(
            &["trace", "-", "C[1,2]", "--syntax", "prefix"],
            INFIX.as_bytes()
        )),
        "C[1, 2] = ⟦contr 2 3 (prod A B)⟧[1, 2]        [St-Stmt]"
    );
}

/// A pipe whose read end is already closed: every write to the other end fails with `EPIPE`
/// (Rust ignores `SIGPIPE`), whatever the timing, as when `head -1` has gone.
#[cfg(unix)]
fn closed_pipe() -> Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: `pipe` writes two new descriptors into `fds`, which are then owned here once each.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

/// Runs `teil` with standard output (`on_stdout`) or standard error a closed pipe.
#[cfg(unix)]
fn teil_closed(args: &[&str], on_stdout: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_teil"));
    cmd.args(args).env("NO_COLOR", "1").stdin(Stdio::null());
    if on_stdout {
        cmd.stdout(closed_pipe()).stderr(Stdio::piped());
    } else {
        cmd.stdout(Stdio::piped()).stderr(closed_pipe());
    }
    cmd.output().expect("teil runs")
}

/// Issue 23: `teil explain E0103 | head -1` panicked in `print!`. A closed standard output is
/// not an error: every subcommand stops writing and exits with the status it would have had,
/// saying nothing (spec/limits.md, "Robustness").
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let (_d, good) = file("good.teil", GOOD);
    let (_e, bad) = file("bad.teil", BAD);
    let tin = root().join("tests/tin/matmul.tin");
    let tin = tin.to_str().unwrap();
    let cases: &[(&[&str], i32)] = &[
        (&["explain", "E0103"], 0),
        (&["check", &good], 0),
        (&["check", "--format", "json", &bad], 1),
        (&["fmt", &good], 0),
        (&["fmt", "--core", "--syntax", "infix", &good], 0),
        (&["emit-c", &good], 0),
        (&["emit-c", "--ir", &good], 0),
        (&["lower", tin], 0),
        (&["lower", "--ops", &good], 0),
        (&["einsum", "ij,jk->ik", "--shapes", "[[2,3],[3,4]]"], 0),
        (&["trace", &good, "C[1,2]"], 0),
        (&["trace", &good, "C[1,2]", "--random-inputs", "1"], 0),
        (&["run", &good, "--random-inputs", "1"], 0),
        (
            &["run", &good, "--random-inputs", "1", "--backend", "oracle"],
            0,
        ),
    ];
    for (args, status) in cases {
        let o = teil_closed(args, true);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(*status), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("error"), "{args:?}: {err}");
        // The same command with a reader prints something: the pipe was the only difference.
        let full = teil(args);
        assert_eq!(full.status.code(), Some(*status), "{args:?}");
        assert!(!full.stdout.is_empty(), "{args:?}");
    }
    // A closed standard error: the report is lost, the status is kept.
    for (args, status) in [
        (&["explain", "E9999"][..], 2),
        (&["check", &bad][..], 1),
        (&["trace", &good, "X[1]"][..], 1),
    ] {
        let o = teil_closed(args, false);
        assert_eq!(o.status.code(), Some(status), "{args:?}");
    }
}

/// Another failure to write standard output (a full device) is reported, with status 2.
#[cfg(target_os = "linux")]
#[test]
fn a_full_device_is_an_io_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_teil"))
        .args(["explain", "E0103"])
        .stdout(full)
        .output()
        .expect("teil runs");
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: cannot write to standard output:")
            && err.contains("No space left on device")
            && !err.contains("panicked"),
        "{err}"
    );
}

/// Issue 23: `--max-output` counts the bytes `teil trace` prints, and the size flags accept
/// exactly the suffixes their help lists (K, M, G, T), with one parser.
#[test]
fn size_flags_and_the_trace_output_budget() {
    let (_d, good) = file("good.teil", GOOD);
    let printed = teil(&["trace", &good, "C[1,2]", "--random-inputs", "1"]);
    assert_eq!(printed.status.code(), Some(0));
    let n = printed.stdout.len();
    let at = teil(&[
        "trace",
        &good,
        "C[1,2]",
        "--random-inputs",
        "1",
        "--max-output",
        &n.to_string(),
    ]);
    assert_eq!(at.status.code(), Some(0), "{}", stderr(&at));
    assert_eq!(at.stdout, printed.stdout);
    let under = teil(&[
        "trace",
        &good,
        "C[1,2]",
        "--random-inputs",
        "1",
        "--max-output",
        &(n - 1).to_string(),
    ]);
    assert_eq!(under.status.code(), Some(1));
    assert!(under.stdout.is_empty());
    assert!(
        stderr(&under).starts_with(&format!(
            "error: [E0705] the trace would print more than the output budget of {} bytes ({n} bytes by its line",
            n - 1
        )),
        "{}",
        stderr(&under)
    );
    for flag in ["--max-output", "--max-memory"] {
        let ok = teil(&["trace", &good, "C[1,2]", flag, "1T"]);
        assert_eq!(ok.status.code(), Some(0), "{flag}: {}", stderr(&ok));
        for bad in ["1P", "2GiB", "8MB", "1k"] {
            let o = teil(&["trace", &good, "C[1,2]", flag, bad]);
            assert_eq!(o.status.code(), Some(2), "{flag} {bad}");
            assert!(
                stderr(&o).contains(&format!(
                    "`{bad}` is not a size: write bytes, or a whole number followed by K, M, G or T"
                )),
                "{flag} {bad}: {}",
                stderr(&o)
            );
        }
    }
}
