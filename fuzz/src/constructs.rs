//! Which constructs a target campaign sent (`teil fuzz --target`, the `sent:` line): the ops/1
//! steps of every program judged, by op, and the compositions that compilers transform, found
//! in the steps' data flow (spec/fuzzing.md, "Programs that exercise compilers").

use std::collections::BTreeMap;
use std::fmt;
use teil::ast::ElemType;
use teil::ast::Func;
use teil::ops::{Op, Ops, ReduceKind, Step};

/// Counts over the programs sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Constructs {
    /// Steps by op (`reduce` by kind: `reduce max`).
    pub ops: BTreeMap<String, u64>,
    /// Compositions, by name ([`PATTERNS`]).
    pub patterns: BTreeMap<&'static str, u64>,
    /// Programs whose inputs hold special values (±0, ±∞, NaN).
    pub special_inputs: u64,
    /// Programs with a step of rank 5 or more.
    pub rank_5_or_more: u64,
    /// Programs with a binary32 step.
    pub float32: u64,
}

/// The compositions counted, in the order the summary prints them: what compilers transform,
/// then the kernels people write with the functions (`kernels`).
pub const PATTERNS: [&str; 14] = [
    "element-wise on einsum",
    "reduce of expand",
    "reduce of reduce",
    "einsum of einsum",
    "repeated step",
    "extent-1 axis",
    "function of einsum",
    "softmax",
    "log-softmax",
    "layer norm",
    "GELU",
    "ReLU or clamp",
    "attention",
    "constant inf or NaN",
];

impl Constructs {
    /// Counts one program's steps and compositions.
    pub fn add(&mut self, ops: &Ops, special_inputs: bool) {
        let mut made_by: BTreeMap<&str, &Op> = BTreeMap::new();
        let mut seen: Vec<(String, &[String])> = Vec::new();
        let mut deep = false;
        for step in &ops.steps {
            let key = format!("{:?}", step.op); // the op with its fields
            let name = match &step.op {
                Op::Reduce { kind, .. } => format!("reduce {}", kind.name()),
                Op::Func { func } => format!("func {}", func.keyword()),
                op => op.name().to_string(),
            };
            let args: Vec<Option<&Op>> = step
                .args
                .iter()
                .map(|a| made_by.get(a.as_str()).copied())
                .collect();
            let from = |f: fn(&Op) -> bool| args.iter().flatten().any(|op| f(op));
            let einsum = |op: &Op| matches!(op, Op::Einsum { .. });
            let hits = [
                (
                    "element-wise on einsum",
                    matches!(step.op, Op::Add | Op::Sub | Op::Mul | Op::Div) && from(einsum),
                ),
                (
                    "reduce of expand",
                    matches!(step.op, Op::Reduce { .. })
                        && from(|op| matches!(op, Op::Expand { .. })),
                ),
                (
                    "reduce of reduce",
                    matches!(step.op, Op::Reduce { .. })
                        && from(|op| matches!(op, Op::Reduce { .. })),
                ),
                ("einsum of einsum", einsum(&step.op) && from(einsum)),
                (
                    "repeated step",
                    seen.iter().any(|(k, a)| *k == key && *a == &step.args[..]),
                ),
                ("extent-1 axis", step.shape.contains(&1)),
            ];
            for (pattern, hit) in hits {
                if hit {
                    *self.patterns.entry(pattern).or_default() += 1;
                }
            }
            deep |= step.shape.len() >= 5;
            *self.ops.entry(name).or_default() += 1;
            seen.push((key, &step.args));
            made_by.insert(&step.out, &step.op);
        }
        let graph = Graph::new(&ops.steps);
        for k in 0..ops.steps.len() {
            for pattern in kernels(&graph, k) {
                *self.patterns.entry(pattern).or_default() += 1;
            }
        }
        self.rank_5_or_more += u64::from(deep);
        self.float32 += u64::from(ops.steps.iter().any(|s| s.elem == ElemType::F32));
        self.special_inputs += u64::from(special_inputs);
    }
}

/// The steps of one program with, for each argument of each step, the step that computed it
/// (`None` for a value the caller supplies): a variable may be bound by several steps, so the
/// producer is the latest one before the step that reads it.
struct Graph<'a> {
    steps: &'a [Step],
    from: Vec<Vec<Option<usize>>>,
}

impl<'a> Graph<'a> {
    fn new(steps: &'a [Step]) -> Self {
        let mut latest: BTreeMap<&str, usize> = BTreeMap::new();
        let mut from = Vec::with_capacity(steps.len());
        for (k, step) in steps.iter().enumerate() {
            from.push(
                step.args
                    .iter()
                    .map(|a| latest.get(a.as_str()).copied())
                    .collect(),
            );
            latest.insert(&step.out, k);
        }
        Graph { steps, from }
    }

    /// The step that computed argument `j` of step `k`, with its index.
    fn arg(&self, k: usize, j: usize) -> Option<(usize, &'a Op)> {
        let p = (*self.from[k].get(j)?)?;
        Some((p, &self.steps[p].op))
    }

    /// The steps that computed step `k`'s arguments.
    fn args(&self, k: usize) -> impl Iterator<Item = (usize, &'a Op)> + '_ {
        (0..self.from[k].len()).filter_map(move |j| self.arg(k, j))
    }

    /// Whether argument `j` of step `k` and argument `i` of step `l` hold the same value: the
    /// same input, or the same op of the same type on the same values (an expression written
    /// twice is lowered twice).
    fn same(&self, (k, j): (usize, usize), (l, i): (usize, usize)) -> bool {
        match (self.from[k][j], self.from[l][i]) {
            (None, None) => self.steps[k].args[j] == self.steps[l].args[i],
            (Some(a), Some(b)) => self.same_step(a, b),
            _ => false,
        }
    }

    fn same_step(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.steps[a], &self.steps[b]);
        a == b
            || (x.op == y.op
                && x.elem == y.elem
                && x.args.len() == y.args.len()
                && (0..x.args.len()).all(|j| self.same((a, j), (b, j))))
    }

    /// Whether step `k` computes a constant: a `const`, spread by `expand`.
    fn constant(&self, k: usize) -> bool {
        match self.steps[k].op {
            Op::Const { .. } => true,
            Op::Expand { .. } => self.arg(k, 0).is_some_and(|(p, _)| self.constant(p)),
            _ => false,
        }
    }

    /// `div (exp x) (expand (reduce sum (exp x)))` at step `k`.
    fn softmax(&self, k: usize) -> bool {
        let exp = |op: &Op| matches!(op, Op::Func { func: Func::Exp });
        matches!(self.steps[k].op, Op::Div)
            && self.arg(k, 0).is_some_and(|(_, op)| exp(op))
            && self.arg(k, 1).is_some_and(|(e, op)| {
                matches!(op, Op::Expand { .. })
                    && self.arg(e, 0).is_some_and(|(r, op)| {
                        matches!(
                            op,
                            Op::Reduce {
                                kind: ReduceKind::Sum,
                                ..
                            }
                        ) && self.same((r, 0), (k, 0))
                    })
            })
    }
}

/// The kernels people write with the functions that step `k` completes (the last step of
/// each; spec/fuzzing.md, "Programs that exercise compilers").
fn kernels(g: &Graph, k: usize) -> Vec<&'static str> {
    let op = &g.steps[k].op;
    let func = |f: Func| move |op: &Op| matches!(op, Op::Func { func } if *func == f);
    let mut found = Vec::new();
    if matches!(op, Op::Func { .. }) && g.args(k).any(|(_, op)| matches!(op, Op::Einsum { .. })) {
        found.push("function of einsum");
    }
    if g.softmax(k) {
        found.push("softmax");
    }
    // `sub z (expand (log (reduce sum (exp z))))`
    let log_softmax = matches!(op, Op::Sub)
        && g.arg(k, 1).is_some_and(|(e, op)| {
            matches!(op, Op::Expand { .. })
                && g.arg(e, 0).is_some_and(|(l, op)| {
                    func(Func::Log)(op)
                        && g.arg(l, 0).is_some_and(|(r, op)| {
                            matches!(
                                op,
                                Op::Reduce {
                                    kind: ReduceKind::Sum,
                                    ..
                                }
                            ) && g.arg(r, 0).is_some_and(|(x, op)| {
                                func(Func::Exp)(op) && g.same((x, 0), (k, 0))
                            })
                        })
                })
        });
    if log_softmax {
        found.push("log-softmax");
    }
    // `div (sub ...) (expand (sqrt ...))`
    let layer_norm = matches!(op, Op::Div)
        && g.arg(k, 0).is_some_and(|(_, op)| matches!(op, Op::Sub))
        && g.arg(k, 1).is_some_and(|(e, op)| {
            matches!(op, Op::Expand { .. })
                && g.arg(e, 0).is_some_and(|(_, op)| func(Func::Sqrt)(op))
        });
    if layer_norm {
        found.push("layer norm");
    }
    // `mul _ (add _ (erf _))`
    let gelu = matches!(op, Op::Mul)
        && g.args(k)
            .any(|(a, op)| matches!(op, Op::Add) && g.args(a).any(|(_, op)| func(Func::Erf)(op)));
    if gelu {
        found.push("GELU");
    }
    if matches!(op, Op::Max | Op::Min) && g.args(k).any(|(p, _)| g.constant(p)) {
        found.push("ReLU or clamp");
    }
    if matches!(op, Op::Einsum { .. }) && g.args(k).any(|(p, _)| g.softmax(p)) {
        found.push("attention");
    }
    // `div (const a) (const 0)`: a constant that folds to `±∞` or NaN.
    let zero = |op: &Op| matches!(op, Op::Const { value } if *value == 0.0);
    if matches!(op, Op::Div)
        && g.arg(k, 0)
            .is_some_and(|(_, op)| matches!(op, Op::Const { .. }))
        && g.arg(k, 1).is_some_and(|(_, op)| zero(op))
    {
        found.push("constant inf or NaN");
    }
    found
}

impl fmt::Display for Constructs {
    /// `einsum 812, add 120, func exp 30, ...; element-wise on einsum 40, ...; rank 5 or more
    /// in 31 programs, special inputs in 200, float32 in 96`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops: Vec<String> = self.ops.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let patterns: Vec<String> = PATTERNS
            .iter()
            .map(|p| format!("{p} {}", self.patterns.get(p).copied().unwrap_or(0)))
            .collect();
        write!(
            f,
            "{}; {}; rank 5 or more in {} programs, special inputs in {}, float32 in {}",
            ops.join(", "),
            patterns.join(", "),
            self.rank_5_or_more,
            self.special_inputs,
            self.float32
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_ops_and_compositions_of_one_program() {
        let source = "input var A : [2 3]\ninput var B : [3 1]\noutput var C : [2 1]\n\
                      output var s : [1]\nC = (A # B) .[2 3] + (A # B) .[2 3]\n\
                      s = redmax 1 (redmax 1 (expa 2 4 C))";
        let (checked, _) = teil::compile(source).unwrap();
        let ops = teil::ops::lower(&checked);
        let mut c = Constructs::default();
        c.add(&ops, true);
        assert_eq!(c.ops["einsum"], 2);
        assert_eq!(c.ops["add"], 1);
        assert_eq!(c.ops["expand"], 1);
        assert_eq!(c.ops["reduce max"], 2);
        assert_eq!(c.patterns["element-wise on einsum"], 1);
        assert_eq!(c.patterns["repeated step"], 1); // the second `(A # B) .[2 3]`
        assert_eq!(c.patterns["reduce of expand"], 1);
        assert_eq!(c.patterns["reduce of reduce"], 1);
        assert_eq!(c.patterns.get("einsum of einsum"), None);
        assert!(c.patterns["extent-1 axis"] >= 3);
        assert_eq!((c.rank_5_or_more, c.special_inputs, c.float32), (0, 1, 0));
        assert!(c
            .to_string()
            .starts_with("add 1, einsum 2, expand 1, reduce max 2; "));
    }

    #[test]
    fn finds_the_kernels_people_write_in_the_data_flow() {
        // Each kernel written as the generator writes it (operands repeated), once each; the
        // near misses below match none.
        let source = "input var X : f32[2 3]\ninput var Q : f32[2 4]\ninput var K : f32[3 4]\n\
             input var V : f32[3 5]\n\
             output var S : f32[2 3]\noutput var L : f32[2 3]\noutput var N : f32[2 3]\n\
             output var G : f32[2 3]\noutput var R : f32[2 3]\noutput var A : f32[2 5]\n\
             output var F : f32[2 3]\noutput var M : f32[2 3]\n\
             S = exp (X - expa 2 3 (redmax 2 X)) / expa 2 3 (red+ 2 (exp (X - expa 2 3 (redmax 2 X))))\n\
             L = X - expa 2 3 (redmax 2 X) - expa 2 3 (log (red+ 2 (exp (X - expa 2 3 (redmax 2 X)))))\n\
             N = (X - expa 2 3 (red+ 2 X / 3)) / expa 2 3 (sqrt (red+ 2 (X * X) / 3 + expa 1 2 0.00001))\n\
             G = 0.5 * X * (expa 2 3 (expa 1 2 1) + erf (0.7071067811865476 * X))\n\
             R = min (max X (expa 2 3 (expa 1 2 0))) (expa 2 3 (expa 1 2 3))\n\
             A = ((exp (0.5 * (Q # K) .[2 4]) / expa 2 3 (red+ 2 (exp (0.5 * (Q # K) .[2 4])))) # V) .[2 3]\n\
             F = tanh ((Q # K) .[2 4])\n\
             M = exp X / expa 2 3 (red+ 2 (exp (X + X))) + max X X + (-1 / 0) * X / 2";
        let (checked, _) = teil::compile(source).unwrap_or_else(|e| panic!("{e:?}"));
        let mut c = Constructs::default();
        c.add(&teil::ops::lower(&checked), false);
        let count = |p: &str| c.patterns.get(p).copied().unwrap_or(0);
        assert_eq!(
            count("softmax"),
            2,
            "S and A's scores, not M's (another sum)"
        );
        assert_eq!(count("log-softmax"), 1);
        assert_eq!(count("layer norm"), 1);
        assert_eq!(count("GELU"), 1);
        assert_eq!(
            count("ReLU or clamp"),
            2,
            "R's max and min, not M's max of X and X"
        );
        assert_eq!(count("attention"), 1);
        assert_eq!(count("function of einsum"), 1);
        assert_eq!(count("constant inf or NaN"), 1, "M's -1 / 0, not its X / 2");
    }

    #[test]
    fn counts_each_function_and_binary32_programs() {
        let source =
            "input var x : f32[3]\noutput var y : f32[3]\ny = exp (tanh x) + max x (exp x)";
        let (checked, _) = teil::compile(source).unwrap();
        let mut c = Constructs::default();
        c.add(&teil::ops::lower(&checked), false);
        assert_eq!(
            (c.ops["func exp"], c.ops["func tanh"], c.ops["max"]),
            (2, 1, 1)
        );
        assert_eq!(c.float32, 1);
        assert!(c.to_string().ends_with(", float32 in 1"), "{c}");
    }
}
