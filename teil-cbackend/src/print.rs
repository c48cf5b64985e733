//! The C99 printer.
//!
//! [`module`] prints any number of kernels as one translation unit: helper prototypes, the
//! kernels, then the standard headers and the helper definitions that need them. Keeping the
//! `#include`s at the end means no macro from a header can capture a variable name.
//!
//! The printer prints what the IR records and recognises nothing (it imports nothing from
//! [`crate::opt`]). All text goes through one `writer::Writer`, which owns indentation and
//! braces: blocks are closed by construction. This module prints the translation unit and the
//! kernels' headers; `nest` prints each step: copies, plain nests and tiled steps, and hands
//! contraction steps to `contract`, which dispatches to a module per kernel form (`packed`
//! with its register tiles `tile`, `dot` and `vector_dot`); lane folds are printed by `lanes`.
//!
//! Output is deterministic: it depends only on the kernels (no paths, dates or hash order). Loop
//! variables are renamed per loop nest in order of appearance (`i0`, `i1`, ...), accumulators
//! are numbered per nest (`acc0`, ...). Only helpers that some kernel uses are emitted, and
//! unused parameters are voided, so the output compiles warning-free with
//! `-std=c99 -Wall -Wextra -Werror -pedantic`.

mod contract;
mod dot;
mod expr;
mod lane_dot;
mod lanes;
mod loops;
mod nest;
mod packed;
mod target;
mod tile;
mod vector_dot;
mod writer;

use crate::ir::*;
use expr::comment_text;
pub use nest::c_type;
use std::collections::BTreeSet;
use teil::ast::{ElemType, Func, Func2, RedOp};
use writer::Writer;

#[derive(Default, Clone)]
struct Helpers {
    max: bool,
    min: bool,
    nan: bool,
    inf: bool,
    alloc: bool,
    /// Scratch memory for packed panels (contraction kernels).
    scratch: bool,
    /// The choice of the contraction kernels' target (`teil_vector_bits`): some contraction
    /// step has variants that differ by target.
    select: bool,
    /// Fused multiply-adds (fma mode): `teil_fma`.
    fma: bool,
    /// Some loop starts with `teil_no_jam()` ([`Node::NoJam`], and the passes of
    /// [`Node::JamRows`]).
    no_jam: bool,
    /// Some reduction is printed in lanes ([`Node::LaneFold`], [`Strategy::LaneSums`]): the
    /// vector helpers.
    lanes: bool,
    /// Some sum in lanes fuses its products (fma mode): `teil_fmav4` on the lanes' vectors.
    lanes_fma: bool,
    /// Some buffer or value is binary32: the guard against excess precision for `float`.
    binary32: bool,
    /// The functions applied, with their element types (CORE-MATH's are declared, `sqrt` and
    /// `abs` are runtime helpers).
    functions: BTreeSet<(Func, ElemType)>,
    /// `maximum`/`minimum` helpers, by element type.
    functions2: BTreeSet<(Func2, ElemType)>,
}

impl Helpers {
    fn union(self, o: Helpers) -> Helpers {
        Helpers {
            binary32: self.binary32 || o.binary32,
            functions: self.functions.union(&o.functions).copied().collect(),
            functions2: self.functions2.union(&o.functions2).copied().collect(),
            max: self.max || o.max,
            min: self.min || o.min,
            nan: self.nan || o.nan,
            inf: self.inf || o.inf,
            alloc: self.alloc || o.alloc,
            scratch: self.scratch || o.scratch,
            select: self.select || o.select,
            fma: self.fma || o.fma,
            no_jam: self.no_jam || o.no_jam,
            lanes: self.lanes || o.lanes,
            lanes_fma: self.lanes_fma || o.lanes_fma,
        }
    }
}

fn helpers(k: &Kernel) -> Helpers {
    let mut h = Helpers {
        alloc: k.workspace > 0,
        binary32: k.buffers.iter().any(|b| b.elem == ElemType::F32),
        functions: k.functions(),
        ..Helpers::default()
    };
    let mut accs = std::collections::BTreeMap::new();
    for s in &k.steps {
        walk_step(s, &mut |v| match v {
            Visit::Val(Val::Func2(f, a, _)) => {
                let t = k.val_elem(a, &|n| accs.get(&n).copied().unwrap_or(ElemType::F64));
                h.functions2.insert((*f, t));
            }
            Visit::Val(Val::Convert(ElemType::F32, _)) => h.binary32 = true,
            Visit::Val(Val::Lit(x)) if x.is_nan() => h.nan = true,
            Visit::Val(Val::Lit(x)) if x.is_infinite() => h.inf = true,
            Visit::Val(Val::Undefined) => h.nan = true,
            Visit::Node(Node::AccInit { acc, op, elem }) => {
                h.inf |= matches!(op, RedOp::Max | RedOp::Min);
                accs.insert(*acc, *elem);
            }
            Visit::Node(Node::AccUpdate { op, .. } | Node::Fold { op, .. }) => {
                h.max |= *op == RedOp::Max;
                h.min |= *op == RedOp::Min;
            }
            Visit::Node(Node::NoJam | Node::JamRows(_)) => h.no_jam = true,
            Visit::Node(Node::LaneFold(l)) => {
                // Max and min lanes start from the identity and fall back to the fold in order.
                h.lanes = true;
                h.select = true;
                h.inf |= !l.reassociates();
                h.max |= l.op == RedOp::Max;
                h.min |= l.op == RedOp::Min;
                h.lanes_fma |= k.fma && l.reassociates() && l.value.product().is_some();
            }
            _ => {}
        });
        if let Step::Contract { c, .. } = s {
            // Packed steps call the register tile of the target's vector width.
            let packed = matches!(c.strategy, Strategy::Packed { .. });
            h.scratch |= packed;
            h.select |= packed || c.strategy.groups().len() > 1;
            // Dot products in lanes combine each cell's lanes in `teil_lanes` vectors.
            h.lanes |= matches!(c.strategy, Strategy::LaneSums { .. });
        }
    }
    // `teil_fma` (the fma tiles use it too).
    h.fma = k.fma && k.has_fusable();
    h
}

/// One translation unit defining every kernel in `kernels` (their names must differ).
pub fn module(kernels: &[&Kernel]) -> String {
    let h = kernels
        .iter()
        .map(|k| helpers(k))
        .fold(Helpers::default(), Helpers::union);
    let mut w = Writer::new();
    w.line("/* Generated by teil-cbackend from a TeIL program; do not edit.");
    w.line(
        " * C99, one function per kernel; the calling convention is described in spec/abi.md. */",
    );
    w.blank();
    w.text(EXACTNESS);
    if h.binary32 {
        w.text(EXACTNESS_BINARY32);
    }
    if h.fma {
        w.text(FAST_FMA);
    }
    if h.nan {
        w.line("static double teil_nan(void);");
    }
    if h.inf {
        w.line("static double teil_inf(void);");
    }
    if h.alloc {
        w.line("static double *teil_alloc(unsigned long long n);");
        w.line("static void teil_release(double *p);");
    }
    if h.scratch {
        w.line("static void *teil_scratch(unsigned long long n, unsigned long long size);");
        w.line("static void teil_scratch_free(void *p);");
    }
    if h.fma {
        w.line("static double teil_fma(double x, double y, double c);");
        w.line("static float teil_fmaf(float x, float y, float c);");
    }
    let mut libm = false;
    for &(f, t) in &h.functions {
        let ty = c_type(t);
        let name = nest::function(f, t);
        w.line(match crate::math::unit(f, t) {
            // CORE-MATH, linked from its own translation unit (crate::math).
            Some(_) => format!("{ty} {name}({ty} x);"),
            None => {
                libm = true;
                format!("static {ty} {name}({ty} x);")
            }
        });
    }
    for &(f, t) in &h.functions2 {
        let ty = c_type(t);
        libm = true;
        w.line(format!(
            "static {ty} {}({ty} a, {ty} b);",
            nest::function2(f, t)
        ));
    }
    let runtime = h.nan || h.inf || h.alloc || h.scratch || h.fma || libm;
    if runtime {
        w.blank();
    }
    if h.select {
        target::select(&mut w);
        w.blank();
    }
    if tile::tiles(&mut w, kernels) {
        w.blank();
    }
    if vector_dot::dot_helpers(&mut w, kernels) {
        w.blank();
    }
    if h.lanes {
        w.text(lanes::HELPERS);
    }
    if h.lanes_fma {
        w.directive("#if teil_vector_bits != 0 && !defined(teil_fmav4)");
        target::fma_lanes(&mut w, LaneFold::WIDTH, ElemType::F64);
        w.directive("#endif");
        w.blank();
    }
    if h.no_jam {
        w.text(NO_JAM_HELPER);
    }
    for (op, name, cmp, tie) in [
        (h.max, "teil_max", ">", ">="),
        (h.min, "teil_min", "<", "<="),
    ] {
        if !op {
            continue;
        }
        let word = &name[5..];
        w.line(format!(
            "/* {word} that propagates NaN (the undefined value), which f{word} would drop: a NaN b is"
        ));
        w.line(format!(
            " * returned, a NaN a kept (b {cmp} a is false). Otherwise a {tie} b ? a : b: a tie keeps a,"
        ));
        w.line(
            " * the earlier term. No dependent addition, so folds vectorise and chain quickly. */",
        );
        w.line(format!("static double {name}(double a, double b)"));
        w.block("", |w| {
            w.line(format!("return b != b ? b : (b {cmp} a ? b : a);"));
        });
        w.blank();
    }
    for (i, k) in kernels.iter().enumerate() {
        if i > 0 {
            w.blank();
        }
        kernel(k, &mut w);
    }
    if runtime {
        w.blank();
        w.line("/* Runtime support. The headers come last so that none of their macros can");
        w.line(" * capture a name used above. */");
        if h.nan || h.inf || h.fma || libm {
            w.directive("#include <math.h>");
        }
        if h.alloc || h.scratch {
            w.directive("#include <stdlib.h>");
        }
        for (used, name, value) in [(h.nan, "teil_nan", "NAN"), (h.inf, "teil_inf", "INFINITY")] {
            if used {
                w.blank();
                w.line(format!("static double {name}(void)"));
                w.block("", |w| w.line(format!("return {value};")));
            }
        }
        if h.fma {
            fma_helper(&mut w);
        }
        function_helpers(&mut w, &h);
        if h.alloc {
            w.blank();
            w.line(
                "/* Zeroed workspace for internal variables and temporaries: the zeros are their",
            );
            w.line(
                " * padding. There is no way to report failure through a void kernel, so running",
            );
            w.line(" * out of memory aborts. */");
            w.line("static double *teil_alloc(unsigned long long n)");
            w.block("", |w| {
                w.line("double *p;");
                w.nested(
                    "if (n > (unsigned long long)((size_t)-1 / sizeof(double)))",
                    |w| w.line("abort();"),
                );
                w.line("p = (double *)calloc((size_t)n, sizeof(double));");
                w.nested("if (p == NULL)", |w| w.line("abort();"));
                w.line("return p;");
            });
            w.blank();
            w.line("static void teil_release(double *p)");
            w.block("", |w| w.line("free(p);"));
        }
        if h.scratch {
            w.blank();
            w.line("/* Uninitialised memory for packed panels; every cell is written before it is");
            w.line(" * read. Running out of memory aborts, as for the workspace. */");
            w.line("static void *teil_scratch(unsigned long long n, unsigned long long size)");
            w.block("", |w| {
                w.line("void *p;");
                w.nested(
                    "if (n == 0 || n > (unsigned long long)((size_t)-1) / size)",
                    |w| w.line("abort();"),
                );
                w.line("p = malloc((size_t)(n * size));");
                w.nested("if (p == NULL)", |w| w.line("abort();"));
                w.line("return p;");
            });
            w.blank();
            w.line("static void teil_scratch_free(void *p)");
            w.block("", |w| w.line("free(p);"));
        }
    }
    w.finish()
}

/// `teil_no_jam()`, printed for [`Node::NoJam`] (`crate::opt::interchange::no_jam` says
/// when). An empty `volatile` asm is a statement with a side effect, which GCC's
/// unroll-and-jam does not fuse across; it emits no instruction and orders no memory access,
/// so it changes nothing else. Other compilers do not unroll-and-jam by default and get an
/// empty statement.
const NO_JAM_HELPER: &str = "\
/* Keeps GCC from unroll-and-jamming the loop it starts (a fold through an inner loop
 * over rows less than a page apart): an empty volatile asm has a side effect and no
 * instruction. */
#if defined(__GNUC__) && !defined(teil_portable)
#define teil_no_jam() __asm__ __volatile__(\"\")
#else
#define teil_no_jam() ((void)0)
#endif

";

/// The guard every translation unit starts with (spec/abi.md, "Floating point"): the C
/// computes exactly the operations it spells, so no compiler may contract `a * b + c` into a
/// fused multiply-add behind the printer's back (fma mode spells its fusions as `teil_fma` and
/// `teil_fmavW`, which stay fused). The standard pragma is honoured by Clang and ISO C
/// compilers; GCC ignores it (and warns under `-Wall`), so GCC gets its own `optimize` pragma,
/// whose object code is that of `-ffp-contract=off` on the command line. What no pragma can
/// undo is refused at compile time: `-ffast-math` (and `-Ofast`) and `-ffinite-math-only`
/// change values, and excess precision (x87 without SSE2) rounds twice: an evaluation method
/// other than those that evaluate `double` as `double` (0, 1, the ISO/IEC TS 18661-3 methods
/// 16, 32 and 64: GCC 13 on a CPU with AVX512-FP16 says 16 under `-march=native`, and -1,
/// indeterminable, except on x86, where GCC says -1 for `-mno-sse2` and `-mfpmath=both`, which
/// compute on the x87 unit). On x86 SSE2 is required (`__SSE2__`: Clang under `-mno-sse2` says
/// method 0 and computes on the x87 unit). The compiler driver
/// also passes `-ffp-contract=off` last ([`crate::run`]), which covers Clang's
/// `-ffp-contract=fast`, the one setting under which Clang ignores the pragma.
const EXACTNESS: &str = "\
/* Exactness (spec/abi.md, \"Floating point\"): the kernels compute exactly the operations
 * written here: the compiler must not contract a * b + c into a fused multiply-add
 * (a fusion is written as one), nor assume away infinities, NaNs or signed zeros. */
#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#error \"TeIL kernels need IEEE binary64 arithmetic: compile without -ffast-math, -Ofast, -ffinite-math-only\"
#endif
#if defined(__FLT_EVAL_METHOD__) && !(__FLT_EVAL_METHOD__ == -1 || __FLT_EVAL_METHOD__ == 0 \\
    || __FLT_EVAL_METHOD__ == 1 || __FLT_EVAL_METHOD__ == 16 || __FLT_EVAL_METHOD__ == 32 \\
    || __FLT_EVAL_METHOD__ == 64)
#error \"TeIL kernels need double arithmetic without excess precision (on x86, -msse2 -mfpmath=sse)\"
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (!defined(__SSE2__) \\
    || (defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ == -1))
#error \"TeIL kernels need SSE2 double arithmetic on x86: compile without -mno-sse2, -mfpmath=387 or -mfpmath=both\"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize (\"fp-contract=off\")
#else
#pragma STDC FP_CONTRACT OFF
#endif

";

/// The guard of a translation unit with binary32 values: `float` arithmetic must round to
/// binary32 at every operation, which evaluation methods 0, 16 and 32 do (1 and 64 evaluate
/// `float` in a wider type and round once at the end; -1 is refused on x86 by
/// [`EXACTNESS`]'s check and otherwise means the compiler does not say).
const EXACTNESS_BINARY32: &str = "\
/* Exactness of binary32: every float operation rounds to float (no excess precision). */
#if defined(__FLT_EVAL_METHOD__) && !(__FLT_EVAL_METHOD__ == -1 || __FLT_EVAL_METHOD__ == 0 \\
    || __FLT_EVAL_METHOD__ == 16 || __FLT_EVAL_METHOD__ == 32)
#error \"TeIL kernels with f32 values need float arithmetic without excess precision\"
#endif

";

/// The runtime helpers of the functions that are IEEE operations (spec/values.md,
/// "Functions"): `sqrt` (correctly rounded by C99 Annex F), `abs` (exact), and `maximum`/
/// `minimum` (NaN if either operand is one, `-0 < +0`), in each element type used.
fn function_helpers(w: &mut Writer, h: &Helpers) {
    for &(f, t) in &h.functions {
        let ty = c_type(t);
        let call = match (f, t) {
            (Func::Sqrt, ElemType::F64) => "sqrt(x)",
            (Func::Sqrt, ElemType::F32) => "sqrtf(x)",
            (Func::Abs, ElemType::F64) => "fabs(x)",
            (Func::Abs, ElemType::F32) => "fabsf(x)",
            _ => continue,
        };
        w.blank();
        w.line(format!("static {ty} {}({ty} x)", nest::function(f, t)));
        w.block("", |w| w.line(format!("return {call};")));
    }
    for &(f, t) in &h.functions2 {
        let ty = c_type(t);
        // Of equal operands (only zeros differ), the one with the sign the order prefers.
        let (cmp, equal) = match f {
            Func2::Max => (">", "signbit(a) ? b : a"),
            Func2::Min => ("<", "signbit(a) ? a : b"),
        };
        w.blank();
        w.line(format!(
            "static {ty} {}({ty} a, {ty} b)",
            nest::function2(f, t)
        ));
        w.block("", |w| {
            // The evaluators' NaN (`functions::apply2`): the positive quiet NaN.
            w.nested("if (a != a || b != b)", |w| w.line("return NAN;"));
            w.nested("if (a == b)", |w| w.line(format!("return {equal};")));
            w.line(format!("return a {cmp} b ? a : b;"));
        });
    }
}

/// fma mode: whether the target has a fused multiply-add instruction, which `teil_fma` and the
/// register tiles' `teil_fmavW` then use. GCC says so with `__FP_FAST_FMA`; Clang does not
/// define that macro, but defines the instruction set's own (`__FMA__` on x86, FMA3;
/// `__ARM_FEATURE_FMA` on Arm).
const FAST_FMA: &str = "\
/* fma mode: the target has a fused multiply-add instruction. */
#if defined(__GNUC__) && (defined(__FP_FAST_FMA) || defined(__FMA__) || defined(__ARM_FEATURE_FMA))
#define teil_fast_fma 1
#endif

";

/// `teil_fma(x, y, c)` and `teil_fmaf` (binary32): `x * y + c` rounded once where the
/// compiler says the target has a fast fused multiply-add, else rounded twice (spec/abi.md,
/// "Fused multiply-add"). `__builtin_fma` and `__builtin_fmaf` are expanded inline by GCC and
/// Clang even at `-O0`, so they need no libm. Marked unused for GCC and Clang: a kernel whose
/// only fused pairs are in register tiles, or of one type, may call either nowhere
/// ([`target::fma_lanes`]).
fn fma_helper(w: &mut Writer) {
    w.blank();
    w.line("/* x * y + c, rounded once where the target has a fast fused multiply-add and twice elsewhere");
    w.line(" * (fma mode, spec/values.md, \"Fused multiply-add\"), in binary64 and in binary32. Unused where");
    w.line(" * vector builtins stand in for every call (the register tiles' teil_fmavW). */");
    for (ty, f) in [("double", ""), ("float", "f")] {
        w.directive("#ifdef __GNUC__");
        w.line("__attribute__((unused))");
        w.directive("#endif");
        w.line(format!("static {ty} teil_fma{f}({ty} x, {ty} y, {ty} c)"));
        w.block("", |w| {
            w.directive("#if defined(teil_fast_fma)");
            w.line(format!("return __builtin_fma{f}(x, y, c);"));
            w.directive(format!("#elif defined(FP_FAST_FMA{})", f.to_uppercase()));
            w.line(format!("return fma{f}(x, y, c);"));
            w.directive("#else");
            w.line("return x * y + c;");
            w.directive("#endif");
        });
    }
}

fn shape(s: &[u64]) -> String {
    let parts: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

fn role(b: &Buffer) -> &'static str {
    match b.role {
        Role::Param {
            input: true,
            output: true,
        } => "inout",
        Role::Param { input: true, .. } => "input",
        Role::Param { output: true, .. } => "output",
        Role::Param { .. } => "unused",
        Role::Internal => "internal",
        Role::InputCopy => "input copy",
        Role::Temp => "temporary",
    }
}

/// The kernel's C signature (spec/abi.md, *The function*): a `double` or `float` pointer per
/// parameter, with the parameters' names where `named` (the definition) or without (a
/// prototype in another translation unit, [`crate::driver`]).
pub(crate) fn signature(k: &Kernel, named: bool) -> String {
    let params: Vec<String> = k
        .params
        .iter()
        .map(|&p| {
            let b = k.buffer(p);
            match named {
                true => format!("{} *restrict {}", c_type(b.elem), b.c_name),
                false => format!("{} *restrict", c_type(b.elem)),
            }
        })
        .collect();
    let params = match params.is_empty() {
        true => "void".to_string(),
        false => params.join(", "),
    };
    format!("void {}({params})", k.name)
}

/// The widest a column of the parameter table in a kernel's header comment is padded to.
const MAX_COLUMN: usize = 64;

fn kernel(k: &Kernel, w: &mut Writer) {
    w.line(format!(
        "/* Kernel `{}`, padding multiple M = {}.",
        k.name, k.pad
    ));
    w.line(" *");
    w.line(
        " * Every buffer is row-major with each extent rounded up to a multiple of M and must be",
    );
    w.line(
        " * aligned for double (64 bytes is faster). Padding cells must be zero on entry and are",
    );
    w.line(" * zero on exit. Input-only buffers are not written. Strides are in elements.");
    if !k.params.is_empty() {
        let mut rows = vec![[
            "parameter".to_string(),
            "variable".to_string(),
            "role".to_string(),
            "logical".to_string(),
            "padded".to_string(),
            "strides".to_string(),
        ]];
        for &p in &k.params {
            let b = k.buffer(p);
            rows.push([
                b.c_name.clone(),
                b.var.clone().unwrap_or_default(),
                role(b).to_string(),
                shape(&b.logical),
                shape(&b.padded),
                shape(&b.strides()),
            ]);
        }
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|r| r.iter().map(|cell| comment_text(cell)).collect())
            .collect();
        // A column is as wide as its longest cell up to `MAX_COLUMN`; longer cells (a TeIL
        // variable may have a million-character name) overflow their column instead of
        // widening every row, so the table stays linear in the names' length.
        let widths: Vec<usize> = (0..6)
            .map(|c| {
                rows.iter()
                    .map(|r| r[c].len())
                    .filter(|&n| n <= MAX_COLUMN)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        w.line(" *");
        for r in &rows {
            let mut line = String::from(" *   ");
            for (cell, &width) in r.iter().zip(&widths) {
                // Padded by hand: a `{:w$}` width above 65,535 panics.
                line.push_str(cell);
                line.extend(std::iter::repeat_n(
                    ' ',
                    width.saturating_sub(cell.len()) + 2,
                ));
            }
            w.line(line.trim_end());
        }
    }
    w.line(" */");
    w.line(signature(k, true));
    w.block("", |w| {
        let used = k.referenced();
        let mut body_started = false;
        for &p in &k.params {
            if !used[p.0] {
                w.line(format!("(void){};", k.buffer(p).c_name));
                body_started = true;
            }
        }
        if k.workspace > 0 {
            w.line(format!("double *teil_ws = teil_alloc({});", k.workspace));
            for (b, _) in k
                .buffers
                .iter()
                .zip(&used)
                .filter(|(b, used)| **used && !b.is_param())
            {
                let what = match (&b.role, &b.var) {
                    (Role::Internal, Some(v)) => format!("variable `{v}`"),
                    (Role::InputCopy, Some(v)) => format!("private copy of input `{v}`"),
                    _ => "temporary".to_string(),
                };
                let at = match b.elem {
                    ElemType::F64 => format!("teil_ws + {}", b.offset),
                    t => format!("({} *)(teil_ws + {})", c_type(t), b.offset),
                };
                w.line(format!(
                    "{} *restrict {} = {at}; /* {}, logical {}, padded {} */",
                    c_type(b.elem),
                    b.c_name,
                    comment_text(&what),
                    shape(&b.logical),
                    shape(&b.padded)
                ));
            }
            body_started = true;
        }
        for s in &k.steps {
            if body_started {
                w.blank();
            }
            body_started = true;
            nest::step(k, s, w);
        }
        if k.workspace > 0 {
            w.blank();
            w.line("teil_release(teil_ws);");
        }
    });
}
