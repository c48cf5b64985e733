//! The shrinker reduces generated programs to small reproducers under synthetic failure
//! predicates whose minimal failing inputs are known.

use ndarray::ArrayD;
use teil::ast::{ExprKind, RedOp};
use teil::fmt::{program, Style};
use teil::CheckedProgram;
use teil_fuzz::gen::{self, GenConfig};
use teil_fuzz::shrink::{shrink, Inputs};

/// Whether some `redmax` reduces a dimension of extent at least 2.
fn has_wide_redmax(c: &CheckedProgram) -> bool {
    let mut found = false;
    for s in &c.program().stmts {
        s.value.walk(&mut |e| {
            if let ExprKind::Reduce(RedOp::Max, i, a) = &e.kind {
                found |= c.shape(a)[i.value as usize - 1] >= 2;
            }
        });
    }
    found
}

fn ones(c: &CheckedProgram) -> Inputs {
    c.program()
        .decls
        .iter()
        .filter(|d| c.is_input(d))
        .map(|d| {
            let dims: Vec<usize> = d.shape().iter().map(|&n| n as usize).collect();
            (d.name.name.clone(), ArrayD::from_elem(dims, 1.0))
        })
        .collect()
}

#[test]
fn programs_shrink_to_a_single_small_redmax() {
    let strategy = gen::program(GenConfig {
        max_depth: 5,
        max_stmts: 4,
        ..GenConfig::default()
    });
    let mut shrunk = 0;
    for seed in 0..400u64 {
        let p = gen::sample(&strategy, seed);
        let (checked, _) = teil::check(p.clone()).unwrap();
        if !has_wide_redmax(&checked) {
            continue;
        }
        let inputs = ones(&checked);
        let (small, _) = shrink(p, inputs, |c, _| has_wide_redmax(c), 5_000);
        let (c, _) = teil::check(small.clone()).expect("shrunk program is well-typed");
        assert!(has_wide_redmax(&c), "shrinking lost the failure");
        let text = program(&small, Style::Prefix);
        assert_eq!(small.stmts.len(), 1, "{text}");
        let e = small.stmts[0].value.strip_parens();
        let ExprKind::Reduce(RedOp::Max, _, a) = &e.kind else {
            panic!("not reduced to the redmax:\n{text}");
        };
        assert!(matches!(a.strip_parens().kind, ExprKind::Var(_)), "{text}");
        for d in &small.decls {
            assert!(d.shape().iter().all(|&n| n <= 2), "{text}");
        }
        shrunk += 1;
        if shrunk == 10 {
            break;
        }
    }
    assert_eq!(shrunk, 10, "too few programs with a wide redmax");
}

#[test]
fn input_values_shrink_to_one_interesting_cell() {
    let strategy = gen::program(GenConfig::default());
    let mut tried = 0;
    for seed in 0..100u64 {
        let p = gen::sample(&strategy, seed);
        let (checked, _) = teil::check(p.clone()).unwrap();
        let mut inputs = ones(&checked);
        let Some((_, t)) = inputs.iter_mut().find(|(_, t)| t.len() >= 4) else {
            continue;
        };
        t.iter_mut().for_each(|x| *x = -2.0);
        let negative = |_: &CheckedProgram, ins: &Inputs| ins.values().flatten().any(|&x| x < 0.0);
        let (_, small) = shrink(p, inputs, negative, 5_000);
        let cells: Vec<f64> = small
            .values()
            .flatten()
            .copied()
            .filter(|&x| x != 0.0)
            .collect();
        // One negative cell is left: one of the inputs', or the value of a subexpression that
        // became an input holding it (a sum of them, `-6`, say).
        assert!(cells.len() == 1 && cells[0] < 0.0, "{small:?}");
        tried += 1;
    }
    assert!(tried >= 10);
}

/// Whether the ops/1 evaluator with `bug` planted computes an output of `c` on `inputs` that
/// the campaign's judgement refuses (what a target campaign's predicate asks of a target).
fn fails_with(bug: teil_fuzz::ops_eval::Bug) -> impl FnMut(&CheckedProgram, &Inputs) -> bool {
    use teil_fuzz::case::{Case, FUNCTION_ULPS};
    move |c, inputs| {
        let Ok(case) = Case::new(0, c.program().clone(), Some(inputs.clone()), FUNCTION_ULPS)
        else {
            return false;
        };
        let mut env = inputs.clone();
        if teil_fuzz::ops_eval::run(&case.ops.steps, &mut env, Some(bug)).is_err() {
            return false;
        }
        case.ops.outputs.iter().any(|(n, _)| {
            env.get(n)
                .is_some_and(|got| teil_fuzz::target_campaign::judge_output(&case, n, got).is_err())
        })
    }
}

/// One bug, reached from different programs, shrinks to one skeleton: through a compound
/// operand (replaced by an input holding its value), under wrappers (hoisted, qualifiers or
/// not), through a conversion pair (replaced by the part of its type), in place and with a
/// literal argument (the canonical pass).
#[test]
fn one_bug_from_different_programs_shrinks_to_one_skeleton() {
    use teil_fuzz::ops_eval::Bug;
    use teil_fuzz::signature::skeleton;
    let negative = |c: &CheckedProgram| -> Inputs {
        c.program()
            .decls
            .iter()
            .filter(|d| c.is_input(d))
            .map(|d| {
                let dims: Vec<usize> = d.shape().iter().map(|&n| n as usize).collect();
                let n: usize = dims.iter().product();
                let cells = (0..n).map(|k| -1.0 - (k % 3) as f64).collect();
                (
                    d.name.name.clone(),
                    ArrayD::from_shape_vec(dims, cells).unwrap(),
                )
            })
            .collect()
    };
    let cases = [
        (
            Bug::MaxFromZero,
            "var t : [1 2 2]\nvar r : []\nr = redmax 1 (t .[2 3])",
            "v0 = redmax(v1)\n",
        ),
        (
            Bug::MaxFromZero,
            "input var t : [2 3]\noutput var r : [2]\nr = proj 2 1 (expa 2 3 (redmax 2 t))",
            "v0 = redmax(v1)\n",
        ),
        (
            Bug::MaxFromZero,
            "var t : [1 1 2 1]\nvar r : [1]\nr = redmax 3 t .[2 1]",
            "v0 = redmax(v1)\n",
        ),
        (
            Bug::MaxFromZero,
            "input var t : [3]\noutput var r : []\nr = redmax 1 (f64 (f32 t))",
            "v0 = redmax(v1)\n",
        ),
        (Bug::ExpOff, "var x : f32[3]\nx = exp x", "v0 = exp(v1)\n"),
        (
            Bug::ExpOff,
            "output var y : f32[]\ny = exp 1",
            "v0 = exp(v1)\n",
        ),
        (
            Bug::ExpOff,
            "input var a : [2]\noutput var y : [2]\ny = exp (a + a) * a",
            "v0 = exp(v1)\n",
        ),
    ];
    for (bug, source, want) in cases {
        let (c, _) = teil::compile(source).unwrap_or_else(|e| panic!("{source}: {e:?}"));
        let inputs = negative(&c);
        assert!(
            fails_with(bug)(&c, &inputs),
            "{source}: does not fail to begin with"
        );
        let (small, _) = shrink(c.program().clone(), inputs, fails_with(bug), 1000);
        assert_eq!(
            skeleton(&small),
            want,
            "{source} shrank to\n{}",
            program(&small, Style::Infix)
        );
    }
}
