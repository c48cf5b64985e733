//! Source text to spanned tokens.
//!
//! Hand-written rather than built with chumsky: TeIL's tokens are few and regular, and a plain
//! loop makes the two awkward cases explicit (`red+`/`red*` are single tokens, a number followed
//! by `.[` is a number and a contraction). Lexing never fails: an unknown character (or a run of
//! it) becomes an [`LexError`] and lexing continues after it.
//!
//! The reserved words live here: [`keyword_token`] maps each to its token, and [`keyword_like`]
//! says which one a misspelled or long-form word (`contract`, `outptu`) most likely means.
//!
//! The encoding rules of spec/grammar.md ("Encoding") live here too: [`decode`] turns a file's
//! bytes into text, and [`lex`] skips a leading byte-order mark.

use crate::ast::{ElemType, Func, Func2, RedOp, Span};
use crate::diagnostic::Diagnostic;
pub use crate::parse_error::LexError;
use crate::parse_error::ParseError;
use std::fmt;

/// A file's bytes that are not UTF-8: the text to show diagnostics against, and the diagnostic.
#[derive(Clone, Debug, PartialEq)]
pub struct NotUtf8 {
    /// The bytes with each invalid sequence replaced by U+FFFD. Up to the first invalid byte it
    /// is the file itself, so the diagnostic's span points at the right place in both.
    pub lossy: String,
    /// E0002 at the first invalid byte.
    pub diagnostic: Diagnostic,
}

/// Reads a file's bytes as TeIL source. The whole file must be UTF-8, comments included: a file
/// that is not is no program at all, and the first invalid byte is reported as E0002 (nothing
/// after it is lexed). A leading byte-order mark is kept in the text, so that spans stay byte
/// offsets into the file; [`lex`] skips it.
pub fn decode(bytes: Vec<u8>) -> Result<String, NotUtf8> {
    let err = match String::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e,
    };
    let utf8 = err.utf8_error();
    let at = utf8.valid_up_to();
    let bytes = err.as_bytes();
    let (len, byte) = match utf8.error_len() {
        Some(n) => (n, Some(bytes[at])),
        None => (bytes.len() - at, None),
    };
    Err(NotUtf8 {
        lossy: String::from_utf8_lossy(bytes).into_owned(),
        diagnostic: ParseError::NotUtf8 {
            span: at..at + len,
            byte,
        }
        .into(),
    })
}

/// The byte-order mark, accepted (and skipped) as the very first character of a file only.
const BOM: &str = "\u{FEFF}";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Token<'src> {
    Ident(&'src str),
    /// A numeric literal as written: `3`, `2.5`, `1e-3`. Whether it must be a natural number is
    /// decided by the parser, which knows the context.
    Number(&'src str),
    Alloc,
    Var,
    Input,
    Output,
    InOut,
    /// `add`, `sub`, `mul`, `div`.
    BinKw(crate::ast::BinOp),
    Prod,
    Red(RedOp),
    Transp,
    Diag,
    Contr,
    Expa,
    Proj,
    /// `exp`, `log`, `sqrt`, `tanh`, `erf`, `abs`.
    Func(Func),
    /// `max`, `min`.
    Func2(Func2),
    /// `f32`, `f64`: an element type in a declaration, a conversion in an expression.
    Elem(ElemType),
    Plus,
    Minus,
    Star,
    Slash,
    Hash,
    Dot,
    Caret,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Colon,
    Comma,
    Eq,
    /// `<-`, which no rule accepts: an assignment written as in R or Haskell. It is a token of
    /// its own so that the statement it starts is cut as a statement and the report points at
    /// it with the right help (spec/grammar.md, "Lexical structure").
    Arrow,
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) => write!(f, "identifier `{s}`"),
            Token::Number(s) => write!(f, "number `{s}`"),
            Token::BinKw(op) => write!(f, "`{}`", op.prefix_keyword()),
            Token::Red(op) => write!(f, "`{}`", op.keyword()),
            Token::Func(g) => write!(f, "`{}`", g.keyword()),
            Token::Func2(g) => write!(f, "`{}`", g.keyword()),
            Token::Elem(t) => write!(f, "`{}`", t.keyword()),
            other => write!(f, "`{}`", other.text()),
        }
    }
}

impl Token<'_> {
    fn text(&self) -> &'static str {
        match self {
            Token::Alloc => "alloc",
            Token::Var => "var",
            Token::Input => "input",
            Token::Output => "output",
            Token::InOut => "inout",
            Token::Prod => "prod",
            Token::Transp => "transp",
            Token::Diag => "diag",
            Token::Contr => "contr",
            Token::Expa => "expa",
            Token::Proj => "proj",
            Token::Plus => "+",
            Token::Minus => "-",
            Token::Star => "*",
            Token::Slash => "/",
            Token::Hash => "#",
            Token::Dot => ".",
            Token::Caret => "^",
            Token::LParen => "(",
            Token::RParen => ")",
            Token::LBracket => "[",
            Token::RBracket => "]",
            Token::Colon => ":",
            Token::Comma => ",",
            Token::Eq => "=",
            Token::Arrow => "<-",
            Token::Ident(_)
            | Token::Number(_)
            | Token::BinKw(_)
            | Token::Red(_)
            | Token::Func(_)
            | Token::Func2(_)
            | Token::Elem(_) => "",
        }
    }

    /// Keywords that start a declaration (a qualifier or `alloc`/`var`).
    pub fn starts_decl(&self) -> bool {
        matches!(
            self,
            Token::Alloc | Token::Var | Token::Input | Token::Output | Token::InOut
        )
    }

    /// The text of a reserved word (`alloc`, `add`, `red+`, ...), `None` for other tokens.
    pub fn keyword_text(&self) -> Option<&'static str> {
        match self {
            Token::BinKw(op) => Some(op.prefix_keyword()),
            Token::Red(op) => Some(op.keyword()),
            Token::Func(g) => Some(g.keyword()),
            Token::Func2(g) => Some(g.keyword()),
            Token::Elem(t) => Some(t.keyword()),
            Token::Alloc
            | Token::Var
            | Token::Input
            | Token::Output
            | Token::InOut
            | Token::Prod
            | Token::Transp
            | Token::Diag
            | Token::Contr
            | Token::Expa
            | Token::Proj => Some(self.text()),
            _ => None,
        }
    }

    pub fn is_keyword(&self) -> bool {
        self.keyword_text().is_some()
    }

    pub fn is_qualifier(&self) -> bool {
        matches!(self, Token::Input | Token::Output | Token::InOut)
    }
}

/// Every reserved word. They cannot be used as variable names.
pub const KEYWORDS: &[&str] = &[
    "alloc", "var", "input", "output", "inout", "add", "sub", "mul", "div", "prod", "redmax",
    "redmin", "transp", "diag", "contr", "expa", "proj", "exp", "log", "sqrt", "tanh", "erf",
    "abs", "max", "min", "f32", "f64",
];

/// The token of a reserved word (`red+` and `red*` included), `None` for any other word.
pub fn keyword_token(word: &str) -> Option<Token<'static>> {
    Some(match word {
        "alloc" => Token::Alloc,
        "var" => Token::Var,
        "input" => Token::Input,
        "output" => Token::Output,
        "inout" => Token::InOut,
        "add" => Token::BinKw(crate::ast::BinOp::Add),
        "sub" => Token::BinKw(crate::ast::BinOp::Sub),
        "mul" => Token::BinKw(crate::ast::BinOp::Mul),
        "div" => Token::BinKw(crate::ast::BinOp::Div),
        "prod" => Token::Prod,
        "red+" => Token::Red(RedOp::Sum),
        "red*" => Token::Red(RedOp::Product),
        "redmax" => Token::Red(RedOp::Max),
        "redmin" => Token::Red(RedOp::Min),
        "transp" => Token::Transp,
        "diag" => Token::Diag,
        "contr" => Token::Contr,
        "expa" => Token::Expa,
        "proj" => Token::Proj,
        "exp" => Token::Func(Func::Exp),
        "log" => Token::Func(Func::Log),
        "sqrt" => Token::Func(Func::Sqrt),
        "tanh" => Token::Func(Func::Tanh),
        "erf" => Token::Func(Func::Erf),
        "abs" => Token::Func(Func::Abs),
        "max" => Token::Func2(Func2::Max),
        "min" => Token::Func2(Func2::Min),
        "f32" => Token::Elem(ElemType::F32),
        "f64" => Token::Elem(ElemType::F64),
        _ => return None,
    })
}

/// Words people write for a reserved word (the long forms of the abbreviations, other
/// languages' names), with the reserved word they mean. Used only to suggest a keyword in a
/// syntax error, never to accept a program.
const LONG_FORMS: &[(&str, &str)] = &[
    ("allocate", "alloc"),
    ("variable", "var"),
    ("inputs", "input"),
    ("outputs", "output"),
    ("in_out", "inout"),
    ("subtract", "sub"),
    ("multiply", "mul"),
    ("divide", "div"),
    ("product", "prod"),
    ("reduce", "red+"),
    ("sum", "red+"),
    ("maximum", "max"),
    ("minimum", "min"),
    ("absolute", "abs"),
    ("float", "f32"),
    ("float32", "f32"),
    ("float64", "f64"),
    ("double", "f64"),
    ("transpose", "transp"),
    ("permute", "transp"),
    ("diagonal", "diag"),
    ("contract", "contr"),
    ("contraction", "contr"),
    ("expand", "expa"),
    ("project", "proj"),
    ("projection", "proj"),
];

/// The reserved word that `word` (an identifier) most likely stands for: a keyword or a long
/// form of one written in another case (`Contr`, `TRANSPOSE`), a long form from
/// `LONG_FORMS`, or a keyword or long form within a small edit distance (`outptu`,
/// `transpsoe`), by the rule of "did you mean" for names. Whether the keyword fits where the word
/// stands is the parser's question.
pub fn keyword_like(word: &str) -> Option<&'static str> {
    let lower = word.to_ascii_lowercase();
    let candidates = KEYWORDS
        .iter()
        .chain(&["red+", "red*"])
        .map(|k| (*k, *k))
        .chain(LONG_FORMS.iter().copied());
    let mut best: Option<(usize, &'static str)> = None;
    for (written, meant) in candidates {
        if lower != written && !crate::diagnostic::is_similar(&lower, written) {
            continue;
        }
        let d = crate::diagnostic::edit_distance(&lower, written);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, meant));
        }
    }
    best.map(|(_, k)| k)
}

/// Spanned tokens and the characters that start none. Comments are dropped; see
/// [`lex_with_comments`] for the formatter, which keeps them.
pub fn lex(src: &str) -> (Vec<(Token<'_>, Span)>, Vec<LexError>) {
    let (tokens, errors, _) = lex_with_comments(src);
    (tokens, errors)
}

/// [`lex`], plus the span of every `//` comment (to the end of its line, line ending excluded) as
/// trivia beside the tokens: the parser never sees comments, `teil fmt` re-attaches them.
#[allow(clippy::type_complexity)]
pub fn lex_with_comments(src: &str) -> (Vec<(Token<'_>, Span)>, Vec<LexError>, Vec<Span>) {
    let bytes = src.as_bytes();
    let mut comments = Vec::new();
    let mut tokens = Vec::new();
    let mut errors = Vec::new();
    let mut i = if src.starts_with(BOM) { BOM.len() } else { 0 };
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            // A comment runs to the end of its line: `\n`, `\r\n` or a lone `\r`, the line ends
            // of every position TeIL reports (`crate::lines`).
            while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'\r' {
                i += 1;
            }
            comments.push(start..i);
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &src[start..i];
            let tok = match word {
                "red" if matches!(bytes.get(i), Some(b'+') | Some(b'*')) => {
                    i += 1;
                    keyword_token(&src[start..i]).unwrap_or(Token::Ident(word))
                }
                _ => keyword_token(word).unwrap_or(Token::Ident(word)),
            };
            tokens.push((tok, start..i));
            continue;
        }
        if c.is_ascii_digit() {
            i = scan_number(bytes, i);
            tokens.push((Token::Number(&src[start..i]), start..i));
            continue;
        }
        let tok = match c {
            b'+' => Some(Token::Plus),
            b'-' => Some(Token::Minus),
            b'*' => Some(Token::Star),
            b'/' => Some(Token::Slash),
            b'#' => Some(Token::Hash),
            b'.' => Some(Token::Dot),
            b'^' => Some(Token::Caret),
            b'(' => Some(Token::LParen),
            b')' => Some(Token::RParen),
            b'[' => Some(Token::LBracket),
            b']' => Some(Token::RBracket),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            b'=' => Some(Token::Eq),
            _ => None,
        };
        match tok {
            Some(t) => {
                i += 1;
                tokens.push((t, start..i));
            }
            // `<-`: see `Token::Arrow`.
            None if c == b'<' && bytes.get(i + 1) == Some(&b'-') => {
                i += 2;
                tokens.push((Token::Arrow, start..i));
            }
            None => {
                // Skip whole UTF-8 characters so spans stay on char boundaries, and the whole
                // run of this one (whitespace between included): a pasted block of garbage is
                // one report, not hundreds.
                let ch = src[i..].chars().next().unwrap_or('\u{FFFD}');
                let mut count = 0;
                loop {
                    i += ch.len_utf8();
                    count += 1;
                    let rest = src.get(i..).unwrap_or_default();
                    let gap = rest.len() - rest.trim_start_matches(is_space).len();
                    if !rest[gap..].starts_with(ch) {
                        break;
                    }
                    i += gap;
                }
                errors.push(LexError {
                    span: start..i,
                    found: ch,
                    count,
                });
            }
        }
    }
    (tokens, errors, comments)
}

/// The whitespace that separates tokens (ASCII only, as in the lexer's loop).
fn is_space(c: char) -> bool {
    c.is_ascii_whitespace()
}

/// `digits ('.' digits)? ([eE] [+-]? digits)?`; a `.` not followed by a digit is left alone so
/// that `2.[1 2]` stays a number and a contraction.
fn scan_number(bytes: &[u8], mut i: usize) -> usize {
    let digits = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    i = digits(i);
    if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(|b| b.is_ascii_digit()) {
        i = digits(i + 1);
    }
    if matches!(bytes.get(i), Some(b'e') | Some(b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+') | Some(b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(|b| b.is_ascii_digit()) {
            i = digits(j);
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Code;

    fn kinds(src: &str) -> Vec<Token<'_>> {
        let (toks, errs) = lex(src);
        assert!(errs.is_empty(), "{errs:?}");
        toks.into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn red_operators_are_single_tokens() {
        assert_eq!(
            kinds("red+ 1 red* 2 redmax redmin red"),
            vec![
                Token::Red(RedOp::Sum),
                Token::Number("1"),
                Token::Red(RedOp::Product),
                Token::Number("2"),
                Token::Red(RedOp::Max),
                Token::Red(RedOp::Min),
                Token::Ident("red"),
            ]
        );
    }

    #[test]
    fn numbers_and_contractions() {
        assert_eq!(
            kinds("2.5e-3 A.[1 2] 3.[1"),
            vec![
                Token::Number("2.5e-3"),
                Token::Ident("A"),
                Token::Dot,
                Token::LBracket,
                Token::Number("1"),
                Token::Number("2"),
                Token::RBracket,
                Token::Number("3"),
                Token::Dot,
                Token::LBracket,
                Token::Number("1"),
            ]
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped_at_the_start_only() {
        let (toks, errs) = lex("\u{FEFF}alloc A : [2]");
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(toks[0], (Token::Alloc, 3..8));
        let (_, errs) = lex("A \u{FEFF}");
        assert_eq!(errs.len(), 1);
        assert_eq!((errs[0].found, errs[0].span.clone()), ('\u{FEFF}', 2..5));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_reported_at_the_first_invalid_byte() {
        assert_eq!(decode(b"A = B".to_vec()).as_deref(), Ok("A = B"));
        let e = decode(b"A // \xe9t\xe9\n$".to_vec()).unwrap_err();
        assert_eq!(e.diagnostic.code, Code::InvalidChar);
        assert_eq!(e.diagnostic.primary.span, 5..6);
        assert_eq!(e.diagnostic.primary.message, "byte 0xE9 is not UTF-8 here");
        assert_eq!(e.lossy, "A // \u{FFFD}t\u{FFFD}\n$");
        let e = decode(b"A \xe2\x82".to_vec()).unwrap_err();
        assert_eq!(e.diagnostic.primary.span, 2..4);
    }

    #[test]
    fn comments_and_bad_characters() {
        let (toks, errs) = lex("A // comment é\n$ é B");
        assert_eq!(toks.len(), 2);
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].found, '$');
        assert_eq!(errs[1].found, 'é');
        assert_eq!(errs[1].span, 18..20);
    }

    #[test]
    fn a_run_of_one_invalid_character_is_one_error() {
        let src = "A @@@@ B €€ € C $? <";
        let (toks, errs) = lex(src);
        assert_eq!(toks.len(), 3);
        let got: Vec<(char, usize, &str)> = errs
            .iter()
            .map(|e| (e.found, e.count, &src[e.span.clone()]))
            .collect();
        assert_eq!(
            got,
            [
                ('@', 4, "@@@@"),
                ('€', 3, "€€ €"),
                ('$', 1, "$"),
                ('?', 1, "?"),
                ('<', 1, "<"),
            ]
        );
    }

    #[test]
    fn an_arrow_is_one_token() {
        assert_eq!(
            kinds("C <- A-B"),
            vec![
                Token::Ident("C"),
                Token::Arrow,
                Token::Ident("A"),
                Token::Minus,
                Token::Ident("B"),
            ]
        );
        // Apart, `<` starts no token.
        let (toks, errs) = lex("A < -B");
        assert_eq!(toks.len(), 3);
        assert_eq!((errs[0].found, errs[0].span.clone()), ('<', 2..3));
    }

    #[test]
    fn keyword_like_words() {
        for (word, keyword) in [
            ("contract", Some("contr")),
            ("Contr", Some("contr")),
            ("TRANSPOSE", Some("transp")),
            ("transpsoe", Some("transp")),
            ("diagonal", Some("diag")),
            ("reduce", Some("red+")),
            ("red", Some("red+")),
            ("allocate", Some("alloc")),
            ("outptu", Some("output")),
            ("inputs", Some("input")),
            ("A", None),
            ("x", None),
            ("total", None),
            ("C", None),
        ] {
            assert_eq!(keyword_like(word), keyword, "{word}");
        }
        // A hostile name is not compared character by character with every keyword.
        assert_eq!(keyword_like(&"contract".repeat(100_000)), None);
    }

    #[test]
    fn comments_are_kept_as_trivia() {
        let src = "A // one é\n// two\r\nB";
        let (toks, _, comments) = lex_with_comments(src);
        assert_eq!(toks.len(), 2);
        let texts: Vec<&str> = comments.iter().map(|c| &src[c.clone()]).collect();
        assert_eq!(texts, ["// one é", "// two"]);
    }

    #[test]
    fn a_lone_carriage_return_ends_a_comment() {
        // An editor shows `B` on a line of its own (LSP's lines), so it is not commented out.
        let src = "A // one\rB // two\u{2028}C";
        let (toks, _, comments) = lex_with_comments(src);
        assert_eq!(toks.len(), 2);
        let texts: Vec<&str> = comments.iter().map(|c| &src[c.clone()]).collect();
        assert_eq!(texts, ["// one", "// two\u{2028}C"]);
    }
}
