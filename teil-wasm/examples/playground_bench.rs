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

/// The time this thread has spent on a CPU so far (Linux: the first field of
/// `/proc/thread-self/schedstat`, in nanoseconds): the time on an idle core, however loaded
/// the machine is. `None` where that cannot be read.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(Duration::from_nanos(
        stat.split_whitespace().next()?.parse().ok()?,
    ))
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
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (cpu_before, started) = (cpu_time(), Instant::now());
        let a = teil_wasm::handle(&analyze);
        let s = teil_wasm::handle(&sub);
        wall.push(started.elapsed());
        if let (Some(before), Some(after)) = (cpu_before, cpu_time()) {
            cpu.push(after.saturating_sub(before));
        }
        assert!(a.starts_with(r#"{"#) && !a.contains(r#""error""#), "{a}");
        assert!(s.contains(r#""subexpressions""#), "{s}");
    }
    println!(
        "{} lines, {} bytes, {runs} edits: analyze + subexpressions: wall {}; CPU {}",
        source.lines().count(),
        source.len(),
        summary(wall),
        summary(cpu)
    );
}
