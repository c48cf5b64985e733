//! The hostile-input suite (issue: an embeddable core). Every case runs the `teil` binary on an
//! input written as an attacker would, bounded in time (a wall-clock deadline after which the
//! process is killed and the case fails as a hang) and in memory (`RLIMIT_AS`, so an allocation
//! that the code does not check aborts instead of swapping), and asserts how it must end: a
//! coded error or a correct result, never an abort, panic, hang or changed destination.
//!
//! Cases are grouped by the part of the core they attack, one module each. The long mode
//! (`TEIL_HOSTILE_LONG=1`) scales the inputs up; see `tests/hostile/README.md`.

mod support;

mod diagnostics;
mod evaluation;
mod outputs;
mod processes;
