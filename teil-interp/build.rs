//! On `wasm32-unknown-unknown` only: compiles CORE-MATH's C for the correctly rounded
//! functions (`src/functions.rs`) from the vendored, unmodified sources in
//! `third_party/core-math/` (its README says what and why), with Clang and the shim headers of
//! `third_party/core-math/wasm32/include` in place of the C library the target lacks. Natively
//! the `core-math` crate compiles the same functions, and this script does nothing.
//!
//! The few libm and 128-bit integer routines the objects call (`fma`, `fmaf`, `round`,
//! `fmax`, `__multi3`, ...) are Rust's own on this target (the `compiler_builtins` crate every
//! Rust program links), so the result needs no C library.

use std::path::Path;

/// The 8 functions, as `third_party/core-math/src/` lays them out.
const SOURCES: [&str; 8] = [
    "binary64/exp/exp.c",
    "binary64/log/log.c",
    "binary64/tanh/tanh.c",
    "binary64/erf/erf.c",
    "binary32/exp/expf.c",
    "binary32/log/logf.c",
    "binary32/tanh/tanhf.c",
    "binary32/erf/erff.c",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("wasm32") {
        return;
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("teil-interp lies in the workspace");
    let root = workspace.join("third_party/core-math");
    println!("cargo:rerun-if-changed={}", root.display());
    let shims = root.join("wasm32/include");
    let mut build = cc::Build::new();
    build
        .files(SOURCES.iter().map(|s| root.join("src").join(s)))
        // The shims first; Clang's own freestanding <stdint.h> for the rest.
        .include(&shims)
        .flag("-ffreestanding")
        // Exactly the operations written (wasm has no fused multiply-add to contract to, but
        // say so), and stop on flags that would change them (exactness.h).
        .flag("-ffp-contract=off")
        .flag("-include")
        .flag(shims.join("exactness.h").to_str().expect("a UTF-8 path"))
        // `#pragma STDC FENV_ACCESS ON`: WebAssembly has no floating-point environment.
        .flag_if_supported("-Wno-ignored-pragmas")
        .cargo_warnings(false);
    if let Err(e) = build.try_compile("teil_core_math") {
        panic!(
            "cannot compile CORE-MATH for {} (the playground's correctly rounded functions): \
             {e}\nThis needs Clang with its WebAssembly target and llvm-ar (Debian: apt-get \
             install clang llvm)",
            std::env::var("TARGET").unwrap_or_default()
        );
    }
}
