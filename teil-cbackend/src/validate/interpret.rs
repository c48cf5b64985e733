//! Running the machine: once per distinct order of the kernel's variants ([`orders`]), over
//! symbolic values against the oracle over the same domain ([`validate_with`]), or over
//! binary64 on given inputs ([`evaluate`]).

use super::error::{Limits, TooLarge, Validated, ValidationError};
use super::machine::{logical_index, Machine};
use crate::ir::*;
use std::collections::BTreeMap;
use teil::CheckedProgram;
use teil_interp::budget::oracle_work;
use teil_interp::oracle::Oracle;
use teil_interp::symbolic::{self, Sym};
use teil_interp::{multi_indices, Domain, Store, Tensor, Val as Number};

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
    let operations = u128::from(oracle_work(p)).saturating_add(kernel.work());
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
pub(super) fn interpret(
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
pub(super) fn run_oracle(p: &CheckedProgram) -> Result<Store<Sym>, ValidationError> {
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
