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
    m.add_function(wrap_pyfunction!(einsum::einsum_shape, m)?)?;
    m.add_function(wrap_pyfunction!(einsum::einsum, m)?)?;
    m.add_function(wrap_pyfunction!(einsum::einsum_program, m)?)?;
    m.add_function(wrap_pyfunction!(arrays::conversion_copies, m)?)?;
    Ok(())
}
