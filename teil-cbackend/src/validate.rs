//! Translation validation of the loop IR (spec/validation.md).
//!
//! [`validate`] runs a lowered [`Kernel`](crate::ir::Kernel) for its concrete shapes over
//! symbolic values ([`teil_interp::symbolic::Sym`]: terms over the input cells), follows exactly
//! what the printed C does, and compares every output cell with the oracle evaluated over the
//! same symbolic domain. Sums and products are compared up to associativity, commutativity and
//! distributivity (the rewrites contraction lifting and loop reordering make); everything else
//! must match operation for operation. It also checks that every padding cell of every buffer
//! ends up provably zero (spec/padding.md, (P2)) and that input-only buffers are left alone
//! (spec/abi.md).
//!
//! The machine models the C closely: parameters are separate buffers (the ABI makes them
//! `restrict`), with the caller's input cells as leaves (`A[1,2]`), unspecified leaves
//! (`?C[1,2]`) in the logical cells of output-only parameters, and zero padding; every other
//! buffer lives at its offset in one zeroed workspace (`calloc`), so overlapping temporaries
//! would be seen. Loops run from `start` to `extent`; an accumulator starts from its operator's
//! identity, and folding `x` into the identity gives `x` (exact in binary64, spec/padding.md).
//! Any access outside a buffer's padded shape, an unbound loop variable or an uninitialised
//! accumulator rejects the kernel ([`ValidationError::Malformed`]).
//!
//! A contraction step has one variant per [`Target`](crate::ir::Target)
//! ([`Strategy`](crate::ir::Strategy)); the printed C runs the variant of the target it is
//! compiled for. The kernel is interpreted once per distinct order of operations ([`orders`]):
//! targets whose variants print the same loops (they differ at most in the vector width of the
//! register tile, and a vector operation is one binary64 operation per cell) share one
//! interpretation, every other target gets its own, and the kernel validates only if every
//! interpretation does.
//!
//! Symbolic evaluation is bounded ([`Limits`]): a program whose evaluation would exceed the
//! bounds is refused with [`ValidationError::TooLarge`], never a hang. Validation is meant for
//! small shapes.
//!
//! The modules follow the printer's shape (`print/`): `machine` (the kernel's memory, the nest
//! being run, every step but a contraction's and a lane fold's, and the comparison with the
//! oracle), `contract` (a contraction's shared checks and its dispatch), one module per kernel
//! form (`packed`, `dot`, `lane_dot`, `tile`, `lanes`), `interpret` (the machine run once per
//! order, against the oracle or on given inputs), `judge` (lifted kernels) and `error`.

mod contract;
mod dot;
mod error;
mod interpret;
mod judge;
mod lane_dot;
mod lanes;
mod machine;
mod packed;
mod tile;

pub use error::{Limits, TooLarge, Validated, ValidationError};
pub use interpret::{evaluate, orders, validate, validate_target, validate_with};
pub use judge::{judge, Judgement};
pub use machine::MachineDomain;
