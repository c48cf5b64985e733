//! Index-notation text (`.tin`) to its syntax tree (spec/frontends.md, "Index notation").
//!
//! The file is TeIL's own tokens (TeIL's lexer is reused): TeIL declarations, then statements
//! `A(i, j) = B(i, j, k) * C(k)` or `A(i) += C(i)`. Like TeIL's parser this one never stops at
//! the first error: the tokens are cut into items (a declaration starts at a declaration
//! keyword, a statement at `NAME =`, `NAME +=` or `NAME(...) =`), each item is parsed on its
//! own, and an item with an error is reported and dropped. Declarations are handed to TeIL's
//! parser unchanged, so they mean exactly what they mean in a `.teil` file.
//!
//! Nesting is bounded by [`MAX_EXPR_DEPTH`] (E0005) while parsing, so every later recursive pass
//! over a statement stays inside a small stack.
//!
//! Errors are [`FrontEndError`]s, worded in `guard/error.rs`; the declarations' diagnostics are
//! TeIL's parser's.

use crate::ast::*;
use crate::diagnostic::Diagnostic;
use crate::guard::error::{AccessText, FrontEndError, TinExpected, TinToken};
use crate::lexer::{lex, Token};
use crate::limits::MAX_EXPR_DEPTH;
use crate::parse_error::ParseError;

/// `A(i, j)`, `s()` or `s`.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    pub name: Ident,
    pub indices: Vec<Ident>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) enum TKind {
    Num(f64),
    Access(Access),
    Neg(Box<TExpr>),
    Paren(Box<TExpr>),
    /// `+ - * /`.
    Bin(BinOp, Box<TExpr>, Box<TExpr>),
}

#[derive(Clone, Debug)]
pub(crate) struct TExpr {
    pub kind: TKind,
    pub span: Span,
    /// Nodes on the longest path to a leaf (a leaf has depth 1).
    pub depth: usize,
}

/// `=` or `+=` (a read-modify-write, as in Tensor Comprehensions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Assign {
    Set,
    Add,
}

#[derive(Clone, Debug)]
pub(crate) struct TStmt {
    pub target: Access,
    pub assign: Assign,
    pub rhs: TExpr,
    pub span: Span,
}

#[derive(Debug, Default)]
pub(crate) struct TinFile {
    pub decls: Vec<Decl>,
    pub stmts: Vec<TStmt>,
}

/// TeIL's lexer spells some words as keywords that are ordinary names in index notation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok<'s> {
    Ident(&'s str),
    Num(&'s str),
    Decl,
    Plus,
    Minus,
    Star,
    Slash,
    LParen,
    RParen,
    Comma,
    Eq,
    /// Anything else TeIL knows (`#`, `.`, `^`, `[`, `]`, `:`): an error in a statement.
    Other(&'s str),
}

impl Tok<'_> {
    /// The token as an error reports it (`None`: the end of the statement).
    fn found(t: Option<&(Tok<'_>, Span)>) -> TinToken {
        match t {
            None => TinToken::End,
            Some((Tok::Ident(s), _)) => TinToken::Ident(s.to_string()),
            Some((Tok::Num(s), _)) => TinToken::Number(s.to_string()),
            Some((Tok::Decl, _)) => TinToken::DeclKeyword,
            Some((Tok::Other(s), _)) => TinToken::Symbol(s.to_string()),
            Some((t, _)) => TinToken::Symbol(t.operator().unwrap_or('?').to_string()),
        }
    }

    /// The character of an operator or punctuation token.
    fn operator(self) -> Option<char> {
        Some(match self {
            Tok::Plus => '+',
            Tok::Minus => '-',
            Tok::Star => '*',
            Tok::Slash => '/',
            Tok::LParen => '(',
            Tok::RParen => ')',
            Tok::Comma => ',',
            Tok::Eq => '=',
            Tok::Ident(_) | Tok::Num(_) | Tok::Decl | Tok::Other(_) => return None,
        })
    }
}

fn tokens(src: &str) -> (Vec<(Tok<'_>, Span)>, Vec<Diagnostic>) {
    let (raw, errors) = lex(src);
    let diags = errors
        .into_iter()
        .map(|e| FrontEndError::TinInvalidChar(e).into())
        .collect();
    let mut out = Vec::new();
    for (t, span) in raw {
        let text = &src[span.clone()];
        let tok = match t {
            Token::Ident(s) => Tok::Ident(s),
            Token::Number(s) => Tok::Num(s),
            Token::Alloc | Token::Var | Token::Input | Token::Output | Token::InOut => Tok::Decl,
            // `red+` and `red*` are single TeIL tokens; here they are a name and an operator.
            Token::Red(RedOp::Sum | RedOp::Product) => {
                out.push((Tok::Ident("red"), span.start..span.start + 3));
                let op = if text.ends_with('+') {
                    Tok::Plus
                } else {
                    Tok::Star
                };
                out.push((op, span.start + 3..span.end));
                continue;
            }
            Token::Red(_)
            | Token::BinKw(_)
            | Token::Prod
            | Token::Transp
            | Token::Diag
            | Token::Contr
            | Token::Expa
            | Token::Proj
            | Token::Func(_)
            | Token::Func2(_)
            | Token::Elem(_) => Tok::Ident(text),
            Token::Plus => Tok::Plus,
            Token::Minus => Tok::Minus,
            Token::Star => Tok::Star,
            Token::Slash => Tok::Slash,
            Token::LParen => Tok::LParen,
            Token::RParen => Tok::RParen,
            Token::Comma => Tok::Comma,
            Token::Eq => Tok::Eq,
            Token::Hash
            | Token::Dot
            | Token::Caret
            | Token::LBracket
            | Token::RBracket
            | Token::Colon
            | Token::Arrow => Tok::Other(text),
        };
        out.push((tok, span));
    }
    (out, diags)
}

/// Whether a statement starts at token `i`: `NAME`, optionally `( names and commas )`, then an
/// assignment operator (`=`, or `+ - * /` directly followed by `=`).
fn starts_stmt(toks: &[(Tok<'_>, Span)], i: usize) -> bool {
    if !matches!(toks[i].0, Tok::Ident(_)) {
        return false;
    }
    let mut j = i + 1;
    if toks.get(j).is_some_and(|t| t.0 == Tok::LParen) {
        j += 1;
        while toks
            .get(j)
            .is_some_and(|t| matches!(t.0, Tok::Ident(_) | Tok::Comma))
        {
            j += 1;
        }
        if !toks.get(j).is_some_and(|t| t.0 == Tok::RParen) {
            return false;
        }
        j += 1;
    }
    assign_at(toks, j).is_some()
}

/// The assignment operator at token `j` and the number of tokens it takes.
fn assign_at(toks: &[(Tok<'_>, Span)], j: usize) -> Option<(Tok<'static>, usize)> {
    match toks.get(j)? {
        (Tok::Eq, _) => Some((Tok::Eq, 1)),
        (op @ (Tok::Plus | Tok::Minus | Tok::Star | Tok::Slash), s) => {
            let (next, ns) = toks.get(j + 1)?;
            (*next == Tok::Eq && ns.start == s.end).then(|| {
                let op = match op {
                    Tok::Plus => Tok::Plus,
                    Tok::Minus => Tok::Minus,
                    Tok::Star => Tok::Star,
                    _ => Tok::Slash,
                };
                (op, 2)
            })
        }
        _ => None,
    }
}

pub(crate) fn parse(src: &str) -> (TinFile, Vec<Diagnostic>) {
    let (toks, mut diags) = tokens(src);
    let mut file = TinFile::default();
    let mut starts = Vec::new();
    for i in 0..toks.len() {
        let prev = i.checked_sub(1).map(|p| &toks[p].0);
        let is_start = match toks[i].0 {
            // A qualifier after `alloc`/`var`, or `alloc`/`var` after a qualifier, continues a
            // declaration; TeIL's lexer tells them apart, and so does TeIL's parser below.
            Tok::Decl => !(prev == Some(&Tok::Decl)),
            Tok::Ident(_) => starts_stmt(&toks, i),
            _ => false,
        };
        if is_start || i == 0 {
            starts.push(i);
        }
    }
    let mut first_stmt: Option<Span> = None;
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(toks.len());
        let item = &toks[s..e];
        let span = item[0].1.start..item[item.len() - 1].1.end;
        if item[0].0 == Tok::Decl {
            let (decl, mut ds) = declaration(src, span.clone());
            diags.append(&mut ds);
            if let Some(d) = decl {
                if let Some(stmt) = &first_stmt {
                    let e = ParseError::DeclAfterStmt {
                        span: d.span.clone(),
                        name: d.name.name.clone(),
                        first_stmt: stmt.clone(),
                    };
                    diags.push(FrontEndError::from(e).into());
                }
                file.decls.push(d);
            }
            continue;
        }
        let mut p = Parser {
            toks: item,
            pos: 0,
            nesting: 0,
            end: span.end,
        };
        match p.statement() {
            Ok(stmt) => {
                first_stmt.get_or_insert(stmt.span.clone());
                file.stmts.push(stmt);
            }
            Err(e) => diags.push(e.into()),
        }
    }
    diags.sort_by_key(|d| (d.primary.span.start, d.primary.span.end));
    (file, diags)
}

/// Parses one declaration with TeIL's own parser and moves its spans to where it sits in `src`.
fn declaration(src: &str, span: Span) -> (Option<Decl>, Vec<Diagnostic>) {
    let parsed = crate::parse(&src[span.clone()]);
    let off = span.start;
    let shift = |s: &Span| s.start + off..s.end + off;
    let diags = parsed
        .diagnostics
        .into_iter()
        .map(|mut d| {
            d.primary.span = shift(&d.primary.span);
            for l in &mut d.secondary {
                l.span = shift(&l.span);
            }
            d
        })
        .collect::<Vec<_>>();
    let mut decls = parsed.program.decls;
    if decls.len() != 1 || !parsed.program.stmts.is_empty() {
        return (None, diags);
    }
    let mut d = decls.remove(0);
    d.span = shift(&d.span);
    d.name.span = shift(&d.name.span);
    for n in &mut d.extents {
        n.span = (n.span.0 + off, n.span.1 + off);
    }
    (Some(d), diags)
}

struct Parser<'a, 's> {
    toks: &'a [(Tok<'s>, Span)],
    pos: usize,
    /// Open parentheses and prefix minus signs around the current position.
    nesting: usize,
    /// End of the item, for errors at its end.
    end: usize,
}

type PResult<T> = Result<T, FrontEndError>;

impl<'s> Parser<'_, 's> {
    fn peek(&self) -> Option<&(Tok<'s>, Span)> {
        self.toks.get(self.pos)
    }

    fn here(&self) -> Span {
        self.peek().map_or(self.end..self.end, |t| t.1.clone())
    }

    fn error(&self, expected: TinExpected) -> FrontEndError {
        FrontEndError::TinSyntax {
            span: self.here(),
            expected,
            found: Tok::found(self.peek()),
        }
    }

    fn eat(&mut self, t: Tok<'_>) -> bool {
        if self.peek().is_some_and(|(x, _)| *x == t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self, what: TinExpected) -> PResult<Ident> {
        match self.peek() {
            Some((Tok::Ident(s), span)) => {
                let id = Ident::new(*s, span.clone());
                self.pos += 1;
                Ok(id)
            }
            _ => Err(self.error(what)),
        }
    }

    /// `NAME` or `NAME(i, j, ...)`.
    fn access(&mut self, name: Ident) -> PResult<Access> {
        let mut indices = Vec::new();
        let mut end = name.span.end;
        if self.eat(Tok::LParen) {
            if !self.eat(Tok::RParen) {
                loop {
                    indices.push(self.ident(TinExpected::IndexVariable)?);
                    if self.eat(Tok::Comma) {
                        continue;
                    }
                    if self.peek().is_some_and(|t| t.0 == Tok::RParen) {
                        break;
                    }
                    return Err(self.error(TinExpected::CommaOrParen));
                }
                self.pos += 1;
            }
            end = self.toks[self.pos - 1].1.end;
        }
        let span = name.span.start..end;
        Ok(Access {
            name,
            indices,
            span,
        })
    }

    fn statement(&mut self) -> PResult<TStmt> {
        let name = self.ident(TinExpected::Statement)?;
        let target = self.access(name)?;
        let Some((op, n)) = assign_at(self.toks, self.pos) else {
            return Err(self.error(TinExpected::Assignment));
        };
        let assign_span = self.toks[self.pos].1.start..self.toks[self.pos + n - 1].1.end;
        self.pos += n;
        let assign = match op {
            Tok::Eq => Assign::Set,
            Tok::Plus => Assign::Add,
            other => {
                return Err(FrontEndError::TinCompoundAssign {
                    span: assign_span,
                    op: other.operator().unwrap_or('?'),
                    target: AccessText {
                        name: target.name.name.clone(),
                        indices: target.indices.iter().map(|i| i.name.clone()).collect(),
                    },
                });
            }
        };
        let rhs = self.expr()?;
        if self.pos < self.toks.len() {
            return Err(self.error(TinExpected::OperatorOrEnd));
        }
        let span = target.span.start..rhs.span.end;
        Ok(TStmt {
            target,
            assign,
            rhs,
            span,
        })
    }

    fn node(&self, kind: TKind, span: Span) -> PResult<TExpr> {
        let depth = 1 + match &kind {
            TKind::Num(_) | TKind::Access(_) => 0,
            TKind::Neg(e) | TKind::Paren(e) => e.depth,
            TKind::Bin(_, a, b) => a.depth.max(b.depth),
        };
        if depth > MAX_EXPR_DEPTH {
            return Err(too_deep(span));
        }
        Ok(TExpr { kind, span, depth })
    }

    fn binary(&self, op: BinOp, a: TExpr, b: TExpr) -> PResult<TExpr> {
        let span = a.span.start..b.span.end;
        self.node(TKind::Bin(op, Box::new(a), Box::new(b)), span)
    }

    /// `term (('+' | '-') term)*`
    fn expr(&mut self) -> PResult<TExpr> {
        let mut acc = self.term()?;
        loop {
            let op = if self.eat(Tok::Plus) {
                BinOp::Add
            } else if self.eat(Tok::Minus) {
                BinOp::Sub
            } else {
                return Ok(acc);
            };
            let rhs = self.term()?;
            acc = self.binary(op, acc, rhs)?;
        }
    }

    /// `unary (('*' | '/') unary)*`
    fn term(&mut self) -> PResult<TExpr> {
        let mut acc = self.unary()?;
        loop {
            let op = if self.eat(Tok::Star) {
                BinOp::Mul
            } else if self.eat(Tok::Slash) {
                BinOp::Div
            } else {
                return Ok(acc);
            };
            let rhs = self.unary()?;
            acc = self.binary(op, acc, rhs)?;
        }
    }

    fn nest(&mut self) -> PResult<()> {
        self.nesting += 1;
        if self.nesting > MAX_EXPR_DEPTH {
            return Err(too_deep(self.here()));
        }
        Ok(())
    }

    /// `'-' unary | primary`; a minus directly before a number is part of the literal.
    fn unary(&mut self) -> PResult<TExpr> {
        let Some((Tok::Minus, minus)) = self.peek().cloned() else {
            return self.primary();
        };
        self.pos += 1;
        self.nest()?;
        let inner = self.unary()?;
        self.nesting -= 1;
        let span = minus.start..inner.span.end;
        match inner.kind {
            TKind::Num(v) if inner.span.start == minus.end => self.node(TKind::Num(-v), span),
            _ => self.node(TKind::Neg(Box::new(inner)), span),
        }
    }

    /// A number, an access, or a parenthesised expression.
    fn primary(&mut self) -> PResult<TExpr> {
        match self.peek().cloned() {
            Some((Tok::Num(s), span)) => {
                self.pos += 1;
                match s.parse::<f64>() {
                    Ok(v) if v.is_finite() => self.node(TKind::Num(v), span),
                    _ => Err(ParseError::LiteralNotFinite {
                        span,
                        written: s.to_string(),
                    }
                    .into()),
                }
            }
            Some((Tok::Ident(s), span)) => {
                self.pos += 1;
                let a = self.access(Ident::new(s, span))?;
                let span = a.span.clone();
                self.node(TKind::Access(a), span)
            }
            Some((Tok::LParen, open)) => {
                self.pos += 1;
                self.nest()?;
                let inner = self.expr()?;
                self.nesting -= 1;
                if !self.eat(Tok::RParen) {
                    return Err(self.error(TinExpected::CloseParen(open.clone())));
                }
                let span = open.start..self.toks[self.pos - 1].1.end;
                self.node(TKind::Paren(Box::new(inner)), span)
            }
            _ => Err(self.error(TinExpected::Operand)),
        }
    }
}

fn too_deep(span: Span) -> FrontEndError {
    FrontEndError::TinTooDeep { span }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Code;

    fn show(e: &TExpr) -> String {
        match &e.kind {
            TKind::Num(v) => format!("{v}"),
            TKind::Access(a) => {
                let idx: Vec<&str> = a.indices.iter().map(|i| i.name.as_str()).collect();
                format!("{}({})", a.name.name, idx.join(","))
            }
            TKind::Neg(x) => format!("(neg {})", show(x)),
            TKind::Paren(x) => show(x),
            TKind::Bin(op, a, b) => format!("({} {} {})", op.symbol(), show(a), show(b)),
        }
    }

    #[test]
    fn statements_and_precedence() {
        let (f, d) = parse(
            "alloc A : [2, 3]\ninput var B : [2 3 4]\nA(i,j) = B(i,j,k) * C(k) + -2 * D(i) / s\nA(i) += -(x)\ns = t()",
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(f.decls.len(), 2);
        assert_eq!(f.decls[1].qualifier, Some(Qualifier::Input));
        assert_eq!(f.decls[1].extents[2].span(), 36..37);
        let got: Vec<String> = f.stmts.iter().map(|s| show(&s.rhs)).collect();
        assert_eq!(
            got,
            vec![
                "(+ (* B(i,j,k) C(k)) (/ (* -2 D(i)) s()))",
                "(neg x())",
                "t()"
            ]
        );
        assert_eq!(f.stmts[1].assign, Assign::Add);
        assert_eq!(f.stmts[0].target.span, 39..45);
    }

    #[test]
    fn every_bad_item_is_reported() {
        let (f, d) = parse("A(i) = B(i) +\nA(i,) = B(i)\nA(i) *= 2\nA(i) = B(i)");
        let codes: Vec<Code> = d.iter().map(|d| d.code).collect();
        assert_eq!(
            codes,
            vec![Code::TinSyntax, Code::TinSyntax, Code::TinCompoundAssign]
        );
        assert_eq!(f.stmts.len(), 1);
    }

    #[test]
    fn keywords_of_teil_are_names_here() {
        let (f, d) = parse("diag(i) = prod(i) + red+ transp(i)");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(show(&f.stmts[0].rhs), "(+ (+ prod(i) red()) transp(i))");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let src = format!("A = {}B{}", "(".repeat(100_000), ")".repeat(100_000));
        let (_, d) = parse(&src);
        assert_eq!(d[0].code, Code::TooDeep);
        let src = format!("A = B{}", " + B".repeat(5_000));
        let (_, d) = parse(&src);
        assert_eq!(d[0].code, Code::TooDeep);
        let src = format!("A = {}B", "-".repeat(100_000));
        let (_, d) = parse(&src);
        assert_eq!(d[0].code, Code::TooDeep);
    }
}
