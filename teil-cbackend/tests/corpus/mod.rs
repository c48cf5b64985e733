//! The file-driven corpus `tests/lower/*.teil`, shared by the tests that read it.

#![allow(dead_code)] // each test file uses a subset

use std::path::{Path, PathBuf};

/// The corpus directory.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/lower")
}

/// Every `.teil` program of the corpus, in name order.
pub fn files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/lower")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "teil"))
        .collect();
    files.sort();
    files
}
