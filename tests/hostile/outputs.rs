//! Hostile inputs: output files (planted symbolic links, all-or-nothing writes, stale
//! temporaries), special input files, and identifiers too long for a format width.
//!
//! Every case byte-compares what must not change (spec/interpreter.md, "Output files").

use crate::support::*;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A program with two outputs, `C` and `D`, whose values the test knows: `C = A`, `D = A * A`.
const TWO_OUTPUTS: &str = "input alloc A : [2]\noutput alloc C : [2]\noutput alloc D : [2]\n\
                           C = A\nD = mul A A\n";

/// The `.npy` bytes of a float64 vector, as `teil` writes them.
fn npy(values: &[f64]) -> Vec<u8> {
    let t = teil_interp::Tensor::from_shape_vec(vec![values.len()], values.to_vec()).unwrap();
    teil_io::npy::to_bytes(&t)
}

struct Setup {
    dir: tempfile::TempDir,
    program: String,
    input: String,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("two.teil");
        std::fs::write(&program, TWO_OUTPUTS).unwrap();
        let input = dir.path().join("a.npy");
        std::fs::write(&input, npy(&[2.0, 3.0])).unwrap();
        Setup {
            program: program.to_string_lossy().into_owned(),
            input: format!("A={}", input.display()),
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `teil run` of the two-output program into `out`.
    fn run(&self, out: &Path) -> Outcome {
        Case::new([
            "run",
            &self.program,
            "--in",
            &self.input,
            "--out",
            &out.to_string_lossy(),
        ])
        .run()
    }
}

fn staging_entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".teil-tmp-"))
        .collect()
}

#[test]
fn a_symlink_planted_at_the_old_temporary_name_is_not_followed() {
    let s = Setup::new();
    let out = s.path("out");
    std::fs::create_dir(&out).unwrap();
    let target = s.path("precious");
    std::fs::write(&target, "precious\n").unwrap();
    // The names the old implementation used (`.NAME.npy.tmp<PID>`), for the next few thousand
    // process ids, as an attacker would plant them: writing through any of them would change
    // the target.
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    for pid in last + 1..=last + 5000 {
        for name in [format!(".C.npy.tmp{pid}"), format!(".D.npy.tmp{pid}")] {
            std::os::unix::fs::symlink(&target, out.join(name)).unwrap();
        }
    }
    s.run(&out).exits(0);
    assert_eq!(std::fs::read(&target).unwrap(), b"precious\n");
    assert_eq!(std::fs::read(out.join("C.npy")).unwrap(), npy(&[2.0, 3.0]));
    assert_eq!(std::fs::read(out.join("D.npy")).unwrap(), npy(&[4.0, 9.0]));
    assert!(staging_entries(&out).is_empty());
}

#[test]
fn a_symlink_at_the_destination_is_replaced_and_its_target_kept() {
    let s = Setup::new();
    let out = s.path("out");
    std::fs::create_dir(&out).unwrap();
    let target = s.path("passwd");
    std::fs::write(&target, "root:x:0:0\n").unwrap();
    std::os::unix::fs::symlink(&target, out.join("C.npy")).unwrap();
    s.run(&out).exits(0);
    assert_eq!(std::fs::read(&target).unwrap(), b"root:x:0:0\n");
    let c = out.join("C.npy");
    assert!(std::fs::symlink_metadata(&c).unwrap().is_file());
    assert_eq!(std::fs::read(&c).unwrap(), npy(&[2.0, 3.0]));
}

#[test]
fn a_refused_second_output_leaves_the_first_as_it_was() {
    let s = Setup::new();
    let out = s.path("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("C.npy"), "old C\n").unwrap();
    // A write-protected `D.npy` (as `cp` or `>` would, `teil` does not replace it) ...
    let d = out.join("D.npy");
    std::fs::write(&d, "old D\n").unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o444)).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let o = s.run(&out);
        o.exits(2);
        assert!(
            o.stderr.contains("D.npy`: the file is write-protected"),
            "{}",
            o.stderr
        );
        assert_eq!(std::fs::read(out.join("C.npy")).unwrap(), b"old C\n");
        assert_eq!(std::fs::read(&d).unwrap(), b"old D\n");
        assert!(staging_entries(&out).is_empty());
    }
    // ... and a directory in its place (refused for root too).
    std::fs::remove_file(&d).unwrap();
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("keep"), "kept\n").unwrap();
    let o = s.run(&out);
    o.exits(2);
    assert!(
        o.stderr.contains("D.npy`: it is a directory"),
        "{}",
        o.stderr
    );
    assert_eq!(std::fs::read(out.join("C.npy")).unwrap(), b"old C\n");
    assert_eq!(std::fs::read(d.join("keep")).unwrap(), b"kept\n");
    assert!(staging_entries(&out).is_empty());
}

#[test]
fn an_unwritable_output_directory_changes_nothing() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return; // root writes anywhere
    }
    let s = Setup::new();
    let out = s.path("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("C.npy"), "old C\n").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).unwrap();
    let o = s.run(&out);
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    o.exits(2);
    assert!(o.stderr.contains("Permission denied"), "{}", o.stderr);
    assert_eq!(std::fs::read(out.join("C.npy")).unwrap(), b"old C\n");
    assert!(!out.join("D.npy").exists());
}

#[test]
fn a_killed_runs_staging_directory_is_removed_by_the_next_run() {
    let s = Setup::new();
    let out = s.path("out");
    std::fs::create_dir(&out).unwrap();
    // What a run killed while writing leaves: its staging directory with a large partial file.
    let stale = out.join(".teil-tmp-Xk3q9Z");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join(".tmpA1b2C3"), vec![0u8; 1 << 20]).unwrap();
    let old = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // A younger one may belong to a run that is starting now: it is kept.
    let young = out.join(".teil-tmp-young1");
    std::fs::create_dir(&young).unwrap();
    s.run(&out).exits(0);
    assert!(!stale.exists());
    assert!(young.exists());
    assert_eq!(staging_entries(&out), vec![".teil-tmp-young1".to_string()]);
    assert_eq!(std::fs::read(out.join("C.npy")).unwrap(), npy(&[2.0, 3.0]));
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn special_input_files_are_refused_promptly() {
    let s = Setup::new();
    let fifo = s.path("fifo.npy");
    mkfifo(&fifo);
    let cases = [
        (fifo.clone(), "a named pipe (FIFO)"),
        (s.path(""), "a directory"),
        (PathBuf::from("/dev/zero"), "a character device"),
    ];
    for (path, kind) in cases {
        let input = format!("A={}", path.display());
        let o = Case::new(["run", &s.program, "--in", &input])
            .deadline(Duration::from_secs(5))
            .run();
        o.exits(2).within(Duration::from_secs(5));
        let expected = format!(
            "error: cannot read input `A` from `{}`: it is {kind}, not a regular file",
            path.display()
        );
        assert!(o.stderr.contains(&expected), "{}", o.stderr);
    }
}

#[test]
fn a_fifo_given_to_trace_does_not_block() {
    let s = Setup::new();
    let fifo = s.path("fifo.npy");
    mkfifo(&fifo);
    let input = format!("A={}", fifo.display());
    let o = Case::new(["trace", &s.program, "C[1]", "--in", &input])
        .deadline(Duration::from_secs(5))
        .run();
    o.exits(2);
    assert!(
        o.stderr
            .contains("it is a named pipe (FIFO), not a regular file"),
        "{}",
        o.stderr
    );
}

/// A program whose input variable has an `n`-character name.
fn long_identifier_program(dir: &Path, n: usize) -> (String, String) {
    let name = format!("A{}", "b".repeat(n - 1));
    let path = dir.join(format!("long{n}.teil"));
    std::fs::write(
        &path,
        format!("input alloc {name} : [2]\noutput alloc C : [2]\nC = add {name} {name}\n"),
    )
    .unwrap();
    (path.to_string_lossy().into_owned(), name)
}

#[test]
fn long_identifiers_in_emit_c() {
    let dir = tempfile::tempdir().unwrap();
    for n in [65_536, 1_000_000] {
        let (program, name) = long_identifier_program(dir.path(), n);
        let out = dir.path().join(format!("long{n}.c"));
        Case::new(["emit-c", &program, "-o", &out.to_string_lossy()])
            .run()
            .exits(0);
        let c = std::fs::read_to_string(&out).unwrap();
        // The C name is the first 40 characters behind `v_`: 63 significant characters are
        // all C99 guarantees. The TeIL name is shown once in the header comment.
        let short = format!("v_{}", &name[..40]);
        assert!(
            c.contains(&format!("void teil_kernel(double *restrict {short}, ")),
            "{}",
            &c[..2000.min(c.len())]
        );
        assert_eq!(c.matches(name.as_str()).count(), 1);
        assert!(c.len() < n + 10_000, "the C is {} bytes", c.len());
    }
}

#[test]
fn long_identifiers_in_run_with_the_c_backend() {
    let dir = tempfile::tempdir().unwrap();
    for n in [65_536, 1_000_000] {
        let (program, name) = long_identifier_program(dir.path(), n);
        let run = |backend: &str| {
            let out = dir.path().join(format!("{backend}{n}"));
            let mut args = vec![
                "run".to_string(),
                program.clone(),
                "--backend".to_string(),
                backend.to_string(),
                "--out".to_string(),
                out.to_string_lossy().into_owned(),
            ];
            // One argument may not exceed 128 KiB (Linux), so the longer name cannot be
            // given to `--in`: random inputs, compared with the fast evaluator's results.
            if n < 100_000 {
                let input = dir.path().join("in.npy");
                std::fs::write(&input, npy(&[1.5, -2.0])).unwrap();
                args.extend(["--in".to_string(), format!("{name}={}", input.display())]);
            } else {
                args.extend(["--random-inputs".to_string(), "3".to_string()]);
            }
            Case::new(args).run().exits(0);
            std::fs::read(out.join("C.npy")).unwrap()
        };
        let c = run("c");
        assert_eq!(c, run("fast"));
        if n < 100_000 {
            assert_eq!(c, npy(&[3.0, -4.0]));
        }
    }
}

#[test]
fn special_program_files_are_refused_promptly() {
    // The program file itself goes through the same reader as inputs (issue 24, item 5):
    // `teil check FIFO` blocked forever, `teil check /dev/zero` read until memory ran out.
    let s = Setup::new();
    let fifo = s.path("fifo.teil");
    mkfifo(&fifo);
    let cases = [
        (fifo.clone(), "a named pipe (FIFO)"),
        (s.path(""), "a directory"),
        (PathBuf::from("/dev/zero"), "a character device"),
    ];
    for (path, kind) in cases {
        let path = path.display().to_string();
        for sub in ["check", "emit-c", "fmt"] {
            let o = Case::new([sub, &path])
                .deadline(Duration::from_secs(5))
                .run();
            o.exits(2).within(Duration::from_secs(5));
            let expected = format!("cannot read `{path}`: it is {kind}, not a regular file");
            assert!(o.stderr.contains(&expected), "{sub} {path}: {}", o.stderr);
        }
    }
}
