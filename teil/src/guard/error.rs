//! The errors and warnings of the guard front ends as data, and the one place that turns them
//! into [`Diagnostic`]s.
//!
//! The einsum front end (with its shape-list reader) and the index-notation front end only
//! record what they found: spans, labels and index names, shapes, extents, the token found and
//! what was expected; the wording of every message, label, note and help of codes E0401 to
//! E0409, E0501 to E0505 and W0501, and of the TeIL codes the front ends report themselves
//! (E0102 for an einsum operand, E0201/E0301 for an undeclared tensor, E0002, E0004, E0005 and
//! E0006 in a `.tin` file), lives in the `#[error]` attributes and in
//! `From<FrontEndError> for Diagnostic` below.
//!
//! **One enum for both front ends.** They are one phase of the pipeline: foreign text to an
//! [`crate::ast::Program`], before the checker (`guard` module docs); their codes share one
//! section of spec/diagnostics.md and one numbering, and no variant is reported by both. The
//! variants are prefixed by the text they point into (`Equation`, `Shapes`, `Einsum`, `Tin`),
//! so a reader sees at once which front end reports which; one enum keeps one `span`, one
//! `code` and one conversion instead of two of each. Where a `.tin` file fails the way a `.teil`
//! file does (a declaration after a statement, a literal that rounds to infinity), the variant
//! holds the [`ParseError`] and the wording is the parser's.

use crate::ast::{ShapeDisplay, Span};
use crate::diagnostic::{Code, Diagnostic};
use crate::lexer::LexError;
use crate::limits::MAX_EXPR_DEPTH;
use crate::parse_error::ParseError;
use std::fmt;

use super::MAX_EINSUM_OPERANDS;

/// Everything the guard front ends report. The `Display` form is the diagnostic's message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FrontEndError {
    /// E0401: the equation (at `span`) is not well formed.
    #[error("{problem}")]
    Equation {
        span: Span,
        problem: EquationProblem,
    },
    /// E0408: the shape list (at `span`) is not well formed.
    #[error("{problem}")]
    Shapes { span: Span, problem: ShapesProblem },
    /// E0409: `operands` operands (at `span`, all the input terms), over
    /// [`MAX_EINSUM_OPERANDS`].
    #[error("the equation has {operands} operands; the limit is {MAX_EINSUM_OPERANDS}")]
    EinsumTooManyOperands { span: Span, operands: usize },
    /// E0402: `operands` operands (at `span`, all the input terms) but `shapes` shapes.
    #[error("the equation has {} but {} given", count(*operands, "operand"), shapes_were(*shapes))]
    EinsumOperandCount {
        span: Span,
        operands: usize,
        shapes: usize,
    },
    /// E0403: operand `operand` (its term at `span`) has `named` subscripts, and a `...` when
    /// `ellipsis`, which do not fit its shape `shape`.
    #[error(
        "operand {operand} has {} but its shape {} has {}",
        count(*named, "subscript"),
        ShapeDisplay(shape),
        count(shape.len(), "dimension")
    )]
    EinsumRankMismatch {
        span: Span,
        operand: usize,
        named: usize,
        ellipsis: bool,
        shape: Vec<u64>,
    },
    /// E0102: operand `operand` (its term at `span`) has an extent of 0 in its shape `shape`,
    /// so the call has no TeIL program; by NumPy's rules its result has the shape `result`.
    #[error("operand {operand} has an extent of 0 (shape {})", ShapeDisplay(shape))]
    EinsumZeroExtent {
        span: Span,
        operand: usize,
        shape: Vec<u64>,
        result: Vec<u64>,
    },
    /// E0404: the index `label` gets different extents; `first` is its first occurrence (the
    /// primary span), `others` the rest, in the order written.
    #[error(
        "index `{label}` is bound to different extents ({})",
        distinct_extents(first, others)
    )]
    EinsumExtentConflict {
        label: char,
        first: LabelUse,
        others: Vec<LabelUse>,
    },
    /// E0407: the dimensions under `...` of `first` (the first operand whose dimensions do not
    /// broadcast) and of the `others` cannot be broadcast together.
    #[error("the dimensions under `...` cannot be broadcast together")]
    EinsumBroadcast {
        first: EllipsisCover,
        others: Vec<EllipsisCover>,
    },
    /// E0407: the operands' `...` cover `dims` dimensions but the output term (at `span`) has
    /// no `...`.
    #[error(
        "the operands' `...` cover {} but the output has no `...`",
        count(*dims, "dimension")
    )]
    EinsumOutputWithoutEllipsis { span: Span, dims: usize },
    /// E0406: the output index `label` again at `span`, first at `first`.
    #[error("index `{label}` is repeated in the output")]
    EinsumOutputRepeated {
        span: Span,
        label: char,
        first: Span,
    },
    /// E0405: the output index `label` (at `span`) occurs in no operand (their terms at
    /// `inputs`).
    #[error("output index `{label}` does not occur in any operand")]
    EinsumOutputUnknown {
        span: Span,
        label: char,
        inputs: Span,
    },
    /// E0002 in a `.tin` file: the lexer's error, worded as the parser words it but for the
    /// help (index notation has names, not identifiers).
    #[error("{}", ParseError::from(.0.clone()))]
    TinInvalidChar(LexError),
    /// The parser's own errors where a `.tin` file has them (E0004, E0006).
    #[error(transparent)]
    Parse(ParseError),
    /// E0005: a statement (at `span`) nested deeper than [`MAX_EXPR_DEPTH`].
    #[error("expression nested too deeply (the limit is {MAX_EXPR_DEPTH} levels)")]
    TinTooDeep { span: Span },
    /// E0501: `found` at `span` where the grammar expects `expected`.
    #[error("expected {expected}, found {found}")]
    TinSyntax {
        span: Span,
        expected: TinExpected,
        found: TinToken,
    },
    /// E0505: the compound assignment `op=` (at `span`) to the access `target`.
    #[error("`{op}=` is not supported")]
    TinCompoundAssign {
        span: Span,
        op: char,
        target: AccessText,
    },
    /// E0502: the access (at `span`) of `name`, declared (at `decl`) with shape `shape`, with
    /// `indices` indices.
    #[error("`{name}` has rank {} but is {}", shape.len(), used_with(*indices))]
    TinRankMismatch {
        span: Span,
        name: String,
        indices: usize,
        decl: Span,
        shape: Vec<u64>,
    },
    /// E0503: the index variable `index` ranges over dimensions of different extents; `first`
    /// is its first occurrence in the statement (the primary span), `others` the rest.
    #[error("index `{index}` ranges over dimensions of different extents")]
    TinExtentConflict {
        index: String,
        first: IndexUse,
        others: Vec<IndexUse>,
    },
    /// E0504: the index `index` again on the left-hand side at `span`, first at `first`.
    #[error("index `{index}` occurs twice on the left-hand side")]
    TinRepeatedIndex {
        span: Span,
        index: String,
        first: Span,
    },
    /// W0501: the summed index `index` (of extent `extent`) is missing from the term at `span`
    /// and from the terms at `others`; `summed_at` is its first use on the right-hand side.
    #[error("summed index `{index}` does not occur in every term")]
    TinPartialSum {
        span: Span,
        index: String,
        others: Vec<Span>,
        summed_at: Option<Span>,
        extent: u64,
    },
    /// E0201 (`target`, OK-Stmt) or E0301 (T-Var): an access to `name` (the name at `span`),
    /// not declared; `extents` are its indices' extents elsewhere in the statement, when every
    /// index has one.
    #[error(
        "{} `{name}`",
        if *target { "assignment to undeclared variable" } else { "use of undeclared variable" }
    )]
    TinUndeclared {
        span: Span,
        name: String,
        target: bool,
        extents: Option<Vec<u64>>,
    },
}

/// What is wrong with an einsum equation (E0401), at the error's span.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EquationProblem {
    #[error("`,` after `->`")]
    CommaAfterArrow,
    /// A second `->`; the first is at `first`.
    #[error("`->` given twice")]
    ArrowTwice { first: Span },
    /// A `-` or `>` that is not part of `->`.
    #[error("stray `{0}`")]
    Stray(char),
    /// A second `...` in one term; the first is at `first`.
    #[error("`...` given twice in one term")]
    EllipsisTwice { first: Span },
    /// One or two dots, or more than three.
    #[error("a lone `.`")]
    LoneDot,
    /// Characters that are no subscript and no punctuation of the equation: one error per
    /// equation. `chars` are the distinct characters in order of first occurrence; the error's
    /// span is the first occurrence of `chars[0]`, `others` those of the rest.
    #[error("{}", invalid_chars(chars))]
    InvalidChars { chars: Vec<char>, others: Vec<Span> },
}

/// What is wrong with a shape list (E0408), at the error's span.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ShapesProblem {
    /// Text after the closing `]`.
    #[error("unexpected text after the shape list")]
    Trailing,
    /// Not the bracket or comma the list needs here.
    #[error("expected `{}`", .0.bracket())]
    Expected(ShapesExpected),
    /// No digits where an extent belongs.
    #[error("expected an extent")]
    ExpectedExtent,
    /// An extent of more than 64 bits, as written.
    #[error("extent `{0}` does not fit in 64 bits")]
    ExtentTooLarge(String),
}

/// Where in a shape list a bracket or comma was expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapesExpected {
    /// The `[` of the whole list.
    OpenList,
    /// The `[` of one shape.
    OpenShape,
    /// The `,` before the next item or the `]` after the last.
    CommaOrClose,
}

impl ShapesExpected {
    /// The bracket that was expected.
    pub fn bracket(self) -> char {
        match self {
            ShapesExpected::OpenList | ShapesExpected::OpenShape => '[',
            ShapesExpected::CommaOrClose => ']',
        }
    }
}

impl fmt::Display for ShapesExpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShapesExpected::OpenList => "`[` to open the list of shapes",
            ShapesExpected::OpenShape => "`[` to open a shape",
            ShapesExpected::CommaOrClose => "`,` or `]`",
        })
    }
}

/// An occurrence of an einsum label in an operand: where it was written, the operand, the
/// dimension (0-based) and the extent it gets there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelUse {
    pub span: Span,
    pub operand: usize,
    pub dim: usize,
    pub extent: u64,
}

/// The `...` of an operand (at `span`) and the extents of the dimensions it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EllipsisCover {
    pub span: Span,
    pub operand: usize,
    pub covers: Vec<u64>,
}

/// An occurrence of an index variable inside an access of a `.tin` statement, with the extent
/// it gets there: dimension `dim` (1-based) of `tensor`, declared with `shape`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexUse {
    pub span: Span,
    pub extent: u64,
    pub tensor: String,
    pub dim: usize,
    pub shape: Vec<u64>,
}

/// What the index-notation parser expected (E0501).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TinExpected {
    Statement,
    IndexVariable,
    CommaOrParen,
    Assignment,
    OperatorOrEnd,
    Operand,
    /// The `)` of the parenthesis opened at the span.
    CloseParen(Span),
}

impl fmt::Display for TinExpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TinExpected::Statement => "a statement such as `A(i, j) = B(i, j)`",
            TinExpected::IndexVariable => "an index variable",
            TinExpected::CommaOrParen => "`,` or `)`",
            TinExpected::Assignment => "`=` or `+=`",
            TinExpected::OperatorOrEnd => "an operator or the end of the statement",
            TinExpected::Operand => "a tensor access, a number or `(`",
            TinExpected::CloseParen(_) => "`)`",
        })
    }
}

/// The token an index-notation syntax error found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TinToken {
    /// The end of the statement.
    End,
    Ident(String),
    Number(String),
    /// `alloc`, `var`, `input`, `output` or `inout`.
    DeclKeyword,
    /// An operator or punctuation, as written.
    Symbol(String),
}

impl fmt::Display for TinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TinToken::End => f.write_str("end of statement"),
            TinToken::Ident(s) => write!(f, "identifier `{s}`"),
            TinToken::Number(s) => write!(f, "number `{s}`"),
            TinToken::DeclKeyword => f.write_str("a declaration keyword"),
            TinToken::Symbol(s) => write!(f, "`{s}`"),
        }
    }
}

/// An access as the help of E0505 writes it: `A(i, j)`, or `s` without indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessText {
    pub name: String,
    pub indices: Vec<String>,
}

impl fmt::Display for AccessText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.indices.is_empty() {
            write!(f, "({})", self.indices.join(", "))?;
        }
        Ok(())
    }
}

/// `1 operand`, `2 operands`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn shapes_were(n: usize) -> String {
    if n == 1 {
        "1 shape was".to_string()
    } else {
        format!("{n} shapes were")
    }
}

fn used_with(indices: usize) -> String {
    match indices {
        0 => "used without indices".to_string(),
        1 => "indexed with 1 index".to_string(),
        n => format!("indexed with {n} indices"),
    }
}

/// The message of an E0401 for invalid characters.
fn invalid_chars(chars: &[char]) -> String {
    let shown: Vec<String> = chars.iter().map(|c| format!("{c:?}")).collect();
    let plural = if chars.len() == 1 { "" } else { "s" };
    format!(
        "invalid character{plural} {} in an einsum equation",
        shown.join(", ")
    )
}

/// The extents of an E0404 report, ascending, each once.
fn distinct_extents(first: &LabelUse, others: &[LabelUse]) -> String {
    let mut extents: Vec<u64> = std::iter::once(first)
        .chain(others)
        .map(|o| o.extent)
        .collect();
    extents.sort();
    extents.dedup();
    let extents: Vec<String> = extents.iter().map(u64::to_string).collect();
    extents.join(", ")
}

const EQUATION_HELP: &str =
    "subscripts are letters (any Unicode letter), `...` stands for broadcast \
     dimensions, operands are separated by `,` and the output follows `->`";

const ZERO_EXTENT_HELP: &str = "TeIL tensors have no empty dimensions, so no program is \
     lowered; `teil einsum`, `teil.einsum` and `teil::guard::einsum_outcome` give NumPy's result \
     (its shape, all zeros)";

const SHAPES_HELP: &str = "shapes are written as a JSON array of arrays of extents, e.g. \
     `[[2,3],[3,4]]`; a scalar operand has the shape `[]`";

impl FrontEndError {
    /// Where the error is (the diagnostic's primary span).
    pub fn span(&self) -> &Span {
        match self {
            FrontEndError::Equation { span, .. }
            | FrontEndError::Shapes { span, .. }
            | FrontEndError::EinsumTooManyOperands { span, .. }
            | FrontEndError::EinsumOperandCount { span, .. }
            | FrontEndError::EinsumRankMismatch { span, .. }
            | FrontEndError::EinsumZeroExtent { span, .. }
            | FrontEndError::EinsumOutputWithoutEllipsis { span, .. }
            | FrontEndError::EinsumOutputRepeated { span, .. }
            | FrontEndError::EinsumOutputUnknown { span, .. }
            | FrontEndError::TinTooDeep { span }
            | FrontEndError::TinSyntax { span, .. }
            | FrontEndError::TinCompoundAssign { span, .. }
            | FrontEndError::TinRankMismatch { span, .. }
            | FrontEndError::TinRepeatedIndex { span, .. }
            | FrontEndError::TinPartialSum { span, .. }
            | FrontEndError::TinUndeclared { span, .. } => span,
            FrontEndError::EinsumExtentConflict { first, .. } => &first.span,
            FrontEndError::EinsumBroadcast { first, .. } => &first.span,
            FrontEndError::TinExtentConflict { first, .. } => &first.span,
            FrontEndError::TinInvalidChar(e) => &e.span,
            FrontEndError::Parse(e) => e.span(),
        }
    }

    pub fn code(&self) -> Code {
        match self {
            FrontEndError::Equation { .. } => Code::EinsumSyntax,
            FrontEndError::Shapes { .. } => Code::ShapesSyntax,
            FrontEndError::EinsumTooManyOperands { .. } => Code::EinsumTooManyOperands,
            FrontEndError::EinsumOperandCount { .. } => Code::EinsumOperandCount,
            FrontEndError::EinsumRankMismatch { .. } => Code::EinsumRankMismatch,
            FrontEndError::EinsumZeroExtent { .. } => Code::ZeroExtent,
            FrontEndError::EinsumExtentConflict { .. } => Code::EinsumExtentConflict,
            FrontEndError::EinsumBroadcast { .. }
            | FrontEndError::EinsumOutputWithoutEllipsis { .. } => Code::EinsumBroadcast,
            FrontEndError::EinsumOutputRepeated { .. } => Code::EinsumOutputRepeated,
            FrontEndError::EinsumOutputUnknown { .. } => Code::EinsumOutputUnknown,
            FrontEndError::TinInvalidChar(_) => Code::InvalidChar,
            FrontEndError::Parse(e) => e.code(),
            FrontEndError::TinTooDeep { .. } => Code::TooDeep,
            FrontEndError::TinSyntax { .. } => Code::TinSyntax,
            FrontEndError::TinCompoundAssign { .. } => Code::TinCompoundAssign,
            FrontEndError::TinRankMismatch { .. } => Code::TinRankMismatch,
            FrontEndError::TinExtentConflict { .. } => Code::TinExtentConflict,
            FrontEndError::TinRepeatedIndex { .. } => Code::TinRepeatedIndex,
            FrontEndError::TinPartialSum { .. } => Code::TinPartialSum,
            FrontEndError::TinUndeclared { target: true, .. } => Code::AssignUndeclared,
            FrontEndError::TinUndeclared { target: false, .. } => Code::UndeclaredVar,
        }
    }
}

impl From<ParseError> for FrontEndError {
    fn from(e: ParseError) -> FrontEndError {
        FrontEndError::Parse(e)
    }
}

impl From<FrontEndError> for Diagnostic {
    fn from(e: FrontEndError) -> Diagnostic {
        let (code, message, span) = (e.code(), e.to_string(), e.span().clone());
        match e {
            FrontEndError::Equation { problem, .. } => {
                if let EquationProblem::InvalidChars { chars, others } = problem {
                    let mut d = Diagnostic::new(code, message, span, "not a subscript")
                        .with_help(EQUATION_HELP);
                    for (c, at) in chars[1..].iter().zip(others) {
                        d = d.with_label(at, format!("{c:?} is not a subscript either"));
                    }
                    return d;
                }
                let (label, first) = match problem {
                    EquationProblem::CommaAfterArrow => ("the output is a single term", None),
                    EquationProblem::ArrowTwice { first } => {
                        ("second `->`", Some((first, "first `->`")))
                    }
                    EquationProblem::Stray(_) => ("`-` and `>` only occur together, as `->`", None),
                    EquationProblem::EllipsisTwice { first } => {
                        ("second `...`", Some((first, "first `...`")))
                    }
                    EquationProblem::LoneDot => ("an ellipsis is exactly three dots", None),
                    EquationProblem::InvalidChars { .. } => ("not a subscript", None),
                };
                let d = Diagnostic::new(code, message, span, label).with_help(EQUATION_HELP);
                match first {
                    Some((first, label)) => d.with_label(first, label),
                    None => d,
                }
            }
            FrontEndError::Shapes { problem, .. } => {
                let label = match problem {
                    ShapesProblem::Trailing => "expected the end here".to_string(),
                    ShapesProblem::Expected(what) => format!("expected {what} here"),
                    ShapesProblem::ExpectedExtent => "expected a natural number here".to_string(),
                    ShapesProblem::ExtentTooLarge(_) => {
                        return Diagnostic::new(code, message, span, "too large")
                    }
                };
                Diagnostic::new(code, message, span, label).with_help(SHAPES_HELP)
            }
            FrontEndError::EinsumTooManyOperands { .. } => {
                Diagnostic::new(code, message, span, "too many operands")
            }
            FrontEndError::EinsumOperandCount { operands, .. } => {
                Diagnostic::new(code, message, span, count(operands, "operand")).with_help(
                    "give one shape per operand, in order: `ij,jk->ik` takes two, such as [2, 3] and [3, 4]",
                )
            }
            FrontEndError::EinsumRankMismatch {
                named, ellipsis, ..
            } => {
                let at_least = if ellipsis { "at least " } else { "" };
                Diagnostic::new(
                    code,
                    message,
                    span,
                    format!("needs a shape with {at_least}{named} dimensions"),
                )
                .with_help(if named == 0 && !ellipsis {
                    "an empty term stands for a scalar operand, whose shape is `[]`"
                } else {
                    "write one subscript per dimension, or `...` for the dimensions not named"
                })
            }
            FrontEndError::EinsumZeroExtent { result, .. } => {
                Diagnostic::new(code, message, span, "extents start at 1")
                    .with_note(format!(
                        "by NumPy's rules the result has shape {} and holds only zeros",
                        ShapeDisplay(&result)
                    ))
                    .with_help(ZERO_EXTENT_HELP)
            }
            FrontEndError::EinsumExtentConflict {
                label,
                first,
                others,
            } => {
                let here = |o: &LabelUse| {
                    format!(
                        "`{label}` has extent {} here (operand {}, dimension {})",
                        o.extent,
                        o.operand,
                        o.dim + 1
                    )
                };
                let mut d = Diagnostic::new(code, message, span, here(&first));
                for o in &others {
                    d = d.with_label(o.span.clone(), here(o));
                }
                d.with_note(
                    "every occurrence of an index must range over the same extent, except that \
                     an extent of 1 in one operand broadcasts against another operand's extent",
                )
            }
            FrontEndError::EinsumBroadcast { first, others } => {
                let covers = |c: &EllipsisCover| {
                    format!(
                        "`...` of operand {} covers {}",
                        c.operand,
                        ShapeDisplay(&c.covers)
                    )
                };
                let mut d = Diagnostic::new(code, message, span, covers(&first));
                for c in &others {
                    d = d.with_label(c.span.clone(), covers(c));
                }
                d.with_note(
                    "aligned from the right, each position needs equal extents or an extent of 1",
                )
            }
            FrontEndError::EinsumOutputWithoutEllipsis { .. } => {
                Diagnostic::new(code, message, span, "no `...` here").with_help(
                    "add `...` to the output to keep the broadcast dimensions, as NumPy requires",
                )
            }
            FrontEndError::EinsumOutputRepeated { first, .. } => {
                Diagnostic::new(code, message, span, "repeated here")
                    .with_label(first, "first here")
                    .with_help(
                        "an output index names one dimension of the result; take a diagonal by \
                         repeating the index in an operand instead",
                    )
            }
            FrontEndError::EinsumOutputUnknown { inputs, .. } => {
                Diagnostic::new(code, message, span, "not among the inputs' subscripts")
                    .with_label(inputs, "the operands' subscripts")
                    .with_help(
                        "every output index must occur in some operand; its extent comes from \
                         there",
                    )
            }
            FrontEndError::TinInvalidChar(e) => {
                let mut d = Diagnostic::from(ParseError::from(e));
                d.help = Some(
                    "names are ASCII letters, digits and `_`; comments start with `//`".into(),
                );
                d
            }
            FrontEndError::Parse(e) => Diagnostic::from(e),
            FrontEndError::TinTooDeep { .. } => {
                Diagnostic::new(code, message, span, "this statement")
                    .with_help("split the expression into several statements over temporaries")
            }
            FrontEndError::TinSyntax {
                expected, found, ..
            } => {
                let d = Diagnostic::new(code, message, span, format!("expected {expected}"));
                match (expected, found) {
                    (TinExpected::CloseParen(open), _) => {
                        d.with_label(open, "to close this parenthesis")
                    }
                    (TinExpected::OperatorOrEnd, TinToken::Symbol(s)) if s == "[" => {
                        d.with_help("tensors are indexed with parentheses, e.g. `A(i, j)`")
                    }
                    _ => d,
                }
            }
            FrontEndError::TinCompoundAssign { op, target, .. } => {
                Diagnostic::new(code, message, span, "only `=` and `+=` assign").with_help(format!(
                    "write the update out, e.g. `{target} = {target} {op} (...)`"
                ))
            }
            FrontEndError::TinRankMismatch {
                name,
                indices,
                decl,
                shape,
                ..
            } => {
                let rank = shape.len();
                let needs = format!("needs {rank} ind{}", if rank == 1 { "ex" } else { "ices" });
                let d = Diagnostic::new(code, message, span, needs).with_label(
                    decl,
                    format!("`{name}` is declared with shape {}", ShapeDisplay(&shape)),
                );
                if indices == 0 {
                    let example = AccessText {
                        indices: (0..rank).map(|i| format!("i{i}")).collect(),
                        name,
                    };
                    d.with_help(format!("write `{example}`"))
                } else {
                    d
                }
            }
            FrontEndError::TinExtentConflict {
                index,
                first,
                others,
            } => {
                let here = |o: &IndexUse| {
                    format!(
                        "`{index}` has extent {} here (dimension {} of `{} : {}`)",
                        o.extent,
                        o.dim,
                        o.tensor,
                        ShapeDisplay(&o.shape)
                    )
                };
                let mut d = Diagnostic::new(code, message, span, here(&first));
                for o in &others {
                    d = d.with_label(o.span.clone(), here(o));
                }
                d.with_note("every occurrence of an index variable must range over the same extent")
                    .with_help(
                        "check the order of the extents in the declarations, or use different \
                         index variables for dimensions of different extents",
                    )
            }
            FrontEndError::TinRepeatedIndex { first, .. } => {
                Diagnostic::new(code, message, span, "repeated here")
                    .with_label(first, "first here")
                    .with_note(
                        "each index on the left names one dimension of the target; assigning \
                         only a diagonal is not expressible in TeIL",
                    )
            }
            FrontEndError::TinPartialSum {
                index,
                others,
                summed_at,
                extent,
                ..
            } => {
                let mut d = Diagnostic::new(
                    code,
                    message,
                    span,
                    format!("this term does not mention `{index}`"),
                );
                for s in others {
                    d = d.with_label(s, "nor does this term");
                }
                if let Some(at) = summed_at {
                    d = d.with_label(
                        at,
                        format!(
                            "`{index}` is summed because it does not occur on the left-hand side"
                        ),
                    );
                }
                d.with_note(format!(
                    "the sum over `{index}` covers the whole right-hand side, so a term without \
                     `{index}` counts once for each of its {extent} values (spec/frontends.md)"
                ))
                .with_help(format!(
                    "to sum only the terms that mention `{index}`, assign them to a tensor of \
                     their own first"
                ))
            }
            FrontEndError::TinUndeclared {
                name,
                target,
                extents,
                ..
            } => {
                let help = match extents {
                    Some(e) => format!(
                        "declare it first, e.g. `alloc {name} : {}`",
                        ShapeDisplay(&e)
                    ),
                    None => format!(
                        "declare it first, with one extent per index: `alloc {name} : [...]`"
                    ),
                };
                Diagnostic::new(code, message, span, "not declared")
                    .with_rule(if target { "OK-Stmt" } else { "T-Var" })
                    .with_help(help)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one diagnostic says, field by field, for the table below.
    struct Want {
        code: &'static str,
        rule: Option<&'static str>,
        message: &'static str,
        label: &'static str,
        secondary: &'static [(Span, &'static str)],
        notes: &'static [&'static str],
        help: Option<&'static str>,
    }

    fn check(e: FrontEndError, want: Want) {
        let span = e.span().clone();
        let d = Diagnostic::from(e);
        let secondary: Vec<(Span, &str)> = d
            .secondary
            .iter()
            .map(|l| (l.span.clone(), l.message.as_str()))
            .collect();
        assert_eq!(
            (
                d.code.as_str(),
                d.rule,
                d.message.as_str(),
                d.primary.span.clone(),
                d.primary.message.as_str(),
            ),
            (want.code, want.rule, want.message, span, want.label),
        );
        assert_eq!(secondary, want.secondary, "{}", d.message);
        assert_eq!(d.notes, want.notes, "{}", d.message);
        assert_eq!(d.help.as_deref(), want.help, "{}", d.message);
        // The front ends suggest no edits (yet): a help is advice, not a fix.
        assert!(d.fixes.is_empty(), "{}", d.message);
    }

    const NONE: &[(Span, &str)] = &[];

    #[test]
    fn equation_errors() {
        let eq = |span: Span, problem| FrontEndError::Equation { span, problem };
        let want = |message, label, secondary| Want {
            code: "E0401",
            rule: None,
            message,
            label,
            secondary,
            notes: &[],
            help: Some(EQUATION_HELP),
        };
        check(
            eq(4..5, EquationProblem::CommaAfterArrow),
            want("`,` after `->`", "the output is a single term", NONE),
        );
        check(
            eq(5..7, EquationProblem::ArrowTwice { first: 2..4 }),
            want("`->` given twice", "second `->`", &[(2..4, "first `->`")]),
        );
        check(
            eq(2..3, EquationProblem::Stray('-')),
            want(
                "stray `-`",
                "`-` and `>` only occur together, as `->`",
                NONE,
            ),
        );
        check(
            eq(4..7, EquationProblem::EllipsisTwice { first: 0..3 }),
            want(
                "`...` given twice in one term",
                "second `...`",
                &[(0..3, "first `...`")],
            ),
        );
        check(
            eq(1..3, EquationProblem::LoneDot),
            want("a lone `.`", "an ellipsis is exactly three dots", NONE),
        );
        check(
            eq(
                4..5,
                EquationProblem::InvalidChars {
                    chars: vec!['$'],
                    others: vec![],
                },
            ),
            want(
                "invalid character '$' in an einsum equation",
                "not a subscript",
                NONE,
            ),
        );
        check(
            eq(
                1..2,
                EquationProblem::InvalidChars {
                    chars: vec!['2', '$'],
                    others: std::iter::once(6..7).collect(),
                },
            ),
            want(
                "invalid characters '2', '$' in an einsum equation",
                "not a subscript",
                &[(6..7, "'$' is not a subscript either")],
            ),
        );
    }

    #[test]
    fn shape_list_errors() {
        let shapes = |span: Span, problem| FrontEndError::Shapes { span, problem };
        let want = |message, label, help| Want {
            code: "E0408",
            rule: None,
            message,
            label,
            secondary: NONE,
            notes: &[],
            help,
        };
        check(
            shapes(8..9, ShapesProblem::Trailing),
            want(
                "unexpected text after the shape list",
                "expected the end here",
                Some(SHAPES_HELP),
            ),
        );
        check(
            shapes(0..1, ShapesProblem::Expected(ShapesExpected::OpenList)),
            want(
                "expected `[`",
                "expected `[` to open the list of shapes here",
                Some(SHAPES_HELP),
            ),
        );
        check(
            shapes(1..2, ShapesProblem::Expected(ShapesExpected::OpenShape)),
            want(
                "expected `[`",
                "expected `[` to open a shape here",
                Some(SHAPES_HELP),
            ),
        );
        check(
            shapes(6..6, ShapesProblem::Expected(ShapesExpected::CommaOrClose)),
            want(
                "expected `]`",
                "expected `,` or `]` here",
                Some(SHAPES_HELP),
            ),
        );
        check(
            shapes(4..5, ShapesProblem::ExpectedExtent),
            want(
                "expected an extent",
                "expected a natural number here",
                Some(SHAPES_HELP),
            ),
        );
        check(
            shapes(2..25, ShapesProblem::ExtentTooLarge("9".repeat(23))),
            want(
                "extent `99999999999999999999999` does not fit in 64 bits",
                "too large",
                None,
            ),
        );
    }

    #[test]
    fn einsum_errors() {
        check(
            FrontEndError::EinsumTooManyOperands {
                span: 0..129,
                operands: 65,
            },
            Want {
                code: "E0409",
                rule: None,
                message: "the equation has 65 operands; the limit is 64",
                label: "too many operands",
                secondary: NONE,
                notes: &[],
                help: None,
            },
        );
        let count_help =
            Some("give one shape per operand, in order: `ij,jk->ik` takes two, such as [2, 3] and [3, 4]");
        check(
            FrontEndError::EinsumOperandCount {
                span: 0..5,
                operands: 2,
                shapes: 1,
            },
            Want {
                code: "E0402",
                rule: None,
                message: "the equation has 2 operands but 1 shape was given",
                label: "2 operands",
                secondary: NONE,
                notes: &[],
                help: count_help,
            },
        );
        check(
            FrontEndError::EinsumOperandCount {
                span: 0..2,
                operands: 1,
                shapes: 2,
            },
            Want {
                code: "E0402",
                rule: None,
                message: "the equation has 1 operand but 2 shapes were given",
                label: "1 operand",
                secondary: NONE,
                notes: &[],
                help: count_help,
            },
        );
        check(
            FrontEndError::EinsumRankMismatch {
                span: 0..2,
                operand: 0,
                named: 2,
                ellipsis: false,
                shape: vec![2, 3, 4],
            },
            Want {
                code: "E0403",
                rule: None,
                message: "operand 0 has 2 subscripts but its shape [2, 3, 4] has 3 dimensions",
                label: "needs a shape with 2 dimensions",
                secondary: NONE,
                notes: &[],
                help: Some(
                    "write one subscript per dimension, or `...` for the dimensions not named",
                ),
            },
        );
        check(
            FrontEndError::EinsumRankMismatch {
                span: 0..6,
                operand: 1,
                named: 1,
                ellipsis: true,
                shape: vec![],
            },
            Want {
                code: "E0403",
                rule: None,
                message: "operand 1 has 1 subscript but its shape [] has 0 dimensions",
                label: "needs a shape with at least 1 dimensions",
                secondary: NONE,
                notes: &[],
                help: Some(
                    "write one subscript per dimension, or `...` for the dimensions not named",
                ),
            },
        );
        check(
            FrontEndError::EinsumRankMismatch {
                span: 0..0,
                operand: 0,
                named: 0,
                ellipsis: false,
                shape: vec![2],
            },
            Want {
                code: "E0403",
                rule: None,
                message: "operand 0 has 0 subscripts but its shape [2] has 1 dimension",
                label: "needs a shape with 0 dimensions",
                secondary: NONE,
                notes: &[],
                help: Some("an empty term stands for a scalar operand, whose shape is `[]`"),
            },
        );
        check(
            FrontEndError::EinsumZeroExtent {
                span: 0..2,
                operand: 0,
                shape: vec![2, 0],
                result: vec![2],
            },
            Want {
                code: "E0102",
                rule: None,
                message: "operand 0 has an extent of 0 (shape [2, 0])",
                label: "extents start at 1",
                secondary: NONE,
                notes: &["by NumPy's rules the result has shape [2] and holds only zeros"],
                help: Some(ZERO_EXTENT_HELP),
            },
        );
    }

    #[test]
    fn einsum_extent_and_output_errors() {
        let at = |span: Span, operand, dim, extent| LabelUse {
            span,
            operand,
            dim,
            extent,
        };
        let note: &[&str] = &[
            "every occurrence of an index must range over the same extent, \
                               except that an extent of 1 in one operand broadcasts against \
                               another operand's extent",
        ];
        check(
            FrontEndError::EinsumExtentConflict {
                label: 'j',
                first: at(1..2, 0, 1, 3),
                others: vec![at(3..4, 1, 0, 4), at(9..10, 2, 0, 3)],
            },
            Want {
                code: "E0404",
                rule: None,
                message: "index `j` is bound to different extents (3, 4)",
                label: "`j` has extent 3 here (operand 0, dimension 2)",
                secondary: &[
                    (3..4, "`j` has extent 4 here (operand 1, dimension 1)"),
                    (9..10, "`j` has extent 3 here (operand 2, dimension 1)"),
                ],
                notes: note,
                help: None,
            },
        );
        // An extent of 1 inside the operand that also has 3 (a diagonal): NumPy rejects it too.
        check(
            FrontEndError::EinsumExtentConflict {
                label: 'j',
                first: at(0..1, 0, 0, 1),
                others: vec![at(1..2, 0, 1, 3)],
            },
            Want {
                code: "E0404",
                rule: None,
                message: "index `j` is bound to different extents (1, 3)",
                label: "`j` has extent 1 here (operand 0, dimension 1)",
                secondary: &[(1..2, "`j` has extent 3 here (operand 0, dimension 2)")],
                notes: note,
                help: None,
            },
        );
        let cover = |span: Span, operand, covers: Vec<u64>| EllipsisCover {
            span,
            operand,
            covers,
        };
        check(
            FrontEndError::EinsumBroadcast {
                first: cover(5..8, 1, vec![4]),
                others: vec![cover(0..3, 0, vec![2])],
            },
            Want {
                code: "E0407",
                rule: None,
                message: "the dimensions under `...` cannot be broadcast together",
                label: "`...` of operand 1 covers [4]",
                secondary: &[(0..3, "`...` of operand 0 covers [2]")],
                notes: &[
                    "aligned from the right, each position needs equal extents or an extent of 1",
                ],
                help: None,
            },
        );
        check(
            FrontEndError::EinsumOutputWithoutEllipsis {
                span: 6..7,
                dims: 1,
            },
            Want {
                code: "E0407",
                rule: None,
                message: "the operands' `...` cover 1 dimension but the output has no `...`",
                label: "no `...` here",
                secondary: NONE,
                notes: &[],
                help: Some(
                    "add `...` to the output to keep the broadcast dimensions, as NumPy requires",
                ),
            },
        );
        check(
            FrontEndError::EinsumOutputRepeated {
                span: 5..6,
                label: 'i',
                first: 4..5,
            },
            Want {
                code: "E0406",
                rule: None,
                message: "index `i` is repeated in the output",
                label: "repeated here",
                secondary: &[(4..5, "first here")],
                notes: &[],
                help: Some(
                    "an output index names one dimension of the result; take a diagonal by \
                     repeating the index in an operand instead",
                ),
            },
        );
        check(
            FrontEndError::EinsumOutputUnknown {
                span: 5..6,
                label: 'z',
                inputs: 0..2,
            },
            Want {
                code: "E0405",
                rule: None,
                message: "output index `z` does not occur in any operand",
                label: "not among the inputs' subscripts",
                secondary: &[(0..2, "the operands' subscripts")],
                notes: &[],
                help: Some(
                    "every output index must occur in some operand; its extent comes from there",
                ),
            },
        );
    }

    #[test]
    fn index_notation_syntax_errors() {
        check(
            FrontEndError::TinInvalidChar(LexError {
                span: 7..10,
                found: '@',
                count: 3,
            }),
            Want {
                code: "E0002",
                rule: None,
                message: "invalid character '@', 3 times in a row",
                label: "these characters cannot start a token",
                secondary: NONE,
                notes: &[],
                help: Some("names are ASCII letters, digits and `_`; comments start with `//`"),
            },
        );
        check(
            FrontEndError::from(ParseError::LiteralNotFinite {
                span: 4..9,
                written: "1e999".into(),
            }),
            Want {
                code: "E0004",
                rule: None,
                message: "numeric literal `1e999` is too large for a 64-bit float",
                label: "rounds to infinity",
                secondary: NONE,
                notes: &[],
                help: None,
            },
        );
        check(
            FrontEndError::from(ParseError::DeclAfterStmt {
                span: 20..33,
                name: "C".into(),
                first_stmt: 8..19,
            }),
            Want {
                code: "E0006",
                rule: None,
                message: "declaration of `C` after a statement",
                label: "declarations must come before all statements",
                secondary: &[(8..19, "the first statement is here")],
                notes: &[],
                help: Some("move this declaration above the first statement"),
            },
        );
        check(
            FrontEndError::TinTooDeep { span: 4..5 },
            Want {
                code: "E0005",
                rule: None,
                message: "expression nested too deeply (the limit is 512 levels)",
                label: "this statement",
                secondary: NONE,
                notes: &[],
                help: Some("split the expression into several statements over temporaries"),
            },
        );
        let syntax = |expected, found| FrontEndError::TinSyntax {
            span: 12..12,
            expected,
            found,
        };
        let want = |message, label, secondary, help| Want {
            code: "E0501",
            rule: None,
            message,
            label,
            secondary,
            notes: &[],
            help,
        };
        check(
            syntax(TinExpected::Operand, TinToken::End),
            want(
                "expected a tensor access, a number or `(`, found end of statement",
                "expected a tensor access, a number or `(`",
                NONE,
                None,
            ),
        );
        check(
            syntax(TinExpected::CloseParen(7..8), TinToken::Number("2".into())),
            want(
                "expected `)`, found number `2`",
                "expected `)`",
                &[(7..8, "to close this parenthesis")],
                None,
            ),
        );
        check(
            syntax(TinExpected::OperatorOrEnd, TinToken::Symbol("[".into())),
            want(
                "expected an operator or the end of the statement, found `[`",
                "expected an operator or the end of the statement",
                NONE,
                Some("tensors are indexed with parentheses, e.g. `A(i, j)`"),
            ),
        );
        check(
            syntax(TinExpected::Statement, TinToken::DeclKeyword),
            want(
                "expected a statement such as `A(i, j) = B(i, j)`, found a declaration keyword",
                "expected a statement such as `A(i, j) = B(i, j)`",
                NONE,
                None,
            ),
        );
        check(
            syntax(TinExpected::IndexVariable, TinToken::Symbol(",".into())),
            want(
                "expected an index variable, found `,`",
                "expected an index variable",
                NONE,
                None,
            ),
        );
        check(
            syntax(TinExpected::CommaOrParen, TinToken::Ident("j".into())),
            want(
                "expected `,` or `)`, found identifier `j`",
                "expected `,` or `)`",
                NONE,
                None,
            ),
        );
        check(
            syntax(TinExpected::Assignment, TinToken::Symbol("+".into())),
            want(
                "expected `=` or `+=`, found `+`",
                "expected `=` or `+=`",
                NONE,
                None,
            ),
        );
        check(
            FrontEndError::TinCompoundAssign {
                span: 5..7,
                op: '*',
                target: AccessText {
                    name: "A".into(),
                    indices: vec!["i".into(), "j".into()],
                },
            },
            Want {
                code: "E0505",
                rule: None,
                message: "`*=` is not supported",
                label: "only `=` and `+=` assign",
                secondary: NONE,
                notes: &[],
                help: Some("write the update out, e.g. `A(i, j) = A(i, j) * (...)`"),
            },
        );
    }

    #[test]
    fn index_notation_errors() {
        check(
            FrontEndError::TinRankMismatch {
                span: 30..31,
                name: "B".into(),
                indices: 0,
                decl: 6..7,
                shape: vec![2, 3],
            },
            Want {
                code: "E0502",
                rule: None,
                message: "`B` has rank 2 but is used without indices",
                label: "needs 2 indices",
                secondary: &[(6..7, "`B` is declared with shape [2, 3]")],
                notes: &[],
                help: Some("write `B(i0, i1)`"),
            },
        );
        check(
            FrontEndError::TinRankMismatch {
                span: 30..37,
                name: "B".into(),
                indices: 2,
                decl: 6..7,
                shape: vec![3],
            },
            Want {
                code: "E0502",
                rule: None,
                message: "`B` has rank 1 but is indexed with 2 indices",
                label: "needs 1 index",
                secondary: &[(6..7, "`B` is declared with shape [3]")],
                notes: &[],
                help: None,
            },
        );
        let at = |span: Span, extent, tensor: &str, dim, shape: Vec<u64>| IndexUse {
            span,
            extent,
            tensor: tensor.into(),
            dim,
            shape,
        };
        check(
            FrontEndError::TinExtentConflict {
                index: "k".into(),
                first: at(40..41, 3, "B", 2, vec![2, 3]),
                others: vec![at(46..47, 4, "C", 1, vec![4])],
            },
            Want {
                code: "E0503",
                rule: None,
                message: "index `k` ranges over dimensions of different extents",
                label: "`k` has extent 3 here (dimension 2 of `B : [2, 3]`)",
                secondary: &[(46..47, "`k` has extent 4 here (dimension 1 of `C : [4]`)")],
                notes: &["every occurrence of an index variable must range over the same extent"],
                help: Some(
                    "check the order of the extents in the declarations, or use different index \
                     variables for dimensions of different extents",
                ),
            },
        );
        check(
            FrontEndError::TinRepeatedIndex {
                span: 4..5,
                index: "i".into(),
                first: 2..3,
            },
            Want {
                code: "E0504",
                rule: None,
                message: "index `i` occurs twice on the left-hand side",
                label: "repeated here",
                secondary: &[(2..3, "first here")],
                notes: &[
                    "each index on the left names one dimension of the target; assigning only a \
                     diagonal is not expressible in TeIL",
                ],
                help: None,
            },
        );
        check(
            FrontEndError::TinPartialSum {
                span: 20..24,
                index: "k".into(),
                others: vec![27..31, 34..38],
                summed_at: Some(12..13),
                extent: 4,
            },
            Want {
                code: "W0501",
                rule: None,
                message: "summed index `k` does not occur in every term",
                label: "this term does not mention `k`",
                secondary: &[
                    (27..31, "nor does this term"),
                    (34..38, "nor does this term"),
                    (
                        12..13,
                        "`k` is summed because it does not occur on the left-hand side",
                    ),
                ],
                notes: &[
                    "the sum over `k` covers the whole right-hand side, so a term without `k` \
                     counts once for each of its 4 values (spec/frontends.md)",
                ],
                help: Some(
                    "to sum only the terms that mention `k`, assign them to a tensor of their \
                     own first",
                ),
            },
        );
        check(
            FrontEndError::TinUndeclared {
                span: 0..1,
                name: "Z".into(),
                target: true,
                extents: Some(vec![2, 3]),
            },
            Want {
                code: "E0201",
                rule: Some("OK-Stmt"),
                message: "assignment to undeclared variable `Z`",
                label: "not declared",
                secondary: NONE,
                notes: &[],
                help: Some("declare it first, e.g. `alloc Z : [2, 3]`"),
            },
        );
        check(
            FrontEndError::TinUndeclared {
                span: 9..10,
                name: "Q".into(),
                target: false,
                extents: None,
            },
            Want {
                code: "E0301",
                rule: Some("T-Var"),
                message: "use of undeclared variable `Q`",
                label: "not declared",
                secondary: NONE,
                notes: &[],
                help: Some("declare it first, with one extent per index: `alloc Q : [...]`"),
            },
        );
    }

    /// Severity follows the code: W0501 is the front ends' only warning.
    #[test]
    fn the_partial_sum_is_a_warning() {
        let d = Diagnostic::from(FrontEndError::TinPartialSum {
            span: 0..1,
            index: "k".into(),
            others: Vec::new(),
            summed_at: None,
            extent: 2,
        });
        assert!(!d.is_error());
        assert!(d.secondary.is_empty());
        let d = Diagnostic::from(FrontEndError::TinTooDeep { span: 0..1 });
        assert!(d.is_error());
    }
}
