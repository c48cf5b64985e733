//! SIGINT, SIGTERM and SIGHUP for the subcommands that start processes (`teil fuzz`,
//! `teil run --backend c`).
//!
//! The first signal sets the process's [`Cancel`] flag. The C backend's runner polls it while
//! the compiler or the driver runs and then kills that process's whole group; the fuzzing
//! campaign also polls it between programs. The subcommand then returns through its ordinary
//! path, so temporary directories are removed, reports what completed and exits with
//! [`EXIT_INTERRUPTED`]. A second signal exits at once with the same code, without cleaning up,
//! so that a `teil` stuck elsewhere can still be stopped.

use std::sync::OnceLock;
use teil_cbackend::run::Cancel;

/// The exit code after an interruption, the shell's for SIGINT (128 + 2), for every signal.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The process's cancellation flag, with the signal handler installed on first use. If no
/// handler can be installed, signals keep their default action (they end `teil` at once).
pub fn cancel_on_signal() -> Cancel {
    static CANCEL: OnceLock<Cancel> = OnceLock::new();
    CANCEL
        .get_or_init(|| {
            let cancel = Cancel::default();
            let flag = cancel.clone();
            let installed = ctrlc::set_handler(move || {
                if flag.is_cancelled() {
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
                flag.cancel();
            });
            if let Err(e) = installed {
                crate::out::eprint(&format!("warning: cannot handle interruptions: {e}\n"));
            }
            cancel
        })
        .clone()
}
