//! Dot-product steps ([`Strategy::Dot`]): scalar and in vectors, the printed order.

use super::error::ValidationError;
use super::machine::{acc_value, Acc, Machine, MachineDomain};
use crate::ir::*;
use teil::ast::RedOp;

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// A [`Strategy::Dot`] step: its record checked against the strides and extents the
    /// printed loads assume, then every cell in the dot products' order ([`Self::dot`]).
    pub(super) fn dot_step(&mut self, c: &Contraction) -> Result<(), ValidationError> {
        let Strategy::Dot {
            lane,
            rows_of,
            inner,
            reads,
            prefetch,
            variants,
        } = &c.strategy
        else {
            return Err(self.malformed("not dot products".to_string()));
        };
        let t = self.target;
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
            return Err(self.malformed(format!("dot lane l{} is not a target label", lane.0)));
        };
        let Some(v) = variants.iter().find(|v| v.target == t) else {
            return Err(self.malformed(format!("no dot variant for {t}")));
        };
        // Sums in scalars, or in the target's vectors of the contraction's type.
        let width_ok = v.width == 1 || v.width == t.lanes(c.elem);
        if v.lanes == 0 || v.rows == 0 || !width_ok || v.lanes % v.width != 0 {
            return Err(self.malformed(format!(
                "dot products with {} lanes x {} rows in vectors of {} {}s for {t}",
                v.lanes, v.rows, v.width, c.elem
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
    /// The dot-product order within the other target loops: blocks of rows (`rows`: the row
    /// label and the rows per block, while a whole block fits, then one by one), in each
    /// blocks of `lanes` cells of the lane, the `inner` labels' loops inside them, each
    /// block's cells summed side by side with every row of the block, then each row's
    /// remaining cells one by one.
    pub(super) fn dot(
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
}
