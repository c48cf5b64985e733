//! `validate::evaluate`: the validator's machine over binary64 with `•` computes the compiled
//! C kernel's values bit for bit on lifted exact-mode kernels — plain nests, packed and dot
//! contraction steps, on inputs that round (thirds and tenths), and on infinities and NaN — so
//! the campaign's judgement of lifted kernels (spec/fuzzing.md, *Lifted kernels*) can compare
//! the C with its IR.

mod corpus;
mod rounding;

use ndarray::{ArrayD, Dimension};
use rounding::same;
use std::collections::BTreeMap;
use teil_cbackend::ir::{Kernel, Target};
use teil_cbackend::run::Toolchain;
use teil_cbackend::validate;
use teil_cbackend::Options;

fn corpus(name: &str) -> teil::CheckedProgram {
    let path = corpus::dir().join(format!("{name}.teil"));
    let text = std::fs::read_to_string(path).expect("read");
    teil::compile(&text).expect("checks").0
}

fn lower(p: &teil::CheckedProgram, pad: u64) -> Kernel {
    let opts = Options {
        pad,
        ..Options::default()
    };
    teil_cbackend::lower(p, &opts).expect("lowers")
}

/// Inputs that round, with every seventh cell `∞`, `−∞` or NaN in turn under `specials`.
fn inputs(p: &teil::CheckedProgram, seed: u64, specials: bool) -> BTreeMap<String, ArrayD<f64>> {
    rounding::inputs(p, seed, specials.then_some(21))
}

/// Runs `k` in C and on the machine (every target's order) and asserts every parameter's
/// logical cells equal bit for bit; returns how many cells are not finite.
fn assert_evaluate_is_the_kernel(
    what: &str,
    k: &Kernel,
    inputs: &BTreeMap<String, ArrayD<f64>>,
) -> usize {
    let tc = Toolchain::default();
    let c = teil_cbackend::run::run(&tc, k, inputs).expect("the kernel runs");
    let mut nonfinite = 0;
    for target in Target::ALL {
        let ir = validate::evaluate(k, target, inputs).expect("the IR evaluates");
        assert_eq!(
            ir.keys().collect::<Vec<_>>(),
            c.values.keys().collect::<Vec<_>>(),
            "{what}"
        );
        for (name, want) in &c.values {
            let got = &ir[name];
            assert_eq!(got.shape(), want.shape(), "{what}: {name}");
            for ((at, &x), &y) in want.indexed_iter().zip(got.iter()) {
                assert!(
                    same(x, y),
                    "{what}, {target}: {name}{:?}: C {x:?}, IR in binary64 {y:?}",
                    at.slice()
                );
                nonfinite += usize::from(!x.is_finite());
            }
        }
    }
    nonfinite
}

#[test]
fn lifted_kernels_with_packed_and_dot_steps_evaluate_to_the_c_bits() {
    // cfd: lifted into packed steps; mttkrp: two dot steps; abc: packed.
    for name in ["cfd", "mttkrp", "abc"] {
        let p = corpus(name);
        for pad in [1, 4] {
            let k = lower(&p, pad);
            assert!(k.lifted > 0, "{name} is lifted");
            assert!(
                k.steps
                    .iter()
                    .any(|s| matches!(s, teil_cbackend::ir::Step::Contract { .. })),
                "{name} has contraction steps"
            );
            for (seed, specials) in [(1, false), (2, true)] {
                let what = format!("{name} at M = {pad}, seed {seed}");
                let nonfinite =
                    assert_evaluate_is_the_kernel(&what, &k, &inputs(&p, seed, specials));
                assert_eq!(
                    nonfinite > 0,
                    specials,
                    "{what}: {nonfinite} cells not finite"
                );
            }
        }
    }
}

#[test]
fn lifted_plain_nests_evaluate_to_the_c_bits() {
    // Small lifted programs whose kernels are plain nests over temporaries (no contraction
    // steps at these sizes), with and without padding; one divides.
    let programs = [
        "input var A : [2 2]\ninput var B : [2 2]\ninput var c : [2]\noutput var r : [2]\n\
         r = (A # B # c) .[2 3] .[2 3]",
        "input var A : [3 3]\ninput var B : [3 3]\ninput var C : [3 3]\ninput var u : [3 3 3]\n\
         output var v : [3 3 3]\nv = (A # B # C # u) .[2 7] .[3 6] .[4 5]",
        "input var t2_0 : [2]\ninput var t2x2x1x3x2_0 : [2 2 1 1 2]\ninput var t2_1 : [2]\n\
         output var r1 : [2 1 2]\ninput var h0 : [2 1 2]\n\
         r1 = h0 / (proj 3 1 t2x2x1x3x2_0 # (t2_1 / t2_0)) .[1 4]",
    ];
    for src in programs {
        let p = teil::compile(src).expect("checks").0;
        for pad in [1, 3, 8] {
            let k = lower(&p, pad);
            assert!(k.lifted > 0, "lifted at M = {pad}:\n{src}");
            for (seed, specials) in [(3, false), (4, true), (5, true)] {
                let what = format!("M = {pad}, seed {seed}:\n{src}");
                assert_evaluate_is_the_kernel(&what, &k, &inputs(&p, seed, specials));
            }
        }
    }
}

#[test]
fn an_output_only_parameter_is_undefined_on_entry_and_inputs_missing_are_undefined() {
    // `r` is output-only: the machine starts it as `•` (NaN), and a statement that reads it
    // before writing it would show NaN; this one writes it first, so the values are numbers.
    let p = teil::compile("input var a : [2]\noutput var r : [2]\nr = a * a")
        .expect("checks")
        .0;
    let k = lower(&p, 1);
    let given: BTreeMap<String, ArrayD<f64>> =
        [("a".to_string(), ndarray::arr1(&[1.5, -2.0]).into_dyn())].into();
    let ir = validate::evaluate(&k, Target::Portable, &given).expect("evaluates");
    assert_eq!(ir["r"].iter().copied().collect::<Vec<_>>(), [2.25, 4.0]);
    let ir = validate::evaluate(&k, Target::Portable, &BTreeMap::new()).expect("evaluates");
    assert!(ir["r"].iter().all(|x| x.is_nan()), "{:?}", ir["r"]);
}
