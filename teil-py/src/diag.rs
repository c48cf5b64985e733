//! `teil.Diagnostic` and the exceptions: a diagnostic of the `teil` crate, rendered once by
//! `teil::render` (text without colour, and the `--format json` object) against its source.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::PyTypeInfo;
use teil::render;

create_exception!(
    teil,
    TeilError,
    PyValueError,
    "A TeIL program, equation or run was rejected.\n\n`.diagnostics` lists every `teil.Diagnostic` \
     (empty for `RunError`); `str(e)` is every rendered report."
);
create_exception!(
    teil,
    ParseError,
    TeilError,
    "The text has a syntax error (a diagnostic with an E00xx code)."
);
create_exception!(
    teil,
    ShapeError,
    TeilError,
    "The program parses but is rejected: declarations, statements, shapes, or the einsum and \
     index-notation front ends (E01xx to E05xx)."
);
create_exception!(
    teil,
    RunError,
    TeilError,
    "A problem at run time: a missing, unknown or mis-shaped input, an allocation refused, the C \
     compiler missing or failing.\n\n`str(e)` is the message as `teil run` prints it, each coded \
     problem's code in front (`[E0603] ...`); `.codes` lists those codes in order (`teil explain \
     CODE`), `.code` is the first or `None`."
);

/// One diagnostic: a stable code, a severity, a message, the violated rule, labelled spans,
/// notes and help.
///
/// ``str(d)`` is the report as ``teil check --color never`` prints it; ``d.to_dict()`` is the
/// object ``teil check --format json`` prints.
///
/// >>> [d] = teil.check("alloc A : [2, 3]\nalloc B : [3]\nB = A")
/// >>> d.code, d.severity, d.rule, (d.line, d.column)
/// ('E0202', 'error', 'OK-Stmt', (3, 5))
#[pyclass(frozen, module = "teil", name = "Diagnostic")]
pub struct Diagnostic {
    /// The stable code, e.g. ``"E0305"``.
    #[pyo3(get)]
    code: &'static str,
    /// ``"error"`` or ``"warning"``.
    #[pyo3(get)]
    severity: &'static str,
    #[pyo3(get)]
    message: String,
    /// The violated typing or formation rule (e.g. ``"T-Diag"``), or None.
    #[pyo3(get)]
    rule: Option<&'static str>,
    /// The file name the diagnostic was reported against.
    #[pyo3(get)]
    file: String,
    /// Byte offsets of the primary span into the source.
    #[pyo3(get)]
    start: usize,
    #[pyo3(get)]
    end: usize,
    /// 1-based line and column (in characters) of ``start``.
    #[pyo3(get)]
    line: usize,
    #[pyo3(get)]
    column: usize,
    /// The primary label's message.
    #[pyo3(get)]
    label: String,
    /// The secondary labels, each ``(start, end, message)``.
    #[pyo3(get)]
    labels: Vec<(usize, usize, String)>,
    #[pyo3(get)]
    notes: Vec<String>,
    #[pyo3(get)]
    help: Option<String>,
    text: String,
    json: String,
}

impl Diagnostic {
    /// `d` rendered by `r`, the renderer of the source it was found in (built once per
    /// source: building one indexes the whole text).
    pub fn new(d: &teil::Diagnostic, file: &str, r: &render::Renderer<'_>) -> Self {
        let (line, column) = r.line_col(d.primary.span.start);
        Diagnostic {
            code: d.code.as_str(),
            severity: d.severity.as_str(),
            message: d.message.clone(),
            rule: d.rule,
            file: file.to_string(),
            start: d.primary.span.start,
            end: d.primary.span.end,
            line,
            column,
            label: d.primary.message.clone(),
            labels: d
                .secondary
                .iter()
                .map(|l| (l.span.start, l.span.end, l.message.clone()))
                .collect(),
            notes: d.notes.clone(),
            help: d.help.clone(),
            text: r.text(d, false),
            json: r.json(d),
        }
    }
}

#[pymethods]
impl Diagnostic {
    fn __str__(&self) -> &str {
        &self.text
    }

    /// The report for a notebook: the rendered text with the code, the rule, the help and
    /// the code's explanation (``teil._display``).
    fn _repr_html_(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::display(slf.as_any(), "diagnostic_html")
    }

    fn _repr_markdown_(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::display(slf.as_any(), "diagnostic_markdown")
    }

    fn __repr__(&self) -> String {
        format!(
            "<teil.Diagnostic {} {} at {}:{}:{}: {}>",
            self.severity, self.code, self.file, self.line, self.column, self.message
        )
    }

    /// The diagnostic as the JSON object ``teil check --format json`` prints (fields ``code``,
    /// ``severity``, ``message``, ``rule``, ``file``, ``span``, ``line``, ``column``, ``label``,
    /// ``labels``, ``notes``, ``help``).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.json,))
    }
}

/// Converts diagnostics found in `src` (shown as `file`), against one renderer of `src`: the
/// time is linear in the size of the source plus that of the reports. Python's signal handlers
/// run between diagnostics, so Ctrl-C stops the conversion of a long list.
pub fn convert(
    py: Python<'_>,
    diags: &[teil::Diagnostic],
    file: &str,
    src: &str,
) -> PyResult<Vec<Py<Diagnostic>>> {
    let r = render::Renderer::new(file, src);
    let mut out = Vec::with_capacity(diags.len());
    for (k, d) in diags.iter().enumerate() {
        if k % 256 == 255 {
            py.check_signals()?;
        }
        out.push(Py::new(py, Diagnostic::new(d, file, &r))?);
    }
    Ok(out)
}

/// The exception for a rejected program or equation: `ParseError` when a syntax error
/// (E00xx, spec/diagnostics.md) is among the diagnostics, `ShapeError` otherwise.
pub fn rejected(py: Python<'_>, diags: &[teil::Diagnostic], file: &str, src: &str) -> PyErr {
    let syntax = diags
        .iter()
        .any(|d| d.is_error() && d.code.as_str().starts_with("E00"));
    let converted = match convert(py, diags, file, src) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let text: String = converted.iter().map(|d| d.get().text.clone()).collect();
    if syntax {
        with_diagnostics::<ParseError>(py, text, converted)
    } else {
        with_diagnostics::<ShapeError>(py, text, converted)
    }
}

/// A `teil.RunError` (no diagnostics) with the message as `teil run` prints it (each coded
/// problem's code in front, `[E0701] ...`) and the codes as data: `codes` (every problem's
/// code, in order) and `code` (the first, or `None`).
pub fn run_error(py: Python<'_>, message: impl Into<String>, codes: &[teil::Code]) -> PyErr {
    let err = with_diagnostics::<RunError>(py, message.into(), Vec::new());
    let codes: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
    let value = err.value(py);
    let set = value
        .setattr("codes", codes.clone())
        .and_then(|()| value.setattr("code", codes.first().copied()));
    match set {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// [`run_error`] for one operational error, coded or not.
pub fn coded_run_error(py: Python<'_>, e: &impl teil::CodedError) -> PyErr {
    run_error(py, e.coded(), &e.codes())
}

fn with_diagnostics<E: PyTypeInfo>(
    py: Python<'_>,
    message: String,
    diags: Vec<Py<Diagnostic>>,
) -> PyErr {
    let err = PyErr::new::<E, _>(message);
    let set = PyList::new(py, diags).and_then(|list| err.value(py).setattr("diagnostics", list));
    match set {
        Ok(()) => err,
        Err(e) => e,
    }
}
