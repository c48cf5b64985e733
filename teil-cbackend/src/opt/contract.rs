//! Contraction kernels: loop nests that compute `T[...] = Σ_k a[...] * b[...]`, printed as a
//! packed, register-blocked matrix product or as register-blocked dot products.
//!
//! `Contraction::of` recognises the nest the lowering emits for a statement (or lifted or
//! hoisted temporary) whose value is one sum over a product of two loads:
//!
//! ```text
//! for l_1 < n_1 ... for l_r < n_r {          (the target loops, any extents, start 0)
//!     acc = -0.0
//!     for k < K { acc = acc + a[..] * b[..] }
//!     T[l_1, ..., l_r] = acc                  (every label exactly once)
//! }
//! ```
//!
//! where `a` and `b` are buffers other than `T`, indexed by the target labels, `k` and
//! constants. The printers below compute every cell of `T` with exactly the operations of that
//! nest, in the same order: the cell's sum starts from `-0.0` and adds the products for
//! `k = 0, 1, ..., K-1` in turn (spec/padding.md, "Contraction kernels"). What changes is only
//! the order in which *different* cells are worked on, and where a partial sum waits between two
//! blocks of `k` (in a register or in its cell of `T`). Since `T` is neither `a` nor `b`, no cell
//! of `T` is read as an operand, so the cells are independent and the result is bit for bit the
//! nest's. `a * b` may be computed as `b * a`: binary64 multiplication is commutative (NaN
//! payloads aside, which TeIL does not distinguish).

use crate::ir::{BufId, Ix, Kernel, Label, Node, Val};
use std::collections::BTreeMap;
use std::fmt::Write;
use teil::ast::{BinOp, RedOp};

/// Rows of the register tile (the `m` side).
pub(crate) const MR: u64 = 6;
/// Columns of the register tile (the `n` side): two vectors of four doubles.
pub(crate) const NR: u64 = 8;
/// Terms (`k`) per packed panel.
const KC: u64 = 256;
/// Rows per packed panel of the `m` side.
const MC: u64 = 72;
/// Columns per packed panel of the `n` side.
const NC: u64 = 4080;
/// Smallest number of multiplications (cells times terms) for which the packed kernel is
/// used; below it packing costs more than it saves, and the dot-product printer is shorter.
pub const PACKED_MIN_WORK: u128 = 4096;
/// Smallest number of multiplications for which the dot-product printer is used (it also needs
/// at least `LANES` cells along the target's innermost label).
pub const DOT_MIN_WORK: u128 = 512;
/// Cells computed together by the dot-product printer.
pub(crate) const LANES: u64 = 8;

/// An operand access: a buffer and its index.
#[derive(Clone, Debug)]
pub(crate) struct Access<'k> {
    pub buf: BufId,
    pub index: &'k [Ix],
}

/// A recognised contraction nest.
#[derive(Clone, Debug)]
pub(crate) struct Contraction<'k> {
    /// The target loops, outermost first, with their extents (which may be padded).
    pub free: Vec<(Label, u64)>,
    /// The summation label and its extent.
    pub k: (Label, u64),
    pub target: Access<'k>,
    pub a: Access<'k>,
    pub b: Access<'k>,
}

/// How a contraction is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Packed panels and a 6 x 8 register tile: some target label is read by `a` only and
    /// some by `b` only (a matrix product, possibly batched).
    Packed,
    /// Eight cells at a time, each with its own accumulator (matrix-vector products, batched
    /// dot products).
    Dot,
}

impl<'k> Contraction<'k> {
    /// The contraction a nest computes, if it has exactly the shape above.
    pub(crate) fn of(body: &'k [Node]) -> Option<Contraction<'k>> {
        let mut free = Vec::new();
        let mut nodes = body;
        while let [Node::Loop {
            var,
            start: 0,
            extent,
            body,
            ..
        }] = nodes
        {
            free.push((*var, *extent));
            nodes = body;
        }
        let [Node::AccInit {
            acc,
            op: RedOp::Sum,
        }, Node::Loop {
            var: k,
            start: 0,
            extent: kn,
            body: inner,
            ..
        }, Node::Store {
            buf: target,
            index: tindex,
            value: Val::Acc(stored),
        }] = nodes
        else {
            return None;
        };
        let [Node::AccUpdate {
            acc: updated,
            op: RedOp::Sum,
            value: Val::Bin(BinOp::Mul, va, vb),
        }] = inner.as_slice()
        else {
            return None;
        };
        let (Val::Load(ba, ia), Val::Load(bb, ib)) = (&**va, &**vb) else {
            return None;
        };
        if updated != acc || stored != acc || ba == target || bb == target || *kn == 0 {
            return None;
        }
        // A scalar target is a single sum: the plain nest is already what a printer would do.
        if free.is_empty() || free.iter().any(|&(l, n)| l == *k || n == 0) {
            return None;
        }
        // The store writes each cell once: its index is the target labels, each exactly once.
        let mut seen: Vec<Label> = Vec::new();
        for ix in tindex {
            match ix {
                Ix::Var(l) if free.iter().any(|(f, _)| f == l) && !seen.contains(l) => {
                    seen.push(*l)
                }
                _ => return None,
            }
        }
        if seen.len() != free.len() {
            return None;
        }
        let known = |idx: &[Ix]| {
            idx.iter().all(|ix| match ix {
                Ix::Var(l) => l == k || free.iter().any(|(f, _)| f == l),
                Ix::Const(_) => true,
            })
        };
        if !known(ia) || !known(ib) {
            return None;
        }
        Some(Contraction {
            free,
            k: (*k, *kn),
            target: Access {
                buf: *target,
                index: tindex,
            },
            a: Access {
                buf: *ba,
                index: ia,
            },
            b: Access {
                buf: *bb,
                index: ib,
            },
        })
    }

    /// Which printer [`print`] uses; `None` for contractions too small to gain from either
    /// (the plain nest is printed).
    pub fn strategy(&self, k: &Kernel) -> Option<Strategy> {
        let sa = Strides::of(k, &self.a);
        let sb = Strides::of(k, &self.b);
        let only_a = self.free.iter().any(|(l, _)| sa.has(*l) && !sb.has(*l));
        let only_b = self.free.iter().any(|(l, _)| sb.has(*l) && !sa.has(*l));
        let work: u128 = self
            .free
            .iter()
            .map(|f| u128::from(f.1))
            .product::<u128>()
            .saturating_mul(u128::from(self.k.1));
        let st = Strides::of(k, &self.target);
        let lane = self.free.iter().min_by_key(|(l, _)| st.get(*l));
        if only_a && only_b && work >= PACKED_MIN_WORK {
            Some(Strategy::Packed)
        } else if lane.is_some_and(|l| l.1 >= LANES) && work >= DOT_MIN_WORK {
            Some(Strategy::Dot)
        } else {
            None
        }
    }
}

/// An access's element offset as a linear function of labels: `constant + Σ stride(l) * l`.
#[derive(Clone, Debug, Default)]
struct Strides {
    by_label: BTreeMap<Label, u64>,
    constant: u64,
}

impl Strides {
    fn of(k: &Kernel, a: &Access) -> Strides {
        let strides = k.buffer(a.buf).strides();
        let mut s = Strides::default();
        for (ix, st) in a.index.iter().zip(strides) {
            match ix {
                Ix::Var(l) => *s.by_label.entry(*l).or_insert(0) += st,
                Ix::Const(c) => s.constant += c * st,
            }
        }
        s
    }

    fn has(&self, l: Label) -> bool {
        self.by_label.contains_key(&l)
    }

    fn get(&self, l: Label) -> u64 {
        self.by_label.get(&l).copied().unwrap_or(0)
    }
}

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

/// Prints the nest `c` was recognised in, at indentation `depth`, with C names for labels
/// drawn by `fresh`.
pub(crate) fn print(
    k: &Kernel,
    c: &Contraction,
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) {
    match c.strategy(k) {
        Some(Strategy::Packed) => packed(k, c, out, depth, fresh),
        Some(Strategy::Dot) | None => dot(k, c, out, depth, fresh),
    }
}

/// Eight cells at a time along the target label with the smallest stride in the target; the
/// remaining labels are ordinary loops outside.
fn dot(
    k: &Kernel,
    c: &Contraction,
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) {
    let st = Strides::of(k, &c.target);
    let sa = Strides::of(k, &c.a);
    let sb = Strides::of(k, &c.b);
    let (lane, lane_n) = *c
        .free
        .iter()
        .min_by_key(|(l, _)| st.get(*l))
        .expect("dot products need a target label");
    let mut names: BTreeMap<Label, String> = BTreeMap::new();
    let mut d = depth;
    let mut pragma = k.tuning.openmp;
    for &(l, n) in &c.free {
        if l == lane {
            continue;
        }
        if std::mem::take(&mut pragma) {
            out.push_str("#pragma omp parallel for\n");
        }
        let name = fresh();
        indent(out, d);
        let _ = writeln!(out, "for (long long {name} = 0; {name} < {n}; {name}++) {{");
        names.insert(l, name);
        d += 1;
    }
    let lv = fresh();
    let kv = fresh();
    names.insert(lane, lv.clone());
    names.insert(c.k.0, kv.clone());
    let terms = |s: &Strides| -> Vec<(String, u64)> {
        names.iter().map(|(l, n)| (n.clone(), s.get(*l))).collect()
    };
    let (ta, tb, tt) = (terms(&sa), terms(&sb), terms(&st));
    let name = |b: BufId| k.buffer(b).c_name.clone();
    let (na, nb, nt) = (name(c.a.buf), name(c.b.buf), name(c.target.buf));
    let lanes = LANES.min(lane_n);
    let at = |o: &str, s: &Strides, u: u64| {
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
    let kn = c.k.1;
    let full = lane_n - lane_n % lanes;
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
        let (sl, sk) = (s.get(lane), s.get(c.k.0));
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
            "teil_s{u} += {na}[{}] * {nb}[{}];",
            at(&oa, &sa, u),
            at(&ob, &sb, u)
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
        let _ = writeln!(out, "teil_s0 += {na}[{oa}] * {nb}[{ob}];");
        indent(out, d + 1);
        out.push_str("}\n");
        indent(out, d + 1);
        let _ = writeln!(out, "{nt}[{ot}] = teil_s0;");
        indent(out, d);
        out.push_str("}\n");
    }
    while d > depth {
        d -= 1;
        indent(out, d);
        out.push_str("}\n");
    }
}

/// C statements that turn the flat index `x` (a C expression, destroyed) of the labels `group`
/// (row-major, first label outermost) into offsets: `dst_i = Σ stride_i(l) * l` for every
/// `(dst_i, strides_i)` in `dsts`.
fn decompose(
    group: &[(Label, u64)],
    x: &str,
    dsts: &[(&str, &Strides)],
    out: &mut String,
    depth: usize,
) {
    for (dst, _) in dsts {
        indent(out, depth);
        let _ = writeln!(out, "{dst} = 0;");
    }
    for (i, &(l, n)) in group.iter().enumerate().rev() {
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

/// The packed matrix product (BLIS-style loops around [`TILE_HELPER`]).
fn packed(
    k: &Kernel,
    c: &Contraction,
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) {
    let st = Strides::of(k, &c.target);
    let (mut sa, mut sb) = (Strides::of(k, &c.a), Strides::of(k, &c.b));
    let (mut ba, mut bb) = (c.a.buf, c.b.buf);
    // The column side holds the target's smallest-stride label, so that tiles store whole
    // vectors where the target allows it.
    let innermost = c.free.iter().min_by_key(|(l, _)| st.get(*l)).map(|f| f.0);
    if innermost.is_some_and(|l| sa.has(l) && !sb.has(l)) {
        std::mem::swap(&mut sa, &mut sb);
        std::mem::swap(&mut ba, &mut bb);
    }
    let mut batch = Vec::new();
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    for &(l, n) in &c.free {
        match (sa.has(l), sb.has(l)) {
            (true, false) => rows.push((l, n)),
            (false, true) => cols.push((l, n)),
            _ => batch.push((l, n)),
        }
    }
    // Row-major order of the target within each group, so that consecutive columns are
    // adjacent cells wherever the target's layout has them adjacent.
    rows.sort_by_key(|(l, _)| std::cmp::Reverse(st.get(*l)));
    cols.sort_by_key(|(l, _)| std::cmp::Reverse(st.get(*l)));
    let m: u64 = rows.iter().map(|r| r.1).product();
    let n: u64 = cols.iter().map(|r| r.1).product();
    let kn = c.k.1;
    let kl = c.k.0;
    let kc = KC.min(kn);
    let mc = MC.min(m.next_multiple_of(MR));
    let nc = NC.min(n.next_multiple_of(NR));
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
    let _ = writeln!(
        out,
        "{}/* packed contraction: {m} rows x {n} columns, {kn} terms each */",
        "    ".repeat(d)
    );
    ind(out, d, "{");
    d += 1;
    // With OpenMP, threads share out the row panels (each packing its own) when there are
    // several, and otherwise the column slivers of the one row panel.
    let by_rows = k.tuning.openmp && m > mc;
    let by_cols = k.tuning.openmp && m <= mc;
    let _ = writeln!(
        out,
        "{}double *teil_pb = teil_scratch({}, sizeof(double));",
        "    ".repeat(d),
        nc * kc
    );
    let _ = writeln!(
        out,
        "{}long long *teil_ix = teil_scratch({}, sizeof(long long));",
        "    ".repeat(d),
        2 * nc + 2 * kc
    );
    ind(
        out,
        d,
        &format!(
            "long long *teil_nb = teil_ix, *teil_nt = teil_nb + {nc}, \
             *teil_ka = teil_nt + {nc}, *teil_kb = teil_ka + {kc};"
        ),
    );
    // Batch labels: ordinary loops around the product.
    let mut names: BTreeMap<Label, String> = BTreeMap::new();
    let open = d;
    for &(l, bn) in &batch {
        let name = fresh();
        ind(
            out,
            d,
            &format!("for (long long {name} = 0; {name} < {bn}; {name}++) {{"),
        );
        names.insert(l, name);
        d += 1;
    }
    let base = |s: &Strides| {
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
    if cols.len() > 1 {
        ind(out, d + 1, "long long teil_q;");
    }
    ind(out, d + 1, "teil_x = teil_jc + teil_j;");
    decompose(
        &cols,
        "teil_x",
        &[("teil_ob", &sb), ("teil_oc", &st)],
        out,
        d + 1,
    );
    ind(out, d + 1, "teil_nb[teil_j] = teil_ob;");
    ind(out, d + 1, "teil_nt[teil_j] = teil_oc;");
    ind(out, d, "}");
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
    ind(
        out,
        d,
        &format!(
            "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {{ \
             teil_ka[teil_p] = (teil_pc + teil_p) * {ska}; teil_kb[teil_p] = (teil_pc + teil_p) * {skb}; }}"
        ),
    );
    // Pack the column panel: slivers of NR columns, zero beyond the last column.
    ind(
        out,
        d,
        &format!("for (long long teil_j0 = 0; teil_j0 < teil_ncb; teil_j0 += {NR}) {{"),
    );
    ind(out, d + 1, "double *teil_d = teil_pb + teil_j0 * teil_kcb;");
    ind(out, d + 1, &format!("if (teil_j0 + {NR} <= teil_ncb) {{"));
    ind(
        out,
        d + 2,
        "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) {",
    );
    ind(
        out,
        d + 3,
        &format!(
            "for (int teil_j = 0; teil_j < {NR}; teil_j++) teil_d[teil_p * {NR} + teil_j] = \
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
            "for (int teil_j = 0; teil_j < {NR}; teil_j++) teil_d[teil_p * {NR} + teil_j] = \
             teil_j0 + teil_j < teil_ncb ? teil_b[teil_kb[teil_p] + teil_nb[teil_j0 + teil_j]] : 0.0;"
        ),
    );
    ind(out, d + 2, "}");
    ind(out, d + 1, "}");
    ind(out, d, "}");
    // The row panels: with OpenMP each thread packs its own (spec/abi.md, "OpenMP").
    if by_rows {
        out.push_str("#pragma omp parallel\n");
    }
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
    if by_rows {
        out.push_str("#pragma omp for\n");
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
    ind(
        out,
        d,
        &format!("for (long long teil_i0 = 0; teil_i0 < teil_mcb; teil_i0 += {MR}) {{"),
    );
    ind(out, d + 1, "double *teil_d = teil_pa + teil_i0 * teil_kcb;");
    ind(out, d + 1, &format!("long long teil_ar[{MR}];"));
    ind(
        out,
        d + 1,
        &format!("for (int teil_i = 0; teil_i < {MR}; teil_i++) {{"),
    );
    ind(out, d + 2, "if (teil_i0 + teil_i < teil_mcb) {");
    ind(out, d + 3, "long long teil_x, teil_oa, teil_ot;");
    if rows.len() > 1 {
        ind(out, d + 3, "long long teil_q;");
    }
    ind(out, d + 3, "teil_x = teil_ic + teil_i0 + teil_i;");
    decompose(
        &rows,
        "teil_x",
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
            "for (int teil_i = 0; teil_i < {MR}; teil_i++) teil_d[teil_p * {MR} + teil_i] = \
             teil_ar[teil_i] >= 0 ? teil_a[teil_ar[teil_i] + teil_ka[teil_p]] : 0.0;"
        ),
    );
    ind(out, d + 1, "}");
    ind(out, d, "}");
    if by_cols {
        out.push_str("#pragma omp parallel for\n");
    }
    ind(
        out,
        d,
        &format!("for (long long teil_jr = 0; teil_jr < teil_ncb; teil_jr += {NR}) {{"),
    );
    ind(
        out,
        d + 1,
        &format!("for (long long teil_ir = 0; teil_ir < teil_mcb; teil_ir += {MR}) {{"),
    );
    ind(
        out,
        d + 2,
        &format!(
            "teil_tile(teil_kcb, teil_pa + teil_ir * teil_kcb, teil_pb + teil_jr * teil_kcb, \
             teil_t, teil_mc + teil_ir, teil_nt + teil_jr, \
             teil_mcb - teil_ir < {MR} ? (int)(teil_mcb - teil_ir) : {MR}, \
             teil_ncb - teil_jr < {NR} ? (int)(teil_ncb - teil_jr) : {NR}, teil_pc == 0);"
        ),
    );
    ind(out, d + 1, "}");
    ind(out, d, "}");
    // close ic, the row panels' block, pc, jc
    d -= 1;
    ind(out, d, "}");
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

/// The register tile: `t[rows[i] + cols[j]] (+)= Σ_p pa[p][i] * pb[p][j]` for `i < mr`,
/// `j < nr`, starting from `-0.0` when `first`, else from the cell's current value (the partial
/// sum of the previous panels of terms). Products are added in the order of `p`. With GCC or
/// Clang the 6 x 8 tile lives in twelve vector registers of four doubles (generic vector
/// extensions: AVX with `-mavx`, pairs of SSE2 registers otherwise); other compilers (and
/// `-Dteil_portable`, which the tests use to check it) get the same computation in plain C.
pub(crate) const TILE_HELPER: &str = r#"
/* The register tile of the packed contraction kernel (spec/padding.md, "Contraction kernels"):
 * t[rows[i] + cols[j]] = (first ? -0.0 : t[rows[i] + cols[j]]) + pa[0][i] * pb[0][j] + ...,
 * products added in order, for i < mr, j < nr. pa holds kc columns of 6 rows, pb kc rows of 8
 * columns (packed panels, zero beyond mr and nr). */
static void teil_tile(long long kc, const double *pa, const double *pb, double *t,
                      const long long *rows, const long long *cols, int mr, int nr, int first)
{
    double w[48];
    int i, j, dense = mr == 6 && nr == 8;
    long long p;
    for (j = 1; dense && j < 8; j++)
        dense = cols[j] == cols[0] + j;
    if (!dense) {
        for (i = 0; i < 48; i++)
            w[i] = -0.0;
        if (!first)
            for (i = 0; i < mr; i++)
                for (j = 0; j < nr; j++)
                    w[i * 8 + j] = t[rows[i] + cols[j]];
    }
#if defined(__GNUC__) && !defined(teil_portable)
    {
        typedef double teil_v4 __attribute__((vector_size(32)));
        teil_v4 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
        if (dense && first) {
            teil_v4 z = {-0.0, -0.0, -0.0, -0.0};
            c00 = z; c01 = z; c10 = z; c11 = z; c20 = z; c21 = z;
            c30 = z; c31 = z; c40 = z; c41 = z; c50 = z; c51 = z;
        } else {
            const double *s0 = dense ? t + rows[0] + cols[0] : w;
            const double *s1 = dense ? t + rows[1] + cols[0] : w + 8;
            const double *s2 = dense ? t + rows[2] + cols[0] : w + 16;
            const double *s3 = dense ? t + rows[3] + cols[0] : w + 24;
            const double *s4 = dense ? t + rows[4] + cols[0] : w + 32;
            const double *s5 = dense ? t + rows[5] + cols[0] : w + 40;
            __builtin_memcpy(&c00, s0, 32); __builtin_memcpy(&c01, s0 + 4, 32);
            __builtin_memcpy(&c10, s1, 32); __builtin_memcpy(&c11, s1 + 4, 32);
            __builtin_memcpy(&c20, s2, 32); __builtin_memcpy(&c21, s2 + 4, 32);
            __builtin_memcpy(&c30, s3, 32); __builtin_memcpy(&c31, s3 + 4, 32);
            __builtin_memcpy(&c40, s4, 32); __builtin_memcpy(&c41, s4 + 4, 32);
            __builtin_memcpy(&c50, s5, 32); __builtin_memcpy(&c51, s5 + 4, 32);
        }
        for (p = 0; p < kc; p++) {
            teil_v4 b0, b1, a;
            __builtin_memcpy(&b0, pb, 32);
            __builtin_memcpy(&b1, pb + 4, 32);
            a = (teil_v4){pa[0], pa[0], pa[0], pa[0]}; c00 += a * b0; c01 += a * b1;
            a = (teil_v4){pa[1], pa[1], pa[1], pa[1]}; c10 += a * b0; c11 += a * b1;
            a = (teil_v4){pa[2], pa[2], pa[2], pa[2]}; c20 += a * b0; c21 += a * b1;
            a = (teil_v4){pa[3], pa[3], pa[3], pa[3]}; c30 += a * b0; c31 += a * b1;
            a = (teil_v4){pa[4], pa[4], pa[4], pa[4]}; c40 += a * b0; c41 += a * b1;
            a = (teil_v4){pa[5], pa[5], pa[5], pa[5]}; c50 += a * b0; c51 += a * b1;
            pa += 6;
            pb += 8;
        }
        if (dense) {
            double *d0 = t + rows[0] + cols[0], *d1 = t + rows[1] + cols[0];
            double *d2 = t + rows[2] + cols[0], *d3 = t + rows[3] + cols[0];
            double *d4 = t + rows[4] + cols[0], *d5 = t + rows[5] + cols[0];
            __builtin_memcpy(d0, &c00, 32); __builtin_memcpy(d0 + 4, &c01, 32);
            __builtin_memcpy(d1, &c10, 32); __builtin_memcpy(d1 + 4, &c11, 32);
            __builtin_memcpy(d2, &c20, 32); __builtin_memcpy(d2 + 4, &c21, 32);
            __builtin_memcpy(d3, &c30, 32); __builtin_memcpy(d3 + 4, &c31, 32);
            __builtin_memcpy(d4, &c40, 32); __builtin_memcpy(d4 + 4, &c41, 32);
            __builtin_memcpy(d5, &c50, 32); __builtin_memcpy(d5 + 4, &c51, 32);
            return;
        }
        __builtin_memcpy(w, &c00, 32); __builtin_memcpy(w + 4, &c01, 32);
        __builtin_memcpy(w + 8, &c10, 32); __builtin_memcpy(w + 12, &c11, 32);
        __builtin_memcpy(w + 16, &c20, 32); __builtin_memcpy(w + 20, &c21, 32);
        __builtin_memcpy(w + 24, &c30, 32); __builtin_memcpy(w + 28, &c31, 32);
        __builtin_memcpy(w + 32, &c40, 32); __builtin_memcpy(w + 36, &c41, 32);
        __builtin_memcpy(w + 40, &c50, 32); __builtin_memcpy(w + 44, &c51, 32);
    }
#else
    if (dense) {
        for (i = 0; i < 6; i++)
            for (j = 0; j < 8; j++)
                w[i * 8 + j] = first ? -0.0 : t[rows[i] + cols[j]];
    }
    for (p = 0; p < kc; p++) {
        for (i = 0; i < 6; i++)
            for (j = 0; j < 8; j++)
                w[i * 8 + j] += pa[i] * pb[j];
        pa += 6;
        pb += 8;
    }
#endif
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++)
            t[rows[i] + cols[j]] = w[i * 8 + j];
}
"#;
