//! The analysis layer editors talk to: plain functions over an analysed snapshot of one source
//! text (rust-analyzer's `ide` crate in miniature). `teil lsp` converts its answers to the
//! protocol; a browser playground can call the same functions through wasm.
//!
//! [`Analysis::new`] takes the text and its kind ([`SourceKind::Teil`] or
//! [`SourceKind::Tin`]), parses and checks it once, and keeps both the diagnostics, exactly as
//! `teil check` reports them ([`crate::guard::load`]), and the [`Partial`] check that
//! everything needing shapes (hover, definitions, references, symbols, inlay hints) reads: for
//! a well-typed program, the shapes of the checked program; for a program with errors, the
//! checker's shapes of every part that type-checks (errors do not cascade), so an editor keeps
//! answering while the student is in the middle of a mistake. An editor makes one `Analysis`
//! per version of the text and asks it everything about that version. Offsets are byte offsets into the text;
//! [`LineIndex`] is the one place that converts them to and from LSP's UTF-16 positions.
//!
//! Element types (`f32`, `f64`) are shown beside shapes wherever a shape is shown (hover,
//! operands, symbols, inlay hints) once the text names one; a text that names none is all
//! binary64, as every program before element types was, and its answers are what they always
//! were: see [`Analysis::type_text`]. [`Analysis::completions`] offers what may be written at
//! an offset: the variables, functions, conversions and operations where an expression or an
//! operand is expected, and the element types after a declaration's `:`.
//!
//! **Architecture Invariant:** no function here panics, whatever the text and offsets (a
//! property test feeds it the parser fuzzer's inputs). Index notation (`.tin`) is answered from
//! the lowered TeIL program when it checks; with errors, only diagnostics and nothing else.

use crate::ast::*;
use crate::check::{check_partial, rule_name, Partial};
use crate::diagnostic::{Diagnostic, Fix};
use crate::fmt::Style;
use crate::lexer::Token;

/// Which language a text is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// `.teil`, in either surface syntax.
    Teil,
    /// `.tin`, index notation (spec/frontends.md).
    Tin,
}

impl SourceKind {
    /// The kind of a file by its name, as `teil check` decides it.
    pub fn of_path(path: &str) -> SourceKind {
        if crate::guard::is_index_notation(path) {
            SourceKind::Tin
        } else {
            SourceKind::Teil
        }
    }
}

/// An analysed snapshot of one text.
pub struct Analysis {
    text: String,
    kind: SourceKind,
    diagnostics: Vec<Diagnostic>,
    /// The parsed (for `.tin`, lowered) program with the shapes the checker found.
    facts: Partial,
    /// Whether the text names an element type, so that answers write them ([`Self::type_text`]).
    shows_elem: bool,
}

/// What the cursor is on: the shape of the innermost expression and the rule that gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hover {
    /// The range the answer is about (the expression, the name, or a declaration's element type).
    pub range: Span,
    /// `None` when the expression does not type-check.
    pub shape: Option<Shape>,
    /// The element type: a variable's declared one, an expression's where its operands' agree
    /// (`None` where they conflict, E0311, or where nothing gives literals one).
    pub elem: Option<ElemType>,
    /// The typing rule by its name in spec/typing.md (`T-Contr`), for an expression that checks.
    pub rule: Option<&'static str>,
    /// The operands' source text and shapes, left to right.
    pub operands: Vec<(String, Option<Shape>)>,
    /// The operands' element types, in the order of `operands`.
    pub operand_elems: Vec<Option<ElemType>>,
    /// The declaration of the variable under the cursor (`input alloc A : [2, 3]`), if any.
    pub declaration: Option<String>,
    /// Everything above as Markdown, for a hover popup.
    pub markdown: String,
}

type Shape = Vec<u64>;

/// One sub-expression of a statement: [`Analysis::statement_expressions`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExprFacts {
    pub range: Span,
    /// The source text on one line, shortened past 60 characters.
    pub text: String,
    /// `None` when the expression does not type-check.
    pub shape: Option<Shape>,
    /// `None` where the operands' element types conflict (E0311).
    pub elem: Option<ElemType>,
    pub rule: Option<&'static str>,
}

/// A declaration or statement for an outline view.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    /// The variable's name; a statement is named by its target (`C = ...`).
    pub name: String,
    /// The type and qualifier of a declaration, the right-hand side's type of a statement (with
    /// element types as [`Analysis::type_text`] writes them).
    pub detail: String,
    pub kind: SymbolKind,
    /// The whole item.
    pub range: Span,
    /// The name inside it.
    pub selection: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Declaration,
    Statement,
}

/// A label shown in the text: the type of a statement's right-hand side, at its end.
#[derive(Clone, Debug, PartialEq)]
pub struct InlayHint {
    pub offset: usize,
    pub label: String,
}

/// A statement written in the text ([`Analysis::statements`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementFacts {
    pub target: String,
    pub span: Span,
    /// The right-hand side's shape, where it checks (every statement of a well-typed program).
    pub shape: Option<Vec<u64>>,
    /// The right-hand side's element type, where its operands' agree.
    pub elem: Option<ElemType>,
}

/// Why a text cannot be formatted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FormatError {
    /// The text has syntax errors (or prints too deep to read back, E0005); they are in the
    /// diagnostics.
    #[error("the program has syntax errors")]
    Syntax(Vec<Diagnostic>),
    #[error("index notation (.tin) has no formatter")]
    Unsupported,
}

/// What [`Analysis::node_at`] found under an offset.
enum Node<'a> {
    Expr(&'a Expr),
    DeclName(&'a Decl),
    /// The element type written in a declaration (`f32` in `A : f32[3]`).
    DeclElem(&'a Decl),
    Target(&'a Stmt),
}

/// What may be written at an offset ([`Analysis::completions`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Completions {
    /// The word being typed, up to the offset: where an item is inserted (an empty range at
    /// the offset when no word ends there or goes on through it).
    pub range: Span,
    /// The whole word the offset is in or at the end of, the rest of it after the offset
    /// included (`sqrt` for `sq|rt`): what an item replaces. `range` where nothing follows.
    pub replace: Span,
    /// In the order to show them: variables, functions, conversions, operations; or the
    /// element types.
    pub items: Vec<Completion>,
}

/// One thing that may be written: its text, what it is, and what it means.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    /// The text inserted (`exp`, `f32`, a variable's name).
    pub label: String,
    pub kind: CompletionKind,
    /// One line: how it is written (`max e0 e1`), a variable's qualifier and type.
    pub detail: String,
    /// Markdown: what it computes, how it rounds, its typing rule.
    pub documentation: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    /// A declared variable.
    Variable,
    /// An element-wise function (`exp`, ..., `max`, `min`).
    Function,
    /// A conversion (`f32 e`, `f64 e`).
    Conversion,
    /// Another operation's keyword (`add`, `contr`, `red+`, ...).
    Operation,
    /// An element type in a declaration (`f32`, `f64`).
    ElemType,
}

impl Analysis {
    pub fn new(text: impl Into<String>, kind: SourceKind) -> Analysis {
        let text = text.into();
        let (facts, diagnostics) = match kind {
            SourceKind::Teil => crate::compile_partial(&text),
            SourceKind::Tin => match crate::guard::index_notation(&text) {
                // The lowered program is checked again for its partial form: a `.tin` file is
                // a few lines, and this keeps one representation for both kinds.
                Ok((checked, warnings)) => (check_partial(checked.into_program()), warnings),
                // A `.tin` file with errors has no lowered program to ask.
                Err(diags) => (check_partial(Program::default()), diags),
            },
        };
        let shows_elem = names_elem_type(&facts.program);
        Analysis {
            text,
            kind,
            diagnostics,
            facts,
            shows_elem,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn kind(&self) -> SourceKind {
        self.kind
    }

    /// Every diagnostic `teil check` reports for this text, sorted by position.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    fn facts(&self) -> &Partial {
        &self.facts
    }

    /// The one traversal from an offset to the innermost node whose span contains it (ends
    /// included, so that a cursor just after a name is on the name).
    fn node_at(&self, offset: usize) -> Option<Node<'_>> {
        let p = &self.facts().program;
        let within = |s: &Span| s.start <= offset && offset <= s.end;
        for d in &p.decls {
            if within(&d.name.span) && self.is_written(&d.name.span) {
                return Some(Node::DeclName(d));
            }
            if let Some(e) = &d.elem_span {
                if within(e) && self.is_written(e) {
                    return Some(Node::DeclElem(d));
                }
            }
        }
        for s in &p.stmts {
            if within(&s.target.span) && self.is_written(&s.target.span) {
                return Some(Node::Target(s));
            }
            if within(&s.value.span) {
                let mut e = &s.value;
                // Descend while a child contains the offset; the depth limit bounds the loop.
                'down: loop {
                    for c in e.children() {
                        if within(&c.span) {
                            e = c;
                            continue 'down;
                        }
                    }
                    break;
                }
                return Some(Node::Expr(e));
            }
        }
        None
    }

    /// Whether `span` is a name as written in the text (nodes generated by the `.tin`
    /// lowering carry the span of the construct they stand for, not of a name).
    fn is_written(&self, span: &Span) -> bool {
        self.text
            .get(span.clone())
            .is_some_and(|t| t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    }

    /// Where `name` is written at the start of `span`: the span itself for a name node, the
    /// name's part of an index-notation access `B(i, k)` that a lowered variable stands for.
    fn written_name(&self, span: &Span, name: &str) -> Option<Span> {
        let text = self.text.get(span.clone())?;
        let rest = text.strip_prefix(name)?;
        let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if rest.bytes().next().is_some_and(ident) {
            return None;
        }
        Some(span.start..span.start + name.len())
    }

    fn snippet(&self, span: &Span) -> String {
        let text = self.text.get(span.clone()).unwrap_or("");
        let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.chars().count() > 60 {
            let cut: String = one_line.chars().take(57).collect();
            format!("{cut}...")
        } else {
            one_line
        }
    }

    fn declaration_text(d: &Decl) -> String {
        crate::fmt::decl(d, Style::Prefix)
    }

    /// How answers write the type of an expression or variable: its shape, after its element
    /// type once the text names one (`f32[3, 4]`, `f64[3, 4]`). A text that names no element
    /// type (no `f32` or `f64` in a declaration or a conversion) is binary64 throughout, as
    /// every program was before element types, and its types are written as they always were
    /// (`[3, 4]`): the `f64` would be the same on every line and say nothing. Where the text
    /// names one, every type carries its element type, `f64` included: in a program that mixes
    /// them a bare `[3, 4]` would leave the reader to work out which it is. An unknown element
    /// type (operands that conflict, E0311) leaves the shape bare.
    pub fn type_text(&self, shape: &[u64], elem: Option<ElemType>) -> String {
        match elem {
            Some(t) if self.shows_elem => format!("{t}{}", ShapeDisplay(shape)),
            _ => ShapeDisplay(shape).to_string(),
        }
    }

    /// The shape, element type and typing rule of the innermost expression at `offset`, with
    /// its operands' types; for a variable, also its declaration; for a function or a
    /// conversion, what it computes and how it rounds; on a declaration's element type, what
    /// that type is.
    pub fn hover(&self, offset: usize) -> Option<Hover> {
        let facts = self.facts();
        let node = self.node_at(offset)?;
        let is_name = matches!(
            node,
            Node::Target(_)
                | Node::Expr(Expr {
                    kind: ExprKind::Var(_),
                    ..
                })
        );
        let mut about = None;
        let (range, shape, elem, rule, operands, decl) = match node {
            Node::Expr(e) => {
                let shape = facts.shape(e).map(<[u64]>::to_vec);
                let kids = e.children();
                let operand_shapes: Vec<Option<&[u64]>> =
                    kids.iter().map(|c| facts.shape(c)).collect();
                let rule = shape.as_ref().and_then(|_| {
                    let ops: Option<Vec<&[u64]>> = operand_shapes.iter().copied().collect();
                    ops.map(|ops| rule_name(e, &ops))
                });
                let operands = kids
                    .iter()
                    .zip(&operand_shapes)
                    .map(|(c, s)| {
                        let text = self.snippet(&c.span);
                        (text, s.map(<[u64]>::to_vec), facts.elem(c))
                    })
                    .collect();
                let decl = match &e.kind {
                    ExprKind::Var(v) => facts.program.decl(&v.name),
                    _ => None,
                };
                about = self.function_about(e);
                (e.span.clone(), shape, facts.elem(e), rule, operands, decl)
            }
            Node::DeclName(d) => (
                d.name.span.clone(),
                Some(d.shape()),
                Some(d.elem),
                None,
                vec![],
                Some(d),
            ),
            Node::DeclElem(d) => {
                let range = d.elem_span.clone().unwrap_or_else(|| d.name.span.clone());
                about = Some(elem_doc(d.elem).to_string());
                (range, Some(d.shape()), Some(d.elem), None, vec![], Some(d))
            }
            Node::Target(s) => {
                let d = facts.program.decl(&s.target.name);
                let shape = d.map(Decl::shape);
                (
                    s.target.span.clone(),
                    shape,
                    d.map(|d| d.elem),
                    None,
                    vec![],
                    d,
                )
            }
        };
        let mut md = format!("`{}`", self.snippet(&range));
        match (&node, &shape) {
            // The element type's own hover: what it is, the type of the variable below.
            (Node::DeclElem(d), _) => {
                md.push_str(&format!(" : the element type of `{}`", d.name.name))
            }
            (_, Some(s)) => md.push_str(&format!(" : `{}`", self.type_text(s, elem))),
            (_, None) if is_name && decl.is_none() => md.push_str(" : not declared"),
            (_, None) => md.push_str(" : shape unknown (this does not type-check)"),
        }
        if let Some(r) = rule {
            md.push_str(&format!(" by {r}"));
        }
        if self.shows_elem && shape.is_some() && elem.is_none() {
            md.push_str(" (element type unknown: this does not type-check)");
        }
        if let Some(a) = &about {
            md.push_str(&format!("\n\n{a}"));
        }
        if !operands.is_empty() {
            md.push_str("\n\noperands:");
            for (text, s, t) in &operands {
                let s = s.as_ref().map_or("unknown".to_string(), |s| {
                    format!("`{}`", self.type_text(s, *t))
                });
                md.push_str(&format!("\n- `{text}` : {s}"));
            }
        }
        let declaration = decl.map(Self::declaration_text);
        if let (Some(d), Some(decl)) = (&declaration, decl) {
            md.push_str(&format!("\n\ndeclared `{d}`"));
            let role = match decl.qualifier {
                Some(q) => format!("{} variable", q.keyword()),
                None if facts.program.uses_qualifiers() => "local variable".to_string(),
                None => "read and written by the caller (no qualifiers)".to_string(),
            };
            md.push_str(&format!(": {role}"));
        }
        let (operands, operand_elems) = operands
            .into_iter()
            .map(|(text, s, t)| ((text, s), t))
            .unzip();
        Some(Hover {
            range,
            shape,
            elem,
            rule,
            operands,
            operand_elems,
            declaration,
            markdown: md,
        })
    }

    /// What a function or conversion node computes and how it rounds, in the element type it
    /// computes in where that is known: one line for the hover.
    fn function_about(&self, e: &Expr) -> Option<String> {
        let facts = self.facts();
        let (word, rounds_in) = match &e.kind {
            ExprKind::Func(f, a) => (f.keyword(), facts.elem(a)),
            ExprKind::Func2(f, ..) => (f.keyword(), facts.elem(e)),
            ExprKind::Convert(t, _) => (t.keyword(), None),
            _ => return None,
        };
        let doc = keyword_doc(word)?;
        let mut line = format!("`{}`: {}", doc.form, doc.summary);
        if let Some(t) = rounds_in {
            line.push_str(&format!(" (here `{t}`)"));
        }
        line.push('.');
        Some(line)
    }

    /// Every sub-expression of the statement at `offset`, outermost first (pre-order), with
    /// its shape and typing rule where it checks: the shapes panel of the playground.
    pub fn statement_expressions(&self, offset: usize) -> Vec<ExprFacts> {
        let facts = self.facts();
        let Some(stmt) = facts
            .program
            .stmts
            .iter()
            .find(|s| s.span.start <= offset && offset <= s.span.end)
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        // An explicit stack: expressions are at most `MAX_EXPR_DEPTH` deep, but a wide one has
        // many nodes, and this keeps the order without recursion.
        let mut todo = vec![&stmt.value];
        while let Some(e) = todo.pop() {
            let shape = facts.shape(e).map(<[u64]>::to_vec);
            let kids = e.children();
            let rule = shape.as_ref().and_then(|_| {
                let ops: Option<Vec<&[u64]>> = kids.iter().map(|c| facts.shape(c)).collect();
                ops.map(|ops| rule_name(e, &ops))
            });
            out.push(ExprFacts {
                range: e.span.clone(),
                text: self.snippet(&e.span),
                shape,
                elem: facts.elem(e),
                rule,
            });
            todo.extend(kids.iter().rev());
        }
        out
    }

    /// The name of the variable at `offset`, if the cursor is on one.
    fn name_at(&self, offset: usize) -> Option<&str> {
        match self.node_at(offset)? {
            Node::Expr(Expr {
                kind: ExprKind::Var(v),
                ..
            }) => Some(&v.name),
            Node::DeclName(d) => Some(&d.name.name),
            Node::Target(s) => Some(&s.target.name),
            Node::Expr(_) | Node::DeclElem(_) => None,
        }
    }

    /// The span of the name in the declaration of the variable at `offset`.
    pub fn goto_definition(&self, offset: usize) -> Option<Span> {
        let name = self.name_at(offset)?;
        let d = self.facts().program.decl(name)?;
        self.is_written(&d.name.span).then(|| d.name.span.clone())
    }

    /// Every place the variable at `offset` is named: its declaration, the statements that
    /// assign it and the expressions that read it, in source order.
    pub fn references(&self, offset: usize) -> Vec<Span> {
        let Some(name) = self.name_at(offset) else {
            return Vec::new();
        };
        let p = &self.facts().program;
        let mut found: Vec<&Span> = p
            .decls
            .iter()
            .filter(|d| d.name.name == name)
            .map(|d| &d.name.span)
            .collect();
        for s in &p.stmts {
            if s.target.name == name {
                found.push(&s.target.span);
            }
            s.value.walk(&mut |e| {
                if let ExprKind::Var(v) = &e.kind {
                    if v.name == name {
                        found.push(&v.span);
                    }
                }
            });
        }
        let mut out: Vec<Span> = found
            .into_iter()
            .filter_map(|s| self.written_name(s, name))
            .collect();
        out.sort_by_key(|s| (s.start, s.end));
        out.dedup();
        out
    }

    /// Declarations (with shape and qualifier) and statements (with the right-hand side's
    /// shape), in source order.
    pub fn document_symbols(&self) -> Vec<Symbol> {
        let facts = self.facts();
        let p = &facts.program;
        let mut out = Vec::new();
        for d in &p.decls {
            if !self.is_written(&d.name.span) {
                continue; // a temporary of the `.tin` lowering
            }
            let detail = self.decl_detail(d);
            out.push(Symbol {
                name: d.name.name.clone(),
                detail,
                kind: SymbolKind::Declaration,
                range: d.span.clone(),
                selection: d.name.span.clone(),
            });
        }
        for s in &p.stmts {
            if !self.is_written(&s.target.span) {
                continue;
            }
            let detail = facts
                .shape(&s.value)
                .map_or("shape unknown".to_string(), |t| {
                    self.type_text(t, facts.elem(&s.value))
                });
            out.push(Symbol {
                name: self.snippet(&s.span),
                detail,
                kind: SymbolKind::Statement,
                range: s.span.clone(),
                selection: s.target.span.clone(),
            });
        }
        out.sort_by_key(|s| s.range.start);
        out
    }

    /// The text as `teil fmt --syntax STYLE` prints it, comments kept.
    pub fn format(&self, style: Style) -> Result<String, FormatError> {
        match self.kind {
            SourceKind::Teil => crate::fmt::source(&self.text, style).map_err(FormatError::Syntax),
            SourceKind::Tin => Err(FormatError::Unsupported),
        }
    }

    /// The quick fixes that belong to a diagnostic whose primary span meets `range` or that
    /// edit text meeting it (a misspelled keyword is fixed at the word, while the error is
    /// found after it), with the diagnostic each belongs to.
    pub fn code_actions(&self, range: Span) -> Vec<(&Diagnostic, &Fix)> {
        let meets = |s: &Span| s.start <= range.end && range.start <= s.end;
        self.diagnostics
            .iter()
            .flat_map(|d| d.fixes.iter().map(move |f| (d, f)))
            .filter(|(d, f)| meets(&d.primary.span) || f.edits.iter().any(|e| meets(&e.span)))
            .collect()
    }

    /// Every statement written in the text, in order, with its right-hand side's shape where
    /// that checks: a statement keeps its shape while another one is wrong, as in the editor's
    /// inlay hints.
    pub fn statements(&self) -> Vec<StatementFacts> {
        let facts = self.facts();
        facts
            .program
            .stmts
            .iter()
            .filter(|s| self.is_written(&s.target.span))
            .map(|s| StatementFacts {
                target: s.target.name.clone(),
                span: s.span.clone(),
                shape: facts.shape(&s.value).map(<[u64]>::to_vec),
                elem: facts.elem(&s.value),
            })
            .collect()
    }

    /// The type of each statement's right-hand side ([`Self::type_text`]), at the end of the
    /// statement.
    pub fn inlay_hints(&self) -> Vec<InlayHint> {
        self.statements()
            .into_iter()
            .filter_map(|s| {
                Some(InlayHint {
                    offset: s.span.end,
                    label: format!(": {}", self.type_text(s.shape.as_deref()?, s.elem)),
                })
            })
            .collect()
    }

    /// A declaration's qualifier and type, as the outline and completion show it.
    fn decl_detail(&self, d: &Decl) -> String {
        let t = self.type_text(&d.shape(), Some(d.elem));
        match d.qualifier {
            Some(q) => format!("{} {t}", q.keyword()),
            None => t,
        }
    }

    /// What may be written at `offset`, for an editor's completion list; `None` where nothing
    /// is offered (in a comment, a number, a name being declared, between items). The context
    /// is read from the tokens before the offset, as the grammar of spec/grammar.md goes, so it
    /// is answered in the middle of an unfinished statement:
    ///
    /// - where an expression is expected (after a statement's `=`, an infix operator, `(`):
    ///   the declared variables, the functions, the conversions and the other operations;
    /// - where an operand of a prefix application is expected (`add A |`, `exp |`): the
    ///   variables alone, since an operand must be an atom (`add A (exp B)`, not `add A exp B`);
    /// - after a declaration's `:`: the element types `f32` and `f64`.
    ///
    /// The word being typed up to the offset (`ex` in `B = ex|`) is where the chosen item goes
    /// ([`Completions::range`]; the editor filters the items by it), and the whole word, the
    /// rest after the offset included, what it may replace ([`Completions::replace`]). Index
    /// notation (`.tin`) is offered the element types of its declarations only.
    pub fn completions(&self, offset: usize) -> Option<Completions> {
        let before = self.text.get(..offset)?;
        let (tokens, _, comments) = crate::lexer::lex_with_comments(before);
        if comments.last().is_some_and(|c| c.end == offset) {
            return None; // in a comment, which runs to the end of its line
        }
        let mut context = &tokens[..];
        let mut range = offset..offset;
        if let Some((t, span)) = tokens.last() {
            if span.end == offset {
                match t {
                    Token::Ident(_) => {}
                    Token::Number(_) => return None,
                    t if t.is_keyword() => {}
                    _ => return self.completions_after(context, range),
                }
                range = span.clone();
                context = &tokens[..tokens.len() - 1];
            }
        }
        self.completions_after(context, range)
    }

    /// The end of the word that `range`, the word typed before the offset at its end, is the
    /// start of: the identifier characters after the offset belong to it.
    fn word_end(&self, range: &Span) -> usize {
        if range.is_empty() {
            return range.end;
        }
        let rest = self.text.get(range.end..).unwrap_or("");
        let ident = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
        range.end + rest.bytes().take_while(ident).count()
    }

    /// The completions after `context`, the tokens before the word being typed.
    fn completions_after(&self, context: &[(Token<'_>, Span)], range: Span) -> Option<Completions> {
        let stmt = context.iter().rposition(|(t, _)| *t == Token::Eq);
        let decl = context
            .iter()
            .rposition(|(t, _)| matches!(t, Token::Alloc | Token::Var));
        let in_decl = decl.is_some_and(|d| stmt.is_none_or(|s| d > s));
        let items = if in_decl {
            if !matches!(context.last(), Some((Token::Colon, _))) {
                return None;
            }
            ElemType::ALL
                .iter()
                .rev() // f32 first: f64 is what a bare `[..]` already means
                .map(|&t| Completion {
                    label: t.keyword().to_string(),
                    kind: CompletionKind::ElemType,
                    detail: match t {
                        ElemType::F64 => "IEEE 754 binary64, the default".to_string(),
                        ElemType::F32 => "IEEE 754 binary32".to_string(),
                    },
                    documentation: elem_doc(t).to_string(),
                })
                .collect()
        } else {
            if self.kind != SourceKind::Teil {
                return None;
            }
            match expected(&context[stmt? + 1..])? {
                Expected::Expression => {
                    let mut items = self.variable_completions();
                    items.extend(keyword_completions());
                    items
                }
                Expected::Operand => self.variable_completions(),
            }
        };
        let replace = range.start..self.word_end(&range);
        (!items.is_empty()).then_some(Completions {
            range,
            replace,
            items,
        })
    }

    /// The declared variables, in declaration order.
    fn variable_completions(&self) -> Vec<Completion> {
        let mut seen = std::collections::HashSet::new();
        self.facts()
            .program
            .decls
            .iter()
            .filter(|d| self.is_written(&d.name.span) && seen.insert(d.name.name.as_str()))
            .map(|d| Completion {
                label: d.name.name.clone(),
                kind: CompletionKind::Variable,
                detail: self.decl_detail(d),
                documentation: format!("declared `{}`", Self::declaration_text(d)),
            })
            .collect()
    }
}

/// Whether the program names an element type: a declaration writes one (`f32[..]`, `f64[..]`)
/// or an expression converts ([`Analysis::type_text`]).
fn names_elem_type(p: &Program) -> bool {
    if p.decls
        .iter()
        .any(|d| d.elem_span.is_some() || d.elem != ElemType::F64)
    {
        return true;
    }
    p.stmts.iter().any(|s| {
        let mut found = false;
        s.value
            .walk(&mut |e| found |= matches!(e.kind, ExprKind::Convert(..)));
        found
    })
}

/// What an element type is: the hover on a declaration's `f32`/`f64` and its completion.
fn elem_doc(t: ElemType) -> &'static str {
    match t {
        ElemType::F32 => {
            "IEEE 754 binary32 (single precision): a 24-bit significand, about 7 significant \
             decimal digits, finite up to 3.40282347e38. Operations on `f32` tensors compute in \
             binary32 and round each result, and each step of a sum, to nearest, ties to even; a \
             literal used with them is rounded once to binary32. Where `f32` meets `f64`, write \
             the conversion: `f64 e` widens exactly, `f32 e` rounds."
        }
        ElemType::F64 => {
            "IEEE 754 binary64 (double precision): a 53-bit significand, about 16 significant \
             decimal digits; the default, so a bare `[3, 4]` is `f64[3, 4]`. Operations on \
             `f64` tensors compute in binary64 and round each result, and each step of a sum, to \
             nearest, ties to even. Where `f64` meets `f32`, write the conversion: `f32 e` \
             rounds to binary32, `f64 e` widens exactly."
        }
    }
}

/// What a reserved word of an expression means: for the hover on a function and for
/// completion.
struct KeywordDoc {
    keyword: &'static str,
    kind: CompletionKind,
    /// How it is written.
    form: &'static str,
    /// The typing rule (spec/typing.md).
    rule: &'static str,
    /// One line, Markdown: what it computes and, for a function, how it rounds.
    summary: &'static str,
}

/// Every reserved word that starts an expression, in the order completion offers them:
/// functions, conversions, then the operations of both papers.
const KEYWORD_DOCS: &[KeywordDoc] = &[
    KeywordDoc {
        keyword: "exp",
        kind: CompletionKind::Function,
        form: "exp e",
        rule: "T-Func",
        summary: "e^x of each element, correctly rounded in the operand's element type",
    },
    KeywordDoc {
        keyword: "log",
        kind: CompletionKind::Function,
        form: "log e",
        rule: "T-Func",
        summary: "the natural logarithm of each element (NaN below 0, -∞ at ±0), correctly \
                  rounded in the operand's element type",
    },
    KeywordDoc {
        keyword: "sqrt",
        kind: CompletionKind::Function,
        form: "sqrt e",
        rule: "T-Func",
        summary: "the square root of each element (NaN below 0, `sqrt -0 = -0`), correctly \
                  rounded in the operand's element type",
    },
    KeywordDoc {
        keyword: "tanh",
        kind: CompletionKind::Function,
        form: "tanh e",
        rule: "T-Func",
        summary: "the hyperbolic tangent of each element, correctly rounded in the operand's \
                  element type",
    },
    KeywordDoc {
        keyword: "erf",
        kind: CompletionKind::Function,
        form: "erf e",
        rule: "T-Func",
        summary: "the error function of each element, correctly rounded in the operand's \
                  element type",
    },
    KeywordDoc {
        keyword: "abs",
        kind: CompletionKind::Function,
        form: "abs e",
        rule: "T-Func",
        summary: "the absolute value of each element (`abs -0 = +0`), exact, so correctly \
                  rounded, in the operand's element type",
    },
    KeywordDoc {
        keyword: "max",
        kind: CompletionKind::Function,
        form: "max e0 e1",
        rule: "T-Func2",
        summary: "the larger of each pair of elements (IEEE 754-2019 maximum: NaN \
                  propagating, -0 < +0), exact in the operands' element type",
    },
    KeywordDoc {
        keyword: "min",
        kind: CompletionKind::Function,
        form: "min e0 e1",
        rule: "T-Func2",
        summary: "the smaller of each pair of elements (IEEE 754-2019 minimum: NaN \
                  propagating, -0 < +0), exact in the operands' element type",
    },
    KeywordDoc {
        keyword: "f32",
        kind: CompletionKind::Conversion,
        form: "f32 e",
        rule: "T-Conv",
        summary: "converts each element of an `f64` operand to binary32, rounded to nearest, \
                  ties to even (to ±∞ beyond binary32's range)",
    },
    KeywordDoc {
        keyword: "f64",
        kind: CompletionKind::Conversion,
        form: "f64 e",
        rule: "T-Conv",
        summary: "converts each element of an `f32` operand to binary64, exactly",
    },
    KeywordDoc {
        keyword: "add",
        kind: CompletionKind::Operation,
        form: "add e0 e1",
        rule: "T-Add",
        summary: "the element-wise sum `e0 + e1` of two tensors of one shape",
    },
    KeywordDoc {
        keyword: "sub",
        kind: CompletionKind::Operation,
        form: "sub e0 e1",
        rule: "T-Elem",
        summary: "the element-wise difference `e0 - e1` of two tensors of one shape",
    },
    KeywordDoc {
        keyword: "mul",
        kind: CompletionKind::Operation,
        form: "mul e0 e1",
        rule: "T-Mul, T-SMul",
        summary: "the element-wise product `e0 * e1`; a scalar `e0` scales every element",
    },
    KeywordDoc {
        keyword: "div",
        kind: CompletionKind::Operation,
        form: "div e0 e1",
        rule: "T-Elem, T-SDiv",
        summary: "the element-wise quotient `e0 / e1`; a scalar `e1` divides every element",
    },
    KeywordDoc {
        keyword: "prod",
        kind: CompletionKind::Operation,
        form: "prod e0 e1",
        rule: "T-Prod",
        summary: "the tensor product `e0 # e1`, of the two shapes one after the other",
    },
    KeywordDoc {
        keyword: "red+",
        kind: CompletionKind::Operation,
        form: "red+ i e",
        rule: "T-Red",
        summary: "the sum along dimension `i`, which it removes",
    },
    KeywordDoc {
        keyword: "red*",
        kind: CompletionKind::Operation,
        form: "red* i e",
        rule: "T-Red",
        summary: "the product along dimension `i`, which it removes",
    },
    KeywordDoc {
        keyword: "redmax",
        kind: CompletionKind::Operation,
        form: "redmax i e",
        rule: "T-Red",
        summary: "the maximum along dimension `i`, which it removes",
    },
    KeywordDoc {
        keyword: "redmin",
        kind: CompletionKind::Operation,
        form: "redmin i e",
        rule: "T-Red",
        summary: "the minimum along dimension `i`, which it removes",
    },
    KeywordDoc {
        keyword: "transp",
        kind: CompletionKind::Operation,
        form: "transp i j e",
        rule: "T-Transp",
        summary: "dimensions `i` and `j` swapped (`e ^[i j]`)",
    },
    KeywordDoc {
        keyword: "diag",
        kind: CompletionKind::Operation,
        form: "diag i j e",
        rule: "T-Diag",
        summary: "the diagonal of dimensions `i` and `j` (equal extents), kept at the lower \
                  of the two positions, the higher removed",
    },
    KeywordDoc {
        keyword: "contr",
        kind: CompletionKind::Operation,
        form: "contr i j e",
        rule: "T-Contr",
        summary: "the sum over the diagonal of dimensions `i` and `j` (`e .[i j]`), both \
                  removed",
    },
    KeywordDoc {
        keyword: "expa",
        kind: CompletionKind::Operation,
        form: "expa i n e",
        rule: "T-Expa",
        summary: "a new dimension of extent `n` at position `i`, along which `e` repeats",
    },
    KeywordDoc {
        keyword: "proj",
        kind: CompletionKind::Operation,
        form: "proj i m e",
        rule: "T-Proj",
        summary: "slice `m` of dimension `i`, which it removes",
    },
];

fn keyword_doc(word: &str) -> Option<&'static KeywordDoc> {
    KEYWORD_DOCS.iter().find(|d| d.keyword == word)
}

/// The reserved words that start an expression, as completion items.
fn keyword_completions() -> impl Iterator<Item = Completion> {
    KEYWORD_DOCS.iter().map(|d| Completion {
        label: d.keyword.to_string(),
        kind: d.kind,
        detail: d.form.to_string(),
        documentation: format!("`{}`: {}.\n\nTyping rule: {}.", d.form, d.summary, d.rule),
    })
}

/// What the grammar expects after the tokens of a statement's right-hand side so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expected {
    /// An expression: a prefix application or an atom (`primary` in spec/grammar.md).
    Expression,
    /// An operand of a prefix application: an atom.
    Operand,
}

/// Reads a statement's right-hand side so far (the tokens after its `=`) as spec/grammar.md's
/// `expr` goes, and says whether an expression or an operand comes next; `None` where
/// something else does (an operator, a number, a bracket) or the tokens do not parse.
fn expected(tokens: &[(Token<'_>, Span)]) -> Option<Expected> {
    /// What comes next.
    #[derive(Clone, Copy, PartialEq)]
    enum Want {
        Expr,
        Atom,
        Nat,
        /// After an operand: an infix or postfix operator, `)`, or the end.
        Operator,
        /// After a sign where an operand is expected: a number.
        Signed,
        /// After `.` or `^`.
        Bracket,
        /// Inside `.[..]` or `^[..]`.
        Pair,
    }
    /// An open parenthesis, or a prefix application with the numbers and atoms it still takes.
    enum Frame {
        Paren,
        App { nats: u8, atoms: u8 },
    }
    /// The next slot of the innermost application.
    fn slot(stack: &[Frame]) -> Want {
        match stack.last() {
            Some(Frame::App { nats, .. }) if *nats > 0 => Want::Nat,
            _ => Want::Atom,
        }
    }
    /// An operand is complete: it fills a slot of the application around it (which, when it
    /// has all its operands, is itself a complete operand) or ends an operand of the infix
    /// expression.
    fn operand_done(stack: &mut Vec<Frame>) -> Want {
        loop {
            match stack.last_mut() {
                Some(Frame::App { atoms, .. }) => {
                    *atoms = atoms.saturating_sub(1);
                    if *atoms > 0 {
                        return Want::Atom;
                    }
                    stack.pop();
                }
                Some(Frame::Paren) | None => return Want::Operator,
            }
        }
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut want = Want::Expr;
    for (t, _) in tokens {
        want = match (want, t) {
            (Want::Expr | Want::Atom, Token::Ident(_) | Token::Number(_)) => {
                operand_done(&mut stack)
            }
            // A sign: a negative literal follows.
            (Want::Expr | Want::Atom, Token::Minus) => Want::Signed,
            (Want::Signed, Token::Number(_)) => operand_done(&mut stack),
            (Want::Expr | Want::Atom, Token::LParen) => {
                stack.push(Frame::Paren);
                Want::Expr
            }
            (Want::Expr | Want::Atom, t) => {
                let (nats, atoms) = match t {
                    Token::BinKw(_) | Token::Prod | Token::Func2(_) => (0, 2),
                    Token::Func(_) | Token::Elem(_) => (0, 1),
                    Token::Red(_) => (1, 1),
                    Token::Transp | Token::Diag | Token::Contr | Token::Expa | Token::Proj => {
                        (2, 1)
                    }
                    _ => return None,
                };
                stack.push(Frame::App { nats, atoms });
                slot(&stack)
            }
            (Want::Nat, Token::Number(_)) => {
                if let Some(Frame::App { nats, .. }) = stack.last_mut() {
                    *nats = nats.saturating_sub(1);
                }
                slot(&stack)
            }
            (
                Want::Operator,
                Token::Plus | Token::Minus | Token::Star | Token::Slash | Token::Hash,
            ) => Want::Expr,
            (Want::Operator, Token::Dot | Token::Caret) => Want::Bracket,
            (Want::Operator, Token::RParen) => match stack.pop() {
                Some(Frame::Paren) => operand_done(&mut stack),
                _ => return None,
            },
            (Want::Bracket, Token::LBracket) => Want::Pair,
            (Want::Pair, Token::Number(_) | Token::Comma) => Want::Pair,
            (Want::Pair, Token::RBracket) => Want::Operator,
            _ => return None,
        };
    }
    match want {
        Want::Expr => Some(Expected::Expression),
        Want::Atom => Some(Expected::Operand),
        Want::Nat | Want::Signed | Want::Operator | Want::Bracket | Want::Pair => None,
    }
}

/// The one place that converts byte offsets to and from LSP positions: see [`crate::lines`].
pub use crate::lines::LineIndex;
