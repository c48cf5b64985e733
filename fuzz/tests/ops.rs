//! The ops/1 lowering (`teil::ops`) against the oracle: evaluating a program's ops form with the
//! reference evaluator `teil_fuzz::ops_eval` gives the oracle's outputs, bit for bit where the
//! arithmetic is exact (spec/fuzzing.md), on random well-typed programs of every flavour.

use serde_json::Value;
use std::collections::BTreeMap;
use teil_fuzz::campaign::{flavour, generate, program_seed};
use teil_fuzz::compare::{self, Tolerance};
use teil_fuzz::gen::{self, GenConfig};
use teil_fuzz::ops_eval;
use teil_interp::Tensor;

fn lower(src: &str) -> teil::ops::Ops {
    let (c, _) = teil::compile(src).expect("the example checks");
    teil::ops::lower(&c)
}

fn steps(src: &str) -> Vec<String> {
    lower(src).steps.iter().map(|s| s.to_json()).collect()
}

#[test]
fn matrix_product_is_one_einsum_in_every_spelling() {
    let decls = "input var A : [2 3]\ninput var B : [3 4]\noutput var C : [2 4]\n";
    let want = r#"{"out": "C", "op": "einsum", "args": ["A", "B"], "equation": "ab,bc->ac", "shape": [2, 4]}"#;
    for stmt in [
        "C = (A # B) .[2 3]",
        "C = contr 3 2 (prod A B)",
        "C = red+ 2 (diag 2 3 (prod A B))",
    ] {
        assert_eq!(steps(&format!("{decls}{stmt}\n")), vec![want], "{stmt}");
    }
}

#[test]
fn each_construct_lowers_to_its_op() {
    let src = "input var A : [2 3]\ninput var s : []\noutput var v : [3]\noutput var B : [2 3]\n\
               B = s * A / (s + 1)\n\
               v = redmax 1 (expa 1 2 (proj 1 2 A)) - red+ 1 A\n\
               B = B ^[1 2] ^[1 2]\n";
    let want = [
        r#"{"out": "%1", "op": "mul", "args": ["s", "A"], "shape": [2, 3]}"#,
        r#"{"out": "%2", "op": "const", "args": [], "value": 1.0, "shape": []}"#,
        r#"{"out": "%3", "op": "add", "args": ["s", "%2"], "shape": []}"#,
        r#"{"out": "B", "op": "div", "args": ["%1", "%3"], "shape": [2, 3]}"#,
        r#"{"out": "%4", "op": "take", "args": ["A"], "axis": 0, "index": 1, "shape": [3]}"#,
        r#"{"out": "%5", "op": "expand", "args": ["%4"], "axis": 0, "n": 2, "shape": [2, 3]}"#,
        r#"{"out": "%6", "op": "reduce", "args": ["%5"], "kind": "max", "axis": 0, "shape": [3]}"#,
        r#"{"out": "%7", "op": "reduce", "args": ["A"], "kind": "sum", "axis": 0, "shape": [3]}"#,
        r#"{"out": "v", "op": "sub", "args": ["%6", "%7"], "shape": [3]}"#,
        r#"{"out": "B", "op": "einsum", "args": ["B"], "equation": "ab->ab", "shape": [2, 3]}"#,
    ];
    assert_eq!(steps(src), want);
}

#[test]
fn statements_rebind_their_target_after_the_whole_right_hand_side() {
    // [St-Stmt]: the transposition reads the old A everywhere; the ops form computes the whole
    // right-hand side into temporaries and rebinds A last.
    let ops = lower("var A : [2 2]\nA = A ^[1 2] + A\n");
    let names: Vec<(&str, Vec<&str>)> = ops
        .steps
        .iter()
        .map(|s| (s.out.as_str(), s.args.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(names, vec![("%1", vec!["A"]), ("A", vec!["%1", "A"])]);
    let a = ndarray::arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn();
    let mut env = BTreeMap::from([("A".to_string(), a)]);
    ops_eval::run(&ops.steps, &mut env, None).expect("runs");
    assert_eq!(
        env["A"],
        ndarray::arr2(&[[2.0, 5.0], [5.0, 8.0]]).into_dyn()
    );
}

#[test]
fn diagonals_repeat_a_label_and_reads_before_definition_are_listed() {
    let ops =
        lower("input var E : [3 2 3]\noutput var D : [3 2]\nvar T : [3 2]\nD = diag 3 1 E + T\n");
    assert_eq!(
        ops.steps[0].op,
        teil::ops::Op::Einsum {
            equation: "aba->ab".into()
        }
    );
    assert_eq!(ops.undefined, vec!["T".to_string()]);
    assert_eq!(ops.inputs, vec![("E".to_string(), vec![3, 2, 3])]);
    assert_eq!(ops.outputs, vec![("D".to_string(), vec![3, 2])]);
}

#[test]
fn wide_products_never_run_out_of_einsum_labels() {
    // Seven rank-8 operands would need 56 labels in one einsum.
    let mut src = String::new();
    for k in 0..7 {
        src.push_str(&format!("input var A{k} : [1 1 1 1 1 1 1 1]\n"));
    }
    // Each product is summed back to rank 8 at once, so that no expression exceeds the rank
    // limit while the labels of one index tree accumulate.
    let mut e = "A0".to_string();
    for k in 1..7 {
        e = format!("({e} # A{k})");
        for _ in 0..8 {
            e = format!("(red+ 1 {e})");
        }
    }
    for _ in 0..8 {
        e = format!("(red+ 1 {e})");
    }
    src.push_str(&format!("output var s : []\ns = {e}\n"));
    let (c, _) = teil::compile(&src)
        .map_err(|d| format!("{d:?}"))
        .expect("checks");
    let ops = teil::ops::lower(&c);
    for s in &ops.steps {
        if let teil::ops::Op::Einsum { equation } = &s.op {
            let labels: std::collections::BTreeSet<char> = equation
                .chars()
                .filter(|c| c.is_ascii_alphabetic())
                .collect();
            assert!(labels.len() <= 52, "{equation}");
        }
    }
    assert!(ops.steps.len() >= 2, "an operand was computed on its own");
    let inputs = teil_interp::random_inputs(&c, 1);
    let mut env = inputs.clone();
    ops_eval::run(&ops.steps, &mut env, None).expect("runs");
    let want = teil_interp::run_oracle(&c, &inputs).expect("oracle");
    assert_eq!(env["s"], want["s"]);
}

#[test]
fn steps_read_back_from_json() {
    let src = "input var A : [2 3]\ninput var s : []\noutput var v : [3]\n\
               v = redmin 1 (expa 1 2 (proj 1 2 A)) / (s - 0.5) + red+ 1 (A # s)\n";
    let (c, _) = teil::compile(src).expect("checks");
    let ops = teil::ops::lower(&c);
    let doc: Value = serde_json::from_str(&ops.to_json()).expect("valid JSON");
    assert_eq!(doc["format"], "ops/1");
    let back: Vec<teil::ops::Step> = doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|v| teil::ops::Step::from_json(v).expect("reads"))
        .collect();
    assert_eq!(back, ops.steps);
    let line: Value = serde_json::from_str(&teil::ops::steps_json(&ops.steps)).expect("JSON");
    assert_eq!(line.as_array().map(Vec::len), Some(ops.steps.len()));
    assert_eq!(
        teil::ops::Step::from_json(
            &serde_json::json!({"out": "x", "op": "fold", "args": [], "shape": []})
        ),
        Err(teil::ops::OpsError::UnknownOp("fold".into()))
    );
}

/// Evaluates the ops form (undefined names bound to NaN, as [Eval-Prog] says) and compares every
/// output with the oracle. Returns whether the comparison was exact.
fn agrees(c: &teil::CheckedProgram, seed: u64) -> Result<bool, String> {
    let inputs = teil_interp::random_inputs(c, seed);
    let want = match teil_interp::run_oracle(c, &inputs) {
        Ok(w) => w,
        Err(_) => return Ok(true),
    };
    let ops = teil::ops::lower(c);
    let mut env: BTreeMap<String, Tensor> = inputs.clone();
    for n in &ops.undefined {
        let shape: Vec<usize> = c
            .var_shape(n)
            .unwrap_or_default()
            .iter()
            .map(|&x| x as usize)
            .collect();
        env.insert(n.clone(), Tensor::from_elem(shape, f64::NAN));
    }
    ops_eval::run(&ops.steps, &mut env, None).map_err(|e| e.to_string())?;
    let outputs: Vec<String> = ops.outputs.iter().map(|(n, _)| n.clone()).collect();
    let division = c.program().stmts.iter().any(|s| {
        let mut d = false;
        s.value.walk(&mut |e| {
            d |= matches!(
                e.kind,
                teil::ast::ExprKind::Binary(teil::ast::BinOp::Div, ..)
            )
        });
        d
    });
    let exact = !division && compare::small_integers(outputs.iter().filter_map(|n| want.get(n)));
    let tol = if exact {
        Tolerance::Exact
    } else {
        Tolerance::Bound
    };
    compare::stores(&outputs, &want, &env, tol, ("oracle", "ops form"))
        .map_err(|e| e.to_string())?;
    Ok(exact)
}

#[test]
fn random_programs_of_every_flavour_agree_with_the_oracle() {
    let strategies: Vec<_> = (0..4).map(|k| gen::program(flavour(k))).collect();
    let mut exact = 0;
    for index in 0..400u64 {
        let seed = program_seed(7, index);
        let (p, _) = generate(&strategies[(index % 4) as usize], seed);
        let (c, _) = teil::check(p).expect("generated programs check");
        match agrees(&c, seed) {
            Ok(e) => exact += usize::from(e),
            Err(e) => panic!(
                "program {index} disagrees: {e}\n{}\n{}",
                teil::fmt::program(c.program(), teil::fmt::Style::Infix),
                teil::ops::lower(&c).to_json()
            ),
        }
    }
    // Most programs compare bit for bit (the others have division or large values).
    assert!(exact >= 250, "only {exact} of 400 compared exactly");
}

#[test]
fn einsum_only_programs_lower_to_einsum_steps_mostly() {
    let strategy = gen::program(GenConfig {
        einsum_only: true,
        ..GenConfig::default()
    });
    let mut einsum_only = 0;
    for seed in 0..200u64 {
        let p = gen::sample(&strategy, seed);
        let (c, _) = teil::check(p).expect("checks");
        agrees(&c, seed).expect("agrees");
        einsum_only += usize::from(teil::ops::lower(&c).einsum_only());
    }
    // `red+` directly over a variable is a `reduce`; the profile skips those programs.
    assert!(einsum_only >= 100, "{einsum_only} of 200");
}
