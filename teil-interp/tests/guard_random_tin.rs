//! Random index-notation statements, lowered by `teil::guard::index_notation` and run through
//! both evaluators, against the summation rule of spec/frontends.md evaluated literally here:
//! for every assignment of the left-hand indices, the sum over every assignment of the summed
//! indices of the right-hand side evaluated pointwise. That definition knows nothing of terms,
//! extents or contraction order, so agreement checks the lowering's decomposition (terms summed
//! separately, a term without a summed index multiplied by its extent, products contracted
//! pairwise, sub-expressions broadcast) against the plain meaning.
//!
//! Inputs are non-zero small integers and divisors are single accesses or non-zero literals, so
//! no division by zero occurs; quotients round, so results are compared with a small tolerance.

use ndarray::{ArrayD, Dimension, IxDyn};
use std::collections::BTreeMap;
use teil_interp::{run_fast, run_oracle, Tensor};

// SplitMix64.
use teil_interp::random::SplitMix64 as Rng;

const NAMES: [&str; 4] = ["i", "j", "k", "l"];

#[derive(Clone, Debug)]
enum Node {
    Num(f64),
    /// A tensor (by its number) and its indices (positions in `NAMES`).
    Acc(usize, Vec<usize>),
    Neg(Box<Node>),
    Bin(char, Box<Node>, Box<Node>),
}

struct Gen {
    rng: Rng,
    ext: [usize; 4],
    /// Shapes of the input tensors `X0`, `X1`, ...
    tensors: Vec<Vec<usize>>,
}

impl Gen {
    fn access(&mut self) -> Node {
        let rank = self.rng.below(4);
        let idx: Vec<usize> = (0..rank).map(|_| self.rng.below(4)).collect();
        self.tensors
            .push(idx.iter().map(|&x| self.ext[x]).collect());
        Node::Acc(self.tensors.len() - 1, idx)
    }

    fn expr(&mut self, depth: usize) -> Node {
        if depth == 0 || self.rng.below(4) == 0 {
            return if self.rng.below(5) == 0 {
                Node::Num(self.rng.below(4) as f64 + 1.0)
            } else {
                self.access()
            };
        }
        match self.rng.below(9) {
            0 => Node::Neg(Box::new(self.expr(depth - 1))),
            1 | 2 => Node::Bin(
                '+',
                Box::new(self.expr(depth - 1)),
                Box::new(self.expr(depth - 1)),
            ),
            3 => Node::Bin(
                '-',
                Box::new(self.expr(depth - 1)),
                Box::new(self.expr(depth - 1)),
            ),
            4 => {
                // A divisor that cannot be zero: one access (inputs are non-zero) or a literal.
                let d = if self.rng.below(2) == 0 {
                    self.access()
                } else {
                    Node::Num(2.0)
                };
                Node::Bin('/', Box::new(self.expr(depth - 1)), Box::new(d))
            }
            _ => Node::Bin(
                '*',
                Box::new(self.expr(depth - 1)),
                Box::new(self.expr(depth - 1)),
            ),
        }
    }
}

fn text(n: &Node) -> String {
    match n {
        Node::Num(v) => format!("{v}"),
        Node::Acc(t, idx) if idx.is_empty() => format!("X{t}"),
        Node::Acc(t, idx) => {
            let names: Vec<&str> = idx.iter().map(|&x| NAMES[x]).collect();
            format!("X{t}({})", names.join(", "))
        }
        Node::Neg(x) => format!("-({})", text(x)),
        Node::Bin(op, a, b) => format!("({} {op} {})", text(a), text(b)),
    }
}

fn indices(n: &Node, out: &mut Vec<usize>) {
    match n {
        Node::Num(_) => {}
        Node::Acc(_, idx) => out.extend(idx),
        Node::Neg(x) => indices(x, out),
        Node::Bin(_, a, b) => {
            indices(a, out);
            indices(b, out);
        }
    }
}

fn eval(n: &Node, at: &[usize; 4], inputs: &[Tensor]) -> f64 {
    match n {
        Node::Num(v) => *v,
        Node::Acc(t, idx) => {
            let ix: Vec<usize> = idx.iter().map(|&x| at[x]).collect();
            inputs[*t][IxDyn(&ix)]
        }
        Node::Neg(x) => -eval(x, at, inputs),
        Node::Bin(op, a, b) => {
            let (a, b) = (eval(a, at, inputs), eval(b, at, inputs));
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                _ => a / b,
            }
        }
    }
}

/// Every assignment of values to the index positions `vars` (others left as in `base`).
fn assignments(vars: &[usize], ext: &[usize; 4], base: [usize; 4]) -> Vec<[usize; 4]> {
    let mut out = vec![base];
    for &v in vars {
        out = out
            .into_iter()
            .flat_map(|a| {
                (0..ext[v]).map(move |x| {
                    let mut b = a;
                    b[v] = x;
                    b
                })
            })
            .collect();
    }
    out
}

#[test]
fn random_statements_follow_the_summation_rule() {
    let mut rng = Rng(0x5eed_71e5);
    let mut compared = 0;
    for case in 0..300u64 {
        let ext = [
            1 + rng.below(3),
            1 + rng.below(3),
            1 + rng.below(3),
            1 + rng.below(3),
        ];
        let mut g = Gen {
            rng: Rng(rng.next_u64()),
            ext,
            tensors: Vec::new(),
        };
        let rhs = g.expr(4);
        let mut lhs: Vec<usize> = (0..4).filter(|_| g.rng.below(2) == 0).collect();
        for i in (1..lhs.len()).rev() {
            lhs.swap(i, g.rng.below(i + 1));
        }
        let accumulate = g.rng.below(4) == 0;

        let mut src = String::new();
        for (t, shape) in g.tensors.iter().enumerate() {
            let s: Vec<String> = shape.iter().map(usize::to_string).collect();
            src.push_str(&format!("input alloc X{t} : [{}]\n", s.join(", ")));
        }
        let t_shape: Vec<usize> = lhs.iter().map(|&x| ext[x]).collect();
        let s: Vec<String> = t_shape.iter().map(usize::to_string).collect();
        let q = if accumulate { "inout" } else { "output" };
        src.push_str(&format!("{q} alloc T : [{}]\n", s.join(", ")));
        let names: Vec<&str> = lhs.iter().map(|&x| NAMES[x]).collect();
        let op = if accumulate { "+=" } else { "=" };
        src.push_str(&format!("T({}) {op} {}\n", names.join(", "), text(&rhs)));

        let (p, _) = teil::guard::index_notation(&src)
            .unwrap_or_else(|d| panic!("case {case} rejected: {d:#?}\n{src}"));
        // Inputs: non-zero integers in -3..=3.
        let mut inputs: Vec<Tensor> = Vec::new();
        let mut given = BTreeMap::new();
        for (t, shape) in g.tensors.iter().enumerate() {
            let len: usize = shape.iter().product();
            let data: Vec<f64> = (0..len)
                .map(|_| {
                    let v = g.rng.below(6) as f64 - 3.0;
                    if v >= 0.0 {
                        v + 1.0
                    } else {
                        v
                    }
                })
                .collect();
            let x = ArrayD::from_shape_vec(IxDyn(shape), data).unwrap();
            given.insert(format!("X{t}"), x.clone());
            inputs.push(x);
        }
        let old = ArrayD::from_shape_fn(IxDyn(&t_shape), |ix| {
            ix.slice().iter().sum::<usize>() as f64
        });
        if accumulate {
            given.insert("T".to_string(), old.clone());
        }

        // The literal meaning.
        let mut all = Vec::new();
        indices(&rhs, &mut all);
        all.sort();
        all.dedup();
        let summed: Vec<usize> = all.into_iter().filter(|x| !lhs.contains(x)).collect();
        let want = ArrayD::from_shape_fn(IxDyn(&t_shape), |ix| {
            let mut base = [0usize; 4];
            for (d, &x) in lhs.iter().enumerate() {
                base[x] = ix[d];
            }
            let sum: f64 = assignments(&summed, &ext, base)
                .iter()
                .map(|a| eval(&rhs, a, &inputs))
                .sum();
            if accumulate {
                old[&ix] + sum
            } else {
                sum
            }
        });

        let prog = teil::fmt::program(p.program(), teil::fmt::Style::Prefix);
        let oracle = run_oracle(&p, &given).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let fast = run_fast(&p, &given).unwrap_or_else(|e| panic!("{e}\n{src}"));
        for (who, got) in [("oracle", &oracle["T"]), ("fast evaluator", &fast["T"])] {
            assert_eq!(got.shape(), want.shape());
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(
                    (g - w).abs() <= 1e-6 * (1.0 + w.abs()),
                    "case {case}: the {who} gives {g}, the summation rule {w}\n{src}\nlowered:\n{prog}"
                );
            }
        }
        compared += want.len();
    }
    assert!(compared > 300);
}
