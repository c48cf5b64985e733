//! `teil._native`: the Rust half of the `teil` Python package.
//!
//! A thin layer in the manner of pydantic-core and tokenizers: every function converts its
//! Python arguments, calls the Rust crates (`teil`, `teil_interp`, `teil_cbackend`) and
//! converts the answer back. Decisions (which variables are inputs, how a diagnostic is
//! rendered, what a shape error is) are the crates' own; see `teil::interface` and
//! `teil::render`. The pure-Python half (`python/teil/__init__.py`) adds `teil.guarded`.
//!
//! - `diag`: `teil.Diagnostic` and the exception hierarchy;
//! - `arrays`: array-likes in (zero-copy for C-contiguous float64), NumPy arrays out;
//! - `program`: `teil.Program` and `teil.check`;
//! - `kernel`: `teil.Kernel`, a program compiled into a shared object;
//! - `einsum`: `teil.einsum_shape`, `teil.einsum`, `teil.einsum_program`.

use pyo3::prelude::*;

mod arrays;
mod diag;
mod einsum;
mod kernel;
mod program;

/// The rich form of `obj` (`_repr_html_`, `_repr_markdown_`, for notebooks) made by the pure
/// Python function `func` of `teil._display`, imported when a notebook first asks: the one
/// place the HTML is written, and no import of IPython for users without notebooks.
pub(crate) fn display(obj: &Bound<'_, PyAny>, func: &str) -> PyResult<String> {
    obj.py()
        .import("teil._display")?
        .getattr(func)?
        .call1((obj,))?
        .extract()
}

/// The long explanation of a diagnostic code, as ``teil explain CODE`` prints it (the code in
/// any case, ``"E0305"`` or ``"e0305"``); ``ValueError`` for an unknown code.
///
/// >>> teil.explain("E0305").splitlines()[0]
/// 'E0305: paired dimensions have different extents'
#[pyfunction]
fn explain(code: &str) -> PyResult<String> {
    match teil::Code::parse(code) {
        Some(c) => Ok(c.explain()),
        None => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "no diagnostic code `{code}` (codes look like E0305)"
        ))),
    }
}

#[pymodule]
#[pyo3(name = "_native")]
fn teil_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("TeilError", py.get_type::<diag::TeilError>())?;
    m.add("ParseError", py.get_type::<diag::ParseError>())?;
    m.add("ShapeError", py.get_type::<diag::ShapeError>())?;
    m.add("RunError", py.get_type::<diag::RunError>())?;
    m.add_class::<diag::Diagnostic>()?;
    m.add_class::<program::Program>()?;
    m.add_class::<kernel::Kernel>()?;
    m.add_function(wrap_pyfunction!(program::check, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(einsum::einsum_shape, m)?)?;
    m.add_function(wrap_pyfunction!(einsum::einsum, m)?)?;
    m.add_function(wrap_pyfunction!(einsum::einsum_program, m)?)?;
    m.add_function(wrap_pyfunction!(arrays::conversion_copies, m)?)?;
    Ok(())
}
