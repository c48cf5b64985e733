//! A small evaluator of the ops/1 form on `ndarray`, and a `teil-target/1` server around it.
//!
//! It exists for testing, twice: it is the reference that the lowering (`teil::ops`) is checked
//! against (evaluating a program's ops form must give the oracle's values bit for bit where the
//! arithmetic is exact), and, behind the hidden command `teil ops-target [--plant BUG]`, it is
//! the target with planted bugs that shows `teil fuzz --target` can find and shrink a bug in
//! somebody else's implementation without Python installed. It is written for clarity: every
//! op follows its definition in spec/fuzzing.md, folds run from the first element upwards.

use crate::error::OpsEvalError;
use crate::shrink::Inputs;
use ndarray::{ArrayD, Axis, Dimension, IxDyn};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use teil::ast::{ElemType, Func};
use teil::ops::{Op, ReduceKind, Step};
use teil_interp::Tensor;

/// Bugs the evaluator can be told to have, each in one op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// `take` reads the slice after the one asked for (wrapping around).
    TakeOffByOne,
    /// `reduce max` folds from 0 instead of from the first element.
    MaxFromZero,
    /// `einsum` drops the second occurrence of a label repeated in one operand, summing over
    /// that axis instead of taking the diagonal.
    EinsumDropsRepeated,
    /// `exp` is off by a relative `2^-12` in binary32 (an approximation a fused kernel might
    /// use) and `2^-41` in binary64, up or down: about 2^11 ulps, far outside the default
    /// allowance ([`crate::case::FUNCTION_ULPS`]).
    ExpOff,
    /// `exp` is one ulp of its type above the correctly rounded value: inside the allowance
    /// ([`crate::case::FUNCTION_ULPS`]), so not a bug a campaign may report.
    ExpOneUlp,
    /// `reduce min` folds with an ordered comparison, `if x < acc { x } else { acc }`, so a NaN
    /// after a number is dropped (ONNX Runtime's and TVM's bug, fuzz/FINDINGS.md).
    MinDropsNan,
}

impl Bug {
    pub const ALL: [Bug; 6] = [
        Bug::TakeOffByOne,
        Bug::MaxFromZero,
        Bug::EinsumDropsRepeated,
        Bug::ExpOff,
        Bug::ExpOneUlp,
        Bug::MinDropsNan,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Bug::TakeOffByOne => "take-off-by-one",
            Bug::MaxFromZero => "max-from-zero",
            Bug::EinsumDropsRepeated => "einsum-drops-repeated",
            Bug::ExpOff => "exp-off",
            Bug::ExpOneUlp => "exp-one-ulp",
            Bug::MinDropsNan => "min-drops-nan",
        }
    }

    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// Runs `steps` on the values in `env` (the inputs), binding every step's `out`.
pub fn run(
    steps: &[Step],
    env: &mut BTreeMap<String, Tensor>,
    bug: Option<Bug>,
) -> Result<(), OpsEvalError> {
    for s in steps {
        let args = s
            .args
            .iter()
            .map(|a| env.get(a).ok_or_else(|| OpsEvalError::Unbound(a.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        let v = step(&s.op, &args, bug, s.elem)?;
        if v.shape()
            .iter()
            .map(|&n| n as u64)
            .ne(s.shape.iter().copied())
        {
            return Err(OpsEvalError::StepShape {
                out: s.out.clone(),
                got: v.shape().to_vec(),
                says: s.shape.clone(),
            });
        }
        env.insert(s.out.clone(), v);
    }
    Ok(())
}

fn arg<'a>(args: &[&'a Tensor], k: usize) -> Result<&'a Tensor, OpsEvalError> {
    args.get(k).copied().ok_or(OpsEvalError::MissingArgument(k))
}

/// One step whose result has element type `t`: in binary32 every operation (each fold step,
/// each product and addition of an `einsum`) is the binary64 one rounded to binary32, which is
/// the binary32 operation (spec/values.md, "Binary32").
fn step(op: &Op, args: &[&Tensor], bug: Option<Bug>, t: ElemType) -> Result<Tensor, OpsEvalError> {
    let round = |x: f64| t.round(x);
    match op {
        Op::Const { value } => Ok(ArrayD::from_elem(IxDyn(&[]), *value)),
        Op::Add | Op::Sub | Op::Mul | Op::Div => {
            let (a, b) = (arg(args, 0)?, arg(args, 1)?);
            let f = |x: f64, y: f64| {
                round(match op {
                    Op::Add => x + y,
                    Op::Sub => x - y,
                    Op::Mul => x * y,
                    _ => x / y,
                })
            };
            if a.shape() == b.shape() {
                Ok(ndarray::Zip::from(a).and(b).map_collect(|&x, &y| f(x, y)))
            } else if a.ndim() == 0 && matches!(op, Op::Mul) {
                let k = a.iter().next().copied().unwrap_or(f64::NAN);
                Ok(b.mapv(|y| f(k, y)))
            } else if b.ndim() == 0 && matches!(op, Op::Div) {
                let k = b.iter().next().copied().unwrap_or(f64::NAN);
                Ok(a.mapv(|x| f(x, k)))
            } else {
                Err(OpsEvalError::Shapes(a.shape().to_vec(), b.shape().to_vec()))
            }
        }
        Op::Reduce { kind, axis } => {
            let a = arg(args, 0)?;
            if *axis >= a.ndim() {
                return Err(OpsEvalError::Axis(*axis));
            }
            let from_zero = *kind == ReduceKind::Max && bug == Some(Bug::MaxFromZero);
            Ok(a.map_axis(Axis(*axis), |lane| {
                let mut it = lane.iter().copied();
                let first = if from_zero {
                    0.0
                } else {
                    it.next().unwrap_or(f64::NAN)
                };
                it.fold(first, |acc, x| {
                    round(match kind {
                        ReduceKind::Sum => acc + x,
                        ReduceKind::Prod => acc * x,
                        ReduceKind::Max => max(acc, x),
                        ReduceKind::Min if bug == Some(Bug::MinDropsNan) => {
                            if x < acc {
                                x
                            } else {
                                acc
                            }
                        }
                        ReduceKind::Min => min(acc, x),
                    })
                })
            }))
        }
        Op::Expand { axis, n } => {
            let a = arg(args, 0)?;
            if *axis > a.ndim() {
                return Err(OpsEvalError::Axis(*axis));
            }
            let mut shape = a.shape().to_vec();
            shape.insert(*axis, *n as usize);
            let v = a.clone().insert_axis(Axis(*axis));
            v.broadcast(IxDyn(&shape))
                .map(|b| b.to_owned())
                .ok_or(OpsEvalError::CannotExpand)
        }
        Op::Take { axis, index } => {
            let a = arg(args, 0)?;
            let n = *a.shape().get(*axis).ok_or(OpsEvalError::TakeAxis)? as u64;
            let index = match bug {
                Some(Bug::TakeOffByOne) => (index + 1) % n,
                _ => *index,
            };
            if index >= n {
                return Err(OpsEvalError::Index(index));
            }
            Ok(a.index_axis(Axis(*axis), index as usize).to_owned())
        }
        Op::Einsum { equation } => einsum(equation, args, bug, round),
        Op::Func { func } => {
            let f = teil_interp::functions::unary(*func, t);
            let planted = |y: f64| match bug {
                // Up or down by the last bit of the result: an error no normalisation cancels.
                Some(Bug::ExpOff) => {
                    let sign = if (y as f32).to_bits() & 1 == 0 {
                        1.0
                    } else {
                        -1.0
                    };
                    // About 2^11 ulps in either type.
                    let off = match t {
                        ElemType::F32 => 1.0 / 4096.0,
                        ElemType::F64 => 1.0 / 2_199_023_255_552.0, // 2^-41
                    };
                    round(y * (1.0 + sign * off))
                }
                Some(Bug::ExpOneUlp) => next_up(y, t),
                _ => y,
            };
            Ok(match func {
                Func::Exp => arg(args, 0)?.mapv(|x| planted(f(x))),
                _ => arg(args, 0)?.mapv(f),
            })
        }
        Op::Max | Op::Min => {
            let (a, b) = (arg(args, 0)?, arg(args, 1)?);
            if a.shape() != b.shape() {
                return Err(OpsEvalError::Shapes(a.shape().to_vec(), b.shape().to_vec()));
            }
            let f = if matches!(op, Op::Max) {
                teil::ast::Func2::Max
            } else {
                teil::ast::Func2::Min
            };
            Ok(ndarray::Zip::from(a)
                .and(b)
                .map_collect(|&x, &y| teil_interp::functions::apply2(f, x, y)))
        }
        Op::Cast { .. } => Ok(arg(args, 0)?.mapv(round)),
    }
}

/// The next value of type `t` above the finite `y` (`y` itself where it is not finite).
fn next_up(y: f64, t: ElemType) -> f64 {
    if !y.is_finite() {
        return y;
    }
    match t {
        ElemType::F64 if y == 0.0 => f64::from_bits(1),
        ElemType::F64 if y > 0.0 => f64::from_bits(y.to_bits() + 1),
        ElemType::F64 => f64::from_bits(y.to_bits() - 1),
        ElemType::F32 => {
            let x = y as f32;
            f64::from(match x {
                0.0 => f32::from_bits(1),
                _ if x > 0.0 => f32::from_bits(x.to_bits() + 1),
                _ => f32::from_bits(x.to_bits() - 1),
            })
        }
    }
}

/// `max` of spec/values.md: NaN if either is NaN, else `a` when `a >= b`.
fn max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

fn min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// `einsum` by definition: for every output index, the left fold with `+` over every
/// assignment of the summed labels (row-major, in order of first appearance) of the product of
/// the operands' elements, left to right.
fn einsum(
    equation: &str,
    args: &[&Tensor],
    bug: Option<Bug>,
    round: impl Fn(f64) -> f64,
) -> Result<Tensor, OpsEvalError> {
    let (ins, out) = equation
        .split_once("->")
        .ok_or_else(|| OpsEvalError::NoArrow(equation.to_string()))?;
    let mut operands: Vec<Vec<char>> = ins.split(',').map(|s| s.chars().collect()).collect();
    if ins.is_empty() && args.is_empty() {
        operands.clear();
    }
    if operands.len() != args.len() {
        return Err(OpsEvalError::Operands {
            equation: equation.to_string(),
            needs: operands.len(),
            got: args.len(),
        });
    }
    if bug == Some(Bug::EinsumDropsRepeated) {
        // The planted bug: a label repeated within one operand becomes a fresh summed label.
        let mut fresh = ('\u{100}'..).filter(|c| !equation.contains(*c));
        for ls in &mut operands {
            for k in 1..ls.len() {
                if ls[..k].contains(&ls[k]) {
                    ls[k] = fresh.next().unwrap_or('?');
                }
            }
        }
    }
    let out: Vec<char> = out.chars().collect();
    let mut labels: Vec<char> = Vec::new();
    let mut extent: BTreeMap<char, usize> = BTreeMap::new();
    for (ls, t) in operands.iter().zip(args) {
        if ls.len() != t.ndim() {
            return Err(OpsEvalError::Rank {
                equation: equation.to_string(),
                rank: t.ndim(),
            });
        }
        for (l, &n) in ls.iter().zip(t.shape()) {
            if *extent.entry(*l).or_insert(n) != n {
                return Err(OpsEvalError::TwoExtents {
                    equation: equation.to_string(),
                    label: *l,
                });
            }
            if !labels.contains(l) {
                labels.push(*l);
            }
        }
    }
    let out_shape = out
        .iter()
        .map(|l| {
            extent
                .get(l)
                .copied()
                .ok_or_else(|| OpsEvalError::UnboundLabel {
                    equation: equation.to_string(),
                    label: *l,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let summed: Vec<char> = labels
        .iter()
        .copied()
        .filter(|l| !out.contains(l))
        .collect();
    let summed_shape: Vec<usize> = summed.iter().map(|l| extent[l]).collect();
    let mut value: BTreeMap<char, usize> = BTreeMap::new();
    let mut result = ArrayD::from_elem(IxDyn(&out_shape), 0.0);
    for (idx, cell) in result.indexed_iter_mut() {
        for (l, &i) in out.iter().zip(idx.slice()) {
            value.insert(*l, i);
        }
        let mut acc: Option<f64> = None;
        for s in ndarray::indices(IxDyn(&summed_shape)) {
            for (l, &i) in summed.iter().zip(s.slice()) {
                value.insert(*l, i);
            }
            let mut prod: Option<f64> = None;
            for (ls, t) in operands.iter().zip(args) {
                let at: Vec<usize> = ls.iter().map(|l| value[l]).collect();
                let x = t[IxDyn(&at)];
                prod = Some(prod.map_or(x, |p| round(p * x)));
            }
            let p = prod.unwrap_or(1.0);
            acc = Some(acc.map_or(p, |a| round(a + p)));
        }
        *cell = acc.unwrap_or(0.0);
    }
    Ok(result)
}

/// Serves `teil-target/1` on `input`/`output` until `input` ends: reads each case's inputs,
/// runs its `ops` with [`run`] and writes every output as float64 `.npy`. With `answers`, it
/// returns after that many answers, as a target that crashes midway would (for tests).
pub fn serve(
    input: impl BufRead,
    mut output: impl Write,
    bug: Option<Bug>,
    answers: Option<u64>,
) -> std::io::Result<()> {
    for (given, line) in input.lines().enumerate() {
        if answers.is_some_and(|n| given as u64 >= n) {
            return Ok(());
        }
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let (id, answer) = match serde_json::from_str::<Value>(&line) {
            Ok(req) => {
                let id = req.get("id").cloned().unwrap_or(Value::Null);
                let answer = match answer(&req, bug) {
                    Ok(None) => serde_json::json!({"status": "ok"}),
                    Ok(Some(reason)) => {
                        serde_json::json!({"status": "unsupported", "reason": reason})
                    }
                    Err(e) => serde_json::json!({"status": "error", "message": e.to_string()}),
                };
                (id, answer)
            }
            Err(e) => (
                Value::Null,
                serde_json::json!({"status": "error", "message": format!("bad request: {e}")}),
            ),
        };
        let mut answer = answer;
        answer["id"] = id;
        // The optional name a target gives itself: reproducers record it.
        answer["target"] = Value::from(match bug {
            Some(b) => format!("teil ops-target --plant {}", b.name()),
            None => "teil ops-target".to_string(),
        });
        writeln!(output, "{answer}")?;
        output.flush()?;
    }
    Ok(())
}

/// One case: `Ok(None)` done, `Ok(Some(reason))` unsupported, `Err` an error message.
fn answer(req: &Value, bug: Option<Bug>) -> Result<Option<String>, OpsEvalError> {
    let Some(ops) = req.get("ops").and_then(Value::as_array) else {
        return Ok(Some("this target runs the ops/1 form only".into()));
    };
    let steps = ops
        .iter()
        .map(Step::from_json)
        .collect::<Result<Vec<_>, _>>()
        .map_err(OpsEvalError::Ops)?;
    let mut env = Inputs::new();
    let vars = |field: &str| {
        req.get(field)
            .and_then(Value::as_object)
            .ok_or_else(|| OpsEvalError::MissingField(field.to_string()))
    };
    fn path(v: &Value) -> Result<&Path, OpsEvalError> {
        v.get("path")
            .and_then(Value::as_str)
            .map(Path::new)
            .ok_or(OpsEvalError::MissingPath)
    }
    for (name, v) in vars("inputs")? {
        let t = teil_io::npy::read(path(v)?).map_err(|source| OpsEvalError::Input {
            name: name.clone(),
            source,
        })?;
        env.insert(name.clone(), t);
    }
    run(&steps, &mut env, bug)?;
    for (name, v) in vars("outputs")? {
        let t = env
            .get(name)
            .ok_or_else(|| OpsEvalError::NeverBound(name.clone()))?;
        let p = path(v)?;
        teil_io::files::write_atomically(p, &teil_io::npy::to_bytes(t))?;
    }
    Ok(None)
}
