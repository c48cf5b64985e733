//! The cost of one [`SharedKernel::call`] on tiny inputs: everything but the kernel's own
//! arithmetic (checking names and shapes, padding, the call through the entry thunk, unpadding
//! into fresh arrays). Issue 11's goal is under 10 µs beyond the kernel's own time.
//!
//! ```sh
//! cargo run --release -p teil-cbackend --example shared_overhead
//! ```
//!
//! For each case it prints the median over 15 rounds of the mean time per call of a round of
//! 20 000 calls, and the compile time (first compile, then a cache hit). The kernels do a few
//! dozen floating-point operations, so the times are essentially the overhead.

use ndarray::ArrayD;
use std::collections::BTreeMap;
use std::time::Instant;
use teil_cbackend::shared::{SharedKernel, SharedOptions};

const ROUNDS: usize = 15;
const CALLS: usize = 20_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cases = [
        (
            "c = a + b, [2 2], M = 1 (inputs passed in place)",
            "input var a : [2 2]\ninput var b : [2 2]\noutput var c : [2 2]\nc = a + b",
            1,
        ),
        (
            "c = a + b, [2 2], M = 4 (inputs padded)",
            "input var a : [2 2]\ninput var b : [2 2]\noutput var c : [2 2]\nc = a + b",
            4,
        ),
        (
            "3-operand contraction [3 4] [4 5] [5 2], M = 1",
            "input var a : [3 4]\ninput var b : [4 5]\ninput var d : [5 2]\noutput var c : [3 2]\n\
             c = (a # b # d) .[2 3] .[2 3]",
            1,
        ),
    ];
    let cache = tempfile::tempdir()?;
    for (label, src, pad) in cases {
        let (program, _) = teil::compile(src).map_err(|d| format!("{d:?}"))?;
        let opts = SharedOptions {
            pad,
            cache_dir: Some(cache.path().to_path_buf()),
            ..SharedOptions::default()
        };
        let start = Instant::now();
        SharedKernel::compile(&program, &opts)?;
        let first = start.elapsed();
        let start = Instant::now();
        let kernel = SharedKernel::compile(&program, &opts)?;
        let hit = start.elapsed();

        let inputs: BTreeMap<String, ArrayD<f64>> = teil_interp::random_inputs(&program, 1);
        let views = inputs.iter().map(|(k, v)| (k.clone(), v.view())).collect();
        let mut rounds = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let start = Instant::now();
            for _ in 0..CALLS {
                std::hint::black_box(kernel.call(std::hint::black_box(&views))?);
            }
            rounds.push(start.elapsed().as_secs_f64() / CALLS as f64);
        }
        rounds.sort_by(f64::total_cmp);
        println!(
            "{label}: {:.2} µs per call (median; min {:.2}); compile {:.0} ms, cache hit {:.2} ms",
            rounds[ROUNDS / 2] * 1e6,
            rounds[0] * 1e6,
            first.as_secs_f64() * 1e3,
            hit.as_secs_f64() * 1e3,
        );
    }
    Ok(())
}
