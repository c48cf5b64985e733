//! How often the campaign's programs reach each kernel form of the C backend (issue 15): over
//! the first N programs of a campaign (default 1,000, seed 1), the share of programs whose
//! kernel, at some padding multiple of the default campaign, has a packed contraction step, a
//! dot contraction step, a step of dot products in lanes, a tiled step
//! (`teil_cbackend::opt::printing`), an interchanged nest (one with a `Node::Fold`).
//!
//! ```text
//! cargo run --release -p teil-fuzz --example kernel_forms -- [N] [SEED]
//! ```
//!
//! Programs are generated exactly as `teil fuzz` generates them (`campaign::flavour`,
//! `campaign::program_at`, `campaign::program_seed`; four of every twenty are the kernel-form
//! templates of `teil_fuzz::forms`) and lowered with the default options.

use teil_cbackend::ir::{walk_step, Node, Visit};
use teil_cbackend::opt::Printing;
use teil_fuzz::campaign::{self, Config};
use teil_fuzz::gen;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let pads = Config::default().pads;
    let kinds = [
        Printing::Packed,
        Printing::Dot,
        Printing::LaneSums,
        Printing::Tiled,
    ];
    let interchanged = kinds.len();
    let mut reached = [0u64; 5];
    // The same counts over the generator's programs alone (indices that are not templates).
    let mut generated = [0u64; 5];
    let mut checked = 0u64;
    for index in 0..n {
        let strategy = gen::program(campaign::flavour(index));
        let (p, _) = campaign::program_at(&strategy, index, campaign::program_seed(seed, index));
        let Ok((c, _)) = teil::check(p) else {
            continue;
        };
        checked += 1;
        let mut seen = [false; 5];
        for &pad in &pads {
            let opts = teil_cbackend::Options {
                pad,
                ..teil_cbackend::Options::default()
            };
            let Ok(k) = teil_cbackend::lower(&c, &opts) else {
                continue;
            };
            for h in teil_cbackend::opt::printing(&k) {
                if let Some(i) = kinds.iter().position(|&x| x == h) {
                    seen[i] = true;
                }
            }
            for s in &k.steps {
                walk_step(s, &mut |v| {
                    seen[interchanged] |= matches!(v, Visit::Node(Node::Fold { .. }))
                });
            }
        }
        for (r, s) in reached.iter_mut().zip(seen) {
            *r += u64::from(s);
        }
        if teil_fuzz::forms::program(index, 0).is_none() {
            for (r, s) in generated.iter_mut().zip(seen) {
                *r += u64::from(s);
            }
        }
    }
    println!("{checked} programs (seed {seed}, pads {pads:?})");
    let names = kinds
        .iter()
        .map(|k| format!("{k:?}"))
        .chain(["Interchanged".to_string()]);
    for ((k, r), g) in names.zip(reached).zip(generated) {
        let share = 100.0 * r as f64 / checked.max(1) as f64;
        println!("{k}: {r} programs ({share:.1} %), {g} of them not templates");
    }
}
