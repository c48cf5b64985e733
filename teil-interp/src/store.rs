//! The store μ (TeIL paper §3.2, report Def. 3): each declared variable maps the in-bounds
//! multi-indices of its allocation to values; a fresh cell holds `•`.
//!
//! Cells are kept densely in row-major (C) order, but every access goes through
//! [`Store::read`] / [`Store::replace`], which check the 1-based multi-index against the
//! allocation's extents and return [`RunError::OutOfBounds`] instead of panicking: the
//! run-time witness of type safety.

use crate::budget::{checked_len, try_vec};
use crate::domain::Domain;
use crate::error::{Access, RunError};
use std::collections::BTreeMap;
use teil::CheckedProgram;

/// One allocation `alloc x : [n1, ..., nk]`: its extents and its cells in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct Alloc<V> {
    pub extents: Vec<u64>,
    pub data: Vec<V>,
}

impl<V> Alloc<V> {
    /// The row-major offset of the 1-based multi-index `idx`, or `None` when `idx` is not in
    /// the domain of this allocation (wrong length, a component 0 or above its extent).
    pub fn offset(&self, idx: &[u64]) -> Option<usize> {
        if idx.len() != self.extents.len() {
            return None;
        }
        let mut off: u64 = 0;
        for (&k, &n) in idx.iter().zip(&self.extents) {
            if k == 0 || k > n {
                return None;
            }
            off = off * n + (k - 1);
        }
        usize::try_from(off).ok()
    }
}

/// A vector of `len` copies of `v`, reporting allocation failure as an error.
pub fn filled<V: Clone>(what: &str, len: usize, v: V) -> Result<Vec<V>, RunError> {
    try_vec(what, len, std::iter::repeat_n(v, len))
}

/// The store μ: variable name to allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Store<V> {
    allocs: BTreeMap<String, Alloc<V>>,
}

impl<V: Domain> Store<V> {
    /// μ_allocs with every cell `•` (report Fig. 10, d-var, with nothing initialized).
    pub fn undefined(p: &CheckedProgram) -> Result<Self, RunError> {
        let mut allocs = BTreeMap::new();
        for d in &p.program().decls {
            let extents = d.shape();
            let what = format!("`{}`", d.name.name);
            let len = checked_len(&what, &extents)?;
            let data = filled(&what, len, V::undefined())?;
            allocs.insert(d.name.name.clone(), Alloc { extents, data });
        }
        Ok(Store { allocs })
    }
}

impl<V: Clone> Store<V> {
    /// `μ x k̄` — reads one cell, checking the access (the type-safety witness).
    pub fn read(&self, name: &str, idx: &[u64]) -> Result<V, RunError> {
        let alloc = self.allocs.get(name).ok_or_else(|| {
            RunError::Internal(format!("read of `{name}`, which is not in the store"))
        })?;
        match alloc.offset(idx).and_then(|o| alloc.data.get(o)) {
            Some(v) => Ok(v.clone()),
            None => Err(RunError::OutOfBounds {
                access: Access::Read,
                var: name.to_string(),
                index: idx.to_vec(),
                extents: alloc.extents.clone(),
            }),
        }
    }

    /// `μ{x ↦ λk̄. r_k̄}` — replaces every cell of `name` (St-Stmt). `extents` is the index space
    /// the new values were computed over; writing it anywhere but exactly the allocation's
    /// domain is an out-of-bounds write.
    pub fn replace(&mut self, name: &str, extents: &[u64], data: Vec<V>) -> Result<(), RunError> {
        let alloc = self.allocs.get_mut(name).ok_or_else(|| {
            RunError::Internal(format!("write to `{name}`, which is not in the store"))
        })?;
        if alloc.extents != extents || alloc.data.len() != data.len() {
            // The largest multi-index written stands in for the offending access.
            let index = extents.to_vec();
            return Err(RunError::OutOfBounds {
                access: Access::Write,
                var: name.to_string(),
                index,
                extents: alloc.extents.clone(),
            });
        }
        alloc.data = data;
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Alloc<V>> {
        self.allocs.get(name)
    }

    /// Every allocation, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Alloc<V>)> {
        self.allocs.iter()
    }
}

/// The 1-based multi-indices `k̄ ≤ extents` in row-major order (the last index varies fastest).
/// A scalar (`extents == []`) has exactly one multi-index, `[]`.
pub fn multi_indices(extents: &[u64]) -> MultiIndices {
    MultiIndices {
        extents: extents.to_vec(),
        next: if extents.contains(&0) {
            None
        } else {
            Some(vec![1; extents.len()])
        },
    }
}

/// Iterator returned by [`multi_indices`].
pub struct MultiIndices {
    extents: Vec<u64>,
    next: Option<Vec<u64>>,
}

impl Iterator for MultiIndices {
    type Item = Vec<u64>;

    fn next(&mut self) -> Option<Vec<u64>> {
        let cur = self.next.take()?;
        let mut succ = cur.clone();
        let mut pos = succ.len();
        loop {
            if pos == 0 {
                break; // wrapped around: `cur` was the last multi-index
            }
            pos -= 1;
            if succ[pos] < self.extents[pos] {
                succ[pos] += 1;
                self.next = Some(succ);
                break;
            }
            succ[pos] = 1;
        }
        Some(cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_indices_are_row_major_and_one_based() {
        let all: Vec<Vec<u64>> = multi_indices(&[2, 3]).collect();
        assert_eq!(
            all,
            vec![
                vec![1, 1],
                vec![1, 2],
                vec![1, 3],
                vec![2, 1],
                vec![2, 2],
                vec![2, 3]
            ]
        );
        assert_eq!(
            multi_indices(&[]).collect::<Vec<_>>(),
            vec![Vec::<u64>::new()]
        );
    }

    #[test]
    fn offsets_check_every_component() {
        let a = Alloc {
            extents: vec![2, 3],
            data: vec![0.0f64; 6],
        };
        assert_eq!(a.offset(&[2, 3]), Some(5));
        assert_eq!(a.offset(&[1, 2]), Some(1));
        assert_eq!(a.offset(&[0, 1]), None);
        assert_eq!(a.offset(&[3, 1]), None);
        assert_eq!(a.offset(&[1, 4]), None);
        assert_eq!(a.offset(&[1]), None);
        assert_eq!(a.offset(&[1, 1, 1]), None);
    }
}
