//! Supervised child processes: the one place the toolchain starts, bounds, stops and reaps
//! another program (the C compiler and the compiled kernels' driver in `teil-cbackend`, the
//! targets of `teil fuzz --target` in `teil-fuzz`).
//!
//! A [`Group`] is a child started in a process group of its own, so that killing it kills
//! whatever it started too (a compiler's `cc1`, `as` and `ld`; a Python interpreter's
//! workers). [`Group::wait`] waits for it within a deadline and until a [`Cancel`] flag is set;
//! when either ends it first, the whole group is killed and the child reaped before it
//! returns. [`Group::kill`] does the same at any time, and dropping a group that was not
//! reaped kills it, so no orphan survives its owner's ordinary return paths.
//!
//! The child stays unreaped until it is known to be finished, so its id names its process group
//! whenever the group is killed (a reaped id could name another process).
//!
//! A descendant that leaves the group (`setsid`) escapes `killpg`. On Linux, a process that
//! calls [`adopt_orphans`] becomes the reaper of its descendants' orphans
//! (`PR_SET_CHILD_SUBREAPER`): when a child exits, whatever it left running becomes a child
//! of this process instead of `init`, and [`reap_orphans`] kills and reaps every child of this
//! process that no [`Group`] owns. (Every child this crate's users start goes through
//! [`Group`]: a child started otherwise would count as an orphan.)

use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The ids of the children [`Group`]s own and have not reaped. Held while a group is started
/// and while [`reap_orphans`] looks, so that a child just started is never taken for an
/// orphan.
static OWNED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn owned() -> MutexGuard<'static, Vec<u32>> {
    OWNED.lock().unwrap_or_else(|e| e.into_inner())
}

fn disown(pid: u32) {
    owned().retain(|&p| p != pid);
}

/// Makes this process the reaper of its descendants' orphans (Linux; elsewhere nothing), so
/// that [`reap_orphans`] can stop what a child detached from its group. Idempotent.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let _ = nix::sys::prctl::set_child_subreaper(true);
        });
    }
}

/// Kills and reaps every child of this process that no [`Group`] owns: the orphans it adopted
/// ([`adopt_orphans`]), running or already dead. Returns how many (0 where `/proc` cannot be
/// read, and off Linux).
pub fn reap_orphans() -> usize {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        let owned = owned();
        let me = std::process::id();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return 0;
        };
        let mut reaped = 0;
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if owned.contains(&pid) || parent_of(pid) != Some(me) {
                continue;
            }
            let Ok(raw) = i32::try_from(pid) else {
                continue;
            };
            // A child of ours (running or a zombie): its id cannot be reused before we reap it.
            let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(Pid::from_raw(raw), None);
            reaped += 1;
        }
        reaped
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// The parent of process `pid`, from `/proc/PID/stat` (`pid (comm) state ppid ...`; `comm` may
/// hold spaces and parentheses).
#[cfg(target_os = "linux")]
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A cancellation flag shared between whoever runs processes and whoever wants them stopped (a
/// signal handler, another thread). Clones share the flag; two `Cancel`s are equal when they
/// share it.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Asks every run that uses this flag to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl From<Arc<AtomicBool>> for Cancel {
    /// Uses an existing flag (for example the one an interpreter's budget polls).
    fn from(flag: Arc<AtomicBool>) -> Self {
        Cancel(flag)
    }
}

impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

/// Why [`Group::wait`] stopped waiting before the child ended. In every case the whole group
/// has been killed and the child reaped.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    #[error("did not finish within {} s", .0.as_secs_f64())]
    TimedOut(Duration),
    #[error("interrupted")]
    Cancelled,
    #[error("cannot wait for the process: {0}")]
    Wait(io::Error),
}

/// A child process leading a process group of its own (module documentation).
#[derive(Debug)]
pub struct Group {
    child: Child,
    /// Whether the child has been waited for: from then on its id may name another process,
    /// so the group is never signalled again.
    reaped: bool,
}

impl Group {
    /// Starts `cmd` in a new process group. Give the command files or pipes that something
    /// reads for its output, so that nothing it writes can block it while it is waited for.
    pub fn spawn(cmd: &mut Command) -> io::Result<Group> {
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(cmd, 0);
        let mut owned = owned();
        let child = cmd.spawn()?;
        owned.push(child.id());
        Ok(Group {
            child,
            reaped: false,
        })
    }

    /// The child, to take its pipes. Do not wait for it through this: use [`Group::try_wait`]
    /// or [`Group::wait`], which know the group may no longer be signalled.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The child's exit status if it has ended, without blocking.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let status = self.child.try_wait()?;
        if status.is_some() && !self.reaped {
            self.reaped = true;
            disown(self.child.id());
        }
        Ok(status)
    }

    /// Waits for the child to end, for at most `timeout` and until `cancel` is set; see
    /// [`Stopped`] for the other outcomes.
    pub fn wait(&mut self, timeout: Duration, cancel: &Cancel) -> Result<ExitStatus, Stopped> {
        let start = Instant::now();
        // Polling keeps the child unreaped until it is known to be finished. The pause grows to
        // a few milliseconds: short against a compilation, long enough to cost no measurable
        // CPU.
        let mut pause = Duration::from_micros(200);
        loop {
            match self.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) => {}
                Err(e) => {
                    self.kill();
                    return Err(Stopped::Wait(e));
                }
            }
            if cancel.is_cancelled() {
                self.kill();
                return Err(Stopped::Cancelled);
            }
            let elapsed = start.elapsed();
            if elapsed >= timeout {
                self.kill();
                return Err(Stopped::TimedOut(timeout));
            }
            std::thread::sleep(pause.min(timeout - elapsed));
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// Kills the child and every process in its group, then reaps the child. Does nothing to
    /// a child already reaped.
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        #[cfg(unix)]
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // The child is not reaped yet, so its id still names its group.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
        disown(self.child.id());
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Whether a process with this id exists (and is not a zombie of ours: reaped).
    fn alive(pid: i32) -> bool {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
    }

    /// A shell that starts a grandchild in its group and prints the grandchild's id.
    fn family(dir: &std::path::Path) -> (Group, std::path::PathBuf) {
        let pid_file = dir.join("pid");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("sleep 60 & echo $! > {}; wait", pid_file.display()));
        let g = Group::spawn(&mut cmd).expect("sh starts");
        (g, pid_file)
    }

    fn grandchild(pid_file: &std::path::Path) -> i32 {
        for _ in 0..500 {
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the shell did not start its child");
    }

    #[test]
    fn a_finished_child_reports_its_status() {
        let mut g = Group::spawn(Command::new("sh").args(["-c", "exit 3"])).expect("starts");
        let status = g.wait(Duration::from_secs(60), &Cancel::default()).unwrap();
        assert_eq!(status.code(), Some(3));
    }

    #[test]
    fn a_time_out_kills_the_whole_group() {
        let d = tempfile::tempdir().unwrap();
        let (mut g, pid_file) = family(d.path());
        let pid = grandchild(&pid_file);
        assert!(matches!(
            g.wait(Duration::from_millis(100), &Cancel::default()),
            Err(Stopped::TimedOut(t)) if t == Duration::from_millis(100)
        ));
        // The grandchild, reparented to init (or a subreaper), is reaped soon after the kill.
        let gone = (0..500).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            !alive(pid)
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        });
        assert!(gone, "the grandchild {pid} survived");
    }

    #[test]
    fn cancelling_and_dropping_kill_the_child() {
        let cancel = Cancel::default();
        cancel.cancel();
        let mut g = Group::spawn(Command::new("sleep").arg("60")).expect("starts");
        assert!(matches!(
            g.wait(Duration::from_secs(60), &cancel),
            Err(Stopped::Cancelled)
        ));
        let g = Group::spawn(Command::new("sleep").arg("60")).expect("starts");
        let pid = g.child.id() as i32;
        drop(g);
        assert!(!alive(pid), "a dropped group's child is killed and reaped");
    }
}
