//! Where undefined cells in a result come from.
//!
//! At the boundary `•` and NaN are both written as NaN. To tell the caller which result cells
//! are undefined and which uninitialized variables they came from, this module runs the fast
//! evaluator in [`Mode::Definedness`]: every initially undefined cell (of a variable the caller
//! did not supply) becomes NaN, every defined cell 1.0 (a NaN the caller supplied is a defined
//! value, spec/values.md, "At the boundary"), and the
//! program then yields NaN exactly in the cells the oracle computes as `•`. One more run per
//! source variable, with only that variable's cells undefined, attributes the cells to it.
//! NaN cells that are defined in this sense came from IEEE arithmetic (`0/0`, `inf - inf`) or
//! from NaN the caller supplied.
//!
//! Backends other than the fast evaluator reuse this unchanged: it needs only the program, the
//! caller's inputs and the results.

use crate::error::RunError;
use crate::fast::{self, FastStore, Mode};
use crate::Tensor;
use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;
use teil::check::VarInit;
use teil::CheckedProgram;

/// Most source variables attributed one by one; beyond this, sources are attributed by the
/// statements' data flow (`flow`) without the per-variable runs (each costs one evaluation
/// of the program).
pub const MAX_ATTRIBUTED_SOURCES: usize = 16;

/// Most sources named in one warning; the rest are counted (`and from 12 more variables`), so
/// that a warning's length does not grow with the program.
pub const MAX_LISTED_SOURCES: usize = 8;

/// Why a variable's cells start undefined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// The caller did not supply it (not an input, or an input left out), and a statement
    /// reads it before any statement assigns it.
    NotSupplied,
    /// An output no statement assigns, which the caller did not supply: its own initial value.
    NeverAssigned,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub kind: SourceKind,
}

/// NaN cells of one result variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub var: String,
    /// Cells that are `•` (undefined).
    pub undefined: u64,
    /// 1-based index of the first undefined cell in row-major order.
    pub first_undefined: Option<Vec<u64>>,
    /// Variables whose undefined initial cells flow into this variable's undefined cells.
    pub sources: Vec<Source>,
    /// Defined cells that are NaN by IEEE arithmetic.
    pub nan: u64,
    pub first_nan: Option<Vec<u64>>,
}

impl Report {
    /// The warning lines `teil run` prints (lower-case, no trailing period).
    pub fn messages(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(first) = &self.first_undefined {
            let cells = if self.undefined == 1 { "cell" } else { "cells" };
            let mut m = format!(
                "`{}` has {} undefined {cells}, written as NaN (the first is {}{})",
                self.var,
                self.undefined,
                self.var,
                index(first)
            );
            if !self.sources.is_empty() {
                let mut list: Vec<String> = self
                    .sources
                    .iter()
                    .take(MAX_LISTED_SOURCES)
                    .map(|s| match s.kind {
                        SourceKind::NotSupplied => {
                            format!("`{}`, which was read before it was assigned", s.name)
                        }
                        SourceKind::NeverAssigned => {
                            format!("`{}` itself, which no statement assigns", s.name)
                        }
                    })
                    .collect();
                let more = self.sources.len().saturating_sub(MAX_LISTED_SOURCES);
                if more > 0 {
                    let vars = if more == 1 { "variable" } else { "variables" };
                    list.push(format!("{more} more {vars}"));
                }
                m.push_str(&format!("; they come from {}", list.join(" and from ")));
            }
            out.push(m);
        }
        if let Some(first) = &self.first_nan {
            let cells = if self.nan == 1 { "cell" } else { "cells" };
            out.push(format!(
                "`{}` has {} NaN {cells} computed from defined values (NaN inputs, or arithmetic such as 0/0) (the first is {}{})",
                self.var,
                self.nan,
                self.var,
                index(first)
            ));
        }
        out
    }
}

/// `[1, 2]`, the way the trace and the warnings write 1-based indices.
pub fn index(idx: &[u64]) -> String {
    let parts: Vec<String> = idx.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// 1-based multi-index of the row-major offset `off` in `shape`.
fn unravel(mut off: usize, shape: &[usize]) -> Vec<u64> {
    let mut idx = vec![0u64; shape.len()];
    for p in (0..shape.len()).rev() {
        idx[p] = (off % shape[p]) as u64 + 1;
        off /= shape[p];
    }
    idx
}

/// Reports on the NaN cells of the variables named in `outputs` in `results` (the final
/// store of a run of `p` on `inputs`). Variables without NaN cells get no report.
pub fn analyse(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    results: &BTreeMap<String, Tensor>,
    outputs: &[String],
) -> Result<Vec<Report>, RunError> {
    let has_nan = |n: &String| results.get(n).is_some_and(|t| t.iter().any(|x| x.is_nan()));
    if !outputs.iter().any(has_nan) {
        return Ok(Vec::new());
    }
    // Definedness of the initial store, and the variables that start with undefined cells.
    let mut sources = Vec::new();
    let mut base = FastStore::new();
    for d in &p.program().decls {
        let shape: Vec<usize> = d.extents.iter().map(|n| n.value as usize).collect();
        let mask = match inputs.get(&d.name.name) {
            // Every supplied cell is defined, NaN included.
            Some(t) => ArrayD::from_shape_vec(
                IxDyn(t.shape()),
                crate::store::filled(&d.name.name, t.len(), 1.0)?,
            )
            .map_err(|e| RunError::Internal(e.to_string()))?,
            None => {
                let len = crate::budget::checked_len(&d.name.name, &d.shape())?;
                // Only a variable whose initial value some statement (or, for an output never
                // assigned, the caller) observes can be where an undefined cell comes from.
                let init = p.var_init(&d.name.name);
                let kind = if init.is_some_and(VarInit::read_before_written) {
                    Some(SourceKind::NotSupplied)
                } else if !init.is_some_and(VarInit::written) {
                    Some(SourceKind::NeverAssigned)
                } else {
                    None
                };
                if let Some(kind) = kind {
                    sources.push(Source {
                        name: d.name.name.clone(),
                        kind,
                    });
                }
                ArrayD::from_shape_vec(
                    IxDyn(&shape),
                    crate::store::filled(&d.name.name, len, f64::NAN)?,
                )
                .map_err(|e| RunError::Internal(e.to_string()))?
            }
        };
        base.insert(d.name.name.clone(), mask);
    }
    let (all, _) = fast::run(p, crate::try_clone_store(&base)?, Mode::Definedness)?;
    // Per source: only its undefined cells stay NaN.
    let mut per_source: Vec<(Source, FastStore)> = Vec::new();
    if sources.len() <= MAX_ATTRIBUTED_SOURCES {
        for s in &sources {
            let mut store = crate::try_clone_store(&base)?;
            for (name, m) in store.iter_mut() {
                if name != &s.name {
                    m.mapv_inplace(|_| 1.0);
                }
            }
            let (out, _) = fast::run(p, store, Mode::Definedness)?;
            per_source.push((s.clone(), out));
        }
    }
    let flowing = if per_source.is_empty() {
        flow(p, &sources)
    } else {
        BTreeMap::new()
    };
    let mut reports = Vec::new();
    for name in outputs.iter().filter(|n| has_nan(n)) {
        let (Some(res), Some(mask)) = (results.get(name), all.get(name)) else {
            continue;
        };
        let res = res.as_standard_layout();
        let shape = res.shape().to_vec();
        let mut r = Report {
            var: name.clone(),
            undefined: 0,
            first_undefined: None,
            sources: Vec::new(),
            nan: 0,
            first_nan: None,
        };
        for (off, (x, m)) in res.iter().zip(mask.iter()).enumerate() {
            if m.is_nan() {
                r.undefined += 1;
                r.first_undefined
                    .get_or_insert_with(|| unravel(off, &shape));
            } else if x.is_nan() {
                r.nan += 1;
                r.first_nan.get_or_insert_with(|| unravel(off, &shape));
            }
        }
        if r.undefined > 0 {
            if per_source.is_empty() {
                r.sources = flowing.get(name).cloned().unwrap_or_default();
            }
            for (s, out) in &per_source {
                // The source contributed if one of the output's undefined cells is undefined
                // when only this source starts undefined.
                if let Some(m) = out.get(name) {
                    if mask
                        .iter()
                        .zip(m.iter())
                        .any(|(a, b)| a.is_nan() && b.is_nan())
                    {
                        r.sources.push(s.clone());
                    }
                }
            }
        }
        reports.push(r);
    }
    Ok(reports)
}

/// The sources each variable's final value may depend on, by the statements' data flow: a
/// statement's target depends on what every variable its value reads depends on at that point
/// (a source, before it is assigned, on itself; an output never assigned, on itself). An
/// over-approximation of the per-source runs, cell by cell, in time linear in the program's
/// reads times the sources that reach them.
fn flow(p: &CheckedProgram, sources: &[Source]) -> BTreeMap<String, Vec<Source>> {
    let mut deps: BTreeMap<&str, std::collections::BTreeSet<usize>> = sources
        .iter()
        .enumerate()
        .map(|(k, s)| (s.name.as_str(), std::collections::BTreeSet::from([k])))
        .collect();
    for stmt in &p.program().stmts {
        let mut reached = std::collections::BTreeSet::new();
        stmt.value.walk(&mut |e| {
            if let teil::ast::ExprKind::Var(v) = &e.kind {
                if let Some(d) = deps.get(v.name.as_str()) {
                    reached.extend(d.iter().copied());
                }
            }
        });
        deps.insert(stmt.target.name.as_str(), reached);
    }
    deps.into_iter()
        .map(|(name, set)| {
            let list = set.into_iter().map(|k| sources[k].clone()).collect();
            (name.to_string(), list)
        })
        .collect()
}
