//! The TeIL language server: LSP 3.17 over a [`lsp_server::Connection`] (standard input and
//! output for `teil lsp`, an in-memory pair in tests).
//!
//! This crate only converts: every answer comes from [`teil::ide::Analysis`], and positions
//! go through [`teil::ide::LineIndex`] (UTF-16 columns, as LSP requires). Documents are synced
//! in full; each open or change re-analyses the text and publishes its diagnostics.
//!
//! **Architecture Invariant:** a request never brings the server down. A handler that fails
//! answers with a JSON-RPC error (bad parameters: `InvalidParams`; an unknown document or a
//! panic in the analysis: `InternalError`), and the loop goes on with the next message.

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types as lsp;
use lsp_types::notification::Notification as _;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use teil::ide::{Analysis, LineIndex, SourceKind};

/// Why the server stopped other than by `shutdown` and `exit`.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("protocol error: {0}")]
    Protocol(#[from] lsp_server::ProtocolError),
    #[error("the client went away")]
    Disconnected,
    #[error("malformed initialize parameters: {0}")]
    Initialize(#[from] serde_json::Error),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves one client over standard input and output until it exits.
pub fn run_stdio() -> Result<(), ServerError> {
    let (conn, io) = Connection::stdio();
    serve(&conn)?;
    drop(conn);
    io.join()?;
    Ok(())
}

/// What the server announces in `initialize`.
pub fn capabilities() -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Kind(
            lsp::TextDocumentSyncKind::FULL,
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        document_formatting_provider: Some(lsp::OneOf::Left(true)),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Options(
            lsp::CodeActionOptions {
                code_action_kinds: Some(vec![lsp::CodeActionKind::QUICKFIX]),
                ..Default::default()
            },
        )),
        inlay_hint_provider: Some(lsp::OneOf::Left(true)),
        position_encoding: Some(lsp::PositionEncodingKind::UTF16),
        ..Default::default()
    }
}

/// Runs the initialize handshake, then answers messages until `shutdown` and `exit`.
pub fn serve(conn: &Connection) -> Result<(), ServerError> {
    let caps = serde_json::to_value(capabilities())?;
    let (id, params) = conn.initialize_start()?;
    conn.initialize_finish(
        id,
        serde_json::json!({
            "capabilities": caps,
            "serverInfo": { "name": "teil", "version": env!("CARGO_PKG_VERSION") },
        }),
    )?;
    let params: lsp::InitializeParams = serde_json::from_value(params)?;
    let mut server = Server {
        docs: HashMap::new(),
        replaced: Vec::new(),
        diagnostics_url: params
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("diagnosticsUrl"))
            .and_then(|u| u.as_str())
            .and_then(|u| lsp::Url::parse(u).ok()),
    };
    for msg in &conn.receiver {
        match msg {
            Message::Request(req) => {
                if conn.handle_shutdown(&req)? {
                    return Ok(());
                }
                let resp = server.request(req);
                send(conn, resp.into())?;
            }
            Message::Notification(n) => {
                for out in server.notification(n) {
                    send(conn, out.into())?;
                }
                server.replaced.clear();
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

fn send(conn: &Connection, msg: Message) -> Result<(), ServerError> {
    conn.sender.send(msg).map_err(|_| ServerError::Disconnected)
}

struct Document {
    version: i32,
    lines: LineIndex,
    analysis: Analysis,
}

impl Document {
    fn new(text: String, version: i32, uri: &lsp::Url) -> Document {
        Document {
            version,
            lines: LineIndex::new(&text),
            analysis: Analysis::new(text, SourceKind::of_path(uri.path())),
        }
    }

    fn offset(&self, p: lsp::Position) -> usize {
        self.lines.offset(self.analysis.text(), p.line, p.character)
    }

    fn position(&self, offset: usize) -> lsp::Position {
        let (line, character) = self.lines.position(self.analysis.text(), offset);
        lsp::Position { line, character }
    }

    fn range(&self, span: &teil::Span) -> lsp::Range {
        lsp::Range {
            start: self.position(span.start),
            end: self.position(span.end),
        }
    }
}

struct Server {
    docs: HashMap<lsp::Url, Document>,
    /// The versions that a change replaced, freed once the new version's diagnostics are sent:
    /// freeing the trees of a long file costs a fifth of analysing it, and need not delay them.
    replaced: Vec<Document>,
    /// Where the explanations of diagnostic codes live (`initializationOptions.diagnosticsUrl`,
    /// e.g. spec/diagnostics.md of the repository); each code links to `URL#e0302`.
    diagnostics_url: Option<lsp::Url>,
}

/// A failed request: the JSON-RPC error code and message.
type Failure = (ErrorCode, String);

impl Server {
    fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        // The analysis is built not to panic; this is the second line of defence, so that a
        // bug costs one answer and not the session.
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| self.dispatch(req)));
        match result {
            // Not `Response::new_ok`, which would serialize the `Value` again: a deep copy of
            // every inlay hint of a long file on each request.
            Ok(Ok(value)) => Response {
                id,
                result: Some(value),
                error: None,
            },
            Ok(Err((code, message))) => Response::new_err(id, code as i32, message),
            Err(_) => Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                "internal error while answering this request (a bug in teil; please report it)"
                    .into(),
            ),
        }
    }

    fn dispatch(&mut self, req: Request) -> Result<serde_json::Value, Failure> {
        use lsp::request::*;
        let json = |v: Result<serde_json::Value, serde_json::Error>| {
            v.map_err(|e| (ErrorCode::InternalError, e.to_string()))
        };
        match req.method.as_str() {
            HoverRequest::METHOD => {
                let p: lsp::HoverParams = params(req)?;
                json(serde_json::to_value(self.hover(p)?))
            }
            GotoDefinition::METHOD => {
                let p: lsp::GotoDefinitionParams = params(req)?;
                json(serde_json::to_value(self.definition(p)?))
            }
            References::METHOD => {
                let p: lsp::ReferenceParams = params(req)?;
                json(serde_json::to_value(self.references(p)?))
            }
            DocumentSymbolRequest::METHOD => {
                let p: lsp::DocumentSymbolParams = params(req)?;
                json(serde_json::to_value(self.symbols(p)?))
            }
            Formatting::METHOD => {
                let p: lsp::DocumentFormattingParams = params(req)?;
                json(serde_json::to_value(self.formatting(p)?))
            }
            CodeActionRequest::METHOD => {
                let p: lsp::CodeActionParams = params(req)?;
                json(serde_json::to_value(self.code_actions(p)?))
            }
            InlayHintRequest::METHOD => {
                let p: lsp::InlayHintParams = params(req)?;
                json(serde_json::to_value(self.inlay_hints(p)?))
            }
            other => Err((
                ErrorCode::MethodNotFound,
                format!("unsupported request `{other}`"),
            )),
        }
    }

    fn doc(&self, uri: &lsp::Url) -> Result<&Document, Failure> {
        self.docs.get(uri).ok_or_else(|| {
            (
                ErrorCode::InvalidParams,
                format!("document `{uri}` is not open"),
            )
        })
    }

    fn hover(&self, p: lsp::HoverParams) -> Result<Option<lsp::Hover>, Failure> {
        let at = p.text_document_position_params;
        let doc = self.doc(&at.text_document.uri)?;
        let Some(h) = doc.analysis.hover(doc.offset(at.position)) else {
            return Ok(None);
        };
        Ok(Some(lsp::Hover {
            contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                kind: lsp::MarkupKind::Markdown,
                value: h.markdown,
            }),
            range: Some(doc.range(&h.range)),
        }))
    }

    fn definition(
        &self,
        p: lsp::GotoDefinitionParams,
    ) -> Result<Option<lsp::GotoDefinitionResponse>, Failure> {
        let at = p.text_document_position_params;
        let doc = self.doc(&at.text_document.uri)?;
        Ok(doc
            .analysis
            .goto_definition(doc.offset(at.position))
            .map(|span| {
                lsp::GotoDefinitionResponse::Scalar(lsp::Location {
                    uri: at.text_document.uri.clone(),
                    range: doc.range(&span),
                })
            }))
    }

    fn references(&self, p: lsp::ReferenceParams) -> Result<Vec<lsp::Location>, Failure> {
        let at = p.text_document_position;
        let doc = self.doc(&at.text_document.uri)?;
        let offset = doc.offset(at.position);
        let decl = doc.analysis.goto_definition(offset);
        Ok(doc
            .analysis
            .references(offset)
            .into_iter()
            .filter(|s| p.context.include_declaration || Some(s) != decl.as_ref())
            .map(|s| lsp::Location {
                uri: at.text_document.uri.clone(),
                range: doc.range(&s),
            })
            .collect())
    }

    fn symbols(
        &self,
        p: lsp::DocumentSymbolParams,
    ) -> Result<lsp::DocumentSymbolResponse, Failure> {
        let doc = self.doc(&p.text_document.uri)?;
        #[allow(deprecated)] // `deprecated` is a required field of the struct
        let symbols = doc
            .analysis
            .document_symbols()
            .into_iter()
            .map(|s| lsp::DocumentSymbol {
                name: s.name,
                detail: Some(s.detail),
                kind: match s.kind {
                    teil::ide::SymbolKind::Declaration => lsp::SymbolKind::VARIABLE,
                    teil::ide::SymbolKind::Statement => lsp::SymbolKind::EVENT,
                },
                tags: None,
                deprecated: None,
                range: doc.range(&s.range),
                selection_range: doc.range(&s.selection),
                children: None,
            })
            .collect();
        Ok(lsp::DocumentSymbolResponse::Nested(symbols))
    }

    /// The whole document replaced by its formatted text; no edits when it cannot be formatted
    /// (its syntax errors are already shown as diagnostics).
    fn formatting(
        &self,
        p: lsp::DocumentFormattingParams,
    ) -> Result<Option<Vec<lsp::TextEdit>>, Failure> {
        let doc = self.doc(&p.text_document.uri)?;
        let style = teil::interface::written_style(doc.analysis.text());
        let Ok(text) = doc.analysis.format(style) else {
            return Ok(None);
        };
        if text == doc.analysis.text() {
            return Ok(Some(Vec::new()));
        }
        Ok(Some(vec![lsp::TextEdit {
            range: doc.range(&(0..doc.analysis.text().len())),
            new_text: text,
        }]))
    }

    fn code_actions(
        &self,
        p: lsp::CodeActionParams,
    ) -> Result<Vec<lsp::CodeActionOrCommand>, Failure> {
        let uri = p.text_document.uri;
        let doc = self.doc(&uri)?;
        let range = doc.offset(p.range.start)..doc.offset(p.range.end);
        Ok(doc
            .analysis
            .code_actions(range)
            .into_iter()
            .map(|(d, fix)| {
                let edits = fix
                    .edits
                    .iter()
                    .map(|e| lsp::TextEdit {
                        range: doc.range(&e.span),
                        new_text: e.replacement.clone(),
                    })
                    .collect();
                lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                    title: fix.title.clone(),
                    kind: Some(lsp::CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![self.diagnostic(doc, &uri, d)]),
                    edit: Some(lsp::WorkspaceEdit {
                        changes: Some(HashMap::from([(uri.clone(), edits)])),
                        ..Default::default()
                    }),
                    is_preferred: Some(d.fixes.len() == 1),
                    ..Default::default()
                })
            })
            .collect())
    }

    fn inlay_hints(&self, p: lsp::InlayHintParams) -> Result<Vec<lsp::InlayHint>, Failure> {
        let doc = self.doc(&p.text_document.uri)?;
        let range = doc.offset(p.range.start)..doc.offset(p.range.end);
        Ok(doc
            .analysis
            .inlay_hints()
            .into_iter()
            .filter(|h| range.start <= h.offset && h.offset <= range.end)
            .map(|h| lsp::InlayHint {
                position: doc.position(h.offset),
                label: lsp::InlayHintLabel::String(h.label),
                kind: Some(lsp::InlayHintKind::TYPE),
                text_edits: None,
                tooltip: None,
                padding_left: Some(true),
                padding_right: None,
                data: None,
            })
            .collect())
    }

    fn notification(&mut self, n: Notification) -> Vec<Notification> {
        use lsp::notification::*;
        // A notification cannot be answered, so a malformed one is dropped.
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            match n.method.as_str() {
                DidOpenTextDocument::METHOD => {
                    let p: lsp::DidOpenTextDocumentParams =
                        serde_json::from_value(n.params).ok()?;
                    let uri = p.text_document.uri;
                    let doc = Document::new(p.text_document.text, p.text_document.version, &uri);
                    self.docs.insert(uri.clone(), doc);
                    Some(self.publish(&uri))
                }
                DidChangeTextDocument::METHOD => {
                    let p: lsp::DidChangeTextDocumentParams =
                        serde_json::from_value(n.params).ok()?;
                    let uri = p.text_document.uri;
                    // Full sync: the last change holds the whole text.
                    let text = p.content_changes.into_iter().last()?.text;
                    let doc = Document::new(text, p.text_document.version, &uri);
                    self.replaced.extend(self.docs.insert(uri.clone(), doc));
                    Some(self.publish(&uri))
                }
                DidCloseTextDocument::METHOD => {
                    let p: lsp::DidCloseTextDocumentParams =
                        serde_json::from_value(n.params).ok()?;
                    self.docs.remove(&p.text_document.uri);
                    Some(publish(p.text_document.uri, Vec::new(), None))
                }
                _ => None,
            }
        }));
        result.ok().flatten().into_iter().collect()
    }

    fn publish(&self, uri: &lsp::Url) -> Notification {
        let Some(doc) = self.docs.get(uri) else {
            return publish(uri.clone(), Vec::new(), None);
        };
        let diags = doc
            .analysis
            .diagnostics()
            .iter()
            .map(|d| self.diagnostic(doc, uri, d))
            .collect();
        publish(uri.clone(), diags, Some(doc.version))
    }

    fn diagnostic(&self, doc: &Document, uri: &lsp::Url, d: &teil::Diagnostic) -> lsp::Diagnostic {
        let mut message = d.message.clone();
        if let Some(rule) = d.rule {
            message.push_str(&format!("\nrule: {rule} (spec/typing.md)"));
        }
        for n in &d.notes {
            message.push_str(&format!("\nnote: {n}"));
        }
        if let Some(h) = &d.help {
            message.push_str(&format!("\nhelp: {h}"));
        }
        let related = d
            .secondary
            .iter()
            .map(|l| lsp::DiagnosticRelatedInformation {
                location: lsp::Location {
                    uri: uri.clone(),
                    range: doc.range(&l.span),
                },
                message: l.message.clone(),
            })
            .collect::<Vec<_>>();
        lsp::Diagnostic {
            range: doc.range(&d.primary.span),
            severity: Some(match d.severity {
                teil::Severity::Error => lsp::DiagnosticSeverity::ERROR,
                teil::Severity::Warning => lsp::DiagnosticSeverity::WARNING,
            }),
            code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
            code_description: self.diagnostics_url.as_ref().map(|base| {
                let mut href = base.clone();
                href.set_fragment(Some(&d.code.as_str().to_ascii_lowercase()));
                lsp::CodeDescription { href }
            }),
            source: Some("teil".into()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            tags: None,
            data: None,
        }
    }
}

fn publish(uri: lsp::Url, diagnostics: Vec<lsp::Diagnostic>, version: Option<i32>) -> Notification {
    Notification::new(
        lsp::notification::PublishDiagnostics::METHOD.to_string(),
        lsp::PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        },
    )
}

fn params<P: serde::de::DeserializeOwned>(req: Request) -> Result<P, Failure> {
    serde_json::from_value(req.params).map_err(|e| {
        (
            ErrorCode::InvalidParams,
            format!("invalid parameters for `{}`: {e}", req.method),
        )
    })
}
