//! `teil.check` and `teil.Program`: a checked program with its source, run on any backend.

use crate::arrays::{self, Held, Unsigned};
use teil::CodedError;

/// How the `pad` argument is named in its errors.
pub(crate) const PAD: &str = "pad (the padding multiple)";
use crate::diag::{self, Diagnostic};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;
use teil::fmt::Style;
use teil::interface::{self, Coded};
use teil::CheckedProgram;
use teil_interp::{Budget, Tensor};

/// Parses and checks TeIL text (index notation when ``filename`` ends in ``.tin``) and returns
/// every diagnostic, errors and warnings, sorted by position. Never raises for an ill-formed
/// program.
///
/// >>> teil.check("alloc A : [2, 3]\nA = A")
/// []
/// >>> [d.code for d in teil.check("alloc A : [2, 3]\nalloc B : [3]\nB = A")]
/// ['E0202']
#[pyfunction]
#[pyo3(signature = (source, *, filename = "<string>"))]
pub fn check(py: Python<'_>, source: &str, filename: &str) -> PyResult<Vec<Py<Diagnostic>>> {
    let diags = match teil::guard::load(filename, source) {
        Ok((_, warnings)) => warnings,
        Err(diags) => diags,
    };
    diag::convert(py, &diags, filename, source)
}

/// Which evaluator runs a program.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Fast,
    Oracle,
    C,
}

pub(crate) fn backend(name: &str) -> PyResult<Backend> {
    match name {
        "fast" => Ok(Backend::Fast),
        "oracle" => Ok(Backend::Oracle),
        "c" => Ok(Backend::C),
        _ => Err(PyValueError::new_err(format!(
            "backend must be \"fast\", \"oracle\" or \"c\", not {name:?}"
        ))),
    }
}

pub fn style(syntax: &str) -> PyResult<Style> {
    match syntax {
        "prefix" => Ok(Style::Prefix),
        "infix" => Ok(Style::Infix),
        _ => Err(PyValueError::new_err(format!(
            "syntax must be \"prefix\" or \"infix\", not {syntax:?}"
        ))),
    }
}

/// The budget of one evaluation (spec/limits.md, "Evaluation budgets"): the embeddable
/// core's defaults, with the caller's `max_memory` (bytes) and `max_work` (oracle steps), and a
/// fresh cancellation flag that [`interruptible`] sets on Ctrl-C.
pub(crate) fn budget(max_memory: Option<u64>, max_work: Option<u64>) -> Budget {
    let mut b = Budget::default();
    if let Some(m) = max_memory {
        b.max_memory = m;
    }
    if let Some(w) = max_work {
        b.max_work = w;
    }
    b.with_cancel(Arc::new(AtomicBool::new(false)))
}

/// The work (oracle steps, [`teil_interp::budget::oracle_work`]) up to which an evaluation
/// runs on the calling thread: it ends within about a millisecond, so a Ctrl-C waits no longer
/// than that, and the call saves starting a worker thread, which costs more than such an
/// evaluation (PERFORMANCE.md, "The Python package": `Program.run` on 2 x 2 inputs).
const INLINE_WORK: u64 = 10_000;

/// Whether [`interruptible`] may run the evaluation of `p` by `backend` on the calling
/// thread: a small program on an evaluator (the C backend starts a compiler, which is slow
/// and is what Ctrl-C must reach).
pub(crate) fn small(p: &CheckedProgram, backend: Backend) -> bool {
    backend != Backend::C && teil_interp::budget::oracle_work(p) <= INLINE_WORK
}

/// Runs `work` with the GIL released, on a worker thread, while this thread waits and lets
/// Python run its signal handlers every 50 ms (Python runs them on the main thread only, so
/// the evaluation cannot be where `KeyboardInterrupt` is raised). When a handler raises, the
/// evaluation is cancelled through `budget`'s flag, which the evaluators and the C backend's
/// process supervisor poll, and the exception propagates once the worker has stopped.
///
/// `small` work ([`small`]) runs on the calling thread, with the GIL released, and a Ctrl-C
/// during it is raised when it returns.
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    budget: &Budget,
    small: bool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    if small {
        let value = py.detach(work);
        py.check_signals()?;
        return Ok(value);
    }
    interruptible_with(py, budget.cancel.as_ref(), work)
}

/// [`interruptible`] with the cancellation flag `cancel` (none: a Ctrl-C is raised once `work`
/// has finished by itself).
pub(crate) fn interruptible_with<T: Send>(
    py: Python<'_>,
    cancel: Option<&Arc<AtomicBool>>,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel();
        // Borrowed by the closures that run without the GIL, which must be `Sync`.
        let rx = std::sync::Mutex::new(rx);
        let worker = scope.spawn(move || {
            // The receiver outlives the worker within the scope; a failed send cannot happen.
            let _ = tx.send(work());
        });
        loop {
            let waited = py.detach(|| match rx.lock() {
                Ok(rx) => rx.recv_timeout(Duration::from_millis(50)),
                Err(_) => Err(RecvTimeoutError::Disconnected),
            });
            match waited {
                Ok(value) => return Ok(value),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PyRuntimeError::new_err(
                        "internal error: the evaluation stopped without a result",
                    ))
                }
            }
            if let Err(e) = py.check_signals() {
                if let Some(flag) = cancel {
                    flag.store(true, Ordering::SeqCst);
                }
                let _ = py.detach(|| worker.join());
                return Err(e);
            }
        }
    })
}

/// A checked TeIL program. Raises ``ParseError`` or ``ShapeError`` when the program is
/// rejected (``e.diagnostics`` lists why); warnings are kept in ``.warnings``.
///
/// >>> p = teil.Program('''
/// ... input  alloc A : [2, 3]
/// ... input  alloc B : [3, 2]
/// ... output alloc C : [2, 2]
/// ... C = red+ 2 (diag 2 3 (prod A B))''')
/// >>> p.inputs, p.outputs, p.variables["C"]
/// (['A', 'B'], ['C'], ((2, 2), 'output'))
/// >>> import numpy as np
/// >>> p.run(A=np.ones((2, 3)), B=np.ones((3, 2)))["C"]
/// array([[3., 3.],
///        [3., 3.]])
#[pyclass(frozen, module = "teil", name = "Program")]
pub struct Program {
    checked: CheckedProgram,
    /// The text as given, and the name diagnostics show for it.
    #[pyo3(get)]
    source: String,
    #[pyo3(get)]
    filename: String,
    warnings: Vec<teil::Diagnostic>,
}

impl Program {
    pub fn load(py: Python<'_>, source: String, filename: String) -> PyResult<Self> {
        match teil::guard::load(&filename, &source) {
            Ok((checked, warnings)) => Ok(Program {
                checked,
                source,
                filename,
                warnings,
            }),
            Err(diags) => Err(diag::rejected(py, &diags, &filename, &source)),
        }
    }

    /// Converts the caller's inputs after checking their names against the program's
    /// interface; every problem is reported at once, as `teil run` does.
    fn take_inputs<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyAny>>,
        named: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<BTreeMap<String, Held<'py>>> {
        let given = arrays::gather(inputs, named)?;
        self.check_names(py, &given)?;
        arrays::convert_all(&given)
    }

    /// The names given, checked by the caller boundary (`teil::interface`); the shapes are
    /// checked with the values, by the evaluator or the kernel.
    fn check_names<V>(&self, py: Python<'_>, given: &BTreeMap<String, V>) -> PyResult<()> {
        let names = given.keys().map(|name| (name.as_str(), None::<&[u64]>));
        interface::check_inputs(&self.checked, names).map_err(|errors| {
            let codes: Vec<teil::Code> = errors.iter().filter_map(|e| e.code()).collect();
            diag::run_error(py, Coded(&errors).to_string(), &codes)
        })
    }
}

/// Runs `p` on `inputs` with `backend`; returns every variable's final value.
pub(crate) fn evaluate(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    backend: Backend,
    c: &COptions,
    budget: &Budget,
) -> Result<BTreeMap<String, Tensor>, Failure> {
    match backend {
        Backend::Fast => teil_interp::run_fast_with(p, inputs, budget).map_err(Failure::coded),
        Backend::Oracle => teil_interp::run_oracle_with(p, inputs, budget).map_err(Failure::coded),
        Backend::C => run_c(p, inputs, c, budget),
    }
}

/// Why an evaluation failed: the caller's arguments (`ValueError`) or the run (`RunError`,
/// with the message as `teil run` prints it and its code as data).
pub(crate) enum Failure {
    Usage(String),
    Run {
        message: String,
        codes: Vec<teil::Code>,
    },
}

impl Failure {
    /// An operational error, its code first (`[E0701] ...`) where it has one.
    fn coded(e: impl teil::CodedError) -> Self {
        Failure::Run {
            message: e.coded(),
            codes: e.codes(),
        }
    }

    pub fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Usage(m) => PyValueError::new_err(m),
            Failure::Run { message, codes } => diag::run_error(py, message, &codes),
        }
    }
}

/// How `backend="c"` compiles: the keyword arguments `Program.run` and `Program.compile`
/// share, with their Python defaults ([`Default`], which `teil.einsum` uses).
pub(crate) struct COptions {
    pub pad: u64,
    pub cc: String,
    pub cflags: Option<String>,
    pub openmp: bool,
    pub fma: bool,
    /// Sums may be reassociated (`teil_cbackend::Options::lift`).
    pub reassociate: bool,
}

impl Default for COptions {
    fn default() -> Self {
        COptions {
            pad: 1,
            cc: "cc".to_string(),
            cflags: None,
            openmp: false,
            fma: false,
            reassociate: true,
        }
    }
}

impl COptions {
    /// The options as the keyword arguments give them; `pad` must be at least 1.
    fn of(
        pad: Unsigned,
        cc: String,
        cflags: Option<String>,
        openmp: bool,
        fma: bool,
        reassociate: bool,
    ) -> PyResult<COptions> {
        Ok(COptions {
            pad: pad.get(PAD, 1)?,
            cc,
            cflags,
            openmp,
            fma,
            reassociate,
        })
    }
}

/// The sizes kernels are emitted with: the machine `$TEIL_TARGET_CPU` names (`host`,
/// `reference` or a description file, as `teil emit-c --target-cpu`), else the host
/// (`teil_cbackend::machine`); a bad description is a `ValueError`.
pub(crate) fn target_sizes() -> Result<teil_cbackend::machine::Sizes, Failure> {
    teil_cbackend::machine::Machine::target(None)
        .map(|m| m.sizes())
        .map_err(|e| Failure::Usage(format!("{}: {e}", teil_cbackend::machine::TARGET_CPU_VAR)))
}

/// [`target_sizes`] for a kernel compiled here, with the hint for a CPU that has no measured
/// sizes (`teil_cbackend::machine::unknown_host_hint`, once per CPU) as a Python
/// `UserWarning`.
fn compiled_sizes(py: Python<'_>) -> PyResult<teil_cbackend::machine::Sizes> {
    let sizes = target_sizes().map_err(|e| e.into_py(py))?;
    if let Some(hint) = teil_cbackend::machine::hint_for_target(None) {
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        let message = std::ffi::CString::new(hint.replace('\0', " "))
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        PyErr::warn(py, category.as_any(), &message, 1)?;
    }
    Ok(sizes)
}

/// The C backend as `teil run --backend c` runs it: lowered with padding multiple `pad`,
/// compiled with the system compiler and run in a separate process (so a crash of the compiled
/// code cannot take the Python process down).
fn run_c(
    p: &CheckedProgram,
    inputs: &BTreeMap<String, Tensor>,
    c: &COptions,
    budget: &Budget,
) -> Result<BTreeMap<String, Tensor>, Failure> {
    budget
        .check_memory(&teil_interp::budget::fast_bytes(p))
        .map_err(Failure::coded)?;
    for (name, t) in inputs {
        teil_interp::check_input(p, name, t).map_err(Failure::coded)?;
    }
    let opts = teil_cbackend::Options {
        pad: c.pad,
        fma: c.fma,
        openmp: c.openmp,
        lift: c.reassociate,
        sizes: target_sizes()?,
        ..teil_cbackend::Options::default()
    };
    let mut toolchain = teil_cbackend::run::Toolchain {
        cc: c.cc.clone(),
        ..Default::default()
    };
    if let Some(flag) = &budget.cancel {
        toolchain.cancel = teil_cbackend::run::Cancel::from(flag.clone());
    }
    if let Some(flags) = &c.cflags {
        toolchain = toolchain.with_cflags(flags);
    }
    if c.openmp {
        toolchain.cflags.push("-fopenmp".to_string());
    }
    teil_cbackend::run_program(p, &opts, &toolchain, inputs).map_err(|e| match e {
        teil_cbackend::ProgramError::Lower(e) => lower_failure(e),
        e @ teil_cbackend::ProgramError::Run(
            teil_cbackend::run::DriverError::UnsafeFlag { .. }
            | teil_cbackend::run::DriverError::UnsafeEnvironment { .. },
        ) => Failure::Usage(e.to_string()),
        e => Failure::coded(e),
    })
}

fn lower_failure(e: teil_cbackend::Error) -> Failure {
    match e {
        teil_cbackend::Error::BadPad(_) | teil_cbackend::Error::BadName(..) => {
            Failure::Usage(e.to_string())
        }
        _ => Failure::coded(e),
    }
}

/// A file that could not be read: `OSError` (the subclass its errno names, such as
/// `FileNotFoundError`, with the path as its `filename`), or `ValueError` for a special file.
fn read_error(path: &std::path::Path, e: teil_io::files::ReadError) -> PyErr {
    use teil_io::files::ReadError;
    match e {
        ReadError::Io(io) => {
            let message = io.to_string();
            let message = message
                .split(" (os error")
                .next()
                .unwrap_or(&message)
                .to_string();
            match io.raw_os_error() {
                // `OSError(errno, message, path)` is the errno's subclass, as `open` raises.
                Some(errno) => pyo3::exceptions::PyOSError::new_err((
                    errno,
                    message,
                    path.display().to_string(),
                )),
                None => pyo3::exceptions::PyOSError::new_err(format!(
                    "cannot read `{}`: {message}",
                    path.display()
                )),
            }
        }
        e => PyValueError::new_err(format!("cannot read `{}`: {e}", path.display())),
    }
}

#[pymethods]
impl Program {
    #[new]
    #[pyo3(signature = (source, *, filename = "<string>".to_string()))]
    fn new(py: Python<'_>, source: String, filename: String) -> PyResult<Self> {
        Program::load(py, source, filename)
    }

    /// Reads and checks a program file (index notation when its name ends in ``.tin``).
    /// Bytes that are not UTF-8 become U+FFFD and are reported as invalid characters, as
    /// ``teil check`` does. Only regular files are read, as by ``teil``: a FIFO, device,
    /// directory or socket raises ``ValueError`` without blocking; a missing file raises
    /// ``FileNotFoundError`` (an ``OSError`` naming the path).
    ///
    /// >>> import pathlib, tempfile
    /// >>> path = pathlib.Path(tempfile.mkdtemp()) / "sumsq.teil"
    /// >>> _ = path.write_text("input var A : [2]\noutput var s : []\ns = red+ 1 (A * A)")
    /// >>> teil.Program.from_file(path).run(A=[3, 4])["s"]
    /// array(25.)
    #[staticmethod]
    fn from_file(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let bytes = py
            .detach(|| teil_io::files::read_regular(&path))
            .map_err(|e| read_error(&path, e))?;
        let source = String::from_utf8_lossy(&bytes).into_owned();
        Program::load(py, source, path.display().to_string())
    }

    /// The warnings the checker reported (the program was accepted).
    #[getter]
    fn warnings(&self, py: Python<'_>) -> PyResult<Vec<Py<Diagnostic>>> {
        diag::convert(py, &self.warnings, &self.filename, &self.source)
    }

    /// Every declared variable: ``name -> (shape, qualifier)``, qualifier one of ``"input"``,
    /// ``"output"``, ``"inout"`` or ``None``, in declaration order. Element types: ``dtypes``.
    #[getter]
    fn variables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for d in &self.checked.program().decls {
            let shape = PyTuple::new(py, d.shape())?;
            dict.set_item(&d.name.name, (shape, d.qualifier.map(|q| q.keyword())))?;
        }
        Ok(dict)
    }

    /// Every declared variable's element type as the name of its NumPy dtype: ``name ->
    /// "float64"`` for ``f64`` (and a bare ``[...]``), ``"float32"`` for ``f32``, in
    /// declaration order. ``run`` returns outputs of that dtype; ``numpy.zeros(shape,
    /// p.dtypes[name])`` makes an input of the right type.
    ///
    /// >>> teil.Program("input alloc x : f32[3]\noutput alloc s : f32[]\ns = red+ 1 x").dtypes
    /// {'x': 'float32', 's': 'float32'}
    #[getter]
    fn dtypes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for d in &self.checked.program().decls {
            dict.set_item(&d.name.name, teil::ops::dtype(d.elem))?;
        }
        Ok(dict)
    }

    /// The variables a caller may supply, as ``teil run`` decides them: ``input`` and
    /// ``inout`` variables, or every variable of a program without qualifiers.
    #[getter]
    fn inputs(&self) -> Vec<String> {
        interface::input_names(&self.checked)
    }

    /// The inputs a caller must supply: every ``input``/``inout`` variable; without
    /// qualifiers, the variables read before they are assigned.
    #[getter]
    fn required_inputs(&self) -> Vec<String> {
        interface::required_inputs(&self.checked)
    }

    /// The variables a run returns: ``output`` and ``inout`` variables, or every variable of
    /// a program without qualifiers.
    #[getter]
    fn outputs(&self) -> Vec<String> {
        self.checked.output_names()
    }

    /// Every statement in order, as ``(text, shape)``: the statement as written and the shape
    /// of its right-hand side.
    ///
    /// >>> teil.Program("alloc A : [2, 3]\nalloc B : [3, 2]\nB = transp 1 2 A").statements
    /// [('B = transp 1 2 A', (3, 2))]
    #[getter]
    fn statements<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        self.checked
            .program()
            .stmts
            .iter()
            .map(|s| {
                // A statement of a `.tin` file's lowering has no text of its own.
                let text = self
                    .source
                    .get(s.span.clone())
                    .map_or_else(|| format!("{} = ...", s.target.name), str::to_string);
                Ok((text, PyTuple::new(py, self.checked.shape(&s.value))?))
            })
            .collect()
    }

    /// The program for a notebook: declarations with shapes and qualifiers, statements with
    /// their shapes (``teil._display``).
    fn _repr_html_(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::display(slf.as_any(), "program_html")
    }

    fn _repr_markdown_(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::display(slf.as_any(), "program_markdown")
    }

    /// Runs the program and returns ``{name: numpy.ndarray}`` for every output: float64 for an
    /// ``f64`` variable, float32 for an ``f32`` one (``dtypes``). Undefined cells are NaN.
    ///
    /// Inputs come from the ``inputs`` mapping and from keyword arguments (a variable named
    /// like a keyword of this method must go through the mapping). Any array-like of booleans,
    /// integers or floats is accepted and converted to float64, exactly for float32 and
    /// narrower arrays; C-contiguous float64 arrays are read without a copy. Nothing rounds a
    /// number given for an ``f32`` input: a float32 array is read as it is, and any other
    /// array-like (float64, integers, a list) is accepted when each of its values is a binary32
    /// number (``1.5`` or ``3`` is, ``0.1`` is not), otherwise ``RunError`` with code E0605 names
    /// the input and the first value that is not (round it yourself with
    /// ``x.astype(numpy.float32)``). A float32 array given for an ``f64`` input widens exactly.
    ///
    /// ``backend`` is ``"fast"`` (the whole-tensor evaluator), ``"oracle"`` (the reference
    /// interpreter) or ``"c"`` (the C backend compiled with ``cc`` and ``cflags``, default
    /// ``-O2``, padded to a multiple of ``pad``, run in a separate process; ``fma=True`` lets it
    /// round each product-then-add once and ``reassociate=False`` keeps every sum in the spec's
    /// order, see ``Program.compile``). The three compute the same bits, ``f32`` variables,
    /// element-wise functions (``exp``, ``erf``, ...) and conversions included: binary32
    /// arithmetic is C's ``float`` arithmetic and the functions are correctly rounded
    /// (CORE-MATH) in the C, as in the evaluators. The evaluation runs with the GIL
    /// released. ``max_memory`` and ``max_work`` are the
    /// evaluation budgets (spec/limits.md): ``max_memory`` in bytes (default: half of the machine's
    /// memory), ``max_work`` in oracle steps (default 10**8, a few seconds), integers from 0 to
    /// 2**64 - 1 (``pad`` from 1; ``ValueError`` outside); a run over either raises
    /// ``RunError`` (E0701, E0702) before anything is allocated. Ctrl-C stops a long evaluation
    /// with ``KeyboardInterrupt``.
    ///
    /// >>> p = teil.Program("input alloc x : [3]\noutput alloc y : []\ny = red+ 1 x")
    /// >>> p.run({"x": [1, 2, 3]})["y"]
    /// array(6.)
    /// >>> p.run(x=[1, 2, 3], backend="oracle")["y"].item()
    /// 6.0
    /// >>> import numpy as np
    /// >>> half = teil.Program("input alloc x : f32[2]\noutput alloc y : f32[2]\ny = x / 3")
    /// >>> half.run(x=np.array([1, 2], np.float32))["y"]
    /// array([0.33333334, 0.6666667 ], dtype=float32)
    #[pyo3(signature = (
        inputs = None, *, backend = "fast", pad = Unsigned::of(1), cc = "cc".to_string(),
        cflags = None, openmp = false, fma = false, reassociate = true, max_memory = None,
        max_work = None, **named_inputs
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyAny>>,
        backend: &str,
        pad: Unsigned,
        cc: String,
        cflags: Option<String>,
        openmp: bool,
        fma: bool,
        reassociate: bool,
        max_memory: Option<Unsigned>,
        max_work: Option<Unsigned>,
        named_inputs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let backend = self::backend(backend)?;
        let c = COptions::of(pad, cc, cflags, openmp, fma, reassociate)?;
        let budget = budget(
            arrays::optional(max_memory, "max_memory", 0)?,
            arrays::optional(max_work, "max_work", 0)?,
        );
        let held = self.take_inputs(py, inputs, named_inputs)?;
        let views = arrays::views(&held);
        let p = &self.checked;
        let results = interruptible(py, &budget, small(p, backend), || {
            evaluate(p, &arrays::owned(&views), backend, &c, &budget)
        })?
        .map_err(|f| f.into_py(py))?;
        arrays::results_dict(py, p, results)
    }

    /// The program printed canonically, in ``"prefix"`` (TeIL paper) or ``"infix"`` (report)
    /// syntax, as ``teil fmt`` prints it.
    ///
    /// >>> print(teil.Program("alloc A : [2]\nA = A + A").fmt("infix"), end="")
    /// var A : [2]
    /// A = A + A
    #[pyo3(signature = (syntax = "prefix"))]
    fn fmt(&self, syntax: &str) -> PyResult<String> {
        Ok(teil::fmt::program(self.checked.program(), style(syntax)?))
    }

    /// The program's ops/1 form (spec/fuzzing.md, "The ops/1 form") as a dict, the document
    /// ``teil lower --ops`` prints: ``format``, ``inputs`` and ``outputs`` (name to shape),
    /// ``undefined`` and ``steps``. :func:`teil.onnx.export` builds on it.
    ///
    /// >>> p = teil.Program("input var A : [2]\noutput var s : []\ns = red+ 1 (A * A)")
    /// >>> [(s["op"], s["args"]) for s in p.ops()["steps"]]
    /// [('mul', ['A', 'A']), ('reduce', ['%1'])]
    fn ops<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text = teil::ops::lower(&self.checked).to_json();
        py.import("json")?.call_method1("loads", (text,))
    }

    /// The program's Core-TeIL form (TeIL paper §4), as ``teil fmt --core`` prints it.
    ///
    /// >>> p = teil.Program("input var A : [2]\noutput var s : []\ns = red+ 1 (A * A)")
    /// >>> print(p.core(), end="")
    /// input alloc A : [2]
    /// output alloc s : []
    /// s = red+ 1 (mul A A)
    #[pyo3(signature = (syntax = "prefix"))]
    fn core(&self, py: Python<'_>, syntax: &str) -> PyResult<String> {
        let style = style(syntax)?;
        match teil::core::desugar(&self.checked) {
            Ok(core) => Ok(teil::fmt::program(&core, style)),
            Err(d) => Err(diag::rejected(py, &[d], &self.filename, &self.source)),
        }
    }

    /// The unfolding of the semantics at one cell (``"C[1,2]"``, 1-based; ``"s"`` for a
    /// scalar), as ``teil trace`` prints it. With inputs (as for ``run``), the values are shown
    /// too. ``syntax`` defaults to the one the program is written in.
    ///
    /// >>> p = teil.Program("input var A : [2]\noutput var s : []\ns = red+ 1 (A * A)")
    /// >>> print(p.trace("s", A=[3, 4]), end="")
    /// s[] = ⟦red+ 1 (A * A)⟧[]         [St-Stmt]
    ///     = Σ[k=1..2] ⟦(A * A)⟧[k]     [S-Red]...
    ///     = 3 · 3 + 4 · 4              [store reads]
    ///     = 25                         [arithmetic]
    #[pyo3(signature = (
        cell, inputs = None, *, syntax = None, max_memory = None, max_work = None, **named_inputs
    ))]
    #[allow(clippy::too_many_arguments)]
    fn trace<'py>(
        &self,
        py: Python<'py>,
        cell: &str,
        inputs: Option<&Bound<'py, PyAny>>,
        syntax: Option<&str>,
        max_memory: Option<Unsigned>,
        max_work: Option<Unsigned>,
        named_inputs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let budget = budget(
            arrays::optional(max_memory, "max_memory", 0)?,
            arrays::optional(max_work, "max_work", 0)?,
        );
        let (name, idx) = interface::parse_cell(cell).map_err(PyValueError::new_err)?;
        let style = match syntax {
            Some(s) => style(s)?,
            None => interface::written_style(&self.source),
        };
        let given = arrays::gather(inputs, named_inputs)?;
        let held = if given.is_empty() {
            None
        } else {
            self.check_names(py, &given)?;
            Some(arrays::convert_all(&given)?)
        };
        let views = held.as_ref().map(arrays::views);
        let p = &self.checked;
        let lines = interruptible(py, &budget, small(p, Backend::Oracle), || {
            let tensors = views.as_ref().map(arrays::owned);
            teil_interp::trace::trace(p, &name, &idx, tensors.as_ref(), style, &budget)
        })?
        .map_err(|e| match e {
            teil_interp::trace::TraceError::Run(e) => diag::coded_run_error(py, &e),
            e => diag::run_error(py, e.to_string(), &[]),
        })?;
        let text = teil_interp::trace::render_with_hint(
            &lines,
            "pass the inputs as to run(), e.g. p.trace(\"C[1,2]\", A=a, B=b), to see the values",
        );
        // `teil.TraceStep`s: formula, rule, and the byte span of the source it evaluates.
        type Step = (String, String, Option<(usize, usize)>);
        let steps: Vec<Step> = lines
            .into_iter()
            .map(|l| (l.text, l.rule, l.span.map(|s| (s.start, s.end))))
            .collect();
        Ok(py
            .import("teil._display")?
            .getattr("Trace")?
            .call1((text, steps, &self.source))?
            .unbind())
    }

    /// The C99 translation unit of the padding-aware backend (spec/abi.md), as
    /// ``teil emit-c --pad PAD --name NAME`` prints it (``fma=True``: ``--fma``;
    /// ``reassociate=False``: ``--no-reassociate``), sized for the machine the environment
    /// variable ``TEIL_TARGET_CPU`` names (``host``, ``reference`` or a description file, as
    /// ``--target-cpu``), else for this one (spec/padding.md, *Sizes from the machine*); a
    /// description that cannot be read raises ``ValueError``.
    ///
    /// >>> p = teil.Program("input var A : [2]\noutput var s : []\ns = red+ 1 (A * A)")
    /// >>> print(next(l for l in p.emit_c(name="sumsq").splitlines() if l.startswith("void")))
    /// void sumsq(double *restrict A, double *restrict s)
    #[pyo3(signature = (
        *, pad = Unsigned::of(1), name = "teil_kernel", openmp = false, fma = false,
        reassociate = true
    ))]
    fn emit_c(
        &self,
        py: Python<'_>,
        pad: Unsigned,
        name: &str,
        openmp: bool,
        fma: bool,
        reassociate: bool,
    ) -> PyResult<String> {
        let opts = teil_cbackend::Options {
            pad: pad.get(PAD, 1)?,
            name: name.to_string(),
            fma,
            openmp,
            lift: reassociate,
            sizes: target_sizes().map_err(|e| e.into_py(py))?,
        };
        let kernel =
            teil_cbackend::lower(&self.checked, &opts).map_err(|e| lower_failure(e).into_py(py))?;
        Ok(teil_cbackend::print::module(&[&kernel]))
    }

    /// Compiles the program's C once into a shared object (cached by content hash in the
    /// per-user cache directory, or ``cache_dir``) and loads it: a ``teil.Kernel`` to call many
    /// times without recompiling. ``cflags`` replaces the default ``-O2``; whatever they
    /// say, the kernel computes exactly (contraction of multiply-adds stays off), and flags
    /// that change values (``-ffast-math``, ``-Ofast``, ``-ffinite-math-only``, ...) raise
    /// ``ValueError`` (spec/abi.md, "Compiling the C"), as do sanitizer flags
    /// (``-fsanitize=...``, whose runtime cannot be loaded into a running Python: use
    /// ``run(backend="c")``). ``pad`` is an integer from 1 to 2**64 - 1 (``ValueError``
    /// otherwise). Ctrl-C stops the compiler and raises ``KeyboardInterrupt``.
    ///
    /// The cache directory (``cache_dir``, ``""`` is refused) must be owned by the user and
    /// writable by nobody else (``RunError`` otherwise; a missing one is created with mode
    /// 0700); an object is loaded only if its bytes carry the HMAC recorded when this user
    /// compiled it, so a file planted under its name is compiled again, never loaded
    /// (spec/limits.md, "Kernels loaded in-process").
    ///
    /// ``fma=False`` (the default) keeps results bit for bit those of ``backend="oracle"``,
    /// except where the kernel reassociates sums, a permitted result of spec/values.md
    /// ("Reassociation"): contraction lifting, and sums of 64 or more terms along unit stride,
    /// computed in 16 lanes (spec/padding.md, "Sums in lanes"); ``reassociate=False`` turns
    /// both off, so that every sum keeps the spec's order and the results are the oracle's bit
    /// for bit. ``fma=True`` is the
    /// fused multiply-add mode (spec/values.md, "Fused multiply-add"): contractions and
    /// element-wise products-then-adds may round ``x * y + c`` once instead of twice, which is
    /// faster on machines with FMA instructions and differs from the exact result by at most
    /// ``2 γ_k Σ|a_i b_i|`` for a contraction of length ``k`` (``γ_k = k u / (1 − k u)``,
    /// ``u = 2**-53``). It fuses only where the compiler targets FMA hardware, for example
    /// with ``cflags="-O3 -march=native"``; elsewhere the results are the exact ones. It fuses
    /// binary64 pairs only: ``f32`` arithmetic keeps the exact bits in either mode.
    ///
    /// Programs with ``f32`` variables, element-wise functions and conversions compile too,
    /// with the evaluators' bits (see ``Program.run``); the kernel takes and returns their
    /// ``f32`` variables as ``Program.run`` does (``teil.Kernel``).
    ///
    /// >>> k = teil.Program("input alloc x : [2]\noutput alloc y : [2]\ny = x + x").compile(pad=4)
    /// >>> k(x=[1, 2])["y"]
    /// array([2., 4.])
    #[pyo3(signature = (
        *, pad = Unsigned::of(1), cflags = None, cc = "cc".to_string(), openmp = false,
        fma = false, reassociate = true, cache_dir = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn compile(
        &self,
        py: Python<'_>,
        pad: Unsigned,
        cflags: Option<String>,
        cc: String,
        openmp: bool,
        fma: bool,
        reassociate: bool,
        cache_dir: Option<PathBuf>,
    ) -> PyResult<crate::kernel::Kernel> {
        let c = COptions::of(pad, cc, cflags, openmp, fma, reassociate)?;
        let mut opts = crate::kernel::options(c, cache_dir);
        opts.sizes = compiled_sizes(py)?;
        crate::kernel::compile(py, &self.checked, opts)
    }

    fn __repr__(&self) -> String {
        format!(
            "<teil.Program {:?}: inputs {:?}, outputs {:?}>",
            self.filename,
            interface::input_names(&self.checked),
            self.checked.output_names()
        )
    }
}
