//! What a validation returns: the bounds it runs within, what it proved, and why it refused.

use crate::ir::*;
use std::fmt;
use teil::ast::ShapeDisplay;
use teil_interp::symbolic::{self, Sym};
use teil_interp::RunError;

/// Bounds on one validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest estimated number of symbolic operations: the oracle's pointwise evaluation in
    /// the steps its work budget counts (`teil_interp::budget::oracle_work`: every cell of every
    /// statement, every node, reductions unrolled) plus the kernel's static work
    /// ([`Kernel::work`]).
    pub max_operations: u128,
    /// Largest number of cells the symbolic machine holds (padded parameters and workspace).
    pub max_cells: u64,
    /// Bounds on the terms themselves (size, nesting, total work).
    pub terms: symbolic::Limits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_operations: 4_000_000,
            max_cells: 1 << 21,
            terms: symbolic::Limits::default(),
        }
    }
}

/// What was checked, for a kernel that validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validated {
    /// The padding multiple M.
    pub pad: u64,
    /// Every parameter (TeIL variable) with its logical shape, in declaration order.
    pub shapes: Vec<(String, Vec<u64>)>,
    /// Output cells compared with the oracle.
    pub output_cells: u64,
    /// Padding cells checked to be zero (all buffers).
    pub padding_cells: u64,
    /// Sum-of-products regions contraction lifting rewrote ([`Kernel::lifted`]).
    pub lifted: usize,
    /// The targets grouped by the order of operations of their variants
    /// ([`orders`](super::orders)): the kernel was interpreted once per group.
    pub orders: Vec<Vec<Target>>,
}

impl fmt::Display for Validated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shapes: Vec<String> = self
            .shapes
            .iter()
            .map(|(v, s)| format!("{v} {}", ShapeDisplay(s)))
            .collect();
        write!(
            f,
            "validated for these shapes: {} with M = {}: {} output cells equal the semantics up \
             to reassociation of + and *, {} padding cells are zero",
            if shapes.is_empty() {
                "no parameters".to_string()
            } else {
                shapes.join(", ")
            },
            self.pad,
            self.output_cells,
            self.padding_cells
        )
    }
}

/// 1-based multi-index as `[1,2]`.
pub(super) struct Cell<'a>(pub(super) &'a [u64]);

impl fmt::Display for Cell<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u64::to_string).collect();
        write!(f, "[{}]", parts.join(","))
    }
}

/// Why a kernel did not validate. Every index is 1-based (as in the semantics); padding cells
/// are indexed in the buffer's padded shape.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ValidationError {
    /// An output cell whose term differs from the semantics.
    #[error(
        "output cell {var}{} differs from the semantics\n  kernel: {kernel}\n  oracle: {oracle}",
        Cell(index)
    )]
    Differs {
        var: String,
        index: Vec<u64>,
        kernel: Sym,
        oracle: Sym,
    },
    /// A padding cell that is not provably zero at the end of the kernel.
    #[error(
        "padding cell {buffer}{} ({}, logical shape {}, padded {}) is not zero at the end\n  kernel: {term}",
        Cell(index),
        role_name(*role),
        ShapeDisplay(logical),
        ShapeDisplay(padded)
    )]
    Padding {
        /// The C name of the buffer.
        buffer: String,
        role: Role,
        index: Vec<u64>,
        logical: Vec<u64>,
        padded: Vec<u64>,
        term: Sym,
    },
    /// A logical cell of an input-only parameter that the kernel changed.
    #[error(
        "the kernel wrote the input-only parameter {var} at {var}{}\n  kernel: {term}",
        Cell(index)
    )]
    InputWritten {
        var: String,
        index: Vec<u64>,
        term: Sym,
    },
    /// The kernel breaks an invariant of the loop IR (an out-of-bounds access, an unbound loop
    /// variable, ...); the C it prints would have undefined behaviour.
    #[error("step {step} ({comment}): {what}")]
    Malformed {
        step: usize,
        comment: String,
        what: String,
    },
    /// The shapes are too large for symbolic evaluation; nothing is known about the kernel.
    #[error("cannot validate: {0}; validation is for small shapes")]
    TooLarge(TooLarge),
    /// The oracle refused the program.
    #[error("cannot validate: the oracle failed: {0}")]
    Oracle(RunError),
}

/// Which of the symbolic evaluation's [`Limits`] a validation would exceed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    /// The estimated operations of the oracle and the kernel together (saturated at
    /// `u64::MAX`, which keeps [`ValidationError`] small).
    #[error("symbolic evaluation would take about {operations} operations, more than the limit of {limit}")]
    Operations { operations: u64, limit: u64 },
    /// The cells of the program's variables or of the kernel's buffers.
    #[error("the program's variables and the kernel's buffers have {cells} cells, more than the limit of {limit}")]
    Cells { cells: u64, limit: u64 },
    /// A cell (`var` of a program, or the C name of a padded buffer) whose term outgrew the
    /// symbolic limits.
    #[error(
        "{}{var}{} needs a term larger than the symbolic limits (spec/validation.md)",
        if *padding { "padding cell " } else { "" },
        Cell(index)
    )]
    Term {
        var: String,
        index: Vec<u64>,
        padding: bool,
    },
}

pub(super) fn role_name(r: Role) -> &'static str {
    match r {
        Role::Param { .. } => "a parameter",
        Role::Internal => "an internal variable",
        Role::InputCopy => "the private copy of an input",
        Role::Temp => "a temporary",
    }
}

impl ValidationError {
    /// Whether the kernel was shown wrong (as opposed to the validation being refused).
    pub fn is_rejection(&self) -> bool {
        matches!(
            self,
            ValidationError::Differs { .. }
                | ValidationError::Padding { .. }
                | ValidationError::InputWritten { .. }
                | ValidationError::Malformed { .. }
        )
    }
}
