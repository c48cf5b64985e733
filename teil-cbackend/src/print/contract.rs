//! Printing [`Step::Contract`](crate::ir::Step::Contract) steps: the strategy the pass chose
//! ([`Strategy`]), printed as it is. The meaning of each strategy (the exact order of
//! operations) is documented on [`Strategy`]; this module only dispatches, one branch per
//! group of targets, to the module of each kernel form: [`packed`] (the packed product's loops
//! and panels) with the register tiles it calls (`tile`), [`dot`] (scalar dot products),
//! [`vector_dot`] (dot products in vectors) and [`lane_dot`] (dot products in lanes). What
//! they share comes from below them: the targets' branches (`target`), the loops and their
//! names (`loops`), offsets and statements (`expr`).
//!
//! A strategy has one variant per [`Target`](crate::ir::Target); targets whose variants
//! compute in the same order share one printed branch ([`Strategy::groups`]), and a step with
//! several branches is an `#if` chain on `teil_vector_bits`, which `target::select` defines
//! once per translation unit. The register tiles (`tile::tiles`) are chosen by the same macro.

use super::loops::Fresh;
use super::target::branches;
use super::writer::Writer;
use super::{dot, lane_dot, packed, vector_dot};
use crate::ir::{Contraction, Kernel, Strategy};

/// Prints the contraction step `c`: its variants, one branch per group of targets, each with
/// its own C names for labels (`i0`, `i1`, ...).
pub(super) fn print(k: &Kernel, c: &Contraction, w: &mut Writer) {
    branches(&c.strategy.groups(), w, |w, t| {
        let mut fresh = Fresh::default();
        match &c.strategy {
            Strategy::Packed { variants, .. } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    packed::print(k, c, v, w, &mut fresh);
                }
            }
            Strategy::LaneSums { variants, .. } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    lane_dot::print(k, c, v, w, &mut fresh);
                }
            }
            Strategy::Dot {
                lane,
                inner,
                variants,
                ..
            } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    if v.width > 1 {
                        vector_dot::print(k, c, v, w, &mut fresh);
                    } else {
                        dot::print(k, c, *lane, inner, v.lanes, w, &mut fresh);
                    }
                }
            }
        }
    });
}
