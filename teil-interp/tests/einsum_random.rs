//! einsum equations lowered by `teil::guard::einsum`, run through both evaluators, and compared
//! with a naive einsum written from scratch (`tests/einsum/support.rs`: a loop over every
//! assignment of every index).
//!
//! Two sources of equations: a fixed corpus that names each NumPy feature (scalars, Hadamard
//! products, diagonals, outer products, broadcasting `...`, contractions over five and more
//! operands), and random equations from a generator in the style of opt_einsum's
//! `rand_equation`. Inputs are small integers, so every sum and product is exact and the
//! comparison is exact whatever order the lowering chose. The same equations run through the C
//! backend in `teil-cbackend/tests/einsum_c.rs`.

#[path = "../../tests/einsum/support.rs"]
mod support;

use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;
use support::{corpus, naive_einsum, operands, random_cases, Tensor};
use teil_interp::{run_fast, run_oracle, same_values};

/// Lowers `eq`, runs both evaluators, and compares `out` with the naive einsum.
fn check(eq: &str, shapes: &[Vec<usize>], seed: u64) {
    let ops = operands(shapes, seed);
    let want = naive_einsum(eq, &ops);
    let teil_shapes: Vec<Vec<u64>> = shapes
        .iter()
        .map(|s| s.iter().map(|&n| n as u64).collect())
        .collect();
    let (p, _) = teil::guard::einsum(eq, &teil_shapes).unwrap_or_else(|d| {
        panic!("`{eq}` {shapes:?} rejected: {d:#?}");
    });
    let text = teil::fmt::program(p.program(), teil::fmt::Style::Prefix);
    let inputs: BTreeMap<String, Tensor> = ops
        .iter()
        .enumerate()
        .map(|(k, t)| (format!("in{k}"), t.clone()))
        .collect();
    let oracle = run_oracle(&p, &inputs).unwrap_or_else(|e| panic!("`{eq}`: oracle: {e}\n{text}"));
    let fast = run_fast(&p, &inputs).unwrap_or_else(|e| panic!("`{eq}`: fast: {e}\n{text}"));
    for (who, got) in [("oracle", &oracle["out"]), ("fast evaluator", &fast["out"])] {
        assert!(
            same_values(got, &want),
            "`{eq}` with shapes {shapes:?}: the {who} disagrees with the naive einsum\n\
             got\n{got}\nwant\n{want}\nprogram:\n{text}"
        );
    }
}

#[test]
fn einsum_corpus_agrees_with_naive_einsum() {
    let corpus = corpus();
    assert!(corpus.len() >= 50);
    for (k, (eq, shapes)) in corpus.iter().enumerate() {
        check(eq, shapes, k as u64);
    }
}

#[test]
fn random_einsum_equations_agree_with_naive_einsum() {
    let cases = random_cases(300, 0x7e11_e1c5);
    for (k, (eq, shapes)) in cases.iter().enumerate() {
        check(eq, shapes, k as u64);
    }
    // The generator reaches contractions over many operands, diagonals and broadcasting.
    let most = cases.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    assert!(most >= 7, "at most {most} operands generated");
    assert!(cases.iter().any(|(eq, _)| eq.contains("...")));
    assert!(cases.iter().any(|(eq, _)| !eq.contains("->")));
}

/// The naive einsum itself, on cases computed by hand, so that agreement above means something.
#[test]
fn the_naive_einsum_is_right_on_hand_computed_cases() {
    let m = |shape: &[usize], data: &[f64]| {
        ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).unwrap()
    };
    let a = m(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let b = m(&[2, 2], &[5.0, 6.0, 7.0, 8.0]);
    let one = std::slice::from_ref(&a);
    assert_eq!(
        naive_einsum("ij,jk->ik", &[a.clone(), b.clone()]),
        m(&[2, 2], &[19.0, 22.0, 43.0, 50.0])
    );
    assert_eq!(naive_einsum("ii", one), m(&[], &[5.0]));
    assert_eq!(naive_einsum("ii->i", one), m(&[2], &[1.0, 4.0]));
    assert_eq!(naive_einsum("ji", one), m(&[2, 2], &[1.0, 3.0, 2.0, 4.0]));
    assert_eq!(
        naive_einsum("ij,ij->", &[a.clone(), b.clone()]),
        m(&[], &[70.0])
    );
    assert_eq!(
        naive_einsum(",i", &[m(&[], &[3.0]), m(&[2], &[1.0, 2.0])]),
        m(&[2], &[3.0, 6.0])
    );
    assert_eq!(
        naive_einsum(
            "...,...",
            &[m(&[2, 1], &[1.0, 2.0]), m(&[1, 2], &[10.0, 20.0])]
        ),
        m(&[2, 2], &[10.0, 20.0, 20.0, 40.0])
    );
}
