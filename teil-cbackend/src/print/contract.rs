//! Printing [`Step::Contract`](crate::ir::Step::Contract) steps: the strategy the pass chose
//! ([`Strategy`]), printed as it is. The meaning of each strategy (the exact order of
//! operations) is documented on [`Strategy`]; this module only turns it into C.
//!
//! A strategy has one variant per [`Target`]; targets whose variants compute in the same order
//! share one printed branch ([`Strategy::groups`]), and a step with several branches is an
//! `#if` chain on `teil_vector_bits`, which [`SELECT`] defines once per translation unit. The
//! register tiles ([`tiles`]) are chosen by the same macro.

use super::multiply_add;
use crate::ir::{
    Access, Affine, BufId, Contraction, Kernel, Label, Lanes, Panels, Strategy, Target,
};
use crate::opt::contract::{reads, Reads};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// `name * stride` terms of an offset, `0` if there are none.
fn offset(terms: &[(String, u64)], constant: u64) -> String {
    let mut parts: Vec<String> = terms
        .iter()
        .filter(|(_, s)| *s != 0)
        .map(|(n, s)| {
            if *s == 1 {
                n.clone()
            } else {
                format!("{n} * {s}")
            }
        })
        .collect();
    if constant != 0 || parts.is_empty() {
        parts.push(constant.to_string());
    }
    parts.join(" + ")
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("    ");
    }
}

fn affine(k: &Kernel, a: &Access) -> Affine {
    Affine::of(k, a.buf, &a.index)
}

/// Chooses the targets' kernels: defines `teil_vector_bits` (the [`Target::vector_bits`] of
/// the target) unless the compiler's flags define it, from the conditions of [`Target::ALL`].
pub(crate) fn select() -> String {
    let mut s = String::from(
        "/* The contraction kernels' target (spec/padding.md, \"Contraction kernels\"): the\n \
         * width in bits of the vectors they are written with, 0 for plain C (-Dteil_portable,\n \
         * and compilers without GCC's vector extensions). -Dteil_vector_bits=N chooses one;\n \
         * every choice computes every cell with the same operations in the same order. */\n\
         #ifndef teil_vector_bits\n",
    );
    // Plain C first (it decides on the compiler), the GCC/Clang fallback last.
    let mut order = vec![Target::Portable];
    order.extend(Target::ALL.into_iter().filter(|&t| t != Target::Portable));
    for (i, t) in order.iter().enumerate() {
        let line = if i == 0 {
            format!("#if {}", t.condition())
        } else if i + 1 == order.len() {
            format!("#else /* {} */", t.condition())
        } else {
            format!("#elif {}", t.condition())
        };
        let _ = writeln!(s, "{line}\n#define teil_vector_bits {}", t.vector_bits());
    }
    s.push_str("#endif\n#endif\n");
    let values: Vec<String> = Target::ALL
        .iter()
        .map(|t| format!("teil_vector_bits != {}", t.vector_bits()))
        .collect();
    let names: Vec<String> = Target::ALL
        .iter()
        .map(|t| t.vector_bits().to_string())
        .collect();
    let _ = writeln!(
        s,
        "#if {}\n#error \"teil_vector_bits must be one of {}\"\n#endif",
        values.join(" && "),
        names.join(", ")
    );
    s.push_str(
        "#if teil_vector_bits != 0 && !defined(__GNUC__)\n\
         #error \"teil_vector_bits other than 0 needs GCC or Clang vector extensions\"\n#endif\n",
    );
    s
}

/// Prints `#if`/`#elif`/`#else` branches, one per group of targets, the group holding
/// [`Target::Portable`] last (as `#else`, so that every value of `teil_vector_bits` the
/// selection allows takes a branch); a single group is printed without a condition.
fn branches(groups: &[Vec<Target>], out: &mut String, mut each: impl FnMut(&mut String, Target)) {
    if let [only] = groups {
        each(out, only[0]);
        return;
    }
    let mut order: Vec<&Vec<Target>> = groups.iter().collect();
    order.sort_by_key(|g| g.contains(&Target::Portable));
    for (i, g) in order.iter().enumerate() {
        let names: Vec<&str> = g.iter().map(|t| t.name()).collect();
        if i + 1 == order.len() {
            let _ = writeln!(out, "#else /* {} */", names.join(", "));
        } else {
            let cond: Vec<String> = g
                .iter()
                .map(|t| format!("teil_vector_bits == {}", t.vector_bits()))
                .collect();
            let _ = writeln!(
                out,
                "#{} {} /* {} */",
                if i == 0 { "if" } else { "elif" },
                cond.join(" || "),
                names.join(", ")
            );
        }
        each(out, g[0]);
    }
    out.push_str("#endif\n");
}

/// Prints the contraction step `c` at indentation `depth`: its variants, one branch per group
/// of targets, each with its own C names for labels (`i0`, `i1`, ...).
pub(crate) fn print(k: &Kernel, c: &Contraction, out: &mut String, depth: usize) {
    branches(&c.strategy.groups(), out, |out, t| {
        let mut count = 0usize;
        let mut fresh = || {
            count += 1;
            format!("i{}", count - 1)
        };
        match &c.strategy {
            Strategy::Packed { variants, .. } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    packed(k, c, v, out, depth, &mut fresh);
                }
            }
            Strategy::Dot {
                lane,
                rows_of,
                variants,
            } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    if v.width > 1 {
                        vector_dot(k, c, *lane, *rows_of, v, out, depth, &mut fresh);
                    } else {
                        dot(k, c, *lane, v.lanes, out, depth, &mut fresh);
                    }
                }
            }
        }
    });
}

/// Opens a loop over every target label of `c` but those in `skip`, outermost first, the
/// first one parallel with OpenMP. Returns the loops' C names, the depth inside them, and
/// whether the OpenMP pragma is still to be placed (every label was skipped).
fn open_loops(
    k: &Kernel,
    c: &Contraction,
    skip: &[Label],
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) -> (BTreeMap<Label, String>, usize, bool) {
    let mut names = BTreeMap::new();
    let mut d = depth;
    let mut pragma = k.openmp;
    for f in c.free.iter().filter(|f| !skip.contains(&f.var)) {
        if std::mem::take(&mut pragma) {
            out.push_str("#pragma omp parallel for\n");
        }
        let name = fresh();
        indent(out, d);
        let n = f.extent;
        let _ = writeln!(out, "for (long long {name} = 0; {name} < {n}; {name}++) {{");
        names.insert(f.var, name);
        d += 1;
    }
    (names, d, pragma)
}

/// Closes the loops opened from `depth` down to `d`.
fn close_loops(out: &mut String, mut d: usize, depth: usize) {
    while d > depth {
        d -= 1;
        indent(out, d);
        out.push_str("}\n");
    }
}

/// `lanes` cells at a time along the target label with the smallest stride in the target; the
/// remaining labels are ordinary loops outside.
fn dot(
    k: &Kernel,
    c: &Contraction,
    lane: Label,
    lanes: u64,
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) {
    let st = affine(k, &c.target);
    let sa = affine(k, &c.a);
    let sb = affine(k, &c.b);
    let lane_n = c
        .free
        .iter()
        .find(|f| f.var == lane)
        .map_or(0, |f| f.extent);
    let (mut names, d, pragma) = open_loops(k, c, &[lane], out, depth, fresh);
    let lv = fresh();
    let kv = fresh();
    names.insert(lane, lv.clone());
    names.insert(c.k.var, kv.clone());
    let terms = |s: &Affine| -> Vec<(String, u64)> {
        names.iter().map(|(l, n)| (n.clone(), s.get(*l))).collect()
    };
    let (ta, tb, tt) = (terms(&sa), terms(&sb), terms(&st));
    let name = |b: BufId| k.buffer(b).c_name.clone();
    let (na, nb, nt) = (name(c.a.buf), name(c.b.buf), name(c.target.buf));
    let at = |o: &str, s: &Affine, u: u64| {
        let extra = u * s.get(lane);
        if extra == 0 {
            o.to_string()
        } else {
            format!("{o} + {extra}")
        }
    };
    let (oa, ob, ot) = (
        offset(&ta, sa.constant),
        offset(&tb, sb.constant),
        offset(&tt, st.constant),
    );
    let kn = c.k.extent;
    let full = lane_n - lane_n % lanes.max(1);
    if pragma {
        out.push_str("#pragma omp parallel for\n");
    }
    indent(out, d);
    let _ = writeln!(
        out,
        "for (long long {lv} = 0; {lv} < {full}; {lv} += {lanes}) {{ /* {lanes} cells at a time */"
    );
    for u in 0..lanes {
        indent(out, d + 1);
        let _ = writeln!(out, "double teil_s{u} = -0.0;");
    }
    indent(out, d + 1);
    let _ = writeln!(out, "for (long long {kv} = 0; {kv} < {kn}; {kv}++) {{");
    // Lanes that are rows of an operand stream through several cache lines at once, which
    // the hardware prefetchers follow badly: fetch the next block's rows, one cache line per
    // term, while this block runs (only where the next block exists and lies inside the rows
    // it will read).
    for (name, s, o) in [(&na, &sa, &oa), (&nb, &sb, &ob)] {
        let (sl, sk) = (s.get(lane), s.get(c.k.var));
        if sk == 1 && sl >= kn && full > lanes {
            out.push_str("#if defined(__GNUC__) && !defined(teil_portable)\n");
            indent(out, d + 2);
            let _ = writeln!(
                out,
                "if ({lv} + {lanes} < {full}) __builtin_prefetch(&{name}[{o} + {} + {kv} * {}]);",
                lanes * sl,
                lanes - 1
            );
            out.push_str("#endif\n");
        }
    }
    for u in 0..lanes {
        indent(out, d + 2);
        let _ = writeln!(
            out,
            "{}",
            multiply_add(
                k.fma,
                1,
                &format!("teil_s{u}"),
                &format!("{na}[{}]", at(&oa, &sa, u)),
                &format!("{nb}[{}]", at(&ob, &sb, u))
            )
        );
    }
    indent(out, d + 1);
    out.push_str("}\n");
    for u in 0..lanes {
        indent(out, d + 1);
        let _ = writeln!(out, "{nt}[{}] = teil_s{u};", at(&ot, &st, u));
    }
    indent(out, d);
    out.push_str("}\n");
    if full < lane_n {
        let cells = Remainder {
            lane: (&lv, full, lane_n),
            k: (&kv, kn),
            fma: k.fma,
        };
        cells.print(
            out,
            d,
            &format!("{na}[{oa}]"),
            &format!("{nb}[{ob}]"),
            &format!("{nt}[{ot}]"),
        );
    }
    close_loops(out, d, depth);
}

/// `o + extra` as C.
fn plus(o: &str, extra: u64) -> String {
    if extra == 0 {
        o.to_string()
    } else {
        format!("{o} + {extra}")
    }
}

/// The cells of a lane past the last whole group of lanes (`lane.1..lane.2` of the lane label
/// `lane.0`), one at a time: each its own sum from `-0.0` over `k = 0..k.1` in order, the
/// remainder of the scalar and the vector dot kernels.
struct Remainder<'a> {
    lane: (&'a str, u64, u64),
    k: (&'a str, u64),
    fma: bool,
}

impl Remainder<'_> {
    /// The loop for one row of cells: `target` = Σ_k `a` * `b` (C expressions in the lane
    /// and `k` variables).
    fn print(&self, out: &mut String, d: usize, a: &str, b: &str, target: &str) {
        let ((lv, full, lane_n), (kv, kn)) = (self.lane, self.k);
        indent(out, d);
        let _ = writeln!(
            out,
            "for (long long {lv} = {full}; {lv} < {lane_n}; {lv}++) {{"
        );
        indent(out, d + 1);
        out.push_str("double teil_s0 = -0.0;\n");
        indent(out, d + 1);
        let _ = writeln!(out, "for (long long {kv} = 0; {kv} < {kn}; {kv}++) {{");
        indent(out, d + 2);
        let _ = writeln!(out, "{}", multiply_add(self.fma, 1, "teil_s0", a, b));
        indent(out, d + 1);
        out.push_str("}\n");
        indent(out, d + 1);
        let _ = writeln!(out, "{target} = teil_s0;");
        indent(out, d);
        out.push_str("}\n");
    }
}

/// The dot products of the variant `v` with sums in vectors of `v.width` doubles (the order of
/// [`Strategy::Dot`]; spec/padding.md, "Contraction kernels"): a block is `v.rows` rows of
/// `rows_of` (one row where the variant has one) times `v.lanes / v.width` vectors of
/// consecutive lane cells. Each operand gives a vector of the cells' terms by its [`Reads`]:
/// a broadcast, a load, or (for [`Reads::Rows`]) `width` rows of `width` terms loaded and
/// transposed in registers (`teil_shuffle`), the terms then added in order one column at a
/// time; the terms beyond the last whole group of `width` are gathered one by one. The
/// lane's remaining cells are summed one at a time with scalars, as [`dot`] does.
#[allow(clippy::too_many_arguments)]
fn vector_dot(
    k: &Kernel,
    c: &Contraction,
    lane: Label,
    rows_of: Option<Label>,
    v: &Lanes,
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) {
    let st = affine(k, &c.target);
    let sa = affine(k, &c.a);
    let sb = affine(k, &c.b);
    let (w, lanes) = (v.width, v.lanes);
    let nv = lanes / w;
    let rows = rows_of.filter(|_| v.rows > 1);
    let extent = |l: Label| c.free.iter().find(|f| f.var == l).map_or(0, |f| f.extent);
    let lane_n = extent(lane);
    let skip: Vec<Label> = std::iter::once(lane).chain(rows).collect();
    let (mut names, d, pragma) = open_loops(k, c, &skip, out, depth, fresh);
    let rv = rows.map(|r| {
        let name = fresh();
        names.insert(r, name.clone());
        name
    });
    let lv = fresh();
    let kv = fresh();
    names.insert(lane, lv.clone());
    names.insert(c.k.var, kv.clone());
    let off = |s: &Affine| {
        let terms: Vec<(String, u64)> = names.iter().map(|(l, n)| (n.clone(), s.get(*l))).collect();
        offset(&terms, s.constant)
    };
    let name = |b: BufId| k.buffer(b).c_name.clone();
    let ops = [
        (name(c.a.buf), off(&sa), sa.clone(), "teil_a"),
        (name(c.b.buf), off(&sb), sb.clone(), "teil_b"),
    ];
    let (nt, ot) = (name(c.target.buf), off(&st));
    let kinds: Vec<Reads> = ops.iter().map(|o| reads(&o.2, lane, c.k.var)).collect();
    let ty = format!("teil_v{w}");
    let bytes = 8 * w;
    let kn = c.k.extent;
    let full = lane_n - lane_n % lanes;
    let srow = |s: &Affine| rows.map_or(0, |r| s.get(r));
    // One row block of `nr` rows (at the row variable's value).
    let block = |out: &mut String, d: usize, nr: u64, pragma: bool| {
        if pragma {
            out.push_str("#pragma omp parallel for\n");
        }
        indent(out, d);
        let _ = writeln!(
            out,
            "for (long long {lv} = 0; {lv} < {full}; {lv} += {lanes}) {{ /* {} cells at a time */",
            nr * lanes
        );
        let e = d + 1;
        indent(out, e);
        let _ = writeln!(
            out,
            "typedef double {ty} __attribute__((vector_size({bytes})));"
        );
        let sums: Vec<String> = (0..nr * nv).map(|i| format!("teil_s{i}")).collect();
        let zero = vec!["-0.0"; w as usize].join(", ");
        indent(out, e);
        let inits: Vec<String> = sums.iter().map(|s| format!("{s} = {{{zero}}}")).collect();
        let _ = writeln!(out, "{ty} {};", inits.join(", "));
        // The C expression or variable of operand `x`'s terms for row `r`, vector `u`, term
        // `j` after `kv` (`gather`: read element by element).
        // A vector literal; parenthesised in fma mode, where it is a macro's argument.
        let literal = |cells: Vec<String>| {
            let v = format!("({ty}){{{}}}", cells.join(", "));
            if k.fma {
                format!("({v})")
            } else {
                v
            }
        };
        let term = |x: usize, r: u64, u: u64, j: u64, gather: bool| -> String {
            let (buf, o, s, _) = &ops[x];
            let base = r * srow(s) + j * s.get(c.k.var);
            match kinds[x] {
                Reads::Same => {
                    let one = format!("{buf}[{}]", plus(o, base));
                    literal(vec![one; w as usize])
                }
                Reads::Lane if !gather => {
                    format!("{}{}_{}", ops[x].3, r * nv + u, j)
                }
                _ => {
                    let cells: Vec<String> = (0..w)
                        .map(|e| format!("{buf}[{}]", plus(o, base + (u * w + e) * s.get(lane))))
                        .collect();
                    literal(cells)
                }
            }
        };
        // Loads of the Lane operands' vectors for terms `j < terms` after `kv`.
        let loads = |out: &mut String, depth: usize, terms: u64| {
            for (x, (buf, o, s, var)) in ops.iter().enumerate() {
                if kinds[x] != Reads::Lane {
                    continue;
                }
                let rs = if srow(s) == 0 { 1 } else { nr };
                for r in 0..rs {
                    for u in 0..nv {
                        for j in 0..terms {
                            let at = plus(o, r * srow(s) + j * s.get(c.k.var) + u * w);
                            indent(out, depth);
                            let _ = writeln!(
                                out,
                                "{ty} {var}{}_{j}; __builtin_memcpy(&{var}{}_{j}, &{buf}[{at}], {bytes});",
                                r * nv + u,
                                r * nv + u
                            );
                        }
                    }
                }
            }
        };
        let row_of = |x: usize, r: u64| if srow(&ops[x].2) == 0 { 0 } else { r };
        let updates = |out: &mut String,
                       depth: usize,
                       j: u64,
                       gather: bool,
                       cols: &dyn Fn(usize, u64, u64) -> Option<String>| {
            for r in 0..nr {
                for u in 0..nv {
                    let operand = |x: usize| {
                        cols(x, u, j).unwrap_or_else(|| term(x, row_of(x, r), u, j, gather))
                    };
                    indent(out, depth);
                    let _ = writeln!(
                        out,
                        "{}",
                        super::multiply_add(
                            k.fma,
                            w,
                            &sums[(r * nv + u) as usize],
                            &operand(0),
                            &operand(1)
                        )
                    );
                }
            }
        };
        let transposed = kinds.contains(&Reads::Rows);
        let whole = if transposed { kn - kn % w } else { 0 };
        if transposed {
            indent(out, e);
            let _ = writeln!(
                out,
                "for (long long {kv} = 0; {kv} < {whole}; {kv} += {w}) {{"
            );
            // As in [`dot`]: the next block's rows, one cache line per `lanes` terms, while
            // this block runs (where they follow this block's rows), for rows of at most a
            // page (512 doubles). Longer rows are streams the hardware prefetchers follow, and
            // fetching the next block as well slowed the 4096 x 4096 matrix-vector product
            // from 5.9 to 10.7 ms on the Zen 4 machine; 128-double rows gained (2.4 to 2.0 ms).
            for (x, (buf, o, s, _)) in ops.iter().enumerate() {
                let sl = s.get(lane);
                if kinds[x] == Reads::Rows && sl >= kn && sl <= 512 && full > lanes && nr == 1 {
                    indent(out, e + 1);
                    let _ = writeln!(
                        out,
                        "if ({lv} + {lanes} < {full}) for (int teil_e = 0; teil_e < {w}; teil_e++) \
                         __builtin_prefetch(&{buf}[{} + {kv} * {} + teil_e * {lanes}]);",
                        plus(o, lanes * s.get(lane)),
                        lanes - 1
                    );
                }
            }
            loads(out, e + 1, w);
            for (x, (buf, o, s, var)) in ops.iter().enumerate() {
                if kinds[x] != Reads::Rows {
                    continue;
                }
                for u in 0..nv {
                    let m = |i: u64| format!("{var}{u}_{i}");
                    for i in 0..w {
                        let at = plus(o, (u * w + i) * s.get(lane));
                        indent(out, e + 1);
                        let _ = writeln!(
                            out,
                            "{ty} {}; __builtin_memcpy(&{}, &{buf}[{at}], {bytes});",
                            m(i),
                            m(i)
                        );
                    }
                    // Rows of terms into columns of cells: swap the off-diagonal blocks of
                    // 1, 2, 4, ... elements.
                    let mut b = 1;
                    while b < w {
                        for i in (0..w).filter(|i| i & b == 0) {
                            let lo: Vec<String> = (0..w)
                                .map(|x| if x & b != 0 { w + x - b } else { x }.to_string())
                                .collect();
                            let hi: Vec<String> = (0..w)
                                .map(|x| if x & b != 0 { w + x } else { x + b }.to_string())
                                .collect();
                            indent(out, e + 1);
                            let _ = writeln!(
                                out,
                                "{{ {ty} teil_x = teil_shuffle({w}, {}, {}, {}), teil_y = teil_shuffle({w}, {}, {}, {}); {} = teil_x; {} = teil_y; }}",
                                m(i), m(i + b), lo.join(", "), m(i), m(i + b), hi.join(", "), m(i), m(i + b)
                            );
                        }
                        b *= 2;
                    }
                }
            }
            for j in 0..w {
                updates(out, e + 1, j, false, &|x, u, j| {
                    (kinds[x] == Reads::Rows).then(|| format!("{}{u}_{j}", ops[x].3))
                });
            }
            indent(out, e);
            out.push_str("}\n");
        }
        if whole < kn {
            indent(out, e);
            let _ = writeln!(
                out,
                "for (long long {kv} = {whole}; {kv} < {kn}; {kv}++) {{"
            );
            loads(out, e + 1, 1);
            updates(out, e + 1, 0, transposed, &|_, _, _| None);
            indent(out, e);
            out.push_str("}\n");
        }
        for r in 0..nr {
            for u in 0..nv {
                let s = &sums[(r * nv + u) as usize];
                let base = r * srow(&st) + u * w * st.get(lane);
                indent(out, e);
                if st.get(lane) == 1 {
                    let _ = writeln!(
                        out,
                        "__builtin_memcpy(&{nt}[{}], &{s}, {bytes});",
                        plus(&ot, base)
                    );
                } else {
                    let cells: Vec<String> = (0..w)
                        .map(|x| {
                            format!("{nt}[{}] = {s}[{x}];", plus(&ot, base + x * st.get(lane)))
                        })
                        .collect();
                    let _ = writeln!(out, "{}", cells.join(" "));
                }
            }
        }
        indent(out, d);
        out.push_str("}\n");
        // The lane's remaining cells, one at a time, for each row of the block.
        if full < lane_n {
            let cells = Remainder {
                lane: (&lv, full, lane_n),
                k: (&kv, kn),
                fma: k.fma,
            };
            for r in 0..nr {
                let o = |x: usize| plus(&ops[x].1, r * srow(&ops[x].2));
                cells.print(
                    out,
                    d,
                    &format!("{}[{}]", ops[0].0, o(0)),
                    &format!("{}[{}]", ops[1].0, o(1)),
                    &format!("{nt}[{}]", plus(&ot, r * srow(&st))),
                );
            }
        }
    };
    match (rows, &rv) {
        (Some(r), Some(rv)) => {
            let (rn, per) = (extent(r), v.rows);
            let whole = rn - rn % per;
            if pragma {
                out.push_str("#pragma omp parallel for\n");
            }
            indent(out, d);
            let _ = writeln!(
                out,
                "for (long long {rv} = 0; {rv} < {whole}; {rv} += {per}) {{"
            );
            block(out, d + 1, per, false);
            indent(out, d);
            out.push_str("}\n");
            if whole < rn {
                if pragma {
                    out.push_str("#pragma omp parallel for\n");
                }
                indent(out, d);
                let _ = writeln!(
                    out,
                    "for (long long {rv} = {whole}; {rv} < {rn}; {rv}++) {{"
                );
                block(out, d + 1, 1, false);
                indent(out, d);
                out.push_str("}\n");
            }
        }
        _ => block(out, d, 1, pragma),
    }
    close_loops(out, d, depth);
}

/// C statements that set the variable `x` to the flat index `value` of the labels `group`
/// (row-major, first label outermost) and turn it (destroying `x`) into offsets:
/// `dst_i = Σ stride_i(l) * l` for every `(dst_i, strides_i)` in `dsts`. Declares the scratch
/// digit `teil_q` where it needs one (more than one label); the caller declares `x` and `dst_i`.
fn decompose(
    group: &[crate::ir::Bound],
    x: &str,
    value: &str,
    dsts: &[(&str, &Affine)],
    out: &mut String,
    depth: usize,
) {
    // `teil_q`, the digit of a label other than the outermost, exists only where there is one.
    if group.len() > 1 {
        indent(out, depth);
        out.push_str("long long teil_q;\n");
    }
    indent(out, depth);
    let _ = writeln!(out, "{x} = {value};");
    for (dst, _) in dsts {
        indent(out, depth);
        let _ = writeln!(out, "{dst} = 0;");
    }
    for (i, b) in group.iter().enumerate().rev() {
        let (l, n) = (b.var, b.extent);
        let q = if i == 0 {
            x.to_string()
        } else {
            indent(out, depth);
            let _ = writeln!(out, "teil_q = {x} % {n};");
            "teil_q".to_string()
        };
        for (dst, s) in dsts {
            let st = s.get(l);
            if st != 0 {
                indent(out, depth);
                if st == 1 {
                    let _ = writeln!(out, "{dst} += {q};");
                } else {
                    let _ = writeln!(out, "{dst} += {q} * {st};");
                }
            }
        }
        if i > 0 {
            indent(out, depth);
            let _ = writeln!(out, "{x} /= {n};");
        }
    }
}

/// The packed matrix product with the tile and panels `v` (BLIS-style loops around the
/// register tile of [`tiles`]).
fn packed(
    k: &Kernel,
    c: &Contraction,
    v: &Panels,
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) {
    let Strategy::Packed {
        swap,
        batch,
        rows,
        cols,
        m,
        n,
        ..
    } = &c.strategy
    else {
        return;
    };
    let (m, n, kc, mc, nc) = (*m, *n, c.panel_terms(v.kc), v.mc, v.nc);
    let (mr, nr) = (v.mr, v.nr);
    let st = affine(k, &c.target);
    let (ra, rb) = if *swap { (&c.b, &c.a) } else { (&c.a, &c.b) };
    let (sa, sb) = (affine(k, ra), affine(k, rb));
    let (ba, bb): (BufId, BufId) = (ra.buf, rb.buf);
    let kn = c.terms();
    let kl = c.k.var;
    let (na, nb, nt) = (
        k.buffer(ba).c_name.clone(),
        k.buffer(bb).c_name.clone(),
        k.buffer(c.target.buf).c_name.clone(),
    );
    let ind = |out: &mut String, d: usize, s: &str| {
        indent(out, d);
        out.push_str(s);
        out.push('\n');
    };
    let mut d = depth;
    let two_level = c.outer.map_or(String::new(), |o| {
        format!(" ({} sums of {})", o.extent, c.k.extent)
    });
    let _ = writeln!(
        out,
        "{}/* packed contraction: {m} rows x {n} columns, {kn} terms each{two_level} */",
        "    ".repeat(d)
    );
    ind(out, d, "{");
    d += 1;
    let _ = writeln!(
        out,
        "{}double *teil_pb = teil_scratch({}, sizeof(double));",
        "    ".repeat(d),
        nc * kc
    );
    // The column operand's terms are packed term by term unless adjacent (see below).
    let by_terms = sb.get(kl) != 1;
    let slivers = if by_terms { nc.div_ceil(nr) } else { 0 };
    let _ = writeln!(
        out,
        "{}long long *teil_ix = teil_scratch({}, sizeof(long long));",
        "    ".repeat(d),
        2 * nc + 2 * kc + slivers
    );
    ind(
        out,
        d,
        &format!(
            "long long *teil_nb = teil_ix, *teil_nt = teil_nb + {nc}, \
             *teil_ka = teil_nt + {nc}, *teil_kb = teil_ka + {kc}{};",
            if by_terms {
                format!(", *teil_nd = teil_kb + {kc}")
            } else {
                String::new()
            }
        ),
    );
    // Batch labels: ordinary loops around the product.
    let mut names: BTreeMap<Label, String> = BTreeMap::new();
    let open = d;
    for &crate::ir::Bound {
        var: l, extent: bn, ..
    } in batch
    {
        let name = fresh();
        ind(
            out,
            d,
            &format!("for (long long {name} = 0; {name} < {bn}; {name}++) {{"),
        );
        names.insert(l, name);
        d += 1;
    }
    let base = |s: &Affine| {
        let terms: Vec<(String, u64)> = names
            .iter()
            .map(|(l, nm)| (nm.clone(), s.get(*l)))
            .collect();
        offset(&terms, s.constant)
    };
    ind(
        out,
        d,
        &format!(
            "const double *teil_a = {na} + {}, *teil_b = {nb} + {};",
            base(&sa),
            base(&sb)
        ),
    );
    ind(out, d, &format!("double *teil_t = {nt} + {};", base(&st)));
    ind(
        out,
        d,
        &format!("for (long long teil_jc = 0; teil_jc < {n}; teil_jc += {nc}) {{"),
    );
    d += 1;
    ind(
        out,
        d,
        &format!("long long teil_ncb = {n} - teil_jc < {nc} ? {n} - teil_jc : {nc};"),
    );
    ind(
        out,
        d,
        "for (long long teil_j = 0; teil_j < teil_ncb; teil_j++) {",
    );
    ind(out, d + 1, "long long teil_ob, teil_oc, teil_x;");
    decompose(
        cols,
        "teil_x",
        "teil_jc + teil_j",
        &[("teil_ob", &sb), ("teil_oc", &st)],
        out,
        d + 1,
    );
    ind(out, d + 1, "teil_nb[teil_j] = teil_ob;");
    ind(out, d + 1, "teil_nt[teil_j] = teil_oc;");
    ind(out, d, "}");
    if by_terms {
        // Which slivers are NR adjacent cells of the column operand.
        ind(
            out,
            d,
            &format!("for (long long teil_j0 = 0; teil_j0 < teil_ncb; teil_j0 += {nr}) {{"),
        );
        ind(
            out,
            d + 1,
            &format!("long long teil_e = teil_j0 + {nr} <= teil_ncb;"),
        );
        ind(
            out,
            d + 1,
            &format!(
                "for (int teil_j = 1; teil_e && teil_j < {nr}; teil_j++) \
                 teil_e = teil_nb[teil_j0 + teil_j] == teil_nb[teil_j0] + teil_j;"
            ),
        );
        ind(out, d + 1, &format!("teil_nd[teil_j0 / {nr}] = teil_e;"));
        ind(out, d, "}");
    }
    ind(
        out,
        d,
        &format!("for (long long teil_pc = 0; teil_pc < {kn}; teil_pc += {kc}) {{"),
    );
    d += 1;
    ind(
        out,
        d,
        &format!("long long teil_kcb = {kn} - teil_pc < {kc} ? {kn} - teil_pc : {kc};"),
    );
    let (ska, skb) = (sa.get(kl), sb.get(kl));
    match c.outer {
        None => ind(
            out,
            d,
            &format!(
                "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {{ \
                 teil_ka[teil_p] = (teil_pc + teil_p) * {ska}; teil_kb[teil_p] = (teil_pc + teil_p) * {skb}; }}"
            ),
        ),
        // Term t of a two-level sum: outer index t / K, inner index t % K.
        Some(o) => {
            let (soa, sob, kin) = (sa.get(o.var), sb.get(o.var), c.k.extent);
            ind(
                out,
                d,
                "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {",
            );
            ind(
                out,
                d + 1,
                &format!(
                    "long long teil_o = (teil_pc + teil_p) / {kin}, teil_k = (teil_pc + teil_p) % {kin};"
                ),
            );
            ind(
                out,
                d + 1,
                &format!(
                    "teil_ka[teil_p] = teil_o * {soa} + teil_k * {ska}; \
                     teil_kb[teil_p] = teil_o * {sob} + teil_k * {skb};"
                ),
            );
            ind(out, d, "}");
        }
    }
    // Pack the column panel: slivers of NR columns, zero beyond the last column. Where the
    // terms are adjacent in the column operand, sliver by sliver (each sliver's terms read
    // along a row of it); otherwise term by term, each term's columns read along the
    // operand's rows, and a sliver of NR adjacent columns copied as one run.
    if !by_terms {
        ind(
            out,
            d,
            &format!("for (long long teil_j0 = 0; teil_j0 < teil_ncb; teil_j0 += {nr}) {{"),
        );
        ind(out, d + 1, "double *teil_d = teil_pb + teil_j0 * teil_kcb;");
        ind(out, d + 1, &format!("if (teil_j0 + {nr} <= teil_ncb) {{"));
        ind(
            out,
            d + 2,
            "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {",
        );
        ind(
            out,
            d + 3,
            &format!(
                "for (int teil_j = 0; teil_j < {nr}; teil_j++) teil_d[teil_p * {nr} + teil_j] = \
                 teil_b[teil_kb[teil_p] + teil_nb[teil_j0 + teil_j]];"
            ),
        );
        ind(out, d + 2, "}");
        ind(out, d + 1, "} else {");
        ind(
            out,
            d + 2,
            "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {",
        );
        ind(
            out,
            d + 3,
            &format!(
                "for (int teil_j = 0; teil_j < {nr}; teil_j++) teil_d[teil_p * {nr} + teil_j] = \
                 teil_j0 + teil_j < teil_ncb ? teil_b[teil_kb[teil_p] + teil_nb[teil_j0 + teil_j]] : 0.0;"
            ),
        );
        ind(out, d + 2, "}");
        ind(out, d + 1, "}");
        ind(out, d, "}");
    } else {
        ind(
            out,
            d,
            "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {",
        );
        ind(
            out,
            d + 1,
            &format!("for (long long teil_j0 = 0; teil_j0 < teil_ncb; teil_j0 += {nr}) {{"),
        );
        ind(
            out,
            d + 2,
            &format!("double *teil_d = teil_pb + teil_j0 * teil_kcb + teil_p * {nr};"),
        );
        ind(out, d + 2, &format!("if (teil_nd[teil_j0 / {nr}]) {{"));
        ind(
            out,
            d + 3,
            "const double *teil_s = teil_b + teil_kb[teil_p] + teil_nb[teil_j0];",
        );
        ind(
            out,
            d + 3,
            &format!(
                "for (int teil_j = 0; teil_j < {nr}; teil_j++) teil_d[teil_j] = teil_s[teil_j];"
            ),
        );
        ind(
            out,
            d + 2,
            &format!("}} else if (teil_j0 + {nr} <= teil_ncb) {{"),
        );
        ind(
            out,
            d + 3,
            &format!(
                "for (int teil_j = 0; teil_j < {nr}; teil_j++) teil_d[teil_j] = \
                 teil_b[teil_kb[teil_p] + teil_nb[teil_j0 + teil_j]];"
            ),
        );
        ind(out, d + 2, "} else {");
        ind(
            out,
            d + 3,
            &format!(
                "for (int teil_j = 0; teil_j < {nr}; teil_j++) teil_d[teil_j] = \
                 teil_j0 + teil_j < teil_ncb ? teil_b[teil_kb[teil_p] + teil_nb[teil_j0 + teil_j]] : 0.0;"
            ),
        );
        ind(out, d + 2, "}");
        ind(out, d + 1, "}");
        ind(out, d, "}");
    }
    // The row panels. With OpenMP (spec/abi.md, "OpenMP") one parallel region per column and
    // term panel, in which every thread runs the row panel loop: the threads pack the row
    // panel's slivers side by side into the one shared panel, then share out its tiles
    // (the implicit barriers of the two `omp for` keep the packing before the tiles and the
    // tiles before the next row panel's packing).
    ind(out, d, "{");
    d += 1;
    ind(
        out,
        d,
        &format!(
            "double *teil_pa = teil_scratch({}, sizeof(double));",
            mc * kc
        ),
    );
    ind(
        out,
        d,
        &format!("long long *teil_mc = teil_scratch({mc}, sizeof(long long));"),
    );
    if k.openmp {
        out.push_str("#pragma omp parallel\n");
        ind(out, d, "{");
        d += 1;
    }
    ind(
        out,
        d,
        &format!("for (long long teil_ic = 0; teil_ic < {m}; teil_ic += {mc}) {{"),
    );
    d += 1;
    ind(
        out,
        d,
        &format!("long long teil_mcb = {m} - teil_ic < {mc} ? {m} - teil_ic : {mc};"),
    );
    // Pack the row panel: slivers of MR rows, zero beyond the last row.
    if k.openmp {
        out.push_str("#pragma omp for\n");
    }
    ind(
        out,
        d,
        &format!("for (long long teil_i0 = 0; teil_i0 < teil_mcb; teil_i0 += {mr}) {{"),
    );
    ind(out, d + 1, "double *teil_d = teil_pa + teil_i0 * teil_kcb;");
    ind(out, d + 1, &format!("long long teil_ar[{mr}];"));
    ind(
        out,
        d + 1,
        &format!("for (int teil_i = 0; teil_i < {mr}; teil_i++) {{"),
    );
    ind(out, d + 2, "if (teil_i0 + teil_i < teil_mcb) {");
    ind(out, d + 3, "long long teil_x, teil_oa, teil_ot;");
    decompose(
        rows,
        "teil_x",
        "teil_ic + teil_i0 + teil_i",
        &[("teil_oa", &sa), ("teil_ot", &st)],
        out,
        d + 3,
    );
    ind(out, d + 3, "teil_ar[teil_i] = teil_oa;");
    ind(out, d + 3, "teil_mc[teil_i0 + teil_i] = teil_ot;");
    ind(out, d + 2, "} else {");
    ind(out, d + 3, "teil_ar[teil_i] = -1;");
    ind(out, d + 2, "}");
    ind(out, d + 1, "}");
    ind(
        out,
        d + 1,
        "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {",
    );
    ind(
        out,
        d + 2,
        &format!(
            "for (int teil_i = 0; teil_i < {mr}; teil_i++) teil_d[teil_p * {mr} + teil_i] = \
             teil_ar[teil_i] >= 0 ? teil_a[teil_ar[teil_i] + teil_ka[teil_p]] : 0.0;"
        ),
    );
    ind(out, d + 1, "}");
    ind(out, d, "}");
    if k.openmp {
        out.push_str("#pragma omp for collapse(2)\n");
    }
    let jr = format!("for (long long teil_jr = 0; teil_jr < teil_ncb; teil_jr += {nr}) {{");
    let ir = format!("for (long long teil_ir = 0; teil_ir < teil_mcb; teil_ir += {mr}) {{");
    let (outer, inner) = if v.rows_outer() { (ir, jr) } else { (jr, ir) };
    ind(out, d, &outer);
    ind(out, d + 1, &inner);
    let (name, kin) = match c.outer {
        None => (tile_name(mr, nr, k.fma, false), String::new()),
        Some(_) => (tile_name(mr, nr, k.fma, true), format!(", {}", c.k.extent)),
    };
    ind(
        out,
        d + 2,
        &format!(
            "{name}(teil_kcb, teil_pa + teil_ir * teil_kcb, teil_pb + teil_jr * teil_kcb, \
             teil_t, teil_mc + teil_ir, teil_nt + teil_jr, \
             teil_mcb - teil_ir < {mr} ? (int)(teil_mcb - teil_ir) : {mr}, \
             teil_ncb - teil_jr < {nr} ? (int)(teil_ncb - teil_jr) : {nr}, teil_pc == 0{kin});"
        ),
    );
    ind(out, d + 1, "}");
    ind(out, d, "}");
    // close ic, the parallel region, the row panels' block, pc, jc
    d -= 1;
    ind(out, d, "}");
    if k.openmp {
        d -= 1;
        ind(out, d, "}");
    }
    ind(out, d, "teil_scratch_free(teil_mc);");
    ind(out, d, "teil_scratch_free(teil_pa);");
    for _ in 0..3 {
        d -= 1;
        ind(out, d, "}");
    }
    while d > open {
        d -= 1;
        ind(out, d, "}");
    }
    ind(out, d, "teil_scratch_free(teil_ix);");
    ind(out, d, "teil_scratch_free(teil_pb);");
    d -= 1;
    ind(out, d, "}");
}

/// A register tile: `MR`, `NR`, whether it fuses its multiply-adds (fma mode), and whether
/// it computes two-level sums.
type TileShape = (u64, u64, bool, bool);

/// The register tiles the packed steps of `kernels` call, for every target (one branch per
/// group of targets with the same tiles and vector width; empty without packed steps).
pub(crate) fn tiles(kernels: &[&Kernel]) -> String {
    let mut shapes: BTreeMap<Target, BTreeSet<TileShape>> = BTreeMap::new();
    for k in kernels {
        for s in &k.steps {
            if let crate::ir::Step::Contract {
                c:
                    c @ Contraction {
                        strategy: Strategy::Packed { variants, .. },
                        ..
                    },
                ..
            } = s
            {
                for v in variants {
                    shapes.entry(v.target).or_default().insert((
                        v.mr,
                        v.nr,
                        k.fma,
                        c.outer.is_some(),
                    ));
                }
            }
        }
    }
    if shapes.is_empty() {
        return String::new();
    }
    // Targets with the same vector width and tile shapes print the same tiles.
    let mut keys: Vec<(u64, &BTreeSet<TileShape>)> = Vec::new();
    let mut targets: Vec<Vec<Target>> = Vec::new();
    for (t, set) in &shapes {
        let key = (t.width(), set);
        match keys.iter().position(|k| *k == key) {
            Some(i) => targets[i].push(*t),
            None => {
                keys.push(key);
                targets.push(vec![*t]);
            }
        }
    }
    let mut out = String::new();
    branches(&targets, &mut out, |out, t| {
        let width = t.width();
        if width > 1 && shapes[&t].iter().any(|&(_, _, fma, _)| fma) {
            out.push_str(&fma_lanes(width));
        }
        for &(mr, nr, fma, two_level) in &shapes[&t] {
            out.push_str(&tile(mr, nr, width, fma, two_level));
        }
    });
    out
}

/// What the vector dot products of `kernels` use besides the vectors themselves: the macro
/// `teil_shuffle(w, a, b, i, ...)` (the vector of elements `i, ...` of `a`'s elements followed
/// by `b`'s, for `w` doubles: `__builtin_shufflevector` on Clang, `__builtin_shuffle` on GCC)
/// where some operand is transposed, and in fma mode the vector multiply-add `teil_fmav<width>` of
/// each vector width ([`fma_lanes`]; empty without vector dot products).
pub(crate) fn dot_helpers(kernels: &[&Kernel]) -> String {
    let mut shuffle = false;
    let mut fused: BTreeSet<(u64, u64)> = BTreeSet::new();
    for k in kernels {
        for s in &k.steps {
            let crate::ir::Step::Contract { c, .. } = s else {
                continue;
            };
            let Strategy::Dot { lane, variants, .. } = &c.strategy else {
                continue;
            };
            for v in variants.iter().filter(|v| v.width > 1) {
                shuffle |= [&c.a, &c.b]
                    .iter()
                    .any(|a| reads(&affine(k, a), *lane, c.k.var) == Reads::Rows);
                if k.fma {
                    fused.insert((v.target.vector_bits(), v.width));
                }
            }
        }
    }
    let mut out = String::new();
    if shuffle {
        out.push_str(
            "/* Element shuffles of the dot-product kernels (spec/padding.md, \"Contraction kernels\"):\n \
             * teil_shuffle(w, a, b, i, ...) has the elements i, ... of a's w doubles then b's. */\n\
             #if teil_vector_bits != 0\n#if defined(__clang__)\n\
             #define teil_shuffle(w, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)\n#else\n\
             typedef long long teil_mask2 __attribute__((vector_size(16)));\n\
             typedef long long teil_mask4 __attribute__((vector_size(32)));\n\
             typedef long long teil_mask8 __attribute__((vector_size(64)));\n\
             #define teil_shuffle(w, a, b, ...) __builtin_shuffle(a, b, (teil_mask##w){__VA_ARGS__})\n\
             #endif\n#endif\n",
        );
    }
    for (bits, width) in fused {
        let _ = write!(
            out,
            "#if teil_vector_bits == {bits} && !defined(teil_fmav{width})\n{}#endif\n",
            fma_lanes(width)
        );
    }
    out
}

/// The C name of the register tile of `mr` x `nr` cells (`_fma` in fma mode), `teil_tile2_..`
/// for two-level sums.
fn tile_name(mr: u64, nr: u64, fma: bool, two_level: bool) -> String {
    format!(
        "teil_tile{}_{mr}x{nr}{}",
        if two_level { "2" } else { "" },
        if fma { "_fma" } else { "" }
    )
}

/// The compilers' builtins for a fused multiply-add `a * b + c` on vectors of doubles, each
/// with the vector width (in doubles) it takes (0: any) and the arguments after `a, b, c`, in the
/// order [`fma_lanes`] tries them: Clang's generic one (newer Clang has it instead of the x86
/// builtins), then GCC's and older Clang's x86 builtins (AVX-512F, with all lanes written and the
/// current rounding mode, `_MM_FROUND_CUR_DIRECTION`; FMA3 on 4 and 2 doubles).
const VECTOR_FMA: [(&str, u64, &str); 4] = [
    ("__builtin_elementwise_fma", 0, ""),
    (
        "__builtin_ia32_vfmaddpd512_mask",
        8,
        ", (unsigned char)-1, 4",
    ),
    ("__builtin_ia32_vfmaddpd256", 4, ""),
    ("__builtin_ia32_vfmaddpd", 2, ""),
];

/// Defines `teil_fmav<width>(a, b, c)`: `c + a * b` on GCC/Clang vectors of `width` doubles,
/// every lane fused exactly when `teil_fma` fuses (where the preamble defines `teil_fast_fma`).
/// There it is one vector fused multiply-add, the first builtin of [`VECTOR_FMA`] for the width
/// that the compiler has for its target flags (`__has_builtin`): the row value's broadcast
/// becomes the instruction's memory operand. Otherwise (no builtin, or no fast fused
/// multiply-add) it is `teil_fma` lane by lane, which GCC also turns into vector fused
/// multiply-adds, but with the row values loaded as a vector and shuffled into every lane, one
/// shuffle per multiply-add (PERFORMANCE.md).
pub(crate) fn fma_lanes(width: u64) -> String {
    let lanes: Vec<String> = (0..width)
        .map(|l| format!("teil_fma((a)[{l}], (b)[{l}], (c)[{l}])"))
        .collect();
    let mut s = format!(
        "/* c + a * b on vectors of {width} doubles, every lane fused where teil_fma fuses (fma mode,\n \
         * spec/values.md, \"Fused multiply-add\"): a vector fused multiply-add where the compiler\n \
         * has one for these flags, else teil_fma lane by lane. */\n\
         #if defined(teil_fast_fma) && defined(__has_builtin)\n"
    );
    let builtins = VECTOR_FMA.iter().filter(|(_, w, _)| *w == 0 || *w == width);
    for (i, (name, _, extra)) in builtins.enumerate() {
        let _ = writeln!(
            s,
            "#{} __has_builtin({name})\n#define teil_fmav{width}(a, b, c) {name}(a, b, c{extra})",
            if i == 0 { "if" } else { "elif" }
        );
    }
    let _ = write!(
        s,
        "#endif\n#endif\n#ifndef teil_fmav{width}\n\
         #define teil_fmav{width}(a, b, c) ((__typeof__(c)){{{}}})\n#endif\n",
        lanes.join(", ")
    );
    s
}

/// The register tile `teil_tile_MRxNR` (`teil_tile_MRxNR_fma` in fma mode, every multiply-add
/// fused): `t[rows[i] + cols[j]] (+)= Σ_p pa[p][i] * pb[p][j]`
/// for `i < mr`, `j < nr`, starting from `-0.0` when `first`, else from the cell's current
/// value (the partial sum of the previous panels of terms). Products are added in the order of
/// `p`. With `width > 1` the tile's rows live in vectors of `width` doubles (GCC's generic
/// vector extensions; `nr` is a multiple of `width`), each vector operation one binary64
/// operation per cell; with `width == 1` the same computation is plain C (the compiler may
/// vectorise it).
///
/// With `two_level`, the tile `teil_tile2_MRxNR` (`_fma` in fma mode) of a two-level sum: the
/// same, with the terms in groups of `kin` (an extra argument; `kc` is a multiple of it), each
/// group's products added in order to an inner sum of its own from `-0.0`, which is then added
/// to the cell's sum: `t[..] (+)= s_0 + s_1 + ...` with `s_g = -0.0 + pa[g kin][i] * pb[g
/// kin][j] + ...` (spec/padding.md, "Contraction kernels"). In fma mode only the
/// multiply-adds of the inner sums are fused. The tile keeps both sums of every cell in
/// registers ([`crate::opt::contract::NESTED`] sizes it so).
fn tile(mr: u64, nr: u64, width: u64, fma: bool, two_level: bool) -> String {
    let name = tile_name(mr, nr, fma, two_level);
    let cells = mr * nr;
    let mut s = String::new();
    if two_level {
        let _ = write!(
            s,
            "
/* A register tile of the packed two-level contraction kernel (spec/padding.md, \"Contraction
 * kernels\"): t[rows[i] + cols[j]] = (first ? -0.0 : t[rows[i] + cols[j]]) + s[0] + s[1] + ...
 * with s[g] = -0.0 + pa[g * kin][i] * pb[g * kin][j] + ... (kin products), sums and products
 * added in order, for i < mr, j < nr; kc is a multiple of kin. pa holds kc columns of {mr}
 * rows, pb kc rows of {nr} columns (packed panels, zero beyond mr and nr). */
static void {name}(long long kc, const double *pa, const double *pb, double *t,
                      const long long *rows, const long long *cols, int mr, int nr, int first,
                      long long kin)
{{
    double w[{cells}];
    int i, j, dense = mr == {mr} && nr == {nr};
    long long p, q;
"
        );
    } else {
        let _ = write!(
            s,
            "
/* A register tile of the packed contraction kernel (spec/padding.md, \"Contraction kernels\"):
 * t[rows[i] + cols[j]] = (first ? -0.0 : t[rows[i] + cols[j]]) + pa[0][i] * pb[0][j] + ...,
 * products added in order, for i < mr, j < nr. pa holds kc columns of {mr} rows, pb kc rows of
 * {nr} columns (packed panels, zero beyond mr and nr). */
static void {name}(long long kc, const double *pa, const double *pb, double *t,
                      const long long *rows, const long long *cols, int mr, int nr, int first)
{{
    double w[{cells}];
    int i, j, dense = mr == {mr} && nr == {nr};
    long long p;
"
        );
    }
    let _ = write!(
        s,
        "    for (j = 1; dense && j < {nr}; j++)
        dense = cols[j] == cols[0] + j;
    if (!dense) {{
        for (i = 0; i < {cells}; i++)
            w[i] = -0.0;
        if (!first)
            for (i = 0; i < mr; i++)
                for (j = 0; j < nr; j++)
                    w[i * {nr} + j] = t[rows[i] + cols[j]];
    }}
"
    );
    if width > 1 {
        let vecs = nr / width;
        let bytes = 8 * width;
        let ty = format!("teil_v{width}");
        let acc = |i: u64, v: u64| format!("c{i}_{v}");
        let splat = |x: &str| vec![x; width as usize].join(", ");
        let _ = writeln!(
            s,
            "    {{\n        typedef double {ty} __attribute__((vector_size({bytes})));"
        );
        let all: Vec<String> = (0..mr)
            .flat_map(|i| (0..vecs).map(move |v| (i, v)))
            .map(|(i, v)| acc(i, v))
            .collect();
        let _ = writeln!(s, "        {ty} {};", all.join(", "));
        let _ = writeln!(
            s,
            "        if (dense && first) {{\n            {ty} z = {{{}}};",
            splat("-0.0")
        );
        for i in 0..mr {
            let row: Vec<String> = (0..vecs).map(|v| format!("{} = z;", acc(i, v))).collect();
            let _ = writeln!(s, "            {}", row.join(" "));
        }
        s.push_str("        } else {\n");
        for i in 0..mr {
            let _ = writeln!(
                s,
                "            const double *s{i} = dense ? t + rows[{i}] + cols[0] : w + {};",
                i * nr
            );
        }
        for i in 0..mr {
            let row: Vec<String> = (0..vecs)
                .map(|v| {
                    let src = if v == 0 {
                        format!("s{i}")
                    } else {
                        format!("s{i} + {}", v * width)
                    };
                    format!("__builtin_memcpy(&{}, {src}, {bytes});", acc(i, v))
                })
                .collect();
            let _ = writeln!(s, "            {}", row.join(" "));
        }
        // A two-level sum's inner sums (`u..`) are one loop deeper: the products of the term
        // loop go to them, and each group of `kin` terms ends by adding them to the cells'.
        let (sum, pad) = if two_level {
            let part = |i: u64, v: u64| format!("u{i}_{v}");
            let parts: Vec<String> = (0..mr)
                .flat_map(|i| (0..vecs).map(move |v| (i, v)))
                .map(|(i, v)| part(i, v))
                .collect();
            let _ = writeln!(
                s,
                "        }}\n        for (p = 0; p < kc; p += kin) {{\n            {ty} {}, z = {{{}}};",
                parts.join(", "),
                splat("-0.0")
            );
            for i in 0..mr {
                let row: Vec<String> = (0..vecs).map(|v| format!("{} = z;", part(i, v))).collect();
                let _ = writeln!(s, "            {}", row.join(" "));
            }
            s.push_str("            for (q = 0; q < kin; q++) {\n");
            (part as fn(u64, u64) -> String, "    ")
        } else {
            s.push_str("        }\n        for (p = 0; p < kc; p++) {\n");
            (acc as fn(u64, u64) -> String, "")
        };
        let bs: Vec<String> = (0..vecs).map(|v| format!("b{v}")).collect();
        let _ = writeln!(s, "{pad}            {ty} {}, a;", bs.join(", "));
        for v in 0..vecs {
            let src = if v == 0 {
                "pb".to_string()
            } else {
                format!("pb + {}", v * width)
            };
            let _ = writeln!(
                s,
                "{pad}            __builtin_memcpy(&b{v}, {src}, {bytes});"
            );
        }
        for i in 0..mr {
            let mut line = format!("a = ({ty}){{{}}};", splat(&format!("pa[{i}]")));
            for v in 0..vecs {
                line.push(' ');
                line.push_str(&multiply_add(fma, width, &sum(i, v), "a", &format!("b{v}")));
            }
            let _ = writeln!(s, "{pad}            {line}");
        }
        let _ = writeln!(
            s,
            "{pad}            pa += {mr};\n{pad}            pb += {nr};"
        );
        if two_level {
            s.push_str("                }\n");
            for i in 0..mr {
                let row: Vec<String> = (0..vecs)
                    .map(|v| format!("{} += {};", acc(i, v), sum(i, v)))
                    .collect();
                let _ = writeln!(s, "            {}", row.join(" "));
            }
        }
        s.push_str("        }\n        if (dense) {\n");
        for i in 0..mr {
            let _ = writeln!(s, "            double *d{i} = t + rows[{i}] + cols[0];");
        }
        for i in 0..mr {
            let row: Vec<String> = (0..vecs)
                .map(|v| {
                    let dst = if v == 0 {
                        format!("d{i}")
                    } else {
                        format!("d{i} + {}", v * width)
                    };
                    format!("__builtin_memcpy({dst}, &{}, {bytes});", acc(i, v))
                })
                .collect();
            let _ = writeln!(s, "            {}", row.join(" "));
        }
        s.push_str("            return;\n        }\n");
        for i in 0..mr {
            let row: Vec<String> = (0..vecs)
                .map(|v| {
                    let off = i * nr + v * width;
                    let dst = if off == 0 {
                        "w".to_string()
                    } else {
                        format!("w + {off}")
                    };
                    format!("__builtin_memcpy({dst}, &{}, {bytes});", acc(i, v))
                })
                .collect();
            let _ = writeln!(s, "        {}", row.join(" "));
        }
        s.push_str("    }\n");
    } else if two_level {
        let _ = write!(
            s,
            "    if (dense) {{
        for (i = 0; i < {mr}; i++)
            for (j = 0; j < {nr}; j++)
                w[i * {nr} + j] = first ? -0.0 : t[rows[i] + cols[j]];
    }}
    for (p = 0; p < kc; p += kin) {{
        double u[{cells}];
        for (i = 0; i < {cells}; i++)
            u[i] = -0.0;
        for (q = 0; q < kin; q++) {{
            for (i = 0; i < {mr}; i++)
                for (j = 0; j < {nr}; j++)
                    {}
            pa += {mr};
            pb += {nr};
        }}
        for (i = 0; i < {cells}; i++)
            w[i] += u[i];
    }}
",
            multiply_add(fma, 1, &format!("u[i * {nr} + j]"), "pa[i]", "pb[j]")
        );
    } else {
        let _ = write!(
            s,
            "    if (dense) {{
        for (i = 0; i < {mr}; i++)
            for (j = 0; j < {nr}; j++)
                w[i * {nr} + j] = first ? -0.0 : t[rows[i] + cols[j]];
    }}
    for (p = 0; p < kc; p++) {{
        for (i = 0; i < {mr}; i++)
            for (j = 0; j < {nr}; j++)
                {}
        pa += {mr};
        pb += {nr};
    }}
",
            multiply_add(fma, 1, &format!("w[i * {nr} + j]"), "pa[i]", "pb[j]")
        );
    }
    let _ = write!(
        s,
        "    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++)
            t[rows[i] + cols[j]] = w[i * {nr} + j];
}}
"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fma tiles differ from the exact ones in exactly the multiply-add statements: every
    /// `c += a * b;` of the exact tile is `c = teil_fmavW(a, b, c);` (vectors) or
    /// `c = teil_fma(a, b, c);` (plain C) in the fma tile, and nothing else changes.
    #[test]
    fn the_fma_tiles_fuse_exactly_the_multiply_adds() {
        for (mr, nr, width) in [(6, 8, 4), (16, 8, 8), (6, 8, 2), (6, 8, 1)] {
            let exact = tile(mr, nr, width, false, false);
            let fused = tile(mr, nr, width, true, false);
            let updates = if width > 1 { mr * (nr / width) } else { 1 };
            let call = if width > 1 {
                format!("teil_fmav{width}(")
            } else {
                "teil_fma(".to_string()
            };
            assert_eq!(fused.matches(&call).count() as u64, updates, "{fused}");
            assert_eq!(
                exact.matches(" += a * b").count() as u64
                    + exact.matches("] += pa[i] * pb[j];").count() as u64,
                updates,
                "{exact}"
            );
            assert!(!exact.contains("fma"), "{exact}");
            // Undoing the fusion gives the exact tile back, byte for byte.
            let mut undone = fused.replace(
                &tile_name(mr, nr, true, false),
                &tile_name(mr, nr, false, false),
            );
            if width > 1 {
                for i in 0..mr {
                    for v in 0..nr / width {
                        undone = undone.replace(
                            &format!("c{i}_{v} = teil_fmav{width}(a, b{v}, c{i}_{v});"),
                            &format!("c{i}_{v} += a * b{v};"),
                        );
                    }
                }
            } else {
                undone = undone.replace(
                    &format!("w[i * {nr} + j] = teil_fma(pa[i], pb[j], w[i * {nr} + j]);"),
                    &format!("w[i * {nr} + j] += pa[i] * pb[j];"),
                );
            }
            assert_eq!(undone, exact);
        }
        // The vector fused multiply-add: a builtin where the compiler has one for the width,
        // else the lanes one by one.
        assert_eq!(
            fma_lanes(2),
            "/* c + a * b on vectors of 2 doubles, every lane fused where teil_fma fuses (fma mode,\n \
             * spec/values.md, \"Fused multiply-add\"): a vector fused multiply-add where the compiler\n \
             * has one for these flags, else teil_fma lane by lane. */\n\
             #if defined(teil_fast_fma) && defined(__has_builtin)\n\
             #if __has_builtin(__builtin_elementwise_fma)\n\
             #define teil_fmav2(a, b, c) __builtin_elementwise_fma(a, b, c)\n\
             #elif __has_builtin(__builtin_ia32_vfmaddpd)\n\
             #define teil_fmav2(a, b, c) __builtin_ia32_vfmaddpd(a, b, c)\n\
             #endif\n#endif\n#ifndef teil_fmav2\n\
             #define teil_fmav2(a, b, c) ((__typeof__(c)){teil_fma((a)[0], (b)[0], (c)[0]), \
             teil_fma((a)[1], (b)[1], (c)[1])})\n#endif\n"
        );
        for (width, builtin) in [
            (8, "__builtin_ia32_vfmaddpd512_mask"),
            (4, "__builtin_ia32_vfmaddpd256"),
        ] {
            let m = fma_lanes(width);
            assert_eq!(m.matches("#define teil_fmav").count(), 3, "{m}");
            assert_eq!(m.matches("__builtin_ia32").count(), 2, "{m}");
            assert!(
                m.contains(&format!(
                    "#define teil_fmav{width}(a, b, c) {builtin}(a, b, c"
                )),
                "{m}"
            );
        }
    }
}
