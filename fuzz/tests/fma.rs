//! The fma-mode kernels of a campaign (spec/fuzzing.md, spec/values.md "Fused multiply-add"),
//! compiled for the machine the tests run on, so that they really fuse where it has FMA
//! instructions: every cell within the bound of the spec, no mismatch.

use std::process::Command;
use teil_fuzz::campaign::{self, Config};

/// The campaign's flags plus `-march=native`, where the compiler accepts it.
fn native_flags() -> Option<&'static str> {
    let flags = "-std=c99 -O0 -march=native";
    let probe = Command::new("cc")
        .args(flags.split_whitespace())
        .args(["-E", "-x", "c", "/dev/null"])
        .output()
        .ok()?;
    probe.status.success().then_some(flags)
}

#[test]
fn a_campaign_compiled_for_this_machine_keeps_fma_kernels_within_the_bound() {
    let Some(flags) = native_flags() else {
        eprintln!("skipped: cc does not accept -march=native");
        return;
    };
    let cfg = Config {
        programs: Some(120),
        seed: 16,
        jobs: 2,
        shrink: 1,
        toolchain: Config::default().toolchain.with_cflags(flags),
        ..Config::default()
    };
    let report = campaign::run(&cfg, &|_| {});
    let failures: Vec<String> = report
        .mismatches
        .iter()
        .flat_map(|m| {
            m.failures
                .iter()
                .map(move |f| format!("{}: {}", f.check.describe(), f.detail))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
    assert_eq!(report.stats.programs, 120);
    assert!(report.stats.fma >= 12, "{} fma kernels", report.stats.fma);
}
