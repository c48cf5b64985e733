//! Contraction kernels: the pass that turns loop nests computing `T[...] = Σ_k a[...] * b[...]`
//! into [`Step::Contract`] steps with a [`Strategy`] (a packed, register-blocked matrix product
//! or register-blocked dot products), chosen once here; `crate::print` prints the step as it is.
//!
//! `of` recognises the nest the lowering emits for a statement (or
//! lifted or hoisted temporary) whose value is one sum over a product of two loads:
//!
//! ```text
//! for l_1 < n_1 ... for l_r < n_r {          (the target loops, any extents, start 0)
//!     acc = -0.0
//!     for k < K { acc = acc + a[..] * b[..] }
//!     T[l_1, ..., l_r] = acc                  (every label exactly once)
//! }
//! ```
//!
//! where `a` and `b` are buffers other than `T`, indexed by the target labels, `k` and
//! constants: exactly the meaning of [`Contraction`] ([`Contraction::nest`]); or the same nest
//! with `acc = acc + a[..]`, a sum of one operand, which only the dot products take (where
//! the operand's terms are its rows: `strategy`). Every strategy
//! computes every cell of `T` with the operations of that nest, in the same order: the cell's
//! sum starts from `-0.0` and adds the products for `k = 0, 1, ..., K-1` in turn
//! (spec/padding.md, "Contraction kernels"). What changes is only the order in which *different*
//! cells are worked on, and where a partial sum waits between two blocks of `k` (in a register
//! or in its cell of `T`). Since `T` is neither `a` nor `b`, no cell of `T` is read as an
//! operand, so the cells are independent and the result is bit for bit the nest's. `a * b` may
//! be computed as `b * a`: binary64 multiplication is commutative (NaN payloads aside, which
//! TeIL does not distinguish).

use crate::ir::{
    Access, Affine, Bound, Contraction, Ix, Kernel, Label, LaneFold, Lanes, Node, Panels, Reads,
    Step, Strategy, Target, Val,
};
use crate::opt::lanes::MIN_SUM_TERMS;
use teil::ast::{BinOp, ElemType, RedOp};

/// The register tile (`mr` x `nr`) and the panel sizes (`kc` terms, `mc` rows, `nc` columns)
/// of the packed product on each target, in [`Target::ALL`] order; a step's [`Panels`] are
/// these with the panels clipped to its product. spec/padding.md ("Contraction kernels") and
/// PERFORMANCE.md say why: the tile's accumulators, the column sliver and the broadcast row
/// value fill the target's vector registers without spilling; `kc * nr` doubles of the column
/// sliver stay in L1 while the row slivers stream past, `mc * kc` doubles of the row panel in
/// L2, `kc * nc` doubles of the column panel in L3. Column sliver by column sliver the term
/// panels are deeper, [`COLUMN_ORDER_KC`].
pub const PACKED: [Panels; 4] = [
    // 32 zmm: 16 accumulators (16 rows x 1 vector), a column vector, a row value, a product.
    Panels {
        target: Target::Avx512,
        mr: 16,
        nr: 8,
        kc: 256,
        mc: 128,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
    // 32 q registers: 24 accumulators (6 rows x 4 vectors), 4 column vectors, a row value.
    Panels {
        target: Target::Neon,
        mr: 6,
        nr: 8,
        kc: 256,
        mc: 72,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
    // 16 ymm: 12 accumulators (6 rows x 2 vectors), 2 column vectors, a row value, a product.
    Panels {
        target: Target::Avx,
        mr: 6,
        nr: 8,
        kc: 256,
        mc: 72,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
    // Plain C: the same tile and panels as the 4-double vectors (the compiler may vectorise).
    Panels {
        target: Target::Portable,
        mr: 6,
        nr: 8,
        kc: 256,
        mc: 72,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
];
/// fma mode's AVX-512 tile and panels, in place of [`PACKED`]'s AVX-512 entry (every other
/// target keeps its tile): a fused multiply-add needs no register for the product, so 12 rows x
/// 2 vectors (24 accumulators, 2 column vectors, the row value a memory broadcast: 26 of 32 zmm)
/// fit, with 14 loads per 24 multiply-adds instead of 17 per 16; `nc` stays a multiple of `nr`
/// and `mc` of `mr` (132 rows: 512 rows in 4 row panels, as with 128). PERFORMANCE.md has the
/// measurements.
pub const PACKED_FMA_AVX512: Panels = Panels {
    target: Target::Avx512,
    mr: 12,
    nr: 16,
    kc: 256,
    mc: 132,
    nc: 4080,
    rows_outer: false,
    edge: false,
};

/// The tile and panels of every target, in [`Target::ALL`] order, for a kernel in fma mode
/// (`fma`) or exact mode: [`PACKED`], with [`PACKED_FMA_AVX512`] for AVX-512 in fma mode.
pub fn packed_panels(fma: bool) -> [Panels; 4] {
    PACKED.map(|p| {
        if fma && p.target == Target::Avx512 {
            PACKED_FMA_AVX512
        } else {
            p
        }
    })
}

/// Fewest columns a column panel is cut down to so that it fits a quarter of L2
/// ([`Sizes::l2_block`](crate::machine::Sizes::l2_block)) and its
/// tiles run row sliver by row sliver ([`Panels::rows_outer`]), for a product with several row
/// panels (one with a single row panel is always cut to fit). Each row panel is packed once per
/// column panel, so at 512 columns repacking costs at most 1/512 of the product; with 256
/// terms per panel (every large matrix product) the fit would be 128 columns, and such
/// products keep the column-sliver order, whose column sliver stays in L1. A product of few
/// terms (`ij,jk->ik` with 16 terms: 2048 columns) is bound by its stores instead: column
/// sliver by column sliver its tiles store into all `mc` rows of a row panel in turn, 128
/// streams on AVX-512, which an Intel Xeon's prefetchers do not follow (PERFORMANCE.md, 5x).
pub const L2_PANEL_MIN_COLUMNS: u64 = 512;
/// Terms a term panel holds where the tiles run column sliver by column sliver (the column
/// panel does not fit a quarter of L2), in place of the tile's `kc` (256): each tile
/// loads its cells' partial sums from the target and stores them back once per term panel,
/// and in that order consecutive tiles touch all `mc` rows of the row panel, so those cells
/// come from memory; twice the terms halve that traffic. Row sliver by row sliver the tiles
/// keep `kc`, so that the row sliver (`mr * kc` doubles) stays in L1: there 512 terms were
/// 16-22 % slower (`matmul_64x7172x256`), in column order 4-8 % faster (2048³, 1024³, 321³;
/// PERFORMANCE.md).
pub const COLUMN_ORDER_KC: u64 = 512;
/// The register tile and panels of a two-level sum's packed product (`Contraction::outer`), in
/// [`Target::ALL`] order, the same in exact and fma mode: the tile keeps two accumulators per
/// cell, the inner sums (from `-0.0` at every outer index) and the outer sums they are added
/// to, so it has about half [`PACKED`]'s cells; a term panel holds whole inner sums
/// (`Contraction::panel_terms`). spec/padding.md ("Contraction kernels") and PERFORMANCE.md.
pub const NESTED: [Panels; 4] = [
    // 32 zmm: 24 accumulators (12 rows x 1 vector, twice), a column vector, a row value, a
    // product.
    Panels {
        target: Target::Avx512,
        mr: 12,
        nr: 8,
        kc: 256,
        mc: 132,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
    // 32 q registers: 24 accumulators (3 rows x 4 vectors, twice), 4 column vectors, a row
    // value.
    Panels {
        target: Target::Neon,
        mr: 3,
        nr: 8,
        kc: 256,
        mc: 72,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
    // 16 ymm: 12 accumulators (3 rows x 2 vectors, twice), 2 column vectors, a row value, a
    // product.
    Panels {
        target: Target::Avx,
        mr: 3,
        nr: 8,
        kc: 256,
        mc: 72,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
    // Plain C: the 4-double vectors' tile.
    Panels {
        target: Target::Portable,
        mr: 3,
        nr: 8,
        kc: 256,
        mc: 72,
        nc: 4080,
        rows_outer: false,
        edge: false,
    },
];

/// Smallest number of multiplications (cells times terms) for which the packed kernel is
/// used; below it packing costs more than it saves, and the dot-product printer is shorter.
pub const PACKED_MIN_WORK: u128 = 4096;
/// Fewest multiplications the full register tile would spend on the zero rows that pad a
/// packed product's last row sliver (its missing rows times the columns, terms and batch
/// cells) for that sliver to get an edge tile of its own rows ([`Panels::edge`]):
/// below it they take microseconds, and the edge tile's C (a function per target, compiled
/// with every kernel) costs more than it saves, in the fuzzer's compilations 0.9 ms per
/// program (PERFORMANCE.md).
pub const EDGE_MIN_WORK: u128 = 1 << 18;
/// Smallest number of multiplications for which the dot-product printer is used (it also needs
/// at least `min_lanes()` cells along the target's innermost label).
pub const DOT_MIN_WORK: u128 = 512;
/// Cells computed together by the dot-product kernel on each target, in [`Target::ALL`] order:
/// `lanes` along the lane label (independent sums, enough to hide the latency of the additions,
/// 4 cycles, 2 per cycle, and one AVX-512 vector, two AVX vectors or four NEON vectors), times
/// `rows` along a row label where the kernel keeps its sums in vectors along the lane (the
/// accumulators then fill about half the target's vector registers: 8 zmm, 12 ymm of 16,
/// 24 q registers of 32, as the packed tiles do). `width` is the target's vector width; a
/// step's variants clip `lanes` and `rows` to its extents and fall back to scalars (width 1,
/// one row) where vectors do not apply (`dot`). 16 lanes for AVX-512 measured slower
/// (PERFORMANCE.md), so every target has 8.
pub const LANES: [Lanes; 4] = [
    Lanes {
        target: Target::Avx512,
        lanes: 8,
        rows: 8,
        width: 8,
    },
    Lanes {
        target: Target::Neon,
        lanes: 8,
        rows: 6,
        width: 2,
    },
    Lanes {
        target: Target::Avx,
        lanes: 8,
        rows: 6,
        width: 4,
    },
    Lanes {
        target: Target::Portable,
        lanes: 8,
        rows: 1,
        width: 1,
    },
];
/// The dot-product blocking where the chains of dependent additions bound the kernel, on each
/// target, in [`Target::ALL`] order: [`LANES`], but 16 lanes (two vectors) on AVX-512. It is
/// used for a sum of one operand (`Contraction::b` is `None`) and in fma mode for a product
/// whose lane operand's rows are longer than [`PREFETCH_MAX_ROW`]: their terms are rows of the
/// operand, transposed in registers, and with one vector of lanes each block of 8 terms is a
/// chain of 8 dependent additions (fused multiply-adds) into one accumulator; with two the
/// chains overlap. PERFORMANCE.md ("Kernels drawn at random") has the measurements: 16 lanes
/// gained on `ki->k` 579 x 14136 (1.51 to 1.18 ms), `jkl->kj` (0.91 to 0.75 ms) and `jl->` (0.119
/// to 0.108 ms) and lost a little on `ij->i` 1839 x 396 (0.056 to 0.065 ms); 32 lanes lost
/// on most (32 rows streamed at once). For those products they gained in fma mode only, and
/// only on rows the next block's prefetch does not cover. Small products
/// ([`Sizes::small_product`](crate::machine::Sizes::small_product)) use
/// it too: their register tile of 8 rows then holds 16 vectors of sums, 10-20 % faster than 8
/// from 64 to 192 in both modes (PERFORMANCE.md, *Small products*).
pub const CHAIN_LANES: [Lanes; 4] = [
    Lanes {
        lanes: 16,
        ..LANES[0]
    },
    LANES[1],
    LANES[2],
    LANES[3],
];
/// Longest row (in doubles: the lane stride of an operand whose terms are its rows) for which
/// the vector dot kernels fetch the next block's rows while a block runs
/// (`Strategy::Dot::prefetch`); longer rows are streams the hardware prefetchers follow:
/// fetching the next block of 4096-double rows as well slowed the 4096 x 4096 matrix-vector
/// product from 5.9 to 10.7 ms on the Zen 4 machine, 128-double rows gained (2.4 to 2.0 ms).
pub const PREFETCH_MAX_ROW: u64 = 512;
/// A product that the packed kernel would compute (some target labels read by `a` only, some
/// by `b` only) is computed by vector dot products instead when its columns (the side of the
/// target's innermost label) number at most this many, or its rows and columns both do, and
/// the dot kernel can keep its sums in vectors along the lane (`dot`): packing such thin
/// operands costs about as much as the product (PERFORMANCE.md, `rows_k8`, `inner_16`).
pub const DOT_THIN: u64 = 16;
/// Smallest number of multiplications for which a thin product ([`DOT_THIN`]) leaves the
/// packed kernel: below it either kernel takes microseconds.
pub const DOT_THIN_MIN_WORK: u128 = 1 << 18;
/// Largest stride in `k` (in doubles) of an operand read with unit stride along the lane for
/// the dot kernel to replace a thin packed product: the next term's vector is at most eight
/// cache lines on, a stride the hardware prefetchers follow.
pub const DOT_MAX_STRIDE: u64 = 64;

/// The fewest lanes of any target: the dot-product kernel needs at least this many cells
/// along the lane.
fn min_lanes() -> u64 {
    LANES.iter().map(|l| l.lanes).min().unwrap_or(1)
}
/// Largest span of a cell's terms, in bytes, for which dot products in lanes take a block's
/// rows from separate parts of the rows ([`Strategy::LaneSums`]'s `parts`,
/// [`Lanes::row_blocks`]) instead of adjacent ones: a page (4 KiB), where adjacent rows would
/// interleave within a page and each row of a block is otherwise its own sequential stream. On
/// the Zen 3 of PERFORMANCE.md ("Rows of a block from separate parts"), streamed from memory,
/// a matrix-vector product of 1 KiB rows ran in 0.47 of the time, of 4 KiB rows about 0.8;
/// of 8 KiB rows the two were even, and of 32 KiB rows adjacent rows were faster (a 4096 x
/// 4096 product 1.18x slower with halves 64 MiB apart).
pub const ROWS_APART_MAX_BYTES: u64 = 4096;
/// Dot products in lanes ([`Strategy::LaneSums`]) on each target, in [`Target::ALL`] order:
/// every cell's [`LaneFold::LANES`] lanes in vectors of the target's width, and `rows` cells
/// side by side, so that a pass over an operand that does not read the row label (the vector
/// of a matrix-vector product) serves several rows. The accumulators (`rows · 16 / width`
/// vectors) and one block's vectors of that operand stay in registers: 8 of 32 zmm, 8 and 4 of
/// 16 ymm, 16 and 8 of 32 q registers; plain C sums one row in an array of 16. PERFORMANCE.md
/// ("Dot products in lanes") has the measurements: on AVX-512, 4 rows beat 1, 2 and 8 on a
/// 4096 x 4096 matrix-vector product, and vectors of 8 beat vectors of 4.
pub const LANE_SUMS: [Lanes; 4] = [
    Lanes {
        target: Target::Avx512,
        lanes: LaneFold::LANES,
        rows: 4,
        width: 8,
    },
    Lanes {
        target: Target::Neon,
        lanes: LaneFold::LANES,
        rows: 2,
        width: 2,
    },
    Lanes {
        target: Target::Avx,
        lanes: LaneFold::LANES,
        rows: 2,
        width: 4,
    },
    Lanes {
        target: Target::Portable,
        lanes: LaneFold::LANES,
        rows: 1,
        width: 1,
    },
];

/// The pass: every nest that is a contraction large enough to gain becomes a
/// [`Step::Contract`] with its strategy.
pub fn run(k: &mut Kernel) {
    for i in 0..k.steps.len() {
        let Step::Nest { comment, body } = &k.steps[i] else {
            continue;
        };
        let Some(elem) = crate::ir::arithmetic(k, body) else {
            continue;
        };
        let Some(mut c) = of(body, elem) else {
            continue;
        };
        let Some(strategy) = strategy(k, &c) else {
            continue;
        };
        c.strategy = strategy;
        k.steps[i] = Step::Contract {
            comment: comment.clone(),
            c,
        };
    }
}

/// The contraction a nest computes, if it has exactly the shape above (with a placeholder
/// strategy), in `elem`, the one type of the nest ([`crate::ir::arithmetic`]).
fn of(body: &[Node], elem: ElemType) -> Option<Contraction> {
    let (free, nodes) = crate::ir::perfect_nest(body);
    let [Node::AccInit {
        acc,
        op: RedOp::Sum,
        ..
    }, sum, Node::Store {
        buf: target,
        index: tindex,
        value: Val::Acc(stored),
    }] = nodes
    else {
        return None;
    };
    // The sum: one loop of products into `acc`, or a two-level sum (module documentation).
    let (outer, kloop, inner_acc) = match two_level(sum, *acc) {
        Some((o, l, i)) => (Some(o), l, i),
        None => (None, sum, *acc),
    };
    let Node::Loop {
        var: k,
        start: 0,
        extent: kn,
        logical: klogical,
        body: inner,
    } = kloop
    else {
        return None;
    };
    let [Node::AccUpdate {
        acc: updated,
        op: RedOp::Sum,
        value,
    }] = inner.as_slice()
    else {
        return None;
    };
    // The terms: products of two loads, or (one sum only) one load.
    let (a, b) = match value {
        Val::Bin(BinOp::Mul, va, vb) => match (&**va, &**vb) {
            (Val::Load(ba, ia), Val::Load(bb, ib)) => (
                Access {
                    buf: *ba,
                    index: ia.clone(),
                },
                Some(Access {
                    buf: *bb,
                    index: ib.clone(),
                }),
            ),
            _ => return None,
        },
        Val::Load(ba, ia) if outer.is_none() => (
            Access {
                buf: *ba,
                index: ia.clone(),
            },
            None,
        ),
        _ => return None,
    };
    let operands = || std::iter::once(&a).chain(&b);
    if *updated != inner_acc || stored != acc || operands().any(|x| x.buf == *target) || *kn == 0 {
        return None;
    }
    if outer.is_some_and(|o: Bound| o.var == *k || o.extent == 0) {
        return None;
    }
    // A scalar target is a single sum: the plain nest is already what a printer would do.
    let sums = |l: Label| l == *k || outer.is_some_and(|o| o.var == l);
    if free.is_empty() || free.iter().any(|f| sums(f.var) || f.extent == 0) {
        return None;
    }
    // The store writes each cell once: its index is the target labels, each exactly once.
    let mut seen: Vec<Label> = Vec::new();
    for ix in tindex {
        match ix {
            Ix::Var(l) if free.iter().any(|f| f.var == *l) && !seen.contains(l) => seen.push(*l),
            _ => return None,
        }
    }
    if seen.len() != free.len() {
        return None;
    }
    let known = |idx: &[Ix]| {
        idx.iter().all(|ix| match ix {
            Ix::Var(l) => sums(*l) || free.iter().any(|f| f.var == *l),
            Ix::Const(_) => true,
        })
    };
    if !operands().all(|x| known(&x.index)) {
        return None;
    }
    Some(Contraction {
        free,
        k: Bound {
            var: *k,
            extent: *kn,
            logical: *klogical,
        },
        outer,
        target: Access {
            buf: *target,
            index: tindex.clone(),
        },
        a,
        b,
        elem,
        strategy: Strategy::Dot {
            lane: *k,
            rows_of: None,
            inner: Vec::new(),
            reads: Vec::new(),
            prefetch: Vec::new(),
            variants: Vec::new(),
        },
    })
}

/// The outer loop of a two-level sum into `acc` (`for o { acc1 = -0.0; for k {..};
/// acc = acc + acc1 }`): the outer bound, the inner loop and the inner accumulator.
fn two_level(sum: &Node, acc: u32) -> Option<(Bound, &Node, u32)> {
    let Node::Loop {
        var,
        start: 0,
        extent,
        logical,
        body,
    } = sum
    else {
        return None;
    };
    let [Node::AccInit {
        acc: inner,
        op: RedOp::Sum,
        ..
    }, kloop @ Node::Loop { .. }, Node::AccUpdate {
        acc: folded,
        op: RedOp::Sum,
        value: Val::Acc(added),
    }] = body.as_slice()
    else {
        return None;
    };
    (*folded == acc && added == inner && inner != &acc).then_some((
        Bound {
            var: *var,
            extent: *extent,
            logical: *logical,
        },
        kloop,
        *inner,
    ))
}

/// Whether a two-level sum `T[free] = Σ_o Σ_k a * b` is computed as a packed two-level
/// product: some target label is read by `a` only and some by `b` only (`a_reads` and
/// `b_reads` say which labels an operand's index names). The one rule for nested sums: the
/// split pass (`crate::opt::split`) leaves a statement's nested sum for which it holds as it
/// is, and [`strategy`] packs it (when it has [`PACKED_MIN_WORK`] multiplications; smaller
/// ones stay plain nests).
pub(crate) fn two_sided(
    free: &[Label],
    a_reads: impl Fn(Label) -> bool,
    b_reads: impl Fn(Label) -> bool,
) -> bool {
    free.iter().any(|&l| a_reads(l) && !b_reads(l))
        && free.iter().any(|&l| b_reads(l) && !a_reads(l))
}

/// The strategy for `c`; `None` for contractions too small to gain from either (the plain
/// nest stays).
fn strategy(k: &Kernel, c: &Contraction) -> Option<Strategy> {
    let sa = Affine::of(k, c.a.buf, &c.a.index);
    let st = Affine::of(k, c.target.buf, &c.target.index);
    let work: u128 = c
        .free
        .iter()
        .map(|f| u128::from(f.extent))
        .product::<u128>()
        .saturating_mul(u128::from(c.terms()));
    // The target label with the smallest stride (the first of equals).
    let lane = c.free.iter().min_by_key(|f| st.get(f.var));
    let sb = c.b.as_ref().map(|b| Affine::of(k, b.buf, &b.index));
    let operands: Vec<&Affine> = std::iter::once(&sa).chain(&sb).collect();
    // A product with rows and columns is the packed kernel's (below); any other contraction
    // whose terms are rows of every operand is summed in lanes where the kernel may
    // reassociate.
    let labels: Vec<Label> = c.free.iter().map(|f| f.var).collect();
    let product = sb
        .as_ref()
        .is_some_and(|sb| two_sided(&labels, |l| sa.has(l), |l| sb.has(l)))
        && work >= PACKED_MIN_WORK;
    // The sizes below count doubles; in binary32 the same bytes hold twice the elements.
    let per_double = c.per_double();
    // Dot products in lanes reassociate, within the contraction's type (the validator's
    // normal form has the laws of `+` and `*` in each type, `teil_interp::symbolic`).
    if !product && work >= DOT_MIN_WORK {
        if let Some(s) = lane_sums(k, c, &operands, lane) {
            return Some(s);
        }
    }
    let Some(sb) = sb else {
        // A sum of one operand gains only where each cell's terms are a row of it (unit
        // stride in `k`) and the lane's cells are other rows: a plain nest adds each row's
        // terms one after another, bound by the latency of the additions, while the dot
        // kernel sums `lanes` rows side by side (their terms transposed in registers). Other
        // sums of one operand stay plain nests, which the interchange pass orders.
        let lane = lane.filter(|l| l.extent >= min_lanes() && work >= DOT_MIN_WORK)?;
        let d = dot(k, c, lane, &[&sa], &CHAIN_LANES);
        let Strategy::Dot {
            reads, variants, ..
        } = &d
        else {
            return None;
        };
        return (reads[..] == [Reads::Rows] && variants.iter().any(|v| v.width > 1)).then_some(d);
    };
    if c.outer.is_some() {
        // Two-level sums: the packed product only.
        return product.then(|| packed(k, c, &sa, &sb, &st));
    }
    // Dot products need the terms of a block close together: some operand that differs from
    // lane to lane reads them along a row (unit stride in `k`), or the lane operands' terms
    // span at most a quarter of L2 (`Sizes::l2_block`). Otherwise (`Σ_i x[i] A[i, j]` along `j`, `A` large)
    // every term of a block is a cache line and a page of its own, and the interchanged nest
    // (`crate::opt::interchange`) walks the operand by rows instead.
    let near = lane.is_some_and(|l| {
        let lane_ops = || [&sa, &sb].into_iter().filter(|s| s.has(l.var));
        lane_ops().any(|s| s.get(c.k.var) == 1)
            || lane_ops().all(|s| {
                u128::from(s.get(c.k.var)) * u128::from(c.k.extent)
                    <= u128::from(k.sizes.l2_block) * u128::from(per_double)
            })
    });
    // The product of the extents of the labels `x` reads and `y` does not.
    let only = |x: &Affine, y: &Affine| -> u64 {
        c.free
            .iter()
            .filter(|f| x.has(f.var) && !y.has(f.var))
            .map(|f| f.extent)
            .product()
    };
    if product {
        // The columns are the side of the target's innermost label (as `packed` chooses).
        let (m, n) = match lane {
            Some(l) if sa.has(l.var) && !sb.has(l.var) => (only(&sb, &sa), only(&sa, &sb)),
            _ => (only(&sa, &sb), only(&sb, &sa)),
        };
        let thin = (n <= DOT_THIN || m.max(n) <= DOT_THIN) && work >= DOT_THIN_MIN_WORK;
        let close = lane.is_some_and(|l| {
            [&sa, &sb]
                .into_iter()
                .filter(|s| s.has(l.var))
                .all(|s| s.get(c.k.var) <= DOT_MAX_STRIDE * per_double)
        });
        // Small products: packing both operands costs as much as the product, and the dot
        // kernel's register tile (rows times vectors of lanes, over the operands where they
        // are) is faster (PERFORMANCE.md, *Small products*) while the lane operands' terms
        // span at most `Sizes::small_span` doubles. Only the tile was measured: dot products that
        // would transpose rows in registers (`ik,jk->ij`) stay packed. Binary32 products have
        // a limit of their own (`Sizes::small_product_f32`).
        let small = m.max(n) <= k.sizes.small_product_in(c.elem)
            && lane.is_some_and(|l| {
                [&sa, &sb].into_iter().filter(|s| s.has(l.var)).all(|s| {
                    u128::from(s.get(c.k.var)) * u128::from(c.k.extent)
                        <= u128::from(k.sizes.small_span) * u128::from(per_double)
                })
            });
        if (thin && close) || small {
            // A small product's tile is 16 lanes wide on AVX-512 (`CHAIN_LANES`).
            let table = if small { &CHAIN_LANES } else { &LANES };
            let d = lane.map(|l| dot(k, c, l, &[&sa, &sb], table));
            if let Some(Strategy::Dot {
                variants, rows_of, ..
            }) = &d
            {
                let vectors = variants.iter().any(|v| v.width > 1);
                if vectors && ((thin && close) || rows_of.is_some()) {
                    return d;
                }
            }
        }
        Some(packed(k, c, &sa, &sb, &st))
    } else if near && lane.is_some_and(|l| l.extent >= min_lanes()) && work >= DOT_MIN_WORK {
        let lane = lane?;
        // fma mode over long rows: a chain of fused multiply-adds per block (CHAIN_LANES).
        let long_rows = [&sa, &sb].into_iter().any(|s| {
            reads(s, lane.var, c.k.var) == Reads::Rows
                && s.get(lane.var) > PREFETCH_MAX_ROW * per_double
        });
        let table = if k.fma && long_rows {
            &CHAIN_LANES
        } else {
            &LANES
        };
        Some(dot(k, c, lane, &[&sa, &sb], table))
    } else {
        None
    }
}

/// Dot products in lanes ([`Strategy::LaneSums`]) for `c`, where they apply: the kernel may
/// reassociate ([`Kernel::reassociate`]), every cell is one sum of at least [`MIN_SUM_TERMS`]
/// terms over its logical extent (the threshold of sums in lanes), and every operand (strides
/// `ss`) reads `k` with unit stride, so that each cell's terms are a row of it and a lane's
/// vector is one load. The rows are the target label with the smallest stride (`lane`): its
/// cells are stored next to each other. In binary32 a vector holds twice the lanes, so a
/// block has twice the rows: the same number of independent vector sums as in binary64.
fn lane_sums(
    k: &Kernel,
    c: &Contraction,
    ss: &[&Affine],
    lane: Option<&Bound>,
) -> Option<Strategy> {
    let rows = lane?;
    let terms = c.k;
    let fits = k.reassociate
        && c.outer.is_none()
        && terms.extent == terms.logical
        && terms.extent >= MIN_SUM_TERMS
        && ss.iter().all(|s| s.get(terms.var) == 1);
    fits.then(|| Strategy::LaneSums {
        rows_of: rows.var,
        parts: terms.extent * c.elem.size() as u64 <= ROWS_APART_MAX_BYTES,
        variants: LANE_SUMS
            .iter()
            .map(|v| {
                let per = match v.width {
                    1 => 1,
                    _ => v.target.lanes(c.elem) / v.target.lanes(ElemType::F64),
                };
                Lanes {
                    rows: (v.rows * per).min(rows.extent),
                    width: v.width * per,
                    ..*v
                }
            })
            .collect(),
    })
}

/// How the operand with strides `s` gives the cells' terms along `lane`, recorded in
/// [`Strategy::Dot::reads`] for the printer.
pub fn reads(s: &Affine, lane: Label, k: Label) -> Reads {
    match (s.get(lane), s.get(k)) {
        (0, _) => Reads::Same,
        (1, _) => Reads::Lane,
        (_, 1) => Reads::Rows,
        _ => Reads::Gather,
    }
}

/// The dot-product strategy along `lane`: on each target, its [`LANES`] clipped to the
/// extents; sums in vectors of the target's width where the lane has at least `lanes` cells
/// and every operand that reads the lane reads it with unit stride ([`Reads::Lane`]) or its
/// terms with unit stride ([`Reads::Rows`]); blocks of rows (`rows_of`, a label no
/// [`Reads::Lane`] operand reads, so that their vectors serve every row) only where no operand
/// is transposed. `ss`: the operands' strides, `a`'s first; `table`: [`LANES`] or
/// [`CHAIN_LANES`].
///
/// Where an operand is transposed, each lane cell's terms are a row of it, and with the lane
/// blocks innermost every pass over the other labels reads all the lane's rows, one stream
/// each (`kji,ik->jk`: 30 rows of `in0` 22436 doubles apart, advancing 79 doubles per `j`).
/// The free labels along which every transposed operand's rows lie closer than along the lane
/// (and which no [`Reads::Lane`] operand reads, so that its vectors serve them all) run inside
/// the lane's blocks instead (`Strategy::Dot::inner`): a block's `lanes` rows are then read
/// through before the next block's (`kji,ik->jk` 76-83 to 71-77 µs on the Zen 5 machine,
/// PERFORMANCE.md). Not with OpenMP, whose parallel loop is the outermost: the lane's blocks
/// are too few to share.
fn dot(k: &Kernel, c: &Contraction, lane: &Bound, ss: &[&Affine], table: &[Lanes; 4]) -> Strategy {
    let kinds: Vec<Reads> = ss.iter().map(|s| reads(s, lane.var, c.k.var)).collect();
    let vectors = kinds.iter().all(|r| *r != Reads::Gather);
    let transposed = kinds.contains(&Reads::Rows);
    let (table, base) = (
        &in_elements(table, c.elem, transposed),
        &in_elements(&LANES, c.elem, transposed),
    );
    let rows_of = c
        .free
        .iter()
        .rev()
        .find(|f| {
            f.var != lane.var
                && f.extent > 1
                && ss
                    .iter()
                    .zip(&kinds)
                    .all(|(s, r)| *r != Reads::Lane || !s.has(f.var))
        })
        .filter(|_| vectors && !transposed);
    let variants: Vec<Lanes> = table
        .iter()
        .zip(base)
        .map(|(l, base)| {
            // More lanes than the target's base blocking only where they leave no more cells
            // to scalars after the blocks (`Lanes::cells`; `kji,ik->jk` with 30 lanes: none
            // either way, the lane's last block from cell 14 or 22, and with 16 its fused
            // multiply-adds run in two chains, PERFORMANCE.md), and, where rows are blocked
            // (a small product's tile, whose rows already give it enough chains), compute no
            // more cells in blocks: 24 columns take blocks of 8, not 16 and 16 from cell 8.
            let (more, fewer) = (l.cells(lane.extent), base.cells(lane.extent));
            let l = if more.1 <= fewer.1 && (rows_of.is_none() || more.0 <= fewer.0) {
                l
            } else {
                base
            };
            let lanes = l.lanes.min(lane.extent);
            if vectors && l.width > 1 && lanes == l.lanes && lanes % l.width == 0 {
                Lanes {
                    lanes,
                    rows: rows_of.map_or(1, |r| l.rows.min(r.extent)),
                    ..*l
                }
            } else {
                Lanes {
                    lanes,
                    rows: 1,
                    width: 1,
                    ..*l
                }
            }
        })
        .collect();
    let rows_of = rows_of
        .filter(|_| variants.iter().any(|v| v.rows > 1))
        .map(|r| r.var);
    // Several blocks of lanes on every target, else the order is the same either way.
    let blocks = table.iter().all(|l| lane.extent > l.lanes);
    let inner = c
        .free
        .iter()
        .filter(|f| {
            let closer = ss.iter().zip(&kinds).all(|(s, r)| match r {
                Reads::Rows => s.get(f.var) < s.get(lane.var),
                Reads::Lane => !s.has(f.var),
                Reads::Same | Reads::Gather => true,
            });
            let other = f.var != lane.var && f.extent > 1;
            vectors && transposed && blocks && !k.openmp && other && closer
        })
        .map(|f| f.var)
        .collect();
    let prefetch = ss
        .iter()
        .zip(&kinds)
        .map(|(s, r)| *r == Reads::Rows && s.get(lane.var) <= PREFETCH_MAX_ROW * c.per_double())
        .collect();
    Strategy::Dot {
        lane: lane.var,
        rows_of,
        inner,
        reads: kinds,
        prefetch,
        variants,
    }
}

/// A dot-product blocking table ([`LANES`], [`CHAIN_LANES`]) for sums of type `elem`: in
/// binary32 a vector holds twice the cells ([`Target::lanes`]), so each target's vectors of
/// sums hold twice the lanes in the same registers; but where an operand is `transposed`
/// (each lane a row of it, streamed in parallel) a block keeps binary64's lanes, at least one
/// vector: twice the rows at once slowed the 1024 x 1024 binary32 matrix-vector product on
/// AVX from 0.14 to 0.27 ms (PERFORMANCE.md). Scalar sums (width 1) keep their chains.
fn in_elements(table: &[Lanes; 4], elem: ElemType, transposed: bool) -> [Lanes; 4] {
    table.map(|l| {
        let per = l.target.lanes(elem) / l.target.lanes(ElemType::F64);
        let width = l.width * per;
        let lanes = if transposed {
            l.lanes.max(width)
        } else {
            l.lanes * per
        };
        if l.width > 1 {
            Lanes { lanes, width, ..l }
        } else {
            l
        }
    })
}

/// The packed strategy's layout: which operand gives the rows, the label groups, the panels.
/// A two-level sum is summed flat by the single-sum tile where the kernel may reassociate
/// (`Strategy::Packed::flat`): the two-level tile keeps two accumulators per cell, so it has
/// half the cells, and on the Zen 3 of PERFORMANCE.md (*Two-level sums summed flat*) the
/// `tccg` contractions ran 1.4-1.8x slower with it than with the single sum's tile.
fn packed(k: &Kernel, c: &Contraction, sa: &Affine, sb: &Affine, st: &Affine) -> Strategy {
    let (fma, l2_block) = (k.fma, k.sizes.l2_block);
    let flat = c.outer.is_some() && k.reassociate;
    // The column side holds the target's smallest-stride label, so that tiles store whole
    // vectors where the target allows it.
    let innermost = c.free.iter().min_by_key(|f| st.get(f.var)).map(|f| f.var);
    let swap = innermost.is_some_and(|l| sa.has(l) && !sb.has(l));
    let (sa, sb) = if swap { (sb, sa) } else { (sa, sb) };
    let mut batch = Vec::new();
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    for &f in &c.free {
        match (sa.has(f.var), sb.has(f.var)) {
            (true, false) => rows.push(f),
            (false, true) => cols.push(f),
            _ => batch.push(f),
        }
    }
    // Row-major order of the target within each group, so that consecutive columns are
    // adjacent cells wherever the target's layout has them adjacent.
    rows.sort_by_key(|f| std::cmp::Reverse(st.get(f.var)));
    cols.sort_by_key(|f| std::cmp::Reverse(st.get(f.var)));
    let m: u64 = rows.iter().map(|r| r.extent).product();
    let n: u64 = cols.iter().map(|r| r.extent).product();
    // The multiplications of one row of the product: its columns, terms and batch cells.
    let per_row = u128::from(n)
        * u128::from(c.terms())
        * batch.iter().map(|b| u128::from(b.extent)).product::<u128>();
    let tiles = if c.outer.is_some() && !flat {
        NESTED
    } else {
        packed_panels(fma)
    };
    // In binary32 the tile's vectors hold twice the cells, so a row of the tile has twice the
    // columns in the same registers, and the caches hold twice the elements (`l2`: a quarter
    // of L2 in elements).
    let per_double = c.per_double();
    let l2 = l2_block * per_double;
    Strategy::Packed {
        swap,
        batch,
        rows,
        cols,
        m,
        n,
        flat,
        variants: tiles
            .iter()
            .map(|p| {
                let p = Panels {
                    nr: p.nr * per_double,
                    ..*p
                };
                let mut v = Panels {
                    kc: c.panel_terms(p.kc).min(c.terms()),
                    mc: p.mc.min(m.next_multiple_of(p.mr)),
                    nc: p.nc.min(n.next_multiple_of(p.nr)),
                    ..p
                };
                let fit = (l2 / v.kc / v.nr * v.nr).max(v.nr);
                if v.one_row_panel(m) || fit >= L2_PANEL_MIN_COLUMNS {
                    v.nc = v.nc.min(fit);
                }
                v.rows_outer = v.panel_in_l2(l2);
                if !v.rows_outer {
                    v.kc = c.panel_terms(COLUMN_ORDER_KC).min(c.terms());
                }
                let padding = m.next_multiple_of(v.mr) - m;
                v.edge = padding > 0 && u128::from(padding) * per_row >= EDGE_MIN_WORK;
                v
            })
            .collect(),
    }
}
