//! Folds over rows a page or more apart, several rows per pass over the cells
//! (`ir::Node::JamRows`, spec/padding.md, "Interchanged nests"): the interchange pass marks
//! them, the printer loads each cell once per block of rows, folds the rows' terms in order and
//! stores it, and the validator interprets the loop after checking the shape that makes the two
//! orders agree. Each cell's operations keep their order, so the compiled C equals the oracle
//! bit for bit in exact mode (and `validate::evaluate` in fma mode) under every flag set, with
//! whole blocks of rows and rows left over, padded or not.

mod corpus;
mod rounding;

use rounding::{assert_same, compiled_is_the_ir, lower};
use teil::CheckedProgram;
use teil_cbackend::ir::{Kernel, Node, Step};
use teil_cbackend::opt::interchange::JAM_ROWS;
use teil_cbackend::validate::{self, ValidationError};

fn program(rows: u64) -> CheckedProgram {
    let src = format!(
        "input var x : [{rows}]\ninput var A : [{rows} 600]\noutput var y : [600]\n\
         output var m : [600]\ny = (x # A) .[1 2]\nm = redmax 1 A"
    );
    teil::compile(&src).expect("checks").0
}

/// The loops of `k` that start with a jam of rows, as (rows, extent).
fn jammed(k: &Kernel) -> Vec<(u64, u64)> {
    fn nodes(ns: &[Node], out: &mut Vec<(u64, u64)>) {
        for n in ns {
            if let Node::Loop { extent, body, .. } = n {
                if let Some(Node::JamRows(r)) = body.first() {
                    out.push((*r, *extent));
                }
                nodes(body, out);
            }
        }
    }
    let mut out = Vec::new();
    for s in &k.steps {
        if let Step::Nest { body, .. } = s {
            nodes(body, &mut out);
        }
    }
    out
}

#[test]
fn jammed_folds_compute_the_loops_bits() {
    // 70 rows: 17 whole blocks and 2 left over; 72: whole blocks only.
    for rows in [70, 72] {
        let p = program(rows);
        for (pad, fma) in [(1, false), (3, false), (1, true)] {
            let k = lower(&p, pad, true, fma);
            assert_eq!(
                jammed(&k),
                [(JAM_ROWS, rows), (JAM_ROWS, rows)],
                "{rows} rows, M = {pad}\n{k}"
            );
            validate::validate(&p, &k).unwrap_or_else(|e| panic!("{rows} rows: {e}\n{k}"));
            // Inputs that round, then with infinities and NaN among them.
            for (seed, specials) in [(1, None), (2, Some(97))] {
                let inputs = rounding::inputs(&p, seed, specials);
                let what = format!("{rows} rows, M = {pad}, fma {fma}, seed {seed}");
                let ir = compiled_is_the_ir(&what, &k, &inputs);
                // Exact mode: the loop's values are the oracle's.
                if !fma {
                    let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
                    assert_same(&what, &ir, &oracle);
                }
            }
        }
    }
}

#[test]
fn near_rows_and_few_rows_are_not_jammed() {
    // Rows 300 doubles apart are one page's stream (the loop keeps `teil_no_jam()`), and a
    // loop of fewer rows than a block has nothing to jam.
    let near = teil::compile("input var A : [70 300]\noutput var m : [300]\nm = redmax 1 A")
        .expect("checks")
        .0;
    assert!(jammed(&lower(&near, 1, true, false)).is_empty());
    let few = teil::compile("input var A : [3 600]\noutput var m : [600]\nm = redmax 1 A")
        .expect("checks")
        .0;
    assert!(jammed(&lower(&few, 1, true, false)).is_empty());
}

#[test]
fn rows_with_a_term_gathered_along_the_inner_loop_are_not_jammed() {
    // `random_25` of `bench/run --random 50 --seed 1`: the fold's rows of `in0` lie 799 doubles
    // apart (a jam's shape), but `in1` strides 2058 doubles along the inner loop: each jammed
    // row would be one more gather (issue 43). The same nest with `in1` read along its rows is
    // jammed.
    let gathered = teil::compile(
        "input var in0 : [49 42 47 17]\ninput var in1 : [47 17 42 49]\noutput var out : [17 47]\n\
         out = transp 1 2 (red+ 1 (red+ 2 (mul in0 (transp 3 4 (transp 2 3 (transp 1 4 in1))))))",
    )
    .expect("checks")
    .0;
    assert!(jammed(&lower(&gathered, 1, true, false)).is_empty());
    let along_rows = teil::compile(
        "input var in0 : [49 42 47 17]\ninput var in1 : [49 42 47 17]\noutput var out : [17 47]\n\
         out = transp 1 2 (red+ 1 (red+ 2 (mul in0 in1)))",
    )
    .expect("checks")
    .0;
    let k = lower(&along_rows, 1, true, false);
    assert!(!jammed(&k).is_empty(), "{k}");
}

#[test]
fn a_jam_of_rows_the_loop_cannot_take_is_malformed() {
    let p = program(70);
    let malformed = |k: &Kernel| match validate::validate(&p, k) {
        Err(ValidationError::Malformed { .. }) => {}
        other => panic!("{other:?}\n{k}"),
    };
    // A jam before the cells' loop instead of the rows' loop: the cells' body is not a loop.
    let mut k = lower(&p, 1, true, false);
    fn move_in(ns: &mut [Node]) -> bool {
        ns.iter_mut().any(|n| match n {
            Node::Loop { body, .. } if matches!(body.first(), Some(Node::JamRows(_))) => {
                let r = body.remove(0);
                if let Some(Node::Loop { body: inner, .. }) = body.first_mut() {
                    inner.insert(0, r);
                }
                true
            }
            Node::Loop { body, .. } => move_in(body),
            _ => false,
        })
    }
    let moved = k.steps.iter_mut().any(|s| match s {
        Step::Nest { body, .. } => move_in(body),
        _ => false,
    });
    assert!(moved, "{k}");
    malformed(&k);
    // A jam of no rows.
    let mut k = lower(&p, 1, true, false);
    fn zero(ns: &mut [Node]) {
        for n in ns {
            if let Node::Loop { body, .. } = n {
                if let Some(Node::JamRows(r)) = body.first_mut() {
                    *r = 0;
                }
                zero(body);
            }
        }
    }
    for s in &mut k.steps {
        if let Step::Nest { body, .. } = s {
            zero(body);
        }
    }
    malformed(&k);
}

#[test]
fn the_corpus_program_jams_both_folds() {
    let text = std::fs::read_to_string(corpus::dir().join("jam_rows.teil")).expect("read");
    let (p, _) = teil::compile(&text).expect("checks");
    assert_eq!(jammed(&lower(&p, 1, true, false)).len(), 2);
}
