//! Packed products ([`Strategy::Packed`]): panels, slivers and register tiles in the printed
//! order.

use super::error::ValidationError;
use super::machine::{acc_value, fold, Acc, Machine, MachineDomain};
use crate::ir::*;
use teil::ast::RedOp;

/// The layout of a packed contraction on one target, as [`Machine::panels`] reads it.
pub(super) struct Layout<'c> {
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

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// A [`Strategy::Packed`] step: its tile and panels checked as the printed C needs them,
    /// then every batch cell's panels ([`Self::panels`]).
    pub(super) fn packed_step(&mut self, c: &Contraction) -> Result<(), ValidationError> {
        let Strategy::Packed {
            swap,
            batch,
            rows,
            cols,
            m,
            n,
            flat,
            variants,
        } = &c.strategy
        else {
            return Err(self.malformed("not a packed product".to_string()));
        };
        if *flat && (c.outer.is_none() || !self.k.reassociate) {
            return Err(self.malformed(
                "a flat sum of a single sum, or where the kernel may not reassociate".to_string(),
            ));
        }
        let t = self.target;
        let Some(v) = variants.iter().find(|v| v.target == t) else {
            return Err(self.malformed(format!("no packed variant for {t}")));
        };
        if v.kc == 0 || v.mc == 0 || v.nc == 0 {
            return Err(self.malformed(format!(
                "a packed panel of 0 rows, columns or terms for {t}"
            )));
        }
        // The printed C packs whole slivers into panels of mc x kc and kc x nc elements
        // and keeps a tile row in vectors of the target's width (in elements of the type).
        let lanes = t.lanes(c.elem);
        if v.mr == 0 || v.nr == 0 || v.nr % lanes != 0 || v.mc % v.mr != 0 || v.nc % v.nr != 0 {
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
    /// The panel loops of the packed product (the order documented on [`Strategy::Packed`]).
    pub(super) fn panels(&mut self, c: &Contraction, p: &Layout) -> Result<(), ValidationError> {
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
                                if !c.nested() {
                                    // One sum, or a two-level sum summed flat.
                                    for t in pc..pc + kcb {
                                        self.bind_term(c, t);
                                        let v = self.add_term(p.row_op, Some(p.col_op), &acc)?;
                                        acc = Acc::Value(v);
                                    }
                                    self.write(c.target.buf, &idx, acc_value(acc))?;
                                    continue;
                                }
                                // A two-level sum: the inner sum of each outer index from
                                // `-0.0`, added to the cell's sum after its last term.
                                let mut part = Acc::Identity(RedOp::Sum);
                                for t in pc..pc + kcb {
                                    self.bind_term(c, t);
                                    if t % inner == 0 {
                                        part = Acc::Identity(RedOp::Sum);
                                    }
                                    part = Acc::Value(self.add_term(
                                        p.row_op,
                                        Some(p.col_op),
                                        &part,
                                    )?);
                                    if t % inner == inner - 1 {
                                        acc =
                                            Acc::Value(fold(&acc, acc_value(part.clone()), c.elem));
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
    /// Binds the summation labels to term `t` of every cell: `k = t`, or in a two-level sum
    /// `o = t / K`, `k = t % K` (`Contraction::terms`).
    fn bind_term(&mut self, c: &Contraction, t: u64) {
        match c.outer {
            None => self.env.insert(c.k.var, t),
            Some(o) => {
                let inner = c.k.extent.max(1);
                self.env.insert(o.var, t / inner);
                self.env.insert(c.k.var, t % inner)
            }
        };
    }

    /// Binds the labels of `group` to the multi-index of flat number `x` as the printed C
    /// computes it: the last label varies fastest, and the first takes what is left (so a
    /// number past the group's cells gives an out-of-range first label, which the access
    /// rejects).
    pub(super) fn decompose(&mut self, group: &[Bound], mut x: u64) {
        for (i, b) in group.iter().enumerate().rev() {
            if i == 0 {
                self.env.insert(b.var, x);
            } else {
                self.env.insert(b.var, x % b.extent.max(1));
                x /= b.extent.max(1);
            }
        }
    }
}
