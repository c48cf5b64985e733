//! TeIL's evaluators: the reference interpreter (the oracle) and the fast evaluator.
//!
//! - [`oracle`]: the denotational semantics of spec/semantics.md, one match arm per equation,
//!   evaluated pointwise over a store whose every access is bounds-checked (the run-time witness
//!   of type safety). Generic over the value [`domain`].
//! - [`fast`]: whole-tensor evaluation on `ndarray`, fusing contractions and reductions of
//!   products so that `(A # B) .[2 3]` never materialises `A # B`.
//!
//! - [`budget`]: the limits of a run (memory, oracle work, trace output, a cancellation flag),
//!   estimated from the shapes and checked before anything is allocated or evaluated
//!   ([`run_fast_with`], [`run_oracle_with`]).
//!
//! [`random`] is the workspace's one small deterministic generator (SplitMix64). Files,
//! `.npy` arrays and child processes are `teil-io`'s: nothing here writes a file or starts a
//! process.
//!
//! Both take a [`CheckedProgram`] and read the checker's shapes. At this crate's boundary a
//! tensor is an [`ndarray::ArrayD<f64>`] in which NaN stands for the undefined value `•`
//! (spec/interpreter.md).
//!
//! # Running a program
//!
//! [`run_fast`] (and [`run_oracle`], same contract) takes the caller's inputs by variable name
//! and returns the final value of every declared variable:
//!
//! ```
//! use ndarray::{array, ArrayD};
//! use std::collections::BTreeMap;
//! use teil::CodedError;
//!
//! let src = "input var A : [2 3]\ninput var B : [3 2]\noutput var C : [2 2]\nC = (A # B) .[2 3]";
//! let (program, _) = teil::compile(src).expect("well typed");
//! let inputs: BTreeMap<String, ArrayD<f64>> = BTreeMap::from([
//!     ("A".to_string(), array![[1., 2., 3.], [4., 5., 6.]].into_dyn()),
//!     ("B".to_string(), array![[1., 0.], [0., 1.], [1., 1.]].into_dyn()),
//! ]);
//! let values = teil_interp::run_fast(&program, &inputs)?;
//! assert_eq!(values["C"], array![[4., 5.], [10., 11.]].into_dyn());
//!
//! // The oracle agrees, and inputs of the wrong shape are an error, not a panic.
//! assert_eq!(teil_interp::run_oracle(&program, &inputs)?["C"], values["C"]);
//! let mut wrong = inputs.clone();
//! wrong.insert("B".to_string(), array![[1., 2.]].into_dyn());
//! let e = teil_interp::run_fast(&program, &wrong).unwrap_err();
//! assert_eq!(e.coded(), "[E0603] input `B` has shape [1, 2], but the program declares [3, 2]");
//! # Ok::<(), teil_interp::RunError>(())
//! ```

pub mod budget;
pub mod domain;
pub mod error;
pub mod fast;
pub mod functions;
pub mod oracle;
pub mod random;
pub mod rounding;
pub mod store;
pub mod symbolic;
pub mod trace;
pub mod undefined;

pub use budget::Budget;
pub use domain::{Domain, Val};
pub use error::{Access, RunError};
pub use store::{multi_indices, Alloc, Store};

use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;
use teil::CheckedProgram;

/// A tensor at the boundary: row-major `f64`, NaN for `•`. A scalar has shape `[]`.
pub type Tensor = ArrayD<f64>;

/// The shape of a tensor as TeIL extents.
pub fn tensor_shape(t: &Tensor) -> Vec<u64> {
    t.shape().iter().map(|&n| n as u64).collect()
}

/// The initial store μ for the oracle: every declared variable, with the caller's values for
/// the names in `inputs` (a NaN is a number, spec/values.md) and `•` everywhere else.
pub fn initial_store(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<Store<Val>, RunError> {
    let mut store = Store::<Val>::undefined(p)?;
    for (name, t) in inputs {
        let expected = check_input(p, name, t)?;
        let data = budget::try_vec(
            &format!("`{name}`"),
            t.len(),
            t.iter().map(|&x| Val::from_f64(x)),
        )?;
        store.replace(name, &expected, data)?;
    }
    Ok(store)
}

/// Checks that `name` is declared with the shape of `t` ([`teil::interface::initial_shape`]);
/// returns the declared shape.
/// A variable declared `f32` must hold binary32 values exactly
/// ([`teil::interface::check_binary32`], E0605).
pub fn check_input(p: &CheckedProgram, name: &str, t: &Tensor) -> Result<Vec<u64>, RunError> {
    let shape = teil::interface::initial_shape(p, name, &tensor_shape(t))?.to_vec();
    if p.var_elem(name) == Some(teil::ast::ElemType::F32) {
        teil::interface::check_binary32(name, t.iter().copied())?;
    }
    Ok(shape)
}

/// Converts one allocation of the oracle's store to a boundary tensor (`•` becomes NaN).
pub fn to_tensor(alloc: &Alloc<Val>) -> Result<Tensor, RunError> {
    let shape: Vec<usize> = alloc.extents.iter().map(|&n| n as usize).collect();
    let data = budget::try_vec(
        "a result",
        alloc.data.len(),
        alloc.data.iter().map(|v| v.to_f64()),
    )?;
    ArrayD::from_shape_vec(IxDyn(&shape), data)
        .map_err(|e| RunError::Internal(format!("store allocation has an inconsistent shape: {e}")))
}

/// Runs `p` with the reference interpreter within the default [`Budget`] (see
/// [`run_oracle_with`]). `inputs` holds the caller-supplied variables (any subset of the
/// declared ones; the others start undefined). Returns the final value of EVERY declared
/// variable.
pub fn run_oracle(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, RunError> {
    run_oracle_with(p, inputs, &Budget::default())
}

/// [`run_oracle`] within `budget`: the memory estimate ([`budget::oracle_bytes`]) and the
/// work ([`budget::oracle_work`]) are checked before anything is allocated or evaluated, and
/// the cancellation flag is polled while it runs.
pub fn run_oracle_with(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    budget: &Budget,
) -> Result<BTreeMap<String, Tensor>, RunError> {
    budget.check_memory(&budget::oracle_bytes(p))?;
    budget.check_work("the oracle", budget::oracle_work(p))?;
    let mut oracle = oracle::Oracle::with_budget(p, initial_store(p, inputs)?, budget.clone());
    oracle.run()?;
    oracle
        .into_store()
        .iter()
        .map(|(name, alloc)| Ok((name.clone(), to_tensor(alloc)?)))
        .collect()
}

/// Runs `p` with the fast evaluator within the default [`Budget`]; same contract as
/// [`run_oracle`].
pub fn run_fast(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, RunError> {
    run_fast_with(p, inputs, &Budget::default())
}

/// [`run_fast`] within `budget`: the memory estimate ([`budget::fast_bytes`]) is checked
/// before anything is allocated, every intermediate again when it is allocated, and the
/// cancellation flag is polled while it runs.
pub fn run_fast_with(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    budget: &Budget,
) -> Result<BTreeMap<String, Tensor>, RunError> {
    budget.check_memory(&budget::fast_bytes(p))?;
    let store = fast_store(p, inputs)?;
    let (store, _) = fast::run_with(p, store, fast::Mode::Values, budget)?;
    Ok(store)
}

/// FNV-1a, to give every variable its own stream independent of the other declarations.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Reproducible inputs: every variable the caller supplies (`p.is_input`) filled with small
/// integers in -3..=3, from a stream determined by `seed` and the variable's name alone.
/// Variables that cannot be allocated are left out (a run then reports them); see
/// [`try_random_inputs`] for the error instead.
pub fn random_inputs(p: &CheckedProgram, seed: u64) -> BTreeMap<String, Tensor> {
    p.program()
        .decls
        .iter()
        .filter(|d| p.is_input(d))
        .filter_map(|d| Some((d.name.name.clone(), random_tensor(d, seed).ok()?)))
        .collect()
}

/// [`random_inputs`], with the first variable that cannot be allocated as an error
/// ([`RunError::OutOfMemory`]). Check the run's memory estimate first (`crate::budget`) to
/// refuse a run that is over its budget before allocating anything.
pub fn try_random_inputs(
    p: &CheckedProgram,
    seed: u64,
) -> Result<BTreeMap<String, Tensor>, RunError> {
    let mut out = BTreeMap::new();
    for d in p.program().decls.iter().filter(|d| p.is_input(d)) {
        out.insert(d.name.name.clone(), random_tensor(d, seed)?);
    }
    Ok(out)
}

/// Reproducible inputs uniform in `[-1, 1)` (multiples of 2^-52): values whose products and
/// sums round, for tests that must tell evaluation orders and fused multiply-adds apart (the
/// small integers of [`random_inputs`] never round). Streams as in [`random_inputs`]; panics
/// where a variable cannot be allocated (tests only use it on small programs).
pub fn uniform_inputs(p: &CheckedProgram, seed: u64) -> BTreeMap<String, Tensor> {
    p.program()
        .decls
        .iter()
        .filter(|d| p.is_input(d))
        .map(|d| {
            let mut rng = random::SplitMix64(seed ^ fnv1a(&d.name.name));
            let shape: Vec<usize> = d.shape().iter().map(|&n| n as usize).collect();
            // In binary32, the value rounded (the multiples of 2^-52 are not binary32).
            let t = Tensor::from_shape_simple_fn(shape, || {
                d.elem
                    .round((rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
            });
            (d.name.name.clone(), t)
        })
        .collect()
}

/// The random values of one declared variable (see [`random_inputs`]).
fn random_tensor(d: &teil::ast::Decl, seed: u64) -> Result<Tensor, RunError> {
    let extents = d.shape();
    let what = format!("`{}`", d.name.name);
    let len = budget::checked_len(&what, &extents)?;
    let mut rng = random::SplitMix64(seed ^ fnv1a(&d.name.name));
    let values = (0..len).map(|_| (rng.next_u64() % 7) as f64 - 3.0);
    let data = budget::try_vec(&what, len, values)?;
    let shape: Vec<usize> = extents.iter().map(|&n| n as usize).collect();
    ArrayD::from_shape_vec(IxDyn(&shape), data).map_err(|e| RunError::Internal(e.to_string()))
}

/// Equality of results (spec/interpreter.md): same shape, and cell by cell either both NaN
/// (NaN and `•` are not distinguished at the boundary) or numerically equal (`-0 == +0`).
pub fn same_values(a: &Tensor, b: &Tensor) -> bool {
    same_values_ulps(a, b, 0)
}

/// Like [`same_values`], but finite cells may differ by up to `max_ulps` units in the last
/// place (counted across zero, so `-0` and `+0` are 0 ulps apart). Infinities must be equal.
pub fn same_values_ulps(a: &Tensor, b: &Tensor, max_ulps: u64) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(&x, &y)| ulps_apart(x, y) <= max_ulps)
}

/// The distance between two numbers in units in the last place: 0 for equal numbers (and for
/// two NaNs), `u64::MAX` when exactly one is NaN or they are different infinities.
pub fn ulps_apart(x: f64, y: f64) -> u64 {
    if x.is_nan() || y.is_nan() {
        return if x.is_nan() && y.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if x == y {
        return 0;
    }
    if x.is_infinite() || y.is_infinite() {
        return u64::MAX;
    }
    // Map the floats onto a line of integers on which adjacent floats are adjacent.
    let key = |v: f64| -> i128 {
        let bits = v.to_bits() as i64;
        i128::from(if bits < 0 { i64::MIN - bits } else { bits })
    };
    u64::try_from((key(x) - key(y)).unsigned_abs()).unwrap_or(u64::MAX)
}

/// The initial store of the fast evaluator: every declared variable, NaN (`•`) except for the
/// caller's values in `inputs`.
pub fn fast_store(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<fast::FastStore, RunError> {
    for (name, t) in inputs {
        check_input(p, name, t)?;
    }
    let mut store = BTreeMap::new();
    for d in &p.program().decls {
        let name = &d.name.name;
        let t = match inputs.get(name) {
            Some(t) => {
                let data = budget::try_vec(&format!("`{name}`"), t.len(), t.iter().copied())?;
                ArrayD::from_shape_vec(IxDyn(t.shape()), data)
                    .map_err(|e| RunError::Internal(e.to_string()))?
            }
            None => {
                let extents = d.shape();
                let what = format!("`{name}`");
                let len = budget::checked_len(&what, &extents)?;
                let data = store::filled(&what, len, f64::NAN)?;
                let shape: Vec<usize> = extents.iter().map(|&n| n as usize).collect();
                ArrayD::from_shape_vec(IxDyn(&shape), data)
                    .map_err(|e| RunError::Internal(e.to_string()))?
            }
        };
        store.insert(name.clone(), t);
    }
    Ok(store)
}

/// A copy of a fast store, its memory reserved fallibly.
pub fn try_clone_store(store: &fast::FastStore) -> Result<fast::FastStore, RunError> {
    let mut out = BTreeMap::new();
    for (name, t) in store {
        let data = budget::try_vec(&format!("`{name}`"), t.len(), t.iter().copied())?;
        let t = ArrayD::from_shape_vec(IxDyn(t.shape()), data)
            .map_err(|e| RunError::Internal(e.to_string()))?;
        out.insert(name.clone(), t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulps() {
        assert_eq!(ulps_apart(0.0, -0.0), 0);
        assert_eq!(ulps_apart(f64::NAN, f64::NAN), 0);
        assert_eq!(ulps_apart(f64::NAN, 1.0), u64::MAX);
        assert_eq!(ulps_apart(1.0, f64::from_bits(1.0f64.to_bits() + 1)), 1);
        assert_eq!(ulps_apart(f64::from_bits(1), -f64::from_bits(1)), 2);
        assert_eq!(ulps_apart(f64::INFINITY, f64::MAX), u64::MAX);
        assert_eq!(ulps_apart(f64::INFINITY, f64::INFINITY), 0);
    }
}
