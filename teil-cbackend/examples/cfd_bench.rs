//! Times the generated C for the CFD operator of the TeIL paper §5,
//! `v = (A # B # C # u) .[2 7] .[3 6] .[4 5]`, with and without contraction lifting.
//!
//! `cargo run --release -p teil-cbackend --example cfd_bench [-- CC [FLAGS...]]`
//!
//! For each n the kernel is compiled (default `cc -O2`) with a small timing `main` that calls
//! it repeatedly for at least 0.2 s of CPU time; only kernel calls are timed. The growth
//! exponent is the least-squares slope of log(time) against log(n); lifting should give about
//! 4 (O(n^4)), the fused nest about 6. The static work count of the loop IR is printed too.
//! This is a benchmark, not a test: timings depend on the machine.

use std::process::Command;
use teil_cbackend::Options;

const SIZES: [u64; 5] = [4, 8, 12, 16, 24];

fn program(n: u64) -> String {
    format!(
        "input var A : [{n} {n}]\ninput var B : [{n} {n}]\ninput var C : [{n} {n}]\n\
         input var u : [{n} {n} {n}]\noutput var v : [{n} {n} {n}]\n\
         v = (A # B # C # u) .[2 7] .[3 6] .[4 5]\n"
    )
}

const MAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void teil_kernel(double *restrict A, double *restrict B, double *restrict C,
                 double *restrict u, double *restrict v);

int main(int argc, char **argv)
{
    long n2 = atol(argv[1]), n3 = atol(argv[2]), i;
    double *A = calloc(n2, sizeof(double)), *B = calloc(n2, sizeof(double));
    double *C = calloc(n2, sizeof(double)), *u = calloc(n3, sizeof(double));
    double *v = calloc(n3, sizeof(double));
    long reps = 1, r;
    double secs;
    (void)argc;
    for (i = 0; i < n2; i++) {
        A[i] = (double)(i % 7) - 3.0;
        B[i] = (double)(i % 5) - 2.0;
        C[i] = (double)(i % 3) - 1.0;
    }
    for (i = 0; i < n3; i++)
        u[i] = (double)(i % 11) - 5.0;
    for (;;) {
        clock_t t0 = clock();
        for (r = 0; r < reps; r++)
            teil_kernel(A, B, C, u, v);
        secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
        if (secs >= 0.2)
            break;
        reps *= 2;
    }
    printf("%.9g %g\n", secs / reps, v[0]);
    free(A); free(B); free(C); free(u); free(v);
    return 0;
}
"#;

fn time(n: u64, lift: bool, cc: &str, flags: &[String], dir: &std::path::Path) -> (f64, u128) {
    let (p, _) = teil::compile(&program(n)).expect("the CFD operator checks");
    let opts = Options {
        pad: 1,
        lift,
        ..Options::default()
    };
    let kernel = teil_cbackend::lower(&p, &opts).expect("lowers");
    let src = dir.join(format!("cfd_{n}_{lift}.c"));
    let main = dir.join("main.c");
    let exe = dir.join(format!("cfd_{n}_{lift}"));
    std::fs::write(&src, teil_cbackend::print::module(&[&kernel])).expect("write");
    std::fs::write(&main, MAIN).expect("write");
    let status = Command::new(cc)
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg(&main)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compilation failed");
    let out = Command::new(&exe)
        .arg((n * n).to_string())
        .arg((n * n * n).to_string())
        .output()
        .expect("run the benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    let secs: f64 = text
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .expect("a time");
    (secs, kernel.work())
}

/// Least-squares slope of log(y) against log(x).
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let lx: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let ly: Vec<f64> = ys.iter().map(|y| y.ln()).collect();
    let mx = lx.iter().sum::<f64>() / lx.len() as f64;
    let my = ly.iter().sum::<f64>() / ly.len() as f64;
    let num: f64 = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = lx.iter().map(|x| (x - mx) * (x - mx)).sum();
    num / den
}

fn main() {
    let mut args = std::env::args().skip(1);
    let cc = args.next().unwrap_or_else(|| "cc".to_string());
    let mut flags: Vec<String> = args.collect();
    if flags.is_empty() {
        flags.push("-O2".to_string());
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    println!(
        "CFD operator v = (A # B # C # u) .[2 7] .[3 6] .[4 5], {cc} {}",
        flags.join(" ")
    );
    println!(
        "{:>4}  {:>14}  {:>12}  {:>14}  {:>12}",
        "n", "lifted s/call", "lifted work", "fused s/call", "fused work"
    );
    let mut rows = Vec::new();
    for n in SIZES {
        let (tl, wl) = time(n, true, &cc, &flags, dir.path());
        let (tf, wf) = time(n, false, &cc, &flags, dir.path());
        println!("{n:>4}  {tl:>14.3e}  {wl:>12}  {tf:>14.3e}  {wf:>12}");
        rows.push((n as f64, tl, wl as f64, tf, wf as f64));
    }
    let ns: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let col = |f: fn(&(f64, f64, f64, f64, f64)) -> f64| rows.iter().map(f).collect::<Vec<_>>();
    println!(
        "growth exponent (time):  lifted {:.2}, fused {:.2}",
        slope(&ns, &col(|r| r.1)),
        slope(&ns, &col(|r| r.3))
    );
    println!(
        "growth exponent (work):  lifted {:.2}, fused {:.2}",
        slope(&ns, &col(|r| r.2)),
        slope(&ns, &col(|r| r.4))
    );
}
