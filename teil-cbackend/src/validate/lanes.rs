//! Lane folds ([`Node::LaneFold`]): a reduction loop in lanes, combined by the lane tree, with
//! the fold in order again where the result is a zero or a NaN (spec/padding.md, "Lane
//! reductions", "Sums in lanes").

use super::error::ValidationError;
use super::machine::{fold, lane_tree, Acc, Machine, MachineDomain};
use crate::ir::*;
use teil::ast::RedOp;

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// A sum in lanes ([`LaneFold`]): lane `j` folds the whole blocks' terms `i ≡ j (mod
    /// LANES)` from the identity, the lanes combine as [`LaneFold::TREE`], `acc` adds the
    /// result and then the remaining terms in order. Each term is added as the loop adds it
    /// (an accumulator update: fused in fma mode where the loop's is).
    pub(super) fn lane_sum(&mut self, l: &LaneFold) -> Result<(), ValidationError> {
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
    pub(super) fn combine_lanes(
        &mut self,
        acc: u32,
        lane: impl Fn(usize) -> u32,
    ) -> Result<(), ValidationError> {
        let mut get = |j: usize| self.accs.remove(&lane(j));
        let total = lane_tree(
            (0..LaneFold::LANES as usize)
                .map(|j| get(j).unwrap_or(Acc::Identity(RedOp::Sum)))
                .collect(),
            self.acc_elem(acc),
        );
        let cur = self.accs.get(&acc).cloned().ok_or_else(|| {
            self.malformed(format!(
                "accumulator acc{acc} is used before it is declared"
            ))
        })?;
        let elem = self.acc_elem(acc);
        self.accs.insert(acc, Acc::Value(fold(&cur, total, elem)));
        Ok(())
    }
}
