//! Edge-case programs through the C compiler, and how the runner reports failures.

use std::collections::BTreeMap;
use teil::CodedError;
use teil_cbackend::ir::Kernel;
use teil_cbackend::run::{run, run_batch, DriverError, Job, Process, Toolchain};
use teil_cbackend::Options;

const STRICT: &str = "-std=c99 -O2 -Wall -Wextra -Werror -pedantic";

/// Programs that stress the printer: names C cannot use verbatim, no statements, no
/// parameters, scalars only, unused and never-assigned parameters, reads of undefined values.
const EDGE: &[&str] = &[
    "",
    "var x : [2]",
    "input var x : [2]\noutput var y : [2]",
    "var s : []\ns = 3",
    "var s : []\nvar t : []\ns = red+ 1 (expa 1 4 t)\nt = s * s - 1 / s",
    "var int : [2]\nvar double : [2 2]\nvar main : [2]\nvar restrict : [2]\n\
     int = (double # main) .[2 3] + restrict",
    "var _Bool : [3]\nvar __x : [3]\nvar i0 : [3]\nvar acc0 : [3]\nvar tmp0 : [3]\n\
     var k0 : [3]\nvar teil_ws : [3]\nvar NULL : [3]\nvar errno : [3]\nvar linux : [3]\n\
     _Bool = __x + i0 * acc0 - tmp0 / k0\nteil_ws = NULL ^[1 1] + errno\nlinux = _Bool",
    "input var A : [2 3]\noutput var B : [3 2]\nvar T : [3 2]\nT = A ^[1 2]\nB = T + T",
    "input var A : [3]\noutput var B : [3]\nA = A + A\nB = A",
    "output var B : [3]\nvar U : [3]\nB = U + 1 * U",
    "output var B : [2 2]\ninput var A : [2 2]\nB = B + A",
    "inout var A : [3 3]\nA = A ^[1 2]\nA = (A # A) .[2 3]\nA = A + A ^[1 2]",
    "input var v : [4]\noutput var m : []\noutput var n : []\nm = redmax 1 v\nn = redmin 1 v",
    "input var v : [4]\noutput var p : [4]\np = expa 1 4 (red* 1 v) / v",
    "input var T : [2 3 4]\noutput var r : [3]\n\
     r = diag 1 2 (proj 1 2 ((diag 1 4 (T ^[2 3] # T)) .[2 5]))",
];

fn compile(src: &str) -> teil::CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0
}

fn kernels(pads: &[u64]) -> Vec<(usize, Kernel)> {
    let mut out = Vec::new();
    for (i, src) in EDGE.iter().enumerate() {
        let p = compile(src);
        for &pad in pads {
            let opts = Options {
                pad,
                name: format!("edge_{i}_m{pad}"),
                lift: true,
                ..Options::default()
            };
            out.push((i, teil_cbackend::lower(&p, &opts).expect("lowers")));
        }
    }
    out
}

fn check_edge_programs(tc: &Toolchain) {
    let ks = kernels(&[1, 4]);
    let refs: Vec<&Kernel> = ks.iter().map(|(_, k)| k).collect();
    let mut expected = Vec::new();
    let jobs: Vec<Job> = ks
        .iter()
        .enumerate()
        .map(|(j, (i, _))| {
            let p = compile(EDGE[*i]);
            let inputs = teil_interp::random_inputs(&p, 3);
            expected.push(teil_interp::run_oracle(&p, &inputs).expect("the oracle runs"));
            Job { kernel: j, inputs }
        })
        .collect();
    let outcomes = run_batch(tc, &refs, &jobs).unwrap_or_else(|e| panic!("{e}"));
    for (((i, k), out), want) in ks.iter().zip(outcomes).zip(expected) {
        let p = compile(EDGE[*i]);
        assert!(
            out.nonzero_padding.is_empty(),
            "{}: {:?}",
            k.name,
            out.nonzero_padding
        );
        for d in p.interface().filter(|d| p.is_output(d)) {
            let name = &d.name.name;
            assert!(
                teil_interp::same_values(&want[name], &out.values[name]),
                "{} `{name}`:\noracle {}\nC      {}\n{}",
                k.name,
                want[name],
                out.values[name],
                EDGE[*i]
            );
        }
    }
}

#[test]
fn edge_programs_compile_cleanly_and_agree_with_the_oracle() {
    check_edge_programs(&Toolchain::default().with_cflags(STRICT));
}

/// GCC's GNU modes (the default without `-std`) predefine `linux` and `unix` as macros.
#[test]
fn edge_programs_compile_in_gnu_mode_too() {
    check_edge_programs(&Toolchain::default().with_cflags("-O2 -Wall -Wextra -Werror"));
}

#[test]
fn edge_programs_are_clean_under_sanitizers() {
    check_edge_programs(
        &Toolchain::default()
            .with_cflags("-std=c99 -O1 -fsanitize=address,undefined -fno-sanitize-recover=all"),
    );
}

#[test]
fn mangled_names_appear_in_the_source() {
    let c = teil_cbackend::emit_c(&compile(EDGE[5]), &Options::default()).expect("emits");
    assert!(c.contains(
        "void teil_kernel(double *restrict v_int, double *restrict v_double, \
         double *restrict v_main, double *restrict v_restrict)"
    ));
    // The parameter table keeps the TeIL names.
    assert!(c.contains(" *   v_int       int       inout  [2]"), "{c}");
}

fn one_kernel() -> (Kernel, BTreeMap<String, teil_interp::Tensor>) {
    let p = compile("input var A : [2]\noutput var B : [2]\nB = A + A");
    let k = teil_cbackend::lower(&p, &Options::default()).expect("lowers");
    (k, teil_interp::random_inputs(&p, 1))
}

fn kept_source(e: &DriverError) -> std::path::PathBuf {
    match e {
        DriverError::CompilerNotFound { kept, .. }
        | DriverError::CompileFailed { kept, .. }
        | DriverError::KernelFailed { kept, .. } => kept.clone(),
        other => panic!("unexpected error {other}"),
    }
}

fn cleanup(p: &std::path::Path) {
    if let Some(dir) = p.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_missing_compiler_is_reported_and_the_source_kept() {
    let (k, inputs) = one_kernel();
    let tc = Toolchain {
        cc: "teil-no-such-compiler".to_string(),
        cflags: vec![],
        ..Toolchain::default()
    };
    let e = run(&tc, &k, &inputs).expect_err("no compiler");
    assert!(matches!(e, DriverError::CompilerNotFound { .. }), "{e}");
    let kept = kept_source(&e);
    assert!(e.to_string().contains("teil-no-such-compiler"), "{e}");
    assert!(e.to_string().contains(&kept.display().to_string()), "{e}");
    let src = std::fs::read_to_string(&kept).expect("source kept");
    assert!(src.contains("void teil_kernel("));
    cleanup(&kept);
}

#[test]
fn a_compile_error_carries_the_compiler_message() {
    let (k, inputs) = one_kernel();
    // A flag the policy allows (`-std=...`) that the compiler does not know.
    let tc = Toolchain::default().with_cflags("-O2 -std=no-such-standard-for-teil");
    let e = run(&tc, &k, &inputs).expect_err("bad flag");
    assert!(matches!(e, DriverError::CompileFailed { .. }), "{e}");
    assert!(e.to_string().contains("no-such-standard-for-teil"), "{e}");
    let kept = kept_source(&e);
    assert!(kept.exists());
    cleanup(&kept);
}

/// Links an extra C file into the driver, through a compiler wrapper that appends it (the
/// flags may not name files: spec/abi.md, "Compiling the C").
fn with_extra_c(body: &str, flags: &str) -> (tempfile::TempDir, Toolchain) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("extra.c");
    std::fs::write(&file, body).expect("write");
    let cc = dir.path().join("cc-with-extra");
    std::fs::write(
        &cc,
        format!("#!/bin/sh\nexec cc \"$@\" '{}'\n", file.display()),
    )
    .expect("write");
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let tc = Toolchain {
        cc: cc.display().to_string(),
        ..Toolchain::default().with_cflags(flags)
    };
    (dir, tc)
}

#[test]
fn a_crash_of_the_compiled_program_is_reported() {
    let (k, inputs) = one_kernel();
    let (_dir, tc) = with_extra_c(
        "#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) { abort(); }\n",
        "-O2",
    );
    let e = run(&tc, &k, &inputs).expect_err("crash");
    assert!(matches!(e, DriverError::KernelFailed { .. }), "{e}");
    assert!(e.to_string().contains("the compiled kernel failed"), "{e}");
    cleanup(&kept_source(&e));
}

#[test]
fn a_recoverable_sanitizer_report_still_fails_the_run() {
    let (k, inputs) = one_kernel();
    let (_dir, tc) = with_extra_c(
        "#include <limits.h>\nvolatile int teil_test_big = INT_MAX;\n\
         __attribute__((constructor)) static void overflow(void) { teil_test_big += 1; }\n",
        "-O0 -fsanitize=undefined",
    );
    let e = run(&tc, &k, &inputs).expect_err("sanitizer report");
    assert!(e.to_string().contains("signed integer overflow"), "{e}");
    cleanup(&kept_source(&e));
}

#[test]
fn inputs_of_the_wrong_shape_are_rejected_before_compiling() {
    let (k, _) = one_kernel();
    let mut inputs = BTreeMap::new();
    inputs.insert(
        "A".to_string(),
        teil_interp::Tensor::zeros(ndarray::IxDyn(&[3])),
    );
    let e = run(&Toolchain::default(), &k, &inputs).expect_err("wrong shape");
    assert!(e.coded().starts_with("[E0603] input `"), "{e}");
}

#[test]
fn an_input_not_supplied_is_undefined() {
    let (k, _) = one_kernel();
    let out = run(&Toolchain::default(), &k, &BTreeMap::new()).expect("runs");
    assert!(out.values["B"].iter().all(|x| x.is_nan()));
}

/// An executable shell script in `dir`.
fn script(dir: &std::path::Path, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("fake-cc");
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

#[test]
fn a_compiler_that_outlives_the_time_out_is_stopped() {
    let (k, inputs) = one_kernel();
    let dir = tempfile::tempdir().expect("tempdir");
    let cc = script(dir.path(), "sleep 1000\n");
    let timeout = std::time::Duration::from_millis(300);
    let tc = Toolchain {
        cc: cc.clone(),
        timeout,
        ..Toolchain::default()
    };
    let start = std::time::Instant::now();
    let e = run(&tc, &k, &inputs).expect_err("times out");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    match &e {
        DriverError::TimedOut {
            process: Process::Compiler(c),
            timeout: t,
        } => assert_eq!((c, *t), (&cc, timeout)),
        other => panic!("{other}"),
    }
    assert_eq!(e.code(), Some(teil::Code::ProcessTimedOut));
    assert_eq!(
        e.to_string(),
        format!(
            "the C compiler `{cc}` did not finish within 0.3 s and was stopped \
             (raise the bound with `--cc-timeout`)"
        )
    );
}

#[test]
fn cancelling_stops_a_running_compiler_and_refuses_new_runs() {
    let (k, inputs) = one_kernel();
    let dir = tempfile::tempdir().expect("tempdir");
    let tc = Toolchain {
        cc: script(dir.path(), "sleep 1000\n"),
        ..Toolchain::default()
    };
    let cancel = tc.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.cancel();
    });
    let start = std::time::Instant::now();
    let e = run(&tc, &k, &inputs).expect_err("interrupted");
    canceller.join().expect("thread");
    assert!(matches!(e, DriverError::Interrupted), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(e.code(), None);
    // Once cancelled, a run with a working compiler does not start.
    let working = Toolchain {
        cc: "cc".to_string(),
        ..tc.clone()
    };
    assert!(matches!(
        run(&working, &k, &inputs),
        Err(DriverError::Interrupted)
    ));
    assert!(run(&Toolchain::default(), &k, &inputs).is_ok());
}

/// `run_program` checks the inputs as every caller's are (`teil::interface::check_inputs`)
/// before it lowers or compiles anything: a name that is no input, a shape other than the
/// declared one and a missing required input are each reported, with their codes, in that order.
#[test]
fn run_program_refuses_inputs_that_do_not_fit_the_program() {
    use teil::interface::InterfaceError;
    use teil_cbackend::{run_program, ProgramError};
    let (p, _) = teil::compile(
        "input var A : [2 3]\ninput var x : [3]\noutput var y : [2]\ny = (A # x) .[2 3]\n",
    )
    .expect("checks");
    let array = |shape: &[usize]| ndarray::ArrayD::<f64>::zeros(shape);
    let inputs = BTreeMap::from([
        ("y".to_string(), array(&[2])),
        ("A".to_string(), array(&[3, 2])),
    ]);
    // A compiler that cannot run: nothing may reach it.
    let tc = Toolchain {
        cc: "/nonexistent/cc".into(),
        ..Toolchain::default()
    };
    let e = run_program(&p, &Options::default(), &tc, &inputs).expect_err("refused");
    let ProgramError::Inputs(errors) = &e else {
        panic!("not an input error: {e:?}");
    };
    assert!(
        matches!(
            &errors[..],
            [
                InterfaceError::InputShape { name: a, .. },
                InterfaceError::NotAnInput { name: y },
                InterfaceError::MissingInput { name: x, .. },
            ] if a == "A" && y == "y" && x == "x"
        ),
        "{errors:?}"
    );
    let codes: Vec<&str> = e.codes().iter().map(|c| c.as_str()).collect();
    assert_eq!(codes, ["E0603", "E0602", "E0604"]);
    assert_eq!(e.to_string().lines().count(), 3, "{e}");
}
