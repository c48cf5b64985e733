//! Errors of the evaluators.
//!
//! Two classes, as in miri: the caller's fault (an unknown variable, a value of the wrong shape,
//! a program too large for this machine), and internal errors. [`RunError::OutOfBounds`] is the
//! run-time witness of the type-safety theorem (TeIL paper Thm. 4.6): the oracle checks every
//! store access against the allocation's extents, and a checked program must never trigger it.

use teil::ast::ShapeDisplay;

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
    /// The caller supplied a value for a name the program does not declare.
    #[error("`{name}` is not a variable of the program")]
    UnknownVariable { name: String },
    /// The caller supplied a value of the wrong shape.
    #[error(
        "`{name}` is declared with shape {} but the value supplied has shape {}",
        ShapeDisplay(expected),
        ShapeDisplay(found)
    )]
    InputShape {
        name: String,
        expected: Vec<u64>,
        found: Vec<u64>,
    },
    /// A tensor (variable or intermediate) larger than the evaluator's memory limit.
    #[error("`{what}` would need {elements} elements; this evaluator's limit is {limit} (spec/interpreter.md)")]
    TooLarge {
        what: String,
        elements: u64,
        limit: u64,
    },
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
