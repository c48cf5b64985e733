//! Front-end robustness fuzzing, bounded for CI (spec/validation.md, *Parser fuzzing*).
//!
//! The same inputs as the libFuzzer target (`fuzz/libfuzzer`): arbitrary bytes decoded by
//! `parser_fuzz/input.rs` into raw text, grammar-aware mutations and splices of the corpus,
//! deep nesting, token soup, index notation and einsum equations. Every input must go through
//! the whole front end without a panic, a hang or a stack overflow; a rejected input carries an
//! error diagnostic with a well-formed code; an accepted one formats and reads back as the same
//! program. Each input is timed: the bound is generous (a hang detector, not a benchmark).
//!
//! `teil/tests/robustness.rs` covers the documented pathological inputs one by one; this file
//! explores around them.

#[path = "parser_fuzz/input.rs"]
mod input;

use input::{check, decode, Corpus, Input};
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let c = Corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
        assert!(c.teil.len() > 50 && c.tin.len() > 5, "corpus not found");
        c
    })
}

/// Time one input may take through the whole front end (inputs here are at most a few tens of
/// KB): a hang detector, generous enough for an unoptimised build on a loaded machine.
const BUDGET: Duration = Duration::from_secs(2);

fn run(input: &Input) -> Result<input::Outcome, String> {
    let started = Instant::now();
    let out = check(input);
    let took = started.elapsed();
    if took > BUDGET {
        return Err(format!(
            "{} bytes took {took:?} (budget {BUDGET:?})",
            input.len()
        ));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The libFuzzer target's input space, sampled uniformly.
    #[test]
    fn decoded_inputs_keep_every_front_end_property(
        bytes in proptest::collection::vec(any::<u8>(), 0..600)
    ) {
        let input = decode(&bytes, corpus());
        if let Err(e) = run(&input) {
            prop_assert!(false, "{e}\ninput: {input:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Mutation-heavy inputs: the first byte forces a corpus mutation (2..=4) or a splice (5),
    /// the rest steers many rounds.
    #[test]
    fn mutated_and_spliced_corpus_programs(
        mode in 2u8..=5,
        bytes in proptest::collection::vec(any::<u8>(), 8..300)
    ) {
        let mut data = vec![mode];
        data.extend(bytes);
        let input = decode(&data, corpus());
        prop_assert!(matches!(input, Input::Teil(_)));
        if let Err(e) = run(&input) {
            prop_assert!(false, "{e}\ninput: {input:?}");
        }
    }
}

/// Every corpus program, once mutated by every single-byte mutation selector: deterministic
/// coverage of each mutation on each program.
#[test]
fn each_mutation_on_each_corpus_program() {
    let c = corpus();
    let (mut accepted, mut rejected) = (0, 0);
    for (i, _) in c.teil.iter().enumerate() {
        for op in 0..8u8 {
            // mode 2, program i (two bytes), one round (two bytes: 0), mutation op, then
            // positions.
            let data = [2, (i >> 8) as u8, i as u8, 0, 0, op, 0, 3, 0, 1, 7, 0, 2];
            let input = decode(&data, c);
            match run(&input) {
                Ok(o) if o.accepted => accepted += 1,
                Ok(_) => rejected += 1,
                Err(e) => panic!("{e}\ninput: {input:?}"),
            }
        }
    }
    // Both verdicts occur: mutations do not only produce garbage.
    assert!(
        accepted > 20 && rejected > 20,
        "{accepted} accepted, {rejected} rejected"
    );
}

/// Deep nesting of every kind, at depths around and far beyond the limit, balanced and cut
/// off, within the time budget; the deepest accepted ones round-trip (checked in `check`).
#[test]
fn deep_nesting_of_every_kind() {
    let c = corpus();
    let mut codes = std::collections::BTreeSet::new();
    for kind in 0..8u8 {
        for depth in [0u16, 1, 100, 255, 256, 511, 512, 513, 2999] {
            for cut in [0u8, 1, 2] {
                let d = depth.to_be_bytes();
                let input = decode(&[6, d[0], d[1], kind, cut], c);
                let outcome = run(&input).unwrap_or_else(|e| panic!("{e}\ninput: {input:?}"));
                codes.extend(outcome.codes);
            }
        }
    }
    // The nesting limit and the rank limit are both hit.
    assert!(codes.contains("E0005"), "{codes:?}");
    assert!(codes.contains("E0104"), "{codes:?}");
}

/// A 10 KB input of each generated kind goes through the whole front end with its expected
/// verdict: the token soup gets lexical and syntax errors, the 2,501-term sum exceeds the
/// nesting limit (E0005), the 1,000 statements are accepted, and the corpus cut at 10,000
/// characters is rejected (its codes depend on which files the corpus holds). How long they
/// take is measured by `cargo bench -p teil --bench front_end` (spec/validation.md, *In CI*),
/// not asserted here (no [`run`] budget either): a timed test fails on a loaded machine.
#[test]
fn ten_kilobyte_inputs_get_their_verdicts() {
    let mut verdicts = Vec::new();
    for (name, input) in input::ten_kilobyte_inputs(corpus()) {
        assert!(input.len() >= 9_000, "{name}: {}", input.len());
        let outcome = check(&input).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut codes = outcome.codes;
        codes.sort_unstable();
        codes.dedup();
        if name == "corpus prefix" {
            assert!(!codes.is_empty(), "{name}: rejected without a code");
            codes.clear();
        }
        verdicts.push((name, outcome.accepted, codes));
    }
    assert_eq!(
        verdicts,
        [
            ("token soup", false, vec!["E0001", "E0002"]),
            ("corpus prefix", false, vec![]),
            ("2,501-term sum", false, vec!["E0005"]),
            ("1,000 statements", true, vec![]),
        ]
    );
}
