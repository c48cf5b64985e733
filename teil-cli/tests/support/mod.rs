//! Helpers shared by the `teil fuzz` CLI tests (`fuzz_cli.rs`, `fuzz_target.rs`).

#![allow(dead_code)] // each test file uses a subset

use std::path::Path;
use std::process::{Command, Output};

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
