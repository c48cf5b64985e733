//! Builds the benchmark suite of PERFORMANCE.md: each kernel as one TeIL statement, lowered by
//! the C backend, compiled with a timing harness into its own executable.
//!
//! ```text
//! cargo run --release -p teil-cbackend --example bench_suite -- [--out DIR] [--pad M,M,...]
//!     [--modes exact,fma] [--cc CC] [--cflags "FLAGS"] [--plain | --tuning LIST] [--openmp]
//!     [--groups G,G] [--only NAME,NAME] [--random N [--seed S]] [--jobs N] [--run] [--list]
//!     [--target-cpu host|reference|FILE]
//! ```
//!
//! `bench/run` calls this and then `bench/numpy_bench.py`, which reads `DIR/manifest.json`,
//! runs every executable, times NumPy and its peers on the same inputs, checks the results
//! against each other and prints the tables. With `--run` this example also runs the
//! executables itself and prints the TeIL times alone (no Python needed); `--list` prints the
//! kernel table of PERFORMANCE.md (Markdown) and builds nothing.
//!
//! Each executable fills the inputs' logical cells with the same deterministic values as the
//! NumPy script (`fill` below), calls the kernel once and writes the output's logical cells to a
//! file (for the comparison), then times kernel calls only: every call is timed on its own with
//! `clock_gettime(CLOCK_MONOTONIC)`, for at least `MIN_SECONDS` and at least `MIN_CALLS` calls
//! (its second and third arguments), and the minimum and the median are printed. Compilation,
//! input generation and I/O are not timed; the kernel's own workspace allocation is (it is part
//! of the call).
//!
//! Every kernel is built once per *mode* (`--modes`, default `exact`): `exact` lowers with
//! `Options { fma: false }` and compiles so that the C compiler fuses nothing; `fma` lowers with
//! `Options { fma: true }` and lets the compiler contract `a * b + c` (spec/values.md). The
//! flags of each mode are chosen in one place, [`Mode::cflags`].
//!
//! `--plain` lowers without the optimisations of `teil_cbackend::opt` (the baseline of
//! PERFORMANCE.md), `--tuning contract,order,split,tile` with only those named, `--pad` chooses
//! the padding multiples (default 1). `--openmp` adds parallel outer loops (`Options::openmp`)
//! and compiles with `-fopenmp`; the number of threads is then `OMP_NUM_THREADS`. `--groups`
//! and `--only` select kernels: a kernel is built when its group is among `--groups` or its
//! name among `--only` (all kernels without either). `--jobs N` compiles N kernels at a time
//! (default: the number of CPUs). `--target-cpu` names the machine the kernels are sized for
//! (`teil_cbackend::machine`; default `$TEIL_TARGET_CPU`, else this CPU), which the manifest
//! records with the sizes it gave. Each build also leaves its program as `STEM.teil`, for
//! `bench/compare`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use teil::ast::ElemType;
use teil_cbackend::ir::{Kernel, Role};
use teil_cbackend::Options;
use teil_interp::random::SplitMix64;

/// How a kernel's result is compared with NumPy's before anything is timed
/// (`bench/numpy_bench.py` applies it; PERFORMANCE.md states the rules).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Bit for bit in every mode: the kernel only moves values, takes maxima, or adds two
    /// values once per cell, which both sides round the same way.
    Exact,
    /// Bit for bit in exact mode (the same operations in the same order as NumPy's); in fma mode
    /// a product and an addition may be rounded once, so within the error bound.
    ExactUnlessFma,
    /// Within the error bound of a sum of products in any order: both sides compute the same
    /// sums with different association (and BLAS uses fused multiply-adds).
    Bound,
    /// Within a few units in the last place of NumPy's value (numpy_bench.py's
    /// `FUNCTION_ULPS`): an element-wise function, correctly rounded in TeIL, within a few ulps
    /// of the truth in NumPy.
    Ulps,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Check::Exact => "exact",
            Check::ExactUnlessFma => "exact-unless-fma",
            Check::Bound => "bound",
            Check::Ulps => "ulps",
        }
    }
}

/// What NumPy runs for a kernel.
enum Peer {
    /// An einsum equation: `np.einsum(eq, optimize=True)`, `opt_einsum.contract`, and
    /// `np.matmul` / `np.tensordot` where the equation is their form (numpy_bench.py decides).
    Einsum(Cow<'static, str>),
    /// A NumPy expression for kernels einsum cannot write, over the operands' names, writing the
    /// result into `out`. `terms` is the sum of the absolute values of the terms each result
    /// cell adds up, and `roundings` how many roundings a cell's value goes through at most
    /// (the error bound of `Check::ExactUnlessFma` in fma mode); `None` for `Check::Exact`.
    Expr {
        numpy: &'static str,
        terms: Option<(&'static str, u32)>,
    },
}

/// One benchmark kernel.
struct Bench {
    name: String,
    /// The table groups kernels (`--groups`).
    group: &'static str,
    peer: Peer,
    /// Operands in einsum order: TeIL name and shape.
    operands: Vec<(&'static str, Vec<u64>)>,
    output: (&'static str, Vec<u64>),
    /// The TeIL statement, prefix form.
    statement: Cow<'static, str>,
    check: Check,
    /// A compute-bound matrix product ([`blas_bound`]): issue 16's exact-mode target for it is
    /// 1.25x OpenBLAS's time instead of 1.0x NumPy's.
    blas: bool,
    /// A shape issue 16 reports as slower than NumPy (marked in the table).
    slow: bool,
    /// The element type of every operand and of the output: `f32` for the `float32` group,
    /// compared with NumPy on float32 arrays.
    elem: ElemType,
}

/// Whether the einsum `eq` over operands of the extents `shapes` is a BLAS-bound matrix
/// product: two operands, no label twice in one operand, none in both operands and the result
/// (a batch) and none summed within one operand, so that it is one matrix product once its
/// labels are grouped (NumPy computes it by `tensordot`, one OpenBLAS call), whose rows (the
/// labels of the first operand and the result), columns (of the second and the result) and
/// terms (of both operands only) each number at least 64 (`ij,jk->ik` of 64³ and larger,
/// `abcd,ea->ebcd` of the tccg group).
fn blas_bound(eq: &str, shapes: &[Vec<u64>]) -> bool {
    let Some((lhs, out)) = eq.split_once("->") else {
        return false;
    };
    let ops: Vec<&str> = lhs.split(',').collect();
    let [a, b] = ops[..] else {
        return false;
    };
    let distinct = |t: &str| t.chars().collect::<BTreeSet<char>>().len() == t.len();
    if !(distinct(a) && distinct(b) && distinct(out)) || shapes.len() != 2 {
        return false;
    }
    let mut extent = BTreeMap::new();
    for (t, s) in ops.iter().zip(shapes) {
        extent.extend(t.chars().zip(s.iter().copied()));
    }
    let (mut rows, mut cols, mut terms) = (1u64, 1u64, 1u64);
    for (l, &e) in &extent {
        let (in_a, in_b, in_out) = (a.contains(*l), b.contains(*l), out.contains(*l));
        match (in_a, in_b, in_out) {
            (true, false, true) => rows = rows.saturating_mul(e),
            (false, true, true) => cols = cols.saturating_mul(e),
            (true, true, false) => terms = terms.saturating_mul(e),
            _ => return false,
        }
    }
    rows >= 64 && cols >= 64 && terms >= 64
}

/// A kernel with the defaults most kernels share: a contraction, checked within the bound,
/// BLAS-bound where [`blas_bound`] says so, not among the slow shapes.
fn contraction(
    name: impl Into<String>,
    group: &'static str,
    einsum: &'static str,
    operands: Vec<(&'static str, Vec<u64>)>,
    output: (&'static str, Vec<u64>),
    statement: &'static str,
) -> Bench {
    let shapes: Vec<Vec<u64>> = operands.iter().map(|(_, s)| s.clone()).collect();
    Bench {
        name: name.into(),
        group,
        peer: Peer::Einsum(einsum.into()),
        blas: blas_bound(einsum, &shapes),
        operands,
        output,
        statement: statement.into(),
        check: Check::Bound,
        slow: false,
        elem: ElemType::F64,
    }
}

/// `ij,jk->ik` with the given extents.
fn matmul(name: impl Into<String>, group: &'static str, m: u64, k: u64, n: u64) -> Bench {
    contraction(
        name,
        group,
        "ij,jk->ik",
        vec![("A", vec![m, k]), ("B", vec![k, n])],
        ("C", vec![m, n]),
        "C = contr 2 3 (prod A B)",
    )
}

/// The CFD operator (three small matrices applied along the three axes of `e` elements of
/// `n³` points).
fn cfd(name: impl Into<String>, group: &'static str, n: u64, e: u64) -> Bench {
    contraction(
        name,
        group,
        "il,jm,kn,elmn->eijk",
        vec![
            ("A", vec![n, n]),
            ("B", vec![n, n]),
            ("C", vec![n, n]),
            ("u", vec![e, n, n, n]),
        ],
        ("v", vec![e, n, n, n]),
        "v = transp 1 2 (transp 2 3 (transp 3 4 (contr 4 6 (contr 3 7 \
         (contr 2 8 (prod A (prod B (prod C u))))))))",
    )
}

/// A kernel written as a NumPy expression (einsum cannot write it), bit for bit in every mode.
fn expr(
    name: &'static str,
    group: &'static str,
    numpy: &'static str,
    operands: Vec<(&'static str, Vec<u64>)>,
    output: (&'static str, Vec<u64>),
    statement: &'static str,
) -> Bench {
    Bench {
        name: name.into(),
        group,
        peer: Peer::Expr { numpy, terms: None },
        operands,
        output,
        statement: statement.into(),
        check: Check::Exact,
        blas: false,
        slow: false,
        elem: ElemType::F64,
    }
}

/// The groups, in table order, with what each measures (the kernel table of PERFORMANCE.md).
const GROUPS: &[(&str, &str)] = &[
    ("eight", "the eight kernels of issue 7"),
    ("odd", "matrix products at odd and prime sizes"),
    (
        "small",
        "matrix products either side of the packed kernel's threshold (4096 multiplications) \
         and of the dot kernel's (512)",
    ),
    (
        "skinny",
        "tall-skinny products, matrix-vector and vector-matrix products",
    ),
    ("large", "the matrix product at 1024 and 2048"),
    (
        "tccg",
        "rank-3 and rank-4 contractions of the TCCG suite, sizes scaled down",
    ),
    ("elementwise", "element-wise chains"),
    ("reduce", "reductions along each axis of a rank-3 tensor"),
    (
        "sums",
        "sums of a vector to a scalar, either side of the lanes' threshold of 64 terms and far \
         above it",
    ),
    ("broadcast", "broadcasting through `expa`"),
    (
        "cfd",
        "the CFD operator at several n (n = 12 is `cfd` of `eight`)",
    ),
    ("layout", "diagonals and a rank-4 transposition"),
    (
        "float32",
        "binary32 products and contractions (the packed kernel's float tiles, the dot \
         products' float vectors for small products, and the dot products in lanes of floats \
         for the matrix-vector product and row sums) against NumPy on float32 arrays",
    ),
    (
        "functions",
        "element-wise functions over 10^6 elements in both types (CORE-MATH's correctly \
         rounded `exp`, `log`, `tanh`) against NumPy's `np.exp`, `np.log`, `np.tanh`",
    ),
    (
        "random",
        "kernels drawn at random (`--random N --seed S`): one einsum statement of one or two \
         operands of rank 1 to 4, the largest tensor of 10^4 to 10^7 cells",
    ),
];

fn suite() -> Vec<Bench> {
    let sq = |n: u64| vec![n, n];
    let mut v = vec![
        // -- eight: issue 7's kernels, unchanged.
        matmul("matmul", "eight", 512, 512, 512),
        cfd("cfd", "eight", 12, 400),
        contraction(
            "abc",
            "eight",
            "ai,bj,ck,ijk->abc",
            vec![
                ("A", sq(24)),
                ("B", sq(24)),
                ("C", sq(24)),
                ("u", vec![24, 24, 24]),
            ],
            ("r", vec![24, 24, 24]),
            "r = contr 4 5 (contr 3 6 (contr 2 7 (prod A (prod B (prod C u)))))",
        ),
        contraction(
            "ttm",
            "eight",
            "ijk,kl->ijl",
            vec![("X", vec![96, 96, 96]), ("M", vec![96, 64])],
            ("Y", vec![96, 96, 64]),
            "Y = contr 3 4 (prod X M)",
        ),
        contraction(
            "mttkrp",
            "eight",
            "ijk,jr,kr->ir",
            vec![
                ("X", vec![64, 64, 64]),
                ("B", vec![64, 32]),
                ("C", vec![64, 32]),
            ],
            ("Y", vec![64, 32]),
            "Y = contr 2 4 (contr 2 4 (diag 5 7 (prod X (prod B C))))",
        ),
        Bench {
            check: Check::Exact,
            ..contraction(
                "transpose",
                "eight",
                "abc->cba",
                vec![("X", vec![256, 256, 64])],
                ("Y", vec![64, 256, 256]),
                "Y = transp 1 3 X",
            )
        },
        contraction(
            "trace_prod",
            "eight",
            "ij,ji->",
            vec![("A", sq(700)), ("B", sq(700))],
            ("s", vec![]),
            "s = contr 1 2 (contr 2 3 (prod A B))",
        ),
        contraction(
            "batched_matvec",
            "eight",
            "bij,bj->bi",
            vec![("A", vec![256, 128, 128]), ("x", vec![256, 128])],
            ("y", vec![256, 128]),
            "y = contr 3 4 (diag 1 4 (prod A x))",
        ),
        // -- odd: sizes that are not multiples of any vector width or tile edge.
        matmul("matmul_97", "odd", 97, 97, 97),
        matmul("matmul_1000", "odd", 1000, 1000, 1000),
        matmul("matmul_1023", "odd", 1023, 1023, 1023),
        matmul("matmul_1000x97x1023", "odd", 1000, 97, 1023),
        // Issue 28: a product between the small and the BLAS-bound sizes, in exact mode 1.41x
        // OpenBLAS in one run.
        matmul("matmul_500x700x300", "odd", 500, 700, 300),
        // -- small: the plain nest below 512 multiplications (8³), then dot products with
        // their register tile up to the small-product limit (`machine::Sizes::small_product`,
        // 320 rows and columns on the reference machine, where `B`'s terms span at most
        // `machine::Sizes::small_span`, 7 x 2^18 doubles there), the packed kernel beyond.
        matmul("matmul_7", "small", 7, 7, 7),
        matmul("matmul_8", "small", 8, 8, 8),
        matmul("matmul_15", "small", 15, 15, 15),
        matmul("matmul_16", "small", 16, 16, 16),
        matmul("matmul_24", "small", 24, 24, 24),
        matmul("matmul_32", "small", 32, 32, 32),
        matmul("matmul_48", "small", 48, 48, 48),
        matmul("matmul_64", "small", 64, 64, 64),
        // Between 97 and the 500 x 700 x 300 product: the packed kernel's hole at 128-192
        // (PERFORMANCE.md, "Small products"), and both sides of the small products' limits:
        // 320 (dot products) and 321 (packed) rows and columns, 7168 (dot products) and 7172
        // (packed) terms of 256 columns (`B`'s terms span `Sizes::small_span` doubles and a
        // little more).
        matmul("matmul_96", "small", 96, 96, 96),
        matmul("matmul_128", "small", 128, 128, 128),
        matmul("matmul_160", "small", 160, 160, 160),
        matmul("matmul_192", "small", 192, 192, 192),
        matmul("matmul_256", "small", 256, 256, 256),
        matmul("matmul_320", "small", 320, 320, 320),
        matmul("matmul_321", "small", 321, 321, 321),
        matmul("matmul_64x7168x256", "small", 64, 7168, 256),
        matmul("matmul_64x7172x256", "small", 64, 7172, 256),
        // -- skinny: one or two small extents.
        matmul("outer_k16", "skinny", 4096, 16, 4096),
        matmul("rows_k8", "skinny", 100_000, 8, 8),
        matmul("inner_16", "skinny", 16, 65_536, 16),
        Bench {
            slow: true,
            ..contraction(
                "matvec",
                "skinny",
                "ij,j->i",
                vec![("A", sq(4096)), ("x", vec![4096])],
                ("y", vec![4096]),
                "y = contr 2 3 (prod A x)",
            )
        },
        contraction(
            "vecmat",
            "skinny",
            "i,ij->j",
            vec![("x", vec![4096]), ("A", sq(4096))],
            ("y", vec![4096]),
            "y = contr 1 2 (prod x A)",
        ),
        // Issue 28: matrix-vector products at sizes in cache (256), in L2/L3 (1024) and
        // streaming from memory (8192, 512 MiB); vector-matrix at 1024.
        contraction(
            "matvec_256",
            "skinny",
            "ij,j->i",
            vec![("A", sq(256)), ("x", vec![256])],
            ("y", vec![256]),
            "y = contr 2 3 (prod A x)",
        ),
        contraction(
            "matvec_1024",
            "skinny",
            "ij,j->i",
            vec![("A", sq(1024)), ("x", vec![1024])],
            ("y", vec![1024]),
            "y = contr 2 3 (prod A x)",
        ),
        contraction(
            "matvec_8192",
            "skinny",
            "ij,j->i",
            vec![("A", sq(8192)), ("x", vec![8192])],
            ("y", vec![8192]),
            "y = contr 2 3 (prod A x)",
        ),
        contraction(
            "vecmat_1024",
            "skinny",
            "i,ij->j",
            vec![("x", vec![1024]), ("A", sq(1024))],
            ("y", vec![1024]),
            "y = contr 1 2 (prod x A)",
        ),
        // Either side of two thresholds: 63 and 64 terms per row, the in-order dot products
        // and the dot products in lanes (`opt::lanes::MIN_SUM_TERMS`); rows 512 and 520
        // doubles apart, a fold one row at a time and 4 rows per pass
        // (`opt::interchange::PAGE`, `JAM_ROWS`).
        contraction(
            "matvec_k63",
            "skinny",
            "ij,j->i",
            vec![("A", vec![65_536, 63]), ("x", vec![63])],
            ("y", vec![65_536]),
            "y = contr 2 3 (prod A x)",
        ),
        contraction(
            "matvec_k64",
            "skinny",
            "ij,j->i",
            vec![("A", vec![65_536, 64]), ("x", vec![64])],
            ("y", vec![65_536]),
            "y = contr 2 3 (prod A x)",
        ),
        contraction(
            "vecmat_512",
            "skinny",
            "i,ij->j",
            vec![("x", vec![4096]), ("A", vec![4096, 512])],
            ("y", vec![512]),
            "y = contr 1 2 (prod x A)",
        ),
        contraction(
            "vecmat_520",
            "skinny",
            "i,ij->j",
            vec![("x", vec![4096]), ("A", vec![4096, 520])],
            ("y", vec![520]),
            "y = contr 1 2 (prod x A)",
        ),
        // -- large.
        matmul("matmul_1024", "large", 1024, 1024, 1024),
        matmul("matmul_2048", "large", 2048, 2048, 2048),
        // -- tccg: the TCCG suite's index patterns (Springer and Bientinesi), with extents
        // scaled down from its 200 MB tensors to a few MB.
        Bench {
            slow: true,
            ..contraction(
                "tccg_abcd_aebf_dfce",
                "tccg",
                "abcd,aebf->dfce",
                vec![("A", vec![16, 16, 32, 32]), ("B", vec![16, 32, 16, 32])],
                ("C", vec![32, 32, 32, 32]),
                "C = transp 3 4 (transp 2 4 (transp 1 2 (contr 1 5 (contr 1 5 (prod A B)))))",
            )
        },
        contraction(
            "tccg_abc_bda_dc",
            "tccg",
            "abc,bda->dc",
            vec![("A", vec![96, 96, 96]), ("B", vec![96, 96, 96])],
            ("C", vec![96, 96]),
            "C = transp 1 2 (contr 1 3 (contr 1 6 (prod A B)))",
        ),
        contraction(
            "tccg_abcd_ea_ebcd",
            "tccg",
            "abcd,ea->ebcd",
            vec![("A", vec![64, 32, 32, 32]), ("B", vec![64, 64])],
            ("C", vec![64, 32, 32, 32]),
            "C = contr 2 3 (prod B A)",
        ),
        contraction(
            "tccg_abc_dca_bd",
            "tccg",
            "abc,dca->bd",
            vec![("A", vec![64, 96, 64]), ("B", vec![96, 64, 64])],
            ("C", vec![96, 96]),
            "C = contr 2 4 (contr 1 6 (prod A B))",
        ),
        contraction(
            "tccg_dbea_ec_abcd",
            "tccg",
            "dbea,ec->abcd",
            vec![("A", vec![32, 32, 64, 32]), ("B", vec![64, 48])],
            ("C", vec![32, 32, 48, 32]),
            "C = transp 3 4 (transp 1 3 (contr 3 5 (prod A B)))",
        ),
    ];
    // -- elementwise: `A + B * C - D`, which NumPy evaluates as (A + (B * C)) - D, the order of
    // TeIL's left-associative `+` and `-` too.
    let chain = |name: &'static str, shape: Vec<u64>| Bench {
        peer: Peer::Expr {
            numpy: "np.subtract(np.add(A, np.multiply(B, C, out=out), out=out), D, out=out)",
            terms: Some(("np.abs(A) + np.abs(B) * np.abs(C) + np.abs(D)", 3)),
        },
        check: Check::ExactUnlessFma,
        ..expr(
            name,
            "elementwise",
            "",
            vec![
                ("A", shape.clone()),
                ("B", shape.clone()),
                ("C", shape.clone()),
                ("D", shape.clone()),
            ],
            ("Y", shape),
            "Y = A + B * C - D",
        )
    };
    v.push(chain("chain_2048", sq(2048)));
    v.push(chain("chain_256", sq(256)));
    // -- reduce: `redmax` along each axis, and a sum along the middle one.
    let x = || vec![("X", vec![128, 256, 256])];
    v.push(expr(
        "redmax_1",
        "reduce",
        "np.max(X, axis=0, out=out)",
        x(),
        ("Y", vec![256, 256]),
        "Y = redmax 1 X",
    ));
    v.push(Bench {
        slow: true,
        ..expr(
            "redmax_2",
            "reduce",
            "np.max(X, axis=1, out=out)",
            x(),
            ("Y", vec![128, 256]),
            "Y = redmax 2 X",
        )
    });
    v.push(expr(
        "redmax_3",
        "reduce",
        "np.max(X, axis=2, out=out)",
        x(),
        ("Y", vec![128, 256]),
        "Y = redmax 3 X",
    ));
    v.push(contraction(
        "sum_2",
        "reduce",
        "abc->ac",
        x(),
        ("Y", vec![128, 256]),
        "Y = red+ 2 X",
    ));
    // -- sums: one chain of additions below 64 terms, lanes from 64 on (spec/padding.md,
    // "Sums in lanes").
    for n in [63, 64, 1000, 100_000, 10_000_000] {
        v.push(contraction(
            format!("sum_{n}"),
            "sums",
            "i->",
            vec![("x", vec![n])],
            ("s", vec![]),
            "s = red+ 1 x",
        ));
    }
    v.push(contraction(
        "dot_1000000",
        "sums",
        "i,i->",
        vec![("x", vec![1_000_000]), ("y", vec![1_000_000])],
        ("s", vec![]),
        "s = red+ 1 (x * y)",
    ));
    // -- broadcast.
    v.push(expr(
        "add_row",
        "broadcast",
        "np.add(X, v, out=out)",
        vec![("X", sq(2048)), ("v", vec![2048])],
        ("Y", sq(2048)),
        "Y = X + expa 1 2048 v",
    ));
    v.push(expr(
        "add_col",
        "broadcast",
        "np.add(X, c[:, None], out=out)",
        vec![("X", sq(2048)), ("c", vec![2048])],
        ("Y", sq(2048)),
        "Y = X + expa 2 2048 c",
    ));
    v.push(expr(
        "outer_sum",
        "broadcast",
        "np.add(a[:, None], b, out=out)",
        vec![("a", vec![2048]), ("b", vec![2048])],
        ("S", sq(2048)),
        "S = expa 2 2048 a + expa 1 2048 b",
    ));
    // -- cfd: about 650-820 thousand points each, like n = 12 with 400 elements.
    for (n, e) in [(4, 10_000), (6, 3_000), (8, 1_500), (16, 200)] {
        v.push(cfd(format!("cfd_n{n}"), "cfd", n, e));
    }
    // -- layout.
    v.push(Bench {
        check: Check::Exact,
        slow: true,
        ..contraction(
            "batched_diag",
            "layout",
            "bii->bi",
            vec![("A", vec![256, 128, 128])],
            ("y", vec![256, 128]),
            "y = diag 2 3 A",
        )
    });
    // Issue 28: the same diagonal at extents that are no power of two, where it was 1.5x to 2.2x
    // NumPy's einsum plus a copy.
    v.push(Bench {
        check: Check::Exact,
        slow: true,
        ..contraction(
            "batched_diag_150",
            "layout",
            "bii->bi",
            vec![("A", vec![200, 150, 150])],
            ("y", vec![200, 150]),
            "y = diag 2 3 A",
        )
    });
    v.push(contraction(
        "batched_trace",
        "layout",
        "bii->b",
        vec![("A", vec![256, 128, 128])],
        ("y", vec![256]),
        "y = contr 2 3 A",
    ));
    v.push(Bench {
        check: Check::Exact,
        ..contraction(
            "transpose4",
            "layout",
            "abcd->cadb",
            vec![("X", vec![48, 40, 32, 56])],
            ("Y", vec![32, 48, 56, 40]),
            "Y = transp 3 4 (transp 2 3 (transp 1 3 X))",
        )
    });
    // -- float32: kernels of the groups above in binary32.
    let float32 = |b: Bench| Bench {
        name: format!("{}_f32", b.name),
        group: "float32",
        elem: ElemType::F32,
        ..b
    };
    v.extend([
        float32(matmul("matmul", "", 512, 512, 512)),
        float32(matmul("matmul_256", "", 256, 256, 256)),
        float32(matmul("matmul_1000x97x1023", "", 1000, 97, 1023)),
        float32(matmul("matmul_257x263x269", "", 257, 263, 269)),
        // Small products: the dot products' register tile of float vectors.
        float32(matmul("matmul_128", "", 128, 128, 128)),
        float32(matmul("matmul_97", "", 97, 97, 97)),
        float32(contraction(
            "ttm",
            "",
            "ijk,kl->ijl",
            vec![("X", vec![96, 96, 96]), ("M", vec![96, 64])],
            ("Y", vec![96, 96, 64]),
            "Y = contr 3 4 (prod X M)",
        )),
        float32(contraction(
            "tccg_abcd_aebf_dfce",
            "",
            "abcd,aebf->dfce",
            vec![("A", vec![16, 16, 32, 32]), ("B", vec![16, 32, 16, 32])],
            ("C", vec![32, 32, 32, 32]),
            "C = transp 3 4 (transp 2 4 (transp 1 2 (contr 1 5 (contr 1 5 (prod A B)))))",
        )),
        float32(contraction(
            "matvec_1024",
            "",
            "ij,j->i",
            vec![("A", vec![1024, 1024]), ("x", vec![1024])],
            ("y", vec![1024]),
            "y = contr 2 3 (prod A x)",
        )),
        float32(contraction(
            "rowsums_1024",
            "",
            "ij->i",
            vec![("A", vec![1024, 1024])],
            ("y", vec![1024]),
            "y = red+ 2 A",
        )),
    ]);
    // -- functions: 10^6 values of [-0.5, 0.5) through each function, in both types; `log`
    // of their absolute values, on both sides (issue 50, point 6).
    for elem in ElemType::ALL {
        for (f, numpy, statement) in [
            ("exp", "np.exp(X, out=out)", "Y = exp X"),
            (
                "log",
                "np.log(np.abs(X, out=out), out=out)",
                "Y = log (abs X)",
            ),
            ("tanh", "np.tanh(X, out=out)", "Y = tanh X"),
        ] {
            let suffix = match elem {
                ElemType::F64 => "",
                ElemType::F32 => "_f32",
            };
            v.push(Bench {
                name: format!("{f}_1e6{suffix}"),
                check: Check::Ulps,
                elem,
                ..expr(
                    "",
                    "functions",
                    numpy,
                    vec![("X", vec![1_000_000])],
                    ("Y", vec![1_000_000]),
                    statement,
                )
            });
        }
    }
    v
}

/// Largest iteration count of the nest over all labels of a random kernel (each call then takes
/// well under a second).
const RANDOM_MAX_WORK: f64 = 5e8;

/// `--random N --seed S`: `n` kernels drawn from `seed` (the same seed, the same kernels).
/// Each is an einsum equation of one or two operands over two to five labels (a label
/// repeated in an operand is a diagonal), lowered by TeIL's einsum front end to one
/// statement; extents grow at random from 2 until the largest tensor reaches a size drawn
/// log-uniformly between 10^4 and 10^7 cells, with the nest over all labels at most
/// [`RANDOM_MAX_WORK`] iterations.
fn random_suite(n: usize, seed: u64) -> Vec<Bench> {
    let mut rng = SplitMix64(seed);
    let mut out = Vec::new();
    for _ in 0..n.saturating_mul(100) {
        if out.len() == n {
            break;
        }
        if let Some(b) = random_kernel(&mut rng, out.len()) {
            out.push(b);
        }
    }
    out
}

fn random_kernel(rng: &mut SplitMix64, index: usize) -> Option<Bench> {
    const LETTERS: &[u8] = b"ijklm";
    const NAMES: [&str; 2] = ["in0", "in1"];
    let labels = 2 + rng.below(4);
    let mut terms: Vec<Vec<usize>> = Vec::new();
    for _ in 0..1 + rng.below(2) {
        let rank = 1 + rng.below(labels.min(4));
        let mut pool: Vec<usize> = (0..labels).collect();
        let mut term = Vec::with_capacity(rank);
        for _ in 0..rank {
            term.push(pool.remove(rng.below(pool.len())));
        }
        if rank >= 2 && rng.chance(15) {
            term[rank - 1] = term[0];
        }
        terms.push(term);
    }
    let mut used: Vec<usize> = terms.iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let mut output: Vec<usize> = used.iter().copied().filter(|_| rng.chance(55)).collect();
    for k in (1..output.len()).rev() {
        output.swap(k, rng.below(k + 1));
    }
    // Extents: all 2, then random growth while the largest tensor is under the target.
    let target = 10f64.powf(4.0 + 3.0 * rng.below(1_000_001) as f64 / 1e6);
    let mut ext = vec![2u64; labels];
    let cells = |ext: &[u64], t: &[usize]| t.iter().map(|&l| ext[l] as f64).product::<f64>();
    let largest = |ext: &[u64]| {
        terms
            .iter()
            .chain(std::iter::once(&output))
            .map(|t| {
                let mut d = t.clone();
                d.dedup();
                cells(ext, &d)
            })
            .fold(1.0, f64::max)
    };
    let work = |ext: &[u64]| cells(ext, &used);
    for _ in 0..400 {
        let l = used[rng.below(used.len())];
        let mut grown = ext.clone();
        grown[l] = (grown[l] as f64 * (1.1 + rng.below(90) as f64 / 100.0)).ceil() as u64;
        if largest(&grown) > target || work(&grown) > RANDOM_MAX_WORK {
            continue;
        }
        ext = grown;
    }
    if largest(&ext) < 1e4 {
        return None;
    }
    let letters = |t: &[usize]| -> String { t.iter().map(|&l| LETTERS[l] as char).collect() };
    let lhs: Vec<String> = terms.iter().map(|t| letters(t)).collect();
    let eq = format!("{}->{}", lhs.join(","), letters(&output));
    let shapes: Vec<Vec<u64>> = terms
        .iter()
        .map(|t| t.iter().map(|&l| ext[l]).collect())
        .collect();
    let (p, _) = teil::guard::einsum(&eq, &shapes).ok()?;
    // One statement over the operands alone (no temporaries).
    if p.program().stmts.len() != 1 || p.program().decls.len() != terms.len() + 1 {
        return None;
    }
    let text = teil::fmt::program(p.program(), teil::fmt::Style::Prefix);
    let statement = text.lines().last()?.trim().to_string();
    let out_shape = p.var_shape("out")?.to_vec();
    let blas = blas_bound(&eq, &shapes);
    let operands = NAMES.iter().copied().zip(shapes).collect();
    Some(Bench {
        name: format!("random_{index:02}"),
        group: "random",
        peer: Peer::Einsum(eq.into()),
        operands,
        output: ("out", out_shape),
        statement: statement.into(),
        check: Check::Bound,
        blas,
        slow: false,
        elem: ElemType::F64,
    })
}

fn extents(s: &[u64]) -> String {
    let parts: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The TeIL program of a benchmark, in prefix syntax.
fn program(b: &Bench) -> String {
    let mut src = String::new();
    // `f32[..]`, or the bare `[..]` of f64.
    let ty = match b.elem {
        ElemType::F64 => "",
        ElemType::F32 => "f32",
    };
    for (name, shape) in &b.operands {
        let _ = writeln!(src, "input alloc {name} : {ty}{}", extents(shape));
    }
    let _ = writeln!(
        src,
        "output alloc {} : {ty}{}",
        b.output.0,
        extents(&b.output.1)
    );
    let _ = writeln!(src, "{}", b.statement);
    src
}

/// Seconds of kernel calls each executable times at least.
const MIN_SECONDS: f64 = 1.0;

/// Calls each executable times at least (its third argument overrides it; 0: only the first,
/// untimed call that writes the result).
const MIN_CALLS: u32 = 5;

/// The timing harness for one kernel: its own translation unit.
fn harness(k: &Kernel, b: &Bench) -> String {
    let mut out = String::from(
        "#define _POSIX_C_SOURCE 200112L\n#define _DEFAULT_SOURCE\n#include <stdio.h>\n\
         #include <stdlib.h>\n#include <string.h>\n#include <time.h>\n#include <sys/mman.h>\n\n",
    );
    let params: Vec<String> = k
        .params
        .iter()
        .map(|&p| {
            format!(
                "{} *restrict",
                teil_cbackend::print::c_type(k.buffer(p).elem)
            )
        })
        .collect();
    let _ = writeln!(out, "void {}({});\n", k.name, params.join(", "));
    out.push_str(
        r#"static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A 64-byte aligned buffer, given to the kernel the way NumPy gives its arrays: NumPy asks
 * Linux for transparent huge pages for every array of 4 MiB or more (its default
 * `hugepage` policy, madvise(MADV_HUGEPAGE) on the pages inside the array), so the kernels
 * and the peers stream their operands through the same kind of pages. */
static void *buffer(size_t n, size_t size)
{
    void *p = NULL;
    size_t bytes = (n ? n : 1) * size;
    if (posix_memalign(&p, 64, bytes) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
#ifdef MADV_HUGEPAGE
    if (bytes >= ((size_t)1 << 22)) {
        size_t page = 4096;
        char *first = (char *)(((size_t)p + page - 1) / page * page);
        char *end = (char *)(((size_t)p + bytes) / page * page);
        (void)madvise(first, (size_t)(end - first), MADV_HUGEPAGE);
    }
#endif
    memset(p, 0, bytes);
    return p;
}

/* The value of logical cell t (row-major, unpadded) of operand `seed`: the same formula as
 * bench/numpy_bench.py, exact in binary64 (a float operand holds it rounded to binary32, as
 * NumPy's astype(float32)). */
static double value(unsigned long long t, unsigned long long seed)
{
    unsigned long long h = (t * 2654435761ULL + seed * 97ULL) % 4294967296ULL;
    return (double)h / 4294967296.0 - 0.5;
}

/* Visits the logical cells of a padded buffer of `size`-byte cells (double or float) in
 * row-major order: fills them (out == NULL) or writes them to `out`. */
static void walk(void *b, size_t size, int rank, const long long *logical,
                 const long long *padded, unsigned long long seed, FILE *out)
{
    long long idx[32] = {0};
    unsigned long long t = 0;
    int d;
    for (d = 0; d < rank; d++)
        if (logical[d] == 0)
            return;
    for (;;) {
        long long off = 0;
        for (d = 0; d < rank; d++)
            off = off * padded[d] + idx[d];
        if (out != NULL)
            fwrite((char *)b + off * size, size, 1, out);
        else if (size == sizeof(float))
            ((float *)b)[off] = (float)value(t, seed);
        else
            ((double *)b)[off] = value(t, seed);
        t++;
        for (d = rank - 1; d >= 0; d--) {
            if (++idx[d] < logical[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

"#,
    );
    out.push_str("int main(int argc, char **argv)\n{\n");
    let mut calls = Vec::new();
    let mut seed = 0u64;
    for (j, &p) in k.params.iter().enumerate() {
        let buf = k.buffer(p);
        let logical: Vec<String> = buf.logical.iter().map(|n| format!("{n}LL")).collect();
        let padded: Vec<String> = buf.padded.iter().map(|n| format!("{n}LL")).collect();
        let rank = buf.logical.len();
        let _ = writeln!(
            out,
            "    static const long long l{j}[] = {{{}}}, p{j}[] = {{{}}};",
            if rank == 0 {
                "0".into()
            } else {
                logical.join(", ")
            },
            if rank == 0 {
                "0".into()
            } else {
                padded.join(", ")
            },
        );
        let ty = teil_cbackend::print::c_type(buf.elem);
        let _ = writeln!(
            out,
            "    {ty} *b{j} = buffer({}u, sizeof({ty}));",
            buf.padded_len()
        );
        if matches!(buf.role, Role::Param { input: true, .. }) {
            let _ = writeln!(
                out,
                "    walk(b{j}, sizeof *b{j}, {rank}, l{j}, p{j}, {seed}u, NULL);"
            );
            seed += 1;
        }
        calls.push(format!("b{j}"));
    }
    let out_param = k
        .params
        .iter()
        .position(|&p| k.buffer(p).var.as_deref() == Some(b.output.0))
        .expect("the output is a parameter");
    let rank = k.buffer(k.params[out_param]).logical.len();
    let call = format!("{}({})", k.name, calls.join(", "));
    let _ = write!(
        out,
        r#"    double min_seconds = argc > 2 ? atof(argv[2]) : {MIN_SECONDS};
    long min_calls = argc > 3 ? atol(argv[3]) : {MIN_CALLS};
    double *times;
    long cap = 1 << 16, n = 0;
    double start, total = 0.0;
    FILE *f;
    if (argc < 2) {{
        fprintf(stderr, "usage: %s OUT [MIN_SECONDS [MIN_CALLS]]\n", argv[0]);
        return 2;
    }}
    {call};
    f = fopen(argv[1], "wb");
    if (f == NULL) {{
        fprintf(stderr, "cannot write %s\n", argv[1]);
        return 2;
    }}
    walk(b{out_param}, sizeof *b{out_param}, {rank}, l{out_param}, p{out_param}, 0u, f);
    fclose(f);
    times = malloc((size_t)cap * sizeof(double));
    start = now();
    while (min_calls > 0 && (total < min_seconds || n < min_calls) && n < cap) {{
        double t0 = now(), t1;
        {call};
        t1 = now();
        times[n++] = t1 - t0;
        total = t1 - start;
    }}
    if (n == 0) {{
        printf("0 0 0\n");
        return 0;
    }}
    qsort(times, (size_t)n, sizeof(double), cmp);
    printf("%.9e %.9e %ld\n", times[0], times[n / 2], n);
    return 0;
}}
"#
    );
    out
}

/// A build mode: what the kernels may do with `a * b + c`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// The default: every product and sum rounded on its own, as spec/values.md says.
    Exact,
    /// `Options { fma: true }`: fused multiply-adds allowed (spec/values.md).
    Fma,
}

impl Mode {
    fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "exact" => Ok(Mode::Exact),
            "fma" => Ok(Mode::Fma),
            other => Err(format!("--modes: unknown mode `{other}` (exact, fma)")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Exact => "exact",
            Mode::Fma => "fma",
        }
    }

    /// The C compiler flags of the benchmark build in this mode; the one place they are chosen.
    /// Both optimise for this machine and forbid the compiler to contract `a * b + c` into
    /// fused multiply-adds on its own (which GCC's default GNU mode would do with
    /// `-march=native`): in fma mode the kernel itself spells every permitted fusion as
    /// `teil_fma` (spec/values.md, "Fused multiply-add"), which `-march=native` turns into FMA
    /// instructions on a machine that has them; a compiler contraction could also fuse pairs the
    /// spec does not permit.
    fn cflags(self) -> &'static str {
        match self {
            Mode::Exact | Mode::Fma => "-O3 -march=native -ffp-contract=off",
        }
    }
}

struct Args {
    out: PathBuf,
    pads: Vec<u64>,
    modes: Vec<Mode>,
    cc: String,
    /// Replaces the flags of every mode (`--cflags`).
    cflags: Option<String>,
    plain: bool,
    /// Which optimisations (`--tuning contract,order,split,tile`); `None`: all.
    tuning: Option<teil_cbackend::opt::Tuning>,
    groups: Option<Vec<String>>,
    only: Option<Vec<String>>,
    jobs: usize,
    run: bool,
    list: bool,
    /// Parallel outer loops (`Options::openmp`), compiled with `-fopenmp`.
    openmp: bool,
    /// `--random N`: N kernels drawn at random instead of the suite ([`random_suite`]).
    random: Option<usize>,
    /// `--seed S` of `--random`.
    seed: u64,
    /// `--target-cpu MACHINE`: the machine the kernels are sized for (`host`, `reference` or
    /// a description file; default `$TEIL_TARGET_CPU`, else `host`).
    machine: teil_cbackend::machine::Machine,
}

impl Args {
    fn cflags(&self, mode: Mode) -> String {
        self.cflags
            .clone()
            .unwrap_or_else(|| mode.cflags().to_string())
    }
}

/// A comma-separated list without empty items.
fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        out: PathBuf::from("target/bench"),
        pads: vec![1],
        modes: vec![Mode::Exact],
        cc: "cc".to_string(),
        cflags: None,
        plain: false,
        tuning: None,
        groups: None,
        only: None,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        run: false,
        list: false,
        openmp: false,
        random: None,
        seed: 1,
        machine: teil_cbackend::machine::Machine::reference(),
    };
    let mut target_cpu = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--out" => a.out = PathBuf::from(value()?),
            "--pad" => {
                a.pads = list(&value()?)
                    .iter()
                    .map(|s| match s.parse::<u64>() {
                        Ok(m) if m >= 1 => Ok(m),
                        _ => Err(format!(
                            "--pad: `{s}` is not a padding multiple (1, 2, ...)"
                        )),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--modes" => {
                a.modes = list(&value()?)
                    .iter()
                    .map(|s| Mode::parse(s))
                    .collect::<Result<_, _>>()?;
            }
            "--fma" => a.modes = vec![Mode::Fma],
            "--cc" => a.cc = value()?,
            "--cflags" => a.cflags = Some(value()?),
            "--plain" => a.plain = true,
            "--tuning" => {
                let mut t = teil_cbackend::opt::Tuning::none();
                for name in list(&value()?) {
                    match name.as_str() {
                        "contract" => t.contract = true,
                        "order" => t.order = true,
                        "split" => t.split = true,
                        "tile" => t.tile = true,
                        "interchange" => t.interchange = true,
                        "none" => {}
                        other => return Err(format!("--tuning: unknown optimisation `{other}`")),
                    }
                }
                a.tuning = Some(t);
            }
            "--groups" => a.groups = Some(list(&value()?)),
            "--only" => a.only = Some(list(&value()?)),
            "--jobs" => {
                a.jobs = match value()?.parse::<usize>() {
                    Ok(n) if n >= 1 => n,
                    _ => return Err("--jobs needs a number of at least 1".to_string()),
                }
            }
            "--run" => a.run = true,
            "--list" => a.list = true,
            "--openmp" => a.openmp = true,
            "--target-cpu" => target_cpu = Some(value()?),
            "--random" => {
                a.random = match value()?.parse::<usize>() {
                    Ok(n) if (1..=1000).contains(&n) => Some(n),
                    _ => return Err("--random needs a number of kernels, 1 to 1000".to_string()),
                }
            }
            "--seed" => {
                a.seed = value()?
                    .parse::<u64>()
                    .map_err(|_| "--seed needs a non-negative integer".to_string())?
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.pads.is_empty() || a.modes.is_empty() {
        return Err("--pad and --modes need at least one value".to_string());
    }
    a.machine = teil_cbackend::machine::Machine::target(target_cpu.as_deref())
        .map_err(|e| format!("--target-cpu: {e}"))?;
    Ok(a)
}

/// The kernels `--groups` and `--only` select, in suite order (of the random suite with
/// `--random`, so that one drawn kernel can be timed again alone); an unknown name is an
/// error.
fn selected(a: &Args) -> Result<Vec<Bench>, String> {
    let all = match a.random {
        Some(n) => random_suite(n, a.seed),
        None => suite(),
    };
    for g in a.groups.iter().flatten() {
        if !GROUPS.iter().any(|(name, _)| name == g) {
            let names: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "--groups: no group `{g}` (groups: {})",
                names.join(", ")
            ));
        }
    }
    for n in a.only.iter().flatten() {
        if !all.iter().any(|b| &b.name == n) {
            return Err(format!(
                "--only: no kernel `{n}` (`bench/run --list` lists them)"
            ));
        }
    }
    if a.groups.is_none() && a.only.is_none() {
        return Ok(all);
    }
    Ok(all
        .into_iter()
        .filter(|b| {
            a.groups.iter().flatten().any(|g| g == b.group)
                || a.only.iter().flatten().any(|n| n == &b.name)
        })
        .collect())
}

fn json_shape(s: &[u64]) -> String {
    let parts: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

fn json_opt(s: Option<&str>) -> String {
    s.map_or("null".to_string(), teil::json::string)
}

/// The optimisations the arguments ask for (without OpenMP).
fn tuning(a: &Args) -> teil_cbackend::opt::Tuning {
    match (a.plain, a.tuning) {
        (true, _) => teil_cbackend::opt::Tuning::none(),
        (false, Some(t)) => t,
        (false, None) => teil_cbackend::opt::Tuning::default(),
    }
}

/// The file stem of one build.
fn stem(b: &Bench, mode: Mode, pad: u64) -> String {
    format!("{}_{}_m{pad}", b.name, mode.name())
}

fn build(
    b: &Bench,
    mode: Mode,
    pad: u64,
    a: &Args,
    dir: &Path,
) -> Result<(PathBuf, Kernel), String> {
    let src = program(b);
    let (p, _) =
        teil::compile(&src).map_err(|d| format!("{}: does not check: {d:?}\n{src}", b.name))?;
    let opts = Options {
        pad,
        name: format!("bench_{}", b.name),
        lift: true,
        fma: mode == Mode::Fma,
        openmp: a.openmp,
        sizes: a.machine.sizes(),
    };
    let kernel = teil_cbackend::opt::lower_tuned(&p, &opts, &tuning(a))
        .map_err(|e| format!("{}: {e}", b.name))?;
    let stem = stem(b, mode, pad);
    let kernel_c = dir.join(format!("{stem}.c"));
    let main_c = dir.join(format!("{stem}_main.c"));
    let exe = dir.join(&stem);
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(&kernel_c, teil_cbackend::print::module(&[&kernel]))?;
    // The program itself, for `bench/compare` (another build of `teil emit-c` on it).
    write(&dir.join(format!("{stem}.teil")), src.clone())?;
    write(&main_c, harness(&kernel, b))?;
    // The CORE-MATH functions the kernel calls, each its own translation unit, as
    // `teil run --backend c` compiles them (spec/abi.md, "Functions").
    let units = teil_cbackend::math::units(&[&kernel]);
    let math = teil_cbackend::math::write_units(&dir.join(format!("{stem}_core-math")), &units)
        .map_err(|e| format!("{}: cannot write the CORE-MATH sources: {e}", b.name))?;
    let out = Command::new(&a.cc)
        .args(a.cflags(mode).split_whitespace())
        .args(a.openmp.then_some("-fopenmp"))
        .arg("-o")
        .arg(&exe)
        .arg(&kernel_c)
        .arg(&main_c)
        .args(&math)
        .args(teil_cbackend::math::needs_libm(&[&kernel]).then_some("-lm"))
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", a.cc))?;
    if !out.status.success() {
        return Err(format!(
            "{} ({} mode): the C compiler failed:\n{}",
            b.name,
            mode.name(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((exe, kernel))
}

/// One build's entry of the manifest.
struct Built {
    mode: Mode,
    pad: u64,
    exe: PathBuf,
    out: PathBuf,
    steps: usize,
    lifted: usize,
}

/// Builds every (kernel, mode, padding) of `benches` with `a.jobs` compilations at a time.
/// Results come back in job order, so the manifest does not depend on scheduling.
fn build_all(benches: &[Bench], a: &Args, dir: &Path) -> Result<Vec<Vec<Built>>, String> {
    let jobs: Vec<(usize, Mode, u64)> = benches
        .iter()
        .enumerate()
        .flat_map(|(i, _)| {
            a.modes
                .iter()
                .flat_map(move |&m| a.pads.iter().map(move |&p| (i, m, p)))
        })
        .collect();
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<Result<Built, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..a.jobs.min(jobs.len()).max(1) {
            s.spawn(|| loop {
                let j = {
                    let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                    let j = *n;
                    *n += 1;
                    j
                };
                let Some(&(i, mode, pad)) = jobs.get(j) else {
                    return;
                };
                let b = &benches[i];
                let r = build(b, mode, pad, a, dir).map(|(exe, kernel)| {
                    eprintln!(
                        "built {} ({} mode, M = {pad}): {} steps, {} lifted",
                        b.name,
                        mode.name(),
                        kernel.steps.len(),
                        kernel.lifted
                    );
                    Built {
                        mode,
                        pad,
                        exe,
                        out: dir.join(format!("{}.out", stem(b, mode, pad))),
                        steps: kernel.steps.len(),
                        lifted: kernel.lifted,
                    }
                });
                results.lock().unwrap_or_else(|e| e.into_inner())[j] = Some(r);
            });
        }
    });
    let mut per_bench: Vec<Vec<Built>> = benches.iter().map(|_| Vec::new()).collect();
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    for (&(i, _, _), r) in jobs.iter().zip(results) {
        per_bench[i].push(r.expect("every job ran")?);
    }
    Ok(per_bench)
}

/// The kernel table of PERFORMANCE.md (`--list`).
fn markdown_table(benches: &[Bench]) -> String {
    let mut t = String::from(
        "ᴮ: a BLAS-bound matrix product (two operands, no batch label, rows, columns and \
         terms each at least 64: one OpenBLAS call for NumPy). ˢ: a shape issue 16 reports \
         as slower than NumPy. Check: `exact`, bit for bit NumPy's result; `exact-unless-fma`, \
         bit for bit in exact mode, within the error bound in fma mode; `bound`, within the \
         error bound of a sum of products (bench/numpy_bench.py).\n\n",
    );
    for (group, what) in GROUPS {
        let in_group: Vec<&Bench> = benches.iter().filter(|b| b.group == *group).collect();
        if in_group.is_empty() {
            continue;
        }
        let _ = writeln!(t, "**{group}** — {what}.\n");
        let _ = writeln!(
            t,
            "| kernel | einsum or NumPy expression | operands → result | TeIL statement | check |"
        );
        let _ = writeln!(t, "|---|---|---|---|---|");
        for b in in_group {
            let peer = match &b.peer {
                Peer::Einsum(eq) => format!("`{eq}`"),
                Peer::Expr { numpy, .. } => format!("`{numpy}`"),
            };
            let shapes: Vec<String> = b
                .operands
                .iter()
                .map(|(n, s)| format!("{n} {}", extents(s)))
                .collect();
            let marks = format!(
                "{}{}",
                if b.blas { " ᴮ" } else { "" },
                if b.slow { " ˢ" } else { "" }
            );
            let _ = writeln!(
                t,
                "| {}{marks} | {peer} | {} → {} | `{}` | {} |",
                b.name,
                shapes.join(", "),
                extents(&b.output.1),
                b.statement,
                b.check.name()
            );
        }
        t.push('\n');
    }
    t
}

fn manifest_entry(b: &Bench, builds: &[Built]) -> String {
    let operands: Vec<String> = b
        .operands
        .iter()
        .map(|(n, s)| {
            format!(
                "{{\"name\": {}, \"shape\": {}}}",
                teil::json::string(n),
                json_shape(s)
            )
        })
        .collect();
    let builds: Vec<String> = builds
        .iter()
        .map(|x| {
            format!(
                "{{\"mode\": {}, \"pad\": {}, \"exe\": {}, \"out\": {}, \"steps\": {}, \"lifted\": {}}}",
                teil::json::string(x.mode.name()),
                x.pad,
                teil::json::string(&x.exe.to_string_lossy()),
                teil::json::string(&x.out.to_string_lossy()),
                x.steps,
                x.lifted
            )
        })
        .collect();
    let (einsum, numpy, terms, roundings) = match &b.peer {
        Peer::Einsum(eq) => (Some(eq.as_ref()), None, None, None),
        Peer::Expr { numpy, terms } => (
            None,
            Some(*numpy),
            terms.map(|(t, _)| t),
            terms.map(|(_, r)| r),
        ),
    };
    format!(
        "  {{\"name\": {}, \"group\": {}, \"einsum\": {}, \"numpy\": {}, \"terms\": {}, \
         \"roundings\": {}, \"check\": {}, \"blas\": {}, \"slow\": {}, \"statement\": {},\n   \
         \"dtype\": {},\n   \
         \"operands\": [{}],\n   \"output\": {{\"name\": {}, \"shape\": {}}},\n   \"builds\": [{}]}}",
        teil::json::string(&b.name),
        teil::json::string(b.group),
        json_opt(einsum),
        json_opt(numpy),
        json_opt(terms),
        roundings.map_or("null".to_string(), |r| r.to_string()),
        teil::json::string(b.check.name()),
        b.blas,
        b.slow,
        teil::json::string(&b.statement),
        teil::json::string(match b.elem {
            ElemType::F64 => "float64",
            ElemType::F32 => "float32",
        }),
        operands.join(", "),
        teil::json::string(b.output.0),
        json_shape(&b.output.1),
        builds.join(", ")
    )
}

/// Builds `benches`, runs them with `--run`, and writes the manifest.
fn run(a: &Args, benches: &[Bench]) -> Result<(), String> {
    std::fs::create_dir_all(&a.out)
        .map_err(|e| format!("cannot create {}: {e}", a.out.display()))?;
    let dir = std::fs::canonicalize(&a.out).unwrap_or_else(|_| a.out.clone());
    let cc_version = Command::new(&a.cc)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    let built = build_all(benches, a, &dir)?;
    if a.run {
        for (b, builds) in benches.iter().zip(&built) {
            for x in builds {
                let out = Command::new(&x.exe).arg(&x.out).output();
                match out {
                    Ok(o) if o.status.success() => println!(
                        "{:<22} {:<5} M = {:<3} {}",
                        b.name,
                        x.mode.name(),
                        x.pad,
                        String::from_utf8_lossy(&o.stdout).trim()
                    ),
                    Ok(o) => {
                        eprintln!("{}: failed: {}", b.name, String::from_utf8_lossy(&o.stderr))
                    }
                    Err(e) => eprintln!("{}: cannot run: {e}", b.name),
                }
            }
        }
    }
    let entries: Vec<String> = benches
        .iter()
        .zip(&built)
        .map(|(b, builds)| manifest_entry(b, builds))
        .collect();
    let cflags: Vec<String> = a
        .modes
        .iter()
        .map(|&m| {
            format!(
                "{}: {}",
                teil::json::string(m.name()),
                teil::json::string(&a.cflags(m))
            )
        })
        .collect();
    let groups: Vec<String> = GROUPS
        .iter()
        .map(|(g, what)| format!("[{}, {}]", teil::json::string(g), teil::json::string(what)))
        .collect();
    let manifest = format!(
        "{{\"cc\": {}, \"cflags\": {{{}}}, \"openmp\": {}, \"plain\": {}, \"tuning\": {}, \
         \"machine\": {}, \"groups\": [{}],\n \"kernels\": [\n{}\n]}}\n",
        teil::json::string(&format!("{} ({cc_version})", a.cc)),
        cflags.join(", "),
        a.openmp,
        a.plain,
        teil::json::string(&format!("{:?}", tuning(a))),
        teil::json::string(&{
            let z = a.machine.sizes();
            format!(
                "{}; sizes: small products up to {} rows and columns and {} doubles of \
                 terms, a quarter of L2 {} doubles",
                a.machine.summary(),
                z.small_product,
                z.small_span,
                z.l2_block
            )
        }),
        groups.join(", "),
        entries.join(",\n")
    );
    let path = dir.join("manifest.json");
    let tmp = dir.join("manifest.json.tmp");
    std::fs::write(&tmp, manifest)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("manifest: {}", path.display());
    Ok(())
}

fn main() {
    let (a, benches) = match args().and_then(|a| selected(&a).map(|b| (a, b))) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if a.list {
        print!("{}", markdown_table(&benches));
        return;
    }
    if let Err(e) = run(&a, &benches) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
