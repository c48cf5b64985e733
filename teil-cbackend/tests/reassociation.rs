//! The reassociation rule of spec/values.md ("Reassociation"), end to end: on programs with
//! infinities, NaN and overflow, the oracle returns the spec's canonical result, the lifted C
//! kernel another result of the permitted set, and the translation validator accepts exactly
//! the kernels whose terms are in the permitted class.
//!
//! The program is a matrix-matrix-vector product that contraction lifting (TeIL paper §5)
//! rewrites: the spec's term is `r_i = Σ_k (Σ_j (A_ij · B_jk) · c_k)` (the inner contraction
//! over `j` first, both folds from the first index), the lifted kernel computes
//! `t_j = Σ_k B_jk · c_k`, `r_i = Σ_j A_ij · t_j`. Both are binary64 evaluations of terms equal
//! under the laws (associativity and commutativity of `+` and `*`, distributivity), so both are
//! permitted; where an infinity or an overflow meets a distributed sum they differ, and each
//! test asserts both values exactly.

use ndarray::{arr1, arr2, ArrayD};
use std::collections::BTreeMap;
use teil::ast::BinOp;
use teil::CheckedProgram;
use teil_cbackend::ir::{Kernel, Node, Role, Step, Val};
use teil_cbackend::run::Toolchain;
use teil_cbackend::validate::{self, ValidationError};
use teil_cbackend::Options;

const MMV: &str = "input var A : [2 2]\ninput var B : [2 2]\ninput var c : [2]\n\
                   output var r : [2]\nr = (A # B # c) .[2 3] .[2 3]";

const INF: f64 = f64::INFINITY;

fn compile(src: &str) -> CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0
}

fn lower(p: &CheckedProgram, pad: u64, lift: bool) -> Kernel {
    let opts = Options {
        pad,
        lift,
        ..Options::default()
    };
    teil_cbackend::lower(p, &opts).expect("lowers")
}

type M2 = [[f64; 2]; 2];

/// The spec's term in binary64, exactly as [S-Contr] folds it: `Σ_k (Σ_j (A_ij B_jk) c_k)`.
fn spec_term(a: M2, b: M2, c: [f64; 2]) -> [f64; 2] {
    let mut r = [0.0; 2];
    for (i, ri) in r.iter_mut().enumerate() {
        let inner = |k: usize| a[i][0] * b[0][k] * c[k] + a[i][1] * b[1][k] * c[k];
        *ri = inner(0) + inner(1);
    }
    r
}

/// The lifted plan's term in binary64: `t_j = Σ_k B_jk c_k`, `r_i = Σ_j A_ij t_j`.
fn lifted_term(a: M2, b: M2, c: [f64; 2]) -> [f64; 2] {
    let t = [
        b[0][0] * c[0] + b[0][1] * c[1],
        b[1][0] * c[0] + b[1][1] * c[1],
    ];
    [
        a[0][0] * t[0] + a[0][1] * t[1],
        a[1][0] * t[0] + a[1][1] * t[1],
    ]
}

/// Bitwise equality, NaN equal to NaN (payloads are not part of the semantics).
fn same(x: f64, y: f64) -> bool {
    (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
}

fn assert_cells(what: &str, got: &ArrayD<f64>, want: [f64; 2]) {
    let got: Vec<f64> = got.iter().copied().collect();
    assert!(
        got.len() == 2 && same(got[0], want[0]) && same(got[1], want[1]),
        "{what}: got {got:?}, want {want:?}"
    );
}

struct Results {
    oracle: ArrayD<f64>,
    fast: ArrayD<f64>,
    /// The C backend with lifting (the default), at every M tested.
    lifted: Vec<ArrayD<f64>>,
    /// The C backend without lifting, at every M tested.
    plain: Vec<ArrayD<f64>>,
}

/// Runs `MMV` on `(a, b, c)` through the oracle, the fast evaluator and the C backend with and
/// without lifting at M = 1 and 4.
fn run_mmv(a: M2, b: M2, c: [f64; 2]) -> Results {
    let p = compile(MMV);
    let inputs: BTreeMap<String, ArrayD<f64>> = [
        ("A".to_string(), arr2(&a).into_dyn()),
        ("B".to_string(), arr2(&b).into_dyn()),
        ("c".to_string(), arr1(&c).into_dyn()),
    ]
    .into();
    let tc = Toolchain::default().with_cflags("-std=c99 -O2 -Wall -Wextra -Werror -pedantic");
    let c_run = |lift: bool| -> Vec<ArrayD<f64>> {
        [1, 4]
            .into_iter()
            .map(|pad| {
                let k = lower(&p, pad, lift);
                assert_eq!(k.lifted, usize::from(lift), "lifting fires exactly when on");
                let out = teil_cbackend::run::run(&tc, &k, &inputs).expect("the kernel runs");
                assert!(out.nonzero_padding.is_empty(), "padding stays zero");
                out.values["r"].clone()
            })
            .collect()
    };
    Results {
        oracle: teil_interp::run_oracle(&p, &inputs).expect("oracle")["r"].clone(),
        fast: teil_interp::run_fast(&p, &inputs).expect("fast")["r"].clone(),
        lifted: c_run(true),
        plain: c_run(false),
    }
}

/// Asserts the results of `MMV`: the oracle and the unlifted C give `spec`, the lifted C and
/// the fast evaluator (whose greedy plan is the same as lifting's here) give `lifted`, and
/// `spec`/`lifted` are the binary64 values of the two terms.
fn check_mmv(a: M2, b: M2, c: [f64; 2], spec: [f64; 2], lifted: [f64; 2]) {
    let (s, l) = (spec_term(a, b, c), lifted_term(a, b, c));
    assert!(
        same(s[0], spec[0]) && same(s[1], spec[1]),
        "spec term {s:?}"
    );
    assert!(
        same(l[0], lifted[0]) && same(l[1], lifted[1]),
        "lifted term {l:?}"
    );
    let r = run_mmv(a, b, c);
    assert_cells("oracle", &r.oracle, spec);
    for x in &r.plain {
        assert_cells("C without lifting", x, spec);
    }
    for x in &r.lifted {
        assert_cells("C with lifting", x, lifted);
    }
    assert_cells("fast evaluator", &r.fast, lifted);
}

#[test]
fn an_infinity_meeting_a_distributed_sum_gives_nan_in_the_spec_and_inf_lifted() {
    // r_1: spec  k=1: ∞·1·1 + 1·0·1 = ∞,  k=2: ∞·0·1 + 1·1·1 = NaN,  ∞ + NaN = NaN;
    //      lifted t = (1, 1), ∞·1 + 1·1 = ∞.
    let a = [[INF, 1.0], [1.0, 1.0]];
    let b = [[1.0, 0.0], [0.0, 1.0]];
    check_mmv(a, b, [1.0, 1.0], [f64::NAN, 2.0], [INF, 2.0]);
}

#[test]
fn an_overflow_in_a_lifted_temporary_gives_nan_where_the_spec_cancels_to_zero() {
    // spec  k: 1·1e308·1 + 1·(−1e308)·1 = 0 for both k, r = 0 + 0 = 0;
    // lifted t = (1e308 + 1e308, −1e308 − 1e308) = (∞, −∞), r = ∞ + (−∞) = NaN.
    let a = [[1.0, 1.0], [1.0, 1.0]];
    let b = [[1e308, 1e308], [-1e308, -1e308]];
    check_mmv(a, b, [1.0, 1.0], [0.0, 0.0], [f64::NAN, f64::NAN]);
}

#[test]
fn an_overflow_in_the_spec_gives_nan_where_the_lifted_temporary_cancels_to_zero() {
    // spec  k=1: 1e308·1·1 + 1e308·1·1 = ∞,  k=2: −∞,  ∞ + (−∞) = NaN (both rows);
    // lifted t = (1 − 1, 1 − 1) = (0, 0), r = 1e308·0 + 1e308·0 = 0.
    let a = [[1e308, 1e308], [1e308, 1e308]];
    let b = [[1.0, -1.0], [1.0, -1.0]];
    check_mmv(a, b, [1.0, 1.0], [f64::NAN, f64::NAN], [0.0, 0.0]);
}

#[test]
fn a_nan_input_makes_every_dependent_cell_nan_in_every_permitted_term() {
    // Every law keeps every leaf of the term, and every operation propagates NaN, so a NaN input
    // reaches the same cells whatever the association. Row 2 of A is finite but c_1 = NaN
    // reaches both rows.
    let a = [[1.0, 2.0], [3.0, 4.0]];
    let b = [[1.0, 2.0], [3.0, 4.0]];
    check_mmv(
        a,
        b,
        [f64::NAN, 1.0],
        [f64::NAN, f64::NAN],
        [f64::NAN, f64::NAN],
    );
}

#[test]
fn with_small_integers_every_permitted_term_gives_the_same_bits() {
    // No operation rounds, so the spec's result is the only one in the permitted set.
    let a = [[1.0, -2.0], [3.0, 0.0]];
    let b = [[2.0, 1.0], [-1.0, 5.0]];
    let c = [3.0, -1.0];
    let s = spec_term(a, b, c);
    check_mmv(a, b, c, s, s);
}

// ---------------------------------------------------------------------------------------------
// The validator decides exactly the permitted class.

/// The lifted kernel of `MMV` at `pad`, with its temporary's nest (the lifted contraction) and
/// the statement's nest.
fn lifted_kernel(pad: u64) -> (CheckedProgram, Kernel) {
    let p = compile(MMV);
    let k = lower(&p, pad, true);
    assert_eq!(k.lifted, 1);
    assert!(
        k.buffers.iter().any(|b| b.role == Role::Temp),
        "lifting introduced a temporary"
    );
    (p, k)
}

/// Applies `f` to the first accumulator update in the nest of step `step`.
fn edit_update(k: &mut Kernel, step: usize, f: &mut dyn FnMut(&mut Vec<Node>, usize)) {
    fn walk(ns: &mut Vec<Node>, f: &mut dyn FnMut(&mut Vec<Node>, usize)) -> bool {
        if let Some(i) = ns.iter().position(|n| matches!(n, Node::AccUpdate { .. })) {
            f(ns, i);
            return true;
        }
        ns.iter_mut().any(|n| match n {
            Node::Loop { body, .. } => walk(body, f),
            _ => false,
        })
    }
    match &mut k.steps[step] {
        Step::Nest { body, .. } => assert!(walk(body, f), "step {step} has an update"),
        other => panic!("step {step} is not a plain nest: {}", other.comment()),
    }
}

fn update_value(n: &mut Node) -> &mut Val {
    match n {
        Node::AccUpdate { value, .. } => value,
        _ => unreachable!("edit_update passes an update"),
    }
}

fn rejected_at_r1(p: &CheckedProgram, k: &Kernel) -> (String, String) {
    match validate::validate(p, k) {
        Err(ValidationError::Differs {
            var,
            index,
            kernel,
            oracle,
        }) => {
            assert_eq!((var.as_str(), index.as_slice()), ("r", &[1u64][..]));
            (kernel.to_string(), oracle.to_string())
        }
        other => panic!("expected the kernel to be rejected at r[1], got {other:?}"),
    }
}

#[test]
fn the_validator_accepts_the_lifted_kernel_at_every_padding() {
    for pad in [1, 3, 4] {
        let (p, k) = lifted_kernel(pad);
        let v = validate::validate(&p, &k).expect("the lifted kernel validates");
        assert_eq!((v.output_cells, v.lifted), (2, 1));
    }
}

#[test]
fn the_validator_accepts_a_commuted_product_a_permitted_rewrite() {
    let (p, mut k) = lifted_kernel(4);
    // t_j = Σ_k c_k · B_jk instead of B_jk · c_k: commutativity of *.
    edit_update(&mut k, 0, &mut |ns, i| {
        let v = update_value(&mut ns[i]);
        let Val::Bin(BinOp::Mul, x, y) = v else {
            panic!("the lifted nest multiplies two loads, got {v:?}")
        };
        std::mem::swap(x, y);
    });
    validate::validate(&p, &k).expect("a commuted product is in the permitted class");
}

#[test]
fn the_validator_rejects_a_term_added_twice() {
    // t_j = Σ_k (B_jk c_k + B_jk c_k): a + a is not a + a·1 or 2·a: the laws never change how
    // often a monomial occurs.
    let (p, mut k) = lifted_kernel(4);
    edit_update(&mut k, 0, &mut |ns, i| {
        let dup = ns[i].clone();
        ns.insert(i, dup);
    });
    let (kernel, oracle) = rejected_at_r1(&p, &k);
    assert_eq!(
        oracle,
        "A[1,1]*B[1,1]*c[1] + A[1,1]*B[1,2]*c[2] + A[1,2]*B[2,1]*c[1] + A[1,2]*B[2,2]*c[2]"
    );
    assert_eq!(
        kernel,
        "A[1,1]*B[1,1]*c[1] + A[1,1]*B[1,1]*c[1] + A[1,1]*B[1,2]*c[2] + A[1,1]*B[1,2]*c[2] + \
         A[1,2]*B[2,1]*c[1] + A[1,2]*B[2,1]*c[1] + A[1,2]*B[2,2]*c[2] + A[1,2]*B[2,2]*c[2]"
    );
}

#[test]
fn the_validator_rejects_a_multiplication_by_one_although_binary64_gives_the_same_bits() {
    // The rule is about terms: x·1 is not in the class of x (no identity laws besides the
    // accumulator's start), even though it evaluates to the same binary64 value.
    let (p, mut k) = lifted_kernel(1);
    edit_update(&mut k, 0, &mut |ns, i| {
        let v = update_value(&mut ns[i]);
        *v = Val::Bin(BinOp::Mul, Box::new(v.clone()), Box::new(Val::Lit(1.0)));
    });
    let (kernel, _) = rejected_at_r1(&p, &k);
    assert!(
        kernel.starts_with("1*A[1,1]*B[1,1]*c[1] + 1*A[1,1]*B[1,2]*c[2]"),
        "{kernel}"
    );
}

#[test]
fn the_validator_rejects_swapped_operands_of_a_subtraction() {
    // `-` is outside the laws: a − b and b − a are different terms (and values).
    let p = compile(
        "input var A : [2 2]\ninput var B : [2 2]\ninput var c : [2]\ninput var d : [2]\n\
         output var r : [2]\nr = (A # B # c) .[2 3] .[2 3] - d",
    );
    let mut k = lower(&p, 1, true);
    assert_eq!(k.lifted, 1);
    validate::validate(&p, &k).expect("the lifted kernel validates");
    let last = k.steps.len() - 1;
    let Step::Nest { body, .. } = &mut k.steps[last] else {
        panic!("the statement is a nest")
    };
    fn swap_sub(ns: &mut [Node]) -> bool {
        ns.iter_mut().any(|n| match n {
            Node::Loop { body, .. } => swap_sub(body),
            Node::Store {
                value: Val::Bin(BinOp::Sub, x, y),
                ..
            } => {
                std::mem::swap(x, y);
                true
            }
            _ => false,
        })
    }
    assert!(swap_sub(body), "the statement stores a difference");
    let (kernel, oracle) = rejected_at_r1(&p, &k);
    assert!(kernel.starts_with("(d[1] - "), "{kernel}");
    assert!(oracle.ends_with(" - d[1])"), "{oracle}");
}
