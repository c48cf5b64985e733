//! Translation validation (spec/validation.md): the loop IR run over symbolic values against
//! the oracle over the same values.
//!
//! Correct kernels validate: hand-written programs for every scheduling decision the backend
//! makes (in-place statements, alias temporaries, contraction lifting, hoisting, padded and
//! re-zeroed loops, undefined values) and random well-typed programs, at M in {1, 3, 4}, with
//! and without lifting. Broken kernels are rejected: each test below takes a correct kernel,
//! breaks one thing in its IR the way a compiler bug would, and asserts the failure the
//! validator reports (which cell, which kind, both terms).

use teil::CheckedProgram;
use teil_cbackend::ir::{Ix, Kernel, Node, Role, Step, Val};
use teil_cbackend::opt::{self, Printing};
use teil_cbackend::validate::{self, Limits, Validated, ValidationError};
use teil_cbackend::Options;
use teil_fuzz::gen::{self, GenConfig};

const PADS: [u64; 3] = [1, 3, 4];

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

/// Output cells and padding cells the validator must have checked for `k`.
fn expected_counts(k: &Kernel) -> (u64, u64) {
    let outputs = k
        .params
        .iter()
        .map(|&b| k.buffer(b))
        .filter(|b| matches!(b.role, Role::Param { output: true, .. }))
        .map(|b| b.logical_len())
        .sum();
    let used = k.referenced();
    let padding = k
        .buffers
        .iter()
        .enumerate()
        .filter(|(i, b)| b.is_param() || used[*i])
        .map(|(_, b)| b.padded_len() - b.logical_len())
        .sum();
    (outputs, padding)
}

/// `src` validates at every M of [`PADS`], with and without lifting; returns the reports.
fn validates(src: &str) -> Vec<(Kernel, Validated)> {
    validates_at(src, &PADS, &[true, false])
}

/// `src` validates at every M of `pads`, with lifting as `lifts` say; returns the reports.
fn validates_at(src: &str, pads: &[u64], lifts: &[bool]) -> Vec<(Kernel, Validated)> {
    let p = compile(src);
    let mut out = Vec::new();
    for &pad in pads {
        for &lift in lifts {
            let k = lower(&p, pad, lift);
            let v = validate::validate(&p, &k)
                .unwrap_or_else(|e| panic!("M = {pad}, lift = {lift}: {e}\n{src}"));
            assert_eq!(
                (v.output_cells, v.padding_cells),
                expected_counts(&k),
                "{src}"
            );
            assert_eq!(v.pad, pad);
            out.push((k, v));
        }
    }
    out
}

#[test]
fn in_place_transposition_validates() {
    let r = validates("var A : [3 3]\nA = A ^[1 2]\nA = transp 1 2 A\n");
    // The alias temporary and its copy-back are part of what was validated.
    assert!(r
        .iter()
        .all(|(k, _)| k.steps.iter().any(|s| matches!(s, Step::Copy { .. }))));
    assert_eq!(r[0].1.shapes, vec![("A".to_string(), vec![3, 3])]);
}

#[test]
fn in_place_matrix_product_validates() {
    validates("var A : [3 3]\ninput var B : [3 3]\nA = (A # B) .[2 3]\n");
    validates("inout var A : [2 3]\ninput var B : [3 3]\nA = (A # B) .[2 3] + A\n");
}

fn cfd(n: u64) -> String {
    format!(
        "input var A : [{n} {n}]\ninput var B : [{n} {n}]\ninput var C : [{n} {n}]\n\
         input var u : [{n} {n} {n}]\noutput var v : [{n} {n} {n}]\n\
         v = (A # B # C # u) .[2 7] .[3 6] .[4 5]\n"
    )
}

#[test]
fn the_lifted_cfd_operator_validates() {
    for n in [2, 3] {
        let r = validates(&cfd(n));
        // Lifting fired (three pairwise contractions) and was validated up to reassociation.
        assert!(r.iter().any(|(k, v)| k.lifted == 1 && v.lifted == 1));
        assert!(r.iter().any(|(k, _)| k.lifted == 0));
        assert_eq!(r[0].1.output_cells, n * n * n);
    }
}

#[test]
fn expansion_and_reductions_with_padding_validate() {
    // Broadcasting writes logical values into padding positions of the expanded dimension's
    // loop unless that loop stays logical; redmax over a padded extent would pick up zeros.
    validates(
        "input var A : [2 3]\ninput var w : [3]\noutput var C : [5 2 3]\noutput var m : [3]\n\
         C = expa 1 5 A + expa 1 5 (expa 1 2 w)\nm = redmax 1 A\n",
    );
    validates(
        "input var A : [3 2]\noutput var v : [2]\noutput var w : [2]\n\
         v = redmin 1 A - red* 1 A\nw = redmax 1 (A / 2) + red+ 1 (expa 1 3 v)\n",
    );
    // Hoisting: the reduction does not depend on the outer loops.
    validates(
        "input var A : [5 3]\ninput var w : [2]\noutput var C : [5 3]\n\
         C = A * expa 1 5 (expa 1 3 (red+ 1 w))\n",
    );
}

#[test]
fn division_and_scalar_statements_validate() {
    // Division by a scalar runs its innermost loop over padding and re-zeroes it.
    validates(
        "input var A : [3 5]\ninput var B : [5 6]\ninput var s : []\noutput var C : [3 6]\n\
         C = (A # B) .[2 3]\nC = C + C\nC = C / s\n",
    );
    validates("input var x : [4]\noutput var s : []\ns = red+ 1 (x * x) / (red+ 1 x - 1)\n");
}

#[test]
fn undefined_values_validate() {
    // T is read before it is assigned (•); C is an output that is never assigned.
    let r = validates(
        "input var A : [2]\noutput var B : [2]\noutput var C : [2]\nvar T : [2]\n\
         B = A + T\nT = A\n",
    );
    assert_eq!(r[0].1.output_cells, 4);
}

#[test]
fn random_programs_validate() {
    let configs = [
        (0..150, GenConfig::default()),
        (
            1000..1150,
            GenConfig {
                division: true,
                max_inner_rank: 4,
                ..GenConfig::default()
            },
        ),
    ];
    let (mut validated, mut refused, mut lifted) = (0, 0, 0);
    for (seeds, cfg) in configs {
        let strategy = gen::program(cfg);
        for seed in seeds {
            let program = gen::sample(&strategy, seed);
            let text = teil::fmt::program(&program, teil::fmt::Style::Infix);
            let (p, _) = teil::check(program).expect("generated programs check");
            for pad in PADS {
                let k = lower(&p, pad, true);
                match validate::validate(&p, &k) {
                    Ok(v) => {
                        assert_eq!((v.output_cells, v.padding_cells), expected_counts(&k));
                        validated += 1;
                        lifted += usize::from(k.lifted > 0);
                    }
                    Err(e) if e.is_rejection() => {
                        panic!("seed {seed}, M = {pad}: {e}\n{text}")
                    }
                    Err(e) => {
                        assert!(matches!(e, ValidationError::TooLarge(_)), "{e}");
                        refused += 1;
                    }
                }
            }
        }
    }
    // Refusals (terms over the size limit, mostly `red*` of sums) are rare at these sizes.
    assert!(
        refused * 50 <= validated,
        "{refused} refused, {validated} validated"
    );
    assert!(lifted > 0);
}

#[test]
fn large_shapes_are_refused_quickly() {
    let started = std::time::Instant::now();
    let p = compile(&cfd(12));
    let k = lower(&p, 1, true);
    let e = validate::validate(&p, &k).expect_err("too large");
    assert!(!e.is_rejection());
    let msg = e.to_string();
    assert!(
        msg.starts_with("cannot validate: symbolic evaluation would take about"),
        "{msg}"
    );
    // Terms over the size limit: a product of sums multiplies out.
    let p = compile("input var A : [12 2]\noutput var s : [2]\ns = red* 1 (A + A)\n");
    let e = validate::validate(&p, &lower(&p, 1, true)).expect_err("too large");
    assert!(
        e.to_string()
            .starts_with("cannot validate: s[1] needs a term larger"),
        "{e}"
    );
    // Fuel: a tight budget refuses even a small program.
    let p = compile(&cfd(2));
    let limits = Limits {
        terms: teil_interp::symbolic::Limits {
            fuel: 100,
            ..Default::default()
        },
        ..Limits::default()
    };
    let e = validate::validate_with(&p, &lower(&p, 1, true), &limits).expect_err("no fuel");
    assert!(matches!(e, ValidationError::TooLarge(_)), "{e}");
    assert!(started.elapsed().as_secs() < 10);
}

// ---------------------------------------------------------------------------------------------
// Broken kernels.

/// Applies `f` to every node of every nest, outermost first.
fn each_node(k: &mut Kernel, f: &mut impl FnMut(&mut Node)) {
    fn go(ns: &mut [Node], f: &mut impl FnMut(&mut Node)) {
        for n in ns {
            f(n);
            if let Node::Loop { body, .. } = n {
                go(body, f);
            }
        }
    }
    for s in &mut k.steps {
        if let Step::Nest { body, .. } = s {
            go(body, f);
        }
    }
}

fn rejected(p: &CheckedProgram, k: &Kernel) -> ValidationError {
    let e = validate::validate(p, k).expect_err("the broken kernel must be rejected");
    assert!(e.is_rejection(), "{e}");
    e
}

const MATMUL: &str = "input var A : [3 3]\ninput var B : [3 3]\noutput var C : [3 3]\n\
                      C = (A # B) .[2 3]\n";

#[test]
fn a_reduction_over_the_padded_extent_is_rejected() {
    for (src, op) in [
        (MATMUL, "+"),
        (
            "input var A : [3 3]\noutput var m : [3]\nm = redmax 2 A\n",
            "max",
        ),
    ] {
        let p = compile(src);
        let mut k = lower(&p, 4, true);
        each_node(&mut k, &mut |n| {
            if let Node::Loop { body, extent, .. } = n {
                if body.iter().any(|b| matches!(b, Node::AccUpdate { .. })) {
                    *extent = 4;
                }
            }
        });
        match rejected(&p, &k) {
            ValidationError::Differs {
                index,
                kernel,
                oracle,
                ..
            } => {
                assert!(index.iter().all(|&i| i == 1), "{index:?}");
                // The padding cell's zero was folded in.
                assert!(kernel.to_string().contains('0'), "{kernel}");
                assert!(!oracle.to_string().contains('0'), "{oracle}");
                assert!(kernel.to_string().contains(op));
            }
            e => panic!("{e}"),
        }
    }
}

#[test]
fn swapped_indices_are_rejected_with_both_terms() {
    let p = compile(MATMUL);
    let mut k = lower(&p, 1, true);
    each_node(&mut k, &mut |n| {
        if let Node::AccUpdate {
            value: Val::Bin(_, a, _),
            ..
        } = n
        {
            if let Val::Load(_, idx) = &mut **a {
                idx.swap(0, 1);
            }
        }
    });
    let e = rejected(&p, &k);
    assert_eq!(
        e.to_string(),
        "output cell C[1,1] differs from the semantics\n  \
         kernel: A[1,1]*B[1,1] + A[2,1]*B[2,1] + A[3,1]*B[3,1]\n  \
         oracle: A[1,1]*B[1,1] + A[1,2]*B[2,1] + A[1,3]*B[3,1]"
    );
}

#[test]
fn a_wrong_accumulator_identity_is_rejected() {
    let p = compile(MATMUL);
    let mut k = lower(&p, 1, true);
    each_node(&mut k, &mut |n| {
        if let Node::AccInit { op, .. } = n {
            *op = teil::ast::RedOp::Product;
        }
    });
    match rejected(&p, &k) {
        ValidationError::Differs { kernel, .. } => {
            assert_eq!(
                kernel.to_string(),
                "1 + A[1,1]*B[1,1] + A[1,2]*B[2,1] + A[1,3]*B[3,1]"
            );
        }
        e => panic!("{e}"),
    }
}

#[test]
fn a_missing_re_zeroing_nest_is_rejected() {
    let p = compile("input var A : [3 5]\ninput var s : []\noutput var C : [3 5]\nC = A / s\n");
    let mut k = lower(&p, 4, true);
    let before = k.steps.len();
    k.steps
        .retain(|s| !matches!(s, Step::Nest { comment, .. } if comment.starts_with("re-zero")));
    assert_eq!(k.steps.len(), before - 1);
    match rejected(&p, &k) {
        ValidationError::Padding {
            buffer,
            index,
            term,
            ..
        } => {
            assert_eq!(buffer, "C");
            assert_eq!(index, vec![1, 6]);
            assert_eq!(term.to_string(), "(0 / s[])");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn padding_a_loop_whose_value_is_not_zero_is_rejected() {
    // Broadcasting: the expanded dimension's padding would hold logical values of A.
    let p = compile("input var A : [2]\noutput var C : [3 2]\nC = expa 1 3 A\n");
    let mut k = lower(&p, 4, true);
    let mut outer = true;
    each_node(&mut k, &mut |n| {
        if let Node::Loop { extent, .. } = n {
            if outer {
                *extent = 4;
                outer = false;
            }
        }
    });
    match rejected(&p, &k) {
        ValidationError::Padding { index, term, .. } => {
            assert_eq!(index, vec![4, 1]);
            assert_eq!(term.to_string(), "A[1]");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn an_out_of_bounds_store_is_rejected() {
    let p = compile(MATMUL);
    let mut k = lower(&p, 1, true);
    each_node(&mut k, &mut |n| {
        if let Node::Store { index, .. } = n {
            index[0] = Ix::Const(3);
        }
    });
    let e = rejected(&p, &k);
    assert!(matches!(e, ValidationError::Malformed { .. }));
    assert_eq!(
        e.to_string(),
        "step 1 (C = (A # B) .[2 3]): out-of-bounds access C[4,1] (padded shape [3, 3])"
    );
}

#[test]
fn writing_an_input_is_rejected() {
    let p = compile(MATMUL);
    let mut k = lower(&p, 1, true);
    let a = k.params[0];
    each_node(&mut k, &mut |n| {
        if let Node::Store { buf, .. } = n {
            *buf = a;
        }
    });
    match rejected(&p, &k) {
        ValidationError::InputWritten { var, index, .. } => {
            assert_eq!((var.as_str(), index), ("A", vec![1, 1]));
        }
        e => panic!("{e}"),
    }
}

#[test]
fn an_in_place_update_without_its_temporary_is_rejected() {
    // A = A ^[1 2] goes through a temporary; storing straight into A overwrites cells that
    // later iterations still read.
    let p = compile("var A : [3 3]\nA = A ^[1 2]\n");
    let mut k = lower(&p, 1, true);
    let a = k.params[0];
    k.steps.retain(|s| !matches!(s, Step::Copy { .. }));
    each_node(&mut k, &mut |n| {
        if let Node::Store { buf, .. } = n {
            *buf = a;
        }
    });
    match rejected(&p, &k) {
        ValidationError::Differs {
            index,
            kernel,
            oracle,
            ..
        } => {
            // A[1,2] already holds the old A[2,1] when A[2,1] = A[1,2] is computed.
            assert_eq!(index, vec![2, 1]);
            assert_eq!(oracle.to_string(), "A[1,2]");
            assert_eq!(kernel.to_string(), "A[2,1]");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn overlapping_temporaries_are_rejected() {
    let p = compile(&cfd(2));
    let mut k = lower(&p, 1, true);
    let temps: Vec<usize> = (0..k.buffers.len())
        .filter(|&b| k.buffers[b].role == Role::Temp)
        .collect();
    assert_eq!(temps.len(), 2);
    k.buffers[temps[1]].offset = k.buffers[temps[0]].offset;
    assert!(matches!(rejected(&p, &k), ValidationError::Differs { .. }));
}

#[test]
fn a_missing_undefined_fill_is_rejected() {
    let p = compile("input var A : [2]\noutput var B : [2]\nvar T : [2]\nB = A + T\nT = A\n");
    let mut k = lower(&p, 1, true);
    let before = k.steps.len();
    k.steps.retain(
        |s| !matches!(s, Step::Nest { comment, .. } if comment.contains("undefined value")),
    );
    assert_eq!(k.steps.len(), before - 1);
    match rejected(&p, &k) {
        ValidationError::Differs { kernel, oracle, .. } => {
            // The workspace is zeroed, so T reads as 0 instead of •.
            assert_eq!(kernel.to_string(), "0 + A[1]");
            assert_eq!(oracle.to_string(), "•");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn large_unused_variables_are_refused_before_anything_is_allocated() {
    let p = compile("input var x : [2]\noutput var y : [2]\nvar Z : [100000 100000]\ny = x + x\n");
    let e = validate::validate(&p, &lower(&p, 1, true)).expect_err("too large");
    assert_eq!(
        e.to_string(),
        "cannot validate: the program's variables and the kernel's buffers have 10000000004 \
         cells, more than the limit of 2097152; validation is for small shapes"
    );
}

/// Data equal to an operator's identity, or next to one: the literals `-0`, `0`, `1` and the
/// infinities (TeIL has no infinite literal; `1 / 0` is one, as a term).
const IDENTITY_DATA: [&str; 5] = ["(-0)", "0", "1", "(1 / 0)", "(-1 / 0)"];

/// Whether some loop nest of `k` folds into a cell (`Node::Fold`, an interchanged reduction)
/// or is a lane fold: the nests whose start from the identity the validator must tell apart
/// from identity-valued data.
fn has_fold(k: &Kernel) -> bool {
    let mut found = false;
    let mut k = k.clone();
    each_node(&mut k, &mut |n| {
        found |= matches!(n, Node::Fold { .. } | Node::LaneFold(_));
    });
    found
}

/// `src` validates at M = 1 and 4, with and without lifting, or (`quick`, for the largest
/// shapes) at M = 1 with lifting; returns the kernels.
fn validates_large(src: &str, quick: bool) -> Vec<Kernel> {
    let (pads, lifts): (&[u64], &[bool]) = if quick {
        (&[1], &[true])
    } else {
        (&[1, 4], &[true, false])
    };
    validates_at(src, pads, lifts)
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

#[test]
fn reductions_of_identity_valued_data_validate() {
    // Issue 23: a cell holding `-0` because the data is `-0` is an operand of the fold, not
    // the fold's start; the kernel computes `-0 + -0 + ...` exactly as the oracle's term.
    let mut folds = 0;
    for n in [24, 64] {
        for op in ["red+", "red*", "redmax", "redmin"] {
            for lit in IDENTITY_DATA {
                for axis in [1, 2] {
                    let src = format!(
                        "output var r : [{n}]\nvar A : [{n} {n}]\n\
                         A = expa 1 {n} (expa 1 {n} {lit})\nr = {op} {axis} A\n"
                    );
                    folds += validates_large(&src, false)
                        .iter()
                        .filter(|k| has_fold(k))
                        .count();
                }
            }
        }
    }
    // Along the first axis every reduction is interchanged into a fold (2 extents x 4
    // operators x 5 data x 4 kernels), along the second max and min are lane folds.
    assert!(folds >= 2 * 4 * 5 * 4, "{folds} kernels with folds");
}

#[test]
fn contractions_of_identity_valued_data_validate() {
    // Every kernel form with a sum: dot products (small matrix products, matrix-vector,
    // vector-matrix), a packed product (`P`: 336 columns, more than a small product's), sums of
    // products, a tiled transposition followed by an in-place product.
    for n in [24, 64] {
        for lit in IDENTITY_DATA {
            let forms = [
                "C = (A # B) .[2 3]",
                "C = (B # A) .[2 3]",
                "y = (A # x) .[2 3]",
                "y = (x # A) .[1 2]",
                "s = red+ 1 (red+ 1 (A * B))",
                "C = (A # A) .[2 3]",
                "C = transp 1 2 A\nC = C + (A # B) .[2 3]",
                "P = (A # W) .[2 3]",
            ];
            for stmt in forms {
                // Products are cubic: at 64 a small product is 262,144 symbolic multiply-adds
                // interpreted once per target (its dot products' vectors differ), more than the
                // fuel, so the products run at 40 there (the packed one, larger, only at 24 and
                // at one M), and with only the data equal to a sum's identity (`-0`) and a
                // product's (`1`).
                let cubic = stmt.contains('#') && !stmt.contains('x');
                let packed = stmt.starts_with('P');
                if n > 24 && (packed || cubic && !matches!(lit, "(-0)" | "1")) {
                    continue;
                }
                let n = if cubic { n.min(40) } else { n };
                let src = format!(
                    "input var B : [{n} {n}]\ninput var x : [{n}]\ninput var W : [{n} 336]\n\
                     var A : [{n} {n}]\noutput var C : [{n} {n}]\noutput var y : [{n}]\n\
                     output var s : []\noutput var P : [{n} 336]\n\
                     A = expa 1 {n} (expa 1 {n} {lit})\n{stmt}\n"
                );
                let kernels = validates_large(&src, n > 24 || packed);
                if packed {
                    let forms = opt::printing(&kernels[0]);
                    assert!(forms.contains(&Printing::Packed), "{forms:?}");
                } else if stmt.starts_with("C = (A # B)") {
                    let forms = opt::printing(&kernels[0]);
                    assert!(forms.contains(&Printing::Dot), "{forms:?}");
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// Reductions and contractions over data mixing identity-valued literals with inputs, at
    /// extents on both sides of the interchange threshold.
    #[test]
    fn identity_valued_data_validates(
        n in 18u64..=40,
        m in 1u64..=6,
        op in proptest::sample::select(vec!["red+", "red*", "redmax", "redmin"]),
        lit in proptest::sample::select(IDENTITY_DATA.to_vec()),
        axis in 1u64..=2,
        mixed in proptest::bool::ANY,
    ) {
        // `A` is the literal everywhere (mixed: the literal plus an input cell, a control; not
        // for `red*`, whose product of n sums has 2^n monomials, over the symbolic limits).
        let mixed = mixed && op != "red*";
        let fill = if mixed {
            format!("A = expa 1 {n} (expa 1 {m} {lit})\nA = A + Z\n")
        } else {
            format!("A = expa 1 {n} (expa 1 {m} {lit})\n")
        };
        let out = if axis == 1 { m } else { n };
        let src = format!(
            "input var Z : [{n} {m}]\nvar A : [{n} {m}]\noutput var r : [{out}]\n\
             output var C : [{m} {m}]\n{fill}r = {op} {axis} A\nC = (A # A) .[1 3]\n"
        );
        validates_large(&src, false);
    }
}

// ---------------------------------------------------------------------------------------------
// Element types and functions (spec/validation.md, "Binary32 and functions").

const SOFTMAX32: &str = "input var X : f32[3 5]\noutput var Y : f32[3 5]\nvar m : f32[3]\n\
                         var e : f32[3 5]\nm = redmax 2 X\ne = exp (X - expa 2 5 m)\n\
                         Y = e / expa 2 5 (red+ 2 e)\n";

#[test]
fn binary32_programs_and_functions_validate() {
    for src in [
        SOFTMAX32,
        "input var A : f32[3 4]\ninput var B : [4 2]\noutput var C : f32[3 2]\n\
         C = (A # f32 B) .[2 3]\n",
        "input var x : [5]\noutput var y : [5]\noutput var z : f32[5]\n\
         y = max (sqrt (abs x)) (min (tanh x) (erf x)) + log (exp x)\nz = f32 (2.5 * y)\n",
        "input var a : f32[2 3]\noutput var s : f32[]\ns = red+ 1 (red* 2 (0.1 * a))\n",
    ] {
        let reports = validates(src);
        assert!(reports.iter().all(|(_, v)| v.output_cells > 0), "{src}");
    }
}

#[test]
fn a_binary32_sum_accumulated_in_binary64_is_rejected() {
    // The kernel folds the binary32 terms without rounding each step: a wider accumulator, as
    // a compiler that kept `float` sums in `double` would.
    let p = compile("input var A : f32[3 4]\noutput var s : f32[3]\ns = red+ 2 A\n");
    let mut k = lower(&p, 1, false);
    each_node(&mut k, &mut |n| {
        if let Node::AccInit { elem, .. } = n {
            *elem = teil::ast::ElemType::F64;
        }
    });
    // The kernel's and the oracle's terms of the first cell that differs.
    let terms = |k: &Kernel| match rejected(&p, k) {
        ValidationError::Differs { kernel, oracle, .. } => (kernel.to_string(), oracle.to_string()),
        e => panic!("{e}"),
    };
    // The oracle's is the binary32 sum, whose laws allow any grouping of its binary32
    // additions.
    let sum32 = "f32{A[1,1] + A[1,2] + A[1,3] + A[1,4]}";
    assert_eq!(
        terms(&k),
        (
            "A[1,1] + A[1,2] + A[1,3] + A[1,4]".to_string(),
            sum32.to_string()
        )
    );
    // Rounded once at the end, as `f32 (red+ 2 A)` of binary64 values would be: the rounding
    // of a binary64 sum, not a binary32 sum (spec/values.md, "In binary32").
    each_node(&mut k, &mut |n| {
        if let Node::Store { value, .. } = n {
            *value = Val::Convert(teil::ast::ElemType::F32, Box::new(value.clone()));
        }
    });
    assert_eq!(
        terms(&k),
        (
            "f32(A[1,1] + A[1,2] + A[1,3] + A[1,4])".to_string(),
            sum32.to_string()
        )
    );
}

#[test]
fn a_wrong_function_or_swapped_maximum_is_rejected() {
    let p = compile("input var x : f32[3]\noutput var y : f32[3]\ny = max (exp x) x\n");
    let k = lower(&p, 1, false);
    validate::validate(&p, &k).expect("the kernel as lowered validates");
    // `log` for `exp`.
    let mut wrong = k.clone();
    each_node(&mut wrong, &mut |n| {
        if let Node::Store {
            value: Val::Func2(_, a, _),
            ..
        } = n
        {
            if let Val::Func(f, _) = &mut **a {
                *f = teil::ast::Func::Log;
            }
        }
    });
    match rejected(&p, &wrong) {
        ValidationError::Differs { kernel, oracle, .. } => {
            assert_eq!(kernel.to_string(), "maximum(logf(x[1]), x[1])");
            assert_eq!(oracle.to_string(), "maximum(expf(x[1]), x[1])");
        }
        e => panic!("{e}"),
    }
    // `min` for `max`.
    let mut swapped = k.clone();
    each_node(&mut swapped, &mut |n| {
        if let Node::Store {
            value: Val::Func2(f, ..),
            ..
        } = n
        {
            *f = teil::ast::Func2::Min;
        }
    });
    rejected(&p, &swapped);
    // The binary64 function of a binary32 value.
    let mut widened = k;
    for b in &mut widened.buffers {
        b.elem = teil::ast::ElemType::F64;
    }
    rejected(&p, &widened);
}
