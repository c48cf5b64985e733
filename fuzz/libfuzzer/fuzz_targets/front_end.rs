//! libFuzzer target over TeIL's front ends: the parser and checker, the formatter, Core-TeIL,
//! the diagnostic renderers, index notation and einsum.
//!
//! The bytes are decoded exactly as the CI harness `teil/tests/parser_fuzz.rs` decodes them
//! (the shared module `teil/tests/parser_fuzz/input.rs`), so a crash found here replays there
//! and the other way round. A violated property panics, which libFuzzer reports as a crash;
//! hangs are caught with libFuzzer's `-timeout`.

#![no_main]

#[path = "../../../teil/tests/parser_fuzz/input.rs"]
mod input;

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

fn corpus() -> &'static input::Corpus {
    static CORPUS: OnceLock<input::Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| input::Corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")))
}

fuzz_target!(|data: &[u8]| {
    let input = input::decode(data, corpus());
    if let Err(e) = input::check(&input) {
        panic!("{e}\ninput: {input:?}");
    }
});
