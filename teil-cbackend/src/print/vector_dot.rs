//! Printing the dot products of [`Strategy::Dot`] whose sums are in
//! GCC/Clang vectors ([`Lanes::width`] above 1), and the helpers they use
//! ([`dot_helpers`]).

use super::dot::{Cell, Remainder};
use super::expr::{add_term, affine, negative_zero, offset, plus, vector_type};
use super::loops::{name_inner, named_loops, within_loops, Fresh};
use super::nest::c_type;
use super::target::fma_lanes;
use super::writer::Writer;
use crate::ir::{Affine, BufId, Contraction, Kernel, Label, Lanes, Reads, Step, Strategy};
use std::collections::BTreeSet;
use teil::ast::ElemType;

/// The dot products of the variant `v` with sums in vectors of `v.width` doubles (the order of
/// [`Strategy::Dot`]; spec/padding.md, "Contraction kernels"): a block is `v.rows` rows of
/// `rows_of` (one row where the variant has one) times `v.lanes / v.width` vectors of
/// consecutive lane cells. Each operand gives a vector of the cells' terms by its [`Reads`]:
/// a broadcast, a load, or (for [`Reads::Rows`]) `width` rows of `width` terms loaded and
/// transposed in registers (`teil_shuffle`), the terms then added in order one column at a
/// time; the terms beyond the last whole group of `width` are gathered one by one. Where the
/// lane's cells after the last whole block are more than a block's vectors, the block loop's
/// last block is the lane's last (the cells it shares with the block before computed again,
/// the same bits, and stored once); otherwise they are summed with scalars side by side, as
/// the scalar dot products do ([`Remainder`]).
pub(super) fn print(k: &Kernel, c: &Contraction, v: &Lanes, w: &mut Writer, fresh: &mut Fresh) {
    let Strategy::Dot {
        lane,
        rows_of,
        ref inner,
        ref reads,
        ref prefetch,
        ..
    } = c.strategy
    else {
        return;
    };
    let st = affine(k, &c.target);
    let rows = rows_of.filter(|_| v.rows > 1);
    let extent = |l: Label| c.free.iter().find(|f| f.var == l).map_or(0, |f| f.extent);
    let skip: Vec<Label> = std::iter::once(lane)
        .chain(rows)
        .chain(inner.iter().copied())
        .collect();
    within_loops(k, c, &skip, w, fresh, |w, fresh, mut names, pragma| {
        let rv = rows.map(|r| {
            let name = fresh.name();
            names.insert(r, name.clone());
            name
        });
        let lv = fresh.name();
        let inner = name_inner(c, inner, &mut names, fresh);
        let kv = fresh.name();
        names.insert(lane, lv.clone());
        names.insert(c.k.var, kv.clone());
        let off = |s: &Affine| {
            let terms: Vec<(String, u64)> =
                names.iter().map(|(l, n)| (n.clone(), s.get(*l))).collect();
            offset(&terms, s.constant)
        };
        let name = |b: BufId| k.buffer(b).c_name.clone();
        let block = Block {
            k,
            c,
            v,
            ops: c
                .operands()
                .zip(reads.iter().zip(prefetch))
                .zip(["teil_a", "teil_b"])
                .map(|((x, (&reads, &prefetch)), var)| {
                    let strides = affine(k, x);
                    Operand {
                        buf: name(x.buf),
                        offset: off(&strides),
                        strides,
                        var,
                        reads,
                        prefetch,
                    }
                })
                .collect(),
            target: (name(c.target.buf), off(&st), st.clone()),
            lane,
            rows,
            inner,
            lv: &lv,
            kv: &kv,
            full: extent(lane) - extent(lane) % v.lanes,
            lane_n: extent(lane),
        };
        match (rows, &rv) {
            (Some(r), Some(rv)) => {
                let (rn, per) = (extent(r), v.rows);
                let whole = rn - rn % per;
                if pragma {
                    w.directive("#pragma omp parallel for");
                }
                w.block(
                    format!("for (long long {rv} = 0; {rv} < {whole}; {rv} += {per})"),
                    |w| block.print(w, per, false),
                );
                if whole < rn {
                    if pragma {
                        w.directive("#pragma omp parallel for");
                    }
                    w.block(
                        format!("for (long long {rv} = {whole}; {rv} < {rn}; {rv}++)"),
                        |w| block.print(w, 1, false),
                    );
                }
            }
            _ => block.print(w, 1, pragma),
        }
    });
}

/// An operand of a dot-product block: its buffer's C name, the C offset of the block's first
/// cell and term, its strides, the prefix of its vector variables, how it gives the cells'
/// terms, and whether the next block's rows are fetched ([`Strategy::Dot`]'s `prefetch`).
struct Operand {
    buf: String,
    offset: String,
    strides: Affine,
    var: &'static str,
    reads: Reads,
    prefetch: bool,
}

/// What every row block of one vector dot-product step shares.
struct Block<'a> {
    k: &'a Kernel,
    c: &'a Contraction,
    v: &'a Lanes,
    /// The operands, `a`'s first (one for a sum of one operand).
    ops: Vec<Operand>,
    /// The target's C name, offset and strides.
    target: (String, String, Affine),
    lane: Label,
    /// The label blocked in rows, where the variant blocks rows.
    rows: Option<Label>,
    /// The loops inside the lane's blocks (C name, extent; `Strategy::Dot::inner`).
    inner: Vec<(String, u64)>,
    lv: &'a str,
    kv: &'a str,
    /// The lane cells in whole blocks of lanes, and all of them.
    full: u64,
    lane_n: u64,
}

impl Block<'_> {
    /// The stride of `s` along the blocked rows (0 without them).
    fn srow(&self, s: &Affine) -> u64 {
        self.rows.map_or(0, |r| s.get(r))
    }

    /// The type of the vectors (named apart by element type: 8 floats and 8 doubles are both
    /// targets' widths), and their size in bytes.
    fn ty(&self) -> (String, u64) {
        let (name, bytes, _) = vector_type(self.c.elem, self.v.width);
        (name, bytes)
    }

    /// The vectors' typedef.
    fn typedef(&self) -> String {
        vector_type(self.c.elem, self.v.width).2
    }

    /// The C literal `-0.0` of the contraction's type.
    fn negative_zero(&self) -> &'static str {
        negative_zero(self.c.elem)
    }

    /// A vector literal; parenthesised in fma mode, where it is a macro's argument.
    fn literal(&self, cells: Vec<String>) -> String {
        let v = format!("({}){{{}}}", self.ty().0, cells.join(", "));
        if self.k.fma {
            format!("({v})")
        } else {
            v
        }
    }

    /// The C expression or variable of operand `x`'s terms for row `r`, vector `u`, term `j`
    /// after `kv` (`gather`: read element by element).
    fn term(&self, x: usize, r: u64, u: u64, j: u64, gather: bool) -> String {
        let op = &self.ops[x];
        let (w, nv) = (self.v.width, self.v.lanes / self.v.width);
        let base = r * self.srow(&op.strides) + j * op.strides.get(self.c.k.var);
        match op.reads {
            Reads::Same => {
                let one = format!("{}[{}]", op.buf, plus(&op.offset, base));
                self.literal(vec![one; w as usize])
            }
            Reads::Lane if !gather => format!("{}{}_{}", op.var, r * nv + u, j),
            _ => {
                let cells: Vec<String> = (0..w)
                    .map(|e| {
                        let at = base + (u * w + e) * op.strides.get(self.lane);
                        format!("{}[{}]", op.buf, plus(&op.offset, at))
                    })
                    .collect();
                self.literal(cells)
            }
        }
    }

    /// Loads of the [`Reads::Lane`] operands' vectors for terms `j < terms` after `kv`, for a
    /// block of `nr` rows.
    fn loads(&self, w: &mut Writer, nr: u64, terms: u64) {
        let (width, nv) = (self.v.width, self.v.lanes / self.v.width);
        let (ty, bytes) = self.ty();
        for op in self.ops.iter().filter(|op| op.reads == Reads::Lane) {
            let (buf, var) = (&op.buf, op.var);
            let rs = if self.srow(&op.strides) == 0 { 1 } else { nr };
            for r in 0..rs {
                for u in 0..nv {
                    for j in 0..terms {
                        let at = plus(
                            &op.offset,
                            r * self.srow(&op.strides)
                                + j * op.strides.get(self.c.k.var)
                                + u * width,
                        );
                        w.line(format!(
                            "{ty} {var}{}_{j}; __builtin_memcpy(&{var}{}_{j}, &{buf}[{at}], {bytes});",
                            r * nv + u,
                            r * nv + u
                        ));
                    }
                }
            }
        }
    }

    /// The multiply-adds of term `j` after `kv` into every sum of a block of `nr` rows; `cols`
    /// gives an operand's vector where it is not [`Block::term`]'s.
    fn updates(
        &self,
        w: &mut Writer,
        nr: u64,
        j: u64,
        gather: bool,
        cols: &dyn Fn(usize, u64, u64) -> Option<String>,
    ) {
        let nv = self.v.lanes / self.v.width;
        for r in 0..nr {
            for u in 0..nv {
                let factors: Vec<String> = (0..self.ops.len())
                    .map(|x| {
                        let row = if self.srow(&self.ops[x].strides) == 0 {
                            0
                        } else {
                            r
                        };
                        cols(x, u, j).unwrap_or_else(|| self.term(x, row, u, j, gather))
                    })
                    .collect();
                w.line(add_term(
                    self.k.fma,
                    self.v.width,
                    self.c.elem,
                    &format!("teil_s{}", r * nv + u),
                    &factors,
                ));
            }
        }
    }

    /// One row block of `nr` rows (at the row variable's value), the first loop parallel
    /// with OpenMP where `pragma`.
    fn print(&self, w: &mut Writer, nr: u64, pragma: bool) {
        let (lv, kv, full, lanes) = (self.lv, self.kv, self.full, self.v.lanes);
        let (width, nv) = (self.v.width, lanes / self.v.width);
        let ((ty, bytes), kn) = (self.ty(), self.c.k.extent);
        let (nt, ot, st) = &self.target;
        let elem = c_type(self.c.elem);
        let transposed = self.ops.iter().any(|op| op.reads == Reads::Rows);
        let whole = if transposed { kn - kn % width } else { 0 };
        // The lane's cells after the last whole block: where they are more than a block's
        // vectors, the lane's last block (from cell `last` on) computes them in vectors;
        // otherwise the block's rows' remaining cells are scalars side by side (`Remainder`).
        let last = self.v.last_block(self.lane_n);
        // One block of lanes from the lane variable's value on.
        let block = |w: &mut Writer| {
            w.line(self.typedef());
            let zero = vec![self.negative_zero(); width as usize].join(", ");
            let inits: Vec<String> = (0..nr * nv)
                .map(|i| format!("teil_s{i} = {{{zero}}}"))
                .collect();
            w.line(format!("{ty} {};", inits.join(", ")));
            if transposed {
                w.block(
                    format!("for (long long {kv} = 0; {kv} < {whole}; {kv} += {width})"),
                    |w| self.transposed_terms(w, nr),
                );
            }
            if whole < kn {
                w.block(
                    format!("for (long long {kv} = {whole}; {kv} < {kn}; {kv}++)"),
                    |w| {
                        self.loads(w, nr, 1);
                        self.updates(w, nr, 0, transposed, &|_, _, _| None);
                    },
                );
            }
            // With the lane's last block (`last`), the cells before `teil_skip` were stored
            // by the block before: each cell is stored once.
            for r in 0..nr {
                for u in 0..nv {
                    let s = format!("teil_s{}", r * nv + u);
                    let first = u * width;
                    let base = r * self.srow(st) + first * st.get(self.lane);
                    if st.get(self.lane) == 1 {
                        let store = format!(
                            "__builtin_memcpy(&{nt}[{}], &{s}, {bytes});",
                            plus(ot, base)
                        );
                        if last.is_none() {
                            w.line(store);
                            continue;
                        }
                        // The vector's cells from `teil_skip` on.
                        let from = if first == 0 {
                            "teil_skip".to_string()
                        } else {
                            format!("teil_skip - {first}")
                        };
                        w.line(format!("if (teil_skip <= {first}) {store}"));
                        w.line(format!(
                            "else if (teil_skip < {}) {{ {elem} teil_c[{width}]; \
                             __builtin_memcpy(teil_c, &{s}, {bytes}); \
                             __builtin_memcpy(&{nt}[{} + teil_skip], teil_c + {from}, \
                             ({} - teil_skip) * sizeof({elem})); }}",
                            first + width,
                            plus(ot, r * self.srow(st)),
                            first + width
                        ));
                    } else {
                        let cells: Vec<String> = (0..width)
                            .map(|x| {
                                let at = plus(ot, base + x * st.get(self.lane));
                                let store = format!("{nt}[{at}] = {s}[{x}];");
                                match last {
                                    None => store,
                                    Some(_) => format!("if (teil_skip <= {}) {store}", first + x),
                                }
                            })
                            .collect();
                        w.line(cells.join(" "));
                    }
                }
            }
        };
        if pragma {
            w.directive("#pragma omp parallel for");
        }
        match last {
            None => w.block_noted(
                format!("for (long long {lv} = 0; {lv} < {full}; {lv} += {lanes})"),
                format!("/* {} cells at a time */", nr * lanes),
                |w| named_loops(w, &self.inner, &block),
            ),
            // The lane's last block ends at its last cell: it computes again the cells it
            // shares with the block before (the same operations in the same order, so the
            // same bits) and stores the others.
            Some(last) => w.block_noted(
                format!(
                    "for (long long teil_lb = 0; teil_lb < {}; teil_lb += {lanes})",
                    self.lane_n
                ),
                format!(
                    "/* {} cells at a time, the last block from cell {last} */",
                    nr * lanes
                ),
                |w| {
                    w.line(format!(
                        "long long {lv} = teil_lb < {last} ? teil_lb : {last}, teil_skip = teil_lb - {lv};"
                    ));
                    named_loops(w, &self.inner, &block);
                },
            ),
        }
        if full == self.lane_n || last.is_some() {
            return;
        }
        let cells = Remainder {
            lane: (lv, full, self.lane_n),
            k: (kv, kn),
            fma: self.k.fma,
            elem: self.c.elem,
        };
        let rows: Vec<(Vec<Cell>, Cell)> = (0..nr)
            .map(|r| {
                let operands = self
                    .ops
                    .iter()
                    .map(|op| Cell {
                        buf: op.buf.clone(),
                        offset: plus(&op.offset, r * self.srow(&op.strides)),
                        lane_stride: op.strides.get(self.lane),
                    })
                    .collect();
                let target = Cell {
                    buf: nt.to_string(),
                    offset: plus(ot, r * self.srow(st)),
                    lane_stride: st.get(self.lane),
                };
                (operands, target)
            })
            .collect();
        named_loops(w, &self.inner, &|w| cells.print(w, &rows));
    }

    /// The body of the loop over whole groups of `width` terms where an operand is
    /// transposed ([`Reads::Rows`]): its rows loaded and transposed in registers, then the
    /// terms added one column at a time.
    fn transposed_terms(&self, w: &mut Writer, nr: u64) {
        let (lv, kv, full, lanes) = (self.lv, self.kv, self.full, self.v.lanes);
        let (width, nv) = (self.v.width, lanes / self.v.width);
        let ((ty, bytes), kn) = (self.ty(), self.c.k.extent);
        let shuffle = shuffle_macro(self.c.elem);
        // As in the scalar dot products: the next block's rows, one cache line per `lanes`
        // terms, while this block runs (where they follow this block's rows), for the operands
        // whose rows are short enough (`prefetch`, chosen by the contraction pass: fetching the
        // next block of 4096-double rows as well slowed the 4096 x 4096 matrix-vector product
        // from 5.9 to 10.7 ms on the Zen 4 machine; 128-double rows gained, 2.4 to 2.0 ms).
        // Not where loops run inside the lane's blocks: the next block comes after them.
        for op in &self.ops {
            let sl = op.strides.get(self.lane);
            if op.prefetch && sl >= kn && full > lanes && nr == 1 && self.inner.is_empty() {
                w.line(format!(
                    "if ({lv} + {lanes} < {full}) for (int teil_e = 0; teil_e < {width}; teil_e++) \
                     __builtin_prefetch(&{}[{} + {kv} * {} + teil_e * {lanes}]);",
                    op.buf,
                    plus(&op.offset, lanes * sl),
                    lanes - 1
                ));
            }
        }
        self.loads(w, nr, width);
        for op in self.ops.iter().filter(|op| op.reads == Reads::Rows) {
            let (buf, var) = (&op.buf, op.var);
            for u in 0..nv {
                let m = |i: u64| format!("{var}{u}_{i}");
                for i in 0..width {
                    let at = plus(&op.offset, (u * width + i) * op.strides.get(self.lane));
                    w.line(format!(
                        "{ty} {}; __builtin_memcpy(&{}, &{buf}[{at}], {bytes});",
                        m(i),
                        m(i)
                    ));
                }
                // Rows of terms into columns of cells: swap the off-diagonal blocks of
                // 1, 2, 4, ... elements.
                let mut b = 1;
                while b < width {
                    for i in (0..width).filter(|i| i & b == 0) {
                        let lo: Vec<String> = (0..width)
                            .map(|x| if x & b != 0 { width + x - b } else { x }.to_string())
                            .collect();
                        let hi: Vec<String> = (0..width)
                            .map(|x| if x & b != 0 { width + x } else { x + b }.to_string())
                            .collect();
                        w.line(format!(
                            "{{ {ty} teil_x = {shuffle}({width}, {}, {}, {}), teil_y = {shuffle}({width}, {}, {}, {}); {} = teil_x; {} = teil_y; }}",
                            m(i), m(i + b), lo.join(", "), m(i), m(i + b), hi.join(", "), m(i), m(i + b)
                        ));
                    }
                    b *= 2;
                }
            }
        }
        for j in 0..width {
            self.updates(w, nr, j, false, &|x, u, j| {
                (self.ops[x].reads == Reads::Rows).then(|| format!("{}{u}_{j}", self.ops[x].var))
            });
        }
    }
}

/// The macro that shuffles two vectors of `elem` ([`dot_helpers`]).
fn shuffle_macro(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F64 => "teil_shuffle",
        ElemType::F32 => "teil_shufflef",
    }
}

/// What the vector dot products of `kernels` (and their dot products in lanes) use besides the
/// vectors themselves: the macros `teil_shuffle(w, a, b, i, ...)` and `teil_shufflef` (the
/// vector of elements `i, ...` of `a`'s elements followed by `b`'s, for `w` doubles or floats:
/// `__builtin_shufflevector` on Clang, `__builtin_shuffle` on GCC, whose index vector has
/// integers of the elements' size) for each type in which some operand is transposed, and in
/// fma mode the vector multiply-add `teil_fmav<width>` (`teil_fmavf<width>`) of each vector
/// width and type ([`fma_lanes`]). Returns whether it wrote anything (nothing without vector
/// dot products).
pub(super) fn dot_helpers(w: &mut Writer, kernels: &[&Kernel]) -> bool {
    let mut shuffles: BTreeSet<ElemType> = BTreeSet::new();
    let mut fused: BTreeSet<(u64, u64, ElemType)> = BTreeSet::new();
    for k in kernels {
        for s in &k.steps {
            let Step::Contract { c, .. } = s else {
                continue;
            };
            let (variants, rows) = match &c.strategy {
                Strategy::Dot {
                    reads, variants, ..
                } => (variants, reads.contains(&Reads::Rows)),
                Strategy::LaneSums { variants, .. } => (variants, false),
                Strategy::Packed { .. } => continue,
            };
            for v in variants.iter().filter(|v| v.width > 1) {
                if rows {
                    shuffles.insert(c.elem);
                }
                if k.fma && c.b.is_some() {
                    fused.insert((v.target.vector_bits(), v.width, c.elem));
                }
            }
        }
    }
    if !shuffles.is_empty() {
        w.line("/* Element shuffles of the dot-product kernels (spec/padding.md, \"Contraction kernels\"):");
        w.line(
            " * teil_shuffle(w, a, b, i, ...) has the elements i, ... of a's w doubles then b's;",
        );
        w.line(" * teil_shufflef the same of floats. */");
        w.directive("#if teil_vector_bits != 0");
        w.directive("#if defined(__clang__)");
        for &elem in &shuffles {
            w.directive(format!(
                "#define {}(w, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)",
                shuffle_macro(elem)
            ));
        }
        w.directive("#else");
        for &elem in &shuffles {
            let (index, mask, widths): (&str, &str, &[u64]) = match elem {
                ElemType::F64 => ("long long", "teil_mask", &[2, 4, 8]),
                ElemType::F32 => ("int", "teil_maskf", &[4, 8, 16]),
            };
            for n in widths {
                w.directive(format!(
                    "typedef {index} {mask}{n} __attribute__((vector_size({})));",
                    elem.size() as u64 * n
                ));
            }
            w.directive(format!(
                "#define {}(w, a, b, ...) __builtin_shuffle(a, b, ({mask}##w){{__VA_ARGS__}})",
                shuffle_macro(elem)
            ));
        }
        w.directive("#endif");
        w.directive("#endif");
    }
    for &(bits, width, elem) in &fused {
        let name = super::expr::fused(elem, width);
        w.directive(format!(
            "#if teil_vector_bits == {bits} && !defined({name})"
        ));
        fma_lanes(w, width, elem);
        w.directive("#endif");
    }
    !shuffles.is_empty() || !fused.is_empty()
}
