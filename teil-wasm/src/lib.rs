//! TeIL in the browser: the toolchain behind one function, [`handle`], that takes a JSON
//! request and returns a JSON answer, exported to JavaScript through a plain C ABI
//! (`teil_alloc`, `teil_free`, `teil_call`, `teil_result_len`).
//!
//! Why JSON over a C ABI rather than wasm-bindgen: the page sends a handful of coarse requests
//! (analyse this text, run it, trace this cell), each answered by one value, so the boundary
//! is a protocol, not an object model; JSON keeps it the same in the native tests
//! (`tests/api.rs` calls [`handle`]) and in the browser, and the build needs nothing but
//! `cargo build --target wasm32-unknown-unknown` (no generator whose version must match a
//! crate's). No language logic lives here: every answer is computed by `teil`, `teil-interp`
//! or `teil-cbackend`; this crate only converts.
//!
//! The requests are documented in `web/README.md`.

mod api;
mod bits;

pub use api::handle;

use std::cell::RefCell;

thread_local! {
    /// The last answer, kept alive until the next call so JavaScript can copy it out.
    static RESULT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Allocates `len` bytes for a request that JavaScript writes into the module's memory.
#[no_mangle]
pub extern "C" fn teil_alloc(len: usize) -> *mut u8 {
    let mut buf = Vec::<u8>::with_capacity(len.max(1));
    let ptr = buf.as_mut_ptr();
    std::mem::forget(buf);
    ptr
}

/// Frees a buffer returned by [`teil_alloc`] with the same `len`.
///
/// # Safety
/// `ptr` must come from `teil_alloc(len)` and not be freed twice.
#[no_mangle]
pub unsafe extern "C" fn teil_free(ptr: *mut u8, len: usize) {
    drop(Vec::from_raw_parts(ptr, 0, len.max(1)));
}

/// Handles the UTF-8 JSON request at `ptr[..len]`; returns a pointer to the UTF-8 JSON answer,
/// whose length [`teil_result_len`] gives. The answer stays valid until the next call.
///
/// # Safety
/// `ptr[..len]` must be readable.
#[no_mangle]
pub unsafe extern "C" fn teil_call(ptr: *const u8, len: usize) -> *const u8 {
    let bytes = std::slice::from_raw_parts(ptr, len);
    let answer = match std::str::from_utf8(bytes) {
        Ok(text) => handle(text),
        Err(_) => api::error_answer("the request is not UTF-8"),
    };
    RESULT.with(|r| {
        let mut r = r.borrow_mut();
        *r = answer.into_bytes();
        r.as_ptr()
    })
}

/// The length in bytes of the answer of the last [`teil_call`].
#[no_mangle]
pub extern "C" fn teil_result_len() -> usize {
    RESULT.with(|r| r.borrow().len())
}
