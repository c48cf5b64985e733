//! TeIL's operating-system services, kept out of the evaluators so that the oracle stays a pure
//! function of its program and inputs:
//!
//! - [`files`] writes every output file all-or-nothing (a staging directory beside the
//!   destination, renames into place) and reads input files without blocking;
//! - [`npy`] reads and writes NumPy's `.npy` arrays (float64, and float32 on reading);
//! - [`process`] starts, bounds, stops and reaps every child process the toolchain runs (a C
//!   compiler, a kernel driver, a target adapter), with its whole process group.
//!
//! The C backend, the fuzzer, the CLI and the Python package use it; `teil-interp` does not.

// Files are a Unix matter here (`flock`, `O_NONBLOCK`, symlinks); the browser build has none.
#[cfg(unix)]
pub mod files;
pub mod npy;
pub mod process;
