//! C text every printer shares: offsets and literals, comment text, and the statements that
//! add a product or a term to a sum in either mode.

use crate::ir::{Access, Affine, Kernel};
use teil::ast::ElemType;

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

/// The C statement `acc = acc + x * y` (the C expressions `x` and `y`, of type `elem`) as
/// printed: fused in fma mode (spec/values.md, "Fused multiply-add"), `acc += x * y`
/// otherwise. With `lanes > 1` the operands are GCC/Clang vectors of that many elements and
/// the fused form is the lane-by-lane macro of [`fused`].
pub(super) fn multiply_add(
    fma: bool,
    lanes: u64,
    elem: ElemType,
    acc: &str,
    x: &str,
    y: &str,
) -> String {
    if fma {
        format!("{acc} = {}({x}, {y}, {acc});", fused(elem, lanes))
    } else {
        format!("{acc} += {x} * {y};")
    }
}

/// The C function (or macro) computing `x * y + c` rounded once where the target fuses, in
/// `elem` on `lanes`-element vectors (1: scalars): `teil_fma` and `teil_fmaf`
/// (`print::fma_helper`), `teil_fmav<lanes>` and `teil_fmavf<lanes>`
/// ([`target::fma_lanes`](super::target::fma_lanes)).
pub(super) fn fused(elem: ElemType, lanes: u64) -> String {
    let f = type_suffix(elem);
    match lanes {
        1 => format!("teil_fma{f}"),
        n => format!("teil_fmav{f}{n}"),
    }
}

/// What tells the binary32 version of a helper or vector type apart from the binary64 one in
/// its name: `f` (`teil_fmaf`, `teil_vf8`, as C's `expf`), nothing for binary64.
pub(super) fn type_suffix(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F64 => "",
        ElemType::F32 => "f",
    }
}

/// The GCC/Clang vector type of `width` elements of `elem`: its name (`teil_v4` for four
/// doubles, `teil_vf8` for eight floats; named apart by type, since 8 floats and 8 doubles are
/// both targets' widths), its size in bytes and its typedef.
pub(super) fn vector_type(elem: ElemType, width: u64) -> (String, u64, String) {
    let name = format!("teil_v{}{width}", type_suffix(elem));
    let bytes = elem.size() as u64 * width;
    let typedef = format!(
        "typedef {} {name} __attribute__((vector_size({bytes})));",
        super::nest::c_type(elem)
    );
    (name, bytes, typedef)
}

/// The C literal `-0.0` in `elem`, the start of a sum.
pub(super) fn negative_zero(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F64 => "-0.0",
        ElemType::F32 => "-0.0f",
    }
}

/// The C statement adding one term of a contraction ([`crate::ir::Contraction`]) of type
/// `elem` to `acc`, given its factors (C expressions, one per operand): the product `x * y` as
/// [`multiply_add`] prints it, or `x` itself for a sum of one operand (there is no product to
/// fuse, in either mode).
pub(super) fn add_term(
    fma: bool,
    lanes: u64,
    elem: ElemType,
    acc: &str,
    factors: &[String],
) -> String {
    match factors {
        [x, y] => multiply_add(fma, lanes, elem, acc, x, y),
        [x] => format!("{acc} += {x};"),
        _ => format!("#error \"a contraction term of {} factors\"", factors.len()),
    }
}

/// Text safe inside a C block comment.
pub(super) fn comment_text(s: &str) -> String {
    s.replace("*/", "* /").replace("/*", "/ *")
}

/// A C double literal with exactly the value `x`.
pub(super) fn literal(x: f64) -> String {
    if x.is_nan() {
        "teil_nan()".to_string()
    } else if x.is_infinite() {
        if x > 0.0 {
            "teil_inf()".to_string()
        } else {
            "(-teil_inf())".to_string()
        }
    } else {
        // `{:?}` prints the shortest decimal that reads back to the same bits, always with a
        // `.` or an exponent, so C reads it as a double.
        let s = format!("{x:?}");
        if s.starts_with('-') {
            format!("({s})")
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::literal;

    #[test]
    fn literals_read_back_exactly() {
        assert_eq!(literal(1.0), "1.0");
        assert_eq!(literal(-3.0), "(-3.0)");
        assert_eq!(literal(0.1), "0.1");
        assert_eq!(literal(1e300), "1e300");
        assert_eq!(literal(-0.0), "(-0.0)");
        assert_eq!(literal(2.5e-3), "0.0025");
        assert_eq!(literal(f64::INFINITY), "teil_inf()");
    }
}
