//! The generator's own contract: what it produces is well-typed, warning-free, and survives
//! printing in both syntaxes.

use proptest::prelude::*;
use teil::fmt::{self, Style};
use teil_fuzz::gen::{self, GenConfig};

fn wide() -> GenConfig {
    GenConfig {
        max_rank: 4,
        max_depth: 5,
        max_stmts: 4,
        division: true,
        ..GenConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_check_without_diagnostics(p in gen::program(wide())) {
        match teil::check(p.clone()) {
            Ok((_, warnings)) => prop_assert!(warnings.is_empty(), "{warnings:#?}\n{}", fmt::program(&p, Style::Prefix)),
            Err(errs) => prop_assert!(false, "{errs:#?}\n{}", fmt::program(&p, Style::Prefix)),
        }
    }

    #[test]
    fn printed_programs_reparse_to_the_same_ast(p in gen::program(wide())) {
        for style in [Style::Prefix, Style::Infix] {
            let text = fmt::program(&p, style);
            let parsed = teil::parse(&text);
            prop_assert!(parsed.diagnostics.is_empty(), "{:#?}\n{text}", parsed.diagnostics);
            prop_assert!(parsed.program.same_as(&p), "{style:?} round trip changed\n{text}");
            prop_assert_eq!(fmt::program(&parsed.program, style), text);
        }
    }
}

#[test]
fn sampling_is_deterministic() {
    let s = gen::program(wide());
    let a = fmt::program(&gen::sample(&s, 7), Style::Prefix);
    let b = fmt::program(&gen::sample(&s, 7), Style::Prefix);
    let c = fmt::program(&gen::sample(&s, 8), Style::Prefix);
    assert_eq!(a, b);
    assert_ne!(a, c);
}
