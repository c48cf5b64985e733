//! The protocol's edges (LSP 3.17, JSON-RPC 2.0): the lifecycle (`initialize`, `shutdown`,
//! `exit` and their exit statuses), messages that cannot be read, bursts of changes, and the
//! cap on published diagnostics. Messages are queued before the server starts, so what it
//! sees waiting, and so what it answers, does not depend on thread timing.

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};
use std::io::Cursor;
use std::sync::{Arc, Mutex};
use teil_lsp::Exit;

fn request(id: i32, method: &str, params: Value) -> Message {
    Message::Request(Request::new(RequestId::from(id), method.into(), params))
}

fn notification(method: &str, params: Value) -> Message {
    Message::Notification(Notification::new(method.into(), params))
}

fn initialize(id: i32) -> Message {
    request(
        id,
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
    )
}

/// Serves `messages` (queued before the server starts) to the end; what came back as JSON.
fn serve_all(messages: Vec<Message>) -> (Exit, Vec<Value>) {
    let (server, client) = Connection::memory();
    for m in messages {
        client.sender.send(m).expect("send");
    }
    drop(client.sender);
    let exit = teil_lsp::serve(&server).expect("served");
    drop(server);
    let out = client
        .receiver
        .try_iter()
        .map(|m| serde_json::to_value(m).expect("json"))
        .collect();
    (exit, out)
}

/// Opens `text` in a live server and returns the diagnostics published for it.
fn published(uri: &str, text: &str) -> Vec<Value> {
    let (server, client) = Connection::memory();
    let handle = std::thread::spawn(move || teil_lsp::serve(&server).expect("served"));
    for m in [
        initialize(1),
        notification(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "teil", "version": 1, "text": text } }),
        ),
    ] {
        client.sender.send(m).expect("send");
    }
    let published = loop {
        let m = client
            .receiver
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("a message");
        if let Message::Notification(n) = m {
            break n.params;
        }
    };
    client
        .sender
        .send(request(2, "shutdown", Value::Null))
        .expect("send");
    client
        .sender
        .send(notification("exit", Value::Null))
        .expect("send");
    assert_eq!(handle.join().expect("server"), Exit::Clean);
    assert_eq!(published["uri"], json!(uri));
    published["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .clone()
}

fn answer(out: &[Value], id: i32) -> &Value {
    out.iter()
        .find(|m| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no answer to {id} in {out:?}"))
}

fn error_code(out: &[Value], id: i32) -> Value {
    answer(out, id)["error"]["code"].clone()
}

#[test]
fn exit_after_shutdown_is_clean_and_without_it_is_not() {
    let (exit, out) = serve_all(vec![
        initialize(1),
        request(2, "shutdown", Value::Null),
        notification("exit", Value::Null),
    ]);
    assert_eq!((exit, exit.code()), (Exit::Clean, 0));
    assert_eq!(answer(&out, 2)["result"], Value::Null);
    let (exit, _) = serve_all(vec![initialize(1), notification("exit", Value::Null)]);
    assert_eq!((exit, exit.code()), (Exit::Unclean, 1));
    // The input ends without `exit`.
    let (exit, _) = serve_all(vec![initialize(1)]);
    assert_eq!(exit, Exit::Unclean);
    // `exit` before `initialize`.
    let (exit, out) = serve_all(vec![notification("exit", Value::Null)]);
    assert_eq!((exit, out.len()), (Exit::Unclean, 0));
}

#[test]
fn the_lifecycle_answers_out_of_order_requests_with_errors() {
    let (exit, out) = serve_all(vec![
        request(1, "textDocument/hover", json!({})),
        // Malformed parameters: InvalidParams, and the server waits for a valid `initialize`.
        request(2, "initialize", json!({ "capabilities": 5 })),
        initialize(3),
        request(4, "initialize", json!({ "capabilities": {} })),
        request(5, "shutdown", Value::Null),
        request(6, "textDocument/hover", json!({})),
        notification("exit", Value::Null),
    ]);
    assert_eq!(error_code(&out, 1), json!(-32002)); // ServerNotInitialized
    assert_eq!(error_code(&out, 2), json!(-32602)); // InvalidParams
    assert!(answer(&out, 2)["result"].is_null());
    assert_eq!(
        answer(&out, 3)["result"]["serverInfo"]["name"],
        json!("teil")
    );
    assert_eq!(error_code(&out, 4), json!(-32600)); // InvalidRequest: initialized already
    assert_eq!(answer(&out, 5)["result"], Value::Null);
    assert_eq!(error_code(&out, 6), json!(-32600)); // shutting down
    assert_eq!(exit, Exit::Clean);
}

/// A burst of changes is analysed once: one `publishDiagnostics`, for the last version, and a
/// hover after it answers about the last text.
#[test]
fn a_burst_of_changes_is_analysed_once() {
    let uri = "file:///work/burst.teil";
    let decls: String = (0..400).map(|i| format!("alloc V{i} : [2]\n")).collect();
    let mut msgs = vec![
        initialize(1),
        notification(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "teil", "version": 0,
                                      "text": decls } }),
        ),
    ];
    for v in 1..=300 {
        // Versions 1 to 299 have an error on line 400; the last has `V1 = ...` there.
        let bad = if v < 300 {
            format!("V{v} = add V{v} Z\n")
        } else {
            String::new()
        };
        let text = format!("{decls}{bad}V1 = add V1 V2\n");
        msgs.push(notification(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": v },
                    "contentChanges": [{ "text": text }] }),
        ));
    }
    msgs.push(request(
        2,
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri }, "position": { "line": 400, "character": 0 } }),
    ));
    msgs.push(request(3, "shutdown", Value::Null));
    msgs.push(notification("exit", Value::Null));
    let (exit, out) = serve_all(msgs);
    assert_eq!(exit, Exit::Clean);
    let published: Vec<&Value> = out
        .iter()
        .filter(|m| m["method"] == json!("textDocument/publishDiagnostics"))
        .collect();
    assert_eq!(
        published.len(),
        0,
        "nothing is published while messages wait"
    );
    let hover = answer(&out, 2)["result"]["contents"]["value"].clone();
    assert!(
        hover.as_str().unwrap().starts_with("`V1` : `[2]`"),
        "{hover}"
    );
}

/// Diagnostics are published once nothing waits: one notification for a burst.
#[test]
fn diagnostics_of_a_burst_are_published_once_for_its_last_version() {
    let uri = "file:///work/burst.teil";
    let (server, client) = Connection::memory();
    client.sender.send(initialize(1)).expect("send");
    for v in 1..=200 {
        let text = format!("alloc A : [2]\nA = add A Z{v}\n");
        client
            .sender
            .send(notification(
                if v == 1 {
                    "textDocument/didOpen"
                } else {
                    "textDocument/didChange"
                },
                json!({ "textDocument": { "uri": uri, "languageId": "teil", "version": v, "text": text },
                        "contentChanges": [{ "text": text }] }),
            ))
            .expect("send");
    }
    let handle = std::thread::spawn(move || teil_lsp::serve(&server).expect("served"));
    let recv = || {
        client
            .receiver
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("a message")
    };
    assert_eq!(serde_json::to_value(recv()).unwrap()["id"], json!(1));
    let published = serde_json::to_value(recv()).unwrap();
    assert_eq!(published["params"]["version"], json!(200));
    let diags = published["params"]["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1);
    assert!(
        diags[0]["message"].as_str().unwrap().contains("Z200"),
        "{diags:?}"
    );
    // Nothing else was published before the answer to `shutdown`.
    client
        .sender
        .send(request(2, "shutdown", Value::Null))
        .expect("send");
    assert_eq!(serde_json::to_value(recv()).unwrap()["id"], json!(2));
    client
        .sender
        .send(notification("exit", Value::Null))
        .expect("send");
    assert_eq!(handle.join().expect("server"), Exit::Clean);
}

#[test]
fn published_diagnostics_stop_at_the_cap_with_a_note_counting_the_rest() {
    let uri = "file:///work/garbage.teil";
    let text = "$%".repeat(teil_lsp::MAX_EDITOR_DIAGNOSTICS);
    let diags = published(uri, &text);
    assert_eq!(diags.len(), teil_lsp::MAX_EDITOR_DIAGNOSTICS + 1);
    let note = &diags[teil_lsp::MAX_EDITOR_DIAGNOSTICS];
    assert_eq!(note["severity"], json!(3)); // Information
    let pos = json!({ "line": 0, "character": teil_lsp::MAX_EDITOR_DIAGNOSTICS });
    assert_eq!(note["range"], json!({ "start": pos, "end": pos }));
    assert_eq!(
        note["message"],
        json!(
            "1000 more errors not shown (an editor is sent the first 1000 diagnostics of a \
             file; `teil check --format json` lists all)"
        )
    );
    assert_eq!(diags[999]["range"]["start"]["character"], json!(999));
}

/// A line is what LSP says: `\n`, `\r\n` or a lone `\r` end it, U+2028 and `\x0b` do not; the
/// server's positions are those of `teil check --format json` (1-based there).
#[test]
fn positions_agree_with_the_json_diagnostics_after_lone_cr_and_separators() {
    let uri = "file:///work/lines.teil";
    let text = "alloc A : [2]\r\nA = A\rA = \u{2028}A\x0b $\r\n%";
    let lsp: Vec<(u64, u64)> = published(uri, text)
        .iter()
        .map(|d| {
            let s = &d["range"]["start"];
            (
                s["line"].as_u64().unwrap(),
                s["character"].as_u64().unwrap(),
            )
        })
        .collect();
    let Err(diags) = teil::guard::load("lines.teil", text) else {
        panic!("the text has errors")
    };
    let renderer = teil::render::Renderer::new("lines.teil", text);
    let json: Vec<(u64, u64)> = diags
        .iter()
        .map(|d| {
            let j: Value = serde_json::from_str(&renderer.json(d)).unwrap();
            (
                j["line"].as_u64().unwrap() - 1,
                j["column"].as_u64().unwrap() - 1,
            )
        })
        .collect();
    // U+2028 at line 2, column 4; `\x0b` at 2:6, `$` at 2:8, `%` at 3:0.
    assert_eq!(lsp, [(2, 4), (2, 6), (2, 8), (3, 0)]);
    assert_eq!(json, lsp);
}

/// The byte stream: frames that cannot be read are answered with `id: null` and the server
/// reads on where the framing allows; a header without a usable length ends the session.
#[test]
fn unreadable_messages_are_answered_and_the_server_reads_on() {
    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }
    let hover = json!({ "jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                        "params": { "textDocument": { "uri": "file:///x.teil" },
                                    "position": { "line": 0, "character": 0 } } });
    let mut input = String::new();
    input.push_str(&frame(
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": { "capabilities": {} } })
        .to_string(),
    ));
    input.push_str(&frame("{not json")); // ParseError
    input.push_str(&frame(r#"{"jsonrpc": "2.0", "id": 7, "method": 5}"#)); // InvalidRequest
    input.push_str(&frame("[1, 2]")); // InvalidRequest (no batches in LSP)
    input.push_str(&frame(&"x".repeat(1001))); // over the cap of 1000: skipped
    input.push_str("Content-Length: 2\r\nnonsense\r\n\r\n{}"); // a malformed field: skipped
    input.push_str(&frame(&hover.to_string()));
    input.push_str("Content-Type: x\r\n\r\n{}"); // no length: the end
    input.push_str(&frame(&hover.to_string()));

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let output = Shared::default();
    let exit = teil_lsp::run(Cursor::new(input.into_bytes()), output.clone(), 1000).expect("ran");
    assert_eq!(exit, Exit::Unclean);
    let bytes = output.0.lock().unwrap().clone();
    let mut r = Cursor::new(bytes);
    let mut out = Vec::new();
    while let Some(body) = teil::framing::read_frame(&mut r, usize::MAX).expect("framed") {
        out.push(serde_json::from_slice::<Value>(&body).expect("json"));
    }
    // The reader thread answers what it cannot read, the server the rest: each in order, but
    // the two interleave as the threads run.
    let codes = |of_reader: bool| -> Vec<(Value, Value)> {
        out.iter()
            .filter(|m| [json!(-32700), json!(-32600)].contains(&m["error"]["code"]) == of_reader)
            .map(|m| (m["id"].clone(), m["error"]["code"].clone()))
            .collect()
    };
    assert_eq!(
        codes(true),
        [
            (Value::Null, json!(-32700)),
            (json!(7), json!(-32600)),
            (Value::Null, json!(-32600)),
            (Value::Null, json!(-32700)),
            (Value::Null, json!(-32700)),
            (Value::Null, json!(-32700)),
        ],
        "{out:?}"
    );
    // The hover after the skipped messages is answered: its document is not open.
    assert_eq!(
        codes(false),
        [(json!(1), Value::Null), (json!(2), json!(-32602))],
        "{out:?}"
    );
    let reader: Vec<&Value> = out
        .iter()
        .filter(|m| m["id"] != json!(1) && m["id"] != json!(2))
        .collect();
    assert_eq!(
        reader[3]["error"]["message"],
        json!("a message of 1001 bytes is larger than the maximum of 1000 bytes")
    );
    assert_eq!(
        reader[5]["error"]["message"],
        json!("malformed header: no `Content-Length`")
    );
    assert!(out.iter().all(|m| m["jsonrpc"] == json!("2.0")));
}
