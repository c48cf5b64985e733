//! Guard front ends: other tensor languages lowered to TeIL, so that TeIL's checker guards them
//! (TeIL paper §1, Fig. 1).
//!
//! - [`einsum()`]: a NumPy-style einsum equation with the operands' shapes; [`einsum_outcome()`]
//!   also gives the result's shape where an operand has an extent of 0 and no program exists;
//!   [`einsum_elem()`] and [`einsum_outcome_elem()`] declare the program's variables of another
//!   element type (`f32`) than `f64`;
//! - [`index_notation()`]: TACO / Tensor Comprehensions style index notation (`.tin` files:
//!   TeIL declarations, then statements such as `A(i, j) = B(i, j, k) * C(k)`);
//! - [`load()`]: what `teil check`, `teil run` and `teil emit-c` call on a file, dispatching on
//!   the `.tin` extension.
//!
//! **Architecture Invariant:** a front end builds an ordinary [`crate::ast::Program`] and hands
//! it to [`crate::check()`]; the only way out of this module with a program is a
//! [`CheckedProgram`]. A bug in a front end can make it emit the wrong program, or a program
//! the checker rejects, but never an unchecked one. The front ends' own diagnostics point into
//! their own source (the equation, the `.tin` text), and so do the checker's, because every
//! generated node carries the span of the source it stands for.
//!
//! The shared lowering (pairwise contraction in the planner's order, diagonals, alignment) lives in
//! `lower.rs`; spec/frontends.md states the semantics. Both front ends report
//! [`FrontEndError`]s, worded into diagnostics in one place, [`error`].

mod einsum;
pub mod error;
mod lower;
mod tin;

pub use einsum::{
    einsum, einsum_elem, einsum_outcome, einsum_outcome_elem, normalize as normalize_equation,
    parse_shapes, EinsumOutcome,
};
pub use error::FrontEndError;
pub use tin::index_notation;

use crate::check::CheckedProgram;
use crate::diagnostic::Diagnostic;

/// Most operands an einsum equation may have (E0409). NumPy's limit is of the same order; the
/// planner's greedy pairing above ten operands is quadratic in the operands per step.
pub const MAX_EINSUM_OPERANDS: usize = 64;

/// Whether `name` (a path, or `<stdin>`) holds index notation rather than TeIL.
pub fn is_index_notation(name: &str) -> bool {
    std::path::Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tin"))
}

/// Parses and checks a program file: index notation when `name` ends in `.tin`, TeIL
/// otherwise. `Ok` carries the checked program and its warnings; `Err` every diagnostic, at
/// least one an error. Diagnostics point into `text` either way.
pub fn load(name: &str, text: &str) -> Result<(CheckedProgram, Vec<Diagnostic>), Vec<Diagnostic>> {
    if is_index_notation(name) {
        index_notation(text)
    } else {
        crate::compile(text)
    }
}
