//! Both evaluators on the papers' example kernels, with expected values computed by hand or by
//! loops written here, and St-Stmt semantics of in-place statements.

use ndarray::{arr0, arr1, arr2, ArrayD, IxDyn};
use std::collections::BTreeMap;
use teil_interp::{run_fast, run_oracle, same_values, Tensor};

fn compile(src: &str) -> teil::CheckedProgram {
    match teil::compile(src) {
        Ok((p, _)) => p,
        Err(d) => panic!("test program does not check: {d:#?}"),
    }
}

fn inputs(list: &[(&str, Tensor)]) -> BTreeMap<String, Tensor> {
    list.iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect()
}

/// Runs both evaluators; returns the oracle's results after checking that the fast evaluator
/// produced the same for every variable (the callers then compare with independent values).
fn run(src: &str, ins: &[(&str, Tensor)]) -> BTreeMap<String, Tensor> {
    let p = compile(src);
    let oracle = run_oracle(&p, &inputs(ins)).expect("the oracle runs");
    let fast = run_fast(&p, &inputs(ins)).expect("the fast evaluator runs");
    assert_eq!(
        oracle.keys().collect::<Vec<_>>(),
        fast.keys().collect::<Vec<_>>()
    );
    for (name, v) in &oracle {
        assert!(
            same_values(v, &fast[name]),
            "`{name}`: oracle\n{v}\nfast\n{}",
            fast[name]
        );
    }
    oracle
}

fn assert_same(got: &Tensor, want: &Tensor) {
    assert!(same_values(got, want), "got\n{got}\nwant\n{want}");
}

#[test]
fn matrix_product_fig7() {
    let a = arr2(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).into_dyn();
    let b = arr2(&[[1.0, -1.0], [0.0, 2.0], [-2.0, 1.0]]).into_dyn();
    // By hand: [1-0-6, -1+4+3; 4+0-12, -4+10+6]
    let want = arr2(&[[-5.0, 6.0], [-8.0, 12.0]]).into_dyn();
    for src in [
        "alloc A : [2, 3]\nalloc B : [3, 2]\nalloc C : [2, 2]\nC = red+ 2 (diag 2 3 (prod A B))",
        "var A : [2 3]\nvar B : [3 2]\nvar C : [2 2]\nC = (A # B) .[2 3]",
        "alloc A : [2, 3]\nalloc B : [3, 2]\nalloc C : [2, 2]\nC = contr 2 3 (prod A B)",
        "alloc A : [2, 3]\nalloc B : [3, 2]\nalloc C : [2, 2]\nC = contr 3 2 (prod A B)",
    ] {
        let out = run(src, &[("A", a.clone()), ("B", b.clone())]);
        assert_same(&out["C"], &want);
    }
}

#[test]
fn trace_of_a_product_report_fig5() {
    let a = arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn();
    let b = arr2(&[[5.0, 6.0], [7.0, 8.0]]).into_dyn();
    // AB = [[19, 22], [43, 50]]; trace = 69.
    let out = run(
        "var A : [2 2]\nvar B : [2 2]\nvar s : []\ns = ((A # B) .[2 3]) .[1 2]",
        &[("A", a), ("B", b)],
    );
    assert_same(&out["s"], &arr0(69.0).into_dyn());
}

#[test]
fn transposed_product_fig10b() {
    // C = A^T B with A : [h, m], B : [h, n]: C = contr 1 3 (prod A B).
    let a = arr2(&[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).into_dyn();
    let b = arr2(&[[1.0, 0.0, -1.0], [2.0, 1.0, 0.0], [0.0, 3.0, 1.0]]).into_dyn();
    let out = run(
        "alloc A : [3, 2]\nalloc B : [3, 3]\nalloc C : [2, 3]\nC = contr 1 3 (prod A B)",
        &[("A", a.clone()), ("B", b.clone())],
    );
    let mut want = ArrayD::zeros(IxDyn(&[2, 3]));
    for m in 0..2 {
        for n in 0..3 {
            want[[m, n]] = (0..3).map(|h| a[[h, m]] * b[[h, n]]).sum();
        }
    }
    assert_same(&out["C"], &want);
}

#[test]
fn transposition_report_fig6() {
    let src = "var u : [2 3 4]\nvar v : [4 3 2]\nv = u ^[1 3]";
    let u = ArrayD::from_shape_fn(IxDyn(&[2, 3, 4]), |i| {
        (100 * i[0] + 10 * i[1] + i[2]) as f64
    });
    let out = run(src, &[("u", u.clone())]);
    let want = ArrayD::from_shape_fn(IxDyn(&[4, 3, 2]), |i| u[[i[2], i[1], i[0]]]);
    assert_same(&out["v"], &want);
}

#[test]
fn fig11_projection_and_expansion() {
    let src = "alloc A : [2, 2]\nalloc B : [3, 2, 2]\nalloc C : [2, 2]\nalloc D : [3, 2, 2]\n\
               C = add A (proj 1 2 B)\nD = add (expa 1 3 A) B";
    let a = arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn();
    let b = ArrayD::from_shape_fn(IxDyn(&[3, 2, 2]), |i| (10 * i[0] + 2 * i[1] + i[2]) as f64);
    let out = run(src, &[("A", a.clone()), ("B", b.clone())]);
    // proj 1 2 B is the slice B[2, :, :] = [[10, 11], [12, 13]].
    assert_same(&out["C"], &arr2(&[[11.0, 13.0], [15.0, 17.0]]).into_dyn());
    let want = ArrayD::from_shape_fn(IxDyn(&[3, 2, 2]), |i| {
        a[[i[1], i[2]]] + b[[i[0], i[1], i[2]]]
    });
    assert_same(&out["D"], &want);
}

#[test]
fn fig10c_copy_then_increment() {
    let src = "alloc A : [3]\nalloc B : [3]\nalloc C : [3]\nA = B\nA = add A C";
    let out = run(
        src,
        &[
            ("B", arr1(&[1.0, 2.0, 3.0]).into_dyn()),
            ("C", arr1(&[10.0, 20.0, 30.0]).into_dyn()),
        ],
    );
    assert_same(&out["A"], &arr1(&[11.0, 22.0, 33.0]).into_dyn());
}

#[test]
fn reductions_on_negative_data() {
    let src = "var X : [2 3]\nvar s : [2]\nvar p : [2]\nvar hi : [3]\nvar lo : [3]\n\
               s = red+ 2 X\np = red* 2 X\nhi = redmax 1 X\nlo = redmin 1 X";
    let x = arr2(&[[-1.0, -2.0, -3.0], [4.0, -5.0, 0.5]]).into_dyn();
    let out = run(src, &[("X", x)]);
    assert_same(&out["s"], &arr1(&[-6.0, -0.5]).into_dyn());
    assert_same(&out["p"], &arr1(&[-6.0, -10.0]).into_dyn());
    assert_same(&out["hi"], &arr1(&[4.0, -2.0, 0.5]).into_dyn());
    assert_same(&out["lo"], &arr1(&[-1.0, -5.0, -3.0]).into_dyn());
}

#[test]
fn in_place_statements_read_the_old_store() {
    // St-Stmt: the whole right-hand side is evaluated before A is replaced.
    let a = arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn();
    let b = arr2(&[[0.0, 1.0], [1.0, 0.0]]).into_dyn();
    let out = run("var A : [2 2]\nA = A ^[1 2]", &[("A", a.clone())]);
    assert_same(&out["A"], &arr2(&[[1.0, 3.0], [2.0, 4.0]]).into_dyn());
    let out = run(
        "var A : [2 2]\nvar B : [2 2]\nA = (A # B) .[2 3]",
        &[("A", a.clone()), ("B", b)],
    );
    assert_same(&out["A"], &arr2(&[[2.0, 1.0], [4.0, 3.0]]).into_dyn());
    let out = run("var A : [2 2]\nA = A + A ^[1 2]", &[("A", a)]);
    assert_same(&out["A"], &arr2(&[[2.0, 5.0], [5.0, 8.0]]).into_dyn());
}

#[test]
fn undefined_values_propagate_and_absorb() {
    // T is never assigned: all of its cells are •, written as NaN.
    let src = "input var A : [2]\nvar T : [2]\noutput var R : [2]\noutput var M : []\n\
               R = A + T\nM = redmax 1 (A - A)";
    let p = compile(src);
    let out = run_oracle(&p, &inputs(&[("A", arr1(&[1.0, 2.0]).into_dyn())])).unwrap();
    assert!(out["R"].iter().all(|x| x.is_nan()));
    assert!(out["T"].iter().all(|x| x.is_nan()));
    assert_same(&out["M"], &arr0(0.0).into_dyn());
    // A NaN supplied by the caller is a number (not •); max propagates it.
    let out = run(
        "var A : [3]\nvar m : []\nm = redmax 1 A",
        &[("A", arr1(&[1.0, f64::NAN, 3.0]).into_dyn())],
    );
    assert!(out["m"].iter().all(|x| x.is_nan()));
}

#[test]
fn division_is_ieee() {
    let out = run(
        "var A : [3]\nvar B : [3]\nvar C : [3]\nC = A / B",
        &[
            ("A", arr1(&[1.0, -1.0, 0.0]).into_dyn()),
            ("B", arr1(&[0.0, 0.0, 0.0]).into_dyn()),
        ],
    );
    assert_eq!(out["C"][[0]], f64::INFINITY);
    assert_eq!(out["C"][[1]], f64::NEG_INFINITY);
    assert!(out["C"][[2]].is_nan());
}

#[test]
fn literals_and_scalar_operations() {
    let out = run(
        "var A : [2]\nvar B : [2]\nB = 2 * A / 4 - expa 1 2 (-1)",
        &[("A", arr1(&[3.0, -5.0]).into_dyn())],
    );
    assert_same(&out["B"], &arr1(&[2.5, -1.5]).into_dyn());
}

#[test]
fn diag_keeps_the_smaller_position_either_order() {
    // diag 2 1 X = diag 1 2 X: the vector of X[k, k].
    let x = arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn();
    for src in [
        "var X : [2 2]\nvar d : [2]\nd = diag 1 2 X",
        "var X : [2 2]\nvar d : [2]\nd = diag 2 1 X",
    ] {
        let out = run(src, &[("X", x.clone())]);
        assert_same(&out["d"], &arr1(&[1.0, 4.0]).into_dyn());
    }
}

#[test]
fn deepest_accepted_expressions_do_not_exhaust_the_stack() {
    // A left-nested chain of 510 additions (within the parser's depth limit), run on a test
    // thread's default stack by both evaluators: B = 511 · A.
    let mut src = String::from("var A : [2]\nvar B : [2]\nB = A");
    for _ in 0..510 {
        src.push_str(" + A");
    }
    let out = run(&src, &[("A", arr1(&[1.0, -2.0]).into_dyn())]);
    assert_same(&out["B"], &arr1(&[511.0, -1022.0]).into_dyn());
    let mut nested = String::from("A");
    // The oracle is pointwise: each level doubles its work (2^12 reads here).
    for _ in 0..12 {
        nested = format!("red+ 1 (expa 1 2 ({nested}))");
    }
    let out = run(
        &format!("var A : [2]\nvar B : [2]\nB = {nested}"),
        &[("A", arr1(&[1.0, 0.5]).into_dyn())],
    );
    assert_same(&out["B"], &arr1(&[4096.0, 2048.0]).into_dyn());
}
