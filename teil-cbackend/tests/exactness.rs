//! Exact mode computes the spec's values whatever flags the user compiles with, and fma mode
//! fuses only what spec/values.md lists (spec/abi.md, "Floating point"; issue 23).
//!
//! Two guards stand between a user's flags and a contracted kernel: the compiler driver passes
//! `-ffp-contract=off` last, and the generated C itself turns contraction off with pragmas
//! (for C compiled by hand). Each is tested alone: through the driver, and through a compiler
//! wrapper that drops the driver's flag, so only the pragmas are left. A negative control
//! (the same C without its pragmas, on a CPU with FMA) shows that the inputs tell a contracted
//! kernel apart.

mod compilers;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use teil::CheckedProgram;
use teil_cbackend::run::{DriverError, Toolchain};
use teil_cbackend::{Options, ProgramError};
use teil_interp::Tensor;

fn compile(src: &str) -> CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0
}

fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_shape_vec(shape, values.to_vec()).expect("shape")
}

/// Runs `p` through the C backend (exact mode unless `fma`) with `tc`.
fn run_c(
    p: &CheckedProgram,
    tc: &Toolchain,
    fma: bool,
    inputs: &BTreeMap<String, Tensor>,
) -> Result<BTreeMap<String, Tensor>, ProgramError> {
    let opts = Options {
        fma,
        ..Options::default()
    };
    teil_cbackend::run_program(p, &opts, tc, inputs)
}

/// Bit for bit (NaN = NaN), except that -0 = +0 as spec/values.md compares at the boundary.
fn assert_same(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    let differ = got
        .iter()
        .zip(want)
        .filter(|(x, y)| !(x == y || (x.is_nan() && y.is_nan())))
        .count();
    assert_eq!(differ, 0, "{what}: {differ} of {} cells differ", got.len());
}

/// `s = Σ x·y` on inputs where a fused multiply-add changes the result: `x1·y1` rounds, so
/// `fma(x1, y1, x2·y2)` is `2^-54`, the spec's value `0`.
fn dot() -> (CheckedProgram, BTreeMap<String, Tensor>) {
    let p =
        compile("input var x : [2]\ninput var y : [2]\noutput var s : []\ns = red+ 1 (x * y)\n");
    let e = 2f64.powi(-27);
    let inputs = BTreeMap::from([
        ("x".to_string(), tensor(&[2], &[1.0 + e, -(1.0 + 2.0 * e)])),
        ("y".to_string(), tensor(&[2], &[1.0 + e, 1.0])),
    ]);
    (p, inputs)
}

/// A 64 x 64 x 64 matrix product on uniform(-1, 1) inputs: most cells differ when the
/// product's multiply-adds are fused.
fn matmul() -> (CheckedProgram, BTreeMap<String, Tensor>) {
    let p = compile(
        "input var A : [64 64]\ninput var B : [64 64]\noutput var C : [64 64]\nC = (A # B) .[2 3]\n",
    );
    let inputs = teil_interp::uniform_inputs(&p, 2611);
    (p, inputs)
}

/// `r = x * y - c` with `x = y = 1 + 2^-27`, `c = 1 + 2^-26`: `0` unless the subtraction is
/// fused (`2^-54`), which spec/values.md never permits.
fn subtraction() -> (CheckedProgram, BTreeMap<String, Tensor>) {
    let p = compile(
        "input var x : []\ninput var y : []\ninput var c : []\noutput var r : []\nr = x * y - c\n",
    );
    let e = 2f64.powi(-27);
    let scalar = |v: f64| tensor(&[], &[v]);
    let inputs = BTreeMap::from([
        ("x".to_string(), scalar(1.0 + e)),
        ("y".to_string(), scalar(1.0 + e)),
        ("c".to_string(), scalar(1.0 + 2.0 * e)),
    ]);
    (p, inputs)
}

/// The toolchains of the test: every contracting flag set ([`compilers::contracting`]) and the
/// default.
fn toolchains() -> Vec<(String, Toolchain)> {
    let mut sets = compilers::contracting();
    sets.push(("cc -O2 (default)".to_string(), Toolchain::default()));
    sets
}

#[test]
fn exact_mode_returns_the_oracles_values_under_contracting_flags() {
    let cases = [dot(), matmul()];
    for (name, tc) in toolchains() {
        for (p, inputs) in &cases {
            let want = teil_interp::run_oracle(p, inputs).expect("oracle");
            let got = run_c(p, &tc, false, inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (var, t) in &got {
                assert_same(&format!("{name}: {var}"), t, &want[var]);
            }
        }
        let (p, inputs) = dot();
        let got = run_c(&p, &tc, false, &inputs).expect("runs");
        assert_eq!(got["s"].iter().next().copied(), Some(0.0), "{name}");
    }
}

#[test]
fn fma_mode_never_fuses_a_subtraction() {
    let (p, inputs) = subtraction();
    for (name, tc) in toolchains() {
        let got = run_c(&p, &tc, true, &inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got["r"].iter().next().copied(), Some(0.0), "{name}");
    }
}

#[test]
fn fma_mode_still_fuses_its_pairs_where_the_target_has_fma() {
    // `r = x * y + c` is a pair spec/values.md lets fma mode fuse: `2^-54` fused, `0` not.
    let p = compile(
        "input var x : []\ninput var y : []\ninput var c : []\noutput var r : []\nr = x * y + c\n",
    );
    let (_, mut inputs) = subtraction();
    inputs.insert("c".to_string(), tensor(&[], &[-(1.0 + 2f64.powi(-26))]));
    let mut fused = 0;
    for (name, tc) in compilers::contracting() {
        let got = run_c(&p, &tc, true, &inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = got["r"].iter().next().copied();
        let cc = &tc.cc;
        let fma_target = compilers::macros(cc, &tc.cflags.join(" ")).is_some_and(|m| {
            m.contains("#define __FMA__ 1") || m.contains("#define __ARM_FEATURE_FMA 1")
        });
        let want = if fma_target { 2f64.powi(-54) } else { 0.0 };
        assert_eq!(r, Some(want), "{name}");
        fused += usize::from(fma_target);
        // Exact mode: never fused.
        let exact = run_c(&p, &tc, false, &inputs).expect("runs");
        assert_eq!(exact["r"].iter().next().copied(), Some(0.0), "{name}");
    }
    if compilers::cpu_has_fma() && compilers::native_has_fma("cc") {
        assert!(fused >= 1, "no flag set targeted FMA on a CPU that has it");
    }
}

/// A compiler wrapper script in `dir`: runs `cc` with the driver's `-ffp-contract=off`
/// removed, so that only the generated C's own pragmas guard it; with `strip`, it also deletes
/// the exactness preamble's pragma lines from the sources (the negative control).
fn wrapper(dir: &Path, cc: &str, strip: bool) -> PathBuf {
    let path = dir.join(if strip { "cc-stripped" } else { "cc-hand" });
    let strip_cmd = if strip {
        "for a in \"$@\"; do case \"$a\" in *.c) sed -i -e '/^#pragma GCC optimize/d' -e '/^#pragma STDC FP_CONTRACT/d' \"$a\";; esac; done\n"
    } else {
        ""
    };
    let script = format!(
        "#!/bin/sh\n{strip_cmd}for a in \"$@\"; do shift; [ \"$a\" = -ffp-contract=off ] || set -- \"$@\" \"$a\"; done\nexec {cc} \"$@\"\n"
    );
    std::fs::write(&path, script).expect("write the wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn c_compiled_by_hand_is_exact_through_its_pragmas_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (p, inputs) = dot();
    let (mp, minputs) = matmul();
    let want = teil_interp::run_oracle(&mp, &minputs).expect("oracle");
    let mut sensitive = 0;
    for (name, tc) in compilers::contracting() {
        let hand = Toolchain {
            cc: wrapper(dir.path(), &tc.cc, false).display().to_string(),
            ..tc.clone()
        };
        let got = run_c(&p, &hand, false, &inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            got["s"].iter().next().copied(),
            Some(0.0),
            "{name}, by hand"
        );
        let got = run_c(&mp, &hand, false, &minputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(&format!("{name}, by hand"), &got["C"], &want["C"]);

        // The negative control: without the pragmas (and without the driver's flag) the same
        // compiler contracts, and the inputs show it.
        let stripped = Toolchain {
            cc: wrapper(dir.path(), &tc.cc, true).display().to_string(),
            ..tc.clone()
        };
        let got = run_c(&p, &stripped, false, &inputs).expect("runs");
        let s = got["s"].iter().next().copied().expect("a cell");
        let target_fma = compilers::macros(&tc.cc, &tc.cflags.join(" "))
            .is_some_and(|m| m.contains("#define __FMA__ 1"));
        if target_fma && s != 0.0 {
            assert_eq!(s, 2f64.powi(-54), "{name}, stripped");
            sensitive += 1;
        }
    }
    // GCC contracts `s + x * y` in GNU mode wherever the target has FMA: at least that flag
    // set must show the difference the guards prevent.
    if compilers::cpu_has_fma() && compilers::native_has_fma("cc") {
        assert!(sensitive >= 1, "no flag set contracted without the guards");
    }
}

#[test]
fn value_changing_flags_are_refused_before_compiling() {
    let (p, inputs) = dot();
    for flag in [
        "-ffast-math",
        "-Ofast",
        "-funsafe-math-optimizations",
        "-fassociative-math",
        "-freciprocal-math",
        "-ffinite-math-only",
        "-fno-signed-zeros",
        "-ffp-contract=fast",
        "-ffp-contract=on",
        "-ffp-model=fast",
        "-mdaz-ftz",
        "-fsingle-precision-constant",
        "@flags.txt",
    ] {
        let tc = Toolchain::default().with_cflags(&format!("-O2 {flag}"));
        match run_c(&p, &tc, false, &inputs) {
            Err(ProgramError::Run(DriverError::UnsafeFlag { flag: f, .. })) => assert_eq!(f, flag),
            other => panic!("{flag}: {other:?}"),
        }
        assert!(tc.check_flags().is_err(), "{flag}");
    }
    for flag in ["-ffp-contract=off", "-O3", "-fno-math-errno"] {
        let tc = Toolchain::default().with_cflags(&format!("-O2 {flag}"));
        let got = run_c(&p, &tc, false, &inputs).unwrap_or_else(|e| panic!("{flag}: {e}"));
        assert_eq!(got["s"].iter().next().copied(), Some(0.0), "{flag}");
    }
}

/// Compiles the generated C of the dot product with each of `cases` (compiler flags, whether
/// it must compile), by `cc` and by `clang` where installed; a refused case must fail with
/// `refusal` in the compiler's message (the file's own `#error`).
fn compiles_only_where_exact(cases: &[(String, bool)], refusal: &str) {
    let (p, _) = dot();
    let k = teil_cbackend::lower(&p, &Options::default()).expect("lowers");
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("k.c");
    std::fs::write(&src, teil_cbackend::print::module(&[&k])).expect("write");
    let mut ccs = vec!["cc"];
    if compilers::clang() {
        ccs.push("clang");
    }
    for cc in ccs {
        for (flags, ok) in cases {
            let out = std::process::Command::new(cc)
                .args(flags.split_whitespace())
                .args(["-Wall", "-Wextra", "-Werror", "-c", "-o"])
                .arg(dir.path().join("k.o"))
                .arg(&src)
                .output()
                .expect("runs the compiler");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.success(), *ok, "{cc} {flags}: {stderr}");
            if !ok {
                assert!(stderr.contains(refusal), "{cc} {flags}: {stderr}");
            }
        }
    }
}

/// The evaluation methods of `__FLT_EVAL_METHOD__` (C99 and ISO/IEC TS 18661-3) under which
/// `double` is evaluated as `double` compile; those with excess precision are refused. GCC 13
/// defines 16 under `-march=native` on a CPU with AVX512-FP16 (a Sapphire Rapids Xeon), where
/// refusing it refused every kernel; forced here with `-U`/`-D`, which GCC and Clang accept for
/// this macro.
#[test]
fn evaluation_methods_without_excess_precision_for_double_compile() {
    let cases: Vec<(String, bool)> = [
        (-1, true),
        (0, true),
        (1, true),
        (16, true),
        (32, true),
        (64, true),
        (2, false),
        (33, false),
        (65, false),
        (128, false),
    ]
    .into_iter()
    .map(|(method, ok)| {
        let flags = format!("-O2 -U__FLT_EVAL_METHOD__ -D__FLT_EVAL_METHOD__={method}");
        (flags, ok)
    })
    .collect();
    compiles_only_where_exact(&cases, "without excess precision");
}

#[test]
fn the_generated_c_refuses_fast_math_at_compile_time() {
    let cases = [
        ("-O2", true),
        ("-O2 -ffast-math", false),
        ("-Ofast", false),
        ("-O2 -ffinite-math-only", false),
    ]
    .map(|(flags, ok)| (flags.to_string(), ok));
    compiles_only_where_exact(&cases, "TeIL kernels need IEEE binary64");
}
