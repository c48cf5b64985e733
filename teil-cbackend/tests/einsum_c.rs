//! einsum equations lowered by `teil::guard::einsum` and compiled by the C backend, compared
//! with the naive einsum of `tests/einsum/support.rs` (written from scratch: a loop over every
//! assignment of every index). The same corpus and random equations run through both
//! evaluators in `teil-interp/tests/einsum_random.rs`.
//!
//! All kernels of a group go into one translation unit and one driver process. Inputs are small
//! integers, so every result is exact whatever order of summation the lowering, contraction
//! lifting and the C compiler chose, and the comparison is exact. After every call every
//! padding cell must still be zero.

#[path = "../../tests/einsum/support.rs"]
mod support;

use std::collections::BTreeMap;
use support::{corpus, naive_einsum, operands, random_cases};
use teil_cbackend::ir::Kernel;
use teil_cbackend::run::{run_batch, Job, Toolchain};
use teil_cbackend::Options;

/// The warning check of spec/abi.md, with optimisation on.
const STRICT: &str = "-std=c99 -O1 -Wall -Wextra -Werror -pedantic";

fn teil_shapes(shapes: &[Vec<usize>]) -> Vec<Vec<u64>> {
    shapes
        .iter()
        .map(|s| s.iter().map(|&n| n as u64).collect())
        .collect()
}

fn same(a: &ndarray::ArrayD<f64>, b: &ndarray::ArrayD<f64>) -> bool {
    a.shape() == b.shape() && a.iter().zip(b.iter()).all(|(x, y)| x == y)
}

/// Lowers every equation at padding multiple `pad`, runs them all in one batch, and compares
/// `out` with the naive einsum.
fn check_all(cases: &[(String, Vec<Vec<usize>>)], pad: u64) {
    let mut kernels: Vec<Kernel> = Vec::new();
    let mut jobs = Vec::new();
    let mut wants = Vec::new();
    for (k, (eq, shapes)) in cases.iter().enumerate() {
        let (p, _) = teil::guard::einsum(eq, &teil_shapes(shapes))
            .unwrap_or_else(|d| panic!("`{eq}` {shapes:?} rejected: {d:#?}"));
        let opts = Options {
            pad,
            name: format!("einsum_{k}"),
            lift: true,
            ..Options::default()
        };
        let kernel = teil_cbackend::lower(&p, &opts)
            .unwrap_or_else(|e| panic!("`{eq}`: the C backend refuses it: {e}"));
        // No buffer of the kernel is larger than the largest variable of the TeIL program: the
        // backend materialises no product the lowering did not ask for.
        let largest: u64 = p
            .program()
            .decls
            .iter()
            .map(|d| d.shape().iter().product())
            .max()
            .unwrap_or(1);
        for b in &kernel.buffers {
            assert!(
                b.logical_len() <= largest,
                "`{eq}`: buffer `{}` has {} elements",
                b.c_name,
                b.logical_len()
            );
        }
        kernels.push(kernel);
        let ops = operands(shapes, k as u64);
        wants.push(naive_einsum(eq, &ops));
        let inputs: BTreeMap<String, _> = ops
            .into_iter()
            .enumerate()
            .map(|(i, t)| (format!("in{i}"), t))
            .collect();
        jobs.push(Job { kernel: k, inputs });
    }
    let refs: Vec<&Kernel> = kernels.iter().collect();
    let tc = Toolchain::default().with_cflags(STRICT);
    let outcomes = run_batch(&tc, &refs, &jobs).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcomes.len(), cases.len());
    for (((eq, shapes), got), want) in cases.iter().zip(&outcomes).zip(&wants) {
        assert!(
            got.nonzero_padding.is_empty(),
            "`{eq}`: padding {:?}",
            got.nonzero_padding
        );
        let out = &got.values["out"];
        assert!(
            same(out, want),
            "`{eq}` with shapes {shapes:?} at M = {pad}: C gives\n{out}\nthe naive einsum\n{want}"
        );
    }
}

#[test]
fn einsum_corpus_through_the_c_backend() {
    let cases: Vec<(String, Vec<Vec<usize>>)> = corpus()
        .into_iter()
        .map(|(eq, s)| (eq.to_string(), s))
        .collect();
    check_all(&cases, 1);
    check_all(&cases, 4);
}

#[test]
fn random_einsum_equations_through_the_c_backend() {
    check_all(&random_cases(300, 0x7e11_e1c5), 1);
}

/// A chain of five 10 x 10 matrices: contracted pairwise, the kernel does a few thousand
/// innermost operations per contraction; the product of all five operands would take 10^6.
#[test]
fn many_operand_contractions_never_form_the_full_product() {
    let shapes = vec![vec![10u64, 10]; 5];
    let (p, _) = teil::guard::einsum("ab,bc,cd,de,ef->af", &shapes).expect("accepted");
    let kernel = teil_cbackend::lower(&p, &Options::default()).expect("lowered");
    assert!(kernel.work() < 20_000, "work {}", kernel.work());
    assert_eq!(p.program().stmts.len(), 4);
}
