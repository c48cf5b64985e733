//! Printing [`Step::Contract`](crate::ir::Step::Contract) steps: the strategy the pass chose
//! ([`Strategy`]), printed as it is. The meaning of each strategy (the exact order of
//! operations) is documented on [`Strategy`]; this module only turns it into C.

use super::multiply_add;
use crate::ir::{Access, Affine, BufId, Contraction, Kernel, Label, Strategy};
use crate::opt::contract::{MR, NR};
use std::collections::BTreeMap;
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

/// Prints the contraction step `c` at indentation `depth`, with C names for labels drawn by
/// `fresh`.
pub(crate) fn print(
    k: &Kernel,
    c: &Contraction,
    out: &mut String,
    depth: usize,
    fresh: &mut dyn FnMut() -> String,
) {
    match &c.strategy {
        Strategy::Packed { .. } => packed(k, c, out, depth, fresh),
        Strategy::Dot { lane, lanes } => dot(k, c, *lane, *lanes, out, depth, fresh),
    }
}

/// Eight cells at a time along the target label with the smallest stride in the target; the
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
    let mut names: BTreeMap<Label, String> = BTreeMap::new();
    let mut d = depth;
    let mut pragma = k.openmp;
    for &crate::ir::Bound {
        var: l, extent: n, ..
    } in &c.free
    {
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
        let (x, y) = (
            format!("{na}[{}]", at(&oa, &sa, u)),
            format!("{nb}[{}]", at(&ob, &sb, u)),
        );
        let _ = writeln!(
            out,
            "{}",
            multiply_add(k.fma, &format!("teil_s{u}"), &x, &y)
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
        let (x, y) = (format!("{na}[{oa}]"), format!("{nb}[{ob}]"));
        let _ = writeln!(out, "{}", multiply_add(k.fma, "teil_s0", &x, &y));
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
    group: &[crate::ir::Bound],
    x: &str,
    dsts: &[(&str, &Affine)],
    out: &mut String,
    depth: usize,
) {
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

/// The packed matrix product (BLIS-style loops around [`TILE_HELPER`]).
fn packed(
    k: &Kernel,
    c: &Contraction,
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
        kc,
        mc,
        nc,
    } = &c.strategy
    else {
        return;
    };
    let (m, n, kc, mc, nc) = (*m, *n, *kc, *mc, *nc);
    let st = affine(k, &c.target);
    let (ra, rb) = if *swap { (&c.b, &c.a) } else { (&c.a, &c.b) };
    let (sa, sb) = (affine(k, ra), affine(k, rb));
    let (ba, bb): (BufId, BufId) = (ra.buf, rb.buf);
    let kn = c.k.extent;
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
    let _ = writeln!(
        out,
        "{}/* packed contraction: {m} rows x {n} columns, {kn} terms each */",
        "    ".repeat(d)
    );
    ind(out, d, "{");
    d += 1;
    // With OpenMP, threads share out the row panels (each packing its own) when there are
    // several, and otherwise the column slivers of the one row panel.
    let by_rows = k.openmp && m > mc;
    let by_cols = k.openmp && m <= mc;
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
    if cols.len() > 1 {
        ind(out, d + 1, "long long teil_q;");
    }
    ind(out, d + 1, "teil_x = teil_jc + teil_j;");
    decompose(
        cols,
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
        rows,
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
            "{}(teil_kcb, teil_pa + teil_ir * teil_kcb, teil_pb + teil_jr * teil_kcb, \
             teil_t, teil_mc + teil_ir, teil_nt + teil_jr, \
             teil_mcb - teil_ir < {MR} ? (int)(teil_mcb - teil_ir) : {MR}, \
             teil_ncb - teil_jr < {NR} ? (int)(teil_ncb - teil_jr) : {NR}, teil_pc == 0);",
            if k.fma { "teil_tile_fma" } else { "teil_tile" }
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

/// Defines `teil_fma4(a, b, c)`: `c + a * b` on the tile's GCC/Clang vectors of four doubles,
/// lane by lane with `teil_fma` (the compilers inline it and turn the four lanes into one
/// vector instruction, a fused multiply-add where the target has one).
const FMA4_MACRO: &str = r#"
/* The register tile in fma mode (spec/values.md, "Fused multiply-add"): teil_tile with every
 * multiply-add of the tile written as teil_fma, lane by lane on the vectors. */
#define teil_fma4(a, b, c) ((__typeof__(c)){teil_fma((a)[0], (b)[0], (c)[0]), \
    teil_fma((a)[1], (b)[1], (c)[1]), teil_fma((a)[2], (b)[2], (c)[2]), \
    teil_fma((a)[3], (b)[3], (c)[3])})
"#;

/// [`TILE_HELPER`] in fma mode: `teil_tile_fma`, the same function with every multiply-add
/// statement `c += a * b;` written `c = teil_fma4(a, b, c);` in the GCC/Clang vector path and
/// `c = teil_fma(a, b, c);` in the portable path (after its `#else`). Derived from the exact
/// helper, so that the two tiles differ in exactly these statements (a unit test counts them).
pub(crate) fn tile_fma_helper() -> String {
    let (vector, portable) = TILE_HELPER
        .split_once("#else\n")
        .unwrap_or((TILE_HELPER, ""));
    let vector = fuse_statements(vector, "teil_fma4");
    let portable = fuse_statements(portable, "teil_fma");
    let tile = if portable.is_empty() {
        vector
    } else {
        format!("{vector}#else\n{portable}")
    };
    format!(
        "{}{}",
        FMA4_MACRO.trim_start(),
        tile.replacen("static void teil_tile(", "static void teil_tile_fma(", 1)
    )
}

/// Rewrites every statement `LHS += A * B;` of C text (`A` and `B` single operands without
/// spaces) as `LHS = F(A, B, LHS);`.
fn fuse_statements(text: &str, f: &str) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    let mut rest = text;
    while let Some(at) = rest.find(" += ") {
        // The statement starts after the last `;`, `{` or line break before it.
        let start = rest[..at].rfind([';', '{', '\n']).map_or(0, |i| i + 1);
        let lead = rest[start..at].len() - rest[start..at].trim_start().len();
        let lhs = rest[start + lead..at].to_string();
        let Some(end) = rest[at..].find(';').map(|e| at + e) else {
            break;
        };
        let rhs = &rest[at + 4..end];
        match rhs.split_once(" * ") {
            Some((a, b)) if !a.contains(' ') && !b.contains(' ') && !a.is_empty() => {
                out.push_str(&rest[..start + lead]);
                let _ = write!(out, "{lhs} = {f}({a}, {b}, {lhs})");
            }
            _ => out.push_str(&rest[..end]),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fma_tile_fuses_exactly_the_multiply_adds_of_the_tile() {
        let fused = tile_fma_helper();
        // 6 x 2 vector updates in the GCC/Clang path, one in the portable path.
        let vector = fused.matches(" = teil_fma4(").count();
        let portable = fused.matches(" = teil_fma(").count();
        assert_eq!((vector, portable), (12, 1), "{fused}");
        assert!(fused.contains("c00 = teil_fma4(a, b0, c00);"));
        assert!(fused.contains("w[i * 8 + j] = teil_fma(pa[i], pb[j], w[i * 8 + j]);"));
        assert!(fused.contains("static void teil_tile_fma(") && !fused.contains("teil_tile("));
        // Nothing else changed: removing the fused statements' differences gives the exact tile.
        let unfused = fused
            .split_once("[3])})\n")
            .map(|(_, tile)| tile)
            .unwrap_or_default()
            .replace("teil_tile_fma(", "teil_tile(");
        let mut exact = unfused.clone();
        for (r, h) in (0..6).flat_map(|r| (0..2).map(move |h| (r, h))) {
            exact = exact.replace(
                &format!("c{r}{h} = teil_fma4(a, b{h}, c{r}{h});"),
                &format!("c{r}{h} += a * b{h};"),
            );
        }
        exact = exact.replace(
            "w[i * 8 + j] = teil_fma(pa[i], pb[j], w[i * 8 + j]);",
            "w[i * 8 + j] += pa[i] * pb[j];",
        );
        assert_eq!(exact.trim_start(), TILE_HELPER.trim_start());
        // Other compound assignments stay.
        assert!(fused.contains("pa += 6;") && fused.contains("pb += 8;"));
    }

    #[test]
    fn fusing_rewrites_only_multiply_add_statements() {
        assert_eq!(
            fuse_statements("    x += a * b; y += 2; z[i * 2] += p[i] * q[j];\n", "f"),
            "    x = f(a, b, x); y += 2; z[i * 2] = f(p[i], q[j], z[i * 2]);\n"
        );
        assert_eq!(fuse_statements("s += a * b + c;", "f"), "s += a * b + c;");
    }
}
