//! Performance optimisations of the C backend (issue 7, PERFORMANCE.md), as passes in two
//! groups, composed by [`lower_tuned`] as [`Tuning`] says:
//!
//! - **Scheduling passes** over the lowering's tensor-level assignments (`crate::lower`'s
//!   intermediate form), composed by `schedule`: `hoist` (reductions that do not depend on
//!   some enclosing loop variable, into temporaries), `lift` (contraction lifting, with the
//!   planner of [`teil::plan`]) and `split` (the inner sums of nested sums, into temporaries). Each
//!   is `fn run(&mut Context, &mut Assign, ..)`: it rewrites one assignment's value and adds the
//!   assignments of the temporaries it creates to the assignment's `pre`, through the
//!   lowering's one temporary-making function.
//! - **Kernel-form passes** over the loop IR, composed by [`pipeline`]: [`contract::run`]
//!   (contraction steps with their strategy), [`interchange::run`] (loop orders of nests
//!   with reductions) with [`lanes::run`] (max/min reductions in lanes) and [`tile::run`]
//!   (tiled nests), each
//!   `fn run(&mut Kernel)`. The printer prints what they chose and the validator interprets
//!   it; neither recognises anything again.
//!
//! Every optimisation here is *exact* — the generated C computes every cell with the same
//! operations in the same order as the unoptimised loop nest (spec/padding.md, "Scheduling",
//! "Contraction kernels" and "Tiled nests") — except contraction lifting, which reassociates
//! within the laws of spec/values.md and is switched by [`Options::lift`]. [`Tuning`] switches
//! the others individually, so that the benchmark can show what each one gains and the tests
//! can compare optimised and plain kernels bit for bit.

pub mod contract;
pub(crate) mod hoist;
pub mod interchange;
pub mod lanes;
pub(crate) mod lift;
pub(crate) mod split;
#[cfg(test)]
mod testing;
pub mod tile;

use crate::ir::{Kernel, Step, Strategy};
use crate::lower::{self, Assign, Context};
use crate::{Error, Options};
use teil::CheckedProgram;

/// Which optimisations [`lower_tuned`] applies. [`crate::lower()`] uses [`Tuning::default`]:
/// all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Contractions of two operands become contraction steps ([`contract::run`]): a packed,
    /// register-blocked matrix-multiplication kernel or register-blocked dot products (so do
    /// sums of one operand along its rows); and a diagonal read again for every index of some
    /// loop is copied once into consecutive cells of a temporary first (`hoist`), so that the
    /// kernels read it with unit stride.
    pub contract: bool,
    /// Contraction lifting (`lift`, when [`Options::lift`] allows it) compares plans by counting
    /// multiplications and additions instead of loop iterations, so that a fused nest that
    /// multiplies three or more factors per iteration loses to pairwise contractions of the
    /// same iteration count (the MTTKRP of PERFORMANCE.md). Changes which programs are lifted,
    /// so it only acts where reassociation is allowed anyway.
    pub order: bool,
    /// A sum whose body is a sum of products of two operands or a sum of one (`Σ_i Σ_j a * b`,
    /// `Σ_i Σ_j a`) computes the inner sums into a temporary first (`split`), one cell per
    /// outer index: the same operations in the same order, and the inner sums become a
    /// contraction nest (exact).
    pub split: bool,
    /// Reduction-free nests whose store and some load run through memory in different orders
    /// (transpositions) become tiled steps ([`tile::run`]).
    pub tile: bool,
    /// Nests with reductions that are not contraction steps get the loop order whose innermost
    /// loop walks memory most closely ([`interchange::run`]): a reduction loop moves outside
    /// target loops (partial results in the target's cells), or a target loop moves into the
    /// reductions (their accumulators in rows of a temporary). The `max`/`min` reductions left
    /// innermost along a unit-stride label are computed in lanes ([`lanes::run`]).
    pub interchange: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            contract: true,
            order: true,
            split: true,
            tile: true,
            interchange: true,
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
        }
    }
}

/// Lowers with the given optimisations: the lowering's assignments, each scheduled
/// (`schedule`) just before it is emitted as loop nests, then the kernel-form [`pipeline`].
pub fn lower_tuned(p: &CheckedProgram, opts: &Options, t: &Tuning) -> Result<Kernel, Error> {
    let mut k = lower::assignments(p, opts)?.emit(&mut |cx, a| schedule(cx, a, t))?;
    pipeline(&mut k, t);
    Ok(k)
}

/// The scheduling passes on one assignment, as `t` switches them: hoisting; contraction
/// lifting where the assignment allows it ([`Assign::lift`], from [`Options::lift`]), then
/// hoisting again (lifting can leave reductions that no longer depend on every loop
/// variable); splitting nested sums. Then the same for every temporary they created, in
/// creation order, depth first, so that each temporary's assignment is rewritten like a
/// statement's before any later one is made.
fn schedule(cx: &mut Context, a: &mut Assign, t: &Tuning) -> Result<(), Error> {
    hoist::run(cx, a, t.contract)?;
    // Lifting reassociates within binary64's laws (spec/values.md); binary32 sums and
    // functions keep the spec's order.
    if a.lift && cx.binary64(&a.value) {
        lift::run(cx, a, t.order)?;
        hoist::run(cx, a, t.contract)?;
    }
    if t.split {
        split::run(cx, a)?;
    }
    for p in &mut a.pre {
        schedule(cx, p, t)?;
    }
    Ok(())
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
        lanes::run(k);
    }
    if t.tile {
        tile::run(k);
    }
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
    /// A contraction step with [`Strategy::LaneSums`].
    LaneSums,
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
                Strategy::LaneSums { .. } => Printing::LaneSums,
            },
            Step::Tiled { .. } => Printing::Tiled,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_are_named_in_the_order_scheduling_and_emission_make_them() {
        // The hoisted sum (tmp0) is made while scheduling the statement; the alias temporary
        // (tmp1) while emitting it, after the statement's own temporaries.
        let (p, _) = teil::compile(
            "inout var A : [2 2]\ninput var w : [3]\n\
             A = A ^[1 2] * expa 1 2 (expa 1 2 (red+ 1 w))",
        )
        .expect("checks");
        let k = lower_tuned(&p, &Options::default(), &Tuning::default()).expect("lowers");
        assert_eq!(
            k.to_string(),
            concat!(
                "kernel teil_kernel (M = 1, workspace 16, lifted 0)\n",
                "  buffer A: inout, logical [2, 2], padded [2, 2]\n",
                "  buffer w: input, logical [3], padded [3]\n",
                "  buffer tmp0: temporary at 0, logical [], padded []\n",
                "  buffer tmp1: temporary at 8, logical [2, 2], padded [2, 2]\n",
                "nest // hoisted reduction for: A = A ^[1 2] * expa 1 2 (expa 1 2 (red+ 1 w))\n",
                "  acc0 = identity of Sum\n",
                "  for l2 in 0..3\n",
                "    acc0 = Sum(acc0, w[l2])\n",
                "  tmp0[] = acc0\n",
                "nest // A = A ^[1 2] * expa 1 2 (expa 1 2 (red+ 1 w))  (into a temporary: the right-hand side reads `A` at other indices)\n",
                "  for l0 in 0..2\n",
                "    for l1 in 0..2\n",
                "      tmp1[l0, l1] = (A[l1, l0] * tmp0[])\n",
                "copy A <- tmp1 // A = A ^[1 2] * expa 1 2 (expa 1 2 (red+ 1 w))  (copy back)\n",
            )
        );
    }
}
