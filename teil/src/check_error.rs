//! The errors and warnings of the check phase as data, and the one place that turns them into
//! [`Diagnostic`]s.
//!
//! The checker (`check.rs`) only records what it found: spans, shapes, names, the typing
//! rule, and the suggestion it computed (a name, a transposition, a pair of positions); the
//! wording of every message, label, note, help and fix of the checker's codes (E0005 for
//! programs built without the parser, E0101 to E0310, W0001 to W0003) lives in the `#[error]`
//! attributes and in `From<CheckError> for Diagnostic` below.

use crate::ast::{BinOp, ElemType, Func2, RedOp, ShapeDisplay, Span};
use crate::diagnostic::{Code, Diagnostic, Edit, Fix, Severity};
use crate::limits::{MAX_DECL_ELEMENTS, MAX_EXPR_DEPTH, MAX_RANK};
use std::fmt;

/// A tensor type, outermost dimension first (`check::Shape`).
type Shape = Vec<u64>;

/// Everything the checker can report. The `Display` form is the diagnostic's message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// E0005: a right-hand side deeper than the limit (`span`).
    #[error("expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)")]
    TooDeep { span: Span },
    /// E0101 (S-Var): `name` declared again at `span`, first at `first`.
    #[error("`{name}` is declared twice")]
    Redeclared {
        span: Span,
        name: String,
        first: Span,
    },
    /// E0102 (S-Var): an extent of 0 (at `span`) in the declaration of `name`.
    #[error("`{name}` has an extent of 0")]
    ZeroExtent { span: Span, name: String },
    /// A declaration of `rank` dimensions, over [`MAX_RANK`].
    #[error("`{name}` has {rank} dimensions; the limit is {MAX_RANK}")]
    DeclRankTooLarge {
        span: Span,
        name: String,
        rank: usize,
    },
    /// A declaration of `elements` elements (`None`: more than 2^64), over
    /// [`MAX_DECL_ELEMENTS`].
    #[error("`{name}` would have {} elements", elements_str(*elements))]
    DeclTooLarge {
        span: Span,
        name: String,
        elements: Option<u64>,
    },
    /// OK-Stmt: assignment to `name`, not declared; `similar` is the declared name it most
    /// likely means, `rhs` the right-hand side's shape when it checks.
    #[error("assignment to undeclared variable `{name}`")]
    AssignUndeclared {
        span: Span,
        name: String,
        similar: Option<String>,
        rhs: Option<Shape>,
        /// Where a declaration goes (the start of the program's first statement), for the
        /// fix; `None` while the text has a syntax error, which may be the declaration itself.
        declare_at: Option<usize>,
    },
    /// OK-Stmt: a right-hand side (`span`) of shape `rhs` assigned to `target` (at
    /// `target_span`) of shape `target_shape`.
    #[error(
        "cannot assign an expression of shape {} to `{target}` of shape {}",
        ShapeDisplay(rhs),
        ShapeDisplay(target_shape)
    )]
    AssignMismatch {
        span: Span,
        rhs: Shape,
        target: String,
        target_span: Span,
        target_shape: Shape,
        transpose: Option<Transpose>,
    },
    /// An expression of `rank` dimensions, over [`MAX_RANK`].
    #[error("expression has {rank} dimensions; the limit is {MAX_RANK}")]
    ExprRankTooLarge { span: Span, rank: usize },
    /// An expression whose index space does not fit in 64 bits.
    #[error("expression of shape {} has too many elements", ShapeDisplay(shape))]
    ExprTooLarge { span: Span, shape: Shape },
    /// T-Var: use of `name`, not declared; `similar` is the declared name it most likely means.
    #[error("use of undeclared variable `{name}`")]
    UndeclaredVar {
        span: Span,
        name: String,
        similar: Option<String>,
    },
    /// W0002 (T-Transp): a transposition (`span`) of dimension `dim` with itself, of the
    /// operand at `operand`.
    #[error("transposition of dimension {dim} with itself")]
    TranspSame { span: Span, dim: u64, operand: Span },
    /// T-Expa: expansion position `position` (at `span`) outside 1..=rank+1 of the operand
    /// (at `operand`, of shape `shape`).
    #[error(
        "expansion position {position} is out of range for an operand of rank {}",
        shape.len()
    )]
    ExpaPositionOutOfRange {
        span: Span,
        position: u64,
        operand: Span,
        shape: Shape,
    },
    /// T-Expa: expansion by 0 (at `span`).
    #[error("expansion by an extent of 0")]
    ExpaZeroExtent { span: Span },
    /// T-Proj: slice `slice` (at `span`) outside 1..=`extent` of dimension `dim` of the operand
    /// (at `operand`, of shape `shape`).
    #[error("slice {slice} is out of range for dimension {dim} of extent {extent}")]
    SliceOutOfRange {
        span: Span,
        slice: u64,
        dim: u64,
        extent: u64,
        operand: Span,
        shape: Shape,
    },
    /// OK-Stmt: a right-hand side (at `span`) of element type `rhs` assigned to `target` (at
    /// `target_span`), declared of element type `target_elem`.
    #[error("assigned expression has element type {rhs} but `{target}` is declared {target_elem}")]
    AssignElemMismatch {
        span: Span,
        rhs: ElemType,
        target: String,
        target_span: Span,
        target_elem: ElemType,
    },
    /// T-Add, T-Mul, T-Elem, T-Prod, T-Func2 (`rule`): operands of `op` (the whole operation at
    /// `span`) of different element types.
    #[error("operands of `{}` have different element types {left_elem} and {right_elem}", op.symbol())]
    ElemMismatch {
        span: Span,
        op: Elementwise,
        rule: &'static str,
        left: Span,
        left_elem: ElemType,
        right: Span,
        right_elem: ElemType,
    },
    /// T-Conv: `to e` (at `span`) where the operand (at `operand`) already has element type
    /// `to`.
    #[error("conversion to {to} of an operand that is already {to}")]
    ConvertSame {
        span: Span,
        to: ElemType,
        operand: Span,
    },
    /// T-Lit: a literal (at `span`, written `written`) used as binary32 whose value rounds
    /// beyond binary32's range.
    #[error("literal `{written}` is out of range for f32")]
    LiteralF32Range { span: Span, written: String },
    /// T-Add, T-Mul, T-Elem (`rule`): operands of `op` (the whole operation at `span`) of
    /// different shapes; `transpose` turns the right operand into the left one's shape.
    #[error(
        "operands of `{}` have different shapes {} and {}",
        op.symbol(),
        ShapeDisplay(left_shape),
        ShapeDisplay(right_shape)
    )]
    ElementwiseMismatch {
        span: Span,
        op: Elementwise,
        rule: &'static str,
        left: Span,
        left_shape: Shape,
        right: Span,
        right_shape: Shape,
        transpose: Option<Transpose>,
    },
    /// A position (at `span`) of `operation` outside 1..=rank of its operand (at `operand`, of
    /// shape `shape`).
    #[error(
        "{operation} position {position} is out of range for an operand of rank {}",
        shape.len()
    )]
    PositionOutOfRange {
        span: Span,
        operation: Operation,
        position: u64,
        operand: Span,
        shape: Shape,
    },
    /// T-Diag, T-Contr: the same position `dim` twice (the positions at `span`).
    #[error("{operation} of dimension {dim} with itself")]
    PositionsNotDistinct {
        span: Span,
        operation: Operation,
        dim: u64,
        operand: Span,
        shape: Shape,
    },
    /// E0305 (T-Diag, T-Contr): positions `i` and `j` (at `span`) of different extents
    /// `extents`; `postfix` when written `.[i j]`; `help` the checker's suggestion, once its
    /// statement's target is known.
    #[error("{operation} of dimensions {i} and {j} with different extents")]
    ExtentsDiffer {
        span: Span,
        operation: Operation,
        i: u64,
        j: u64,
        extents: (u64, u64),
        operand: Span,
        shape: Shape,
        postfix: bool,
        help: Option<PairHelp>,
    },
    /// W0001: the first read (at `span`) of `name` before it is assigned.
    #[error("`{name}` is read before it is assigned")]
    UninitializedRead { span: Span, name: String },
    /// W0003: the output `name` (declared at `span`) is never assigned.
    #[error("output `{name}` is never assigned")]
    OutputNeverAssigned { span: Span, name: String },
}

/// An operation with dimension positions, which names its typing rule and the words for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Reduce(RedOp),
    Transp,
    Diag,
    Contr,
    Proj,
}

/// An element-wise operation of two operands, as errors name it: an arithmetic operator or
/// `max`/`min`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elementwise {
    Op(BinOp),
    Func(Func2),
    /// `prod`/`#` (element types only: its shapes never differ in a way it rejects).
    Prod,
}

impl Elementwise {
    /// How the operation is written: `+`, `max`, `#`.
    pub fn symbol(self) -> &'static str {
        match self {
            Elementwise::Op(op) => op.symbol(),
            Elementwise::Func(f) => f.keyword(),
            Elementwise::Prod => "#",
        }
    }
}

impl Operation {
    pub fn rule(self) -> &'static str {
        match self {
            Operation::Reduce(_) => "T-Red",
            Operation::Transp => "T-Transp",
            Operation::Diag => "T-Diag",
            Operation::Contr => "T-Contr",
            Operation::Proj => "T-Proj",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Reduce(op) => op.keyword(),
            Operation::Transp => "transposition",
            Operation::Diag => "diagonal",
            Operation::Contr => "contraction",
            Operation::Proj => "projection",
        })
    }
}

/// The transposition `^[swap.0 swap.1]` that makes an expression (at `span`; `atom` when it
/// is a name or parenthesised, so needs no parentheses) fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Transpose {
    pub swap: (usize, usize),
    pub span: Span,
    pub atom: bool,
}

/// The checker's suggestion for an E0305 report.
#[derive(Clone, Debug, PartialEq)]
pub enum PairHelp {
    /// No two dimensions of the operand have equal extents.
    NoEqualExtents,
    /// Write these positions instead.
    Use((usize, usize)),
    /// No pair of equal extents gives the right-hand side the shape `target_shape` of
    /// `target`; the nearest pair `nearest` would give `gives` (`None`: not well-typed).
    NoneFits {
        target: String,
        target_shape: Shape,
        nearest: (usize, usize),
        gives: Option<Shape>,
    },
}

fn elements_str(elements: Option<u64>) -> String {
    match elements {
        None => "more than 2^64".to_string(),
        Some(c) => c.to_string(),
    }
}

fn has_shape(s: &[u64]) -> String {
    if s.is_empty() {
        "this is a scalar, shape []".to_string()
    } else {
        format!("this has shape {}", ShapeDisplay(s))
    }
}

impl Transpose {
    fn postfix(&self) -> String {
        format!("^[{} {}]", self.swap.0, self.swap.1)
    }

    /// The fix that applies the postfix transposition, parenthesising the expression unless
    /// it is an atom (postfix operators bind tightest).
    fn fix(&self) -> Fix {
        let postfix = self.postfix();
        let (open, close) = if self.atom { ("", "") } else { ("(", ")") };
        let mut edits = Vec::new();
        if !self.atom {
            edits.push(Edit {
                span: self.span.start..self.span.start,
                replacement: open.to_string(),
            });
        }
        edits.push(Edit {
            span: self.span.end..self.span.end,
            replacement: format!("{close} {postfix}"),
        });
        Fix {
            title: format!("apply `{postfix}`"),
            edits,
        }
    }
}

/// The fix for a misspelled name (at `span`): replace it with `with`.
fn rename(span: Span, with: &str) -> Fix {
    Fix::replace(format!("replace with `{with}`"), span, with)
}

impl CheckError {
    /// Where the error is (the diagnostic's primary span).
    pub fn span(&self) -> &Span {
        match self {
            CheckError::TooDeep { span }
            | CheckError::Redeclared { span, .. }
            | CheckError::ZeroExtent { span, .. }
            | CheckError::DeclRankTooLarge { span, .. }
            | CheckError::DeclTooLarge { span, .. }
            | CheckError::AssignUndeclared { span, .. }
            | CheckError::AssignMismatch { span, .. }
            | CheckError::AssignElemMismatch { span, .. }
            | CheckError::ElemMismatch { span, .. }
            | CheckError::ConvertSame { span, .. }
            | CheckError::LiteralF32Range { span, .. }
            | CheckError::ExprRankTooLarge { span, .. }
            | CheckError::ExprTooLarge { span, .. }
            | CheckError::UndeclaredVar { span, .. }
            | CheckError::TranspSame { span, .. }
            | CheckError::ExpaPositionOutOfRange { span, .. }
            | CheckError::ExpaZeroExtent { span }
            | CheckError::SliceOutOfRange { span, .. }
            | CheckError::ElementwiseMismatch { span, .. }
            | CheckError::PositionOutOfRange { span, .. }
            | CheckError::PositionsNotDistinct { span, .. }
            | CheckError::ExtentsDiffer { span, .. }
            | CheckError::UninitializedRead { span, .. }
            | CheckError::OutputNeverAssigned { span, .. } => span,
        }
    }

    pub fn code(&self) -> Code {
        match self {
            CheckError::TooDeep { .. } => Code::TooDeep,
            CheckError::Redeclared { .. } => Code::Redeclared,
            CheckError::ZeroExtent { .. } => Code::ZeroExtent,
            CheckError::DeclRankTooLarge { .. } => Code::DeclRankTooLarge,
            CheckError::DeclTooLarge { .. } => Code::DeclTooLarge,
            CheckError::AssignUndeclared { .. } => Code::AssignUndeclared,
            CheckError::AssignMismatch { .. } => Code::AssignMismatch,
            CheckError::AssignElemMismatch { .. } => Code::AssignElemMismatch,
            CheckError::ElemMismatch { .. } => Code::ElemMismatch,
            CheckError::ConvertSame { .. } => Code::ConvertSame,
            CheckError::LiteralF32Range { .. } => Code::LiteralF32Range,
            CheckError::ExprRankTooLarge { .. } => Code::ExprRankTooLarge,
            CheckError::ExprTooLarge { .. } => Code::ExprTooLarge,
            CheckError::UndeclaredVar { .. } => Code::UndeclaredVar,
            CheckError::TranspSame { .. } => Code::TranspSame,
            CheckError::ExpaPositionOutOfRange { .. } => Code::ExpaPositionOutOfRange,
            CheckError::ExpaZeroExtent { .. } => Code::ExpaZeroExtent,
            CheckError::SliceOutOfRange { .. } => Code::SliceOutOfRange,
            CheckError::ElementwiseMismatch { .. } => Code::ElementwiseMismatch,
            CheckError::PositionOutOfRange { .. } => Code::PositionOutOfRange,
            CheckError::PositionsNotDistinct { .. } => Code::PositionsNotDistinct,
            CheckError::ExtentsDiffer { .. } => Code::ExtentsDiffer,
            CheckError::UninitializedRead { .. } => Code::UninitializedRead,
            CheckError::OutputNeverAssigned { .. } => Code::OutputNeverAssigned,
        }
    }

    /// Whether it is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.code().severity() == Severity::Error
    }
}

impl From<CheckError> for Diagnostic {
    fn from(e: CheckError) -> Diagnostic {
        let (code, message, span) = (e.code(), e.to_string(), e.span().clone());
        match e {
            CheckError::TooDeep { .. } => {
                Diagnostic::new(code, message, span, "this right-hand side")
                    .with_help("split the expression into several statements over temporaries")
            }
            CheckError::Redeclared { first, .. } => {
                Diagnostic::new(code, message, span, "declared again here")
                    .with_rule("S-Var")
                    .with_label(first, "first declared here")
                    .with_help("each name denotes one allocation; choose another name")
            }
            CheckError::ZeroExtent { .. } => {
                Diagnostic::new(code, message, span, "extents start at 1")
                    .with_rule("S-Var")
                    .with_help("dimensions cannot be empty; a scalar is declared with `[]`")
            }
            CheckError::DeclRankTooLarge { .. } => {
                Diagnostic::new(code, message, span, "too many dimensions").with_note(format!(
                    "the limit is {MAX_RANK} dimensions (spec/limits.md)"
                ))
            }
            CheckError::DeclTooLarge { .. } => {
                Diagnostic::new(code, message, span, "too many elements").with_note(format!(
                    "the limit is 2^63 - 1 = {MAX_DECL_ELEMENTS} elements, so that indices fit \
                     signed 64-bit arithmetic (spec/limits.md)"
                ))
            }
            CheckError::AssignUndeclared {
                name,
                similar,
                rhs,
                declare_at,
                ..
            } => {
                let d = Diagnostic::new(code, message, span.clone(), "not declared")
                    .with_rule("OK-Stmt");
                match (similar, rhs) {
                    (Some(s), _) => d
                        .with_help(format!("did you mean `{s}`?"))
                        .with_fix(rename(span, &s)),
                    (None, Some(shape)) => {
                        let decl = format!("alloc {name} : {}", ShapeDisplay(&shape));
                        let d = d.with_help(format!("declare it first, e.g. `{decl}`"));
                        match declare_at {
                            Some(at) => d.with_fix(Fix::replace(
                                format!("declare `{decl}`"),
                                at..at,
                                format!("{decl}\n"),
                            )),
                            None => d,
                        }
                    }
                    (None, None) => d,
                }
            }
            CheckError::AssignElemMismatch {
                rhs,
                target_span,
                target_elem,
                ..
            } => Diagnostic::new(code, message, span, format!("this has element type {rhs}"))
                .with_rule("OK-Stmt")
                .with_label(target_span, format!("declared {target_elem}"))
                .with_help(format!(
                    "convert the right-hand side explicitly: `{} (...)`",
                    target_elem.keyword()
                )),
            CheckError::ElemMismatch {
                rule,
                left,
                left_elem,
                right,
                right_elem,
                ..
            } => Diagnostic::new(code, message, span, "operands of different element types")
                .with_rule(rule)
                .with_label(left, format!("element type {left_elem}"))
                .with_label(right, format!("element type {right_elem}"))
                .with_help(format!(
                    "TeIL never converts implicitly: convert one operand, `{} e` or `{} e`",
                    left_elem.keyword(),
                    right_elem.keyword()
                )),
            CheckError::ConvertSame { to, operand, .. } => {
                Diagnostic::new(code, message, span, "nothing to convert")
                    .with_rule("T-Conv")
                    .with_label(operand, format!("already {to}"))
                    .with_help(format!(
                        "`{} e` converts from {}; remove the conversion",
                        to.keyword(),
                        to.other()
                    ))
            }
            CheckError::LiteralF32Range { .. } => {
                Diagnostic::new(code, message, span, "rounds to infinity in binary32")
                    .with_rule("T-Lit")
                    .with_note("the largest finite f32 is 3.4028235e38")
                    .with_help(
                        "write a smaller literal, or compute in f64 and convert with `f32 e`",
                    )
            }
            CheckError::AssignMismatch {
                rhs,
                target,
                target_span,
                target_shape,
                transpose,
                ..
            } => {
                let d = Diagnostic::new(code, message, span, has_shape(&rhs))
                    .with_rule("OK-Stmt")
                    .with_label(
                        target_span,
                        format!(
                            "`{target}` is declared with shape {}",
                            ShapeDisplay(&target_shape)
                        ),
                    );
                match transpose {
                    Some(t) => d
                        .with_help(format!(
                            "transposing the right-hand side would fit: `{}`",
                            t.postfix()
                        ))
                        .with_fix(t.fix()),
                    None => d,
                }
            }
            CheckError::ExprRankTooLarge { .. } => {
                Diagnostic::new(code, message, span, "too many dimensions")
            }
            CheckError::ExprTooLarge { .. } => {
                Diagnostic::new(code, message, span, "index space does not fit in 64 bits")
                    .with_help("contract before forming the product")
            }
            CheckError::UndeclaredVar { similar, .. } => {
                let d =
                    Diagnostic::new(code, message, span.clone(), "not declared").with_rule("T-Var");
                match similar {
                    Some(s) => d
                        .with_help(format!("did you mean `{s}`?"))
                        .with_fix(rename(span, &s)),
                    None => d,
                }
            }
            CheckError::TranspSame { operand, .. } => {
                let fix = Fix {
                    title: "remove the transposition".into(),
                    edits: vec![
                        Edit {
                            span: span.start..operand.start,
                            replacement: String::new(),
                        },
                        Edit {
                            span: operand.end..span.end,
                            replacement: String::new(),
                        },
                    ],
                };
                Diagnostic::new(code, message, span, "this has no effect")
                    .with_rule("T-Transp")
                    .with_help("remove it, or name two different dimensions")
                    .with_fix(fix)
            }
            CheckError::ExpaPositionOutOfRange {
                position,
                operand,
                shape,
                ..
            } => {
                let d = Diagnostic::new(
                    code,
                    message,
                    span,
                    format!("must be between 1 and {}", shape.len() + 1),
                )
                .with_rule("T-Expa")
                .with_label(operand, has_shape(&shape));
                if position == 0 {
                    d.with_help("positions are 1-based")
                } else {
                    d
                }
            }
            CheckError::ExpaZeroExtent { .. } => {
                Diagnostic::new(code, message, span, "extents start at 1").with_rule("T-Expa")
            }
            CheckError::SliceOutOfRange {
                slice,
                extent,
                operand,
                shape,
                ..
            } => {
                let d = Diagnostic::new(
                    code,
                    message,
                    span,
                    format!("must be between 1 and {extent}"),
                )
                .with_rule("T-Proj")
                .with_label(operand, has_shape(&shape));
                if slice == 0 {
                    d.with_help("slices are numbered from 1")
                } else {
                    d
                }
            }
            CheckError::ElementwiseMismatch {
                op,
                rule,
                left,
                left_shape: ta,
                right,
                right_shape: tb,
                transpose,
                ..
            } => {
                let d = Diagnostic::new(
                    code,
                    message,
                    span,
                    "element-wise operation on different shapes",
                )
                .with_rule(rule)
                .with_label(left, has_shape(&ta))
                .with_label(right, has_shape(&tb));
                match op {
                    Elementwise::Op(BinOp::Mul) if tb.is_empty() => d.with_help(
                        "scalar multiplication takes the scalar on the left (T-SMul): swap the operands",
                    ),
                    Elementwise::Op(BinOp::Div) if ta.is_empty() => d.with_help(format!(
                        "only the divisor may be a scalar (T-SDiv); broadcast the numerator to {} with `expa` first",
                        ShapeDisplay(&tb)
                    )),
                    _ if ta.is_empty() || tb.is_empty() => d.with_help(
                        "TeIL never broadcasts implicitly: give the scalar the other operand's shape with `expa`",
                    ),
                    _ => match transpose {
                        Some(t) => d
                            .with_help(format!(
                                "transposing the right operand would fit: `{}`",
                                t.postfix()
                            ))
                            .with_fix(t.fix()),
                        None => d,
                    },
                }
            }
            CheckError::PositionOutOfRange {
                operation,
                position,
                operand,
                shape,
                ..
            } => {
                let range = if shape.is_empty() {
                    "the operand is a scalar and has no dimensions".to_string()
                } else {
                    format!("must be between 1 and {}", shape.len())
                };
                let d = Diagnostic::new(code, message, span, range)
                    .with_rule(operation.rule())
                    .with_label(operand, has_shape(&shape));
                if position == 0 {
                    d.with_help("positions are 1-based: the first dimension is 1")
                } else {
                    d
                }
            }
            CheckError::PositionsNotDistinct {
                operation,
                operand,
                shape,
                ..
            } => Diagnostic::new(code, message, span, "the two positions must differ")
                .with_rule(operation.rule())
                .with_label(operand, has_shape(&shape)),
            CheckError::ExtentsDiffer {
                operation,
                i,
                j,
                extents: (ni, nj),
                operand,
                shape,
                postfix,
                help,
                ..
            } => {
                let mut d = Diagnostic::new(
                    code,
                    message,
                    span.clone(),
                    format!("dimension {i} has extent {ni}, dimension {j} has extent {nj}"),
                )
                .with_rule(operation.rule())
                .with_label(operand, has_shape(&shape));
                let spell = |(a, b): (usize, usize)| match (operation, postfix) {
                    (Operation::Contr, true) => format!(".[{a} {b}]"),
                    (Operation::Contr, false) => format!("contr {a} {b}"),
                    _ => format!("diag {a} {b}"),
                };
                match help {
                    None => {}
                    Some(PairHelp::NoEqualExtents) => {
                        d.help = Some(format!(
                            "no two dimensions of this operand have equal extents, so no \
                             {operation} of it is well-typed"
                        ));
                    }
                    Some(PairHelp::Use(pq)) => {
                        let spelled = spell(pq);
                        d.help = Some(format!("did you mean `{spelled}`?"));
                        d.fixes.push(Fix::replace(
                            format!("replace with `{spelled}`"),
                            span,
                            format!("{} {}", pq.0, pq.1),
                        ));
                    }
                    Some(PairHelp::NoneFits {
                        target,
                        target_shape,
                        nearest,
                        gives,
                    }) => {
                        let gives = match gives {
                            Some(s) => {
                                format!("; `{}` would make it {}", spell(nearest), ShapeDisplay(&s))
                            }
                            None => String::new(),
                        };
                        d.help = Some(format!(
                            "no {operation} of two dimensions with equal extents gives the \
                             right-hand side the shape of `{target}`, {}{gives}",
                            ShapeDisplay(&target_shape)
                        ));
                    }
                }
                d
            }
            CheckError::UninitializedRead { name, .. } => {
                Diagnostic::new(code, message, span, "this read sees undefined values").with_help(
                    format!("assign `{name}` first, or declare it `input` or `inout`"),
                )
            }
            CheckError::OutputNeverAssigned { name, .. } => {
                Diagnostic::new(code, message, span, "the caller receives undefined values")
                    .with_help(format!(
                        "assign `{name}` in a statement, or drop the `output` qualifier"
                    ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Display` form is the diagnostic's message, and the code, the rule and the primary
    /// span are the variant's.
    #[test]
    fn every_error_becomes_its_diagnostic() {
        let name = |n: &str| n.to_string();
        let cases = [
            (
                CheckError::TooDeep { span: 4..9 },
                "E0005",
                None,
                "expression nested too deeply (more than 512 levels)",
            ),
            (
                CheckError::Redeclared {
                    span: 20..21,
                    name: name("A"),
                    first: 6..7,
                },
                "E0101",
                Some("S-Var"),
                "`A` is declared twice",
            ),
            (
                CheckError::ZeroExtent {
                    span: 11..12,
                    name: name("A"),
                },
                "E0102",
                Some("S-Var"),
                "`A` has an extent of 0",
            ),
            (
                CheckError::DeclRankTooLarge {
                    span: 0..40,
                    name: name("A"),
                    rank: 70,
                },
                "E0104",
                None,
                "`A` has 70 dimensions; the limit is 32",
            ),
            (
                CheckError::DeclTooLarge {
                    span: 0..40,
                    name: name("A"),
                    elements: None,
                },
                "E0103",
                None,
                "`A` would have more than 2^64 elements",
            ),
            (
                CheckError::AssignUndeclared {
                    span: 0..1,
                    name: name("B"),
                    similar: None,
                    rhs: Some(vec![2, 3]),
                    declare_at: Some(0),
                },
                "E0201",
                Some("OK-Stmt"),
                "assignment to undeclared variable `B`",
            ),
            (
                CheckError::AssignMismatch {
                    span: 4..5,
                    rhs: vec![3, 2],
                    target: name("C"),
                    target_span: 0..1,
                    target_shape: vec![2, 3],
                    transpose: None,
                },
                "E0202",
                Some("OK-Stmt"),
                "cannot assign an expression of shape [3, 2] to `C` of shape [2, 3]",
            ),
            (
                CheckError::ExprRankTooLarge {
                    span: 4..20,
                    rank: 65,
                },
                "E0310",
                None,
                "expression has 65 dimensions; the limit is 32",
            ),
            (
                CheckError::ExprTooLarge {
                    span: 4..20,
                    shape: vec![1 << 40, 1 << 40],
                },
                "E0309",
                None,
                "expression of shape [1099511627776, 1099511627776] has too many elements",
            ),
            (
                CheckError::UndeclaredVar {
                    span: 4..5,
                    name: name("X"),
                    similar: Some(name("A")),
                },
                "E0301",
                Some("T-Var"),
                "use of undeclared variable `X`",
            ),
            (
                CheckError::TranspSame {
                    span: 4..16,
                    dim: 2,
                    operand: 15..16,
                },
                "W0002",
                Some("T-Transp"),
                "transposition of dimension 2 with itself",
            ),
            (
                CheckError::ExpaPositionOutOfRange {
                    span: 9..10,
                    position: 4,
                    operand: 13..14,
                    shape: vec![2],
                },
                "E0307",
                Some("T-Expa"),
                "expansion position 4 is out of range for an operand of rank 1",
            ),
            (
                CheckError::ExpaZeroExtent { span: 11..12 },
                "E0308",
                Some("T-Expa"),
                "expansion by an extent of 0",
            ),
            (
                CheckError::SliceOutOfRange {
                    span: 11..12,
                    slice: 5,
                    dim: 1,
                    extent: 3,
                    operand: 13..14,
                    shape: vec![3],
                },
                "E0306",
                Some("T-Proj"),
                "slice 5 is out of range for dimension 1 of extent 3",
            ),
            (
                CheckError::ElementwiseMismatch {
                    span: 4..9,
                    op: Elementwise::Op(BinOp::Add),
                    rule: "T-Add",
                    left: 4..5,
                    left_shape: vec![2, 3],
                    right: 8..9,
                    right_shape: vec![3, 2],
                    transpose: None,
                },
                "E0302",
                Some("T-Add"),
                "operands of `+` have different shapes [2, 3] and [3, 2]",
            ),
            (
                CheckError::PositionOutOfRange {
                    span: 9..10,
                    operation: Operation::Reduce(RedOp::Sum),
                    position: 0,
                    operand: 11..12,
                    shape: vec![2],
                },
                "E0303",
                Some("T-Red"),
                "red+ position 0 is out of range for an operand of rank 1",
            ),
            (
                CheckError::PositionsNotDistinct {
                    span: 10..13,
                    operation: Operation::Diag,
                    dim: 1,
                    operand: 14..15,
                    shape: vec![2, 2],
                },
                "E0304",
                Some("T-Diag"),
                "diagonal of dimension 1 with itself",
            ),
            (
                CheckError::ExtentsDiffer {
                    span: 10..13,
                    operation: Operation::Contr,
                    i: 1,
                    j: 2,
                    extents: (2, 3),
                    operand: 14..15,
                    shape: vec![2, 3, 2],
                    postfix: false,
                    help: Some(PairHelp::Use((1, 3))),
                },
                "E0305",
                Some("T-Contr"),
                "contraction of dimensions 1 and 2 with different extents",
            ),
            (
                CheckError::UninitializedRead {
                    span: 8..9,
                    name: name("T"),
                },
                "W0001",
                None,
                "`T` is read before it is assigned",
            ),
            (
                CheckError::OutputNeverAssigned {
                    span: 7..8,
                    name: name("C"),
                },
                "W0003",
                None,
                "output `C` is never assigned",
            ),
        ];
        for (e, code, rule, message) in cases {
            let span = e.span().clone();
            let d = Diagnostic::from(e);
            assert_eq!(
                (d.code.as_str(), d.rule, d.message.as_str(), d.primary.span),
                (code, rule, message, span)
            );
        }
    }

    /// The checker's suggestions become the help and the fix.
    #[test]
    fn suggestions_become_help_and_fixes() {
        let d = Diagnostic::from(CheckError::ExtentsDiffer {
            span: 10..13,
            operation: Operation::Contr,
            i: 1,
            j: 2,
            extents: (2, 3),
            operand: 14..15,
            shape: vec![2, 3, 2],
            postfix: false,
            help: Some(PairHelp::Use((1, 3))),
        });
        assert_eq!(d.help.as_deref(), Some("did you mean `contr 1 3`?"));
        assert_eq!(
            d.fixes[0].apply("C = contr 1 2 A").as_deref(),
            Some("C = contr 1 3 A")
        );
        let d = Diagnostic::from(CheckError::AssignMismatch {
            span: 4..9,
            rhs: vec![3, 2],
            target: "C".into(),
            target_span: 0..1,
            target_shape: vec![2, 3],
            transpose: Some(Transpose {
                swap: (1, 2),
                span: 4..9,
                atom: false,
            }),
        });
        assert_eq!(
            d.help.as_deref(),
            Some("transposing the right-hand side would fit: `^[1 2]`")
        );
        assert_eq!(
            d.fixes[0].apply("C = A + B").as_deref(),
            Some("C = (A + B) ^[1 2]")
        );
    }

    /// E0201 without a similar name: the fix declares the target with the right-hand side's
    /// shape before the first statement, and the program then checks.
    #[test]
    fn an_undeclared_target_is_declared_by_the_fix() {
        let src = "input var A : [4 6]\nvar B : [4 6]\nB = A\nD = A + B\n";
        let d = &crate::compile(src).unwrap_err()[0];
        assert_eq!(d.code.as_str(), "E0201");
        assert_eq!(
            d.help.as_deref(),
            Some("declare it first, e.g. `alloc D : [4, 6]`")
        );
        assert_eq!(d.fixes[0].title, "declare `alloc D : [4, 6]`");
        let fixed = d.fixes[0].apply(src).expect("applies");
        assert_eq!(
            fixed,
            "input var A : [4 6]\nvar B : [4 6]\nalloc D : [4, 6]\nB = A\nD = A + B\n"
        );
        assert!(crate::compile(&fixed).is_ok(), "{fixed}");
    }
}
