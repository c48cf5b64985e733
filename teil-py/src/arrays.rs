//! Arrays across the boundary: array-likes in, NumPy arrays out.
//!
//! An input that is already a C-contiguous float64 NumPy array is borrowed read-only and read
//! through an `ndarray` view of its own buffer (no copy by the binding); anything else is
//! converted as `numpy.asarray(x, dtype=numpy.float64, order="C")` would (a scalar stays a 0-d
//! array: `ascontiguousarray` would make it of shape `(1,)`), once, after checking that it is
//! numeric (booleans, integers and floats, as NumPy's dtype kinds `b`, `i`, `u`,
//! `f`). [`conversion_copies`] counts those conversions so that the tests can assert the
//! zero-copy path is taken.
//!
//! Element types: the evaluators carry `f32` values as binary64 numbers, so every input
//! crosses as float64. A float32 array widens exactly; whatever is given for an `f32` variable
//! must then hold binary32 values only, which the evaluators check
//! (`teil::interface::check_binary32`, E0605): nothing here rounds a caller's number. An `f32`
//! output comes back as a float32 array ([`to_numpy`]), exactly (its values are binary32).

use ndarray::ArrayViewD;
use numpy::{IntoPyArray, PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use teil::ast::ElemType;
use teil::CheckedProgram;
use teil_interp::Tensor;

static CONVERSIONS: AtomicU64 = AtomicU64::new(0);

/// How many inputs the binding has converted (copied) since the module was loaded. Inputs that
/// are C-contiguous float64 arrays are read in place and do not count. For tests.
#[pyfunction]
#[pyo3(name = "_conversion_copies")]
pub fn conversion_copies() -> u64 {
    CONVERSIONS.load(Ordering::Relaxed)
}

/// One input, borrowed read-only for as long as the call runs.
pub type Held<'py> = PyReadonlyArrayDyn<'py, f64>;

/// `obj` as a C-contiguous float64 array: itself when it already is one, a converted copy
/// otherwise. Non-numeric values raise `TypeError` naming `what` (``input `A` ``).
pub fn to_f64<'py>(what: &str, obj: &Bound<'py, PyAny>) -> PyResult<Held<'py>> {
    if let Ok(a) = obj.extract::<Held<'py>>() {
        if a.is_c_contiguous() {
            return Ok(a);
        }
    }
    let py = obj.py();
    let np = py.import("numpy")?;
    let arr = numeric(what, obj)?;
    // Not `ascontiguousarray`, which returns at least one dimension: a scalar must stay 0-d.
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", np.getattr("float64")?)?;
    kwargs.set_item("order", "C")?;
    let converted = np.call_method("asarray", (arr,), Some(&kwargs))?;
    CONVERSIONS.fetch_add(1, Ordering::Relaxed);
    converted.extract::<Held<'py>>()
}

/// `obj` as a NumPy array (`numpy.asarray(obj)`: itself when it is one) of booleans, integers
/// or floats; `TypeError` naming `what` otherwise.
pub fn numeric<'py>(what: &str, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let np = obj.py().import("numpy")?;
    let not_numeric = |why: String| {
        PyTypeError::new_err(format!(
            "{what} is not numeric ({why}); TeIL computes on float64 and float32, so pass \
             booleans, integers or floats"
        ))
    };
    let arr = np
        .call_method1("asarray", (obj,))
        .map_err(|e| not_numeric(format!("cannot be read as an array: {e}")))?;
    let dtype = arr.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "b" | "i" | "u" | "f") {
        return Err(not_numeric(format!("dtype {}", dtype.str()?)));
    }
    Ok(arr)
}

/// The element type NumPy computes an operation on `arrays` in (NumPy arrays, as [`numeric`]
/// gives them): `f32` when the promotion of their dtypes (`numpy.result_type`) is float32,
/// as for float32 arrays, alone or with float16, int8, int16, uint8, uint16 or bool ones, whose
/// values are all binary32 numbers; `f64` otherwise (float64 with any of them, int32, int64, a
/// Python float or int, float16 alone, and no arrays at all).
pub fn promoted_elem(py: Python<'_>, arrays: &[Bound<'_, PyAny>]) -> PyResult<ElemType> {
    if arrays.is_empty() {
        return Ok(ElemType::F64);
    }
    let np = py.import("numpy")?;
    let dtypes = arrays
        .iter()
        .map(|a| a.getattr("dtype"))
        .collect::<PyResult<Vec<_>>>()?;
    let promoted = np.call_method1("result_type", PyTuple::new(py, dtypes)?)?;
    Ok(if promoted.eq(np.getattr("float32")?)? {
        ElemType::F32
    } else {
        ElemType::F64
    })
}

/// A result of element type `elem` as a NumPy array (moved, not copied, for `f64`): float64,
/// or float32 for `f32`, whose values the evaluators keep binary32, so the narrowing is exact.
pub fn to_numpy<'py>(py: Python<'py>, t: Tensor, elem: ElemType) -> Bound<'py, PyAny> {
    match elem {
        ElemType::F64 => t.into_pyarray(py).into_any(),
        ElemType::F32 => t.mapv(|v| v as f32).into_pyarray(py).into_any(),
    }
}

/// An integer argument that must fit in 64 unsigned bits (`pad`, `max_memory`, `max_work`).
/// Extracting it never fails for an integer: [`Unsigned::get`] raises `ValueError` naming the
/// argument and its range for one out of range, where PyO3's `u64` would raise
/// `OverflowError`. A non-integer is a `TypeError`.
pub struct Unsigned(Result<u64, String>);

impl<'a, 'py> FromPyObject<'a, 'py> for Unsigned {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if !obj.is_instance_of::<pyo3::types::PyInt>() {
            let name = obj
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            return Err(PyTypeError::new_err(format!(
                "expected an integer, not {name}"
            )));
        }
        Ok(Unsigned(obj.extract::<u64>().map_err(|_| {
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        })))
    }
}

impl Unsigned {
    pub const fn of(n: u64) -> Self {
        Unsigned(Ok(n))
    }

    /// The value, if it is at least `min`; otherwise a `ValueError` naming `name`.
    pub fn get(&self, name: &str, min: u64) -> PyResult<u64> {
        match &self.0 {
            Ok(n) if *n >= min => Ok(*n),
            Ok(n) => Err(out_of_range(name, min, &n.to_string())),
            Err(repr) => Err(out_of_range(name, min, repr)),
        }
    }
}

fn out_of_range(name: &str, min: u64, found: &str) -> PyErr {
    // Long integers are cut: the message names the argument, not a thousand digits.
    let found = if found.len() > 40 {
        format!("{}... ({} digits)", &found[..20], found.len())
    } else {
        found.to_string()
    };
    pyo3::exceptions::PyValueError::new_err(format!(
        "{name} must be an integer from {min} to 2**64 - 1, not {found}"
    ))
}

/// [`Unsigned::get`] of an optional argument.
pub fn optional(value: Option<Unsigned>, name: &str, min: u64) -> PyResult<Option<u64>> {
    value.map(|v| v.get(name, min)).transpose()
}

/// Merges the `inputs` mapping and the keyword arguments into one map by name; a name given
/// in both is a `TypeError`, as for a Python call.
pub fn gather<'py>(
    inputs: Option<&Bound<'py, PyAny>>,
    named: Option<&Bound<'py, PyDict>>,
) -> PyResult<BTreeMap<String, Bound<'py, PyAny>>> {
    let mut out = BTreeMap::new();
    let mut add = |dict: &Bound<'py, PyDict>| -> PyResult<()> {
        for (k, v) in dict.iter() {
            let name: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("input names must be strings"))?;
            if out.insert(name.clone(), v).is_some() {
                return Err(PyTypeError::new_err(format!(
                    "input `{name}` is given twice"
                )));
            }
        }
        Ok(())
    };
    if let Some(obj) = inputs.filter(|o| !o.is_none()) {
        let dict = match obj.cast::<PyDict>() {
            Ok(d) => d.clone(),
            Err(_) => obj
                .py()
                .get_type::<PyDict>()
                .call1((obj,))
                .and_then(|d| Ok(d.cast_into::<PyDict>()?))
                .map_err(|_| {
                    PyTypeError::new_err("inputs must be a mapping from variable names to arrays")
                })?,
        };
        add(&dict)?;
    }
    if let Some(dict) = named {
        add(dict)?;
    }
    Ok(out)
}

/// Converts every gathered input; all of them are kept borrowed in the result.
pub fn convert_all<'py>(
    given: &BTreeMap<String, Bound<'py, PyAny>>,
) -> PyResult<BTreeMap<String, Held<'py>>> {
    given
        .iter()
        .map(|(name, obj)| Ok((name.clone(), to_f64(&format!("input `{name}`"), obj)?)))
        .collect()
}

/// Views of the held arrays, which can cross into code running without the GIL.
pub fn views<'a>(held: &'a BTreeMap<String, Held<'_>>) -> BTreeMap<String, ArrayViewD<'a, f64>> {
    held.iter()
        .map(|(name, a)| (name.clone(), a.as_array()))
        .collect()
}

/// Owned copies of views, for evaluators that keep their inputs in their own store.
pub fn owned(views: &BTreeMap<String, ArrayViewD<'_, f64>>) -> BTreeMap<String, Tensor> {
    views
        .iter()
        .map(|(name, v)| (name.clone(), v.to_owned()))
        .collect()
}

/// An array of `out=`: float64, or float32 for an `f32` output.
pub enum OutArray<'py> {
    F64(Bound<'py, PyArrayDyn<f64>>),
    F32(Bound<'py, PyArrayDyn<f32>>),
}

impl<'py> OutArray<'py> {
    pub fn shape(&self) -> &[usize] {
        match self {
            OutArray::F64(a) => a.shape(),
            OutArray::F32(a) => a.shape(),
        }
    }

    pub fn as_any(&self) -> &Bound<'py, PyAny> {
        match self {
            OutArray::F64(a) => a.as_any(),
            OutArray::F32(a) => a.as_any(),
        }
    }
}

/// The arrays of `out=`: a mapping from output names to NumPy arrays of each output's dtype,
/// float64, or float32 where `elem` says the output is `f32` (`TypeError` otherwise, as NumPy's
/// own `out=` refuses another type; a name that is no output is taken as float64, for the
/// caller to refuse it by name).
pub fn out_arrays<'py>(
    out: Option<&Bound<'py, PyAny>>,
    elem: impl Fn(&str) -> ElemType,
) -> PyResult<BTreeMap<String, OutArray<'py>>> {
    let Some(out) = out.filter(|o| !o.is_none()) else {
        return Ok(BTreeMap::new());
    };
    let map = out.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(
            "`out` must map output names to numpy.ndarray of float64 (float32 for an f32 output)",
        )
    })?;
    let mut arrays = BTreeMap::new();
    for (k, v) in map.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("`out` keys must be output names (str)"))?;
        let wrong = |found: Bound<'py, PyAny>, dtype: &str| {
            PyTypeError::new_err(format!(
                "the array for output `{name}` must be a numpy.ndarray of {dtype}, not {}",
                found
                    .get_type()
                    .name()
                    .map_or_else(|_| "another type".to_string(), |n| n.to_string())
            ))
        };
        let a = match elem(&name) {
            ElemType::F64 => OutArray::F64(
                v.cast_into::<PyArrayDyn<f64>>()
                    .map_err(|e| wrong(e.into_inner(), "float64"))?,
            ),
            ElemType::F32 => OutArray::F32(
                v.cast_into::<PyArrayDyn<f32>>()
                    .map_err(|e| wrong(e.into_inner(), "float32"))?,
            ),
        };
        arrays.insert(name, a);
    }
    Ok(arrays)
}

/// `{name: numpy.ndarray}` for each output of `p` found in `results` (float64 arrays moved,
/// not copied; float32 ones for `f32` variables, [`to_numpy`]).
pub fn results_dict<'py>(
    py: Python<'py>,
    p: &CheckedProgram,
    mut results: BTreeMap<String, Tensor>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for name in p.output_names() {
        if let Some(t) = results.remove(&name) {
            let elem = p.var_elem(&name).unwrap_or(ElemType::F64);
            dict.set_item(&name, to_numpy(py, t, elem))?;
        }
    }
    Ok(dict)
}
