//! The kernel forms the passes of `teil_cbackend::opt` choose (`Step::Contract` with the packed
//! or the dot strategy, `Step::Tiled`) are validated exactly as printed, every target's variant
//! of a contraction step included (`ir::Target`), and a bug planted in each
//! (`plant::Bug::{PanelEdge, KBound, TileEdge, OuterBound}`) is rejected by the translation validator in
//! every target's variant and caught by the fuzzer's checks (the C backend's runs against the
//! oracle) with every variant compiled.

mod compilers;

mod corpus;

use std::collections::BTreeMap;
use teil_cbackend::ir::{Kernel, Reads, Step, Strategy, Target};
use teil_cbackend::opt::{self, Printing, Tuning};
use teil_cbackend::plant::{self, Bug};
use teil_cbackend::run::{run_batch, Job, Toolchain};
use teil_cbackend::validate::{self, ValidationError};
use teil_cbackend::Options;
use teil_fuzz::campaign::{self, Check, Config, DEFAULT_CFLAGS};

fn program(name: &str) -> (String, teil::CheckedProgram) {
    let text = std::fs::read_to_string(corpus::dir().join(format!("{name}.teil"))).expect("read");
    let (p, _) = teil::compile(&text).expect("checks");
    (text, p)
}

fn lower(p: &teil::CheckedProgram, pad: u64) -> Kernel {
    let opts = Options {
        pad,
        ..Options::default()
    };
    teil_cbackend::lower(p, &opts).expect("lowers")
}

/// The eight PERFORMANCE.md kernels at small sizes and nine more corpus programs, and the
/// forms each must get (`tccg`: two matrix products and a two-level sum; `two_level`: a
/// two-level sum; `row_sums`: three sums of one operand; `lane_dots`: three dot products in
/// lanes; `matmul_f32` and `two_level_f32`: binary32 packed products; `dot_f32`: binary32 dot
/// products; `lane_dots_f32`: binary32 dot products in lanes).
const KERNELS: [(&str, &[Printing]); 19] = [
    ("matmul", &[Printing::Packed]),
    ("matmul_edges", &[Printing::Packed]),
    ("cfd", &[Printing::Packed]),
    ("abc", &[Printing::Packed]),
    ("ttm", &[Printing::Packed]),
    ("mttkrp", &[Printing::Dot, Printing::Dot]),
    ("transpose", &[Printing::Tiled]),
    ("transpose_add", &[Printing::Tiled]),
    ("trace_prod", &[Printing::Dot]),
    ("batched_matvec", &[Printing::LaneSums]),
    ("matvec", &[Printing::Dot]),
    (
        "tccg",
        &[Printing::Packed, Printing::Packed, Printing::Packed],
    ),
    ("two_level", &[Printing::Packed]),
    ("matmul_f32", &[Printing::Packed]),
    ("two_level_f32", &[Printing::Packed]),
    ("dot_f32", &[Printing::Dot, Printing::Dot, Printing::Dot]),
    ("row_sums", &[Printing::Dot, Printing::Dot, Printing::Dot]),
    (
        "lane_dots",
        &[Printing::LaneSums, Printing::LaneSums, Printing::LaneSums],
    ),
    (
        "lane_dots_f32",
        &[Printing::LaneSums, Printing::LaneSums, Printing::LaneSums],
    ),
];

#[test]
fn packed_dot_and_tiled_kernels_validate_as_printed() {
    for (name, forms) in KERNELS {
        let (_, p) = program(name);
        for pad in [1, 3, 4] {
            let k = lower(&p, pad);
            let got = opt::printing(&k);
            for f in forms {
                assert!(got.contains(f), "{name} at M = {pad}: {got:?}");
            }
            let v = validate::validate(&p, &k)
                .unwrap_or_else(|e| panic!("{name} at M = {pad}: {e}\n{k}"));
            // The OpenMP build's order (work items of row panels and groups of columns).
            let parallel = Kernel {
                openmp: true,
                ..k.clone()
            };
            validate::validate(&p, &parallel)
                .unwrap_or_else(|e| panic!("{name} at M = {pad} with OpenMP: {e}\n{k}"));
            let outputs: u64 = k
                .params
                .iter()
                .map(|&b| k.buffer(b))
                .filter(|b| matches!(b.role, teil_cbackend::ir::Role::Param { output: true, .. }))
                .map(|b| b.logical_len())
                .sum();
            assert_eq!(v.output_cells, outputs, "{name} at M = {pad}");
        }
    }
}

#[test]
fn every_kernel_form_is_exact_under_contracting_flags() {
    // The packed, dot, tiled, two-level and lane-fold kernels compiled where compilers fuse
    // multiply-adds unless told not to (spec/abi.md, "Floating point"), on uniform(-1, 1)
    // inputs whose products and sums round: bit for bit the oracle's values, in every
    // target's variant (forced with `-Dteil_vector_bits=N`).
    let mut kernels = Vec::new();
    let mut cases = Vec::new();
    for (name, _) in KERNELS {
        let (_, p) = program(name);
        let inputs = teil_interp::uniform_inputs(&p, 23);
        let expected = teil_interp::run_oracle(&p, &inputs).expect("oracle");
        for pad in [1, 3, 4] {
            // Without lifting: its reassociation is exact only on small integers.
            let opts = Options {
                pad,
                name: format!("{name}_m{pad}"),
                lift: false,
                ..Options::default()
            };
            let k = teil_cbackend::lower(&p, &opts).expect("lowers");
            kernels.push(k);
            cases.push((name, inputs.clone(), expected.clone()));
        }
    }
    let refs: Vec<&Kernel> = kernels.iter().collect();
    let jobs: Vec<Job> = cases
        .iter()
        .enumerate()
        .map(|(kernel, (_, inputs, _))| Job {
            kernel,
            inputs: inputs.clone(),
        })
        .collect();
    let sets = compilers::contracting();
    assert!(!sets.is_empty() || !compilers::cpu_has_fma());
    for (flags, tc) in &sets {
        for t in Target::ALL {
            let tc = tc.clone().with_cflags(&format!(
                "{} -Dteil_vector_bits={}",
                tc.cflags.join(" "),
                t.vector_bits()
            ));
            let outcomes = run_batch(&tc, &refs, &jobs).unwrap_or_else(|e| panic!("{flags}: {e}"));
            for ((k, (_, _, expected)), out) in kernels.iter().zip(&cases).zip(outcomes) {
                assert!(!out.values.is_empty());
                for (var, got) in &out.values {
                    let want = &expected[var];
                    assert!(
                        teil_interp::same_values(want, got),
                        "{flags}, {t}: {} `{var}` differs from the oracle",
                        k.name
                    );
                }
            }
        }
    }
}

#[test]
fn the_plain_tuning_chooses_no_kernel_form_and_computes_the_same_terms() {
    for (name, _) in KERNELS {
        let (_, p) = program(name);
        let k = opt::lower_tuned(&p, &Options::default(), &Tuning::none()).expect("lowers");
        assert!(
            k.steps
                .iter()
                .all(|s| matches!(s, Step::Nest { .. } | Step::Copy { .. })),
            "{name}"
        );
        validate::validate(&p, &k).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// The bugs planted in kernel forms, with the kind of step each rewrites.
const BUGS: [(Bug, Printing); 6] = [
    (Bug::PanelEdge, Printing::Packed),
    (Bug::KBound, Printing::Packed),
    (Bug::KBound, Printing::Dot),
    (Bug::KBound, Printing::LaneSums),
    (Bug::TileEdge, Printing::Tiled),
    (Bug::OuterBound, Printing::Packed),
];

/// Whether `bug` touches a step of kind `kind` in `k` (planting it on a copy of `k` restricted
/// to such steps changes it).
fn plants_in(k: &Kernel, bug: Bug, kind: Printing) -> bool {
    let mut only = k.clone();
    let kinds = opt::printing(k);
    for (s, h) in only.steps.iter_mut().zip(kinds) {
        if h != kind {
            *s = Step::Nest {
                comment: String::new(),
                body: Vec::new(),
            };
        }
    }
    plant::apply(&mut only, bug)
}

#[test]
fn bugs_planted_in_kernel_forms_are_rejected_by_the_validator() {
    for (bug, kind) in BUGS {
        let mut rejected = 0;
        for (name, _) in KERNELS {
            let (_, p) = program(name);
            let k = lower(&p, 1);
            if !plants_in(&k, bug, kind) {
                continue;
            }
            let mut planted = k.clone();
            assert!(plant::apply(&mut planted, bug));
            match validate::validate(&p, &planted) {
                Ok(v) => panic!("{bug} in {name} is not rejected: {v}\n{planted}"),
                Err(e) => {
                    assert!(
                        matches!(e, ValidationError::Differs { .. }),
                        "{bug} in {name}: {e}"
                    );
                    rejected += 1;
                }
            }
            // Each target's variant on its own (one target per order of operations; the
            // others of its group print the same loops): the bug is in every one.
            for group in validate::orders(&planted) {
                let t = group[0];
                match validate::validate_target(&p, &planted, t) {
                    Ok(v) => panic!("{bug} in {name} is not rejected for {t}: {v}\n{planted}"),
                    Err(e) => assert!(
                        matches!(e, ValidationError::Differs { .. }),
                        "{bug} in {name} for {t}: {e}"
                    ),
                }
            }
        }
        assert!(
            rejected >= 2,
            "{bug} ({kind:?}) was planted in only {rejected} kernels"
        );
    }
}

#[test]
fn every_targets_variant_is_interpreted() {
    // The AVX-512 variant of a packed product has its own tile (16 x 8) and row panels, so
    // the validator interprets the kernel twice; the other targets print the same loops (the
    // vector width aside) and share one interpretation.
    let (_, p) = program("matmul");
    let k = lower(&p, 1);
    let Some(Step::Contract { c, .. }) = k.steps.first() else {
        panic!("a contraction step:\n{k}");
    };
    assert_eq!(c.strategy.targets(), Target::ALL.to_vec());
    let split = vec![
        vec![Target::Avx512],
        vec![Target::Neon, Target::Avx, Target::Portable],
    ];
    assert_eq!(c.strategy.groups(), split);
    let v = validate::validate(&p, &k).expect("validates");
    assert_eq!(v.orders, split);
    // Dot products keep their sums in vectors of each target's width (plain scalars in
    // portable C): one branch and one interpretation per target.
    let (_, p) = program("matvec");
    let k = lower(&p, 1);
    let v = validate::validate(&p, &k).expect("validates");
    let each: Vec<Vec<Target>> = Target::ALL.iter().map(|&t| vec![t]).collect();
    assert_eq!(v.orders, each);
}

#[test]
fn a_malformed_variant_of_one_target_is_rejected() {
    // A 16 x 12 tile cannot be held in vectors of 8 doubles: the AVX-512 variant alone is
    // malformed, and validating the kernel (every variant) rejects it.
    let (_, p) = program("matmul");
    let mut k = lower(&p, 1);
    let Some(Step::Contract { c, .. }) = k.steps.first_mut() else {
        panic!("a contraction step:\n{k}");
    };
    let Strategy::Packed { variants, .. } = &mut c.strategy else {
        panic!("packed: {k}");
    };
    variants[0].nr = 12;
    assert_eq!(variants[0].target, Target::Avx512);
    let e = validate::validate(&p, &k).expect_err("rejected");
    assert!(
        matches!(&e, ValidationError::Malformed { what, .. } if what.contains("AVX-512")),
        "{e}"
    );
    validate::validate_target(&p, &k, Target::Avx).expect("the AVX variant is fine");
    // A strategy without a variant for some target is malformed too.
    let mut k = lower(&p, 1);
    if let Some(Step::Contract { c, .. }) = k.steps.first_mut() {
        if let Strategy::Packed { variants, .. } = &mut c.strategy {
            variants.pop();
        }
    }
    let e = validate::validate(&p, &k).expect_err("rejected");
    assert!(matches!(e, ValidationError::Malformed { .. }), "{e}");
}

/// The dot products' vector loads follow the operands' recorded [`Reads`], which the printer
/// prints without looking at the strides: a record the strides do not allow is malformed.
#[test]
fn a_dot_step_whose_operands_cannot_be_read_as_recorded_is_rejected() {
    let (_, p) = program("matvec");
    let mut k = lower(&p, 1);
    validate::validate(&p, &k).expect("validates as lowered");
    let Some(Step::Contract { c, .. }) = k.steps.first_mut() else {
        panic!("a contraction step:\n{k}");
    };
    let Strategy::Dot { reads, .. } = &mut c.strategy else {
        panic!("dot products: {k}");
    };
    // `A` is read along its rows (its terms have unit stride) and `x` is the same for every
    // cell of the lane; `A` as one vector along the lane would read the wrong cells.
    assert_eq!(*reads, [Reads::Rows, Reads::Same]);
    reads[0] = Reads::Lane;
    let e = validate::validate(&p, &k).expect_err("rejected");
    assert!(
        matches!(&e, ValidationError::Malformed { what, .. } if what.contains("Lane")),
        "{e}"
    );
}

/// The contraction pass records which operands' next rows the vector dot kernels fetch
/// (`Strategy::Dot::prefetch`): `A`'s rows of 40 doubles, not `x`, which is the same for every
/// cell; rows longer than `PREFETCH_MAX_ROW` are not fetched, and a record that fetches an
/// operand whose terms are not rows is malformed.
#[test]
fn the_dot_kernels_fetch_the_next_rows_where_the_pass_recorded_it() {
    // Without reassociation: a sum of 600 terms would be summed in lanes instead.
    let opts = Options {
        lift: false,
        ..Options::default()
    };
    let prefetched = |src: &str| {
        let (p, _) = teil::compile(src).expect("checks");
        let k = teil_cbackend::lower(&p, &opts).expect("lowers");
        let Some(Step::Contract { c, .. }) = k.steps.first() else {
            panic!("a contraction step:\n{k}");
        };
        let Strategy::Dot { prefetch, .. } = &c.strategy else {
            panic!("dot products: {k}");
        };
        (
            prefetch.clone(),
            teil_cbackend::emit_c(&p, &opts).expect("emits"),
        )
    };
    let matvec = |n: u64| {
        format!("input var A : [20 {n}]\ninput var x : [{n}]\noutput var y : [20]\ny = (A # x) .[2 3]\n")
    };
    // The vector kernels' prefetch (the scalar dot products fetch rows of any length).
    let vector_prefetch = "teil_e++) __builtin_prefetch(&A[";
    let (short, c) = prefetched(&matvec(40));
    assert_eq!(short, [true, false]);
    assert!(c.contains(vector_prefetch), "{c}");
    let (long, c) = prefetched(&matvec(600));
    assert_eq!(long, [false, false]);
    assert!(!c.contains(vector_prefetch), "{c}");

    let (_, p) = program("matvec");
    let mut k = lower(&p, 1);
    let Some(Step::Contract { c, .. }) = k.steps.first_mut() else {
        panic!("a contraction step:\n{k}");
    };
    let Strategy::Dot { prefetch, .. } = &mut c.strategy else {
        panic!("dot products: {k}");
    };
    prefetch[1] = true;
    let e = validate::validate(&p, &k).expect_err("rejected");
    assert!(
        matches!(&e, ValidationError::Malformed { what, .. } if what.contains("prefetch")),
        "{e}"
    );
}

/// The dot step of `src` lowered without reassociation, with or without `openmp`: its lane's
/// extent, the extents of the labels inside the lane's blocks (`Strategy::Dot::inner`), and
/// the kernel.
fn dot_inner(src: &str, openmp: bool) -> (u64, Vec<u64>, Kernel) {
    let p = teil::compile(src).expect("checks").0;
    let opts = Options {
        lift: false,
        openmp,
        ..Options::default()
    };
    let k = teil_cbackend::lower(&p, &opts).expect("lowers");
    let Some(Step::Contract { c, .. }) = k.steps.first() else {
        panic!("a contraction step:\n{k}");
    };
    let Strategy::Dot { lane, inner, .. } = &c.strategy else {
        panic!("dot products:\n{k}");
    };
    let extent = |l| {
        c.free
            .iter()
            .find(|f| f.var == l)
            .expect("a free label")
            .extent
    };
    let inner = inner.iter().map(|&l| extent(l)).collect();
    (extent(*lane), inner, k.clone())
}

/// Dot products of transposed rows run the labels along which those rows lie closer than
/// along the lane inside the lane's blocks (`Strategy::Dot::inner`): `kji,ik->jk` reads each
/// block's 8 rows of `A` (1900 doubles apart) through `j` (19 apart) before the next block's,
/// instead of all 30 rows for every `j`. A batched matrix-vector product (its batch label
/// farther apart than the lane), an OpenMP kernel (whose parallel loop is the outermost) and a
/// lane of one block keep the blocks innermost. The validator follows the order and rejects an
/// inner label that is not a target label.
#[test]
fn transposed_rows_run_their_closer_labels_inside_the_lanes_blocks() {
    let kji = |k: u64| {
        format!(
            "input alloc A : [{k}, 100, 19]\ninput alloc B : [19, {k}]\noutput alloc C : [100, {k}]\n\
             C = transp 1 2 (contr 3 4 (diag 1 5 (prod A B)))\n"
        )
    };
    let (lane, inner, mut k) = dot_inner(&kji(30), false);
    assert_eq!((lane, inner), (30, vec![100]), "{k}");
    let c = teil_cbackend::print::module(&[&k]);
    let (lanes, rows) = (
        c.find("for (long long teil_lb = 0; teil_lb < 30; teil_lb += 8)"),
        c.find("< 100; i1++)"),
    );
    assert!(lanes.is_some() && lanes < rows, "{c}");
    assert_eq!(dot_inner(&kji(30), true).1, Vec::<u64>::new());
    assert_eq!(dot_inner(&kji(8), false).1, Vec::<u64>::new());
    // `bij,bj->bi`: the rows of one batch cell are next to each other.
    let batched = "input alloc A : [50, 30, 19]\ninput alloc x : [50, 19]\n\
                   output alloc y : [50, 30]\n\
                   y = contr 3 4 (diag 1 4 (prod A x))\n";
    let (lane, inner, b) = dot_inner(batched, false);
    assert_eq!((lane, inner), (30, Vec::<u64>::new()), "{b}");
    // The validator: the kernel as lowered, then with an inner label that is the lane.
    let p = teil::compile(&kji(30)).expect("checks").0;
    validate::validate(&p, &k).expect("validates as lowered");
    let Some(Step::Contract { c, .. }) = k.steps.first_mut() else {
        unreachable!()
    };
    if let Strategy::Dot { lane, inner, .. } = &mut c.strategy {
        *inner = vec![*lane];
    }
    let e = validate::validate(&p, &k).expect_err("rejected");
    assert!(matches!(e, ValidationError::Malformed { .. }), "{e}");
}

/// `C = A B` of `m x k` and `k x n`, checked.
fn matmul(m: u64, k: u64, n: u64) -> teil::CheckedProgram {
    let src = format!(
        "input alloc A : [{m}, {k}]\ninput alloc B : [{k}, {n}]\noutput alloc C : [{m}, {n}]\n\
         C = contr 2 3 (prod A B)\n"
    );
    teil::compile(&src).expect("checks").0
}

/// The packed product's panels on every target, for `C = A B` of `m x k` and `k x n`.
fn panels(m: u64, k: u64, n: u64) -> (u64, Vec<teil_cbackend::ir::Panels>) {
    let k = lower(&matmul(m, k, n), 1);
    match k.steps.first() {
        Some(Step::Contract { c, .. }) => match &c.strategy {
            Strategy::Packed { m, variants, .. } => (*m, variants.clone()),
            other => panic!("packed: {other:?}"),
        },
        _ => panic!("a contraction step:\n{k}"),
    }
}

#[test]
fn few_terms_cut_the_column_panel_to_l2_and_run_row_sliver_by_row_sliver() {
    use teil_cbackend::opt::contract::COLUMN_ORDER_KC;
    // 16 terms: 2048 columns of 16 terms fill the L2 panel; several row panels.
    let (m, vs) = panels(4096, 16, 4096);
    for v in &vs {
        assert_eq!((v.kc, v.nc), (16, 2048), "{v:?}");
        assert!(
            v.kc * v.nc <= teil_cbackend::machine::Sizes::default().l2_block && !v.one_row_panel(m)
        );
        assert!(v.rows_outer, "{v:?}");
    }
    // 256 terms: the fit would be 128 columns; the panel stays as wide as the product, the
    // tiles run column sliver by column sliver, and so the term panels are deeper: all 512
    // terms in one, 1024 in two.
    for (k, kc) in [(512, 512), (1024, COLUMN_ORDER_KC)] {
        let (m, vs) = panels(512, k, 512);
        for v in &vs {
            assert_eq!((v.kc, v.nc), (kc, 512), "{v:?}");
            assert!(!v.rows_outer && !v.one_row_panel(m), "{v:?}");
        }
    }
    // One row panel: cut to fit whatever the fit.
    let (m, vs) = panels(8, 256, 4096);
    for v in &vs {
        assert_eq!((v.kc, v.nc), (256, 128), "{v:?}");
        assert!(v.rows_outer && v.one_row_panel(m), "{v:?}");
    }
}

/// The last row sliver of a packed product gets an edge tile of its rows (`teil_tile_R..._of_MR`)
/// where the full tile would spend at least `EDGE_MIN_WORK` multiplications on its zero rows,
/// tile by tile: 337 rows leave one row of a 16-, 12- and 6-row sliver.
#[test]
fn the_last_row_sliver_gets_an_edge_tile_where_its_zero_rows_cost_enough() {
    use teil_cbackend::opt::contract::EDGE_MIN_WORK;
    let c = |m: u64, k: u64, n: u64, fma: bool| {
        let opts = teil_cbackend::Options {
            fma,
            ..Default::default()
        };
        teil_cbackend::emit_c(&matmul(m, k, n), &opts).expect("prints")
    };
    let (n, k) = (20u64, 2000u64);
    // The zero rows' multiplications: 15 (exact AVX-512), 11 (fma AVX-512), 5 (the others).
    let waste = |rows: u64| u128::from(rows * n * k);
    assert!(waste(15) >= EDGE_MIN_WORK && waste(11) >= EDGE_MIN_WORK);
    assert!(waste(5) < EDGE_MIN_WORK);
    let exact = c(337, k, n, false);
    assert!(exact.contains("teil_tile_1x8_of_16(teil_kcb,"), "{exact}");
    assert!(
        exact.contains("static void teil_tile_1x8_of_16("),
        "{exact}"
    );
    assert!(!exact.contains("_of_6"), "{exact}");
    let fused = c(337, k, n, true);
    assert!(
        fused.contains("teil_tile_1x16_of_12_fma(teil_kcb,"),
        "{fused}"
    );
    assert!(!fused.contains("_of_6"), "{fused}");
    // Few terms: no edge tile anywhere.
    assert!(!c(337, 20, n, false).contains("_of_"));
    // 64 rows in slivers of 12 (fma mode, AVX-512): 4 rows of the last.
    assert!(c(64, 7172, 256, true).contains("teil_tile_4x16_of_12_fma(teil_kcb,"));
}

/// Column sliver by column sliver, each tile is preceded by the prefetch of the next row
/// sliver's target cells (`teil_prefetch_tile`); row sliver by row sliver there is none, and
/// the helper is printed unused.
#[test]
fn column_sliver_order_prefetches_the_next_tiles_cells() {
    let c = |m: u64, k: u64, n: u64| {
        teil_cbackend::emit_c(&matmul(m, k, n), &teil_cbackend::Options::default()).expect("prints")
    };
    let helper =
        "static void teil_prefetch_tile(const void *t, int size, const long long *rows, int mr,";
    // 512³: column sliver by column sliver on every target (above); 8 x 256 x 4096: one row
    // panel, row sliver by row sliver.
    let (columns, rows) = (c(512, 512, 512), c(8, 256, 4096));
    assert!(columns.contains(helper) && rows.contains(helper));
    let calls = |c: &str| {
        c.matches("teil_prefetch_tile(teil_t, (int)sizeof *teil_t, teil_mc + teil_ir + ")
            .count()
    };
    // One prefetch per tile loop: the AVX-512 branch (16-row tiles) and the shared one (6).
    assert_eq!(calls(&columns), 2, "{columns}");
    for mr in [16, 6] {
        let call = format!(
            "if (teil_ir + {mr} < teil_mcb) teil_prefetch_tile(teil_t, (int)sizeof *teil_t, teil_mc + teil_ir + {mr}, "
        );
        assert!(columns.contains(&call), "{call}\n{columns}");
    }
    assert_eq!(calls(&rows), 0, "{rows}");
}

#[test]
fn a_wrong_panel_edge_loses_the_last_row() {
    let (_, p) = program("matmul");
    let mut k = lower(&p, 1);
    let Some(Step::Contract { c, .. }) = k.steps.first() else {
        panic!("a contraction step:\n{k}");
    };
    assert!(
        matches!(c.strategy, Strategy::Packed { m: 16, n: 336, .. }),
        "{k}"
    );
    assert!(plant::apply(&mut k, Bug::PanelEdge));
    let e = validate::validate(&p, &k).expect_err("rejected");
    // Row 16 of C is never computed: its first cell keeps the caller's unspecified value.
    match e {
        ValidationError::Differs {
            var, index, kernel, ..
        } => {
            assert_eq!((var.as_str(), index), ("C", vec![16, 1]));
            assert_eq!(kernel.to_string(), "?C[16,1]");
        }
        other => panic!("{other}"),
    }
}

/// Deterministic small integers: every product and sum is exact, so the C backend must agree
/// with the oracle bit for bit.
fn inputs(p: &teil::CheckedProgram) -> BTreeMap<String, ndarray::ArrayD<f64>> {
    let mut out = BTreeMap::new();
    for (i, d) in p
        .program()
        .decls
        .iter()
        .filter(|d| p.is_input(d))
        .enumerate()
    {
        let shape: Vec<usize> = d.shape().iter().map(|&n| n as usize).collect();
        let n: usize = shape.iter().product();
        let data = (0..n)
            .map(|j| ((j * 7 + i * 3) % 11) as f64 - 5.0)
            .collect();
        out.insert(
            d.name.name.clone(),
            ndarray::ArrayD::from_shape_vec(shape, data).expect("shape"),
        );
    }
    out
}

#[test]
fn bugs_planted_in_kernel_forms_are_caught_by_the_fuzzers_checks() {
    for (bug, name) in [
        (Bug::PanelEdge, "matmul"),
        (Bug::KBound, "matmul"),
        (Bug::KBound, "matvec"),
        (Bug::KBound, "lane_dots"),
        (Bug::TileEdge, "transpose"),
        (Bug::OuterBound, "tccg"),
    ] {
        let (_, p) = program(name);
        // The C compiled for each target's variant (forced, so on any machine).
        for t in Target::ALL {
            let flags = format!("{DEFAULT_CFLAGS} -Dteil_vector_bits={}", t.vector_bits());
            let cfg = Config {
                pads: vec![1],
                plant: Some(bug),
                toolchain: Toolchain::default().with_cflags(&flags),
                ..Config::default()
            };
            caught_by_the_fuzzer(&cfg, bug, name, &p, t);
        }
    }
}

fn caught_by_the_fuzzer(cfg: &Config, bug: Bug, name: &str, p: &teil::CheckedProgram, t: Target) {
    {
        let cfg = cfg.clone();
        let report = campaign::replay(&cfg, p.program().clone(), inputs(p), 1);
        assert!(report.stats.planted >= 1, "{bug} in {name} ({t})");
        let m = report
            .mismatches
            .first()
            .unwrap_or_else(|| panic!("{bug} in {name} is not caught ({t})"));
        assert!(
            m.failures
                .iter()
                .any(|f| matches!(f.check, Check::C { pad: 1, .. })),
            "{bug} in {name} ({t}): {:?}",
            m.failures
        );
        let clean = Config { plant: None, ..cfg };
        let report = campaign::replay(&clean, p.program().clone(), inputs(p), 1);
        assert!(
            report.mismatches.is_empty(),
            "{name} ({t}): {:?}",
            report.mismatches
        );
    }
}

/// A two-level sum is summed flat by the single sum's tile exactly where the kernel may
/// reassociate (`Strategy::Packed::flat`), and keeps its inner sums apart in the two-sum tile
/// otherwise; both validate, and the validator refuses a flat sum in a kernel that may not
/// reassociate.
#[test]
fn a_two_level_sum_is_summed_flat_only_where_the_kernel_may_reassociate() {
    for name in ["two_level", "two_level_f32"] {
        let (_, p) = program(name);
        for lift in [true, false] {
            let opts = Options {
                lift,
                ..Options::default()
            };
            let k = teil_cbackend::lower(&p, &opts).expect("lowers");
            let Some(Step::Contract { c, .. }) = k.steps.first() else {
                panic!("{name}: a contraction step:\n{k}");
            };
            let Strategy::Packed { flat, .. } = c.strategy else {
                panic!("{name}: a packed step:\n{k}");
            };
            assert!(c.outer.is_some(), "{name}: a two-level sum:\n{k}");
            assert_eq!(
                (flat, c.nested(), k.reassociates()),
                (lift, !lift, lift),
                "{name}"
            );
            let text = teil_cbackend::emit_c(&p, &opts).expect("prints");
            assert_eq!(text.contains("teil_tile2_"), !lift, "{name}, lift {lift}");
            assert_eq!(
                text.contains("(3 sums of 5, summed as one)"),
                lift,
                "{name}"
            );
            validate::validate(&p, &k).unwrap_or_else(|e| panic!("{name}, lift {lift}: {e}"));
            if lift {
                // The same strategy in a kernel that may not reassociate.
                let strict = Kernel {
                    reassociate: false,
                    ..k.clone()
                };
                let e = validate::validate(&p, &strict).expect_err("refused");
                assert!(e.to_string().contains("may not reassociate"), "{e}");
            }
        }
    }
}
