//! Translation validation of the loop IR (spec/validation.md).
//!
//! [`validate`] runs a lowered [`Kernel`] for its concrete shapes over symbolic values
//! ([`teil_interp::symbolic::Sym`]: terms over the input cells), follows exactly what the printed
//! C does, and compares every output cell with the oracle evaluated over the same symbolic
//! domain. Sums and products are compared up to associativity, commutativity and distributivity
//! (the rewrites contraction lifting and loop reordering make); everything else must match
//! operation for operation. It also checks that every padding cell of every buffer ends up
//! provably zero (spec/padding.md, (P2)) and that input-only buffers are left alone
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
//! A contraction step has one variant per [`Target`] ([`Strategy`]); the printed C runs the
//! variant of the target it is compiled for. The kernel is interpreted once per distinct order
//! of operations ([`orders`]): targets whose variants print the same loops (they differ at
//! most in the vector width of the register tile, and a vector operation is one binary64
//! operation per cell) share one interpretation, every other target gets its own, and the
//! kernel validates only if every interpretation does.
//!
//! Symbolic evaluation is bounded ([`Limits`]): a program whose evaluation would exceed the
//! bounds is refused with [`ValidationError::TooLarge`], never a hang. Validation is meant for small
//! shapes.

use crate::ir::*;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use teil::ast::{BinOp, Expr, ExprKind, RedOp, ShapeDisplay};
use teil::CheckedProgram;
use teil_interp::oracle::Oracle;
use teil_interp::symbolic::{self, Sym};
use teil_interp::{multi_indices, Domain, RunError, Store, Tensor, Val as Number};

/// Bounds on one validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest estimated number of symbolic operations: the oracle's pointwise evaluation
    /// (every cell of every statement, reductions unrolled) plus the kernel's static work
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
    /// The targets grouped by the order of operations of their variants ([`orders`]): the
    /// kernel was interpreted once per group.
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
struct Cell<'a>(&'a [u64]);

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

fn role_name(r: Role) -> &'static str {
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

/// Validates `kernel`, lowered from `p`, with the default [`Limits`].
pub fn validate(p: &CheckedProgram, kernel: &Kernel) -> Result<Validated, ValidationError> {
    validate_with(p, kernel, &Limits::default())
}

/// Validates `kernel`, lowered from `p`.
pub fn validate_with(
    p: &CheckedProgram,
    kernel: &Kernel,
    limits: &Limits,
) -> Result<Validated, ValidationError> {
    let operations = oracle_operations(p).saturating_add(kernel.work());
    if operations > limits.max_operations {
        let saturated = |n: u128| u64::try_from(n).unwrap_or(u64::MAX);
        return Err(ValidationError::TooLarge(TooLarge::Operations {
            operations: saturated(operations),
            limit: saturated(limits.max_operations),
        }));
    }
    if let Some(&b) = kernel.params.iter().find(|b| b.0 >= kernel.buffers.len()) {
        return Err(ValidationError::Malformed {
            step: 0,
            comment: "parameters".to_string(),
            what: format!("parameter buffer #{} does not exist", b.0),
        });
    }
    let cells = kernel
        .params
        .iter()
        .map(|&b| kernel.buffer(b).padded_len())
        .fold(kernel.workspace, u64::saturating_add);
    // The oracle's store holds every declared variable.
    let declared = p
        .program()
        .decls
        .iter()
        .map(|d| d.shape().iter().fold(1u64, |a, &n| a.saturating_mul(n)))
        .fold(0u64, u64::saturating_add);
    if cells.max(declared) > limits.max_cells {
        return Err(ValidationError::TooLarge(TooLarge::Cells {
            cells: cells.max(declared),
            limit: limits.max_cells,
        }));
    }
    let orders = orders(kernel);
    let (result, _) = symbolic::with_limits(limits.terms, || {
        let oracle = run_oracle(p)?;
        let mut validated = None;
        for group in &orders {
            let v = interpret(kernel, group[0], &oracle)?;
            validated.get_or_insert(v);
        }
        let mut v = validated.ok_or_else(|| ValidationError::Malformed {
            step: 0,
            comment: "targets".to_string(),
            what: "no target to validate".to_string(),
        })?;
        v.orders = orders.clone();
        Ok(v)
    });
    result
}

/// Validates `kernel` as compiled for `target` alone: its contraction steps run the variant of
/// `target` (the other targets' variants are not interpreted).
pub fn validate_target(
    p: &CheckedProgram,
    kernel: &Kernel,
    target: Target,
) -> Result<Validated, ValidationError> {
    let (result, _) = symbolic::with_limits(Limits::default().terms, || {
        let oracle = run_oracle(p)?;
        let mut v = interpret(kernel, target, &oracle)?;
        v.orders = vec![vec![target]];
        Ok(v)
    });
    result
}

/// The kernel's values on `inputs` in binary64 with `•` ([`Number`], the oracle's domain),
/// computed by the same machine that validates it, with the contraction steps' variants of
/// `target`: every parameter's logical cells after the last step, by variable, row-major.
/// Input cells hold the caller's numbers (a name missing from `inputs` holds `•`), the logical
/// cells of output-only parameters `•` on entry, padding and workspace `0`.
///
/// In exact mode these are the compiled C's values bit for bit (NaN payloads aside): every step
/// kind computes each cell with the operations the machine runs, in its order, on every target
/// (spec/padding.md, *Contraction kernels*), and folding into an identity is exact. In fma mode
/// the machine rounds a fused pair twice, as a target without a fast fma does.
pub fn evaluate(
    kernel: &Kernel,
    target: Target,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, ValidationError> {
    if let Some(&b) = kernel.params.iter().find(|b| b.0 >= kernel.buffers.len()) {
        return Err(ValidationError::Malformed {
            step: 0,
            comment: "parameters".to_string(),
            what: format!("parameter buffer #{} does not exist", b.0),
        });
    }
    let mut m = Machine::new(kernel, target, |var, idx, input| {
        let cell: Vec<usize> = idx.iter().map(|&i| i as usize - 1).collect();
        match inputs.get(var).and_then(|t| t.get(ndarray::IxDyn(&cell))) {
            Some(&x) if input => Number::from_f64(x),
            _ => Number::undefined(),
        }
    });
    for (i, s) in kernel.steps.iter().enumerate() {
        m.step(i, s)?;
    }
    let mut out = BTreeMap::new();
    for (i, &p) in kernel.params.iter().enumerate() {
        let b = kernel.buffer(p);
        let var = b.var.clone().unwrap_or_else(|| b.c_name.clone());
        // Padded offsets in increasing order visit the logical cells row-major.
        let data: Vec<f64> = (0..b.padded_len())
            .filter(|&off| logical_index(b, &m.strides[p.0], off).1)
            .map(|off| m.params[i][off as usize].to_f64())
            .collect();
        let shape: Vec<usize> = b.logical.iter().map(|&n| n as usize).collect();
        let t = Tensor::from_shape_vec(ndarray::IxDyn(&shape), data).map_err(|e| {
            ValidationError::Malformed {
                step: 0,
                comment: "parameters".to_string(),
                what: format!("parameter {var}: {e}"),
            }
        })?;
        out.insert(var, t);
    }
    Ok(out)
}

/// Whether a lifted kernel's result, where it differs from the oracle's canonical result, is
/// one that spec/values.md ("Reassociation") permits (spec/fuzzing.md, *Lifted kernels*).
#[derive(Clone, Debug)]
pub enum Judgement {
    /// Permitted: the compiled kernel returned its IR's binary64 values ([`evaluate`]) in every
    /// output cell, and the validator proved every output cell's term `T′ ≡ T`; so every
    /// output cell is `eval(T′)` for a `T′ ≡ T`.
    Permitted(Validated),
    /// The compiled kernel's value of an output cell is not its IR's binary64 value on
    /// `target` (1-based `index`): the C does not compute its loop IR, whatever the laws say.
    NotTheIr {
        target: Target,
        var: String,
        index: Vec<u64>,
        ir: f64,
        kernel: f64,
    },
    /// The validator shows the kernel wrong: some output cell's term is not `≡` the spec's (or
    /// the IR is ill-formed, or padding or an input is wrong), so no law explains a difference.
    Rejected(ValidationError),
    /// The kernel is beyond the validator's limits (or its IR could not be evaluated): nothing
    /// is known about its terms, so the difference is not shown to be permitted.
    Undecided(ValidationError),
}

/// Judges a lifted exact-mode kernel whose outputs `got` (from the compiled C, on `inputs`)
/// differ from the oracle's canonical result: first its IR is evaluated in binary64
/// ([`evaluate`], once per distinct order of its variants) and must equal `got` in every output
/// cell (NaN equals NaN, `-0` equals `+0`); then it is validated with `limits`.
pub fn judge(
    p: &CheckedProgram,
    kernel: &Kernel,
    inputs: &BTreeMap<String, Tensor>,
    got: &BTreeMap<String, Tensor>,
    limits: &Limits,
) -> Judgement {
    let outputs: Vec<String> = kernel
        .params
        .iter()
        .filter_map(|&b| kernel.buffers.get(b.0))
        .filter(|b| matches!(b.role, Role::Param { output: true, .. }))
        .map(|b| b.var.clone().unwrap_or_else(|| b.c_name.clone()))
        .collect();
    for group in orders(kernel) {
        let target = group[0];
        let ir = match evaluate(kernel, target, inputs) {
            Ok(ir) => ir,
            Err(f) if f.is_rejection() => return Judgement::Rejected(f),
            Err(f) => return Judgement::Undecided(f),
        };
        for var in &outputs {
            let (Some(want), Some(have)) = (ir.get(var), got.get(var)) else {
                continue;
            };
            // The first cell (1-based) where the kernel is not its IR; a shape that differs
            // shows at a cell the kernel lacks (NaN), or at the kernel's first cell.
            let first = want
                .indexed_iter()
                .map(|(at, &x)| (at.clone(), x, have.get(at).copied().unwrap_or(f64::NAN)))
                .find(|&(_, x, y)| teil_interp::ulps_apart(x, y) != 0)
                .map(|(at, x, y)| (ndarray::Dimension::slice(&at).to_vec(), x, y))
                .or_else(|| {
                    (want.shape() != have.shape())
                        .then(|| (vec![0; want.ndim()], f64::NAN, f64::NAN))
                });
            let Some((at, ir, kernel)) = first else {
                continue;
            };
            let index = at.iter().map(|&i| i as u64 + 1).collect();
            return Judgement::NotTheIr {
                target,
                var: var.clone(),
                index,
                ir,
                kernel,
            };
        }
    }
    match validate_with(p, kernel, limits) {
        Ok(v) => Judgement::Permitted(v),
        Err(f) if f.is_rejection() => Judgement::Rejected(f),
        Err(f) => Judgement::Undecided(f),
    }
}

/// [`Target::ALL`] grouped by the order of operations of their variants in `kernel`: two
/// targets share a group when every contraction step gives them the same order
/// ([`Strategy::groups`]). One group for a kernel without contraction steps.
pub fn orders(kernel: &Kernel) -> Vec<Vec<Target>> {
    let mut groups: Vec<Vec<Target>> = vec![Target::ALL.to_vec()];
    for s in &kernel.steps {
        let Step::Contract { c, .. } = s else {
            continue;
        };
        let by_step = c.strategy.groups();
        let same = |a: Target, b: Target| by_step.iter().any(|g| g.contains(&a) && g.contains(&b));
        let mut refined = Vec::new();
        for g in groups {
            let mut parts: Vec<Vec<Target>> = Vec::new();
            for t in g {
                match parts.iter_mut().find(|p| same(p[0], t)) {
                    Some(p) => p.push(t),
                    None => parts.push(vec![t]),
                }
            }
            refined.extend(parts);
        }
        groups = refined;
    }
    groups
}

/// Runs `kernel` with the variants of `target` and compares it with the oracle.
fn interpret(
    kernel: &Kernel,
    target: Target,
    oracle: &Store<Sym>,
) -> Result<Validated, ValidationError> {
    let mut m = Machine::new(kernel, target, |var, idx, input| {
        if input {
            Sym::input(var, idx)
        } else {
            Sym::unspecified(var, idx)
        }
    });
    for (i, s) in kernel.steps.iter().enumerate() {
        m.step(i, s)?;
    }
    m.compare(oracle)
}

/// The oracle over the symbolic domain: every input cell a leaf.
fn run_oracle(p: &CheckedProgram) -> Result<Store<Sym>, ValidationError> {
    let mut store = Store::<Sym>::undefined(p).map_err(ValidationError::Oracle)?;
    for d in p.program().decls.iter().filter(|d| p.is_input(d)) {
        let shape = d.shape();
        let data = multi_indices(&shape)
            .map(|k| Sym::input(&d.name.name, k))
            .collect();
        store
            .replace(&d.name.name, &shape, data)
            .map_err(ValidationError::Oracle)?;
    }
    let mut oracle = Oracle::new(p, store);
    oracle.run().map_err(ValidationError::Oracle)?;
    Ok(oracle.into_store())
}

/// The number of domain operations the oracle performs: each statement evaluates its whole
/// right-hand side at every cell, unrolling every reduction (spec/interpreter.md).
pub fn oracle_operations(p: &CheckedProgram) -> u128 {
    fn cost(p: &CheckedProgram, e: &Expr) -> u128 {
        match &e.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error => 1,
            ExprKind::Paren(a)
            | ExprKind::Transp(_, _, a)
            | ExprKind::Diag(_, _, a)
            | ExprKind::Expa(_, _, a)
            | ExprKind::Proj(_, _, a) => cost(p, a),
            ExprKind::Binary(_, a, b) | ExprKind::Prod(a, b) => {
                cost(p, a).saturating_add(cost(p, b)).saturating_add(1)
            }
            ExprKind::Reduce(_, i, a) | ExprKind::Contr(i, _, a) => {
                let n = usize::try_from(i.value)
                    .ok()
                    .and_then(|i| p.shape(a).get(i.wrapping_sub(1)))
                    .copied()
                    .unwrap_or(1);
                u128::from(n).saturating_mul(cost(p, a).saturating_add(1))
            }
        }
    }
    p.program()
        .stmts
        .iter()
        .map(|s| {
            let cells: u128 = p
                .shape(&s.value)
                .iter()
                .fold(1u128, |acc, &n| acc.saturating_mul(u128::from(n)));
            cells.saturating_mul(cost(p, &s.value))
        })
        .fold(0u128, u128::saturating_add)
}

/// What the machine needs of a value domain beyond the oracle's operations
/// ([`teil_interp::Domain`]): recognising a literal, for a cell folded into while it holds its
/// operator's identity ([`Node::Fold`]).
///
/// Two domains run the machine: [`Sym`] (translation validation: terms, compared with the
/// oracle's in normal form) and [`Number`] (binary64 with `•`, the oracle's own domain:
/// [`evaluate`], the kernel's values on given inputs).
pub trait MachineDomain: Domain {
    /// Whether the value is exactly the literal `x`: the same term, or the same bits.
    fn is_literal(&self, x: f64) -> bool;
}

impl MachineDomain for Sym {
    fn is_literal(&self, x: f64) -> bool {
        *self == Sym::lit(x)
    }
}

impl MachineDomain for Number {
    /// Bit for bit: `-0` is the identity of `+`, `+0` is not (`+0 + -0 = +0`).
    fn is_literal(&self, x: f64) -> bool {
        matches!(self, Number::Num(y) if y.to_bits() == x.to_bits())
    }
}

/// An accumulator: its operator's identity until the first fold.
#[derive(Clone)]
enum Acc<D> {
    Identity(RedOp),
    Value(D),
}

/// `acc + v` for a sum accumulator (`-0.0 + v` is `v` exactly).
fn fold<D: Domain>(acc: &Acc<D>, v: D) -> D {
    match acc {
        Acc::Identity(RedOp::Sum) => v,
        Acc::Identity(op) => D::fold_step(RedOp::Sum, &identity(*op), &v),
        Acc::Value(a) => D::fold_step(RedOp::Sum, a, &v),
    }
}

/// `fma(x, y, c)` in the symbolic domain: the term `c + x * y` (spec/validation.md, "Fused
/// multiply-add"), with `c` an accumulator (`fma(x, y, -0.0)` is `x * y`, as `-0.0 + x * y`
/// is). Terms record operations, not roundings, so it is the term of the unfused `c + x * y`:
/// the rounding fma saves is bounded by spec/values.md, not seen here.
fn fma<D: Domain>(x: &D, y: &D, c: &Acc<D>) -> D {
    fold(c, D::binary(BinOp::Mul, x, y))
}

/// The [`LaneFold::LANES`] lanes of a sum in lanes (a lane that added no term is the
/// identity), combined as [`LaneFold::TREE`]: the one meaning of that step, for sums in lanes
/// ([`LaneFold`]) and dot products in lanes ([`Strategy::LaneSums`]).
fn lane_tree<D: Domain>(mut lanes: Vec<Acc<D>>) -> D {
    for (dst, src) in LaneFold::TREE {
        let v = acc_value(lanes[src].clone());
        lanes[dst] = Acc::Value(fold(&lanes[dst], v));
    }
    acc_value(lanes.swap_remove(0))
}

fn acc_value<D: Domain>(a: Acc<D>) -> D {
    match a {
        Acc::Identity(op) => identity(op),
        Acc::Value(s) => s,
    }
}

/// The layout of a packed contraction on one target, as [`Machine::panels`] reads it.
struct Layout<'c> {
    row_op: &'c Access,
    col_op: &'c Access,
    rows: &'c [Bound],
    cols: &'c [Bound],
    m: u64,
    n: u64,
    kc: u64,
    mc: u64,
    nc: u64,
    mr: u64,
    nr: u64,
    /// The tiles run row sliver by row sliver ([`crate::ir::Panels::rows_outer`]).
    rows_outer: bool,
}

fn identity<D: Domain>(op: RedOp) -> D {
    D::lit(crate::ir::identity(op))
}

/// Where a buffer's cells live.
#[derive(Clone, Copy)]
enum Home {
    /// The i-th parameter's own buffer.
    Param(usize),
    /// At this offset in the workspace.
    Workspace(u64),
    /// A parameter-role buffer that names no parameter.
    Nowhere,
}

/// The symbolic machine: the kernel's memory and the state of the nest being run.
struct Machine<'k, D> {
    k: &'k Kernel,
    /// Whose variants the contraction steps run.
    target: Target,
    params: Vec<Vec<D>>,
    workspace: Vec<D>,
    homes: Vec<Home>,
    strides: Vec<Vec<u64>>,
    /// Loop variables bound in the current nest.
    env: BTreeMap<Label, u64>,
    accs: BTreeMap<u32, Acc<D>>,
    /// The cells (by [`Machine::locate`]) whose content is an operator's identity *as the
    /// start of a fold*: stored as an identity literal and not written since. Only into such
    /// a cell does a [`Node::Fold`] give its value itself; a cell that holds `−0` because the
    /// data is `−0` folds as an operand, as the oracle's fold does.
    fresh: HashSet<(Option<usize>, usize)>,
    /// Where the current step is, for error messages.
    step: usize,
}

/// The 1-based logical multi-index of a 0-based padded offset, if the cell is logical.
fn logical_index(b: &Buffer, strides: &[u64], offset: u64) -> (Vec<u64>, bool) {
    let mut idx = Vec::with_capacity(b.padded.len());
    let mut logical = true;
    for (d, &s) in strides.iter().enumerate() {
        let i = offset.checked_div(s).unwrap_or(0) % b.padded[d].max(1);
        logical &= i < b.logical[d];
        idx.push(i + 1);
    }
    (idx, logical)
}

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// The machine before the first step: the logical cells of each parameter hold
    /// `leaf(variable, 1-based index, is input)`, padding cells `0`, the workspace `0`.
    fn new(k: &'k Kernel, target: Target, leaf: impl Fn(&str, Vec<u64>, bool) -> D) -> Self {
        let strides: Vec<Vec<u64>> = k.buffers.iter().map(Buffer::strides).collect();
        // In the C, a buffer is its name: a parameter-role buffer that is not itself a parameter
        // but has a parameter's C name reads that parameter's memory (with its own strides).
        let homes: Vec<Home> = k
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let param = k.params.iter().position(|p| p.0 == i).or_else(|| {
                    k.params
                        .iter()
                        .position(|&p| b.is_param() && k.buffer(p).c_name == b.c_name)
                });
                match param {
                    Some(i) => Home::Param(i),
                    None if b.is_param() => Home::Nowhere,
                    None => Home::Workspace(b.offset),
                }
            })
            .collect();
        let mut params = Vec::new();
        for &p in &k.params {
            let b = k.buffer(p);
            let var = b.var.clone().unwrap_or_else(|| b.c_name.clone());
            let input = matches!(b.role, Role::Param { input: true, .. });
            let cells = (0..b.padded_len())
                .map(|off| match logical_index(b, &strides[p.0], off) {
                    (idx, true) => leaf(&var, idx, input),
                    (_, false) => D::lit(0.0),
                })
                .collect();
            params.push(cells);
        }
        Machine {
            k,
            target,
            params,
            workspace: vec![D::lit(0.0); k.workspace as usize],
            homes,
            strides,
            env: BTreeMap::new(),
            accs: BTreeMap::new(),
            fresh: HashSet::new(),
            step: 0,
        }
    }

    fn malformed(&self, what: String) -> ValidationError {
        let comment = self
            .k
            .steps
            .get(self.step)
            .map_or_else(String::new, |s| s.comment().to_string());
        ValidationError::Malformed {
            step: self.step + 1,
            comment,
            what,
        }
    }

    fn buffer_name(&self, b: BufId) -> String {
        self.k
            .buffers
            .get(b.0)
            .map_or_else(|| format!("buffer #{}", b.0), |b| b.c_name.clone())
    }

    /// The cell `b[index]`: (parameter or workspace, position), checking every coordinate
    /// against the padded shape and the buffer against the workspace.
    fn locate(&self, b: BufId, index: &[u64]) -> Result<(Option<usize>, usize), ValidationError> {
        let buf =
            self.k.buffers.get(b.0).ok_or_else(|| {
                self.malformed(format!("access to unknown {}", self.buffer_name(b)))
            })?;
        if index.len() != buf.padded.len() || index.iter().zip(&buf.padded).any(|(&i, &n)| i >= n) {
            let one_based: Vec<u64> = index.iter().map(|i| i + 1).collect();
            return Err(self.malformed(format!(
                "out-of-bounds access {}{} (padded shape {})",
                buf.c_name,
                Cell(&one_based),
                ShapeDisplay(&buf.padded)
            )));
        }
        let off: u64 = index
            .iter()
            .zip(&self.strides[b.0])
            .map(|(&i, &s)| i * s)
            .sum();
        match self.homes[b.0] {
            Home::Param(i) => {
                let len = self.params[i].len() as u64;
                if off >= len {
                    return Err(self.malformed(format!(
                        "{}{} is past the end of its parameter's {len} cells",
                        buf.c_name,
                        Cell(&index.iter().map(|i| i + 1).collect::<Vec<_>>())
                    )));
                }
                Ok((Some(i), off as usize))
            }
            Home::Nowhere => Err(self.malformed(format!(
                "{} is a parameter buffer but not a parameter of the kernel",
                buf.c_name
            ))),
            Home::Workspace(base) => {
                let end = base.checked_add(buf.padded_len());
                if end.is_none_or(|e| e > self.k.workspace) {
                    return Err(self.malformed(format!(
                        "{} (offset {base}, {} cells) does not fit the workspace of {} cells",
                        buf.c_name,
                        buf.padded_len(),
                        self.k.workspace
                    )));
                }
                Ok((None, (base + off) as usize))
            }
        }
    }

    fn read(&self, b: BufId, index: &[u64]) -> Result<D, ValidationError> {
        Ok(match self.locate(b, index)? {
            (Some(p), off) => self.params[p][off].clone(),
            (None, off) => self.workspace[off].clone(),
        })
    }

    fn write(&mut self, b: BufId, index: &[u64], v: D) -> Result<(), ValidationError> {
        let at = self.locate(b, index)?;
        self.fresh.remove(&at);
        match at {
            (Some(p), off) => self.params[p][off] = v,
            (None, off) => self.workspace[off] = v,
        }
        Ok(())
    }

    fn index(&self, idx: &[Ix]) -> Result<Vec<u64>, ValidationError> {
        idx.iter()
            .map(|ix| match ix {
                Ix::Const(c) => Ok(*c),
                Ix::Var(l) => {
                    self.env.get(l).copied().ok_or_else(|| {
                        self.malformed(format!("loop variable l{} is not bound", l.0))
                    })
                }
            })
            .collect()
    }

    fn step(&mut self, i: usize, s: &Step) -> Result<(), ValidationError> {
        self.step = i;
        self.env.clear();
        self.accs.clear();
        match s {
            Step::Copy { dst, src, .. } => {
                let n = self.k.buffers.get(src.0).map_or(0, Buffer::padded_len);
                let m = self.k.buffers.get(dst.0).map_or(0, Buffer::padded_len);
                if n > m {
                    return Err(self.malformed(format!(
                        "copy of {n} cells into {}, which has {m}",
                        self.buffer_name(*dst)
                    )));
                }
                // Whole padded buffers: copy cell by cell through flat offsets.
                for off in 0..n {
                    let v = self.read_flat(*src, off)?;
                    self.write_flat(*dst, off, v)?;
                }
                Ok(())
            }
            Step::Nest { body, .. } => self.nodes(body),
            Step::Contract { c, .. } => self.contract(c),
            Step::Tiled { t, .. } => self.tiled(t),
        }
    }

    /// Binds `var` for the rest of the step, rejecting a label bound twice.
    fn bind_new(&mut self, var: Label) -> Result<(), ValidationError> {
        if self.env.insert(var, 0).is_some() {
            return Err(self.malformed(format!(
                "loop variable l{} is bound by two enclosing loops",
                var.0
            )));
        }
        Ok(())
    }

    /// A contraction step, cell by cell in the order of its strategy ([`Strategy`]): each cell
    /// starts from `-0.0` (or, after the first panel of terms, from its own value) and adds the
    /// products of the operands for its terms in order.
    fn contract(&mut self, c: &Contraction) -> Result<(), ValidationError> {
        if c.reads(c.target.buf) {
            return Err(self.malformed(format!(
                "the contraction's target {} is also an operand",
                self.buffer_name(c.target.buf)
            )));
        }
        for f in c.free.iter().chain([&c.k]).chain(&c.outer) {
            self.bind_new(f.var)?;
        }
        if c.strategy.targets() != Target::ALL {
            return Err(self.malformed(format!(
                "the contraction's variants are for {:?}, not one for each of {:?}",
                c.strategy.targets(),
                Target::ALL
            )));
        }
        let t = self.target;
        match &c.strategy {
            Strategy::Dot {
                lane,
                rows_of,
                inner,
                reads,
                prefetch,
                variants,
            } => {
                if c.outer.is_some() {
                    return Err(self.malformed("dot products of a two-level sum".to_string()));
                }
                // The vector variants load the operands' terms as `reads` says.
                // (An unknown buffer is reported where the operand is read.)
                if reads.len() != c.operands().count() {
                    return Err(self.malformed(format!(
                        "dot products reading {} operand(s) in {} way(s)",
                        c.operands().count(),
                        reads.len()
                    )));
                }
                // The next block's rows are fetched only from operands whose terms are rows.
                let stray = reads
                    .iter()
                    .zip(prefetch)
                    .any(|(r, &p)| p && *r != Reads::Rows);
                if prefetch.len() != reads.len() || stray {
                    return Err(self.malformed(format!(
                        "dot products reading {reads:?} that prefetch {prefetch:?}"
                    )));
                }
                for (x, r) in c.operands().zip(reads) {
                    if self.k.buffers.get(x.buf.0).is_none() {
                        continue;
                    }
                    let s = Affine::of(self.k, x.buf, &x.index);
                    if !r.holds(&s, *lane, c.k.var) {
                        return Err(self.malformed(format!(
                            "dot operand read as {r:?} along l{} with strides {s:?}",
                            lane.0
                        )));
                    }
                }
                let Some(lane_n) = c.free.iter().find(|f| f.var == *lane).map(|f| f.extent) else {
                    return Err(
                        self.malformed(format!("dot lane l{} is not a target label", lane.0))
                    );
                };
                let Some(v) = variants.iter().find(|v| v.target == t) else {
                    return Err(self.malformed(format!("no dot variant for {t}")));
                };
                if v.lanes == 0 || v.rows == 0 || v.width == 0 || v.lanes % v.width != 0 {
                    return Err(self.malformed(format!(
                        "dot products with {} lanes x {} rows in vectors of {} for {t}",
                        v.lanes, v.rows, v.width
                    )));
                }
                // The row label is blocked only where the variant has more than one row.
                let rows = match rows_of.filter(|_| v.rows > 1) {
                    None => None,
                    Some(r) => match c.free.iter().find(|f| f.var == r && r != *lane) {
                        Some(f) => Some(*f),
                        None => {
                            return Err(self.malformed(format!(
                                "dot rows l{} are not a target label other than the lane",
                                r.0
                            )))
                        }
                    },
                };
                if rows.is_some() && !inner.is_empty() {
                    return Err(self.malformed(
                        "dot products with blocked rows and loops inside the lane".to_string(),
                    ));
                }
                let (inside, others): (Vec<Bound>, Vec<Bound>) = c
                    .free
                    .iter()
                    .copied()
                    .filter(|f| f.var != *lane && rows.is_none_or(|r| r.var != f.var))
                    .partition(|f| inner.contains(&f.var));
                if inside.len() != inner.len() {
                    return Err(self.malformed(format!(
                        "dot loops inside the lane {inner:?} are not other target labels"
                    )));
                }
                let rows = rows.map(|r| (r, v.rows));
                self.each_index(&others, &mut |m| {
                    m.dot(c, &inside, *lane, lane_n, rows, v.lanes)
                })
            }
            Strategy::LaneSums { rows_of, variants } => {
                if c.outer.is_some() {
                    return Err(self.malformed("lane sums of a two-level sum".to_string()));
                }
                // The printed lanes load each operand's terms as vectors along `k`.
                for x in c.operands() {
                    if self.k.buffers.get(x.buf.0).is_none() {
                        continue;
                    }
                    let s = Affine::of(self.k, x.buf, &x.index);
                    if s.get(c.k.var) != 1 {
                        return Err(self.malformed(format!(
                            "a lane-sum operand reads its terms l{} with stride {}",
                            c.k.var.0,
                            s.get(c.k.var)
                        )));
                    }
                }
                if c.k.extent < LaneFold::LANES {
                    return Err(self.malformed(format!(
                        "lane sums of {} terms, fewer than a block of {}",
                        c.k.extent,
                        LaneFold::LANES
                    )));
                }
                let Some(v) = variants.iter().find(|v| v.target == t) else {
                    return Err(self.malformed(format!("no lane-sum variant for {t}")));
                };
                if v.lanes != LaneFold::LANES
                    || v.rows == 0
                    || v.width == 0
                    || v.lanes % v.width != 0
                {
                    return Err(self.malformed(format!(
                        "lane sums in {} lanes x {} rows in vectors of {} for {t}",
                        v.lanes, v.rows, v.width
                    )));
                }
                let Some(rows) = c.free.iter().find(|f| f.var == *rows_of) else {
                    return Err(self.malformed(format!(
                        "lane-sum rows l{} are not a target label",
                        rows_of.0
                    )));
                };
                let others: Vec<Bound> = c
                    .free
                    .iter()
                    .copied()
                    .filter(|f| f.var != *rows_of)
                    .collect();
                self.each_index(&others, &mut |m| m.lane_sums(c, *rows, v.rows))
            }
            Strategy::Packed {
                swap,
                batch,
                rows,
                cols,
                m,
                n,
                variants,
            } => {
                let Some(v) = variants.iter().find(|v| v.target == t) else {
                    return Err(self.malformed(format!("no packed variant for {t}")));
                };
                if v.kc == 0 || v.mc == 0 || v.nc == 0 {
                    return Err(self.malformed(format!(
                        "a packed panel of 0 rows, columns or terms for {t}"
                    )));
                }
                // The printed C packs whole slivers into panels of mc x kc and kc x nc doubles
                // and keeps a tile row in vectors of the target's width.
                if v.mr == 0
                    || v.nr == 0
                    || v.nr % t.width() != 0
                    || v.mc % v.mr != 0
                    || v.nc % v.nr != 0
                {
                    return Err(self.malformed(format!(
                        "a {}x{} tile with panels of {} rows and {} columns for {t}",
                        v.mr, v.nr, v.mc, v.nc
                    )));
                }
                let Some(b) = &c.b else {
                    return Err(self.malformed("a packed product of one operand".to_string()));
                };
                let (row_op, col_op) = if *swap { (b, &c.a) } else { (&c.a, b) };
                let p = Layout {
                    row_op,
                    col_op,
                    rows,
                    cols,
                    m: *m,
                    n: *n,
                    kc: c.panel_terms(v.kc),
                    mc: v.mc,
                    nc: v.nc,
                    mr: v.mr,
                    nr: v.nr,
                    rows_outer: v.rows_outer,
                };
                self.each_index(batch, &mut |m| m.panels(c, &p))
            }
        }
    }

    /// The dot-product order within the other target loops: blocks of rows (`rows`: the row
    /// label and the rows per block, while a whole block fits, then one by one), in each
    /// blocks of `lanes` cells of the lane, the `inner` labels' loops inside them, each
    /// block's cells summed side by side with every row of the block, then each row's
    /// remaining cells one by one.
    fn dot(
        &mut self,
        c: &Contraction,
        inner: &[Bound],
        lane: Label,
        lane_n: u64,
        rows: Option<(Bound, u64)>,
        lanes: u64,
    ) -> Result<(), ValidationError> {
        let full = lane_n - lane_n % lanes;
        // The cells (row, lane start + u) for every row of `block` and `u < width`, summed side
        // by side.
        let block = |m: &mut Self, row: &[(Label, u64)], start: u64, width: u64| {
            let cells: Vec<(Option<(Label, u64)>, u64)> = if row.is_empty() {
                (0..width).map(|u| (None, start + u)).collect()
            } else {
                row.iter()
                    .flat_map(|&r| (0..width).map(move |u| (Some(r), start + u)))
                    .collect()
            };
            let mut sums: Vec<Acc<D>> = vec![Acc::Identity(RedOp::Sum); cells.len()];
            let bind = |m: &mut Self, cell: (Option<(Label, u64)>, u64)| {
                if let Some((l, v)) = cell.0 {
                    m.env.insert(l, v);
                }
                m.env.insert(lane, cell.1);
            };
            for kv in 0..c.k.extent {
                m.env.insert(c.k.var, kv);
                for (&cell, s) in cells.iter().zip(sums.iter_mut()) {
                    bind(m, cell);
                    *s = Acc::Value(m.add_term(&c.a, c.b.as_ref(), s)?);
                }
            }
            for (&cell, s) in cells.iter().zip(sums) {
                bind(m, cell);
                let idx = m.index(&c.target.index)?;
                m.write(c.target.buf, &idx, acc_value(s))?;
            }
            Ok::<(), ValidationError>(())
        };
        let blocks: Vec<Vec<(Label, u64)>> = match rows {
            None => vec![Vec::new()],
            Some((r, per)) => {
                let whole = r.extent - r.extent % per;
                (0..whole)
                    .step_by(per as usize)
                    .map(|s| (s..s + per).map(|v| (r.var, v)).collect())
                    .chain((whole..r.extent).map(|v| vec![(r.var, v)]))
                    .collect()
            }
        };
        for row in &blocks {
            for start in (0..full).step_by(lanes as usize) {
                self.each_index(inner, &mut |m| block(m, row, start, lanes))?;
            }
            let each: Vec<&[(Label, u64)]> = if row.is_empty() {
                vec![&[]]
            } else {
                row.chunks(1).collect()
            };
            for r in each {
                self.each_index(inner, &mut |m| {
                    for start in full..lane_n {
                        block(m, r, start, 1)?;
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// `body` at every index of `labels` (the first outermost), each bound in turn: the loops
    /// around a contraction step's blocks (a packed product's batch loops, the other target
    /// loops of dot products) and inside a dot block (`Strategy::Dot::inner`).
    fn each_index(
        &mut self,
        labels: &[Bound],
        body: &mut dyn FnMut(&mut Self) -> Result<(), ValidationError>,
    ) -> Result<(), ValidationError> {
        let Some((first, rest)) = labels.split_first() else {
            return body(self);
        };
        for v in 0..first.extent {
            self.env.insert(first.var, v);
            self.each_index(rest, body)?;
        }
        Ok(())
    }

    /// The order of dot products in lanes ([`Strategy::LaneSums`]) within the other target
    /// loops: blocks of `per` rows (while a whole block fits, then one by one), each cell of a
    /// block summed in lanes ([`Machine::lane_dot`]).
    fn lane_sums(&mut self, c: &Contraction, rows: Bound, per: u64) -> Result<(), ValidationError> {
        let whole = rows.extent - rows.extent % per;
        let blocks = (0..whole)
            .step_by(per as usize)
            .map(|s| s..s + per)
            .chain((whole..rows.extent).map(|r| r..r + 1));
        for block in blocks {
            for r in block {
                self.env.insert(rows.var, r);
                let sum = self.lane_dot(c)?;
                let idx = self.index(&c.target.index)?;
                self.write(c.target.buf, &idx, sum)?;
            }
        }
        Ok(())
    }

    /// One cell of dot products in lanes at the current labels: lane `j` adds the terms `k ≡ j
    /// (mod LANES)` of the whole blocks from the identity, the lanes combine as
    /// [`LaneFold::TREE`], then the remaining terms are added in order; each term as
    /// [`Machine::add_term`] adds it.
    fn lane_dot(&mut self, c: &Contraction) -> Result<D, ValidationError> {
        let n = c.k.extent;
        let whole = n - n % LaneFold::LANES;
        let mut lanes: Vec<Acc<D>> = vec![Acc::Identity(RedOp::Sum); LaneFold::LANES as usize];
        for kv in 0..whole {
            self.env.insert(c.k.var, kv);
            let lane = &mut lanes[(kv % LaneFold::LANES) as usize];
            *lane = Acc::Value(self.add_term(&c.a, c.b.as_ref(), lane)?);
        }
        let mut sum = Acc::Value(lane_tree(lanes));
        for kv in whole..n {
            self.env.insert(c.k.var, kv);
            sum = Acc::Value(self.add_term(&c.a, c.b.as_ref(), &sum)?);
        }
        Ok(acc_value(sum))
    }

    /// `acc + x * y` for the operands at the current labels, as a contraction step computes
    /// it: `fma(x, y, acc)` in fma mode; `acc + x` without `y` (a sum of one operand).
    fn add_term(&self, x: &Access, y: Option<&Access>, acc: &Acc<D>) -> Result<D, ValidationError> {
        let a = self.read(x.buf, &self.index(&x.index)?)?;
        let Some(y) = y else {
            return Ok(fold(acc, a));
        };
        let b = self.read(y.buf, &self.index(&y.index)?)?;
        Ok(if self.k.fma {
            fma(&a, &b, acc)
        } else {
            fold(acc, D::binary(BinOp::Mul, &a, &b))
        })
    }

    /// The panel loops of the packed product (the order documented on [`Strategy::Packed`]).
    fn panels(&mut self, c: &Contraction, p: &Layout) -> Result<(), ValidationError> {
        let kn = c.terms();
        let inner = c.k.extent.max(1);
        for jc in (0..p.n).step_by(p.nc as usize) {
            let ncb = p.nc.min(p.n - jc);
            for pc in (0..kn).step_by(p.kc as usize) {
                let kcb = p.kc.min(kn - pc);
                for ic in (0..p.m).step_by(p.mc as usize) {
                    let mcb = p.mc.min(p.m - ic);
                    let jrs = (0..ncb).step_by(p.nr as usize);
                    let irs = (0..mcb).step_by(p.mr as usize);
                    let tiles: Vec<(u64, u64)> = if p.rows_outer {
                        irs.flat_map(|ir| jrs.clone().map(move |jr| (jr, ir)))
                            .collect()
                    } else {
                        jrs.flat_map(|jr| irs.clone().map(move |ir| (jr, ir)))
                            .collect()
                    };
                    for (jr, ir) in tiles {
                        for i in 0..p.mr.min(mcb - ir) {
                            for j in 0..p.nr.min(ncb - jr) {
                                self.decompose(p.rows, ic + ir + i);
                                self.decompose(p.cols, jc + jr + j);
                                let idx = self.index(&c.target.index)?;
                                let mut acc = if pc == 0 {
                                    Acc::Identity(RedOp::Sum)
                                } else {
                                    Acc::Value(self.read(c.target.buf, &idx)?)
                                };
                                let Some(o) = c.outer else {
                                    for kv in pc..pc + kcb {
                                        self.env.insert(c.k.var, kv);
                                        let v = self.add_term(p.row_op, Some(p.col_op), &acc)?;
                                        acc = Acc::Value(v);
                                    }
                                    self.write(c.target.buf, &idx, acc_value(acc))?;
                                    continue;
                                };
                                // A two-level sum: the inner sum of each outer index from
                                // `-0.0`, added to the cell's sum after its last term.
                                let mut part = Acc::Identity(RedOp::Sum);
                                for t in pc..pc + kcb {
                                    self.env.insert(o.var, t / inner);
                                    self.env.insert(c.k.var, t % inner);
                                    if t % inner == 0 {
                                        part = Acc::Identity(RedOp::Sum);
                                    }
                                    part = Acc::Value(self.add_term(
                                        p.row_op,
                                        Some(p.col_op),
                                        &part,
                                    )?);
                                    if t % inner == inner - 1 {
                                        acc = Acc::Value(fold(&acc, acc_value(part.clone())));
                                    }
                                }
                                self.write(c.target.buf, &idx, acc_value(acc))?;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Binds the labels of `group` to the multi-index of flat number `x` as the printed C
    /// computes it: the last label varies fastest, and the first takes what is left (so a
    /// number past the group's cells gives an out-of-range first label, which the access
    /// rejects).
    fn decompose(&mut self, group: &[Bound], mut x: u64) {
        for (i, b) in group.iter().enumerate().rev() {
            if i == 0 {
                self.env.insert(b.var, x);
            } else {
                self.env.insert(b.var, x % b.extent.max(1));
                x /= b.extent.max(1);
            }
        }
    }

    /// A tiled step: the loops in order with `p` and `q` over blocks, then the point loops of
    /// `q` and `p` (the order documented on [`Tiled`]).
    fn tiled(&mut self, t: &Tiled) -> Result<(), ValidationError> {
        if t.block == 0 || t.p == t.q {
            return Err(
                self.malformed("a tiled nest with blocks of 0 or one tiled label".to_string())
            );
        }
        for l in &t.loops {
            self.bind_new(l.var)?;
        }
        let mut blocks = BTreeMap::new();
        self.tiled_loops(t, 0, &mut blocks)
    }

    fn tiled_loops(
        &mut self,
        t: &Tiled,
        level: usize,
        blocks: &mut BTreeMap<Label, (u64, u64)>,
    ) -> Result<(), ValidationError> {
        if let Some(l) = t.loops.get(level) {
            if l.var == t.p || l.var == t.q {
                for b in (0..l.extent).step_by(t.block as usize) {
                    blocks.insert(l.var, (b, l.extent));
                    self.tiled_loops(t, level + 1, blocks)?;
                }
            } else {
                for v in 0..l.extent {
                    self.env.insert(l.var, v);
                    self.tiled_loops(t, level + 1, blocks)?;
                }
            }
            return Ok(());
        }
        let (Some(&(bq, nq)), Some(&(bp, np))) = (blocks.get(&t.q), blocks.get(&t.p)) else {
            return Err(self.malformed("a tiled label is not one of the nest's loops".to_string()));
        };
        for iq in bq..(bq + t.block).min(nq) {
            self.env.insert(t.q, iq);
            for ip in bp..(bp + t.block).min(np) {
                self.env.insert(t.p, ip);
                let v = self.val(&t.value)?;
                let idx = self.index(&t.store.index)?;
                self.write(t.store.buf, &idx, v)?;
            }
        }
        Ok(())
    }

    fn flat_index(&self, b: BufId, off: u64) -> Vec<u64> {
        let buf = self.k.buffer(b);
        self.strides[b.0]
            .iter()
            .zip(&buf.padded)
            .map(|(&s, &n)| off.checked_div(s).unwrap_or(0) % n.max(1))
            .collect()
    }

    fn read_flat(&self, b: BufId, off: u64) -> Result<D, ValidationError> {
        self.read(b, &self.flat_index(b, off))
    }

    fn write_flat(&mut self, b: BufId, off: u64, v: D) -> Result<(), ValidationError> {
        let idx = self.flat_index(b, off);
        self.write(b, &idx, v)
    }

    /// A sum in lanes ([`LaneFold`]): lane `j` folds the whole blocks' terms `i ≡ j (mod
    /// LANES)` from the identity, the lanes combine as [`LaneFold::TREE`], `acc` adds the
    /// result and then the remaining terms in order. Each term is added as the loop adds it
    /// (an accumulator update: fused in fma mode where the loop's is).
    fn lane_sum(&mut self, l: &LaneFold) -> Result<(), ValidationError> {
        if self.env.contains_key(&l.var) {
            return Err(self.malformed(format!(
                "loop variable l{} is bound by two enclosing loops",
                l.var.0
            )));
        }
        if l.extent < LaneFold::LANES {
            return Err(self.malformed(format!(
                "a sum in lanes of {} terms, fewer than a block of {}",
                l.extent,
                LaneFold::LANES
            )));
        }
        // The lanes are accumulators of their own, numbered from the top (a kernel's
        // accumulators are numbered from 0).
        let lane = |j: usize| u32::MAX - j as u32;
        let lanes = LaneFold::LANES as usize;
        if (0..lanes).any(|j| self.accs.contains_key(&lane(j))) {
            return Err(self.malformed("too many accumulators".to_string()));
        }
        for j in 0..lanes {
            self.accs.insert(lane(j), Acc::Identity(l.op));
        }
        let whole = l.extent - l.extent % LaneFold::LANES;
        for i in 0..l.extent {
            if i == whole {
                self.combine_lanes(l.acc, lane)?;
            }
            self.env.insert(l.var, i);
            let update = Node::AccUpdate {
                acc: l.lane_of(i).map_or(l.acc, lane),
                op: l.op,
                value: l.value.clone(),
            };
            self.node(&update)?;
        }
        if whole == l.extent {
            self.combine_lanes(l.acc, lane)?;
        }
        self.env.remove(&l.var);
        for j in 0..lanes {
            self.accs.remove(&lane(j));
        }
        Ok(())
    }

    /// The lanes of a sum in lanes, combined as [`LaneFold::TREE`] and added to `acc`.
    fn combine_lanes(
        &mut self,
        acc: u32,
        lane: impl Fn(usize) -> u32,
    ) -> Result<(), ValidationError> {
        let mut get = |j: usize| self.accs.remove(&lane(j));
        let total = lane_tree(
            (0..LaneFold::LANES as usize)
                .map(|j| get(j).unwrap_or(Acc::Identity(RedOp::Sum)))
                .collect(),
        );
        let cur = self.accs.get(&acc).cloned().ok_or_else(|| {
            self.malformed(format!(
                "accumulator acc{acc} is used before it is declared"
            ))
        })?;
        self.accs.insert(acc, Acc::Value(fold(&cur, total)));
        Ok(())
    }

    fn nodes(&mut self, ns: &[Node]) -> Result<(), ValidationError> {
        for n in ns {
            self.node(n)?;
        }
        Ok(())
    }

    fn node(&mut self, n: &Node) -> Result<(), ValidationError> {
        match n {
            Node::Loop {
                var,
                start,
                extent,
                body,
                ..
            } => {
                if self.env.contains_key(var) {
                    return Err(self.malformed(format!(
                        "loop variable l{} is bound by two enclosing loops",
                        var.0
                    )));
                }
                // A loop printed several rows per pass means the loop itself where its body has
                // the shape that makes the two orders agree.
                let body = match body.split_first() {
                    Some((Node::JamRows(rows), rest)) => {
                        if *rows == 0 || !crate::ir::jam_shape(*var, rest) {
                            return Err(self.malformed(format!(
                                "loop l{} jams {rows} rows of a body that is not one loop of \
                                 folds into cells of their own",
                                var.0
                            )));
                        }
                        rest
                    }
                    _ => body.as_slice(),
                };
                for v in *start..*extent {
                    self.env.insert(*var, v);
                    self.nodes(body)?;
                }
                self.env.remove(var);
                Ok(())
            }
            Node::AccInit { acc, op } => {
                self.accs.insert(*acc, Acc::Identity(*op));
                Ok(())
            }
            Node::NoJam => Ok(()),
            Node::JamRows(_) => {
                Err(self
                    .malformed("a jam of rows that is not the first node of a loop".to_string()))
            }
            // A sum in lanes: its own association (spec/padding.md, "Sums in lanes").
            Node::LaneFold(l) if l.reassociates() => self.lane_sum(l),
            // Max and min in lanes compute the loop's bits exactly (spec/padding.md, "Lane
            // reductions"): executed as that loop.
            Node::LaneFold(l) => self.node(&l.nest()),
            Node::AccUpdate { acc, op, value } => {
                let cur = self.accs.get(acc).cloned().ok_or_else(|| {
                    self.malformed(format!(
                        "accumulator acc{acc} is used before it is declared"
                    ))
                })?;
                // In fma mode the printer fuses a sum accumulator's `acc + x * y`.
                if let (true, RedOp::Sum, Some((x, y))) = (self.k.fma, op, value.product()) {
                    let next = fma(&self.val(x)?, &self.val(y)?, &cur);
                    self.accs.insert(*acc, Acc::Value(next));
                    return Ok(());
                }
                let v = self.val(value)?;
                let next = match cur {
                    // identity ⊙ x = x, exactly (spec/padding.md).
                    Acc::Identity(init) if init == *op => v,
                    Acc::Identity(init) => D::fold_step(*op, &identity(init), &v),
                    Acc::Value(a) => D::fold_step(*op, &a, &v),
                };
                self.accs.insert(*acc, Acc::Value(next));
                Ok(())
            }
            Node::Store { buf, index, value } => {
                let v = self.val(value)?;
                let idx = self.index(index)?;
                self.write(*buf, &idx, v)?;
                // An identity literal starts the folds into the cell (interchanged nests,
                // `opt::interchange`).
                if let Val::Lit(x) = value {
                    if RedOp::ALL
                        .iter()
                        .any(|&op| crate::ir::identity(op).to_bits() == x.to_bits())
                    {
                        let at = self.locate(*buf, &idx)?;
                        self.fresh.insert(at);
                    }
                }
                Ok(())
            }
            Node::Fold {
                buf,
                index,
                op,
                value,
            } => {
                let v = self.val(value)?;
                let idx = self.index(index)?;
                let cur = self.read(*buf, &idx)?;
                // A cell that a store filled with the identity literal of `op` to start this
                // fold folds to `v`, exactly as an accumulator's identity does (binary64:
                // -0 + x = x, 1 · x = x, max(-∞, x) = x, min(∞, x) = x); any other content —
                // an identity-valued datum included — is an operand, as in the oracle's fold.
                let fresh = self.fresh.contains(&self.locate(*buf, &idx)?);
                let next = if fresh && cur.is_literal(crate::ir::identity(*op)) {
                    v
                } else {
                    D::fold_step(*op, &cur, &v)
                };
                self.write(*buf, &idx, next)
            }
        }
    }

    fn val(&self, v: &Val) -> Result<D, ValidationError> {
        Ok(match v {
            Val::Load(b, idx) => self.read(*b, &self.index(idx)?)?,
            Val::Lit(x) => D::lit(*x),
            Val::Undefined => D::undefined(),
            Val::Acc(a) => match self.accs.get(a) {
                Some(Acc::Identity(op)) => identity(*op),
                Some(Acc::Value(s)) => s.clone(),
                None => {
                    return Err(
                        self.malformed(format!("accumulator acc{a} is read before it is declared"))
                    )
                }
            },
            Val::Bin(op, a, b) => match v.fused().filter(|_| self.k.fma) {
                // `x * y + c` as the printer fuses it (spec/validation.md).
                Some((x, y, c)) => fma(&self.val(x)?, &self.val(y)?, &Acc::Value(self.val(c)?)),
                None => D::binary(*op, &self.val(a)?, &self.val(b)?),
            },
        })
    }
}

impl Machine<'_, Sym> {
    /// Outputs against the oracle, input-only parameters unchanged, then every padding cell.
    fn compare(&self, oracle: &Store<Sym>) -> Result<Validated, ValidationError> {
        let too_large = |var: &str, index: &[u64], padding: bool| {
            ValidationError::TooLarge(TooLarge::Term {
                var: var.to_string(),
                index: index.to_vec(),
                padding,
            })
        };
        let mut shapes = Vec::new();
        let mut output_cells = 0u64;
        for (i, &p) in self.k.params.iter().enumerate() {
            let b = self.k.buffer(p);
            let var = b.var.clone().unwrap_or_else(|| b.c_name.clone());
            shapes.push((var.clone(), b.logical.clone()));
            let Role::Param { input, output } = b.role else {
                continue;
            };
            if !output && !input {
                continue;
            }
            let expected = oracle.get(&var);
            for off in 0..b.padded_len() {
                let (idx, logical) = logical_index(b, &self.strides[p.0], off);
                if !logical {
                    continue;
                }
                let got = &self.params[i][off as usize];
                let want = if output {
                    let alloc = expected.ok_or_else(|| ValidationError::Malformed {
                        step: 0,
                        comment: "parameters".to_string(),
                        what: format!("parameter {var} is not a variable of the program"),
                    })?;
                    alloc
                        .offset(&idx)
                        .and_then(|o| alloc.data.get(o))
                        .cloned()
                        .ok_or_else(|| ValidationError::Malformed {
                            step: 0,
                            comment: "parameters".to_string(),
                            what: format!(
                                "parameter {var} has logical shape {} but the variable has {}",
                                ShapeDisplay(&b.logical),
                                ShapeDisplay(&alloc.extents)
                            ),
                        })?
                } else {
                    Sym::input(&var, idx.clone())
                };
                if got.is_too_large() || want.is_too_large() {
                    return Err(too_large(&var, &idx, false));
                }
                if *got != want {
                    return Err(if output {
                        ValidationError::Differs {
                            var,
                            index: idx,
                            kernel: got.clone(),
                            oracle: want,
                        }
                    } else {
                        ValidationError::InputWritten {
                            var,
                            index: idx,
                            term: got.clone(),
                        }
                    });
                }
                output_cells += u64::from(output);
            }
        }
        // Padding: parameters first, then the workspace buffers some step uses.
        let used = self.k.referenced();
        let mut order: Vec<BufId> = self.k.params.clone();
        order.extend(
            (0..self.k.buffers.len())
                .map(BufId)
                .filter(|b| used[b.0] && !self.k.buffer(*b).is_param()),
        );
        let mut padding_cells = 0u64;
        for b in order {
            let buf = self.k.buffer(b);
            for off in 0..buf.padded_len() {
                let (idx, logical) = logical_index(buf, &self.strides[b.0], off);
                if logical {
                    continue;
                }
                let v = self.read_flat(b, off)?;
                if v.is_too_large() {
                    return Err(too_large(&buf.c_name, &idx, true));
                }
                if !v.is_zero() {
                    return Err(ValidationError::Padding {
                        buffer: buf.c_name.clone(),
                        role: buf.role,
                        index: idx,
                        logical: buf.logical.clone(),
                        padded: buf.padded.clone(),
                        term: v,
                    });
                }
                padding_cells += 1;
            }
        }
        Ok(Validated {
            pad: self.k.pad,
            shapes,
            output_cells,
            padding_cells,
            lifted: self.k.lifted,
            orders: Vec::new(),
        })
    }
}
