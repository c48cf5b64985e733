//! Kernels compiled into shared objects and called in-process (`teil_cbackend::shared`).
//!
//! Results are compared with the fast evaluator bit for bit (NaN = `•`, -0 = +0) on every
//! corpus program that fits, at padding multiples 1, 3 and 8; then many calls, calls from
//! several threads, the cache (hits without running the compiler, concurrent compilation of
//! one kernel), and every error a caller can cause. Every test compiles into a cache
//! directory of its own.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teil::interface::InterfaceError;
use teil::CheckedProgram;
use teil::CodedError;
use teil_cbackend::run::DriverError;
use teil_cbackend::shared::{KernelError, SharedKernel, SharedOptions};
use teil_interp::{same_values, Tensor};

const MATMUL: &str = "input var A : [2 3]\ninput var B : [3 4]\noutput var C : [2 4]\n\
                      C = (A # B) .[2 3]";

fn program(src: &str) -> CheckedProgram {
    match teil::compile(src) {
        Ok((p, _)) => p,
        Err(d) => panic!("test program does not check: {d:?}"),
    }
}

fn options(cache: &Path, pad: u64) -> SharedOptions {
    SharedOptions {
        pad,
        cache_dir: Some(cache.to_path_buf()),
        ..SharedOptions::default()
    }
}

fn views(inputs: &BTreeMap<String, Tensor>) -> BTreeMap<String, ArrayViewD<'_, f64>> {
    inputs.iter().map(|(k, v)| (k.clone(), v.view())).collect()
}

fn tensor(shape: &[usize], data: Vec<f64>) -> Tensor {
    ArrayD::from_shape_vec(IxDyn(shape), data).expect("shape and data agree")
}

/// Calls `kernel` and checks that it returns exactly the fast evaluator's value of every output.
fn check_against_fast(
    label: &str,
    p: &CheckedProgram,
    kernel: &SharedKernel,
    inputs: &BTreeMap<String, Tensor>,
) {
    let expected = teil_interp::run_fast(p, inputs).unwrap_or_else(|e| panic!("{label}: {e}"));
    let got = kernel
        .call(&views(inputs))
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let names: Vec<&String> = got.keys().collect();
    let mut outputs: Vec<&String> = kernel.outputs().iter().collect();
    outputs.sort();
    assert_eq!(names, outputs, "{label}: returned variables");
    for (name, value) in &got {
        assert!(
            same_values(value, &expected[name]),
            "{label}: `{name}` differs\nkernel: {value}\nfast:   {}",
            expected[name]
        );
    }
    // The same call writing every output into the caller's arrays (`call_into`, NumPy's
    // `out=`), which hold garbage on entry: row-major arrays are the function's own buffers
    // where nothing is padded, column-major ones (every other output) are copied into.
    let mut arrays: BTreeMap<String, Tensor> = kernel
        .outputs()
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let shape = expected[name].shape().to_vec();
            let a = if k % 2 == 0 {
                ArrayD::from_elem(IxDyn(&shape), 7.0)
            } else {
                ArrayD::from_elem(IxDyn(&shape).f(), 7.0)
            };
            (name.clone(), a)
        })
        .collect();
    let mut outs: BTreeMap<String, ArrayViewMutD<'_, f64>> = arrays
        .iter_mut()
        .map(|(k, v)| (k.clone(), v.view_mut()))
        .collect();
    let rest = kernel
        .call_into(&views(inputs), &mut outs)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(rest.is_empty(), "{label}: returned {:?}", rest.keys());
    drop(outs);
    for (name, value) in &arrays {
        assert!(
            same_values(value, &expected[name]),
            "{label}: `{name}` written into the caller's array differs\nkernel: {value}\nfast:   {}",
            expected[name]
        );
    }
}

fn corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            corpus_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "teil" || e == "tin") {
            out.push(p);
        }
    }
}

#[test]
fn corpus_programs_equal_the_fast_evaluator_at_pads_1_3_8() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    corpus_files(&root.join("tests"), &mut files);
    corpus_files(&root.join("examples"), &mut files);
    let cache = tempfile::tempdir().expect("temporary directory");
    let mut programs = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let Ok((p, _)) = teil::guard::load(&f.to_string_lossy(), &text) else {
            continue; // rejected programs are not run
        };
        // Every well-typed program lowers, element types and functions included.
        if let Err(e) = teil_cbackend::lower(&p, &teil_cbackend::Options::default()) {
            panic!("{}: {e}", f.display());
        }
        // Programs whose buffers exceed a few MiB at M = 8 are the evaluators' size tests.
        let padded: u64 = p
            .program()
            .decls
            .iter()
            .map(|d| {
                d.shape()
                    .iter()
                    .fold(1u64, |a, n| a.saturating_mul(n.div_ceil(8) * 8))
            })
            .fold(0, u64::saturating_add);
        if padded <= 1 << 19 {
            programs.push((f.strip_prefix(&root).unwrap_or(f).display().to_string(), p));
        }
    }
    assert!(
        programs.len() >= 40,
        "only {} corpus programs",
        programs.len()
    );
    // Two threads: compiling dominates, and the machine has two cores.
    let (a, b) = programs.split_at(programs.len() / 2);
    std::thread::scope(|s| {
        for part in [a, b] {
            let cache = cache.path();
            s.spawn(move || {
                for (label, p) in part {
                    let inputs = teil_interp::random_inputs(p, 11);
                    for pad in [1, 3, 8] {
                        let kernel = SharedKernel::compile(p, &options(cache, pad))
                            .unwrap_or_else(|e| panic!("{label} at M = {pad}: {e}"));
                        check_against_fast(&format!("{label} at M = {pad}"), p, &kernel, &inputs);
                    }
                }
            });
        }
    });
}

#[test]
fn a_kernel_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<SharedKernel>();
}

#[test]
fn many_calls_give_the_right_result_every_time() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let p = program(MATMUL);
    let kernel = SharedKernel::compile(&p, &options(cache.path(), 3)).expect("compiles");
    assert_eq!(kernel.inputs(), ["A", "B"]);
    assert_eq!(kernel.outputs(), ["C"]);
    for i in 0..2000 {
        let x = i as f64;
        let inputs = BTreeMap::from([
            (
                "A".to_string(),
                tensor(&[2, 3], (0..6).map(|k| x + k as f64).collect()),
            ),
            (
                "B".to_string(),
                tensor(&[3, 4], (0..12).map(|k| x - k as f64).collect()),
            ),
        ]);
        check_against_fast(&format!("call {i}"), &p, &kernel, &inputs);
    }
}

#[test]
fn calls_from_several_threads_at_once() {
    let cache = tempfile::tempdir().expect("temporary directory");
    // A contraction lifted into a workspace temporary, so concurrent calls would collide if
    // the workspace were shared.
    let src = "input var A : [4 5]\ninput var B : [5 6]\ninput var D : [6 3]\n\
               output var E : [4 3]\nE = (A # B # D) .[2 3] .[2 3]";
    let p = program(src);
    let kernel = SharedKernel::compile(&p, &options(cache.path(), 1)).expect("compiles");
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (kernel, p) = (&kernel, &p);
            s.spawn(move || {
                for i in 0..200u64 {
                    let inputs = teil_interp::random_inputs(p, t * 1000 + i);
                    check_against_fast(&format!("thread {t} call {i}"), p, kernel, &inputs);
                }
            });
        }
    });
}

/// A compiler wrapper that appends a line to `log` on every run, then runs `cc`.
fn logging_cc(dir: &Path, log: &Path) -> PathBuf {
    let script = dir.join("logging-cc");
    std::fs::write(
        &script,
        format!(
            // Compilations only: `--version` (the cache key's, once per process) is not one.
            "#!/bin/sh\n[ \"$1\" = --version ] || echo run >> '{}'\nexec cc \"$@\"\n",
            log.display()
        ),
    )
    .expect("write the wrapper");
    make_executable(&script);
    script
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn runs(log: &Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |s| s.lines().count())
}

#[test]
fn a_second_compile_is_a_cache_hit_without_the_compiler() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let tools = tempfile::tempdir().expect("temporary directory");
    let log = tools.path().join("log");
    let opts = SharedOptions {
        cc: logging_cc(tools.path(), &log).display().to_string(),
        ..options(cache.path(), 1)
    };
    let p = program(MATMUL);
    let first = SharedKernel::compile(&p, &opts).expect("compiles");
    assert_eq!(runs(&log), 1);
    let second = SharedKernel::compile(&p, &opts).expect("cache hit");
    assert_eq!(runs(&log), 1, "the compiler ran again");
    assert_eq!(first.path(), second.path());
    assert!(first.path().starts_with(cache.path()));
    assert!(
        first.path().with_extension("c").is_file(),
        "the C source is kept"
    );
    let inputs = teil_interp::random_inputs(&p, 3);
    check_against_fast("hit", &p, &second, &inputs);

    // The same program with another padding multiple, other flags or a different text is a
    // different object.
    let padded = SharedKernel::compile(
        &p,
        &SharedOptions {
            pad: 4,
            ..opts.clone()
        },
    )
    .expect("pad 4");
    let flagged = SharedKernel::compile(
        &p,
        &SharedOptions {
            cflags: Some("-O1".to_string()),
            ..opts.clone()
        },
    )
    .expect("-O1");
    assert_eq!(runs(&log), 3);
    assert_ne!(padded.path(), first.path());
    assert_ne!(flagged.path(), first.path());
    check_against_fast("pad 4", &p, &padded, &inputs);

    // Only the objects, their sources and HMAC records and the cache's secret are left in the
    // cache: no temporary files.
    let mut names: Vec<String> = std::fs::read_dir(cache.path())
        .expect("list the cache")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 10, "{names:?}");
    assert_eq!(names.iter().filter(|n| n.ends_with(".mac")).count(), 3);
    assert!(
        names.contains(&"teil-cache-secret".to_string()),
        "{names:?}"
    );
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}

#[test]
fn processes_compiling_one_kernel_at_once_share_the_object() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let p = program(MATMUL);
    let inputs = teil_interp::random_inputs(&p, 5);
    let paths: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (p, inputs, cache) = (&p, &inputs, cache.path());
                s.spawn(move || {
                    let k = SharedKernel::compile(p, &options(cache, 1)).expect("compiles");
                    check_against_fast("concurrent compile", p, &k, inputs);
                    k.path().to_path_buf()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert!(paths.iter().all(|q| q == &paths[0]));
    let left: Vec<_> = std::fs::read_dir(cache.path())
        .expect("list the cache")
        .map(|e| e.expect("entry").file_name())
        .collect();
    // The object, its source, its HMAC record and the cache's secret.
    assert_eq!(left.len(), 4, "{left:?}");
}

#[test]
fn inputs_are_those_the_cli_requires_and_others_start_undefined() {
    let cache = tempfile::tempdir().expect("temporary directory");
    // No qualifiers: every variable is a parameter; `x` is read before it is assigned, `y`
    // is assigned first, `z` is only ever read (after `y`), `w` never mentioned.
    let src = "var x : [2]\nvar y : [2]\nvar z : [2]\nvar w : [3]\ny = x + x\nz = y * z";
    let p = program(src);
    let kernel = SharedKernel::compile(&p, &options(cache.path(), 8)).expect("compiles");
    assert_eq!(kernel.inputs(), ["x", "z"]);
    assert_eq!(kernel.outputs(), ["x", "y", "z", "w"]);
    let mut inputs = BTreeMap::from([
        ("x".to_string(), tensor(&[2], vec![1.0, -2.0])),
        ("z".to_string(), tensor(&[2], vec![3.0, 0.5])),
    ]);
    let got = kernel.call(&views(&inputs)).expect("runs");
    assert_eq!(got["y"].as_slice(), Some(&[2.0, -4.0][..]));
    assert_eq!(got["z"].as_slice(), Some(&[6.0, -2.0][..]));
    assert!(
        got["w"].iter().all(|v| v.is_nan()),
        "w is undefined: {}",
        got["w"]
    );
    check_against_fast("optional inputs left out", &p, &kernel, &inputs);
    // An optional input may be given; it is the variable's initial value.
    inputs.insert("w".to_string(), tensor(&[3], vec![7.0, 8.0, 9.0]));
    let got = kernel.call(&views(&inputs)).expect("runs");
    assert_eq!(got["w"].as_slice(), Some(&[7.0, 8.0, 9.0][..]));
    check_against_fast("optional input given", &p, &kernel, &inputs);
}

#[test]
fn input_arrays_are_never_written_and_may_have_any_layout() {
    let cache = tempfile::tempdir().expect("temporary directory");
    // The program assigns its input-only `A`: the kernel works on a private copy.
    let src = "input var A : [3 2]\noutput var B : [3 2]\nA = A + A\nB = A * A";
    let p = program(src);
    for pad in [1, 4] {
        let kernel = SharedKernel::compile(&p, &options(cache.path(), pad)).expect("compiles");
        let a = tensor(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let before = a.clone();
        let got = kernel
            .call(&BTreeMap::from([("A".to_string(), a.view())]))
            .expect("runs");
        assert_eq!(a, before, "the caller's array was written at M = {pad}");
        assert_eq!(
            got["B"].as_slice(),
            Some(&[4., 16., 36., 64., 100., 144.][..])
        );

        // A transposed (Fortran-order) view holds the same logical values.
        let t = tensor(&[2, 3], vec![1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
        let view = t.view().reversed_axes();
        assert!(!view.is_standard_layout());
        let got_t = kernel
            .call(&BTreeMap::from([("A".to_string(), view)]))
            .expect("runs");
        assert_eq!(got_t, got);
    }
}

fn error(kernel: &SharedKernel, inputs: &[(&str, Tensor)]) -> KernelError {
    let inputs: BTreeMap<String, Tensor> = inputs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    match kernel.call(&views(&inputs)) {
        Ok(out) => panic!("expected an error, got {out:?}"),
        Err(e) => e,
    }
}

#[test]
fn call_errors_name_the_variable_and_shapes() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let src = "input var A : [2 3]\ninput var B : [3 4]\nvar T : [2 4]\noutput var C : [2 4]\n\
               T = (A # B) .[2 3]\nC = T + T";
    let kernel = SharedKernel::compile(&program(src), &options(cache.path(), 1)).expect("compiles");
    let a = tensor(&[2, 3], vec![0.0; 6]);
    let b = tensor(&[3, 4], vec![0.0; 12]);

    // The caller boundary's errors (`teil::interface`), every one at once.
    let inputs = |e: KernelError| match e {
        KernelError::Inputs(errors) => errors,
        e => panic!("not an input error: {e:?}"),
    };
    let e = error(&kernel, &[("A", a.clone())]);
    assert_eq!(e.to_string(), "[E0604] missing input `B` of shape [3, 4]");
    assert_eq!(
        inputs(e),
        [InterfaceError::MissingInput {
            name: "B".to_string(),
            shape: vec![3, 4]
        }]
    );

    let e = error(
        &kernel,
        &[("A", a.clone()), ("B", tensor(&[4, 3], vec![0.0; 12]))],
    );
    assert_eq!(
        inputs(e),
        [InterfaceError::InputShape {
            name: "B".to_string(),
            expected: vec![3, 4],
            found: vec![4, 3]
        }]
    );
    let e = error(
        &kernel,
        &[("A", tensor(&[6], vec![0.0; 6])), ("B", b.clone())],
    );
    assert_eq!(
        e.to_string(),
        "[E0603] input `A` has shape [6], but the program declares [2, 3]"
    );

    let e = error(
        &kernel,
        &[("A", a.clone()), ("B", b.clone()), ("Q", a.clone())],
    );
    assert_eq!(
        inputs(e),
        [InterfaceError::UnknownVariable {
            name: "Q".to_string()
        }]
    );
    for name in ["C", "T"] {
        let e = error(
            &kernel,
            &[
                ("A", a.clone()),
                ("B", b.clone()),
                (name, tensor(&[2, 4], vec![0.0; 8])),
            ],
        );
        assert_eq!(
            inputs(e),
            [InterfaceError::NotAnInput {
                name: name.to_string()
            }]
        );
    }
    // Several problems are reported together, given inputs first.
    let e = error(
        &kernel,
        &[("Q", a.clone()), ("C", tensor(&[2, 4], vec![0.0; 8]))],
    );
    let codes: Vec<&str> = inputs(e)
        .iter()
        .filter_map(|e| e.code())
        .map(|c| c.as_str())
        .collect();
    assert_eq!(codes, ["E0602", "E0601", "E0604", "E0604"]); // `C`, `Q` (name order), then A, B
}

/// Arrays for the results must name an output and have its shape; nothing is called
/// otherwise, and the caller's arrays are untouched.
#[test]
fn result_arrays_must_fit_their_outputs() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let src = "input var A : [2 3]\ninput var B : [3 4]\nvar T : [2 4]\noutput var C : [2 4]\n\
               T = (A # B) .[2 3]\nC = T + T";
    let kernel = SharedKernel::compile(&program(src), &options(cache.path(), 1)).expect("compiles");
    let inputs: BTreeMap<String, Tensor> = [
        ("A".to_string(), tensor(&[2, 3], vec![1.0; 6])),
        ("B".to_string(), tensor(&[3, 4], vec![1.0; 12])),
    ]
    .into();
    let mut wrong = tensor(&[4, 2], vec![5.0; 8]);
    let mut outs = BTreeMap::from([("C".to_string(), wrong.view_mut())]);
    let e = kernel.call_into(&views(&inputs), &mut outs).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the array for output `C` has shape [4, 2], but the program declares [2, 4]"
    );
    drop(outs);
    assert!(wrong.iter().all(|&x| x == 5.0));
    for name in ["T", "A", "Q"] {
        let mut a = tensor(&[2, 4], vec![5.0; 8]);
        let mut outs = BTreeMap::from([(name.to_string(), a.view_mut())]);
        match kernel.call_into(&views(&inputs), &mut outs) {
            Err(KernelError::NotAnOutput(n)) => assert_eq!(n, name),
            other => panic!("{name}: {other:?}"),
        }
    }
    // A fitting array receives the result and is not returned again.
    let mut c = tensor(&[2, 4], vec![5.0; 8]);
    let mut outs = BTreeMap::from([("C".to_string(), c.view_mut())]);
    let rest = kernel.call_into(&views(&inputs), &mut outs).expect("calls");
    assert!(rest.is_empty());
    drop(outs);
    assert_eq!(c, tensor(&[2, 4], vec![6.0; 8]));
}

#[test]
fn compiler_failures_carry_the_compilers_message() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let p = program(MATMUL);
    let bogus = SharedOptions {
        cflags: Some("-O1 -Wbogus-teil-flag".to_string()),
        ..options(cache.path(), 1)
    };
    match SharedKernel::compile(&p, &bogus) {
        Err(KernelError::Compile(DriverError::CompileFailed {
            cc, message, kept, ..
        })) => {
            assert_eq!(cc, "cc");
            assert!(message.contains("bogus-teil-flag"), "{message}");
            assert!(
                kept.is_file() && kept.starts_with(cache.path()),
                "{}",
                kept.display()
            );
        }
        other => panic!("expected a compiler failure, got {other:?}"),
    }

    let missing = SharedOptions {
        cc: "teil-no-such-compiler".to_string(),
        ..options(cache.path(), 1)
    };
    match SharedKernel::compile(&p, &missing) {
        Err(KernelError::Compile(DriverError::CompilerNotFound { cc, .. })) => {
            assert_eq!(cc, "teil-no-such-compiler")
        }
        other => panic!("expected a missing compiler, got {other:?}"),
    }

    let bad_pad = options(cache.path(), 0);
    match SharedKernel::compile(&p, &bad_pad) {
        Err(KernelError::Lower(teil_cbackend::Error::BadPad(0))) => {}
        other => panic!("expected a bad padding multiple, got {other:?}"),
    }

    // Nothing was left in the cache but the kept sources and the cache's secret: no object,
    // no temporary file.
    for e in std::fs::read_dir(cache.path()).expect("list the cache") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(
            (name.ends_with(".c") || name == "teil-cache-secret") && !name.starts_with('.'),
            "{name}"
        );
    }
}

#[test]
fn a_hanging_compiler_is_stopped_at_the_time_out() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let tools = tempfile::tempdir().expect("temporary directory");
    let script = tools.path().join("slow-cc");
    // `exec` so that killing the compiler kills the sleep.
    std::fs::write(&script, "#!/bin/sh\nexec sleep 60\n").expect("write the script");
    make_executable(&script);
    let opts = SharedOptions {
        cc: script.display().to_string(),
        timeout: Some(Duration::from_millis(500)),
        ..options(cache.path(), 1)
    };
    let start = Instant::now();
    match SharedKernel::compile(&program(MATMUL), &opts) {
        Err(KernelError::Compile(DriverError::TimedOut { timeout, .. })) => {
            assert_eq!(timeout, Duration::from_millis(500))
        }
        other => panic!("expected a time-out, got {other:?}"),
    }
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn readme_example_is_from_rust() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../README.md")).expect("README.md");
    let example = std::fs::read_to_string(root.join("examples/from_rust.rs")).expect("example");
    let section = &readme[readme.find("### From Rust").expect("a From Rust section")..];
    let start = section.find("```rust\n").expect("a Rust block") + "```rust\n".len();
    let block = &section[start..start + section[start..].find("```\n").expect("block end")];
    let code: String = example
        .lines()
        .skip_while(|l| l.starts_with("//!"))
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        block, code,
        "README's Rust example and examples/from_rust.rs differ"
    );
}

#[test]
fn openmp_kernels_load_and_agree() {
    let cache = tempfile::tempdir().expect("temporary directory");
    // Large enough for the packed contraction kernel and parallel loops to run.
    let src = "input var A : [40 30]\ninput var B : [30 20]\ninput var s : []\n\
               output var C : [40 20]\nC = (A # B) .[2 3]\nC = C / s";
    let p = program(src);
    let opts = SharedOptions {
        openmp: true,
        ..options(cache.path(), 8)
    };
    let kernel = SharedKernel::compile(&p, &opts).expect("compiles with -fopenmp");
    let source = std::fs::read_to_string(kernel.path().with_extension("c")).expect("source");
    assert!(
        source.contains("#pragma omp"),
        "no OpenMP pragma in the kernel"
    );
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (kernel, p) = (&kernel, &p);
            s.spawn(move || {
                for i in 0..20u64 {
                    let inputs = teil_interp::random_inputs(p, 100 * t + i);
                    check_against_fast(&format!("openmp {t}/{i}"), p, kernel, &inputs);
                }
            });
        }
    });
}

/// MATMUL's interface with other values: an object that could be passed off as MATMUL's.
const DOUBLED: &str = "input var A : [2 3]\ninput var B : [3 4]\noutput var C : [2 4]\n\
                       C = (A # B) .[2 3]\nC = C + C";

/// Compiles MATMUL and DOUBLED into `cache` with a logging compiler; returns MATMUL's options
/// and both objects' paths.
fn two_kernels(cache: &Path, tools: &Path, log: &Path) -> (SharedOptions, PathBuf, PathBuf) {
    let opts = SharedOptions {
        cc: logging_cc(tools, log).display().to_string(),
        ..options(cache, 1)
    };
    let matmul = SharedKernel::compile(&program(MATMUL), &opts).expect("compiles");
    let doubled = SharedKernel::compile(&program(DOUBLED), &opts).expect("compiles");
    assert_eq!(runs(log), 2);
    (
        opts,
        matmul.path().to_path_buf(),
        doubled.path().to_path_buf(),
    )
}

#[test]
fn a_planted_object_with_the_right_name_is_rebuilt_not_loaded() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let tools = tempfile::tempdir().expect("temporary directory");
    let log = tools.path().join("log");
    let (opts, matmul, doubled) = two_kernels(cache.path(), tools.path(), &log);
    let p = program(MATMUL);
    let inputs = teil_interp::random_inputs(&p, 7);
    // Another object (and its valid HMAC record, which names its own key) at MATMUL's name,
    // as someone who can compute the key but not the cache's secret would plant it.
    std::fs::copy(&doubled, &matmul).expect("plant the object");
    std::fs::copy(doubled.with_extension("mac"), matmul.with_extension("mac")).expect("plant");
    let k = SharedKernel::compile(&p, &opts).expect("rebuilds");
    assert_eq!(runs(&log), 3, "the planted object was not rebuilt");
    check_against_fast("after planting", &p, &k, &inputs);
    drop(k);
    // Garbage with a record forged without the secret is rebuilt too.
    std::fs::write(&matmul, b"\x7fELF not an object").expect("plant");
    std::fs::write(matmul.with_extension("mac"), "0".repeat(64)).expect("plant");
    let k = SharedKernel::compile(&p, &opts).expect("rebuilds");
    assert_eq!(runs(&log), 4);
    check_against_fast("after garbage", &p, &k, &inputs);
    // The rebuilt object is authentic again: a hit.
    let again = SharedKernel::compile(&p, &opts).expect("hit");
    assert_eq!(runs(&log), 4);
    check_against_fast("hit", &p, &again, &inputs);
}

#[test]
fn a_symbolic_link_at_the_objects_name_is_replaced_not_followed() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let tools = tempfile::tempdir().expect("temporary directory");
    let log = tools.path().join("log");
    let (opts, matmul, doubled) = two_kernels(cache.path(), tools.path(), &log);
    let p = program(MATMUL);
    std::fs::remove_file(&matmul).expect("remove");
    std::os::unix::fs::symlink(&doubled, &matmul).expect("plant a link");
    let k = SharedKernel::compile(&p, &opts).expect("rebuilds");
    assert_eq!(runs(&log), 3, "the link was followed");
    check_against_fast("after a link", &p, &k, &teil_interp::random_inputs(&p, 8));
    let m = std::fs::symlink_metadata(&matmul).expect("the object");
    assert!(m.file_type().is_file(), "the link is still there");
    // The link's target, DOUBLED's object, is untouched.
    let d = SharedKernel::compile(&program(DOUBLED), &opts).expect("hit");
    assert_eq!(runs(&log), 3);
    let inputs = teil_interp::random_inputs(&p, 9);
    check_against_fast("doubled", &program(DOUBLED), &d, &inputs);
}

fn untrusted(cache: &Path) -> String {
    match SharedKernel::compile(&program(MATMUL), &options(cache, 1)) {
        Err(e @ KernelError::UntrustedCacheDir { .. }) => e.to_string(),
        other => panic!("expected a refused cache directory, got {other:?}"),
    }
}

#[test]
fn cache_directories_others_could_write_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("temporary directory");
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    for mode in [0o777, 0o775, 0o1777, 0o757] {
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let message = untrusted(&shared);
        assert!(
            message.contains("lets the group or others write it"),
            "{message}"
        );
        assert!(message.contains(&shared.display().to_string()), "{message}");
    }
    // Nothing was written into it, not even a secret.
    assert_eq!(std::fs::read_dir(&shared).expect("list").count(), 0);
    // Once private, it is used.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let p = program(MATMUL);
    let k = SharedKernel::compile(&p, &options(&shared, 1)).expect("compiles");
    check_against_fast("private again", &p, &k, &teil_interp::random_inputs(&p, 1));

    // A symbolic link to a directory of one's own is refused too (it could be redirected).
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&shared, &link).expect("link");
    assert!(untrusted(&link).contains("symbolic link"));

    // A directory that does not exist is created private.
    let fresh = root.path().join("a/b/cache");
    SharedKernel::compile(&p, &options(&fresh, 1)).expect("compiles");
    let mode = std::fs::metadata(&fresh)
        .expect("created")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    // Another user's directory (only root can make one to test with).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let theirs = root.path().join("theirs");
        std::fs::create_dir(&theirs).expect("mkdir");
        std::os::unix::fs::chown(&theirs, Some(65534), None).expect("chown");
        assert!(untrusted(&theirs).contains("owned by user 65534"));
    }

    match SharedKernel::compile(&p, &options(Path::new(""), 1)) {
        Err(e @ KernelError::EmptyCacheDir) => assert!(e.to_string().contains("must not be empty")),
        other => panic!("expected a refused empty path, got {other:?}"),
    }
}

#[test]
fn another_users_or_shared_objects_in_the_cache_are_rebuilt() {
    use std::os::unix::fs::PermissionsExt;
    let cache = tempfile::tempdir().expect("temporary directory");
    let tools = tempfile::tempdir().expect("temporary directory");
    let log = tools.path().join("log");
    let (opts, matmul, _) = two_kernels(cache.path(), tools.path(), &log);
    let p = program(MATMUL);
    // An authentic object that others may write is not trusted (it could have been changed).
    std::fs::set_permissions(&matmul, std::fs::Permissions::from_mode(0o766)).expect("chmod");
    let k = SharedKernel::compile(&p, &opts).expect("rebuilds");
    assert_eq!(runs(&log), 3);
    check_against_fast("rebuilt", &p, &k, &teil_interp::random_inputs(&p, 2));
    let mode = std::fs::metadata(&matmul)
        .expect("object")
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the rebuilt object is private: {mode:o}");
    // A secret others can read is replaced (and everything it authenticated rebuilt).
    let secret = cache.path().join("teil-cache-secret");
    assert_eq!(
        std::fs::metadata(&secret)
            .expect("secret")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    drop(k);
    let k = SharedKernel::compile(&p, &opts).expect("rebuilds");
    assert_eq!(runs(&log), 4);
    check_against_fast("new secret", &p, &k, &teil_interp::random_inputs(&p, 3));
    assert_eq!(
        std::fs::metadata(&secret)
            .expect("secret")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[test]
fn stale_temporaries_of_killed_compilations_are_removed() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let old = std::time::SystemTime::now() - Duration::from_secs(600);
    let age = |path: &Path| {
        std::fs::File::open(path)
            .expect("open")
            .set_modified(old)
            .expect("set the modification time");
    };
    // A killed compilation leaves its staging directory (`.teil-tmp-*`, teil_io::files),
    // unlocked; a young one may belong to a compilation that has not locked it yet.
    let dead_dir = cache.path().join(".teil-tmp-xyz123");
    let young = cache.path().join(".teil-tmp-new456");
    let dead_file = cache.path().join(".teil-tmp-file.so");
    let other = cache.path().join("notes.txt");
    for f in [&dead_file, &other] {
        std::fs::write(f, "x").expect("write");
    }
    for d in [&dead_dir, &young] {
        std::fs::create_dir(d).expect("mkdir");
        std::fs::write(d.join("cc.stderr"), "x").expect("write");
    }
    for p in [&dead_file, &dead_dir, &other] {
        age(p);
    }
    let p = program(MATMUL);
    SharedKernel::compile(&p, &options(cache.path(), 1)).expect("compiles");
    assert!(!dead_dir.exists(), "a stale staging directory was left");
    // Only directories are staging directories: a file of that name is not this code's.
    for kept in [&young, &dead_file, &other] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
}

#[test]
fn sanitizers_are_refused_in_process() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let tools = tempfile::tempdir().expect("temporary directory");
    let log = tools.path().join("log");
    for flags in ["-O1 -fsanitize=address", "-fsanitize=undefined -O2"] {
        let opts = SharedOptions {
            cc: logging_cc(tools.path(), &log).display().to_string(),
            cflags: Some(flags.to_string()),
            ..options(cache.path(), 1)
        };
        match SharedKernel::compile(&program(MATMUL), &opts) {
            Err(e @ KernelError::Sanitizer { .. }) => {
                let m = e.to_string();
                assert!(m.contains("`-fsanitize="), "{m}");
                assert!(m.contains("backend=\"c\""), "{m}");
            }
            other => panic!("expected a refused sanitizer, got {other:?}"),
        }
    }
    assert_eq!(runs(&log), 0, "the compiler ran");
}

#[test]
fn a_cancelled_compilation_stops_the_compiler() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let tools = tempfile::tempdir().expect("temporary directory");
    let script = tools.path().join("slow-cc");
    std::fs::write(&script, "#!/bin/sh\nexec sleep 60\n").expect("write the script");
    make_executable(&script);
    let opts = SharedOptions {
        cc: script.display().to_string(),
        ..options(cache.path(), 1)
    };
    let cancel = opts.cancel.clone();
    let start = Instant::now();
    let result = std::thread::scope(|s| {
        let compiling = s.spawn(|| SharedKernel::compile(&program(MATMUL), &opts));
        std::thread::sleep(Duration::from_millis(300));
        cancel.cancel();
        compiling.join().expect("thread")
    });
    match result {
        Err(KernelError::Compile(DriverError::Interrupted)) => {}
        other => panic!("expected an interrupted compilation, got {other:?}"),
    }
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn kernels_loaded_and_dropped_in_any_order_call_their_own_object() {
    // Objects are loaded through `/proc/self/fd/N`; a descriptor number reused for another
    // object must never give back one loaded earlier under that name.
    let cache = tempfile::tempdir().expect("temporary directory");
    let (m, d) = (program(MATMUL), program(DOUBLED));
    let inputs = teil_interp::random_inputs(&m, 4);
    for round in 0..3 {
        let first = SharedKernel::compile(&m, &options(cache.path(), 1)).expect("compiles");
        let second = SharedKernel::compile(&m, &options(cache.path(), 1)).expect("hit");
        drop(first);
        let other = SharedKernel::compile(&d, &options(cache.path(), 1)).expect("compiles");
        check_against_fast(&format!("matmul {round}"), &m, &second, &inputs);
        check_against_fast(&format!("doubled {round}"), &d, &other, &inputs);
        drop(second);
        let again = SharedKernel::compile(&d, &options(cache.path(), 3)).expect("compiles");
        check_against_fast(&format!("doubled pad 3 {round}"), &d, &again, &inputs);
    }
}

/// A binary32 input takes binary32 numbers only, as every caller's does (E0605): the entry
/// point converts it to `float`, which would otherwise round `0.1` silently. Binary32 values
/// give the evaluators' bits.
#[test]
fn a_binary32_input_refuses_numbers_that_are_not_binary32() {
    let cache = tempfile::tempdir().expect("temporary directory");
    let p = program("input alloc x : f32[3]\noutput alloc y : f32[3]\ny = exp x * x\n");
    let k = SharedKernel::compile(&p, &options(cache.path(), 4)).expect("compiles");
    let bad = BTreeMap::from([("x".to_string(), tensor(&[3], vec![1.0, 0.1, 2.0]))]);
    let inputs = views(&bad);
    match k.call(&inputs) {
        Err(KernelError::Inputs(errors)) => {
            let codes: Vec<String> = errors
                .iter()
                .filter_map(|e| e.code())
                .map(|c| c.as_str().to_string())
                .collect();
            assert_eq!(codes, ["E0605"]);
        }
        other => panic!("{other:?}"),
    }
    let good = BTreeMap::from([(
        "x".to_string(),
        tensor(&[3], vec![1.0, f64::from(0.1f32), -87.5]),
    )]);
    check_against_fast("binary32", &p, &k, &good);
}

/// `call_typed` passes float32 arrays to a binary32 kernel as they are (the packed product's
/// `float` tiles read the caller's array in place, the result is written into a float32 `out`
/// in place) and returns binary32 outputs as `f32`, with the evaluators' bits; float64 arrays
/// of binary32 values give the same bits, and a float32 array for a binary64 output is refused.
#[test]
fn call_typed_passes_float32_arrays_through_with_the_evaluators_bits() {
    use teil_cbackend::shared::{Arg, ArgMut, Value};
    let cache = tempfile::tempdir().expect("temporary directory");
    let p = program(
        "input alloc A : f32[19, 23]\ninput alloc B : f32[23, 335]\n\
         output alloc C : f32[19, 335]\noutput alloc D : [19, 335]\n\
         C = (A # B) .[2 3]\nD = f64 C\n",
    );
    let inputs = teil_interp::uniform_inputs(&p, 5);
    let want = teil_interp::run_oracle(&p, &inputs).expect("oracle");
    let narrow = |name: &str| inputs[name].mapv(|x| x as f32);
    let (a, b) = (narrow("A"), narrow("B"));
    for pad in [1, 4] {
        let k = SharedKernel::compile(&p, &options(cache.path(), pad)).expect("compiles");
        let args = BTreeMap::from([
            ("A".to_string(), Arg::F32(a.view())),
            ("B".to_string(), Arg::F32(b.view())),
        ]);
        let got = k.call_typed(&args, &mut BTreeMap::new()).expect("runs");
        let Some(Value::F32(c)) = &got.get("C") else {
            panic!("C is not binary32: {got:?}")
        };
        assert!(same_values(&want["C"], &c.mapv(f64::from)), "pad {pad}");
        let Some(Value::F64(d)) = &got.get("D") else {
            panic!("D is not binary64: {got:?}")
        };
        assert!(same_values(&want["D"], d), "pad {pad}");
        // Into the caller's arrays: float32 for C, float64 for D.
        let mut c_out = ArrayD::<f32>::from_elem(IxDyn(&[19, 335]), f32::NAN);
        let mut d_out = ArrayD::<f64>::from_elem(IxDyn(&[19, 335]), f64::NAN);
        let mut outs = BTreeMap::from([
            ("C".to_string(), ArgMut::F32(c_out.view_mut())),
            ("D".to_string(), ArgMut::F64(d_out.view_mut())),
        ]);
        assert!(k.call_typed(&args, &mut outs).expect("runs").is_empty());
        drop(outs);
        assert!(same_values(&want["C"], &c_out.mapv(f64::from)), "pad {pad}");
        assert!(same_values(&want["D"], &d_out), "pad {pad}");
        // Float64 arrays of the same values: the same bits through `call`.
        let wide = k.call(&views(&inputs)).expect("runs");
        assert!(same_values(&want["C"], &wide["C"]), "pad {pad}");
        // A float32 array cannot receive a binary64 output.
        let mut narrow_d = ArrayD::<f32>::zeros(IxDyn(&[19, 335]));
        let mut outs = BTreeMap::from([("D".to_string(), ArgMut::F32(narrow_d.view_mut()))]);
        match k.call_typed(&args, &mut outs) {
            Err(KernelError::OutType(name)) => assert_eq!(name, "D"),
            other => panic!("{other:?}"),
        }
    }
}
