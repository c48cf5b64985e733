//! `teil emit-c --ir`: the optimised loop IR as text, the same text as the
//! `tests/lower/` snapshots (teil-cbackend/tests/lower_corpus.rs), validated with
//! `--validate`.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn emit_c_ir_prints_the_optimised_kernel_as_text() {
    let file = root().join("tests/lower/matmul_edges.teil");
    let out = Command::new(env!("CARGO_BIN_EXE_teil"))
        .args(["emit-c", "--ir", "--validate", "--pad", "4"])
        .arg(&file)
        .output()
        .expect("teil runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(
        text,
        "kernel teil_kernel (M = 4, workspace 0, lifted 0)\n  \
         buffer A: input, logical [19, 23], padded [20, 24]\n  \
         buffer B: input, logical [23, 335], padded [24, 336]\n  \
         buffer C: output, logical [19, 335], padded [20, 336]\n\
         contract packed (rows from a: l0 < 19 = 19, columns: l1 < 335 = 335, batch: (), tiles \
         AVX-512: 16x8 kc 23 mc 32 nc 336; NEON, AVX, portable C: 6x8 kc 23 mc 24 nc 336) // \
         C = (A # B) .[2 3]\n  \
         for l0 < 19, l1 < 335: C[l0, l1] = sum l2 < 23: a A[l0, l2] * b B[l2, l1]\n"
    );
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert!(stderr.starts_with("validated for these shapes"), "{stderr}");
}
