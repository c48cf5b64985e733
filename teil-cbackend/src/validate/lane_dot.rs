//! Dot products in lanes ([`Strategy::LaneSums`]): each cell's sum in the association of a sum
//! in lanes (spec/padding.md, "Dot products in lanes").

use super::error::ValidationError;
use super::machine::{acc_value, lane_tree, Acc, Machine, MachineDomain};
use crate::ir::*;
use teil::ast::RedOp;

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// A [`Strategy::LaneSums`] step: its record checked against the strides and extents the
    /// printed lanes assume, then every row block in turn ([`Self::lane_sums`]).
    pub(super) fn lane_sums_step(&mut self, c: &Contraction) -> Result<(), ValidationError> {
        let Strategy::LaneSums {
            rows_of,
            parts,
            variants,
        } = &c.strategy
        else {
            return Err(self.malformed("not lane sums".to_string()));
        };
        let t = self.target;
        if c.outer.is_some() {
            return Err(self.malformed("lane sums of a two-level sum".to_string()));
        }
        if !self.k.reassociate {
            return Err(
                self.malformed("lane sums where the kernel may not reassociate".to_string())
            );
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
        // A vector holds the target's width in the contraction's type (or the sums are scalars).
        let width_ok = (v.width == 1 || v.width == t.lanes(c.elem)) && v.lanes % v.width == 0;
        if v.lanes != LaneFold::LANES || v.rows == 0 || !width_ok {
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
        let blocks = v.row_blocks(rows.extent, *parts);
        self.each_index(&others, &mut |m| m.lane_sums(c, *rows, blocks))
    }
    /// The order of dot products in lanes ([`Strategy::LaneSums`]) within the other target
    /// loops: the row blocks (then the rows after them one by one), each cell of a block
    /// summed in lanes ([`Machine::lane_dot`]).
    pub(super) fn lane_sums(
        &mut self,
        c: &Contraction,
        rows: Bound,
        b: RowBlocks,
    ) -> Result<(), ValidationError> {
        let blocks = (0..b.count)
            .map(|i| (0..b.per).map(|u| b.row(i, u)).collect::<Vec<_>>())
            .chain((b.rest()..rows.extent).map(|r| vec![r]));
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
    pub(super) fn lane_dot(&mut self, c: &Contraction) -> Result<D, ValidationError> {
        let n = c.k.extent;
        let whole = n - n % LaneFold::LANES;
        let mut lanes: Vec<Acc<D>> = vec![Acc::Identity(RedOp::Sum); LaneFold::LANES as usize];
        for kv in 0..whole {
            self.env.insert(c.k.var, kv);
            let lane = &mut lanes[(kv % LaneFold::LANES) as usize];
            *lane = Acc::Value(self.add_term(&c.a, c.b.as_ref(), lane)?);
        }
        let mut sum = Acc::Value(lane_tree(lanes, c.elem));
        for kv in whole..n {
            self.env.insert(c.k.var, kv);
            sum = Acc::Value(self.add_term(&c.a, c.b.as_ref(), &sum)?);
        }
        Ok(acc_value(sum))
    }
}
