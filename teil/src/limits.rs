//! Implementation limits (spec/limits.md). Each one turns an input that would otherwise exhaust
//! memory, the stack or 64-bit index arithmetic into a diagnostic with its own code.

/// Most dimensions a declared tensor or an intermediate expression may have (E0104, E0310).
pub const MAX_RANK: usize = 32;

/// Most elements a declared tensor may have (E0103): like every index space, it must be
/// addressable with signed 64-bit arithmetic. Whether a run can allocate it is a question for
/// the evaluators' memory budget (spec/limits.md, "Evaluation budgets"), not for the checker.
pub const MAX_DECL_ELEMENTS: u64 = i64::MAX as u64;

/// Most elements in the index space of any intermediate expression: it must be addressable with
/// signed 64-bit arithmetic (E0309).
pub const MAX_EXPR_ELEMENTS: u64 = i64::MAX as u64;

/// Bound on the nesting depth of one right-hand side, as computed conservatively by the parser
/// (E0005). Every recursive pass over expressions stays within this depth.
pub const MAX_EXPR_DEPTH: usize = 512;
