//! The targets' branches: the choice of `teil_vector_bits` once per translation unit
//! ([`select`]), the `#if` chain of a step or helper whose variants differ between targets
//! ([`branches`]), and the vector fused multiply-add of each width ([`fma_lanes`]).

use super::expr::fused;
use super::writer::Writer;
use crate::ir::Target;
use teil::ast::ElemType;

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

/// The compilers' builtins for a fused multiply-add `a * b + c` on vectors, each with the
/// element type and the vector width (in elements) it takes (0: any type, any width) and the
/// arguments after `a, b, c`, in the order [`fma_lanes`] tries them: Clang's generic one (newer
/// Clang has it instead of the x86 builtins), then GCC's and older Clang's x86 builtins
/// (AVX-512F, with all lanes written and the current rounding mode,
/// `_MM_FROUND_CUR_DIRECTION`; FMA3 on 256 and 128 bits), doubles then floats.
const VECTOR_FMA: [(&str, Option<ElemType>, u64, &str); 7] = [
    ("__builtin_elementwise_fma", None, 0, ""),
    (
        "__builtin_ia32_vfmaddpd512_mask",
        Some(ElemType::F64),
        8,
        ", (unsigned char)-1, 4",
    ),
    ("__builtin_ia32_vfmaddpd256", Some(ElemType::F64), 4, ""),
    ("__builtin_ia32_vfmaddpd", Some(ElemType::F64), 2, ""),
    (
        "__builtin_ia32_vfmaddps512_mask",
        Some(ElemType::F32),
        16,
        ", (unsigned short)-1, 4",
    ),
    ("__builtin_ia32_vfmaddps256", Some(ElemType::F32), 8, ""),
    ("__builtin_ia32_vfmaddps", Some(ElemType::F32), 4, ""),
];

/// Defines `teil_fmav<width>(a, b, c)` (`teil_fmavf<width>` for binary32): `c + a * b` on
/// GCC/Clang vectors of `width` elements of type `elem`, every lane fused exactly when
/// `teil_fma` (`teil_fmaf`) fuses (where the preamble defines `teil_fast_fma`).
/// There it is one vector fused multiply-add, the first builtin of [`VECTOR_FMA`] for the width
/// that the compiler has for its target flags (`__has_builtin`): the row value's broadcast
/// becomes the instruction's memory operand. Otherwise (no builtin, or no fast fused
/// multiply-add) it is `teil_fma` lane by lane, which GCC also turns into vector fused
/// multiply-adds, but with the row values loaded as a vector and shuffled into every lane, one
/// shuffle per multiply-add (PERFORMANCE.md).
pub(super) fn fma_lanes(w: &mut Writer, width: u64, elem: ElemType) {
    let (vector, scalar) = (fused(elem, width), fused(elem, 1));
    let lanes: Vec<String> = (0..width)
        .map(|l| format!("{scalar}((a)[{l}], (b)[{l}], (c)[{l}])"))
        .collect();
    let what = match elem {
        ElemType::F64 => "doubles",
        ElemType::F32 => "floats",
    };
    w.line(format!(
        "/* c + a * b on vectors of {width} {what}, every lane fused where {scalar} fuses (fma mode,"
    ));
    w.line(" * spec/values.md, \"Fused multiply-add\"): a vector fused multiply-add where the compiler");
    w.line(format!(
        " * has one for these flags, else {scalar} lane by lane. */"
    ));
    w.directive("#if defined(teil_fast_fma) && defined(__has_builtin)");
    let builtins = VECTOR_FMA
        .iter()
        .filter(|(_, e, n, _)| *n == 0 || (*e == Some(elem) && *n == width));
    for (i, (name, _, _, extra)) in builtins.enumerate() {
        w.directive(format!(
            "#{} __has_builtin({name})",
            if i == 0 { "if" } else { "elif" }
        ));
        w.directive(format!("#define {vector}(a, b, c) {name}(a, b, c{extra})"));
    }
    w.directive("#endif");
    w.directive("#endif");
    w.directive(format!("#ifndef {vector}"));
    w.directive(format!(
        "#define {vector}(a, b, c) ((__typeof__(c)){{{}}})",
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
            fma_lanes(&mut w, width, ElemType::F64);
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
        // Floats: the `ps` builtins of each width, `teil_fmaf` lane by lane otherwise; the
        // macros are named apart from the doubles' (8 floats and 8 doubles are both AVX's
        // and AVX-512's widths).
        for (width, builtin, extra) in [
            (
                16,
                "__builtin_ia32_vfmaddps512_mask",
                ", (unsigned short)-1, 4)",
            ),
            (8, "__builtin_ia32_vfmaddps256", ")"),
            (4, "__builtin_ia32_vfmaddps", ")"),
        ] {
            let mut w = Writer::new();
            fma_lanes(&mut w, width, ElemType::F32);
            let m = w.finish();
            let head = format!("/* c + a * b on vectors of {width} floats");
            assert!(m.starts_with(&head), "{m}");
            let define = format!("#define teil_fmavf{width}(a, b, c) {builtin}(a, b, c{extra}\n");
            assert!(m.contains(&define), "{m}");
            assert_eq!(m.matches("__builtin_ia32").count(), 2, "{m}");
            assert!(!m.contains("pd") && !m.contains("teil_fma("), "{m}");
            assert!(!m.contains(&format!("teil_fmav{width}")), "{m}");
            assert_eq!(m.matches("teil_fmaf((a)[").count(), width as usize, "{m}");
        }
    }
}
