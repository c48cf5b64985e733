//! Hostile inputs: evaluation. Work and memory budgets of the evaluators and `trace`, fallible
//! allocation (spec/limits.md, "Evaluation budgets"). Every case runs under the harness's
//! `RLIMIT_AS` (2 GiB) and deadline (10 s) and must end with a coded error or a correct result.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `dir/name` with `text`; returns its path as a string.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test file");
    p.to_string_lossy().into_owned()
}

/// `s = red+ 1 (expa 1 5 (...))` nested `depth` deep on `A : [10]` (the issue's item 1).
fn tower(depth: usize) -> String {
    let mut e = "red+ 1 A".to_string();
    for _ in 0..depth {
        e = format!("red+ 1 (expa 1 5 ({e}))");
    }
    format!("alloc A : [10]\nalloc s : []\ns = {e}\n")
}

/// Four nested `red+ 1 (expa 1 1000 ...)` on `A : [10]` (the issue's item 6): 4 · 10^13
/// oracle steps, 10^12 times `A` as the result.
fn expansions() -> String {
    let mut e = "A".to_string();
    for _ in 0..4 {
        e = format!("red+ 1 (expa 1 1000 ({e}))");
    }
    format!("input alloc A : [10]\noutput alloc B : [10]\nB = {e}\n")
}

fn vector(v: Vec<f64>) -> teil_interp::Tensor {
    teil_interp::Tensor::from_shape_vec(vec![v.len()], v).unwrap()
}

fn lines_of(s: &str) -> Vec<&str> {
    s.lines().collect()
}

/// Issue 23: `(red+ 1 (expa 1 5 ...A))` nested `depth` deep on `A : [10]`, a vector of 10.
fn issue_tower(depth: usize) -> String {
    let mut e = "A".to_string();
    for _ in 0..depth {
        e = format!("(red+ 1 (expa 1 5 {e}))");
    }
    format!("alloc A : [10]\nalloc s : [10]\ns = {e}\n")
}

/// Issue 23: the default work budget (10^8 steps, a few seconds) refuses at once a 270-byte
/// program whose trace kept the oracle busy for 95 s under the old default (10^9); the flag
/// raises it, to the exact step.
#[test]
fn the_default_work_budget_is_a_few_seconds() {
    assert_eq!(teil_interp::budget::DEFAULT_MAX_WORK, 100_000_000);
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p12.teil", &issue_tower(12));
    assert!(std::fs::metadata(&file).unwrap().len() < 300);
    // One cell for the trace, the ten of `s` for the run.
    for (args, steps) in [
        (
            &["trace", &file, "s[1]", "--random-inputs", "1"][..],
            976_562_497u64,
        ),
        (
            &["run", &file, "--backend", "oracle", "--random-inputs", "1"][..],
            9_765_624_970,
        ),
    ] {
        let o = Case::new(args.iter().copied()).run();
        o.exits(1)
            .reports("E0702")
            .within_cpu(Duration::from_secs(2));
        assert!(
            o.stderr.contains(&format!(
                "needs {steps} evaluation steps, over the work budget of 100000000"
            )),
            "{args:?}: {}",
            o.stderr
        );
        assert!(o.stdout.is_empty());
    }
    // A smaller tower, 12497 steps for one cell: the flag raises the budget, inclusively.
    let file = write(dir.path(), "p5.teil", &issue_tower(5));
    let trace = |budget: &str| {
        Case::new([
            "trace",
            &file,
            "s[1]",
            "--random-inputs",
            "1",
            "--max-work",
            budget,
        ])
        .run()
    };
    let o = trace("12496");
    o.exits(1).reports("E0702");
    assert!(
        o.stderr
            .contains("needs 12497 evaluation steps, over the work budget of 12496"),
        "{}",
        o.stderr
    );
    let o = trace("12497");
    o.exits(0);
    // 5^5 times A[1] = 2 (`--random-inputs 1`), as `teil run` computes it.
    let last = lines_of(&o.stdout).last().unwrap().trim_start().to_string();
    assert!(
        last.starts_with("= 6250 ") && last.ends_with("[arithmetic]"),
        "{last}"
    );
    let o = Case::new(["run", &file, "--random-inputs", "1"]).run();
    o.exits(0);
    assert!(
        o.stdout.contains("s : [10] =\n[ 6250, -3125,"),
        "{}",
        o.stdout
    );
}

#[test]
fn trace_of_a_deep_tower_is_linear_without_values_and_refused_with_them() {
    let dir = tempfile::tempdir().unwrap();
    // 127 levels of 4 nodes: just within the nesting limit of 512 (E0005).
    let depths: &[usize] = if long_mode() {
        &[12, 60, 127]
    } else {
        &[12, 60]
    };
    for &depth in depths {
        let file = write(dir.path(), &format!("t{depth}.teil"), &tower(depth));
        // Symbolic: one line per expression node (4 per level, 2 for `red+ 1 A`, the first and
        // the note), each no wider than the first.
        let o = Case::new(["trace", &file, "s"]).run();
        o.exits(0).within_cpu(Duration::from_secs(5));
        let lines = lines_of(&o.stdout);
        assert_eq!(lines.len(), 1 + 4 * depth + 2 + 1, "depth {depth}");
        assert!(lines[lines.len() - 2].ends_with("[S-Var]"));
        // Every line is padded to the widest, which is the first (the whole statement) but for
        // the bound variables' names: linear in the program, not exponential.
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() <= width + 2 * depth));
        assert!(o.stdout.len() < 4 * lines.len() * (width + 2 * depth + 1));
        // A smaller output budget refuses it, with nothing printed.
        let o = Case::new(["trace", &file, "s", "--max-output", "1K"]).run();
        o.exits(1).reports("E0705");
        assert!(o.stdout.is_empty());
        // With values: 5^depth · 10 reads through the oracle, refused before it starts.
        let o = Case::new(["trace", &file, "s", "--random-inputs", "1"]).run();
        o.exits(1)
            .reports("E0702")
            .within_cpu(Duration::from_secs(5));
        assert!(o.stdout.is_empty(), "{}", o.stdout);
    }
}

#[test]
fn trace_values_of_a_small_tower_elide_the_expansion() {
    let dir = tempfile::tempdir().unwrap();
    // Depth 7: 5^7 · 10 = 781250 reads (within the work budget), 3^7 · 3 = 6561 terms if
    // expanded: more than 1,000, so only the value is shown.
    let file = write(dir.path(), "t7.teil", &tower(7));
    let o = Case::new(["trace", &file, "s", "--in", "A=a.npy"])
        .cwd(dir.path())
        .run();
    // No a.npy yet: an input file that cannot be read, an I/O problem.
    o.exits(2);
    let ones = teil_io::npy::to_bytes(&vector(vec![1.0; 10]));
    std::fs::write(dir.path().join("a.npy"), ones).unwrap();
    let o = Case::new(["trace", &file, "s", "--in", "A=a.npy"])
        .cwd(dir.path())
        .run();
    o.exits(0);
    assert!(o
        .stdout
        .contains("the expansion would show 6561 terms, more than 1000"));
    assert!(!o.stdout.contains("[expand]"));
    // 5^7 · 10 ones.
    let last: Vec<&str> = lines_of(&o.stdout)
        .last()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(last, ["=", "781250", "[arithmetic]"]);
    assert!(o.stdout.len() < 200_000, "{} bytes", o.stdout.len());
}

#[test]
fn the_oracle_refuses_nested_expansions_and_the_fast_evaluator_computes_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "x.teil", &expansions());
    let o = Case::new(["run", &file, "--oracle", "--random-inputs", "1"]).run();
    o.exits(1)
        .reports("E0702")
        .within_cpu(Duration::from_secs(5));
    assert!(
        o.stderr.contains("40040040040010 evaluation steps"),
        "{}",
        o.stderr
    );
    // The budget is a flag: a smaller one refuses smaller programs.
    let small = write(
        dir.path(),
        "s.teil",
        "input alloc A : [10]\noutput alloc B : [10]\nB = red+ 1 (expa 1 1000 A)\n",
    );
    let o = Case::new([
        "run",
        &small,
        "--oracle",
        "--random-inputs",
        "1",
        "--max-work",
        "30009",
    ])
    .run();
    o.exits(1).reports("E0702");
    let o = Case::new([
        "run",
        &small,
        "--oracle",
        "--random-inputs",
        "1",
        "--max-work",
        "30010",
    ])
    .run();
    o.exits(0);
    // The fast evaluator shares sub-results: every cell is 10^12 times A's.
    let o = Case::new(["run", &file, "--in", "A=a.npy"])
        .cwd(dir.path())
        .run();
    // No a.npy yet: an input file that cannot be read, an I/O problem.
    o.exits(2);
    let a = vector((1..=10).map(f64::from).collect());
    std::fs::write(dir.path().join("a.npy"), teil_io::npy::to_bytes(&a)).unwrap();
    let o = Case::new(["run", &file, "--in", "A=a.npy", "--out", "out"])
        .cwd(dir.path())
        .run();
    o.exits(0).within_cpu(Duration::from_secs(5));
    let b = teil_io::npy::read(&dir.path().join("out/B.npy")).unwrap();
    assert_eq!(b, a * 1e12);
}

#[test]
fn fuzz_replay_of_nested_expansions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A reproducer as `teil fuzz` writes it (fuzz/src/repro.rs): header, replay line, program,
    // and its inputs in `repro_7/`.
    let text = format!(
        "// teil fuzz reproducer: the oracle\n// run again with: teil fuzz --replay repro_7.teil\n\
         // fuzz-replay: seed=7 pads=1\n{}",
        expansions()
    );
    let file = write(dir.path(), "repro_7.teil", &text);
    std::fs::create_dir(dir.path().join("repro_7")).unwrap();
    let a = vector(vec![1.0; 10]);
    std::fs::write(dir.path().join("repro_7/A.npy"), teil_io::npy::to_bytes(&a)).unwrap();
    let o = Case::new(["fuzz", "--replay", &file]).run();
    o.reports("E0702").within_cpu(Duration::from_secs(5));
    assert!(o.status.code().is_some(), "{:?}", o.status);
    assert_ne!(o.status.code(), Some(0));
    assert!(!o.stderr.contains("panicked"));
}

/// `A : [2^31]`: 16 GiB of doubles, over the default budget (half of the 2 GiB limit).
const HUGE: &str = "input alloc A : [2147483648]\noutput alloc s : []\ns = red+ 1 A\n";
/// `A : [2^28]`: 2 GiB of doubles, within a raised budget but not within `RLIMIT_AS`.
const BIG: &str = "input alloc A : [268435456]\noutput alloc s : []\ns = red+ 1 A\n";

#[test]
fn random_inputs_over_the_budget_name_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "huge.teil", HUGE);
    for backend in [&[][..], &["--oracle"][..], &["--backend", "c"][..]] {
        let mut args = vec!["run", file.as_str(), "--random-inputs", "1"];
        args.extend_from_slice(backend);
        let o = Case::new(args).run();
        o.exits(1)
            .reports("E0701")
            .within_cpu(Duration::from_secs(5));
        // The issue's item 8: the tensor and its size, not "missing input".
        assert!(!o.stderr.contains("missing input"), "{}", o.stderr);
        assert!(
            o.stderr.contains("`A` with 2147483648 cells (16.0 GiB"),
            "{}",
            o.stderr
        );
    }
    // Over the address-space limit but within a raised budget: a coded error, not an abort.
    let file = write(dir.path(), "big.teil", BIG);
    let o = Case::new(["run", &file, "--random-inputs", "1", "--max-memory", "1T"]).run();
    o.exits(1).reports("E0703");
    assert!(!o.stderr.contains("missing input"), "{}", o.stderr);
}

#[test]
fn the_fast_store_over_the_address_space_limit_is_a_coded_error() {
    let dir = tempfile::tempdir().unwrap();
    // One scalar input; the store alone is 2 GiB (the oracle's 4 GiB).
    let file = write(
        dir.path(),
        "store.teil",
        "input alloc x : []\noutput alloc A : [268435456]\nA = expa 1 268435456 x\n",
    );
    for extra in [&[][..], &["--oracle"][..]] {
        let mut args = vec![
            "run",
            file.as_str(),
            "--random-inputs",
            "1",
            "--max-memory",
            "1T",
            "--max-work",
            "1e12",
        ];
        args.extend_from_slice(extra);
        let o = Case::new(args).run();
        o.exits(1).reports("E0703");
    }
    let o = Case::new(["run", &file, "--random-inputs", "1"]).run();
    o.exits(1).reports("E0701");
}

/// A sparse `.npy` file of `cells` doubles (its header is real, its data zeros on disk).
fn sparse_npy(path: &Path, cells: u64) {
    let header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({cells},), }}");
    let mut h = header.clone();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    let f = std::fs::File::create(path).unwrap();
    std::io::Write::write_all(&mut &f, &bytes).unwrap();
    f.set_len(bytes.len() as u64 + 8 * cells).unwrap();
}

#[test]
fn npy_inputs_over_the_budget_or_the_address_space_are_coded_errors() {
    let dir = tempfile::tempdir().unwrap();
    let huge = write(dir.path(), "huge.teil", HUGE);
    let npy: PathBuf = dir.path().join("a.npy");
    sparse_npy(&npy, 1 << 31);
    // Refused from the declaration before the file is read.
    let o = Case::new(["run", &huge, "--in", "A=a.npy"])
        .cwd(dir.path())
        .run();
    o.exits(1)
        .reports("E0701")
        .within_cpu(Duration::from_secs(5));
    // Within a raised budget: the file (16 GiB) cannot be read into 2 GiB.
    let o = Case::new(["run", &huge, "--in", "A=a.npy", "--max-memory", "1T"])
        .cwd(dir.path())
        .run();
    o.exits(1).reports("E0703");
    let big = write(dir.path(), "big.teil", BIG);
    sparse_npy(&npy, 1 << 28);
    let o = Case::new(["run", &big, "--in", "A=a.npy", "--max-memory", "1T"])
        .cwd(dir.path())
        .run();
    o.exits(1).reports("E0703");
}

/// Report Fig. 6 (7.2 · 10^12 cells per tensor) checks, and every evaluator refuses it before
/// allocating.
#[test]
fn report_fig06_checks_and_is_refused_by_the_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "fig6.teil",
        "var u : [200 300 400 500 600]\nvar v : [200 500 400 300 600]\nv = u ^ [2 4]\n",
    );
    Case::new(["check", &file]).run().exits(0);
    for extra in [&[][..], &["--oracle"][..], &["--max-memory", "100T"][..]] {
        let mut args = vec!["run", file.as_str(), "--random-inputs", "1"];
        args.extend_from_slice(extra);
        let o = Case::new(args).run();
        o.exits(1).within_cpu(Duration::from_secs(5));
        assert!(
            o.stderr.contains("E0701") || o.stderr.contains("E0703"),
            "{}",
            o.stderr
        );
    }
    let o = Case::new(["trace", &file, "v[1, 1, 1, 1, 1]", "--random-inputs", "1"]).run();
    o.exits(1).reports("E0701");
}

/// The issue's item 12: an empty index is a usage error, not `C[1,2]`.
#[test]
fn an_empty_index_in_a_cell_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "c.teil",
        "alloc A : [2, 2]\nalloc C : [2, 2]\nC = A ^[1 2]\n",
    );
    for cell in ["C[1,,2]", "C[1,2,]", "C[,1,2]"] {
        let o = Case::new(["trace", &file, cell]).run();
        o.exits(2);
        assert!(
            o.stderr.contains(&format!("cannot read the cell `{cell}`")),
            "{}",
            o.stderr
        );
        assert!(o.stdout.is_empty());
    }
    let o = Case::new(["trace", &file, "C[1, 2]"]).run();
    o.exits(0);
    assert!(
        o.stdout.starts_with("C[1, 2] = ⟦transp 1 2 A⟧[1, 2]"),
        "{}",
        o.stdout
    );
}

/// A declaration the checker accepts (under 2^63 - 1 cells) but whose buffer the C backend
/// cannot address (over 2^60 - 1 doubles): a coded refusal from `emit-c` and `run --backend c`.
#[test]
fn the_c_backend_refuses_buffers_it_cannot_address() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "c.teil",
        "alloc A : [4294967296, 2147483647]\nalloc s : []\ns = red+ 1 (red+ 1 A)\n",
    );
    Case::new(["check", &file]).run().exits(0);
    let o = Case::new(["emit-c", &file]).run();
    o.exits(2).reports("E0706");
    assert!(o.stdout.is_empty());
    let o = Case::new(["run", &file, "--backend", "c"]).run();
    o.exits(1).reports("E0701");
    // Issue 23: the limit is what C needs, a buffer's size in bytes within `ptrdiff_t`
    // (2^63 - 1): at most 2^60 - 1 doubles, counted after padding.
    let program = |n: u64| format!("alloc A : [{n}]\nalloc s : []\ns = red+ 1 A\n");
    let largest = (1u64 << 60) - 1;
    let file = write(dir.path(), "largest.teil", &program(largest));
    let o = Case::new(["emit-c", &file]).run();
    o.exits(0);
    assert!(
        o.stdout.contains(&format!("i0 < {largest}")),
        "{}",
        o.stdout
    );
    let o = Case::new(["emit-c", &file, "--pad", "2"]).run();
    o.exits(2).reports("E0706");
    assert!(
        o.stderr.contains(
            "`A` is too large for the C backend once padded (more than 2^60 - 1 elements: \
             its size in bytes would not fit a signed 64-bit `ptrdiff_t`)"
        ),
        "{}",
        o.stderr
    );
    let file = write(dir.path(), "over.teil", &program(largest + 1));
    Case::new(["emit-c", &file])
        .run()
        .exits(2)
        .reports("error: [E0706] ");
}

#[test]
fn programs_with_many_declarations_take_linear_time() {
    // Issue 24, item 11: 40,000 unqualified declarations (every one an input and an output,
    // asked for each declaration) took 25 s in `emit-c` and 47 s in `run` (debug build); the
    // checked program now answers in constant time per declaration.
    let dir = tempfile::tempdir().unwrap();
    let n = 40_000;
    let mut src = String::new();
    for k in 0..n {
        src += &format!("var x{k} : [1]\n");
    }
    src += &format!("x0 = x1 + x{}\n", n - 1);
    let file = write(dir.path(), "decls.teil", &src);
    for args in [
        vec!["check", &file],
        vec!["emit-c", &file],
        vec!["run", &file, "--random-inputs", "1"],
    ] {
        let o = Case::new(args.clone()).run();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", o.stderr);
        assert!(
            o.cpu < Duration::from_secs(5),
            "{args:?}: {:?} of CPU",
            o.cpu
        );
    }
}

#[test]
fn warnings_about_undefined_outputs_grow_linearly() {
    // Issue 24, item 10: 5,000 outputs no statement assigns; each warning listed every one of
    // them as a source (1.39 GB of warnings). Now each names its own.
    let dir = tempfile::tempdir().unwrap();
    let n = 5_000;
    let mut src = String::from("input var a : [1]\nvar t : [1]\n");
    for k in 0..n {
        src += &format!("output var y{k} : [1]\n");
    }
    src += "y0 = a + t\n";
    let file = write(dir.path(), "outputs.teil", &src);
    let o = Case::new(["run", &file, "--random-inputs", "1"]).run();
    assert_eq!(o.status.code(), Some(0), "{}", o.stderr);
    let warnings: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), n);
    assert_eq!(
        warnings[0],
        "warning: `y0` has 1 undefined cell, written as NaN (the first is y0[1]); they come \
         from `t`, which was read before it was assigned"
    );
    assert_eq!(
        warnings[1],
        "warning: `y1` has 1 undefined cell, written as NaN (the first is y1[1]); they come \
         from `y1` itself, which no statement assigns"
    );
    assert!(
        o.stderr.len() < 400 * n,
        "{} bytes of warnings",
        o.stderr.len()
    );
}
