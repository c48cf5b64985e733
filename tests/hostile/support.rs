//! Running `teil` under limits and classifying how it ended.

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The address-space limit of every case unless it sets its own: generous for the binary,
/// far below what the hostile inputs would ask for.
pub const DEFAULT_MEMORY: u64 = 2 << 30;

/// Every case must end well under this.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);

/// Whether the long mode was asked for (`TEIL_HOSTILE_LONG=1`).
pub fn long_mode() -> bool {
    std::env::var_os("TEIL_HOSTILE_LONG").is_some_and(|v| v == "1")
}

/// One invocation of `teil` with its limits.
pub struct Case {
    args: Vec<String>,
    stdin: Option<Vec<u8>>,
    cwd: Option<std::path::PathBuf>,
    memory: u64,
    deadline: Duration,
    env: Vec<(String, String)>,
    signal: Option<(Duration, libc::c_int)>,
}

/// How a case ended. A case that was killed at its deadline panics in `run` (a hang is never
/// an acceptable outcome), so every `Outcome` is of a process that ended by itself.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// The CPU time (user and system) of `teil` and of the processes it waited for.
    pub cpu: Duration,
}

impl Case {
    pub fn new<I, S>(args: I) -> Case
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Case {
            args: args.into_iter().map(Into::into).collect(),
            stdin: None,
            cwd: None,
            memory: DEFAULT_MEMORY,
            deadline: DEFAULT_DEADLINE,
            env: Vec::new(),
            signal: None,
        }
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Case {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn cwd(mut self, dir: &Path) -> Case {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    pub fn deadline(mut self, d: Duration) -> Case {
        self.deadline = d;
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Case {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Sends `signal` to `teil` (only to it, not to its process group) once `after` has passed.
    pub fn signal_after(mut self, after: Duration, signal: libc::c_int) -> Case {
        self.signal = Some((after, signal));
        self
    }

    /// Runs the case; panics (failing the test) if it is still running at its deadline.
    // The child is reaped by `wait4` (which also gives its CPU time), which clippy does not see.
    #[allow(clippy::zombie_processes)]
    pub fn run(self) -> Outcome {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_teil"));
        cmd.args(&self.args)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("NO_COLOR", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let memory = self.memory;
        // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: memory as libc::rlim_t,
                    rlim_max: memory as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let start = Instant::now();
        let mut child = cmd.spawn().expect("spawn teil");
        if let Some(bytes) = self.stdin {
            let mut pipe = child.stdin.take().unwrap();
            // The child may exit before reading everything; that is not an error here.
            let writer = std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
            drop(writer);
        }
        // Drain the pipes on threads so a chatty child cannot block on a full pipe.
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let out_t = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut out, &mut v);
            v
        });
        let err_t = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut err, &mut v);
            v
        });
        let mut signal = self.signal;
        let pid = child.id() as libc::pid_t;
        let (status, cpu) = loop {
            let mut raw = 0;
            // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: wait4(2) on our own child, with pointers to the two locals. `wait4`
            // rather than `Child::try_wait` because it also gives the child's CPU time.
            let reaped = unsafe { libc::wait4(pid, &mut raw, libc::WNOHANG, &mut usage) };
            assert!(reaped >= 0, "wait4: {}", std::io::Error::last_os_error());
            if reaped == pid {
                let time = |t: libc::timeval| {
                    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
                };
                break (
                    ExitStatus::from_raw(raw),
                    time(usage.ru_utime) + time(usage.ru_stime),
                );
            }
            if let Some((_, sig)) = signal.filter(|(after, _)| start.elapsed() >= *after) {
                // SAFETY: kill(2) on the child's id, which it keeps until we reap it.
                unsafe { libc::kill(child.id() as libc::pid_t, sig) };
                signal = None;
            }
            if start.elapsed() > self.deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "teil {:?} was still running after {:?} (a hang)",
                    self.args, self.deadline
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let elapsed = start.elapsed();
        let stdout = String::from_utf8_lossy(&out_t.join().unwrap()).into_owned();
        let stderr = String::from_utf8_lossy(&err_t.join().unwrap()).into_owned();
        Outcome {
            status,
            stdout,
            stderr,
            elapsed,
            cpu,
        }
    }
}

impl Outcome {
    /// Asserts the process exited by itself with `code` (not a signal, not an abort, no panic).
    pub fn exits(&self, code: i32) -> &Outcome {
        assert!(
            !self.stderr.contains("panicked at"),
            "panic:\n{}",
            self.stderr
        );
        assert!(
            !self.stderr.contains("memory allocation of"),
            "allocation abort:\n{}",
            self.stderr
        );
        assert_eq!(
            self.status.code(),
            Some(code),
            "exit status {:?}, expected {code}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            truncate(&self.stdout),
            truncate(&self.stderr)
        );
        self
    }

    /// Asserts standard error (or, for JSON output, standard output) names diagnostic `code`.
    pub fn reports(&self, code: &str) -> &Outcome {
        assert!(
            self.stderr.contains(code) || self.stdout.contains(code),
            "expected {code}\nstdout:\n{}\nstderr:\n{}",
            truncate(&self.stdout),
            truncate(&self.stderr)
        );
        self
    }

    /// Asserts the case ended within `d` of wall-clock time: for cases about time itself (a
    /// time-out that must fire, a special file that must not block).
    pub fn within(&self, d: Duration) -> &Outcome {
        assert!(self.elapsed < d, "took {:?}, more than {d:?}", self.elapsed);
        self
    }

    /// Asserts the case used less than `d` of CPU time: for bounds on work (linear-time
    /// diagnostics, budgets that stop an evaluation). CPU time, not wall-clock time, because
    /// the machine running the tests may be loaded; the deadline of [`Case::run`] still
    /// catches a hang.
    pub fn within_cpu(&self, d: Duration) -> &Outcome {
        assert!(self.cpu < d, "used {:?} of CPU, more than {d:?}", self.cpu);
        self
    }
}

fn truncate(s: &str) -> &str {
    let end = s.char_indices().nth(4000).map_or(s.len(), |(i, _)| i);
    &s[..end]
}
