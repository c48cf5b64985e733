//! Source text to spanned tokens.
//!
//! Hand-written rather than built with chumsky: TeIL's tokens are few and regular, and a plain
//! loop makes the two awkward cases explicit (`red+`/`red*` are single tokens, a number followed
//! by `.[` is a number and a contraction). Lexing never fails: an unknown character becomes an
//! [`LexError`] and lexing continues after it.

use crate::ast::{RedOp, Span};
use std::fmt;

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
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) => write!(f, "identifier `{s}`"),
            Token::Number(s) => write!(f, "number `{s}`"),
            Token::BinKw(op) => write!(f, "`{}`", op.prefix_keyword()),
            Token::Red(op) => write!(f, "`{}`", op.keyword()),
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
            Token::Ident(_) | Token::Number(_) | Token::BinKw(_) | Token::Red(_) => "",
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
    "redmin", "transp", "diag", "contr", "expa", "proj",
];

#[derive(Clone, Debug, PartialEq)]
pub struct LexError {
    pub span: Span,
    pub found: char,
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
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            // The `\r` of a CRLF line ending is not part of the comment.
            let end = if bytes[i - 1] == b'\r' { i - 1 } else { i };
            comments.push(start..end);
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &src[start..i];
            let tok = match word {
                "red" if matches!(bytes.get(i), Some(b'+') | Some(b'*')) => {
                    let op = if bytes[i] == b'+' {
                        RedOp::Sum
                    } else {
                        RedOp::Product
                    };
                    i += 1;
                    Token::Red(op)
                }
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
                "redmax" => Token::Red(RedOp::Max),
                "redmin" => Token::Red(RedOp::Min),
                "transp" => Token::Transp,
                "diag" => Token::Diag,
                "contr" => Token::Contr,
                "expa" => Token::Expa,
                "proj" => Token::Proj,
                _ => Token::Ident(word),
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
            None => {
                // Skip the whole UTF-8 character so spans stay on char boundaries.
                let ch = src[i..].chars().next().unwrap_or('\u{FFFD}');
                i += ch.len_utf8().max(1);
                errors.push(LexError {
                    span: start..i,
                    found: ch,
                });
            }
        }
    }
    (tokens, errors, comments)
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
    fn comments_and_bad_characters() {
        let (toks, errs) = lex("A // comment é\n$ é B");
        assert_eq!(toks.len(), 2);
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].found, '$');
        assert_eq!(errs[1].found, 'é');
        assert_eq!(errs[1].span, 18..20);
    }

    #[test]
    fn comments_are_kept_as_trivia() {
        let src = "A // one é\n// two\r\nB";
        let (toks, _, comments) = lex_with_comments(src);
        assert_eq!(toks.len(), 2);
        let texts: Vec<&str> = comments.iter().map(|c| &src[c.clone()]).collect();
        assert_eq!(texts, ["// one é", "// two"]);
    }
}
