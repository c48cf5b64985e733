//! Printing [`Node::LaneFold`](crate::ir::Node::LaneFold): a `max`/`min` reduction loop in
//! independent lanes of GCC/Clang vectors, with the exact fold again where the lanes cannot
//! decide the bits (the meaning and the argument are on [`LaneFold`]; spec/padding.md, "Lane
//! reductions"). Plain C (`teil_vector_bits` 0) gets the loop itself.

use super::Printer;
use crate::ir::{walk_val, LaneFold, Val, Visit};
use teil::ast::RedOp;

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

impl Printer<'_> {
    /// The lane fold `l` as a block at `depth` (its first line already indented).
    pub(super) fn lane_fold(&mut self, l: &LaneFold, depth: usize) {
        let i = format!("i{}", self.names.len());
        self.names.insert(l.var, i.clone());
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
        let mut lines: Vec<(usize, String)> = Vec::new();
        let mut line = |d: usize, s: String| lines.push((d, s));
        line(
            0,
            "{ /* in lanes (spec/padding.md, \"Lane reductions\") */".into(),
        );
        line(1, format!("long long {i} = 0;"));
        line(0, "#if teil_vector_bits != 0".into());
        line(1, format!("teil_lanes teil_v0 = teil_lanes_of({id});"));
        let rest: Vec<String> = (1..vectors)
            .map(|v| format!("teil_v{v} = teil_v0"))
            .collect();
        line(1, format!("teil_lanes {};", rest.join(", ")));
        line(1, "teil_lanes teil_x;".into());
        line(1, format!("double teil_l[{width}], teil_c;"));
        line(
            1,
            format!("for (; {i} + {lanes} <= {n}; {i} += {lanes}) {{"),
        );
        for v in 0..vectors {
            let at = if v == 0 {
                i.clone()
            } else {
                format!("({i} + {})", v * width)
            };
            self.names.insert(l.var, at);
            let x = self.lanes_val(&l.value, l);
            line(2, format!("teil_x = {x};"));
            line(2, format!("teil_v{v} = {vf}(teil_v{v}, teil_x);"));
        }
        self.names.insert(l.var, i.clone());
        line(1, "}".into());
        for v in 1..vectors {
            line(1, format!("teil_v0 = {vf}(teil_v0, teil_v{v});"));
        }
        line(
            1,
            "__builtin_memcpy(teil_l, &teil_v0, sizeof teil_l);".into(),
        );
        let mut c = acc.clone();
        for j in 0..width {
            c = format!("{f}({c}, teil_l[{j}])");
        }
        line(1, format!("teil_c = {c};"));
        line(1, format!("for (; {i} < {n}; {i}++) {{"));
        line(2, format!("teil_c = {f}(teil_c, {term});"));
        line(1, "}".into());
        line(
            1,
            "/* A NaN's payload and a zero's sign depend on the order: a NaN folds again in order,"
                .into(),
        );
        line(
            1,
            " * a zero is the first zero among acc and the terms (none is greater). */".into(),
        );
        line(1, "if (teil_c != teil_c) {".into());
        line(2, format!("teil_c = {acc};"));
        line(2, format!("for ({i} = 0; {i} < {n}; {i}++) {{"));
        line(3, format!("teil_c = {f}(teil_c, {term});"));
        line(2, "}".into());
        line(1, "} else if (teil_c == 0.0) {".into());
        line(2, format!("teil_c = {acc};"));
        line(
            2,
            format!("for ({i} = 0; teil_c != 0.0 && {i} < {n}; {i}++) {{"),
        );
        line(3, format!("teil_c = {term};"));
        line(2, "}".into());
        line(1, "}".into());
        line(1, format!("{acc} = teil_c;"));
        line(0, "#else".into());
        line(1, format!("for (; {i} < {n}; {i}++) {{"));
        line(2, format!("{acc} = {f}({acc}, {term});"));
        line(1, "}".into());
        line(0, "#endif".into());
        line(0, "}".into());
        for (n, (d, s)) in lines.into_iter().enumerate() {
            if n > 0 && !s.starts_with('#') {
                self.indent(depth + d);
            }
            self.out.push_str(&s);
            self.out.push('\n');
        }
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
