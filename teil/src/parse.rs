//! Tokens to an AST, for both surface syntaxes at once (spec/grammar.md).
//!
//! **Parsing never fails:** [`parse`] returns the program it could build and every error it
//! found. The token stream is first cut into items (a declaration starts at a declaration
//! keyword, a statement at `IDENT =`; `split_items` has the details), and each item is parsed on
//! its own with chumsky, so one bad statement never hides the errors in the next. An item that
//! does not parse is dropped from the program; its diagnostics are kept. Turning chumsky's
//! errors into E0001 (`syntax_diagnostic`) adds the helps new users need: the keyword a
//! misspelled word stands for, checked by re-parsing the item with it, and `=` for `:=`, `<-`
//! and `==`.
//!
//! Before an item is handed to chumsky, `nesting_bound` bounds the depth of the tree it could
//! produce; items over [`crate::limits::MAX_EXPR_DEPTH`] are rejected with E0005. That bound is
//! what keeps every later recursive pass (checker, interpreters, code generator, `Drop`) inside
//! a small stack whatever the input.

use crate::ast::*;
use crate::diagnostic::Diagnostic;
use crate::lexer::{keyword_like, keyword_token, lex, Token};
use crate::limits::MAX_EXPR_DEPTH;
pub use crate::parse_error::{ParseError, SyntaxHint};
use chumsky::extra::ParserExtra;
use chumsky::input::{Input as _, ValueInput};
use chumsky::label::LabelError;
use chumsky::prelude::*;

/// The result of parsing: whatever could be built, and everything that went wrong.
#[derive(Debug)]
pub struct Parsed {
    pub program: Program,
    pub diagnostics: Vec<Diagnostic>,
}

/// Statements whose nesting bound is at most this parse on the caller's stack.
const SHALLOW: usize = 32;

/// Stack reserved for parsing a deeper statement: enough for `MAX_EXPR_DEPTH` levels in a
/// debug build, with a wide margin.
const DEEP_PARSE_STACK: usize = 256 << 20;

type Extra<'t, 'src> = extra::Err<Rich<'t, Token<'src>, SimpleSpan>>;

pub fn parse(src: &str) -> Parsed {
    let (tokens, lex_errors) = lex(src);
    let mut errors: Vec<ParseError> = lex_errors.into_iter().map(ParseError::from).collect();
    let mut program = Program::default();
    let mut first_stmt: Option<Span> = None;

    let spanned: Vec<(Token<'_>, SimpleSpan)> = tokens
        .iter()
        .map(|(t, s)| (*t, SimpleSpan::from(s.clone())))
        .collect();
    // Where the lexer dropped a character the parser sees a gap; the error it then reports
    // in the same item is a consequence of the first, so only E0002 is shown for that item.
    // The lexer reports in source order, so the offsets are sorted and each item's question is
    // a binary search (a scan per item would be quadratic on a file of garbage).
    let lex_error_at: Vec<usize> = errors.iter().map(|e| e.span().start).collect();
    debug_assert!(lex_error_at.is_sorted());
    // Built once per call, not per item (building allocates and moves large combinator values),
    // each in a fast and a diagnosing version: `parse_item`.
    let decl_parser = (decl_parser(), decl_parser());
    let stmt_parser = (stmt_parser(), stmt_parser());
    for item in split_items(&tokens) {
        let toks = &tokens[item.clone()];
        let end = toks.last().map(|(_, s)| s.end).unwrap_or(0);
        let start = toks.first().map(|(_, s)| s.start).unwrap_or(0);
        // Characters dropped after an item's last token (`A = €€€`) belong to it too.
        let next_item = tokens.get(item.end).map_or(src.len(), |(_, s)| s.start);
        let first_at_or_after = lex_error_at.partition_point(|&p| p < start);
        let has_lex_error = lex_error_at
            .get(first_at_or_after)
            .is_some_and(|&p| p < next_item);
        let eoi = SimpleSpan::from(end..end);
        let item_tokens = &spanned[item.clone()];
        let input = spanned[item].map(eoi, |(t, s)| (t, s));
        let syntax = |errs: Vec<Rich<'_, Token<'_>, SimpleSpan>>, what: &str| -> Vec<ParseError> {
            if has_lex_error {
                return Vec::new();
            }
            errs.into_iter()
                .map(|e| syntax_error(e, what, item_tokens))
                .collect()
        };
        if toks[0].0.starts_decl() {
            let (decl, errs) = parse_item(&decl_parser, input);
            errors.extend(syntax(errs, "declaration"));
            let Some(decl) = decl else { continue };
            let decl = match decl {
                Ok(decl) => decl,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            if let Some(stmt_span) = &first_stmt {
                errors.push(ParseError::DeclAfterStmt {
                    span: decl.span.clone(),
                    name: decl.name.name.clone(),
                    first_stmt: stmt_span.clone(),
                });
            }
            program.decls.push(decl);
        } else {
            let bound = nesting_bound(toks);
            if bound > MAX_EXPR_DEPTH {
                let span = toks[0].1.start..end;
                errors.push(ParseError::TooDeep { span, bound });
                continue;
            }
            // Chumsky recurses through a dozen combinator frames per nesting level, several
            // KiB each in unoptimised builds: a statement near the depth limit needs tens of
            // MiB. Deep statements therefore parse on a fresh stack segment (reserved, not
            // committed, until used).
            let parse_stmt = || parse_item(&stmt_parser, input);
            let (stmt, errs) = if bound > SHALLOW {
                stacker::grow(DEEP_PARSE_STACK, parse_stmt)
            } else {
                parse_stmt()
            };
            errors.extend(syntax(errs, "statement"));
            match stmt {
                Some(Ok(stmt)) => {
                    first_stmt.get_or_insert(stmt.span.clone());
                    program.stmts.push(stmt);
                }
                Some(Err(e)) => errors.push(e),
                None => {}
            }
        }
    }
    let mut diagnostics: Vec<Diagnostic> = errors.into_iter().map(Diagnostic::from).collect();
    diagnostics.sort_by_key(|d| (d.primary.span.start, d.primary.span.end));
    Parsed {
        program,
        diagnostics,
    }
}

/// Parses one item with the first parser of `fast_rich`, built with chumsky's zero-sized
/// error, and only when that fails again with the second, the same grammar with `Rich` errors,
/// for the diagnostics. On an item that parses, recording what each alternative expected is
/// most of what a `Rich` parse costs; the grammar is the same, so the answer is the one the
/// `Rich` parse alone would give.
fn parse_item<'t, 'src: 't, I, O>(
    (fast, rich): &(
        impl Parser<'t, I, O, extra::Default>,
        impl Parser<'t, I, O, Extra<'t, 'src>>,
    ),
    input: I,
) -> (Option<O>, Vec<Rich<'t, Token<'src>, SimpleSpan>>)
where
    I: ValueInput<'t, Token = Token<'src>, Span = SimpleSpan> + Clone,
{
    let quick = fast.parse(input.clone());
    if !quick.has_errors() {
        if let Some(out) = quick.into_output() {
            return (Some(out), Vec::new());
        }
    }
    rich.parse(input).into_output_errors()
}

/// Cuts the token stream into items. An item starts at a declaration keyword (a qualifier not
/// directly after `alloc`/`var`, or `alloc`/`var` not directly after a qualifier) or at an
/// identifier (or a reserved word) followed by `=`. Stray tokens before the first item form an
/// item of their own, so they are reported, not lost.
///
/// Three more starts keep a mistake in the item where it is written instead of breaking the
/// item before it (which would then be dropped, and its declaration with it):
/// - an identifier followed by `:=` or `<-`: an assignment written with the wrong operator;
/// - an identifier directly after the `]` that ends a declaration: in a program that parses,
///   that is always the start of the next item, so this is a misspelled declaration
///   (`allocate C : [2]`) or a stray name, not the declaration's problem;
/// - and `alloc`/`var` do not start an item after such an identifier when it looks like a
///   misspelled qualifier (`outptu var B : [2]`), so that the pair is one item and the
///   report can suggest the qualifier.
fn split_items(tokens: &[(Token<'_>, Span)]) -> Vec<std::ops::Range<usize>> {
    let mut starts: Vec<usize> = Vec::new();
    // Whether the item being cut is not a statement (so a `]` in it ends a declaration, or a
    // misspelled one, not a postfix operation).
    let in_declaration = |starts: &[usize]| {
        starts.last().is_some_and(|&s| {
            !matches!(
                tokens.get(s + 1),
                Some((Token::Eq | Token::Arrow | Token::Colon, _))
            )
        })
    };
    for i in 0..tokens.len() {
        let t = &tokens[i].0;
        let prev = i.checked_sub(1).map(|p| &tokens[p].0);
        let next = tokens.get(i + 1).map(|(t, _)| t);
        let after_next = tokens.get(i + 2).map(|(t, _)| t);
        let is_start = match t {
            Token::Alloc | Token::Var => match prev {
                Some(p) if p.is_qualifier() => false,
                Some(Token::Ident(w)) if starts.last() == Some(&(i - 1)) => !keyword_like(w)
                    .and_then(keyword_token)
                    .is_some_and(|k| k.is_qualifier()),
                _ => true,
            },
            Token::Input | Token::Output | Token::InOut => {
                !matches!(prev, Some(Token::Alloc | Token::Var))
            }
            Token::Ident(_) => {
                next == Some(&Token::Eq)
                    || next == Some(&Token::Arrow)
                    // Not a declaration's name (`alloc A := [2]` is a declaration gone wrong).
                    || (next == Some(&Token::Colon)
                        && after_next == Some(&Token::Eq)
                        && !prev.is_some_and(|p| p.starts_decl()))
                    || (prev == Some(&Token::RBracket) && in_declaration(&starts))
            }
            // A reserved word used as an assignment target (`add = A`): a statement of its
            // own, so the error names the real problem instead of the previous item.
            t if t.is_keyword() => next == Some(&Token::Eq),
            _ => false,
        };
        if is_start || i == 0 {
            starts.push(i);
        }
    }
    let mut items = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(tokens.len());
        items.push(s..e);
    }
    items
}

/// A sound upper bound on the depth of the expression tree a statement can parse to (a leaf
/// has depth 1). The operator tokens written directly inside one parenthesis group (infix,
/// postfix, prefix keyword, a literal's minus) are the only nodes that can stand between the
/// group's root and its atoms, so the group's tree is at most `ops + max(1, deepest atom)`
/// deep, where an atom is a name, a number (depth 1) or a nested group (one `Paren` node over
/// the nested group's tree). The bound is exact for nested parentheses and operator chains.
fn nesting_bound<S>(tokens: &[(Token<'_>, S)]) -> usize {
    // Per open group: (operators directly in it, deepest nested group as an atom).
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    let content = |(ops, inner): (usize, usize)| ops + inner.max(1);
    for (t, _) in tokens {
        match t {
            Token::LParen => stack.push((0, 0)),
            // An unmatched `)` closes nothing (the parser reports it).
            Token::RParen if stack.len() > 1 => {
                let group = stack.pop().unwrap_or_default();
                let top = stack.last_mut().expect("outer group");
                top.1 = top.1.max(content(group) + 1);
            }
            Token::Plus
            | Token::Minus
            | Token::Star
            | Token::Slash
            | Token::Hash
            | Token::Dot
            | Token::Caret
            | Token::BinKw(_)
            | Token::Prod
            | Token::Red(_)
            | Token::Transp
            | Token::Diag
            | Token::Contr
            | Token::Expa
            | Token::Proj
            | Token::Func(_)
            | Token::Func2(_)
            | Token::Elem(_) => {
                if let Some(top) = stack.last_mut() {
                    top.0 += 1;
                }
            }
            _ => {}
        }
    }
    // Unclosed groups: fold them outwards as if closed at the end.
    while stack.len() > 1 {
        let group = stack.pop().unwrap_or_default();
        let top = stack.last_mut().expect("outer group");
        top.1 = top.1.max(content(group) + 1);
    }
    content(stack[0])
}

/// Records a chumsky error inside one item (a `statement` or a `declaration`, named by `what`;
/// its tokens are `toks`) as a [`ParseError::Syntax`], with the hint that explains it, if any.
/// Chumsky sees each item as a whole input, so its "end of input" is the end of the item and
/// is reported as such.
fn syntax_error(
    err: Rich<'_, Token<'_>, SimpleSpan>,
    what: &str,
    toks: &[(Token<'_>, SimpleSpan)],
) -> ParseError {
    let span = err.span().into_range();
    // The token the error is at (`toks.len()` at the end of the item).
    let at = toks
        .iter()
        .position(|(_, s)| s.start >= span.start)
        .unwrap_or(toks.len());
    let found = match err.found() {
        Some(t) => t.to_string(),
        None => format!("end of {what}"),
    };
    let mut expected: Vec<String> = err
        .expected()
        .map(|p| match p {
            chumsky::error::RichPattern::Token(t) => t.to_string(),
            // Only an item's first token can fail with the whole item expected; the item is
            // then neither a declaration nor a statement.
            chumsky::error::RichPattern::Label(l) if *l == "statement" => {
                "a declaration or a statement".to_string()
            }
            chumsky::error::RichPattern::Label(l) => l.to_string(),
            chumsky::error::RichPattern::EndOfInput => format!("end of {what}"),
            other => format!("{other:?}"),
        })
        .collect();
    expected.sort();
    expected.dedup();
    let context = err
        .contexts()
        .last()
        .map(|(ctx, ctx_span)| (ctx_span.into_range(), ctx.to_string()));
    let hint = syntax_hint(&err, toks, at, &found, &expected);
    ParseError::Syntax {
        span,
        found,
        expected,
        context,
        hint,
    }
}

/// What a syntax error most likely means, in order: an assignment written with another
/// language's operator, a misspelled keyword, a reserved word as a name, a prefix application
/// as an operand.
fn syntax_hint(
    err: &Rich<'_, Token<'_>, SimpleSpan>,
    toks: &[(Token<'_>, SimpleSpan)],
    at: usize,
    found: &str,
    expected: &[String],
) -> Option<SyntaxHint> {
    if let Some(hint) = wrong_assignment(toks, at, expected) {
        return Some(hint);
    }
    if let Some((word, keyword)) = misspelled_keyword(toks, at, err.span().start) {
        let written = &toks[word.clone()];
        let replace = written[0].1.start..written[written.len() - 1].1.end;
        let word = match written[0].0 {
            Token::Ident(w) if word.start != at => Some((w.to_string(), replace.clone())),
            _ => None,
        };
        return Some(SyntaxHint::Keyword {
            keyword,
            replace,
            word,
        });
    }
    if let Some(word) = err.found().and_then(Token::keyword_text) {
        if expected
            .iter()
            .any(|e| e == "variable name" || e == "a declaration or a statement")
        {
            return Some(SyntaxHint::ReservedWord(word));
        }
    }
    if expected.iter().any(|e| e == "operand") && found.starts_with('`') && !found.contains('(') {
        return Some(SyntaxHint::AtomOperand);
    }
    None
}

/// An assignment written with another language's operator: `C := A`, `C <- A` (found where
/// `=` is expected) or `C == A` (a second `=`).
fn wrong_assignment(
    toks: &[(Token<'_>, SimpleSpan)],
    at: usize,
    expected: &[String],
) -> Option<SyntaxHint> {
    let wants_eq = expected.iter().any(|e| e == "`=`");
    let (written, span) = match (toks.get(at), toks.get(at + 1)) {
        (Some((Token::Colon, c)), Some((Token::Eq, e))) if wants_eq => (":=", c.start..e.end),
        (Some((Token::Arrow, a)), _) if wants_eq => ("<-", a.into_range()),
        (Some((Token::Eq, e)), _) if at > 0 && toks[at - 1].0 == Token::Eq => {
            ("==", toks[at - 1].1.start..e.end)
        }
        _ => return None,
    };
    Some(SyntaxHint::Assignment { written, span })
}

/// A word near a syntax error that is most likely a misspelled keyword (`contract 2 3 A`,
/// `reduce+ 1 A`, `allocate C : [2]`, `outptu var B : [2]`): the range of `toks` it covers (a
/// sign written against it included, for `red+`/`red*`) and the keyword. The words considered
/// are the identifiers from four tokens before the error's token `at` up to it, nearest first,
/// that [`keyword_like`] maps to a keyword; a suggestion is made only if the item, with the
/// word replaced by the keyword, parses or fails only later than `error_start` (or, for an
/// operator where an operand is expected, parses with the operator's application in
/// parentheses). That test is what makes the suggestion fit its position (an operator where an
/// operator belongs, a qualifier before `var`); at most two words are tried, so a long item
/// costs at most four more parses.
fn misspelled_keyword(
    toks: &[(Token<'_>, SimpleSpan)],
    at: usize,
    error_start: usize,
) -> Option<(std::ops::Range<usize>, &'static str)> {
    let last = at.min(toks.len().checked_sub(1)?);
    let mut tries = 0;
    for j in (at.saturating_sub(4)..=last).rev() {
        let Token::Ident(word) = toks[j].0 else {
            continue;
        };
        let Some(keyword) = keyword_like(word) else {
            continue;
        };
        let against = |t: Token<'_>| {
            toks.get(j + 1)
                .is_some_and(|(n, s)| *n == t && s.start == toks[j].1.end)
        };
        let (keyword, range) = match keyword {
            "red+" | "red*" if against(Token::Plus) => ("red+", j..j + 2),
            "red+" | "red*" if against(Token::Star) => ("red*", j..j + 2),
            k => (k, j..j + 1),
        };
        let token = keyword_token(keyword)?;
        let span = SimpleSpan::from(toks[range.start].1.start..toks[range.end - 1].1.end);
        let mut fixed = toks.to_vec();
        fixed.splice(range.clone(), [(token, span)]);
        let fails_at = first_error(&fixed);
        if fails_at.is_none_or(|e| e > error_start) {
            return Some((range, keyword));
        }
        // An operator where an operand is expected (`add A contract 1 2 B`): the keyword fits
        // if the rest of the item, parenthesised, is an operand. The report for the fixed
        // text then asks for those parentheses.
        if fails_at == Some(span.start) {
            let end = toks[toks.len() - 1].1.end;
            fixed.insert(
                range.start,
                (Token::LParen, SimpleSpan::from(span.start..span.start)),
            );
            fixed.push((Token::RParen, SimpleSpan::from(end..end)));
            if first_error(&fixed).is_none() {
                return Some((range, keyword));
            }
        }
        tries += 1;
        if tries == 2 {
            break;
        }
    }
    None
}

/// Where chumsky's first error in an item is, parsing it as [`parse`] does (a declaration if
/// it starts with a declaration keyword, a statement otherwise); `None` when it parses.
fn first_error(toks: &[(Token<'_>, SimpleSpan)]) -> Option<usize> {
    let end = toks.last().map_or(0, |(_, s)| s.end);
    let input = toks.map(SimpleSpan::from(end..end), |(t, s)| (t, s));
    let starts =
        |errs: Vec<Rich<'_, Token<'_>, SimpleSpan>>| errs.iter().map(|e| e.span().start).min();
    if toks.first().is_some_and(|(t, _)| t.starts_decl()) {
        return starts(decl_parser::<_, Extra<'_, '_>>().parse(input).into_errors());
    }
    let bound = nesting_bound(toks);
    if bound > MAX_EXPR_DEPTH {
        return Some(0);
    }
    let parse_stmt = || starts(stmt_parser::<_, Extra<'_, '_>>().parse(input).into_errors());
    if bound > SHALLOW {
        stacker::grow(DEEP_PARSE_STACK, parse_stmt)
    } else {
        parse_stmt()
    }
}

fn span_of(s: SimpleSpan) -> Span {
    s.into_range()
}

/// A natural number in a type or operation argument. Any numeric token is accepted here, so
/// that a decimal (`1.5`) or an overflowing number is reported precisely, as an `Err` in the
/// output: E0001 for a number that is not a natural number, E0003 for one over 64 bits.
fn nat<'t, 'src: 't, I, E>(
) -> impl Parser<'t, I, Result<Nat, ParseError>, E> + Clone + use<'t, 'src, I, E>
where
    I: ValueInput<'t, Token = Token<'src>, Span = SimpleSpan>,
    E: ParserExtra<'t, I> + 't,
    E::Error: LabelError<'t, I, &'static str>,
{
    select! { Token::Number(s) = e => (s, e.span()) }
        .map(|(s, span): (&str, SimpleSpan)| {
            let span = span.into_range();
            if !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ParseError::NotNatural {
                    span,
                    written: s.to_string(),
                });
            }
            s.parse::<u64>()
                .map(|v| Nat::new(v, span.clone()))
                .map_err(|_| ParseError::NumberTooLarge {
                    span,
                    written: s.to_string(),
                })
        })
        .labelled("natural number")
}

fn decl_parser<'t, 'src: 't, I, E>(
) -> impl Parser<'t, I, Result<Decl, ParseError>, E> + Clone + use<'t, 'src, I, E>
where
    I: ValueInput<'t, Token = Token<'src>, Span = SimpleSpan>,
    E: ParserExtra<'t, I> + 't,
    E::Error: LabelError<'t, I, &'static str>,
{
    let qualifier = select! {
        Token::Input => Qualifier::Input,
        Token::Output => Qualifier::Output,
        Token::InOut => Qualifier::InOut,
    }
    .map_with(|q, e| {
        let span: SimpleSpan = e.span();
        (q, span.into_range())
    })
    .labelled("qualifier");
    let keyword = just(Token::Alloc)
        .or(just(Token::Var))
        .labelled("`alloc` or `var`");
    let ident = select! { Token::Ident(s) = e => (s, e.span()) }
        .map(|(s, span): (&str, SimpleSpan)| Ident::new(s, span.into_range()))
        .labelled("variable name");
    let extents = nat()
        .separated_by(just(Token::Comma).or_not())
        .allow_trailing()
        .collect::<Vec<_>>()
        .delimited_by(just(Token::LBracket), just(Token::RBracket));
    let elem = select! { Token::Elem(t) = e => (t, e.span()) }
        .map(|(t, span): (ElemType, SimpleSpan)| (t, span.into_range()))
        .labelled("element type");

    qualifier
        .or_not()
        .then_ignore(keyword)
        .then(qualifier.or_not())
        .then(ident)
        .then_ignore(just(Token::Colon))
        .then(elem.or_not())
        .then(extents)
        .then_ignore(end())
        .map_with(|((((q1, q2), name), elem), extents), e| {
            let span: SimpleSpan = e.span();
            let span = span.into_range();
            let qualifier = match (q1, q2) {
                (Some(a), Some(b)) => {
                    return Err(ParseError::DuplicateQualifier {
                        name: name.name,
                        first: a,
                        second: b,
                    });
                }
                (a, b) => a.or(b).map(|q| q.0),
            };
            let extents = extents.into_iter().collect::<Result<Vec<_>, _>>();
            let extents = extents?;
            let (elem, elem_span) = match elem {
                Some((t, span)) => (t, Some(span)),
                None => (ElemType::F64, None),
            };
            Ok(Decl {
                qualifier,
                name,
                elem,
                elem_span,
                extents,
                span,
            })
        })
        .labelled("declaration")
        .as_context()
}

fn stmt_parser<'t, 'src: 't, I, E>(
) -> impl Parser<'t, I, Result<Stmt, ParseError>, E> + Clone + use<'t, 'src, I, E>
where
    I: ValueInput<'t, Token = Token<'src>, Span = SimpleSpan>,
    E: ParserExtra<'t, I> + 't,
    E::Error: LabelError<'t, I, &'static str>,
{
    let ident = select! { Token::Ident(s) = e => (s, e.span()) }
        .map(|(s, span): (&str, SimpleSpan)| Ident::new(s, span.into_range()))
        .labelled("variable name");
    ident
        .then_ignore(just(Token::Eq))
        .then(expr_parser())
        .then_ignore(end())
        .map_with(|(target, value), e| {
            let value = value?;
            Ok(Stmt {
                target,
                value,
                span: span_of(e.span()),
            })
        })
        .labelled("statement")
        .as_context()
}

/// Expressions. Semantic errors found while parsing (a literal out of range) travel as `Err`
/// inside the output so that chumsky's own error recovery is not involved.
type PExpr = Result<Expr, ParseError>;

fn boxed2(a: PExpr, b: PExpr) -> Result<(Box<Expr>, Box<Expr>), ParseError> {
    Ok((Box::new(a?), Box::new(b?)))
}

fn expr_parser<'t, 'src: 't, I, E>() -> impl Parser<'t, I, PExpr, E> + Clone + use<'t, 'src, I, E>
where
    I: ValueInput<'t, Token = Token<'src>, Span = SimpleSpan>,
    E: ParserExtra<'t, I> + 't,
    E::Error: LabelError<'t, I, &'static str>,
{
    recursive(|expr| {
        // A literal may carry a leading minus (an extension: the papers have no negative
        // literals). Where an operand is expected `-` cannot be infix, so this is unambiguous.
        let number = just(Token::Minus)
            .or_not()
            .then(select! { Token::Number(s) => s })
            .map_with(|(minus, s), e| {
                let span: SimpleSpan = e.span();
                (minus.is_some(), s, span.into_range())
            })
            .map(|(minus, s, span): (bool, &str, Span)| {
                let text = if minus {
                    format!("-{s}")
                } else {
                    s.to_string()
                };
                match Literal::parse(&text) {
                    Some(lit) => Ok(Expr::new(ExprKind::Lit(lit), span)),
                    None => Err(ParseError::LiteralNotFinite {
                        span,
                        written: s.to_string(),
                    }),
                }
            });
        let var = select! { Token::Ident(s) = e => (s, e.span()) }
            .map(|(s, span): (&str, SimpleSpan)| Ident::new(s, span.into_range()))
            .map(|id| {
                let span = id.span.clone();
                Ok(Expr::new(ExprKind::Var(id), span))
            });
        let paren = expr
            .clone()
            .delimited_by(just(Token::LParen), just(Token::RParen))
            .map_with(|inner: PExpr, e| {
                Ok(Expr::new(
                    ExprKind::Paren(Box::new(inner?)),
                    span_of(e.span()),
                ))
            });
        let atom = var.or(number).or(paren).labelled("operand").boxed();

        let two = atom.clone().then(atom.clone());
        let prefix_bin = select! { Token::BinKw(op) => op }
            .then(two.clone())
            .map_with(|(op, (a, b)), e| {
                let (a, b) = boxed2(a, b)?;
                Ok(Expr::new(ExprKind::Binary(op, a, b), span_of(e.span())))
            });
        let prefix_prod = just(Token::Prod)
            .ignore_then(two.clone())
            .map_with(|(a, b), e| {
                let (a, b) = boxed2(a, b)?;
                Ok(Expr::new(ExprKind::Prod(a, b), span_of(e.span())))
            });
        let prefix_red = select! { Token::Red(op) => op }
            .then(nat())
            .then(atom.clone())
            .map_with(|((op, i), a), e| {
                Ok(Expr::new(
                    ExprKind::Reduce(op, i?, Box::new(a?)),
                    span_of(e.span()),
                ))
            });
        let pair_kw = select! {
            Token::Transp => 0u8,
            Token::Diag => 1u8,
            Token::Contr => 2u8,
            Token::Expa => 3u8,
            Token::Proj => 4u8,
        };
        let prefix_pair =
            pair_kw
                .then(nat())
                .then(nat())
                .then(atom.clone())
                .map_with(|(((kw, i), j), a), e| {
                    let (i, j, a) = (i?, j?, Box::new(a?));
                    let kind = match kw {
                        0 => ExprKind::Transp(i, j, a),
                        1 => ExprKind::Diag(i, j, a),
                        2 => ExprKind::Contr(i, j, a),
                        3 => ExprKind::Expa(i, j, a),
                        _ => ExprKind::Proj(i, j, a),
                    };
                    Ok(Expr::new(kind, span_of(e.span())))
                });
        let prefix_func =
            select! { Token::Func(f) => f }
                .then(atom.clone())
                .map_with(|(f, a), e| {
                    Ok(Expr::new(
                        ExprKind::Func(f, Box::new(a?)),
                        span_of(e.span()),
                    ))
                });
        let prefix_func2 =
            select! { Token::Func2(f) => f }
                .then(two.clone())
                .map_with(|(f, (a, b)), e| {
                    let (a, b) = boxed2(a, b)?;
                    Ok(Expr::new(ExprKind::Func2(f, a, b), span_of(e.span())))
                });
        let prefix_convert =
            select! { Token::Elem(t) => t }
                .then(atom.clone())
                .map_with(|(t, a), e| {
                    Ok(Expr::new(
                        ExprKind::Convert(t, Box::new(a?)),
                        span_of(e.span()),
                    ))
                });
        let primary = prefix_bin
            .or(prefix_func)
            .or(prefix_func2)
            .or(prefix_convert)
            .or(prefix_prod)
            .or(prefix_red)
            .or(prefix_pair)
            .or(atom)
            .labelled("expression")
            .boxed();

        // Postfix `.[m n]` (contraction) and `^[m n]` (transposition), tightest of all.
        let pair = nat()
            .then_ignore(just(Token::Comma).or_not())
            .then(nat())
            .delimited_by(just(Token::LBracket), just(Token::RBracket));
        let postfix_op = just(Token::Dot)
            .to(true)
            .or(just(Token::Caret).to(false))
            .then(pair)
            .map_with(|x, e| (x, span_of(e.span())));
        let postfix = primary.foldl_with(
            postfix_op.repeated(),
            |a: PExpr, ((is_contr, (i, j)), _op_span), e| {
                let (a, i, j) = (Box::new(a?), i?, j?);
                let kind = if is_contr {
                    ExprKind::Contr(i, j, a)
                } else {
                    ExprKind::Transp(i, j, a)
                };
                Ok(Expr::new(kind, span_of(e.span())))
            },
        );

        let product = postfix.clone().foldl_with(
            just(Token::Hash).ignore_then(postfix).repeated(),
            |a: PExpr, b: PExpr, e| {
                let (a, b) = boxed2(a, b)?;
                Ok(Expr::new(ExprKind::Prod(a, b), span_of(e.span())))
            },
        );

        let mul_op = just(Token::Star)
            .to(BinOp::Mul)
            .or(just(Token::Slash).to(BinOp::Div));
        let term =
            product
                .clone()
                .foldl_with(mul_op.then(product).repeated(), |a: PExpr, (op, b), e| {
                    let (a, b) = boxed2(a, b)?;
                    Ok(Expr::new(ExprKind::Binary(op, a, b), span_of(e.span())))
                });

        let add_op = just(Token::Plus)
            .to(BinOp::Add)
            .or(just(Token::Minus).to(BinOp::Sub));
        term.clone()
            .foldl_with(add_op.then(term).repeated(), |a: PExpr, (op, b), e| {
                let (a, b) = boxed2(a, b)?;
                Ok(Expr::new(ExprKind::Binary(op, a, b), span_of(e.span())))
            })
            .labelled("expression")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Code;

    fn expr(src: &str) -> Expr {
        let p = parse(&format!("x = {src}"));
        assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
        p.program.stmts.into_iter().next().unwrap().value
    }

    /// Renders the tree fully parenthesised, in prefix form, to show grouping.
    fn sexp(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Var(v) => v.name.clone(),
            ExprKind::Lit(v) => v.text.clone(),
            ExprKind::Paren(e) => sexp(e),
            ExprKind::Binary(op, a, b) => {
                format!("({} {} {})", op.symbol(), sexp(a), sexp(b))
            }
            ExprKind::Prod(a, b) => format!("(# {} {})", sexp(a), sexp(b)),
            ExprKind::Reduce(op, i, a) => format!("({} {} {})", op.keyword(), i.value, sexp(a)),
            ExprKind::Transp(i, j, a) => format!("(^ {} {} {})", i.value, j.value, sexp(a)),
            ExprKind::Contr(i, j, a) => format!("(. {} {} {})", i.value, j.value, sexp(a)),
            ExprKind::Diag(i, j, a) => format!("(diag {} {} {})", i.value, j.value, sexp(a)),
            ExprKind::Expa(i, j, a) => format!("(expa {} {} {})", i.value, j.value, sexp(a)),
            ExprKind::Proj(i, j, a) => format!("(proj {} {} {})", i.value, j.value, sexp(a)),
            ExprKind::Func(f, a) => format!("({} {})", f.keyword(), sexp(a)),
            ExprKind::Func2(f, a, b) => format!("({} {} {})", f.keyword(), sexp(a), sexp(b)),
            ExprKind::Convert(t, a) => format!("({} {})", t.keyword(), sexp(a)),
            ExprKind::Error => "<error>".into(),
        }
    }

    #[test]
    fn precedence_follows_the_spec() {
        for (src, tree) in [
            ("2 * A + B # C", "(+ (* 2 A) (# B C))"),
            ("A - B - C", "(- (- A B) C)"),
            ("A # B .[1 2]", "(# A (. 1 2 B))"),
            ("A / B * C", "(* (/ A B) C)"),
            ("A # B # C", "(# (# A B) C)"),
            ("A ^[1 2] .[1 2]", "(. 1 2 (^ 1 2 A))"),
            ("(A # B) .[2 3]", "(. 2 3 (# A B))"),
            // Functions and conversions are prefix forms over atoms.
            ("exp A + B", "(+ (exp A) B)"),
            ("max A (B * 2) .[1 2]", "(. 1 2 (max A (* B 2)))"),
            ("f32 (log A) * -1.5", "(* (f32 (log A)) -1.5)"),
            (
                "min (sqrt A) (abs (tanh (erf B)))",
                "(min (sqrt A) (abs (tanh (erf B))))",
            ),
            ("transp 1 2 A + B", "(+ (^ 1 2 A) B)"),
            (
                "red+ 2 (diag 2 3 (prod A B))",
                "(red+ 2 (diag 2 3 (# A B)))",
            ),
            ("add A B .[1, 2]", "(. 1 2 (+ A B))"),
            ("expa 1 3 2.5", "(expa 1 3 2.5)"),
        ] {
            assert_eq!(sexp(&expr(src)), tree, "{src}");
        }
    }

    #[test]
    fn declarations_in_both_syntaxes() {
        let p = parse(
            "alloc a : [2, 3]\nvar b : [2 3]\ninput var c : [4]\nvar input d : []\noutput alloc e : [3, 5,]\ninout var f : [1]",
        );
        assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
        let got: Vec<_> = p
            .program
            .decls
            .iter()
            .map(|d| (d.name.name.as_str(), d.qualifier, d.shape()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", None, vec![2, 3]),
                ("b", None, vec![2, 3]),
                ("c", Some(Qualifier::Input), vec![4]),
                ("d", Some(Qualifier::Input), vec![]),
                ("e", Some(Qualifier::Output), vec![3, 5]),
                ("f", Some(Qualifier::InOut), vec![1]),
            ]
        );
    }

    #[test]
    fn every_bad_item_is_reported() {
        let p = parse("alloc A : [2]\nA = add A\nA = A + + A\nA = A");
        let codes: Vec<_> = p.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, vec![Code::Syntax, Code::Syntax]);
        assert_eq!(p.program.stmts.len(), 1);
    }

    /// The codes, primary spans (as text) and helps of `src`'s diagnostics.
    fn reports(src: &str) -> Vec<(Code, &str, Option<String>)> {
        parse(src)
            .diagnostics
            .into_iter()
            .map(|d| (d.code, &src[d.primary.span.clone()], d.help))
            .collect()
    }

    #[test]
    fn a_wrong_assignment_is_reported_where_it_is_and_the_declaration_before_it_kept() {
        for (op, at) in [(":=", ":"), ("<-", "<-")] {
            let src = format!("input var A : [2]\noutput var C : [2]\nC {op} A\nC = C + A");
            let p = parse(&src);
            assert_eq!(p.program.decls.len(), 2, "{op}");
            assert_eq!(p.program.stmts.len(), 1, "{op}");
            let help = Some("assignment is written `=`".to_string());
            assert_eq!(reports(&src), [(Code::Syntax, at, help)], "{op}");
        }
        // `alloc A := [2]` is a declaration gone wrong, not an assignment.
        let got = reports("alloc A := [2]");
        assert_eq!((got.len(), got[0].1, got[0].2.is_none()), (1, "=", true));
    }

    #[test]
    fn a_misspelled_declaration_is_its_own_item() {
        let src = "alloc A : [2]\nallocate B : [2]\ninputs var C : [2]\nA = A";
        let p = parse(src);
        assert_eq!(p.program.decls.len(), 1);
        assert_eq!(p.program.stmts.len(), 1);
        let helps: Vec<_> = reports(src).into_iter().map(|r| (r.1, r.2)).collect();
        assert_eq!(
            helps,
            [
                ("B", Some("did you mean `alloc`?".to_string())),
                ("var", Some("did you mean `input`?".to_string())),
            ]
        );
    }

    #[test]
    fn a_keyword_is_suggested_only_where_it_fits() {
        // `sum` as an operand: `red+` there would not parse either.
        let got = reports("C = add sum B + +");
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].1, got[0].2.as_deref()), ("+", None));
        // A stray name after a statement is not taken for a qualifier.
        let got = reports("A = B inputs");
        assert_eq!((got[0].1, got[0].2.as_deref()), ("inputs", None));
        // An operator where an operand is expected: the keyword, then parentheses, fit.
        let got = reports("C = add A contract 1 2 B");
        assert_eq!(got[0].2.as_deref(), Some("did you mean `contr`?"));
        // Two letters swapped are one edit (issue 29): `prdo A A` is `prod A A`, with its fix.
        let got = reports("C = prdo A A");
        assert_eq!(
            (got[0].1, got[0].2.as_deref()),
            ("A", Some("did you mean `prod`?"))
        );
        let d = &crate::compile("C = prdo A A").unwrap_err()[0];
        assert_eq!(d.fixes[0].edits[0].replacement, "prod");
        assert_eq!(d.fixes[0].edits[0].span, 4..8);
    }

    #[test]
    fn a_syntax_error_after_an_invalid_character_is_not_reported() {
        assert_eq!(
            reports("A = €€€")
                .into_iter()
                .map(|r| (r.0, r.1))
                .collect::<Vec<_>>(),
            [(Code::InvalidChar, "€€€")]
        );
    }

    #[test]
    fn nesting_bound_counts_operators_and_groups() {
        // Paren(Mul(Paren(Add(A, B)), C)) is five levels deep, and so is the bound.
        let (toks, _) = lex("x = ((A + B) * C)");
        assert_eq!(nesting_bound(&toks), 5);
        let (toks, _) = lex("x = A");
        assert_eq!(nesting_bound(&toks), 1);
        // Four operators at the top (`red+ + - *`, on different branches, but counted
        // together) over a group of depth 4: a bound of 8 for a tree of depth 6.
        let (toks, _) = lex("x = red+ 1 (transp 1 2 (A)) + -2 * B");
        assert_eq!(nesting_bound(&toks), 8);
        for src in [
            "x = ((A + B) * C)",
            "x = add (mul A B) (transp 1 2 ((C)))",
            "x = A ^[1 2] .[1 2] # B + C * D",
        ] {
            let p = parse(src);
            let (toks, _) = lex(src);
            let depth = p.program.stmts[0].value.depth();
            assert!(depth <= nesting_bound(&toks), "{src}: {depth}");
        }
        let deep = format!("x = {}A{}", "(".repeat(10_000), ")".repeat(10_000));
        let p = parse(&deep);
        assert_eq!(p.diagnostics[0].code, Code::TooDeep);
    }
}
