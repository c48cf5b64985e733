//! How long `teil lsp` takes to answer a change to a 5,000-line file (issue 13 asks for well
//! under 50 ms). Drives the server in process, as the tests do, and prints the median, the 95th
//! percentile and the maximum over the runs of: a change until its diagnostics are published,
//! then a hover and then the inlay hints of the whole file, each timed on its own, in wall-clock
//! time and in the server thread's CPU time; and, for comparison, the wall-clock time of
//! `teil::compile` alone on the same text.
//!
//!     cargo run --release -p teil-lsp --example lsp_bench [LINES] [RUNS]
//!
//! `--compile` instead calls `teil::compile` RUNS times on the text, alternately ill-typed and
//! well-typed, and nothing else: the input for counting its instructions with callgrind, which
//! stays reliable on a loaded machine where times do not (PERFORMANCE.md, "The language
//! server"):
//!
//!     valgrind --tool=callgrind --toggle-collect='teil::compile' \
//!         target/release/examples/lsp_bench --compile 5000 2
//!
//! `--print LINES` prints the well-typed program of that many lines, the input of teil-wasm's
//! `playground_bench`.

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
    // One line per statement; counted here, as counting the text each time is quadratic.
    let mut count = s.lines().count();
    let mut k = 0;
    while count < lines {
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
        count += 1;
        k += 1;
    }
    s
}

/// The time the server thread has spent on a CPU so far, read once it waits for the next
/// message (Linux: `/proc/self/task/TID/schedstat`, whose first field is in nanoseconds and
/// exact for a thread that sleeps); `None` where that cannot be read. The difference across a
/// step is the server's CPU time for it, freeing what it replaced included: what the step takes
/// on an idle core, however loaded the machine is.
fn server_cpu_time(tid: Option<&str>) -> Option<Duration> {
    let task = std::path::Path::new("/proc/self/task").join(tid?);
    // Wait until the server sleeps (state `S` after the command name in `stat`).
    for _ in 0..100_000 {
        let stat = std::fs::read_to_string(task.join("stat")).ok()?;
        if stat.rsplit(')').next()?.trim_start().starts_with('S') {
            break;
        }
        std::thread::yield_now();
    }
    let stat = std::fs::read_to_string(task.join("schedstat")).ok()?;
    Some(Duration::from_nanos(
        stat.split_whitespace().next()?.parse().ok()?,
    ))
}

/// The thread id of the thread named `name` in this process, if the system says.
fn thread_id(name: &str) -> Option<String> {
    std::fs::read_dir("/proc/self/task").ok()?.find_map(|t| {
        let t = t.ok()?;
        let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
        (comm.trim() == name).then(|| t.file_name().to_string_lossy().into_owned())
    })
}

/// Wall-clock and CPU times (see [`cpu_time`]) of runs of one step.
#[derive(Default)]
struct Times {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Times {
    /// Runs `step`, a request to the server with thread id `server` (`None`: no CPU times).
    fn time<T>(&mut self, server: Option<&str>, step: impl FnOnce() -> T) -> T {
        let (cpu, started) = (server_cpu_time(server), Instant::now());
        let out = step();
        self.wall.push(started.elapsed());
        if let (Some(before), Some(after)) = (cpu, server_cpu_time(server)) {
            self.cpu.push(after.saturating_sub(before));
        }
        out
    }

    /// The median, the 95th percentile (nearest rank) and the maximum, in ms, of the wall-clock
    /// times, then of the CPU times.
    fn summary(&self) -> String {
        let stats = |times: &[Duration]| {
            let mut times = times.to_vec();
            times.sort();
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            let rank = |q: f64| {
                let k = (q * times.len() as f64).ceil() as usize;
                ms(times[k.clamp(1, times.len()) - 1])
            };
            format!(
                "median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
                rank(0.5),
                rank(0.95),
                rank(1.0)
            )
        };
        let mut out = format!("wall {}", stats(&self.wall));
        if self.cpu.len() == self.wall.len() {
            out.push_str(&format!("; CPU {}", stats(&self.cpu)));
        }
        out
    }
}

/// The program of run `run`: ill-typed on even runs, well-typed on odd ones.
fn version(lines: usize, run: usize) -> (String, bool) {
    let broken = (run % 2 == 0).then_some(run * 37 % 1000);
    (program(lines, broken), broken.is_some())
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().filter(|a| a.starts_with("--")).cloned();
    if mode.is_some() {
        args.remove(0);
    }
    let mut args = args.into_iter();
    let lines: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    if mode.as_deref() == Some("--print") {
        print!("{}", program(lines, None));
        return;
    }
    let compile_only = mode.as_deref() == Some("--compile");
    let runs: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(30)
        .max(1);
    if compile_only {
        for run in 0..runs {
            let (text, broken) = version(lines, run);
            assert_eq!(teil::compile(&text).is_err(), broken);
        }
        return;
    }
    let (server, client) = Connection::memory();
    let handle = std::thread::Builder::new()
        .name("teil-lsp-bench".into())
        .spawn(move || teil_lsp::serve(&server))
        .expect("server thread");
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
    // Looked up once the server has answered: a thread takes its name when it starts.
    let tid = thread_id("teil-lsp-bench");
    let tid = tid.as_deref();
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
    let (mut change, mut hover, mut hints, mut front_end) = <[Times; 4]>::default().into();
    for run in 0..runs {
        // Alternate between an ill-typed and a well-typed version of the file.
        let (text, broken) = version(lines, run);
        // What `teil check` itself spends on the text (parse and check), for comparison.
        let checked = front_end.time(None, || teil::compile(&text).is_err());
        assert_eq!(checked, broken);
        let n = change.time(tid, || {
            notify(
                "textDocument/didChange",
                json!({ "textDocument": { "uri": uri, "version": run + 1 },
                        "contentChanges": [{ "text": text }] }),
            );
            published()
        });
        assert_eq!(n, usize::from(broken), "run {run}");
        let answer = hover.time(tid, || {
            request(
                "textDocument/hover",
                json!({ "textDocument": { "uri": uri },
                        "position": { "line": lines / 2, "character": 6 } }),
            )
        });
        assert!(answer.is_some_and(|h| !h.is_null()));
        let answer = hints.time(tid, || {
            request(
                "textDocument/inlayHint",
                json!({ "textDocument": { "uri": uri },
                        "range": { "start": { "line": 0, "character": 0 },
                                   "end": { "line": lines, "character": 0 } } }),
            )
        });
        assert!(answer.is_some_and(|h| h.as_array().is_some_and(|a| a.len() > lines / 2)));
    }
    request("shutdown", Value::Null);
    notify("exit", Value::Null);
    handle.join().expect("server thread").expect("server");
    println!(
        "{lines} lines, {} bytes, {runs} runs:\n  change -> diagnostics: {}\n  then hover: {}\n  \
         then inlay hints: {}\n  teil::compile alone: {}",
        text.len(),
        change.summary(),
        hover.summary(),
        hints.summary(),
        front_end.summary(),
    );
}
