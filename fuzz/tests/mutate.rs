//! The ill-typed generator: every mutation of a well-typed program is rejected with exactly the
//! diagnostic code of the rule it breaks, and no other error.

use std::collections::{BTreeMap, BTreeSet};
use teil::fmt::{program, Style};
use teil_fuzz::gen::{self, GenConfig};
use teil_fuzz::mutate::{ill_typed, Mutation};

#[test]
fn each_mutation_breaks_exactly_its_rule() {
    let strategy = gen::program(GenConfig {
        max_depth: 5,
        max_stmts: 4,
        ..GenConfig::default()
    });
    let mut hits: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..300u64 {
        let p = gen::sample(&strategy, seed);
        let (checked, _) = teil::check(p).expect("generated programs are well-typed");
        for m in Mutation::ALL {
            let Some(bad) = ill_typed(&checked, m, seed as usize) else {
                continue;
            };
            // Through text, as a user would see it.
            let text = program(
                &bad,
                if seed % 2 == 0 {
                    Style::Prefix
                } else {
                    Style::Infix
                },
            );
            let errors: BTreeSet<&str> = match teil::compile(&text) {
                Ok(_) => panic!("{m:?} was accepted:\n{text}"),
                Err(diags) => diags
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| d.code.as_str())
                    .collect(),
            };
            assert_eq!(
                errors,
                BTreeSet::from([m.expected().as_str()]),
                "{m:?} on seed {seed}:\n{text}"
            );
            *hits.entry(format!("{m:?}")).or_default() += 1;
        }
    }
    for m in Mutation::ALL {
        let n = hits.get(&format!("{m:?}")).copied().unwrap_or(0);
        assert!(n >= 10, "{m:?} applied only {n} times: {hits:?}");
    }
}
