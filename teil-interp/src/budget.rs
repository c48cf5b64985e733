//! Evaluation budgets: how much memory, work and trace output a run may use, the estimators
//! that predict them from the checked program's shapes before anything is allocated, and the
//! cancellation flag the evaluators poll (spec/limits.md, "Evaluation budgets").
//!
//! Every consumer (the `teil` command, the fuzzer, the Python binding) takes its limits from a
//! [`Budget`] and asks the estimators here, so a limit is decided in one place:
//!
//! - **memory** ([`Budget::max_memory`], bytes): [`oracle_bytes`] and [`fast_bytes`] add the
//!   inputs, the store and the largest values the evaluator materialises; a run whose estimate
//!   is over the budget is refused with [`RunError::OverMemory`] (E0701) before allocating.
//!   Allocations whose size user data decides are fallible besides ([`try_vec`]), so running out
//!   of memory below the budget (an `RLIMIT_AS`, another process) is [`RunError::OutOfMemory`]
//!   (E0703), never an abort.
//! - **work** ([`Budget::max_work`], evaluation steps): the oracle evaluates pointwise without
//!   sharing, so its cost is exact and computable from the shapes: [`oracle_work`] counts the
//!   calls of `Oracle::eval` a run makes. Over the budget it is [`RunError::OverWork`] (E0702).
//!   The fast evaluator's work is polynomial in the shapes and bounded by the memory it may use;
//!   it has no work budget.
//! - **output** ([`Budget::max_output`], bytes): what `teil trace` may print (E0705).
//! - **cancellation** ([`Budget::cancel`]): a flag another thread sets; the evaluators poll it
//!   per statement and every [`POLL_STEPS`] steps and stop with [`RunError::Interrupted`]
//!   (E0704).

use crate::error::RunError;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use teil::ast::{BinOp, Expr, ExprKind};
use teil::CheckedProgram;

/// The default work budget: 10^8 oracle steps, a few seconds. A release build of the oracle
/// makes about 6.5·10^7 steps a second under `teil run --backend oracle` and 1.1·10^8 for the
/// values of `teil trace` (one `eval` call each, which allocates its multi-index; CPU time on
/// the 2-core development machine, spec/limits.md), so the default admits up to about 1.5 s of
/// CPU (a few seconds of wall-clock time on a loaded machine, or in the test profile's build)
/// and refuses at once anything larger: a default must not let a 270-byte program keep `teil
/// trace` busy for a minute (issue 23). `--max-work` raises it.
pub const DEFAULT_MAX_WORK: u64 = 100_000_000;

/// The default output budget of `teil trace`: 16 MiB of text.
pub const DEFAULT_MAX_OUTPUT: u64 = 16 << 20;

/// The memory budget when the machine's memory cannot be read: 4 GiB.
pub const FALLBACK_MAX_MEMORY: u64 = 4 << 30;

/// The evaluators poll the cancellation flag every this many steps (and per statement).
pub const POLL_STEPS: u64 = 1 << 16;

/// Bytes of one cell: the fast evaluator's `f64`, the boundary's tensors.
const F64_BYTES: u64 = 8;

/// Bytes of one cell of the oracle's store (`Val`, an `f64` with a tag).
const VAL_BYTES: u64 = std::mem::size_of::<crate::Val>() as u64;

/// The limits of one run. `Budget::default()` is what `teil` uses without flags.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Bytes a run may allocate (estimated up front, see [`fast_bytes`] and [`oracle_bytes`]).
    pub max_memory: u64,
    /// Evaluation steps the oracle (and the values of `teil trace`) may take ([`oracle_work`]).
    pub max_work: u64,
    /// Bytes `teil trace` may print.
    pub max_output: u64,
    /// Set it (from any thread) to stop a run with [`RunError::Interrupted`].
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_memory: default_max_memory(),
            max_work: DEFAULT_MAX_WORK,
            max_output: DEFAULT_MAX_OUTPUT,
            cancel: None,
        }
    }
}

impl Budget {
    /// No limit but the machine's: every budget at `u64::MAX`, no cancellation flag. Allocation
    /// failures are still reported as [`RunError::OutOfMemory`].
    pub fn unlimited() -> Self {
        Budget {
            max_memory: u64::MAX,
            max_work: u64::MAX,
            max_output: u64::MAX,
            cancel: None,
        }
    }

    /// This budget with a cancellation flag.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// [`RunError::Interrupted`] once the cancellation flag is set.
    pub fn check_cancel(&self) -> Result<(), RunError> {
        match &self.cancel {
            Some(f) if f.load(Ordering::Relaxed) => Err(RunError::Interrupted),
            _ => Ok(()),
        }
    }

    /// Refuses `estimate` when it is over the memory budget.
    pub fn check_memory(&self, estimate: &MemoryEstimate) -> Result<(), RunError> {
        if estimate.bytes > self.max_memory {
            return Err(RunError::OverMemory {
                who: estimate.who,
                bytes: estimate.bytes,
                budget: self.max_memory,
                largest: estimate.largest.clone(),
                largest_cells: estimate.largest_cells,
            });
        }
        Ok(())
    }

    /// Refuses `work` oracle steps when they are over the work budget.
    pub fn check_work(&self, who: &'static str, work: u64) -> Result<(), RunError> {
        if work > self.max_work {
            return Err(RunError::OverWork {
                who,
                work,
                budget: self.max_work,
            });
        }
        Ok(())
    }
}

/// Half of the machine's memory (`MemTotal` of /proc/meminfo), and at most half of the
/// process's address-space limit (`RLIMIT_AS`, from /proc/self/limits) when one is set;
/// [`FALLBACK_MAX_MEMORY`] when neither can be read. Read once per process.
pub fn default_max_memory() -> u64 {
    static MEMORY: OnceLock<u64> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        let physical = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| meminfo_total(&s));
        let limit = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|s| address_space_limit(&s));
        match (physical, limit) {
            (None, None) => FALLBACK_MAX_MEMORY,
            (p, l) => p.unwrap_or(u64::MAX).min(l.unwrap_or(u64::MAX)) / 2,
        }
    })
}

/// `MemTotal` in bytes from the text of /proc/meminfo.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The soft address-space limit in bytes from the text of /proc/self/limits (`None` when
/// unlimited).
fn address_space_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// A memory estimate: the total, who needs it, and the largest tensor in it (for the message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// The evaluator (or step) the estimate is for, e.g. "the oracle".
    pub who: &'static str,
    pub bytes: u64,
    /// The largest tensor counted (a variable's name, or "an intermediate of `x = ...`").
    pub largest: String,
    pub largest_cells: u64,
}

impl MemoryEstimate {
    fn new(who: &'static str) -> Self {
        MemoryEstimate {
            who,
            bytes: 0,
            largest: String::new(),
            largest_cells: 0,
        }
    }

    /// Adds `count` tensors of `cells` cells of `width` bytes.
    fn add(&mut self, what: impl FnOnce() -> String, cells: u64, width: u64, count: u64) {
        self.bytes = self
            .bytes
            .saturating_add(cells.saturating_mul(width).saturating_mul(count));
        if cells > self.largest_cells || self.largest.is_empty() {
            self.largest = what();
            self.largest_cells = cells;
        }
    }
}

/// The number of cells of a shape, saturating at `u64::MAX`.
pub fn cells(extents: &[u64]) -> u64 {
    extents.iter().fold(1u64, |acc, &n| acc.saturating_mul(n))
}

/// The cells of every declared variable and of those the caller supplies (`is_input`).
fn store_cells(p: &CheckedProgram, est: &mut MemoryEstimate, width: u64) {
    for d in &p.program().decls {
        let n = cells(&d.shape());
        // The caller's tensor (f64) lives beside the evaluator's copy of it.
        let copies = if p.is_input(d) { 1 } else { 0 };
        est.add(|| format!("`{}`", d.name.name), n, width, 1);
        est.add(|| format!("`{}`", d.name.name), n, F64_BYTES, copies);
    }
}

/// The memory [`crate::run_oracle`] needs: the caller's inputs, the store (every declared
/// variable), the new value of the largest statement target (St-Stmt computes it before
/// replacing the old one) and the results returned as tensors.
pub fn oracle_bytes(p: &CheckedProgram) -> MemoryEstimate {
    let mut est = MemoryEstimate::new("the oracle");
    store_cells(p, &mut est, VAL_BYTES);
    let target = p
        .program()
        .stmts
        .iter()
        .map(|s| cells(p.shape(&s.value)))
        .max()
        .unwrap_or(0);
    let results: u64 = p
        .program()
        .decls
        .iter()
        .fold(0u64, |acc, d| acc.saturating_add(cells(&d.shape())));
    // The statement buffer (Val) is gone when the results (f64) are built: the larger counts.
    let working = target
        .saturating_mul(VAL_BYTES)
        .max(results.saturating_mul(F64_BYTES));
    est.bytes = est.bytes.saturating_add(working);
    est
}

/// The memory [`crate::run_fast`] needs: the caller's inputs, the store (every declared
/// variable as `f64`) and, for the statement that needs most, every value it materialises:
/// the right-hand side, and the operands and result of each non-linear node (`+`, `-`, `/`,
/// `red*`, `redmax`, `redmin`). Products under contractions and reductions are never
/// materialised and are not counted; the pairwise contractions' intermediates are checked
/// against the budget when they are allocated.
pub fn fast_bytes(p: &CheckedProgram) -> MemoryEstimate {
    let mut est = MemoryEstimate::new("the fast evaluator");
    store_cells(p, &mut est, F64_BYTES);
    let mut worst = 0u64;
    for s in &p.program().stmts {
        let rhs = cells(p.shape(&s.value));
        let n = rhs.saturating_add(materialised(p, &s.value));
        if n > worst {
            worst = n;
        }
        if rhs > est.largest_cells {
            est.largest = format!("the value assigned to `{}`", s.target.name);
            est.largest_cells = rhs;
        }
    }
    est.bytes = est.bytes.saturating_add(worst.saturating_mul(F64_BYTES));
    est
}

/// Cells the fast evaluator materialises inside `e` besides `e`'s own value.
fn materialised(p: &CheckedProgram, e: &Expr) -> u64 {
    let own = |e: &Expr| cells(p.shape(e));
    let value = |e: &Expr| own(e).saturating_add(materialised(p, e));
    match &e.kind {
        ExprKind::Binary(BinOp::Mul, a, b) | ExprKind::Prod(a, b) => {
            materialised(p, a).saturating_add(materialised(p, b))
        }
        ExprKind::Binary(_, a, b) | ExprKind::Func2(_, a, b) => {
            own(e).saturating_add(value(a)).saturating_add(value(b))
        }
        ExprKind::Func(_, inner) | ExprKind::Convert(_, inner) => {
            own(e).saturating_add(value(inner))
        }
        ExprKind::Reduce(teil::ast::RedOp::Sum, _, inner) => materialised(p, inner),
        ExprKind::Reduce(_, _, inner) => own(e).saturating_add(value(inner)),
        ExprKind::Paren(inner)
        | ExprKind::Transp(_, _, inner)
        | ExprKind::Diag(_, _, inner)
        | ExprKind::Contr(_, _, inner)
        | ExprKind::Expa(_, _, inner)
        | ExprKind::Proj(_, _, inner) => materialised(p, inner),
        ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error => 0,
    }
}

/// The oracle's steps to evaluate `e` at one multi-index: the number of `Oracle::eval` calls.
/// A reduction or contraction over `n` evaluates its operand `n` times; every other node
/// evaluates each operand once.
pub fn cell_work(p: &CheckedProgram, e: &Expr) -> u64 {
    let w = |e: &Expr| cell_work(p, e);
    let rest = match &e.kind {
        ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error => 0,
        ExprKind::Binary(_, a, b) | ExprKind::Prod(a, b) | ExprKind::Func2(_, a, b) => {
            w(a).saturating_add(w(b))
        }
        ExprKind::Reduce(_, i, inner) => {
            extent_at(p.shape(inner), i.value).saturating_mul(w(inner))
        }
        ExprKind::Contr(i, j, inner) => {
            extent_at(p.shape(inner), i.value.min(j.value)).saturating_mul(w(inner))
        }
        ExprKind::Paren(inner)
        | ExprKind::Transp(_, _, inner)
        | ExprKind::Diag(_, _, inner)
        | ExprKind::Expa(_, _, inner)
        | ExprKind::Proj(_, _, inner)
        | ExprKind::Func(_, inner)
        | ExprKind::Convert(_, inner) => w(inner),
    };
    rest.saturating_add(1)
}

fn extent_at(shape: &[u64], p: u64) -> u64 {
    (p as usize)
        .checked_sub(1)
        .and_then(|i| shape.get(i).copied())
        .unwrap_or(1)
}

/// The oracle's steps for statement `s`: every cell of the target times [`cell_work`].
pub fn statement_work(p: &CheckedProgram, s: &teil::ast::Stmt) -> u64 {
    cells(p.shape(&s.value)).saturating_mul(cell_work(p, &s.value))
}

/// The oracle's steps for the whole program ([`crate::run_oracle`]), exactly: the meter of an
/// unlimited run counts the same number.
pub fn oracle_work(p: &CheckedProgram) -> u64 {
    p.program()
        .stmts
        .iter()
        .fold(0u64, |acc, s| acc.saturating_add(statement_work(p, s)))
}

/// Counts the steps of a run against the budget: polls the cancellation flag every
/// [`POLL_STEPS`] steps and stops a run that goes over the work budget (which an estimate
/// checked up front makes impossible; the meter is the backstop).
#[derive(Debug)]
pub struct Meter {
    budget: Budget,
    steps: Cell<u64>,
}

impl Meter {
    pub fn new(budget: Budget) -> Self {
        Meter {
            budget,
            steps: Cell::new(0),
        }
    }

    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Steps counted so far.
    pub fn steps(&self) -> u64 {
        self.steps.get()
    }

    /// One step.
    #[inline]
    pub fn tick(&self) -> Result<(), RunError> {
        let s = self.steps.get() + 1;
        self.steps.set(s);
        if s % POLL_STEPS == 0 {
            self.poll()?;
        }
        Ok(())
    }

    /// Checks the flag and the work budget now (per statement, and every [`POLL_STEPS`]).
    pub fn poll(&self) -> Result<(), RunError> {
        self.budget.check_cancel()?;
        self.budget.check_work("the oracle", self.steps.get())
    }
}

/// A vector of `len` elements from `items`, its memory reserved fallibly: running out is
/// [`RunError::OutOfMemory`] for `what`, not an abort.
pub fn try_vec<T>(
    what: &str,
    len: usize,
    items: impl IntoIterator<Item = T>,
) -> Result<Vec<T>, RunError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| RunError::OutOfMemory {
            what: what.to_string(),
            bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        })?;
    v.extend(items.into_iter().take(len));
    Ok(v)
}

/// The number of cells of `extents` as a `usize`, or [`RunError::OutOfMemory`] when the
/// tensor could not be addressed at all.
pub fn checked_len(what: &str, extents: &[u64]) -> Result<usize, RunError> {
    let n = extents.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n));
    n.and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= isize::MAX as usize / 16)
        .ok_or_else(|| RunError::OutOfMemory {
            what: what.to_string(),
            bytes: n.map_or(u64::MAX, |n| n.saturating_mul(F64_BYTES)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_memory_is_read_from_proc() {
        assert_eq!(
            meminfo_total("MemTotal:       24683656 kB\nMemFree: 1 kB\n"),
            Some(24683656 * 1024)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max address space         2147483648           2147483648           bytes     \n";
        assert_eq!(address_space_limit(limits), Some(2147483648));
        let unlimited =
            "Max address space         unlimited            unlimited            bytes     \n";
        assert_eq!(address_space_limit(unlimited), None);
        assert!(default_max_memory() > 0);
    }
}
