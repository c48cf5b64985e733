//! Builds the benchmark suite of PERFORMANCE.md: each kernel as one TeIL statement, lowered by
//! the C backend, compiled with a timing harness into its own executable.
//!
//! ```text
//! cargo run --release -p teil-cbackend --example bench_suite -- [--out DIR] [--pad M,M,...]
//!     [--cc CC] [--cflags "FLAGS"] [--plain | --tuning LIST] [--openmp] [--only NAME,NAME]
//!     [--run]
//! ```
//!
//! `bench/run` calls this and then `bench/numpy_bench.py`, which reads `DIR/manifest.json`,
//! runs every executable, times NumPy on the same inputs, checks the results against each other
//! and prints the table. With `--run` this example also runs the executables itself and prints
//! the TeIL times alone (no Python needed).
//!
//! Each executable fills the inputs' logical cells with the same deterministic values as the
//! NumPy script (`fill` below), calls the kernel once and writes the output's logical cells to a
//! file (for the comparison), then times kernel calls only: every call is timed on its own with
//! `clock_gettime(CLOCK_MONOTONIC)`, for at least `MIN_SECONDS` and at least 5 calls, and the
//! minimum and the median are printed. Compilation, input generation and I/O are not timed; the
//! kernel's own workspace allocation is (it is part of the call).
//!
//! `--plain` lowers without the optimisations of `teil_cbackend::opt` (the baseline of
//! PERFORMANCE.md), `--tuning contract,order,split,tile` with only those named, `--pad` chooses
//! the padding multiples (default 1). `--openmp` adds parallel outer loops (`Tuning::openmp`)
//! and compiles with `-fopenmp`; the number of threads is then `OMP_NUM_THREADS`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use teil_cbackend::ir::{Kernel, Role};
use teil_cbackend::Options;

/// One benchmark kernel.
struct Bench {
    name: &'static str,
    /// The einsum equation NumPy runs (`matmul` means `np.matmul`).
    einsum: &'static str,
    numpy: &'static str,
    /// Operands in einsum order: TeIL name and shape.
    operands: Vec<(&'static str, Vec<u64>)>,
    output: (&'static str, Vec<u64>),
    /// The TeIL statement, prefix form.
    statement: &'static str,
    /// Largest acceptable TeIL/NumPy time ratio (issue 7).
    target: f64,
}

fn suite() -> Vec<Bench> {
    let sq = |n: u64| vec![n, n];
    vec![
        Bench {
            name: "matmul",
            einsum: "ij,jk->ik",
            numpy: "matmul",
            operands: vec![("A", sq(512)), ("B", sq(512))],
            output: ("C", sq(512)),
            statement: "C = contr 2 3 (prod A B)",
            target: 2.0,
        },
        Bench {
            name: "cfd",
            einsum: "il,jm,kn,elmn->eijk",
            numpy: "einsum",
            operands: vec![
                ("A", sq(12)),
                ("B", sq(12)),
                ("C", sq(12)),
                ("u", vec![400, 12, 12, 12]),
            ],
            output: ("v", vec![400, 12, 12, 12]),
            statement: "v = transp 1 2 (transp 2 3 (transp 3 4 (contr 4 6 (contr 3 7 \
                        (contr 2 8 (prod A (prod B (prod C u))))))))",
            target: 1.0,
        },
        Bench {
            name: "abc",
            einsum: "ai,bj,ck,ijk->abc",
            numpy: "einsum",
            operands: vec![
                ("A", sq(24)),
                ("B", sq(24)),
                ("C", sq(24)),
                ("u", vec![24, 24, 24]),
            ],
            output: ("r", vec![24, 24, 24]),
            statement: "r = contr 4 5 (contr 3 6 (contr 2 7 (prod A (prod B (prod C u)))))",
            target: 1.0,
        },
        Bench {
            name: "ttm",
            einsum: "ijk,kl->ijl",
            numpy: "einsum",
            operands: vec![("X", vec![96, 96, 96]), ("M", vec![96, 64])],
            output: ("Y", vec![96, 96, 64]),
            statement: "Y = contr 3 4 (prod X M)",
            target: 1.0,
        },
        Bench {
            name: "mttkrp",
            einsum: "ijk,jr,kr->ir",
            numpy: "einsum",
            operands: vec![
                ("X", vec![64, 64, 64]),
                ("B", vec![64, 32]),
                ("C", vec![64, 32]),
            ],
            output: ("Y", vec![64, 32]),
            statement: "Y = contr 2 4 (contr 2 4 (diag 5 7 (prod X (prod B C))))",
            target: 1.0,
        },
        Bench {
            name: "transpose",
            einsum: "abc->cba",
            numpy: "einsum",
            operands: vec![("X", vec![256, 256, 64])],
            output: ("Y", vec![64, 256, 256]),
            statement: "Y = transp 1 3 X",
            target: 1.0,
        },
        Bench {
            name: "trace_prod",
            einsum: "ij,ji->",
            numpy: "einsum",
            operands: vec![("A", sq(700)), ("B", sq(700))],
            output: ("s", vec![]),
            statement: "s = contr 1 2 (contr 2 3 (prod A B))",
            target: 1.0,
        },
        Bench {
            name: "batched_matvec",
            einsum: "bij,bj->bi",
            numpy: "einsum",
            operands: vec![("A", vec![256, 128, 128]), ("x", vec![256, 128])],
            output: ("y", vec![256, 128]),
            statement: "y = contr 3 4 (diag 1 4 (prod A x))",
            target: 1.0,
        },
    ]
}

fn extents(s: &[u64]) -> String {
    let parts: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The TeIL program of a benchmark, in prefix syntax.
fn program(b: &Bench) -> String {
    let mut src = String::new();
    for (name, shape) in &b.operands {
        let _ = writeln!(src, "input alloc {name} : {}", extents(shape));
    }
    let _ = writeln!(
        src,
        "output alloc {} : {}",
        b.output.0,
        extents(&b.output.1)
    );
    let _ = writeln!(src, "{}", b.statement);
    src
}

/// Seconds of kernel calls each executable times at least.
const MIN_SECONDS: f64 = 1.0;

/// The timing harness for one kernel: its own translation unit.
fn harness(k: &Kernel, b: &Bench) -> String {
    let mut out = String::from(
        "#define _POSIX_C_SOURCE 200112L\n#include <stdio.h>\n#include <stdlib.h>\n\
         #include <string.h>\n#include <time.h>\n\n",
    );
    let params = vec!["double *restrict"; k.params.len()];
    let _ = writeln!(out, "void {}({});\n", k.name, params.join(", "));
    out.push_str(
        r#"static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double *buffer(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(double)) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(p, 0, (n ? n : 1) * sizeof(double));
    return p;
}

/* The value of logical cell t (row-major, unpadded) of operand `seed`: the same formula as
 * bench/numpy_bench.py, exact in binary64. */
static double value(unsigned long long t, unsigned long long seed)
{
    unsigned long long h = (t * 2654435761ULL + seed * 97ULL) % 4294967296ULL;
    return (double)h / 4294967296.0 - 0.5;
}

/* Visits the logical cells of a padded buffer in row-major order; mode 0 fills, 1 writes. */
static void walk(double *b, int rank, const long long *logical, const long long *padded,
                 unsigned long long seed, FILE *out)
{
    long long idx[32] = {0};
    unsigned long long t = 0;
    int d;
    for (d = 0; d < rank; d++)
        if (logical[d] == 0)
            return;
    for (;;) {
        long long off = 0;
        for (d = 0; d < rank; d++)
            off = off * padded[d] + idx[d];
        if (out == NULL)
            b[off] = value(t, seed);
        else
            fwrite(&b[off], sizeof(double), 1, out);
        t++;
        for (d = rank - 1; d >= 0; d--) {
            if (++idx[d] < logical[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

"#,
    );
    out.push_str("int main(int argc, char **argv)\n{\n");
    let mut calls = Vec::new();
    let mut seed = 0u64;
    for (j, &p) in k.params.iter().enumerate() {
        let buf = k.buffer(p);
        let logical: Vec<String> = buf.logical.iter().map(|n| format!("{n}LL")).collect();
        let padded: Vec<String> = buf.padded.iter().map(|n| format!("{n}LL")).collect();
        let rank = buf.logical.len();
        let _ = writeln!(
            out,
            "    static const long long l{j}[] = {{{}}}, p{j}[] = {{{}}};",
            if rank == 0 {
                "0".into()
            } else {
                logical.join(", ")
            },
            if rank == 0 {
                "0".into()
            } else {
                padded.join(", ")
            },
        );
        let _ = writeln!(out, "    double *b{j} = buffer({}u);", buf.padded_len());
        if matches!(buf.role, Role::Param { input: true, .. }) {
            let _ = writeln!(out, "    walk(b{j}, {rank}, l{j}, p{j}, {seed}u, NULL);");
            seed += 1;
        }
        calls.push(format!("b{j}"));
    }
    let out_param = k
        .params
        .iter()
        .position(|&p| k.buffer(p).var.as_deref() == Some(b.output.0))
        .expect("the output is a parameter");
    let rank = k.buffer(k.params[out_param]).logical.len();
    let call = format!("{}({})", k.name, calls.join(", "));
    let _ = write!(
        out,
        r#"    double min_seconds = argc > 2 ? atof(argv[2]) : {MIN_SECONDS};
    double *times;
    long cap = 1 << 16, n = 0;
    double start, total = 0.0;
    FILE *f;
    if (argc < 2) {{
        fprintf(stderr, "usage: %s OUT [MIN_SECONDS]\n", argv[0]);
        return 2;
    }}
    {call};
    f = fopen(argv[1], "wb");
    if (f == NULL) {{
        fprintf(stderr, "cannot write %s\n", argv[1]);
        return 2;
    }}
    walk(b{out_param}, {rank}, l{out_param}, p{out_param}, 0u, f);
    fclose(f);
    times = malloc((size_t)cap * sizeof(double));
    start = now();
    while ((total < min_seconds || n < 5) && n < cap) {{
        double t0 = now(), t1;
        {call};
        t1 = now();
        times[n++] = t1 - t0;
        total = t1 - start;
    }}
    qsort(times, (size_t)n, sizeof(double), cmp);
    printf("%.9e %.9e %ld\n", times[0], times[n / 2], n);
    return 0;
}}
"#
    );
    out
}

struct Args {
    out: PathBuf,
    pads: Vec<u64>,
    cc: String,
    cflags: Vec<String>,
    plain: bool,
    /// Which optimisations (`--tuning contract,order,split,tile`); `None`: all.
    tuning: Option<teil_cbackend::opt::Tuning>,
    only: Option<Vec<String>>,
    run: bool,
    /// Parallel outer loops (`Tuning::openmp`), compiled with `-fopenmp`.
    openmp: bool,
}

/// Flags of the benchmark build: optimised for this machine, and no contraction of `a * b + c`
/// into fused multiply-adds, so the kernels compute exactly what spec/padding.md says.
const CFLAGS: &str = "-O3 -march=native -ffp-contract=off";

fn args() -> Result<Args, String> {
    let mut a = Args {
        out: PathBuf::from("target/bench"),
        pads: vec![1],
        cc: "cc".to_string(),
        cflags: CFLAGS.split_whitespace().map(str::to_string).collect(),
        plain: false,
        tuning: None,
        only: None,
        run: false,
        openmp: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--out" => a.out = PathBuf::from(value()?),
            "--pad" => {
                a.pads = value()?
                    .split(',')
                    .map(|s| s.trim().parse::<u64>().map_err(|e| format!("--pad: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "--cc" => a.cc = value()?,
            "--cflags" => {
                a.cflags = value()?.split_whitespace().map(str::to_string).collect();
            }
            "--plain" => a.plain = true,
            "--tuning" => {
                let mut t = teil_cbackend::opt::Tuning::none();
                for name in value()?.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    match name {
                        "contract" => t.contract = true,
                        "order" => t.order = true,
                        "split" => t.split = true,
                        "tile" => t.tile = true,
                        "none" => {}
                        other => return Err(format!("--tuning: unknown optimisation `{other}`")),
                    }
                }
                a.tuning = Some(t);
            }
            "--only" => a.only = Some(value()?.split(',').map(str::to_string).collect()),
            "--run" => a.run = true,
            "--openmp" => a.openmp = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(a)
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_shape(s: &[u64]) -> String {
    let parts: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The optimisations the arguments ask for (without OpenMP).
fn tuning(a: &Args) -> teil_cbackend::opt::Tuning {
    match (a.plain, a.tuning) {
        (true, _) => teil_cbackend::opt::Tuning::none(),
        (false, Some(t)) => t,
        (false, None) => teil_cbackend::opt::Tuning::default(),
    }
}

fn build(b: &Bench, pad: u64, a: &Args, dir: &Path) -> Result<(PathBuf, Kernel), String> {
    let src = program(b);
    let (p, _) =
        teil::compile(&src).map_err(|d| format!("{}: does not check: {d:?}\n{src}", b.name))?;
    let opts = Options {
        pad,
        name: format!("bench_{}", b.name),
        lift: true,
        ..Options::default()
    };
    let tuning = teil_cbackend::opt::Tuning {
        openmp: a.openmp,
        ..tuning(a)
    };
    let kernel = teil_cbackend::opt::lower_tuned(&p, &opts, &tuning)
        .map_err(|e| format!("{}: {e}", b.name))?;
    let stem = format!("{}_m{pad}", b.name);
    let kernel_c = dir.join(format!("{stem}.c"));
    let main_c = dir.join(format!("{stem}_main.c"));
    let exe = dir.join(&stem);
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(&kernel_c, teil_cbackend::print::module(&[&kernel]))?;
    write(&main_c, harness(&kernel, b))?;
    let out = Command::new(&a.cc)
        .args(&a.cflags)
        .args(a.openmp.then_some("-fopenmp"))
        .arg("-o")
        .arg(&exe)
        .arg(&kernel_c)
        .arg(&main_c)
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", a.cc))?;
    if !out.status.success() {
        return Err(format!(
            "{}: the C compiler failed:\n{}",
            b.name,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((exe, kernel))
}

fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        eprintln!("error: cannot create {}: {e}", a.out.display());
        std::process::exit(2);
    }
    let dir = std::fs::canonicalize(&a.out).unwrap_or_else(|_| a.out.clone());
    let cc_version = Command::new(&a.cc)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    let mut entries = Vec::new();
    for b in suite() {
        if a.only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == b.name))
        {
            continue;
        }
        let mut builds = Vec::new();
        for &pad in &a.pads {
            match build(&b, pad, &a, &dir) {
                Ok((exe, kernel)) => {
                    eprintln!(
                        "built {} (M = {pad}): {} steps, {} lifted",
                        b.name,
                        kernel.steps.len(),
                        kernel.lifted
                    );
                    if a.run {
                        let res = dir.join(format!("{}_m{pad}.out", b.name));
                        let out = Command::new(&exe).arg(&res).output();
                        match out {
                            Ok(o) if o.status.success() => println!(
                                "{:<16} M = {pad:<3} {}",
                                b.name,
                                String::from_utf8_lossy(&o.stdout).trim()
                            ),
                            Ok(o) => eprintln!(
                                "{}: failed: {}",
                                b.name,
                                String::from_utf8_lossy(&o.stderr)
                            ),
                            Err(e) => eprintln!("{}: cannot run: {e}", b.name),
                        }
                    }
                    builds.push(format!(
                        "{{\"pad\": {pad}, \"exe\": {}, \"out\": {}, \"steps\": {}, \"lifted\": {}}}",
                        json_str(&exe.to_string_lossy()),
                        json_str(&dir.join(format!("{}_m{pad}.out", b.name)).to_string_lossy()),
                        kernel.steps.len(),
                        kernel.lifted
                    ));
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    std::process::exit(1);
                }
            }
        }
        let operands: Vec<String> = b
            .operands
            .iter()
            .map(|(n, s)| {
                format!(
                    "{{\"name\": {}, \"shape\": {}}}",
                    json_str(n),
                    json_shape(s)
                )
            })
            .collect();
        entries.push(format!(
            "  {{\"name\": {}, \"einsum\": {}, \"numpy\": {}, \"statement\": {}, \"target\": {},\n   \
             \"operands\": [{}],\n   \"output\": {{\"name\": {}, \"shape\": {}}},\n   \"builds\": [{}]}}",
            json_str(b.name),
            json_str(b.einsum),
            json_str(b.numpy),
            json_str(b.statement),
            b.target,
            operands.join(", "),
            json_str(b.output.0),
            json_shape(&b.output.1),
            builds.join(", ")
        ));
    }
    let manifest = format!(
        "{{\"cc\": {}, \"cflags\": {}, \"plain\": {}, \"tuning\": {}, \"min_seconds\": {MIN_SECONDS},\n \"kernels\": [\n{}\n]}}\n",
        json_str(&format!("{} ({cc_version})", a.cc)),
        json_str(&a.cflags.join(" ")),
        a.plain,
        json_str(&format!(
            "{:?}",
            teil_cbackend::opt::Tuning {
                openmp: a.openmp,
                ..tuning(&a)
            }
        )),
        entries.join(",\n")
    );
    let path = dir.join("manifest.json");
    let tmp = dir.join("manifest.json.tmp");
    if let Err(e) = std::fs::write(&tmp, manifest).and_then(|_| std::fs::rename(&tmp, &path)) {
        eprintln!("error: cannot write {}: {e}", path.display());
        std::process::exit(2);
    }
    eprintln!("manifest: {}", path.display());
}
