//! Measures the throughput of the differential campaign (spec/fuzzing.md):
//!
//! ```text
//! cargo run --release -p teil-fuzz --example throughput -- [--programs N] [--repeat R]
//!     [--seed S] [--jobs J] [--chunk C] [--pad 1,3,8] [--every-pad] [--isa host|ISA,...]
//!     [--cc CC] [--cflags "-std=c99 -O0"] [--no-validate]
//! ```
//!
//! Runs the same campaign (default settings unless given: 1000 programs, seed 20261122) R times
//! (default 3) and prints each run's summary line, its counters, the minimum and median rate in
//! programs per second, and where the time of all runs went, phase by phase
//! ([`teil_fuzz::profile`]). Exits 1 if any run finds a mismatch.

use std::process::ExitCode;
use teil_fuzz::campaign::{self, Config};
use teil_fuzz::isa::Isa;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let num = |name: &str, default: u64| -> u64 {
        arg(&args, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let mut cfg = Config {
        programs: Some(num("--programs", 1000)),
        seed: num("--seed", 20261122),
        ..Config::default()
    };
    cfg.jobs = num("--jobs", cfg.jobs as u64) as usize;
    cfg.chunk = num("--chunk", cfg.chunk as u64) as usize;
    if let Some(p) = arg(&args, "--pad") {
        cfg.pads = p.split(',').filter_map(|m| m.parse().ok()).collect();
    }
    if let Some(f) = arg(&args, "--cflags") {
        cfg.toolchain = cfg.toolchain.with_cflags(&f);
    }
    if let Some(cc) = arg(&args, "--cc") {
        cfg.toolchain.cc = cc;
    }
    cfg.every_pad = args.iter().any(|a| a == "--every-pad");
    cfg.isas = match Isa::parse_list(&arg(&args, "--isa").unwrap_or_else(|| "host".into())) {
        Ok(Some(isas)) => isas,
        Ok(None) => Isa::host(&cfg.toolchain.cflags),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    cfg.validation = !args.iter().any(|a| a == "--no-validate");
    let repeat = num("--repeat", 3).max(1);
    println!(
        "campaign: {} programs, seed {}, {} jobs, chunks of {}, pads {:?}{}, kernel targets {}, \
         cc {} {}",
        cfg.programs.unwrap_or(0),
        cfg.seed,
        cfg.jobs,
        cfg.chunk,
        cfg.pads,
        if cfg.every_pad {
            " (every one)"
        } else {
            " (one drawn)"
        },
        cfg.isas
            .iter()
            .map(|i| i.name())
            .collect::<Vec<_>>()
            .join(","),
        cfg.toolchain.cc,
        cfg.toolchain.cflags.join(" ")
    );
    let mut rates = Vec::new();
    let mut clean = true;
    let mut profile = teil_fuzz::profile::Profile::default();
    let mut programs = 0;
    let (mut kernels, mut seconds) = (0, 0.0);
    for r in 0..repeat {
        let report = campaign::run(&cfg, &|_| {});
        let s = &report.stats;
        println!(
            "run {}: {} ({:.2} s; {} kernels in {} compiler runs, {} lifted, {} compared within rounding, {} judged permitted, {} undecided; {} validated, {} too large to validate; {} variants, {} mutants, {} discarded)",
            r + 1,
            report.summary(),
            report.elapsed.as_secs_f64(),
            s.kernels,
            s.compiles,
            s.lifted,
            s.bounded,
            s.permitted,
            s.undecided,
            s.validated,
            s.not_validated,
            s.variants,
            s.mutants,
            s.discarded
        );
        for m in &report.mismatches {
            for f in &m.failures {
                println!(
                    "  program {:?} (seed {}): {}: {}",
                    m.index,
                    m.seed,
                    f.check.describe(),
                    f.detail.lines().next().unwrap_or("")
                );
            }
        }
        clean &= report.mismatches.is_empty();
        rates.push(report.rate());
        profile.add(&s.profile);
        programs += s.programs;
        kernels += s.kernels;
        seconds += report.elapsed.as_secs_f64();
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "programs/s: min {:.1}, median {:.1}, max {:.1}",
        rates[0],
        rates[rates.len() / 2],
        rates[rates.len() - 1]
    );
    println!(
        "kernels compiled and judged: {:.1} per program, {:.0} per second",
        kernels as f64 / programs.max(1) as f64,
        kernels as f64 / seconds.max(1e-9)
    );
    print!(
        "where the time went (thread time, all runs):\n{}",
        profile.table(programs)
    );
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
