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
//! **Architecture Invariant:** no function here panics, whatever the text and offsets (a
//! property test feeds it the parser fuzzer's inputs). Index notation (`.tin`) is answered from
//! the lowered TeIL program when it checks; with errors, only diagnostics and nothing else.

use crate::ast::*;
use crate::check::{check_partial, rule_name, Partial};
use crate::diagnostic::{Diagnostic, Fix};
use crate::fmt::Style;

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
}

/// What the cursor is on: the shape of the innermost expression and the rule that gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hover {
    /// The range the answer is about (the expression, or the name).
    pub range: Span,
    /// `None` when the expression does not type-check.
    pub shape: Option<Shape>,
    /// The typing rule by its name in spec/typing.md (`T-Contr`), for an expression that checks.
    pub rule: Option<&'static str>,
    /// The operands' source text and shapes, left to right.
    pub operands: Vec<(String, Option<Shape>)>,
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
    pub rule: Option<&'static str>,
}

/// A declaration or statement for an outline view.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    /// The variable's name; a statement is named by its target (`C = ...`).
    pub name: String,
    /// The shape and qualifier of a declaration, the right-hand side's shape of a statement.
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

/// A label shown in the text: the shape of a statement's right-hand side, at its end.
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
    Target(&'a Stmt),
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
        Analysis {
            text,
            kind,
            diagnostics,
            facts,
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

    /// The shape and typing rule of the innermost expression at `offset`, with its operands'
    /// shapes; for a variable, also its declaration.
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
        let (range, shape, rule, operands, decl) = match node {
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
                    .map(|(c, s)| (self.snippet(&c.span), s.map(<[u64]>::to_vec)))
                    .collect();
                let decl = match &e.kind {
                    ExprKind::Var(v) => facts.program.decl(&v.name),
                    _ => None,
                };
                (e.span.clone(), shape, rule, operands, decl)
            }
            Node::DeclName(d) => (d.name.span.clone(), Some(d.shape()), None, vec![], Some(d)),
            Node::Target(s) => {
                let d = facts.program.decl(&s.target.name);
                (s.target.span.clone(), d.map(Decl::shape), None, vec![], d)
            }
        };
        let mut md = format!("`{}`", self.snippet(&range));
        match &shape {
            Some(s) => md.push_str(&format!(" : `{}`", ShapeDisplay(s))),
            None if is_name && decl.is_none() => md.push_str(" : not declared"),
            None => md.push_str(" : shape unknown (this does not type-check)"),
        }
        if let Some(r) = rule {
            md.push_str(&format!(" by {r}"));
        }
        if !operands.is_empty() {
            md.push_str("\n\noperands:");
            for (text, s) in &operands {
                let s = s
                    .as_ref()
                    .map_or("unknown".to_string(), |s| format!("`{}`", ShapeDisplay(s)));
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
        Some(Hover {
            range,
            shape,
            rule,
            operands,
            declaration,
            markdown: md,
        })
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
            Node::Expr(_) => None,
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
            let detail = match d.qualifier {
                Some(q) => format!("{} {}", q.keyword(), ShapeDisplay(&d.shape())),
                None => ShapeDisplay(&d.shape()).to_string(),
            };
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
                .map_or("shape unknown".to_string(), |t| ShapeDisplay(t).to_string());
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
            })
            .collect()
    }

    /// The shape of each statement's right-hand side, at the end of the statement.
    pub fn inlay_hints(&self) -> Vec<InlayHint> {
        self.statements()
            .into_iter()
            .filter_map(|s| {
                Some(InlayHint {
                    offset: s.span.end,
                    label: format!(": {}", ShapeDisplay(s.shape.as_deref()?)),
                })
            })
            .collect()
    }
}

/// The one place that converts byte offsets to and from LSP positions: see [`crate::lines`].
pub use crate::lines::LineIndex;
