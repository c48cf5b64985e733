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

/// The compiler profile with everything on: the functions and the kernels written with them
/// (softmax, layer norm, GELU, attention, ...), binary32, division.
fn kernels() -> GenConfig {
    GenConfig {
        division: true,
        ..teil_fuzz::case::compiler_flavour(0)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn compiler_programs_with_the_kernels_check_and_reprint(p in gen::program(kernels())) {
        match teil::check(p.clone()) {
            Ok((_, warnings)) => prop_assert!(warnings.is_empty(), "{warnings:#?}\n{}", fmt::program(&p, Style::Prefix)),
            Err(errs) => prop_assert!(false, "{errs:#?}\n{}", fmt::program(&p, Style::Prefix)),
        }
        let text = fmt::program(&p, Style::Infix);
        let parsed = teil::parse(&text);
        prop_assert!(parsed.diagnostics.is_empty() && parsed.program.same_as(&p), "{text}");
    }

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

/// Programs judged by their permits get the functions' edges in their special inputs, in each
/// variable's type; the others keep the five values whose class no reordering changes
/// (spec/fuzzing.md, "Special values").
#[test]
fn special_inputs_reach_the_functions_edges_only_where_permits_judge() {
    use teil_fuzz::case::{self, Generators, Profile, EDGES_F32, EDGES_F64};
    let mut gens = Generators::default();
    let (mut edges, mut plain_specials) = ([0usize; 2], 0);
    for index in (1..400).step_by(2) {
        let Some(c) = gens.case(Profile::Compiler, 5, index, case::FUNCTION_ULPS) else {
            continue;
        };
        for (name, t) in &c.inputs {
            let elem = c.checked.decl(name).unwrap().elem;
            let table = match elem {
                teil::ast::ElemType::F32 => &EDGES_F32[..],
                teil::ast::ElemType::F64 => &EDGES_F64[..],
            };
            for &x in t {
                assert_eq!(
                    elem.round(x).to_bits(),
                    x.to_bits(),
                    "{name}: {x} is not {elem}"
                );
                if x.is_nan() || x.is_infinite() || x == 0.0 || (x == x.trunc() && x.abs() <= 3.0) {
                    plain_specials += usize::from(x.is_nan() || x.is_infinite());
                    continue;
                }
                assert!(
                    c.permits.is_some(),
                    "{name}: {x} in a program judged exactly"
                );
                assert!(
                    table.contains(&x) || table.contains(&-x),
                    "{name}: {x} is no edge of {elem}"
                );
                edges[usize::from(elem == teil::ast::ElemType::F32)] += 1;
            }
        }
    }
    assert!(
        edges[0] >= 20 && edges[1] >= 20 && plain_specials >= 50,
        "{edges:?} {plain_specials}"
    );
}
