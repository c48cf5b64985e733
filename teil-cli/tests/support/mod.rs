//! Helpers shared by the CLI tests: running the binary, reading its output, writing inputs.

#![allow(dead_code)] // each test file uses a subset

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository root (the corpus under `tests/`, `examples/`, `spec/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `teil ARGS` with `input` on standard input.
pub fn teil_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_teil"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("teil runs");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input)
        .expect("write stdin");
    child.wait_with_output().expect("teil finishes")
}

/// `teil ARGS` in the current directory, without colour.
pub fn teil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teil"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("teil runs")
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Writes `src` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, src: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, src).expect("write");
    p.to_string_lossy().into_owned()
}

pub fn teil_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teil"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("teil runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `N programs, K mismatches, R programs/s` on a line of its own: returns (N, K).
pub fn summary(o: &Output) -> (u64, u64) {
    let out = stdout(o);
    let line = out.strip_suffix('\n').unwrap_or(&out);
    assert!(
        !line.contains('\n'),
        "more than one line on stdout: {out:?}"
    );
    let parts: Vec<&str> = line.split(", ").collect();
    assert_eq!(parts.len(), 3, "{line}");
    let n = parts[0]
        .strip_suffix(" programs")
        .expect(line)
        .parse()
        .expect(line);
    let k = parts[1]
        .strip_suffix(" mismatches")
        .expect(line)
        .parse()
        .expect(line);
    let r: f64 = parts[2]
        .strip_suffix(" programs/s")
        .expect(line)
        .parse()
        .expect(line);
    assert!(r >= 0.0, "{line}");
    (n, k)
}

/// `teil ARGS` in `dir` with the environment variables `envs` set (and `TEIL_TARGET_CPU`
/// removed), failing the test if it runs past 30 s: what a hang looks like to a test.
pub fn teil_within(dir: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    use std::time::{Duration, Instant};
    let mut command = Command::new(env!("CARGO_BIN_EXE_teil"));
    command
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TEIL_TARGET_CPU")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("teil runs");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("`teil {}` hangs", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Makes a named pipe (FIFO) at `path` (`mkfifo`).
pub fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(ok.success());
}
