//! Inputs that round, bit-for-bit equality, the flag sets to compile with and the check that a
//! compiled kernel computes its IR's values, shared by the tests that compare a compiled
//! kernel's binary64 values with its IR's (`validate::evaluate`) or the oracle's.

#![allow(dead_code)] // each test file uses a subset

use ndarray::ArrayD;
use std::collections::BTreeMap;
use teil::CheckedProgram;
use teil_cbackend::ir::{Kernel, Target};
use teil_cbackend::run::Toolchain;
use teil_cbackend::{validate, Options};

pub type Values = BTreeMap<String, ArrayD<f64>>;

/// The checked program of `src`.
pub fn compile(src: &str) -> CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|e| panic!("{src}: {e:?}"))
        .0
}

/// `p` lowered with every optimisation, at padding multiple `pad`, with or without
/// reassociation (`lift`) and fused multiply-adds.
pub fn lower(p: &CheckedProgram, pad: u64, lift: bool, fma: bool) -> Kernel {
    let opts = Options {
        pad,
        lift,
        fma,
        ..Options::default()
    };
    teil_cbackend::lower(p, &opts).expect("lowers")
}

/// The campaign's random small integers `n` as `n / 3 + n / 10`, which round (rounded once
/// more to binary32 for an `f32` input); with
/// `specials: Some(period)`, in every `period` cells one is `∞`, one `−∞` and one NaN, a
/// third of a period apart.
pub fn inputs(
    p: &teil::CheckedProgram,
    seed: u64,
    specials: Option<usize>,
) -> BTreeMap<String, ArrayD<f64>> {
    let mut k = 0usize;
    teil_interp::random_inputs(p, seed)
        .into_iter()
        .map(|(name, t)| {
            let elem = p.var_elem(&name).unwrap_or_default();
            let t = t.mapv(|n| {
                k += 1;
                match specials.map(|period| (k % period, period / 3)) {
                    Some((0, _)) => f64::INFINITY,
                    Some((r, third)) if r == third => f64::NEG_INFINITY,
                    Some((r, third)) if r == 2 * third => f64::NAN,
                    _ => elem.round(n / 3.0 + n / 10.0),
                }
            });
            (name, t)
        })
        .collect()
}

/// Equal bits, NaN equal to NaN (payloads are not part of the semantics).
pub fn same(x: f64, y: f64) -> bool {
    (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
}

/// The flag sets: the default `-O2` (the AVX variants on x86-64 without `-march`), plain C
/// (`-Dteil_portable`) and `-O3 -march=native` (AVX-512 where the machine has it).
pub fn toolchains() -> Vec<(&'static str, Toolchain)> {
    let with = |flags: &[&str]| Toolchain {
        cflags: flags.iter().map(|f| f.to_string()).collect(),
        ..Toolchain::default()
    };
    vec![
        ("-O2", Toolchain::default()),
        ("-O2 -Dteil_portable", with(&["-O2", "-Dteil_portable"])),
        ("-O3 -march=native", with(&["-O3", "-march=native"])),
    ]
}

/// Asserts that every output cell of `got` equals `want`'s bit for bit.
pub fn assert_same(what: &str, got: &Values, want: &Values) {
    for (name, w) in want {
        let g = &got[name];
        assert_eq!(g.shape(), w.shape(), "{what}: {name}");
        for ((at, &x), &y) in w.indexed_iter().zip(g.iter()) {
            assert!(same(x, y), "{what}: {name}{at:?}: want {x:?}, got {y:?}");
        }
    }
}

/// How many output cells of `a` and `b` differ in their bits.
pub fn differing(a: &Values, b: &Values) -> usize {
    a.iter()
        .map(|(name, x)| {
            x.iter()
                .zip(b[name].iter())
                .filter(|(&x, &y)| !same(x, y))
                .count()
        })
        .sum()
}

/// The values `k` means on `inputs` (`validate::evaluate`), after asserting that every
/// target's order evaluates to the same bits and that the C compiled with every flag set of
/// [`toolchains`] computes those bits; `what` names the case in a failure.
pub fn compiled_is_the_ir(what: &str, k: &Kernel, inputs: &Values) -> Values {
    let ir = validate::evaluate(k, Target::ALL[0], inputs).expect("evaluates");
    for target in Target::ALL {
        let other = validate::evaluate(k, target, inputs).expect("evaluates");
        assert_same(&format!("{what}, {target} order"), &other, &ir);
    }
    for (flags, tc) in toolchains() {
        let c = teil_cbackend::run::run(&tc, k, inputs).expect("runs");
        assert_same(&format!("{what}, `cc {flags}`"), &c.values, &ir);
    }
    ir
}

/// [`compiled_is_the_ir`], then the validator's judgement of those values for `p` (one covers
/// every flag set, the compiled results being the IR's bits), which must be `Permitted`.
pub fn compiled_and_permitted(
    what: &str,
    p: &CheckedProgram,
    k: &Kernel,
    inputs: &Values,
) -> Values {
    let ir = compiled_is_the_ir(what, k, inputs);
    match validate::judge(p, k, inputs, &ir, &validate::Limits::default()) {
        validate::Judgement::Permitted(_) => ir,
        other => panic!("{what}: {other:?}"),
    }
}
