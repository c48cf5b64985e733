//! Back-pressure over the byte stream (issue 42): a client that sends requests and does not
//! read the answers makes the server stop, not grow. The output is a pipe the test keeps
//! closed; the input counts what the server has read. While the output is closed, the server
//! reads a bounded number of bytes (the read-ahead) and holds a bounded number of answers;
//! once it opens, every request is answered and the session ends cleanly.

use serde_json::{json, Value};
use std::io::{self, BufRead, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use teil_lsp::Exit;

fn frame(v: Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body.as_bytes());
    out
}

/// Input that counts the bytes taken from it.
struct Counting {
    inner: io::Cursor<Vec<u8>>,
    read: Arc<AtomicUsize>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n, Ordering::SeqCst);
        Ok(n)
    }
}

impl BufRead for Counting {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.read.fetch_add(n, Ordering::SeqCst);
        self.inner.consume(n);
    }
}

/// Writes still let through, whether the gate is open, and what was written.
type Gate = (Mutex<(usize, bool, Vec<u8>)>, Condvar);

/// Output that takes `open_for` writes, then blocks until the gate opens; keeps what it got.
#[derive(Clone)]
struct Gated {
    state: Arc<Gate>,
}

impl Gated {
    fn new(open_for: usize) -> Self {
        Gated {
            state: Arc::new((Mutex::new((open_for, false, Vec::new())), Condvar::new())),
        }
    }
    fn open(&self) {
        self.state.0.lock().unwrap().1 = true;
        self.state.1.notify_all();
    }
    fn bytes(&self) -> Vec<u8> {
        self.state.0.lock().unwrap().2.clone()
    }
}

impl Write for Gated {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap();
        while s.0 == 0 && !s.1 {
            s = cv.wait(s).unwrap();
        }
        s.0 = s.0.saturating_sub(1);
        s.2.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A document with many symbols: its `documentSymbol` answer is large.
fn big_document() -> String {
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!("var x{i} : [2 3]\n"));
    }
    for i in 1..200 {
        text.push_str(&format!("x{i} = x{} + x{i}\n", i - 1));
    }
    text
}

/// Waits until the count stops moving (the server is blocked) and returns it.
fn settled(read: &AtomicUsize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = read.load(Ordering::SeqCst);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = read.load(Ordering::SeqCst);
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

fn answers(out: &[u8]) -> Vec<Value> {
    let mut rest = out;
    let mut got = Vec::new();
    while let Some(at) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
        let header = std::str::from_utf8(&rest[..at]).unwrap();
        let len: usize = header
            .trim_start_matches("Content-Length: ")
            .parse()
            .unwrap();
        let body = &rest[at + 4..at + 4 + len];
        got.push(serde_json::from_slice(body).unwrap());
        rest = &rest[at + 4 + len..];
    }
    got
}

fn session(
    messages: Vec<Value>,
    read_ahead: usize,
) -> (
    Arc<AtomicUsize>,
    Gated,
    usize,
    std::thread::JoinHandle<Exit>,
) {
    let input: Vec<u8> = messages.into_iter().flat_map(frame).collect();
    let total = input.len();
    let read = Arc::new(AtomicUsize::new(0));
    let reader = io::BufReader::with_capacity(
        4096,
        Counting {
            inner: io::Cursor::new(input),
            read: Arc::clone(&read),
        },
    );
    // Two writes per framed answer (header, body): the initialize answer goes through.
    let out = Gated::new(2);
    let writer = out.clone();
    let server = std::thread::spawn(move || {
        teil_lsp::run_with(reader, writer, teil_lsp::MAX_MESSAGE_BYTES, read_ahead).expect("runs")
    });
    (read, out, total, server)
}

fn opening() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"processId": null, "rootUri": null, "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument":
            {"uri": "file:///big.teil", "languageId": "teil", "version": 1, "text": big_document()}}}),
    ]
}

fn closing(id: i64) -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": id, "method": "shutdown"}),
        json!({"jsonrpc": "2.0", "method": "exit"}),
    ]
}

/// 600 `documentSymbol` requests, answers unread: the server stops reading after the
/// read-ahead (256 messages), holds at most a few answers, and answers all 600 once the
/// client reads.
#[test]
fn a_client_that_does_not_read_stops_the_server_without_growing_it() {
    let mut messages = opening();
    for id in 1..=600 {
        messages.push(
            json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/documentSymbol",
                              "params": {"textDocument": {"uri": "file:///big.teil"}}}),
        );
    }
    messages.extend(closing(601));
    let (read, out, total, server) = session(messages, teil_lsp::READ_AHEAD_BYTES);
    let stalled = settled(&read);
    assert!(
        stalled < total,
        "the server read all {total} bytes without writing"
    );
    // The answers produced while blocked: the one being written, the one queued, the one in
    // the server's hand.
    let waiting = answers(&out.bytes()).len();
    assert!(
        waiting <= 2,
        "{waiting} answers written while the client did not read"
    );
    out.open();
    assert_eq!(server.join().unwrap(), Exit::Clean);
    let got = answers(&out.bytes());
    let symbols: Vec<&Value> = got
        .iter()
        .filter(|m| m["id"].as_i64().is_some_and(|id| (1..=600).contains(&id)))
        .collect();
    assert_eq!(symbols.len(), 600);
    let first = &symbols[0]["result"];
    assert!(first.as_array().is_some_and(|r| r.len() >= 200), "{first}");
    assert!(symbols.iter().all(|m| &m["result"] == first));
}

/// Large notifications while the server is blocked: the read-ahead is bounded in bytes, not
/// only in messages.
#[test]
fn the_read_ahead_is_bounded_in_bytes() {
    let mut messages = opening();
    for id in 1..=4 {
        messages.push(
            json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/documentSymbol",
                              "params": {"textDocument": {"uri": "file:///big.teil"}}}),
        );
    }
    let change = "var y : [2]\n".repeat(1500); // 18 KB
    for version in 2..100 {
        messages.push(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": "file:///big.teil", "version": version},
            "contentChanges": [{"text": change}]}}),
        );
    }
    messages.extend(closing(5));
    let read_ahead = 64 << 10;
    let (read, out, total, server) = session(messages, read_ahead);
    let stalled = settled(&read);
    let opening_bytes: usize = opening().into_iter().map(|m| frame(m).len()).sum();
    // What the server took, the read-ahead, one message over it, the reader's buffer.
    let bound = opening_bytes + 4 * 200 + read_ahead + 2 * (change.len() + 200) + 4096;
    assert!(
        stalled <= bound,
        "read {stalled} of {total} bytes; bound {bound}"
    );
    assert!(total > 10 * bound);
    out.open();
    assert_eq!(server.join().unwrap(), Exit::Clean);
    let got = answers(&out.bytes());
    assert_eq!(
        got.iter().filter(|m| m["id"].as_i64() == Some(5)).count(),
        1
    );
}
