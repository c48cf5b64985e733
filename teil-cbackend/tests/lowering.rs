//! The structure of lowered programs: contraction lifting, alias temporaries, which loops run
//! over padded extents. Values are checked by tests/differential.rs; these tests check the
//! shape of the loop IR that the spec (spec/padding.md) promises.

use teil_cbackend::ir::{Kernel, Node, Role, Step};
use teil_cbackend::opt::{self, Tuning};
use teil_cbackend::Options;

/// Lowers with every optimisation but loop interchange, which splits a small nest into the
/// identities and the folds (its own tests: `opt::interchange`, tests/perf.rs): these tests
/// count the lowering's nests.
fn lower_with(src: &str, pad: u64, lift: bool) -> Kernel {
    let (p, _) = teil::compile(src).unwrap_or_else(|d| panic!("does not check: {d:?}"));
    let opts = Options {
        pad,
        lift,
        ..Options::default()
    };
    let t = Tuning {
        interchange: false,
        ..Tuning::default()
    };
    opt::lower_tuned(&p, &opts, &t).expect("lowers")
}

fn lower(src: &str, pad: u64) -> Kernel {
    lower_with(src, pad, true)
}

fn cfd(n: u64) -> String {
    format!(
        "input var A : [{n} {n}]\ninput var B : [{n} {n}]\ninput var C : [{n} {n}]\n\
         input var u : [{n} {n} {n}]\noutput var v : [{n} {n} {n}]\n\
         v = (A # B # C # u) .[2 7] .[3 6] .[4 5]\n"
    )
}

#[test]
fn the_cfd_operator_becomes_three_contractions_of_n4_iterations() {
    for n in [2u64, 4, 8, 16] {
        let k = lower(&cfd(n), 1);
        assert_eq!(k.lifted, 1);
        assert_eq!(
            k.steps.len(),
            3,
            "n = {n}: one nest per pairwise contraction"
        );
        // Each nest: n^3 result cells, each an accumulator initialised, n updates, a store.
        assert_eq!(k.work(), u128::from(3 * n.pow3() * (n + 2)), "n = {n}");
        // Two intermediate tensors of n^3 cells; the product of the four factors (n^9 cells)
        // never exists.
        let temps: Vec<u64> = k
            .buffers
            .iter()
            .filter(|b| b.role == Role::Temp)
            .map(|b| b.logical_len())
            .collect();
        assert_eq!(temps, vec![n.pow3(), n.pow3()]);
    }
}

trait Cube {
    fn pow3(self) -> u64;
}

impl Cube for u64 {
    fn pow3(self) -> u64 {
        self * self * self
    }
}

#[test]
fn without_lifting_the_cfd_operator_is_one_fused_n6_nest() {
    for n in [2u64, 4, 8] {
        let k = lower_with(&cfd(n), 1, false);
        assert_eq!(k.lifted, 0);
        assert_eq!(k.steps.len(), 1);
        assert!(k.work() >= u128::from(n.pow(6)), "n = {n}: {}", k.work());
        assert!(k.buffers.iter().all(|b| b.role != Role::Temp));
    }
}

#[test]
fn lifting_work_grows_as_n4() {
    let w = |n| lower(&cfd(n), 1).work() as f64;
    let exponent = (w(32) / w(16)).log2();
    assert!((3.9..4.1).contains(&exponent), "{exponent}");
}

#[test]
fn matrix_multiplication_is_one_fused_nest_without_temporaries() {
    let k = lower(
        "var A : [3 5]\nvar B : [5 7]\nvar C : [3 7]\nC = (A # B) .[2 3]",
        1,
    );
    assert_eq!(k.lifted, 0);
    assert_eq!(k.steps.len(), 1);
    assert_eq!(k.workspace, 0);
    assert_eq!(k.work(), 3 * 7 * (5 + 2u128));
}

fn copies(k: &Kernel) -> usize {
    k.steps
        .iter()
        .filter(|s| matches!(s, Step::Copy { .. }))
        .count()
}

#[test]
fn statements_reading_their_target_elsewhere_use_a_temporary() {
    let decls = "var A : [3 3]\nvar B : [3 3]\n";
    for rhs in [
        "A ^[1 2]",
        "(A # B) .[2 3]",
        "A + A ^[1 2]",
        "expa 1 3 (proj 1 2 A)",
    ] {
        let k = lower(&format!("{decls}A = {rhs}"), 4);
        assert_eq!(copies(&k), 1, "A = {rhs}");
        assert_eq!(
            k.buffers.iter().filter(|b| b.role == Role::Temp).count(),
            1,
            "A = {rhs}"
        );
    }
    // The diagonal, read again for every column, is copied into a temporary of 3 cells first
    // (`opt::hoist`), so the statement no longer reads `A` elsewhere: no copy of 9 cells.
    let k = lower(&format!("{decls}A = expa 2 3 (diag 1 2 A)"), 4);
    assert_eq!(copies(&k), 0, "{k}");
    let temps: Vec<_> = k.buffers.iter().filter(|b| b.role == Role::Temp).collect();
    assert_eq!(temps.len(), 1, "{k}");
    assert_eq!(temps[0].logical, [3], "{k}");
}

#[test]
fn element_wise_reads_at_the_same_index_run_in_place() {
    let decls = "var A : [3 3]\nvar B : [3 3]\nvar s : []\n";
    for rhs in [
        "A + B",
        "A * A - B",
        "s * A",
        "A / s",
        "(A ^[1 2]) ^[1 2]",
        "s",
    ] {
        let target = if rhs == "s" { "s" } else { "A" };
        let k = lower(&format!("{decls}{target} = {rhs}"), 4);
        assert_eq!(copies(&k), 0, "{target} = {rhs}");
        assert_eq!(k.workspace, 0, "{target} = {rhs}");
    }
}

/// (start, extent, logical) of every loop over a target dimension of each nest, outermost
/// first, stopping at the first nest level that is not a single loop.
fn target_loops(body: &[Node]) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let mut nodes = body;
    while let [Node::Loop {
        start,
        extent,
        logical,
        body,
        ..
    }] = nodes
    {
        out.push((*start, *extent, *logical));
        nodes = body;
    }
    out
}

/// Each nest's comment with its target loops as (start, extent, logical).
type Nests = Vec<(String, Vec<(u64, u64, u64)>)>;

fn nests(k: &Kernel) -> Nests {
    k.steps
        .iter()
        .filter_map(|s| match s {
            Step::Nest { comment, body } => Some((comment.clone(), target_loops(body))),
            // A kernel form's loops are those of the nest it means.
            Step::Contract { comment, c } => Some((comment.clone(), target_loops(&c.nest()))),
            Step::Tiled { comment, t } => Some((comment.clone(), target_loops(&t.nest()))),
            Step::Copy { .. } => None,
        })
        .collect()
}

const DECLS: &str = "input var A : [3 5]\ninput var B : [3 5]\ninput var s : []\n\
                     input var w : [5]\ninput var T : [3 5 2]\noutput var C : [3 5]\n";

fn loops_for(rhs: &str) -> Nests {
    nests(&lower(&format!("{DECLS}C = {rhs}"), 4))
}

#[test]
fn linear_element_wise_statements_run_over_padded_extents() {
    for rhs in [
        "A + B",
        "A - B * B",
        "2 * A",
        "A / 4",
        "red+ 3 T",
        "redmax 3 T",
    ] {
        let n = loops_for(rhs);
        assert_eq!(n.len(), 1, "C = {rhs}");
        assert_eq!(n[0].1, vec![(0, 4, 3), (0, 8, 5)], "C = {rhs}");
    }
}

#[test]
fn broadcasting_keeps_the_expanded_dimension_logical() {
    let n = loops_for("expa 1 3 w");
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].1, vec![(0, 3, 3), (0, 8, 5)]);
}

#[test]
fn unsafe_innermost_loops_run_padded_and_are_re_zeroed() {
    // Division (0/0), a scalar variable (inf * 0), broadcasting along the last dimension (the
    // row sums are hoisted into a padded temporary, so the rows may run padded).
    for (rhs, rows) in [
        ("A / B", 3),
        ("s * A", 3),
        ("A / s", 3),
        ("expa 2 5 (red+ 2 A)", 4),
    ] {
        let n = loops_for(rhs);
        let main = n
            .iter()
            .find(|(c, _)| c.starts_with("C = "))
            .expect("main nest");
        assert_eq!(main.1, vec![(0, rows, 3), (0, 8, 5)], "C = {rhs}");
        let last = n.last().expect("nests");
        assert!(last.0.starts_with("re-zero"), "C = {rhs}: {n:?}");
        assert_eq!(last.1, vec![(0, rows, 3), (5, 8, 5)], "C = {rhs}");
    }
}

#[test]
fn without_padding_every_loop_is_logical() {
    for rhs in ["A + B", "A / B", "expa 1 3 w"] {
        let k = lower(&format!("{DECLS}C = {rhs}"), 1);
        for (c, loops) in nests(&k) {
            assert!(!c.starts_with("re-zero"), "C = {rhs}");
            assert!(loops.iter().all(|&(s, e, l)| s == 0 && e == l), "C = {rhs}");
        }
    }
}

#[test]
fn invariant_reductions_are_hoisted_exactly() {
    // `red+ 1 w` does not depend on the rows of C: computed once, not once per row.
    let k = lower(&format!("{DECLS}C = A * expa 1 3 (expa 1 5 (red+ 1 w))"), 1);
    assert_eq!(k.lifted, 0);
    assert_eq!(k.steps.len(), 2);
    assert_eq!(k.work(), (1 + 5 + 1) + 3 * 5u128);
}

#[test]
fn output_is_deterministic() {
    let src = cfd(3);
    let (p, _) = teil::compile(&src).expect("checks");
    let a = teil_cbackend::emit_c(&p, &Options::default()).expect("emits");
    let b = teil_cbackend::emit_c(&p, &Options::default()).expect("emits");
    assert_eq!(a, b);
    assert!(a.contains("void teil_kernel(double *restrict A, double *restrict B"));
    assert!(a.contains("/* v = (A # B # C # u) .[2 7] .[3 6] .[4 5] */"));
}

#[test]
fn bad_options_are_errors() {
    let (p, _) = teil::compile("var x : [2]").expect("checks");
    let err = |pad, name: &str| {
        teil_cbackend::lower(
            &p,
            &Options {
                pad,
                name: name.to_string(),
                lift: true,
                ..Options::default()
            },
        )
        .expect_err("rejected")
        .to_string()
    };
    assert_eq!(
        err(0, "k"),
        "the padding multiple must be at least 1, got 0"
    );
    assert!(err(1, "double").contains("C keyword"));
    assert!(err(1, "free").contains("standard library"));
    let huge = teil::compile("var x : [1048576 1048576]")
        .expect("checks")
        .0;
    let e = teil_cbackend::lower(
        &huge,
        &Options {
            pad: 1 << 32,
            ..Options::default()
        },
    )
    .expect_err("too large");
    assert!(e.to_string().contains("too large"), "{e}");
}

/// The deepest expressions the checker accepts lower and print on an ordinary test thread.
#[test]
fn deeply_nested_statements_lower_without_exhausting_the_stack() {
    let nest = |open: &str, close: &str, leaf: &str, n: usize| {
        format!("{}{leaf}{}", open.repeat(n), close.repeat(n))
    };
    let mut chain = "A".to_string();
    for _ in 0..120 {
        chain = format!("(({chain} # A) .[2 3])");
    }
    let programs = [
        format!("var A : [2 2]\nA = {}", nest("A + (", ")", "A", 250)),
        format!("var A : [2 2]\nA = {}", nest("transp 1 2 (", ")", "A", 250)),
        format!(
            "var A : [2 2]\nA = {}",
            nest("red+ 1 (expa 1 2 (", "))", "A", 125)
        ),
        format!(
            "var A : [2 2]\nvar s : []\nA = {}",
            nest("s * (", ")", "A", 250)
        ),
        format!("var A : [2 2]\nA = {chain}"),
    ];
    for src in &programs {
        let (p, _) = teil::compile(src).expect("checks");
        let c = teil_cbackend::emit_c(
            &p,
            &Options {
                pad: 4,
                ..Options::default()
            },
        )
        .expect("emits");
        assert!(c.contains("void teil_kernel("));
    }
}
