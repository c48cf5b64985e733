//! A NaN supplied by the caller is a NaN, not `•` (spec/values.md, "At the boundary"): one rule
//! for the oracle's store, the fast evaluator and the report of `teil run` on where NaN cells
//! came from. Values do not depend on the rule (every operation propagates NaN as it absorbs
//! `•`); what it decides is which cells are *undefined*.

use ndarray::{arr1, ArrayD};
use std::collections::BTreeMap;
use teil_interp::domain::Val;
use teil_interp::undefined::{self, Report, Source, SourceKind};

fn compile(src: &str) -> teil::CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0
}

const SRC: &str = "input var A : [3]\nvar T : [3]\noutput var R : [3]\noutput var S : [3]\n\
                   output var m : []\nR = A + A\nS = A + T\nm = redmax 1 A";

fn inputs() -> BTreeMap<String, ArrayD<f64>> {
    [("A".to_string(), arr1(&[1.0, f64::NAN, 3.0]).into_dyn())].into()
}

#[test]
fn the_oracle_stores_a_supplied_nan_as_a_number() {
    let p = compile(SRC);
    let store = teil_interp::initial_store(&p, &inputs()).unwrap();
    assert_eq!(store.read("A", &[1]).unwrap(), Val::Num(1.0));
    assert!(matches!(store.read("A", &[2]).unwrap(), Val::Num(x) if x.is_nan()));
    // A variable the caller does not supply is undefined.
    assert_eq!(store.read("T", &[2]).unwrap(), Val::Undef);
}

#[test]
fn oracle_and_fast_evaluator_give_the_same_nan_cells() {
    let p = compile(SRC);
    let o = teil_interp::run_oracle(&p, &inputs()).unwrap();
    let f = teil_interp::run_fast(&p, &inputs()).unwrap();
    let pattern = |t: &ArrayD<f64>| t.iter().map(|x| x.is_nan()).collect::<Vec<_>>();
    assert_eq!(pattern(&o["R"]), [false, true, false]);
    assert_eq!(o["R"][[0]], 2.0);
    assert_eq!(o["R"][[2]], 6.0);
    assert_eq!(pattern(&o["S"]), [true, true, true]);
    assert!(o["m"][[]].is_nan());
    for v in ["R", "S", "m"] {
        assert_eq!(pattern(&o[v]), pattern(&f[v]), "{v}");
        assert!(teil_interp::same_values(&o[v], &f[v]), "{v}");
    }
}

#[test]
fn teil_run_reports_cells_from_a_nan_input_as_nan_not_undefined() {
    let p = compile(SRC);
    let inputs = inputs();
    let results = teil_interp::run_fast(&p, &inputs).unwrap();
    let outputs: Vec<String> = ["R", "S", "m"].map(String::from).to_vec();
    let reports = undefined::analyse(&p, &inputs, &results, &outputs).unwrap();
    let t = Source {
        name: "T".to_string(),
        kind: SourceKind::NotSupplied,
    };
    assert_eq!(
        reports,
        [
            // R[2] = NaN + NaN: a NaN of defined values.
            Report {
                var: "R".to_string(),
                undefined: 0,
                first_undefined: None,
                sources: vec![],
                nan: 1,
                first_nan: Some(vec![2]),
            },
            // S = A + T: every cell reads the unassigned T, so every cell is undefined, the
            // NaN of A[2] included (• absorbs).
            Report {
                var: "S".to_string(),
                undefined: 3,
                first_undefined: Some(vec![1]),
                sources: vec![t],
                nan: 0,
                first_nan: None,
            },
            Report {
                var: "m".to_string(),
                undefined: 0,
                first_undefined: None,
                sources: vec![],
                nan: 1,
                first_nan: Some(vec![]),
            },
        ]
    );
    assert_eq!(
        reports[0].messages(),
        [
            "`R` has 1 NaN cell computed from defined values (NaN inputs, or arithmetic such as \
          0/0) (the first is R[2])"
        ]
    );
}

/// `n` variables `t0..` the caller does not supply, each read before it is assigned by a
/// chain, and `n` outputs: `y_k` reads `t_k` (through `u_k` for even `k`), plus one output
/// no statement assigns and one variable assigned before it is read.
fn many_sources(n: usize) -> String {
    let mut src = String::from("input var a : [1]\noutput var never : [1]\nvar w : [1]\n");
    for k in 0..n {
        src += &format!("var t{k} : [1]\nvar u{k} : [1]\noutput var y{k} : [1]\n");
    }
    src += "w = a\n";
    for k in 0..n {
        if k % 2 == 0 {
            src += &format!("u{k} = t{k} + w\ny{k} = u{k} + a\n");
        } else {
            src += &format!("y{k} = a + t{k}\n");
        }
    }
    src
}

#[test]
fn undefined_cells_name_only_the_sources_that_reach_them_at_any_scale() {
    // Within the exact attribution (at most 16 sources) and beyond it (data flow): every
    // output names exactly its own source, never a variable assigned before it is read.
    for n in [3, 40] {
        let p = compile(&many_sources(n));
        let inputs = BTreeMap::from([("a".to_string(), arr1(&[1.0]).into_dyn())]);
        let results = teil_interp::run_fast(&p, &inputs).unwrap();
        let outputs = p.output_names();
        let reports = undefined::analyse(&p, &inputs, &results, &outputs).unwrap();
        assert_eq!(reports.len(), n + 1, "n = {n}");
        for r in &reports {
            let want = if r.var == "never" {
                Source {
                    name: "never".into(),
                    kind: SourceKind::NeverAssigned,
                }
            } else {
                Source {
                    name: format!("t{}", &r.var[1..]),
                    kind: SourceKind::NotSupplied,
                }
            };
            assert_eq!(r.sources, [want], "n = {n}: {r:?}");
            assert_eq!(r.undefined, 1);
        }
    }
}

#[test]
fn a_warning_names_at_most_eight_sources_and_counts_the_rest() {
    // One output reading 30 undefined variables: beyond the exact attribution, listed by
    // the data flow, 8 named and 22 counted.
    let mut src = String::from("output var r : [1]\n");
    let mut sum = Vec::new();
    for k in 0..30 {
        src += &format!("var t{k} : [1]\n");
        sum.push(format!("t{k}"));
    }
    src += &format!("r = {}\n", sum.join(" + "));
    let p = compile(&src);
    let inputs = BTreeMap::new();
    let results = teil_interp::run_fast(&p, &inputs).unwrap();
    let reports = undefined::analyse(&p, &inputs, &results, &p.output_names()).unwrap();
    assert_eq!(reports[0].sources.len(), 30);
    let message = &reports[0].messages()[0];
    assert_eq!(
        message
            .matches("which was read before it was assigned")
            .count(),
        8
    );
    assert!(
        message.ends_with(" and from 22 more variables"),
        "{message}"
    );
}
