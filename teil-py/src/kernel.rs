//! `teil.Kernel`: a program's C compiled once into a cached shared object, loaded into the
//! process and called without spawning a process or recompiling
//! (`teil_cbackend::shared::SharedKernel`, which pads and unpads).

use crate::arrays::{self, OutArray, Unsigned};
use crate::diag;
use crate::program;
use numpy::{BorrowError, IntoPyArray, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use teil::ast::ElemType;
use teil::CheckedProgram;
use teil_cbackend::run::Cancel;
use teil_cbackend::shared::{Arg, ArgMut, KernelError, SharedKernel, SharedOptions, Value};
use teil_interp::budget::MemoryEstimate;

/// A compiled TeIL program (``Program.compile``): the padding-aware C backend built once into
/// a shared object, cached by content hash in a per-user cache directory (``$TEIL_CACHE_DIR``,
/// else ``$XDG_CACHE_HOME/teil`` or ``~/.cache/teil``), and loaded into the process.
///
/// Calling it runs the native code on the inputs (a mapping and/or keyword arguments, any
/// numeric array-likes; C-contiguous float64 arrays, and float32 ones of ``f32`` inputs, are
/// read in place, unconverted; a variable named
/// ``max_memory`` goes through the mapping) and returns ``{name: numpy.ndarray}`` for every
/// output. Calls release the GIL and may run from several threads at once. Element types are
/// those of ``Program.run``, with the same bits: an ``f32`` output is a float32 array, and an
/// ``f32`` input takes a float32 array, or any array-like whose values are all binary32
/// numbers (``RunError`` E0605 otherwise: nothing rounds a caller's number).
///
/// ``out`` (as NumPy's ``out=``) maps output names to NumPy arrays of the outputs' shapes and
/// dtypes (float64, float32 for an ``f32`` output) that receive the results; the returned dict
/// holds those same arrays. A C-contiguous ``out`` array of its output's dtype, of a kernel
/// compiled without padding (``pad=1``), is the native code's own buffer: a call that reuses its arrays allocates
/// and copies no result, as a C caller would. Any other ``out`` array is written from the
/// call's buffer, and one that shares memory with an input after the call, so that inputs are
/// read as they were given. A variable named ``out`` or ``max_memory`` goes through the inputs
/// mapping.
///
/// ``max_memory`` (bytes; default: half of the machine's memory, as for ``Program.run``) bounds
/// what a call allocates, its padded buffers and the C function's workspace: a call over it
/// raises ``RunError`` (E0701) before anything is allocated.
///
/// Ctrl-C during ``Program.compile`` stops the compiler and raises ``KeyboardInterrupt``. A
/// call cannot be stopped midway (the native code has no cancellation point): Ctrl-C is raised
/// as ``KeyboardInterrupt`` when the call returns, and its results are discarded.
///
/// A kernel compiled with ``openmp=True`` refuses (``RunError``) to run in a process forked
/// from one that had already run OpenMP code (``multiprocessing``'s default ``"fork"`` start
/// method on Linux before Python 3.14): the OpenMP runtime's threads do not survive ``fork`` and
/// the call would hang. Use the ``"spawn"`` or ``"forkserver"`` start method.
///
/// Compiled with ``fma=True`` (``Program.compile``), binary64 contractions and element-wise
/// products-then-adds use fused multiply-adds where the target has them (spec/values.md,
/// "Fused multiply-add"); the default ``fma=False`` is exact, as is ``f32`` arithmetic in
/// either mode.
///
/// >>> k = teil.Program("input alloc x : [3]\noutput alloc y : []\ny = red+ 1 x").compile()
/// >>> k(x=[1, 2, 3])["y"]
/// array(6.)
/// >>> import numpy
/// >>> y = numpy.empty(())
/// >>> k(x=[4, 5, 6], out={"y": y})["y"] is y, y
/// (True, array(15.))
/// >>> k32 = teil.Program("input alloc x : f32[2]\noutput alloc y : f32[2]\ny = exp x").compile()
/// >>> k32(x=numpy.array([0, 1], numpy.float32))["y"]
/// array([1.       , 2.7182817], dtype=float32)
#[pyclass(frozen, module = "teil", name = "Kernel")]
pub struct Kernel {
    inner: SharedKernel,
    /// The element type of every variable of the program.
    elems: BTreeMap<String, ElemType>,
}

/// Compiling or calling failed: the caller's arguments (`ValueError`) or the run (`RunError`).
fn kernel_error(py: Python<'_>, e: KernelError) -> PyErr {
    match e {
        KernelError::Lower(teil_cbackend::Error::BadPad(_) | teil_cbackend::Error::BadName(..))
        | KernelError::Compile(
            teil_cbackend::run::DriverError::UnsafeFlag { .. }
            | teil_cbackend::run::DriverError::UnsafeEnvironment { .. },
        )
        | KernelError::Sanitizer { .. }
        | KernelError::NotAnOutput(_)
        | KernelError::OutShape { .. }
        | KernelError::EmptyCacheDir => PyValueError::new_err(e.to_string()),
        _ => diag::coded_run_error(py, &e),
    }
}

/// Compiles `p` with the GIL released (the C compiler may take seconds), on a worker thread
/// while this one runs Python's signal handlers: Ctrl-C stops the compiler
/// (`SharedOptions::cancel`) and raises `KeyboardInterrupt`.
pub fn compile(py: Python<'_>, p: &CheckedProgram, mut opts: SharedOptions) -> PyResult<Kernel> {
    let flag = Arc::new(AtomicBool::new(false));
    opts.cancel = Cancel::from(flag.clone());
    let elems = p
        .program()
        .decls
        .iter()
        .map(|d| (d.name.name.clone(), d.elem))
        .collect();
    program::interruptible_with(py, Some(&flag), || SharedKernel::compile(p, &opts))?
        .map(|inner| Kernel { inner, elems })
        .map_err(|e| kernel_error(py, e))
}

impl Kernel {
    /// The element type of a variable (binary64 for a name the program does not declare).
    fn elem(&self, name: &str) -> ElemType {
        self.elems.get(name).copied().unwrap_or_default()
    }
}

/// The options of `Program.compile`; `cache_dir` None is the per-user default.
pub fn options(c: crate::program::COptions, cache_dir: Option<PathBuf>) -> SharedOptions {
    let defaults = SharedOptions::default();
    SharedOptions {
        pad: c.pad,
        cc: c.cc,
        cflags: c.cflags,
        openmp: c.openmp,
        fma: c.fma,
        reassociate: c.reassociate,
        cache_dir: cache_dir.or(defaults.cache_dir),
        ..defaults
    }
}

#[pymethods]
impl Kernel {
    #[pyo3(signature = (inputs = None, *, out = None, max_memory = None, **named_inputs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
        max_memory: Option<Unsigned>,
        named_inputs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        // The budget of `Program.run` (E0701), over the buffers of the call.
        let budget = program::budget(arrays::optional(max_memory, "max_memory", 0)?, None);
        let (largest, largest_cells) = self.inner.largest_buffer();
        budget
            .check_memory(&MemoryEstimate {
                who: "the compiled kernel",
                bytes: self.inner.call_bytes(),
                largest: format!("`{largest}`"),
                largest_cells,
            })
            .map_err(|e| diag::coded_run_error(py, &e))?;
        let given = arrays::gather(inputs, named_inputs)?;
        // A C-contiguous float32 array of an `f32` input crosses as it is; anything else as
        // float64 (which the kernel narrows exactly where the values are binary32, E0605).
        let mut held32 = BTreeMap::new();
        let mut held64 = BTreeMap::new();
        for (name, obj) in &given {
            match obj.extract::<PyReadonlyArrayDyn<'py, f32>>() {
                Ok(a) if self.elem(name) == ElemType::F32 && a.is_c_contiguous() => {
                    held32.insert(name.clone(), a);
                }
                _ => {
                    held64.insert(
                        name.clone(),
                        arrays::to_f64(&format!("input `{name}`"), obj)?,
                    );
                }
            }
        }
        let targets = arrays::out_arrays(out, |name| self.elem(name))?;
        for (name, a) in &targets {
            self.inner
                .check_out(name, a.shape())
                .map_err(|e| kernel_error(py, e))?;
        }
        // Borrowed for writing while the native code runs; an array that shares memory with
        // an input (or another `out`) cannot be, and receives its result after the call.
        let read_only = |name: &str| {
            PyValueError::new_err(format!("the array for output `{name}` is read-only"))
        };
        let mut writable64 = BTreeMap::new();
        let mut writable32 = BTreeMap::new();
        let mut later = Vec::new();
        for (name, a) in &targets {
            let borrowed = match a {
                OutArray::F64(a) => a.try_readwrite().map(|rw| {
                    writable64.insert(name.clone(), rw);
                }),
                OutArray::F32(a) => a.try_readwrite().map(|rw| {
                    writable32.insert(name.clone(), rw);
                }),
            };
            match borrowed {
                Ok(()) => {}
                Err(BorrowError::NotWriteable) => return Err(read_only(name)),
                Err(_) => later.push(name.clone()),
            }
        }
        let views: BTreeMap<String, Arg<'_>> = held64
            .iter()
            .map(|(name, a)| (name.clone(), Arg::F64(a.as_array())))
            .chain(
                held32
                    .iter()
                    .map(|(name, a)| (name.clone(), Arg::F32(a.as_array()))),
            )
            .collect();
        let mut outs: BTreeMap<String, ArgMut<'_>> = writable64
            .iter_mut()
            .map(|(name, rw)| (name.clone(), ArgMut::F64(rw.as_array_mut())))
            .chain(
                writable32
                    .iter_mut()
                    .map(|(name, rw)| (name.clone(), ArgMut::F32(rw.as_array_mut()))),
            )
            .collect();
        let mut results = py
            .detach(|| self.inner.call_typed(&views, &mut outs))
            .map_err(|e| kernel_error(py, e))?;
        drop(outs);
        drop(writable64);
        drop(writable32);
        drop(views);
        drop(held64);
        drop(held32);
        let cannot =
            |name: &str, e: BorrowError| PyValueError::new_err(format!("output `{name}`: {e}"));
        for name in later {
            match (results.remove(&name), targets.get(&name)) {
                (Some(value), Some(OutArray::F64(a))) => a
                    .try_readwrite()
                    .map_err(|e| cannot(&name, e))?
                    .as_array_mut()
                    .assign(&value.into_f64()),
                (Some(Value::F32(value)), Some(OutArray::F32(a))) => a
                    .try_readwrite()
                    .map_err(|e| cannot(&name, e))?
                    .as_array_mut()
                    .assign(&value),
                // The values of an `f32` output are binary32: the narrowing is exact.
                (Some(Value::F64(value)), Some(OutArray::F32(a))) => a
                    .try_readwrite()
                    .map_err(|e| cannot(&name, e))?
                    .as_array_mut()
                    .zip_mut_with(&value, |d, &v| *d = v as f32),
                _ => {}
            }
        }
        let dict = PyDict::new(py);
        for name in self.inner.outputs() {
            if let Some(a) = targets.get(name) {
                dict.set_item(name, a.as_any())?;
            } else if let Some(v) = results.remove(name) {
                let array = match v {
                    Value::F64(t) => arrays::to_numpy(py, t, self.elem(name)),
                    Value::F32(t) => t.into_pyarray(py).into_any(),
                };
                dict.set_item(name, array)?;
            }
        }
        Ok(dict)
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

    /// The kernel for a notebook: its interface and its shared object (``teil._display``).
    fn _repr_html_(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::display(slf.as_any(), "kernel_html")
    }

    fn _repr_markdown_(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::display(slf.as_any(), "kernel_markdown")
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
