//! How long `teil lsp` takes to answer a change to a 5,000-line file (issue 13 asks for well
//! under 50 ms). Drives the server in process, as the tests do, and prints the median and the
//! maximum over the runs of: a change until its diagnostics are published, then a hover and
//! the inlay hints on the changed text (the first request after a change runs the partial
//! check).
//!
//!     cargo run --release -p teil-lsp --example lsp_bench [LINES] [RUNS]

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A program of `lines` lines: declarations, then statements mixing both syntaxes, comments
/// and every kind of operation; the statement `k` is ill-typed when `broken == Some(k)`.
fn program(lines: usize, broken: Option<usize>) -> String {
    let mut s = String::from("// benchmark program\n");
    let decls = 40;
    for k in 0..decls {
        s.push_str(&format!("alloc M{k} : [8, 8]\n"));
    }
    s.push_str("alloc v : [8]\nalloc w : [8, 8, 8]\n");
    let mut k = 0;
    while s.lines().count() < lines {
        let (a, b) = (k % decls, (k * 7 + 3) % decls);
        // Each right-hand side has shape [8, 8] (target M0) or [8] (target v).
        let (target, rhs) = match k % 6 {
            0 => ("M0", format!("contr 2 3 (prod M{a} M{b})")),
            1 => ("M0", format!("(M{a} # M{b}) .[2 3] + M{a} ^[1 2]")),
            2 => ("M0", format!("add M{a} (transp 1 2 (mul M{b} M{a}))")),
            3 => ("v", format!("div (red+ 1 (red+ 2 (expa 3 8 M{a}))) 2")),
            4 => ("M0", "proj 3 1 w // a slice".to_string()),
            _ => ("v", format!("contr 1 2 (diag 2 3 (prod M{a} M{b}))")),
        };
        let target = if broken == Some(k) { "w" } else { target };
        s.push_str(&format!("{target} = {rhs}\n"));
        k += 1;
    }
    s
}

fn main() {
    let mut args = std::env::args().skip(1);
    let lines: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    let (server, client) = Connection::memory();
    let handle = std::thread::spawn(move || teil_lsp::serve(&server));
    let mut id = 0;
    let mut request = |method: &str, params: Value| {
        id += 1;
        let rid = RequestId::from(id);
        client
            .sender
            .send(Message::Request(Request::new(
                rid.clone(),
                method.into(),
                params,
            )))
            .expect("send");
        loop {
            if let Message::Response(r) = client.receiver.recv().expect("receive") {
                if r.id == rid {
                    assert!(r.error.is_none(), "{:?}", r.error);
                    return r.result;
                }
            }
        }
    };
    request(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
    );
    let notify = |method: &str, params: Value| {
        client
            .sender
            .send(Message::Notification(Notification::new(
                method.into(),
                params,
            )))
            .expect("send");
    };
    let published = || loop {
        if let Message::Notification(n) = client.receiver.recv().expect("receive") {
            if n.method == "textDocument/publishDiagnostics" {
                return n.params["diagnostics"].as_array().map_or(0, Vec::len);
            }
        }
    };
    notify("initialized", json!({}));
    let uri = "file:///bench/big.teil";
    let text = program(lines, None);
    notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "teil", "version": 0, "text": text } }),
    );
    assert_eq!(published(), 0, "the benchmark program must check");
    let (mut change, mut first_request, mut front_end) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        // Alternate between an ill-typed and a well-typed version of the file.
        let broken = (run % 2 == 0).then_some(run * 37 % 1000);
        let text = program(lines, broken);
        // What `teil check` itself spends on the text (parse and check), for comparison.
        let started = Instant::now();
        let checked = teil::compile(&text);
        front_end.push(started.elapsed());
        assert_eq!(checked.is_err(), broken.is_some());
        let started = Instant::now();
        notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": run + 1 },
                    "contentChanges": [{ "text": text }] }),
        );
        let n = published();
        change.push(started.elapsed());
        assert_eq!(n, usize::from(broken.is_some()), "run {run}");
        let started = Instant::now();
        let hover = request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": uri },
                    "position": { "line": lines / 2, "character": 6 } }),
        );
        let hints = request(
            "textDocument/inlayHint",
            json!({ "textDocument": { "uri": uri },
                    "range": { "start": { "line": 0, "character": 0 },
                               "end": { "line": lines, "character": 0 } } }),
        );
        first_request.push(started.elapsed());
        assert!(hover.is_some_and(|h| !h.is_null()));
        assert!(hints.is_some_and(|h| h.as_array().is_some_and(|a| a.len() > lines / 2)));
    }
    request("shutdown", Value::Null);
    notify("exit", Value::Null);
    handle.join().expect("server thread").expect("server");
    let stats = |mut v: Vec<Duration>| {
        v.sort();
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (cm, cx) = stats(change);
    let (rm, rx) = stats(first_request);
    let (fm, fx) = stats(front_end);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{lines} lines, {} bytes, {runs} runs: change -> diagnostics median {:.1} ms, max {:.1} ms; \
         then hover + inlay hints median {:.1} ms, max {:.1} ms; teil::compile alone median {:.1} ms, \
         max {:.1} ms",
        text.len(),
        ms(cm),
        ms(cx),
        ms(rm),
        ms(rx),
        ms(fm),
        ms(fx),
    );
}
