//! `teil run` and `teil trace` through the binary: the example kernels with expected values
//! computed by hand, `.npy` input and output (bytes written and checked by an independent
//! encoder below), undefined cells, and every bad-input case with its message, its exit code
//! and no partial output left behind.

mod support;

use std::path::{Path, PathBuf};
use support::{stderr, stdout, teil};

fn data(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/run");
    root.join(name).to_string_lossy().into_owned()
}

/// An independent `.npy` encoder (format 1.0 as NumPy writes it): `descr` is `<f8`, `<f4`, ...
fn npy(descr: &str, shape: &[usize], payload: &[u8]) -> Vec<u8> {
    let dims = match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(payload);
    out
}

fn f64s(shape: &[usize], values: &[f64]) -> Vec<u8> {
    assert_eq!(shape.iter().product::<usize>(), values.len());
    npy(
        "<f8",
        shape,
        &values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
}

/// The float64 values of a `.npy` file written by `teil run`, after checking its header is
/// exactly NumPy's for that shape.
fn read_f64s(path: &Path, shape: &[usize]) -> Vec<f64> {
    let bytes = std::fs::read(path).expect("output exists");
    let empty = f64s(shape, &vec![0.0; shape.iter().product()]);
    let header = empty.len() - 8 * shape.iter().product::<usize>();
    assert_eq!(
        &bytes[..header],
        &empty[..header],
        "header of {}",
        path.display()
    );
    bytes[header..]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

struct Matmul {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    a: String,
    b: String,
    out: PathBuf,
}

/// A = [[1, 2, 3], [4, 5, 6]], B = [[1, -1], [0, 2], [-2, 1]]; by hand A B = [[-5, 6], [-8, 12]].
fn matmul() -> Matmul {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let a = write(
        &dir,
        "a.npy",
        &f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    );
    let b = write(
        &dir,
        "b.npy",
        &f64s(&[3, 2], &[1.0, -1.0, 0.0, 2.0, -2.0, 1.0]),
    );
    let out = dir.join("out");
    Matmul {
        _tmp: tmp,
        dir,
        a,
        b,
        out,
    }
}

#[test]
fn matrix_product_through_both_evaluators() {
    for oracle in [false, true] {
        let m = matmul();
        let (ia, ib) = (format!("A={}", m.a), format!("B={}", m.b));
        let out = m.out.to_string_lossy().into_owned();
        let prog = data("matmul.teil");
        let mut args = vec!["run", &prog[..], "--in", &ia, "--in", &ib, "--out", &out];
        let oracle_flag = "--oracle";
        if oracle {
            args.push(oracle_flag);
        }
        let o = teil(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        // Only the output variable is written; nothing else is left in the directory.
        assert_eq!(entries(&m.out), vec!["C.npy"]);
        assert_eq!(
            read_f64s(&m.out.join("C.npy"), &[2, 2]),
            vec![-5.0, 6.0, -8.0, 12.0]
        );
        assert_eq!(stdout(&o), "", "--out without --print prints nothing");
    }
}

#[test]
fn print_shows_nested_arrays() {
    let m = matmul();
    let (ia, ib) = (format!("A={}", m.a), format!("B={}", m.b));
    let o = teil(&["run", &data("matmul.teil"), "--in", &ia, "--in", &ib]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "C : [2, 2] =\n[[-5,  6],\n [-8, 12]]\n");
}

#[test]
fn float32_inputs_are_widened() {
    let m = matmul();
    let a32: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let a = write(&m.dir, "a32.npy", &npy("<f4", &[2, 3], &a32));
    let (ia, ib) = (format!("A={a}"), format!("B={}", m.b));
    let out = m.out.to_string_lossy().into_owned();
    let o = teil(&[
        "run",
        &data("matmul.teil"),
        "--in",
        &ia,
        "--in",
        &ib,
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        read_f64s(&m.out.join("C.npy"), &[2, 2]),
        vec![-5.0, 6.0, -8.0, 12.0]
    );
}

#[test]
fn unqualified_programs_write_every_variable_and_scalars() {
    let m = matmul();
    // A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]]: trace(A B) = 19 + 50 = 69.
    let a = write(&m.dir, "a2.npy", &f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]));
    let b = write(&m.dir, "b2.npy", &f64s(&[2, 2], &[5.0, 6.0, 7.0, 8.0]));
    let (ia, ib) = (format!("A={a}"), format!("B={b}"));
    let out = m.out.to_string_lossy().into_owned();
    let o = teil(&[
        "run",
        &data("trace_of_product.teil"),
        "--in",
        &ia,
        "--in",
        &ib,
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(entries(&m.out), vec!["A.npy", "B.npy", "s.npy"]);
    assert_eq!(read_f64s(&m.out.join("s.npy"), &[]), vec![69.0]);
    assert_eq!(
        read_f64s(&m.out.join("A.npy"), &[2, 2]),
        vec![1.0, 2.0, 3.0, 4.0]
    );
}

#[test]
fn fig11_projection_and_expansion() {
    let m = matmul();
    let a = write(&m.dir, "a.npy", &f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]));
    let bv: Vec<f64> = (0..12).map(f64::from).collect();
    let b = write(&m.dir, "b.npy", &f64s(&[3, 2, 2], &bv));
    let (ia, ib) = (format!("A={a}"), format!("B={b}"));
    let out = m.out.to_string_lossy().into_owned();
    let o = teil(&[
        "run",
        &data("fig11.teil"),
        "--in",
        &ia,
        "--in",
        &ib,
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // C = A + B[2, :, :] = [1+4, 2+5, 3+6, 4+7]; D[k] = A + B[k].
    assert_eq!(
        read_f64s(&m.out.join("C.npy"), &[2, 2]),
        vec![5.0, 7.0, 9.0, 11.0]
    );
    let d: Vec<f64> = (0..12)
        .map(|i| f64::from(i) + [1.0, 2.0, 3.0, 4.0][i as usize % 4])
        .collect();
    assert_eq!(read_f64s(&m.out.join("D.npy"), &[3, 2, 2]), d);
}

#[test]
fn in_place_statements_and_reductions() {
    let m = matmul();
    let a = write(&m.dir, "a.npy", &f64s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]));
    let ia = format!("A={a}");
    let out = m.out.to_string_lossy().into_owned();
    let o = teil(&["run", &data("inplace.teil"), "--in", &ia, "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A + A^T = [[2, 5], [5, 8]], symmetric, so the transposition keeps it.
    assert_eq!(
        read_f64s(&m.out.join("A.npy"), &[2, 2]),
        vec![2.0, 5.0, 5.0, 8.0]
    );

    let x = write(
        &m.dir,
        "x.npy",
        &f64s(&[2, 3], &[-1.0, -2.0, -3.0, 4.0, -5.0, 0.5]),
    );
    let ix = format!("X={x}");
    let o = teil(&[
        "run",
        &data("reductions.teil"),
        "--in",
        &ix,
        "--out",
        &out,
        "--oracle",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read_f64s(&m.out.join("p.npy"), &[2]), vec![-6.0, -10.0]);
    assert_eq!(read_f64s(&m.out.join("hi.npy"), &[3]), vec![4.0, -2.0, 0.5]);
    assert_eq!(
        read_f64s(&m.out.join("lo.npy"), &[3]),
        vec![-1.0, -5.0, -3.0]
    );
}

#[test]
fn undefined_cells_are_nan_and_reported() {
    let m = matmul();
    let a = write(&m.dir, "a.npy", &f64s(&[3], &[1.0, 2.0, 3.0]));
    let ia = format!("A={a}");
    let out = m.out.to_string_lossy().into_owned();
    let o = teil(&["run", &data("undefined.teil"), "--in", &ia, "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read_f64s(&m.out.join("R.npy"), &[3])
        .iter()
        .all(|x| x.is_nan()));
    assert!(read_f64s(&m.out.join("Z.npy"), &[3])
        .iter()
        .all(|x| x.is_nan()));
    let err = stderr(&o);
    assert!(
        err.contains("warning: `R` has 3 undefined cells, written as NaN (the first is R[1]); they come from `T`, which was read before it was assigned"),
        "{err}"
    );
    assert!(
        err.contains("warning: `Z` has 3 NaN cells computed from defined values (NaN inputs, or arithmetic such as 0/0) (the first is Z[1])"),
        "{err}"
    );
}

#[test]
fn random_inputs_are_reproducible_small_integers() {
    let run = || {
        let o = teil(&[
            "run",
            &data("matmul.teil"),
            "--random-inputs",
            "42",
            "--print",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    let first = run();
    assert_eq!(first, run());
    // C is a sum of three products of integers in -3..=3.
    let values: Vec<f64> = first
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter_map(|s| s.parse().ok())
        .collect();
    assert!(values.iter().all(|v| v.abs() <= 27.0), "{first}");
}

/// Runs `args` expecting exit 1 with `message` on stderr and nothing in the output directory.
fn rejected(m: &Matmul, extra: &[&str], message: &str) {
    let out = m.out.to_string_lossy().into_owned();
    let prog = data("matmul.teil");
    let mut args = vec!["run", &prog[..]];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", &out]);
    let o = teil(&args);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    assert!(
        stderr(&o).contains(message),
        "expected `{message}` in\n{}",
        stderr(&o)
    );
    assert_eq!(
        entries(&m.out),
        Vec::<String>::new(),
        "partial output for {args:?}"
    );
}

#[test]
fn missing_input() {
    let m = matmul();
    let ia = format!("A={}", m.a);
    rejected(&m, &["--in", &ia], "error: [E0604] missing input `B` of shape [3, 2]: give `--in B=FILE.npy` or `--random-inputs SEED`");
}

#[test]
fn wrong_shape() {
    let m = matmul();
    let ia = format!("A={}", m.b);
    let ib = format!("B={}", m.b);
    rejected(
        &m,
        &["--in", &ia, "--in", &ib],
        &format!(
            "error: [E0603] input `A` has shape [3, 2], but the program declares [2, 3] (in `{}`)",
            m.b
        ),
    );
}

#[test]
fn wrong_dtype() {
    let m = matmul();
    let bad = write(&m.dir, "int.npy", &npy("<i8", &[2, 3], &[0u8; 48]));
    let (ia, ib) = (format!("A={bad}"), format!("B={}", m.b));
    rejected(
        &m,
        &["--in", &ia, "--in", &ib],
        &format!("error: cannot read input `A` (shape [2, 3]) from `{bad}`: dtype `<i8` is not supported; save the array as float64 (or float32)"),
    );
}

#[test]
fn corrupt_files() {
    let m = matmul();
    let ib = format!("B={}", m.b);
    let good = f64s(&[2, 3], &[0.0; 6]);
    let mut fortran = npy("<f8", &[2, 3], &[0u8; 48]);
    let at = fortran.windows(5).position(|w| w == b"False").unwrap();
    fortran.splice(at..at + 5, b"True ".iter().copied());
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "magic.npy",
            b"P5 not a numpy file at all".to_vec(),
            "not a .npy file (it does not start with the NumPy magic string)",
        ),
        (
            "short.npy",
            good[..good.len() - 5].to_vec(),
            "the data is truncated: the header promises 48 bytes, the file has 43",
        ),
        (
            "header.npy",
            good[..30].to_vec(),
            "the file ends inside its header",
        ),
        (
            "fortran.npy",
            fortran,
            "the array is stored in Fortran order; save it in C order (numpy.ascontiguousarray)",
        ),
    ];
    for (name, bytes, msg) in cases {
        let path = write(&m.dir, name, &bytes);
        let ia = format!("A={path}");
        rejected(
            &m,
            &["--in", &ia, "--in", &ib],
            &format!("error: cannot read input `A` (shape [2, 3]) from `{path}`: {msg}"),
        );
    }
}

/// An input file that cannot be read is an I/O problem, exit 2 as for an unreadable program
/// (README, spec/interpreter.md); it is listed before the other input problems, and nothing is
/// written. `teil trace` reads its inputs the same way.
#[test]
fn unreadable_file() {
    let m = matmul();
    let missing = m.dir.join("nope.npy").to_string_lossy().into_owned();
    let wrong = write(&m.dir, "int.npy", &npy("<i8", &[3, 2], &[0u8; 48]));
    let (ia, ib) = (format!("A={missing}"), format!("B={wrong}"));
    let out = m.out.to_string_lossy().into_owned();
    let prog = data("matmul.teil");
    let o = teil(&["run", &prog, "--in", &ia, "--in", &ib, "--out", &out]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "error: cannot read input `A` from `{missing}`: No such file or directory (os error 2)\n\
             error: cannot read input `B` (shape [3, 2]) from `{wrong}`: dtype `<i8` is not \
             supported; save the array as float64 (or float32)\n"
        )
    );
    assert!(!m.out.exists(), "nothing written");
    let o = teil(&[
        "trace",
        &prog,
        "C[1,1]",
        "--in",
        &ia,
        "--random-inputs",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "error: cannot read input `A` from `{missing}`: No such file or directory (os error 2)\n"
        )
    );
    // A directory is refused before it is opened, with the same exit code.
    let dir = m.dir.to_string_lossy().into_owned();
    let ia = format!("A={dir}");
    let o = teil(&["run", &prog, "--in", &ia, "--random-inputs", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "error: cannot read input `A` from `{dir}`: it is a directory, not a regular file\n"
        )
    );
}

#[test]
fn not_an_input() {
    let m = matmul();
    let (ia, ib, ic) = (
        format!("A={}", m.a),
        format!("B={}", m.b),
        format!("C={}", m.a),
    );
    rejected(
        &m,
        &["--in", &ia, "--in", &ib, "--in", &ic],
        "error: [E0602] `C` is not an input of the program (only `input` and `inout` variables take a value)",
    );
    let iz = format!("Z={}", m.a);
    rejected(
        &m,
        &["--in", &ia, "--in", &ib, "--in", &iz],
        "error: [E0601] `Z` is not a variable of the program",
    );
}

#[test]
fn usage_errors_exit_2() {
    let m = matmul();
    let o = teil(&["run", &data("matmul.teil"), "--in", &m.a]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("should be `--in NAME=FILE.npy`"),
        "{}",
        stderr(&o)
    );
    let o = teil(&["run", &m.dir.join("missing.teil").to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    let ia = format!("A={}", m.a);
    let o = teil(&["run", &data("matmul.teil"), "--in", &ia, "--in", &ia]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`--in` gives `A` twice"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn ill_typed_program_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "bad.teil",
        b"var A : [2 3]\nvar C : [2 3]\nC = A ^[1 2]\n",
    );
    let o = teil(&["run", &f, "--random-inputs", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("E0"), "{}", stderr(&o));
}

#[test]
fn trace_unfolds_fig7() {
    let o = teil(&[
        "trace",
        &data("matmul.teil"),
        "C[1,2]",
        "--random-inputs",
        "7",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
    let o = teil(&["trace", &data("trace_of_product.teil"), "s"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn trace_errors() {
    let o = teil(&["trace", &data("matmul.teil"), "C[3,1]"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(
        "error: `C` has shape [2, 2]; [3, 1] is not one of its cells (indices are 1-based)"
    ));
    let o = teil(&["trace", &data("matmul.teil"), "C[1;2]"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot read the cell `C[1;2]`"),
        "{}",
        stderr(&o)
    );
}

/// The flag policy covers every way flags reach the compiler (issue 42): `--cflags`,
/// `TEIL_EXTRA_CFLAGS`, and environment variables under which the compiler edits its own
/// command line. Each is refused with exit 2, naming the word or the variable, and nothing
/// is written.
#[test]
fn value_changing_flags_and_compiler_environments_are_refused() {
    let cases: [(&[&str], (&str, &str), &str); 4] = [
        (
            &["--cflags", "-O3 -Xclang -mreassociate"],
            ("", ""),
            "`-Xclang` is refused",
        ),
        (
            &[],
            ("TEIL_EXTRA_CFLAGS", "-Wp,-ffast-math -U__FAST_MATH__"),
            "`-Wp,-ffast-math` is refused",
        ),
        (
            &[],
            ("CCC_OVERRIDE_OPTIONS", "+-Xclang +-mreassociate"),
            "not run while `CCC_OVERRIDE_OPTIONS` is set",
        ),
        (
            &[],
            ("GCC_EXEC_PREFIX", "/tmp/stages/"),
            "not run while `GCC_EXEC_PREFIX` is set",
        ),
    ];
    for (flags, (var, value), message) in cases {
        let m = matmul();
        let (ia, ib) = (format!("A={}", m.a), format!("B={}", m.b));
        let out = m.out.to_string_lossy().into_owned();
        let prog = data("matmul.teil");
        let mut args = vec!["run", &prog[..], "--in", &ia, "--in", &ib, "--out", &out];
        args.extend_from_slice(&["--backend", "c"]);
        args.extend_from_slice(flags);
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_teil"));
        cmd.args(&args).env("NO_COLOR", "1");
        if !var.is_empty() {
            cmd.env(var, value);
        }
        let o = cmd.output().expect("teil runs");
        assert_eq!(o.status.code(), Some(2), "{message}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{message}: {}", stderr(&o));
        assert!(stderr(&o).contains("spec/abi.md"), "{}", stderr(&o));
        assert!(!m.out.exists() || entries(&m.out).is_empty());
    }
}

/// `f32` variables: a float32 file in, a float32 file out (NumPy's header, binary32 bytes),
/// binary32's digits on the terminal, and a float64 file for an `f32` input refused with E0605
/// and nothing written.
#[test]
fn float32_variables_read_and_write_float32_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = write(
        dir,
        "p.teil",
        b"input alloc X : f32[2]\noutput alloc Y : f32[2]\noutput alloc Z : [2]\n\
          Y = 0.1 * exp X\nZ = f64 Y\n",
    );
    let x32: Vec<u8> = [0.0f32, 1.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let x = write(dir, "x.npy", &npy("<f4", &[2], &x32));
    let out = dir.join("out");
    let o = teil(&[
        "run",
        &prog,
        "--in",
        &format!("X={x}"),
        "--out",
        &out.to_string_lossy(),
        "--print",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // exp in binary32 (correctly rounded: e rounds to 2.7182817f32), then one binary32 product
    // with the literal 0.1 rounded to binary32.
    let y = [0.1f32, std::f32::consts::E * 0.1f32];
    let y_bytes: Vec<u8> = y.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(
        std::fs::read(out.join("Y.npy")).unwrap(),
        npy("<f4", &[2], &y_bytes)
    );
    assert_eq!(
        read_f64s(&out.join("Z.npy"), &[2]),
        vec![y[0] as f64, y[1] as f64]
    );
    // Binary32's shortest digits for the f32 output, binary64's for the same values widened.
    assert_eq!(
        stdout(&o),
        "Y : f32[2] =\n[       0.1, 0.27182817]\n\
         Z : [2] =\n[0.10000000149011612, 0.27182817459106445]\n"
    );

    let x64 = write(dir, "x64.npy", &f64s(&[2], &[0.0, 1.0]));
    let out2 = dir.join("out2");
    let o = teil(&[
        "run",
        &prog,
        "--in",
        &format!("X={x64}"),
        "--out",
        &out2.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("error: [E0605] input `X` is declared f32 but holds float64 data (in `{x64}`)\n")
    );
    assert!(!out2.exists(), "nothing written");
}

/// The C backend computes element types and functions with the oracle's bits: `teil run
/// --backend c` (any padding, fma mode) writes the same float32 file as the evaluators, and
/// `teil emit-c --math DIR` gives C that a plain `cc` compiles and links with the CORE-MATH
/// files it wrote, which computes the same bits (spec/abi.md).
#[test]
fn the_c_backend_computes_element_types_and_functions_with_the_oracles_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = write(
        dir,
        "p.teil",
        b"input alloc X : f32[3]\noutput alloc Y : f32[3]\noutput alloc Z : [3]\n\
          Y = 0.1 * exp X + max X (tanh X)\nZ = erf (f64 Y) + log (abs (f64 X))\n",
    );
    let xs = [0.0f32, 1.0, -88.5];
    let x32: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
    let x = write(dir, "x.npy", &npy("<f4", &[3], &x32));
    let run = |extra: &[&str], out: &Path| {
        let mut args = vec!["run", &prog[..], "--in"];
        let given = format!("X={x}");
        args.push(&given);
        let out = out.to_string_lossy().into_owned();
        args.extend(["--out", &out]);
        args.extend(extra);
        let o = teil(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
    };
    let reference = dir.join("fast");
    run(&[], &reference);
    let y = std::fs::read(reference.join("Y.npy")).unwrap();
    let z = std::fs::read(reference.join("Z.npy")).unwrap();
    for (k, extra) in [
        &["--backend", "c"][..],
        &["--backend", "c", "--pad", "4"],
        &["--backend", "c", "--pad", "4", "--fma"],
        &["--backend", "oracle"],
    ]
    .iter()
    .enumerate()
    {
        let out = dir.join(format!("out{k}"));
        run(extra, &out);
        assert_eq!(std::fs::read(out.join("Y.npy")).unwrap(), y, "{extra:?}");
        assert_eq!(std::fs::read(out.join("Z.npy")).unwrap(), z, "{extra:?}");
    }

    // The emitted C with the CORE-MATH files it calls, compiled by hand.
    let math = dir.join("math");
    let kernel_c = dir.join("kernel.c");
    let o = teil(&[
        "emit-c",
        &prog,
        "-o",
        &kernel_c.to_string_lossy(),
        "--math",
        &math.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut wrappers: Vec<String> = entries(&math)
        .into_iter()
        .filter(|n| n.ends_with(".c"))
        .collect();
    wrappers.sort();
    assert_eq!(
        wrappers,
        ["cr_erf.c", "cr_expf.c", "cr_log.c", "cr_tanhf.c"]
    );
    let main_c = write(
        dir,
        "main.c",
        b"#include <stdio.h>\n#include <string.h>\n\
          void teil_kernel(float *restrict X, float *restrict Y, double *restrict Z);\n\
          int main(void) {\n\
          float x[3] = {0.0f, 1.0f, -88.5f}, y[3]; double z[3]; int i;\n\
          teil_kernel(x, y, z);\n\
          for (i = 0; i < 3; i++) { unsigned int b; unsigned long long c;\n\
          memcpy(&b, &y[i], 4); memcpy(&c, &z[i], 8); printf(\"%08x %016llx\\n\", b, c); }\n\
          return 0; }\n",
    );
    let exe = dir.join("kernel");
    let mut cc = std::process::Command::new("cc");
    cc.args(["-std=c99", "-O2", "-o"])
        .arg(&exe)
        .arg(&main_c)
        .arg(&kernel_c);
    for w in &wrappers {
        cc.arg(math.join(w));
    }
    let compiled = cc.arg("-lm").output().expect("cc runs");
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let ran = std::process::Command::new(&exe).output().expect("runs");
    assert!(ran.status.success());
    let payload = |npy: &[u8], width: usize| -> Vec<String> {
        npy[npy.len() - 3 * width..]
            .chunks(width)
            .map(|c| {
                let mut v = [0u8; 8];
                v[..width].copy_from_slice(c);
                format!("{:0w$x}", u64::from_le_bytes(v), w = 2 * width)
            })
            .collect()
    };
    let want: Vec<String> = payload(&y, 4)
        .iter()
        .zip(payload(&z, 8))
        .map(|(a, b)| format!("{a} {b}\n"))
        .collect();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), want.concat());
}
