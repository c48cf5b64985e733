//! Tiled copies: the pass that turns reduction-free nests whose store and some load run through
//! memory in different orders (transpositions) into [`Step::Tiled`] steps, which the printer
//! prints with two loops strip-mined so that a block of both fits in the cache.
//!
//! A nest qualifies when it is a perfect nest of loops starting at 0 whose body is one store
//! `T[l_1, ..., l_r] = v` (every label once) where `v` reads no cell of `T` other than the one
//! stored, and some load in `v` has unit stride along a loop label `q` other than the innermost
//! label `p` while it walks `p` with a stride other than 1 (a load that does not move with `p`,
//! `c[i]` in `X[i, j] + c[i]`, reads one value per row and needs no tiling). Every iteration then writes its own cell and
//! reads nothing another iteration writes, so any order of the iterations computes the same
//! values ([`Tiled`]'s meaning; spec/padding.md, "Tiled nests").

use crate::ir::{walk_val, Access, Affine, BufId, Ix, Kernel, Label, Node, Step, Tiled, Visit};

/// Indices per block along each of the two tiled labels.
pub const TILE: u64 = 16;

/// The pass: every qualifying nest becomes a [`Step::Tiled`].
pub fn run(k: &mut Kernel) {
    for i in 0..k.steps.len() {
        let Step::Nest { comment, body } = &k.steps[i] else {
            continue;
        };
        if let Some(t) = of(k, body) {
            k.steps[i] = Step::Tiled {
                comment: comment.clone(),
                t,
            };
        }
    }
}

fn of(k: &Kernel, body: &[Node]) -> Option<Tiled> {
    let (loops, nodes) = crate::ir::perfect_nest(body);
    let [Node::Store { buf, index, value }] = nodes else {
        return None;
    };
    if loops.len() < 2 {
        return None;
    }
    let mut seen = Vec::new();
    for ix in index {
        match ix {
            Ix::Var(l) if loops.iter().any(|f| f.var == *l) && !seen.contains(l) => seen.push(*l),
            _ => return None,
        }
    }
    if seen.len() != loops.len() {
        return None;
    }
    let mut ls: Vec<(BufId, &[Ix])> = Vec::new();
    walk_val(value, &mut |v| {
        if let Visit::Load(b, idx) = v {
            ls.push((b, idx));
        }
    });
    if ls
        .iter()
        .any(|(b, idx)| b == buf && *idx != index.as_slice())
    {
        return None;
    }
    let p = loops.last()?.var;
    let stride = |b: BufId, idx: &[Ix], l: Label| Affine::of(k, b, idx).get(l);
    let q = ls.iter().find_map(|(b, idx)| {
        if stride(*b, idx, p) <= 1 {
            return None;
        }
        loops
            .iter()
            .map(|l| l.var)
            .find(|&l| l != p && stride(*b, idx, l) == 1)
    })?;
    let extent = |l: Label| loops.iter().find(|f| f.var == l).map_or(0, |f| f.extent);
    if extent(p) <= TILE / 2 || extent(q) <= TILE / 2 {
        return None;
    }
    Some(Tiled {
        loops,
        p,
        q,
        block: TILE,
        store: Access {
            buf: *buf,
            index: index.clone(),
        },
        value: value.clone(),
    })
}
