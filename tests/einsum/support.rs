//! Test support shared by the einsum end-to-end tests (`teil-interp/tests/einsum_random.rs`
//! through both evaluators, `teil-cbackend/tests/einsum_c.rs` through the C backend), included
//! with `#[path]`: a naive einsum written from scratch (a loop over every assignment of every
//! index, NumPy's rules), a corpus of equations naming each NumPy feature, and a random equation
//! generator in the style of opt_einsum's `rand_equation`.
//!
//! Nothing here calls the code under test.

#![allow(dead_code)]

use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;

pub type Tensor = ArrayD<f64>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sub {
    Letter(char),
    /// A position under `...`, numbered from the left of the broadcast dimensions.
    Slot(usize),
}

/// Splits a term into letters and the position of `...` (if any).
fn split_term(t: &str) -> (Vec<char>, Option<usize>) {
    let t: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    match t.find("...") {
        Some(p) => {
            let mut letters: Vec<char> = t[..p].chars().collect();
            let at = letters.len();
            letters.extend(t[p + 3..].chars());
            (letters, Some(at))
        }
        None => (t.chars().collect(), None),
    }
}

/// Evaluates `eq` on `ops` by brute force, following NumPy's rules.
pub fn naive_einsum(eq: &str, ops: &[Tensor]) -> Tensor {
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq, None),
    };
    let terms: Vec<(Vec<char>, Option<usize>)> = lhs.split(',').map(split_term).collect();
    assert_eq!(terms.len(), ops.len());
    // Broadcast rank and extents of the `...` positions, aligned from the right.
    let ell: Vec<usize> = terms
        .iter()
        .zip(ops)
        .map(|((l, e), op)| if e.is_some() { op.ndim() - l.len() } else { 0 })
        .collect();
    let b_rank = ell.iter().copied().max().unwrap_or(0);
    let mut b_ext = vec![1usize; b_rank];
    // Each operand's dimensions as subscripts.
    let mut subs: Vec<Vec<Sub>> = Vec::new();
    for (k, ((letters, e), op)) in terms.iter().zip(ops).enumerate() {
        let mut s: Vec<Sub> = letters.iter().map(|&c| Sub::Letter(c)).collect();
        if let Some(at) = e {
            let slots: Vec<Sub> = (b_rank - ell[k]..b_rank).map(Sub::Slot).collect();
            s.splice(at..at, slots);
        }
        for (d, sub) in s.iter().enumerate() {
            if let Sub::Slot(q) = sub {
                b_ext[*q] = b_ext[*q].max(op.shape()[d]);
            }
        }
        subs.push(s);
    }
    let mut letter_ext: BTreeMap<char, usize> = BTreeMap::new();
    let mut count: BTreeMap<char, usize> = BTreeMap::new();
    for (s, op) in subs.iter().zip(ops) {
        for (d, sub) in s.iter().enumerate() {
            if let Sub::Letter(c) = sub {
                letter_ext.insert(*c, op.shape()[d]);
                *count.entry(*c).or_default() += 1;
            }
        }
    }
    let out: Vec<Sub> = match rhs {
        Some(r) => {
            let (letters, e) = split_term(r);
            let mut s: Vec<Sub> = letters.iter().map(|&c| Sub::Letter(c)).collect();
            if let Some(at) = e {
                s.splice(at..at, (0..b_rank).map(Sub::Slot));
            }
            s
        }
        None => (0..b_rank)
            .map(Sub::Slot)
            .chain(
                count
                    .iter()
                    .filter(|(_, &n)| n == 1)
                    .map(|(&c, _)| Sub::Letter(c)),
            )
            .collect(),
    };
    // Every index: letters, then slots.
    let all: Vec<Sub> = letter_ext
        .keys()
        .map(|&c| Sub::Letter(c))
        .chain((0..b_rank).map(Sub::Slot))
        .collect();
    let extent = |s: &Sub| match s {
        Sub::Letter(c) => letter_ext[c],
        Sub::Slot(q) => b_ext[*q],
    };
    let out_shape: Vec<usize> = out.iter().map(extent).collect();
    let mut result = ArrayD::<f64>::zeros(IxDyn(&out_shape));
    let mut value = vec![0usize; all.len()];
    let at = |s: &Sub, value: &[usize]| value[all.iter().position(|x| x == s).unwrap()];
    loop {
        let mut prod = 1.0;
        for (s, op) in subs.iter().zip(ops) {
            let ix: Vec<usize> = s
                .iter()
                .enumerate()
                .map(|(d, sub)| {
                    if op.shape()[d] == 1 {
                        0
                    } else {
                        at(sub, &value)
                    }
                })
                .collect();
            prod *= op[IxDyn(&ix)];
        }
        let oix: Vec<usize> = out.iter().map(|s| at(s, &value)).collect();
        result[IxDyn(&oix)] += prod;
        // Odometer over all indices.
        let mut d = 0;
        loop {
            if d == all.len() {
                return result;
            }
            value[d] += 1;
            if value[d] < extent(&all[d]) {
                break;
            }
            value[d] = 0;
            d += 1;
        }
    }
}

/// SplitMix64, for reproducible equations and inputs.
pub use teil_interp::random::SplitMix64 as Rng;

pub fn random_tensor(shape: &[usize], rng: &mut Rng) -> Tensor {
    let len = shape.iter().product();
    let data = (0..len).map(|_| rng.below(7) as f64 - 3.0).collect();
    ArrayD::from_shape_vec(IxDyn(shape), data).unwrap()
}

/// The operands of one case: small integers, so every sum and product is exact.
pub fn operands(shapes: &[Vec<usize>], seed: u64) -> Vec<Tensor> {
    let mut rng = Rng(seed);
    shapes.iter().map(|s| random_tensor(s, &mut rng)).collect()
}

/// Equations that name each NumPy feature: scalars, transpositions and reductions, Hadamard
/// products, diagonals and traces, outer products, contractions, five and more operands,
/// broadcasting under `...`, uppercase labels.
pub fn corpus() -> Vec<(&'static str, Vec<Vec<usize>>)> {
    let v = |s: &[usize]| s.to_vec();
    let corpus: Vec<(&str, Vec<Vec<usize>>)> = vec![
        // scalars
        ("", vec![v(&[])]),
        ("->", vec![v(&[])]),
        (",", vec![v(&[]), v(&[])]),
        (",ij", vec![v(&[]), v(&[2, 3])]),
        ("ij,->ji", vec![v(&[2, 3]), v(&[])]),
        (",i,", vec![v(&[]), v(&[4]), v(&[])]),
        ("i->", vec![v(&[4])]),
        ("ij->", vec![v(&[2, 3])]),
        // transpositions, reductions
        ("ij", vec![v(&[2, 3])]),
        ("ji", vec![v(&[2, 3])]),
        ("ijk->kij", vec![v(&[2, 3, 4])]),
        ("ijk->j", vec![v(&[2, 3, 4])]),
        // Hadamard products
        ("i,i->i", vec![v(&[5]), v(&[5])]),
        ("ij,ij->ij", vec![v(&[2, 3]), v(&[2, 3])]),
        ("ij,ji->ij", vec![v(&[2, 3]), v(&[3, 2])]),
        (
            "ijk,kij,jki->ijk",
            vec![v(&[2, 3, 4]), v(&[4, 2, 3]), v(&[3, 4, 2])],
        ),
        ("ij,ij,ij->", vec![v(&[2, 3]), v(&[2, 3]), v(&[2, 3])]),
        // diagonals and traces
        ("ii", vec![v(&[3, 3])]),
        ("ii->i", vec![v(&[3, 3])]),
        ("iii->i", vec![v(&[3, 3, 3])]),
        ("iii", vec![v(&[3, 3, 3])]),
        ("iji->j", vec![v(&[3, 2, 3])]),
        ("ijij->ij", vec![v(&[2, 3, 2, 3])]),
        ("ii,i->i", vec![v(&[3, 3]), v(&[3])]),
        ("ijj,jk->ik", vec![v(&[2, 3, 3]), v(&[3, 4])]),
        // outer products
        ("i,j", vec![v(&[2]), v(&[3])]),
        ("i,j->ji", vec![v(&[2]), v(&[3])]),
        ("i,j,k", vec![v(&[2]), v(&[3]), v(&[2])]),
        ("ij,kl->ljki", vec![v(&[2, 1]), v(&[3, 2])]),
        // contractions
        ("ij,jk", vec![v(&[2, 3]), v(&[3, 4])]),
        ("ij,jk->ki", vec![v(&[2, 3]), v(&[3, 4])]),
        ("ijk,k->ij", vec![v(&[2, 3, 4]), v(&[4])]),
        ("ijk,i->jk", vec![v(&[2, 3, 4]), v(&[2])]),
        ("kji,i->ij", vec![v(&[4, 3, 2]), v(&[2])]),
        ("bij,bjk->bik", vec![v(&[2, 2, 3]), v(&[2, 3, 2])]),
        ("i,j,ij->", vec![v(&[3]), v(&[4]), v(&[3, 4])]),
        // five and more operands
        (
            "ab,bc,cd,de,ef->af",
            vec![v(&[2, 3]), v(&[3, 2]), v(&[2, 4]), v(&[4, 2]), v(&[2, 3])],
        ),
        (
            "ab,bc,cd,de,ef,fa->",
            vec![
                v(&[2, 3]),
                v(&[3, 2]),
                v(&[2, 4]),
                v(&[4, 2]),
                v(&[2, 3]),
                v(&[3, 2]),
            ],
        ),
        (
            "abc,bcd,cde,def,efa->",
            vec![
                v(&[2, 3, 2]),
                v(&[3, 2, 2]),
                v(&[2, 2, 3]),
                v(&[2, 3, 2]),
                v(&[3, 2, 2]),
            ],
        ),
        (
            "ij,jk,kl,lm,mn,no,op->ip",
            vec![
                v(&[2, 2]),
                v(&[2, 3]),
                v(&[3, 2]),
                v(&[2, 2]),
                v(&[2, 3]),
                v(&[3, 2]),
                v(&[2, 2]),
            ],
        ),
        (
            "a,b,c,d,e,abcde->",
            vec![
                v(&[2]),
                v(&[3]),
                v(&[2]),
                v(&[2]),
                v(&[3]),
                v(&[2, 3, 2, 2, 3]),
            ],
        ),
        (
            "ab,a,b,ab,ba->a",
            vec![v(&[3, 2]), v(&[3]), v(&[2]), v(&[3, 2]), v(&[2, 3])],
        ),
        (
            ",ab,,bc,cd,d,",
            vec![
                v(&[]),
                v(&[2, 3]),
                v(&[]),
                v(&[3, 2]),
                v(&[2, 2]),
                v(&[2]),
                v(&[]),
            ],
        ),
        // broadcasting
        ("...ij,...jk->...ik", vec![v(&[2, 2, 3]), v(&[2, 3, 2])]),
        ("...ij,...jk", vec![v(&[3, 1, 2, 3]), v(&[2, 3, 2])]),
        ("...,...", vec![v(&[1, 3]), v(&[2, 1])]),
        ("i...,i...->...", vec![v(&[3, 2]), v(&[3, 1])]),
        ("...i->i...", vec![v(&[2, 3, 4])]),
        ("a...a->...", vec![v(&[3, 2, 3])]),
        ("...,i->i...", vec![v(&[]), v(&[2])]),
        // uppercase labels come first in the implicit output
        ("aB,Bc", vec![v(&[2, 3]), v(&[3, 2])]),
        ("Ab,bA,c", vec![v(&[2, 3]), v(&[3, 2]), v(&[2])]),
    ];
    corpus
}

// ---------------------------------------------------------------------------------------------
// Random equations

/// A random equation and shapes, after opt_einsum's `rand_equation(n, reg, n_out, d_min,
/// d_max)`, with extras: a repeated index inside an operand (diagonal), a Hadamard partner, a
/// scalar operand, an implicit output, and `...` over broadcast dimensions.
pub fn rand_equation(rng: &mut Rng) -> (String, Vec<Vec<usize>>) {
    let mut letters: Vec<char> = ('a'..='z').chain('A'..='Z').collect();
    for i in (1..letters.len()).rev() {
        letters.swap(i, rng.below(i + 1));
    }
    let n = 1 + rng.below(7);
    let reg = 2 + rng.below(2);
    let n_out = rng.below(3);
    let num = (n * reg / 2 + n_out).min(10);
    let size: Vec<usize> = (0..num).map(|_| 1 + rng.below(3)).collect();
    let mut inputs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut output = Vec::new();
    let mut next = 0;
    for input in inputs.iter_mut() {
        if next < num {
            input.push(next);
            next += 1;
        }
    }
    for _ in 0..n_out {
        if next < num {
            output.push(next);
            inputs[rng.below(n)].push(next);
            next += 1;
        }
    }
    while next < num {
        let a = rng.below(n);
        let b = (a + 1 + rng.below(n.max(2) - 1)) % n;
        inputs[a].push(next);
        if b != a {
            inputs[b].push(next);
        }
        next += 1;
    }
    if rng.chance(25) {
        let k = rng.below(n);
        if let Some(&l) = inputs[k].first() {
            inputs[k].push(l);
        }
    }
    if rng.chance(25) {
        let k = rng.below(n);
        let mut partner = inputs[k].clone();
        partner.reverse();
        inputs.push(partner);
    }
    for input in inputs.iter_mut() {
        // Shuffle (Fisher-Yates).
        for i in (1..input.len()).rev() {
            input.swap(i, rng.below(i + 1));
        }
    }
    if rng.chance(15) {
        let at = rng.below(inputs.len() + 1);
        inputs.insert(at, Vec::new());
    }
    // Broadcast dimensions under `...` for some operands.
    let ellipsis = rng.chance(20);
    let b_rank = if ellipsis { 1 + rng.below(2) } else { 0 };
    let b_ext: Vec<usize> = (0..b_rank).map(|_| 1 + rng.below(3)).collect();
    let mut terms = Vec::new();
    let mut shapes = Vec::new();
    for input in &inputs {
        let mut term: String = input.iter().map(|&l| letters[l]).collect();
        let mut shape: Vec<usize> = input.iter().map(|&l| size[l]).collect();
        if ellipsis && rng.chance(70) {
            let r = rng.below(b_rank + 1);
            let dims: Vec<usize> = b_ext[b_rank - r..]
                .iter()
                .map(|&e| if rng.chance(30) { 1 } else { e })
                .collect();
            let at = rng.below(input.len() + 1);
            term.insert_str(at, "...");
            shape.splice(at..at, dims);
        }
        terms.push(term);
        shapes.push(shape);
    }
    let mut eq = terms.join(",");
    let any_ellipsis = terms.iter().any(|t| t.contains("..."));
    if !rng.chance(20) {
        let mut out: Vec<char> = output.iter().map(|&l| letters[l]).collect();
        for i in (1..out.len()).rev() {
            out.swap(i, rng.below(i + 1));
        }
        let mut out: String = out.into_iter().collect();
        if any_ellipsis {
            let at = rng.below(out.len() + 1);
            out.insert_str(at, "...");
        }
        eq.push_str("->");
        eq.push_str(&out);
    }
    (eq, shapes)
}

/// `n` random equations from a fixed seed.
pub fn random_cases(n: usize, seed: u64) -> Vec<(String, Vec<Vec<usize>>)> {
    let mut rng = Rng(seed);
    (0..n).map(|_| rand_equation(&mut rng)).collect()
}
