//! Fused multiply-add mode (spec/values.md, "Fused multiply-add"): the C backend with
//! `Options { fma: true, .. }` against the oracle and against exact mode.
//!
//! - On integer-valued inputs nothing rounds, so fma mode equals exact mode and the oracle bit
//!   for bit, in every kernel form (plain nests, packed, dot, element-wise).
//! - On random floats the fma-mode result (without lifting, so that it evaluates the spec's own
//!   term) is within the spec's bound `2 γ_D M` of the oracle in every cell, the bound computed
//!   by the oracle over `teil_interp::rounding::Rounding`.
//! - On crafted inputs where one product is not representable, fma mode gives a different
//!   result from exact mode in every kernel form and every target's variant: the fusion really
//!   happens (where the C compiler says the target has a fast FMA; the assertion is skipped,
//!   with a message, where it does not).
//! - fma kernels validate, show the mode in their IR text, and exact mode's C has no trace of it.

mod compilers;

use std::collections::BTreeMap;
use teil::CheckedProgram;
use teil_cbackend::ir::{Kernel, Target};
use teil_cbackend::opt::{self, Printing};
use teil_cbackend::run::{self, Job, Toolchain};
use teil_cbackend::{validate, Options};
use teil_interp::Tensor;

/// Matrix product large enough for the packed kernel (spec/padding.md, "Contraction kernels"):
/// 321 columns, one more than a small product's (`machine::Sizes::small_product` on the reference machine).
const MATMUL: &str = "input var A : [20 18]\ninput var B : [18 321]\noutput var C : [20 321]\n\
                      C = (A # B) .[2 3]";
/// Matrix-vector product: dot-product kernel (three blocks of 8 rows and 5 rows one by one).
const MATVEC: &str = "input var A : [29 20]\ninput var x : [20]\noutput var y : [29]\n\
                      y = (A # x) .[2 3]";
/// A small contraction: a plain nest with an accumulator.
const SMALL: &str = "input var A : [3 4]\ninput var B : [4 5]\noutput var C : [3 5]\n\
                     C = (A # B) .[2 3]";
/// Element-wise product-then-adds, both operand orders, a subtraction (never fused) and a
/// reduction of a product.
const ELEMENTWISE: &str = "input var A : [4 3]\ninput var B : [4 3]\ninput var D : [4 3]\n\
                           output var E : [4 3]\noutput var F : [4 3]\noutput var G : [4 3]\n\
                           output var s : [3]\n\
                           E = A * B + D\nF = D + A * B\nG = A * B - D\ns = red+ 1 (A * B)";
/// Three factors under two sums: lifted by default.
const CHAIN: &str = "input var A : [5 6]\ninput var B : [6 7]\ninput var c : [7]\n\
                     output var r : [5]\nr = (A # B # c) .[2 3] .[2 3]";

/// A nested sum over two labels (abcd,aebf->dfce at odd extents): a packed two-level
/// contraction step, whose inner sums fuse their products, never the outer additions.
const TWO_LEVEL: &str = "input var A : [5 3 7 6]\ninput var B : [5 9 3 4]\noutput var C : [6 4 7 9]\n\
                         C = transp 3 4 (transp 2 4 (transp 1 2 (contr 1 5 (contr 1 5 (prod A B)))))";

/// A matrix-vector product over rows longer than `opt::contract::PREFETCH_MAX_ROW`: in fma
/// mode its dot products run 16 lanes on AVX-512 (`CHAIN_LANES`; one block and one row alone).
const LONG_ROWS: &str = "input var A : [17 520]\ninput var x : [520]\noutput var y : [17]\n\
                         y = (A # x) .[2 3]";

/// The matrix product in binary32: the packed product's `float` tile, fused in binary32.
const MATMUL32: &str = "input var A : f32[20 18]\ninput var B : f32[18 321]\n\
                        output var C : f32[20 321]\nC = (A # B) .[2 3]";
/// The matrix-vector product in binary32: dot products of 16 float lanes (rows transposed in
/// registers), whose last block (from row 21) computes again the rows it shares with the first.
const MATVEC32: &str = "input var A : f32[37 20]\ninput var x : f32[20]\noutput var y : f32[37]\n\
                        y = (A # x) .[2 3]";
/// The small contraction in binary32: a plain nest with a `float` accumulator (`teil_fmaf`).
const SMALL32: &str = "input var A : f32[3 4]\ninput var B : f32[4 5]\noutput var C : f32[3 5]\n\
                       C = (A # B) .[2 3]";
/// The element-wise product-then-adds in binary32.
const ELEMENTWISE32: &str = "input var A : f32[4 3]\ninput var B : f32[4 3]\ninput var D : f32[4 3]\n\
                             output var E : f32[4 3]\noutput var F : f32[4 3]\noutput var G : f32[4 3]\n\
                             output var s : f32[3]\n\
                             E = A * B + D\nF = D + A * B\nG = A * B - D\ns = red+ 1 (A * B)";
/// The two-level sum in binary32.
const TWO_LEVEL32: &str = "input var A : f32[5 3 7 6]\ninput var B : f32[5 9 3 4]\n\
                           output var C : f32[6 4 7 9]\n\
                           C = transp 3 4 (transp 2 4 (transp 1 2 (contr 1 5 (contr 1 5 (prod A B)))))";

const PROGRAMS: [(&str, &str); 12] = [
    ("matmul", MATMUL),
    ("matvec", MATVEC),
    ("long_rows", LONG_ROWS),
    ("small", SMALL),
    ("elementwise", ELEMENTWISE),
    ("chain", CHAIN),
    ("two_level", TWO_LEVEL),
    ("matmul32", MATMUL32),
    ("matvec32", MATVEC32),
    ("small32", SMALL32),
    ("elementwise32", ELEMENTWISE32),
    ("two_level32", TWO_LEVEL32),
];

fn compile(src: &str) -> CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0
}

fn lower(p: &CheckedProgram, name: &str, pad: u64, lift: bool, fma: bool) -> Kernel {
    let opts = Options {
        pad,
        name: name.to_string(),
        lift,
        fma,
        openmp: false,
        sizes: Default::default(),
    };
    teil_cbackend::lower(p, &opts).expect("lowers")
}

/// The flags the tests compile with: warnings are errors, and `-march=native` where the
/// compiler accepts it (so that a machine with FMA instructions uses them). Also whether the
/// compiler then says the target has a fast FMA (`__FP_FAST_FMA`).
fn toolchain() -> (Toolchain, bool) {
    let base = "-std=c99 -O2 -Wall -Wextra -Werror -pedantic";
    let native = format!("{base} -march=native");
    match compilers::macros("cc", &native) {
        Some(macros) => (
            Toolchain::default().with_cflags(&native),
            macros.contains("#define __FP_FAST_FMA 1"),
        ),
        None => (Toolchain::default().with_cflags(base), false),
    }
}

/// Every program of [`PROGRAMS`] as kernels, each with the inputs `inputs(program)`, run in
/// one batch; the results by kernel name.
fn run_all(
    tc: &Toolchain,
    kernels: &[(Kernel, BTreeMap<String, Tensor>)],
) -> BTreeMap<String, BTreeMap<String, Tensor>> {
    let ks: Vec<&Kernel> = kernels.iter().map(|(k, _)| k).collect();
    let jobs: Vec<Job> = kernels
        .iter()
        .enumerate()
        .map(|(i, (_, inputs))| Job {
            kernel: i,
            inputs: inputs.clone(),
        })
        .collect();
    let outcomes = run::run_batch(tc, &ks, &jobs).expect("the kernels compile and run");
    kernels
        .iter()
        .zip(outcomes)
        .map(|((k, _), o)| {
            assert!(
                o.nonzero_padding.is_empty(),
                "{}: padding stays zero",
                k.name
            );
            (k.name.clone(), o.values)
        })
        .collect()
}

fn outputs(p: &CheckedProgram) -> Vec<String> {
    p.interface()
        .filter(|d| p.is_output(d))
        .map(|d| d.name.name.clone())
        .collect()
}

/// Bit-for-bit equality as spec/values.md compares results (NaN = NaN, -0 = +0).
fn same(x: f64, y: f64) -> bool {
    x == y || (x.is_nan() && y.is_nan())
}

/// Reproducible doubles in `±[0.5, 2)`: no product or sum of the test programs can underflow
/// or overflow, as the bound assumes.
fn random_floats(p: &CheckedProgram, seed: u64) -> BTreeMap<String, Tensor> {
    let mut rng = teil_interp::random::SplitMix64(seed);
    let mut next = move || rng.next_u64();
    p.program()
        .decls
        .iter()
        .filter(|d| p.is_input(d))
        .map(|d| {
            let shape: Vec<usize> = d.shape().iter().map(|&n| n as usize).collect();
            // In binary32, the value rounded to it.
            let t = Tensor::from_shape_simple_fn(shape, || {
                let r = next();
                let mag = 0.5 + 1.5 * ((r >> 11) as f64 / (1u64 << 53) as f64);
                d.elem.round(if r & 1 == 1 { -mag } else { mag })
            });
            (d.name.name.clone(), t)
        })
        .collect()
}

#[test]
fn on_integer_inputs_fma_mode_equals_exact_mode_and_the_oracle_bit_for_bit() {
    let (tc, _) = toolchain();
    let mut kernels = Vec::new();
    let mut expected = BTreeMap::new();
    for (i, (name, src)) in PROGRAMS.iter().enumerate() {
        let p = compile(src);
        let inputs = teil_interp::random_inputs(&p, 7 + i as u64);
        let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
        for pad in [1, 4] {
            for lift in [false, true] {
                for fma in [false, true] {
                    let kname = format!("{name}_m{pad}_l{}_f{}", lift as u8, fma as u8);
                    kernels.push((lower(&p, &kname, pad, lift, fma), inputs.clone()));
                    expected.insert(kname, (outputs(&p), oracle.clone()));
                }
            }
        }
    }
    let got = run_all(&tc, &kernels);
    for (kname, (outs, oracle)) in &expected {
        for v in outs {
            for (x, y) in oracle[v].iter().zip(got[kname][v].iter()) {
                assert!(same(*x, *y), "{kname}: `{v}` oracle {x}, C {y}");
            }
        }
    }
}

#[test]
fn on_random_floats_fma_mode_stays_within_the_bound_of_the_spec() {
    let (tc, fast_fma) = toolchain();
    let mut kernels = Vec::new();
    let mut expected = BTreeMap::new();
    for (name, src) in PROGRAMS {
        let p = compile(src);
        for seed in 0..3u64 {
            let inputs = random_floats(&p, seed);
            let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
            let bounds = teil_interp::rounding::fma_bounds(&p, &inputs).expect("bounds");
            for pad in [1, 3] {
                let kname = format!("{name}_s{seed}_m{pad}");
                kernels.push((lower(&p, &kname, pad, false, true), inputs.clone()));
                expected.insert(kname, (outputs(&p), oracle.clone(), bounds.clone()));
            }
        }
    }
    let got = run_all(&tc, &kernels);
    let (mut cells, mut differing) = (0, 0);
    for (kname, (outs, oracle, bounds)) in &expected {
        for v in outs {
            let cells_of = oracle[v].iter().zip(got[kname][v].iter());
            for ((x, y), b) in cells_of.zip(bounds[v].iter()) {
                // Division-free programs on these inputs: every cell has a finite bound, and
                // a non-trivial one (the programs round).
                assert!(b.is_finite() && *b > 0.0, "{kname}: `{v}` bound {b}");
                assert!(
                    (x - y).abs() <= *b,
                    "{kname}: `{v}` oracle {x}, fma {y}, |difference| {} > bound {b}",
                    (x - y).abs()
                );
                cells += 1;
                differing += usize::from(x != y);
            }
        }
    }
    // 3 seeds x 2 multiples x (6420 + 29 + 17 + 15 + 39 + 5 + 1512, and in binary32 6420 +
    // 37 + 15 + 39 + 1512) output cells.
    assert_eq!(
        cells,
        3 * 2 * (6420 + 29 + 17 + 15 + 39 + 5 + 1512 + 6420 + 37 + 15 + 39 + 1512)
    );
    // Where the target fuses, rounding once shows in some cells (not a vacuous comparison).
    assert_eq!(
        differing > 0,
        fast_fma,
        "{differing} of {cells} cells differ"
    );
}

/// `x = [-1, 1 + 2^-27]`, `y = [1 + 2^-26, 1 + 2^-27]`: exact mode computes
/// `-(1 + 2^-26) ⊕ round((1 + 2^-27)^2) = 0`, because the product's last bit `2^-54` is
/// rounded away; fma mode computes `fma(1 + 2^-27, 1 + 2^-27, -(1 + 2^-26)) = 2^-54`.
const X: [f64; 2] = [-1.0, 1.0 + 1.0 / (1u64 << 27) as f64];
const Y: [f64; 2] = [
    1.0 + 1.0 / (1u64 << 26) as f64,
    1.0 + 1.0 / (1u64 << 27) as f64,
];
const FUSED: f64 = 1.0 / (1u64 << 54) as f64;

/// The same in binary32: `x = [-1, 1 + 2^-12]`, `y = [1 + 2^-11, 1 + 2^-12]`; the product
/// `(1 + 2^-12)^2 = 1 + 2^-11 + 2^-24` is a tie in binary32 and rounds to the even `1 + 2^-11`,
/// so exact mode gives 0 and fma mode (in binary32) `2^-24`.
const X32: [f32; 2] = [-1.0, 1.0 + 1.0 / (1u32 << 12) as f32];
const Y32: [f32; 2] = [
    1.0 + 1.0 / (1u32 << 11) as f32,
    1.0 + 1.0 / (1u32 << 12) as f32,
];
const FUSED32: f32 = 1.0 / (1u32 << 24) as f32;

#[test]
fn a_product_that_does_not_round_exactly_shows_the_fusion_in_every_kernel_form() {
    assert_eq!(X[0] * Y[0] + X[1] * Y[1], 0.0);
    assert_eq!(X[1].mul_add(Y[1], X[0] * Y[0]), FUSED);
    // Matrix product: row 1 of A is x, column 1 of B is y (zeros elsewhere in them).
    let mm = compile(MATMUL);
    let mut a = Tensor::zeros(vec![20, 18]);
    let mut b = Tensor::zeros(vec![18, 321]);
    for k in 0..2 {
        a[[0, k]] = X[k];
        b[[k, 0]] = Y[k];
    }
    let mm_in = BTreeMap::from([("A".to_string(), a.clone()), ("B".to_string(), b)]);
    // Matrix-vector product: rows 1 (in a block of 8 lanes) and 29 (in the remainder) of A
    // are x, the vector is y.
    let mv = compile(MATVEC);
    let mut v = Tensor::zeros(vec![20]);
    v[[0]] = Y[0];
    v[[1]] = Y[1];
    let mut a29 = Tensor::zeros(vec![29, 20]);
    for row in [0, 28] {
        a29[[row, 0]] = X[0];
        a29[[row, 1]] = X[1];
    }
    let mv_in = BTreeMap::from([("A".to_string(), a29), ("x".to_string(), v)]);
    // The small contraction (plain nest): the first 2 terms of row 1 and column 1.
    let sm = compile(SMALL);
    let mut a34 = Tensor::zeros(vec![3, 4]);
    let mut b45 = Tensor::zeros(vec![4, 5]);
    for k in 0..2 {
        a34[[0, k]] = X[k];
        b45[[k, 0]] = Y[k];
    }
    let sm_in = BTreeMap::from([("A".to_string(), a34), ("B".to_string(), b45)]);
    // Element-wise: A * B + D with A = B = x[1] and D = -(1 + 2^-26) in cell [1, 1].
    let ew = compile(ELEMENTWISE);
    let mut ea = Tensor::ones(vec![4, 3]);
    let mut ed = Tensor::ones(vec![4, 3]);
    ea[[0, 0]] = X[1];
    ed[[0, 0]] = -Y[0];
    let ew_in = BTreeMap::from([
        ("A".to_string(), ea.clone()),
        ("B".to_string(), ea),
        ("D".to_string(), ed),
    ]);
    // The same three forms in binary32, with X32 and Y32.
    assert_eq!(X32[0] * Y32[0] + X32[1] * Y32[1], 0.0);
    assert_eq!(X32[1].mul_add(Y32[1], X32[0] * Y32[0]), FUSED32);
    let (x32, y32) = (X32.map(f64::from), Y32.map(f64::from));
    let mm32 = compile(MATMUL32);
    let mut mm32_in = mm_in.clone();
    for k in 0..2 {
        mm32_in.get_mut("A").unwrap()[[0, k]] = x32[k];
        mm32_in.get_mut("B").unwrap()[[k, 0]] = y32[k];
    }
    // Rows 1 (in the first block of lanes) and 37 (in the last block) of A are x.
    let mv32 = compile(MATVEC32);
    let mut v32 = Tensor::zeros(vec![20]);
    let mut a37 = Tensor::zeros(vec![37, 20]);
    for k in 0..2 {
        v32[[k]] = y32[k];
        for row in [0, 36] {
            a37[[row, k]] = x32[k];
        }
    }
    let mv32_in = BTreeMap::from([("A".to_string(), a37), ("x".to_string(), v32)]);
    let sm32 = compile(SMALL32);
    let mut sm32_in = sm_in.clone();
    for k in 0..2 {
        sm32_in.get_mut("A").unwrap()[[0, k]] = x32[k];
        sm32_in.get_mut("B").unwrap()[[k, 0]] = y32[k];
    }
    let ew32 = compile(ELEMENTWISE32);
    let mut ew32_in = ew_in.clone();
    for name in ["A", "B"] {
        ew32_in.get_mut(name).unwrap()[[0, 0]] = x32[1];
    }
    ew32_in.get_mut("D").unwrap()[[0, 0]] = -y32[0];

    // Each case: the program, its inputs, the output, the crafted cells (flat), the step kind,
    // the fused value.
    type Case<'a> = (
        &'a str,
        &'a CheckedProgram,
        &'a BTreeMap<String, Tensor>,
        &'a str,
        &'a [usize],
        Printing,
        f64,
    );
    let fused32 = f64::from(FUSED32);
    let cases: [Case; 8] = [
        ("matmul", &mm, &mm_in, "C", &[0], Printing::Packed, FUSED),
        ("matvec", &mv, &mv_in, "y", &[0, 28], Printing::Dot, FUSED),
        ("small", &sm, &sm_in, "C", &[0], Printing::Plain, FUSED),
        (
            "elementwise",
            &ew,
            &ew_in,
            "E",
            &[0],
            Printing::Plain,
            FUSED,
        ),
        (
            "matmul32",
            &mm32,
            &mm32_in,
            "C",
            &[0],
            Printing::Packed,
            fused32,
        ),
        (
            "matvec32",
            &mv32,
            &mv32_in,
            "y",
            &[0, 36],
            Printing::Dot,
            fused32,
        ),
        (
            "small32",
            &sm32,
            &sm32_in,
            "C",
            &[0],
            Printing::Plain,
            fused32,
        ),
        (
            "elementwise32",
            &ew32,
            &ew32_in,
            "E",
            &[0],
            Printing::Plain,
            fused32,
        ),
    ];
    let (tc, fast_fma) = toolchain();
    // The compiler's own choice of target, plain C, and every vector target's variant forced
    // (each has its register tile and its vector fused multiply-add, spec/abi.md).
    let with = |flag: String| Toolchain {
        cflags: [tc.cflags.clone(), vec![flag]].concat(),
        ..tc.clone()
    };
    let mut toolchains = vec![tc.clone(), with("-Dteil_portable".to_string())];
    for t in Target::ALL.into_iter().filter(|t| t.vector_bits() > 0) {
        toolchains.push(with(format!("-Dteil_vector_bits={}", t.vector_bits())));
    }
    for tc in &toolchains {
        let mut kernels = Vec::new();
        for (name, p, inputs, _, _, form, _) in &cases {
            for fma in [false, true] {
                let k = lower(p, &format!("{name}_f{}", fma as u8), 1, true, fma);
                assert!(opt::printing(&k).contains(form), "{name}: {form:?} step");
                kernels.push((k, (*inputs).clone()));
            }
        }
        let got = run_all(tc, &kernels);
        for (name, _, _, out, cells, _, want) in &cases {
            for &cell in *cells {
                let exact = got[&format!("{name}_f0")][*out].iter().nth(cell).copied();
                let fused = got[&format!("{name}_f1")][*out].iter().nth(cell).copied();
                assert_eq!(exact, Some(0.0), "{name}: exact mode rounds the product");
                if fast_fma {
                    assert_eq!(fused, Some(*want), "{name} ({:?}): fma mode", tc.cflags);
                } else {
                    eprintln!(
                        "skipped: `cc {}` does not define __FP_FAST_FMA (no FMA instructions), \
                         so fma mode computes the exact result ({name}: {fused:?})",
                        tc.cflags.join(" ")
                    );
                    assert_eq!(
                        fused,
                        Some(0.0),
                        "{name}: without fast FMA nothing is fused"
                    );
                }
            }
        }
    }
}

#[test]
fn fma_kernels_validate_and_say_so_and_exact_mode_is_untouched() {
    for (name, src) in PROGRAMS {
        let p = compile(src);
        for pad in [1, 3] {
            for lift in [false, true] {
                let exact = lower(&p, "teil_kernel", pad, lift, false);
                let fma = lower(&p, "teil_kernel", pad, lift, true);
                assert!(fma.fma && !exact.fma);
                let v = validate::validate(&p, &fma)
                    .unwrap_or_else(|e| panic!("{name}, M = {pad}, lift {lift}: {e}"));
                assert_eq!(v, validate::validate(&p, &exact).expect("exact validates"));
                // The IR text differs in its header, in the AVX-512 tile of packed steps
                // (fma mode's own, `opt::contract::PACKED_FMA_AVX512`) and in the AVX-512 lanes
                // of dot products over long rows (`opt::contract::CHAIN_LANES`) only; two-level
                // sums have the same tiles in both modes (`opt::contract::NESTED`).
                let (ir_fma, ir_exact) = (fma.to_string(), exact.to_string());
                let header = |s: &str| s.lines().next().unwrap_or("").to_string();
                assert!(header(&ir_fma).ends_with(", fma)"), "{ir_fma}");
                assert!(!header(&ir_exact).contains("fma"), "{ir_exact}");
                // A binary32 tile holds twice the columns of floats (spec/padding.md).
                let columns = if name.ends_with("32") { 2 } else { 1 };
                let tile = |p: &teil_cbackend::ir::Panels| {
                    format!("AVX-512: {}x{} ", p.mr, p.nr * columns)
                };
                let (tile_fma, tile_exact) = (
                    tile(&opt::contract::PACKED_FMA_AVX512),
                    tile(
                        opt::contract::PACKED
                            .iter()
                            .find(|p| p.target == Target::Avx512)
                            .expect("an AVX-512 tile"),
                    ),
                );
                assert_ne!(tile_fma, tile_exact);
                // A packed step's line without its AVX-512 variant (up to the next `;`).
                let other_targets = |l: &str| match l.split_once("AVX-512: ") {
                    Some((head, rest)) => format!("{head}{}", &rest[rest.find(';').unwrap_or(0)..]),
                    None => l.to_string(),
                };
                let (lines_fma, lines_exact): (Vec<&str>, Vec<&str>) = (
                    ir_fma.lines().skip(1).collect(),
                    ir_exact.lines().skip(1).collect(),
                );
                assert_eq!(lines_fma.len(), lines_exact.len(), "{ir_fma}");
                for (f, e) in lines_fma.iter().zip(&lines_exact) {
                    if f == e {
                        continue;
                    }
                    if f.starts_with("contract dot") {
                        assert!(
                            f.contains("AVX-512: 16 lanes") && name == "long_rows",
                            "{f}"
                        );
                        assert!(e.contains("AVX-512: 8 lanes"), "{e}");
                    } else {
                        assert!(
                            f.starts_with("contract packed") && f.contains(&tile_fma),
                            "{f}"
                        );
                        assert!(e.contains(&tile_exact), "{e}");
                    }
                    assert_eq!(other_targets(f), other_targets(e));
                }
                let c_exact = teil_cbackend::print::module(&[&exact]);
                let c_fma = teil_cbackend::print::module(&[&fma]);
                assert!(
                    !c_exact.contains("teil_fma") && !c_exact.contains("teil_fast_fma"),
                    "{name}: exact mode C fuses"
                );
                assert!(
                    c_fma.contains("teil_fma("),
                    "{name}: fma mode C fuses nothing"
                );
                let packed = opt::printing(&fma).contains(&Printing::Packed);
                let tiles: Vec<&str> = c_fma
                    .lines()
                    .filter(|l| l.starts_with("static void teil_tile"))
                    .collect();
                assert_eq!(!tiles.is_empty(), packed, "{name}");
                let suffix = if columns == 2 { "_fma_f32" } else { "_fma" };
                assert!(
                    tiles
                        .iter()
                        .all(|l| l.contains(&format!("{suffix}(long long kc"))),
                    "{name}: an exact tile in fma mode: {tiles:?}"
                );
            }
        }
    }
}

#[test]
fn the_bound_of_a_contraction_is_two_gamma_k_times_the_sum_of_absolute_products() {
    // spec/values.md: |fma − exact| ≤ 2 γ_k Σ |a_i| |b_i| for a contraction of length k = 20.
    let p = compile(MATVEC);
    let inputs = random_floats(&p, 11);
    let bounds = teil_interp::rounding::fma_bounds(&p, &inputs).expect("bounds");
    let (a, x) = (&inputs["A"], &inputs["x"]);
    let g = teil_interp::rounding::gamma(20).expect("small k");
    for i in 0..29 {
        let m: f64 = (0..20).map(|k| (a[[i, k]] * x[[k]]).abs()).sum();
        let want = 2.0 * g * m;
        let b = bounds["y"][[i]];
        assert!(
            b >= want && b <= want * (1.0 + 1e-12),
            "y[{i}]: bound {b}, 2 γ_20 Σ|a x| = {want}"
        );
    }
}

/// Issue 52, point 11: the machine a kernel is sized for (`--target-cpu`) can change which
/// kernel form a step gets, and in fma mode which product-then-add pairs a form fuses, so two
/// machines' fma-mode kernels may differ; both stay within the bound of spec/values.md, and in
/// exact mode both give the oracle's bits (spec/padding.md, *Sizes from the machine*).
#[test]
fn machines_change_fma_results_only_within_the_bound_and_exact_results_never() {
    use teil_cbackend::machine::Machine;
    let p = compile(
        "input var A : [40 50 60]\ninput var B : [40 50 60]\noutput var C : [40 60]\n\
         C = red+ 2 (A * B)",
    );
    let inputs = random_floats(&p, 3);
    let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
    let bounds = teil_interp::rounding::fma_bounds(&p, &inputs).expect("bounds");
    let small_l2 = Machine {
        l2: 64 << 10,
        ..Machine::reference()
    };
    let (tc, _) = toolchain();
    let mut kernels = Vec::new();
    for (m, machine) in [Machine::reference(), small_l2].iter().enumerate() {
        for fma in [false, true] {
            let opts = Options {
                name: format!("k_m{m}_f{}", fma as u8),
                lift: false,
                fma,
                sizes: machine.sizes(),
                ..Options::default()
            };
            kernels.push((
                teil_cbackend::lower(&p, &opts).expect("lowers"),
                inputs.clone(),
            ));
        }
    }
    // The two machines choose different kernel forms for this sum (not a vacuous test).
    assert_ne!(opt::printing(&kernels[0].0), opt::printing(&kernels[2].0));
    let got = run_all(&tc, &kernels);
    for m in 0..2 {
        let exact = &got[&format!("k_m{m}_f0")]["C"];
        assert!(
            teil_interp::same_values(&oracle["C"], exact),
            "machine {m}, exact mode"
        );
        let fused = &got[&format!("k_m{m}_f1")]["C"];
        for ((x, y), b) in oracle["C"].iter().zip(fused.iter()).zip(bounds["C"].iter()) {
            assert!(
                (x - y).abs() <= *b,
                "machine {m}: oracle {x}, fma {y}, bound {b}"
            );
        }
    }
}
