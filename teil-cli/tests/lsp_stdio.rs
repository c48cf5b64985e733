//! End to end: spawns `teil lsp` and speaks JSON-RPC over its standard input and output, as an
//! editor does (Content-Length framing), from `initialize` to `exit`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdout, Command, Stdio};

fn send(stdin: &mut impl Write, msg: &Value) {
    let body = msg.to_string();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
    stdin.flush().expect("flush");
}

fn receive(out: &mut BufReader<ChildStdout>) -> Value {
    let mut len = None;
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).expect("read") > 0,
            "server closed its output"
        );
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            len = Some(n.parse::<usize>().expect("length"));
        }
    }
    let mut body = vec![0; len.expect("Content-Length header")];
    out.read_exact(&mut body).expect("body");
    serde_json::from_slice(&body).expect("json")
}

/// The next message that is the response to `id` or a notification named `method`.
fn wait_for(out: &mut BufReader<ChildStdout>, what: &Value) -> Value {
    loop {
        let msg = receive(out);
        if (what.is_number() && msg["id"] == *what) || (what.is_string() && msg["method"] == *what)
        {
            return msg;
        }
    }
}

#[test]
fn a_client_over_pipes_gets_diagnostics_hovers_and_a_clean_exit() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_teil"))
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn teil lsp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));

    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": { "processId": null, "rootUri": null, "capabilities": {} } }),
    );
    let init = wait_for(&mut out, &json!(1));
    assert_eq!(init["result"]["serverInfo"]["name"], json!("teil"));
    assert_eq!(init["result"]["capabilities"]["hoverProvider"], json!(true));
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }),
    );

    let text = "alloc A : [4, 6]\nalloc B : [5, 6]\nalloc C : [6, 6]\nC = contr 1 3 (prod A B)\n";
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen",
                 "params": { "textDocument": {
                     "uri": "file:///tmp/fig3a.teil", "languageId": "teil",
                     "version": 7, "text": text } } }),
    );
    let diags = wait_for(&mut out, &json!("textDocument/publishDiagnostics"));
    assert_eq!(diags["params"]["version"], json!(7));
    let d = &diags["params"]["diagnostics"][0];
    assert_eq!(d["code"], json!("E0305"));
    assert_eq!(d["severity"], json!(1));
    assert_eq!(
        d["range"],
        json!({ "start": { "line": 3, "character": 10 }, "end": { "line": 3, "character": 13 } })
    );

    // Hover on `prod`: the product's shape, though the statement as a whole is ill-typed.
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                 "params": { "textDocument": { "uri": "file:///tmp/fig3a.teil" },
                             "position": { "line": 3, "character": 16 } } }),
    );
    let hover = wait_for(&mut out, &json!(2));
    let value = hover["result"]["contents"]["value"]
        .as_str()
        .expect("markdown");
    assert!(
        value.starts_with("`prod A B` : `[4, 6, 5, 6]` by T-Prod"),
        "{value}"
    );

    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": null }),
    );
    let shutdown = wait_for(&mut out, &json!(3));
    assert_eq!(shutdown["result"], Value::Null);
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "method": "exit", "params": null }),
    );
    drop(stdin);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
}

fn spawn() -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_teil"))
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn teil lsp")
}

fn initialize(stdin: &mut impl Write, out: &mut BufReader<ChildStdout>) {
    send(
        stdin,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": { "processId": null, "rootUri": null, "capabilities": {} } }),
    );
    assert!(wait_for(out, &json!(1))["result"].is_object());
}

/// LSP 3.17, `exit`: "the server should exit with success code 0 if the shutdown request has
/// been received before; otherwise with error code 1".
#[test]
fn exit_without_shutdown_is_status_1() {
    let mut child = spawn();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    initialize(&mut stdin, &mut out);
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "method": "exit", "params": null }),
    );
    assert_eq!(child.wait().expect("wait").code(), Some(1));
}

/// Invalid JSON is answered with a ParseError (`id: null`) and the next message is served; a
/// header claiming 3e10 or 2^63 bytes allocates nothing: the server skips what follows, and
/// when the input ends inside that body it stops with status 1, no panic or abort.
#[test]
fn bad_json_is_answered_and_huge_lengths_end_the_session_cleanly() {
    for length in ["30000000000", "9223372036854775808"] {
        let mut child = spawn();
        let mut stdin = child.stdin.take().expect("stdin");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        initialize(&mut stdin, &mut out);
        write!(stdin, "Content-Length: 5\r\n\r\n{{oops").expect("write");
        let parse_error = receive(&mut out);
        assert_eq!(parse_error["id"], Value::Null);
        assert_eq!(parse_error["error"]["code"], json!(-32700));
        send(
            &mut stdin,
            &json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null }),
        );
        assert_eq!(wait_for(&mut out, &json!(2))["result"], Value::Null);
        write!(stdin, "Content-Length: {length}\r\n\r\n{{}}").expect("write");
        drop(stdin);
        let status = child.wait().expect("wait");
        let mut err = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .expect("stderr");
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(err.contains("the input ended inside a message"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
