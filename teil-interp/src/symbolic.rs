//! A symbolic value domain: terms over the input cells, for translation validation
//! (spec/validation.md).
//!
//! A [`Sym`] is what a cell holds when the program runs on *names* instead of numbers: the
//! leaves are input cells (`A[1,2]`, 1-based as in spec/semantics.md), numeric literals, and
//! cells of unspecified content (`?C[1]`, what an output-only buffer holds on entry to a C
//! kernel). The undefined value `•` is absorbing, exactly as in [`crate::Val`].
//!
//! Terms are kept in a **normal form** so that two computations that differ only by the
//! rewrites a compiler may make to sums and products compare equal:
//!
//! - `+` and `*` are flattened, commutative and distributive: a term is a *polynomial*, a
//!   multiset of *monomials*, each a multiset of *atoms*; a product of sums is expanded. So
//!   equality of normal forms is equality in the free commutative semiring over the atoms
//!   (the polynomials with natural coefficients). Like terms are not merged (`x + x` is not
//!   `2 * x`) and literals are not folded (`2 * 3` is not `6`): no rewrite the backend does
//!   needs either, so the validator does not accept them.
//! - `-`, `/`, `max` and `min` (the fold steps of `redmax`/`redmin`) are uninterpreted: an
//!   atom with its two (normalised) operands, in order. `a - b` is not `a + (-1) * b`, and
//!   `max(a, b)` is not `max(b, a)`.
//! - So are the operations of binary32 and of the functions (spec/values.md, "Binary32",
//!   "Functions"): `f32(x)`, the rounding of `x` to binary32; `exp(x)`, `log(x)`, `sqrt(x)`,
//!   `tanh(x)`, `erf(x)`, `abs(x)`, a function in binary64, and `expf(x)`, `logf(x)`, ...,
//!   `absf(x)` the same function in binary32 (C's names, but `absf` for `fabsf`);
//!   `maximum(x, y)` and `minimum(x, y)`, the functions `max`/`min` (IEEE 754-2019
//!   `maximum`/`minimum`, which order `-0 < +0`, so they are other operations than `redmax`'s
//!   `max`, which keeps its first operand of two equal zeros). Two such terms are equal only
//!   if they apply the same operation, in the same type, to equal operands in the same order:
//!   `exp(x)` is not `expf(x)`, `abs(abs(x))` is not `abs(x)`, `maximum(a, b)` is neither
//!   `maximum(b, a)` nor `max(a, b)`.
//! - Binary32 `+` and `*` ([`Sym::arith`] in `f32`) are a semiring of their own: the atom
//!   `f32{P}`, whose operand `P` is a polynomial over the binary32 operands, normalised like any
//!   other (an operand `f32{Q}` contributes `Q`). So binary32 sums and products reassociate,
//!   commute and distribute among themselves, as binary64 ones do (spec/values.md,
//!   "Reassociation"), but the two never mix: `f32{a + b}` is one atom to binary64 arithmetic,
//!   and the rounding of a binary64 sum, `f32(a + b)` (what `f32 e` gives), is one atom to
//!   binary32 arithmetic. Binary32 `-` and `/` are the rounding of the uninterpreted binary64
//!   atom, `f32(a - b)`.
//! - The one simplification is that rounding a binary32 number to binary32 is exact: `f32(x)` is
//!   `x` itself where `x` is a single atom that is a binary32 number whatever the leaves hold: a
//!   literal exactly representable in binary32 (`±0` and `±inf` included), an `f32(..)`, an
//!   `f32{..}`, a binary32 function (`expf(..)`, ...), or a `maximum`/`minimum` of two such
//!   operands (it returns one of them, or NaN). That is what makes the oracle, which rounds
//!   every binary32 operation's result, and the C model, whose binary32 functions return
//!   binary32 values, produce equal terms. Nothing else is known to be binary32: a leaf's term
//!   says nothing of the caller's value (callers never round a bare leaf).
//!
//! This is sound for exact real arithmetic, not for binary64: reassociating a floating-point
//! sum changes its rounding, and distributivity fails with infinities. That is exactly the
//! latitude spec/padding.md grants contraction lifting, and what the validator checks: the
//! backend computes the oracle's value up to reassociation, commutation and distribution of
//! `+` and `*`.
//!
//! Everything is bounded, so that symbolic evaluation never hangs or overflows its stack: a
//! term with more than [`Limits::max_atoms`] atoms, nested deeper than [`Limits::max_depth`],
//! or computed after the thread's [`Limits::fuel`] ran out is [`Sym::TooLarge`], an absorbing
//! value that callers report as "too large to validate" (never as a mismatch).

use crate::domain::Domain;
use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use teil::ast::{BinOp, ElemType, Func, Func2};

/// Where a leaf's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeafKind {
    /// The caller's value of an input cell.
    Input,
    /// Whatever a buffer held on entry that the caller did not specify (an output-only
    /// parameter's logical cells, spec/abi.md). Printed with a leading `?`.
    Unspecified,
}

/// One cell of a variable, 1-based as in the semantics.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Leaf {
    pub kind: LeafKind,
    pub var: String,
    pub index: Vec<u64>,
}

/// The uninterpreted operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// `a - b`.
    Sub,
    /// `a / b`.
    Div,
    /// `redmax`'s fold step ([`crate::domain::max_f64`]).
    Max,
    /// `redmin`'s fold step.
    Min,
    /// Rounding to binary32 (unary).
    Round32,
    /// A function in an element type (unary).
    Func(Func, ElemType),
    /// IEEE 754-2019 `maximum`/`minimum` (binary).
    Func2(Func2),
    /// Binary32 arithmetic (unary): its operand is the polynomial of the binary32 sums and
    /// products, whose laws hold within the type ([`Sym::arith`]).
    Arith32,
}

impl Op {
    /// The number of operands.
    fn arity(self) -> usize {
        match self {
            Op::Round32 | Op::Func(..) | Op::Arith32 => 1,
            Op::Sub | Op::Div | Op::Max | Op::Min | Op::Func2(_) => 2,
        }
    }

    /// The operator of an infix operation (`a - b`); `None` for one printed as a call.
    fn infix(self) -> Option<&'static str> {
        match self {
            Op::Sub => Some(" - "),
            Op::Div => Some(" / "),
            _ => None,
        }
    }
}

/// The name of an operation printed as a call: `max`, `min`, `f32`, `exp` (binary64), `expf`
/// (binary32), `maximum`, `minimum`.
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Sub => f.write_str("-"),
            Op::Div => f.write_str("/"),
            Op::Max => f.write_str("max"),
            Op::Min => f.write_str("min"),
            Op::Round32 => f.write_str("f32"),
            Op::Func(g, ElemType::F64) => f.write_str(g.keyword()),
            Op::Func(g, ElemType::F32) => write!(f, "{}f", g.keyword()),
            Op::Func2(Func2::Max) => f.write_str("maximum"),
            Op::Func2(Func2::Min) => f.write_str("minimum"),
            Op::Arith32 => f.write_str("f32"),
        }
    }
}

/// An uninterpreted operation applied to its (normalised) operands, in order. What
/// [`Atom::is_zero`], [`Atom::is_finite`] and [`Atom::is_binary32`] answer is computed once,
/// when the node is built, from its operands' answers: asking again down the term would take
/// time exponential in the nesting of terms that share operands (`max(0, max(0, ...))`, the
/// padding cell of a long `redmax` over a padded target, or `maximum(m, m)`).
#[derive(Debug)]
struct OpNode {
    op: Op,
    args: Vec<Arc<Poly>>,
    hash: u64,
    depth: u32,
    zero: bool,
    finite: bool,
    binary32: bool,
}

/// An indivisible factor of a monomial.
#[derive(Clone, Debug)]
enum Atom {
    Lit(f64),
    Leaf(Arc<Leaf>),
    Op(Arc<OpNode>),
}

type Mono = Vec<Atom>;

/// A sum of monomials in canonical order: every monomial's atoms sorted, the monomials sorted.
#[derive(Debug)]
pub struct Poly {
    monos: Vec<Mono>,
    hash: u64,
    depth: u32,
    atoms: usize,
    /// [`Poly::is_zero`], computed once.
    zero: bool,
}

/// A symbolic value.
#[derive(Clone)]
pub enum Sym {
    /// `•` (absorbing).
    Undefined,
    /// A term over the limits (absorbing; `•` still wins, as it would on numbers).
    TooLarge,
    Term(Arc<Poly>),
}

/// Bounds on symbolic evaluation (per thread, see [`with_limits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest number of atoms (summed over the monomials) of one term.
    pub max_atoms: usize,
    /// Deepest nesting of uninterpreted operations.
    pub max_depth: u32,
    /// Total work (atoms built) allowed; once spent, every further operation is `TooLarge`.
    pub fuel: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_atoms: 1 << 15,
            max_depth: 200,
            fuel: 1 << 26,
        }
    }
}

thread_local! {
    static LIMITS: Cell<Limits> = Cell::new(Limits {
        fuel: u64::MAX,
        ..Limits::default()
    });
    static SPENT: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` with `limits` in force on this thread (and a fresh fuel count); returns its result
/// and whether the fuel ran out. The previous limits are restored afterwards. Outside any call,
/// the default size and depth bounds hold and fuel is unlimited.
pub fn with_limits<R>(limits: Limits, f: impl FnOnce() -> R) -> (R, bool) {
    let old = LIMITS.with(|l| l.replace(limits));
    let old_spent = SPENT.with(|s| s.replace(0));
    struct Restore(Limits, u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMITS.with(|l| l.set(self.0));
            SPENT.with(|s| s.set(self.1));
        }
    }
    let restore = Restore(old, old_spent);
    let r = f();
    let exhausted = SPENT.with(Cell::get) > limits.fuel;
    drop(restore);
    (r, exhausted)
}

fn limits() -> Limits {
    LIMITS.with(Cell::get)
}

/// Spends `n` units of fuel; false once the budget is exceeded.
fn charge(n: u64) -> bool {
    SPENT.with(|s| {
        let spent = s.get().saturating_add(n);
        s.set(spent);
        spent <= limits().fuel
    })
}

fn hash_of(h: impl Hash) -> u64 {
    let mut s = DefaultHasher::new();
    h.hash(&mut s);
    s.finish()
}

impl Atom {
    fn rank(&self) -> u8 {
        match self {
            Atom::Lit(_) => 0,
            Atom::Leaf(_) => 1,
            Atom::Op(_) => 2,
        }
    }

    fn hash(&self) -> u64 {
        match self {
            Atom::Lit(x) => hash_of((0u8, x.to_bits())),
            Atom::Leaf(l) => hash_of((1u8, &**l)),
            Atom::Op(o) => o.hash,
        }
    }

    fn depth(&self) -> u32 {
        match self {
            Atom::Op(o) => o.depth,
            _ => 0,
        }
    }

    /// Exactly zero (`+0` or `−0`) whatever the leaves hold ([`OpNode::new`] for operations).
    fn is_zero(&self) -> bool {
        match self {
            Atom::Lit(x) => *x == 0.0,
            Atom::Leaf(_) => false,
            Atom::Op(o) => o.zero,
        }
    }

    /// Finite (neither infinite nor NaN) whatever the leaves hold, so that multiplying it by
    /// zero gives zero. Implied by [`Atom::is_zero`].
    fn is_finite(&self) -> bool {
        match self {
            Atom::Lit(x) => x.is_finite(),
            Atom::Leaf(_) => false,
            Atom::Op(o) => o.finite,
        }
    }

    /// A binary32 number (or NaN) whatever the leaves hold, so that rounding it to binary32
    /// changes nothing.
    fn is_binary32(&self) -> bool {
        match self {
            Atom::Lit(x) => f64::from(*x as f32) == *x,
            Atom::Leaf(_) => false,
            Atom::Op(o) => o.binary32,
        }
    }
}

impl OpNode {
    /// The operation `op` on `args` (as many as its arity), with what is known of its value.
    fn new(op: Op, args: &[&Arc<Poly>]) -> OpNode {
        debug_assert_eq!(args.len(), op.arity(), "{op:?}");
        let all = |p: fn(&Poly) -> bool| args.iter().all(|a| p(a));
        let zeros = all(Poly::is_zero);
        let (zero, finite) = match (op, args) {
            // 0 / c is zero for a finite non-zero c (0 / 0 is NaN).
            (Op::Div, _) => (
                matches!(args, [a, b] if a.is_zero() && b.finite_nonzero_literal()),
                false,
            ),
            // 0 - 0, max(0, 0), min(0, 0), maximum(0, 0), minimum(0, 0) and the rounding of a
            // zero are zero. maximum/minimum return an operand (or NaN for a NaN one), so they
            // are finite where both operands are; a rounding to binary32 may overflow.
            // A binary32 polynomial is zero where every monomial has a zero factor and only
            // finite ones (its operand's own answer).
            (Op::Sub | Op::Max | Op::Min | Op::Round32 | Op::Arith32, _) => (zeros, false),
            (Op::Func2(_), _) => (zeros, all(Poly::is_finite)),
            (Op::Func(f, _), _) => match f {
                // Exact, and NaN only for a NaN operand.
                Func::Abs => (zeros, all(Poly::is_finite)),
                // Bounded by 1, and NaN only for a NaN operand.
                Func::Tanh | Func::Erf => (zeros, all(Poly::is_finite)),
                // sqrt(±0) = ±0; sqrt(-1) is NaN.
                Func::Sqrt => (zeros, false),
                // exp(0) = 1, log(0) = -inf; either overflows.
                Func::Exp | Func::Log => (false, false),
            },
        };
        let binary32 = match op {
            Op::Round32 | Op::Func(_, ElemType::F32) | Op::Arith32 => true,
            Op::Func2(_) => all(Poly::is_binary32),
            Op::Sub | Op::Div | Op::Max | Op::Min | Op::Func(_, ElemType::F64) => false,
        };
        let mut h = DefaultHasher::new();
        (2u8, op).hash(&mut h);
        for a in args {
            a.hash.hash(&mut h);
        }
        OpNode {
            op,
            args: args.iter().map(|&a| a.clone()).collect(),
            hash: h.finish(),
            depth: 1 + args.iter().map(|a| a.depth).max().unwrap_or(0),
            zero,
            finite: finite || zero,
            binary32,
        }
    }
}

impl PartialEq for Atom {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Atom {}

impl PartialOrd for Atom {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Literals first (by value), then leaves (by kind, variable, index), then operations (by
/// operator, then by hash, structure only to break ties): readable and cheap.
impl Ord for Atom {
    fn cmp(&self, o: &Self) -> Ordering {
        match (self, o) {
            (Atom::Lit(a), Atom::Lit(b)) => a.total_cmp(b),
            (Atom::Leaf(a), Atom::Leaf(b)) => {
                if Arc::ptr_eq(a, b) {
                    Ordering::Equal
                } else {
                    a.cmp(b)
                }
            }
            (Atom::Op(a), Atom::Op(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Ordering::Equal;
                }
                a.op.cmp(&b.op)
                    .then(a.hash.cmp(&b.hash))
                    .then_with(|| a.args.cmp(&b.args))
            }
            _ => self.rank().cmp(&o.rank()),
        }
    }
}

impl PartialEq for Poly {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Poly {}

impl PartialOrd for Poly {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Poly {
    fn cmp(&self, o: &Self) -> Ordering {
        if std::ptr::eq(self, o) {
            return Ordering::Equal;
        }
        self.hash
            .cmp(&o.hash)
            .then_with(|| self.monos.cmp(&o.monos))
    }
}

impl Poly {
    /// Builds the canonical form of a sum of monomials whose atoms are already sorted, or
    /// `None` when it is over the limits.
    fn new(mut monos: Vec<Mono>) -> Option<Poly> {
        let lim = limits();
        let atoms: usize = monos.iter().map(Vec::len).sum();
        if atoms > lim.max_atoms || !charge(atoms as u64 + 1) {
            return None;
        }
        monos.sort();
        let depth = monos
            .iter()
            .flat_map(|m| m.iter().map(Atom::depth))
            .max()
            .unwrap_or(0);
        if depth > lim.max_depth {
            return None;
        }
        let mut h = DefaultHasher::new();
        for m in &monos {
            m.len().hash(&mut h);
            for a in m {
                a.hash().hash(&mut h);
            }
        }
        // Every monomial has a zero factor and only finite factors (0 · ∞ is NaN).
        let zero = !monos.is_empty()
            && monos
                .iter()
                .all(|m| m.iter().any(Atom::is_zero) && m.iter().all(Atom::is_finite));
        Some(Poly {
            monos,
            hash: h.finish(),
            depth,
            atoms,
            zero,
        })
    }

    /// Exactly zero whatever the leaves hold ([`Sym::is_zero`]).
    fn is_zero(&self) -> bool {
        self.zero
    }

    /// The term's one atom, if it is a single atom.
    fn single_atom(&self) -> Option<&Atom> {
        match self.monos.as_slice() {
            [m] => match m.as_slice() {
                [a] => Some(a),
                _ => None,
            },
            _ => None,
        }
    }

    /// Finite whatever the leaves hold, as far as cheaply known: a zero, or a finite atom (a sum
    /// or product of finite numbers may overflow).
    fn is_finite(&self) -> bool {
        self.zero || self.single_atom().is_some_and(Atom::is_finite)
    }

    /// A binary32 number whatever the leaves hold: a single atom that is one.
    fn is_binary32(&self) -> bool {
        self.single_atom().is_some_and(Atom::is_binary32)
    }

    fn finite_nonzero_literal(&self) -> bool {
        matches!(self.single_atom(), Some(Atom::Lit(x)) if x.is_finite() && *x != 0.0)
    }
}

fn merge_sorted(a: &[Atom], b: &[Atom]) -> Mono {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i].clone());
            i += 1;
        } else {
            out.push(b[j].clone());
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

fn sum(p: &Poly, q: &Poly) -> Option<Poly> {
    if p.atoms + q.atoms > limits().max_atoms {
        return None;
    }
    let mut monos = Vec::with_capacity(p.monos.len() + q.monos.len());
    monos.extend(p.monos.iter().cloned());
    monos.extend(q.monos.iter().cloned());
    Poly::new(monos)
}

fn product(p: &Poly, q: &Poly) -> Option<Poly> {
    // Every monomial of p meets every monomial of q: bound the result before building it.
    let atoms =
        (p.atoms as u128) * (q.monos.len() as u128) + (q.atoms as u128) * (p.monos.len() as u128);
    if atoms > limits().max_atoms as u128 {
        return None;
    }
    let mut monos = Vec::with_capacity(p.monos.len() * q.monos.len());
    for a in &p.monos {
        for b in &q.monos {
            monos.push(merge_sorted(a, b));
        }
    }
    Poly::new(monos)
}

/// The atom `op(args)` (`None` when nested too deep or out of fuel).
fn operation(op: Op, args: &[&Arc<Poly>]) -> Option<Poly> {
    Poly::new(vec![vec![Atom::Op(Arc::new(OpNode::new(op, args)))]])
}

/// The binary32 sum or product (`combine`: [`sum`] or [`product`]) of two binary32 terms: the
/// atom `f32{P}` whose polynomial `P` is `combine` of the operands' polynomials, an operand
/// `f32{Q}` giving `Q` and any other single atom itself. So binary32 `+` and `*` are
/// associative, commutative and distributive among themselves (spec/values.md,
/// "Reassociation") and never mix with binary64 ones: `f32{..}` is an atom to binary64
/// arithmetic, and a rounding of binary64 arithmetic (`f32 e`, printed `f32(..)`) is an atom to
/// binary32 arithmetic. An operand that is not a single atom is not a binary32 number; it
/// enters as the number it rounds to, `f32(..)`, so both sides of a comparison build the same
/// term from it.
fn arith32(
    p: &Arc<Poly>,
    q: &Arc<Poly>,
    combine: fn(&Poly, &Poly) -> Option<Poly>,
) -> Option<Poly> {
    let inner = |p: &Arc<Poly>| -> Option<Arc<Poly>> {
        Some(match p.single_atom() {
            Some(Atom::Op(o)) if o.op == Op::Arith32 => o.args[0].clone(),
            Some(_) => p.clone(),
            None => Arc::new(operation(Op::Round32, &[p])?),
        })
    };
    let (p, q) = (inner(p)?, inner(q)?);
    let r = Arc::new(combine(&p, &q)?);
    operation(Op::Arith32, &[&r])
}

impl Sym {
    fn atom(a: Atom) -> Sym {
        match Poly::new(vec![vec![a]]) {
            Some(p) => Sym::Term(Arc::new(p)),
            None => Sym::TooLarge,
        }
    }

    /// The caller's value of the input cell `var[index]` (1-based).
    pub fn input(var: &str, index: Vec<u64>) -> Sym {
        Sym::leaf(LeafKind::Input, var, index)
    }

    /// Unspecified content of the cell `var[index]` (1-based).
    pub fn unspecified(var: &str, index: Vec<u64>) -> Sym {
        Sym::leaf(LeafKind::Unspecified, var, index)
    }

    fn leaf(kind: LeafKind, var: &str, index: Vec<u64>) -> Sym {
        Sym::atom(Atom::Leaf(Arc::new(Leaf {
            kind,
            var: var.to_string(),
            index,
        })))
    }

    pub fn is_undefined(&self) -> bool {
        matches!(self, Sym::Undefined)
    }

    pub fn is_too_large(&self) -> bool {
        matches!(self, Sym::TooLarge)
    }

    /// Provably `+0` or `−0` whatever the leaves hold: every monomial has a zero factor and only
    /// finite factors (`0 · ∞` is NaN), where `a − b`, `max`, `min`, `maximum`, `minimum` of
    /// zeros, `0 / c` for a finite non-zero literal `c`, and `f32`, `abs`, `sqrt`, `tanh`, `erf`
    /// (either type) of a zero are zero (`exp` and `log` of anything are not). A factor is
    /// finite if it is zero, a finite literal, or `abs`, `tanh`, `erf`, `maximum`, `minimum` of
    /// finite operands (a finite single atom or a zero): every other operation may overflow or
    /// give NaN.
    pub fn is_zero(&self) -> bool {
        match self {
            Sym::Term(p) => p.is_zero(),
            Sym::Undefined | Sym::TooLarge => false,
        }
    }

    /// Number of monomials (0 for `•` and for a term over the limits).
    pub fn monomials(&self) -> usize {
        match self {
            Sym::Term(p) => p.monos.len(),
            _ => 0,
        }
    }

    /// `f` of the operands' terms: `•` if any operand is `•`, else `TooLarge` if any is, or once
    /// the fuel is spent, or if `f` finds the result over the limits.
    fn lift<const N: usize>(
        args: [&Sym; N],
        f: impl FnOnce([&Arc<Poly>; N]) -> Option<Poly>,
    ) -> Sym {
        if args.iter().any(|s| s.is_undefined()) {
            return Sym::Undefined;
        }
        // Once the fuel is spent every operation is cheap.
        if args.iter().any(|s| s.is_too_large()) || SPENT.with(Cell::get) > limits().fuel {
            return Sym::TooLarge;
        }
        let terms = args.map(|s| match s {
            Sym::Term(p) => p,
            Sym::Undefined | Sym::TooLarge => unreachable!("checked above"),
        });
        match f(terms) {
            Some(r) => Sym::Term(Arc::new(r)),
            None => Sym::TooLarge,
        }
    }

    fn combine(&self, b: &Sym, f: impl FnOnce(&Arc<Poly>, &Arc<Poly>) -> Option<Poly>) -> Sym {
        Sym::lift([self, b], |[p, q]| f(p, q))
    }
}

impl PartialEq for Sym {
    /// Equality of normal forms. `TooLarge` equals nothing, not even itself.
    fn eq(&self, o: &Self) -> bool {
        match (self, o) {
            (Sym::Undefined, Sym::Undefined) => true,
            (Sym::Term(a), Sym::Term(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        }
    }
}

impl Domain for Sym {
    /// A literal; a NaN (never written in a program) is read as `•`, as at the boundary.
    fn lit(x: f64) -> Self {
        if x.is_nan() {
            Sym::Undefined
        } else {
            Sym::atom(Atom::Lit(x))
        }
    }
    fn undefined() -> Self {
        Sym::Undefined
    }
    fn add(&self, b: &Self) -> Self {
        self.combine(b, |p, q| sum(p, q))
    }
    fn sub(&self, b: &Self) -> Self {
        self.combine(b, |p, q| operation(Op::Sub, &[p, q]))
    }
    fn mul(&self, b: &Self) -> Self {
        self.combine(b, |p, q| product(p, q))
    }
    fn div(&self, b: &Self) -> Self {
        self.combine(b, |p, q| operation(Op::Div, &[p, q]))
    }
    fn max(&self, b: &Self) -> Self {
        self.combine(b, |p, q| operation(Op::Max, &[p, q]))
    }
    fn min(&self, b: &Self) -> Self {
        self.combine(b, |p, q| operation(Op::Min, &[p, q]))
    }
    /// The identity for `f64`. For `f32`, the term itself where it is a single atom known to be
    /// a binary32 number (a literal exactly representable in binary32, an `f32(..)`, a binary32
    /// function, a `maximum`/`minimum` of such operands): rounding a binary32 number to binary32
    /// is exact. Anything else is the uninterpreted atom `f32(x)`.
    fn round(&self, t: ElemType) -> Self {
        match (t, self) {
            (ElemType::F64, _) => self.clone(),
            (ElemType::F32, Sym::Term(p)) if p.is_binary32() => self.clone(),
            (ElemType::F32, _) => Sym::lift([self], |[p]| operation(Op::Round32, &[p])),
        }
    }
    /// Binary32 `+` and `*` are the atom `f32{P}` of their polynomial (the module
    /// documentation): they reassociate among themselves, as binary64 ones do, but never with
    /// binary64 arithmetic.
    /// Every other operation, and every binary64 one, is the default: the binary64 operation
    /// rounded to `t` (`f32(a - b)`, `f32(a / b)`).
    fn arith(op: BinOp, t: ElemType, a: &Self, b: &Self) -> Self {
        match (t, op) {
            (ElemType::F32, BinOp::Add) => a.combine(b, |p, q| arith32(p, q, sum)),
            (ElemType::F32, BinOp::Mul) => a.combine(b, |p, q| arith32(p, q, product)),
            _ => Self::binary(op, a, b).round(t),
        }
    }
    /// The uninterpreted atom `f(a)` in type `t`, printed `exp(a)` for `f64` and `expf(a)` for
    /// `f32`: equal only to the same function in the same type of an equal operand (no
    /// simplification, not even `abs(abs(a))`).
    fn func(f: Func, t: ElemType, a: &Self) -> Self {
        Sym::lift([a], |[p]| operation(Op::Func(f, t), &[p]))
    }
    /// The uninterpreted atom `maximum(a, b)` or `minimum(a, b)`, operands in order: other atoms
    /// than `redmax`'s `max(a, b)` and `redmin`'s `min(a, b)`, which order zeros otherwise.
    fn func2(f: Func2, a: &Self, b: &Self) -> Self {
        a.combine(b, |p, q| operation(Op::Func2(f), &[p, q]))
    }
}

// ---------------------------------------------------------------------------------------------
// Printing: `A[1,2]*B[2,1] + 2*C[1]`, `(x - y)`, `(x / y)`, `max(x, y)`, `f32(x)`, `exp(x)`,
// `expf(x)`, `maximum(x, y)`, `•`. Output longer than a few thousand characters is cut with a
// note (terms can have thousands of monomials).

/// Longest printed form of one term.
const MAX_PRINTED: usize = 4000;

struct Printer {
    out: String,
    cut: bool,
}

impl Printer {
    fn push(&mut self, s: &str) {
        if self.out.len() + s.len() > MAX_PRINTED {
            self.cut = true;
        } else {
            self.out.push_str(s);
        }
    }

    fn lit(&mut self, x: f64, factor: bool) {
        let s = if x == x.trunc() && x.abs() < 1e15 && !(x == 0.0 && x.is_sign_negative()) {
            format!("{}", x as i64)
        } else if x.is_infinite() {
            if x > 0.0 { "inf" } else { "-inf" }.to_string()
        } else {
            format!("{x:?}")
        };
        if factor && s.starts_with('-') {
            self.push(&format!("({s})"));
        } else {
            self.push(&s);
        }
    }

    fn atom(&mut self, a: &Atom, factor: bool) {
        if self.cut {
            return;
        }
        match a {
            Atom::Lit(x) => self.lit(*x, factor),
            Atom::Leaf(l) => {
                let idx: Vec<String> = l.index.iter().map(u64::to_string).collect();
                let mark = if l.kind == LeafKind::Unspecified {
                    "?"
                } else {
                    ""
                };
                self.push(&format!("{mark}{}[{}]", l.var, idx.join(",")));
            }
            Atom::Op(o) if o.op == Op::Arith32 => {
                self.push("f32{");
                self.poly(&o.args[0], false);
                self.push("}");
            }
            Atom::Op(o) => match (o.op.infix(), o.args.as_slice()) {
                (Some(sym), [a, b]) => {
                    self.push("(");
                    self.poly(a, true);
                    self.push(sym);
                    self.poly(b, true);
                    self.push(")");
                }
                _ => {
                    self.push(&format!("{}(", o.op));
                    for (i, a) in o.args.iter().enumerate() {
                        if i > 0 {
                            self.push(", ");
                        }
                        self.poly(a, false);
                    }
                    self.push(")");
                }
            },
        }
    }

    /// `tight`: the polynomial is an operand of `-` or `/`, so anything but a single atom is
    /// parenthesised.
    fn poly(&mut self, p: &Poly, tight: bool) {
        let wrap = tight && (p.monos.len() > 1 || p.monos.first().is_some_and(|m| m.len() > 1));
        if wrap {
            self.push("(");
        }
        for (i, m) in p.monos.iter().enumerate() {
            if self.cut {
                break;
            }
            if i > 0 {
                self.push(" + ");
            }
            for (k, a) in m.iter().enumerate() {
                if k > 0 {
                    self.push("*");
                }
                self.atom(a, m.len() > 1 || p.monos.len() > 1);
            }
        }
        if wrap {
            self.push(")");
        }
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sym::Undefined => f.write_str("•"),
            Sym::TooLarge => f.write_str("<term over the size limit>"),
            Sym::Term(p) => {
                let mut pr = Printer {
                    out: String::new(),
                    cut: false,
                };
                pr.poly(p, false);
                f.write_str(&pr.out)?;
                if pr.cut {
                    write!(
                        f,
                        " ... (cut; {} monomials, {} atoms in all)",
                        p.monos.len(),
                        p.atoms
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(i: u64) -> Sym {
        Sym::input("x", vec![i])
    }

    fn lit(v: f64) -> Sym {
        Sym::lit(v)
    }

    #[test]
    fn a_long_fold_of_zeros_is_zero_in_linear_time() {
        // The padding cell of `redmax` over 200 padding zeros: deciding that it is zero once
        // took time exponential in the nesting (2^200 steps here).
        let (max, min) = (0..200).fold((lit(0.0), lit(-0.0)), |(a, b), _| {
            (a.max(&lit(0.0)), b.min(&lit(-0.0)).mul(&lit(2.0)))
        });
        assert!(max.is_zero() && min.is_zero());
        assert!(!max.max(&x(1)).is_zero());
        assert!(!max.mul(&lit(f64::INFINITY)).is_zero());
    }

    #[test]
    fn sums_and_products_are_normalised_by_ac_and_distributivity() {
        let (a, b, c) = (x(1), x(2), x(3));
        assert_eq!(a.add(&b).add(&c), c.add(&a.add(&b)));
        assert_eq!(a.mul(&b).mul(&c), b.mul(&c.mul(&a)));
        // (a + b) * c = a*c + b*c
        assert_eq!(a.add(&b).mul(&c), c.mul(&a).add(&b.mul(&c)));
        assert_eq!(a.add(&b).mul(&c).to_string(), "x[1]*x[3] + x[2]*x[3]");
        // Nothing else: no like-term merging, no constant folding, no cancellation.
        assert_ne!(a.add(&a), lit(2.0).mul(&a));
        assert_ne!(lit(2.0).mul(&lit(3.0)), lit(6.0));
        assert_ne!(a.sub(&a), lit(0.0));
        assert_ne!(a.sub(&b), b.sub(&a));
        assert_ne!(a.max(&b), b.max(&a));
        assert_ne!(a.div(&b).mul(&b), a);
        // -0 and +0 are different literals.
        assert_ne!(lit(-0.0), lit(0.0));
    }

    #[test]
    fn undefined_absorbs_and_wins_over_too_large() {
        let a = x(1);
        for op in [Sym::add, Sym::sub, Sym::mul, Sym::div, Sym::max, Sym::min] {
            assert!(op(&a, &Sym::Undefined).is_undefined());
            assert!(op(&Sym::Undefined, &a).is_undefined());
            assert!(op(&Sym::TooLarge, &Sym::Undefined).is_undefined());
            assert!(op(&Sym::TooLarge, &a).is_too_large());
        }
        assert_ne!(Sym::TooLarge, Sym::TooLarge);
        assert_eq!(Sym::Undefined, Sym::Undefined);
    }

    #[test]
    fn zero_terms() {
        let z = lit(0.0);
        assert!(z.is_zero() && lit(-0.0).is_zero());
        assert!(z.add(&z).is_zero());
        assert!(lit(3.0).mul(&z).is_zero());
        assert!(z.div(&lit(2.0)).is_zero());
        assert!(z.sub(&z).max(&z).is_zero());
        // A cell of unknown value times zero may be NaN (0 · ∞); 0 / 0 is NaN.
        assert!(!x(1).mul(&z).is_zero());
        assert!(!z.div(&z).is_zero());
        assert!(!lit(f64::INFINITY).mul(&z).is_zero());
        assert!(!x(1).is_zero() && !Sym::Undefined.is_zero());
    }

    #[test]
    fn printing() {
        let t = lit(-2.0)
            .mul(&x(1))
            .add(&x(2).sub(&x(3).add(&x(1))))
            .add(&x(2).max(&lit(1.5)));
        assert_eq!(
            t.to_string(),
            "(-2)*x[1] + (x[2] - (x[1] + x[3])) + max(x[2], 1.5)"
        );
        assert_eq!(Sym::unspecified("C", vec![1, 2]).to_string(), "?C[1,2]");
        assert_eq!(Sym::Undefined.to_string(), "•");
        assert_eq!(lit(-0.0).to_string(), "-0.0");
    }

    const F32: ElemType = ElemType::F32;
    const F64: ElemType = ElemType::F64;

    fn f32(a: &Sym) -> Sym {
        a.round(F32)
    }

    fn exp32(a: &Sym) -> Sym {
        Sym::func(Func::Exp, F32, a)
    }

    fn maximum(a: &Sym, b: &Sym) -> Sym {
        Sym::func2(Func2::Max, a, b)
    }

    fn minimum(a: &Sym, b: &Sym) -> Sym {
        Sym::func2(Func2::Min, a, b)
    }

    #[test]
    fn binary32_sums_and_products_reassociate_among_themselves_only() {
        let add = |a: &Sym, b: &Sym| Sym::arith(BinOp::Add, F32, a, b);
        let mul = |a: &Sym, b: &Sym| Sym::arith(BinOp::Mul, F32, a, b);
        let (a, b, c) = (x(1), x(2), x(3));
        // In order, and in lanes.
        let left = add(&add(&mul(&a, &b), &mul(&b, &c)), &mul(&c, &a));
        let lanes = add(&mul(&b, &c), &add(&mul(&a, &c), &mul(&b, &a)));
        assert_eq!(left, lanes);
        assert_eq!(left.to_string(), "f32{x[1]*x[2] + x[1]*x[3] + x[2]*x[3]}");
        // A binary32 sum is a binary32 number; rounding it again is exact.
        assert_eq!(f32(&left), left);
        // Distributive within the type.
        assert_eq!(mul(&add(&a, &b), &c), add(&mul(&a, &c), &mul(&b, &c)));
        // Not the rounding of the binary64 sum, nor the binary64 sum.
        assert_ne!(add(&a, &b), f32(&a.add(&b)));
        assert_ne!(add(&a, &b), a.add(&b));
        // The types do not mix: (a +32 b) +64 c is not a +32 (b +32 c), and a binary64 sum
        // enters binary32 arithmetic as its rounding.
        assert_ne!(add(&a, &b).add(&c), add(&a, &add(&b, &c)));
        let r = add(&a.add(&b), &c);
        assert_eq!(r, add(&c, &f32(&a.add(&b))));
        assert_eq!(r.to_string(), "f32{x[3] + f32(x[1] + x[2])}");
        // Subtraction and division stay roundings of uninterpreted atoms.
        assert_eq!(Sym::arith(BinOp::Sub, F32, &a, &b), f32(&a.sub(&b)));
        // Binary64 arithmetic is the plain one.
        assert_eq!(Sym::arith(BinOp::Add, F64, &a, &b), a.add(&b));
        // Zeros: a binary32 product with a zero literal and finite factors is zero.
        assert!(mul(&lit(0.0), &lit(2.0)).is_zero());
        assert!(!mul(&lit(0.0), &a).is_zero());
        // `•` absorbs, `TooLarge` stays too large.
        assert!(add(&a, &Sym::Undefined).is_undefined());
        assert!(mul(&Sym::TooLarge, &a).is_too_large());
    }

    #[test]
    fn round32_is_the_term_itself_exactly_where_it_is_a_binary32_number() {
        // Representable literals, signed zeros and infinities included.
        for v in [
            1.5,
            -2.0,
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.1f32 as f64,
        ] {
            assert_eq!(f32(&lit(v)), lit(v), "{v}");
        }
        assert_eq!(f32(&lit(-0.0)).to_string(), "-0.0");
        // 0.1 and 1e300 are not binary32 numbers: their rounding is an atom.
        assert_ne!(f32(&lit(0.1)), lit(0.1));
        assert_eq!(f32(&lit(0.1)).to_string(), "f32(0.1)");
        assert_ne!(f32(&lit(1e300)), lit(1e300));
        assert_ne!(f32(&lit(0.1)), lit(0.1f32 as f64));
        // Idempotent.
        let r = f32(&x(1).add(&x(2)));
        assert_eq!(r.to_string(), "f32(x[1] + x[2])");
        assert_eq!(f32(&r), r);
        assert_eq!(f32(&f32(&r)), r);
        // binary32 functions return binary32 numbers; binary64 ones do not.
        let e = exp32(&x(1));
        assert_eq!(f32(&e), e);
        let e64 = Sym::func(Func::Exp, F64, &x(1));
        assert_ne!(f32(&e64), e64);
        for f in Func::ALL {
            let y = Sym::func(f, F32, &r);
            assert_eq!(f32(&y), y, "{f:?}");
        }
        // maximum/minimum return an operand: binary32 where both operands are.
        let m = maximum(&f32(&x(1)), &exp32(&x(2)));
        assert_eq!(f32(&m), m);
        let m = minimum(&lit(2.0), &maximum(&f32(&x(1)), &lit(-0.0)));
        assert_eq!(f32(&m), m);
        let m = maximum(&x(1), &x(2));
        assert_ne!(f32(&m), m);
        assert_eq!(f32(&m).to_string(), "f32(maximum(x[1], x[2]))");
        let m = maximum(&f32(&x(1)), &lit(0.1));
        assert_ne!(f32(&m), m);
        // Nothing is known of a leaf, nor of a sum, product or other operation of binary32
        // numbers, nor of redmax's `max` (only `maximum` is recognised).
        assert_ne!(f32(&x(1)), x(1));
        let (a, b) = (f32(&x(1)), f32(&x(2)));
        for t in [
            a.add(&b),
            a.mul(&b),
            a.sub(&b),
            a.div(&b),
            a.max(&b),
            a.min(&b),
        ] {
            assert_ne!(f32(&t), t, "{t}");
        }
        // Rounding to binary64 is the identity.
        assert_eq!(lit(0.1).round(F64), lit(0.1));
        assert_eq!(x(1).round(F64), x(1));
    }

    #[test]
    fn functions_and_maximum_are_uninterpreted() {
        let (a, b) = (x(1), x(2));
        // Operands in order; not redmax's/redmin's fold steps.
        assert_ne!(maximum(&a, &b), maximum(&b, &a));
        assert_ne!(maximum(&a, &b), a.max(&b));
        assert_ne!(minimum(&a, &b), a.min(&b));
        assert_ne!(maximum(&a, &b), minimum(&a, &b));
        assert_eq!(maximum(&a, &b), maximum(&x(1), &x(2)));
        assert_eq!(
            maximum(&a.add(&b), &b),
            maximum(&b.add(&a), &b),
            "operands are normalised"
        );
        // A function: the same function, in the same type, of equal operands.
        let fx = |f, t, s: &Sym| Sym::func(f, t, s);
        assert_ne!(fx(Func::Exp, F64, &a), fx(Func::Exp, F32, &a));
        assert_ne!(fx(Func::Exp, F64, &a), fx(Func::Log, F64, &a));
        assert_ne!(fx(Func::Exp, F64, &a), fx(Func::Exp, F64, &b));
        assert_eq!(
            fx(Func::Sqrt, F32, &a.mul(&b)),
            fx(Func::Sqrt, F32, &b.mul(&a))
        );
        for f in Func::ALL {
            for g in Func::ALL {
                for (t, u) in [(F64, F64), (F32, F32), (F64, F32)] {
                    assert_eq!(fx(f, t, &a) == fx(g, u, &a), f == g && t == u);
                }
            }
        }
        // No simplification: abs(abs(a)) is not abs(a), exp(log(a)) is not a.
        let abs = fx(Func::Abs, F64, &a);
        assert_ne!(fx(Func::Abs, F64, &abs), abs);
        assert_ne!(fx(Func::Exp, F64, &fx(Func::Log, F64, &a)), a);
        // Atoms of sums and products like any other.
        let e = fx(Func::Exp, F64, &a);
        assert_eq!(e.add(&b).mul(&e), e.mul(&e).add(&b.mul(&e)));
    }

    #[test]
    fn undefined_absorbs_the_new_operations_and_wins_over_too_large() {
        let (u, big, a) = (Sym::Undefined, Sym::TooLarge, x(1));
        assert!(u.round(F32).is_undefined() && u.round(F64).is_undefined());
        assert!(big.round(F32).is_too_large());
        for f in Func::ALL {
            for t in ElemType::ALL {
                assert!(Sym::func(f, t, &u).is_undefined());
                assert!(Sym::func(f, t, &big).is_too_large());
            }
        }
        for f in Func2::ALL {
            assert!(Sym::func2(f, &u, &a).is_undefined());
            assert!(Sym::func2(f, &a, &u).is_undefined());
            assert!(Sym::func2(f, &big, &u).is_undefined());
            assert!(Sym::func2(f, &u, &big).is_undefined());
            assert!(Sym::func2(f, &big, &a).is_too_large());
            assert!(Sym::func2(f, &a, &big).is_too_large());
        }
    }

    #[test]
    fn zero_terms_through_the_new_operations() {
        let z = lit(0.0).mul(&lit(3.0));
        let fx = |f, t, s: &Sym| Sym::func(f, t, s);
        assert!(z.is_zero());
        assert!(f32(&z).is_zero());
        assert!(f32(&z.add(&lit(-0.0))).is_zero());
        for t in ElemType::ALL {
            for f in [Func::Abs, Func::Sqrt, Func::Tanh, Func::Erf] {
                assert!(fx(f, t, &z).is_zero(), "{f:?} {t:?}");
                assert!(fx(f, t, &lit(-0.0)).is_zero(), "{f:?} {t:?}");
                // Not of a cell times zero (0 · ∞ is NaN), nor of a non-zero.
                assert!(!fx(f, t, &x(1).mul(&lit(0.0))).is_zero());
                assert!(!fx(f, t, &lit(1.0)).is_zero());
            }
            // exp 0 = 1, log 0 = -inf.
            assert!(!fx(Func::Exp, t, &z).is_zero());
            assert!(!fx(Func::Log, t, &z).is_zero());
        }
        assert!(maximum(&z, &z).is_zero() && minimum(&z, &lit(-0.0)).is_zero());
        assert!(!maximum(&z, &x(1)).is_zero() && !minimum(&lit(1.0), &z).is_zero());
        assert!(fx(Func::Sqrt, F32, &maximum(&f32(&z), &z)).is_zero());
        // A zero factor makes a monomial zero only if every other factor is finite.
        assert!(fx(Func::Tanh, F64, &lit(2.0)).mul(&z).is_zero());
        assert!(fx(Func::Erf, F32, &f32(&z)).mul(&z).is_zero());
        assert!(fx(Func::Abs, F64, &lit(-2.0)).mul(&z).is_zero());
        assert!(maximum(&lit(2.0), &lit(-1.0)).mul(&z).is_zero());
        // ... which is not known of tanh of a cell (NaN in, NaN out), of exp, log and sqrt
        // (overflow, log 0, sqrt -1), of a rounding (overflow), of abs or maximum of an infinity.
        assert!(!fx(Func::Tanh, F64, &x(1)).mul(&z).is_zero());
        assert!(!fx(Func::Exp, F64, &lit(1.0)).mul(&z).is_zero());
        assert!(!fx(Func::Log, F32, &lit(1.0)).mul(&z).is_zero());
        assert!(!fx(Func::Sqrt, F64, &lit(-1.0)).mul(&z).is_zero());
        assert!(!f32(&lit(1e300)).mul(&z).is_zero());
        assert!(!f32(&lit(1.0).add(&lit(2.0))).mul(&z).is_zero());
        assert!(!fx(Func::Abs, F64, &lit(f64::NEG_INFINITY))
            .mul(&z)
            .is_zero());
        assert!(!maximum(&lit(f64::INFINITY), &z).mul(&z).is_zero());
        assert!(!fx(Func::Tanh, F64, &lit(1.0).add(&lit(2.0)))
            .mul(&z)
            .is_zero());
    }

    #[test]
    fn shared_operands_are_decided_in_linear_time() {
        // maximum(m, m) nested 150 deep is a term of 2^150 nodes as a tree.
        let mut m = f32(&lit(0.0).mul(&lit(2.0)));
        for _ in 0..150 {
            m = maximum(&m, &m);
        }
        assert!(m.is_zero());
        assert_eq!(f32(&m), m);
        assert!(m.mul(&lit(0.0)).is_zero());
    }

    #[test]
    fn printing_the_new_operations() {
        let (a, b) = (x(1), x(2));
        assert_eq!(f32(&a.mul(&b)).to_string(), "f32(x[1]*x[2])");
        let names = ["exp", "log", "sqrt", "tanh", "erf", "abs"];
        for (f, name) in Func::ALL.into_iter().zip(names) {
            assert_eq!(Sym::func(f, F64, &a).to_string(), format!("{name}(x[1])"));
            assert_eq!(Sym::func(f, F32, &a).to_string(), format!("{name}f(x[1])"));
        }
        assert_eq!(
            maximum(&a, &b.add(&a)).to_string(),
            "maximum(x[1], x[1] + x[2])"
        );
        assert_eq!(minimum(&lit(-1.0), &a).to_string(), "minimum(-1, x[1])");
        assert_eq!(a.max(&b).to_string(), "max(x[1], x[2])");
        let t = lit(2.0).mul(&exp32(&a.sub(&b))).add(&f32(&a.div(&b)));
        assert_eq!(t.to_string(), "2*expf((x[1] - x[2])) + f32((x[1] / x[2]))");
    }

    #[test]
    fn new_operations_respect_the_limits() {
        // Nesting 300 functions is over the default depth (200).
        let mut e = x(1);
        for _ in 0..300 {
            e = Sym::func(Func::Exp, F64, &e);
        }
        assert!(e.is_too_large());
        let mut e = x(1);
        for _ in 0..199 {
            e = Sym::func(Func::Exp, F32, &e);
        }
        assert!(!e.is_too_large());
        // Rounding a binary32 atom adds no depth; a rounding atom does.
        assert!(!f32(&e).is_too_large());
        assert!(Sym::func(Func::Log, F32, &Sym::func(Func::Exp, F32, &e)).is_too_large());
        let mut r = x(1);
        for _ in 0..300 {
            r = f32(&r.add(&x(2)));
        }
        assert!(r.is_too_large());
        let mut m = x(1);
        for _ in 0..300 {
            m = minimum(&m, &x(2));
        }
        assert!(m.is_too_large());
        // Fuel.
        let (r, exhausted) = with_limits(
            Limits {
                fuel: 50,
                ..Limits::default()
            },
            || (0..100).fold(x(1), |acc, _| maximum(&f32(&acc.add(&x(2))), &x(3))),
        );
        assert!(exhausted && r.is_too_large());
    }

    #[test]
    fn limits_give_too_large_instead_of_hanging() {
        // (x1 + x2)^20 has 2^20 monomials: over the default size bound long before that.
        let s = x(1).add(&x(2));
        let mut p = s.clone();
        for _ in 0..20 {
            p = p.mul(&s);
        }
        assert!(p.is_too_large());
        // Nesting uninterpreted operations is bounded too.
        let mut d = x(1);
        for _ in 0..1000 {
            d = d.div(&x(2));
        }
        assert!(d.is_too_large());
        // Fuel: a small budget runs out; outside it, the same work succeeds.
        let (r, exhausted) = with_limits(
            Limits {
                fuel: 50,
                ..Limits::default()
            },
            || (0..100).fold(x(1), |acc, i| acc.add(&x(i))),
        );
        assert!(exhausted && r.is_too_large());
        let r = (0..100).fold(x(1), |acc, i| acc.add(&x(i)));
        assert_eq!(r.monomials(), 101);
    }
}
