//! The fast evaluator's plan, asserted by structure (not time): fused contractions never
//! materialise the outer product (spec/interpreter.md).

use teil_interp::{fast, fast_store, random_inputs, run_oracle, same_values};

fn run(src: &str) -> (teil_interp::fast::Stats, bool) {
    let (p, _) = teil::compile(src).expect("checks");
    let inputs = random_inputs(&p, 9);
    let (out, stats) = fast::run(&p, fast_store(&p, &inputs).unwrap(), fast::Mode::Values).unwrap();
    let oracle = run_oracle(&p, &inputs).unwrap();
    let agree = oracle.iter().all(|(n, v)| same_values(v, &out[n]));
    (stats, agree)
}

#[test]
fn matrix_product_allocates_only_the_result() {
    let (stats, agree) = run(
        "input var A : [16 16]\ninput var B : [16 16]\noutput var C : [16 16]\nC = (A # B) .[2 3]",
    );
    assert!(agree);
    assert_eq!(stats.contractions, 1);
    assert_eq!(stats.peak_elements, 16 * 16);
}

#[test]
fn cfd_operator_is_three_contractions_of_n_cubed() {
    let n = 5u64;
    let src = format!(
        "input var A : [{n} {n}]\ninput var B : [{n} {n}]\ninput var C : [{n} {n}]\n\
         input var u : [{n} {n} {n}]\noutput var v : [{n} {n} {n}]\n\
         v = (A # B # C # u) .[2 7] .[3 6] .[4 5]"
    );
    let (stats, agree) = run(&src);
    assert!(agree);
    assert_eq!(stats.contractions, 3);
    // Intermediates are the size of u, never the rank-9 product (n^9 elements).
    assert_eq!(stats.peak_elements, n * n * n);
}

#[test]
fn trace_of_a_product_never_forms_the_product() {
    let (stats, agree) =
        run("var A : [8 8]\nvar B : [8 8]\nvar s : []\ns = ((A # B) .[2 3]) .[1 2]");
    assert!(agree);
    assert!(stats.peak_elements < 8 * 8 * 8, "{stats:?}");
}
