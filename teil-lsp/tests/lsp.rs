//! The language server driven in process through `lsp_server::Connection::memory()`.
//!
//! File-driven: each `tests/lsp/*.teil` (or `.tin`) file is opened in a fresh server; `$0`
//! marks cursor positions and `$c` completion points (both removed before the text is sent).
//! The snapshot records what a client receives: the published diagnostics, the symbols, the
//! inlay hints, the formatting edit, at each cursor the hover, the definition, the references
//! and the quick fixes (with the text after applying each), and at each completion point the
//! completion list (each item's documentation the first time the file shows it). Ranges are
//! shown with the text they cover.

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

/// What the test client tells the server its completion items may carry, as VS Code does:
/// Markdown documentation first, insert-or-replace edits.
fn markdown_client() -> Value {
    json!({ "textDocument": { "completion": { "completionItem": {
        "documentationFormat": ["markdown", "plaintext"],
        "insertReplaceSupport": true
    } } } })
}

impl Client {
    fn start() -> Client {
        Client::start_with(markdown_client())
    }

    fn start_with(capabilities: Value) -> Client {
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
                "capabilities": capabilities,
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
            "completionProvider",
        ] {
            assert!(!caps[cap].is_null(), "{cap} missing from {caps}");
        }
        assert_eq!(
            caps["completionProvider"],
            json!({ "resolveProvider": false, "triggerCharacters": ["("] })
        );
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

/// A text with its `$0` and `$c` markers removed, and the byte offsets where each kind was.
fn cursors(marked: &str) -> (String, Vec<usize>, Vec<usize>) {
    let mut text = String::new();
    let (mut at, mut complete) = (Vec::new(), Vec::new());
    let mut rest = marked;
    while let Some(i) = rest.find('$') {
        let list = match rest.as_bytes().get(i + 1) {
            Some(b'0') => &mut at,
            Some(b'c') => &mut complete,
            _ => panic!("`$` is followed by `0` or `c` in a test file"),
        };
        text.push_str(&rest[..i]);
        list.push(text.len());
        rest = &rest[i + 2..];
    }
    text.push_str(rest);
    (text, at, complete)
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
    let (text, marks, completions) = cursors(marked);
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
    let mut documented = std::collections::HashSet::new();
    for (k, &m) in completions.iter().enumerate() {
        let p = doc.pos(m);
        out.push_str(&format!(
            "== completion {} at {}:{}\n",
            k + 1,
            p["line"].as_u64().unwrap_or(0) + 1,
            p["character"].as_u64().unwrap_or(0) + 1
        ));
        out.push_str(&completion_list(
            &doc,
            &c.result("textDocument/completion", doc.at(m)),
            m,
            &mut documented,
        ));
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

/// A completion answer at `offset` as text: the ranges every item inserts at and replaces
/// (the same for all, on the line of the offset; the first ends there and starts the second),
/// then one line per item in the order of its
/// `sortText` (which is the order sent): label, kind, detail; then its Markdown documentation,
/// unless an item of the same label and documentation was shown before.
fn completion_list(
    doc: &Doc,
    answer: &Value,
    offset: usize,
    documented: &mut std::collections::HashSet<(String, String)>,
) -> String {
    let Some(items) = answer.as_array() else {
        assert!(answer.is_null(), "{answer}");
        return "none\n".to_string();
    };
    assert!(!items.is_empty(), "an empty list is sent as null");
    let edit = &items[0]["textEdit"];
    let (insert, replace) = (&edit["insert"], &edit["replace"]);
    let mut out = format!(
        "inserts at {}, replaces {}\n",
        doc.range(insert),
        doc.range(replace)
    );
    assert_eq!(doc.offset(&insert["end"]), offset);
    assert_eq!(insert["start"], replace["start"]);
    assert_eq!(replace["start"]["line"], replace["end"]["line"]);
    let mut sort = String::new();
    for item in items {
        let label = item["label"].as_str().expect("label");
        assert_eq!(
            (&item["textEdit"]["insert"], &item["textEdit"]["replace"]),
            (insert, replace),
            "{label}"
        );
        assert_eq!(item["textEdit"]["newText"], json!(label));
        let key = item["sortText"].as_str().expect("sortText").to_string();
        assert!(key > sort, "{label}: sortText {key} after {sort}");
        sort = key;
        let kind = match item["kind"].as_u64() {
            Some(3) => "function",
            Some(6) => "variable",
            Some(14) => "keyword",
            other => panic!("{label}: kind {other:?}"),
        };
        out.push_str(&format!(
            "{label} ({kind}) {}\n",
            item["detail"].as_str().unwrap_or("")
        ));
        assert_eq!(item["documentation"]["kind"], json!("markdown"));
        let docs = item["documentation"]["value"]
            .as_str()
            .expect("documentation");
        if documented.insert((label.to_string(), docs.to_string())) {
            out.push_str(&indent(docs));
        }
    }
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

/// Completion as LSP 3.17 has it: Markdown documentation only for a client that lists it
/// (`completionItem.documentationFormat`), plain text otherwise; `null` where nothing fits; an
/// error for a document that is not open.
#[test]
fn completion_documentation_follows_the_client() {
    let mut c = Client::start_with(json!({}));
    let uri = "file:///work/complete.teil";
    let text = "input alloc A : f32[2]\noutput alloc B : f32[2]\nB = ma // max\n";
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "teil", "version": 1, "text": text } }),
    );
    let at = |character: u32| {
        json!({ "textDocument": { "uri": uri },
                "position": { "line": 2, "character": character } })
    };
    let items = c.result("textDocument/completion", at(6));
    let items = items.as_array().expect("an array of items");
    let max = items
        .iter()
        .find(|i| i["label"] == json!("max"))
        .expect("max");
    assert_eq!(
        max,
        &json!({
            "label": "max",
            "kind": 3,
            "detail": "max e0 e1",
            "documentation": "max e0 e1: the larger of each pair of elements (IEEE 754-2019 \
                maximum: NaN propagating, -0 < +0), exact in the operands' element type.\n\n\
                Typing rule: T-Func2.",
            "sortText": "0008",
            "textEdit": {
                "range": { "start": { "line": 2, "character": 4 },
                           "end": { "line": 2, "character": 6 } },
                "newText": "max"
            }
        })
    );
    let kinds: Vec<(&str, u64)> = items
        .iter()
        .map(|i| {
            (
                i["label"].as_str().unwrap_or(""),
                i["kind"].as_u64().unwrap_or(0),
            )
        })
        .filter(|(l, _)| ["A", "exp", "f32", "contr"].contains(l))
        .collect();
    assert_eq!(kinds, [("A", 6), ("exp", 3), ("f32", 3), ("contr", 14)]);
    // In the comment, and after an operand: nothing.
    assert!(c.result("textDocument/completion", at(12)).is_null());
    assert!(c.result("textDocument/completion", at(1)).is_null());
    let r = c.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": "file:///work/closed.teil" },
                "position": { "line": 0, "character": 0 } }),
    );
    assert_eq!(r.error.expect("error").code, -32602); // InvalidParams
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
            ("textDocument/completion", at.clone()),
        ] {
            let r = c.request(method, params);
            proptest::prop_assert!(r.error.is_none(), "{method}: {:?}\n{text:?}", r.error);
        }
        c.shutdown();
    }
}
