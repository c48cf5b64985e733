//! Kernels compiled into a shared object and called in-process ([`SharedKernel`]).
//!
//! [`SharedKernel::compile`] emits the program's C ([`crate::emit_c`]'s lowering and printer)
//! plus a one-line entry thunk `teil_entry(void *const *p)` that calls the kernel with `p[0]`,
//! `p[1]`, ... (each a buffer of its parameter's element type: `double`, or `float` for an
//! `f32` parameter), compiles it with `CC FLAGS -shared -fPIC -fvisibility=hidden` through the same
//! compiler invocation as `teil run --backend c` ([`crate::run`]), and loads the object with
//! `libloading`. [`SharedKernel::call`] pads the caller's logical inputs into zeroed 64-byte
//! aligned buffers (spec/abi.md), calls the thunk and unpads the outputs; what needs no padding
//! is not copied (row-major inputs are read in place, an unpadded result's buffer becomes the
//! returned array), and [`SharedKernel::call_into`] writes results into the caller's arrays.
//! [`SharedKernel::call_typed`] takes and returns arrays of each parameter's own element type
//! ([`Arg`], [`Value`]): a float32 array for a binary32 parameter crosses without a conversion.
//!
//! **Cache.** Objects live in a per-user cache directory ([`default_cache_dir`]; `TEIL_CACHE_DIR`
//! overrides) under the SHA-256 of everything that determines them: the C source, the compiler
//! command and the identity of the executable it resolves to (path, size, modification time: a
//! compiler upgrade is a new key), the flags and the target. The compiler writes into a private
//! scratch directory inside the cache directory, and the object is then renamed onto the final
//! name, so processes compiling the same kernel at once never see a half-written object, and a
//! second `compile` of the same program loads the object without running the compiler. The C
//! source is kept beside the object (`KEY.c`); compiler errors point to it.
//!
//! **Trust.** Anyone can compute a key, so nothing in the cache is loaded on its name alone
//! (loading an object runs its constructors in the caller's process). The directory must be a
//! real directory owned by the user and writable by nobody else ([`trusted_dir`], which creates
//! a missing one with mode 0700), otherwise compiling refuses it
//! ([`KernelError::UntrustedCacheDir`]). Each object is recorded beside it (`KEY.mac`) with an
//! HMAC-SHA256, over the key and the object's bytes, under a per-user secret of 32 random bytes
//! kept in the directory (`teil-cache-secret`, mode 0600). An object is loaded only if it is
//! opened without following a symbolic link, is a regular file of the user that nobody else
//! may write, and its bytes carry the recorded HMAC; anything else at its name is compiled
//! again and replaced. The file checked is the file loaded: on Linux it is loaded through
//! `/proc/self/fd/N` of the verified descriptor (elsewhere by its path, in the directory
//! nobody else can write). The directories above the cache directory are trusted.
//! Each compilation stages its temporaries (the compiler's scratch files, the source and the
//! HMAC record before their renames) in a locked staging directory of
//! [`teil_io::files`] (`.teil-tmp-*`); those that killed compilations left are removed by
//! the next compilation ([`teil_io::files::remove_stale`], after [`STALE_AFTER`]).
//!
//! **In-process limits.** Sanitizer flags (`-fsanitize=...`) are refused
//! ([`KernelError::Sanitizer`]): a sanitizer's runtime must be the first thing loaded in a
//! process, so such a kernel runs only in a separate process (`teil run --backend c`). An
//! OpenMP kernel refuses to run in a process forked after OpenMP code ran in the parent
//! ([`KernelError::OpenMpAfterFork`]): `libgomp`'s threads do not survive `fork`, and the call
//! would hang.
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
//! the alignment of its element type (vector registers are loaded with `memcpy`), so a caller's
//! array of any `f64` (`f32`) alignment is correct. Every other parameter gets a zeroed aligned
//! buffer.
//!
//! **Limits.** Like every caller of the ABI, a call aborts the process when the C function
//! cannot allocate its workspace (spec/abi.md); [`SharedKernel::call`] first tries to reserve
//! that much memory itself and returns [`KernelError::TooLarge`] when it cannot, so this only
//! happens when memory runs out between the two. Kernels compiled with OpenMP stay loaded
//! until the process exits: unloading `libgomp` under its idle worker threads crashes the
//! process (the test `openmp_kernels_load_and_agree` did, before this rule).

use crate::ir::{Kernel, Role};
use crate::run::{compile, padded_rows, Cancel, DriverError, Toolchain};
use crate::Options;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use teil::ast::ElemType;
use teil::interface::{self, Coded, Interface, InterfaceError};
use teil::CheckedProgram;
use teil_interp::Tensor;
use teil_io::files::{self, StagingDir};

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
    /// Reassociation of sums ([`Options::lift`]): contraction lifting and sums in lanes.
    pub reassociate: bool,
    /// The sizes the kernel is emitted with ([`Options::sizes`]); default: the host's
    /// ([`crate::machine::Machine::host`]), since the kernel runs here.
    pub sizes: crate::machine::Sizes,
    /// Where compiled objects are cached; `None`: [`default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// The longest the compiler may run before it is stopped; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Stops the compiler when set (for example from a Ctrl-C handler); the compilation then
    /// returns [`DriverError::Interrupted`].
    pub cancel: Cancel,
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            pad: 1,
            cc: Toolchain::default().cc,
            cflags: None,
            openmp: false,
            fma: false,
            reassociate: true,
            sizes: crate::machine::Machine::host().sizes(),
            cache_dir: default_cache_dir(),
            timeout: Some(Duration::from_secs(300)),
            cancel: Cancel::default(),
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
    Some(crate::machine::base_dir("XDG_CACHE_HOME", ".cache")?.join("teil"))
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
    Compile(#[from] DriverError),
    #[error("no cache directory for compiled kernels: set TEIL_CACHE_DIR or HOME")]
    NoCacheDir,
    /// The cache directory given is the empty path (which would be the current directory).
    #[error("the cache directory must not be empty: name a directory, or leave it unset for the per-user default")]
    EmptyCacheDir,
    /// The cache directory is not this user's alone ([`trusted_dir`]).
    #[error(
        "refusing the kernel cache directory `{}`: {reason}; other users could make this \
         process load their code. Use a directory that only you own and can write (for \
         example `chmod go-w` it, or set TEIL_CACHE_DIR)",
        path.display()
    )]
    UntrustedCacheDir { path: PathBuf, reason: String },
    /// A sanitizer flag (`-fsanitize=...`) for a kernel loaded into this process.
    #[error(
        "`{flag}` cannot be used for a kernel loaded into this process: a sanitizer's runtime \
         must be loaded before everything else in the process, which would abort; run the \
         program in a separate process instead (`teil run --backend c --cflags ...`, in Python \
         `Program.run(backend=\"c\", cflags=...)`), which supports sanitizers"
    )]
    Sanitizer { flag: String },
    /// An OpenMP kernel called in a process forked after OpenMP code ran in its parent.
    #[error(
        "an OpenMP kernel cannot run in a process forked from one that had already run OpenMP \
         code (process {parent}): the OpenMP runtime's threads do not survive `fork` and the \
         call would hang. Start worker processes with the \"spawn\" or \"forkserver\" method \
         of multiprocessing, or compile the kernel with openmp=False"
    )]
    OpenMpAfterFork { parent: u32 },
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
    /// The inputs do not fit the program ([`teil::interface::check_inputs`]): every problem,
    /// one per line.
    #[error("{}", Coded(.0))]
    Inputs(Vec<InterfaceError>),
    #[error("the kernel's buffers need {bytes} bytes, more than this machine can provide")]
    TooLarge { bytes: u64 },
    /// An array for the results ([`SharedKernel::call_into`]) names no output of the program.
    #[error("`{0}` is not an output of the program, so no array can receive it")]
    NotAnOutput(String),
    /// An array for the results is float32 where its output is binary64 (the narrowing would
    /// round).
    #[error(
        "the array for output `{0}` is float32, but the output is f64: narrowing would round \
         its values; pass a float64 array"
    )]
    OutType(String),
    /// An array for the results has another shape than its output.
    #[error(
        "the array for output `{name}` has shape {}, but the program declares {}",
        teil::ast::ShapeDisplay(found),
        teil::ast::ShapeDisplay(expected)
    )]
    OutShape {
        name: String,
        found: Vec<u64>,
        expected: Vec<u64>,
    },
}

/// The code of the error's cause; [`KernelError::Inputs`] lists several problems, each with
/// its code in its line ([`Coded`]).
impl teil::CodedError for KernelError {
    fn code(&self) -> Option<teil::Code> {
        match self {
            KernelError::Lower(e) => e.code(),
            KernelError::Compile(e) => e.code(),
            _ => None,
        }
    }

    fn codes(&self) -> Vec<teil::Code> {
        match self {
            KernelError::Inputs(errors) => errors.iter().filter_map(|e| e.code()).collect(),
            e => e.code().into_iter().collect(),
        }
    }
}

/// The C entry point every shared kernel exports: all parameters through one array, so that
/// Rust calls kernels of any arity through one signature.
const ENTRY: &str = "teil_entry";

type EntryFn = unsafe extern "C" fn(*const *mut std::ffi::c_void);

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
    /// Its element type: a binary32 parameter takes only binary32 values (E0605).
    elem: teil::ast::ElemType,
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
    /// What [`Self::call`] checks its inputs against.
    interface: Interface,
    /// Bytes of the workspace the C function allocates per call.
    workspace_bytes: u64,
    path: PathBuf,
    /// The loaded object in [`LOADED`], which keeps it mapped while `entry` may be called.
    object: ObjectId,
    /// Compiled with OpenMP: never unloaded ([`Loaded::pinned`]), and refused in a process
    /// forked after OpenMP code ran ([`OPENMP_PROCESS`]).
    openmp: bool,
}

impl Drop for SharedKernel {
    fn drop(&mut self) {
        release(self.object);
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
            openmp: opts.openmp,
            lift: opts.reassociate,
            sizes: opts.sizes,
            ..Options::default()
        };
        let kernel = crate::lower(p, &lower)?;
        let source = source(&kernel);
        let math = crate::math::units(&[&kernel]);
        let libm = crate::math::needs_libm(&[&kernel]);

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
        if let Some(flag) = tc
            .cflags
            .iter()
            .chain(&crate::run::extra_cflags())
            .find(|f| f.starts_with("-fsanitize="))
        {
            return Err(KernelError::Sanitizer { flag: flag.clone() });
        }
        tc.cancel = opts.cancel.clone();
        let dir = match &opts.cache_dir {
            Some(d) => d.clone(),
            None => default_cache_dir().ok_or(KernelError::NoCacheDir)?,
        };
        trusted_dir(&dir)?;
        files::remove_stale(&dir);
        let secret = secret(&dir)?;
        // The CORE-MATH units compiled with the kernel are part of what the object is.
        let key = cache_key(&format!("{source}{}", crate::math::key_text(&math)), &tc)?;
        let path = dir.join(format!("{key}.{}", std::env::consts::DLL_EXTENSION));
        // Only an object this user wrote and authenticated is loaded; anything else at its
        // name (another user's file, a symbolic link, a damaged or stale object) is built
        // again and replaced.
        let cached = match open_private(&path) {
            Ok(Some((file, bytes))) if authentic(&secret, &dir, &key, &bytes) => {
                load(file, &path, opts.openmp).ok()
            }
            _ => None,
        };
        let (entry, object) = match cached {
            Some(loaded) => loaded,
            None => {
                let file = build(&tc, &dir, &key, (&source, &math, libm), &path, &secret)?;
                load(file, &path, opts.openmp)?
            }
        };
        Ok(Self::new(p, &kernel, entry, object, path, opts.openmp))
    }

    fn new(
        p: &CheckedProgram,
        kernel: &Kernel,
        entry: EntryFn,
        object: ObjectId,
        path: PathBuf,
        openmp: bool,
    ) -> SharedKernel {
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
                Param {
                    var,
                    logical: b.logical.clone(),
                    padded: b.padded.clone(),
                    input,
                    output,
                    elem: b.elem,
                }
            })
            .collect();
        let inputs = interface::required_inputs(p);
        // Every output is a parameter (spec/abi.md); pairing them keeps the two lists parallel.
        let (outputs, output_params) = p
            .output_names()
            .into_iter()
            .filter_map(|o| Some((o.clone(), params.iter().position(|q| q.var == o)?)))
            .unzip();
        SharedKernel {
            entry,
            params,
            output_params,
            inputs,
            outputs,
            interface: Interface::of(p),
            workspace_bytes: kernel.workspace.saturating_mul(8),
            path,
            object,
            openmp,
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
        self.call_into(inputs, &mut BTreeMap::new())
    }

    /// [`Self::call`], writing the outputs named in `outs` into the caller's arrays instead of
    /// new ones (NumPy's `out=`): returns the other outputs. An output-only array whose padded
    /// shape equals its logical one and that is in row-major order is passed to the function
    /// directly, so a call that reuses its arrays allocates no output and copies nothing; any
    /// other is written from the call's buffer. Each array must have its output's shape.
    ///
    /// Every value is binary64 here: an input of a binary32 parameter must hold binary32
    /// numbers (E0605) and is narrowed exactly, a binary32 output is widened exactly
    /// ([`Self::call_typed`] passes float32 arrays through as they are).
    pub fn call_into(
        &self,
        inputs: &BTreeMap<String, ArrayViewD<'_, f64>>,
        outs: &mut BTreeMap<String, ArrayViewMutD<'_, f64>>,
    ) -> Result<BTreeMap<String, Tensor>, KernelError> {
        let inputs: BTreeMap<String, Arg<'_>> = inputs
            .iter()
            .map(|(name, v)| (name.clone(), Arg::F64(v.view())))
            .collect();
        let mut typed: BTreeMap<String, ArgMut<'_>> = outs
            .iter_mut()
            .map(|(name, v)| (name.clone(), ArgMut::F64(v.view_mut())))
            .collect();
        let values = self.call_typed(&inputs, &mut typed)?;
        Ok(values
            .into_iter()
            .map(|(name, v)| (name, v.into_f64()))
            .collect())
    }

    /// [`Self::call_into`] with arrays of either element type ([`Arg`], [`ArgMut`]), returning
    /// each output in its own type ([`Value`]). An array of its parameter's type crosses as it
    /// is (in place where it needs no padding); a float64 input of a binary32 parameter must
    /// hold binary32 numbers (E0605, as the evaluators refuse others) and is narrowed exactly,
    /// a float32 input of a binary64 parameter widened exactly; a float64 array receives a
    /// binary32 output widened exactly, and a float32 array for a binary64 output is refused
    /// ([`KernelError::OutType`]).
    pub fn call_typed(
        &self,
        inputs: &BTreeMap<String, Arg<'_>>,
        outs: &mut BTreeMap<String, ArgMut<'_>>,
    ) -> Result<BTreeMap<String, Value>, KernelError> {
        self.interface
            .check(inputs.iter().map(|(name, value)| {
                let shape: Vec<u64> = value.shape().iter().map(|&n| n as u64).collect();
                (name.as_str(), Some(shape))
            }))
            .map_err(KernelError::Inputs)?;
        for (name, out) in outs.iter() {
            self.check_out(name, out.shape())?;
            let q = self.params.iter().find(|q| q.output && q.var == *name);
            if matches!(out, ArgMut::F32(_)) && q.is_some_and(|q| q.elem == ElemType::F64) {
                return Err(KernelError::OutType(name.clone()));
            }
        }
        // Inputs in their parameter's type.
        let mut converted: BTreeMap<&str, Value> = BTreeMap::new();
        for q in &self.params {
            match (q.elem, inputs.get(&q.var)) {
                (ElemType::F32, Some(Arg::F64(v))) => {
                    interface::check_binary32(&q.var, v.iter().copied())
                        .map_err(|e| KernelError::Inputs(vec![e]))?;
                    converted.insert(&q.var, Value::F32(v.mapv(|x| x as f32)));
                }
                (ElemType::F64, Some(Arg::F32(v))) => {
                    converted.insert(&q.var, Value::F64(v.mapv(f64::from)));
                }
                _ => {}
            }
        }
        let given = |q: &Param| -> Option<Arg<'_>> {
            match converted.get(q.var.as_str()) {
                Some(v) => Some(v.view()),
                None => inputs.get(&q.var).map(Arg::reborrow),
            }
        };

        // Buffers of this call; `None` where the caller's array is passed directly.
        let mut owned: Vec<Option<Buffers>> = Vec::with_capacity(self.params.len());
        let mut pointers: Vec<*mut std::ffi::c_void> = Vec::with_capacity(self.params.len());
        for q in &self.params {
            let out = outs.get_mut(&q.var);
            let (pointer, buffer) = match q.elem {
                ElemType::F64 => slot::<f64>(q, given(q), out)?,
                ElemType::F32 => slot::<f32>(q, given(q), out)?,
            };
            pointers.push(pointer);
            owned.push(buffer);
        }
        self.reserve_workspace()?;
        if self.openmp {
            openmp_process()?;
        }
        // SAFETY: `entry` calls the generated function with `pointers`, one per parameter in
        // order, each to a buffer of that parameter's element type and padded length whose
        // padding is zero (our zeroed buffers, or a caller's array whose padded and logical
        // layouts coincide); the buffers outlive the call and the function writes only the
        // ones in `owned`. The library stays loaded while `self` lives.
        unsafe { (self.entry)(pointers.as_ptr()) };

        let mut out = BTreeMap::new();
        for (name, &i) in self.outputs.iter().zip(&self.output_params) {
            let q = &self.params[i];
            let Some(buf) = owned[i].take() else {
                continue; // written into the caller's array by the function
            };
            match (outs.get_mut(name), buf) {
                (Some(ArgMut::F64(dest)), Buffers::F64(b)) => {
                    dest.assign(&logical_view(b.as_slice(), q))
                }
                (Some(ArgMut::F32(dest)), Buffers::F32(b)) => {
                    dest.assign(&logical_view(b.as_slice(), q))
                }
                // A binary32 output into float64: widening is exact.
                (Some(ArgMut::F64(dest)), Buffers::F32(b)) => {
                    dest.zip_mut_with(&logical_view(b.as_slice(), q), |d, &v| *d = f64::from(v))
                }
                // Refused before the call; never narrowed.
                (Some(ArgMut::F32(_)), Buffers::F64(_)) => {
                    return Err(KernelError::OutType(name.clone()))
                }
                (None, Buffers::F64(b)) => {
                    out.insert(name.clone(), Value::F64(b.into_array(q)));
                }
                (None, Buffers::F32(b)) => {
                    out.insert(name.clone(), Value::F32(b.into_array(q)));
                }
            }
        }
        Ok(out)
    }

    /// Whether an array of `shape` can receive output `name` ([`Self::call_into`]).
    pub fn check_out(&self, name: &str, shape: &[usize]) -> Result<(), KernelError> {
        let q = self
            .output_params
            .iter()
            .map(|&i| &self.params[i])
            .find(|q| q.var == name)
            .ok_or_else(|| KernelError::NotAnOutput(name.to_string()))?;
        let found: Vec<u64> = shape.iter().map(|&n| n as u64).collect();
        if found != q.logical {
            return Err(KernelError::OutShape {
                name: name.to_string(),
                found,
                expected: q.logical.clone(),
            });
        }
        Ok(())
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

    /// The bytes one call may allocate: every parameter's padded buffer (an upper bound: an
    /// input passed in place needs none) plus the workspace of the C function.
    pub fn call_bytes(&self) -> u64 {
        self.params
            .iter()
            .map(|q| q.padded.iter().fold(8u64, |a, &n| a.saturating_mul(n)))
            .fold(self.workspace_bytes, u64::saturating_add)
    }

    /// The largest buffer of a call: its variable and its padded cells.
    pub fn largest_buffer(&self) -> (String, u64) {
        self.params
            .iter()
            .map(|q| {
                let cells = q.padded.iter().fold(1u64, |a, &n| a.saturating_mul(n));
                (q.var.clone(), cells)
            })
            .max_by_key(|(_, cells)| *cells)
            .unwrap_or_default()
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

/// The kernel's C followed by the exported entry thunk: every parameter through one array of
/// pointers, each to a buffer of the parameter's own type (`float` for binary32).
fn source(kernel: &Kernel) -> String {
    let mut c = crate::print::module(&[kernel]);
    c.push_str(
        "\n/* The entry point of the shared object: every parameter through one array. */\n",
    );
    let _ = write!(
        c,
        "#if defined(__GNUC__)\n__attribute__((visibility(\"default\")))\n#endif\n\
         void {ENTRY}(void *const *p);\nvoid {ENTRY}(void *const *p)\n{{\n"
    );
    let args: Vec<String> = kernel
        .params
        .iter()
        .enumerate()
        .map(|(j, &b)| {
            let ty = crate::print::c_type(kernel.buffer(b).elem);
            format!("({ty} *)p[{j}]")
        })
        .collect();
    if args.is_empty() {
        c.push_str("    (void)p;\n");
    }
    let _ = writeln!(c, "    {}({});\n}}", kernel.name, args.join(", "));
    c
}

/// The cache key: SHA-256 over everything the object depends on, in hex: this crate's
/// version, the platform, the compiler (the executable it resolves to, with its size and
/// modification time, and what its `--version` prints), the flags, the environment variables
/// that change which headers and libraries it finds ([`crate::run::KEYED_ENVIRONMENT`]; those
/// that would change what it compiles are refused before, [`Toolchain::check_flags`]), and the
/// source.
fn cache_key(source: &str, tc: &Toolchain) -> Result<String, KernelError> {
    let identity = compiler_identity(&tc.cc);
    let version = compiler_version(tc, &identity)?;
    Ok(key_of(source, tc, &identity, &version, |var| {
        std::env::var_os(var)
    }))
}

/// [`cache_key`] of a compiler already identified, under the environment `env`.
fn key_of(
    source: &str,
    tc: &Toolchain,
    identity: &str,
    version: &str,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"teil-cbackend shared object 2");
    field(concat!(env!("CARGO_PKG_NAME"), " ", env!("CARGO_PKG_VERSION")).as_bytes());
    field(std::env::consts::ARCH.as_bytes());
    field(std::env::consts::OS.as_bytes());
    field(tc.cc.as_bytes());
    field(identity.as_bytes());
    field(version.as_bytes());
    for f in &tc.cflags {
        field(f.as_bytes());
    }
    // The compilation appends these (crate::run::EXTRA_CFLAGS_VAR).
    field(b"extra flags");
    for f in crate::run::extra_cflags() {
        field(f.as_bytes());
    }
    for var in crate::run::KEYED_ENVIRONMENT {
        field(var.as_bytes());
        match env(var) {
            Some(v) => field(v.as_encoded_bytes()),
            None => field(b"\0unset"),
        }
    }
    field(source.as_bytes());
    let digest = h.finalize();
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// What the compiler of `tc` prints for `--version`, run once per process for each compiler
/// (by `identity`: path, size, modification time).
fn compiler_version(tc: &Toolchain, identity: &str) -> Result<String, KernelError> {
    static SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let known = |seen: &Vec<(String, String)>| {
        seen.iter()
            .find(|(id, _)| id == identity)
            .map(|(_, v)| v.clone())
    };
    if let Some(v) = known(&SEEN.lock().unwrap_or_else(|e| e.into_inner())) {
        return Ok(v);
    }
    let version = crate::run::version_output(tc)?;
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if known(&seen).is_none() && !identity.is_empty() {
        seen.push((identity.to_string(), version.clone()));
    }
    Ok(version)
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

/// Refuses a cache directory that is not this user's alone: it must be a real directory (not
/// a symbolic link), owned by the effective user, and writable by nobody else. It is created
/// (mode 0700, with any missing parents) when it does not exist. Anyone who could write it
/// could swap the generated C before it is compiled, or an object before it is loaded.
pub fn trusted_dir(dir: &Path) -> Result<(), KernelError> {
    if dir.as_os_str().is_empty() {
        return Err(KernelError::EmptyCacheDir);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|error| KernelError::Io {
            what: "cannot create the cache directory",
            path: dir.to_path_buf(),
            error,
        })?;
    let meta = std::fs::symlink_metadata(dir).map_err(|error| KernelError::Io {
        what: "cannot examine the cache directory",
        path: dir.to_path_buf(),
        error,
    })?;
    let untrusted = |reason: String| KernelError::UntrustedCacheDir {
        path: dir.to_path_buf(),
        reason,
    };
    if meta.file_type().is_symlink() {
        return Err(untrusted("it is a symbolic link".to_string()));
    }
    if !meta.is_dir() {
        return Err(untrusted("it is not a directory".to_string()));
    }
    let me = euid();
    if meta.uid() != me {
        return Err(untrusted(format!(
            "it is owned by user {}, not by this process's user {me}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(untrusted(format!(
            "its mode {:o} lets the group or others write it",
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The name of the per-user secret in the cache directory.
const SECRET: &str = "teil-cache-secret";

/// The cache directory's secret: 32 random bytes in [`SECRET`] (mode 0600), created once.
/// Every object in the cache is recorded with an HMAC-SHA256 under it ([`authentic`]), which
/// nobody without read access to the secret can compute.
fn secret(dir: &Path) -> Result<[u8; 32], KernelError> {
    let path = dir.join(SECRET);
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |error| KernelError::Io { what, path, error }
    };
    if let Ok(Some((_, bytes))) = open_owned(&path, 0o077) {
        if let Ok(s) = <[u8; 32]>::try_from(bytes.as_slice()) {
            return Ok(s);
        }
    }
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(|e| KernelError::Io {
        what: "cannot draw a secret for the cache directory",
        path: path.clone(),
        error: std::io::Error::other(e.to_string()),
    })?;
    // Staged with mode 0600 and placed only where no secret is; one that failed the checks
    // above (not this user's, readable by others, damaged) is replaced: the objects it
    // authenticated are then rebuilt.
    let staging = staging(dir)?;
    match staging.place("secret", &fresh, &path, false) {
        Ok(()) => Ok(fresh),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Another process created it first (or a bad one is in the way): use theirs if it
            // passes, replace it otherwise.
            match open_owned(&path, 0o077) {
                Ok(Some((_, bytes))) if bytes.len() == 32 => {
                    Ok(<[u8; 32]>::try_from(bytes.as_slice()).expect("32 bytes"))
                }
                _ => {
                    (staging.place("secret", &fresh, &path, true))
                        .map_err(io("cannot write", &path))?;
                    Ok(fresh)
                }
            }
        }
        Err(e) => Err(io("cannot write", &path)(e)),
    }
}

/// The largest file the cache reads (a kernel's object is a few hundred KiB at most).
const MAX_CACHED_FILE: u64 = 1 << 30;

/// The regular file at `path`, opened without following a symbolic link, with its contents,
/// if it is this user's and nobody else may write it; `Ok(None)` if it does not exist or is
/// anything else (a symbolic link, another user's file, a FIFO, ...).
fn open_private(path: &Path) -> std::io::Result<Option<(File, Vec<u8>)>> {
    open_owned(path, 0o022)
}

/// [`open_private`] refusing the permission bits `forbidden` (0o077: readable by nobody else).
fn open_owned(path: &Path, forbidden: u32) -> std::io::Result<Option<(File, Vec<u8>)>> {
    use std::io::Read;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // ELOOP: a symbolic link; anything else unreadable is not trusted either.
        Err(_) => return Ok(None),
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file()
        || meta.uid() != euid()
        || meta.mode() & forbidden != 0
        || meta.len() > MAX_CACHED_FILE
    {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&file).take(MAX_CACHED_FILE).read_to_end(&mut bytes)?;
    Ok(Some((file, bytes)))
}

/// HMAC-SHA256 (RFC 2104) of `parts`, each prefixed by its length, under `secret`.
fn hmac(secret: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(secret);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for p in parts {
        inner.update((p.len() as u64).to_le_bytes());
        inner.update(p);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// The record of an object's HMAC, beside it.
fn mac_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.mac"))
}

/// The hex HMAC that authenticates `bytes` as the object of `key`.
fn mac_text(secret: &[u8; 32], key: &str, bytes: &[u8]) -> String {
    hmac(secret, &[b"teil shared object", key.as_bytes(), bytes])
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Whether `bytes` are the object this user compiled for `key`: the record beside it is this
/// user's and holds their HMAC (compared in constant time).
fn authentic(secret: &[u8; 32], dir: &Path, key: &str, bytes: &[u8]) -> bool {
    let Ok(Some((_, recorded))) = open_private(&mac_path(dir, key)) else {
        return false;
    };
    let expected = mac_text(secret, key, bytes);
    recorded.len() == expected.len()
        && recorded
            .iter()
            .zip(expected.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// How old an unlocked staging directory of a compilation must be before another removes it.
pub use files::STALE_AFTER;

/// A staging directory in the cache directory `dir` for one writer's temporaries (mode 0700,
/// locked while it exists, removed when dropped).
fn staging(dir: &Path) -> Result<StagingDir, KernelError> {
    StagingDir::new_in(dir).map_err(|error| KernelError::Io {
        what: "cannot create a directory in the cache directory",
        path: dir.to_path_buf(),
        error,
    })
}

/// Compiles `source` (with the CORE-MATH units `math`, and the C library's math when `libm`)
/// into `path`: the C source is written (atomically) to `KEY.c` in `dir`,
/// the compiler writes the object into a private (0700) scratch directory in `dir`, where
/// nobody else can reach it; it is made private (0700), its HMAC recorded in `KEY.mac`, and it
/// is renamed onto `path`. Returns the object, open, for [`load`].
fn build(
    tc: &Toolchain,
    dir: &Path,
    key: &str,
    (source, math, libm): (&str, &[&crate::math::Unit], bool),
    path: &Path,
    secret: &[u8; 32],
) -> Result<File, KernelError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |error| KernelError::Io { what, path, error }
    };
    // The compiler's scratch directory, private (0700) and removed with its contents on every
    // return; the source and the record are staged in it before their renames too.
    let scratch = staging(dir)?;
    let c_path = dir.join(format!("{key}.c"));
    (scratch.place("source.c", source.as_bytes(), &c_path, true))
        .map_err(io("cannot write the generated source", &c_path))?;
    let so_tmp = scratch
        .path()
        .join(format!("kernel.{}", std::env::consts::DLL_EXTENSION));
    let units = scratch.path().join("core-math");
    let math = crate::math::write_units(&units, math)
        .map_err(io("cannot write the CORE-MATH sources", &units))?;
    let mut args = vec![OsStr::new("-o"), so_tmp.as_os_str(), c_path.as_os_str()];
    args.extend(math.iter().map(|p| p.as_os_str()));
    if libm {
        args.push(OsStr::new("-lm"));
    }
    compile(tc, &args, scratch.path(), &c_path)?;
    let not_written = || KernelError::Io {
        what: "the compiler did not write a private object",
        path: so_tmp.clone(),
        error: std::io::Error::other("missing, or not a regular file of this user"),
    };
    // The linker may create the object with the umask's group bits: remove them before
    // anything is read (nobody else can reach the scratch directory in the meantime).
    if let Ok(m) = std::fs::symlink_metadata(&so_tmp) {
        if m.file_type().is_file() && m.uid() == euid() {
            std::fs::set_permissions(&so_tmp, std::fs::Permissions::from_mode(0o700))
                .map_err(io("cannot make the object private", &so_tmp))?;
        }
    }
    let (file, bytes) = open_private(&so_tmp)
        .map_err(io("cannot read the compiled kernel", &so_tmp))?
        .ok_or_else(not_written)?;
    let mac = mac_path(dir, key);
    (scratch.place(
        "record.mac",
        mac_text(secret, key, &bytes).as_bytes(),
        &mac,
        true,
    ))
    .map_err(io("cannot write", &mac))?;
    std::fs::rename(&so_tmp, path)
        .map_err(io("cannot move the compiled kernel into the cache", path))?;
    Ok(file)
}

/// A loaded object: the device and inode of its file.
type ObjectId = (u64, u64);

/// An object loaded into this process, shared by every kernel loaded from its file.
struct Loaded {
    /// Declared first: dropped (unloaded) before `file` is closed, so that the name it was
    /// loaded under (`/proc/self/fd/N`) never names another file while it is loaded.
    library: libloading::Library,
    /// The verified file, kept open while the object is loaded.
    file: File,
    /// The kernels that use it.
    users: usize,
    /// Never unloaded: it was compiled with OpenMP, and unloading `libgomp` under its idle
    /// worker threads crashes the process (the test `openmp_kernels_load_and_agree` did).
    pinned: bool,
}

/// Every object the kernels of this process loaded, by file. One lock around loading and
/// unloading: a file is loaded once, under the name of the descriptor held in [`Loaded`].
static LOADED: Mutex<BTreeMap<ObjectId, Loaded>> = Mutex::new(BTreeMap::new());

fn loaded() -> std::sync::MutexGuard<'static, BTreeMap<ObjectId, Loaded>> {
    LOADED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Loads the verified object `file` (found at `path`) and returns its entry point. On Linux
/// the object is loaded through `/proc/self/fd/N`, the very file that was checked and
/// authenticated, so that nothing put at `path` in between is loaded instead.
fn load(file: File, path: &Path, pin: bool) -> Result<(EntryFn, ObjectId), KernelError> {
    let meta = file.metadata().map_err(|error| KernelError::Io {
        what: "cannot examine the compiled kernel",
        path: path.to_path_buf(),
        error,
    })?;
    let id = (meta.dev(), meta.ino());
    let mut all = loaded();
    if let Some(l) = all.get_mut(&id) {
        let entry = symbol(&l.library, path)?;
        l.users += 1;
        l.pinned |= pin;
        return Ok((entry, id));
    }
    let by_fd = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let name = if cfg!(target_os = "linux") && by_fd.exists() {
        by_fd.as_path()
    } else {
        path
    };
    // SAFETY: the object is one this user's process generated and authenticated: its
    // initialisers are those of the C runtime and of `libgomp` at most, which are safe to run
    // at any time.
    let library = unsafe { libloading::Library::new(name) }.map_err(|error| KernelError::Load {
        path: path.to_path_buf(),
        error,
    })?;
    let entry = symbol(&library, path)?;
    all.insert(
        id,
        Loaded {
            library,
            file,
            users: 1,
            pinned: pin,
        },
    );
    Ok((entry, id))
}

fn symbol(library: &libloading::Library, path: &Path) -> Result<EntryFn, KernelError> {
    // SAFETY: `teil_entry` is defined by the generated source with exactly this signature.
    unsafe {
        library
            .get::<EntryFn>(ENTRY.as_bytes())
            .map(|f| *f)
            .map_err(|error| KernelError::Load {
                path: path.to_path_buf(),
                error,
            })
    }
}

/// One kernel stops using `object`; the last one unloads it unless it is pinned.
fn release(object: ObjectId) {
    let mut all = loaded();
    if let Some(l) = all.get_mut(&object) {
        l.users -= 1;
        if l.users == 0 && !l.pinned {
            let Loaded { library, file, .. } = all.remove(&object).expect("present");
            drop(library);
            drop(file);
        }
    }
}

/// The process that first ran an OpenMP kernel (0: none yet). Memory is copied by `fork`, so
/// a forked child sees its parent's id here.
static OPENMP_PROCESS: AtomicU32 = AtomicU32::new(0);

/// Refuses an OpenMP call in a process forked from one that ran OpenMP code: `libgomp`'s
/// thread pool does not survive `fork`, and the child's first parallel region waits forever
/// for threads that do not exist.
fn openmp_process() -> Result<(), KernelError> {
    let me = std::process::id();
    match OPENMP_PROCESS.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => Ok(()),
        Err(first) if first == me => Ok(()),
        Err(parent) => Err(KernelError::OpenMpAfterFork { parent }),
    }
}

/// An element type of a kernel's buffers, on the Rust side: `f64` for `double`, `f32` for
/// `float` (spec/abi.md). Only these two: [`Aligned`] relies on all bits zero being a value.
trait Element: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    /// The undefined value of an input not given (spec/abi.md: NaN).
    const NAN: Self;
    /// The array of an argument of this type (`None`: of the other type).
    fn of(a: Arg<'_>) -> Option<ArrayViewD<'_, Self>>;
    /// The array receiving a result, of this type (`None`: of the other type).
    fn of_mut<'b, 'a>(a: &'b mut ArgMut<'a>) -> Option<&'b mut ArrayViewMutD<'a, Self>>;
    fn buffers(b: Buffer<Self>) -> Buffers;
}

impl Element for f64 {
    const NAN: f64 = f64::NAN;
    fn of(a: Arg<'_>) -> Option<ArrayViewD<'_, f64>> {
        match a {
            Arg::F64(v) => Some(v),
            Arg::F32(_) => None,
        }
    }
    fn of_mut<'b, 'a>(a: &'b mut ArgMut<'a>) -> Option<&'b mut ArrayViewMutD<'a, f64>> {
        match a {
            ArgMut::F64(v) => Some(v),
            ArgMut::F32(_) => None,
        }
    }
    fn buffers(b: Buffer<f64>) -> Buffers {
        Buffers::F64(b)
    }
}

impl Element for f32 {
    const NAN: f32 = f32::NAN;
    fn of(a: Arg<'_>) -> Option<ArrayViewD<'_, f32>> {
        match a {
            Arg::F32(v) => Some(v),
            Arg::F64(_) => None,
        }
    }
    fn of_mut<'b, 'a>(a: &'b mut ArgMut<'a>) -> Option<&'b mut ArrayViewMutD<'a, f32>> {
        match a {
            ArgMut::F32(v) => Some(v),
            ArgMut::F64(_) => None,
        }
    }
    fn buffers(b: Buffer<f32>) -> Buffers {
        Buffers::F32(b)
    }
}

/// An input array of either element type ([`SharedKernel::call_typed`]).
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    F64(ArrayViewD<'a, f64>),
    F32(ArrayViewD<'a, f32>),
}

impl Arg<'_> {
    pub fn shape(&self) -> &[usize] {
        match self {
            Arg::F64(v) => v.shape(),
            Arg::F32(v) => v.shape(),
        }
    }

    fn reborrow(&self) -> Arg<'_> {
        match self {
            Arg::F64(v) => Arg::F64(v.view()),
            Arg::F32(v) => Arg::F32(v.view()),
        }
    }
}

/// An array receiving an output, of either element type ([`SharedKernel::call_typed`]).
#[derive(Debug)]
pub enum ArgMut<'a> {
    F64(ArrayViewMutD<'a, f64>),
    F32(ArrayViewMutD<'a, f32>),
}

impl ArgMut<'_> {
    pub fn shape(&self) -> &[usize] {
        match self {
            ArgMut::F64(v) => v.shape(),
            ArgMut::F32(v) => v.shape(),
        }
    }
}

/// An output of [`SharedKernel::call_typed`], in its element type.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    F64(ArrayD<f64>),
    F32(ArrayD<f32>),
}

impl Value {
    /// The values as binary64 (exact for binary32 ones).
    pub fn into_f64(self) -> Tensor {
        match self {
            Value::F64(a) => a,
            Value::F32(a) => a.mapv(f64::from),
        }
    }

    fn view(&self) -> Arg<'_> {
        match self {
            Value::F64(a) => Arg::F64(a.view()),
            Value::F32(a) => Arg::F32(a.view()),
        }
    }
}

/// The pointer a parameter passes to the function, and the buffer of this call behind it
/// (`None`: the caller's array, passed in place).
type Slot = (*mut std::ffi::c_void, Option<Buffers>);

/// The buffer of parameter `q` (of type `T`) for one call, given the caller's input `given`
/// and array for the result `out` (each used where it is of `q`'s type; the caller converted
/// an input of the other type, and writes a result into an array of the other type after the
/// call): an input-only parameter without padding reads the caller's row-major array in
/// place, an output-only one without padding writes the caller's row-major `out` in place,
/// anything else gets a zeroed buffer of the call, filled with the input where `q` is one.
fn slot<T: Element>(
    q: &Param,
    given: Option<Arg<'_>>,
    out: Option<&mut ArgMut<'_>>,
) -> Result<Slot, KernelError> {
    let (given, out) = (given.and_then(T::of), out.and_then(T::of_mut));
    let unpadded = q.padded == q.logical;
    if let Some(v) = given
        .as_ref()
        .filter(|v| !q.output && unpadded && v.is_standard_layout())
    {
        // The function never writes an input-only buffer (spec/abi.md, *Roles*).
        return Ok((v.as_ptr().cast_mut().cast(), None));
    }
    if let Some(out) = out.filter(|o| !q.input && unpadded && o.is_standard_layout()) {
        // The function ignores an output-only buffer's contents on entry (spec/abi.md,
        // *Roles*) and writes every cell of it.
        return Ok((out.as_mut_ptr().cast(), None));
    }
    let mut buf = if q.output && unpadded {
        // A result without padding: its buffer becomes the returned array, uncopied (aligned
        // for its element type, which is all the generated C assumes).
        Buffer::Result(zeroed_vec(q.padded_len())?)
    } else {
        Buffer::Aligned(Aligned::zeroed(q.padded_len())?)
    };
    if q.input {
        fill(buf.as_mut_slice(), q, given.as_ref());
    }
    let pointer = buf.as_mut_slice().as_mut_ptr().cast();
    Ok((pointer, Some(T::buffers(buf))))
}

/// Writes the logical cells of an input parameter into its zeroed padded buffer: the caller's
/// values in row-major order, or NaN (the undefined value) when none were given.
fn fill<T: Element>(buf: &mut [T], q: &Param, given: Option<&ArrayViewD<'_, T>>) {
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
                buf[row..row + n].fill(T::NAN);
            }
        }
    }
}

/// The logical cells of a padded buffer, as a view with the padded layout's strides.
fn logical_view<'b, T>(buf: &'b [T], q: &Param) -> ArrayViewD<'b, T> {
    let shape: Vec<usize> = q.logical.iter().map(|&n| n as usize).collect();
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * q.padded[d + 1] as usize;
    }
    ArrayViewD::from_shape(IxDyn(&shape).strides(IxDyn(&strides)), buf)
        .expect("a padded buffer holds its logical cells")
}

/// The buffers of one call, of either element type.
enum Buffers {
    F64(Buffer<f64>),
    F32(Buffer<f32>),
}

/// A buffer of one call: 64-byte aligned, or an unpadded result that becomes the returned array.
enum Buffer<T> {
    Aligned(Aligned<T>),
    Result(Vec<T>),
}

impl<T: Element> Buffer<T> {
    fn as_slice(&self) -> &[T] {
        match self {
            Buffer::Aligned(a) => a.as_slice(),
            Buffer::Result(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Buffer::Aligned(a) => a.as_mut_slice(),
            Buffer::Result(v) => v,
        }
    }

    /// The logical cells as an array of the parameter's logical shape (an unpadded result's
    /// buffer itself, uncopied).
    fn into_array(self, q: &Param) -> ArrayD<T> {
        let shape: Vec<usize> = q.logical.iter().map(|&n| n as usize).collect();
        let data = match self {
            Buffer::Result(cells) => cells,
            Buffer::Aligned(buf) if q.padded == q.logical => buf.as_slice().to_vec(),
            Buffer::Aligned(buf) => {
                let buf = buf.as_slice();
                let n = q.logical.last().copied().unwrap_or(1) as usize;
                let rows = padded_rows(&q.logical, &q.padded);
                let mut data = Vec::with_capacity(shape.iter().product());
                for (row, _) in rows.into_iter().filter(|r| r.1) {
                    data.extend_from_slice(&buf[row..row + n]);
                }
                data
            }
        };
        ArrayD::from_shape_vec(IxDyn(&shape), data)
            .expect("the logical cells fill the logical shape")
    }
}

/// `len` zeros, or [`KernelError::TooLarge`] when they cannot be allocated.
fn zeroed_vec<T: Element>(len: usize) -> Result<Vec<T>, KernelError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len.max(1))
        .map_err(|_| KernelError::TooLarge {
            bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        })?;
    v.resize(len, T::default());
    Ok(v)
}

/// A zeroed buffer of `len` elements, 64-byte aligned (spec/abi.md).
struct Aligned<T> {
    chunks: Vec<Chunk>,
    len: usize,
    elem: std::marker::PhantomData<T>,
}

/// 64 zero bytes at a 64-byte boundary: 8 `f64` or 16 `f32` zeros (both types' zero is all
/// bits zero).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Chunk([u8; 64]);

impl<T: Element> Aligned<T> {
    fn zeroed(len: usize) -> Result<Aligned<T>, KernelError> {
        let size = std::mem::size_of::<T>();
        let too_large = || KernelError::TooLarge {
            bytes: (len as u64).saturating_mul(size as u64),
        };
        // At least one chunk, so that even an empty buffer has a valid, aligned address.
        let count = len
            .checked_mul(size)
            .ok_or_else(too_large)?
            .div_ceil(64)
            .max(1);
        let mut chunks = Vec::new();
        chunks.try_reserve_exact(count).map_err(|_| too_large())?;
        chunks.resize(count, Chunk([0; 64]));
        Ok(Aligned {
            chunks,
            len,
            elem: std::marker::PhantomData,
        })
    }

    fn as_slice(&self) -> &[T] {
        // SAFETY: `Chunk` is 64 initialised bytes, so the chunks are `64 * count` contiguous
        // bytes, aligned for `T` (64 is a multiple of its alignment); all bits zero is `+0.0`
        // in both element types, and `len * size_of::<T>() <= 64 * count`.
        unsafe { std::slice::from_raw_parts(self.chunks.as_ptr().cast::<T>(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, with exclusive access through `&mut self`; every bit
        // pattern is a valid `f64` or `f32`.
        unsafe { std::slice::from_raw_parts_mut(self.chunks.as_mut_ptr().cast::<T>(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything the object depends on is in the key: the compiler's `--version` output, the
    /// flags and the search-path variables each change it; the same inputs give the same key.
    #[test]
    fn the_key_changes_with_the_compiler_its_flags_and_its_search_paths() {
        let tc = Toolchain::default();
        let none = |_: &str| None;
        let base = key_of("int x;", &tc, "/usr/bin/cc 1 2", "gcc 12.2.0", none);
        assert_eq!(base.len(), 64);
        assert_eq!(
            base,
            key_of("int x;", &tc, "/usr/bin/cc 1 2", "gcc 12.2.0", none)
        );
        let other = [
            key_of("int y;", &tc, "/usr/bin/cc 1 2", "gcc 12.2.0", none),
            key_of("int x;", &tc, "/usr/bin/cc 1 3", "gcc 12.2.0", none),
            key_of("int x;", &tc, "/usr/bin/cc 1 2", "gcc 12.3.0", none),
            key_of(
                "int x;",
                &tc.clone().with_cflags("-O3"),
                "/usr/bin/cc 1 2",
                "gcc 12.2.0",
                none,
            ),
        ];
        for var in crate::run::KEYED_ENVIRONMENT {
            let set = |v: &str| (v == *var).then(|| "/opt/include".into());
            let empty = |v: &str| (v == *var).then(Default::default);
            let a = key_of("int x;", &tc, "/usr/bin/cc 1 2", "gcc 12.2.0", set);
            let b = key_of("int x;", &tc, "/usr/bin/cc 1 2", "gcc 12.2.0", empty);
            assert!(a != base && b != base && a != b, "{var}");
        }
        for k in other {
            assert_ne!(k, base);
        }
    }
}
