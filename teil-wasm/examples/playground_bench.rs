//! What the playground's analysis of one edit costs, natively: the two requests the page sends
//! after an edit, `analyze` (diagnostics, statements and variables) and `subexpressions` (the
//! shapes panel, at the cursor), through `teil_wasm::handle` as the Web Worker calls it. The
//! program is read from standard input; PERFORMANCE.md ("The playground") gives the command,
//! with the 200-line program of teil-lsp's `lsp_bench --print 200`.
//!
//!     cargo run --release -p teil-wasm --example playground_bench [RUNS] < program.teil

use serde_json::json;
use std::io::Read;
use std::time::{Duration, Instant};

/// The time the worker thread `tid` has spent on a CPU so far, read once it waits for the
/// next request (Linux: `/proc/self/task/TID/schedstat`, whose first field is in nanoseconds and
/// exact for a thread that sleeps): what an edit's analysis takes on an idle core, however
/// loaded the machine is. `None` where that cannot be read. As in teil-lsp's `lsp_bench`.
fn worker_cpu_time(tid: Option<&str>) -> Option<Duration> {
    let task = std::path::Path::new("/proc/self/task").join(tid?);
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

/// Median and 95th percentile (nearest rank), in ms.
fn summary(mut times: Vec<Duration>) -> String {
    if times.is_empty() {
        return "unavailable".into();
    }
    times.sort();
    let rank = |q: f64| {
        let k = (q * times.len() as f64).ceil() as usize;
        times[k.clamp(1, times.len()) - 1].as_secs_f64() * 1e3
    };
    format!("median {:.2} ms, p95 {:.2} ms", rank(0.5), rank(0.95))
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200)
        .max(1);
    let mut source = String::new();
    std::io::stdin()
        .read_to_string(&mut source)
        .expect("a program on standard input");
    // The cursor in the middle of the text, as when the student edits a statement there.
    let offset = source.len() / 2;
    let analyze = json!({ "cmd": "analyze", "source": source }).to_string();
    let sub = json!({ "cmd": "subexpressions", "source": source, "offset": offset }).to_string();
    // The requests are answered on a worker thread, as the page's Web Worker does.
    let (to_worker, requests) = std::sync::mpsc::channel::<String>();
    let (to_page, answers) = std::sync::mpsc::channel::<String>();
    let worker = std::thread::Builder::new()
        .name("playground".into())
        .spawn(move || {
            for r in requests {
                if to_page.send(teil_wasm::handle(&r)).is_err() {
                    break;
                }
            }
        })
        .expect("worker thread");
    let ask = |r: &String| {
        to_worker.send(r.clone()).expect("worker");
        answers.recv().expect("answer")
    };
    // One request first: a thread takes its name when it starts.
    ask(&analyze);
    let tid = thread_id("playground");
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (cpu_before, started) = (worker_cpu_time(tid.as_deref()), Instant::now());
        let a = ask(&analyze);
        let s = ask(&sub);
        wall.push(started.elapsed());
        if let (Some(before), Some(after)) = (cpu_before, worker_cpu_time(tid.as_deref())) {
            cpu.push(after.saturating_sub(before));
        }
        assert!(a.starts_with('{') && !a.contains(r#""error""#), "{a}");
        assert!(s.contains(r#""subexpressions""#), "{s}");
    }
    drop(to_worker);
    worker.join().expect("worker");
    println!(
        "{} lines, {} bytes, {runs} edits: analyze + subexpressions: wall {}; CPU {}",
        source.lines().count(),
        source.len(),
        summary(wall),
        summary(cpu)
    );
}
