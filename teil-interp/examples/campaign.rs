//! A long differential campaign (spec/interpreter.md):
//!
//! `cargo run --release -p teil-interp --example campaign -- --programs 10000 [--seed S]`
//!
//! For each of N random well-typed programs (teil-fuzz's generator, deterministic in the seed):
//! the oracle runs on random small-integer inputs and must never trip the out-of-bounds witness
//! or fail; the fast evaluator must agree exactly on programs without division, and within the
//! ulp bound of the division test on programs with division (non-finite cells excepted and
//! counted); the Core-TeIL desugaring must evaluate to the same store. Prints a summary and
//! exits 1 on the first disagreement, with the program.

use std::process::ExitCode;
use teil_fuzz::gen::{program, sample, GenConfig};
use teil_interp::{random_inputs, run_fast, run_oracle, same_values, ulps_apart};

const DIVISION_ULPS: u64 = 1 << 10;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let n = arg("--programs", 10_000);
    let seed0 = arg("--seed", 0);
    let plain = program(GenConfig::default());
    let division = program(GenConfig {
        division: true,
        ..GenConfig::default()
    });
    let big = program(GenConfig {
        max_depth: 6,
        max_inner_rank: 6,
        max_elements: 2048,
        max_stmts: 4,
        ..GenConfig::default()
    });
    let (mut exact, mut bounded, mut nonfinite, mut cells) = (0u64, 0u64, 0u64, 0u64);
    let start = std::time::Instant::now();
    for k in 0..n {
        let seed = seed0.wrapping_add(k);
        let with_division = k % 3 == 1;
        let p = match k % 3 {
            0 => sample(&plain, seed),
            1 => sample(&division, seed),
            _ => sample(&big, seed),
        };
        let (c, _) = match teil::check(p) {
            Ok(c) => c,
            Err(d) => {
                eprintln!("seed {seed}: the generator produced an ill-typed program: {d:?}");
                return ExitCode::from(1);
            }
        };
        let text = teil::fmt::program(c.program(), teil::fmt::Style::Infix);
        let inputs = random_inputs(&c, seed);
        let oracle = match run_oracle(&c, &inputs) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("seed {seed}: the oracle failed: {e}\n{text}");
                return ExitCode::from(1);
            }
        };
        let fast = match run_fast(&c, &inputs) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("seed {seed}: the fast evaluator failed: {e}\n{text}");
                return ExitCode::from(1);
            }
        };
        let mut saw_nonfinite = false;
        for (name, want) in &oracle {
            cells += want.len() as u64;
            let got = &fast[name];
            if with_division {
                for (&x, &y) in want.iter().zip(got.iter()) {
                    let d = ulps_apart(x, y);
                    if d > 0 && x.is_finite() && y.is_finite() && d > DIVISION_ULPS {
                        eprintln!("seed {seed}: `{name}` {x} vs {y} ({d} ulps)\n{text}");
                        return ExitCode::from(1);
                    }
                    saw_nonfinite |= d > 0 && !(x.is_finite() && y.is_finite());
                }
            } else if !same_values(want, got) {
                eprintln!("seed {seed}: `{name}` differs\noracle {want}\nfast {got}\n{text}");
                return ExitCode::from(1);
            }
        }
        if with_division {
            bounded += 1;
            nonfinite += u64::from(saw_nonfinite);
        } else {
            exact += 1;
        }
        // Core-TeIL evaluates to the same store (oracle).
        if let Ok(core) = teil::core::desugar(&c) {
            let Ok((core, _)) = teil::check(core) else {
                eprintln!("seed {seed}: the Core-TeIL form does not check\n{text}");
                return ExitCode::from(1);
            };
            match run_oracle(&core, &inputs) {
                Ok(o) if o.iter().all(|(name, v)| same_values(v, &oracle[name])) => {}
                _ => {
                    eprintln!("seed {seed}: the Core-TeIL form evaluates differently\n{text}");
                    return ExitCode::from(1);
                }
            }
        }
        if (k + 1) % 1000 == 0 {
            eprintln!("{} programs, {:.1} s", k + 1, start.elapsed().as_secs_f64());
        }
    }
    println!(
        "{n} programs ({exact} compared exactly, {bounded} with division within {DIVISION_ULPS} ulps, \
         {nonfinite} of those with differing non-finite cells), {cells} cells; the witness never fired; \
         {:.1} s",
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
