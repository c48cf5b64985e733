//! The einsum guard: `teil.einsum_shape`, `teil.einsum` and `teil.einsum_program`, over
//! `teil::guard::einsum` (spec/frontends.md). Diagnostics point into the equation, shown as
//! `<equation>` as in `teil einsum`.

use crate::arrays::{self, Held};
use crate::diag;
use crate::program::{self, COptions};
use ndarray::ArrayViewD;
use numpy::PyUntypedArrayMethods;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyTuple};
use std::collections::BTreeMap;
use teil::ast::ElemType;
use teil::guard::EinsumOutcome;
use teil::{interface, CheckedProgram};

/// The name diagnostics show for an equation.
const EQUATION: &str = "<equation>";

/// Shapes given as tuples (or lists) of non-negative integers: `TypeError` for anything else,
/// `ValueError` for an extent that is negative or does not fit in 64 bits.
fn shapes_of(shapes: &Bound<'_, PyTuple>) -> PyResult<Vec<Vec<u64>>> {
    let type_name = |o: &Bound<'_, PyAny>| {
        o.get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    };
    shapes
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let not_a_shape = |what: String| {
                PyTypeError::new_err(format!("shape {k} must be a tuple of integers, not {what}"))
            };
            if !(s.is_instance_of::<PyTuple>() || s.is_instance_of::<PyList>()) {
                return Err(not_a_shape(type_name(&s)));
            }
            let items: Vec<Bound<'_, PyAny>> = s.try_iter()?.collect::<PyResult<_>>()?;
            items
                .iter()
                .map(|n| {
                    if !n.is_instance_of::<PyInt>() {
                        return Err(not_a_shape(format!("a tuple holding {}", type_name(n))));
                    }
                    n.extract::<u64>().map_err(|_| {
                        let repr = n.repr().map(|r| r.to_string()).unwrap_or_default();
                        let repr = if repr.len() > 40 {
                            format!("{}... ({} digits)", &repr[..20], repr.len())
                        } else {
                            repr
                        };
                        PyValueError::new_err(format!(
                            "shape {k} has the extent {repr}, out of range (negative or too \
                             large): extents are integers from 0 to 2**64 - 1"
                        ))
                    })
                })
                .collect()
        })
        .collect()
}

/// Lowers and checks `equation` for `shapes`, accepting operands with an extent of 0: those
/// give the result's shape and no program (spec/frontends.md, "Extents of 0"). The program's
/// variables are of element type `elem`.
fn outcome(
    py: Python<'_>,
    equation: &str,
    shapes: &[Vec<u64>],
    elem: ElemType,
) -> PyResult<EinsumOutcome> {
    teil::guard::einsum_outcome_elem(equation, shapes, elem)
        .map_err(|diags| diag::rejected(py, &diags, EQUATION, equation))
}

/// The element type a `dtype` argument names: anything `numpy.dtype` reads as float64 (the
/// default, `None`) or float32 (`numpy.float32`, `"float32"`, `"f4"`); `ValueError` otherwise.
fn elem_of_dtype(py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<ElemType> {
    let Some(dtype) = dtype.filter(|d| !d.is_none()) else {
        return Ok(ElemType::F64);
    };
    let np = py.import("numpy")?;
    let name: Option<String> = np
        .call_method1("dtype", (dtype,))
        .and_then(|d| d.getattr("name")?.extract())
        .ok();
    match name.as_deref() {
        Some("float64") => Ok(ElemType::F64),
        Some("float32") => Ok(ElemType::F32),
        _ => Err(PyValueError::new_err(format!(
            "dtype must be numpy.float64 or numpy.float32 (TeIL's f64 and f32), not {}",
            dtype.repr().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}

/// The one output of a lowered equation.
fn output(p: &CheckedProgram) -> PyResult<String> {
    p.output_names()
        .into_iter()
        .next()
        .ok_or_else(|| PyValueError::new_err("internal error: the lowered equation has no output"))
}

/// The shape of ``numpy.einsum(equation, *operands)`` for operands of the given shapes, checked
/// by TeIL (extents of 0 included: NumPy's shape, though no TeIL program exists for them). Raises ``ShapeError`` (``ParseError`` never: equation syntax errors are front-end
/// rejections) whose diagnostics point into the equation, with the codes of ``teil einsum``.
///
/// >>> teil.einsum_shape("ij,jk->ik", (2, 3), (3, 4))
/// (2, 4)
/// >>> teil.einsum_shape("ij,jk->ik", (2, 3), (4, 4))
/// Traceback (most recent call last):
///     ...
/// teil.ShapeError: ...
#[pyfunction]
#[pyo3(signature = (equation, *shapes))]
pub fn einsum_shape<'py>(
    py: Python<'py>,
    equation: &str,
    shapes: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    let shapes = shapes_of(shapes)?;
    match outcome(py, equation, &shapes, ElemType::F64)? {
        EinsumOutcome::Program(p, _) => {
            let out = output(&p)?;
            PyTuple::new(py, p.var_shape(&out).unwrap_or(&[]))
        }
        EinsumOutcome::Empty { shape, .. } => PyTuple::new(py, shape),
    }
}

/// ``numpy.einsum(equation, *operands)`` computed by TeIL, after checking the shapes, in the
/// dtype NumPy computes it in: float32 when the operands' dtypes promote to float32
/// (``numpy.result_type``: float32 arrays, alone or with float16, int8, int16, uint8, uint16
/// or bool ones), float64 otherwise (float64 with anything, other integers, Python numbers,
/// lists of them, float16 alone); the result has that dtype. In float32, every operation
/// rounds to binary32 as TeIL's ``f32`` does (the program is ``einsum_program(...,
/// dtype=numpy.float32)``'s); NumPy may sum in another order, or in pairs, so its float32
/// result can differ in the last bits. ``backend`` is ``"fast"``, ``"oracle"`` or ``"c"`` (as
/// for ``Program.run``), which compute the same bits in either dtype. An operand with an extent
/// of 0 has no TeIL program: the result is ``numpy.zeros`` of NumPy's result shape and dtype,
/// as NumPy gives it.
///
/// >>> import numpy as np
/// >>> teil.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 2)))
/// array([[3., 3.],
///        [3., 3.]])
/// >>> teil.einsum("i,i->", np.full(3, 0.1, np.float32), np.ones(3, np.float32))
/// array(0.3, dtype=float32)
#[pyfunction]
#[pyo3(signature = (equation, *operands, backend = "fast"))]
pub fn einsum<'py>(
    py: Python<'py>,
    equation: &str,
    operands: &Bound<'py, PyTuple>,
    backend: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let backend = program::backend(backend)?;
    let arrays: Vec<Bound<'py, PyAny>> = operands
        .iter()
        .enumerate()
        .map(|(k, o)| arrays::numeric(&format!("operand {k}"), &o))
        .collect::<PyResult<_>>()?;
    let elem = arrays::promoted_elem(py, &arrays)?;
    let held: Vec<Held<'py>> = arrays
        .iter()
        .enumerate()
        .map(|(k, o)| arrays::to_f64(&format!("operand {k}"), o))
        .collect::<PyResult<_>>()?;
    let shapes: Vec<Vec<u64>> = held
        .iter()
        .map(|a| a.shape().iter().map(|&n| n as u64).collect())
        .collect();
    let p = match outcome(py, equation, &shapes, elem)? {
        EinsumOutcome::Program(p, _) => p,
        // No program: NumPy's result is all zeros (empty, or sums over an empty index).
        EinsumOutcome::Empty { shape, .. } => {
            let dims: Vec<usize> = shape
                .iter()
                .map(|&n| usize::try_from(n))
                .collect::<Result<Vec<usize>, _>>()
                .ok()
                .filter(|d: &Vec<usize>| {
                    d.iter()
                        .try_fold(8usize, |acc, &n| acc.checked_mul(n))
                        .is_some_and(|bytes| isize::try_from(bytes).is_ok())
                })
                .ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "the result's shape {} does not fit in memory",
                        teil::ast::ShapeDisplay(&shape)
                    ))
                })?;
            return Ok(arrays::to_numpy(
                py,
                ndarray::ArrayD::<f64>::zeros(dims),
                elem,
            ));
        }
    };
    let out = output(&p)?;
    let views: BTreeMap<String, ArrayViewD<'_, f64>> = interface::input_names(&p)
        .into_iter()
        .zip(held.iter().map(|a| a.as_array()))
        .collect();
    let c = COptions::default();
    let budget = program::budget(None, None);
    let small = program::small(&p, backend);
    let mut results = program::interruptible(py, &budget, small, || {
        program::evaluate(&p, &arrays::owned(&views), backend, &c, &budget)
    })?
    .map_err(|f| f.into_py(py))?;
    let t = results
        .remove(&out)
        .ok_or_else(|| PyValueError::new_err("internal error: the evaluator returned no output"))?;
    Ok(arrays::to_numpy(py, t, elem))
}

/// The TeIL program an einsum equation lowers to (inputs ``in0``, ``in1``, ..., output
/// ``out``), in ``"prefix"`` or ``"infix"`` syntax, as ``teil einsum`` prints it. Operands
/// with an extent of 0 have none: ``ShapeError`` (E0102). ``dtype`` is the element type of
/// every variable: float64 (the default) or float32 (``numpy.float32``, ``"float32"``), the
/// program ``teil.einsum`` runs on float32 operands; ``ValueError`` for any other.
///
/// >>> print(teil.einsum_program("ij->ji", (2, 3)), end="")
/// input alloc in0 : [2, 3]
/// output alloc out : [3, 2]
/// out = transp 1 2 in0
/// >>> print(teil.einsum_program("i,i->", (3,), (3,), dtype="float32"), end="")
/// input alloc in0 : f32[3]
/// input alloc in1 : f32[3]
/// output alloc out : f32[]
/// out = red+ 1 (mul in0 in1)
#[pyfunction]
#[pyo3(signature = (equation, *shapes, syntax = "prefix", dtype = None))]
pub fn einsum_program(
    py: Python<'_>,
    equation: &str,
    shapes: &Bound<'_, PyTuple>,
    syntax: &str,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let style = program::style(syntax)?;
    let elem = elem_of_dtype(py, dtype)?;
    let shapes = shapes_of(shapes)?;
    let p = teil::guard::einsum_elem(equation, &shapes, elem)
        .map(|(checked, _warnings)| checked)
        .map_err(|diags| diag::rejected(py, &diags, EQUATION, equation))?;
    Ok(teil::fmt::program(p.program(), style))
}
