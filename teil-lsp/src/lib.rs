//! The TeIL language server: LSP 3.17 over a
//! [`lsp_server::Connection`](https://docs.rs/lsp-server/0.7.9/lsp_server/struct.Connection.html)
//! (standard input and output for `teil lsp`, an in-memory pair in tests).
//!
//! This crate only converts: every answer comes from [`teil::ide::Analysis`], and positions
//! go through [`teil::ide::LineIndex`] (UTF-16 columns, as LSP requires). Documents are synced
//! in full. A change replaces the text and nothing more; a document is analysed when a request
//! needs it or, for its diagnostics, once no message is waiting: a burst of changes costs one
//! analysis, not one per change. At most [`MAX_EDITOR_DIAGNOSTICS`] diagnostics of a document
//! are published, then one note counting the rest.
//!
//! The byte stream ([`run`]) is read with [`teil::framing::read_frame`]: a message over
//! [`MAX_MESSAGE_BYTES`] is skipped unread, and a message that cannot be read (a bad header,
//! invalid JSON, not a JSON-RPC message) is answered with an error whose `id` is `null`
//! (`ParseError`, `InvalidRequest` for JSON that is not a message); the server then reads the
//! next message where the framing allows, and stops (exit status 1) where it does not
//! (spec/limits.md, "Language server").
//!
//! **Architecture Invariant:** a request never brings the server down. A handler that fails
//! answers with a JSON-RPC error (bad parameters: `InvalidParams`; an unknown document or a
//! panic in the analysis: `InternalError`), and the loop goes on with the next message.

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use lsp_types::notification::Notification as _;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};
pub use teil::framing::MAX_MESSAGE_BYTES;
use teil::framing::{read_frame, write_frame, FrameError};
use teil::ide::{Analysis, LineIndex, SourceKind};
pub use teil::render::MAX_EDITOR_DIAGNOSTICS;

/// Why the server stopped other than by `exit`.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("the client went away")]
    Disconnected,
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// How the session ended, and the exit status LSP prescribes for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `exit` after `shutdown`: status 0.
    Clean,
    /// `exit` without `shutdown`, or the input ended (or could no longer be read) without
    /// `exit`: status 1.
    Unclean,
}

impl Exit {
    pub fn code(self) -> u8 {
        match self {
            Exit::Clean => 0,
            Exit::Unclean => 1,
        }
    }
}

/// Messages read ahead of the server: enough to find a burst of changes waiting, few enough
/// that a client that does not wait costs bounded memory.
const READ_AHEAD: usize = 256;

/// Bytes of message bodies read ahead of the server, at most (one message of any size is
/// always let through): with the bound on messages alone, 256 messages of the 64 MiB a message may
/// have would be 16 GiB.
pub const READ_AHEAD_BYTES: usize = 16 << 20;

/// Answers waiting for the writer, at most: while the client does not read, the writer
/// blocks, then the server blocks on this queue, stops taking messages, and the reader stops
/// reading once its read-ahead is full (back-pressure, spec/limits.md "Language server").
const ANSWERS_QUEUED: usize = 1;

/// Serves one client over standard input and output until it exits.
pub fn run_stdio() -> Result<Exit, ServerError> {
    run(
        io::BufReader::new(io::stdin()),
        io::stdout(),
        MAX_MESSAGE_BYTES,
    )
}

/// Serves one client reading framed messages from `input` and writing them to `output`; a
/// message over `max_message` bytes is skipped and answered with an error.
pub fn run(
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
    max_message: usize,
) -> Result<Exit, ServerError> {
    run_with(input, output, max_message, READ_AHEAD_BYTES)
}

/// [`run`], with at most `read_ahead_bytes` of message bodies read ahead of the server.
pub fn run_with(
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
    max_message: usize,
    read_ahead_bytes: usize,
) -> Result<Exit, ServerError> {
    let output = Arc::new(Mutex::new(output));
    let (to_server, from_client) = crossbeam_channel::bounded(READ_AHEAD);
    let (to_client, from_server) = crossbeam_channel::bounded::<Message>(ANSWERS_QUEUED);
    let budget = Arc::new(ReadAhead::new(read_ahead_bytes));
    let out = Arc::clone(&output);
    let reader_budget = Arc::clone(&budget);
    // Not joined: it may be blocked reading input when the server stops (the process ends).
    std::thread::Builder::new()
        .name("teil-lsp-reader".into())
        .spawn(move || read_messages(input, max_message, &to_server, &reader_budget, &*out))?;
    let out = Arc::clone(&output);
    let writer = std::thread::Builder::new()
        .name("teil-lsp-writer".into())
        .spawn(move || write_messages(&from_server, &*out))?;
    let conn = Connection {
        sender: to_client,
        receiver: from_client,
    };
    let exit = serve_counted(&conn, Some(&budget));
    // A reader waiting for room must not wait for a server that has stopped.
    budget.close();
    drop(conn);
    let written = writer.join().unwrap_or(Ok(()));
    let exit = exit?;
    written?;
    Ok(exit)
}

/// The bytes of the messages the reader has passed to the server that the server has not
/// taken yet, in order; the reader waits while they are over the bound.
struct ReadAhead {
    cap: usize,
    queued: Mutex<ReadAheadState>,
    room: Condvar,
}

#[derive(Default)]
struct ReadAheadState {
    sizes: VecDeque<usize>,
    total: usize,
    closed: bool,
}

impl ReadAhead {
    fn new(cap: usize) -> Self {
        ReadAhead {
            cap,
            queued: Mutex::new(ReadAheadState::default()),
            room: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReadAheadState> {
        self.queued.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until a message of `n` bytes fits (or nothing is queued), then counts it.
    fn acquire(&self, n: usize) {
        let mut q = self.lock();
        while q.total > 0 && q.total.saturating_add(n) > self.cap && !q.closed {
            q = self.room.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        q.sizes.push_back(n);
        q.total = q.total.saturating_add(n);
    }

    /// The server took the oldest message.
    fn release(&self) {
        let mut q = self.lock();
        if let Some(n) = q.sizes.pop_front() {
            q.total -= n;
        }
        self.room.notify_all();
    }

    fn close(&self) {
        self.lock().closed = true;
        self.room.notify_all();
    }
}

/// The reader thread: framed messages from `input` to the server, until the input ends, it
/// cannot be read further, or `exit` has been read. It reads no further while the messages
/// it has passed on and the server has not taken are over the read-ahead bound.
fn read_messages<W: Write>(
    mut input: impl BufRead,
    max_message: usize,
    to_server: &Sender<Message>,
    budget: &ReadAhead,
    out: &Mutex<W>,
) {
    loop {
        let body = match read_frame(&mut input, max_message) {
            Ok(Some(body)) => body,
            Ok(None) => return,
            Err(e) => {
                eprintln!("teil lsp: {e}");
                if let FrameError::Header(_) | FrameError::Skipped(_) = e {
                    let _ = answer_error(out, Value::Null, ErrorCode::ParseError, &e.to_string());
                }
                if e.is_resumable() {
                    continue;
                }
                return;
            }
        };
        let msg = match parse_message(&body) {
            Ok(msg) => msg,
            Err((id, code, message)) => {
                let _ = answer_error(out, id, code, &message);
                continue;
            }
        };
        let is_exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
        budget.acquire(body.len());
        if to_server.send(msg).is_err() || is_exit {
            return;
        }
    }
}

/// A message from a body, or the `id` (`null` where none can be read), code and text of the
/// error that answers it.
fn parse_message(body: &[u8]) -> Result<Message, (Value, ErrorCode, String)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            ErrorCode::ParseError,
            format!("the message is not JSON: {e}"),
        )
    })?;
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    let invalid = |e: String| (id.clone(), ErrorCode::InvalidRequest, e);
    let Some(fields) = value.as_object() else {
        return Err(invalid("a message must be a JSON object".into()));
    };
    // Decided by the fields, not by trying each kind in turn: a request with a malformed
    // `method` would otherwise read as a response and go unanswered.
    let (has_method, has_id) = (fields.contains_key("method"), fields.contains_key("id"));
    let message = match (has_method, has_id) {
        (true, true) => serde_json::from_value::<Request>(value).map(Message::Request),
        (true, false) => serde_json::from_value::<Notification>(value).map(Message::Notification),
        (false, _) => serde_json::from_value::<Response>(value).map(Message::Response),
    };
    message.map_err(|e| {
        invalid(format!(
            "not a JSON-RPC request, notification or response: {e}"
        ))
    })
}

fn answer_error<W: Write>(
    out: &Mutex<W>,
    id: Value,
    code: ErrorCode,
    message: &str,
) -> io::Result<()> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code as i32, "message": message },
    });
    let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
    write_frame(&mut *w, body.to_string().as_bytes())
}

/// The writer thread: the server's messages to `out`, until the server stops.
fn write_messages<W: Write>(from_server: &Receiver<Message>, out: &Mutex<W>) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct JsonRpc<'a> {
        jsonrpc: &'static str,
        #[serde(flatten)]
        msg: &'a Message,
    }
    for msg in from_server {
        let body = serde_json::to_vec(&JsonRpc {
            jsonrpc: "2.0",
            msg: &msg,
        })?;
        let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
        write_frame(&mut *w, &body)?;
    }
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
        // Items are complete as sent (no `completionItem/resolve`); `(` opens an expression.
        completion_provider: Some(lsp::CompletionOptions {
            resolve_provider: Some(false),
            trigger_characters: Some(vec!["(".to_string()]),
            ..Default::default()
        }),
        position_encoding: Some(lsp::PositionEncodingKind::UTF16),
        ..Default::default()
    }
}

/// Runs the initialize handshake, then answers messages until `exit` (or the end of the
/// input). Before `initialize`, requests are answered `ServerNotInitialized` and notifications
/// other than `exit` dropped; `initialize` with malformed parameters is answered
/// `InvalidParams`, and the server waits for a valid one. After `shutdown`, requests are
/// answered `InvalidRequest` and notifications other than `exit` dropped (LSP 3.17).
pub fn serve(conn: &Connection) -> Result<Exit, ServerError> {
    serve_counted(conn, None)
}

/// [`serve`], telling `budget` of every message taken from the connection.
fn serve_counted(conn: &Connection, budget: Option<&ReadAhead>) -> Result<Exit, ServerError> {
    let taken = |msg: Message| {
        if let Some(b) = budget {
            b.release();
        }
        msg
    };
    let params: lsp::InitializeParams = loop {
        let Ok(msg) = conn.receiver.recv().map(taken) else {
            return Ok(Exit::Unclean);
        };
        match msg {
            Message::Request(req) if req.method == "initialize" => {
                match serde_json::from_value(req.params) {
                    Ok(p) => {
                        let caps = serde_json::to_value(capabilities())
                            .map_err(|e| ServerError::Io(e.into()))?;
                        let result = json!({
                            "capabilities": caps,
                            "serverInfo": { "name": "teil", "version": env!("CARGO_PKG_VERSION") },
                        });
                        send(conn, Response::new_ok(req.id, result).into())?;
                        break p;
                    }
                    Err(e) => send(
                        conn,
                        error(
                            req.id,
                            ErrorCode::InvalidParams,
                            format!("invalid parameters for `initialize`: {e}"),
                        ),
                    )?,
                }
            }
            Message::Request(req) => send(
                conn,
                error(
                    req.id,
                    ErrorCode::ServerNotInitialized,
                    "the server is not initialized: send `initialize` first".into(),
                ),
            )?,
            Message::Notification(n) if n.method == "exit" => return Ok(Exit::Unclean),
            Message::Notification(_) | Message::Response(_) => {}
        }
    };
    let mut server = Server {
        completion_client: CompletionClient::of(&params),
        docs: HashMap::new(),
        unpublished: Vec::new(),
        replaced: Vec::new(),
        diagnostics_url: params
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("diagnosticsUrl"))
            .and_then(|u| u.as_str())
            .and_then(|u| lsp::Url::parse(u).ok()),
    };
    let mut shutting_down = false;
    loop {
        let msg = match conn.receiver.try_recv().map(taken) {
            Ok(msg) => msg,
            Err(TryRecvError::Empty) => {
                // Nothing is waiting: the diagnostics of the latest texts.
                if !shutting_down {
                    for n in server.publish_changed() {
                        send(conn, n.into())?;
                    }
                }
                match conn.receiver.recv().map(taken) {
                    Ok(msg) => msg,
                    Err(_) => return Ok(Exit::Unclean),
                }
            }
            Err(TryRecvError::Disconnected) => return Ok(Exit::Unclean),
        };
        match msg {
            Message::Request(req) if shutting_down => send(
                conn,
                error(
                    req.id,
                    ErrorCode::InvalidRequest,
                    "the server is shutting down".into(),
                ),
            )?,
            Message::Request(req) if req.method == "shutdown" => {
                shutting_down = true;
                send(conn, Response::new_ok(req.id, Value::Null).into())?;
            }
            Message::Request(req) if req.method == "initialize" => send(
                conn,
                error(
                    req.id,
                    ErrorCode::InvalidRequest,
                    "the server is already initialized".into(),
                ),
            )?,
            Message::Request(req) => {
                let resp = server.request(req);
                send(conn, resp.into())?;
            }
            Message::Notification(n) if n.method == "exit" => {
                return Ok(if shutting_down {
                    Exit::Clean
                } else {
                    Exit::Unclean
                });
            }
            Message::Notification(_) if shutting_down => {}
            Message::Notification(n) => {
                for out in server.notification(n) {
                    send(conn, out.into())?;
                }
            }
            Message::Response(_) => {}
        }
    }
}

fn send(conn: &Connection, msg: Message) -> Result<(), ServerError> {
    conn.sender.send(msg).map_err(|_| ServerError::Disconnected)
}

fn error(id: RequestId, code: ErrorCode, message: String) -> Message {
    Response::new_err(id, code as i32, message).into()
}

/// One open document: its latest text, analysed when first needed.
struct Document {
    version: i32,
    kind: SourceKind,
    text: Text,
}

enum Text {
    /// Changed since last analysed.
    Pending(String),
    Analysed(Box<Snapshot>),
}

impl Document {
    fn snapshot(&mut self) -> &Snapshot {
        if let Text::Pending(text) = &mut self.text {
            let text = std::mem::take(text);
            self.text = Text::Analysed(Box::new(Snapshot::new(text, self.kind)));
        }
        match &self.text {
            Text::Analysed(s) => s,
            Text::Pending(_) => unreachable!("analysed just above"),
        }
    }
}

/// One analysed version of a document.
struct Snapshot {
    lines: LineIndex,
    analysis: Analysis,
}

impl Snapshot {
    fn new(text: String, kind: SourceKind) -> Snapshot {
        Snapshot {
            lines: LineIndex::new(&text),
            analysis: Analysis::new(text, kind),
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
    /// Documents changed since their diagnostics were last published, in order of change.
    unpublished: Vec<lsp::Url>,
    /// The analyses that a change replaced, freed once the new diagnostics are sent: freeing
    /// the trees of a long file costs a fifth of analysing it, and need not delay them.
    replaced: Vec<Snapshot>,
    /// Where the explanations of diagnostic codes live (`initializationOptions.diagnosticsUrl`,
    /// e.g. spec/diagnostics.md of the repository); each code links to `URL#e0302`.
    diagnostics_url: Option<lsp::Url>,
    /// What the client's completion items may carry.
    completion_client: CompletionClient,
}

/// What the client said in `initialize` that its completion items may carry
/// (`textDocument.completion.completionItem`).
#[derive(Clone, Copy, Default)]
struct CompletionClient {
    /// Markdown documentation (`documentationFormat` lists it); plain text otherwise, which
    /// every client shows (LSP 3.17 leaves the format of a client that says nothing open).
    markdown: bool,
    /// An `InsertReplaceEdit` (`insertReplaceSupport`); a `TextEdit` otherwise.
    insert_replace: bool,
}

impl CompletionClient {
    fn of(p: &lsp::InitializeParams) -> CompletionClient {
        let Some(item) = p
            .capabilities
            .text_document
            .as_ref()
            .and_then(|t| t.completion.as_ref())
            .and_then(|c| c.completion_item.as_ref())
        else {
            return CompletionClient::default();
        };
        CompletionClient {
            markdown: item
                .documentation_format
                .as_ref()
                .is_some_and(|f| f.contains(&lsp::MarkupKind::Markdown)),
            insert_replace: item.insert_replace_support == Some(true),
        }
    }
}

/// The analysed document `uri`, or the failure of a request about a document that is not open.
fn snapshot<'a>(
    docs: &'a mut HashMap<lsp::Url, Document>,
    uri: &lsp::Url,
) -> Result<&'a Snapshot, Failure> {
    docs.get_mut(uri).map(Document::snapshot).ok_or_else(|| {
        (
            ErrorCode::InvalidParams,
            format!("document `{uri}` is not open"),
        )
    })
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
            Completion::METHOD => {
                let p: lsp::CompletionParams = params(req)?;
                json(serde_json::to_value(self.completion(p)?))
            }
            other => Err((
                ErrorCode::MethodNotFound,
                format!("unsupported request `{other}`"),
            )),
        }
    }

    fn hover(&mut self, p: lsp::HoverParams) -> Result<Option<lsp::Hover>, Failure> {
        let at = p.text_document_position_params;
        let doc = snapshot(&mut self.docs, &at.text_document.uri)?;
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
        &mut self,
        p: lsp::GotoDefinitionParams,
    ) -> Result<Option<lsp::GotoDefinitionResponse>, Failure> {
        let at = p.text_document_position_params;
        let doc = snapshot(&mut self.docs, &at.text_document.uri)?;
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

    fn references(&mut self, p: lsp::ReferenceParams) -> Result<Vec<lsp::Location>, Failure> {
        let at = p.text_document_position;
        let doc = snapshot(&mut self.docs, &at.text_document.uri)?;
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
        &mut self,
        p: lsp::DocumentSymbolParams,
    ) -> Result<lsp::DocumentSymbolResponse, Failure> {
        let doc = snapshot(&mut self.docs, &p.text_document.uri)?;
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
        &mut self,
        p: lsp::DocumentFormattingParams,
    ) -> Result<Option<Vec<lsp::TextEdit>>, Failure> {
        let doc = snapshot(&mut self.docs, &p.text_document.uri)?;
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
        &mut self,
        p: lsp::CodeActionParams,
    ) -> Result<Vec<lsp::CodeActionOrCommand>, Failure> {
        let uri = p.text_document.uri;
        let url = self.diagnostics_url.as_ref();
        let doc = snapshot(&mut self.docs, &uri)?;
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
                    diagnostics: Some(vec![diagnostic(url, doc, &uri, d)]),
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

    fn inlay_hints(&mut self, p: lsp::InlayHintParams) -> Result<Vec<lsp::InlayHint>, Failure> {
        let doc = snapshot(&mut self.docs, &p.text_document.uri)?;
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

    /// What may be written at the position ([`Analysis::completions`]), in the order the
    /// analysis gives (`sortText`). Each item's `textEdit` is on the position's line: for a
    /// client with `insertReplaceSupport`, an `InsertReplaceEdit` that inserts over the word
    /// typed before the position or replaces the whole word it is in; for another, a `TextEdit`
    /// that replaces the whole word (the word completed is the word chosen). The kinds are among those every client knows (LSP 3.17: `Text`
    /// to `Reference` without a `completionItemKind.valueSet`): `Variable`, `Function` for the
    /// functions and the conversions, `Keyword` for the other operations and the element types.
    /// `null` where nothing is offered.
    fn completion(
        &mut self,
        p: lsp::CompletionParams,
    ) -> Result<Option<lsp::CompletionResponse>, Failure> {
        let at = p.text_document_position;
        let client = self.completion_client;
        let doc = snapshot(&mut self.docs, &at.text_document.uri)?;
        let Some(c) = doc.analysis.completions(doc.offset(at.position)) else {
            return Ok(None);
        };
        let (insert, replace) = (doc.range(&c.range), doc.range(&c.replace));
        let items = c
            .items
            .into_iter()
            .enumerate()
            .map(|(k, item)| {
                use teil::ide::CompletionKind as K;
                let documentation = if client.markdown {
                    lsp::Documentation::MarkupContent(lsp::MarkupContent {
                        kind: lsp::MarkupKind::Markdown,
                        value: item.documentation,
                    })
                } else {
                    lsp::Documentation::String(item.documentation.replace('`', ""))
                };
                lsp::CompletionItem {
                    kind: Some(match item.kind {
                        K::Variable => lsp::CompletionItemKind::VARIABLE,
                        K::Function | K::Conversion => lsp::CompletionItemKind::FUNCTION,
                        K::Operation | K::ElemType => lsp::CompletionItemKind::KEYWORD,
                    }),
                    detail: Some(item.detail),
                    documentation: Some(documentation),
                    sort_text: Some(format!("{k:04}")),
                    text_edit: Some(if client.insert_replace {
                        lsp::CompletionTextEdit::InsertAndReplace(lsp::InsertReplaceEdit {
                            new_text: item.label.clone(),
                            insert,
                            replace,
                        })
                    } else {
                        lsp::CompletionTextEdit::Edit(lsp::TextEdit {
                            range: replace,
                            new_text: item.label.clone(),
                        })
                    }),
                    label: item.label,
                    ..Default::default()
                }
            })
            .collect();
        Ok(Some(lsp::CompletionResponse::Array(items)))
    }

    /// Applies a notification to the documents; only closing answers at once (with empty
    /// diagnostics). A malformed notification is dropped: it cannot be answered.
    fn notification(&mut self, n: Notification) -> Vec<Notification> {
        use lsp::notification::*;
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            match n.method.as_str() {
                DidOpenTextDocument::METHOD => {
                    let p: lsp::DidOpenTextDocumentParams =
                        serde_json::from_value(n.params).ok()?;
                    let d = p.text_document;
                    self.set_text(d.uri, d.text, d.version);
                    None
                }
                DidChangeTextDocument::METHOD => {
                    let p: lsp::DidChangeTextDocumentParams =
                        serde_json::from_value(n.params).ok()?;
                    // Full sync: the last change holds the whole text.
                    let text = p.content_changes.into_iter().last()?.text;
                    self.set_text(p.text_document.uri, text, p.text_document.version);
                    None
                }
                DidCloseTextDocument::METHOD => {
                    let p: lsp::DidCloseTextDocumentParams =
                        serde_json::from_value(n.params).ok()?;
                    let uri = p.text_document.uri;
                    self.docs.remove(&uri);
                    self.unpublished.retain(|u| *u != uri);
                    Some(publish(uri, Vec::new(), None))
                }
                _ => None,
            }
        }));
        result.ok().flatten().into_iter().collect()
    }

    /// Replaces a document's text; it is analysed when next needed.
    fn set_text(&mut self, uri: lsp::Url, text: String, version: i32) {
        let doc = Document {
            version,
            kind: SourceKind::of_path(uri.path()),
            text: Text::Pending(text),
        };
        if let Some(Document {
            text: Text::Analysed(old),
            ..
        }) = self.docs.insert(uri.clone(), doc)
        {
            self.replaced.push(*old);
        }
        if !self.unpublished.contains(&uri) {
            self.unpublished.push(uri);
        }
    }

    /// The diagnostics of every document changed since they were last published.
    fn publish_changed(&mut self) -> Vec<Notification> {
        let uris = std::mem::take(&mut self.unpublished);
        let out = uris
            .into_iter()
            .filter_map(|uri| {
                let url = self.diagnostics_url.as_ref();
                let doc = self.docs.get_mut(&uri)?;
                let version = doc.version;
                let snap = doc.snapshot();
                let diags = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    published_diagnostics(url, snap, &uri)
                }))
                .unwrap_or_default();
                Some(publish(uri, diags, Some(version)))
            })
            .collect();
        self.replaced.clear();
        out
    }
}

/// The first [`MAX_EDITOR_DIAGNOSTICS`] diagnostics of a document, then, if any are left, one
/// note counting them at the first of them: a file of garbage has a diagnostic per stray
/// character, and an editor needs the first few.
fn published_diagnostics(
    url: Option<&lsp::Url>,
    doc: &Snapshot,
    uri: &lsp::Url,
) -> Vec<lsp::Diagnostic> {
    let all = doc.analysis.diagnostics();
    let (shown, rest) = all.split_at(all.len().min(MAX_EDITOR_DIAGNOSTICS));
    let mut out: Vec<lsp::Diagnostic> =
        shown.iter().map(|d| diagnostic(url, doc, uri, d)).collect();
    if let (Some(first), Some(what)) = (rest.first(), teil::render::omitted(rest)) {
        let at = doc.position(first.primary.span.start);
        out.push(lsp::Diagnostic {
            range: lsp::Range { start: at, end: at },
            severity: Some(lsp::DiagnosticSeverity::INFORMATION),
            source: Some("teil".into()),
            message: format!(
                "{what} not shown (an editor is sent the first {MAX_EDITOR_DIAGNOSTICS} \
                 diagnostics of a file; `teil check --format json` lists all)"
            ),
            ..Default::default()
        });
    }
    out
}

fn diagnostic(
    url: Option<&lsp::Url>,
    doc: &Snapshot,
    uri: &lsp::Url,
    d: &teil::Diagnostic,
) -> lsp::Diagnostic {
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
        code_description: url.map(|base| {
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
