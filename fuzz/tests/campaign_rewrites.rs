//! The program rewrites the campaign uses: the §3.6 laws ([`teil_fuzz::laws`]) keep every
//! value bit for bit, on hand-picked examples and on random programs; the in-place rewrites
//! ([`teil_fuzz::inplace`]) make statements that read their target.

use teil::fmt::{program, Style};
use teil::CheckedProgram;
use teil_fuzz::campaign;
use teil_fuzz::gen::{self, GenConfig};
use teil_fuzz::inplace;
use teil_fuzz::laws::{rewrite, Law};
use teil_interp::{random_inputs, run_oracle, same_values};

fn checked(src: &str) -> CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("{src}\n{d:?}"))
        .0
}

/// The statements of `p` in infix syntax, one per line.
fn stmts(p: &teil::ast::Program) -> String {
    let text = program(p, Style::Infix);
    text.lines()
        .filter(|l| l.contains(" = "))
        .collect::<Vec<_>>()
        .join("\n")
}

const MATMUL: &str =
    "input var A : [2 3]\ninput var B : [3 2]\noutput var C : [2 2]\nC = (A # B) .[2 3]\n";

#[test]
fn contraction_becomes_a_reduced_diagonal_and_back() {
    let c = checked(MATMUL);
    let p = rewrite(&c, Law::ContrRedDiag, 0).expect("applies to the contraction");
    assert_eq!(stmts(&p), "C = red+ 2 (diag 2 3 (A # B))");
    let back = rewrite(&teil::check(p).unwrap().0, Law::ContrRedDiag, 0).unwrap();
    assert_eq!(stmts(&back), "C = (A # B) .[2 3]");
}

#[test]
fn a_small_scalar_multiple_becomes_a_sum_of_copies_and_back() {
    let c = checked("var A : [2 3]\nvar R : [2 3]\nR = 3 * A\n");
    let p = rewrite(&c, Law::SumExpa, 3).expect("applies to 3 * A");
    assert_eq!(stmts(&p), "R = red+ 2 (expa 2 3 A)");
    let back = rewrite(&teil::check(p).unwrap().0, Law::SumExpa, 0).unwrap();
    assert_eq!(stmts(&back), "R = 3 * A");
    // `((A + A) + A) + A` rounds twice while `4 * A` rounds once: law (5) is not exact for
    // four copies, so the rewrite leaves them alone.
    let four = checked("var A : [2 3]\nvar R : [2 3]\nR = 4 * A\n");
    assert!(rewrite(&four, Law::SumExpa, 0).is_none());
}

#[test]
fn the_other_laws_on_one_example() {
    let c = checked("var A : [3 3]\nvar R : [3]\nR = diag 2 1 A\n");
    let cases = [
        (Law::DiagTransp, 0, "R = diag 2 1 (A ^[2 1])"),
        (Law::ProjExpa, 0, "R = proj 1 1 (expa 1 1 (diag 2 1 A))"),
        (Law::MaxExpa, 24, "R = redmax 1 (expa 1 2 (diag 2 1 A))"),
        (Law::MinExpa, 1, "R = diag 2 1 (redmin 1 (expa 1 1 A))"),
        (Law::TranspTwice, 1, "R = diag 2 1 (A ^[1 2] ^[1 2])"),
    ];
    for (law, choice, want) in cases {
        let p = rewrite(&c, law, choice).unwrap_or_else(|| panic!("{law:?} does not apply"));
        assert_eq!(stmts(&p), want, "{law:?}");
    }
    assert!(rewrite(&c, Law::ContrRedDiag, 0).is_none());
    assert!(rewrite(&c, Law::SumExpa, 0).is_none());
}

/// Every law, on 150 random programs (with division, so that values round): the rewritten
/// program checks and the oracle gives every variable bit for bit the same value.
#[test]
fn law_rewrites_keep_every_value_exactly() {
    let strategy = gen::program(GenConfig {
        division: true,
        max_depth: 5,
        ..GenConfig::default()
    });
    let mut applied = [0usize; Law::ALL.len()];
    for seed in 0..150u64 {
        let c = teil::check(gen::sample(&strategy, seed)).unwrap().0;
        let inputs = random_inputs(&c, seed);
        let want = run_oracle(&c, &inputs).unwrap();
        for (i, law) in Law::ALL.into_iter().enumerate() {
            let Some(p) = rewrite(&c, law, seed.wrapping_mul(0x9e37_79b9)) else {
                continue;
            };
            let text = program(&p, Style::Infix);
            let (v, _) = teil::check(p).unwrap_or_else(|d| panic!("{law:?}:\n{text}\n{d:?}"));
            let got = run_oracle(&v, &inputs).unwrap();
            for (name, w) in &want {
                assert!(
                    same_values(w, &got[name]),
                    "{law:?}, seed {seed}: `{name}` differs\n{text}"
                );
            }
            applied[i] += 1;
        }
    }
    for (i, law) in Law::ALL.iter().enumerate() {
        // Law (5) for `+` needs a literal multiplier 1, 2 or 3, which few programs have.
        let least = if *law == Law::SumExpa { 3 } else { 10 };
        assert!(applied[i] >= least, "{law:?} applied {} times", applied[i]);
    }
}

#[test]
fn the_law_chain_of_a_seed_is_reproducible() {
    let c = checked(MATMUL);
    let (a, laws_a) = campaign::law_variant(&c, 42).unwrap().unwrap();
    let (b, laws_b) = campaign::law_variant(&c, 42).unwrap().unwrap();
    assert_eq!(laws_a.len(), 3);
    assert_eq!(laws_a, laws_b);
    assert!(a.program().same_as(b.program()));
    assert!(!a.program().same_as(c.program()));
}

#[test]
fn retargeting_assigns_a_statement_to_a_variable_it_reads() {
    let c = checked(
        "input var A : [2 2]\ninput var B : [2 2]\noutput var R : [2 2]\nR = A ^[1 2] + B\n",
    );
    let p = inplace::retarget(&c, 0).expect("A and B have R's shape");
    assert_eq!(stmts(&p), "A = A ^[1 2] + B");
    // The retargeted input is now also an output.
    assert!(program(&p, Style::Infix).starts_with("inout var A : [2 2]\n"));
    let p = inplace::retarget(&c, 1).unwrap();
    assert_eq!(stmts(&p), "B = A ^[1 2] + B");
    let scalar = checked("var s : []\nvar A : [2]\nvar r : []\nr = red+ 1 A\n");
    assert!(inplace::retarget(&scalar, 0).is_none());
}

#[test]
fn self_read_adds_a_term_reading_the_target_elsewhere() {
    let c = checked("input var A : [2 3]\ninput var B : [2 3]\nA = B\n");
    let p = inplace::self_read(&c, 0).expect("A is an input with extents of 2 and more");
    assert_eq!(stmts(&p), "A = B + expa 1 2 (proj 1 1 A)");
    let square = checked("input var A : [3 3]\nA = 2 * A\n");
    let p = inplace::self_read(&square, 1).unwrap();
    assert_eq!(stmts(&p), "A = 2 * A + A ^[1 2]");
    // A target without a value before the statement is left alone (its old value is `•`).
    let fresh = checked("input var B : [2]\noutput var R : [2]\nR = B\n");
    assert!(inplace::self_read(&fresh, 0).is_none());
}
