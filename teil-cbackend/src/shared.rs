//! Kernels compiled into a shared object and called in-process ([`SharedKernel`]).
//!
//! [`SharedKernel::compile`] emits the program's C ([`crate::emit_c`]'s lowering and printer)
//! plus a one-line entry thunk `teil_entry(double *const *p)` that calls the kernel with `p[0]`,
//! `p[1]`, ..., compiles it with `CC FLAGS -shared -fPIC -fvisibility=hidden` through the same
//! compiler invocation as `teil run --backend c` ([`crate::run`]), and loads the object with
//! `libloading`. [`SharedKernel::call`] pads the caller's logical inputs into zeroed 64-byte
//! aligned buffers (spec/abi.md), calls the thunk and unpads the outputs.
//!
//! **Cache.** Objects live in a per-user cache directory ([`default_cache_dir`]; `TEIL_CACHE_DIR`
//! overrides) under the SHA-256 of everything that determines them: the C source, the compiler
//! command and the identity of the executable it resolves to (path, size, modification time: a
//! compiler upgrade is a new key), the flags and the target. The compiler writes to a temporary
//! file in the cache directory, which is then renamed onto the final name, so processes
//! compiling the same kernel at once never see a half-written object, and a second `compile` of
//! the same program loads the object without running the compiler. The C source is kept beside
//! the object (`KEY.c`); compiler errors point to it.
//!
//! **Threads.** A [`SharedKernel`] is `Send + Sync`: the generated function keeps no state
//! between calls and allocates its workspace per call (spec/abi.md, *Internal storage*), and
//! every call of [`SharedKernel::call`] has buffers of its own, so calls from several threads
//! run in parallel without a lock.
//!
//! **Copies.** An input-only parameter whose padded layout equals its logical one (always at
//! `pad = 1`) is passed as a pointer into the caller's C-contiguous array, without a copy: the
//! function never writes input-only buffers (spec/abi.md, *Roles*). The ABI asks for 64-byte
//! alignment for the speed of vector loads; the generated code itself never assumes more than
//! the alignment of `double` (vector registers are loaded with `memcpy`), so a caller's array
//! of any `f64` alignment is correct. Every other parameter gets a zeroed aligned buffer.
//!
//! **Limits.** Like every caller of the ABI, a call aborts the process when the C function
//! cannot allocate its workspace (spec/abi.md); [`SharedKernel::call`] first tries to reserve
//! that much memory itself and returns [`KernelError::TooLarge`] when it cannot, so this only
//! happens when memory runs out between the two. Kernels compiled with OpenMP stay loaded
//! until the process exits: unloading `libgomp` under its idle worker threads crashes the
//! process (the test `openmp_kernels_load_and_agree` did, before this rule).

use crate::ir::{Kernel, Role};
use crate::run::{compile, padded_rows, RunError, Toolchain};
use crate::Options;
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::time::Duration;
use teil::CheckedProgram;
use teil_interp::Tensor;

/// How [`SharedKernel::compile`] builds a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedOptions {
    /// The padding multiple M (spec/padding.md); 1 is no padding.
    pub pad: u64,
    /// The C compiler command, looked up on `PATH`.
    pub cc: String,
    /// Flags (split on whitespace) replacing the default `-O2` of the CLI's C backend;
    /// `-shared -fPIC -fvisibility=hidden` are always added.
    pub cflags: Option<String>,
    /// Parallel outer loops (spec/abi.md, *OpenMP*); adds `-fopenmp`.
    pub openmp: bool,
    /// Fused multiply-add mode ([`Options::fma`], spec/values.md, "Fused multiply-add").
    pub fma: bool,
    /// Where compiled objects are cached; `None`: [`default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// The longest the compiler may run before it is stopped; `None`: no limit.
    pub timeout: Option<Duration>,
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            pad: 1,
            cc: Toolchain::default().cc,
            cflags: None,
            openmp: false,
            fma: false,
            cache_dir: default_cache_dir(),
            timeout: Some(Duration::from_secs(300)),
        }
    }
}

/// The per-user cache directory: `$TEIL_CACHE_DIR` when set, otherwise `$XDG_CACHE_HOME/teil`,
/// `~/.cache/teil` (`~/Library/Caches/teil` on macOS, `%LOCALAPPDATA%\teil` on Windows).
/// `None` when the environment names no home directory.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("TEIL_CACHE_DIR") {
        return Some(dir);
    }
    if cfg!(windows) {
        return var("LOCALAPPDATA").map(|d| d.join("teil"));
    }
    if cfg!(target_os = "macos") {
        return var("HOME").map(|h| h.join("Library/Caches/teil"));
    }
    // The XDG base directory specification ignores relative paths.
    match var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        Some(d) => Some(d.join("teil")),
        None => var("HOME").map(|h| h.join(".cache/teil")),
    }
}

/// Why a kernel could not be compiled, loaded or called.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The program cannot be lowered with these options (a padding multiple of 0, buffers too
    /// large once padded, ...).
    #[error(transparent)]
    Lower(#[from] crate::Error),
    /// The compiler could not be started, failed (its message is in the error), or timed out.
    #[error(transparent)]
    Compile(#[from] RunError),
    #[error("no cache directory for compiled kernels: set TEIL_CACHE_DIR or HOME")]
    NoCacheDir,
    #[error("{what} `{}`: {error}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot load the compiled kernel `{}`: {error}", path.display())]
    Load {
        path: PathBuf,
        error: libloading::Error,
    },
    #[error("missing input `{var}` of shape {shape:?}")]
    MissingInput { var: String, shape: Vec<u64> },
    #[error("input `{var}` has shape {found:?}, but the program declares {expected:?}")]
    InputShape {
        var: String,
        expected: Vec<u64>,
        found: Vec<usize>,
    },
    #[error("`{var}` is not a variable of the program")]
    UnknownVariable { var: String },
    #[error("`{var}` is not an input of the program (only `input` and `inout` variables are)")]
    NotAnInput { var: String },
    #[error("the kernel's buffers need {bytes} bytes, more than this machine can provide")]
    TooLarge { bytes: u64 },
}

/// The C entry point every shared kernel exports: all parameters through one array, so that
/// Rust calls kernels of any arity through one signature.
const ENTRY: &str = "teil_entry";

type EntryFn = unsafe extern "C" fn(*const *mut f64);

/// One parameter of the kernel, as the caller sees it.
#[derive(Clone, Debug)]
struct Param {
    var: String,
    logical: Vec<u64>,
    padded: Vec<u64>,
    /// The caller may supply its initial contents.
    input: bool,
    /// The caller receives its final contents.
    output: bool,
    /// The caller must supply it ([`CheckedProgram::is_required`]).
    required: bool,
}

impl Param {
    fn padded_len(&self) -> usize {
        self.padded.iter().product::<u64>() as usize
    }
}

/// A TeIL program compiled by the C backend into a shared object loaded into this process
/// (module documentation; an example is in the [crate documentation](crate)).
pub struct SharedKernel {
    entry: EntryFn,
    params: Vec<Param>,
    /// Indices into `params` of the outputs, parallel to `outputs`.
    output_params: Vec<usize>,
    inputs: Vec<String>,
    outputs: Vec<String>,
    /// Every declared variable, parameters or not.
    declared: Vec<String>,
    /// Bytes of the workspace the C function allocates per call.
    workspace_bytes: u64,
    path: PathBuf,
    /// Keeps the object mapped while `entry` may be called.
    library: ManuallyDrop<libloading::Library>,
    /// Whether dropping the kernel may unload the object: not for OpenMP kernels, whose
    /// loading brought in `libgomp`, because its worker threads outlive the call and would
    /// crash the process if the library under them were unmapped.
    unload: bool,
}

impl Drop for SharedKernel {
    fn drop(&mut self) {
        if self.unload {
            // SAFETY: `library` is dropped exactly once, here; nothing calls `entry` after.
            unsafe { ManuallyDrop::drop(&mut self.library) }
        }
    }
}

impl std::fmt::Debug for SharedKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedKernel")
            .field("path", &self.path)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

impl SharedKernel {
    /// Lowers `p`, compiles it into the cache (or finds it there) and loads it.
    pub fn compile(p: &CheckedProgram, opts: &SharedOptions) -> Result<SharedKernel, KernelError> {
        let lower = Options {
            pad: opts.pad,
            fma: opts.fma,
            ..Options::default()
        };
        let mut kernel = crate::lower(p, &lower)?;
        kernel.openmp = opts.openmp;
        let source = source(&kernel);

        let mut tc = Toolchain {
            cc: opts.cc.clone(),
            // No bound: a compiler that never ends is the caller's to stop.
            timeout: opts.timeout.unwrap_or(Duration::MAX),
            ..Toolchain::default()
        };
        if let Some(f) = &opts.cflags {
            tc = tc.with_cflags(f);
        }
        tc.cflags
            .extend(["-shared", "-fPIC", "-fvisibility=hidden"].map(String::from));
        if opts.openmp {
            tc.cflags.push("-fopenmp".to_string());
        }

        // Before the cache: an object compiled with such flags is never loaded.
        tc.check_flags()?;
        let dir = match &opts.cache_dir {
            Some(d) => d.clone(),
            None => default_cache_dir().ok_or(KernelError::NoCacheDir)?,
        };
        let key = cache_key(&source, &tc);
        let path = dir.join(format!("{key}.{}", std::env::consts::DLL_EXTENSION));
        let library = if path.is_file() {
            // An object that does not load (a file damaged outside TeIL's control) is built
            // again rather than reported.
            match load(&path) {
                Ok(lib) => lib,
                Err(_) => {
                    build(&tc, &dir, &key, &source, &path)?;
                    load(&path)?
                }
            }
        } else {
            build(&tc, &dir, &key, &source, &path)?;
            load(&path)?
        };
        // SAFETY: `teil_entry` is defined by `source` with exactly this signature.
        let entry: EntryFn = unsafe {
            *library
                .get::<EntryFn>(ENTRY.as_bytes())
                .map_err(|error| KernelError::Load {
                    path: path.clone(),
                    error,
                })?
        };
        Ok(Self::new(p, &kernel, entry, library, path, !opts.openmp))
    }

    fn new(
        p: &CheckedProgram,
        kernel: &Kernel,
        entry: EntryFn,
        library: libloading::Library,
        path: PathBuf,
        unload: bool,
    ) -> SharedKernel {
        let decls = &p.program().decls;
        let params: Vec<Param> = kernel
            .params
            .iter()
            .map(|&b| {
                let b = kernel.buffer(b);
                let var = b.var.clone().unwrap_or_default();
                let (input, output) = match b.role {
                    Role::Param { input, output } => (input, output),
                    _ => (false, false),
                };
                let required = decls
                    .iter()
                    .find(|d| d.name.name == var)
                    .is_some_and(|d| p.is_required(d));
                Param {
                    var,
                    logical: b.logical.clone(),
                    padded: b.padded.clone(),
                    input,
                    output,
                    required,
                }
            })
            .collect();
        let inputs = decls
            .iter()
            .filter(|d| p.is_required(d))
            .map(|d| d.name.name.clone())
            .collect();
        // Every output is a parameter (spec/abi.md); pairing them keeps the two lists parallel.
        let (outputs, output_params) = p
            .output_names()
            .into_iter()
            .filter_map(|o| Some((o.clone(), params.iter().position(|q| q.var == o)?)))
            .unzip();
        let declared = decls.iter().map(|d| d.name.name.clone()).collect();
        SharedKernel {
            entry,
            params,
            output_params,
            inputs,
            outputs,
            declared,
            workspace_bytes: kernel.workspace.saturating_mul(8),
            path,
            library: ManuallyDrop::new(library),
            unload,
        }
    }

    /// Runs the kernel on logical (unpadded) inputs, by variable name; pads and unpads
    /// internally. Every input of [`Self::inputs`] must be given; other `input` variables of a
    /// program without qualifiers may be given and start undefined (NaN) otherwise. Returns
    /// the final value of every variable of [`Self::outputs`] (NaN for undefined cells).
    pub fn call(
        &self,
        inputs: &BTreeMap<String, ArrayViewD<'_, f64>>,
    ) -> Result<BTreeMap<String, Tensor>, KernelError> {
        for (name, value) in inputs {
            let Some(q) = self.params.iter().find(|q| &q.var == name) else {
                return Err(if self.declared.iter().any(|d| d == name) {
                    KernelError::NotAnInput { var: name.clone() }
                } else {
                    KernelError::UnknownVariable { var: name.clone() }
                });
            };
            if !q.input {
                return Err(KernelError::NotAnInput { var: name.clone() });
            }
            let found = value.shape();
            if found.len() != q.logical.len()
                || found.iter().zip(&q.logical).any(|(&f, &l)| f as u64 != l)
            {
                return Err(KernelError::InputShape {
                    var: name.clone(),
                    expected: q.logical.clone(),
                    found: found.to_vec(),
                });
            }
        }
        if let Some(q) = self
            .params
            .iter()
            .find(|q| q.required && !inputs.contains_key(&q.var))
        {
            return Err(KernelError::MissingInput {
                var: q.var.clone(),
                shape: q.logical.clone(),
            });
        }

        // Buffers of this call; `None` where the caller's array is passed directly.
        let mut owned: Vec<Option<Aligned>> = Vec::with_capacity(self.params.len());
        let mut pointers: Vec<*mut f64> = Vec::with_capacity(self.params.len());
        for q in &self.params {
            let given = inputs.get(&q.var);
            if let Some(v) =
                given.filter(|v| !q.output && q.padded == q.logical && v.is_standard_layout())
            {
                // The function never writes an input-only buffer (spec/abi.md, *Roles*).
                pointers.push(v.as_ptr().cast_mut());
                owned.push(None);
                continue;
            }
            let mut buf = Aligned::zeroed(q.padded_len())?;
            if q.input {
                fill(buf.as_mut_slice(), q, given);
            }
            pointers.push(buf.as_mut_ptr());
            owned.push(Some(buf));
        }
        self.reserve_workspace()?;
        // SAFETY: `entry` calls the generated function with `pointers`, one per parameter in
        // order, each to a buffer of that parameter's padded length whose padding is zero (our
        // zeroed buffers, or a caller's array whose padded and logical layouts coincide); the
        // buffers outlive the call and the function writes only the ones in `owned`. The
        // library stays loaded while `self` lives.
        unsafe { (self.entry)(pointers.as_ptr()) };

        let mut out = BTreeMap::new();
        for (name, &i) in self.outputs.iter().zip(&self.output_params) {
            let q = &self.params[i];
            let Some(buf) = &owned[i] else {
                continue; // outputs are never passed directly
            };
            out.insert(name.clone(), unpad(buf.as_slice(), q));
        }
        Ok(out)
    }

    /// The variables the caller must give ([`CheckedProgram::is_required`]), in declaration
    /// order.
    pub fn inputs(&self) -> &[String] {
        &self.inputs
    }

    /// The variables [`Self::call`] returns ([`CheckedProgram::output_names`]), in declaration
    /// order.
    pub fn outputs(&self) -> &[String] {
        &self.outputs
    }

    /// The loaded shared object, in the cache directory; its C source is beside it (`.c`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tries to reserve the workspace the C function is about to `calloc`, so that a machine
    /// without that much memory gets an error instead of the function's `abort()`.
    fn reserve_workspace(&self) -> Result<(), KernelError> {
        // Small workspaces cannot fail where the buffers above did not.
        if self.workspace_bytes < 1 << 24 {
            return Ok(());
        }
        let too_large = || KernelError::TooLarge {
            bytes: self.workspace_bytes,
        };
        let bytes = usize::try_from(self.workspace_bytes).map_err(|_| too_large())?;
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(bytes).map_err(|_| too_large())
    }
}

/// The kernel's C followed by the exported entry thunk.
fn source(kernel: &Kernel) -> String {
    let mut c = crate::print::module(&[kernel]);
    let args: Vec<String> = (0..kernel.params.len())
        .map(|i| format!("p[{i}]"))
        .collect();
    let body = if args.is_empty() {
        format!("    (void)p;\n    {}();", kernel.name)
    } else {
        format!("    {}({});", kernel.name, args.join(", "))
    };
    let _ = write!(
        c,
        "\n/* The entry point of the shared object: every parameter through one array. */\n\
         #if defined(__GNUC__)\n__attribute__((visibility(\"default\")))\n#endif\n\
         void {ENTRY}(double *const *p);\n\
         void {ENTRY}(double *const *p)\n{{\n{body}\n}}\n"
    );
    c
}

/// The cache key: SHA-256 over everything the object depends on, in hex.
fn cache_key(source: &str, tc: &Toolchain) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"teil-cbackend shared object 1");
    field(concat!(env!("CARGO_PKG_NAME"), " ", env!("CARGO_PKG_VERSION")).as_bytes());
    field(std::env::consts::ARCH.as_bytes());
    field(std::env::consts::OS.as_bytes());
    field(tc.cc.as_bytes());
    field(compiler_identity(&tc.cc).as_bytes());
    for f in &tc.cflags {
        field(f.as_bytes());
    }
    // The compilation appends these (crate::run::EXTRA_CFLAGS_VAR).
    field(b"extra flags");
    for f in crate::run::extra_cflags() {
        field(f.as_bytes());
    }
    field(source.as_bytes());
    let digest = h.finalize();
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The executable `cc` resolves to, with its size and modification time, or `""` when it
/// does not resolve (the compilation then reports it). Found without running the compiler.
fn compiler_identity(cc: &str) -> String {
    let candidates: Vec<PathBuf> = if cc.contains(std::path::MAIN_SEPARATOR) {
        vec![PathBuf::from(cc)]
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path).map(|d| d.join(cc)).collect()
    };
    for c in candidates {
        let Ok(real) = std::fs::canonicalize(&c) else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(&real) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .unwrap_or_default();
        return format!("{} {} {}", real.display(), meta.len(), modified.as_nanos());
    }
    String::new()
}

/// Compiles `source` into `path`: the C source is written (atomically) to `KEY.c` in `dir`,
/// the compiler writes a temporary object in `dir`, which is renamed onto `path`.
fn build(
    tc: &Toolchain,
    dir: &Path,
    key: &str,
    source: &str,
    path: &Path,
) -> Result<(), KernelError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |error| KernelError::Io { what, path, error }
    };
    std::fs::create_dir_all(dir).map_err(io("cannot create the cache directory", dir))?;
    let c_path = dir.join(format!("{key}.c"));
    let mut c_tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".c")
        .tempfile_in(dir)
        .map_err(io("cannot create a file in the cache directory", dir))?;
    std::io::Write::write_all(&mut c_tmp, source.as_bytes())
        .map_err(io("cannot write the generated source", c_tmp.path()))?;
    c_tmp.persist(&c_path).map_err(|e| KernelError::Io {
        what: "cannot write the generated source",
        path: c_path.clone(),
        error: e.error,
    })?;
    let so_tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(&format!(".{}", std::env::consts::DLL_EXTENSION))
        .tempfile_in(dir)
        .map_err(io("cannot create a file in the cache directory", dir))?
        .into_temp_path();
    let scratch = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempdir_in(dir)
        .map_err(io("cannot create a directory in the cache directory", dir))?;
    let args = [OsStr::new("-o"), so_tmp.as_os_str(), c_path.as_os_str()];
    compile(tc, &args, scratch.path(), &c_path)?;
    so_tmp.persist(path).map_err(|e| KernelError::Io {
        what: "cannot move the compiled kernel into the cache",
        path: path.to_path_buf(),
        error: e.error,
    })?;
    Ok(())
}

fn load(path: &Path) -> Result<libloading::Library, KernelError> {
    // SAFETY: the object is one this module generated: its initialisers are those of the C
    // runtime and of `libgomp` at most, which are safe to run at any time.
    unsafe { libloading::Library::new(path) }.map_err(|error| KernelError::Load {
        path: path.to_path_buf(),
        error,
    })
}

/// Writes the logical cells of an input parameter into its zeroed padded buffer: the caller's
/// values in row-major order, or NaN (the undefined value) when none were given.
fn fill(buf: &mut [f64], q: &Param, given: Option<&ArrayViewD<'_, f64>>) {
    let n = q.logical.last().copied().unwrap_or(1) as usize;
    let rows = padded_rows(&q.logical, &q.padded);
    let logical_rows = rows.iter().filter(|r| r.1).map(|r| r.0);
    match given {
        Some(v) => match v.as_slice() {
            Some(values) => {
                for (row, chunk) in logical_rows.zip(values.chunks_exact(n.max(1))) {
                    buf[row..row + n].copy_from_slice(&chunk[..n]);
                }
            }
            // `iter` visits elements in logical row-major order whatever the memory layout.
            None => {
                let mut values = v.iter();
                for row in logical_rows {
                    for (cell, x) in buf[row..row + n].iter_mut().zip(&mut values) {
                        *cell = *x;
                    }
                }
            }
        },
        None => {
            for row in logical_rows {
                buf[row..row + n].fill(f64::NAN);
            }
        }
    }
}

/// The logical cells of a padded buffer as a tensor of the parameter's logical shape.
fn unpad(buf: &[f64], q: &Param) -> Tensor {
    let shape: Vec<usize> = q.logical.iter().map(|&n| n as usize).collect();
    let data = if q.padded == q.logical {
        buf[..q.padded_len()].to_vec()
    } else {
        let n = q.logical.last().copied().unwrap_or(1) as usize;
        let rows = padded_rows(&q.logical, &q.padded);
        let mut data = Vec::with_capacity(shape.iter().product());
        for (row, _) in rows.into_iter().filter(|r| r.1) {
            data.extend_from_slice(&buf[row..row + n]);
        }
        data
    };
    ArrayD::from_shape_vec(IxDyn(&shape), data).expect("the logical cells fill the logical shape")
}

/// A zeroed buffer of `f64`s, 64-byte aligned (spec/abi.md).
struct Aligned {
    chunks: Vec<Chunk>,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Chunk([f64; 8]);

impl Aligned {
    fn zeroed(len: usize) -> Result<Aligned, KernelError> {
        // At least one chunk, so that even an empty buffer has a valid, aligned address.
        let count = len.div_ceil(8).max(1);
        let mut chunks = Vec::new();
        chunks
            .try_reserve_exact(count)
            .map_err(|_| KernelError::TooLarge {
                bytes: (count as u64).saturating_mul(64),
            })?;
        chunks.resize(count, Chunk([0.0; 8]));
        Ok(Aligned { chunks, len })
    }

    fn as_slice(&self) -> &[f64] {
        // SAFETY: `Chunk` is `repr(C)` around `[f64; 8]`, so the chunks are `8 * count`
        // contiguous, initialised `f64`s, and `len <= 8 * count`.
        unsafe { std::slice::from_raw_parts(self.chunks.as_ptr().cast::<f64>(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [f64] {
        // SAFETY: as in `as_slice`, with exclusive access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.chunks.as_mut_ptr().cast::<f64>(), self.len) }
    }

    fn as_mut_ptr(&mut self) -> *mut f64 {
        self.chunks.as_mut_ptr().cast::<f64>()
    }
}
