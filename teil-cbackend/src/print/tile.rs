//! Printing the register tiles that the packed matrix products call
//! ([`packed`](super::packed)): one C function per tile shape, target and mode, defined once
//! per translation unit ([`tiles`]).

use super::expr::multiply_add;
use super::nest::c_type;
use super::target::{branches, fma_lanes};
use super::writer::Writer;
use crate::ir::{Contraction, Kernel, Panels, Step, Strategy, Target};
use std::collections::{BTreeMap, BTreeSet};
use teil::ast::ElemType;

/// A register tile: the `rows` x `nr` cells it computes, in slivers of `mr` rows and `nr`
/// columns (its panels' [`Panels::mr`] and [`Panels::nr`]), whether it fuses its multiply-adds
/// (fma mode), whether it computes two-level sums, and in which element type.
/// A full tile computes whole slivers; an edge tile ([`Tile::of`]) fewer rows of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Tile {
    pub rows: u64,
    pub mr: u64,
    pub nr: u64,
    pub fma: bool,
    pub two_level: bool,
    pub elem: ElemType,
}

impl Tile {
    /// The tiles the packed product `c` calls with the panels `v` (fma mode where `fma`): the
    /// full tile, and where the last row sliver is narrower (`m % mr` rows: the row panels hold
    /// whole slivers, [`Panels::mc`]) an edge tile of its rows, so that the last sliver does
    /// not compute the zero rows that pad it (a product of 64 rows in slivers of 12 computed
    /// 72), where the contraction pass chose one ([`Panels::edge`]). Only rows: a column edge
    /// would be rounded up to whole vectors, which differ between the targets that share a
    /// kernel's C, and it would save at most half a sliver.
    pub fn of(c: &Contraction, v: &Panels, fma: bool) -> (Tile, Option<Tile>) {
        let full = Tile {
            rows: v.mr,
            mr: v.mr,
            nr: v.nr,
            fma,
            two_level: c.nested(),
            elem: c.elem,
        };
        let Strategy::Packed { m, .. } = &c.strategy else {
            return (full, None);
        };
        let edge = Some(m % v.mr)
            .filter(|&r| r > 0 && v.edge)
            .map(|rows| Tile { rows, ..full });
        (full, edge)
    }

    /// The tile's C name: `teil_tile_MRxNR` (`teil_tile2_..` for two-level sums), an edge
    /// tile's `teil_tile_ROWSxNR_of_MR`, `_fma` in fma mode and `_f32` in binary32.
    pub fn name(&self) -> String {
        let Tile { rows, mr, nr, .. } = *self;
        format!(
            "teil_tile{}_{rows}x{nr}{}{}{}",
            if self.two_level { "2" } else { "" },
            if rows == mr {
                String::new()
            } else {
                format!("_of_{mr}")
            },
            if self.fma { "_fma" } else { "" },
            if self.elem == ElemType::F32 {
                "_f32"
            } else {
                ""
            }
        )
    }
}

/// The register tiles the packed steps of `kernels` call, for every target (one branch per
/// group of targets with the same tiles and vector width). Returns whether it wrote any
/// (none without packed steps).
pub(super) fn tiles(w: &mut Writer, kernels: &[&Kernel]) -> bool {
    let mut shapes: BTreeMap<Target, BTreeSet<Tile>> = BTreeMap::new();
    for k in kernels {
        for s in &k.steps {
            if let Step::Contract {
                c:
                    c @ Contraction {
                        strategy: Strategy::Packed { variants, .. },
                        ..
                    },
                ..
            } = s
            {
                for v in variants {
                    let set = shapes.entry(v.target).or_default();
                    let (full, edge) = Tile::of(c, v, k.fma);
                    set.extend(std::iter::once(full).chain(edge));
                }
            }
        }
    }
    if shapes.is_empty() {
        return false;
    }
    // Targets with the same vector width and tile shapes print the same tiles.
    let mut keys: Vec<(u64, &BTreeSet<Tile>)> = Vec::new();
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
    // Every tile starts with a blank line that parts it from what precedes it, but for the
    // first one of the section where nothing precedes it.
    let mut section = Writer::new();
    branches(&targets, &mut section, |w, t| {
        for elem in ElemType::ALL {
            let width = t.lanes(elem);
            if width > 1 && shapes[&t].iter().any(|s| s.fma && s.elem == elem) {
                fma_lanes(w, width, elem);
            }
        }
        for s in &shapes[&t] {
            w.blank();
            tile(w, s, t.lanes(s.elem));
        }
    });
    prefetch(w);
    w.blank();
    w.text(section.finish().trim_start());
    true
}

/// The C name of [`prefetch`]'s function.
pub(super) const PREFETCH: &str = "teil_prefetch_tile";

/// `teil_prefetch_tile(t, size, rows, mr, cols, nr)`: asks the cache for the target cells (of
/// `size` bytes) of the
/// next tile the packed kernel calls (the first and the last of its `nr` columns in each of
/// its `mr` rows, for writing) while the current tile computes, so that the next tile's
/// loads of its partial sums do not wait for memory (`print::packed`: column sliver by column
/// sliver only). `ij,jk->ik` in fma mode: 2048³ 184 to 161 ms, 1000³ 19.7 to 17.5 ms
/// (PERFORMANCE.md). A hint only (no value is read or written); nothing where the compiler
/// has no `__builtin_prefetch`.
fn prefetch(w: &mut Writer) {
    w.line("/* Prefetch of the target cells of a packed product's next register tile (spec/padding.md,");
    w.line(" * \"Contraction kernels\"): a hint, no cell is read or written. Unused where every packed product");
    w.line(" * runs row sliver by row sliver. */");
    w.directive("#ifdef __GNUC__");
    w.line("__attribute__((unused))");
    w.directive("#endif");
    w.line(format!(
        "static void {PREFETCH}(const void *t, int size, const long long *rows, int mr, const long long *cols, int nr)"
    ));
    w.block("", |w| {
        w.directive("#if defined(__GNUC__) && !defined(teil_portable)");
        w.line("const char *c = t;");
        w.block("for (int i = 0; i < mr; i++)", |w| {
            w.line("__builtin_prefetch(c + (rows[i] + cols[0]) * size, 1);");
            w.line("__builtin_prefetch(c + (rows[i] + cols[nr - 1]) * size, 1);");
        });
        w.directive("#else");
        w.line("(void)t, (void)size, (void)rows, (void)mr, (void)cols, (void)nr;");
        w.directive("#endif");
    });
}

/// The register tile `s` ([`Tile::name`]; in fma mode every multiply-add fused):
/// `t[rows[i] + cols[j]] (+)= Σ_p pa[p][i] * pb[p][j]` for `i < mr`, `j < nr` (the arguments;
/// at most the tile's `ROWS` x `NR`; `pa` and `pb` in slivers of the tile's `MR` rows and
/// `NR` columns), starting from `-0.0` when `first`, else from the cell's current
/// value (the partial sum of the previous panels of terms). Products are added in the order of
/// `p`. With `width > 1` the tile's rows live in vectors of `width` elements of the tile's
/// type (GCC's generic vector extensions; `NR` is a multiple of `width`), each vector
/// operation one operation of that type per cell; with `width == 1` the same computation is
/// plain C (the compiler may vectorise it). The panels, the target and the sums are of the
/// tile's type: in binary32 every product and addition is a C `float` operation.
///
/// With `two_level`, the tile `teil_tile2_..` of a two-level sum: the
/// same, with the terms in groups of `kin` (an extra argument; `kc` is a multiple of it), each
/// group's products added in order to an inner sum of its own from `-0.0`, which is then added
/// to the cell's sum: `t[..] (+)= s_0 + s_1 + ...` with `s_g = -0.0 + pa[g kin][i] * pb[g
/// kin][j] + ...` (spec/padding.md, "Contraction kernels"). In fma mode only the
/// multiply-adds of the inner sums are fused. The tile keeps both sums of every cell in
/// registers (the pass's two-sum tile sizes, `opt::contract::NESTED`, are chosen so).
fn tile(w: &mut Writer, s: &Tile, width: u64) {
    let name = s.name();
    // `mr` rows of the sliver's `s.mr` are computed; every column of it.
    let (mr, nr, fma, two_level) = (s.rows, s.nr, s.fma, s.two_level);
    let ty = c_type(s.elem);
    let cells = mr * nr;
    // The continuation lines of the parameter list.
    let more = "                      ";
    if two_level {
        w.line("/* A register tile of the packed two-level contraction kernel (spec/padding.md, \"Contraction");
        w.line(" * kernels\"): t[rows[i] + cols[j]] = (first ? -0.0 : t[rows[i] + cols[j]]) + s[0] + s[1] + ...");
        w.line(" * with s[g] = -0.0 + pa[g * kin][i] * pb[g * kin][j] + ... (kin products), sums and products");
        w.line(format!(
            " * added in order, for i < mr, j < nr; kc is a multiple of kin. pa holds kc columns of {}", s.mr
        ));
        w.line(format!(
            " * rows, pb kc rows of {nr} columns (packed panels, zero beyond mr and nr). */"
        ));
        w.line(format!(
            "static void {name}(long long kc, const {ty} *pa, const {ty} *pb, {ty} *t,"
        ));
        w.line(format!(
            "{more}const long long *rows, const long long *cols, int mr, int nr, int first,"
        ));
        w.line(format!("{more}long long kin)"));
    } else {
        w.line("/* A register tile of the packed contraction kernel (spec/padding.md, \"Contraction kernels\"):");
        w.line(" * t[rows[i] + cols[j]] = (first ? -0.0 : t[rows[i] + cols[j]]) + pa[0][i] * pb[0][j] + ...,");
        w.line(format!(
            " * products added in order, for i < mr, j < nr. pa holds kc columns of {} rows, pb kc rows of", s.mr
        ));
        w.line(format!(
            " * {nr} columns (packed panels, zero beyond mr and nr). */"
        ));
        w.line(format!(
            "static void {name}(long long kc, const {ty} *pa, const {ty} *pb, {ty} *t,"
        ));
        w.line(format!(
            "{more}const long long *rows, const long long *cols, int mr, int nr, int first)"
        ));
    }
    w.block("", |w| {
        w.line(format!("{ty} w[{cells}];"));
        w.line(format!("int i, j, dense = mr == {mr} && nr == {nr};"));
        w.line(if two_level {
            "long long p, q;"
        } else {
            "long long p;"
        });
        w.nested(format!("for (j = 1; dense && j < {nr}; j++)"), |w| {
            w.line("dense = cols[j] == cols[0] + j;");
        });
        w.block("if (!dense)", |w| {
            w.nested(format!("for (i = 0; i < {cells}; i++)"), |w| {
                w.line("w[i] = -0.0;");
            });
            w.nested("if (!first)", |w| {
                each_cell(
                    w,
                    "mr",
                    "nr",
                    &format!("w[i * {nr} + j] = t[rows[i] + cols[j]];"),
                );
            });
        });
        if width > 1 {
            w.block("", |w| vector_tile(w, s, width));
        } else {
            w.block("if (dense)", |w| {
                each_cell(
                    w,
                    &mr.to_string(),
                    &nr.to_string(),
                    &format!("w[i * {nr} + j] = first ? -0.0 : t[rows[i] + cols[j]];"),
                );
            });
            // The products of one term, into the cells' sums (`sums` at `i * NR + j`).
            let products = |w: &mut Writer, sums: &str| {
                let update = multiply_add(
                    fma,
                    1,
                    s.elem,
                    &format!("{sums}[i * {nr} + j]"),
                    "pa[i]",
                    "pb[j]",
                );
                each_cell(w, &mr.to_string(), &nr.to_string(), &update);
                w.line(format!("pa += {};", s.mr));
                w.line(format!("pb += {nr};"));
            };
            if two_level {
                w.block("for (p = 0; p < kc; p += kin)", |w| {
                    w.line(format!("{ty} u[{cells}];"));
                    w.nested(format!("for (i = 0; i < {cells}; i++)"), |w| {
                        w.line("u[i] = -0.0;");
                    });
                    w.block("for (q = 0; q < kin; q++)", |w| products(w, "u"));
                    w.nested(format!("for (i = 0; i < {cells}; i++)"), |w| {
                        w.line("w[i] += u[i];");
                    });
                });
            } else {
                w.block("for (p = 0; p < kc; p++)", |w| products(w, "w"));
            }
        }
        each_cell(
            w,
            "mr",
            "nr",
            &format!("t[rows[i] + cols[j]] = w[i * {nr} + j];"),
        );
    });
}

/// `for (i = 0; i < rows; i++) for (j = 0; j < cols; j++) statement`, without braces.
fn each_cell(w: &mut Writer, rows: &str, cols: &str, statement: &str) {
    w.nested(format!("for (i = 0; i < {rows}; i++)"), |w| {
        w.nested(format!("for (j = 0; j < {cols}; j++)"), |w| {
            w.line(statement)
        });
    });
}

/// The body of a tile whose rows are vectors of `width` doubles ([`tile`]): the cells' sums
/// `cI_V` (row `I`, vector `V`) from `-0.0` or from the cells, the products of every term
/// added, then the sums stored.
fn vector_tile(w: &mut Writer, s: &Tile, width: u64) {
    let (mr, nr, fma, two_level) = (s.rows, s.nr, s.fma, s.two_level);
    let vecs = nr / width;
    let elem = c_type(s.elem);
    let bytes = s.elem.size() as u64 * width;
    let ty = match s.elem {
        ElemType::F64 => format!("teil_v{width}"),
        ElemType::F32 => format!("teil_vf{width}"),
    };
    let acc = |i: u64, v: u64| format!("c{i}_{v}");
    let part = |i: u64, v: u64| format!("u{i}_{v}");
    let splat = |x: &str| vec![x; width as usize].join(", ");
    // One line per row of the tile: `each(i, v)` for its vectors, side by side.
    let rows = |w: &mut Writer, each: &dyn Fn(u64, u64) -> String| {
        for i in 0..mr {
            let row: Vec<String> = (0..vecs).map(|v| each(i, v)).collect();
            w.line(row.join(" "));
        }
    };
    let all = |name: &dyn Fn(u64, u64) -> String| -> String {
        let names: Vec<String> = (0..mr)
            .flat_map(|i| (0..vecs).map(move |v| (i, v)))
            .map(|(i, v)| name(i, v))
            .collect();
        names.join(", ")
    };
    // `base` plus `offset` doubles, as C.
    let at = |base: &str, offset: u64| {
        if offset == 0 {
            base.to_string()
        } else {
            format!("{base} + {offset}")
        }
    };
    w.line(format!(
        "typedef {elem} {ty} __attribute__((vector_size({bytes})));"
    ));
    w.line(format!("{ty} {};", all(&acc)));
    w.chain(&mut [
        ("if (dense && first)", &mut |w: &mut Writer| {
            w.line(format!("{ty} z = {{{}}};", splat("-0.0")));
            rows(w, &|i, v| format!("{} = z;", acc(i, v)));
        }),
        ("else", &mut |w: &mut Writer| {
            for i in 0..mr {
                w.line(format!(
                    "const {elem} *s{i} = dense ? t + rows[{i}] + cols[0] : w + {};",
                    i * nr
                ));
            }
            rows(w, &|i, v| {
                let src = at(&format!("s{i}"), v * width);
                format!("__builtin_memcpy(&{}, {src}, {bytes});", acc(i, v))
            });
        }),
    ]);
    // The products of one term, into the sums `sum`.
    let products = |w: &mut Writer, sum: &dyn Fn(u64, u64) -> String| {
        let bs: Vec<String> = (0..vecs).map(|v| format!("b{v}")).collect();
        w.line(format!("{ty} {}, a;", bs.join(", ")));
        for v in 0..vecs {
            w.line(format!(
                "__builtin_memcpy(&b{v}, {}, {bytes});",
                at("pb", v * width)
            ));
        }
        for i in 0..mr {
            let mut line = format!("a = ({ty}){{{}}};", splat(&format!("pa[{i}]")));
            for v in 0..vecs {
                line.push(' ');
                line.push_str(&multiply_add(
                    fma,
                    width,
                    s.elem,
                    &sum(i, v),
                    "a",
                    &format!("b{v}"),
                ));
            }
            w.line(line);
        }
        w.line(format!("pa += {};", s.mr));
        w.line(format!("pb += {nr};"));
    };
    if two_level {
        // A two-level sum's inner sums (`u..`) are one loop deeper: the products of the term
        // loop go to them, and each group of `kin` terms ends by adding them to the cells'.
        w.block("for (p = 0; p < kc; p += kin)", |w| {
            w.line(format!("{ty} {}, z = {{{}}};", all(&part), splat("-0.0")));
            rows(w, &|i, v| format!("{} = z;", part(i, v)));
            w.block("for (q = 0; q < kin; q++)", |w| products(w, &part));
            rows(w, &|i, v| format!("{} += {};", acc(i, v), part(i, v)));
        });
    } else {
        w.block("for (p = 0; p < kc; p++)", |w| products(w, &acc));
    }
    w.block("if (dense)", |w| {
        for i in 0..mr {
            w.line(format!("{elem} *d{i} = t + rows[{i}] + cols[0];"));
        }
        rows(w, &|i, v| {
            let dst = at(&format!("d{i}"), v * width);
            format!("__builtin_memcpy({dst}, &{}, {bytes});", acc(i, v))
        });
        w.line("return;");
    });
    rows(w, &|i, v| {
        let dst = at("w", i * nr + v * width);
        format!("__builtin_memcpy({dst}, &{}, {bytes});", acc(i, v))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(mr: u64, nr: u64, fma: bool) -> Tile {
        Tile {
            rows: mr,
            mr,
            nr,
            fma,
            two_level: false,
            elem: ElemType::F64,
        }
    }

    fn printed(s: &Tile, width: u64) -> String {
        let mut w = Writer::new();
        tile(&mut w, s, width);
        w.finish()
    }

    /// The fma tiles differ from the exact ones in exactly the multiply-add statements: every
    /// `c += a * b;` of the exact tile is `c = teil_fmavW(a, b, c);` (vectors) or
    /// `c = teil_fma(a, b, c);` (plain C) in the fma tile, and nothing else changes.
    #[test]
    fn the_fma_tiles_fuse_exactly_the_multiply_adds() {
        for (mr, nr, width) in [(6, 8, 4), (16, 8, 8), (6, 8, 2), (6, 8, 1)] {
            let exact = printed(&full(mr, nr, false), width);
            let fused = printed(&full(mr, nr, true), width);
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
            let mut undone = fused.replace(&full(mr, nr, true).name(), &full(mr, nr, false).name());
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
    }

    /// A binary32 tile holds floats (its panels, its target, its vectors of 8 floats on AVX)
    /// and, in fma mode, fuses each multiply-add with the float macro `teil_fmavf8`, as the
    /// binary64 tile does with `teil_fmav4`.
    #[test]
    fn a_binary32_tile_computes_in_floats_and_fuses_in_floats() {
        let tile32 = |fma| Tile {
            elem: ElemType::F32,
            ..full(6, 16, fma)
        };
        let (exact, fused) = (printed(&tile32(false), 8), printed(&tile32(true), 8));
        assert_eq!(tile32(true).name(), "teil_tile_6x16_fma_f32");
        for c in [&exact, &fused] {
            assert!(
                c.contains("const float *pa, const float *pb, float *t,"),
                "{c}"
            );
            assert!(
                c.contains("typedef float teil_vf8 __attribute__((vector_size(32)));"),
                "{c}"
            );
            assert!(c.contains("float w[96];") && !c.contains("double"), "{c}");
        }
        assert_eq!(fused.matches("teil_fmavf8(").count(), 6 * 2, "{fused}");
        assert_eq!(exact.matches(" += a * b").count(), 6 * 2, "{exact}");
        assert!(!exact.contains("fma"), "{exact}");
        // Scalar (portable C): `teil_fmaf` on the cells.
        let scalar = printed(&tile32(true), 1);
        assert!(scalar.contains("w[i * 16 + j] = teil_fmaf(pa[i], pb[j], w[i * 16 + j]);"));
    }

    /// An edge tile computes its rows of slivers of the full tile's `MR` rows and `NR` columns
    /// (the choice of edge tiles: `tests/kernel_forms.rs`).
    #[test]
    fn an_edge_tile_computes_its_rows_of_whole_slivers() {
        let edge = Tile {
            rows: 4,
            ..full(12, 16, true)
        };
        assert_eq!(full(12, 16, true).name(), "teil_tile_12x16_fma");
        assert_eq!(edge.name(), "teil_tile_4x16_of_12_fma");
        let two_level = Tile {
            rows: 1,
            two_level: true,
            ..full(12, 16, false)
        };
        assert_eq!(two_level.name(), "teil_tile2_1x16_of_12");
        for width in [8, 1] {
            let c = printed(&edge, width);
            // Four rows of sums over slivers of 12 rows and 16 columns.
            assert!(c.contains("dense = mr == 4 && nr == 16;"), "{c}");
            assert!(c.contains("pa += 12;") && c.contains("pb += 16;"), "{c}");
            assert!(c.contains("double w[64];"), "{c}");
            if width == 8 {
                assert!(c.contains("c3_1") && !c.contains("c4_0"), "{c}");
                assert!(c.contains("pa[3]") && !c.contains("pa[4]"), "{c}");
            }
        }
    }
}
