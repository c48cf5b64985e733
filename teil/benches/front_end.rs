//! Times the front end (parse, check, format and read back: `parser_fuzz/input.rs`'s `check`)
//! on the four 10 KB inputs of `teil/tests/parser_fuzz.rs`, which checks only their verdicts.
//! Prints, per input, its size and the median and maximum of `ROUNDS` runs.
//!
//!     cargo bench -p teil --bench front_end
//!
//! Numbers of the development machine are in spec/validation.md, *In CI*.

#[path = "../tests/parser_fuzz/input.rs"]
mod input;

use std::path::Path;
use std::time::{Duration, Instant};

const ROUNDS: usize = 21;

fn main() {
    let corpus = input::Corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    for (name, input) in input::ten_kilobyte_inputs(&corpus) {
        let mut times: Vec<Duration> = (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                let outcome = input::check(&input).unwrap_or_else(|e| panic!("{name}: {e}"));
                std::hint::black_box(outcome);
                started.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "{name:>18}: {:>6} bytes, median {:>9.3?}, max {:>9.3?}",
            input.len(),
            times[ROUNDS / 2],
            times[ROUNDS - 1]
        );
    }
}
