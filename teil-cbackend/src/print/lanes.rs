//! Printing [`Node::LaneFold`](crate::ir::Node::LaneFold): a reduction loop in independent
//! lanes of GCC/Clang vectors. For `max`/`min`, with the exact fold again where the lanes
//! cannot decide the bits (the meaning and the argument are on [`LaneFold`]; spec/padding.md,
//! "Lane reductions"); plain C (`teil_vector_bits` 0) gets the loop itself. A sum's lanes are
//! its meaning (spec/padding.md, "Sums in lanes"), and plain C computes the same lanes in an
//! array.

use super::expr::multiply_add;
use super::nest::Printer;
use super::writer::Writer;
use crate::ir::{walk_val, LaneFold, Val, Visit};
use teil::ast::{ElemType, RedOp};

/// The vector helpers of lane folds, defined once per translation unit that has one (after
/// `teil_vector_bits` is chosen). Macros, not functions: a function taking a vector of 32 bytes
/// has a different ABI with and without AVX (GCC warns), and unused ones would be warnings. The
/// vectors hold [`LaneFold::WIDTH`] (4) doubles. A lane's compare-and-select is `teil_max`'s
/// (`teil_min`'s) lane by lane: a NaN `b` is taken, a NaN `a` kept, otherwise `b` only if it is
/// greater (less). `a` and `b` are variables.
pub(super) const HELPERS: &str = "\
/* Lane reductions (spec/padding.md, \"Lane reductions\"): vectors of four doubles whose lanes
 * fold as teil_max and teil_min do (a and b are variables). */
#if teil_vector_bits != 0
typedef double teil_lanes __attribute__((vector_size(32)));
typedef double teil_lanes_u __attribute__((vector_size(32), aligned(8), may_alias));
typedef long long teil_lanes_mask __attribute__((vector_size(32)));
#define teil_lanes_of(x) ((teil_lanes){(x), (x), (x), (x)})
#define teil_lanes_load(p) ((teil_lanes) * (const teil_lanes_u *)(p))
#define teil_lanes_pick(a, b, m) \\
    ((teil_lanes)(((teil_lanes_mask)(b) & (m)) | ((teil_lanes_mask)(a) & ~(m))))
#define teil_lanes_max(a, b) teil_lanes_pick(a, b, (teil_lanes_mask)(((b) != (b)) | ((b) > (a))))
#define teil_lanes_min(a, b) teil_lanes_pick(a, b, (teil_lanes_mask)(((b) != (b)) | ((b) < (a))))
#endif

";

/// The declarations of the lanes' vectors `teil_v0`, ..., all starting from `init` in every
/// lane.
fn lane_vectors(w: &mut Writer, init: &str) {
    w.line(format!("teil_lanes teil_v0 = teil_lanes_of({init});"));
    let rest: Vec<String> = (1..LaneFold::LANES / LaneFold::WIDTH)
        .map(|v| format!("teil_v{v} = teil_v0"))
        .collect();
    w.line(format!("teil_lanes {};", rest.join(", ")));
}

/// Combines the lanes of a sum held in the vectors `teil_v0`, ... (`teil_lanes`, vector `v`
/// holding lanes `4v .. 4v + 3`) as [`LaneFold::TREE`]: its steps between vectors (lane `j` of
/// one vector to lane `j` of another, for every `j`) as vector additions, then its steps within
/// the first vector on `teil_l[4]` of `elem`, declared here. The sum ends in `teil_l[0]`.
pub(super) fn lane_tree(w: &mut Writer, elem: ElemType) {
    let width = LaneFold::WIDTH as usize;
    let within = |&(dst, src): &(usize, usize)| dst / width == src / width;
    for (dst, src) in LaneFold::TREE.iter().filter(|s| !within(s)) {
        if dst % width == 0 {
            w.line(format!("teil_v{} += teil_v{};", dst / width, src / width));
        }
    }
    w.line(format!("{} teil_l[{width}];", super::nest::c_type(elem)));
    w.line("__builtin_memcpy(teil_l, &teil_v0, sizeof teil_l);");
    for (dst, src) in LaneFold::TREE.iter().filter(|s| within(s)) {
        w.line(format!("teil_l[{dst}] += teil_l[{src}];"));
    }
}

/// Combines the lanes of a sum held in the C array `s` of [`LaneFold::LANES`] doubles as
/// [`LaneFold::TREE`] (plain C). The sum ends in `s[0]`.
pub(super) fn lane_tree_array(w: &mut Writer, s: &str) {
    for (dst, src) in LaneFold::TREE {
        w.line(format!("{s}[{dst}] += {s}[{src}];"));
    }
}

impl Printer<'_> {
    /// The lane fold `l`, a block of its own.
    pub(super) fn lane_fold(&mut self, w: &mut Writer, l: &LaneFold) {
        if l.reassociates() {
            return self.lane_sum(w, l);
        }
        let i = self.fresh(l.var);
        let acc = format!("acc{}", l.acc);
        let (f, vf, id) = match l.op {
            RedOp::Min => ("teil_min", "teil_lanes_min", "teil_inf()"),
            // The pass makes lane folds of max and min only.
            _ => ("teil_max", "teil_lanes_max", "-teil_inf()"),
        };
        let n = l.extent;
        let term = self.val(&l.value, true);
        let (lanes, width) = (LaneFold::LANES, LaneFold::WIDTH);
        let vectors = lanes / width;
        let note = "/* in lanes (spec/padding.md, \"Lane reductions\") */";
        w.block_noted("", note, |w| {
            w.line(format!("long long {i} = 0;"));
            w.directive("#if teil_vector_bits != 0");
            lane_vectors(w, id);
            w.line("teil_lanes teil_x;");
            w.line(format!("double teil_l[{width}], teil_c;"));
            self.lane_blocks(w, l, &i, |p, w, v| {
                let x = p.lanes_val(&l.value, l);
                w.line(format!("teil_x = {x};"));
                w.line(format!("teil_v{v} = {vf}(teil_v{v}, teil_x);"));
            });
            for v in 1..vectors {
                w.line(format!("teil_v0 = {vf}(teil_v0, teil_v{v});"));
            }
            w.line("__builtin_memcpy(teil_l, &teil_v0, sizeof teil_l);");
            let mut c = acc.clone();
            for j in 0..width {
                c = format!("{f}({c}, teil_l[{j}])");
            }
            w.line(format!("teil_c = {c};"));
            // The remaining terms (none where the blocks cover the extent: an empty loop after
            // them draws GCC's -Waggressive-loop-optimizations).
            if n % lanes != 0 {
                w.block(format!("for (; {i} < {n}; {i}++)"), |w| {
                    w.line(format!("teil_c = {f}(teil_c, {term});"));
                });
            }
            w.line(
                "/* A NaN's payload and a zero's sign depend on the order: a NaN folds again in order,",
            );
            w.line(" * a zero is the first zero among acc and the terms (none is greater). */");
            w.chain(&mut [
                ("if (teil_c != teil_c)", &mut |w: &mut Writer| {
                    w.line(format!("teil_c = {acc};"));
                    w.block(format!("for ({i} = 0; {i} < {n}; {i}++)"), |w| {
                        w.line(format!("teil_c = {f}(teil_c, {term});"));
                    });
                }),
                ("else if (teil_c == 0.0)", &mut |w: &mut Writer| {
                    w.line(format!("teil_c = {acc};"));
                    w.block(
                        format!("for ({i} = 0; teil_c != 0.0 && {i} < {n}; {i}++)"),
                        |w| w.line(format!("teil_c = {term};")),
                    );
                }),
            ]);
            w.line(format!("{acc} = teil_c;"));
            w.directive("#else");
            w.block(format!("for (; {i} < {n}; {i}++)"), |w| {
                w.line(format!("{acc} = {f}({acc}, {term});"));
            });
            w.directive("#endif");
        });
    }

    /// The sum in lanes `l` ([`LaneFold`]'s meaning), a block of its own: four vectors of four
    /// lanes (or an array of sixteen in plain C) from `-0.0`, each adding its terms of the whole
    /// blocks as the loop adds a term (fused in fma mode where the loop's update is); the
    /// lanes combined as [`LaneFold::TREE`]; then the remaining terms, in order.
    fn lane_sum(&mut self, w: &mut Writer, l: &LaneFold) {
        let i = self.fresh(l.var);
        let acc = format!("acc{}", l.acc);
        let n = l.extent;
        let (lanes, width) = (LaneFold::LANES, LaneFold::WIDTH);
        let fma = self.k.fma;
        // `sum = sum + term` as the loop's accumulator update prints it, at `at`, on `width`
        // doubles.
        let add = |p: &mut Self, sum: &str, at: &str, width: u64| -> String {
            p.names.insert(l.var, at.to_string());
            let line = match (l.value.product(), width) {
                (Some((x, y)), 1) => {
                    multiply_add(fma, 1, ElemType::F64, sum, &p.val(x, true), &p.val(y, true))
                }
                (Some((x, y)), _) => multiply_add(
                    fma,
                    width,
                    ElemType::F64,
                    sum,
                    &p.lanes_val(x, l),
                    &p.lanes_val(y, l),
                ),
                (None, 1) => format!("{sum} += {};", p.val(&l.value, true)),
                (None, _) => format!("{sum} += {};", p.lanes_val(&l.value, l)),
            };
            p.names.insert(l.var, i.clone());
            line
        };
        let note = "/* in lanes, another association (spec/padding.md, \"Sums in lanes\") */";
        w.block_noted("", note, |w| {
            w.line(format!("long long {i} = 0;"));
            w.directive("#if teil_vector_bits != 0");
            lane_vectors(w, "-0.0");
            self.lane_blocks(w, l, &i, |p, w, v| {
                let at = p.names[&l.var].clone();
                w.line(add(p, &format!("teil_v{v}"), &at, width));
            });
            lane_tree(w, ElemType::F64);
            w.line(format!("{acc} += teil_l[0];"));
            w.directive("#else");
            let zeros = vec!["-0.0"; lanes as usize].join(", ");
            w.line(format!("double teil_s[{lanes}] = {{{zeros}}};"));
            w.block(
                format!("for (; {i} + {lanes} <= {n}; {i} += {lanes})"),
                |w| {
                    w.block(
                        format!("for (int teil_j = 0; teil_j < {lanes}; teil_j++)"),
                        |w| w.line(add(self, "teil_s[teil_j]", &format!("({i} + teil_j)"), 1)),
                    );
                },
            );
            lane_tree_array(w, "teil_s");
            w.line(format!("{acc} += teil_s[0];"));
            w.directive("#endif");
            if n % lanes != 0 {
                w.block(format!("for (; {i} < {n}; {i}++)"), |w| {
                    w.line(add(self, &acc, &i, 1));
                });
            }
        });
        self.names.insert(l.var, i);
    }

    /// The loop over the whole blocks of [`LaneFold::LANES`] terms of `l` (loop variable `i`,
    /// from its current value): `each(self, w, v)` prints vector `v`'s step, with the loop
    /// label named as the index of its first term.
    fn lane_blocks(
        &mut self,
        w: &mut Writer,
        l: &LaneFold,
        i: &str,
        mut each: impl FnMut(&mut Self, &mut Writer, u64),
    ) {
        let (lanes, width, n) = (LaneFold::LANES, LaneFold::WIDTH, l.extent);
        w.block(
            format!("for (; {i} + {lanes} <= {n}; {i} += {lanes})"),
            |w| {
                for v in 0..lanes / width {
                    let at = match v {
                        0 => i.to_string(),
                        _ => format!("({i} + {})", v * width),
                    };
                    self.names.insert(l.var, at);
                    each(self, w, v);
                }
                self.names.insert(l.var, i.to_string());
            },
        );
    }

    /// `v` as a vector of the terms at the loop variable's current name and the next
    /// [`LaneFold::WIDTH`] - 1 indices: loads along the label as vector loads, values that do
    /// not depend on it in every lane.
    fn lanes_val(&self, v: &Val, l: &LaneFold) -> String {
        let mut uses = false;
        walk_val(v, &mut |x| {
            if let Visit::Load(_, idx) = x {
                uses |= idx.contains(&crate::ir::Ix::Var(l.var));
            }
        });
        match v {
            Val::Load(b, idx) if uses => format!("teil_lanes_load(&{})", self.access(*b, idx)),
            Val::Bin(op, a, b) if uses => format!(
                "({} {} {})",
                self.lanes_val(a, l),
                op.symbol(),
                self.lanes_val(b, l)
            ),
            _ => format!("teil_lanes_of({})", self.val(v, true)),
        }
    }
}
