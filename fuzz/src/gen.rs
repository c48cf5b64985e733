//! Random well-typed programs, generated from shapes.
//!
//! Generation is type-directed: [`expr`] is asked for an expression of a given shape and picks a
//! construct whose typing rule can produce that shape, then asks recursively for operands of the
//! shapes the rule's premises demand (e.g. for `red+ i e` of shape `s`, an operand of shape `s`
//! with one extent inserted at `i`). Every program generated is therefore well-typed by
//! construction; the tests check that claim against [`teil::check()`].
//!
//! The generator is a proptest [`Strategy`], so property tests shrink failing programs. For
//! campaigns, [`sample`] draws one program deterministically from a seed.
//!
//! Leaves are variables named after their shape (`t2x3_0`, `s_1` for scalars) or small integer
//! literals. [`finish`] turns the generated statements into a program: it declares every
//! variable, lets leaves read results of earlier statements, makes some statements in-place,
//! and adds qualifiers.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Just, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::sync::Arc;
use teil::ast::*;

/// What the generator may produce.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Largest rank of a declared variable or statement (0 to 5 in campaigns).
    pub max_rank: usize,
    /// Largest rank of any intermediate expression.
    pub max_inner_rank: usize,
    /// Extents are drawn from `1..=max_extent`.
    pub max_extent: u64,
    /// Largest number of elements of any intermediate expression, to keep the oracle fast.
    pub max_elements: u64,
    /// Expression depth (number of nested operations).
    pub max_depth: u32,
    pub max_stmts: usize,
    /// Element-wise and scalar division (`div`, `/`).
    pub division: bool,
    /// `red*`, `redmax`, `redmin` in addition to `red+`.
    pub nonlinear_reductions: bool,
    /// Numeric literals as scalar leaves.
    pub literals: bool,
    /// `input`/`output`/`inout` qualifiers.
    pub qualifiers: bool,
    /// Only the constructs an einsum expresses: variables, `#`, `red+`, `transp`, `diag`,
    /// `contr` and parentheses (`teil fuzz --profile einsum`; `literals` and `division` are
    /// then ignored).
    pub einsum_only: bool,
    /// What compilers transform, more often (`teil fuzz --profile compiler`): besides every
    /// construct above, element-wise operations on a contraction (fusion), `e ⊙ e` (a repeated
    /// subexpression), a reduction of a broadcast along the broadcast axis, a reduction of a
    /// reduction (several axes), a contraction of a transpose; and extents of 1 twice as often.
    pub compiler: bool,
    /// The element-wise functions (`exp`, `log`, `sqrt`, `tanh`, `erf`, `abs`, `max`, `min`)
    /// and a round trip through the other element type (`f64 (f32 e)`, `f32 (f64 e)`), in half
    /// the programs ([`program`]).
    pub functions: bool,
    /// Half the programs declare every variable `f32` (the other half `f64`).
    pub binary32: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_rank: 3,
            max_inner_rank: 5,
            max_extent: 3,
            max_elements: 512,
            max_depth: 4,
            max_stmts: 3,
            division: false,
            nonlinear_reductions: true,
            literals: true,
            qualifiers: true,
            einsum_only: false,
            compiler: false,
            functions: false,
            binary32: false,
        }
    }
}

fn span() -> Span {
    0..0
}

fn nat(v: u64) -> Nat {
    Nat::new(v, span())
}

fn node(kind: ExprKind) -> Expr {
    Expr::new(kind, span())
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

/// The name of the `slot`-th variable of shape `s`.
pub fn var_name(s: &[u64], slot: u8) -> String {
    if s.is_empty() {
        format!("s_{slot}")
    } else {
        let dims: Vec<String> = s.iter().map(u64::to_string).collect();
        format!("t{}_{slot}", dims.join("x"))
    }
}

/// Slot reserved for "the latest earlier result of this shape, if any" (see [`finish`]).
const REUSE_SLOT: u8 = 9;

fn elements(s: &[u64]) -> u64 {
    s.iter().product()
}

fn fits(s: &[u64], cfg: &GenConfig) -> bool {
    s.len() <= cfg.max_inner_rank && elements(s) <= cfg.max_elements
}

fn leaf(shape: Vec<u64>, cfg: &GenConfig) -> BoxedStrategy<Expr> {
    let s = shape.clone();
    let var = prop_oneof![3 => Just(0u8), 2 => Just(1u8), 2 => Just(REUSE_SLOT)]
        .prop_map(move |slot| node(ExprKind::Var(Ident::new(var_name(&s, slot), span()))));
    if shape.is_empty() && cfg.literals && !cfg.einsum_only {
        prop_oneof![
            3 => var,
            2 => (-3i32..=4).prop_map(|v| node(ExprKind::Lit(Literal::from_f64(f64::from(v))))),
        ]
        .boxed()
    } else {
        var.boxed()
    }
}

/// An expression of shape `shape` with at most `depth` nested operations.
///
/// The strategy is built when a value is drawn from it (`Lazy`): built at once, each level
/// would build the strategies of every construct's operands, all the way down, though a draw
/// follows one construct per level (most of a campaign's generation time went into building
/// and dropping them). Building draws nothing from the random source, so the values drawn are
/// the same either way.
pub fn expr(shape: Vec<u64>, depth: u32, cfg: Arc<GenConfig>) -> BoxedStrategy<Expr> {
    Lazy(move || expr_now(shape.clone(), depth, cfg.clone())).boxed()
}

/// A strategy that builds its strategy (`F`) for each draw.
struct Lazy<F>(F);

impl<F> std::fmt::Debug for Lazy<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lazy")
    }
}

impl<F: Fn() -> BoxedStrategy<Expr>> Strategy for Lazy<F> {
    type Tree = Box<dyn ValueTree<Value = Expr>>;
    type Value = Expr;

    fn new_tree(&self, runner: &mut TestRunner) -> proptest::strategy::NewTree<Self> {
        (self.0)().new_tree(runner)
    }
}

/// [`expr`], built now.
fn expr_now(shape: Vec<u64>, depth: u32, cfg: Arc<GenConfig>) -> BoxedStrategy<Expr> {
    if depth == 0 {
        return leaf(shape, &cfg);
    }
    let r = shape.len();
    let d = depth - 1;
    let ext = extent(&cfg);
    let mut options: Vec<(u32, BoxedStrategy<Expr>)> = vec![(3, leaf(shape.clone(), &cfg))];

    // T-Add, T-Mul, T-Elem
    if !cfg.einsum_only {
        let (s, c) = (shape.clone(), cfg.clone());
        let ops: Vec<BinOp> = BinOp::ALL
            .into_iter()
            .filter(|o| cfg.division || *o != BinOp::Div)
            .collect();
        options.push((
            4,
            (
                proptest::sample::select(ops),
                expr(s.clone(), d, c.clone()),
                expr(s, d, c),
            )
                .prop_map(|(op, a, b)| node(ExprKind::Binary(op, bx(a), bx(b))))
                .boxed(),
        ));
    }
    // T-SMul, T-SDiv
    if r > 0 && !cfg.einsum_only {
        let ops = if cfg.division {
            vec![BinOp::Mul, BinOp::Div]
        } else {
            vec![BinOp::Mul]
        };
        options.push((
            2,
            (
                proptest::sample::select(ops),
                expr(vec![], d, cfg.clone()),
                expr(shape.clone(), d, cfg.clone()),
            )
                .prop_map(|(op, k, e)| match op {
                    BinOp::Div => node(ExprKind::Binary(op, bx(e), bx(k))),
                    _ => node(ExprKind::Binary(op, bx(k), bx(e))),
                })
                .boxed(),
        ));
    }
    // T-Prod: split the shape into a prefix and a suffix.
    {
        let (s, c) = (shape.clone(), cfg.clone());
        options.push((
            2,
            (0..=r)
                .prop_flat_map(move |k| {
                    (
                        expr(s[..k].to_vec(), d, c.clone()),
                        expr(s[k..].to_vec(), d, c.clone()),
                    )
                })
                .prop_map(|(a, b)| node(ExprKind::Prod(bx(a), bx(b))))
                .boxed(),
        ));
    }
    // T-Red: the operand has one more dimension, at position i.
    if r < cfg.max_inner_rank {
        let (s, c) = (shape.clone(), cfg.clone());
        let ops: Vec<RedOp> = if cfg.nonlinear_reductions && !cfg.einsum_only {
            RedOp::ALL.to_vec()
        } else {
            vec![RedOp::Sum]
        };
        options.push((
            3,
            (proptest::sample::select(ops), 1..=r + 1, ext.clone())
                .prop_filter_map("operand too large", move |(op, i, n)| {
                    let mut child = s.clone();
                    child.insert(i - 1, n);
                    fits(&child, &c).then_some((op, i, child))
                })
                .prop_flat_map({
                    let c = cfg.clone();
                    move |(op, i, child)| {
                        expr(child, d, c.clone())
                            .prop_map(move |e| node(ExprKind::Reduce(op, nat(i as u64), bx(e))))
                    }
                })
                .boxed(),
        ));
    }
    // T-Transp
    if r >= 2 {
        let (s, c) = (shape.clone(), cfg.clone());
        options.push((
            2,
            (1..=r, 1..=r)
                .prop_filter("distinct positions", |(i, j)| i != j)
                .prop_flat_map(move |(i, j)| {
                    let mut child = s.clone();
                    child.swap(i - 1, j - 1);
                    expr(child, d, c.clone()).prop_map(move |e| {
                        node(ExprKind::Transp(nat(i as u64), nat(j as u64), bx(e)))
                    })
                })
                .boxed(),
        ));
    }
    // T-Diag: the operand repeats the kept extent at a later position.
    if r >= 1 && r < cfg.max_inner_rank {
        let (s, c) = (shape.clone(), cfg.clone());
        options.push((
            2,
            (1..=r, 1..=r + 1, any::<bool>())
                .prop_filter_map("lo < hi", move |(lo, hi, flip)| {
                    let mut child = s.clone();
                    child.insert(hi - 1, s[lo - 1]);
                    (lo < hi && fits(&child, &c)).then_some((lo, hi, flip, child))
                })
                .prop_flat_map({
                    let c = cfg.clone();
                    move |(lo, hi, flip, child)| {
                        expr(child, d, c.clone()).prop_map(move |e| {
                            let (i, j) = if flip { (hi, lo) } else { (lo, hi) };
                            node(ExprKind::Diag(nat(i as u64), nat(j as u64), bx(e)))
                        })
                    }
                })
                .boxed(),
        ));
    }
    // T-Contr: the operand has two more dimensions of equal extent.
    if r + 2 <= cfg.max_inner_rank {
        options.push((4, contraction(shape.clone(), d, cfg.clone(), false)));
    }
    // T-Expa: the operand lacks dimension i.
    if r >= 1 && !cfg.einsum_only {
        let (s, c) = (shape.clone(), cfg.clone());
        options.push((
            2,
            (1..=r)
                .prop_flat_map(move |i| {
                    let mut child = s.clone();
                    let n = child.remove(i - 1);
                    expr(child, d, c.clone())
                        .prop_map(move |e| node(ExprKind::Expa(nat(i as u64), nat(n), bx(e))))
                })
                .boxed(),
        ));
    }
    // T-Proj: the operand has one more dimension, sliced at m.
    if r < cfg.max_inner_rank && !cfg.einsum_only {
        let (s, c) = (shape.clone(), cfg.clone());
        options.push((
            2,
            (1..=r + 1, ext.clone())
                .prop_flat_map(|(i, n)| (Just(i), Just(n), 1..=n))
                .prop_filter_map("operand too large", move |(i, n, m)| {
                    let mut child = s.clone();
                    child.insert(i - 1, n);
                    fits(&child, &c).then_some((i, m, child))
                })
                .prop_flat_map({
                    let c = cfg.clone();
                    move |(i, m, child)| {
                        expr(child, d, c.clone())
                            .prop_map(move |e| node(ExprKind::Proj(nat(i as u64), nat(m), bx(e))))
                    }
                })
                .boxed(),
        ));
    }
    if cfg.compiler && !cfg.einsum_only {
        options.extend(compiler_forms(&shape, d, &cfg));
        if cfg.functions {
            options.extend(kernel_forms(&shape, d, &cfg));
        }
    }
    // T-Func, T-Func2, and T-Conv twice (a rounding to binary32 in a binary64 program: the
    // pair is written `f32 (f64 e)` here and turned round for binary64 programs, `program`).
    if cfg.functions && !cfg.einsum_only {
        options.push((
            3,
            (
                proptest::sample::select(Func::ALL.to_vec()),
                expr(shape.clone(), d, cfg.clone()),
            )
                .prop_map(|(f, e)| node(ExprKind::Func(f, bx(e))))
                .boxed(),
        ));
        options.push((
            2,
            (
                proptest::sample::select(vec![Func2::Max, Func2::Min]),
                expr(shape.clone(), d, cfg.clone()),
                expr(shape.clone(), d, cfg.clone()),
            )
                .prop_map(|(f, a, b)| node(ExprKind::Func2(f, bx(a), bx(b))))
                .boxed(),
        ));
        options.push((
            1,
            expr(shape.clone(), d, cfg.clone())
                .prop_map(|e| {
                    let inner = node(ExprKind::Convert(ElemType::F64, bx(e)));
                    node(ExprKind::Convert(ElemType::F32, bx(inner)))
                })
                .boxed(),
        ));
    }
    // T-Paren
    options.push((
        1,
        expr(shape, d, cfg)
            .prop_map(|e| node(ExprKind::Paren(bx(e))))
            .boxed(),
    ));
    proptest::strategy::Union::new_weighted(options).boxed()
}

/// The extents a new dimension may take: `1..=max_extent`, and for the compiler profile 1 as
/// often as all the others together.
fn extent(cfg: &GenConfig) -> BoxedStrategy<u64> {
    if cfg.compiler && cfg.max_extent > 1 {
        prop_oneof![1 => Just(1u64), 1 => 2..=cfg.max_extent].boxed()
    } else {
        (1..=cfg.max_extent).boxed()
    }
}

/// `contr lo hi e` of shape `shape` ([T-Contr]): `e` has two more dimensions of equal extent.
/// With `transposed`, `e` is `transp i j e'` (a transpose feeding a contraction).
fn contraction(
    shape: Vec<u64>,
    d: u32,
    cfg: Arc<GenConfig>,
    transposed: bool,
) -> BoxedStrategy<Expr> {
    let r = shape.len();
    let c = cfg.clone();
    let operand = (1..=r + 1, 1..=r + 2, extent(&cfg), any::<bool>()).prop_filter_map(
        "lo < hi",
        move |(lo, hi, n, flip)| {
            let mut child = shape.clone();
            child.insert(lo - 1, n);
            child.insert(hi - 1, n);
            (lo < hi && fits(&child, &c)).then_some((lo, hi, flip, child))
        },
    );
    let contr = |lo: usize, hi: usize, flip: bool| {
        let (a, b) = if flip { (hi, lo) } else { (lo, hi) };
        move |e| node(ExprKind::Contr(nat(a as u64), nat(b as u64), bx(e)))
    };
    if !transposed {
        return operand
            .prop_flat_map(move |(lo, hi, flip, child)| {
                expr(child, d, cfg.clone()).prop_map(contr(lo, hi, flip))
            })
            .boxed();
    }
    // The operand is `transp i j e` for two distinct positions of its rank r + 2.
    operand
        .prop_flat_map(move |(lo, hi, flip, child)| {
            let n = child.len();
            (Just((lo, hi, flip, child)), 1..=n, 1..=n)
        })
        .prop_filter("distinct positions", |(_, i, j)| i != j)
        .prop_flat_map(move |((lo, hi, flip, child), i, j)| {
            let mut inner = child.clone();
            inner.swap(i - 1, j - 1);
            let contr = contr(lo, hi, flip);
            expr(inner, d, cfg.clone()).prop_map(move |e| {
                contr(node(ExprKind::Transp(nat(i as u64), nat(j as u64), bx(e))))
            })
        })
        .boxed()
}

/// The compiler profile's compositions of shape `shape` (see [`GenConfig::compiler`]), each
/// with its weight beside the single constructs of [`expr`].
fn compiler_forms(shape: &[u64], d: u32, cfg: &Arc<GenConfig>) -> Vec<(u32, BoxedStrategy<Expr>)> {
    let r = shape.len();
    let mut forms = Vec::new();
    let ops: Vec<BinOp> = BinOp::ALL
        .into_iter()
        .filter(|o| cfg.division || *o != BinOp::Div)
        .collect();
    // `e ⊙ e`: one subexpression twice (common-subexpression elimination).
    forms.push((
        2,
        (
            proptest::sample::select(ops.clone()),
            expr(shape.to_vec(), d, cfg.clone()),
        )
            .prop_map(|(op, a)| node(ExprKind::Binary(op, bx(a.clone()), bx(a))))
            .boxed(),
    ));
    if r + 2 <= cfg.max_inner_rank {
        // An element-wise operation on a contraction (fusion), either side.
        forms.push((
            2,
            (
                proptest::sample::select(ops),
                contraction(shape.to_vec(), d, cfg.clone(), false),
                expr(shape.to_vec(), d, cfg.clone()),
                any::<bool>(),
            )
                .prop_map(|(op, c, e, left)| {
                    let (a, b) = if left { (c, e) } else { (e, c) };
                    node(ExprKind::Binary(op, bx(a), bx(b)))
                })
                .boxed(),
        ));
        // A contraction of a transpose (layout changes).
        forms.push((2, contraction(shape.to_vec(), d, cfg.clone(), true)));
        // A constant that folds to a special value (`1 / 0`, `-1 / 0`, `0 / 0`) around a
        // contraction, where fusions fold constants in: scaling it, or spread and added,
        // subtracted or multiplied.
        let s = shape.to_vec();
        forms.push((
            1,
            (
                proptest::sample::select(vec![1.0, -1.0, 0.0]),
                proptest::sample::select(vec![BinOp::Add, BinOp::Sub, BinOp::Mul]),
                any::<bool>(),
                contraction(shape.to_vec(), d, cfg.clone(), false),
            )
                .prop_map(move |(a, op, scale, c)| {
                    let special = node(ExprKind::Paren(bx(bin(BinOp::Div, lit(a), lit(0.0)))));
                    if scale {
                        return bin(BinOp::Mul, special, c);
                    }
                    bin(op, c, spread_to(special, &s))
                })
                .boxed(),
        ));
    }
    if r < cfg.max_inner_rank {
        let reds: Vec<RedOp> = if cfg.nonlinear_reductions {
            RedOp::ALL.to_vec()
        } else {
            vec![RedOp::Sum]
        };
        // `red i (expa i n e)`: a reduction of a broadcast along its axis.
        let s = shape.to_vec();
        let c = cfg.clone();
        forms.push((
            2,
            (
                proptest::sample::select(reds.clone()),
                1..=r + 1,
                extent(cfg),
            )
                .prop_flat_map(move |(op, i, n)| {
                    expr(s.clone(), d, c.clone()).prop_map(move |e| {
                        let i = nat(i as u64);
                        let b = node(ExprKind::Expa(i, nat(n), bx(e)));
                        node(ExprKind::Reduce(op, i, bx(b)))
                    })
                })
                .boxed(),
        ));
        // `red i (red j e)`: one reduction over two axes.
        if r + 2 <= cfg.max_inner_rank {
            let s = shape.to_vec();
            let c = cfg.clone();
            forms.push((
                2,
                (
                    proptest::sample::select(reds),
                    1..=r + 1,
                    1..=r + 2,
                    extent(cfg),
                    extent(cfg),
                )
                    .prop_filter_map("operand too large", move |(op, i, j, n, m)| {
                        let mut child = s.clone();
                        child.insert(i - 1, n);
                        child.insert(j - 1, m);
                        fits(&child, &c).then_some((op, i, j, child))
                    })
                    .prop_flat_map({
                        let c = cfg.clone();
                        move |(op, i, j, child)| {
                            expr(child, d, c.clone()).prop_map(move |e| {
                                let inner = node(ExprKind::Reduce(op, nat(j as u64), bx(e)));
                                node(ExprKind::Reduce(op, nat(i as u64), bx(inner)))
                            })
                        }
                    })
                    .boxed(),
            ));
        }
    }
    forms
}

/// A scalar literal.
fn lit(v: f64) -> Expr {
    node(ExprKind::Lit(Literal::from_f64(v)))
}

/// `v` in every cell of `shape`: the literal spread by `expa` (a constant operand, which
/// compilers fold into the operation that reads it).
fn fill(v: f64, shape: &[u64]) -> Expr {
    spread_to(lit(v), shape)
}

/// The scalar `e` in every cell of `shape`, spread by `expa`.
fn spread_to(e: Expr, shape: &[u64]) -> Expr {
    shape.iter().enumerate().fold(e, |e, (k, &n)| {
        node(ExprKind::Expa(nat(k as u64 + 1), nat(n), bx(e)))
    })
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    node(ExprKind::Binary(op, bx(a), bx(b)))
}

fn func(f: Func, e: Expr) -> Expr {
    node(ExprKind::Func(f, bx(e)))
}

fn reduce(op: RedOp, i: usize, e: Expr) -> Expr {
    node(ExprKind::Reduce(op, nat(i as u64), bx(e)))
}

fn spread(i: usize, n: u64, e: Expr) -> Expr {
    node(ExprKind::Expa(nat(i as u64), nat(n), bx(e)))
}

/// `x - spread (redmax i x)`: `x` with its maximum along axis `i` (extent `n`) subtracted.
fn shifted(i: usize, n: u64, x: Expr) -> Expr {
    bin(
        BinOp::Sub,
        x.clone(),
        spread(i, n, reduce(RedOp::Max, i, x)),
    )
}

/// Softmax along axis `i` (extent `n`), the maximum subtracted first.
fn softmax(i: usize, n: u64, x: Expr) -> Expr {
    let e = func(Func::Exp, shifted(i, n, x));
    bin(
        BinOp::Div,
        e.clone(),
        spread(i, n, reduce(RedOp::Sum, i, e)),
    )
}

/// Log-softmax along axis `i`: `z - log (red+ i (exp z))` with `z` the shifted `x`.
fn log_softmax(i: usize, n: u64, x: Expr) -> Expr {
    let z = shifted(i, n, x);
    let total = reduce(RedOp::Sum, i, func(Func::Exp, z.clone()));
    bin(BinOp::Sub, z, spread(i, n, func(Func::Log, total)))
}

/// Layer normalisation along axis `i` of `x` (of shape `shape`): `(x - mean) / sqrt (var +
/// 1e-5)`, then `* gamma + beta` where given.
fn layer_norm(i: usize, shape: &[u64], x: Expr, affine: Option<(Expr, Expr)>) -> Expr {
    let n = shape[i - 1];
    let mut rest = shape.to_vec();
    rest.remove(i - 1);
    let mean = |e: Expr| bin(BinOp::Div, reduce(RedOp::Sum, i, e), lit(n as f64));
    let c = bin(BinOp::Sub, x.clone(), spread(i, n, mean(x)));
    let var = mean(bin(BinOp::Mul, c.clone(), c.clone()));
    let denom = func(Func::Sqrt, bin(BinOp::Add, var, fill(1e-5, &rest)));
    let y = bin(BinOp::Div, c, spread(i, n, denom));
    match affine {
        Some((gamma, beta)) => bin(BinOp::Add, bin(BinOp::Mul, y, gamma), beta),
        None => y,
    }
}

/// GELU in its erf form: `0.5 * x * (1 + erf (x / sqrt 2))`, the division by `sqrt 2` a
/// multiplication by its reciprocal's literal, as frameworks write it.
fn gelu(shape: &[u64], x: Expr) -> Expr {
    let inner = bin(BinOp::Mul, lit(std::f64::consts::FRAC_1_SQRT_2), x.clone());
    let half_x = bin(BinOp::Mul, lit(0.5), x);
    bin(
        BinOp::Mul,
        half_x,
        bin(BinOp::Add, fill(1.0, shape), func(Func::Erf, inner)),
    )
}

/// The kernels people write with the functions (spec/fuzzing.md, "Programs that exercise
/// compilers"), each a composition that compilers recognise and fuse, over operands drawn as
/// usual (at most one more level deep, since each operand is repeated): row-wise softmax with
/// the maximum subtracted, log-softmax, layer normalisation (with and without its affine
/// step), GELU in its erf form, ReLU and clamps (`max`/`min` with constants), a function of a
/// contraction, and scaled dot-product attention (contraction, scale, softmax, contraction)
/// for a rank-2 result. The constants (`1e-5`, `1/sqrt 2`, `0.5`, the clamp bounds) are
/// literals rounded to the program's type.
fn kernel_forms(shape: &[u64], d: u32, cfg: &Arc<GenConfig>) -> Vec<(u32, BoxedStrategy<Expr>)> {
    let r = shape.len();
    let operand = |s: &[u64]| expr(s.to_vec(), d.min(1), cfg.clone());
    let mut forms = Vec::new();
    let s = shape.to_vec();
    forms.push((1, operand(shape).prop_map(move |x| gelu(&s, x)).boxed()));
    let s = shape.to_vec();
    forms.push((
        1,
        (operand(shape), -2i32..=0, proptest::option::of(1i32..=3))
            .prop_map(move |(x, lo, hi)| {
                let relu = node(ExprKind::Func2(
                    Func2::Max,
                    bx(x),
                    bx(fill(f64::from(lo), &s)),
                ));
                match hi {
                    Some(hi) => node(ExprKind::Func2(
                        Func2::Min,
                        bx(relu),
                        bx(fill(f64::from(hi), &s)),
                    )),
                    None => relu,
                }
            })
            .boxed(),
    ));
    if r + 2 <= cfg.max_inner_rank {
        forms.push((
            1,
            (
                proptest::sample::select(Func::ALL.to_vec()),
                contraction(shape.to_vec(), d, cfg.clone(), false),
            )
                .prop_map(|(f, c)| func(f, c))
                .boxed(),
        ));
    }
    if r >= 1 {
        let s = shape.to_vec();
        forms.push((
            2,
            (operand(shape), 1..=r, 0..3u8)
                .prop_map(move |(x, i, kind)| match kind {
                    0 => softmax(i, s[i - 1], x),
                    1 => log_softmax(i, s[i - 1], x),
                    _ => layer_norm(i, &s, x, None),
                })
                .boxed(),
        ));
        let s = shape.to_vec();
        forms.push((
            1,
            (operand(shape), 1..=r, operand(shape), operand(shape))
                .prop_map(move |(x, i, gamma, beta)| layer_norm(i, &s, x, Some((gamma, beta))))
                .boxed(),
        ));
    }
    if r == 2 {
        // softmax(scale * Q K^T) V: Q [q d], K [k d], V [k v], the scores [q k].
        let (q, v) = (shape[0], shape[1]);
        let c = cfg.clone();
        forms.push((
            2,
            (extent(cfg), extent(cfg))
                .prop_flat_map(move |(k, dd)| {
                    let operand = |s: Vec<u64>| expr(s, d.min(1), c.clone());
                    (
                        Just((k, dd)),
                        operand(vec![q, dd]),
                        operand(vec![k, dd]),
                        operand(vec![k, v]),
                    )
                })
                .prop_map(|((k, dd), qm, km, vm)| {
                    let scores = node(ExprKind::Contr(
                        nat(2),
                        nat(4),
                        bx(node(ExprKind::Prod(bx(qm), bx(km)))),
                    ));
                    let scaled = bin(BinOp::Mul, lit(1.0 / (dd as f64).sqrt()), scores);
                    let p = softmax(2, k, scaled);
                    node(ExprKind::Contr(
                        nat(2),
                        nat(3),
                        bx(node(ExprKind::Prod(bx(p), bx(vm)))),
                    ))
                })
                .boxed(),
        ));
    }
    forms
}

/// A generated statement before [`finish`]: its shape, right-hand side, and whether it
/// assigns in place (to the first variable of its shape) rather than to a fresh result.
#[derive(Clone, Debug)]
pub struct RawStmt {
    pub shape: Vec<u64>,
    pub value: Expr,
    pub in_place: bool,
}

fn shape_strategy(cfg: &GenConfig) -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(1..=cfg.max_extent, 0..=cfg.max_rank)
}

/// Random well-typed programs. With [`GenConfig::functions`], half of them have none (so
/// that the comparisons of programs without functions, exact ones included, keep their share).
pub fn program(cfg: GenConfig) -> BoxedStrategy<Program> {
    if cfg.functions {
        let without = GenConfig {
            functions: false,
            ..cfg.clone()
        };
        return prop_oneof![programs_of(cfg), programs_of(without)].boxed();
    }
    programs_of(cfg)
}

fn programs_of(cfg: GenConfig) -> BoxedStrategy<Program> {
    let cfg = Arc::new(cfg);
    let c = cfg.clone();
    let stmt = shape_strategy(&cfg).prop_flat_map(move |shape| {
        (
            expr(shape.clone(), c.max_depth, c.clone()),
            proptest::bool::weighted(0.25),
        )
            .prop_map(move |(value, in_place)| RawStmt {
                shape: shape.clone(),
                value,
                in_place,
            })
    });
    let q = cfg.qualifiers;
    let binary32 = if cfg.binary32 {
        any::<bool>().boxed()
    } else {
        Just(false).boxed()
    };
    (proptest::collection::vec(stmt, 1..=cfg.max_stmts), binary32)
        .prop_map(move |(stmts, binary32)| {
            let mut p = finish(stmts, q);
            let elem = if binary32 {
                ElemType::F32
            } else {
                ElemType::F64
            };
            for d in &mut p.decls {
                d.elem = elem;
            }
            if elem == ElemType::F64 {
                for s in &mut p.stmts {
                    round_trips_through_binary32(&mut s.value);
                }
            }
            p
        })
        .boxed()
}

/// Turns every generated round trip `f32 (f64 e)` into `f64 (f32 e)`, for a binary64 program.
fn round_trips_through_binary32(e: &mut Expr) {
    if let ExprKind::Convert(outer, inner) = &mut e.kind {
        if let ExprKind::Convert(t, operand) = &mut inner.kind {
            *outer = ElemType::F64;
            *t = ElemType::F32;
            return round_trips_through_binary32(operand);
        }
    }
    for c in e.children_mut() {
        round_trips_through_binary32(c);
    }
}

/// Draws one program from `strategy` deterministically: the same seed gives the same program.
pub fn sample<T: std::fmt::Debug>(strategy: &impl Strategy<Value = T>, seed: u64) -> T {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&(!seed).to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    // Generation only fails when every filter rejects, which the shape choices above rule out
    // in practice; retrying with the runner's advanced RNG keeps this total.
    loop {
        if let Ok(tree) = strategy.new_tree(&mut runner) {
            return tree.current();
        }
    }
}

/// Declares every variable, resolves `REUSE_SLOT` leaves to earlier results, names targets,
/// and adds qualifiers (when `qualifiers`): variables read before any assignment are `input`
/// (or `inout` when also assigned), fresh results are `output`.
pub fn finish(stmts: Vec<RawStmt>, qualifiers: bool) -> Program {
    // name -> shape, in first-use order.
    let mut decls: Vec<(String, Vec<u64>)> = Vec::new();
    let declare = |decls: &mut Vec<(String, Vec<u64>)>, name: &str, shape: &[u64]| {
        if !decls.iter().any(|(n, _)| n == name) {
            decls.push((name.to_string(), shape.to_vec()));
        }
    };
    let mut results: BTreeMap<Vec<u64>, String> = BTreeMap::new();
    let mut assigned: Vec<String> = Vec::new();
    let mut read_first: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (k, raw) in stmts.into_iter().enumerate() {
        let mut value = raw.value;
        resolve(&mut value, &results, &mut |name: &str, shape: &[u64]| {
            declare(&mut decls, name, shape);
            if !assigned.iter().any(|a| a == name) && !read_first.iter().any(|a| a == name) {
                read_first.push(name.to_string());
            }
        });
        let target = if raw.in_place {
            var_name(&raw.shape, 0)
        } else {
            format!("r{k}")
        };
        declare(&mut decls, &target, &raw.shape);
        if !assigned.contains(&target) {
            assigned.push(target.clone());
        }
        results.insert(raw.shape.clone(), target.clone());
        out.push(Stmt {
            target: Ident::new(target, span()),
            value,
            span: span(),
        });
    }
    let decls = decls
        .into_iter()
        .map(|(name, shape)| {
            let read = read_first.contains(&name);
            let written = assigned.contains(&name);
            let qualifier = qualifiers.then(|| match (read, written) {
                (true, true) => Some(Qualifier::InOut),
                (true, false) => Some(Qualifier::Input),
                (false, true) if name.starts_with('r') => Some(Qualifier::Output),
                _ => None,
            });
            Decl {
                qualifier: qualifier.flatten(),
                name: Ident::new(name, span()),
                elem: ElemType::F64,
                elem_span: None,
                extents: shape.into_iter().map(nat).collect(),
                span: span(),
            }
        })
        .collect();
    Program { decls, stmts: out }
}

/// Replaces reuse leaves by the latest earlier result of their shape (or slot 0) and reports
/// every variable read, with its shape.
fn resolve(
    e: &mut Expr,
    results: &BTreeMap<Vec<u64>, String>,
    seen: &mut impl FnMut(&str, &[u64]),
) {
    if let ExprKind::Var(v) = &mut e.kind {
        let shape = shape_of_name(&v.name);
        if v.name.ends_with(&format!("_{REUSE_SLOT}")) {
            v.name = results
                .get(&shape)
                .cloned()
                .unwrap_or_else(|| var_name(&shape, 0));
        }
        seen(&v.name, &shape);
        return;
    }
    for c in e.children_mut() {
        resolve(c, results, seen);
    }
}

/// Inverse of [`var_name`] (results `r{k}` are only introduced by `resolve`, after this runs).
fn shape_of_name(name: &str) -> Vec<u64> {
    match name.strip_prefix('t') {
        Some(rest) => {
            let dims = rest.rsplit_once('_').map_or(rest, |(d, _)| d);
            dims.split('x').filter_map(|d| d.parse().ok()).collect()
        }
        None => Vec::new(),
    }
}
