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
        assert_eq!(cells, vec![-2.0], "{small:?}");
        tried += 1;
    }
    assert!(tried >= 10);
}
