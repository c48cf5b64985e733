//! Printing the packed matrix product of [`Strategy::Packed`]: BLIS-style loops over column,
//! term and row panels that pack the operands into scratch panels and call the register tile
//! of the target ([`tile`](super::tile)) on every pair of slivers.

use super::expr::{affine, offset};
use super::loops::{loops, Fresh};
use super::nest::c_type;
use super::tile::{Tile, PREFETCH};
use super::writer::Writer;
use crate::ir::{Affine, Bound, Contraction, Kernel, Panels, Strategy};
use std::collections::BTreeMap;

/// Terms per sliver of the packed column panel (`teil_ks`, the distance between the starts of
/// consecutive slivers, over NR): the panel's `kcb` terms, and one more where a sliver of
/// `kcb` terms is a multiple of 4 KiB. Packed term by term, each term writes a line of every
/// sliver, and slivers a multiple of 4 KiB apart put all those lines in one set of L1 (16 KiB
/// apart at 256 terms): without the gap a 256³ binary32 product was 1.03x slower. Where the
/// slivers are not that far apart there is no gap: `cfd`'s products of 12 terms lost about 5 %
/// to it. PERFORMANCE.md, *Packing without aliasing*.
const SLIVER: &str = "teil_ks";

/// C statements that set the variable `x` to the flat index `value` of the labels `group`
/// (row-major, first label outermost) and turn it (destroying `x`) into offsets:
/// `dst_i = Σ stride_i(l) * l` for every `(dst_i, strides_i)` in `dsts`. Declares the scratch
/// digit `teil_q` where it needs one (more than one label); the caller declares `x` and `dst_i`.
fn decompose(group: &[Bound], x: &str, value: &str, dsts: &[(&str, &Affine)], w: &mut Writer) {
    // `teil_q`, the digit of a label other than the outermost, exists only where there is one.
    if group.len() > 1 {
        w.line("long long teil_q;");
    }
    w.line(format!("{x} = {value};"));
    for (dst, _) in dsts {
        w.line(format!("{dst} = 0;"));
    }
    for (i, b) in group.iter().enumerate().rev() {
        let (l, n) = (b.var, b.extent);
        let q = if i == 0 {
            x.to_string()
        } else {
            w.line(format!("teil_q = {x} % {n};"));
            "teil_q".to_string()
        };
        for (dst, s) in dsts {
            match s.get(l) {
                0 => {}
                1 => w.line(format!("{dst} += {q};")),
                st => w.line(format!("{dst} += {q} * {st};")),
            }
        }
        if i > 0 {
            w.line(format!("{x} /= {n};"));
        }
    }
}

/// The packed matrix product with the tile and panels `v` (BLIS-style loops around the
/// register tile of [`tile`](super::tile)).
pub(super) fn print(k: &Kernel, c: &Contraction, v: &Panels, w: &mut Writer, fresh: &mut Fresh) {
    let (
        Strategy::Packed {
            swap,
            batch,
            rows,
            cols,
            m,
            n,
            ..
        },
        Some(b),
    ) = (&c.strategy, &c.b)
    else {
        return;
    };
    let (m, n, kc, nc, nr) = (*m, *n, c.panel_terms(v.kc), v.nc, v.nr);
    let ty = c_type(c.elem);
    let st = affine(k, &c.target);
    let (ra, rb) = if *swap { (b, &c.a) } else { (&c.a, b) };
    let (sa, sb) = (affine(k, ra), affine(k, rb));
    let kn = c.terms();
    let kl = c.k.var;
    let (na, nb, nt) = (
        k.buffer(ra.buf).c_name.clone(),
        k.buffer(rb.buf).c_name.clone(),
        k.buffer(c.target.buf).c_name.clone(),
    );
    let two_level = c.outer.map_or(String::new(), |o| {
        let flat = if c.nested() { "" } else { ", summed as one" };
        format!(" ({} sums of {}{flat})", o.extent, c.k.extent)
    });
    // The column operand's terms are packed term by term unless adjacent (see below).
    let by_terms = sb.get(kl) != 1;
    let slivers = if by_terms { nc.div_ceil(nr) } else { 0 };
    w.line(format!(
        "/* packed contraction: {m} rows x {n} columns, {kn} terms each{two_level} */"
    ));
    w.block("", |w| {
        w.line(format!(
            "{ty} *teil_pb = teil_scratch({}, sizeof({ty}));",
            nc * (kc + 1)
        ));
        w.line(format!(
            "long long *teil_ix = teil_scratch({}, sizeof(long long));",
            2 * nc + 2 * kc + slivers
        ));
        w.line(format!(
            "long long *teil_nb = teil_ix, *teil_nt = teil_nb + {nc}, \
             *teil_ka = teil_nt + {nc}, *teil_kb = teil_ka + {kc}{};",
            if by_terms {
                format!(", *teil_nd = teil_kb + {kc}")
            } else {
                String::new()
            }
        ));
        // Batch labels: ordinary loops around the product.
        loops(
            &batch.iter().collect::<Vec<_>>(),
            BTreeMap::new(),
            false,
            w,
            fresh,
            |w, _, names, _| {
                let base = |s: &Affine| {
                    let terms: Vec<(String, u64)> = names
                        .iter()
                        .map(|(l, nm)| (nm.clone(), s.get(*l)))
                        .collect();
                    offset(&terms, s.constant)
                };
                w.line(format!(
                    "const {ty} *teil_a = {na} + {}, *teil_b = {nb} + {};",
                    base(&sa),
                    base(&sb)
                ));
                w.line(format!("{ty} *teil_t = {nt} + {};", base(&st)));
                let jc = format!("for (long long teil_jc = 0; teil_jc < {n}; teil_jc += {nc})");
                w.block(jc, |w| {
                    w.line(format!(
                        "long long teil_ncb = {n} - teil_jc < {nc} ? {n} - teil_jc : {nc};"
                    ));
                    columns(cols, &sb, &st, by_terms, nr, w);
                    let pc =
                        format!("for (long long teil_pc = 0; teil_pc < {kn}; teil_pc += {kc})");
                    w.block(pc, |w| {
                        w.line(format!(
                            "long long teil_kcb = {kn} - teil_pc < {kc} ? {kn} - teil_pc : {kc};"
                        ));
                        // Terms that make a sliver 4 KiB (NR elements a term).
                        let aliasing = (4096 / (nr * c.elem.size() as u64)).max(1);
                        w.line(format!(
                            "long long {SLIVER} = teil_kcb % {aliasing} ? teil_kcb : teil_kcb + 1;"
                        ));
                        terms(c, &sa, &sb, w);
                        pack_columns(ty, by_terms, nr, k.openmp, w);
                        row_panels(k, c, v, rows, &sa, &st, m, w);
                    });
                });
            },
        );
        w.line("teil_scratch_free(teil_ix);");
        w.line("teil_scratch_free(teil_pb);");
    });
}

/// The offsets of the column panel's columns in the column operand (`teil_nb`) and in the
/// target (`teil_nt`), and with `by_terms`, which slivers of `nr` columns are adjacent cells
/// of the column operand (`teil_nd`).
fn columns(cols: &[Bound], sb: &Affine, st: &Affine, by_terms: bool, nr: u64, w: &mut Writer) {
    w.block(
        "for (long long teil_j = 0; teil_j < teil_ncb; teil_j++)",
        |w| {
            w.line("long long teil_ob, teil_oc, teil_x;");
            decompose(
                cols,
                "teil_x",
                "teil_jc + teil_j",
                &[("teil_ob", sb), ("teil_oc", st)],
                w,
            );
            w.line("teil_nb[teil_j] = teil_ob;");
            w.line("teil_nt[teil_j] = teil_oc;");
        },
    );
    if by_terms {
        // Which slivers are NR adjacent cells of the column operand.
        w.block(
            format!("for (long long teil_j0 = 0; teil_j0 < teil_ncb; teil_j0 += {nr})"),
            |w| {
                w.line(format!("long long teil_e = teil_j0 + {nr} <= teil_ncb;"));
                w.line(format!(
                    "for (int teil_j = 1; teil_e && teil_j < {nr}; teil_j++) \
                     teil_e = teil_nb[teil_j0 + teil_j] == teil_nb[teil_j0] + teil_j;"
                ));
                w.line(format!("teil_nd[teil_j0 / {nr}] = teil_e;"));
            },
        );
    }
}

/// The offsets of the term panel's terms in the column operand (`teil_kb`) and, for a
/// two-level sum, in the row operand (`teil_ka`; a single sum's are `(teil_pc + teil_p) *`
/// its stride, written where the row panel is packed).
fn terms(c: &Contraction, sa: &Affine, sb: &Affine, w: &mut Writer) {
    let kl = c.k.var;
    let (ska, skb) = (sa.get(kl), sb.get(kl));
    match c.outer {
        None => w.line(format!(
            "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++) \
             teil_kb[teil_p] = (teil_pc + teil_p) * {skb};"
        )),
        // Term t of a two-level sum: outer index t / K, inner index t % K.
        Some(o) => {
            let (soa, sob, kin) = (sa.get(o.var), sb.get(o.var), c.k.extent);
            w.block(
                "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++)",
                |w| {
                    w.line(format!(
                        "long long teil_o = (teil_pc + teil_p) / {kin}, teil_k = (teil_pc + teil_p) % {kin};"
                    ));
                    w.line(format!(
                        "teil_ka[teil_p] = teil_o * {soa} + teil_k * {ska}; \
                         teil_kb[teil_p] = teil_o * {sob} + teil_k * {skb};"
                    ));
                },
            );
        }
    }
}

/// Packs the column panel (of C type `ty`): slivers of NR columns, zero beyond the last column,
/// each [`SLIVER`] elements per column after the previous. Where the terms are adjacent in the
/// column operand, sliver by sliver (each sliver's terms read along a row of it); otherwise
/// (`by_terms`) term by term, each term's columns read along the operand's rows, and a sliver
/// of NR adjacent columns copied as one run. With OpenMP
/// (`openmp`) the outer loop is shared among the threads (its iterations write disjoint cells
/// of the panel, and a copy's order changes no value), so that packing does not run on one
/// thread while the others wait for the row panels' region.
fn pack_columns(ty: &str, by_terms: bool, nr: u64, openmp: bool, w: &mut Writer) {
    if openmp {
        w.directive("#pragma omp parallel for");
    }
    // Column `j` of the sliver, term `p`, into the packed `cell`.
    let gather = |cell: &str| {
        format!(
            "for (int teil_j = 0; teil_j < {nr}; teil_j++) {cell} = \
             teil_b[teil_kb[teil_p] + teil_nb[teil_j0 + teil_j]];"
        )
    };
    // The same, zero beyond the panel's last column.
    let edge = |cell: &str| {
        format!(
            "for (int teil_j = 0; teil_j < {nr}; teil_j++) {cell} = \
             teil_j0 + teil_j < teil_ncb ? teil_b[teil_kb[teil_p] + teil_nb[teil_j0 + teil_j]] : 0.0;"
        )
    };
    let slivers = format!("for (long long teil_j0 = 0; teil_j0 < teil_ncb; teil_j0 += {nr})");
    let each_term = "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++)";
    if !by_terms {
        // The sliver's cell of term p and column j.
        let cell = format!("teil_d[teil_p * {nr} + teil_j]");
        w.block(slivers, |w| {
            w.line(format!("{ty} *teil_d = teil_pb + teil_j0 * {SLIVER};"));
            w.chain(&mut [
                (
                    &format!("if (teil_j0 + {nr} <= teil_ncb)"),
                    &mut |w: &mut Writer| {
                        w.block(each_term, |w| w.line(gather(&cell)));
                    },
                ),
                ("else", &mut |w: &mut Writer| {
                    w.block(each_term, |w| w.line(edge(&cell)));
                }),
            ]);
        });
    } else {
        w.block(each_term, |w| {
            w.block(&slivers, |w| {
                w.line(format!(
                    "{ty} *teil_d = teil_pb + teil_j0 * {SLIVER} + teil_p * {nr};"
                ));
                w.chain(&mut [
                    (&format!("if (teil_nd[teil_j0 / {nr}])"), &mut |w: &mut Writer| {
                        w.line(format!("const {ty} *teil_s = teil_b + teil_kb[teil_p] + teil_nb[teil_j0];"));
                        w.line(format!(
                            "for (int teil_j = 0; teil_j < {nr}; teil_j++) teil_d[teil_j] = teil_s[teil_j];"
                        ));
                    }),
                    (&format!("else if (teil_j0 + {nr} <= teil_ncb)"), &mut |w: &mut Writer| {
                        w.line(gather("teil_d[teil_j]"));
                    }),
                    ("else", &mut |w: &mut Writer| w.line(edge("teil_d[teil_j]"))),
                ]);
            });
        });
    }
}

/// The row panels of one column and term panel, in a block that holds their scratch. With
/// OpenMP (spec/abi.md, "OpenMP") one parallel region, in which every thread runs the row
/// panel loop: the threads pack the row panel's slivers side by side into the one shared
/// panel, then share out its tiles (the implicit barriers of the two `omp for` keep the
/// packing before the tiles and the tiles before the next row panel's packing).
#[allow(clippy::too_many_arguments)]
fn row_panels(
    k: &Kernel,
    c: &Contraction,
    v: &Panels,
    rows: &[Bound],
    sa: &Affine,
    st: &Affine,
    m: u64,
    w: &mut Writer,
) {
    let (kc, mc, mr, nr) = (c.panel_terms(v.kc), v.mc, v.mr, v.nr);
    let ty = c_type(c.elem);
    let panels = |w: &mut Writer| {
        let ic = format!("for (long long teil_ic = 0; teil_ic < {m}; teil_ic += {mc})");
        w.block(ic, |w| {
            w.line(format!(
                "long long teil_mcb = {m} - teil_ic < {mc} ? {m} - teil_ic : {mc};"
            ));
            // Pack the row panel: slivers of MR rows, zero beyond the last row.
            if k.openmp {
                w.directive("#pragma omp for");
            }
            let i0 = format!("for (long long teil_i0 = 0; teil_i0 < teil_mcb; teil_i0 += {mr})");
            w.block(i0, |w| {
                w.line(format!("{ty} *teil_d = teil_pa + teil_i0 * teil_kcb;"));
                w.line(format!("long long teil_ar[{mr}];"));
                w.block(format!("for (int teil_i = 0; teil_i < {mr}; teil_i++)"), |w| {
                    w.chain(&mut [
                        ("if (teil_i0 + teil_i < teil_mcb)", &mut |w: &mut Writer| {
                            w.line("long long teil_x, teil_oa, teil_ot;");
                            decompose(
                                rows,
                                "teil_x",
                                "teil_ic + teil_i0 + teil_i",
                                &[("teil_oa", sa), ("teil_ot", st)],
                                w,
                            );
                            w.line("teil_ar[teil_i] = teil_oa;");
                            w.line("teil_mc[teil_i0 + teil_i] = teil_ot;");
                        }),
                        ("else", &mut |w: &mut Writer| w.line("teil_ar[teil_i] = -1;")),
                    ]);
                });
                // A single sum's term offsets are affine: a full sliver's copy needs no test
                // per element and no table (1.02-1.03x faster on a 256³ binary32 product). A
                // two-level sum's keep their table and the one copy with the test, which GCC
                // does not turn into gathers (without the test it did, 1.04x slower on Zen 3).
                let each_term = "for (long long teil_p = 0; teil_p < teil_kcb; teil_p++)";
                let row = format!("for (int teil_i = 0; teil_i < {mr}; teil_i++)");
                let cell = format!("teil_d[teil_p * {mr} + teil_i]");
                let edge = |ka: &str| {
                    format!(
                        "{row} {cell} = teil_ar[teil_i] >= 0 ? teil_a[teil_ar[teil_i] + {ka}] : 0.0;"
                    )
                };
                match c.outer {
                    None => {
                        let ka = format!("(teil_pc + teil_p) * {}", sa.get(c.k.var));
                        w.chain(&mut [
                            (&format!("if (teil_i0 + {mr} <= teil_mcb)"), &mut |w: &mut Writer| {
                                w.block(each_term, |w| {
                                    w.line(format!("{row} {cell} = teil_a[teil_ar[teil_i] + {ka}];"));
                                });
                            }),
                            ("else", &mut |w: &mut Writer| {
                                w.block(each_term, |w| w.line(edge(&ka)));
                            }),
                        ]);
                    }
                    Some(_) => w.block(each_term, |w| w.line(edge("teil_ka[teil_p]"))),
                }
            });
            if k.openmp {
                w.directive("#pragma omp for collapse(2)");
            }
            let jr = format!("for (long long teil_jr = 0; teil_jr < teil_ncb; teil_jr += {nr})");
            let ir = format!("for (long long teil_ir = 0; teil_ir < teil_mcb; teil_ir += {mr})");
            let (outer, inner) = if v.rows_outer { (ir, jr) } else { (jr, ir) };
            let kin = if c.nested() {
                format!(", {}", c.k.extent)
            } else {
                String::new()
            };
            let (full, edge) = Tile::of(c, v, k.fma);
            // Column sliver by column sliver, the next tile computes the next row sliver's
            // cells of the target: ask for them now (`tile::PREFETCH`). Row sliver by row
            // sliver it computes the next columns of the same rows, which the hardware
            // prefetchers follow (prefetching them was 1-2 % slower on 64 x 7172 x 256).
            let next = (!v.rows_outer).then(|| {
                format!(
                    "if (teil_ir + {mr} < teil_mcb) {PREFETCH}(teil_t, (int)sizeof *teil_t, teil_mc + teil_ir + {mr}, \
                     teil_mcb - teil_ir - {mr} < {mr} ? (int)(teil_mcb - teil_ir - {mr}) : {mr}, teil_nt + teil_jr, \
                     teil_ncb - teil_jr < {nr} ? (int)(teil_ncb - teil_jr) : {nr});"
                )
            });
            w.block(outer, |w| {
                w.block(inner, |w| {
                    if let Some(next) = &next {
                        w.line(next);
                    }
                    let call = |w: &mut Writer, t: &Tile| {
                        w.line(format!(
                            "{}(teil_kcb, teil_pa + teil_ir * teil_kcb, teil_pb + teil_jr * {SLIVER}, \
                             teil_t, teil_mc + teil_ir, teil_nt + teil_jr, \
                             teil_mcb - teil_ir < {mr} ? (int)(teil_mcb - teil_ir) : {mr}, \
                             teil_ncb - teil_jr < {nr} ? (int)(teil_ncb - teil_jr) : {nr}, teil_pc == 0{kin});",
                            t.name()
                        ))
                    };
                    match edge {
                        // The last row sliver's own tile ([`Tile::of`]).
                        Some(edge) => w.chain(&mut [
                            (&format!("if (teil_mcb - teil_ir < {mr})"), &mut |w: &mut Writer| {
                                call(w, &edge)
                            }),
                            ("else", &mut |w: &mut Writer| call(w, &full)),
                        ]),
                        None => call(w, &full),
                    }
                });
            });
        });
    };
    w.block("", |w| {
        w.line(format!(
            "{ty} *teil_pa = teil_scratch({}, sizeof({ty}));",
            mc * kc
        ));
        w.line(format!(
            "long long *teil_mc = teil_scratch({mc}, sizeof(long long));"
        ));
        if k.openmp {
            w.directive("#pragma omp parallel");
            w.block("", panels);
        } else {
            panels(w);
        }
        w.line("teil_scratch_free(teil_mc);");
        w.line("teil_scratch_free(teil_pa);");
    });
}
