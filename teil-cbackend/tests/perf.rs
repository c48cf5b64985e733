//! The optimisations of PERFORMANCE.md: which printer each benchmark kernel gets (structure,
//! not time), and that every optimised printer computes exactly what the plain loop nest
//! computes.
//!
//! The value tests run programs built to reach the edges of the printers — tiles cut by the
//! extents, several panels of terms, rows and columns, batch loops, diagonals, projections,
//! transposed operands and targets, padding — through the oracle and through the C backend at
//! several padding multiples, with and without contraction lifting. Inputs are floating-point
//! values of mixed magnitudes (plus infinities, NaN and signed zeros), for which a different
//! order of summation gives different bits: kernels without lifting must agree with the oracle
//! bit for bit (spec/padding.md, "Contraction kernels", "Tiled nests"). The kernels are compiled
//! with the strict flags of the differential suite, with OpenMP pragmas and `-fopenmp` (run
//! with the default number of threads), and once for every target path ([`paths`]): each
//! target's contraction kernels (`ir::Target`: AVX-512, NEON, AVX, portable C) chosen by the
//! compiler's target flags or forced with `-Dteil_vector_bits=N`, every path the compiler
//! accepts and the CPU can run (a path is skipped only with a printed reason). The paths
//! really select their target: the preprocessor's `teil_vector_bits` and the registers of the
//! compiled register tile are checked.

use std::collections::BTreeMap;
use std::process::Command;
use teil::CheckedProgram;
use teil_cbackend::ir::{Kernel, Target};
use teil_cbackend::opt::{self, Printing, Tuning};
use teil_cbackend::run::{run_batch, Job, Toolchain};
use teil_cbackend::Options;
use teil_interp::Tensor;

fn compile(src: &str) -> CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0
}

fn lower(src: &str, pad: u64, lift: bool) -> Kernel {
    let opts = Options {
        pad,
        lift,
        ..Options::default()
    };
    teil_cbackend::lower(&compile(src), &opts).expect("lowers")
}

fn decls(vars: &[(&str, &[u64])], out: (&str, &[u64])) -> String {
    let shape = |s: &[u64]| {
        let parts: Vec<String> = s.iter().map(u64::to_string).collect();
        format!("[{}]", parts.join(", "))
    };
    let mut src = String::new();
    for (n, s) in vars {
        src.push_str(&format!("input alloc {n} : {}\n", shape(s)));
    }
    src.push_str(&format!("output alloc {} : {}\n", out.0, shape(out.1)));
    src
}

/// The benchmark kernels of PERFORMANCE.md at their benchmark sizes, as bench_suite.rs
/// writes them.
fn bench(name: &str) -> String {
    type Var<'a> = (&'a str, &'a [u64]);
    let (vars, out, stmt): (Vec<Var>, Var, &str) = match name {
        "matmul" => (
            vec![("A", &[512, 512]), ("B", &[512, 512])],
            ("C", &[512, 512]),
            "C = contr 2 3 (prod A B)",
        ),
        "cfd" => (
            vec![
                ("A", &[12, 12]),
                ("B", &[12, 12]),
                ("C", &[12, 12]),
                ("u", &[400, 12, 12, 12]),
            ],
            ("v", &[400, 12, 12, 12]),
            "v = transp 1 2 (transp 2 3 (transp 3 4 (contr 4 6 (contr 3 7 \
             (contr 2 8 (prod A (prod B (prod C u))))))))",
        ),
        "abc" => (
            vec![
                ("A", &[24, 24]),
                ("B", &[24, 24]),
                ("C", &[24, 24]),
                ("u", &[24, 24, 24]),
            ],
            ("r", &[24, 24, 24]),
            "r = contr 4 5 (contr 3 6 (contr 2 7 (prod A (prod B (prod C u)))))",
        ),
        "ttm" => (
            vec![("X", &[96, 96, 96]), ("M", &[96, 64])],
            ("Y", &[96, 96, 64]),
            "Y = contr 3 4 (prod X M)",
        ),
        "mttkrp" => (
            vec![("X", &[64, 64, 64]), ("B", &[64, 32]), ("C", &[64, 32])],
            ("Y", &[64, 32]),
            "Y = contr 2 4 (contr 2 4 (diag 5 7 (prod X (prod B C))))",
        ),
        "transpose" => (
            vec![("X", &[256, 256, 64])],
            ("Y", &[64, 256, 256]),
            "Y = transp 1 3 X",
        ),
        "trace_prod" => (
            vec![("A", &[700, 700]), ("B", &[700, 700])],
            ("s", &[]),
            "s = contr 1 2 (contr 2 3 (prod A B))",
        ),
        "batched_matvec" => (
            vec![("A", &[256, 128, 128]), ("x", &[256, 128])],
            ("y", &[256, 128]),
            "y = contr 3 4 (diag 1 4 (prod A x))",
        ),
        other => panic!("no benchmark {other}"),
    };
    format!("{}{stmt}\n", decls(&vars, out))
}

#[test]
fn each_benchmark_kernel_gets_its_printer() {
    use Printing::*;
    let cases: [(&str, &[Printing]); 8] = [
        ("matmul", &[Packed]),
        // Three pairwise contractions (lifting), each a matrix product over 57600 rows; the
        // last has 12 columns, thin enough for vector dot products (`opt::contract::DOT_THIN`).
        ("cfd", &[Packed, Packed, Dot]),
        ("abc", &[Packed, Packed, Packed]),
        ("ttm", &[Packed]),
        // Lifted by operation count: X times B as a matrix product, then eight cells of the
        // rank dimension at a time.
        ("mttkrp", &[Packed, Dot]),
        ("transpose", &[Tiled]),
        // The row sums of A * B^T into a temporary (split), eight rows at a time; then their
        // sum in order.
        ("trace_prod", &[Dot, Plain]),
        // Each cell's terms are a row of both operands: dot products in lanes, four rows
        // of A per pass over a row of x.
        ("batched_matvec", &[LaneSums]),
    ];
    for (name, want) in cases {
        for pad in [1, 8] {
            let k = lower(&bench(name), pad, true);
            assert_eq!(opt::printing(&k), want, "{name} at M = {pad}");
        }
    }
}

/// The lane's cells after the last whole block of a vector dot-product step are computed by
/// the lane's last block where they are more than a block's vectors, and by scalars side by
/// side where they are not (`print::vector_dot`); the values are the oracle's
/// (`optimised_printers_agree_with_the_oracle_bit_for_bit`, which has both programs).
#[test]
fn the_lanes_last_cells_take_a_block_where_they_outnumber_its_vectors() {
    let c = |src: &str| {
        teil_cbackend::emit_c(&compile(src), &teil_cbackend::Options::default()).expect("prints")
    };
    let shifted = c(&format!(
        "{}C = transp 1 2 (contr 3 4 (diag 1 5 (prod A B)))\n",
        decls(&[("A", &[30, 20, 19]), ("B", &[19, 30])], ("C", &[20, 30]))
    ));
    // AVX-512, AVX and NEON: 8 lanes, 6 left; portable C: scalars.
    assert_eq!(
        shifted
            .matches("/* 8 cells at a time, the last block from cell 22 */")
            .count(),
        3,
        "{shifted}"
    );
    assert_eq!(
        shifted
            .matches("/* the remaining 6 cells, side by side */")
            .count(),
        1,
        "{shifted}"
    );
    // A small product of 97 columns: 16 lanes (two AVX-512 vectors) and 8 (AVX: two vectors,
    // NEON: four) leave 1 column, fewer than the vectors: scalars everywhere.
    let scalar = c(&format!(
        "{}C = contr 2 3 (prod A B)\n",
        decls(&[("A", &[97, 97]), ("B", &[97, 97])], ("C", &[97, 97]))
    ));
    assert!(!scalar.contains("the last block"), "{scalar}");
    assert!(
        scalar.contains("/* the remaining 1 cells of 8 rows, side by side */"),
        "{scalar}"
    );
}

/// The cells a blocking computes (`Lanes::cells`): whole blocks, the lane's last block where
/// its cells after them outnumber a block's vectors, scalars otherwise; and the dot products
/// take more lanes than the target's base blocking (16 on AVX-512, two chains of sums) only
/// where they leave no more scalars, and in a small product's tile of rows no more cells.
#[test]
fn more_lanes_only_where_they_leave_no_more_scalars_nor_a_tile_more_cells() {
    use teil_cbackend::ir::Lanes;
    let lanes = |lanes, width| Lanes {
        target: Target::Avx512,
        lanes,
        rows: 1,
        width,
    };
    for (l, n, cells, last) in [
        (lanes(16, 8), 30, (32, 0), Some(14)),
        (lanes(16, 8), 24, (32, 0), Some(8)),
        (lanes(16, 8), 17, (16, 1), None),
        (lanes(8, 8), 30, (32, 0), Some(22)),
        (lanes(8, 8), 24, (24, 0), None),
        (lanes(8, 8), 17, (16, 1), None),
        (lanes(8, 4), 30, (32, 0), Some(22)),
        (lanes(8, 4), 26, (24, 2), None),
        (lanes(8, 1), 30, (24, 6), None),
    ] {
        assert_eq!(
            (l.cells(n), l.last_block(n)),
            (cells, last),
            "{l:?} over {n}"
        );
    }
    // `kji,ik->jk` over rows of `in0` longer than 512 doubles in fma mode (the chains of
    // fused multiply-adds, `CHAIN_LANES`): 30 lanes leave no scalars in blocks of 16 or 8, so
    // 16; exact mode keeps 8. Row sums (one operand, `CHAIN_LANES`) of 37 rows: 16 (48 cells
    // in blocks, against 40, but two chains). A product of 24 columns (a small product's tile
    // of 8 rows, `CHAIN_LANES` too): blocks of 8 compute 24 cells, of 16 32, so 8.
    let ir = |src: &str, fma: bool| {
        let opts = Options {
            fma,
            lift: false,
            ..Options::default()
        };
        teil_cbackend::lower(&compile(src), &opts)
            .expect("lowers")
            .to_string()
    };
    let kji = format!(
        "{}C = transp 1 2 (contr 3 4 (diag 1 5 (prod A B)))\n",
        decls(
            &[("A", &[30, 20, 600]), ("B", &[600, 30])],
            ("C", &[20, 30])
        )
    );
    let row_sums = format!("{}r = red+ 2 A\n", decls(&[("A", &[37, 41])], ("r", &[37])));
    let small = format!(
        "{}C = contr 2 3 (prod A B)\n",
        decls(&[("A", &[24, 24]), ("B", &[24, 24])], ("C", &[24, 24]))
    );
    for (src, fma, lanes) in [
        (&kji, true, "AVX-512: 16 lanes"),
        (&kji, false, "AVX-512: 8 lanes"),
        (&row_sums, false, "AVX-512: 16 lanes"),
        (&small, false, "AVX-512: 8 lanes"),
        (&small, true, "AVX-512: 8 lanes"),
    ] {
        let text = ir(src, fma);
        assert!(text.contains(lanes), "{text}");
    }
}

/// Tiling is for transpositions: a load that walks the outer label with unit stride and moves
/// along the innermost one too. A load that stays put along the innermost label (`c[i]` in
/// `X[i, j] + c[i]`) reads one value per row, and the nest stays a plain row-by-row walk.
#[test]
fn broadcasting_along_the_rows_is_not_tiled() {
    for (stmt, tiled) in [
        ("Y = X + expa 2 40 c", false),
        ("Y = X + expa 1 40 c", false),
        ("Y = transp 1 2 X + expa 2 40 c", true),
    ] {
        let src = format!(
            "{}{stmt}\n",
            decls(&[("X", &[40, 40]), ("c", &[40])], ("Y", &[40, 40]))
        );
        for pad in [1, 8] {
            let k = lower(&src, pad, true);
            assert_eq!(
                opt::printing(&k).contains(&Printing::Tiled),
                tiled,
                "{stmt} at M = {pad}"
            );
        }
    }
}

#[test]
fn the_plain_tuning_prints_every_nest_as_written() {
    for name in ["matmul", "cfd", "mttkrp", "transpose", "trace_prod"] {
        let p = compile(&bench(name));
        let k = opt::lower_plain(&p, &Options::default()).expect("lowers");
        assert!(
            opt::printing(&k).iter().all(|&h| h == Printing::Plain),
            "{name}"
        );
        let c = teil_cbackend::print::module(&[&k]);
        assert!(!c.contains("teil_tile") && !c.contains("teil_b0"), "{name}");
    }
    // Without the new cost model the MTTKRP stays one fused nest (issue 4's lowering), and the
    // trace of a product one nest with two accumulators.
    let p = compile(&bench("mttkrp"));
    assert_eq!(
        opt::lower_plain(&p, &Options::default())
            .expect("lowers")
            .lifted,
        0
    );
    let p = compile(&bench("trace_prod"));
    assert_eq!(
        opt::lower_plain(&p, &Options::default())
            .expect("lowers")
            .steps
            .len(),
        1
    );
}

#[test]
fn splitting_and_printing_never_change_the_loop_work() {
    // The contraction printers compute each nest's operations exactly once: the static work
    // of a kernel is the same whichever way it is printed, and splitting a nested sum adds
    // only the outer fold over the temporary.
    let tuned = |t: Tuning, src: &str| {
        opt::lower_tuned(&compile(src), &Options::default(), &t)
            .expect("lowers")
            .work()
    };
    let all = Tuning::default();
    let no_print = Tuning {
        contract: false,
        tile: false,
        interchange: false,
        ..all
    };
    for name in ["matmul", "ttm", "transpose", "batched_matvec"] {
        assert_eq!(
            tuned(all, &bench(name)),
            tuned(no_print, &bench(name)),
            "{name}"
        );
    }
    let n = 700u128;
    assert_eq!(
        tuned(Tuning::none(), &bench("trace_prod")),
        1 + n * (1 + n + 1) + 1
    );
    assert_eq!(
        tuned(all, &bench("trace_prod")),
        n * (1 + n + 1) + (1 + n + 1)
    );
}

/// Deterministic inputs whose sums depend on the order of summation: mantissas from a
/// SplitMix64 stream, exponents spread over 2^-20 .. 2^20, signs mixed; with `specials`, a few
/// cells are infinite, NaN or signed zeros.
fn inputs(p: &CheckedProgram, seed: u64, specials: bool) -> BTreeMap<String, Tensor> {
    let mut rng = teil_interp::random::SplitMix64(seed);
    let mut next = move || rng.next_u64();
    let mut out = BTreeMap::new();
    for d in p.program().decls.iter().filter(|d| p.is_input(d)) {
        let shape: Vec<usize> = d.shape().iter().map(|&n| n as usize).collect();
        let len: usize = shape.iter().product();
        let data: Vec<f64> = (0..len)
            .map(|_| {
                let r = next();
                let mantissa = 1.0 + (r >> 12) as f64 / (1u64 << 52) as f64;
                let exponent = (r % 41) as i32 - 20;
                let sign = if r >> 11 & 1 == 1 { -1.0 } else { 1.0 };
                let v = sign * mantissa * 2f64.powi(exponent);
                match (specials, r % 97) {
                    (true, 0) => f64::INFINITY,
                    (true, 1) => f64::NEG_INFINITY,
                    (true, 2) => f64::NAN,
                    (true, 3) => -0.0,
                    (true, 4) => 0.0,
                    _ => v,
                }
            })
            .collect();
        out.insert(
            d.name.name.clone(),
            Tensor::from_shape_vec(ndarray::IxDyn(&shape), data).expect("shape"),
        );
    }
    out
}

/// Programs that reach the printers' edges. Every one is lowered to at least one optimised
/// nest (checked below).
fn edge_programs() -> Vec<(&'static str, String)> {
    vec![
        (
            // Two panels of terms (K > 256), rows and columns not multiples of the tile (the
            // packed products here have more than 320 rows or columns: smaller ones are small
            // products, `machine::Sizes::small_product` on the reference machine).
            "matmul, two panels of terms",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[13, 300]), ("B", &[300, 331])], ("C", &[13, 331]))
            ),
        ),
        (
            // More rows than one panel (72).
            "matmul, two panels of rows",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[80, 7]), ("B", &[7, 332])], ("C", &[80, 332]))
            ),
        ),
        (
            // More rows than an AVX-512 panel (128), not a multiple of its 16-row tile.
            "matmul, two AVX-512 panels of rows",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[150, 5]), ("B", &[5, 333])], ("C", &[150, 333]))
            ),
        ),
        (
            // Few terms and more columns than fit L2 with them: column panels of 512 (64 terms:
            // 2^15 doubles), two AVX-512 row panels, tiles row sliver by row sliver.
            "matmul, few terms, column panels cut to fit L2",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[136, 64]), ("B", &[64, 521])], ("C", &[136, 521]))
            ),
        ),
        (
            // More columns than one panel (4080).
            "matmul, two panels of columns",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[2, 2]), ("B", &[2, 4100])], ("C", &[2, 4100]))
            ),
        ),
        (
            // Both operands transposed, and the target transposed.
            "transposed operands and target",
            format!(
                "{}C = transp 1 2 (contr 1 4 (prod A B))\n",
                decls(&[("A", &[17, 14]), ("B", &[342, 17])], ("C", &[342, 14]))
            ),
        ),
        (
            // A batch label (in both operands), rows of two labels.
            "batched matrix product",
            format!(
                "{}C = contr 3 4 (diag 1 4 (prod A B))\n",
                decls(
                    &[("A", &[3, 10, 20]), ("B", &[3, 20, 332])],
                    ("C", &[3, 10, 332])
                )
            ),
        ),
        (
            // A diagonal operand (a label twice in one index) and a projection (a constant).
            "diagonal and projection operands",
            format!(
                "{}C = contr 2 3 (prod A (diag 1 2 (proj 1 2 T)))\n",
                decls(
                    &[("A", &[15, 16]), ("T", &[3, 16, 16, 21])],
                    ("C", &[15, 21])
                )
            ),
        ),
        (
            "tensor times matrix",
            format!(
                "{}Y = contr 3 4 (prod X M)\n",
                decls(
                    &[("X", &[9, 40, 11]), ("M", &[11, 10])],
                    ("Y", &[9, 40, 10])
                )
            ),
        ),
        (
            // A small product: the dot kernel's register tile (blocks of rows times vectors of
            // lanes over the operands where they are), rows and lanes left over.
            "small matrix product, odd extents",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[21, 37]), ("B", &[37, 45])], ("C", &[21, 45]))
            ),
        ),
        (
            // Small products with a batch label, rows of two labels.
            "small batched matrix product",
            format!(
                "{}C = contr 3 4 (diag 1 4 (prod A B))\n",
                decls(
                    &[("A", &[3, 10, 20]), ("B", &[3, 20, 12])],
                    ("C", &[3, 10, 12])
                )
            ),
        ),
        (
            // Dot products of transposed rows (`kji,ik->jk`): 30 lanes, 6 left after three
            // blocks of 8, more than a block's vectors (one on AVX-512, two on AVX, four on
            // NEON): the lane's last block, computing 2 cells again; portable C's scalars.
            "dot products, the lane's last block computed again",
            format!(
                "{}C = transp 1 2 (contr 3 4 (diag 1 5 (prod A B)))\n",
                decls(&[("A", &[30, 20, 19]), ("B", &[19, 30])], ("C", &[20, 30]))
            ),
        ),
        (
            // The same with 17 lanes: two blocks of 8, one cell left (scalars), the rows of
            // `A` along `j` closer than along the lane, so `j` runs inside the lane's blocks
            // (`Strategy::Dot::inner`), for the remaining cell too.
            "dot products, the rows' loop inside the lane's blocks",
            format!(
                "{}C = transp 1 2 (contr 3 4 (diag 1 5 (prod A B)))\n",
                decls(&[("A", &[17, 9, 19]), ("B", &[19, 17])], ("C", &[9, 17]))
            ),
        ),
        (
            // A packed product in column-sliver order (several row panels, a column panel
            // larger than L2 at 256 terms): term panels of 512 (`COLUMN_ORDER_KC`), two here.
            "matmul, column sliver order, two term panels of 512",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(
                    &[("A", &[330, 520]), ("B", &[520, 140])],
                    ("C", &[330, 140])
                )
            ),
        ),
        (
            // Dot products: eight rows at a time and a remainder of five.
            "matrix-vector product",
            format!(
                "{}y = contr 2 3 (prod A x)\n",
                decls(&[("A", &[21, 40]), ("x", &[40])], ("y", &[21]))
            ),
        ),
        (
            // Dot products in lanes (where the kernel may reassociate; in-order dot products
            // without): 37 rows (blocks of 4 or 2 and one left), 100 terms (6 blocks of 16 and
            // 4 left).
            "matrix-vector product in lanes",
            format!(
                "{}y = contr 2 3 (prod A x)\n",
                decls(&[("A", &[37, 100]), ("x", &[100])], ("y", &[37]))
            ),
        ),
        (
            // An interchanged fold over rows 600 doubles apart: 4 rows per pass over the cells
            // (17 blocks and 2 rows left).
            "vector-matrix product over far rows",
            format!(
                "{}y = contr 1 2 (prod x A)\n",
                decls(&[("x", &[70]), ("A", &[70, 600])], ("y", &[600]))
            ),
        ),
        (
            // Vector dot products whose operand rows are transposed in registers: 43 terms
            // (groups of 8, 4, 2 and a remainder of 3, 3, 1), 29 rows (a remainder of 5).
            "matrix-vector product, odd terms",
            format!(
                "{}y = contr 2 3 (prod A x)\n",
                decls(&[("A", &[29, 43]), ("x", &[43])], ("y", &[29]))
            ),
        ),
        (
            // A thin product as vector dot products along the columns, blocks of rows: 13
            // columns (8 and a remainder of 5), 1031 rows (remainders of 7 and 5), 37 terms.
            "thin product, thirteen columns",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[1031, 37]), ("B", &[37, 13])], ("C", &[1031, 13]))
            ),
        ),
        (
            // A thin product with many terms: 11 rows (blocks of 8 or 6 and remainders),
            // 12 columns (8 and a remainder of 4).
            "thin product, 3001 terms",
            format!(
                "{}C = contr 2 3 (prod A B)\n",
                decls(&[("A", &[11, 3001]), ("B", &[3001, 12])], ("C", &[11, 12]))
            ),
        ),
        (
            "batched matrix-vector product",
            format!(
                "{}y = contr 3 4 (diag 1 4 (prod A x))\n",
                decls(&[("A", &[3, 27, 30]), ("x", &[3, 30])], ("y", &[3, 27]))
            ),
        ),
        (
            "trace of a product",
            format!(
                "{}s = contr 1 2 (contr 2 3 (prod A B))\n",
                decls(&[("A", &[40, 40]), ("B", &[40, 40])], ("s", &[]))
            ),
        ),
        (
            "three-dimensional transposition",
            format!(
                "{}Y = transp 1 3 X\n",
                decls(&[("X", &[37, 5, 19])], ("Y", &[19, 5, 37]))
            ),
        ),
        (
            // A tiled nest with arithmetic, and a load at the store's own index.
            "transposed sum",
            format!(
                "{}Y = transp 1 2 X + Z\n",
                decls(&[("X", &[33, 18]), ("Z", &[18, 33])], ("Y", &[18, 33]))
            ),
        ),
        (
            // Interchanged: the sums of a row of A at a time fold into the cells of y.
            "vector-matrix product",
            format!(
                "{}y = contr 1 2 (prod x A)\n",
                decls(&[("x", &[80]), ("A", &[80, 7])], ("y", &[7]))
            ),
        ),
        (
            // Interchanged: the middle axis outside the last one.
            "sum along the middle axis",
            format!(
                "{}Y = red+ 2 X\n",
                decls(&[("X", &[6, 9, 24])], ("Y", &[6, 24]))
            ),
        ),
        (
            // Interchanged (no padding at M = 1, 3, 4, 8): the cells start from -inf.
            "maximum along the first axis",
            format!(
                "{}m = redmax 1 A\n",
                decls(&[("A", &[24, 24])], ("m", &[24]))
            ),
        ),
        (
            // Interchanged over a dense block: the reduction outside both target loops.
            "maximum along the first axis of a rank-3 tensor",
            format!(
                "{}Y = redmax 1 X\n",
                decls(&[("X", &[7, 5, 24])], ("Y", &[5, 24]))
            ),
        ),
        (
            // Interchanged, rows of A a page or more apart: the fold without `teil_no_jam()`.
            "vector-matrix product, long rows",
            format!(
                "{}y = contr 1 2 (prod x A)\n",
                decls(&[("x", &[64]), ("A", &[64, 600])], ("y", &[600]))
            ),
        ),
        (
            // Two reductions in one nest, transposed target: the target loop along which X
            // has unit stride moves into both reductions (rows of accumulators).
            "two reductions, transposed target",
            format!(
                "{}D = transp 1 2 (redmax 2 X - redmin 2 X)\n",
                decls(&[("X", &[6, 9, 24])], ("D", &[24, 6]))
            ),
        ),
        (
            // Nested sums of one operand, transposed target: the target loop along which X has
            // unit stride moves into both sums, whose accumulators become rows.
            "nested sums, transposed target",
            format!(
                "{}Y = transp 1 2 (red+ 1 (red+ 1 X))\n",
                decls(&[("X", &[3, 5, 7, 24])], ("Y", &[24, 7]))
            ),
        ),
        (
            // A two-level sum (the TCCG kernel abcd,aebf->dfce at odd extents): rows from A,
            // columns from B, the target permuted; tiles cut by the extents.
            "two-level sum, permuted target",
            format!(
                "{}C = transp 3 4 (transp 2 4 (transp 1 2 (contr 1 5 (contr 1 5 (prod A B)))))\n",
                decls(
                    &[("A", &[5, 3, 7, 6]), ("B", &[5, 9, 3, 4])],
                    ("C", &[6, 4, 7, 9])
                )
            ),
        ),
        (
            // A two-level sum of 40 sums of 7 terms: two panels of terms (252 = 36 sums, then
            // 4), more rows than an AVX-512 panel (132).
            "two-level sum, two panels of terms",
            format!(
                "{}C = transp 1 2 (contr 1 3 (contr 1 6 (prod A B)))\n",
                decls(
                    &[("A", &[7, 40, 11]), ("B", &[40, 140, 7])],
                    ("C", &[140, 11])
                )
            ),
        ),
        (
            "MTTKRP",
            format!(
                "{}Y = contr 2 4 (contr 2 4 (diag 5 7 (prod X (prod B C))))\n",
                decls(
                    &[("X", &[12, 16, 18]), ("B", &[16, 9]), ("C", &[18, 9])],
                    ("Y", &[12, 9])
                )
            ),
        ),
    ]
}

const STRICT: &str = "-std=c99 -O2 -Wall -Wextra -Werror -pedantic";

struct Run {
    label: String,
    kernel: Kernel,
    case: usize,
    exact: bool,
}

#[test]
fn optimised_printers_agree_with_the_oracle_bit_for_bit() {
    let mut programs = edge_programs();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/perf");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/perf")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "teil"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 8, "one file per benchmark kernel");
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        programs.push(("corpus", format!("// {}\n{text}", f.display())));
    }
    let mut cases = Vec::new();
    for (i, (label, src)) in programs.iter().enumerate() {
        let p = compile(src);
        for specials in [false, true] {
            let inputs = inputs(&p, 1000 + i as u64, specials);
            let expected = teil_interp::run_oracle(&p, &inputs)
                .unwrap_or_else(|e| panic!("{label}: the oracle failed: {e}"));
            cases.push((
                format!("{label} (specials: {specials})\n{src}"),
                p.clone(),
                inputs,
                expected,
            ));
        }
    }
    let mut runs = Vec::new();
    let mut optimised = 0;
    for (c, (label, p, _, _)) in cases.iter().enumerate() {
        for pad in [1u64, 3, 4, 8] {
            // Lifting reassociates anyway (compared with a bound below): two multiples suffice.
            for lift in [false, true]
                .into_iter()
                .filter(|&l| !l || pad == 1 || pad == 4)
            {
                let opts = Options {
                    pad,
                    lift,
                    name: format!("perf_{c}_m{pad}_{lift}"),
                    ..Options::default()
                };
                let kernel = teil_cbackend::lower(p, &opts).expect("lowers");
                // A kernel form, or a nest the interchange pass reordered.
                let no_interchange = Tuning {
                    interchange: false,
                    ..Tuning::default()
                };
                let plain_order = opt::lower_tuned(p, &opts, &no_interchange).expect("lowers");
                if opt::printing(&kernel).iter().any(|&h| h != Printing::Plain)
                    || kernel.to_string() != plain_order.to_string()
                {
                    optimised += 1;
                }
                runs.push(Run {
                    label: format!("{label} at M = {pad}, lift: {lift}"),
                    exact: !kernel.reassociates(),
                    kernel,
                    case: c,
                });
            }
        }
    }
    // Every edge program is optimised at every M and both liftings (the MTTKRP only when
    // lifted); the small corpus copies of the benchmark kernels are at times below the
    // printers' thresholds.
    assert!(
        optimised >= (edge_programs().len() - 1) * 2 * 6,
        "only {optimised} optimised kernels"
    );
    let exact_runs = runs.iter().filter(|r| r.exact).count();
    assert!(exact_runs * 2 >= runs.len(), "{exact_runs} exact runs");
    // (flags, OpenMP pragmas): the plain strict flags, OpenMP, and every target path this
    // compiler and CPU can run.
    let mut flags = vec![
        (STRICT.to_string(), false),
        (format!("{STRICT} -fopenmp"), true),
    ];
    let cpu = cpu_features();
    for path in paths() {
        match path.runnable(&cpu) {
            Ok(()) => flags.push((path.flags.clone(), false)),
            Err(why) => println!("skipping the {} path: {why}", path.name),
        }
    }
    let check = |f: &str, openmp: bool| -> Vec<String> {
        let tc = Toolchain::default().with_cflags(f);
        let parallel: Vec<Kernel> = runs
            .iter()
            .map(|r| {
                let mut k = r.kernel.clone();
                k.openmp = openmp;
                k
            })
            .collect();
        let kernels: Vec<&Kernel> = parallel.iter().collect();
        let jobs: Vec<Job> = runs
            .iter()
            .enumerate()
            .map(|(k, r)| Job {
                kernel: k,
                inputs: cases[r.case].2.clone(),
            })
            .collect();
        let outcomes = match run_batch(&tc, &kernels, &jobs) {
            Ok(o) => o,
            Err(e) => return vec![format!("{f}: {e}")],
        };
        let mut failures = Vec::new();
        for (r, out) in runs.iter().zip(outcomes) {
            let (_, p, _, expected) = &cases[r.case];
            if !out.nonzero_padding.is_empty() {
                failures.push(format!(
                    "{} ({f}): non-zero padding {:?}",
                    r.label, out.nonzero_padding
                ));
            }
            for d in p.interface().filter(|d| p.is_output(d)) {
                let name = &d.name.name;
                let (o, c) = (&expected[name], &out.values[name]);
                let ok = if r.exact {
                    teil_interp::same_values(o, c)
                } else {
                    // Lifting reassociates (spec/padding.md, "Exactness"): finite cells within
                    // the documented bound, non-finite cells non-finite on both sides.
                    o.shape() == c.shape()
                        && o.iter().zip(c.iter()).all(|(&x, &y)| {
                            if !x.is_finite() || !y.is_finite() {
                                !x.is_finite() && !y.is_finite()
                            } else {
                                (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs()))
                            }
                        })
                };
                if !ok {
                    failures.push(format!(
                        "{} ({f}): `{name}` differs (exact: {})\noracle: {o}\nC:      {c}",
                        r.label, r.exact
                    ));
                }
            }
        }
        failures
    };
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = flags
            .iter()
            .map(|(f, openmp)| {
                let check = &check;
                s.spawn(move || check(f, *openmp))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec!["a check panicked".into()]))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} runs failed; first:\n{}",
        failures.len(),
        runs.len() * flags.len(),
        failures.first().cloned().unwrap_or_default()
    );
}

/// A way of compiling the kernels that selects one target's contraction kernels
/// (spec/padding.md, "Contraction kernels").
struct TargetPath {
    name: &'static str,
    flags: String,
    /// The `teil_vector_bits` the flags must select.
    target: Target,
    /// The CPU features (as `__builtin_cpu_supports` names them) the compiled code needs.
    needs: &'static [&'static str],
    /// The vector registers the compiled register tile must use (`None`: not checked).
    registers: Option<&'static str>,
}

/// The target paths: the targets chosen by the compiler's own target flags, and the variants
/// the plain flags do not choose on x86-64 forced with `-Dteil_vector_bits=N`, which GCC and
/// Clang compile for any CPU (splitting vectors wider than the machine's), so that every
/// variant's values are checked on every machine (the plain strict flags of the test choose
/// AVX's variant on x86-64, NEON's on AArch64). In GCC's GNU mode, where `-mfma` contracts
/// `a * b + c` unless told not to, and without `-ffp-contract=off`: the backend's own guards
/// (spec/abi.md, "Floating point") must keep it from fusing the kernels' products and sums.
fn paths() -> Vec<TargetPath> {
    let strict = |extra: &str| format!("-O3 -Wall -Wextra -Werror -pedantic {extra}");
    vec![
        TargetPath {
            name: "AVX-512 (-mavx512f)",
            flags: strict("-mavx512f -mavx2 -mfma"),
            target: Target::Avx512,
            needs: &["avx512f", "avx2", "fma"],
            registers: Some("zmm"),
        },
        TargetPath {
            name: "AVX2 (-mavx2 -mfma)",
            flags: strict("-mavx2 -mfma"),
            target: Target::Avx,
            needs: &["avx2", "fma"],
            registers: Some("ymm"),
        },
        TargetPath {
            name: "portable C (-Dteil_portable)",
            flags: strict("-Dteil_portable"),
            target: Target::Portable,
            needs: &[],
            registers: None,
        },
        TargetPath {
            name: "AVX-512 variant forced (-Dteil_vector_bits=512)",
            flags: strict("-Dteil_vector_bits=512"),
            target: Target::Avx512,
            needs: &[],
            registers: None,
        },
        TargetPath {
            name: "NEON variant forced (-Dteil_vector_bits=128)",
            flags: strict("-Dteil_vector_bits=128"),
            target: Target::Neon,
            needs: &[],
            registers: None,
        },
    ]
}

impl TargetPath {
    /// `Ok` when the compiler accepts the flags and the CPU has what the code needs.
    fn runnable(&self, cpu: &Result<BTreeMap<String, bool>, String>) -> Result<(), String> {
        compiles(&self.flags)?;
        if self.needs.is_empty() {
            return Ok(());
        }
        let cpu = cpu
            .as_ref()
            .map_err(|e| format!("cannot probe the CPU: {e}"))?;
        match self.needs.iter().find(|f| cpu.get(**f) != Some(&true)) {
            Some(f) => Err(format!("this CPU has no {f}")),
            None => Ok(()),
        }
    }
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// Whether `cc` compiles a trivial translation unit with `flags`.
fn compiles(flags: &str) -> Result<(), String> {
    let dir = scratch();
    let src = dir.path().join("probe.c");
    std::fs::write(
        &src,
        "int teil_probe(void);\nint teil_probe(void) { return 0; }\n",
    )
    .expect("write");
    let out = Command::new("cc")
        .args(flags.split_whitespace())
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.path().join("probe.o"))
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cc does not accept `{flags}`: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The CPU features the target paths need, as the C compiler's runtime check
/// (`__builtin_cpu_supports`) reports them for this machine: a probe program compiled with
/// `cc` and run. Empty on CPUs other than x86 (where no path needs a feature).
fn cpu_features() -> Result<BTreeMap<String, bool>, String> {
    let names: Vec<&str> = paths().iter().flat_map(|p| p.needs.to_vec()).collect();
    let checks: String = names
        .iter()
        .map(|f| format!("    printf(\"{f} %d\\n\", __builtin_cpu_supports(\"{f}\") != 0);\n"))
        .collect();
    let dir = scratch();
    let src = dir.path().join("cpu.c");
    let exe = dir.path().join("cpu");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\nint main(void)\n{{\n\
             #if defined(__x86_64__) || defined(__i386__)\n    __builtin_cpu_init();\n{checks}\
             #endif\n    return 0;\n}}\n"
        ),
    )
    .expect("write");
    let built = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if !built.status.success() {
        return Err(String::from_utf8_lossy(&built.stderr).trim().to_string());
    }
    let ran = Command::new(&exe)
        .output()
        .map_err(|e| format!("cannot run the probe: {e}"))?;
    Ok(String::from_utf8_lossy(&ran.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(f, v)| (f.to_string(), v == "1"))
        .collect())
}

#[test]
fn every_target_path_selects_its_kernels() {
    // A packed matrix product (332 columns, more than a small product's) and dot products:
    // with each path's flags, the preprocessor defines the path's `teil_vector_bits`, and
    // where the path names registers the compiled register tile uses them (zmm for AVX-512,
    // ymm and no zmm for AVX2). Compiling only, so every path the compiler accepts is
    // checked, whatever the CPU.
    let src = format!(
        "{}C = contr 2 3 (prod A B)\n",
        decls(&[("A", &[40, 30]), ("B", &[30, 332])], ("C", &[40, 332]))
    );
    let k = lower(&src, 1, false);
    assert_eq!(opt::printing(&k), vec![Printing::Packed]);
    let c = teil_cbackend::print::module(&[&k]);
    let dir = scratch();
    let file = dir.path().join("kernel.c");
    std::fs::write(&file, &c).expect("write");
    let mut checked = 0;
    for path in paths() {
        if let Err(why) = compiles(&path.flags) {
            println!("skipping the {} path: {why}", path.name);
            continue;
        }
        let run = |extra: &[&str]| {
            let out = Command::new("cc")
                .args(path.flags.split_whitespace())
                .args(extra)
                .arg(&file)
                .arg("-o")
                .arg("-")
                .output()
                .expect("cc runs");
            assert!(
                out.status.success(),
                "{}: {}",
                path.name,
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let macros = run(&["-E", "-dM"]);
        let want = format!("#define teil_vector_bits {}", path.target.vector_bits());
        assert!(
            macros.lines().any(|l| l.trim() == want),
            "{}: no `{want}` among {:?}",
            path.name,
            macros
                .lines()
                .filter(|l| l.contains("teil_vector_bits"))
                .collect::<Vec<_>>()
        );
        if let Some(reg) = path.registers {
            let asm = run(&["-S"]);
            assert!(
                asm.contains(&format!("%{reg}")),
                "{}: no {reg} register",
                path.name
            );
            if reg == "ymm" {
                assert!(!asm.contains("%zmm"), "{}: zmm registers", path.name);
            }
        }
        checked += 1;
    }
    // At least the paths every GCC or Clang accepts.
    assert!(checked >= 3, "only {checked} paths checked");
}

#[test]
fn the_inputs_make_the_order_of_summation_visible() {
    // A check of the test itself: summing a row of the products of the first edge program
    // backwards changes the bits, so an exact comparison would notice a reordered sum.
    let (_, src) = &edge_programs()[0];
    let p = compile(src);
    let inp = inputs(&p, 1000, false);
    let (a, b) = (&inp["A"], &inp["B"]);
    let differs = (0..13).any(|i| {
        (0..19).any(|j| {
            let terms: Vec<f64> = (0..300).map(|k| a[&[i, k][..]] * b[&[k, j][..]]).collect();
            let fwd = terms.iter().fold(-0.0, |s, t| s + t);
            let bwd = terms.iter().rev().fold(-0.0, |s, t| s + t);
            fwd != bwd
        })
    });
    assert!(differs);
}

/// `teil_max` and `teil_min` as printed, in an interchanged fold and in an accumulator's: a tie
/// keeps the earlier term, which decides which zero `max(-0, +0)` is (spec/values.md; the value
/// comparisons count the two zeros equal, so this test reads the sign bits), and a NaN anywhere
/// gives NaN.
#[test]
fn max_and_min_keep_the_earlier_of_tied_zeros_and_propagate_nan() {
    let n = 200;
    // Columns: -0 first, then +0 (ties); +0 first; a NaN in the middle; a NaN last.
    let column = |c: usize, i: usize| -> f64 {
        match (c, i) {
            (_, 0) => -1.0,
            (0, 1) | (1, 2) => -0.0,
            (0, _) | (1, _) => 0.0,
            (2, i) if i == n / 2 => f64::NAN,
            (3, i) if i == n - 1 => f64::NAN,
            (_, i) => i as f64,
        }
    };
    let data: Vec<f64> = (0..n)
        .flat_map(|i| (0..4).map(move |c| column(c, i)))
        .collect();
    let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[n, 4]), data).expect("shape");
    let negated = a.mapv(|x| -x);
    let src = format!(
        "{}m = redmax 1 A\nl = redmin 1 B\n",
        decls(&[("A", &[n as u64, 4]), ("B", &[n as u64, 4])], ("m", &[4]))
    )
    .replace(
        "output alloc m : [4]\n",
        "output alloc m : [4]\noutput alloc l : [4]\n",
    );
    let p = compile(&src);
    let kernels: Vec<Kernel> = [("plain", Tuning::none()), ("tuned", Tuning::default())]
        .into_iter()
        .map(|(name, t)| {
            let mut k = opt::lower_tuned(&p, &Options::default(), &t).expect("lowers");
            k.name = name.to_string();
            k
        })
        .collect();
    assert!(
        teil_cbackend::print::module(&[&kernels[1]]).contains("teil_max(m["),
        "the tuned kernel folds into the cells"
    );
    let inputs = BTreeMap::from([("A".to_string(), a), ("B".to_string(), negated)]);
    let jobs: Vec<Job> = (0..kernels.len())
        .map(|kernel| Job {
            kernel,
            inputs: inputs.clone(),
        })
        .collect();
    let refs: Vec<&Kernel> = kernels.iter().collect();
    let outcomes =
        run_batch(&Toolchain::default().with_cflags(STRICT), &refs, &jobs).expect("runs");
    for out in outcomes {
        for name in ["m", "l"] {
            let v = &out.values[name];
            let sign = if name == "m" { 1.0 } else { -1.0 };
            assert_eq!(
                v[[0]].to_bits(),
                (sign * -0.0f64).to_bits(),
                "{name}[0]: {v}"
            );
            assert_eq!(
                v[[1]].to_bits(),
                (sign * 0.0f64).to_bits(),
                "{name}[1]: {v}"
            );
            assert!(v[[2]].is_nan() && v[[3]].is_nan(), "{name}: {v}");
        }
    }
}

/// Lane folds (`ir::LaneFold`; spec/padding.md, "Lane reductions"): `redmax` and `redmin`
/// along the unit-stride axis, of every length from 1 to 67 (below, at and across the lanes'
/// blocks of 16, with the remaining terms after them), at M = 1, 3, 4, 8, give the bits of the
/// fold in order: the value, the sign of the first of tied zeros, the payload of the last NaN.
/// Rows plant tied zeros of both signs and NaNs with different payloads at random positions;
/// the expected bits are `teil_max`/`teil_min` folded in order (the rule of spec/values.md,
/// checked against the oracle: equal bits where the oracle is not NaN, NaN where it is), and
/// the plain strict flags, `-mavx512f` (where the machine runs it) and `-Dteil_portable` must
/// produce them.
#[test]
fn lane_folds_give_the_bits_of_the_fold_in_order() {
    const ROWS: usize = 40;
    let lengths = 1..=67usize;
    let mut src = String::new();
    for n in lengths.clone() {
        src.push_str(&format!(
            "input var A{n} : [{ROWS} {n}]\noutput var M{n} : [{ROWS}]\noutput var L{n} : [{ROWS}]\n"
        ));
    }
    for n in lengths.clone() {
        src.push_str(&format!("M{n} = redmax 2 A{n}\nL{n} = redmin 2 A{n}\n"));
    }
    let p = compile(&src);
    // Distinct quiet NaNs (either sign), so that a wrong payload shows.
    let nan = |payload: u64, negative: bool| {
        f64::from_bits(0x7ff8_0000_0000_0000 | payload | if negative { 1 << 63 } else { 0 })
    };
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    let mut inputs = BTreeMap::new();
    for n in lengths.clone() {
        let mut data = Vec::with_capacity(ROWS * n);
        for r in 0..ROWS {
            let kind = r % 8;
            let mut row: Vec<f64> = (0..n)
                .map(|i| {
                    let x = (next(1000) + 1) as f64 / 7.0;
                    match kind {
                        // Numbers of both signs: the extremes are not zeros.
                        0 => x - 71.0,
                        // Below zero (max is a zero), above zero (min is a zero).
                        1 | 3 | 5 => -x,
                        2 | 4 => x,
                        // Only zeros and infinities.
                        6 => [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY][i % 4],
                        _ => x * if i % 2 == 0 { 1.0 } else { -1.0 },
                    }
                })
                .collect();
            // Tied zeros of both signs.
            if kind != 0 {
                for _ in 0..=next(4) {
                    let at = next(n as u64) as usize;
                    row[at] = if next(2) == 0 { 0.0 } else { -0.0 };
                }
            }
            // NaNs with different payloads.
            if kind >= 3 && next(3) != 0 {
                for j in 0..=next(3) {
                    let at = next(n as u64) as usize;
                    row[at] = nan((r * 100 + j as usize + 1) as u64, next(2) == 0);
                }
            }
            data.extend(row);
        }
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[ROWS, n]), data).expect("shape");
        inputs.insert(format!("A{n}"), a);
    }
    // The fold in order, as teil_max and teil_min compute it, from the identity.
    let fold = |max: bool, terms: &[f64]| {
        terms.iter().fold(
            if max {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            },
            |a, &b| {
                if b.is_nan() || (max && b > a) || (!max && b < a) {
                    b
                } else {
                    a
                }
            },
        )
    };
    let oracle = teil_interp::run_oracle(&p, &inputs).expect("the oracle runs");
    let mut expected: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let (mut zeros, mut nans) = (0, 0);
    for n in lengths.clone() {
        let a = &inputs[&format!("A{n}")];
        for (name, max) in [(format!("M{n}"), true), (format!("L{n}"), false)] {
            let bits: Vec<u64> = (0..ROWS)
                .map(|r| {
                    let row: Vec<f64> = a.index_axis(ndarray::Axis(0), r).iter().copied().collect();
                    let v = fold(max, &row);
                    let o = oracle[&name][[r]];
                    assert!(
                        if o.is_nan() {
                            v.is_nan()
                        } else {
                            o.to_bits() == v.to_bits()
                        },
                        "{name}[{r}]: the oracle has {o:?}, the fold in order {v:?}"
                    );
                    zeros += usize::from(v == 0.0 && n >= 16);
                    nans += usize::from(v.is_nan() && n >= 16);
                    v.to_bits()
                })
                .collect();
            expected.insert(name, bits);
        }
    }
    assert!(zeros > 500 && nans > 500, "{zeros} zeros, {nans} NaNs");
    let mut kernels = Vec::new();
    for pad in [1u64, 3, 4, 8] {
        let mut k = lower(&src, pad, false);
        k.name = format!("m{pad}");
        // Every fold of 16 terms or more is a lane fold.
        let text = k.to_string();
        assert_eq!(
            text.matches("lanes for").count(),
            2 * (67 - 15),
            "M = {pad}:\n{text}"
        );
        kernels.push(k);
    }
    let refs: Vec<&Kernel> = kernels.iter().collect();
    let jobs: Vec<Job> = (0..kernels.len())
        .map(|kernel| Job {
            kernel,
            inputs: inputs.clone(),
        })
        .collect();
    // Lane folds print one form for every target with vectors and the fold itself for plain C:
    // the plain flags, AVX-512 and portable C cover them.
    let mut flags = vec![STRICT.to_string()];
    let cpu = cpu_features();
    for path in paths().into_iter().filter(|p| {
        p.target == Target::Portable || (p.target == Target::Avx512 && !p.needs.is_empty())
    }) {
        match path.runnable(&cpu) {
            Ok(()) => flags.push(path.flags.clone()),
            Err(why) => println!("skipping the {} path: {why}", path.name),
        }
    }
    for f in &flags {
        let outcomes = run_batch(&Toolchain::default().with_cflags(f), &refs, &jobs).expect("runs");
        for (k, out) in kernels.iter().zip(outcomes) {
            assert!(out.nonzero_padding.is_empty(), "{f}, {}", k.name);
            for (name, bits) in &expected {
                let got: Vec<u64> = out.values[name].iter().map(|x| x.to_bits()).collect();
                for (r, (g, e)) in got.iter().zip(bits).enumerate() {
                    assert_eq!(
                        g,
                        e,
                        "{f}, {}: {name}[{r}] is {:?} ({g:#x}), the fold in order gives {:?} ({e:#x})",
                        k.name,
                        f64::from_bits(*g),
                        f64::from_bits(*e)
                    );
                }
            }
        }
    }
}

/// A product with at most `Sizes::small_product` rows and columns whose lane operands' terms
/// span at most `Sizes::small_span` doubles takes the dot kernel's register tile; one row or
/// column more, or one term more, and it is packed; a small product whose dot products would
/// transpose rows of both operands in registers (not the measured tile) stays packed. The limit
/// follows the machine's L2 (`machine::Machine::sizes`): on a Zen 3's 512 KiB, issue 43's
/// `257 x 263 x 269` is packed, as it was before the small-product rule.
#[test]
fn small_products_take_the_dot_kernels_tile_up_to_the_threshold() {
    use teil_cbackend::ir::{Step, Strategy};
    use teil_cbackend::machine::{Machine, Sizes};
    let (s, span) = (Sizes::default().small_product, Sizes::default().small_span);
    let product = |m: u64, k: u64, n: u64| {
        let vars: [(&str, &[u64]); 2] = [("A", &[m, k]), ("B", &[k, n])];
        format!("{}C = contr 2 3 (prod A B)\n", decls(&vars, ("C", &[m, n])))
    };
    let tile = |src: &str| {
        let k = lower(src, 1, true);
        match &k.steps[..] {
            [Step::Contract { c, .. }] => match &c.strategy {
                Strategy::Dot { rows_of, .. } => rows_of.is_some(),
                Strategy::Packed { .. } => false,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    };
    // `B`'s terms (`n` lanes apart) span `k * n` doubles.
    let k_max = span / s;
    let ab_t = format!(
        "{}C = contr 2 4 (prod A B)\n",
        decls(&[("A", &[64, 128]), ("B", &[64, 128])], ("C", &[64, 64]))
    );
    for (src, small) in [
        (product(s, k_max, s), true),
        (product(97, 97, 97), true),
        (product(s + 1, k_max, s), false),
        (product(s, k_max, s + 1), false),
        (product(s, k_max + 1, s), false),
        (product(64, 4 * k_max, 64), true),
        (ab_t, false),
    ] {
        assert_eq!(tile(&src), small, "{src}");
    }
    let zen3 = Machine::parse("l1d = 32K\nl2 = 512K\nvector_bits = 256").expect("describes");
    // Whether `src` emitted for `machine` gets the dot kernel.
    let dot_on = |machine: &Machine, src: &str| {
        let opts = Options {
            sizes: machine.sizes(),
            ..Options::default()
        };
        let k = teil_cbackend::lower(&compile(src), &opts).expect("lowers");
        matches!(&k.steps[..], [Step::Contract { c, .. }] if matches!(c.strategy, Strategy::Dot { .. }))
    };
    let on_zen3 = |src: &str| dot_on(&zen3, src);
    assert_eq!(zen3.sizes().small_product, 224);
    assert!(on_zen3(&product(224, 224, 224)));
    assert!(!on_zen3(&product(225, 224, 224)));
    assert!(!on_zen3(&product(257, 263, 269)));
    assert!(
        tile(&product(257, 263, 269)),
        "the reference machine's limit is 320"
    );
    // Binary32 products have a limit of their own (`Sizes::small_product_f32`): with the Zen
    // 3's shipped 96 and 128, a product of 97 or 128 takes the tile in binary32 and is packed
    // in binary64; one of 129 is packed in both.
    let shipped = Machine {
        small_product: Some(96),
        small_product_f32: Some(128),
        ..zen3.clone()
    };
    let on = |src: &str| dot_on(&shipped, src);
    let binary32 = |src: String| src.replace(" : [", " : f32[");
    for (n, f64_tile, f32_tile) in [
        (96, true, true),
        (97, false, true),
        (128, false, true),
        (129, false, false),
    ] {
        let src = product(n, n, n);
        assert_eq!(on(&src), f64_tile, "{src}");
        assert_eq!(on(&binary32(src.clone())), f32_tile, "binary32 {src}");
    }
}
