//! A contraction step: the checks every strategy shares, then the step run by the module of
//! its kernel form ([`Strategy`]): `packed`, `dot`, `lane_dot`, as `print/contract.rs`
//! dispatches.

use super::error::ValidationError;
use super::machine::{Machine, MachineDomain};
use crate::ir::*;

impl<'k, D: MachineDomain> Machine<'k, D> {
    /// A contraction step, cell by cell in the order of its strategy ([`Strategy`]): each cell
    /// starts from `-0.0` (or, after the first panel of terms, from its own value) and adds the
    /// products of the operands for its terms in order.
    pub(super) fn contract(&mut self, c: &Contraction) -> Result<(), ValidationError> {
        if c.reads(c.target.buf) {
            return Err(self.malformed(format!(
                "the contraction's target {} is also an operand",
                self.buffer_name(c.target.buf)
            )));
        }
        for f in c.free.iter().chain([&c.k]).chain(&c.outer) {
            self.bind_new(f.var)?;
        }
        if c.strategy.targets() != Target::ALL {
            return Err(self.malformed(format!(
                "the contraction's variants are for {:?}, not one for each of {:?}",
                c.strategy.targets(),
                Target::ALL
            )));
        }
        // One element type throughout, as the pass chose it (`crate::ir::arithmetic`).
        let buffers = || std::iter::once(&c.target).chain(c.operands());
        if let Some(x) = buffers().find(|x| self.k.buffer(x.buf).elem != c.elem) {
            return Err(self.malformed(format!(
                "a {} contraction reads or writes {} of type {}",
                c.elem,
                self.buffer_name(x.buf),
                self.k.buffer(x.buf).elem
            )));
        }
        match &c.strategy {
            Strategy::Dot { .. } => self.dot_step(c),
            Strategy::LaneSums { .. } => self.lane_sums_step(c),
            Strategy::Packed { .. } => self.packed_step(c),
        }
    }
}
