//! Comparing results of two evaluations, with the tolerances of spec/fuzzing.md.
//!
//! At the boundary a tensor is `f64` with NaN for `•`; NaN and `•` are equal, and so are `-0`
//! and `+0` (spec/values.md). [`Tolerance::Exact`] is bit-for-bit equality in that sense. The
//! other two apply only where an evaluator reassociates sums and products and the program
//! rounds (division, or values too large to be exact):
//!
//! - [`Tolerance::Rounding`] is the first comparison of a lifted C kernel (spec/fuzzing.md,
//!   *Lifted kernels*): finite cells within `1e-9 · (1 + max(|x|, |y|))`, every other cell
//!   equal. A kernel that fails it is judged (`teil_cbackend::validate::judge`), not reported
//!   at once.
//! - [`Tolerance::Bound`] is the rule for results that may differ in kind (other
//!   implementations, and lifted kernels too large to judge): finite cells within the same
//!   bound; where one cell is not finite the other must not be finite either.
//! - [`Tolerance::Loose`] is the fast evaluator's with division (spec/interpreter.md): finite
//!   cells within the same bound; a cell that is not finite on one side may be anything on the
//!   other (`inf·(2 + -1) = inf` but `inf·2 + inf·(-1) = NaN`). Such cells are counted.
//!
//! The C backend in fma mode is compared cell by cell with a bound of its own
//! ([`tensors_within`]): spec/values.md's `2 γ_D M` where the spec gives one, and the
//! [`Tolerance::Loose`] rule elsewhere (cells whose term divides).

use crate::error::Difference;
use std::collections::BTreeMap;
use teil_interp::rounding::Permit;
use teil_interp::{ulps_apart, Tensor};

/// A final store: every variable's value (the oracle's and the fast evaluator's results).
pub type Store = BTreeMap<String, Tensor>;

/// How closely two results must agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tolerance {
    Exact,
    /// Finite cells within [`RELATIVE`]; every other cell equal (NaN to NaN, `∞` to `∞`).
    Rounding,
    Bound,
    Loose,
}

/// Relative (and, near zero, absolute) bound for reassociated results.
pub const RELATIVE: f64 = 1e-9;

fn within(x: f64, y: f64) -> bool {
    (x - y).abs() <= RELATIVE * (1.0 + x.abs().max(y.abs()))
}

/// Cells compared, and cells accepted only because one side was not finite ([`Tolerance::Loose`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cells {
    pub compared: u64,
    pub nonfinite_tolerated: u64,
}

impl Cells {
    pub fn add(&mut self, o: Cells) {
        self.compared += o.compared;
        self.nonfinite_tolerated += o.nonfinite_tolerated;
    }
}

/// Compares one variable. `Err` describes the first differing cell (1-based index) and how
/// many differ.
pub fn tensors(
    name: &str,
    want: &Tensor,
    got: &Tensor,
    tol: Tolerance,
    labels: (&str, &str),
) -> Result<Cells, Difference> {
    if want.shape() != got.shape() {
        return Err(Difference::Shape {
            name: name.to_string(),
            want: teil_interp::tensor_shape(want),
            got: teil_interp::tensor_shape(got),
            sides: labels.into(),
        });
    }
    let mut cells = Cells::default();
    let mut first: Option<(Vec<usize>, f64, f64)> = None;
    let mut differing = 0u64;
    let shape = want.shape().to_vec();
    for (flat, (&x, &y)) in want.iter().zip(got.iter()).enumerate() {
        cells.compared += 1;
        let ok = match tol {
            _ if ulps_apart(x, y) == 0 => true,
            Tolerance::Exact => false,
            Tolerance::Rounding => x.is_finite() && y.is_finite() && within(x, y),
            Tolerance::Bound => {
                if x.is_finite() && y.is_finite() {
                    within(x, y)
                } else {
                    !x.is_finite() && !y.is_finite()
                }
            }
            Tolerance::Loose => {
                if x.is_finite() && y.is_finite() {
                    within(x, y)
                } else {
                    cells.nonfinite_tolerated += 1;
                    true
                }
            }
        };
        if !ok {
            differing += 1;
            if first.is_none() {
                first = Some((unflatten(flat, &shape), x, y));
            }
        }
    }
    match first {
        None => Ok(cells),
        Some((at, want, got)) => Err(Difference::Cell {
            name: name.to_string(),
            at: one_based(&at),
            want,
            got,
            bound: None,
            differing,
            sides: labels.into(),
        }),
    }
}

fn one_based(at: &[usize]) -> Vec<u64> {
    at.iter().map(|&i| i as u64 + 1).collect()
}

/// Compares one variable cell by cell against `bounds` (same shape): a cell with a finite bound
/// `b` must have `|want − got| ≤ b` (equal cells, NaN and `±0` included, always pass); a cell
/// with an infinite bound (the spec gives none) follows [`Tolerance::Loose`].
pub fn tensors_within(
    name: &str,
    want: &Tensor,
    got: &Tensor,
    bounds: &Tensor,
    labels: (&str, &str),
) -> Result<Cells, Difference> {
    let judge = |x: f64, y: f64, b: f64, equal: bool, cells: &mut Cells| {
        if equal {
            true
        } else if b.is_finite() {
            (x - y).abs() <= b
        } else if x.is_finite() && y.is_finite() {
            within(x, y)
        } else {
            cells.nonfinite_tolerated += 1;
            true
        }
    };
    cell_by_cell(name, want, got, bounds, labels, judge, Some)
}

/// Compares one variable cell by cell with what each cell permits (spec/fuzzing.md, "Judging
/// functions"; [`teil_interp::rounding::Permit`]): a cell equal to the oracle's (NaN and `±0`
/// included) always passes, any other must be what its permit allows.
pub fn tensors_permitted(
    name: &str,
    want: &Tensor,
    got: &Tensor,
    permits: &ndarray::ArrayD<Permit>,
    labels: (&str, &str),
) -> Result<Cells, Difference> {
    let judge = |x: f64, y: f64, p: Permit, equal: bool, cells: &mut Cells| {
        if p == Permit::Any && !(x.is_finite() && y.is_finite()) {
            cells.nonfinite_tolerated += 1;
        }
        equal || p.allows(x, y)
    };
    let bound = |p: Permit| match p {
        Permit::Within(b) => Some(b),
        Permit::NotFinite | Permit::Any => None,
    };
    cell_by_cell(name, want, got, permits, labels, judge, bound)
}

/// One variable cell by cell, each cell with its entry of `by` (same shape; otherwise the
/// comparison is exact), as `judge` says, told whether the cell equals the oracle's (NaN and
/// `±0` included); the first that fails is reported with the bound `bound` gives it.
fn cell_by_cell<T: Copy>(
    name: &str,
    want: &Tensor,
    got: &Tensor,
    by: &ndarray::ArrayD<T>,
    labels: (&str, &str),
    judge: impl Fn(f64, f64, T, bool, &mut Cells) -> bool,
    bound: impl Fn(T) -> Option<f64>,
) -> Result<Cells, Difference> {
    if want.shape() != got.shape() || want.shape() != by.shape() {
        return tensors(name, want, got, Tolerance::Exact, labels);
    }
    let mut cells = Cells::default();
    let mut first: Option<(usize, f64, f64, T)> = None;
    let mut differing = 0u64;
    for (flat, ((&x, &y), &e)) in want.iter().zip(got.iter()).zip(by.iter()).enumerate() {
        cells.compared += 1;
        if !judge(x, y, e, ulps_apart(x, y) == 0, &mut cells) {
            differing += 1;
            first.get_or_insert((flat, x, y, e));
        }
    }
    let Some((flat, want, got, e)) = first else {
        return Ok(cells);
    };
    Err(Difference::Cell {
        name: name.to_string(),
        at: one_based(&unflatten(flat, by.shape())),
        want,
        got,
        bound: bound(e),
        differing,
        sides: labels.into(),
    })
}

/// [`tensors_permitted`] for the variables `names`, with `permits` by variable.
pub fn stores_permitted(
    names: &[String],
    want: &BTreeMap<String, Tensor>,
    got: &BTreeMap<String, Tensor>,
    permits: &BTreeMap<String, ndarray::ArrayD<Permit>>,
    labels: (&str, &str),
) -> Result<Cells, Difference> {
    each_variable(names, want, got, permits, labels, tensors_permitted)
}

/// [`tensors_within`] for the variables `names`, with `bounds` by variable.
pub fn stores_within(
    names: &[String],
    want: &BTreeMap<String, Tensor>,
    got: &BTreeMap<String, Tensor>,
    bounds: &BTreeMap<String, Tensor>,
    labels: (&str, &str),
) -> Result<Cells, Difference> {
    each_variable(names, want, got, bounds, labels, tensors_within)
}

/// `compare` on each variable of `names`, with its entry of `by`; a variable missing from
/// any of the three is a difference.
fn each_variable<T>(
    names: &[String],
    want: &BTreeMap<String, Tensor>,
    got: &BTreeMap<String, Tensor>,
    by: &BTreeMap<String, T>,
    labels: (&str, &str),
    compare: impl Fn(&str, &Tensor, &Tensor, &T, (&str, &str)) -> Result<Cells, Difference>,
) -> Result<Cells, Difference> {
    let mut cells = Cells::default();
    for name in names {
        let (Some(w), Some(g), Some(b)) = (want.get(name), got.get(name), by.get(name)) else {
            return Err(Difference::Missing {
                name: name.clone(),
                sides: labels.into(),
            });
        };
        cells.add(compare(name, w, g, b, labels)?);
    }
    Ok(cells)
}

/// Compares the variables `names` of two stores; a variable missing from `got` is a
/// difference.
pub fn stores(
    names: &[String],
    want: &BTreeMap<String, Tensor>,
    got: &BTreeMap<String, Tensor>,
    tol: Tolerance,
    labels: (&str, &str),
) -> Result<Cells, Difference> {
    let mut cells = Cells::default();
    for name in names {
        let (Some(w), Some(g)) = (want.get(name), got.get(name)) else {
            return Err(Difference::Missing {
                name: name.clone(),
                sides: labels.into(),
            });
        };
        cells.add(tensors(name, w, g, tol, labels)?);
    }
    Ok(cells)
}

fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut at = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1);
        at[d] = flat % n;
        flat /= n;
    }
    at
}

pub use crate::error::show;

/// Below this magnitude, integer-valued results are exact in any association.
pub const EXACT_LIMIT: f64 = (1u64 << 50) as f64;

/// Whether every value is NaN or an integer of magnitude below [`EXACT_LIMIT`].
pub fn small_integers<'a>(values: impl IntoIterator<Item = &'a Tensor>) -> bool {
    values
        .into_iter()
        .flat_map(|t| t.iter())
        .all(|x| x.is_nan() || (x.abs() < EXACT_LIMIT && x.fract() == 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{arr1, arr2};

    fn t2(v: [[f64; 2]; 2]) -> Tensor {
        arr2(&v).into_dyn()
    }

    #[test]
    fn within_bounds_is_per_cell_and_loose_where_there_is_no_bound() {
        let want = arr1(&[1.0, 2.0, f64::NAN, 4.0, 5.0]).into_dyn();
        let got = arr1(&[1.0 + 1e-12, 2.0, f64::NAN, f64::INFINITY, 5.0 + 1e-12]).into_dyn();
        let bounds = arr1(&[2e-12, 0.0, 0.0, f64::INFINITY, f64::INFINITY]).into_dyn();
        let cells = tensors_within("v", &want, &got, &bounds, ("oracle", "C"));
        assert_eq!(
            cells,
            Ok(Cells {
                compared: 5,
                nonfinite_tolerated: 1
            })
        );
        let tight = arr1(&[1e-13, 0.0, 0.0, f64::INFINITY, f64::INFINITY]).into_dyn();
        assert_eq!(
            tensors_within("v", &want, &got, &tight, ("oracle", "C")).map_err(|e| e.to_string()),
            Err("`v`[1]: oracle 1, C 1.000000000001 (the bound is 0.0000000000001)".to_string())
        );
        let far = arr1(&[1.0, 2.0, f64::NAN, 4.0, 6.0]).into_dyn();
        assert_eq!(
            tensors_within("v", &want, &far, &bounds, ("oracle", "C")).map_err(|e| e.to_string()),
            Err("`v`[5]: oracle 5, C 6 (no bound)".to_string())
        );
    }

    #[test]
    fn exact_equates_nan_and_signed_zeros_only() {
        let a = t2([[f64::NAN, -0.0], [1.0, 2.0]]);
        let b = t2([[f64::NAN, 0.0], [1.0, 2.0]]);
        assert_eq!(
            tensors("x", &a, &b, Tolerance::Exact, ("a", "b")).map(|c| c.compared),
            Ok(4)
        );
        let c = t2([[f64::NAN, 0.0], [1.0, 2.0 + 1e-15]]);
        assert_eq!(
            tensors("x", &a, &c, Tolerance::Exact, ("oracle", "C")).map_err(|e| e.to_string()),
            Err("`x`[2, 2]: oracle 2, C 2.000000000000001".to_string())
        );
        assert!(tensors("x", &a, &c, Tolerance::Bound, ("a", "b")).is_ok());
    }

    #[test]
    fn bound_and_loose_differ_on_non_finite_cells() {
        let a = arr1(&[f64::INFINITY, 1.0, 5.0]).into_dyn();
        let b = arr1(&[3.0, 1.0, 5.0]).into_dyn();
        assert_eq!(
            tensors("v", &a, &b, Tolerance::Bound, ("a", "b")).map_err(|e| e.to_string()),
            Err("`v`[1]: a inf, b 3".to_string())
        );
        assert_eq!(
            tensors("v", &a, &b, Tolerance::Loose, ("a", "b")),
            Ok(Cells {
                compared: 3,
                nonfinite_tolerated: 1
            })
        );
        let c = arr1(&[f64::INFINITY, 1.5, 6.0]).into_dyn();
        assert_eq!(
            tensors("v", &a, &c, Tolerance::Loose, ("a", "b")).map_err(|e| e.to_string()),
            Err("`v`[2]: a 1, b 1.5 (2 cells differ)".to_string())
        );
    }

    #[test]
    fn shapes_must_match() {
        let a = arr1(&[1.0, 2.0]).into_dyn();
        let b = arr1(&[1.0, 2.0, 3.0]).into_dyn();
        assert_eq!(
            tensors("v", &a, &b, Tolerance::Exact, ("oracle", "C")).map_err(|e| e.to_string()),
            Err("`v` has shape [2] from the oracle but [3] from the C".to_string())
        );
    }

    #[test]
    fn small_integer_detection() {
        let a = arr1(&[1.0, f64::NAN, -3.0]).into_dyn();
        let b = arr1(&[0.5]).into_dyn();
        let c = arr1(&[EXACT_LIMIT]).into_dyn();
        assert!(small_integers([&a]));
        assert!(!small_integers([&a, &b]));
        assert!(!small_integers([&c]));
    }
}
