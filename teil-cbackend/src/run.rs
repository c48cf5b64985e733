//! Compiling generated kernels with the system C compiler and running them.
//!
//! Kernels and the generated [`driver`](crate::driver) are written to a private scratch
//! directory ([`StagingDir::scratch`]: removed on return, and by a later run if this one is
//! killed), compiled with `CC FLAGS... -o driver kernels.c driver.c` (no shell), and the
//! driver runs as a separate process, so sanitizer-instrumented builds
//! (`-fsanitize=address,undefined`) work and cannot disturb the Rust process. Many kernels and
//! many jobs go into one compilation and one process ([`run_batch`]).
//!
//! When the compiler or the driver fails, the directory is kept (renamed to `teil-cc-*` in the
//! temporary directory) and its path is part of the error, so the generated source can be
//! inspected.
//!
//! Every child process is supervised ([`supervise`], through [`teil_io::process`]): it runs
//! in a process group of its own (the compiler starts `cc1`, `as` and `ld` below it), is
//! bounded by [`Toolchain::timeout`], and is stopped when [`Toolchain::cancel`] is set (a signal handler sets it); in both cases
//! the whole group is killed, so no orphan survives, and the directory is removed, because
//! nothing in it explains a time-out and `teil emit-c` reproduces the source. The run then ends
//! with [`DriverError::TimedOut`] or [`DriverError::Interrupted`] through the ordinary return path, so
//! the temporary directory's `Drop` runs.

use crate::ir::{Kernel, Role};
use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use teil_io::files::StagingDir;
use teil_io::process::{Group, Stopped};

/// The value the runner writes into the logical cells of output-only parameters before a call.
/// The ABI leaves them unspecified; a recognisable finite value makes a kernel that forgets to
/// write one visible.
pub const OUTPUT_CANARY: f64 = 7.25e300;

/// The bound on each compiler run and each driver run unless configured otherwise
/// (`--cc-timeout`): far above any kernel the toolchain compiles (a 50-program fuzzing batch
/// compiles in well under a second), short enough that a hung compiler is noticed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Which C compiler to run, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// The compiler command, looked up on `PATH` (default `cc`).
    pub cc: String,
    /// Flags placed before the sources (default `-O2`).
    pub cflags: Vec<String>,
    /// The bound on each compiler run and on each driver run (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// Stops every run in progress and refuses new ones once set.
    pub cancel: Cancel,
    /// CORE-MATH's units compiled once for every batch of this toolchain ([`CompiledMath`]);
    /// `None`: each batch compiles the units it calls with its kernels.
    pub math: Option<std::sync::Arc<CompiledMath>>,
}

impl Default for Toolchain {
    fn default() -> Self {
        Toolchain {
            cc: "cc".to_string(),
            cflags: vec!["-O2".to_string()],
            timeout: DEFAULT_TIMEOUT,
            cancel: Cancel::default(),
            math: None,
        }
    }
}

/// CORE-MATH's units ([`crate::math`]) compiled to objects once, for a caller that compiles
/// many batches ([`run_batch`]) with one toolchain: a fuzz campaign, whose every batch of
/// programs with functions otherwise compiled `cr_exp.c` and `cr_tanh.c` again (0.8 s of GCC
/// at `-O0`, three times the rest of a batch). Each unit is compiled on first use with the
/// toolchain given to [`CompiledMath::new`] (the campaign's, without a kernel target's flags:
/// the units are correctly rounded whatever the flags, and the objects link with any
/// target's kernels on this machine), in a private directory removed when the last holder
/// drops it. A unit that fails to compile is left to each batch, whose error then names it.
pub struct CompiledMath {
    tc: Toolchain,
    dir: StagingDir,
    objects: std::sync::Mutex<BTreeMap<&'static str, Option<PathBuf>>>,
}

impl CompiledMath {
    pub fn new(tc: &Toolchain) -> std::io::Result<CompiledMath> {
        Ok(CompiledMath {
            tc: Toolchain {
                math: None,
                ..tc.clone()
            },
            dir: StagingDir::scratch()?,
            objects: std::sync::Mutex::new(BTreeMap::new()),
        })
    }

    /// The objects of `units`, compiling those not compiled yet; `None` if one does not
    /// compile.
    fn objects(&self, units: &[&'static crate::math::Unit]) -> Option<Vec<PathBuf>> {
        let mut objects = self.objects.lock().ok()?;
        let mut paths = Vec::with_capacity(units.len());
        for &u in units {
            let object = objects.entry(u.symbol).or_insert_with(|| self.compile(u));
            paths.push(object.clone()?);
        }
        Some(paths)
    }

    fn compile(&self, u: &'static crate::math::Unit) -> Option<PathBuf> {
        let at = self.dir.path().join(u.symbol);
        let wrapper = crate::math::write_units(&at, &[u]).ok()?.pop()?;
        let object = at.join(format!("{}.o", u.symbol));
        let args = [
            OsStr::new("-c"),
            OsStr::new("-o"),
            object.as_os_str(),
            wrapper.as_os_str(),
        ];
        compile(&self.tc, &args, &at, &wrapper).ok()?;
        Some(object)
    }
}

impl std::fmt::Debug for CompiledMath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledMath")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// Two are equal only if they are the same one.
impl PartialEq for CompiledMath {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for CompiledMath {}

/// The cancellation flag of every run (one definition for every supervised process).
pub use teil_io::process::Cancel;

/// The process that did not finish in time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Process {
    /// The C compiler, with the command as given (`--cc`).
    Compiler(String),
    /// The generated driver running the compiled kernels.
    Driver,
}

impl std::fmt::Display for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Process::Compiler(cc) => write!(f, "the C compiler `{cc}`"),
            Process::Driver => f.write_str("the compiled kernel's driver"),
        }
    }
}

impl Toolchain {
    /// Replaces the flags by a whitespace-separated list (`--cflags "-O1 -g"`).
    pub fn with_cflags(mut self, flags: &str) -> Self {
        self.cflags = flags.split_whitespace().map(str::to_string).collect();
        self
    }

    /// Refuses flags that could make the compiled kernels compute other values than the spec
    /// defines (spec/abi.md, "Compiling the C"): only the flags of an allow-list pass
    /// ([`flag_policy`]). Every compilation the backend runs checks them first, and so does
    /// [`crate::shared`] before it looks in its cache. The flags of [`EXTRA_CFLAGS_VAR`] are
    /// checked too, and so is the compiler's environment ([`REFUSED_ENVIRONMENT`]).
    pub fn check_flags(&self) -> Result<(), DriverError> {
        let mut flags = self.cflags.clone();
        flags.extend(extra_cflags());
        flag_policy(&flags).map_err(|(flag, why)| DriverError::UnsafeFlag { flag, why })?;
        for &(var, why) in REFUSED_ENVIRONMENT {
            if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
                return Err(DriverError::UnsafeEnvironment { var, why });
            }
        }
        Ok(())
    }
}

/// Environment variables under which the compiler would compile something else than its
/// command line says, and why: a compilation refuses to run while one is set (and not empty).
/// The variables that only say where headers and libraries are found are not refused but
/// are part of the kernel cache's key ([`crate::shared`]).
pub const REFUSED_ENVIRONMENT: &[(&str, &str)] = &[
    (
        "CCC_OVERRIDE_OPTIONS",
        "Clang edits its own command line by it, past the check of the flags",
    ),
    (
        "QA_OVERRIDE_GCC3_OPTIONS",
        "the compiler driver edits its own command line by it, past the check of the flags",
    ),
    (
        "COMPILER_PATH",
        "GCC looks for its own stages (cc1, as, ld) there first, which then compile unchecked",
    ),
    (
        "GCC_EXEC_PREFIX",
        "GCC looks for its own stages (cc1, as, ld) there first, which then compile unchecked",
    ),
];

/// Passed after every other flag of every compilation: no compiler contracts `a * b + c`
/// into a fused multiply-add that the generated C does not spell (`teil_fma`). The generated
/// C says the same with pragmas ([`crate::print`]); the flag also covers Clang's
/// `-ffp-contract=fast`, under which Clang ignores them. GCC and Clang take the last
/// `-ffp-contract` given.
pub const CONTRACTION_OFF: &str = "-ffp-contract=off";

/// Checks the words of a C compilation's flags against the allow-list of flags known not to
/// change the values kernels compute (spec/abi.md, "Compiling the C"): the first word that is
/// not on it, with why, is the error. Known value-changing flags get their own reason; every
/// other word not on the list (a flag this list does not know, a file name, a flag that
/// passes options on to an inner stage or makes the compiler read a file) is refused too: an
/// allow-list, because a deny-list is defeated by the spellings it does not list
/// (`-Wp,-ffast-math`, `-Xclang -mreassociate`, `-specs=FILE`, an object file that sets
/// flush-to-zero).
pub fn flag_policy(flags: &[String]) -> Result<(), (String, &'static str)> {
    let mut words = flags.iter();
    while let Some(word) = words.next() {
        match classify(word) {
            Word::Allowed => {}
            Word::Refused(why) => return Err((word.clone(), why)),
            Word::Macro(name) if !name.is_empty() => check_macro(word, name)?,
            Word::Path(path) if !path.is_empty() => {}
            // `-I DIR`, `-D NAME`: the argument is the next word, whatever it looks like.
            Word::Path(_) | Word::Macro(_) => {
                let Some(arg) = words.next() else {
                    return Err((word.clone(), "it needs an argument, and none follows"));
                };
                if word == "-D" || word == "-U" {
                    check_macro(&format!("{word} {arg}"), arg)?;
                }
            }
        }
    }
    Ok(())
}

/// What one word of the flags is.
enum Word<'a> {
    Allowed,
    Refused(&'static str),
    /// `-DNAME[=VALUE]` or `-UNAME`, with the rest of the word (empty: the next word).
    Macro(&'a str),
    /// `-IDIR`, `-LDIR`, ...: a directory to search (empty: the next word).
    Path(&'a str),
}

const NOT_LISTED: &str = "it is not on the list of flags known not to change the kernels' \
    values: -O0 to -O3, -Os, -Oz, -Og; -g...; -march=, -mtune=, -mcpu= and instruction-set \
    extensions (-mavx2, -mno-avx512f, ...); warnings (-W..., -w, -pedantic); -std=; -fPIC, \
    -fPIE; -fopenmp; -I, -isystem, -iquote, -idirafter, -L; -lm, -lpthread, -lgomp, -lomp; \
    -fsanitize=...; -D and -U of names that are not reserved; and the code-generation flags \
    spec/abi.md lists";
const REASSOCIATES: &str =
    "it lets the compiler reassociate or simplify floating-point arithmetic, which changes results";
const PASSES_ON: &str = "it passes options on to an inner stage of the compiler (preprocessor, \
    compiler proper, assembler, linker), where this check cannot see them";
const READS_FILE: &str =
    "it makes the compiler read flags, pragmas or programs from a file, which could hold anything";
const X87: &str = "without SSE2, x86 computes doubles on the x87 unit in extended precision, \
    rounding twice";

/// The instruction-set extensions `-mEXT` and `-mno-EXT` may name: they choose instructions,
/// not arithmetic (`-mfma` included: contraction stays off, [`CONTRACTION_OFF`]).
#[rustfmt::skip]
const ISA_EXTENSIONS: &[&str] = &[
    "sse", "sse2", "sse3", "ssse3", "sse4", "sse4.1", "sse4.2", "sse4a", "avx", "avx2", "avx512f",
    "avx512cd", "avx512dq", "avx512bw", "avx512vl", "avx512ifma", "avx512vbmi", "avx512vbmi2",
    "avx512vnni", "avx512bitalg", "avx512vpopcntdq", "avx512bf16", "avx512fp16", "avx10.1",
    "avx10.1-256", "avx10.1-512", "avx10.2", "avxvnni", "fma", "fma4", "f16c", "bmi", "bmi2",
    "popcnt", "lzcnt", "movbe", "adx", "aes", "pclmul", "sha", "xsave", "cx16", "sahf",
];

/// Code-generation flags that do not change floating-point values (GCC's and Clang's
/// spellings), or make the arithmetic stricter.
#[rustfmt::skip]
const CODEGEN: &[&str] = &[
    "-fPIC", "-fpic", "-fPIE", "-fpie", "-fno-pic", "-fno-pie", "-fopenmp", "-fopenmp-simd",
    "-fno-openmp", "-pthread", "-pipe", "-w", "-pedantic", "-pedantic-errors", "-m32", "-m64",
    "-mfpmath=sse", "-fno-strict-aliasing", "-fstrict-aliasing", "-funroll-loops",
    "-funroll-all-loops", "-fno-unroll-loops", "-ftree-vectorize", "-fno-tree-vectorize",
    "-ftree-loop-vectorize", "-fno-tree-loop-vectorize", "-ftree-slp-vectorize",
    "-fno-tree-slp-vectorize", "-fvectorize", "-fno-vectorize", "-fslp-vectorize",
    "-fno-slp-vectorize", "-fomit-frame-pointer", "-fno-omit-frame-pointer", "-fno-inline",
    "-fno-common", "-fno-plt", "-fstack-protector", "-fstack-protector-strong",
    "-fstack-protector-all", "-fno-stack-protector", "-fstack-clash-protection",
    "-fcf-protection", "-fno-math-errno", "-fmath-errno", "-frounding-math", "-fsignaling-nans",
    "-fexcess-precision=standard", "-fno-fast-math", "-ftrapping-math", "-flto", "-fno-lto",
    "-fno-sanitize-recover", "-fsanitize-recover", "-fdiagnostics-color", "-lm", "-lpthread",
    "-lgomp", "-lomp", "-ffp-model=precise", "-ffp-model=strict", "-shared",
];

fn classify(word: &str) -> Word<'_> {
    if !word.starts_with('-') || word == "-" {
        return Word::Refused(if word.starts_with('@') {
            "a response file could hold any flag; give the flags themselves"
        } else {
            "it is not a flag: the compiler would compile or link it in, and an object file can \
             change the floating-point environment (crtfastmath.o turns on flush-to-zero)"
        });
    }
    if let Some(rest) = word.strip_prefix("-D").or_else(|| word.strip_prefix("-U")) {
        return Word::Macro(rest);
    }
    for prefix in ["-isystem", "-iquote", "-idirafter", "-I", "-L"] {
        if let Some(rest) = word.strip_prefix(prefix) {
            return Word::Path(rest);
        }
    }
    let allowed = CODEGEN.contains(&word)
        || word == CONTRACTION_OFF
        || matches!(word, "-O" | "-O0" | "-O1" | "-O2" | "-O3" | "-Os" | "-Oz" | "-Og")
        || word == "-g"
        || (word.starts_with("-g") && word[2..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        || ["-march=", "-mtune=", "-mcpu=", "-std=", "-mprefer-vector-width=",
            "-msve-vector-bits=", "-fsanitize=", "-fno-sanitize=", "-fsanitize-recover=",
            "-fno-sanitize-recover=", "-fvisibility=", "-flto=", "-fcf-protection=",
            "-fdiagnostics-color="]
            .iter()
            .any(|p| word.starts_with(p))
        || word
            .strip_prefix("-mno-")
            .is_some_and(|e| ISA_EXTENSIONS.contains(&e) && !matches!(e, "sse" | "sse2"))
        || word.strip_prefix("-m").is_some_and(|e| ISA_EXTENSIONS.contains(&e))
        // Warnings, but not `-Wp,` `-Wl,` `-Wa,` (options for inner stages).
        || (word.starts_with("-W") && !word.contains(','));
    if allowed {
        return Word::Allowed;
    }
    Word::Refused(match word {
        "-ffast-math"
        | "-Ofast"
        | "-funsafe-math-optimizations"
        | "-fassociative-math"
        | "-freciprocal-math"
        | "-fapprox-func"
        | "-fno-trapping-math" => REASSOCIATES,
        "-ffinite-math-only" | "-fno-honor-infinities" | "-fno-honor-nans" => {
            "it lets the compiler assume there are no infinities or NaNs, which TeIL's values \
             include (the undefined value is a NaN)"
        }
        "-fno-signed-zeros" => "it lets the compiler drop the sign of zero, which TeIL keeps",
        "-fsingle-precision-constant" => "it rounds literals to single precision",
        "-mdaz-ftz" | "-menable-unsafe-fp-math" => {
            "it flushes subnormal numbers to zero, in the whole process"
        }
        "-mno-sse" | "-mno-sse2" | "-mfpmath=387" | "-mfpmath=both" | "-mfpmath=387+sse"
        | "-mfpmath=sse+387" => X87,
        "-Xclang" | "-Xpreprocessor" | "-Xassembler" | "-Xlinker" | "-mllvm" => PASSES_ON,
        "-include" | "-imacros" | "--specs" | "-B" => READS_FILE,
        _ if word.starts_with("-Wp,") || word.starts_with("-Wl,") || word.starts_with("-Wa,") => {
            PASSES_ON
        }
        _ if word.starts_with("-specs=")
            || word.starts_with("--specs=")
            || word.starts_with("-B") =>
        {
            READS_FILE
        }
        _ if word.starts_with("-ffp-contract=") => {
            "TeIL decides contraction itself: none in exact mode, the pairs spec/values.md \
             lists in fma mode (`--fma`)"
        }
        _ if word.starts_with("-ffp-model=") => {
            "a floating-point model other than `precise` or `strict` changes results"
        }
        _ if word.starts_with("-fexcess-precision=") => {
            "only `-fexcess-precision=standard` rounds every operation to double"
        }
        _ if word.starts_with("-l") => {
            "it links a library in, whose constructors can change the floating-point environment \
             (only -lm, -lpthread, -lgomp and -lomp are allowed)"
        }
        _ => NOT_LISTED,
    })
}

/// Refuses `-D`/`-U` of a reserved name (`__NAME` or `_` and a capital letter): the compiler's
/// own macros, which the generated C reads to refuse value-changing modes (`__FAST_MATH__`,
/// `__FLT_EVAL_METHOD__`, `__SSE2__`).
fn check_macro(word: &str, definition: &str) -> Result<(), (String, &'static str)> {
    let name = definition.split('=').next().unwrap_or_default();
    let b = name.as_bytes();
    let reserved =
        b.starts_with(b"__") || (b.len() >= 2 && b[0] == b'_' && b[1].is_ascii_uppercase());
    if reserved {
        return Err((
            word.to_string(),
            "it defines or undefines a reserved macro, which the compiler sets and the generated \
             C reads to refuse value-changing modes",
        ));
    }
    Ok(())
}

/// One call of one kernel of a batch. A batch runs kernels, not programs: it knows no required
/// inputs, and a job may leave an input undefined on purpose (the fuzzer's and the tests'
/// undefined values). A program's caller gets the caller boundary's check
/// ([`teil::interface::check_inputs`]) from [`crate::run_program`] and
/// [`crate::shared::SharedKernel`]; here only each given input's shape is checked (E0603).
#[derive(Clone, Debug)]
pub struct Job {
    /// Index into the batch's kernels.
    pub kernel: usize,
    /// Logical values of the kernel's input parameters, by TeIL variable name (extra entries
    /// are ignored). NaN stands for the undefined value; an input not given starts undefined.
    pub inputs: BTreeMap<String, ArrayD<f64>>,
}

/// What one call left behind.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Every parameter's logical contents after the call, by TeIL variable name.
    pub values: BTreeMap<String, ArrayD<f64>>,
    /// Parameters with a non-zero padding cell after the call (must be empty).
    pub nonzero_padding: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// A job's input does not have its parameter's shape (E0603, worded by
    /// [`teil::interface`]).
    #[error(transparent)]
    Input(teil::interface::InterfaceError),
    #[error("job {job} names kernel {kernel}, but the batch has {count}")]
    NoSuchKernel {
        job: usize,
        kernel: usize,
        count: usize,
    },
    #[error("cannot run the C compiler `{cc}`: {error} (generated source kept at {kept})")]
    CompilerNotFound {
        cc: String,
        error: std::io::Error,
        kept: PathBuf,
    },
    #[error("the C compiler `{cc}` failed ({status}); generated source kept at {kept}\n{message}")]
    CompileFailed {
        cc: String,
        status: String,
        message: String,
        kept: PathBuf,
    },
    #[error("the compiled kernel failed ({status}); generated source kept at {kept}\n{message}")]
    KernelFailed {
        status: String,
        message: String,
        kept: PathBuf,
    },
    #[error("the kernels' buffers need {bytes} bytes, more than this machine can provide")]
    TooLarge { bytes: u64 },
    #[error(
        "{process} did not finish within {} s and was stopped (raise the bound with `--cc-timeout`)",
        timeout.as_secs_f64()
    )]
    TimedOut { process: Process, timeout: Duration },
    #[error("interrupted")]
    Interrupted,
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("the C compiler flag `{flag}` is refused: {why} (spec/abi.md, \"Compiling the C\")")]
    UnsafeFlag { flag: String, why: &'static str },
    #[error(
        "the C compiler is not run while `{var}` is set: {why} (spec/abi.md, \"Compiling the C\")"
    )]
    UnsafeEnvironment {
        var: &'static str,
        why: &'static str,
    },
}

impl teil::CodedError for DriverError {
    fn code(&self) -> Option<teil::Code> {
        match self {
            DriverError::TimedOut { .. } => Some(teil::Code::ProcessTimedOut),
            DriverError::Input(e) => e.code(),
            _ => None,
        }
    }
}

impl DriverError {
    /// The error with its kept source moved into `dir` (the same file name).
    fn kept_in(mut self, dir: PathBuf) -> Self {
        if let DriverError::CompilerNotFound { kept, .. }
        | DriverError::CompileFailed { kept, .. }
        | DriverError::KernelFailed { kept, .. } = &mut self
        {
            if let Some(name) = kept.file_name() {
                *kept = dir.join(name);
            }
        }
        self
    }
}

/// The name prefix of a scratch directory kept for inspection.
const KEPT_PREFIX: &str = "teil-cc-";

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DriverError {
    let what = what.into();
    move |error| DriverError::Io { what, error }
}

/// Compiles `kernels` into one driver and runs every job in one process.
pub fn run_batch(
    tc: &Toolchain,
    kernels: &[&Kernel],
    jobs: &[Job],
) -> Result<Vec<Outcome>, DriverError> {
    run_batch_timed(tc, kernels, jobs, &mut BatchTimes::default())
}

/// Where a batch's time went (`teil fuzz --profile-time`): added to as each step ends, so a
/// batch that fails still counts what it spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchTimes {
    /// The C compiler.
    pub compile: Duration,
    /// The driver process running the jobs.
    pub driver: Duration,
}

/// [`run_batch`], adding the compiler's and the driver's time to `times`.
pub fn run_batch_timed(
    tc: &Toolchain,
    kernels: &[&Kernel],
    jobs: &[Job],
    times: &mut BatchTimes,
) -> Result<Vec<Outcome>, DriverError> {
    let input = encode(kernels, jobs)?;
    // Private, removed on every return, and by a later run if this one is killed; kept (under
    // a `teil-cc-` name) when an error names the source in it.
    let dir = StagingDir::scratch().map_err(io("cannot create a temporary directory"))?;
    let path = dir.path().to_path_buf();
    let kernels_c = path.join("kernels.c");
    let driver_c = path.join("driver.c");
    let exe = path.join("driver");
    std::fs::write(&kernels_c, crate::print::module(kernels))
        .map_err(io("cannot write the generated source"))?;
    std::fs::write(&driver_c, crate::driver::source(kernels))
        .map_err(io("cannot write the generated driver"))?;

    // CORE-MATH's functions, each its own translation unit (crate::math): compiled once for
    // the toolchain where it keeps them, else with the kernels.
    let units = crate::math::units(kernels);
    let math = match tc.math.as_ref().and_then(|m| m.objects(&units)) {
        Some(objects) => objects,
        None => crate::math::write_units(&path.join("core-math"), &units)
            .map_err(io("cannot write the CORE-MATH sources"))?,
    };
    let mut args = vec![
        OsStr::new("-o"),
        exe.as_os_str(),
        kernels_c.as_os_str(),
        driver_c.as_os_str(),
    ];
    args.extend(math.iter().map(|p| p.as_os_str()));
    if crate::math::needs_libm(kernels) {
        args.push(OsStr::new("-lm"));
    }
    let compiling = Instant::now();
    let compiled = compile(tc, &args, &path, &kernels_c);
    times.compile += compiling.elapsed();
    if let Err(e) = compiled {
        if matches!(
            e,
            DriverError::CompilerNotFound { .. } | DriverError::CompileFailed { .. }
        ) {
            return Err(e.kept_in(dir.keep(KEPT_PREFIX)));
        }
        return Err(e);
    }

    let in_bin = path.join("input.bin");
    let out_bin = path.join("output.bin");
    let driver_stderr = path.join("driver.stderr");
    std::fs::write(&in_bin, &input).map_err(io("cannot write the kernel inputs"))?;
    let mut driver = Command::new(&exe);
    driver
        .arg(&in_bin)
        .arg(&out_bin)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(output_file(&driver_stderr)?);
    let running = Instant::now();
    let supervised = supervise(&mut driver, tc, Process::Driver);
    times.driver += running.elapsed();
    let ran = match supervised? {
        Ok(status) => status,
        Err(e) => {
            return Err(DriverError::KernelFailed {
                status: "not started".to_string(),
                message: e.to_string(),
                kept: dir.keep(KEPT_PREFIX).join("kernels.c"),
            })
        }
    };
    // The driver prints nothing itself, so anything on stderr (a sanitizer report, even a
    // recoverable one) is a failure.
    let message = read_message(&driver_stderr);
    if !ran.success() || !message.is_empty() {
        return Err(DriverError::KernelFailed {
            status: ran.to_string(),
            message,
            kept: dir.keep(KEPT_PREFIX).join("kernels.c"),
        });
    }
    let output = std::fs::read(&out_bin).map_err(io("cannot read the kernel outputs"))?;
    decode(kernels, jobs, &output).ok_or_else(|| DriverError::KernelFailed {
        status: "exit status 0".to_string(),
        message: format!(
            "the driver wrote {} bytes, which does not match the parameters",
            output.len()
        ),
        kept: dir.keep(KEPT_PREFIX).join("kernels.c"),
    })
}

/// The environment variable whose whitespace-separated flags are appended to the flags of every
/// C compilation the backend runs (after [`Toolchain::cflags`]). For running a test suite
/// against one target's kernels, for example `TEIL_EXTRA_CFLAGS="-mavx512f"` or
/// `TEIL_EXTRA_CFLAGS=-Dteil_portable` (spec/padding.md, "Contraction kernels"; tests/README.md).
pub const EXTRA_CFLAGS_VAR: &str = "TEIL_EXTRA_CFLAGS";

/// The flags of [`EXTRA_CFLAGS_VAR`] (none when it is unset).
pub fn extra_cflags() -> Vec<String> {
    std::env::var(EXTRA_CFLAGS_VAR)
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Environment variables that change which headers and libraries the compiler finds: not
/// refused, but part of the kernel cache's key ([`crate::shared`]).
pub const KEYED_ENVIRONMENT: &[&str] = &["CPATH", "C_INCLUDE_PATH", "LIBRARY_PATH", "SDKROOT"];

/// Compiles an empty translation unit with `tc`'s flags (to an object file, in a scratch
/// directory removed on return): `Ok(Ok(()))` when the compiler accepts them, `Ok(Err(message))`
/// with its messages when it refuses them. `Err` when the compiler cannot be run, times out or
/// is interrupted, or the flags change values ([`Toolchain::check_flags`]). A campaign asks this
/// before it compiles kernels for a flag set the host runs but the compiler may not know.
pub fn accepts_flags(tc: &Toolchain) -> Result<Result<(), String>, DriverError> {
    let scratch = StagingDir::scratch().map_err(io("cannot create a temporary directory"))?;
    let source = scratch.path().join("probe.c");
    let object = scratch.path().join("probe.o");
    std::fs::write(&source, "typedef int teil_probe;\n")
        .map_err(io("cannot write the generated source"))?;
    let args = [
        OsStr::new("-c"),
        source.as_os_str(),
        OsStr::new("-o"),
        object.as_os_str(),
    ];
    match compile(tc, &args, scratch.path(), &source) {
        Ok(()) => Ok(Ok(())),
        Err(DriverError::CompileFailed { message, .. }) => Ok(Err(message)),
        Err(e) => Err(e),
    }
}

/// What `CC --version` prints (the head of its standard output), run under `tc`'s time-out and
/// cancellation: the compiler's own identification, for the kernel cache's key. Empty when
/// the compiler cannot be run (the compilation then reports it).
pub fn version_output(tc: &Toolchain) -> Result<String, DriverError> {
    let scratch = StagingDir::scratch().map_err(io("cannot create a temporary directory"))?;
    let out = scratch.path().join("version");
    let mut cc = Command::new(&tc.cc);
    cc.arg("--version")
        .env("TMPDIR", scratch.path())
        .stdin(Stdio::null())
        .stdout(output_file(&out)?)
        .stderr(Stdio::null());
    Ok(
        match supervise(&mut cc, tc, Process::Compiler(tc.cc.clone()))? {
            Ok(_) => read_message(&out),
            Err(_) => String::new(),
        },
    )
}

/// Runs the compiler of `tc` as `CC FLAGS EXTRA -ffp-contract=off ARGS...` (no shell; `EXTRA`
/// from [`EXTRA_CFLAGS_VAR`]; flags that change values refused, [`Toolchain::check_flags`])
/// through [`supervise`], with its
/// messages and its own temporaries (`TMPDIR`) in `scratch`, so that they are removed with it
/// even when the compiler is killed. Errors name `source`, which the caller keeps when the
/// compiler could not be run or failed. Every compilation of the backend goes through here
/// (the batch driver above, [`crate::shared`]).
pub(crate) fn compile(
    tc: &Toolchain,
    args: &[&OsStr],
    scratch: &Path,
    source: &Path,
) -> Result<(), DriverError> {
    tc.check_flags()?;
    let cc_stderr = scratch.join("cc.stderr");
    let mut cc = Command::new(&tc.cc);
    cc.args(&tc.cflags)
        .args(extra_cflags())
        .arg(CONTRACTION_OFF)
        .args(args)
        .env("TMPDIR", scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(output_file(&cc_stderr)?);
    let compiled = match supervise(&mut cc, tc, Process::Compiler(tc.cc.clone()))? {
        Ok(status) => status,
        Err(error) => {
            return Err(DriverError::CompilerNotFound {
                cc: tc.cc.clone(),
                error,
                kept: source.to_path_buf(),
            })
        }
    };
    // Warnings fail the run only when the flags make them errors (`-Werror`).
    if !compiled.success() {
        return Err(DriverError::CompileFailed {
            cc: tc.cc.clone(),
            status: compiled.to_string(),
            message: read_message(&cc_stderr),
            kept: source.to_path_buf(),
        });
    }
    Ok(())
}

/// The longest message of a failing compiler or driver that is reported (the head of it).
const MAX_MESSAGE: u64 = 1 << 20;

/// A file for a child's standard error, so that no pipe can fill up while it runs.
fn output_file(path: &Path) -> Result<File, DriverError> {
    File::create(path).map_err(io("cannot create a file in the temporary directory"))
}

/// What a child wrote into `path` (its head), as text.
fn read_message(path: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(f) = File::open(path) {
        let _ = f.take(MAX_MESSAGE).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs `cmd` to its end as a supervised [`Group`] (a process group of its own), within
/// `tc.timeout` and until `tc.cancel` is set. When either ends it first, the whole group is
/// killed and the child reaped before this returns [`DriverError::TimedOut`] (naming `process`)
/// or [`DriverError::Interrupted`]. `Ok(Err(e))`: the command could not be started.
///
/// Every process this module starts goes through here; so should any other compiler or
/// kernel process of the backend. Give the command files (not pipes) for its output, so that
/// nothing it writes can block it while it is waited for.
pub fn supervise(
    cmd: &mut Command,
    tc: &Toolchain,
    process: Process,
) -> Result<std::io::Result<ExitStatus>, DriverError> {
    if tc.cancel.is_cancelled() {
        return Err(DriverError::Interrupted);
    }
    let mut child = match Group::spawn(cmd) {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    match child.wait(tc.timeout, &tc.cancel) {
        Ok(status) => Ok(Ok(status)),
        Err(Stopped::Cancelled) => Err(DriverError::Interrupted),
        Err(Stopped::TimedOut(timeout)) => Err(DriverError::TimedOut { process, timeout }),
        Err(Stopped::Wait(error)) => Err(DriverError::Io {
            what: format!("cannot wait for {process}"),
            error,
        }),
    }
}

/// Compiles and runs one kernel once.
pub fn run(
    tc: &Toolchain,
    kernel: &Kernel,
    inputs: &BTreeMap<String, ArrayD<f64>>,
) -> Result<Outcome, DriverError> {
    let job = Job {
        kernel: 0,
        inputs: inputs.clone(),
    };
    let mut out = run_batch(tc, &[kernel], &[job])?;
    out.pop().ok_or_else(|| DriverError::Io {
        what: "the driver returned no result".to_string(),
        error: std::io::Error::other("empty output"),
    })
}

fn encode(kernels: &[&Kernel], jobs: &[Job]) -> Result<Vec<u8>, DriverError> {
    // Size everything first, so that a batch too large for memory is an error, not an abort.
    let mut total = 0u64;
    for (j, job) in jobs.iter().enumerate() {
        let k = kernels.get(job.kernel).ok_or(DriverError::NoSuchKernel {
            job: j,
            kernel: job.kernel,
            count: kernels.len(),
        })?;
        total = k
            .params
            .iter()
            .try_fold(total.saturating_add(8), |t, &p| {
                k.buffer(p).padded_len().checked_mul(8)?.checked_add(t)
            })
            .unwrap_or(u64::MAX);
    }
    let too_large = || DriverError::TooLarge { bytes: total };
    let mut buf: Vec<u8> = Vec::new();
    buf.try_reserve_exact(usize::try_from(total).map_err(|_| too_large())?)
        .map_err(|_| too_large())?;
    for job in jobs {
        let Some(k) = kernels.get(job.kernel) else {
            continue;
        };
        buf.extend_from_slice(&(job.kernel as u64).to_ne_bytes());
        for &p in &k.params {
            let b = k.buffer(p);
            let var = b.var.clone().unwrap_or_default();
            let input = matches!(b.role, Role::Param { input: true, .. });
            let start = buf.len();
            buf.resize(start + b.padded_len() as usize * 8, 0);
            let given = job.inputs.get(&var).filter(|_| input);
            if let Some(value) = given {
                let found: Vec<u64> = value.shape().iter().map(|&n| n as u64).collect();
                if found != b.logical {
                    return Err(DriverError::Input(
                        teil::interface::InterfaceError::InputShape {
                            name: var,
                            expected: b.logical.clone(),
                            found,
                        },
                    ));
                }
            }
            // `iter` visits elements in logical row-major order whatever the memory layout. An
            // input the caller does not supply starts undefined; output-only parameters get
            // the canary.
            let fill = if input { f64::NAN } else { OUTPUT_CANARY };
            let mut values = given.map(|v| v.iter().copied());
            let n = *b.logical.last().unwrap_or(&1) as usize;
            for (row, logical) in padded_rows(&b.logical, &b.padded) {
                if !logical {
                    continue;
                }
                for i in 0..n {
                    let x = values.as_mut().and_then(Iterator::next).unwrap_or(fill);
                    let at = start + 8 * (row + i);
                    buf[at..at + 8].copy_from_slice(&x.to_ne_bytes());
                }
            }
        }
    }
    Ok(buf)
}

fn decode(kernels: &[&Kernel], jobs: &[Job], bytes: &[u8]) -> Option<Vec<Outcome>> {
    if bytes.len() % 8 != 0 {
        return None;
    }
    let at = |i: usize| {
        let c = &bytes[8 * i..8 * i + 8];
        f64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))
    };
    let total = bytes.len() / 8;
    let mut next = 0usize;
    let mut out = Vec::new();
    for job in jobs {
        let k = kernels.get(job.kernel)?;
        let mut values = BTreeMap::new();
        let mut nonzero_padding = Vec::new();
        for &p in &k.params {
            let b = k.buffer(p);
            let start = next;
            next = next.checked_add(b.padded_len() as usize)?;
            if next > total {
                return None;
            }
            let n = *b.logical.last().unwrap_or(&1) as usize;
            let p = *b.padded.last().unwrap_or(&1) as usize;
            let mut logical = Vec::with_capacity(b.logical_len() as usize);
            let mut zero = true;
            for (row, is_logical) in padded_rows(&b.logical, &b.padded) {
                let row = start + row;
                let kept = if is_logical { n } else { 0 };
                logical.extend((row..row + kept).map(at));
                zero &= (row + kept..row + p).all(|i| at(i) == 0.0);
            }
            let var = b.var.clone().unwrap_or_default();
            if !zero {
                nonzero_padding.push(var.clone());
            }
            let shape: Vec<usize> = b.logical.iter().map(|&n| n as usize).collect();
            values.insert(var, ArrayD::from_shape_vec(IxDyn(&shape), logical).ok()?);
        }
        out.push(Outcome {
            values,
            nonzero_padding,
        });
    }
    (next == total).then_some(out)
}

/// The offset of every row of a padded buffer (all dimensions but the last; the last is
/// contiguous), in row-major order, with whether the row holds logical cells. A scalar is one
/// row of one logical cell.
pub(crate) fn padded_rows(logical: &[u64], padded: &[u64]) -> Vec<(usize, bool)> {
    let k = padded.len().saturating_sub(1);
    let row_len = padded.last().copied().unwrap_or(1) as usize;
    let mut rows = vec![(0usize, true)];
    for d in 0..k {
        let inner = padded[d + 1..k].iter().product::<u64>() as usize * row_len;
        let mut next = Vec::with_capacity(rows.len() * padded[d] as usize);
        for &(off, logical_row) in &rows {
            for i in 0..padded[d] {
                next.push((off + i as usize * inner, logical_row && i < logical[d]));
            }
        }
        rows = next;
    }
    rows
}
