//! Errors of the evaluators.
//!
//! Three classes, as in miri: the caller's fault (an unknown variable, a value of the wrong
//! shape), resource exhaustion (a budget of [`crate::budget`] exceeded, memory exhausted, the run
//! interrupted; each with a stable code, [`RunError::code`]), and internal errors. [`RunError::OutOfBounds`] is the
//! run-time witness of the type-safety theorem (TeIL paper Thm. 4.6): the oracle checks every
//! store access against the allocation's extents, and a checked program must never trigger it.

use teil::ast::ShapeDisplay;
use teil::{Code, CodedError};

/// Which kind of store access went out of bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Read => "read",
            Access::Write => "write",
        })
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The type-safety witness: an access outside the allocation (1-based `index`).
    #[error(
        "internal error: out-of-bounds {access} of `{var}` at {} (extents {}); a checked program \
         must never do this, please report it",
        ShapeDisplay(index),
        ShapeDisplay(extents)
    )]
    OutOfBounds {
        access: Access,
        var: String,
        index: Vec<u64>,
        extents: Vec<u64>,
    },
    /// Any other broken invariant of the evaluator (a bug, never the user's fault).
    #[error("internal error: {0}")]
    Internal(String),
    /// The caller supplied a value for a name the program does not declare (E0601), or one of
    /// the wrong shape (E0603): [`teil::interface::initial_shape`].
    #[error(transparent)]
    Interface(#[from] teil::interface::InterfaceError),
    /// The run's estimated memory is over the budget (E0701); nothing was allocated.
    #[error(
        "{who} needs an estimated {} of memory, over the memory budget of {}; the largest \
         tensor is {largest} with {largest_cells} cells ({})",
        Bytes(*bytes),
        Bytes(*budget),
        Bytes(largest_cells.saturating_mul(8))
    )]
    OverMemory {
        who: &'static str,
        bytes: u64,
        budget: u64,
        largest: String,
        largest_cells: u64,
    },
    /// The run's estimated work is over the budget (E0702); nothing was evaluated.
    #[error(
        "{who} needs {} evaluation steps, over the work budget of {budget}",
        Count(*work)
    )]
    OverWork {
        who: &'static str,
        work: u64,
        budget: u64,
    },
    /// An allocation failed although the estimate was within the budget (E0703).
    #[error("out of memory: cannot allocate {} for {what}", Bytes(*bytes))]
    OutOfMemory { what: String, bytes: u64 },
    /// The caller set the budget's cancellation flag (E0704).
    #[error("interrupted")]
    Interrupted,
    /// `teil trace` would print more than the output budget (E0705).
    #[error(
        "the trace would print more than the output budget of {} ({} by its line {lines})",
        Bytes(*budget),
        Bytes(*bytes)
    )]
    OverOutput { budget: u64, lines: u64, bytes: u64 },
    /// An expression nested deeper than `teil::limits::MAX_EXPR_DEPTH`.
    #[error("a right-hand side is nested {depth} levels deep; the limit is {limit}")]
    TooDeep { depth: usize, limit: usize },
}

impl RunError {
    /// Whether the error is a bug in the evaluator rather than a problem with the input.
    pub fn is_internal(&self) -> bool {
        matches!(self, RunError::OutOfBounds { .. } | RunError::Internal(_))
    }
}

/// The stable code of a budget or resource error (spec/diagnostics.md, E07xx), or of the
/// caller's inputs (E06xx).
impl CodedError for RunError {
    fn code(&self) -> Option<Code> {
        Some(match self {
            RunError::OverMemory { .. } => Code::MemoryBudget,
            RunError::OverWork { .. } => Code::WorkBudget,
            RunError::OutOfMemory { .. } => Code::OutOfMemory,
            RunError::Interrupted => Code::Interrupted,
            RunError::OverOutput { .. } => Code::OutputBudget,
            RunError::Interface(e) => return e.code(),
            _ => return None,
        })
    }
}

/// A count for messages: saturated counts (`u64::MAX`) read `2^64 - 1 or more`.
pub struct Count(pub u64);

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            u64::MAX => f.write_str("2^64 - 1 or more"),
            n => write!(f, "{n}"),
        }
    }
}

pub use teil::diagnostic::Bytes;
