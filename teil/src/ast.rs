//! The abstract syntax tree shared by both surface syntaxes.
//!
//! The TeIL paper's prefix forms (`add A B`, `contr 2 3 e`) and the model-language report's infix
//! forms (`A + B`, `e .[2 3]`) parse into the same nodes: `A + B` and `add A B` are the same
//! [`ExprKind::Binary`]. Parentheses are kept as [`ExprKind::Paren`] because the typing rule
//! T-Paren and the equation for `(e)` exist in both papers, and because the teaching trace shows
//! them; structural comparison ([`Expr::same_as`]) looks through them.
//!
//! Positions written in the source (`red+ 2 e`, `.[2 3]`) are kept 1-based, exactly as written,
//! with their own spans, so that diagnostics can point at them. Nothing here is checked: only
//! [`crate::check()`] decides whether a program is well-typed.

use std::fmt;

/// A byte range into the source text. Chumsky spans are byte offsets, and so are ours.
pub type Span = std::ops::Range<usize>;

/// An identifier with the place it was written.
#[derive(Clone, Debug)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

impl Ident {
    pub fn new(name: impl Into<String>, span: Span) -> Self {
        Ident {
            name: name.into(),
            span,
        }
    }
}

/// A natural-number literal in a type or an operation argument (an extent, a 1-based position,
/// a slice index), with the place it was written.
#[derive(Clone, Copy, Debug)]
pub struct Nat {
    pub value: u64,
    pub span: (usize, usize),
}

impl Nat {
    pub fn new(value: u64, span: Span) -> Self {
        Nat {
            value,
            span: (span.start, span.end),
        }
    }

    pub fn span(&self) -> Span {
        self.span.0..self.span.1
    }
}

/// How a variable talks to the outside world (report §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Qualifier {
    Input,
    Output,
    InOut,
}

impl Qualifier {
    pub fn keyword(self) -> &'static str {
        match self {
            Qualifier::Input => "input",
            Qualifier::Output => "output",
            Qualifier::InOut => "inout",
        }
    }

    /// Whether the caller supplies the variable's initial contents.
    pub fn is_read(self) -> bool {
        matches!(self, Qualifier::Input | Qualifier::InOut)
    }

    /// Whether the caller receives the variable's final contents.
    pub fn is_written(self) -> bool {
        matches!(self, Qualifier::Output | Qualifier::InOut)
    }
}

/// The element type of a tensor (spec/typing.md, "Element types"): IEEE 754 binary64 (`f64`,
/// the default, written or not) or binary32 (`f32`). Every operation computes in its operands'
/// element type and rounds its result to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemType {
    #[default]
    F64,
    F32,
}

impl ElemType {
    pub const ALL: [ElemType; 2] = [ElemType::F64, ElemType::F32];

    /// The keyword, which names the type in declarations (`f32[3, 4]`) and the conversion to
    /// it (`f32 e`).
    pub fn keyword(self) -> &'static str {
        match self {
            ElemType::F64 => "f64",
            ElemType::F32 => "f32",
        }
    }

    /// The other element type: the one a conversion to `self` converts from.
    pub fn other(self) -> ElemType {
        match self {
            ElemType::F64 => ElemType::F32,
            ElemType::F32 => ElemType::F64,
        }
    }

    /// Rounds a binary64 value to this type (round to nearest, ties to even; beyond binary32's
    /// range to ±∞), returned as the binary64 value that holds it exactly. For `F64` the value
    /// itself. Every binary32 operation of TeIL is the exact binary64 operation rounded by this
    /// (exact for `+ - * /` and `sqrt`, whose binary64 results round to binary32 correctly:
    /// 53 ≥ 2·24 + 2, spec/values.md, "Binary32").
    pub fn round(self, v: f64) -> f64 {
        match self {
            ElemType::F64 => v,
            ElemType::F32 => v as f32 as f64,
        }
    }

    /// The size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            ElemType::F64 => 8,
            ElemType::F32 => 4,
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// `alloc x : [2, 3]`, `alloc x : f32[2, 3]` or `var x : [2 3]`, optionally qualified.
#[derive(Clone, Debug)]
pub struct Decl {
    pub qualifier: Option<Qualifier>,
    pub name: Ident,
    /// The element type; `f64` unless written.
    pub elem: ElemType,
    /// Where the element type was written (`f32`, `f64`), `None` for a bare `[...]`.
    pub elem_span: Option<Span>,
    pub extents: Vec<Nat>,
    pub span: Span,
}

impl Decl {
    pub fn shape(&self) -> Vec<u64> {
        self.extents.iter().map(|n| n.value).collect()
    }
}

/// `x = e`.
#[derive(Clone, Debug)]
pub struct Stmt {
    pub target: Ident,
    pub value: Expr,
    pub span: Span,
}

/// A whole program: declarations, then statements (both papers' program forms).
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub decls: Vec<Decl>,
    pub stmts: Vec<Stmt>,
}

/// Identifies one expression node inside a checked program; assigned by the checker, which
/// records each node's shape under it. Zero until the checker has numbered the tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub u32);

#[derive(Clone, Debug)]
pub struct Expr {
    pub id: ExprId,
    pub kind: ExprKind,
    pub span: Span,
}

/// The element-wise arithmetic operators (`add`/`+`, `sub`/`-`, `mul`/`*`, `div`/`/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    pub const ALL: [BinOp; 4] = [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div];

    pub fn prefix_keyword(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }
}

/// The element-wise functions of one operand (spec/semantics.md, "Functions"): each value is
/// the exact mathematical value rounded to nearest in the operand's element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Func {
    Exp,
    Log,
    Sqrt,
    Tanh,
    Erf,
    Abs,
}

impl Func {
    pub const ALL: [Func; 6] = [
        Func::Exp,
        Func::Log,
        Func::Sqrt,
        Func::Tanh,
        Func::Erf,
        Func::Abs,
    ];

    pub fn keyword(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Sqrt => "sqrt",
            Func::Tanh => "tanh",
            Func::Erf => "erf",
            Func::Abs => "abs",
        }
    }
}

/// The element-wise functions of two operands: `max e0 e1`, `min e0 e1` (typed like `+`).
/// A NaN operand gives NaN (as NumPy's `maximum`/`minimum`); zeros are ordered `-0 < +0` (IEEE
/// 754-2019's `maximum`/`minimum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Func2 {
    Max,
    Min,
}

impl Func2 {
    pub const ALL: [Func2; 2] = [Func2::Max, Func2::Min];

    pub fn keyword(self) -> &'static str {
        match self {
            Func2::Max => "max",
            Func2::Min => "min",
        }
    }
}

/// A numeric literal (spec/extensions.md, "Literals"): its text as written and its decimal
/// value rounded once to each element type (never binary32 through binary64). Which of the two
/// a program uses is the element type its context gives it (T-Lit).
#[derive(Clone, Debug)]
pub struct Literal {
    /// The decimal as written, with its sign (`-2.5`, `1e-3`).
    pub text: String,
    /// The decimal rounded to binary64.
    pub value: f64,
    /// The decimal rounded to binary32 (±∞ beyond its range: E0313 where it is used).
    pub single: f32,
}

impl Literal {
    /// The literal written `text` (an optional `-`, then a decimal as the lexer reads it), or
    /// `None` when it is not finite in binary64 (E0004).
    pub fn parse(text: &str) -> Option<Literal> {
        let value: f64 = text.parse().ok()?;
        let single: f32 = text.parse().ok()?;
        value.is_finite().then(|| Literal {
            text: text.to_string(),
            value,
            single,
        })
    }

    /// A literal for a binary64 value that was not written as a decimal (front ends, the
    /// fuzzer): its shortest decimal, which rounds back to `value`.
    pub fn from_f64(value: f64) -> Literal {
        let text = format!("{value:?}");
        let single = text.parse().unwrap_or(value as f32);
        Literal {
            text,
            value,
            single,
        }
    }

    /// The literal's value in element type `t`, as the binary64 value that holds it.
    pub fn in_type(&self, t: ElemType) -> f64 {
        match t {
            ElemType::F64 => self.value,
            ElemType::F32 => self.single as f64,
        }
    }
}

/// The reduction operators: `red+`, `red*`, `redmax`, `redmin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedOp {
    Sum,
    Product,
    Max,
    Min,
}

impl RedOp {
    pub const ALL: [RedOp; 4] = [RedOp::Sum, RedOp::Product, RedOp::Max, RedOp::Min];

    pub fn keyword(self) -> &'static str {
        match self {
            RedOp::Sum => "red+",
            RedOp::Product => "red*",
            RedOp::Max => "redmax",
            RedOp::Min => "redmin",
        }
    }
}

/// Expression forms. Each variant names its typing rule (spec/typing.md) and the equation that
/// gives its meaning (spec/semantics.md).
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// `x` — T-Var.
    Var(Ident),
    /// A numeric literal, a scalar of type `[]` whose element type its context gives it (an
    /// extension of both papers; spec/extensions.md) — T-Lit.
    Lit(Literal),
    /// `(e)` — T-Paren.
    Paren(Box<Expr>),
    /// `add e e`, `e + e`, ... — T-Add, T-Mul, T-Elem, T-SMul, T-SDiv.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `prod e e`, `e # e` — T-Prod.
    Prod(Box<Expr>, Box<Expr>),
    /// `red+ i e`, `red* i e`, `redmax i e`, `redmin i e` — T-Red.
    Reduce(RedOp, Nat, Box<Expr>),
    /// `transp i j e`, `e ^[i j]` — T-Transp.
    Transp(Nat, Nat, Box<Expr>),
    /// `diag i j e` — T-Diag.
    Diag(Nat, Nat, Box<Expr>),
    /// `contr i j e`, `e .[i j]` — T-Contr.
    Contr(Nat, Nat, Box<Expr>),
    /// `expa i n e` — T-Expa.
    Expa(Nat, Nat, Box<Expr>),
    /// `proj i m e` — T-Proj.
    Proj(Nat, Nat, Box<Expr>),
    /// `exp e`, `log e`, `sqrt e`, `tanh e`, `erf e`, `abs e` — T-Func.
    Func(Func, Box<Expr>),
    /// `max e0 e1`, `min e0 e1` — T-Func2.
    Func2(Func2, Box<Expr>, Box<Expr>),
    /// `f32 e`, `f64 e`: conversion to the other element type — T-Conv.
    Convert(ElemType, Box<Expr>),
    /// Stands in for an expression that did not parse; its error was already reported.
    Error,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Expr {
            id: ExprId::default(),
            kind,
            span,
        }
    }

    /// The operands of this node, left to right.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error => vec![],
            ExprKind::Paren(e)
            | ExprKind::Reduce(_, _, e)
            | ExprKind::Transp(_, _, e)
            | ExprKind::Diag(_, _, e)
            | ExprKind::Contr(_, _, e)
            | ExprKind::Expa(_, _, e)
            | ExprKind::Proj(_, _, e)
            | ExprKind::Func(_, e)
            | ExprKind::Convert(_, e) => vec![e],
            ExprKind::Binary(_, a, b) | ExprKind::Prod(a, b) | ExprKind::Func2(_, a, b) => {
                vec![a, b]
            }
        }
    }

    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Error => vec![],
            ExprKind::Paren(e)
            | ExprKind::Reduce(_, _, e)
            | ExprKind::Transp(_, _, e)
            | ExprKind::Diag(_, _, e)
            | ExprKind::Contr(_, _, e)
            | ExprKind::Expa(_, _, e)
            | ExprKind::Proj(_, _, e)
            | ExprKind::Func(_, e)
            | ExprKind::Convert(_, e) => vec![e],
            ExprKind::Binary(_, a, b) | ExprKind::Prod(a, b) | ExprKind::Func2(_, a, b) => {
                vec![a, b]
            }
        }
    }

    /// Looks through any number of parentheses.
    pub fn strip_parens(&self) -> &Expr {
        let mut e = self;
        while let ExprKind::Paren(inner) = &e.kind {
            e = inner;
        }
        e
    }

    /// Structural equality: ignores spans, node ids and parentheses. This is the equality under
    /// which `teil fmt` round-trips.
    pub fn same_as(&self, other: &Expr) -> bool {
        let (a, b) = (self.strip_parens(), other.strip_parens());
        let nat = |x: &Nat, y: &Nat| x.value == y.value;
        match (&a.kind, &b.kind) {
            (ExprKind::Var(x), ExprKind::Var(y)) => x.name == y.name,
            (ExprKind::Lit(x), ExprKind::Lit(y)) => {
                x.value.to_bits() == y.value.to_bits() && x.single.to_bits() == y.single.to_bits()
            }
            (ExprKind::Error, ExprKind::Error) => true,
            (ExprKind::Binary(o1, a1, b1), ExprKind::Binary(o2, a2, b2)) => {
                o1 == o2 && a1.same_as(a2) && b1.same_as(b2)
            }
            (ExprKind::Prod(a1, b1), ExprKind::Prod(a2, b2)) => a1.same_as(a2) && b1.same_as(b2),
            (ExprKind::Func(f1, e1), ExprKind::Func(f2, e2)) => f1 == f2 && e1.same_as(e2),
            (ExprKind::Func2(f1, a1, b1), ExprKind::Func2(f2, a2, b2)) => {
                f1 == f2 && a1.same_as(a2) && b1.same_as(b2)
            }
            (ExprKind::Convert(t1, e1), ExprKind::Convert(t2, e2)) => t1 == t2 && e1.same_as(e2),
            (ExprKind::Reduce(o1, i1, e1), ExprKind::Reduce(o2, i2, e2)) => {
                o1 == o2 && nat(i1, i2) && e1.same_as(e2)
            }
            (ExprKind::Transp(i1, j1, e1), ExprKind::Transp(i2, j2, e2))
            | (ExprKind::Diag(i1, j1, e1), ExprKind::Diag(i2, j2, e2))
            | (ExprKind::Contr(i1, j1, e1), ExprKind::Contr(i2, j2, e2))
            | (ExprKind::Expa(i1, j1, e1), ExprKind::Expa(i2, j2, e2))
            | (ExprKind::Proj(i1, j1, e1), ExprKind::Proj(i2, j2, e2)) => {
                std::mem::discriminant(&a.kind) == std::mem::discriminant(&b.kind)
                    && nat(i1, i2)
                    && nat(j1, j2)
                    && e1.same_as(e2)
            }
            _ => false,
        }
    }

    /// The number of nested nodes on the longest path from here to a leaf (a leaf has depth 1).
    pub fn depth(&self) -> usize {
        1 + self.children().iter().map(|c| c.depth()).max().unwrap_or(0)
    }

    /// Calls `f` on every node, parents before children.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        for c in self.children() {
            c.walk(f);
        }
    }

    /// Whether any variable named `name` is read by this expression.
    pub fn reads(&self, name: &str) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            if let ExprKind::Var(v) = &e.kind {
                found |= v.name == name;
            }
        });
        found
    }
}

impl Program {
    /// Structural equality of whole programs (see [`Expr::same_as`]).
    pub fn same_as(&self, other: &Program) -> bool {
        self.decls.len() == other.decls.len()
            && self.stmts.len() == other.stmts.len()
            && self.decls.iter().zip(&other.decls).all(|(a, b)| {
                a.qualifier == b.qualifier
                    && a.name.name == b.name.name
                    && a.elem == b.elem
                    && a.shape() == b.shape()
            })
            && self
                .stmts
                .iter()
                .zip(&other.stmts)
                .all(|(a, b)| a.target.name == b.target.name && a.value.same_as(&b.value))
    }

    /// Whether any declaration carries `input`, `output` or `inout` (report §5). Programs
    /// without qualifiers treat every variable as both read and written by the caller.
    pub fn uses_qualifiers(&self) -> bool {
        self.decls.iter().any(|d| d.qualifier.is_some())
    }

    pub fn decl(&self, name: &str) -> Option<&Decl> {
        self.decls.iter().find(|d| d.name.name == name)
    }
}

/// Writes a shape the way diagnostics and the spec do: `[3, 4]`, `[]` for a scalar.
pub struct ShapeDisplay<'a>(pub &'a [u64]);

impl fmt::Display for ShapeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}")?;
        }
        f.write_str("]")
    }
}
