//! `teil.Kernel`: a program's C compiled once into a cached shared object, loaded into the
//! process and called without spawning a process or recompiling
//! (`teil_cbackend::shared::SharedKernel`, which pads and unpads).

use crate::arrays;
use crate::diag;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use teil::CheckedProgram;
use teil_cbackend::shared::{KernelError, SharedKernel, SharedOptions};

/// A compiled TeIL program (``Program.compile``): the padding-aware C backend built once into
/// a shared object, cached by content hash in a per-user cache directory (``$TEIL_CACHE_DIR``,
/// else ``$XDG_CACHE_HOME/teil`` or ``~/.cache/teil``), and loaded into the process.
///
/// Calling it runs the native code on the inputs (a mapping and/or keyword arguments, any
/// numeric array-likes; C-contiguous float64 arrays are read in place) and returns
/// ``{name: numpy.ndarray}`` for every output. Calls release the GIL and may run from several
/// threads at once.
///
/// Compiled with ``fma=True`` (``Program.compile``), contractions and element-wise
/// products-then-adds use fused multiply-adds where the target has them (spec/values.md,
/// "Fused multiply-add"); the default ``fma=False`` is exact.
///
/// >>> k = teil.Program("input alloc x : [3]\noutput alloc y : []\ny = red+ 1 x").compile()
/// >>> k(x=[1, 2, 3])["y"]
/// array(6.)
#[pyclass(frozen, module = "teil", name = "Kernel")]
pub struct Kernel {
    inner: SharedKernel,
}

/// Compiling or calling failed: the caller's arguments (`ValueError`) or the run (`RunError`).
fn kernel_error(py: Python<'_>, e: KernelError) -> PyErr {
    match e {
        KernelError::Lower(teil_cbackend::Error::BadPad(_) | teil_cbackend::Error::BadName(..))
        | KernelError::Compile(teil_cbackend::run::RunError::UnsafeFlag { .. }) => {
            PyValueError::new_err(e.to_string())
        }
        _ => diag::run_error(py, e.to_string()),
    }
}

/// Compiles `p` (with the GIL released: the C compiler may take seconds).
pub fn compile(py: Python<'_>, p: &CheckedProgram, opts: SharedOptions) -> PyResult<Kernel> {
    py.detach(|| SharedKernel::compile(p, &opts))
        .map(|inner| Kernel { inner })
        .map_err(|e| kernel_error(py, e))
}

/// The options of `Program.compile`; `cache_dir` None is the per-user default.
pub fn options(
    pad: u64,
    cc: String,
    cflags: Option<String>,
    openmp: bool,
    fma: bool,
    cache_dir: Option<PathBuf>,
) -> SharedOptions {
    let defaults = SharedOptions::default();
    SharedOptions {
        pad,
        cc,
        cflags,
        openmp,
        fma,
        cache_dir: cache_dir.or(defaults.cache_dir),
        ..defaults
    }
}

#[pymethods]
impl Kernel {
    #[pyo3(signature = (inputs = None, **named_inputs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyAny>>,
        named_inputs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let given = arrays::gather(inputs, named_inputs)?;
        let held = arrays::convert_all(&given)?;
        let views = arrays::views(&held);
        let out = py
            .detach(|| self.inner.call(&views))
            .map_err(|e| kernel_error(py, e))?;
        arrays::results_dict(py, self.inner.outputs(), out)
    }

    /// The inputs a call must give, in declaration order.
    #[getter]
    fn inputs(&self) -> Vec<String> {
        self.inner.inputs().to_vec()
    }

    /// The variables a call returns, in declaration order.
    #[getter]
    fn outputs(&self) -> Vec<String> {
        self.inner.outputs().to_vec()
    }

    /// The loaded shared object in the cache directory (its C source is beside it, ``.c``).
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    fn __repr__(&self) -> String {
        format!(
            "<teil.Kernel {}: inputs {:?}, outputs {:?}>",
            self.inner.path().display(),
            self.inner.inputs(),
            self.inner.outputs()
        )
    }
}
