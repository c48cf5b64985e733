//! What the index-notation corpus (`tests/tin/*.tin`) computes: each accepted file is lowered by
//! `teil::guard::load`, run through both evaluators on reproducible inputs, and compared with
//! loops written here from the kernel's intended meaning (TeIL paper §2 for the `fig*` files,
//! spec/frontends.md for the rest).

use ndarray::{ArrayD, Dimension, IxDyn};
use std::collections::BTreeMap;
use std::path::Path;
use teil_interp::{random_inputs, run_fast, run_oracle, Tensor};

/// Lowers `tests/tin/<name>`, runs both evaluators on `random_inputs(seed)` and returns the
/// inputs and the oracle's results (after checking the fast evaluator agrees).
fn run(name: &str, seed: u64) -> (BTreeMap<String, Tensor>, BTreeMap<String, Tensor>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tin")
        .join(name);
    let src = std::fs::read_to_string(&path).expect("corpus file");
    let (p, _) = teil::guard::load(name, &src).unwrap_or_else(|d| panic!("{name}: {d:#?}"));
    let inputs = random_inputs(&p, seed);
    let oracle = run_oracle(&p, &inputs).expect("the oracle runs");
    let fast = run_fast(&p, &inputs).expect("the fast evaluator runs");
    for (var, v) in &oracle {
        assert!(
            close(v, &fast[var]),
            "{name}: `{var}`: oracle\n{v}\nfast\n{}",
            fast[var]
        );
    }
    (inputs, oracle)
}

/// Equal shapes, and every cell equal up to rounding (NaN equals NaN).
fn close(a: &Tensor, b: &Tensor) -> bool {
    a.shape() == b.shape()
        && a.iter().zip(b.iter()).all(|(&x, &y)| {
            (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        })
}

/// A tensor whose cell at each index is `f(index)`.
fn build(shape: &[usize], f: impl Fn(&[usize]) -> f64) -> Tensor {
    let mut t = ArrayD::zeros(IxDyn(shape));
    for (ix, cell) in t.indexed_iter_mut() {
        *cell = f(ix.slice());
    }
    t
}

fn assert_result(name: &str, got: &Tensor, want: &Tensor) {
    assert!(close(got, want), "{name}: got\n{got}\nwant\n{want}");
}

const SEEDS: [u64; 3] = [1, 2, 3];

#[test]
fn fig2a_tensor_vector_multiplication() {
    for seed in SEEDS {
        let (i, out) = run("fig2a.tin", seed);
        let (b, c) = (&i["B"], &i["C"]);
        let want = build(&[2, 3], |x| {
            (0..4).map(|k| b[[x[0], x[1], k]] * c[[k]]).sum()
        });
        assert_result("fig2a", &out["A"], &want);
    }
}

#[test]
fn fig2b_sums_k_with_i_bound() {
    for seed in SEEDS {
        let (i, out) = run("fig2b.tin", seed);
        let (b, c) = (&i["B"], &i["C"]);
        let want = build(&[2, 3], |x| {
            (0..4).map(|k| b[[x[0], x[1], k]] * c[[x[0]]]).sum()
        });
        assert_result("fig2b", &out["A"], &want);
    }
}

/// The kernel TACO loops on: it terminates here and means sum_k B(k,j,i) * C(i).
#[test]
fn fig2c_permuted_indices_terminate_with_the_intended_meaning() {
    for seed in SEEDS {
        let (i, out) = run("fig2c.tin", seed);
        let (b, c) = (&i["B"], &i["C"]);
        let want = build(&[2, 3], |x| {
            (0..4).map(|k| b[[k, x[1], x[0]]] * c[[x[0]]]).sum()
        });
        assert_result("fig2c", &out["A"], &want);
    }
}

#[test]
fn fig3b_transposed_matrix_multiplication() {
    for seed in SEEDS {
        let (i, out) = run("fig3b.tin", seed);
        let (a, b) = (&i["A"], &i["B"]);
        let want = build(&[4, 5], |x| {
            (0..6).map(|k| a[[k, x[0]]] * b[[k, x[1]]]).sum()
        });
        assert_result("fig3b", &out["C"], &want);
    }
}

/// Both TC kernels of Fig. 4 compute A = B + C, and agree with each other.
#[test]
fn fig4a_and_fig4b_are_equal() {
    for seed in SEEDS {
        let (ia, a) = run("fig4a.tin", seed);
        let (ib, b) = run("fig4b.tin", seed);
        assert_eq!(ia, ib);
        let want = build(&[5], |x| ia["B"][[x[0]]] + ia["C"][[x[0]]]);
        assert_result("fig4a", &a["A"], &want);
        assert_result("fig4b", &b["A"], &want);
    }
}

#[test]
fn matmul_and_accumulate() {
    let (i, out) = run("matmul.tin", 4);
    let want = build(&[2, 4], |x| {
        (0..3).map(|k| i["A"][[x[0], k]] * i["B"][[k, x[1]]]).sum()
    });
    assert_result("matmul", &out["C"], &want);

    let (i, out) = run("accumulate.tin", 5);
    let want = build(&[3], |x| {
        i["y"][[x[0]]] + (0..4).map(|j| i["A"][[x[0], j]] * i["x"][[j]]).sum::<f64>()
    });
    assert_result("accumulate", &out["y"], &want);
}

#[test]
fn elementwise_scalars_and_literals() {
    for seed in SEEDS {
        let (i, out) = run("elementwise.tin", seed);
        let (a, b, s) = (&i["A"], &i["B"], i["s"][[]]);
        let c = build(&[2, 3], |x| {
            a[[x[0], x[1]]] * b[[x[1], x[0]]] - 2.5 * a[[x[0], x[1]]] / s
        });
        let d = build(&[2, 3], |x| -(a[[x[0], x[1]]] + s) / b[[x[1], x[0]]] + 1.0);
        assert_result("elementwise C", &out["C"], &c);
        assert_result("elementwise D", &out["D"], &d);
    }
}

#[test]
fn diagonal_trace_outer_broadcast() {
    let (i, out) = run("diagonal_trace.tin", 6);
    let a = &i["A"];
    assert_result("diagonal", &out["d"], &build(&[3], |x| a[[x[0], x[0]]]));
    assert_result(
        "trace",
        &out["t"],
        &build(&[], |_| (0..3).map(|k| a[[k, k]]).sum()),
    );

    let (i, out) = run("outer_broadcast.tin", 7);
    let (a, b) = (&i["a"], &i["b"]);
    assert_result(
        "outer",
        &out["P"],
        &build(&[2, 3], |x| a[[x[0]]] * b[[x[1]]]),
    );
    assert_result("broadcast", &out["Q"], &build(&[3, 2], |x| a[[x[1]]] + 1.0));
}

#[test]
fn five_operand_chain() {
    for seed in SEEDS {
        let (i, out) = run("chain5.tin", seed);
        let g = |n: &str, x: &[usize]| i[n][IxDyn(x)];
        let want = build(&[2], |x| {
            let mut sum = 0.0;
            for a in 0..3 {
                for b in 0..4 {
                    for c in 0..5 {
                        for d in 0..6 {
                            for e in 0..2 {
                                sum += g("A", &[x[0], a])
                                    * g("B", &[a, b])
                                    * g("C", &[b, c])
                                    * g("D", &[c, d])
                                    * g("E", &[d, e])
                                    * g("v", &[e]);
                            }
                        }
                    }
                }
            }
            sum
        });
        assert_result("chain5", &out["y"], &want);
    }
}

/// The summation rule of spec/frontends.md: a term without the summed index counts once per
/// value of it (W0501), here 4 * b(i).
#[test]
fn partial_sum_multiplies_by_the_extent() {
    let (i, out) = run("partial_sum.tin", 8);
    let want = build(&[3], |x| {
        (0..4).map(|j| i["A"][[x[0], j]] * i["x"][[j]]).sum::<f64>() + 4.0 * i["b"][[x[0]]]
    });
    assert_result("partial_sum", &out["y"], &want);
}

#[test]
fn nested_sums_and_quotients() {
    for seed in SEEDS {
        let (i, out) = run("nested.tin", seed);
        let want = build(&[2], |x| {
            (0..4)
                .map(|k| {
                    (i["B"][[x[0], k]] + i["C"][[k, x[0]]]) * i["x"][[k]] / (i["w"][[k]] + 1.0)
                })
                .sum()
        });
        assert_result("nested", &out["y"], &want);
    }
}

/// Without qualifiers the lowered program keeps the user's variables as its interface (all
/// `inout`), and the temporaries stay internal.
#[test]
fn unqualified_programs_keep_their_interface() {
    let (i, out) = run("unqualified.tin", 9);
    let g = |n: &str, a: usize, b: usize| i[n][[a, b]];
    let mut want = 0.0;
    for a in 0..2 {
        for b in 0..3 {
            for c in 0..4 {
                want += g("A", a, b) * g("B", b, c) * g("C", c, a);
            }
        }
    }
    assert_result("unqualified", &out["s"], &build(&[], |_| want));
    assert_eq!(i.keys().collect::<Vec<_>>(), ["A", "B", "C", "s"]);
}
