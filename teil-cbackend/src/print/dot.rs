//! Printing the scalar dot products of [`Strategy::Dot`](crate::ir::Strategy::Dot) (a variant
//! whose sums are scalars, [`Lanes::width`](crate::ir::Lanes::width) 1), and the cells past the
//! last whole block of lanes, side by side, which the vector dot products share
//! ([`Remainder`]).

use super::expr::{add_term, affine, offset, plus};
use super::loops::{name_inner, named_loops, within_loops, Fresh};
use super::nest::c_type;
use super::writer::Writer;
use crate::ir::{Affine, Contraction, Kernel, Label};
use teil::ast::ElemType;

/// `lanes` cells at a time along the target label with the smallest stride in the target; the
/// remaining labels are ordinary loops outside, but those of `inner`, inside
/// (`Strategy::Dot::inner`).
pub(super) fn print(
    k: &Kernel,
    c: &Contraction,
    lane: Label,
    inner: &[Label],
    lanes: u64,
    w: &mut Writer,
    fresh: &mut Fresh,
) {
    let st = affine(k, &c.target);
    // The operands' strides, `a`'s first.
    let ss: Vec<Affine> = c.operands().map(|x| affine(k, x)).collect();
    let lane_n = c
        .free
        .iter()
        .find(|f| f.var == lane)
        .map_or(0, |f| f.extent);
    let skip: Vec<Label> = std::iter::once(lane).chain(inner.iter().copied()).collect();
    within_loops(k, c, &skip, w, fresh, |w, fresh, mut names, pragma| {
        let lv = fresh.name();
        let inner = name_inner(c, inner, &mut names, fresh);
        let kv = fresh.name();
        names.insert(lane, lv.clone());
        names.insert(c.k.var, kv.clone());
        let terms = |s: &Affine| -> Vec<(String, u64)> {
            names.iter().map(|(l, n)| (n.clone(), s.get(*l))).collect()
        };
        let names: Vec<String> = c
            .operands()
            .chain([&c.target])
            .map(|x| k.buffer(x.buf).c_name.clone())
            .collect();
        // Each operand's element of the block's first cell, its stride along the lane; the
        // target's.
        let cell = |name: &'_ str, s: &Affine| Cell {
            buf: name.to_string(),
            offset: offset(&terms(s), s.constant),
            lane_stride: s.get(lane),
        };
        let operands: Vec<Cell> = names.iter().zip(&ss).map(|(n, s)| cell(n, s)).collect();
        let target = cell(&names[names.len() - 1], &st);
        let kn = c.k.extent;
        let full = lane_n - lane_n % lanes.max(1);
        if pragma {
            w.directive("#pragma omp parallel for");
        }
        w.block_noted(
            format!("for (long long {lv} = 0; {lv} < {full}; {lv} += {lanes})"),
            format!("/* {lanes} cells at a time */"),
            |w| named_loops(w, &inner, &|w| {
                for u in 0..lanes {
                    w.line(format!("{} teil_s{u} = -0.0;", c_type(c.elem)));
                }
                w.block(format!("for (long long {kv} = 0; {kv} < {kn}; {kv}++)"), |w| {
                    // Lanes that are rows of an operand stream through several cache lines at
                    // once, which the hardware prefetchers follow badly: fetch the next
                    // block's rows, one cache line per term, while this block runs (only where
                    // the next block exists and lies inside the rows it will read, and not
                    // where loops run inside the lane's blocks: the next block comes after
                    // them).
                    for (x, s) in operands.iter().zip(&ss) {
                        let (sl, sk) = (x.lane_stride, s.get(c.k.var));
                        if sk == 1 && sl >= kn && full > lanes && inner.is_empty() {
                            w.directive("#if defined(__GNUC__) && !defined(teil_portable)");
                            w.line(format!(
                                "if ({lv} + {lanes} < {full}) __builtin_prefetch(&{}[{} + {} + {kv} * {}]);",
                                x.buf,
                                x.offset,
                                lanes * sl,
                                lanes - 1
                            ));
                            w.directive("#endif");
                        }
                    }
                    for u in 0..lanes {
                        let factors: Vec<String> = operands.iter().map(|x| x.at(u)).collect();
                        w.line(add_term(k.fma, 1, c.elem, &format!("teil_s{u}"), &factors));
                    }
                });
                for u in 0..lanes {
                    w.line(format!("{} = teil_s{u};", target.at(u)));
                }
            }),
        );
        if full < lane_n {
            let cells = Remainder {
                lane: (&lv, full, lane_n),
                k: (&kv, kn),
                fma: k.fma,
                elem: c.elem,
            };
            let rows = [(operands, target)];
            named_loops(w, &inner, &|w| cells.print(w, &rows));
        }
    });
}

/// The cells of a lane past the last whole group of lanes (`lane.1..lane.2` of the lane label
/// `lane.0`), fewer than a group, in each row of a block: each its own sum from `-0.0` over
/// `k = 0..k.1` in order (in `elem`), the remainder of the scalar and the vector dot kernels.
/// The sums run
/// side by side, at least [`Remainder::CHAINS`] (or all of one row's cells) in one loop over
/// `k`, so that their chains of additions overlap: the rows' sums of one cell next to each
/// other (they share the column operand's element), cell after cell. Each sum keeps its order.
pub(super) struct Remainder<'a> {
    pub(super) lane: (&'a str, u64, u64),
    pub(super) k: (&'a str, u64),
    pub(super) fma: bool,
    pub(super) elem: ElemType,
}

/// An operand or the target of consecutive cells along the lane: its C name, the offset of the
/// first cell's element (a C expression in the lane and `k` variables) and its stride along the
/// lane.
pub(super) struct Cell {
    pub(super) buf: String,
    pub(super) offset: String,
    pub(super) lane_stride: u64,
}

impl Cell {
    /// The element of the `u`-th cell from the first.
    fn at(&self, u: u64) -> String {
        format!("{}[{}]", self.buf, plus(&self.offset, u * self.lane_stride))
    }
}

impl Remainder<'_> {
    /// The fewest sums that run side by side where a block has that many: more independent
    /// chains than a core has adders in flight (two or four of latency three or four).
    const CHAINS: u64 = 8;

    /// The remaining cells of the block's rows: for each row, `target` = Σ_k of the product of
    /// `operands`, for each cell.
    pub(super) fn print(&self, w: &mut Writer, rows: &[(Vec<Cell>, Cell)]) {
        let (lv, full, lane_n) = self.lane;
        let cells = lane_n - full;
        // (cell, row) pairs, the rows of one cell next to each other.
        let sums: Vec<(u64, &(Vec<Cell>, Cell))> = (0..cells)
            .flat_map(|u| rows.iter().map(move |r| (u, r)))
            .collect();
        let of_rows = if rows.len() > 1 {
            format!(" of {} rows", rows.len())
        } else {
            String::new()
        };
        w.block_noted(
            "",
            format!("/* the remaining {cells} cells{of_rows}, side by side */"),
            |w| {
                w.line(format!("long long {lv} = {full};"));
                let chunk = Self::CHAINS.max(cells) as usize;
                if sums.len() <= chunk {
                    self.group(w, &sums);
                } else {
                    for group in sums.chunks(chunk) {
                        w.block("", |w| self.group(w, group));
                    }
                }
            },
        );
    }

    /// One loop over `k` of the sums `group` ((cell, row) pairs), side by side.
    fn group(&self, w: &mut Writer, group: &[(u64, &(Vec<Cell>, Cell))]) {
        let (kv, kn) = self.k;
        let names: Vec<String> = (0..group.len()).map(|x| format!("teil_s{x}")).collect();
        let init: Vec<String> = names.iter().map(|s| format!("{s} = -0.0")).collect();
        w.line(format!("{} {};", c_type(self.elem), init.join(", ")));
        w.block(
            format!("for (long long {kv} = 0; {kv} < {kn}; {kv}++)"),
            |w| {
                for (s, (u, (operands, _))) in names.iter().zip(group) {
                    let factors: Vec<String> = operands.iter().map(|x| x.at(*u)).collect();
                    w.line(add_term(self.fma, 1, self.elem, s, &factors));
                }
            },
        );
        for (s, (u, (_, target))) in names.iter().zip(group) {
            w.line(format!("{} = {s};", target.at(*u)));
        }
    }
}
