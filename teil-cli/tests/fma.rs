//! `--fma` (spec/values.md, "Fused multiply-add"; spec/abi.md): `teil emit-c --fma` prints and
//! validates the fma-mode kernel, `teil run --backend c --fma` runs it, and both flags are in
//! the help. Without the flag nothing changes.

mod support;

use std::process::Command;
use support::{teil, text, write};

/// A matrix product large enough for the packed kernel (321 columns, more than a small
/// product's), a matrix-vector product (dot kernel) and an element-wise product-then-add.
const PROGRAM: &str = "input var A : [20 30]\ninput var B : [30 321]\ninput var x : [30]\n\
                       input var D : [20 321]\noutput var C : [20 321]\noutput var y : [20]\n\
                       output var E : [20 321]\n\
                       C = (A # B) .[2 3]\ny = (A # x) .[2 3]\nE = D * D + D\n";

#[test]
fn emit_c_with_fma_validates_and_prints_fused_multiply_adds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "p.teil", PROGRAM);
    let o = teil(&["emit-c", &file, "--validate", "--fma", "--pad", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        "validated for these shapes: A [20, 30], B [30, 321], x [30], D [20, 321], \
         C [20, 321], y [20], E [20, 321] with M = 4: 12860 output cells equal the semantics up \
         to reassociation of + and *, 960 padding cells are zero\n"
    );
    let c = text(&o.stdout);
    for fused in [
        "static double teil_fma(double x, double y, double c);",
        "static void teil_tile_12x16_fma(",
        "static void teil_tile_6x8_fma(",
        "#define teil_fmav8(a, b, c)",
        "#define teil_fmav4(a, b, c)",
        "#define teil_fmav8(a, b, c) __builtin_ia32_vfmaddpd512_mask(a, b, c, (unsigned char)-1, 4)",
        "#define teil_fmav4(a, b, c) __builtin_ia32_vfmaddpd256(a, b, c)",
        "c0_0 = teil_fmav8(a, b0, c0_0);",
        "teil_tile_12x16_fma(teil_kcb,",
        "teil_tile_6x8_fma(teil_kcb,",
        "teil_s0 = teil_fma(",
        "#if defined(teil_fast_fma)\n    return __builtin_fma(x, y, c);",
    ] {
        assert!(c.contains(fused), "missing `{fused}`:\n{c}");
    }
    // The same C as without --validate; without --fma no trace of the mode.
    assert_eq!(
        teil(&["emit-c", &file, "--fma", "--pad", "4"]).stdout,
        o.stdout
    );
    let exact = teil(&["emit-c", &file, "--pad", "4"]);
    assert_eq!(exact.status.code(), Some(0));
    assert!(!text(&exact.stdout).contains("fma"));
    // The IR says so in its header.
    let ir = text(&teil(&["emit-c", &file, "--ir", "--fma"]).stdout);
    assert!(
        ir.starts_with("kernel teil_kernel (M = 1, workspace 0, lifted 0, fma)\n"),
        "{ir}"
    );
}

#[test]
fn run_with_fma_on_integer_inputs_prints_what_the_oracle_prints() {
    // Small integers: nothing rounds, so fused and unfused multiply-adds agree bit for bit.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "p.teil", PROGRAM);
    let oracle = teil(&["run", &file, "--random-inputs", "3", "--backend", "oracle"]);
    assert_eq!(oracle.status.code(), Some(0), "{}", text(&oracle.stderr));
    for cflags in ["-O2", "-O2 -march=native"] {
        // -march=native is tried only where the compiler accepts it.
        let probe = Command::new("cc")
            .args(cflags.split_whitespace())
            .args(["-E", "-x", "c", "/dev/null"])
            .output();
        if !probe.is_ok_and(|p| p.status.success()) {
            continue;
        }
        let c = teil(&[
            "run",
            &file,
            "--random-inputs",
            "3",
            "--backend",
            "c",
            "--fma",
            "--cflags",
            cflags,
        ]);
        assert_eq!(c.status.code(), Some(0), "{}", text(&c.stderr));
        assert_eq!(text(&c.stdout), text(&oracle.stdout), "--cflags {cflags}");
    }
}

#[test]
fn the_help_of_emit_c_and_run_names_fma() {
    let emit = text(&teil(&["emit-c", "--help"]).stdout);
    // The description column's position depends on the longest option, so compare the line
    // without its padding.
    let fma_line = emit
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("--fma "))
        .map(str::trim_start);
    assert_eq!(
        fma_line,
        Some(
            "Fused multiply-adds in contractions and element-wise products-then-adds: rounded \
             once where the target has FMA (compile with `-march=native` or `-mfma`); results \
             may differ from the exact default within the bound of spec/values.md"
        ),
        "{emit}"
    );
    let run = text(&teil(&["run", "--help"]).stdout);
    assert!(
        run.contains("--fma") && run.contains("With `--backend c`: fused multiply-adds"),
        "{run}"
    );
}
