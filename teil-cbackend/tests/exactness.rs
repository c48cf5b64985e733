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

/// The flags are an allow-list (issue 42): the spellings that carry a value-changing option
/// past a list of refused words, a word that is not a flag (an object file that turns on
/// flush-to-zero), files of flags or pragmas, reserved macros, x87 arithmetic, and any flag
/// the list does not know are refused, each naming the word and why.
#[test]
fn only_flags_known_not_to_change_values_pass() {
    let refused = [
        (
            "-O3 -Wp,-fassociative-math,-fno-signed-zeros,-fno-trapping-math",
            "-Wp,-fassociative-math,-fno-signed-zeros,-fno-trapping-math",
            "inner stage",
        ),
        (
            "-Wp,-ffast-math -U__FAST_MATH__ -U__FINITE_MATH_ONLY__",
            "-Wp,-ffast-math",
            "inner stage",
        ),
        ("-O2 -U__FAST_MATH__", "-U__FAST_MATH__", "reserved macro"),
        (
            "-O2 -U __FINITE_MATH_ONLY__",
            "-U __FINITE_MATH_ONLY__",
            "reserved macro",
        ),
        (
            "-D__FLT_EVAL_METHOD__=0",
            "-D__FLT_EVAL_METHOD__=0",
            "reserved macro",
        ),
        ("-D_GNU_SOURCE", "-D_GNU_SOURCE", "reserved macro"),
        ("-O3 -Xclang -mreassociate", "-Xclang", "inner stage"),
        ("-mllvm -enable-unsafe-fp-math", "-mllvm", "inner stage"),
        ("-specs=fast.specs", "-specs=fast.specs", "read flags"),
        ("-include pragma.h", "-include", "read flags"),
        ("-imacros m.h", "-imacros", "read flags"),
        ("-B/tmp/stages", "-B/tmp/stages", "read flags"),
        ("@flags.txt", "@flags.txt", "response file"),
        (
            "-O2 /usr/lib/gcc/x86_64-linux-gnu/12/crtfastmath.o",
            "/usr/lib/gcc/x86_64-linux-gnu/12/crtfastmath.o",
            "not a flag",
        ),
        (
            "-Wl,/usr/lib/gcc/x86_64-linux-gnu/12/crtfastmath.o",
            "-Wl,/usr/lib/gcc/x86_64-linux-gnu/12/crtfastmath.o",
            "inner stage",
        ),
        ("-lfastmath", "-lfastmath", "links a library"),
        ("-mno-sse2", "-mno-sse2", "x87"),
        ("-mno-sse", "-mno-sse", "x87"),
        ("-mfpmath=both", "-mfpmath=both", "x87"),
        ("-fno-trapping-math", "-fno-trapping-math", "reassociate"),
        (
            "-fexcess-precision=fast",
            "-fexcess-precision=fast",
            "standard",
        ),
        ("--param max-unroll-times=4", "--param", "not on the list"),
        ("-O2 -o kernel", "-o", "not on the list"),
        ("-O2 -I", "-I", "needs an argument"),
    ];
    for (flags, word, why) in refused {
        let tc = Toolchain::default().with_cflags(flags);
        let e = tc.check_flags().expect_err(flags);
        assert!(
            matches!(&e, DriverError::UnsafeFlag { flag, .. } if flag == word),
            "{flags}: {e:?}"
        );
        assert!(e.to_string().contains(why), "{flags}: {e}");
        assert!(e.to_string().contains("spec/abi.md"), "{flags}: {e}");
    }
    let allowed = "-O3 -march=native -mtune=native -g -ggdb3 -Wall -Wextra -Wno-unused -Werror \
        -pedantic -std=c11 -fPIC -fopenmp -I /usr/include -isystem/usr/include -iquote . \
        -Dteil_portable -DNDEBUG=1 -U NDEBUG -L /usr/lib -lm -fsanitize=address,undefined \
        -mavx2 -mno-avx512f -mfma -pipe -ffp-contract=off -frounding-math -fno-math-errno";
    let tc = Toolchain::default().with_cflags(allowed);
    assert!(tc.check_flags().is_ok(), "{:?}", tc.check_flags());
    // And they compute the spec's values (the sanitizer and OpenMP left out of this run).
    let (p, inputs) = dot();
    let tc = Toolchain::default().with_cflags(
        "-O3 -march=native -g -Wall -std=c11 -fPIC -Dteil_portable -mfma -fno-math-errno",
    );
    let got = run_c(&p, &tc, false, &inputs).expect("runs");
    assert_eq!(got["s"].iter().next().copied(), Some(0.0));
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
    // -1 (indeterminable) is what GCC says on x86 for `-mno-sse2` and `-mfpmath=both`, which
    // compute on the x87 unit: refused there, compiled elsewhere.
    let x86 = cfg!(any(target_arch = "x86_64", target_arch = "x86"));
    let cases: Vec<(String, bool)> = [
        (-1, !x86),
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
    let (refused, accepted): (Vec<_>, Vec<_>) = cases.into_iter().partition(|(_, ok)| !ok);
    compiles_only_where_exact(&accepted, "");
    let (x87, wide): (Vec<_>, Vec<_>) = refused
        .into_iter()
        .partition(|(flags, _)| flags.ends_with("=-1"));
    compiles_only_where_exact(&wide, "without excess precision");
    compiles_only_where_exact(&x87, "need SSE2 double arithmetic on x86");
}

/// Without SSE2, x86 computes doubles on the x87 unit in extended precision (issue 42: the
/// 4,096-term dot product came out as `-38.763934019832234` for the oracle's
/// `-38.76393401983226`): the generated C refuses to compile, whether the compiler says so
/// through `__FLT_EVAL_METHOD__` (GCC: -1) or only through `__SSE2__` (Clang says 0).
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
#[test]
fn the_generated_c_refuses_x87_arithmetic_on_x86() {
    let cases = [("-O2", true), ("-O2 -mno-sse2", false)].map(|(f, ok)| (f.to_string(), ok));
    compiles_only_where_exact(&cases, "need SSE2 double arithmetic on x86");
    // GCC's mixed mode (Clang has no such option).
    let (p, _) = dot();
    let k = teil_cbackend::lower(&p, &Options::default()).expect("lowers");
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("k.c");
    std::fs::write(&src, teil_cbackend::print::module(&[&k])).expect("write");
    let out = std::process::Command::new("gcc")
        .args(["-O2", "-mfpmath=both", "-c", "-o"])
        .arg(dir.path().join("k.o"))
        .arg(&src)
        .output()
        .expect("runs gcc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("need SSE2"),
        "{stderr}"
    );
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

/// Every function in both types gives the oracle's bits under the strict ISO modes, which know
/// GNU C's `asm` (in CORE-MATH's `exp`) only as `__asm__`: `-std=c99` did not compile a kernel
/// with `exp` until the units defined it (found by the fuzzer's first campaign with functions).
#[test]
fn functions_compile_and_stay_exact_in_strict_iso_modes() {
    let p = compile(
        "input var x : [6]\ninput var y : f32[6]\noutput var a : [6, 6]\noutput var b : f32[6, 6]\n\
         a = prod (exp x + log (abs x) + tanh x + erf x) (sqrt (abs x))\n\
         b = prod (exp y + log (abs y) + tanh y + erf y) (sqrt (abs y))\n",
    );
    // Binary32 values, so that `y` may hold them too.
    let x = tensor(&[6], &[0.7, -1.25, 3.5, -0.0, 20.0, 1e-3]).mapv(|v| f64::from(v as f32));
    let inputs = BTreeMap::from([("x".to_string(), x.clone()), ("y".to_string(), x)]);
    let want = teil_interp::run_oracle(&p, &inputs).expect("oracle");
    for flags in ["-std=c99 -O2", "-std=c11 -O0", "-std=c99 -pedantic -O3"] {
        let mut sets = vec![("cc", Toolchain::default().with_cflags(flags))];
        if compilers::clang() {
            let clang = Toolchain {
                cc: "clang".to_string(),
                ..Toolchain::default()
            };
            sets.push(("clang", clang.with_cflags(flags)));
        }
        for (cc, tc) in sets {
            let got =
                run_c(&p, &tc, false, &inputs).unwrap_or_else(|e| panic!("{cc} {flags}: {e}"));
            for (var, t) in &got {
                assert_same(&format!("{cc} {flags}: {var}"), t, &want[var]);
            }
        }
    }
}
