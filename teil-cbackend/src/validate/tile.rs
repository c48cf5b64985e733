//! Tiled steps ([`Step::Tiled`]): a transposing nest visited in blocks.

use super::error::ValidationError;
use super::machine::{Machine, MachineDomain};
use crate::ir::*;
use std::collections::BTreeMap;

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// A tiled step: the loops in order with `p` and `q` over blocks, then the point loops of
    /// `q` and `p` (the order documented on [`Tiled`]).
    pub(super) fn tiled(&mut self, t: &Tiled) -> Result<(), ValidationError> {
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
    pub(super) fn tiled_loops(
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
}
