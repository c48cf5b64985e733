//! Judging a lifted kernel whose result differs from the oracle's canonical one: is the
//! difference one that reassociation permits (spec/fuzzing.md, *Lifted kernels*)?

use super::error::{Limits, Validated, ValidationError};
use super::interpret::{evaluate, orders, validate_with};
use crate::ir::*;
use std::collections::BTreeMap;
use teil::CheckedProgram;
use teil_interp::Tensor;

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
