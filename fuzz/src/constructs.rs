//! Which constructs a target campaign sent (`teil fuzz --target`, the `sent:` line): the ops/1
//! steps of every program judged, by op, and the compositions that compilers transform, found
//! in the steps' data flow (spec/fuzzing.md, "Programs that exercise compilers").

use std::collections::BTreeMap;
use std::fmt;
use teil::ast::ElemType;
use teil::ops::{Op, Ops};

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

/// The compositions counted, in the order the summary prints them.
pub const PATTERNS: [&str; 6] = [
    "element-wise on einsum",
    "reduce of expand",
    "reduce of reduce",
    "einsum of einsum",
    "repeated step",
    "extent-1 axis",
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
        self.rank_5_or_more += u64::from(deep);
        self.float32 += u64::from(ops.steps.iter().any(|s| s.elem == ElemType::F32));
        self.special_inputs += u64::from(special_inputs);
    }
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
