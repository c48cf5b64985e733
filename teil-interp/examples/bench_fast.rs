//! Timing of the fast evaluator on the two kernels issue 3 names (spec/interpreter.md):
//!
//! `cargo run --release -p teil-interp --example bench_fast [-- N CFD_N]`
//!
//! - `C = (A # B) .[2 3]` on N×N matrices (default 512);
//! - the CFD operator of the TeIL paper §5, `v = (A # B # C # u) .[2 7] .[3 6] .[4 5]`, with
//!   CFD_N×CFD_N matrices and a CFD_N³ tensor (default 32).
//!
//! Prints wall time, the largest tensor the evaluator allocated and the number of pairwise
//! contractions, and checks one cell of each result against a direct sum.

use std::collections::BTreeMap;
use std::time::Instant;
use teil_interp::{fast, fast_store, random_inputs};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(512);
    let m = args.get(1).copied().unwrap_or(32);

    let src = format!("input var A : [{n} {n}]\ninput var B : [{n} {n}]\noutput var C : [{n} {n}]\nC = (A # B) .[2 3]");
    let (p, _) = teil::compile(&src).expect("the benchmark program checks");
    let inputs = random_inputs(&p, 1);
    let t = Instant::now();
    let (out, stats) = fast::run(&p, fast_store(&p, &inputs).unwrap(), fast::Mode::Values).unwrap();
    let dt = t.elapsed();
    let (a, b) = (&inputs["A"], &inputs["B"]);
    let want: f64 = (0..n as usize).map(|k| a[[3, k]] * b[[k, 5]]).sum();
    assert_eq!(out["C"][[3, 5]], want);
    println!(
        "matmul {n}x{n}: {:.3} s, peak tensor {} elements ({} = n^2), {} contraction(s)",
        dt.as_secs_f64(),
        stats.peak_elements,
        n * n,
        stats.contractions
    );

    let src = format!(
        "input var A : [{m} {m}]\ninput var B : [{m} {m}]\ninput var C : [{m} {m}]\n\
         input var u : [{m} {m} {m}]\noutput var v : [{m} {m} {m}]\n\
         v = (A # B # C # u) .[2 7] .[3 6] .[4 5]"
    );
    let (p, _) = teil::compile(&src).expect("the benchmark program checks");
    let inputs: BTreeMap<_, _> = random_inputs(&p, 2);
    let t = Instant::now();
    let (out, stats) = fast::run(&p, fast_store(&p, &inputs).unwrap(), fast::Mode::Values).unwrap();
    let dt = t.elapsed();
    let (a, b, c, u) = (&inputs["A"], &inputs["B"], &inputs["C"], &inputs["u"]);
    let mut want = 0.0;
    for j1 in 0..m as usize {
        for j2 in 0..m as usize {
            for j3 in 0..m as usize {
                want += a[[1, j1]] * b[[2, j2]] * c[[0, j3]] * u[[j1, j2, j3]];
            }
        }
    }
    assert_eq!(out["v"][[1, 2, 0]], want);
    println!(
        "CFD operator n={m}: {:.3} s, peak tensor {} elements ({} = n^3; the rank-9 product would have {}), {} contraction(s)",
        dt.as_secs_f64(),
        stats.peak_elements,
        m * m * m,
        (m as u128).pow(9),
        stats.contractions
    );
}
