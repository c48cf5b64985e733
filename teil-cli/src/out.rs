//! Standard output and standard error, for every subcommand.
//!
//! Rust's `print!` and `eprint!` panic when a write fails, and a write to a pipe whose reader
//! has gone fails with `EPIPE` (Rust ignores `SIGPIPE`, so the process is not killed):
//! `teil explain E0103 | head -1` would end in a panic. The subcommands write through this
//! module instead.
//!
//! - A closed standard output (`BrokenPipe`) is not an error: the reader wanted no more. The
//!   rest of the output is dropped silently and the command ends with the exit status it would
//!   have had (`teil explain E0103 | head -1` exits 0, `teil check --format json bad.teil |
//!   head -1` exits 1), as `ripgrep` and other Rust tools do rather than dying of `SIGPIPE`.
//!   Restoring `SIGPIPE`'s default disposition instead would also kill `teil` when a child it
//!   talks to through a pipe (the C compiler's driver, a `teil fuzz --target`) dies first.
//! - Any other failure to write standard output (a full disk) is reported once on standard
//!   error and makes the exit status at least 2 ([`status`]).
//! - Writes to standard error ignore their errors: there is nowhere left to report them.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Standard output's reader has gone: nothing more is written to it.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writing standard output failed for another reason (reported once).
static FAILED: AtomicBool = AtomicBool::new(false);

/// Prints `text` on standard output.
pub fn print(text: &str) {
    write_with(|out| out.write_all(text.as_bytes()));
}

/// Prints `text` and a newline on standard output.
pub fn println(text: &str) {
    write_with(|out| {
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")
    });
}

/// Runs `f` on standard output (buffered, then flushed) unless it has failed before, and
/// records how the write ended.
pub fn write_with(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) {
    if CLOSED.load(Ordering::Relaxed) || FAILED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    let result = f(&mut out).and_then(|()| out.flush());
    // Whatever the BufWriter could not write is dropped with it; its drop ignores errors.
    if let Err(e) = result {
        record(&e);
    }
}

/// Records a failed write to standard output: quietly for a closed pipe, with a message
/// otherwise.
pub fn record(e: &io::Error) {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CLOSED.store(true, Ordering::Relaxed);
    } else if !FAILED.swap(true, Ordering::Relaxed) {
        eprint(&format!("error: cannot write to standard output: {e}\n"));
    }
}

/// Prints `text` on standard error, ignoring failures.
pub fn eprint(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// The exit status of a command that returned `code`: at least 2 when standard output could
/// not be written (other than a closed pipe, which changes nothing).
pub fn status(code: u8) -> u8 {
    if FAILED.load(Ordering::Relaxed) {
        code.max(2)
    } else {
        code
    }
}
