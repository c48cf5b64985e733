//! Performance optimisations of the C backend (issue 7, PERFORMANCE.md).
//!
//! The passes that choose the kernel forms of the loop IR: [`contract::run`] (contraction
//! steps with their strategy) and [`tile::run`] (tiled nests), each `fn run(&mut Kernel)`,
//! composed by [`pipeline`] as [`Tuning`] says. The printer prints what they chose and the
//! validator interprets it; neither recognises anything again.
//!
//! Every optimisation here is *exact*: the generated C computes every cell with the same
//! operations in the same order as the unoptimised loop nest (spec/padding.md, "Contraction
//! kernels" and "Tiled nests"). [`Tuning`] switches them individually, so that the benchmark can
//! show what each one gains and the tests can compare optimised and plain kernels bit for bit.

pub mod contract;
pub mod interchange;
pub mod tile;

use crate::ir::{Kernel, Step, Strategy};
use crate::{Error, Options};
use teil::CheckedProgram;

/// Which optimisations [`lower_tuned`] applies. [`crate::lower`] uses [`Tuning::default`]:
/// all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Contractions of two operands become contraction steps ([`contract::run`]): a packed,
    /// register-blocked matrix-multiplication kernel or register-blocked dot products.
    pub contract: bool,
    /// Contraction lifting (when [`Options::lift`] allows it) compares plans by counting
    /// multiplications and additions instead of loop iterations, so that a fused nest that
    /// multiplies three or more factors per iteration loses to pairwise contractions of the
    /// same iteration count (the MTTKRP of PERFORMANCE.md). Changes which programs are lifted,
    /// so it only acts where reassociation is allowed anyway.
    pub order: bool,
    /// A sum whose body is a sum of products of two operands (`Σ_i Σ_j a * b`) computes the
    /// inner sums into a temporary first, one cell per outer index: the same operations in
    /// the same order, and the inner sums become a contraction nest (exact).
    pub split: bool,
    /// Reduction-free nests whose store and some load run through memory in different orders
    /// (transpositions) become tiled steps ([`tile::run`]).
    pub tile: bool,
    /// Nests with reductions that are not contraction steps get the loop order whose innermost
    /// loop walks memory most closely ([`interchange::run`]): a reduction loop moves outside
    /// target loops (partial results in the target's cells), or a target loop moves into the
    /// reductions (their accumulators in rows of a temporary).
    pub interchange: bool,
    /// Parallel outer loops: `#pragma omp parallel for` on the outermost loop of every nest
    /// and copy, and per-thread row panels in the packed contraction kernel. Off by default;
    /// the C must then be compiled with `-fopenmp` (spec/abi.md, "OpenMP").
    pub openmp: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            contract: true,
            order: true,
            split: true,
            tile: true,
            interchange: true,
            openmp: false,
        }
    }
}

impl Tuning {
    /// No optimisation: the loop nests of issue 4.
    pub fn none() -> Self {
        Tuning {
            contract: false,
            order: false,
            split: false,
            tile: false,
            interchange: false,
            openmp: false,
        }
    }
}

/// Lowers with the given optimisations.
pub fn lower_tuned(p: &CheckedProgram, opts: &Options, t: &Tuning) -> Result<Kernel, Error> {
    let rewrites = crate::lower::Rewrites {
        order: t.order,
        split: t.split,
    };
    let mut k = crate::lower::lower_kernel(p, opts, rewrites)?;
    pipeline(&mut k, t);
    Ok(k)
}

/// Lowers without any optimisation of this module (the baseline of PERFORMANCE.md).
pub fn lower_plain(p: &CheckedProgram, opts: &Options) -> Result<Kernel, Error> {
    lower_tuned(p, opts, &Tuning::none())
}

/// The kernel-form passes, in order, as `t` switches them (contraction steps first: a nest is
/// never two of them; interchange acts only on nests with reductions, tiling only on nests
/// without).
pub fn pipeline(k: &mut Kernel, t: &Tuning) {
    if t.contract {
        contract::run(k);
    }
    if t.interchange {
        interchange::run(k);
    }
    if t.tile {
        tile::run(k);
    }
    k.openmp = t.openmp;
}

/// How a step of a kernel is printed (a summary of the step kinds, for tests and statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printing {
    /// As written: the loop nest, or the copy loop.
    Plain,
    /// A contraction step with [`Strategy::Packed`].
    Packed,
    /// A contraction step with [`Strategy::Dot`].
    Dot,
    /// A tiled step.
    Tiled,
}

/// How each step of `k` is printed, in order (read off the steps).
pub fn printing(k: &Kernel) -> Vec<Printing> {
    k.steps
        .iter()
        .map(|s| match s {
            Step::Nest { .. } | Step::Copy { .. } => Printing::Plain,
            Step::Contract { c, .. } => match c.strategy {
                Strategy::Packed { .. } => Printing::Packed,
                Strategy::Dot { .. } => Printing::Dot,
            },
            Step::Tiled { .. } => Printing::Tiled,
        })
        .collect()
}
