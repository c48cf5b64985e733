//! Printing [`Step::Contract`](crate::ir::Step::Contract) steps: the strategy the pass chose
//! ([`Strategy`]), printed as it is. The meaning of each strategy (the exact order of
//! operations) is documented on [`Strategy`]; the kernel forms are printed by their own
//! modules: [`packed`] (the packed product's loops and panels) with the
//! register tiles it calls (`tile`), [`dot`] (scalar dot products),
//! [`vector_dot`] (dot products in vectors) and [`lane_dot`] (dot products in lanes). This
//! module holds what
//! they share: the choice of the target, the loops over the free labels, offsets.
//!
//! A strategy has one variant per [`Target`]; targets whose variants compute in the same order
//! share one printed branch ([`Strategy::groups`]), and a step with several branches is an
//! `#if` chain on `teil_vector_bits`, which [`select`] defines once per translation unit. The
//! register tiles (`tile::tiles`) are chosen by the same macro.

use super::writer::Writer;
use super::{dot, lane_dot, packed, vector_dot};
use crate::ir::{Access, Affine, Bound, Contraction, Kernel, Label, Strategy, Target};
use std::collections::BTreeMap;

/// `name * stride` terms of an offset, `0` if there are none.
pub(super) fn offset(terms: &[(String, u64)], constant: u64) -> String {
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

/// `o + extra` as C.
pub(super) fn plus(o: &str, extra: u64) -> String {
    if extra == 0 {
        o.to_string()
    } else {
        format!("{o} + {extra}")
    }
}

pub(super) fn affine(k: &Kernel, a: &Access) -> Affine {
    Affine::of(k, a.buf, &a.index)
}

/// The C names of one printed variant's loop variables, `i0`, `i1`, ... in order of
/// appearance.
#[derive(Default)]
pub(super) struct Fresh(usize);

impl Fresh {
    pub(super) fn name(&mut self) -> String {
        self.0 += 1;
        format!("i{}", self.0 - 1)
    }
}

/// Chooses the targets' kernels: defines `teil_vector_bits` (the [`Target::vector_bits`] of
/// the target) unless the compiler's flags define it, from the conditions of [`Target::ALL`].
pub(super) fn select(w: &mut Writer) {
    w.line("/* The contraction kernels' target (spec/padding.md, \"Contraction kernels\"): the");
    w.line(
        " * width in bits of the vectors they are written with, 0 for plain C (-Dteil_portable,",
    );
    w.line(" * and compilers without GCC's vector extensions). -Dteil_vector_bits=N chooses one;");
    w.line(" * every choice computes every cell with the same operations in the same order. */");
    w.directive("#ifndef teil_vector_bits");
    // Plain C first (it decides on the compiler), the GCC/Clang fallback last.
    let mut order = vec![Target::Portable];
    order.extend(Target::ALL.into_iter().filter(|&t| t != Target::Portable));
    for (i, t) in order.iter().enumerate() {
        w.directive(if i == 0 {
            format!("#if {}", t.condition())
        } else if i + 1 == order.len() {
            format!("#else /* {} */", t.condition())
        } else {
            format!("#elif {}", t.condition())
        });
        w.directive(format!("#define teil_vector_bits {}", t.vector_bits()));
    }
    w.directive("#endif");
    w.directive("#endif");
    let values: Vec<String> = Target::ALL
        .iter()
        .map(|t| format!("teil_vector_bits != {}", t.vector_bits()))
        .collect();
    let names: Vec<String> = Target::ALL
        .iter()
        .map(|t| t.vector_bits().to_string())
        .collect();
    w.directive(format!("#if {}", values.join(" && ")));
    w.directive(format!(
        "#error \"teil_vector_bits must be one of {}\"",
        names.join(", ")
    ));
    w.directive("#endif");
    w.directive("#if teil_vector_bits != 0 && !defined(__GNUC__)");
    w.directive("#error \"teil_vector_bits other than 0 needs GCC or Clang vector extensions\"");
    w.directive("#endif");
}

/// Prints `#if`/`#elif`/`#else` branches, one per group of targets, the group holding
/// [`Target::Portable`] last (as `#else`, so that every value of `teil_vector_bits` the
/// selection allows takes a branch); a single group is printed without a condition.
pub(super) fn branches(
    groups: &[Vec<Target>],
    w: &mut Writer,
    mut each: impl FnMut(&mut Writer, Target),
) {
    if let [only] = groups {
        each(w, only[0]);
        return;
    }
    let mut order: Vec<&Vec<Target>> = groups.iter().collect();
    order.sort_by_key(|g| g.contains(&Target::Portable));
    for (i, g) in order.iter().enumerate() {
        let names: Vec<&str> = g.iter().map(|t| t.name()).collect();
        if i + 1 == order.len() {
            w.directive(format!("#else /* {} */", names.join(", ")));
        } else {
            let cond: Vec<String> = g
                .iter()
                .map(|t| format!("teil_vector_bits == {}", t.vector_bits()))
                .collect();
            w.directive(format!(
                "#{} {} /* {} */",
                if i == 0 { "if" } else { "elif" },
                cond.join(" || "),
                names.join(", ")
            ));
        }
        each(w, g[0]);
    }
    w.directive("#endif");
}

/// Prints the contraction step `c`: its variants, one branch per group of targets, each with
/// its own C names for labels (`i0`, `i1`, ...).
pub(super) fn print(k: &Kernel, c: &Contraction, w: &mut Writer) {
    branches(&c.strategy.groups(), w, |w, t| {
        let mut fresh = Fresh::default();
        match &c.strategy {
            Strategy::Packed { variants, .. } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    packed::print(k, c, v, w, &mut fresh);
                }
            }
            Strategy::LaneSums { variants, .. } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    lane_dot::print(k, c, v, w, &mut fresh);
                }
            }
            Strategy::Dot {
                lane,
                inner,
                variants,
                ..
            } => {
                if let Some(v) = variants.iter().find(|v| v.target == t) {
                    if v.width > 1 {
                        vector_dot::print(k, c, v, w, &mut fresh);
                    } else {
                        dot::print(k, c, *lane, inner, v.lanes, w, &mut fresh);
                    }
                }
            }
        }
    });
}

/// A loop over every target label of `c` but those in `skip`, outermost first, the first one
/// parallel with OpenMP, around `body`. The body gets the loops' C names and whether the
/// OpenMP pragma is still to be placed (every label was skipped).
pub(super) fn within_loops(
    k: &Kernel,
    c: &Contraction,
    skip: &[Label],
    w: &mut Writer,
    fresh: &mut Fresh,
    body: impl FnOnce(&mut Writer, &mut Fresh, BTreeMap<Label, String>, bool),
) {
    let free: Vec<&Bound> = c.free.iter().filter(|f| !skip.contains(&f.var)).collect();
    loops(&free, BTreeMap::new(), k.openmp, w, fresh, body);
}

/// Loops over `free`, outermost first, the first one parallel with OpenMP where `pragma`,
/// around `body`, which gets the loops' C names added to `names` and whether the pragma is
/// still to be placed (`free` is empty).
pub(super) fn loops(
    free: &[&Bound],
    mut names: BTreeMap<Label, String>,
    pragma: bool,
    w: &mut Writer,
    fresh: &mut Fresh,
    body: impl FnOnce(&mut Writer, &mut Fresh, BTreeMap<Label, String>, bool),
) {
    let Some((f, rest)) = free.split_first() else {
        return body(w, fresh, names, pragma);
    };
    if pragma {
        w.directive("#pragma omp parallel for");
    }
    let name = fresh.name();
    let header = header(&name, f.extent);
    names.insert(f.var, name);
    w.block(header, |w| loops(rest, names, false, w, fresh, body));
}

/// The header of the loop of the C variable `name` over `0..n`.
fn header(name: &str, n: u64) -> String {
    format!("for (long long {name} = 0; {name} < {n}; {name}++)")
}

/// Loops over `named`, outermost first, each a C variable already named and its extent,
/// around `body`: the loops a dot-product step runs inside its lane's blocks
/// (`Strategy::Dot::inner`), whose variables the block's offsets already use.
pub(super) fn named_loops(w: &mut Writer, named: &[(String, u64)], body: &dyn Fn(&mut Writer)) {
    match named.split_first() {
        None => body(w),
        Some(((name, n), rest)) => w.block(header(name, *n), |w| named_loops(w, rest, body)),
    }
}

/// Names the loops of the `inner` labels of `c` (`Strategy::Dot::inner`), in the order of
/// its free labels, adding them to `names`: the loops for [`named_loops`].
pub(super) fn name_inner(
    c: &Contraction,
    inner: &[Label],
    names: &mut BTreeMap<Label, String>,
    fresh: &mut Fresh,
) -> Vec<(String, u64)> {
    c.free
        .iter()
        .filter(|f| inner.contains(&f.var))
        .map(|f| {
            let name = fresh.name();
            names.insert(f.var, name.clone());
            (name, f.extent)
        })
        .collect()
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
pub(super) fn fma_lanes(w: &mut Writer, width: u64) {
    let lanes: Vec<String> = (0..width)
        .map(|l| format!("teil_fma((a)[{l}], (b)[{l}], (c)[{l}])"))
        .collect();
    w.line(format!(
        "/* c + a * b on vectors of {width} doubles, every lane fused where teil_fma fuses (fma mode,"
    ));
    w.line(" * spec/values.md, \"Fused multiply-add\"): a vector fused multiply-add where the compiler");
    w.line(" * has one for these flags, else teil_fma lane by lane. */");
    w.directive("#if defined(teil_fast_fma) && defined(__has_builtin)");
    let builtins = VECTOR_FMA.iter().filter(|(_, n, _)| *n == 0 || *n == width);
    for (i, (name, _, extra)) in builtins.enumerate() {
        w.directive(format!(
            "#{} __has_builtin({name})",
            if i == 0 { "if" } else { "elif" }
        ));
        w.directive(format!(
            "#define teil_fmav{width}(a, b, c) {name}(a, b, c{extra})"
        ));
    }
    w.directive("#endif");
    w.directive("#endif");
    w.directive(format!("#ifndef teil_fmav{width}"));
    w.directive(format!(
        "#define teil_fmav{width}(a, b, c) ((__typeof__(c)){{{}}})",
        lanes.join(", ")
    ));
    w.directive("#endif");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector fused multiply-add: a builtin where the compiler has one for the width,
    /// else the lanes one by one.
    #[test]
    fn the_vector_fma_is_a_builtin_where_there_is_one() {
        let lanes = |width| {
            let mut w = Writer::new();
            fma_lanes(&mut w, width);
            w.finish()
        };
        assert_eq!(
            lanes(2),
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
            let m = lanes(width);
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
