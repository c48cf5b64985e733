//! Printing the dot products in lanes of [`Strategy::LaneSums`]: every cell's sum in
//! [`LaneFold::LANES`] lanes along its terms (the association its documentation and
//! spec/padding.md, "Dot products in lanes", define), several rows side by side. The lanes are
//! vectors of the variant's width (an array of 16 doubles in plain C); an operand that does not
//! read the rows gives one vector per block of terms to all of them. After the whole blocks of
//! terms each row's lanes combine as [`LaneFold::TREE`] (`lanes::lane_tree`, shared with sums
//! in lanes) and its remaining terms are added in order. In binary32 every operation is a
//! `float` one: the lanes are vectors of floats, the tree combines vectors of four floats.

use super::expr::{add_term, affine, negative_zero, offset, plus, vector_type};
use super::lanes::{lane_tree, lane_tree_array};
use super::loops::{within_loops, Fresh};
use super::nest::c_type;
use super::writer::Writer;
use crate::ir::{Affine, Contraction, Kernel, LaneFold, Lanes, Strategy};
use teil::ast::ElemType;

/// The variant `v` of the lane sums `c`: the other target labels as loops, outermost first,
/// then the row blocks of [`Lanes::row_blocks`] (`v.rows` rows, adjacent or from separate
/// parts), then the rows after them one by one.
pub(super) fn print(k: &Kernel, c: &Contraction, v: &Lanes, w: &mut Writer, fresh: &mut Fresh) {
    let Strategy::LaneSums { rows_of, parts, .. } = c.strategy else {
        return;
    };
    let rn = c
        .free
        .iter()
        .find(|f| f.var == rows_of)
        .map_or(0, |f| f.extent);
    within_loops(k, c, &[rows_of], w, fresh, |w, fresh, mut names, pragma| {
        let rv = fresh.name();
        let kv = fresh.name();
        names.insert(rows_of, rv.clone());
        let blocks = v.row_blocks(rn, parts);
        // Each buffer's element of the block's first row at term 0, and its distance between
        // the block's rows (`apart` rows).
        let cell = |x: &crate::ir::Access| {
            let s: Affine = affine(k, x);
            let terms: Vec<(String, u64)> =
                names.iter().map(|(l, n)| (n.clone(), s.get(*l))).collect();
            Cell {
                buf: k.buffer(x.buf).c_name.clone(),
                offset: offset(&terms, s.constant),
                row_stride: s.get(rows_of) * blocks.apart,
            }
        };
        let block = Block {
            k,
            elem: c.elem,
            v,
            ops: c.operands().map(cell).collect(),
            target: cell(&c.target),
            kv: &kv,
            terms: c.k.extent,
        };
        // The blocks (`rv` the first row of each), then the rows after them.
        let (per, step, apart) = (blocks.per, blocks.step, blocks.apart);
        let end = blocks.count * step;
        for (from, to, rows) in [(0, end, per), (blocks.rest(), rn, 1)] {
            if from == to {
                continue;
            }
            if pragma {
                w.directive("#pragma omp parallel for");
            }
            let header = match (rows, step) {
                (1, _) | (_, 1) => format!("for (long long {rv} = {from}; {rv} < {to}; {rv}++)"),
                _ => format!("for (long long {rv} = {from}; {rv} < {to}; {rv} += {step})"),
            };
            let note = match (rows, apart) {
                (1, _) => "/* one row at a time */".to_string(),
                (_, 1) => format!("/* {rows} rows at a time */"),
                _ => format!("/* {rows} rows at a time, {apart} apart */"),
            };
            w.block_noted(header, note, |w| {
                block.print(w, rows);
            });
        }
    });
}

/// A buffer's C name, the offset of its element for the block's first row (at term 0), and the
/// distance between the block's rows (0: every row shares its terms).
struct Cell {
    buf: String,
    offset: String,
    row_stride: u64,
}

impl Cell {
    /// The offset of row `u` of the block (at term 0).
    fn row(&self, u: u64) -> String {
        plus(&self.offset, self.row_stride * u)
    }

    /// The element of row `u` of the block, `at` terms on (a C expression).
    fn at(&self, u: u64, at: &str) -> String {
        match self.row(u).as_str() {
            "0" => format!("{}[{at}]", self.buf),
            row => format!("{}[{row} + {at}]", self.buf),
        }
    }
}

/// What every row block of one variant shares.
struct Block<'a> {
    k: &'a Kernel,
    /// The type of every operand, the target and each operation.
    elem: ElemType,
    v: &'a Lanes,
    /// The operands, `a`'s first (one for a sum of one operand); their terms have unit stride.
    ops: Vec<Cell>,
    target: Cell,
    /// The C name of the term index.
    kv: &'a str,
    /// The terms of every cell.
    terms: u64,
}

impl Block<'_> {
    /// One block of `rows` rows: the lanes over the whole blocks of terms, then each row's
    /// lanes combined, its remaining terms and its store.
    fn print(&self, w: &mut Writer, rows: u64) {
        if self.v.width > 1 {
            self.vectors(w, rows);
        } else {
            self.plain(w, rows);
        }
    }

    /// The block with each row's lanes in vectors of the variant's width.
    fn vectors(&self, w: &mut Writer, rows: u64) {
        let (kv, n) = (self.kv, self.terms);
        let lanes = LaneFold::LANES;
        let whole = n - n % lanes;
        let fma = self.k.fma;
        let (elem, width) = (self.elem, self.v.width);
        let nv = lanes / width;
        let (ty, bytes, typedef) = vector_type(elem, width);
        w.line(typedef);
        let zero = vec![negative_zero(elem); width as usize].join(", ");
        let sums: Vec<String> = (0..rows)
            .flat_map(|u| (0..nv).map(move |q| format!("teil_s{u}_{q}")))
            .collect();
        w.line(format!("{ty} {} = {{{zero}}};", sums[0]));
        if sums.len() > 1 {
            let rest: Vec<String> = sums[1..]
                .iter()
                .map(|s| format!("{s} = {}", sums[0]))
                .collect();
            w.line(format!("{ty} {};", rest.join(", ")));
        }
        let load = |w: &mut Writer, var: &str, x: &Cell, u: u64, q: u64| {
            let at = match q {
                0 => kv.to_string(),
                _ => format!("{kv} + {}", q * width),
            };
            w.line(format!(
                "{ty} {var}; __builtin_memcpy(&{var}, &{}, {bytes});",
                x.at(u, &at),
            ));
        };
        w.block(
            format!("for (long long {kv} = 0; {kv} < {whole}; {kv} += {lanes})"),
            |w| {
                // The shared operands' vectors once for every row.
                for (x, op) in self.ops.iter().enumerate() {
                    if op.row_stride == 0 {
                        for q in 0..nv {
                            load(w, &format!("teil_o{x}_{q}"), op, 0, q);
                        }
                    }
                }
                for u in 0..rows {
                    for q in 0..nv {
                        let factors: Vec<String> = self
                            .ops
                            .iter()
                            .enumerate()
                            .map(|(x, op)| {
                                if op.row_stride == 0 {
                                    format!("teil_o{x}_{q}")
                                } else {
                                    let var = format!("teil_r{u}_{x}_{q}");
                                    load(w, &var, op, u, q);
                                    var
                                }
                            })
                            .collect();
                        w.line(add_term(
                            fma,
                            width,
                            elem,
                            &format!("teil_s{u}_{q}"),
                            &factors,
                        ));
                    }
                }
            },
        );
        for u in 0..rows {
            w.block("", |w| {
                // The row's lanes as the four vectors of four that the tree combines,
                // element by element (taking the sums' addresses would keep them in
                // memory through the loop).
                let lane = |j: u64| format!("teil_s{u}_{}[{}]", j / width, j % width);
                let four = LaneFold::WIDTH;
                // Binary64's are the lane folds' `teil_lanes` (`print::lanes::HELPERS`).
                let four_ty = match elem {
                    ElemType::F64 => "teil_lanes".to_string(),
                    ElemType::F32 => {
                        let (name, _, typedef) = vector_type(elem, four);
                        w.line(typedef);
                        name
                    }
                };
                for q in 0..lanes / four {
                    let elements: Vec<String> = (0..four).map(|j| lane(q * four + j)).collect();
                    w.line(format!(
                        "{four_ty} teil_v{q} = {{{}}};",
                        elements.join(", ")
                    ));
                }
                lane_tree(w, elem);
                self.finish(w, u, "teil_l[0]", whole);
            });
        }
    }

    /// The block in plain C: each row's lanes in an array of 16 doubles.
    fn plain(&self, w: &mut Writer, rows: u64) {
        let (kv, n) = (self.kv, self.terms);
        let lanes = LaneFold::LANES;
        let whole = n - n % lanes;
        let fma = self.k.fma;
        let zeros = vec![negative_zero(self.elem); lanes as usize].join(", ");
        let ctype = c_type(self.elem);
        for u in 0..rows {
            w.line(format!("{ctype} teil_s{u}[{lanes}] = {{{zeros}}};"));
        }
        w.block(
            format!("for (long long {kv} = 0; {kv} < {whole}; {kv} += {lanes})"),
            |w| {
                w.block(
                    format!("for (int teil_j = 0; teil_j < {lanes}; teil_j++)"),
                    |w| {
                        for u in 0..rows {
                            let at = format!("{kv} + teil_j");
                            let factors: Vec<String> =
                                self.ops.iter().map(|op| op.at(u, &at)).collect();
                            w.line(add_term(
                                fma,
                                1,
                                self.elem,
                                &format!("teil_s{u}[teil_j]"),
                                &factors,
                            ));
                        }
                    },
                );
            },
        );
        for u in 0..rows {
            w.block("", |w| {
                let s = format!("teil_s{u}");
                lane_tree_array(w, &s);
                self.finish(w, u, &format!("{s}[0]"), whole);
            });
        }
    }

    /// Row `u`'s cell: its combined lanes `sum`, then its terms from `whole` on in order, stored.
    fn finish(&self, w: &mut Writer, u: u64, sum: &str, whole: u64) {
        let (kv, n) = (self.kv, self.terms);
        w.line(format!("{} teil_c = {sum};", c_type(self.elem)));
        if whole < n {
            w.block(
                format!("for (long long {kv} = {whole}; {kv} < {n}; {kv}++)"),
                |w| {
                    let factors: Vec<String> = self.ops.iter().map(|op| op.at(u, kv)).collect();
                    w.line(add_term(self.k.fma, 1, self.elem, "teil_c", &factors));
                },
            );
        }
        w.line(format!(
            "{}[{}] = teil_c;",
            self.target.buf,
            self.target.row(u)
        ));
    }
}
