//! The language server driven in process through `lsp_server::Connection::memory()`.
//!
//! File-driven: each `tests/lsp/*.teil` (or `.tin`) file is opened in a fresh server; `$0`
//! marks cursor positions (removed before the text is sent). The snapshot records what a
//! client receives: the published diagnostics, the symbols, the inlay hints, the formatting
//! edit, and at each cursor the hover, the definition, the references and the quick fixes
//! (with the text after applying each). Ranges are shown with the text they cover.

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;
use teil::ide::LineIndex;

const TIMEOUT: Duration = Duration::from_secs(20);

struct Client {
    conn: Connection,
    server: Option<JoinHandle<Result<teil_lsp::Exit, String>>>,
    next: i32,
}

impl Client {
    fn start() -> Client {
        let (server, conn) = Connection::memory();
        let handle =
            std::thread::spawn(move || teil_lsp::serve(&server).map_err(|e| e.to_string()));
        let mut c = Client {
            conn,
            server: Some(handle),
            next: 0,
        };
        let init = c.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": null,
                "capabilities": {},
                "initializationOptions": {
                    "diagnosticsUrl": "https://example.org/spec/diagnostics.md"
                }
            }),
        );
        let caps = &init.result.expect("initialize result")["capabilities"];
        for cap in [
            "hoverProvider",
            "definitionProvider",
            "referencesProvider",
            "documentSymbolProvider",
            "documentFormattingProvider",
            "codeActionProvider",
            "inlayHintProvider",
        ] {
            assert!(!caps[cap].is_null(), "{cap} missing from {caps}");
        }
        assert_eq!(caps["textDocumentSync"], json!(1), "full sync");
        c.notify("initialized", json!({}));
        c
    }

    fn notify(&self, method: &str, params: Value) {
        self.conn
            .sender
            .send(Message::Notification(Notification::new(
                method.into(),
                params,
            )))
            .expect("send");
    }

    /// Sends a request and returns its response; notifications in between are dropped.
    fn request(&mut self, method: &str, params: Value) -> Response {
        self.next += 1;
        let id = RequestId::from(self.next);
        self.conn
            .sender
            .send(Message::Request(Request::new(
                id.clone(),
                method.into(),
                params,
            )))
            .expect("send");
        loop {
            match self.conn.receiver.recv_timeout(TIMEOUT).expect("response") {
                Message::Response(r) if r.id == id => return r,
                _ => continue,
            }
        }
    }

    fn result(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params);
        assert!(r.error.is_none(), "{method}: {:?}", r.error);
        r.result.unwrap_or(Value::Null)
    }

    fn next_notification(&self) -> Notification {
        loop {
            match self
                .conn
                .receiver
                .recv_timeout(TIMEOUT)
                .expect("notification")
            {
                Message::Notification(n) => return n,
                _ => continue,
            }
        }
    }

    fn shutdown(mut self) {
        self.result("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let server = self.server.take().expect("running");
        assert_eq!(
            server.join().expect("server thread"),
            Ok(teil_lsp::Exit::Clean)
        );
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A text with `$0` markers removed, and the byte offsets where they were.
fn cursors(marked: &str) -> (String, Vec<usize>) {
    let mut text = String::new();
    let mut at = Vec::new();
    let mut rest = marked;
    while let Some(i) = rest.find("$0") {
        text.push_str(&rest[..i]);
        at.push(text.len());
        rest = &rest[i + 2..];
    }
    text.push_str(rest);
    (text, at)
}

struct Doc {
    text: String,
    lines: LineIndex,
    uri: String,
}

impl Doc {
    fn pos(&self, offset: usize) -> Value {
        let (line, character) = self.lines.position(&self.text, offset);
        json!({ "line": line, "character": character })
    }

    fn offset(&self, p: &Value) -> usize {
        self.lines.offset(
            &self.text,
            p["line"].as_u64().expect("line") as u32,
            p["character"].as_u64().expect("character") as u32,
        )
    }

    /// `2:4-2:9 "text"`, 1-based lines and columns as an editor shows them.
    fn range(&self, r: &Value) -> String {
        let (a, b) = (self.offset(&r["start"]), self.offset(&r["end"]));
        let lc = |p: &Value| {
            format!(
                "{}:{}",
                p["line"].as_u64().unwrap_or(0) + 1,
                p["character"].as_u64().unwrap_or(0) + 1
            )
        };
        format!(
            "{}-{} {:?}",
            lc(&r["start"]),
            lc(&r["end"]),
            &self.text[a..b.max(a)]
        )
    }

    /// Applies LSP text edits (non-overlapping) to the text.
    fn apply(&self, edits: &[Value]) -> String {
        let mut spans: Vec<(usize, usize, &str)> = edits
            .iter()
            .map(|e| {
                (
                    self.offset(&e["range"]["start"]),
                    self.offset(&e["range"]["end"]),
                    e["newText"].as_str().expect("newText"),
                )
            })
            .collect();
        spans.sort();
        let mut out = String::new();
        let mut at = 0;
        for (a, b, t) in spans {
            out.push_str(&self.text[at..a]);
            out.push_str(t);
            at = b;
        }
        out.push_str(&self.text[at..]);
        out
    }

    fn at(&self, offset: usize) -> Value {
        json!({ "textDocument": { "uri": self.uri }, "position": self.pos(offset) })
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

/// Drives one file through the server and renders what came back.
fn transcript(name: &str, marked: &str) -> String {
    let (text, marks) = cursors(marked);
    let doc = Doc {
        lines: LineIndex::new(&text),
        uri: format!("file:///work/{name}"),
        text,
    };
    let mut c = Client::start();
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": {
            "uri": doc.uri, "languageId": "teil", "version": 1, "text": doc.text
        }}),
    );
    let published = c.next_notification();
    assert_eq!(published.method, "textDocument/publishDiagnostics");
    assert_eq!(published.params["version"], json!(1));
    let mut out = String::from("== diagnostics\n");
    for d in published.params["diagnostics"].as_array().expect("array") {
        let severity = match d["severity"].as_u64() {
            Some(1) => "error",
            Some(2) => "warning",
            _ => "?",
        };
        out.push_str(&format!(
            "{} {severity} {}\n{}",
            d["code"].as_str().unwrap_or("?"),
            doc.range(&d["range"]),
            indent(d["message"].as_str().unwrap_or(""))
        ));
        if let Some(href) = d["codeDescription"]["href"].as_str() {
            out.push_str(&format!("    explained at {href}\n"));
        }
        for r in d["relatedInformation"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "    related {}: {}\n",
                doc.range(&r["location"]["range"]),
                r["message"].as_str().unwrap_or("")
            ));
        }
    }
    out.push_str("== symbols\n");
    let symbols = c.result(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": doc.uri } }),
    );
    for s in symbols.as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{} ({}) kind {} at {}\n",
            s["name"].as_str().unwrap_or(""),
            s["detail"].as_str().unwrap_or(""),
            s["kind"],
            doc.range(&s["selectionRange"])
        ));
    }
    out.push_str("== inlay hints\n");
    let hints = c.result(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": doc.uri },
                "range": { "start": doc.pos(0), "end": doc.pos(doc.text.len()) } }),
    );
    for h in hints.as_array().into_iter().flatten() {
        let p = &h["position"];
        out.push_str(&format!(
            "{}:{} {}\n",
            p["line"].as_u64().unwrap_or(0) + 1,
            p["character"].as_u64().unwrap_or(0) + 1,
            h["label"].as_str().unwrap_or("")
        ));
    }
    for (k, &m) in marks.iter().enumerate() {
        let p = doc.pos(m);
        out.push_str(&format!(
            "== cursor {} at {}:{}\n",
            k + 1,
            p["line"].as_u64().unwrap_or(0) + 1,
            p["character"].as_u64().unwrap_or(0) + 1
        ));
        let hover = c.result("textDocument/hover", doc.at(m));
        if hover.is_null() {
            out.push_str("hover: none\n");
        } else {
            out.push_str(&format!("hover {}\n", doc.range(&hover["range"])));
            out.push_str(&indent(hover["contents"]["value"].as_str().unwrap_or("")));
        }
        let def = c.result("textDocument/definition", doc.at(m));
        match def.is_null() {
            true => out.push_str("definition: none\n"),
            false => out.push_str(&format!("definition: {}\n", doc.range(&def["range"]))),
        }
        let mut params = doc.at(m);
        params["context"] = json!({ "includeDeclaration": true });
        let refs = c.result("textDocument/references", params);
        for r in refs.as_array().into_iter().flatten() {
            out.push_str(&format!("reference: {}\n", doc.range(&r["range"])));
        }
        let actions = c.result(
            "textDocument/codeAction",
            json!({ "textDocument": { "uri": doc.uri },
                    "range": { "start": doc.pos(m), "end": doc.pos(m) },
                    "context": { "diagnostics": [] } }),
        );
        for a in actions.as_array().into_iter().flatten() {
            let edits = a["edit"]["changes"][&doc.uri].as_array().expect("edits");
            let after = doc.apply(edits);
            let changed: Vec<&str> = after
                .lines()
                .filter(|l| !doc.text.lines().any(|o| o == *l))
                .collect();
            out.push_str(&format!(
                "quick fix ({}) {}: {}\n",
                a["kind"].as_str().unwrap_or(""),
                a["title"].as_str().unwrap_or(""),
                changed.join(" | ")
            ));
            // A fix never leaves the error it was offered for.
            let code = a["diagnostics"][0]["code"].as_str().unwrap_or("");
            let still = teil::compile(&after)
                .err()
                .unwrap_or_default()
                .iter()
                .any(|d| d.code.as_str() == code);
            assert!(!still, "{name}: fix `{}` leaves {code}", a["title"]);
        }
    }
    out.push_str("== formatting\n");
    let edits = c.result(
        "textDocument/formatting",
        json!({ "textDocument": { "uri": doc.uri },
                "options": { "tabSize": 4, "insertSpaces": true } }),
    );
    match edits.as_array() {
        None => out.push_str("none (syntax errors, or index notation)\n"),
        Some(e) if e.is_empty() => out.push_str("already formatted\n"),
        Some(e) => out.push_str(&doc.apply(e)),
    }
    c.shutdown();
    out
}

#[test]
fn file_driven_cases() {
    let dir = root().join("tests/lsp");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/lsp")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "teil" || e == "tin"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_snapshot_path(root().join("tests/lsp/snapshots"));
    settings.bind(|| {
        for path in files {
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            let marked = std::fs::read_to_string(&path).expect("read");
            insta::assert_snapshot!(name.clone(), transcript(&name, &marked));
        }
    });
}

/// Changes are answered with fresh diagnostics carrying the new version; closing clears them.
#[test]
fn changes_republish_and_close_clears() {
    let c = Client::start();
    let uri = "file:///work/change.teil";
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": {
            "uri": uri, "languageId": "teil", "version": 1, "text": "alloc A : [2]\nA = add A A\n"
        }}),
    );
    let n = c.next_notification();
    assert_eq!(n.params["diagnostics"], json!([]));
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 },
                "contentChanges": [{ "text": "alloc A : [2]\nA = add A Z\n" }] }),
    );
    let n = c.next_notification();
    assert_eq!(n.params["version"], json!(2));
    assert_eq!(n.params["diagnostics"][0]["code"], json!("E0301"));
    assert_eq!(
        n.params["diagnostics"][0]["codeDescription"]["href"],
        json!("https://example.org/spec/diagnostics.md#e0301")
    );
    c.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": uri } }),
    );
    let n = c.next_notification();
    assert_eq!(n.params["diagnostics"], json!([]));
    c.shutdown();
}

/// Bad requests get JSON-RPC errors and the server keeps serving.
#[test]
fn bad_requests_are_answered_with_errors() {
    let mut c = Client::start();
    let r = c.request("textDocument/hover", json!({ "nonsense": true }));
    assert_eq!(r.error.expect("error").code, -32602); // InvalidParams
    let r = c.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": "file:///nowhere.teil" },
                "position": { "line": 0, "character": 0 } }),
    );
    assert_eq!(r.error.expect("error").code, -32602);
    let r = c.request("textDocument/teleport", json!({}));
    assert_eq!(r.error.expect("error").code, -32601); // MethodNotFound
                                                      // Positions far outside the text are clamped, not fatal.
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": {
            "uri": "file:///work/x.teil", "languageId": "teil", "version": 1,
            "text": "alloc A : [2] // é🦀\nA = A\n"
        }}),
    );
    let hover = c.result(
        "textDocument/hover",
        json!({ "textDocument": { "uri": "file:///work/x.teil" },
                "position": { "line": 99, "character": 4000 } }),
    );
    assert!(hover.is_null());
    let hover = c.result(
        "textDocument/hover",
        json!({ "textDocument": { "uri": "file:///work/x.teil" },
                "position": { "line": 1, "character": 4 } }),
    );
    assert_eq!(
        hover["range"],
        json!({ "start": { "line": 1, "character": 4 }, "end": { "line": 1, "character": 5 } })
    );
    c.shutdown();
}

#[path = "../../teil/tests/parser_fuzz/input.rs"]
mod input;

fn corpus() -> &'static input::Corpus {
    static CORPUS: std::sync::OnceLock<input::Corpus> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| input::Corpus::load(&root()))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// The parser fuzzer's inputs, opened as documents: every request at any position gets a
    /// result, never an error (a panic would answer `InternalError`).
    #[test]
    fn every_request_on_fuzz_inputs_gets_a_result(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        line in 0u32..12,
        character in 0u32..60,
    ) {
        let (text, uri) = match input::decode(&bytes, corpus()) {
            input::Input::Teil(s) => (s, "file:///fuzz/input.teil"),
            input::Input::IndexNotation(s) => (s, "file:///fuzz/input.tin"),
            input::Input::Einsum(..) => return Ok(()),
        };
        let mut c = Client::start();
        c.notify(
            "textDocument/didOpen",
            json!({ "textDocument": {
                "uri": uri, "languageId": "teil", "version": 1, "text": text
            }}),
        );
        let published = c.next_notification();
        proptest::prop_assert_eq!(published.method.as_str(), "textDocument/publishDiagnostics");
        let doc = json!({ "uri": uri });
        let at = json!({ "textDocument": doc, "position": { "line": line, "character": character } });
        let whole = json!({ "start": { "line": 0, "character": 0 },
                            "end": { "line": line, "character": character } });
        let mut refs = at.clone();
        refs["context"] = json!({ "includeDeclaration": false });
        for (method, params) in [
            ("textDocument/hover", at.clone()),
            ("textDocument/definition", at.clone()),
            ("textDocument/references", refs),
            ("textDocument/documentSymbol", json!({ "textDocument": doc })),
            ("textDocument/formatting", json!({ "textDocument": doc,
                "options": { "tabSize": 4, "insertSpaces": true } })),
            ("textDocument/codeAction", json!({ "textDocument": doc, "range": whole,
                "context": { "diagnostics": [] } })),
            ("textDocument/inlayHint", json!({ "textDocument": doc, "range": whole })),
        ] {
            let r = c.request(method, params);
            proptest::prop_assert!(r.error.is_none(), "{method}: {:?}\n{text:?}", r.error);
        }
        c.shutdown();
    }
}
