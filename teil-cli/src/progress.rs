//! Progress of a campaign on standard error, for both kinds (`teil fuzz` and `teil fuzz
//! --target`): a bar with the count, the rate and the findings when standard error is a
//! terminal (the `indicatif` crate), and otherwise, with `--progress SECONDS`, one line at most
//! every SECONDS. Without either, nothing: standard error then holds only the findings.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use teil_fuzz::campaign::Progress;

/// `--progress SECONDS` as an interval: a positive number of seconds.
pub fn interval(seconds: Option<f64>) -> Result<Option<Duration>, String> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s.min(1e9)))),
        Some(s) => Err(format!(
            "`--progress {s}` is not a positive number of seconds"
        )),
    }
}

pub struct Reporter {
    bar: Option<ProgressBar>,
    /// Lines instead of a bar: the interval and when the last line was written.
    lines: Option<(Duration, Mutex<Instant>)>,
    start: Instant,
}

impl Reporter {
    /// A bar of `total` programs (a spinner when unbounded) on a terminal, else lines every
    /// `every` (none without it).
    pub fn new(total: Option<u64>, every: Option<Duration>) -> Reporter {
        let start = Instant::now();
        let bar = std::io::stderr().is_terminal().then(|| {
            let (bar, template) = match total {
                Some(n) => (
                    ProgressBar::new(n),
                    "{elapsed_precise} [{bar:40}] {pos}/{len} programs, {per_sec}, {msg}",
                ),
                None => (
                    ProgressBar::new_spinner(),
                    "{elapsed_precise} {spinner} {pos} programs, {per_sec}, {msg}",
                ),
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message("0 mismatches");
            bar
        });
        let lines = match (&bar, every) {
            (None, Some(every)) => Some((every, Mutex::new(start))),
            _ => None,
        };
        Reporter { bar, lines, start }
    }

    /// Called (from any thread) as programs are done.
    pub fn update(&self, p: Progress) {
        if let Some(bar) = &self.bar {
            bar.set_position(p.done);
            bar.set_message(format!("{} mismatches", p.mismatches));
        }
        if let Some((every, last)) = &self.lines {
            let Ok(mut last) = last.lock() else { return };
            if last.elapsed() < *every {
                return;
            }
            *last = Instant::now();
            let elapsed = self.start.elapsed().as_secs_f64();
            let of = p.total.map_or(String::new(), |n| format!("/{n}"));
            crate::out::eprint(&format!(
                "progress: {}{of} programs, {} mismatches, {:.1} programs/s, {:.0} s\n",
                p.done,
                p.mismatches,
                p.done as f64 / elapsed.max(1e-9),
                elapsed
            ));
        }
    }

    /// Removes the bar before the summary is printed.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
