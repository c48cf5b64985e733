//! Sums in lanes (spec/padding.md, "Sums in lanes"; `ir::LaneFold` with a sum): a sum along
//! unit stride of at least `opt::lanes::MIN_SUM_TERMS` terms, in a kernel that may reassociate,
//! is computed in 16 lanes combined as `LaneFold::TREE`. These tests hold the printed C, the
//! validator's machine and the spec together:
//!
//! - the compiled C computes exactly the association the IR means: its bits equal
//!   `validate::evaluate`'s on every target's order, with the vectors, in plain C
//!   (`-Dteil_portable`) and under `-O3 -march=native`, on inputs that round and on
//!   infinities and NaN;
//! - that association is not the spec's fold (the results differ from the oracle's on inputs
//!   that round), and it is a permitted one: the validator accepts the kernel and judges its
//!   results permitted;
//! - without reassociation (`Options { lift: false, .. }`) and below the threshold, the sum
//!   keeps its fold and the C equals the oracle bit for bit;
//! - in fma mode the lanes fuse each product into its lane as the loop fuses it: on small
//!   integers (nothing rounds) the results are the oracle's, and the validator accepts the
//!   kernel.

mod rounding;

use ndarray::ArrayD;
use rounding::{assert_same, compile, compiled_and_permitted, differing, lower, toolchains};
use std::collections::BTreeMap;
use teil::CheckedProgram;
use teil_cbackend::ir::{Kernel, LaneFold, Node, Step};
use teil_cbackend::opt::lanes::MIN_SUM_TERMS;
use teil_cbackend::run::Toolchain;
use teil_cbackend::validate;

/// The sums in lanes of `k`.
fn lane_sums(k: &Kernel) -> Vec<LaneFold> {
    fn nodes(ns: &[Node], out: &mut Vec<LaneFold>) {
        for n in ns {
            match n {
                Node::LaneFold(l) if l.reassociates() => out.push(l.clone()),
                Node::Loop { body, .. } => nodes(body, out),
                _ => {}
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

/// The programs: a sum of a vector (whole blocks only, and with a remainder of 8 and of 7), a
/// dot product, and sums along the rows of a product of three matrices (a nest of cells, each
/// a sum in lanes).
fn programs() -> Vec<String> {
    let mut v: Vec<String> = [64, 1000, 1031]
        .iter()
        .map(|n| format!("input var x : [{n}]\noutput var s : []\ns = red+ 1 x"))
        .collect();
    v.push(
        "input var x : [1031]\ninput var y : [1031]\noutput var s : []\ns = red+ 1 (x * y)"
            .to_string(),
    );
    v.push(
        "input var A : [5 300]\ninput var B : [5 300]\ninput var C : [5 300]\n\
         output var r : [5]\nr = red+ 2 (A * B * C)"
            .to_string(),
    );
    v
}

/// Inputs that round, with every 97th cell `∞`, `−∞` or NaN in turn under `specials`.
fn inputs(p: &CheckedProgram, seed: u64, specials: bool) -> BTreeMap<String, ArrayD<f64>> {
    rounding::inputs(p, seed, specials.then_some(291))
}

#[test]
fn the_c_computes_the_lanes_the_ir_means_and_the_validator_permits_them() {
    let mut differs_from_the_fold = 0;
    for src in programs() {
        let p = compile(&src);
        for pad in [1, 4] {
            let k = lower(&p, pad, true, false);
            assert!(k.reassociates(), "M = {pad}: a sum in lanes\n{src}\n{k}");
            assert!(!lane_sums(&k).is_empty(), "{src}\n{k}");
            assert_eq!(k.lifted, 0, "{src}");
            validate::validate(&p, &k).unwrap_or_else(|e| panic!("{src}: {e}"));
            for (seed, specials) in [(1, false), (2, true), (3, false)] {
                let inputs = inputs(&p, seed, specials);
                let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
                let what = format!("M = {pad}, seed {seed}:\n{src}");
                let ir = compiled_and_permitted(&what, &p, &k, &inputs);
                if !specials {
                    differs_from_the_fold += differing(&ir, &oracle);
                }
            }
        }
    }
    // Another association: on inputs that round, many sums differ from the spec's fold.
    assert!(differs_from_the_fold >= 10, "{differs_from_the_fold}");
}

#[test]
fn without_reassociation_or_below_the_threshold_sums_keep_their_fold() {
    let short = format!(
        "input var x : [{}]\noutput var s : []\ns = red+ 1 x",
        MIN_SUM_TERMS - 1
    );
    let cases = programs()
        .into_iter()
        .map(|src| (src, false))
        .chain([(short, true)]);
    for (src, lift) in cases {
        let p = compile(&src);
        let k = lower(&p, 1, lift, false);
        assert!(!k.reassociates(), "{src}\n{k}");
        let inputs = inputs(&p, 4, false);
        let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
        let c = teil_cbackend::run::run(&Toolchain::default(), &k, &inputs).expect("runs");
        assert_same(&src, &c.values, &oracle);
    }
}

#[test]
fn fma_mode_lanes_fuse_as_the_loop_fuses() {
    for src in programs() {
        let p = compile(&src);
        let k = lower(&p, 1, true, true);
        let sums = lane_sums(&k);
        assert!(!sums.is_empty(), "{src}\n{k}");
        validate::validate(&p, &k).unwrap_or_else(|e| panic!("{src}: {e}"));
        let c_src = teil_cbackend::print::module(&[&k]);
        let fuses = sums.iter().any(|l| l.value.product().is_some());
        assert_eq!(c_src.contains("teil_fmav4("), fuses, "{src}");
        // Small integers: no product and no partial sum rounds, so every association and
        // every fusion gives the oracle's value.
        let inputs = teil_interp::random_inputs(&p, 5);
        let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
        for (flags, tc) in toolchains() {
            let c = teil_cbackend::run::run(&tc, &k, &inputs).expect("runs");
            assert_same(&format!("`cc {flags}`: {src}"), &c.values, &oracle);
        }
    }
}

#[test]
fn a_sum_in_lanes_shorter_than_a_block_is_malformed() {
    // The pass never makes one (64 terms at least); the validator refuses to give a meaning to
    // one, whose printed lanes would add `-0.0` sums that the term does not have.
    let p = compile("input var x : [64]\noutput var s : []\ns = red+ 1 x");
    let mut k = lower(&p, 1, true, false);
    fn shorten(ns: &mut [Node]) -> bool {
        ns.iter_mut().any(|n| match n {
            Node::LaneFold(l) if l.reassociates() => {
                l.extent = LaneFold::LANES - 1;
                true
            }
            Node::Loop { body, .. } => shorten(body),
            _ => false,
        })
    }
    let shortened = k.steps.iter_mut().any(|s| match s {
        Step::Nest { body, .. } => shorten(body),
        _ => false,
    });
    assert!(shortened, "{k}");
    match validate::validate(&p, &k) {
        Err(validate::ValidationError::Malformed { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_pass_takes_only_unit_stride_sums_whose_terms_the_lanes_compute_as_the_loop() {
    // Along a strided axis the sum is not a lane sum (the interchange pass folds it into the
    // cells instead); in fma mode a term with a product-then-add of its own keeps its loop (the
    // lanes compute terms with plain vector operations), while in exact mode it runs in lanes.
    let strided = compile("input var A : [200 3]\noutput var r : [3]\nr = red+ 1 A");
    assert!(lane_sums(&lower(&strided, 1, true, false)).is_empty());
    let fused = compile(
        "input var x : [200]\ninput var y : [200]\ninput var z : [200]\noutput var s : []\n\
         s = red+ 1 (x * y + z)",
    );
    assert_eq!(lane_sums(&lower(&fused, 1, true, false)).len(), 1);
    let k = lower(&fused, 1, true, true);
    assert!(lane_sums(&k).is_empty(), "{k}");
    assert!(!k.reassociates());
    // A product of the loop's own update is fused lane by lane instead.
    let dot =
        compile("input var x : [200]\ninput var y : [200]\noutput var s : []\ns = red+ 1 (x * y)");
    assert_eq!(lane_sums(&lower(&dot, 1, true, true)).len(), 1);
}
