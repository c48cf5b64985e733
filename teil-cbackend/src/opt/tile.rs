//! Tiled copies: reduction-free nests whose store and some load run through memory in different
//! orders (transpositions), printed with two loops strip-mined so that a block of both fits in
//! the cache.
//!
//! `Tiled::of` recognises a perfect nest of loops starting at 0 whose body is one store
//! `T[l_1, ..., l_r] = v` (every label once) where `v` reads no cell of `T` other than the one
//! stored, and some load in `v` has unit stride along a loop label `q` other than the innermost
//! label `p` while its stride along `p` is not 1. Every iteration then writes its own cell and
//! reads nothing another iteration writes, so any order of the iterations computes the same
//! values. The printer runs the loops in the original order with `p` and `q` replaced by loops
//! over blocks of `TILE` indices, and inside them the point loops of `q` and then `p`
//! (spec/padding.md, "Tiled nests").

use crate::ir::{BufId, Ix, Kernel, Label, Node, Val};

/// Indices per block along each of the two tiled labels.
pub(crate) const TILE: u64 = 16;

/// A recognised nest.
#[derive(Clone, Debug)]
pub(crate) struct Tiled<'k> {
    /// The loops, outermost first: label, extent, logical extent.
    pub loops: Vec<(Label, u64, u64)>,
    /// The store (the nest's only innermost node).
    pub store: &'k Node,
    /// The innermost label (unit stride in the store, usually).
    pub p: Label,
    /// The label a load runs through with unit stride.
    pub q: Label,
}

fn loads<'v>(v: &'v Val, out: &mut Vec<(BufId, &'v [Ix])>) {
    match v {
        Val::Load(b, idx) => out.push((*b, idx)),
        Val::Bin(_, a, b) => {
            loads(a, out);
            loads(b, out);
        }
        Val::Lit(_) | Val::Acc(_) | Val::Undefined => {}
    }
}

fn stride(k: &Kernel, b: BufId, idx: &[Ix], l: Label) -> u64 {
    idx.iter()
        .zip(k.buffer(b).strides())
        .filter(|(ix, _)| **ix == Ix::Var(l))
        .map(|(_, s)| s)
        .sum()
}

impl<'k> Tiled<'k> {
    pub(crate) fn of(k: &Kernel, body: &'k [Node]) -> Option<Tiled<'k>> {
        let mut loops = Vec::new();
        let mut nodes = body;
        while let [Node::Loop {
            var,
            start: 0,
            extent,
            logical,
            body,
        }] = nodes
        {
            loops.push((*var, *extent, *logical));
            nodes = body;
        }
        let [store @ Node::Store { buf, index, value }] = nodes else {
            return None;
        };
        if loops.len() < 2 {
            return None;
        }
        let mut seen = Vec::new();
        for ix in index {
            match ix {
                Ix::Var(l) if loops.iter().any(|f| f.0 == *l) && !seen.contains(l) => seen.push(*l),
                _ => return None,
            }
        }
        if seen.len() != loops.len() {
            return None;
        }
        let mut ls = Vec::new();
        loads(value, &mut ls);
        if ls
            .iter()
            .any(|(b, idx)| b == buf && *idx != index.as_slice())
        {
            return None;
        }
        let p = loops.last()?.0;
        let q = ls.iter().find_map(|(b, idx)| {
            if stride(k, *b, idx, p) == 1 {
                return None;
            }
            loops
                .iter()
                .map(|l| l.0)
                .find(|&l| l != p && stride(k, *b, idx, l) == 1)
        })?;
        let extent = |l: Label| loops.iter().find(|f| f.0 == l).map_or(0, |f| f.1);
        if extent(p) <= TILE / 2 || extent(q) <= TILE / 2 {
            return None;
        }
        Some(Tiled { loops, store, p, q })
    }
}
