//! The loop IR: what a lowered program is, before it is printed as C.
//!
//! A [`Kernel`] owns its buffers (parameters, internal variables, backend temporaries) and a
//! list of [`Step`]s run in order. A step is either a loop nest ([`Node`] tree) or a whole-buffer
//! copy. Loop nests contain only counted loops over index variables ([`Label`]s), scalar
//! accumulators for reductions, and stores; every index into a buffer is a loop variable or a
//! constant ([`Ix`]), so every access is an affine function of the loop variables with the
//! buffer's padded strides.
//!
//! **Architecture Invariant:** every buffer access is in bounds of the buffer's *padded* shape:
//! a loop variable indexing a dimension of logical extent `n` runs either over `0..n` or over
//! `0..⌈n⌉_M`, and `⌈n⌉_M` is that dimension's padded extent (report Def. 7, Lemma 3).
//!
//! **Architecture Invariant:** every padding cell of every buffer is zero between steps (report
//! Theorem 2), except right after a nest whose innermost loop was padded for vectorisation,
//! which the very next step re-zeroes; spec/padding.md says why every other loop that runs over
//! padded extents only ever writes zeros there.

use std::collections::BTreeMap;
use std::fmt;
use teil::ast::{BinOp, ElemType, Func, Func2, RedOp};

/// Index of a buffer in [`Kernel::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufId(pub usize);

/// An index variable. Each label has one logical extent; the lowering gives every dimension it
/// indexes exactly that extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(pub u32);

/// One coordinate of a buffer access (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ix {
    Var(Label),
    Const(u64),
}

/// What a buffer is to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A kernel parameter (report §5 qualifiers; every variable when there are none).
    Param { input: bool, output: bool },
    /// A declared variable that is not a parameter; lives in the workspace.
    Internal,
    /// A private copy of an input-only parameter that the program assigns, so the caller's
    /// buffer is never written.
    InputCopy,
    /// A backend temporary (lifted contraction, hoisted reduction, alias-safe result).
    Temp,
}

#[derive(Clone, Debug)]
pub struct Buffer {
    /// The TeIL variable this buffer holds, if any.
    pub var: Option<String>,
    /// The C identifier.
    pub c_name: String,
    pub role: Role,
    pub logical: Vec<u64>,
    /// `logical` with every extent rounded up to a multiple of M.
    pub padded: Vec<u64>,
    /// Offset into the workspace, in doubles (non-parameters only).
    pub offset: u64,
    /// The element type of the cells: C `double` or `float`. A `float` buffer in the workspace
    /// still reserves one double per cell (its cells take the first half), so that offsets
    /// and the validator's model of the workspace stay in doubles.
    pub elem: ElemType,
}

impl Buffer {
    /// Row-major strides of the padded layout, in elements.
    pub fn strides(&self) -> Vec<u64> {
        let mut s = vec![1u64; self.padded.len()];
        for d in (0..self.padded.len().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * self.padded[d + 1];
        }
        s
    }

    /// Number of doubles in the padded layout.
    pub fn padded_len(&self) -> u64 {
        self.padded.iter().product()
    }

    pub fn logical_len(&self) -> u64 {
        self.logical.iter().product()
    }

    pub fn is_param(&self) -> bool {
        matches!(self.role, Role::Param { .. })
    }
}

/// A scalar value computed inside a loop nest.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Load(BufId, Vec<Ix>),
    Lit(f64),
    Bin(BinOp, Box<Val>, Box<Val>),
    /// The current value of an accumulator of the enclosing nest.
    Acc(u32),
    /// The undefined value `•`, NaN at the boundary (spec/values.md).
    Undefined,
    /// `f x` in the element type of `x`, correctly rounded (spec/values.md, "Functions").
    Func(Func, Box<Val>),
    /// `maximum`/`minimum` (IEEE 754-2019) of two values of one element type.
    Func2(Func2, Box<Val>, Box<Val>),
    /// The value rounded to the element type (C's conversion: to nearest, ties to even).
    /// A binary32 literal is `Convert(F32, Lit(x))` with `x` exactly representable, so the
    /// conversion is exact: every other value of the IR has the type of its operands.
    Convert(ElemType, Box<Val>),
}

impl Val {
    /// The factors `(x, y)` of a product `x * y`.
    pub fn product(&self) -> Option<(&Val, &Val)> {
        match self {
            Val::Bin(BinOp::Mul, x, y) => Some((x, y)),
            _ => None,
        }
    }

    /// The product-then-add pair of an addition that fma mode computes as `fma(x, y, c)`
    /// (spec/values.md, "Fused multiply-add"): `x * y + c`, or `c + x * y`; when both operands
    /// are products, the left one. The one definition the printer and the validator read.
    pub fn fused(&self) -> Option<(&Val, &Val, &Val)> {
        let Val::Bin(BinOp::Add, l, r) = self else {
            return None;
        };
        match (l.product(), r.product()) {
            (Some((x, y)), _) => Some((x, y, r)),
            (None, Some((x, y))) => Some((x, y, l)),
            (None, None) => None,
        }
    }
}

/// The value an accumulator of `op` starts from ([`Node::AccInit`]; a [`Node::Fold`]'s cell
/// is initialised with it): `-0.0`, `1.0`, `-∞` or `+∞`. Folding any `x` into it gives `x`
/// exactly in binary64 (spec/padding.md).
pub fn identity(op: RedOp) -> f64 {
    match op {
        RedOp::Sum => -0.0,
        RedOp::Product => 1.0,
        RedOp::Max => f64::NEG_INFINITY,
        RedOp::Min => f64::INFINITY,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `for (var = start; var < extent; var++)`; `extent > logical` when the loop runs over
    /// the padded extent. `start` is 0 except in loops that re-zero padding.
    Loop {
        var: Label,
        start: u64,
        extent: u64,
        logical: u64,
        body: Vec<Node>,
    },
    /// Declares an accumulator holding the identity of `op` (spec/padding.md explains why
    /// starting from the identity equals the left fold from the first element).
    AccInit { acc: u32, op: RedOp, elem: ElemType },
    /// `acc = acc op value`.
    AccUpdate { acc: u32, op: RedOp, value: Val },
    /// `buf[index] = buf[index] op value`: an accumulator update whose accumulator lives in a
    /// buffer cell instead of a scalar (`crate::opt::interchange` makes these when it moves a
    /// reduction loop outside target loops; spec/padding.md, "Interchanged nests"). The cell
    /// holds the partial fold between updates; a `Store` of the identity of `op` (the literal
    /// [`RedOp`]'s `AccInit` starts from) initialises it, and folding into that literal gives
    /// the folded value exactly, as for accumulators.
    Fold {
        buf: BufId,
        index: Vec<Ix>,
        op: RedOp,
        value: Val,
    },
    Store {
        buf: BufId,
        index: Vec<Ix>,
        value: Val,
    },
    /// No operation: the first node of a loop that folds through an inner loop, which the C
    /// compiler must not unroll-and-jam (`crate::opt::interchange` decides; printed
    /// `teil_no_jam();`, spec/padding.md, "Interchanged nests").
    NoJam,
    /// No operation: the first node of a loop `for r { for c { folds } }` whose inner loop folds
    /// into cells indexed by `c` and not by `r` (every fold into a buffer of its own that no
    /// value reads), printed with this many consecutive iterations of `r` in each pass over the
    /// cells: a cell is loaded once, folds its terms for those iterations in order and is
    /// stored once (`crate::opt::interchange` decides; printed by `print::nest`;
    /// spec/padding.md, "Interchanged nests"). Each cell's folds keep their order and the cells
    /// are independent, so the meaning is exactly the loop, which the validator interprets
    /// after checking that shape.
    JamRows(u64),
    /// A reduction loop along a unit-stride label, printed in lanes (`crate::opt::lanes`
    /// chooses it; spec/padding.md, "Lane reductions" and "Sums in lanes"). For `max`/`min` its
    /// meaning is exactly the loop [`LaneFold::nest`]; a sum's is the association of
    /// [`LaneFold::lane_of`].
    LaneFold(LaneFold),
}

/// `for (var = 0; var < extent; var++) acc = acc op value` with `op` max, min or (where the
/// kernel may reassociate, [`Kernel::reassociate`]) sum, where every load of `value` that
/// depends on `var` reads it with stride 1 and `value` does not read `acc`.
///
/// **Meaning of `max` and `min`.** Exactly the loop [`LaneFold::nest`]: `acc` folds the terms
/// in order, one `teil_max`/`teil_min` at a time, bit for bit (tied zeros keep the earlier, a
/// NaN term is the result until a later NaN term replaces it).
///
/// **Printed** (spec/padding.md, "Lane reductions"): [`LaneFold::LANES`] independent lanes, lane
/// `j` folding the terms `i ≡ j (mod LANES)` of the whole blocks of `LANES` terms from the
/// identity, as vectors of [`LaneFold::WIDTH`] doubles; the lanes then fold into `acc` in lane
/// order and the remaining terms after them. The result `c` has the fold's value (max and min
/// of numbers do not depend on the grouping) and, a nonzero number having one encoding, its
/// bits, unless `c` is a NaN (some term or `acc` was one, and the payload is the last NaN's:
/// the printed code folds the terms into `acc` again one by one, exactly as the meaning) or a
/// zero (no operand exceeds zero, and the fold keeps the first zero: the printed code takes the
/// first zero among `acc` and the terms). Plain C (`teil_vector_bits` 0) prints the meaning
/// itself.
///
/// **Meaning of a sum** (spec/padding.md, "Sums in lanes"; `extent` at least
/// [`LaneFold::LANES`], which the validator requires): another association of the same
/// terms, which the laws of spec/values.md permit and the validator checks, computed the same
/// way by every printed variant: lane `j` (of [`LaneFold::LANES`]) sums the terms
/// `i ≡ j (mod LANES)` of the whole blocks from `-0.0`, in order; the lanes combine as the
/// tree [`LaneFold::TREE`]; `acc` adds the combined sum, then the remaining terms in order.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneFold {
    pub acc: u32,
    pub op: RedOp,
    pub var: Label,
    pub extent: u64,
    pub value: Val,
}

impl LaneFold {
    /// Doubles per vector of the printed lanes (a GCC/Clang vector of 32 bytes on every target
    /// with vectors: two NEON registers, one AVX register, half an AVX-512 register).
    pub const WIDTH: u64 = 4;
    /// Independent lanes: four vectors, so that the dependent operation of each lane overlaps
    /// with the others'.
    pub const LANES: u64 = 16;
    /// How a sum's lanes combine: vector `v` holds lanes `4v .. 4v + 3`; the vectors add
    /// lane-wise as `(v0 + v1) + (v2 + v3)`, then the four lanes of the result as
    /// `(l0 + l1) + (l2 + l3)`. Each entry is a step `lanes[dst] = lanes[dst] + lanes[src]`,
    /// in order; the sum ends in lane 0. The steps between vectors come first, each for all
    /// four lanes of a vector in a row (the printer prints them as vector additions), then the
    /// steps within the first vector.
    pub const TREE: [(usize, usize); 15] = [
        // v0 += v1
        (0, 4),
        (1, 5),
        (2, 6),
        (3, 7),
        // v2 += v3
        (8, 12),
        (9, 13),
        (10, 14),
        (11, 15),
        // v0 += v2
        (0, 8),
        (1, 9),
        (2, 10),
        (3, 11),
        // the lanes of v0
        (0, 1),
        (2, 3),
        (0, 2),
    ];

    /// Whether the printed lanes compute another association than [`LaneFold::nest`]: a sum.
    /// (`max` and `min` give the loop's bits in any grouping, as the type's documentation
    /// argues.)
    pub fn reassociates(&self) -> bool {
        self.op == RedOp::Sum
    }

    /// The loop this node folds: for `max` and `min` its meaning; for a sum the canonical
    /// order of the same terms.
    pub fn nest(&self) -> Node {
        Node::Loop {
            var: self.var,
            start: 0,
            extent: self.extent,
            logical: self.extent,
            body: vec![Node::AccUpdate {
                acc: self.acc,
                op: self.op,
                value: self.value.clone(),
            }],
        }
    }

    /// A sum's lane for the term at index `i`: `Some(i mod LANES)` in the whole blocks of
    /// [`LaneFold::LANES`] terms, `None` for the remaining terms, which `acc` adds in order
    /// after the lanes.
    pub fn lane_of(&self, i: u64) -> Option<usize> {
        (i < self.extent - self.extent % Self::LANES).then_some((i % Self::LANES) as usize)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// One loop nest; `comment` names the TeIL statement it implements.
    Nest { comment: String, body: Vec<Node> },
    /// Copies a whole padded buffer (same shape), padding included.
    Copy {
        comment: String,
        dst: BufId,
        src: BufId,
    },
    /// A contraction kernel (`crate::opt::contract` chooses it; spec/padding.md,
    /// "Contraction kernels"). Its meaning is [`Contraction::nest`] with the cells visited in
    /// the order of its [`Strategy`].
    Contract { comment: String, c: Contraction },
    /// A tiled reduction-free nest (`crate::opt::tile` chooses it; spec/padding.md, "Tiled
    /// nests"). Its meaning is [`Tiled::nest`] with the iterations visited block by block.
    Tiled { comment: String, t: Tiled },
}

impl Step {
    /// The TeIL statement (or backend action) the step implements.
    pub fn comment(&self) -> &str {
        match self {
            Step::Nest { comment, .. }
            | Step::Copy { comment, .. }
            | Step::Contract { comment, .. }
            | Step::Tiled { comment, .. } => comment,
        }
    }
}

/// A buffer access with loop-variable indices, as in [`Val::Load`].
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub buf: BufId,
    pub index: Vec<Ix>,
}

/// A loop of a perfect nest: `for (var = 0; var < extent; var++)`, `logical` as in
/// [`Node::Loop`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub var: Label,
    pub extent: u64,
    pub logical: u64,
}

/// `target[free] = Σ_{k < K} a · b`: a contraction of two loads into a third buffer, or
/// `target[free] = Σ_{k < K} a`, a sum of one load (`b` is `None`: each row of `a` summed).
///
/// **Meaning.** Exactly the plain nest [`Contraction::nest`]:
///
/// ```text
/// for free_1 < n_1 ... for free_r < n_r {      (outermost first, every start 0)
///     acc = -0.0
///     for k < K { acc = acc + a[..] * b[..] }  (acc = acc + a[..] with one operand)
///     target[..] = acc
/// }
/// ```
///
/// The target buffer is no operand's, its index names every free label exactly once
/// and the operands' indices use only free labels, `k` and constants, so no iteration reads a
/// cell another writes: the strategies below visit the cells in other orders (and keep a
/// partial sum in its cell between panels of terms) and compute every cell with the same
/// operations in the same order (`-0.0 + x = x` exactly, binary64 multiplication commutes).
#[derive(Clone, Debug, PartialEq)]
pub struct Contraction {
    /// The target loops, outermost first (extents may be padded).
    pub free: Vec<Bound>,
    /// The summation loop; its extent `K` is the number of terms of every cell (of every
    /// inner sum, in a two-level sum).
    pub k: Bound,
    /// A two-level sum's outer summation loop (`None`: one sum). With `outer = o < O` every
    /// cell is `Σ_o (Σ_k a · b)`: the outer sum starts from `-0.0` and adds, for `o = 0, 1,
    /// ..., O-1` in turn, the inner sum over `k` (from `-0.0`, the products in `k` order), as
    /// [`Contraction::nest`] says.
    pub outer: Option<Bound>,
    pub target: Access,
    pub a: Access,
    /// The second factor of every term; `None`: the terms are `a`'s cells (a sum of one
    /// operand, which only [`Strategy::Dot`] and [`Strategy::LaneSums`] compute).
    pub b: Option<Access>,
    /// The element type of the operands, the target and every sum (one type: the pass takes
    /// only nests of one type, [`arithmetic`]). In binary32 each product and each addition
    /// rounds to binary32, as the nest's does.
    pub elem: ElemType,
    pub strategy: Strategy,
}

/// A target the generated C tells apart at compile time (spec/padding.md, "Contraction
/// kernels"): the printed C chooses, with the preprocessor, the [`Strategy`] variant of its
/// target. The macro `teil_vector_bits` names the target ([`Target::vector_bits`]); unless the
/// compiler's flags define it, the C defines it from the compiler's own target macros
/// ([`Target::condition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// GCC or Clang with `__AVX512F__`: 32 registers of 8 doubles.
    Avx512,
    /// GCC or Clang for AArch64 (`__ARM_NEON` and `__aarch64__`): 32 registers of 2 doubles.
    Neon,
    /// Any other GCC or Clang target: written for AVX and AVX2 (16 registers of 4 doubles);
    /// elsewhere (x86-64 without AVX, for example) the compiler splits the 4-double vectors.
    Avx,
    /// Other compilers, and `-Dteil_portable`: plain C99, no vector extensions.
    Portable,
}

impl Target {
    /// Every target, in the order the printed C tests them (the last one is the fallback).
    pub const ALL: [Target; 4] = [Target::Avx512, Target::Neon, Target::Avx, Target::Portable];

    /// The value of the C macro `teil_vector_bits` that selects this target: the width of the
    /// vectors its kernels are written with, 0 for plain C.
    pub fn vector_bits(self) -> u64 {
        match self {
            Target::Avx512 => 512,
            Target::Neon => 128,
            Target::Avx => 256,
            Target::Portable => 0,
        }
    }

    /// Doubles per vector of the kernels written for this target (1: plain C).
    pub fn width(self) -> u64 {
        self.lanes(ElemType::F64)
    }

    /// Elements of type `elem` per vector of the kernels written for this target (1: plain
    /// C): twice [`Target::width`] for binary32.
    pub fn lanes(self, elem: ElemType) -> u64 {
        (self.vector_bits() / (8 * elem.size() as u64)).max(1)
    }

    /// The C preprocessor condition under which this target is chosen when `teil_vector_bits`
    /// is not given: [`Target::Portable`]'s first, then the others in [`Target::ALL`] order
    /// ([`Target::Avx`]'s holds for every GCC or Clang target that is none of the others).
    pub fn condition(self) -> &'static str {
        match self {
            Target::Avx512 => "defined(__AVX512F__)",
            Target::Neon => "defined(__ARM_NEON) && defined(__aarch64__)",
            Target::Avx => "defined(__GNUC__)",
            Target::Portable => "defined(teil_portable) || !defined(__GNUC__)",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Target::Avx512 => "AVX-512",
            Target::Neon => "NEON",
            Target::Avx => "AVX",
            Target::Portable => "portable C",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The register tile and the panels of a packed product on one [`Target`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Panels {
    pub target: Target,
    /// Rows of the register tile (`MR`).
    pub mr: u64,
    /// Columns of the register tile (`NR`), a multiple of the target's [`Target::lanes`] in
    /// the contraction's type.
    pub nr: u64,
    /// Terms per panel.
    pub kc: u64,
    /// Rows per panel, a multiple of `mr` (or all rows).
    pub mc: u64,
    /// Columns per panel.
    pub nc: u64,
    /// Whether the tiles run row sliver by row sliver (all column slivers of one row sliver,
    /// then the next) instead of column sliver by column sliver: chosen by the contraction
    /// pass where the column panel fits a quarter of L2 (`opt::contract`, `packed`), so that
    /// consecutive tiles store into the same `MR` rows of the target instead of into all `mc`
    /// rows of the row panel at once. Not part of any cell's operations.
    pub rows_outer: bool,
    /// Whether the last row sliver, narrower than `mr` (`m % mr` rows of
    /// [`Strategy::Packed`]), is computed by an edge tile of its own rows instead of the full
    /// tile over zero rows: chosen by the contraction pass where those zero rows would cost
    /// enough multiplications (`opt::contract::EDGE_MIN_WORK`). Not part of any cell's
    /// operations: the zero rows' cells are never stored.
    pub edge: bool,
}

impl Panels {
    /// What decides the order of operations: the tile and the panels, not the target (the
    /// vector width does not change any cell's operations, see [`Strategy::Packed`]).
    pub fn order(&self) -> [u64; 5] {
        [self.mr, self.nr, self.kc, self.mc, self.nc]
    }

    /// Whether a product of `m` rows has one row panel (every row packed once per column
    /// block).
    pub fn one_row_panel(&self, m: u64) -> bool {
        m <= self.mc
    }

    /// Whether the column panel (`kc · nc` elements) fits in `l2_block` elements (a quarter of
    /// L2, [`crate::machine::Sizes::l2_block`] doubles, twice as many floats), so that it can stay in the level-2 cache
    /// while a row sliver's tiles walk all of it, the row sliver in L1.
    pub fn panel_in_l2(&self, l2_block: u64) -> bool {
        self.kc * self.nc <= l2_block
    }
}

/// The dot-product blocking on one [`Target`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lanes {
    pub target: Target,
    /// Cells along the lane label summed side by side.
    pub lanes: u64,
    /// Cells along the row label summed side by side with them (1: the row label, if any, is
    /// an ordinary loop).
    pub rows: u64,
    /// Doubles per vector the block's sums are held in (1: scalars); divides `lanes`. It does
    /// not change any cell's operations (each vector operation is one binary64 operation per
    /// cell), only how they are printed.
    pub width: u64,
}

impl Lanes {
    /// What the printed C depends on: the blocking and the vector width.
    pub fn key(&self) -> [u64; 3] {
        [self.lanes, self.rows, self.width]
    }

    /// How dot products in lanes ([`Strategy::LaneSums`]) block `extent` rows, adjacent or
    /// from separate parts ([`RowBlocks`]).
    pub fn row_blocks(&self, extent: u64, parts: bool) -> RowBlocks {
        let per = self.rows.max(1);
        let count = extent / per;
        let (step, apart) = if parts { (1, count.max(1)) } else { (per, 1) };
        RowBlocks {
            count,
            per,
            step,
            apart,
        }
    }

    /// Where a lane of `n` cells leaves more cells after its last whole block than a block
    /// has vectors, the first cell of the lane's last block, which the vector dot products
    /// compute as a block (the cells it shares with the block before computed again);
    /// otherwise `None`, and those cells are scalars (`print::vector_dot`, spec/padding.md,
    /// "Contraction kernels").
    pub fn last_block(&self, n: u64) -> Option<u64> {
        let rest = n % self.lanes.max(1);
        (rest > self.lanes / self.width.max(1) && n > self.lanes).then(|| n - self.lanes)
    }

    /// The cells a lane of `n` computes: in blocks (its whole blocks, and the lane's last
    /// block where it has one, [`Lanes::last_block`], whose shared cells are computed twice),
    /// and as scalars after the blocks.
    pub fn cells(&self, n: u64) -> (u64, u64) {
        let whole = n - n % self.lanes.max(1);
        match self.last_block(n) {
            Some(_) => (whole + self.lanes, 0),
            None => (whole, n - whole),
        }
    }
}

/// The order in which a [`Contraction`]'s cells are computed. Each strategy lists one variant
/// per [`Target`] (every target exactly once, in [`Target::ALL`] order); the printed C chooses
/// the variant of the target it is compiled for, and the validator interprets every variant
/// (one interpretation per distinct order of operations). Every variant computes every cell
/// with the operations of [`Contraction::nest`] in its order, so the choice cannot change a
/// result.
#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    /// BLIS-style packed matrix product. The free labels are split into `batch` labels (read
    /// by both operands or by neither), `rows` (read by the row operand only) and `cols` (read
    /// by the column operand only); the row operand is `a`, or `b` when `swap`. Within `rows`
    /// and `cols` the labels are listed outermost first and a flat row (column) number
    /// `x < m` (`< n`) stands for the multi-index whose last label varies fastest.
    ///
    /// Order, with the [`Panels`] `MR`, `NR`, `kc`, `mc`, `nc` of the target: for every batch
    /// multi-index (row-major), for column panels `jc = 0, nc, ... < n` of
    /// `ncb = min(nc, n - jc)` columns, for term panels `pc = 0, kc, ... < K` of
    /// `kcb = min(kc, K - pc)` terms, for row panels `ic = 0, mc, ... < m` of
    /// `mcb = min(mc, m - ic)` rows, for column slivers `jr = 0, NR, ... < ncb`, for row slivers
    /// `ir = 0, MR, ... < mcb` (the two sliver loops the other way round where
    /// [`Panels::rows_outer`]): the register tile updates every cell (row `ic + ir + i`,
    /// column `jc + jr + j`, `i < min(MR, mcb - ir)`, `j < min(NR, ncb - jr)`) as
    /// `cell = (pc == 0 ? -0.0 : cell) + a·b (term pc) + ... + a·b (term pc + kcb - 1)`.
    /// The tile's cells are independent: a vector of `w` elements holds `w` cells of one row,
    /// and each vector operation is `w` operations of the contraction's type, one per cell
    /// (binary32 tiles hold floats, [`Contraction::elem`]), so the vector width changes which
    /// cells share an instruction, never a cell's operations or their order.
    Packed {
        swap: bool,
        batch: Vec<Bound>,
        rows: Vec<Bound>,
        cols: Vec<Bound>,
        /// Rows of the product: the product of the row extents.
        m: u64,
        /// Columns of the product: the product of the column extents.
        n: u64,
        /// A two-level sum computed as one sum of its `O · K` terms (term `t` at `o = t / K`,
        /// `k = t % K`, in that order), by the single-sum tile: chosen where the kernel may
        /// reassociate ([`Kernel::reassociate`]), since it is another association of the same
        /// terms (spec/values.md, "Reassociation"). `false`: each inner sum apart, as
        /// [`Contraction::nest`] says.
        flat: bool,
        /// One per target, in [`Target::ALL`] order.
        variants: Vec<Panels>,
    },
    /// Register-blocked dot products along `lane` (a free label), with the target's [`Lanes`]
    /// `lanes`, `rows`: for the other free labels but `inner` (outermost first; `rows_of` too
    /// where `rows` is 1), for blocks of `rows` consecutive indices of `rows_of` (while a whole
    /// block fits its extent, then blocks of one), for blocks of `lanes` consecutive indices of
    /// `lane` (while a whole block fits its extent), for the `inner` labels (outermost first),
    /// every cell of the block is summed over `k = 0 .. K` side by side; then, for each row of
    /// the row block and each index of the `inner` labels, the remaining indices of `lane` one
    /// by one.
    Dot {
        lane: Label,
        /// The free label blocked by `rows` (read by no operand that reads the lane with
        /// unit stride), if any.
        rows_of: Option<Label>,
        /// Free labels whose loops run inside the lane's blocks, in the order of the free
        /// labels (empty where `rows_of` is set): where an operand is transposed
        /// ([`Reads::Rows`]), those along which its rows lie closer than along the lane, so
        /// that consecutive blocks continue the same `lanes` rows instead of reading every row
        /// of the lane in turn (opt::contract, `dot`).
        inner: Vec<Label>,
        /// How `a` and `b` give the terms of a block's cells (it does not change any cell's
        /// operations, only how the vector variants load them).
        /// One per operand, `a`'s first.
        reads: Vec<Reads>,
        /// One per operand, `a`'s first: whether the vector variants fetch the next block's
        /// rows of the operand while a block runs. Only for an operand whose terms are rows
        /// ([`Reads::Rows`]) at most `opt::contract::PREFETCH_MAX_ROW` doubles apart: longer
        /// rows are streams the hardware prefetchers follow. Not part of any cell's operations.
        prefetch: Vec<bool>,
        variants: Vec<Lanes>,
    },
    /// Dot products in lanes, where the kernel may reassociate ([`Kernel::reassociate`]): every
    /// operand reads `k` with unit stride (each cell's terms are a row of it), and **every
    /// cell's sum means the association of a sum in lanes** ([`LaneFold`], spec/padding.md,
    /// "Dot products in lanes"), not the fold of [`Contraction::nest`]: lane `j` of
    /// [`LaneFold::LANES`] adds the terms `k ≡ j (mod LANES)` of the whole blocks from `-0.0`,
    /// in order; the lanes combine as [`LaneFold::TREE`]; the cell is the combined sum plus the
    /// remaining terms in order. Each term is added as the nest adds it (fused in fma mode for
    /// a product). So the variants differ only in which cells share a pass over the terms:
    ///
    /// Order: for the other free labels (outermost first), for the blocks of
    /// [`Lanes::rows`] indices of `rows_of` that [`Lanes::row_blocks`] gives (adjacent rows,
    /// or with `parts` row `b` of each of `rows` equal parts of the extent; then the rows
    /// after the blocks one at a time), the block's cells side by side, each with its
    /// [`Lanes::lanes`] (= [`LaneFold::LANES`]) lanes in vectors of [`Lanes::width`] doubles.
    /// An operand that does not read `rows_of` gives one vector of terms to every cell of a
    /// block: several rows per pass over it.
    LaneSums {
        rows_of: Label,
        /// Whether a block's rows come from separate parts of the rows instead of being
        /// adjacent ([`Lanes::row_blocks`]): where a cell's terms span at most
        /// `opt::contract::ROWS_APART_MAX_BYTES`, so that adjacent rows would interleave
        /// within a page. Not part of any cell's operations.
        parts: bool,
        variants: Vec<Lanes>,
    },
}

/// The row blocks of dot products in lanes ([`Lanes::row_blocks`]): `count` blocks of `per`
/// rows, block `b`'s row `u` being `b · step + u · apart`, then the rows from `count · per` on
/// one at a time. Adjacent rows (`step = per`, `apart = 1`), or, where the strategy says
/// `parts`, rows from `per` parts of `count` consecutive rows (`step = 1`, `apart = count`):
/// block `b` takes row `b` of every part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowBlocks {
    pub count: u64,
    pub per: u64,
    pub step: u64,
    pub apart: u64,
}

impl RowBlocks {
    /// Row `u` of block `b`.
    pub fn row(&self, b: u64, u: u64) -> u64 {
        b * self.step + u * self.apart
    }

    /// The first row after the blocks.
    pub fn rest(&self) -> u64 {
        self.count * self.per
    }
}

/// How an operand of a dot-product block ([`Strategy::Dot`]) gives the terms of its cells,
/// the lane label's consecutive cells `u < width` at term `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reads {
    /// It does not read the lane label: one value for every cell (a broadcast).
    Same,
    /// Unit stride along the lane: the cells' terms are one vector in memory.
    Lane,
    /// Unit stride in `k` (and not along the lane): each cell's terms are a row; a block of
    /// `width` terms is loaded row by row and transposed in registers.
    Rows,
    /// Anything else: the terms are gathered one by one.
    Gather,
}

impl Reads {
    /// Whether an operand with strides `s` can give its terms along `lane` (term label `k`)
    /// this way: what the printed loads assume of the strides.
    pub fn holds(self, s: &Affine, lane: Label, k: Label) -> bool {
        match self {
            Reads::Same => s.get(lane) == 0,
            Reads::Lane => s.get(lane) == 1,
            Reads::Rows => s.get(lane) != 0 && s.get(k) == 1,
            Reads::Gather => true,
        }
    }
}

impl Strategy {
    /// The targets grouped by the order of operations their variants print (one group when
    /// every target computes in the same order), in [`Target::ALL`] order of each group's
    /// first target. The printer prints one branch per group, the validator interprets one.
    pub fn groups(&self) -> Vec<Vec<Target>> {
        let keys: Vec<(Target, Vec<u64>)> = match self {
            Strategy::Packed { variants, .. } => variants
                .iter()
                .map(|v| (v.target, v.order().to_vec()))
                .collect(),
            Strategy::Dot { variants, .. } | Strategy::LaneSums { variants, .. } => variants
                .iter()
                .map(|v| (v.target, v.key().to_vec()))
                .collect(),
        };
        let mut groups: Vec<(Vec<u64>, Vec<Target>)> = Vec::new();
        for (t, key) in keys {
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, ts)) => ts.push(t),
                None => groups.push((key, vec![t])),
            }
        }
        groups.into_iter().map(|(_, ts)| ts).collect()
    }

    /// The targets the variants name, in order.
    pub fn targets(&self) -> Vec<Target> {
        match self {
            Strategy::Packed { variants, .. } => variants.iter().map(|v| v.target).collect(),
            Strategy::Dot { variants, .. } | Strategy::LaneSums { variants, .. } => {
                variants.iter().map(|v| v.target).collect()
            }
        }
    }
}

/// A reduction-free perfect nest `for l_1 ... for l_r { buf[..] = value }` whose store writes
/// every cell once and whose value reads the stored buffer only at the stored cell, so that any
/// order of the iterations computes the same values.
///
/// **Meaning.** Exactly the plain nest [`Tiled::nest`], with the iterations in this order: the
/// loops of `loops` in order, where the loops of `p` and `q` step over blocks of `block`
/// indices (`b = 0, block, ... < extent`); inside all of them the point loops of `q` and then
/// `p`, each over `b .. min(b + block, extent)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tiled {
    /// The loops, outermost first (every start 0).
    pub loops: Vec<Bound>,
    /// The innermost label.
    pub p: Label,
    /// The label some load runs through with unit stride.
    pub q: Label,
    pub block: u64,
    pub store: Access,
    pub value: Val,
}

impl Contraction {
    /// The plain loop nest this contraction means (accumulator 0; a two-level sum's inner
    /// sums in accumulator 1):
    ///
    /// ```text
    /// for free .. {
    ///     acc0 = -0.0
    ///     for o < O {                          (two-level sums only)
    ///         acc1 = -0.0
    ///         for k < K { acc1 = acc1 + a[..] * b[..] }
    ///         acc0 = acc0 + acc1
    ///     }
    ///     target[..] = acc0
    /// }
    /// ```
    pub fn nest(&self) -> Vec<Node> {
        let load = |a: &Access| Box::new(Val::Load(a.buf, a.index.clone()));
        let inner = u32::from(self.outer.is_some());
        let sum = Node::Loop {
            var: self.k.var,
            start: 0,
            extent: self.k.extent,
            logical: self.k.logical,
            body: vec![Node::AccUpdate {
                acc: inner,
                op: RedOp::Sum,
                value: match &self.b {
                    Some(b) => Val::Bin(BinOp::Mul, load(&self.a), load(b)),
                    None => *load(&self.a),
                },
            }],
        };
        let sum = match &self.outer {
            None => sum,
            Some(o) => o.wrap(vec![
                Node::AccInit {
                    acc: 1,
                    op: RedOp::Sum,
                    elem: self.elem,
                },
                sum,
                Node::AccUpdate {
                    acc: 0,
                    op: RedOp::Sum,
                    value: Val::Acc(1),
                },
            ]),
        };
        let mut body = vec![
            Node::AccInit {
                acc: 0,
                op: RedOp::Sum,
                elem: self.elem,
            },
            sum,
            Node::Store {
                buf: self.target.buf,
                index: self.target.index.clone(),
                value: Val::Acc(0),
            },
        ];
        for f in self.free.iter().rev() {
            body = vec![f.wrap(body)];
        }
        body
    }

    /// The operands, `a` first.
    pub fn operands(&self) -> impl Iterator<Item = &Access> {
        std::iter::once(&self.a).chain(&self.b)
    }

    /// Whether some operand is buffer `buf` (a contraction's target never is).
    pub fn reads(&self, buf: BufId) -> bool {
        self.operands().any(|x| x.buf == buf)
    }

    /// Whether every cell keeps its inner sums apart: a two-level sum, unless its packed
    /// product sums it flat ([`Strategy::Packed::flat`]).
    pub fn nested(&self) -> bool {
        self.outer.is_some() && !matches!(self.strategy, Strategy::Packed { flat: true, .. })
    }

    /// The number of terms of every cell: `K`, or `O * K` for a two-level sum, whose term
    /// `t` is the product at `o = t / K`, `k = t % K`.
    pub fn terms(&self) -> u64 {
        self.outer
            .map_or(self.k.extent, |o| o.extent.saturating_mul(self.k.extent))
    }

    /// Elements of the contraction's type in the bytes of one double: 1 in binary64, 2 in
    /// binary32. The kernels' cache and register sizes are counted in doubles.
    pub fn per_double(&self) -> u64 {
        (8 / self.elem.size()) as u64
    }

    /// The terms of a packed product's term panel for the panel size `kc` of its
    /// [`Panels`]: `kc`, or for a two-level sum the largest multiple of `K` not above `kc`
    /// (at least `K`), so that every panel holds whole inner sums.
    pub fn panel_terms(&self, kc: u64) -> u64 {
        match self.outer {
            None => kc,
            Some(_) => {
                let k = self.k.extent.max(1);
                (kc / k).max(1).saturating_mul(k)
            }
        }
    }
}

impl Tiled {
    /// The plain loop nest this tiled nest means.
    pub fn nest(&self) -> Vec<Node> {
        let mut body = vec![Node::Store {
            buf: self.store.buf,
            index: self.store.index.clone(),
            value: self.value.clone(),
        }];
        for l in self.loops.iter().rev() {
            body = vec![l.wrap(body)];
        }
        body
    }
}

impl Bound {
    /// `for (var = 0; var < extent; var++) { body }`.
    pub fn wrap(&self, body: Vec<Node>) -> Node {
        Node::Loop {
            var: self.var,
            start: 0,
            extent: self.extent,
            logical: self.logical,
            body,
        }
    }
}

/// An access's element offset as an affine function of the loop variables:
/// `constant + Σ stride(l) * l`, with the buffer's padded strides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Affine {
    pub by_label: BTreeMap<Label, u64>,
    pub constant: u64,
}

impl Affine {
    pub fn of(k: &Kernel, buf: BufId, index: &[Ix]) -> Affine {
        let strides = k.buffer(buf).strides();
        let mut s = Affine::default();
        for (ix, st) in index.iter().zip(strides) {
            match ix {
                Ix::Var(l) => *s.by_label.entry(*l).or_insert(0) += st,
                Ix::Const(c) => s.constant += c * st,
            }
        }
        s
    }

    /// Whether the offset depends on `l`.
    pub fn has(&self, l: Label) -> bool {
        self.by_label.contains_key(&l)
    }

    /// The stride of `l` (0 if the offset does not depend on it).
    pub fn get(&self, l: Label) -> u64 {
        self.by_label.get(&l).copied().unwrap_or(0)
    }
}

/// A lowered program.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// The padding multiple M.
    pub pad: u64,
    pub buffers: Vec<Buffer>,
    /// The parameters, in declaration order.
    pub params: Vec<BufId>,
    pub steps: Vec<Step>,
    /// Doubles of heap workspace for internal variables and temporaries.
    pub workspace: u64,
    /// How many sum-of-products regions contraction lifting rewrote.
    pub lifted: usize,
    /// Whether the kernel may compute sums in another association than the spec's fold, within
    /// the laws of spec/values.md ([`crate::Options::lift`]): contraction lifting, sums in
    /// lanes ([`LaneFold`]), dot products in lanes ([`Strategy::LaneSums`]) and two-level sums
    /// summed flat ([`Strategy::Packed`]). [`Kernel::reassociates`] says whether it does.
    pub reassociate: bool,
    /// Parallel outer loops: `#pragma omp parallel for` on the outermost loop of every nest and
    /// copy, and per-thread panels in packed contraction kernels (spec/abi.md, "OpenMP"). Only
    /// the printer reads it: the pragmas never change what is computed.
    pub openmp: bool,
    /// Fused multiply-add mode (spec/values.md, "Fused multiply-add"): the product-then-add
    /// pairs of accumulator updates, contraction steps and element-wise additions
    /// ([`Val::fused`]) may be rounded once. The printer writes them as fused multiply-adds;
    /// the validator interprets each as `x * y + c`.
    pub fma: bool,
    /// The sizes the kernel-form passes chose by ([`crate::Options::sizes`]).
    pub sizes: crate::machine::Sizes,
}

impl Kernel {
    pub fn buffer(&self, b: BufId) -> &Buffer {
        &self.buffers[b.0]
    }

    /// The number of innermost operations (stores, accumulator updates and initialisations,
    /// copied elements) the kernel performs: the sum over loop nests of the products of trip
    /// counts. This is the static work measure the contraction-lifting tests assert on.
    pub fn work(&self) -> u128 {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Nest { body, .. } => work(body),
                Step::Copy { src, .. } => u128::from(self.buffer(*src).padded_len()),
                Step::Contract { c, .. } => work(&c.nest()),
                Step::Tiled { t, .. } => work(&t.nest()),
            })
            .sum()
    }

    /// Number of loop nests and copies.
    pub fn step_count(&self) -> usize {
        self.steps.len()
    }
}

/// [`Kernel::work`] of one loop nest.
pub fn work(nodes: &[Node]) -> u128 {
    nodes
        .iter()
        .map(|n| match n {
            Node::Loop {
                start,
                extent,
                body,
                ..
            } => u128::from(extent.saturating_sub(*start)).saturating_mul(work(body)),
            Node::AccInit { .. }
            | Node::AccUpdate { .. }
            | Node::Fold { .. }
            | Node::Store { .. } => 1,
            Node::LaneFold(l) => u128::from(l.extent),
            Node::NoJam | Node::JamRows(_) => 0,
        })
        .fold(0u128, u128::saturating_add)
}

impl Kernel {
    /// Whether some output cell may be computed in another association than the spec's term
    /// (spec/values.md, "Reassociation"): a lifted region, a sum in lanes, dot products in
    /// lanes, or a two-level sum summed flat. Otherwise every value is computed with exactly the interpreter's operations
    /// (spec/padding.md, "Exactness"), bit for bit in exact mode.
    pub fn reassociates(&self) -> bool {
        let mut lanes = false;
        for s in &self.steps {
            if let Step::Contract { c, .. } = s {
                lanes |= matches!(
                    c.strategy,
                    Strategy::LaneSums { .. } | Strategy::Packed { flat: true, .. }
                );
            }
            walk_step(s, &mut |v| {
                if let Visit::Node(Node::LaneFold(l)) = v {
                    lanes |= l.reassociates();
                }
            });
        }
        self.lifted > 0 || lanes
    }

    /// Whether the kernel has a product-then-add pair that fma mode fuses (spec/values.md,
    /// "Fused multiply-add"): a contraction step of two operands, a sum accumulator updated with
    /// a product, or an addition with a product operand ([`Val::fused`]). Independent of [`Kernel::fma`].
    pub fn has_fusable(&self) -> bool {
        let mut found = false;
        for s in &self.steps {
            found |= matches!(s, Step::Contract { c, .. } if c.b.is_some());
            walk_step(s, &mut |v| match v {
                Visit::Node(
                    Node::AccUpdate {
                        op: RedOp::Sum,
                        value,
                        ..
                    }
                    | Node::LaneFold(LaneFold {
                        op: RedOp::Sum,
                        value,
                        ..
                    }),
                ) => found |= value.product().is_some(),
                Visit::Val(v) => found |= v.fused().is_some(),
                _ => {}
            });
        }
        found
    }

    /// The element type of a value: its operands' (the checker gave both operands of an
    /// operation one type), a load's buffer's, a conversion's target; binary64 for a bare
    /// literal, `•` and an accumulator, whose types `accs` gives (an accumulator's
    /// [`Node::AccInit::elem`]; absent: binary64).
    pub fn val_elem(&self, v: &Val, accs: &dyn Fn(u32) -> ElemType) -> ElemType {
        match v {
            Val::Load(b, _) => self.buffer(*b).elem,
            Val::Lit(_) | Val::Undefined => ElemType::F64,
            Val::Acc(a) => accs(*a),
            Val::Convert(t, _) => *t,
            Val::Func(_, a) => self.val_elem(a, accs),
            // A literal operand is binary64 in the IR only beside another binary64 value.
            Val::Bin(_, a, b) | Val::Func2(_, a, b) => {
                match (self.val_elem(a, accs), self.val_elem(b, accs)) {
                    (ElemType::F32, _) | (_, ElemType::F32) => ElemType::F32,
                    _ => ElemType::F64,
                }
            }
        }
    }

    /// Every function the kernel applies, with its element type: the CORE-MATH units a
    /// compiled kernel links (`crate::math`). Accumulators are numbered per nest; each takes
    /// the type its [`Node::AccInit`] declares, which comes before its uses in program order.
    pub fn functions(&self) -> std::collections::BTreeSet<(Func, ElemType)> {
        let mut found = std::collections::BTreeSet::new();
        let mut accs = BTreeMap::new();
        for s in &self.steps {
            walk_step(s, &mut |v| match v {
                Visit::Node(Node::AccInit { acc, elem, .. }) => {
                    accs.insert(*acc, *elem);
                }
                Visit::Val(Val::Func(f, a)) => {
                    let t = self.val_elem(a, &|n| accs.get(&n).copied().unwrap_or(ElemType::F64));
                    found.insert((*f, t));
                }
                _ => {}
            });
        }
        found
    }

    /// Which buffers some step reads or writes.
    pub fn referenced(&self) -> Vec<bool> {
        let mut used = vec![false; self.buffers.len()];
        for s in &self.steps {
            walk_step(s, &mut |e| match e {
                Visit::Load(b, _) | Visit::Store(b, _) => used[b.0] = true,
                Visit::Node(_) | Visit::Val(_) => {}
            });
        }
        used
    }
}

/// What [`walk_step`] shows its visitor.
pub enum Visit<'a> {
    /// A node of a loop nest (before its body).
    Node(&'a Node),
    /// A value (before its operands).
    Val(&'a Val),
    /// A read of a buffer cell (in values, contraction operands and copies).
    Load(BufId, &'a [Ix]),
    /// A write of a buffer cell (stores, contraction targets and copies).
    Store(BufId, &'a [Ix]),
}

/// Visits every node, value and access of a step in program order (a copy reads its source
/// and writes its destination, with an empty index). The one traversal of the IR that
/// read-only passes (buffer use, printer helpers, statistics) share.
pub fn walk_step<'a>(s: &'a Step, f: &mut dyn FnMut(Visit<'a>)) {
    match s {
        Step::Nest { body, .. } => walk_nodes(body, f),
        Step::Copy { dst, src, .. } => {
            f(Visit::Load(*src, &[]));
            f(Visit::Store(*dst, &[]));
        }
        Step::Contract { c, .. } => {
            for x in c.operands() {
                f(Visit::Load(x.buf, &x.index));
            }
            f(Visit::Store(c.target.buf, &c.target.index));
        }
        Step::Tiled { t, .. } => {
            walk_val(&t.value, f);
            f(Visit::Store(t.store.buf, &t.store.index));
        }
    }
}

/// The one element type a loop nest computes in with `+ - * /` and folds only: every buffer it
/// reads or writes and every accumulator has that type, and no value applies a function or a
/// conversion (`None` otherwise, and for a nest that touches no buffer). Contraction steps
/// are chosen only for such nests.
pub fn arithmetic(k: &Kernel, ns: &[Node]) -> Option<ElemType> {
    let mut elem = None;
    let mut plain = true;
    walk_nodes(ns, &mut |v| {
        let e = match v {
            Visit::Load(b, _) | Visit::Store(b, _) => k.buffer(b).elem,
            Visit::Node(Node::AccInit { elem, .. }) => *elem,
            Visit::Val(Val::Func(..) | Val::Func2(..) | Val::Convert(..)) => {
                plain = false;
                return;
            }
            Visit::Node(_) | Visit::Val(_) => return,
        };
        plain &= *elem.get_or_insert(e) == e;
    });
    elem.filter(|_| plain)
}

/// Whether a loop nest computes in binary64 with `+ - * /` and folds only ([`arithmetic`]).
/// The kernel forms written for binary64 vectors only (sums in lanes) and contraction
/// lifting are chosen only for such nests; other nests are printed plain, interchanged or
/// tiled, which keep every cell's operations in either type.
pub fn binary64(k: &Kernel, ns: &[Node]) -> bool {
    arithmetic(k, ns) == Some(ElemType::F64)
}

/// [`walk_step`] over a list of nodes.
pub fn walk_nodes<'a>(ns: &'a [Node], f: &mut dyn FnMut(Visit<'a>)) {
    for n in ns {
        f(Visit::Node(n));
        match n {
            Node::Loop { body, .. } => walk_nodes(body, f),
            Node::AccInit { .. } | Node::NoJam | Node::JamRows(_) => {}
            Node::AccUpdate { value, .. } | Node::LaneFold(LaneFold { value, .. }) => {
                walk_val(value, f)
            }
            Node::Store { buf, index, value } => {
                walk_val(value, f);
                f(Visit::Store(*buf, index));
            }
            Node::Fold {
                buf, index, value, ..
            } => {
                f(Visit::Load(*buf, index));
                walk_val(value, f);
                f(Visit::Store(*buf, index));
            }
        }
    }
}

/// [`walk_step`] over a value.
pub fn walk_val<'a>(v: &'a Val, f: &mut dyn FnMut(Visit<'a>)) {
    f(Visit::Val(v));
    match v {
        Val::Load(b, idx) => f(Visit::Load(*b, idx)),
        Val::Bin(_, a, b) | Val::Func2(_, a, b) => {
            walk_val(a, f);
            walk_val(b, f);
        }
        Val::Func(_, a) | Val::Convert(_, a) => walk_val(a, f),
        Val::Lit(_) | Val::Acc(_) | Val::Undefined => {}
    }
}

/// Visits every buffer reference of a step mutably: the buffer of every load, store, operand,
/// target and copy (the one mutable traversal, for rewrites that rename buffers). The flag says
/// whether the reference is written; a fold's cell, read and written, counts as written.
pub fn walk_buffers_mut(s: &mut Step, f: &mut dyn FnMut(&mut BufId, bool)) {
    fn val(v: &mut Val, f: &mut dyn FnMut(&mut BufId, bool)) {
        match v {
            Val::Load(b, _) => f(b, false),
            Val::Bin(_, a, b) | Val::Func2(_, a, b) => {
                val(a, f);
                val(b, f);
            }
            Val::Func(_, a) | Val::Convert(_, a) => val(a, f),
            Val::Lit(_) | Val::Acc(_) | Val::Undefined => {}
        }
    }
    fn nodes(ns: &mut [Node], f: &mut dyn FnMut(&mut BufId, bool)) {
        for n in ns {
            match n {
                Node::Loop { body, .. } => nodes(body, f),
                Node::AccInit { .. } | Node::NoJam | Node::JamRows(_) => {}
                Node::AccUpdate { value, .. } | Node::LaneFold(LaneFold { value, .. }) => {
                    val(value, f)
                }
                Node::Store { buf, value, .. } => {
                    val(value, f);
                    f(buf, true);
                }
                Node::Fold { buf, value, .. } => {
                    val(value, f);
                    f(buf, true);
                }
            }
        }
    }
    match s {
        Step::Nest { body, .. } => nodes(body, f),
        Step::Copy { dst, src, .. } => {
            f(src, false);
            f(dst, true);
        }
        Step::Contract { c, .. } => {
            f(&mut c.a.buf, false);
            if let Some(b) = &mut c.b {
                f(&mut b.buf, false);
            }
            f(&mut c.target.buf, true);
        }
        Step::Tiled { t, .. } => {
            val(&mut t.value, f);
            f(&mut t.store.buf, true);
        }
    }
}

/// The IR as text (`teil emit-c --ir`, the `tests/lower/` snapshots): one header line per
/// kernel, one line per buffer some step uses or that is a parameter, then the steps. Stable:
/// it depends only on the kernel (buffers are named by their C names, labels by their
/// numbers).
/// An index list in the IR's text form: loop variables `l<n>`, constants as numbers, comma
/// separated (`l0, 3, l2`); the one spelling of [`Kernel`]'s text and the lowering's.
pub fn index_text(idx: &[Ix]) -> String {
    let parts: Vec<String> = idx
        .iter()
        .map(|ix| match ix {
            Ix::Var(l) => format!("l{}", l.0),
            Ix::Const(c) => c.to_string(),
        })
        .collect();
    parts.join(", ")
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "kernel {} (M = {}, workspace {}, lifted {}{}{})",
            self.name,
            self.pad,
            self.workspace,
            self.lifted,
            if self.openmp { ", openmp" } else { "" },
            if self.fma { ", fma" } else { "" }
        )?;
        let used = self.referenced();
        for (i, b) in self.buffers.iter().enumerate() {
            if !used[i] && !self.params.contains(&BufId(i)) {
                continue;
            }
            let role = match b.role {
                Role::Param { input, output } => match (input, output) {
                    (true, true) => "inout".to_string(),
                    (true, false) => "input".to_string(),
                    (false, true) => "output".to_string(),
                    (false, false) => "unused".to_string(),
                },
                Role::Internal => format!("internal at {}", b.offset),
                Role::InputCopy => format!("input copy at {}", b.offset),
                Role::Temp => format!("temporary at {}", b.offset),
            };
            let elem = match b.elem {
                ElemType::F64 => String::new(),
                t => format!(", {t}"),
            };
            writeln!(
                f,
                "  buffer {}: {role}, logical {:?}, padded {:?}{elem}",
                b.c_name, b.logical, b.padded
            )?;
        }
        let t = Text { k: self };
        for s in &self.steps {
            match s {
                Step::Nest { comment, body } => {
                    writeln!(f, "nest // {}", one_line(comment))?;
                    t.nodes(f, body, 1)?;
                }
                Step::Copy { comment, dst, src } => writeln!(
                    f,
                    "copy {} <- {} // {}",
                    t.buf(*dst),
                    t.buf(*src),
                    one_line(comment)
                )?,
                Step::Contract { comment, c } => {
                    let group = |ts: &[Target]| -> String {
                        ts.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
                    };
                    let groups = c.strategy.groups();
                    // A dot-product blocking per group of targets (one if they agree).
                    let blocking = |variants: &[Lanes]| {
                        let one = |v: &Lanes| {
                            let mut s = format!("{} lanes", v.lanes);
                            if v.rows > 1 {
                                s.push_str(&format!(" x {} rows", v.rows));
                            }
                            if v.width > 1 {
                                s.push_str(&format!(" in vectors of {}", v.width));
                            }
                            s
                        };
                        match (groups.len(), variants.first()) {
                            (1, Some(v)) => one(v),
                            _ => groups
                                .iter()
                                .filter_map(|ts| {
                                    let v = variants.iter().find(|v| v.target == ts[0])?;
                                    Some(format!("{}: {}", group(ts), one(v)))
                                })
                                .collect::<Vec<_>>()
                                .join("; "),
                        }
                    };
                    match &c.strategy {
                        Strategy::Packed {
                            swap,
                            batch,
                            rows,
                            cols,
                            m,
                            n,
                            flat,
                            variants,
                        } => {
                            let tiles: Vec<String> = groups
                                .iter()
                                .filter_map(|ts| {
                                    let v = variants.iter().find(|v| v.target == ts[0])?;
                                    Some(format!(
                                        "{}: {}x{} kc {} mc {} nc {}",
                                        group(ts),
                                        v.mr,
                                        v.nr,
                                        v.kc,
                                        v.mc,
                                        v.nc
                                    ))
                                })
                                .collect();
                            // The element type where it is not binary64's default.
                            let elem = match c.elem {
                                ElemType::F64 => String::new(),
                                other => format!("{other} "),
                            };
                            writeln!(
                                f,
                                "contract packed {elem}(rows from {}: {} = {m}, columns: {} = {n}, batch: {}, \
                                 tiles {}{}) // {}",
                                if *swap { "b" } else { "a" },
                                bounds(rows),
                                bounds(cols),
                                bounds(batch),
                                tiles.join("; "),
                                if *flat { ", flat: another association" } else { "" },
                                one_line(comment)
                            )?
                        }
                        Strategy::Dot {
                            lane,
                            rows_of,
                            inner,
                            variants,
                            ..
                        } => {
                            let mut rows =
                                rows_of.map_or(String::new(), |r| format!(", rows l{}", r.0));
                            if !inner.is_empty() {
                                let labels: Vec<String> =
                                    inner.iter().map(|l| format!("l{}", l.0)).collect();
                                rows += &format!(", inside the lane {}", labels.join(" "));
                            }
                            writeln!(
                                f,
                                "contract dot (lane l{}{rows}, {}) // {}",
                                lane.0,
                                blocking(variants),
                                one_line(comment)
                            )?
                        }
                        Strategy::LaneSums {
                            rows_of,
                            parts,
                            variants,
                        } => writeln!(
                            f,
                            "contract lane sums (rows l{}{}, {}, another association) // {}",
                            rows_of.0,
                            if *parts { " in parts" } else { "" },
                            blocking(variants),
                            one_line(comment)
                        )?,
                    }
                    writeln!(
                        f,
                        "  for {}: {} = sum {}{}: a {}{}",
                        bounds(&c.free),
                        t.access(c.target.buf, &c.target.index),
                        c.outer
                            .map_or(String::new(), |o| format!("{}: sum ", bound(&o))),
                        bound(&c.k),
                        t.access(c.a.buf, &c.a.index),
                        c.b.as_ref().map_or(String::new(), |b| format!(
                            " * b {}",
                            t.access(b.buf, &b.index)
                        ))
                    )?;
                }
                Step::Tiled { comment, t: tl } => {
                    writeln!(
                        f,
                        "tiled (p l{}, q l{}, blocks of {}) // {}",
                        tl.p.0,
                        tl.q.0,
                        tl.block,
                        one_line(comment)
                    )?;
                    writeln!(
                        f,
                        "  for {}: {} = {}",
                        bounds(&tl.loops),
                        t.access(tl.store.buf, &tl.store.index),
                        t.val(&tl.value)
                    )?;
                }
            }
        }
        Ok(())
    }
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

fn bound(b: &Bound) -> String {
    if b.extent == b.logical {
        format!("l{} < {}", b.var.0, b.extent)
    } else {
        format!("l{} < {} (logical {})", b.var.0, b.extent, b.logical)
    }
}

fn bounds(bs: &[Bound]) -> String {
    if bs.is_empty() {
        return "()".to_string();
    }
    bs.iter().map(bound).collect::<Vec<_>>().join(", ")
}

struct Text<'k> {
    k: &'k Kernel,
}

impl Text<'_> {
    fn buf(&self, b: BufId) -> String {
        self.k
            .buffers
            .get(b.0)
            .map_or_else(|| format!("#{}", b.0), |b| b.c_name.clone())
    }

    fn access(&self, b: BufId, idx: &[Ix]) -> String {
        format!("{}[{}]", self.buf(b), index_text(idx))
    }

    fn val(&self, v: &Val) -> String {
        match v {
            Val::Load(b, idx) => self.access(*b, idx),
            Val::Lit(x) => format!("{x:?}"),
            Val::Acc(a) => format!("acc{a}"),
            Val::Undefined => "undefined".to_string(),
            Val::Bin(op, a, b) => {
                let sym = op.symbol();
                format!("({} {sym} {})", self.val(a), self.val(b))
            }
            Val::Func(fun, a) => format!("{}({})", fun.keyword(), self.val(a)),
            Val::Func2(fun, a, b) => {
                format!("{}({}, {})", fun.keyword(), self.val(a), self.val(b))
            }
            Val::Convert(t, a) => format!("{t}({})", self.val(a)),
        }
    }

    fn nodes(&self, f: &mut fmt::Formatter<'_>, ns: &[Node], depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        for n in ns {
            match n {
                Node::Loop {
                    var,
                    start,
                    extent,
                    logical,
                    body,
                } => {
                    let note = if extent != logical {
                        format!(" (logical {logical})")
                    } else {
                        String::new()
                    };
                    writeln!(f, "{pad}for l{} in {start}..{extent}{note}", var.0)?;
                    self.nodes(f, body, depth + 1)?;
                }
                Node::AccInit { acc, op, elem } => {
                    let note = match elem {
                        ElemType::F64 => String::new(),
                        t => format!(" in {t}"),
                    };
                    writeln!(f, "{pad}acc{acc} = identity of {op:?}{note}")?
                }
                Node::NoJam => writeln!(f, "{pad}no jam")?,
                Node::JamRows(rows) => writeln!(f, "{pad}jam {rows} rows")?,
                Node::AccUpdate { acc, op, value } => {
                    writeln!(f, "{pad}acc{acc} = {op:?}(acc{acc}, {})", self.val(value))?
                }
                Node::LaneFold(l) => {
                    let note = if l.reassociates() {
                        " (another association)"
                    } else {
                        ""
                    };
                    writeln!(f, "{pad}lanes for l{} in 0..{}{note}", l.var.0, l.extent)?;
                    writeln!(
                        f,
                        "{pad}  acc{} = {:?}(acc{}, {})",
                        l.acc,
                        l.op,
                        l.acc,
                        self.val(&l.value)
                    )?
                }
                Node::Store { buf, index, value } => {
                    writeln!(f, "{pad}{} = {}", self.access(*buf, index), self.val(value))?
                }
                Node::Fold {
                    buf,
                    index,
                    op,
                    value,
                } => {
                    let cell = self.access(*buf, index);
                    writeln!(f, "{pad}{cell} = {op:?}({cell}, {})", self.val(value))?
                }
            }
        }
        Ok(())
    }
}

/// Whether the body `body` of a loop over `var` (without a leading [`Node::JamRows`]) has the
/// shape whose iterations may run several at a time per pass of its inner loop: one loop whose
/// body is folds ([`Node::Fold`]), each into cells indexed by the inner loop's label and not by
/// `var`, into a buffer that no other fold writes and that no folded value reads. Then every
/// cell is folded by one inner iteration only, in the order of `var`, whatever the order of
/// different cells. The one test of that shape, for the pass and the validator.
pub fn jam_shape(var: Label, body: &[Node]) -> bool {
    let [Node::Loop {
        var: inner,
        body: folds,
        ..
    }] = body
    else {
        return false;
    };
    let mut written: Vec<BufId> = Vec::new();
    for n in folds {
        let Node::Fold { buf, index, .. } = n else {
            return false;
        };
        if !index.contains(&Ix::Var(*inner)) || index.contains(&Ix::Var(var)) {
            return false;
        }
        if written.contains(buf) {
            return false;
        }
        written.push(*buf);
    }
    let mut reads_a_cell = false;
    for n in folds {
        if let Node::Fold { value, .. } = n {
            walk_val(value, &mut |v| {
                reads_a_cell |= matches!(v, Visit::Load(b, _) if written.contains(&b));
            });
        }
    }
    !folds.is_empty() && !reads_a_cell
}

/// The loops of a perfect nest starting at 0 (each loop the only node of its parent's body),
/// outermost first, and the body inside the innermost one. Kernel-form passes match the nests
/// they rewrite through this.
pub fn perfect_nest(body: &[Node]) -> (Vec<Bound>, &[Node]) {
    let mut loops = Vec::new();
    let mut nodes = body;
    while let [Node::Loop {
        var,
        start: 0,
        extent,
        logical,
        body,
    }] = nodes
    {
        loops.push(Bound {
            var: *var,
            extent: *extent,
            logical: *logical,
        });
        nodes = body;
    }
    (loops, nodes)
}
