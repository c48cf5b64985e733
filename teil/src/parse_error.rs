//! The errors of the parse phase (lexer and parser) as data, and the one place that turns them
//! into [`Diagnostic`]s.
//!
//! The lexer and the parser only record what they found (spans, the token found, the tokens
//! expected, the suggestion); the wording of every message, label and help of codes E0001 to
//! E0007 lives in the `#[error]` attributes and in `From<ParseError> for Diagnostic` below.

use crate::ast::{Qualifier, Span};
use crate::diagnostic::{Code, Diagnostic, Fix};
use crate::limits::MAX_EXPR_DEPTH;

/// Everything the lexer and the parser can report. The `Display` form is the diagnostic's
/// message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// E0002: a character that starts no token, `count` times in a row.
    #[error("invalid character {found:?}{}", times(*count))]
    InvalidChar {
        span: Span,
        found: char,
        count: usize,
    },
    /// E0002: a file that is not UTF-8; `span` is its first invalid byte sequence, `byte` that
    /// byte (`None` when the file ends inside a sequence).
    #[error("the file is not UTF-8 text (invalid byte at offset {})", span.start)]
    NotUtf8 { span: Span, byte: Option<u8> },
    /// E0001: a token (or the end of an item) where the grammar expects another.
    #[error("unexpected {found}")]
    Syntax {
        span: Span,
        /// The token found, described (`number \`2\``, `end of statement`).
        found: String,
        /// What would have been accepted, described, sorted, without repeats.
        expected: Vec<String>,
        /// The item being parsed (`statement`, `declaration`) and its span so far.
        context: Option<(Span, String)>,
        hint: Option<SyntaxHint>,
    },
    /// E0001: a number that is not a natural number where one is required.
    #[error("expected a natural number, found `{written}`")]
    NotNatural { span: Span, written: String },
    /// E0003.
    #[error("number `{written}` does not fit in 64 bits")]
    NumberTooLarge { span: Span, written: String },
    /// E0004.
    #[error("numeric literal `{written}` is too large for a 64-bit float")]
    LiteralNotFinite { span: Span, written: String },
    /// E0005: a statement whose nesting bound is over the limit.
    #[error("expression nested too deeply (up to {bound} levels; the limit is {MAX_EXPR_DEPTH})")]
    TooDeep { span: Span, bound: usize },
    /// E0006.
    #[error("declaration of `{name}` after a statement")]
    DeclAfterStmt {
        span: Span,
        name: String,
        first_stmt: Span,
    },
    /// E0007.
    #[error("`{name}` declared with two qualifiers")]
    DuplicateQualifier {
        name: String,
        first: (Qualifier, Span),
        second: (Qualifier, Span),
    },
}

/// What a syntax error most likely means, when the parser can tell.
#[derive(Clone, Debug, PartialEq)]
pub enum SyntaxHint {
    /// A reserved word where a variable name belongs.
    ReservedWord(&'static str),
    /// A prefix application where an operand (an atom) belongs.
    AtomOperand,
    /// A word read as a variable name that most likely is the keyword `keyword`: `replace` is
    /// the text to replace (a sign written against the word included), `word` the word and its
    /// span when it is not the token the error is at.
    Keyword {
        keyword: &'static str,
        replace: Span,
        word: Option<(String, Span)>,
    },
    /// An assignment written `written` (`:=`, `<-`, `==`) at `span`.
    Assignment { written: &'static str, span: Span },
}

/// A character that starts no token, or a run of the same such character with nothing but
/// whitespace between (`@@@@`, a pasted block of `€€€`), reported once.
#[derive(Clone, Debug, PartialEq)]
pub struct LexError {
    /// The whole run.
    pub span: Span,
    pub found: char,
    /// How many times `found` is repeated in the run (at least 1).
    pub count: usize,
}

impl From<LexError> for ParseError {
    fn from(e: LexError) -> ParseError {
        ParseError::InvalidChar {
            span: e.span,
            found: e.found,
            count: e.count,
        }
    }
}

fn times(count: usize) -> String {
    if count == 1 {
        String::new()
    } else {
        format!(", {count} times in a row")
    }
}

impl ParseError {
    /// Where the error is (the diagnostic's primary span).
    pub fn span(&self) -> &Span {
        match self {
            ParseError::InvalidChar { span, .. }
            | ParseError::NotUtf8 { span, .. }
            | ParseError::Syntax { span, .. }
            | ParseError::NotNatural { span, .. }
            | ParseError::NumberTooLarge { span, .. }
            | ParseError::LiteralNotFinite { span, .. }
            | ParseError::TooDeep { span, .. }
            | ParseError::DeclAfterStmt { span, .. } => span,
            ParseError::DuplicateQualifier { second, .. } => &second.1,
        }
    }

    pub fn code(&self) -> Code {
        match self {
            ParseError::InvalidChar { .. } | ParseError::NotUtf8 { .. } => Code::InvalidChar,
            ParseError::Syntax { .. } | ParseError::NotNatural { .. } => Code::Syntax,
            ParseError::NumberTooLarge { .. } => Code::NumberTooLarge,
            ParseError::LiteralNotFinite { .. } => Code::LiteralNotFinite,
            ParseError::TooDeep { .. } => Code::TooDeep,
            ParseError::DeclAfterStmt { .. } => Code::DeclAfterStmt,
            ParseError::DuplicateQualifier { .. } => Code::DuplicateQualifier,
        }
    }
}

impl From<ParseError> for Diagnostic {
    fn from(e: ParseError) -> Diagnostic {
        let (code, message, span) = (e.code(), e.to_string(), e.span().clone());
        match e {
            ParseError::InvalidChar { found, count, .. } => {
                let label = if count == 1 {
                    "this character cannot start a token"
                } else {
                    "these characters cannot start a token"
                };
                let help = if found == char::REPLACEMENT_CHARACTER {
                    "TeIL source is UTF-8 text; bytes that are not UTF-8 are shown as U+FFFD"
                } else {
                    "identifiers are ASCII letters, digits and `_`; comments start with `//`"
                };
                Diagnostic::new(code, message, span, label).with_help(help)
            }
            ParseError::NotUtf8 { byte, .. } => {
                let label = match byte {
                    Some(b) => format!("byte 0x{b:02X} is not UTF-8 here"),
                    None => "the file ends inside a UTF-8 sequence".to_string(),
                };
                Diagnostic::new(code, message, span, label)
                    .with_help("TeIL source is UTF-8, comments included; save the file as UTF-8")
            }
            ParseError::Syntax {
                found,
                expected,
                context,
                hint,
                ..
            } => {
                let label = if expected.is_empty() {
                    format!("unexpected {found}")
                } else {
                    format!("expected {}", join_or(&expected))
                };
                let mut d = Diagnostic::new(code, message, span, label);
                // For a misspelled keyword the word is the context that matters: "while
                // parsing this statement" would describe what the misspelling made of the
                // item, not what was meant.
                if let (Some((ctx_span, ctx)), false) =
                    (context, matches!(hint, Some(SyntaxHint::Keyword { .. })))
                {
                    d = d.with_label(ctx_span, format!("while parsing this {ctx}"));
                }
                match hint {
                    None => d,
                    Some(SyntaxHint::ReservedWord(word)) => d.with_help(format!(
                        "`{word}` is a reserved word and cannot name a variable (spec/grammar.md)"
                    )),
                    Some(SyntaxHint::AtomOperand) => d.with_help(
                        "operands of prefix operations are atoms: a name, a number or a parenthesised expression",
                    ),
                    Some(SyntaxHint::Keyword {
                        keyword,
                        replace,
                        word,
                    }) => {
                        if let Some((word, word_span)) = word {
                            d = d.with_label(
                                word_span,
                                format!("`{word}` is not a keyword; it is read as a variable name"),
                            );
                        }
                        d.with_help(format!("did you mean `{keyword}`?"))
                            .with_fix(Fix::replace(
                                format!("replace with `{keyword}`"),
                                replace,
                                keyword,
                            ))
                    }
                    Some(SyntaxHint::Assignment { written, span }) => d
                        .with_help("assignment is written `=`")
                        .with_fix(Fix::replace(
                            format!("replace `{written}` with `=`"),
                            span,
                            "=",
                        )),
                }
            }
            ParseError::NotNatural { .. } => {
                Diagnostic::new(code, message, span, "not a natural number").with_help(
                    "extents, positions and slice numbers are written with decimal digits only",
                )
            }
            ParseError::NumberTooLarge { .. } => Diagnostic::new(code, message, span, "too large"),
            ParseError::LiteralNotFinite { .. } => {
                Diagnostic::new(code, message, span, "rounds to infinity")
            }
            ParseError::TooDeep { .. } => Diagnostic::new(code, message, span, "this statement")
                .with_help("split the expression into several statements over temporaries"),
            ParseError::DeclAfterStmt { first_stmt, .. } => Diagnostic::new(
                code,
                message,
                span,
                "declarations must come before all statements",
            )
            .with_label(first_stmt, "the first statement is here")
            .with_help("move this declaration above the first statement"),
            ParseError::DuplicateQualifier { first, second, .. } => Diagnostic::new(
                code,
                message,
                span,
                format!("second qualifier `{}`", second.0.keyword()),
            )
            .with_label(first.1, format!("first qualifier `{}`", first.0.keyword()))
            .with_help("use `inout` for a variable that is both read and written"),
        }
    }
}

fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Display` form is the diagnostic's message, and the code is the variant's.
    #[test]
    fn every_error_becomes_its_diagnostic() {
        let q = |q: Qualifier, at: usize| (q, at..at + 1);
        let cases = [
            (
                ParseError::InvalidChar {
                    span: 0..4,
                    found: '@',
                    count: 4,
                },
                "E0002",
                "invalid character '@', 4 times in a row",
            ),
            (
                ParseError::NotUtf8 {
                    span: 3..4,
                    byte: Some(0xE9),
                },
                "E0002",
                "the file is not UTF-8 text (invalid byte at offset 3)",
            ),
            (
                ParseError::NotNatural {
                    span: 0..3,
                    written: "1.5".into(),
                },
                "E0001",
                "expected a natural number, found `1.5`",
            ),
            (
                ParseError::TooDeep {
                    span: 0..1,
                    bound: 900,
                },
                "E0005",
                "expression nested too deeply (up to 900 levels; the limit is 512)",
            ),
            (
                ParseError::DuplicateQualifier {
                    name: "A".into(),
                    first: q(Qualifier::Input, 0),
                    second: q(Qualifier::Output, 10),
                },
                "E0007",
                "`A` declared with two qualifiers",
            ),
        ];
        for (e, code, message) in cases {
            let span = e.span().clone();
            let d = Diagnostic::from(e);
            assert_eq!(
                (d.code.as_str(), d.message.as_str(), d.primary.span),
                (code, message, span)
            );
        }
    }

    #[test]
    fn a_keyword_hint_replaces_the_context_with_the_word() {
        let d = Diagnostic::from(ParseError::Syntax {
            span: 13..14,
            found: "number `2`".into(),
            expected: vec!["`+`".into(), "end of statement".into()],
            context: Some((0..12, "statement".into())),
            hint: Some(SyntaxHint::Keyword {
                keyword: "contr",
                replace: 4..12,
                word: Some(("contract".into(), 4..12)),
            }),
        });
        assert_eq!(d.message, "unexpected number `2`");
        assert_eq!(d.primary.message, "expected `+` or end of statement");
        assert_eq!(d.secondary.len(), 1);
        assert_eq!(d.secondary[0].span, 4..12);
        assert_eq!(d.help.as_deref(), Some("did you mean `contr`?"));
        assert_eq!(
            d.fixes[0].apply("C = contract 2 3 A").as_deref(),
            Some("C = contr 2 3 A")
        );
    }
}
