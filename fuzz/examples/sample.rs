//! Prints a few generated programs: `cargo run -p teil-fuzz --example sample -- SEED [N]`.
use teil::fmt::{program, Style};
use teil_fuzz::gen::{self, GenConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let strategy = gen::program(GenConfig::default());
    for k in 0..n {
        let style = if k % 2 == 0 {
            Style::Prefix
        } else {
            Style::Infix
        };
        println!(
            "// seed {}\n{}",
            seed + k,
            program(&gen::sample(&strategy, seed + k), style)
        );
    }
}
