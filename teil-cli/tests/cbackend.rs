//! `teil emit-c` and `teil run --backend c` through the binary: the spec's example output,
//! warning-free C for the corpus, agreement with the interpreter, and the error paths (no
//! compiler, compile errors, sanitizer builds).

mod support;

use std::path::PathBuf;
use std::process::Command;
use support::{root, stderr, stdout, teil, write};

/// The first fenced block with info string `info` after `from` in `text`.
fn block<'a>(text: &'a str, from: usize, info: &str) -> (&'a str, usize) {
    let open = format!("```{info}\n");
    let start = text[from..].find(&open).expect("block") + from + open.len();
    let end = text[start..].find("```").expect("closing fence") + start;
    (&text[start..end], end)
}

#[test]
fn emit_c_prints_the_example_of_the_abi_chapter() {
    let spec = std::fs::read_to_string(root().join("spec/abi.md")).expect("spec/abi.md");
    let at = spec.find("## Example").expect("example section");
    let (program, end) = block(&spec, at, "teil ok");
    let (c, _) = block(&spec, end, "c");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "example.teil", program);
    let o = teil(&["emit-c", &file, "--pad", "4", "--name", "matmul_scaled"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), c);
}

#[test]
fn emit_c_writes_a_file_atomically() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(
        dir.path(),
        "mm.teil",
        "var A : [2 3]\nvar B : [3 2]\nvar C : [2 2]\nC = (A # B) .[2 3]\n",
    );
    let out = dir.path().join("mm.c");
    let o = teil(&["emit-c", &file, "--pad", "2", "-o", &out.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let printed = stdout(&teil(&["emit-c", &file, "--pad", "2"]));
    assert_eq!(std::fs::read_to_string(&out).expect("written"), printed);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left behind: {names:?}");
}

#[test]
fn emit_c_rejects_ill_typed_programs_and_bad_options() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = write(
        dir.path(),
        "bad.teil",
        "var A : [4 6]\nvar B : [5 6]\nvar C : [4 5]\nC = contr 1 3 (prod A B)\n",
    );
    let o = teil(&["emit-c", &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("E0305"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());

    let good = write(dir.path(), "good.teil", "var A : [2]\nA = A + A\n");
    let o = teil(&["emit-c", &good, "--pad", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "error: the padding multiple must be at least 1, got 0\n"
    );
    let o = teil(&["emit-c", &good, "--name", "double"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`double` cannot be the kernel's C name"),
        "{}",
        stderr(&o)
    );
}

fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["tests/run", "tests/papers", "examples"] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "teil") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Whether `teil check` accepts the file (the corpus also holds programs meant to fail) and
/// its variables are small enough to run quickly through the pointwise oracle.
fn checks(file: &str) -> bool {
    let text = std::fs::read_to_string(file).expect("read");
    let Ok((p, _)) = teil::guard::load(file, &text) else {
        return false;
    };
    let elements = p
        .program()
        .decls
        .iter()
        .map(|d| d.shape().iter().fold(1u64, |a, &n| a.saturating_mul(n)))
        .fold(0u64, u64::saturating_add);
    elements <= 100_000 && teil(&["check", file]).status.success()
}

#[test]
fn emitted_c_for_the_corpus_compiles_without_any_diagnostic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut compiled = 0;
    for f in corpus() {
        let f = f.to_string_lossy().into_owned();
        if !checks(&f) {
            continue;
        }
        for pad in ["1", "4"] {
            let c = dir.path().join(format!("k{compiled}.c"));
            let o = teil(&["emit-c", &f, "--pad", pad, "-o", &c.to_string_lossy()]);
            assert_eq!(o.status.code(), Some(0), "{f}: {}", stderr(&o));
            let cc = Command::new("cc")
                .args([
                    "-std=c99",
                    "-O2",
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-pedantic",
                    "-c",
                    "-o",
                ])
                .arg(dir.path().join(format!("k{compiled}.o")))
                .arg(&c)
                .output()
                .expect("cc runs");
            assert!(
                cc.status.success() && cc.stderr.is_empty(),
                "{f} at M = {pad}:\n{}",
                String::from_utf8_lossy(&cc.stderr)
            );
            compiled += 1;
        }
    }
    assert!(compiled >= 20, "only {compiled} corpus programs compiled");
}

#[test]
fn run_with_the_c_backend_prints_what_the_oracle_prints() {
    let mut ran = 0;
    for f in corpus() {
        let f = f.to_string_lossy().into_owned();
        if !checks(&f) {
            continue;
        }
        let oracle = teil(&["run", &f, "--random-inputs", "5", "--oracle"]);
        if !oracle.status.success() {
            continue;
        }
        for pad in ["1", "3"] {
            let c = teil(&[
                "run",
                &f,
                "--random-inputs",
                "5",
                "--backend",
                "c",
                "--pad",
                pad,
            ]);
            assert_eq!(c.status.code(), Some(0), "{f}: {}", stderr(&c));
            assert_eq!(stdout(&c), stdout(&oracle), "{f} at M = {pad}");
            assert_eq!(stderr(&c), stderr(&oracle), "{f} at M = {pad}: warnings");
        }
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} corpus programs ran");
}

#[test]
fn run_with_the_c_backend_writes_the_same_npy_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(
        dir.path(),
        "p.teil",
        "input var A : [3 4]\ninput var B : [4 5]\noutput var C : [3 5]\noutput var D : [5]\n\
         C = (A # B) .[2 3]\nD = redmax 1 C / red+ 1 (expa 1 3 (proj 1 2 B))\n",
    );
    let (o, c) = (dir.path().join("o"), dir.path().join("c"));
    let r = teil(&[
        "run",
        &file,
        "--random-inputs",
        "9",
        "--oracle",
        "--out",
        &o.to_string_lossy(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let r = teil(&[
        "run",
        &file,
        "--random-inputs",
        "9",
        "--backend",
        "c",
        "--pad",
        "8",
        "--out",
        &c.to_string_lossy(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    for name in ["C.npy", "D.npy"] {
        let a = std::fs::read(o.join(name)).expect("oracle output");
        let b = std::fs::read(c.join(name)).expect("C output");
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn run_with_the_c_backend_under_sanitizers() {
    let f = root().join("tests/run/matmul.teil");
    let f = f.to_string_lossy();
    let plain = teil(&["run", &f, "--random-inputs", "2"]);
    let o = teil(&[
        "run",
        &f,
        "--random-inputs",
        "2",
        "--backend",
        "c",
        "--pad",
        "4",
        "--cflags",
        "-O1 -fsanitize=address,undefined",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&plain));
}

/// The path in "generated source kept at PATH" of an error message.
fn kept(err: &str) -> PathBuf {
    let at = err
        .find("kept at ")
        .expect("the message names the kept source")
        + "kept at ".len();
    let rest = &err[at..];
    let end = rest.find([')', '\n']).unwrap_or(rest.len());
    PathBuf::from(&rest[..end])
}

#[test]
fn a_missing_compiler_is_a_clear_error_that_keeps_the_source() {
    let f = root().join("tests/run/matmul.teil");
    let o = teil(&[
        "run",
        &f.to_string_lossy(),
        "--random-inputs",
        "1",
        "--backend",
        "c",
        "--cc",
        "teil-no-such-cc",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: cannot run the C compiler `teil-no-such-cc`"),
        "{err}"
    );
    let src = kept(&err);
    assert!(std::fs::read_to_string(&src)
        .expect("kept")
        .contains("void teil_kernel("));
    let _ = std::fs::remove_dir_all(src.parent().expect("dir"));
}

#[test]
fn a_compile_error_shows_the_compiler_message() {
    let f = root().join("tests/run/matmul.teil");
    let o = teil(&[
        "run",
        &f.to_string_lossy(),
        "--random-inputs",
        "1",
        "--backend",
        "c",
        "--cflags",
        "-O2 -std=no-such-standard-for-teil",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("the C compiler `cc` failed"), "{err}");
    assert!(err.contains("no-such-standard-for-teil"), "{err}");
    let src = kept(&err);
    assert!(src.exists());
    let _ = std::fs::remove_dir_all(src.parent().expect("dir"));
}

#[test]
fn oracle_and_backend_flags_conflict() {
    let f = root().join("tests/run/matmul.teil");
    let o = teil(&["run", &f.to_string_lossy(), "--oracle", "--backend", "c"]);
    assert_eq!(o.status.code(), Some(2));
}
