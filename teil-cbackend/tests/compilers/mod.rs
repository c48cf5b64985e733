//! The compilers and flags under which exact mode must still compute the spec's values bit for
//! bit (spec/abi.md, "Floating point"): flags that let a compiler contract `a * b + c` into a
//! fused multiply-add. Shared by the exactness, differential, kernel-form and perf tests.
//!
//! GCC in its default GNU mode contracts wherever the target has FMA instructions
//! (`-march=native` on an FMA machine, `-mfma`); Clang contracts within a statement by default.
//! Clang is required where the environment variable `CI` is set (`.ci/run` installs Debian's
//! `clang`); elsewhere a missing Clang is reported and its flag sets left out.

#![allow(dead_code)] // each test binary uses part of it

use std::process::Command;
use teil_cbackend::run::Toolchain;

/// Whether `cc` compiles with `flags` (a probe of the empty translation unit's macros), and
/// the macros it then defines.
pub fn macros(cc: &str, flags: &str) -> Option<String> {
    let out = Command::new(cc)
        .args(flags.split_whitespace())
        .args(["-dM", "-E", "-x", "c", "/dev/null"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether this CPU executes FMA3 instructions (x86-64) or always has FMA (AArch64).
pub fn cpu_has_fma() -> bool {
    if cfg!(target_arch = "aarch64") {
        return true;
    }
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
        info.lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "fma"))
    })
}

/// Whether `-march=native` makes `cc` target FMA instructions here.
pub fn native_has_fma(cc: &str) -> bool {
    macros(cc, "-march=native").is_some_and(|m| {
        m.contains("#define __FMA__ 1") || m.contains("#define __ARM_FEATURE_FMA 1")
    })
}

/// Whether Clang is on `PATH`; in CI its absence fails the test.
pub fn clang() -> bool {
    let found = macros("clang", "").is_some();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "clang is not installed; CI needs it (apt-get install clang)"
        );
        eprintln!("note: clang not found, its flag sets are left out");
    }
    found
}

/// The flag sets under which a compiler would contract, each with a name for messages: `cc
/// -O3 -march=native` (GNU mode), `cc -O2 -mfma` where the CPU has FMA, and `clang -O3
/// -march=native`. Warnings are errors in all of them.
pub fn contracting() -> Vec<(String, Toolchain)> {
    let mut sets = Vec::new();
    let mut add = |cc: &str, flags: &str| {
        let tc = Toolchain {
            cc: cc.to_string(),
            ..Toolchain::default()
        }
        .with_cflags(&format!("{flags} -Wall -Wextra -Werror"));
        sets.push((format!("{cc} {flags}"), tc));
    };
    if macros("cc", "-march=native").is_some() {
        add("cc", "-O3 -march=native");
    }
    if cfg!(target_arch = "x86_64") && cpu_has_fma() {
        add("cc", "-O2 -mfma");
    }
    if clang() && macros("clang", "-march=native").is_some() {
        add("clang", "-O3 -march=native");
    }
    sets
}
