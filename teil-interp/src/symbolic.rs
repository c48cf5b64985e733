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
//! - `-`, `/`, `max` and `min` are uninterpreted: an atom with its two (normalised) operands,
//!   in order. `a - b` is not `a + (-1) * b`, and `max(a, b)` is not `max(b, a)`.
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
use teil::ast::{ElemType, Func, Func2};

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

/// The uninterpreted binary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Sub,
    Div,
    Max,
    Min,
}

#[derive(Debug)]
struct OpNode {
    op: Op,
    a: Arc<Poly>,
    b: Arc<Poly>,
    hash: u64,
    depth: u32,
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

    /// Exactly zero (`+0` or `−0`) whatever the leaves hold.
    fn is_zero(&self) -> bool {
        match self {
            Atom::Lit(x) => *x == 0.0,
            Atom::Leaf(_) => false,
            Atom::Op(o) => match o.op {
                // 0 - 0, max(0, 0), min(0, 0) are zero.
                Op::Sub | Op::Max | Op::Min => o.a.is_zero() && o.b.is_zero(),
                // 0 / c is zero for a finite non-zero c (0 / 0 is NaN).
                Op::Div => o.a.is_zero() && o.b.finite_nonzero_literal(),
            },
        }
    }

    /// Whether the atom is exactly zero ([`Atom::is_zero`]) and whether it is finite whatever
    /// the leaves hold (so that multiplying it by zero gives zero), asking `is_zero` once: asking
    /// it again for finiteness would take time exponential in the nesting of
    /// `max(0, max(0, ...))`, the padding cell of a long `redmax` over a padded target.
    fn zero_finite(&self) -> (bool, bool) {
        let zero = self.is_zero();
        match self {
            Atom::Lit(x) => (zero, x.is_finite()),
            _ => (zero, zero),
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
                    .then_with(|| a.a.cmp(&b.a))
                    .then_with(|| a.b.cmp(&b.b))
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
        Some(Poly {
            monos,
            hash: h.finish(),
            depth,
            atoms,
        })
    }

    fn is_zero(&self) -> bool {
        !self.monos.is_empty()
            && self.monos.iter().all(|m| {
                let (mut zero, mut finite) = (false, true);
                for a in m {
                    let (z, f) = a.zero_finite();
                    zero |= z;
                    finite &= f;
                }
                zero && finite
            })
    }

    fn finite_nonzero_literal(&self) -> bool {
        matches!(self.monos.as_slice(), [m] if matches!(m.as_slice(), [Atom::Lit(x)] if x.is_finite() && *x != 0.0))
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

fn operation(op: Op, a: &Arc<Poly>, b: &Arc<Poly>) -> Option<Poly> {
    let depth = 1 + a.depth.max(b.depth);
    let node = OpNode {
        op,
        a: a.clone(),
        b: b.clone(),
        hash: hash_of((2u8, op, a.hash, b.hash)),
        depth,
    };
    Poly::new(vec![vec![Atom::Op(Arc::new(node))]])
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
    /// finite factors (`0 · ∞` is NaN), where `a − b`, `max`, `min` of zeros and `0 / c` for a
    /// finite non-zero literal `c` are zero.
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

    fn combine(&self, b: &Sym, f: impl FnOnce(&Arc<Poly>, &Arc<Poly>) -> Option<Poly>) -> Sym {
        match (self, b) {
            (Sym::Undefined, _) | (_, Sym::Undefined) => Sym::Undefined,
            (Sym::TooLarge, _) | (_, Sym::TooLarge) => Sym::TooLarge,
            (Sym::Term(p), Sym::Term(q)) => {
                // Once the fuel is spent every operation is cheap.
                if SPENT.with(Cell::get) > limits().fuel {
                    return Sym::TooLarge;
                }
                match f(p, q) {
                    Some(r) => Sym::Term(Arc::new(r)),
                    None => Sym::TooLarge,
                }
            }
        }
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
        self.combine(b, |p, q| operation(Op::Sub, p, q))
    }
    fn mul(&self, b: &Self) -> Self {
        self.combine(b, |p, q| product(p, q))
    }
    fn div(&self, b: &Self) -> Self {
        self.combine(b, |p, q| operation(Op::Div, p, q))
    }
    fn max(&self, b: &Self) -> Self {
        self.combine(b, |p, q| operation(Op::Max, p, q))
    }
    fn min(&self, b: &Self) -> Self {
        self.combine(b, |p, q| operation(Op::Min, p, q))
    }
    /// Terms are binary64's: a binary32 rounding, a function and `max`/`min` (whose zeros are
    /// ordered otherwise than `redmax`'s) are not modelled, and a term containing one is
    /// [`Sym::TooLarge`], equal to nothing. The C backend, the only user of symbolic
    /// evaluation, refuses programs with such operations before validating them.
    fn round(&self, t: ElemType) -> Self {
        match t {
            ElemType::F64 => self.clone(),
            ElemType::F32 => Sym::TooLarge,
        }
    }
    fn func(_: Func, _: ElemType, _: &Self) -> Self {
        Sym::TooLarge
    }
    fn func2(_: Func2, _: &Self, _: &Self) -> Self {
        Sym::TooLarge
    }
}

// ---------------------------------------------------------------------------------------------
// Printing: `A[1,2]*B[2,1] + 2*C[1]`, `(x - y)`, `(x / y)`, `max(x, y)`, `•`. Output longer than
// a few thousand characters is cut with a note (terms can have thousands of monomials).

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
            Atom::Op(o) => match o.op {
                Op::Sub | Op::Div => {
                    let sym = if o.op == Op::Sub { " - " } else { " / " };
                    self.push("(");
                    self.poly(&o.a, true);
                    self.push(sym);
                    self.poly(&o.b, true);
                    self.push(")");
                }
                Op::Max | Op::Min => {
                    self.push(if o.op == Op::Max { "max(" } else { "min(" });
                    self.poly(&o.a, false);
                    self.push(", ");
                    self.poly(&o.b, false);
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
