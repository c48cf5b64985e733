//! The `teil-target/1` protocol, the harness's side (spec/fuzzing.md, *Targets*): one
//! persistent child process per campaign, one JSON line per case on its standard input, one
//! JSON line back on its standard output.
//!
//! The command is split on whitespace and started without a shell, in a process group of its
//! own ([`teil_io::process::Group`]), so that killing it also kills whatever it started (a Python interpreter's workers, a
//! compiler). A target that exits, answers with something that is not a well-formed answer to
//! the request, or does not answer within the timeout is a [`Fault`]: the process group is
//! killed, and the next request starts the command again. Dropping a [`Target`] kills it; a
//! harness that dies without running destructors closes the target's standard input, and
//! targets stop at end of input.

pub use crate::error::Fault;
use crate::error::{BadAnswer, TargetError};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use teil_io::process::{Cancel, Group};

/// How long a target may take for one case unless `--target-timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of a target's standard error is kept for reports (the end of it).
const STDERR_TAIL: usize = 2000;

/// The longest answer line read from a target (an answer is one short JSON object): a longer
/// one is a [`Fault::Garbage`] as soon as this many bytes arrived, whatever the target sends.
pub const MAX_ANSWER: usize = 1 << 20;

/// The longest `message` or `reason` of an answer that is kept (its head, then how much was
/// left out), so that a report stays readable whatever the target says.
pub const MAX_MESSAGE: usize = 2000;

/// How often a wait for an answer looks at the cancellation flag.
const POLL: Duration = Duration::from_millis(50);

/// A target's answer to one case.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The outputs are written.
    Ok,
    /// The target does not implement something the program uses (counted, not a finding).
    Unsupported(String),
    /// The target could not run a well-typed program (a finding).
    Error(String),
}

/// A target command: a program and its arguments, split on whitespace (no shell).
#[derive(Clone, Debug, PartialEq)]
pub struct TargetCommand {
    pub program: String,
    pub args: Vec<String>,
    /// The command as given, for reports and replay commands.
    pub text: String,
}

impl TargetCommand {
    /// `Err` for a command with no words.
    pub fn parse(text: &str) -> Result<TargetCommand, TargetError> {
        let mut words = text.split_whitespace().map(str::to_string);
        let program = words.next().ok_or(TargetError::NoCommand)?;
        Ok(TargetCommand {
            program,
            args: words.collect(),
            text: text.trim().to_string(),
        })
    }
}

/// What the reader thread makes of the target's standard output, line by line.
enum Line {
    Text(String),
    /// More than [`MAX_ANSWER`] bytes without a newline.
    TooLong,
    /// A line that is not UTF-8 (its first bytes, lossily, for the report).
    NotUtf8(String),
    Failed(std::io::Error),
}

struct Running {
    child: Group,
    /// Request lines for the writer thread.
    requests: mpsc::Sender<String>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<String>>,
}

/// A target process, started on first use and restarted after every [`Fault`].
pub struct Target {
    pub command: TargetCommand,
    pub timeout: Duration,
    /// Set to stop waiting for an answer ([`Fault::Interrupted`]).
    pub cancel: Cancel,
    running: Option<Running>,
    /// How many times the command was started.
    pub starts: u64,
    /// What the target says it is (the last `target` field of its answers; [`parse_answer`]).
    pub identity: Option<String>,
}

/// Reads `r` line by line into `tx`, each line at most [`MAX_ANSWER`] bytes: the reader never
/// holds more than that, whatever the target writes.
fn read_lines(r: impl Read, tx: mpsc::Sender<Line>) {
    let mut r = BufReader::new(r);
    let mut line = Vec::new();
    loop {
        let (done, used) = match r.fill_buf() {
            Ok([]) => return,
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    line.extend_from_slice(&buf[..=i]);
                    (true, i + 1)
                }
                None => {
                    line.extend_from_slice(buf);
                    (false, buf.len())
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Line::Failed(e));
                return;
            }
        };
        r.consume(used);
        if line.len() > MAX_ANSWER {
            let _ = tx.send(Line::TooLong);
            return;
        }
        if done {
            let sent = match String::from_utf8(std::mem::take(&mut line)) {
                Ok(text) => tx.send(Line::Text(text)),
                Err(e) => {
                    let head =
                        String::from_utf8_lossy(&e.as_bytes()[..e.as_bytes().len().min(200)]);
                    tx.send(Line::NotUtf8(head.into_owned()))
                }
            };
            if sent.is_err() {
                return;
            }
        }
    }
}

impl Target {
    pub fn new(command: TargetCommand, timeout: Duration) -> Target {
        Target {
            command,
            timeout,
            cancel: Cancel::default(),
            running: None,
            starts: 0,
            identity: None,
        }
    }

    /// Starts the command if it is not running.
    pub fn start(&mut self) -> Result<(), Fault> {
        if self.running.is_some() {
            return Ok(());
        }
        // A descendant the target detaches from its group (`setsid`) comes back to this
        // process when the target exits, and [`Target::stop`] ends it.
        teil_io::process::adopt_orphans();
        let mut child = Group::spawn(
            Command::new(&self.command.program)
                .args(&self.command.args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .map_err(|e| Fault::Start(format!("`{}`: {e}", self.command.program)))?;
        self.starts += 1;
        let pipes = child.child_mut();
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (pipes.stdin.take(), pipes.stdout.take(), pipes.stderr.take())
        else {
            child.kill();
            return Err(Fault::Start("no pipes to the target".into()));
        };
        // A writer thread, so that a target that does not read its input cannot block the
        // harness on a full pipe (the timeout still applies); reader threads, so that waiting
        // for an answer can time out and a target writing much to standard error never blocks.
        let (requests, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut stdin = stdin;
            for line in rx {
                let sent = stdin
                    .write_all(line.as_bytes())
                    .and_then(|()| stdin.flush());
                if sent.is_err() {
                    break;
                }
            }
        });
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, tx));
        let tail = Arc::new(Mutex::new(String::new()));
        let t = tail.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = t.lock() {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if s.len() > 2 * STDERR_TAIL {
                        let cut = s.len() - STDERR_TAIL;
                        let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                        s.drain(..cut);
                    }
                }
            }
        });
        self.running = Some(Running {
            child,
            requests,
            lines,
            stderr: tail,
        });
        Ok(())
    }

    /// Sends one request line (without the newline) for case `id` and waits for the answer.
    /// After a fault the target is stopped; the next call starts it again.
    pub fn ask(&mut self, id: u64, request: &str) -> Result<Answer, Fault> {
        self.start()?;
        let result = self.exchange(id, request);
        if result.is_err() {
            self.stop();
        }
        result
    }

    fn exchange(&mut self, id: u64, request: &str) -> Result<Answer, Fault> {
        let timeout = self.timeout;
        let Some(r) = self.running.as_mut() else {
            return Err(Fault::Start("the target is not running".into()));
        };
        // A writer that has stopped means the pipe broke: the target is gone, which the end of
        // its standard output reports below.
        let _ = r.requests.send(format!("{request}\n"));
        // Waits in slices, so that a cancellation is seen within [`POLL`].
        let deadline = std::time::Instant::now() + timeout;
        let line = loop {
            if self.cancel.is_cancelled() {
                return Err(Fault::Interrupted);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match r.lines.recv_timeout(left.min(POLL)) {
                Ok(line) => break line,
                // The target itself has exited, though a descendant of it may hold its
                // standard output open: an exit, not a wait for the time-out.
                Err(RecvTimeoutError::Timeout) if matches!(r.child.try_wait(), Ok(Some(_))) => {
                    match r.lines.try_recv() {
                        Ok(line) => break line,
                        Err(_) => return Err(Fault::Exited(exit_report(r, "exited"))),
                    }
                }
                Err(RecvTimeoutError::Timeout) if left > POLL => continue,
                Err(RecvTimeoutError::Timeout) => return Err(Fault::Timeout(timeout)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Fault::Exited(exit_report(r, "end of its standard output")))
                }
            }
        };
        match line {
            Line::Text(line) => {
                let (answer, identity) = parse_answer(id, &line).map_err(Fault::Garbage)?;
                if identity.is_some() {
                    self.identity = identity;
                }
                Ok(answer)
            }
            Line::TooLong => Err(Fault::Garbage(BadAnswer::TooLong { max: MAX_ANSWER })),
            Line::NotUtf8(head) => Err(Fault::Garbage(BadAnswer::NotUtf8(
                head.trim_end().to_string(),
            ))),
            Line::Failed(e) => Err(Fault::Exited(exit_report(r, &format!("reading: {e}")))),
        }
    }

    /// Kills the target's process group, if it runs, and whatever it detached from the group.
    pub fn stop(&mut self) {
        if let Some(mut r) = self.running.take() {
            r.child.kill();
            teil_io::process::reap_orphans();
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How the target ended, with the end of its standard error.
fn exit_report(r: &mut Running, what: &str) -> String {
    // Give a dying process a moment to be reaped, so that its exit status can be reported.
    let mut status = None;
    for _ in 0..50 {
        if let Ok(Some(s)) = r.child.try_wait() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut out = match status {
        Some(s) => format!("{what} ({s})"),
        None => what.to_string(),
    };
    std::thread::sleep(Duration::from_millis(10));
    if let Ok(tail) = r.stderr.lock() {
        let tail = tail.trim();
        if !tail.is_empty() {
            let start = tail.len().saturating_sub(STDERR_TAIL);
            let start = (start..tail.len())
                .find(|&i| tail.is_char_boundary(i))
                .unwrap_or(0);
            out.push_str(&format!(
                "; its standard error ends with:\n{}",
                &tail[start..]
            ));
        }
    }
    out
}

/// The longest name for itself a target may give (the `target` field of an answer).
pub const MAX_IDENTITY: usize = 200;

/// Reads one answer line: the answer, and the target's name for itself if the line has a
/// `target` field (optional; the shipped adapters give their library and its version). `Err`
/// says what is wrong with the line.
pub fn parse_answer(id: u64, line: &str) -> Result<(Answer, Option<String>), BadAnswer> {
    let shown: String = line.trim().chars().take(200).collect();
    let v: Value = match serde_json::from_str(line.trim()) {
        Ok(v) => v,
        Err(e) => {
            return Err(BadAnswer::NotJson {
                shown,
                error: e.to_string(),
            })
        }
    };
    if v.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(BadAnswer::WrongId { shown, id });
    }
    let text = |f: &str| shorten(v.get(f).and_then(Value::as_str).unwrap_or(""));
    let answer = match v.get("status").and_then(Value::as_str) {
        Some("ok") => Answer::Ok,
        Some("unsupported") => Answer::Unsupported(text("reason")),
        Some("error") => Answer::Error(text("message")),
        _ => return Err(BadAnswer::NoStatus { shown }),
    };
    Ok((
        answer,
        v.get("target").and_then(Value::as_str).map(identity),
    ))
}

/// A target's name for itself, as reports show it: one line of at most [`MAX_IDENTITY`]
/// characters, control characters replaced.
fn identity(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_IDENTITY + 1)
        .collect();
    if clean.chars().count() > MAX_IDENTITY {
        format!(
            "{}...",
            clean.chars().take(MAX_IDENTITY).collect::<String>()
        )
    } else {
        clean
    }
}

/// `text`, or its first [`MAX_MESSAGE`] bytes (at a character boundary) and how many were
/// left out.
fn shorten(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_string();
    }
    let end = (0..=MAX_MESSAGE)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{} ... ({} more bytes)", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly() {
        assert_eq!(
            parse_answer(3, r#"{"id": 3, "status": "ok"}"#),
            Ok((Answer::Ok, None))
        );
        assert_eq!(
            parse_answer(
                3,
                r#"{"id": 3, "status": "unsupported", "reason": "no take"}"#
            ),
            Ok((Answer::Unsupported("no take".into()), None))
        );
        assert_eq!(
            parse_answer(3, r#"{"id": 3, "status": "error", "message": "boom"}"#),
            Ok((Answer::Error("boom".into()), None))
        );
        // The optional name: one line, at most MAX_IDENTITY characters; not a string: none.
        assert_eq!(
            parse_answer(3, r#"{"id": 3, "status": "ok", "target": "ort\n1.32"}"#),
            Ok((Answer::Ok, Some("ort 1.32".into())))
        );
        let long = format!(
            r#"{{"id": 3, "status": "ok", "target": "{}"}}"#,
            "é".repeat(500)
        );
        let (_, name) = parse_answer(3, &long).unwrap();
        assert_eq!(name, Some(format!("{}...", "é".repeat(MAX_IDENTITY))));
        assert_eq!(
            parse_answer(3, r#"{"id": 3, "status": "ok", "target": 7}"#),
            Ok((Answer::Ok, None))
        );
        for bad in [
            r#"{"id": 2, "status": "ok"}"#,
            r#"{"id": 3, "status": "fine"}"#,
            r#"{"status": "ok"}"#,
            "ok",
            "",
        ] {
            assert!(parse_answer(3, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn commands_split_on_whitespace() {
        let c = TargetCommand::parse("  python3  adapter.py --device cpu ").unwrap();
        assert_eq!(c.program, "python3");
        assert_eq!(c.args, ["adapter.py", "--device", "cpu"]);
        assert_eq!(c.text, "python3  adapter.py --device cpu");
        assert!(TargetCommand::parse(" \t").is_err());
    }
}
