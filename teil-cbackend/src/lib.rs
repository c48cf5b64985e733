//! TeIL's padding-aware C backend.
//!
//! The pipeline: a [`teil::CheckedProgram`] is lowered ([`lower()`]) to a small loop IR
//! ([`ir::Kernel`]: buffers, loop nests, accumulators, stores), which [`print::module`] prints as
//! C99. [`emit_c`] does both for one program. [`run`] compiles generated kernels with the system
//! C compiler together with a generated driver ([`driver`]) and runs them in a separate process.
//! [`shared::SharedKernel`] compiles one program into a cached shared object and calls it
//! in-process, as often as needed.
//!
//! The calling convention is spec/abi.md; why the generated code computes exactly the unpadded
//! results and leaves all padding zero is spec/padding.md.
//!
//! # Calling a kernel from Rust
//!
//! ```
//! use std::collections::BTreeMap;
//! use teil_cbackend::shared::{SharedKernel, SharedOptions};
//!
//! let src = "input var A : [2 3]\ninput var B : [3 2]\noutput var C : [2 2]\nC = (A # B) .[2 3]";
//! let (program, _warnings) = teil::compile(src).expect("well typed");
//! // C source: what `teil emit-c --pad 4` prints (spec/abi.md).
//! let c = teil_cbackend::emit_c(&program, &teil_cbackend::Options { pad: 4, ..Default::default() })?;
//! assert!(c.contains("void teil_kernel(double *restrict A, double *restrict B, double *restrict C)"));
//!
//! // Compiled once with `cc`, cached (here in a scratch directory instead of ~/.cache/teil),
//! // then called in-process without spawning anything.
//! let scratch = tempfile::tempdir()?;
//! let opts = SharedOptions { pad: 4, cache_dir: Some(scratch.path().into()), ..Default::default() };
//! let kernel = SharedKernel::compile(&program, &opts)?;
//! assert_eq!((kernel.inputs(), kernel.outputs()), (&["A".into(), "B".into()][..], &["C".into()][..]));
//! let a = ndarray::array![[1., 2., 3.], [4., 5., 6.]].into_dyn();
//! let b = ndarray::array![[1., 0.], [0., 1.], [1., 1.]].into_dyn();
//! let inputs = BTreeMap::from([("A".to_string(), a.view()), ("B".to_string(), b.view())]);
//! for _ in 0..100 {
//!     let out = kernel.call(&inputs)?;
//!     assert_eq!(out["C"], ndarray::array![[4., 5.], [10., 11.]].into_dyn());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Architecture Invariant:** the backend reads every shape from the checker
//! ([`teil::CheckedProgram::shape`]); it never re-derives typing.
//!
//! **Architecture Invariant:** generated C depends only on the program and the [`Options`]:
//! no paths, times or hash-map order.

pub mod driver;
pub mod ir;
mod lower;
pub mod machine;
pub mod math;
pub mod names;
pub mod opt;
// Deliberate miscompilations for testing the fuzzer and the validator; the backend never
// applies them itself.
#[doc(hidden)]
pub mod plant;
pub mod print;
// Compiling and running C, and loading shared objects, need a Unix host: processes, private
// scratch directories (`teil_io::files`) and a dynamic loader (none in the browser build).
#[cfg(unix)]
pub mod run;
#[cfg(unix)]
pub mod shared;
#[cfg(unix)]
pub mod tune;
pub mod validate;

use teil::CheckedProgram;

/// Default name of the generated function.
pub const DEFAULT_NAME: &str = "teil_kernel";

/// How to lower a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The padding multiple M: every extent is rounded up to a multiple of it (1: no padding).
    pub pad: u64,
    /// The C function name.
    pub name: String,
    /// Reassociation within the laws of spec/values.md: contraction lifting (TeIL paper §5)
    /// and sums of 64 or more terms in lanes (spec/padding.md, "Sums in lanes"). Results are
    /// then permitted ones, which can differ from the interpreter's by rounding; without it,
    /// results are bit-identical.
    pub lift: bool,
    /// Fused multiply-add mode (spec/values.md, "Fused multiply-add"): contraction kernels and
    /// element-wise product-then-adds may round `x * y + c` once instead of twice. Changes
    /// results (within the bound the spec states), so it is off by default; recorded in the
    /// kernel ([`ir::Kernel::fma`]).
    pub fma: bool,
    /// Parallel outer loops: `#pragma omp parallel for` on the outermost loop of every nest
    /// and copy, and per-thread row panels in the packed contraction kernel (spec/abi.md,
    /// "OpenMP"); the C must then be compiled with `-fopenmp`. Recorded in the kernel
    /// ([`ir::Kernel::openmp`]) by the lowering, which every caller goes through.
    pub openmp: bool,
    /// The sizes the kernel-form passes derive from the machine the kernel is emitted for
    /// ([`machine::Machine::sizes`]): which form and blocking a step gets, never what a cell
    /// computes. Default: the reference machine's ([`machine::Machine::reference`]), so that
    /// the C does not depend on the machine that prints it; callers that compile for the
    /// host pass `Machine::host().sizes()`. Recorded in the kernel ([`ir::Kernel::sizes`]).
    pub sizes: machine::Sizes,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pad: 1,
            name: DEFAULT_NAME.to_string(),
            lift: true,
            fma: false,
            openmp: false,
            sizes: machine::Sizes::default(),
        }
    }
}

/// Why a program could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the padding multiple must be at least 1, got {0}")]
    BadPad(u64),
    #[error("`{0}` cannot be the kernel's C name: {1}")]
    BadName(String, &'static str),
    #[error(
        "{what} is too large for the C backend once padded (more than 2^60 - 1 \
         elements: its size in bytes would not fit a signed 64-bit `ptrdiff_t`)"
    )]
    TooLarge { what: String },
    #[error("the program needs too many temporaries")]
    TooComplex,
    #[error("internal error in the C backend: {0}")]
    Internal(String),
}

impl teil::CodedError for Error {
    fn code(&self) -> Option<teil::Code> {
        match self {
            Error::TooLarge { .. } => Some(teil::Code::CTooLarge),
            _ => None,
        }
    }
}

/// Why [`run_program`] failed.
#[cfg(unix)]
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// The inputs do not fit the program ([`teil::interface::check_inputs`], as
    /// [`shared::SharedKernel`] checks them): every problem, one per line, each with its code.
    #[error("{}", teil::interface::Coded(.0))]
    Inputs(Vec<teil::interface::InterfaceError>),
    /// The program could not be lowered (for example a padding multiple of 0).
    #[error(transparent)]
    Lower(#[from] Error),
    /// The compiler or the compiled kernel failed, or the run was stopped.
    #[error(transparent)]
    Run(#[from] run::DriverError),
    /// The kernel broke the ABI's padding invariant (spec/abi.md): a backend bug.
    #[error("internal error: the generated kernel left non-zero padding in {}", .0.join(", "))]
    NonzeroPadding(Vec<String>),
}

#[cfg(unix)]
/// The code of the error's cause; [`ProgramError::Inputs`] lists several problems, each with
/// its code in its line.
impl teil::CodedError for ProgramError {
    fn code(&self) -> Option<teil::Code> {
        match self {
            ProgramError::Lower(e) => e.code(),
            ProgramError::Run(e) => e.code(),
            ProgramError::Inputs(_) | ProgramError::NonzeroPadding(_) => None,
        }
    }

    fn codes(&self) -> Vec<teil::Code> {
        match self {
            ProgramError::Inputs(errors) => errors.iter().filter_map(|e| e.code()).collect(),
            e => e.code().into_iter().collect(),
        }
    }
}

/// The C backend as `teil run --backend c` runs a program: lowered with `opts` (with
/// [`Options::openmp`], the toolchain's flags must include `-fopenmp`), compiled by `tc` and
/// run once in a separate process, its padding checked zero afterwards. Returns every
/// variable's final value. The one implementation behind the CLI and the Python package. The
/// inputs are checked first as every caller's are ([`teil::interface::check_inputs`]): each
/// given one an input of `p` with its declared shape, every required input given, and an
/// `f32` one holding binary32 numbers only ([`teil::interface::check_binary32`], E0605).
#[cfg(unix)]
pub fn run_program(
    p: &CheckedProgram,
    opts: &Options,
    tc: &run::Toolchain,
    inputs: &std::collections::BTreeMap<String, ndarray::ArrayD<f64>>,
) -> Result<std::collections::BTreeMap<String, ndarray::ArrayD<f64>>, ProgramError> {
    let given = inputs.iter().map(|(name, value)| {
        let shape: Vec<u64> = value.shape().iter().map(|&n| n as u64).collect();
        (name.as_str(), Some(shape))
    });
    teil::interface::check_inputs(p, given).map_err(ProgramError::Inputs)?;
    // A binary32 input takes only binary32 numbers (E0605): the driver converts to `float`.
    for (name, value) in inputs {
        if p.var_elem(name) == Some(teil::ast::ElemType::F32) {
            teil::interface::check_binary32(name, value.iter().copied())
                .map_err(|e| ProgramError::Inputs(vec![e]))?;
        }
    }
    let kernel = lower(p, opts)?;
    let outcome = run::run(tc, &kernel, inputs)?;
    if !outcome.nonzero_padding.is_empty() {
        return Err(ProgramError::NonzeroPadding(outcome.nonzero_padding));
    }
    Ok(outcome.values)
}

/// Lowers a checked program to the loop IR.
pub fn lower(p: &CheckedProgram, opts: &Options) -> Result<ir::Kernel, Error> {
    opt::lower_tuned(p, opts, &opt::Tuning::default())
}

/// Lowers and prints one program as a self-contained C99 translation unit.
pub fn emit_c(p: &CheckedProgram, opts: &Options) -> Result<String, Error> {
    Ok(print::module(&[&lower(p, opts)?]))
}
