//! The campaign's judgement of lifted kernels (spec/fuzzing.md, *Lifted kernels*): where a
//! lifted C kernel's result differs from the oracle's canonical one, it is permitted exactly
//! when the kernel returned its loop IR's binary64 values and the translation validator proves
//! its terms equal to the spec's under the laws of spec/values.md ("Reassociation").
//!
//! The programs: the campaign's finding of issue 23 (seed 2611126, program 33793, shrunk), the
//! three examples of spec/values.md, and one of them with a planted bug whose result differs
//! from the oracle's only in a non-finite cell, which the old bound rule accepted.

use ndarray::{arr1, arr2, ArrayD};
use std::collections::BTreeMap;
use teil::CheckedProgram;
use teil_cbackend::plant::{self, Bug};
use teil_cbackend::run::Toolchain;
use teil_cbackend::validate::{self, Judgement};
use teil_cbackend::Options;
use teil_fuzz::campaign::{self, Check, Config, Report, DEFAULT_CFLAGS};
use teil_fuzz::compare::{self, Tolerance};
use teil_fuzz::isa::Isa;
use teil_fuzz::repro;
use teil_fuzz::shrink::Inputs;

const INF: f64 = f64::INFINITY;

/// Program 33793 of `teil fuzz --programs 40000 --seed 2611126`, as the campaign shrank it
/// (its reproducer `repro_5111326921921084458.teil`, written before the judgement existed).
const ISSUE_23: &str = "input var t2_0 : [2]\ninput var t2x2x1x3x2_0 : [2 2 1 1 2]\n\
                        input var t2_1 : [2]\noutput var r1 : [2 1 2]\ninput var h0 : [2 1 2]\n\
                        r1 = h0 / (proj 3 1 t2x2x1x3x2_0 # (t2_1 / t2_0)) .[1 4]";

/// The reproducer's seed (its `fuzz-replay` line).
const ISSUE_23_SEED: u64 = 5111326921921084458;

/// The matrix-matrix-vector product of spec/values.md's examples, which lifting rewrites into
/// `t = Σ_k B c`, `r = Σ_j A t`.
const MMV: &str = "input var A : [2 2]\ninput var B : [2 2]\ninput var c : [2]\n\
                   output var r : [2]\nr = (A # B # c) .[2 3] .[2 3]";

fn compile(src: &str) -> CheckedProgram {
    teil::compile(src)
        .unwrap_or_else(|d| panic!("does not check: {d:?}\n{src}"))
        .0
}

fn issue_23_inputs() -> Inputs {
    [
        ("t2_0".to_string(), arr1(&[0.0, 0.0]).into_dyn()),
        ("t2_1".to_string(), arr1(&[0.0, 1.0]).into_dyn()),
        ("h0".to_string(), ArrayD::zeros(vec![2, 1, 2])),
        (
            "t2x2x1x3x2_0".to_string(),
            ArrayD::from_shape_vec(
                vec![2, 2, 1, 1, 2],
                vec![0.0, 0.0, 0.0, 0.0, -3.0, -2.0, 1.0, 2.0],
            )
            .expect("shape"),
        ),
    ]
    .into()
}

fn mmv_inputs(a: [[f64; 2]; 2], b: [[f64; 2]; 2], c: [f64; 2]) -> Inputs {
    [
        ("A".to_string(), arr2(&a).into_dyn()),
        ("B".to_string(), arr2(&b).into_dyn()),
        ("c".to_string(), arr1(&c).into_dyn()),
    ]
    .into()
}

/// The campaign's checks on one program at `M = 1, 3, 8`, optionally with a planted bug.
fn replay(p: &CheckedProgram, inputs: &Inputs, seed: u64, plant: Option<Bug>) -> Report {
    let cfg = Config {
        pads: vec![1, 3, 8],
        shrink: 0,
        jobs: 1,
        plant,
        ..Config::default()
    };
    campaign::replay(&cfg, p.program().clone(), inputs.clone(), seed)
}

fn describe(r: &Report) -> String {
    r.mismatches
        .iter()
        .flat_map(|m| &m.failures)
        .map(|f| format!("{}: {}", f.check.describe(), f.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lifted kernel at `pad` (with `plant` applied), its outputs from the compiled C, and the
/// judgement on them.
fn lifted_run(
    p: &CheckedProgram,
    inputs: &Inputs,
    pad: u64,
    plant: Option<Bug>,
) -> (BTreeMap<String, ArrayD<f64>>, Judgement) {
    let opts = Options {
        pad,
        ..Options::default()
    };
    let mut k = teil_cbackend::lower(p, &opts).expect("lowers");
    assert!(k.lifted > 0, "lifting fires at M = {pad}");
    if let Some(bug) = plant {
        assert!(plant::apply(&mut k, bug), "{bug} changes the kernel");
    }
    let tc = Toolchain::default().with_cflags(DEFAULT_CFLAGS);
    let out = teil_cbackend::run::run(&tc, &k, inputs).expect("the kernel runs");
    let verdict = validate::judge(p, &k, inputs, &out.values, &validate::Limits::default());
    (out.values, verdict)
}

fn bits(x: f64) -> String {
    format!("{x:?} ({:#018x})", x.to_bits())
}

#[test]
fn issue_23_the_lifted_minus_zero_is_permitted_where_the_oracle_gives_nan() {
    let p = compile(ISSUE_23);
    let inputs = issue_23_inputs();
    let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
    // 0 · ∞ + (−2) · ∞ = NaN + −∞ = NaN, and 0 / NaN = NaN.
    let cell = [0, 0, 1];
    assert!(oracle["r1"][cell].is_nan(), "oracle {:?}", oracle["r1"]);
    for pad in [1, 3, 8] {
        let (c, verdict) = lifted_run(&p, &inputs, pad, None);
        // Lifted: (0 + −2) · ∞ = −∞, and 0 / −∞ = −0.
        let got = c["r1"][cell];
        assert_eq!(
            got.to_bits(),
            (-0.0f64).to_bits(),
            "M = {pad}: {}",
            bits(got)
        );
        // The oracle and the kernel differ beyond rounding: the judgement is needed.
        assert!(compare::stores(
            &["r1".to_string()],
            &oracle,
            &c,
            Tolerance::Rounding,
            ("oracle", "C")
        )
        .is_err());
        assert!(
            matches!(verdict, Judgement::Permitted(ref v) if v.lifted > 0),
            "M = {pad}: {verdict:?}"
        );
    }
    let r = replay(&p, &inputs, ISSUE_23_SEED, None);
    assert!(r.mismatches.is_empty(), "{}", describe(&r));
    assert_eq!(r.stats.permitted, 3, "one permitted kernel per M");
}

#[test]
fn the_reassociation_examples_of_the_spec_are_permitted() {
    let p = compile(MMV);
    // spec/values.md: (oracle r_1, lifted r_1) = (NaN, ∞), (0, NaN), (NaN, 0).
    let cases = [
        (
            [[INF, 1.0], [1.0, 1.0]],
            [[1.0, 0.0], [0.0, 1.0]],
            (f64::NAN, INF),
        ),
        (
            [[1.0, 1.0], [1.0, 1.0]],
            [[1e308, 1e308], [-1e308, -1e308]],
            (0.0, f64::NAN),
        ),
        (
            [[1e308, 1e308], [1e308, 1e308]],
            [[1.0, -1.0], [1.0, -1.0]],
            (f64::NAN, 0.0),
        ),
    ];
    let same = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x == y;
    for (a, b, (spec, lifted)) in cases {
        let inputs = mmv_inputs(a, b, [1.0, 1.0]);
        let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
        assert!(same(oracle["r"][[0]], spec), "oracle {:?}", oracle["r"]);
        for pad in [1, 3, 8] {
            let (c, verdict) = lifted_run(&p, &inputs, pad, None);
            assert!(same(c["r"][[0]], lifted), "M = {pad}: C {:?}", c["r"]);
            assert!(
                matches!(verdict, Judgement::Permitted(_)),
                "M = {pad}: {verdict:?}"
            );
        }
        // The C backend's checks pass. (The fast evaluator's plan is lifting's, so it gives the
        // same permitted result; the campaign compares it exactly without division, because
        // its inputs, small integers, never hold an infinity there.)
        let r = replay(&p, &inputs, 1, None);
        let c_failures: Vec<_> = r
            .mismatches
            .iter()
            .flat_map(|m| &m.failures)
            .filter(|f| matches!(f.check, Check::C { .. } | Check::Validate { .. }))
            .collect();
        assert!(c_failures.is_empty(), "{}", describe(&r));
        assert_eq!(r.stats.permitted, 3, "A = {a:?}, B = {b:?}");
    }
}

#[test]
fn a_planted_bug_in_a_lifted_kernel_is_reported_even_where_only_a_non_finite_cell_differs() {
    // Oracle r = (NaN, 1); the lifted kernel gives (∞, 1), a permitted result. With every
    // reduction loop one short (`off-by-one`) the lifted kernel gives (∞, 1) as well, although
    // its terms miss half the products: the values alone cannot tell, the terms can.
    let p = compile(MMV);
    let inputs = mmv_inputs(
        [[INF, 1.0], [1.0, 1.0]],
        [[1.0, 0.0], [0.0, 0.0]],
        [1.0, 0.0],
    );
    let oracle = teil_interp::run_oracle(&p, &inputs).expect("oracle");
    assert!(oracle["r"][[0]].is_nan() && oracle["r"][[1]] == 1.0);
    for pad in [1, 3, 8] {
        let (fine, verdict) = lifted_run(&p, &inputs, pad, None);
        assert_eq!(fine["r"].iter().copied().collect::<Vec<_>>(), [INF, 1.0]);
        assert!(matches!(verdict, Judgement::Permitted(_)), "{verdict:?}");

        let (buggy, verdict) = lifted_run(&p, &inputs, pad, Some(Bug::OffByOne));
        assert_eq!(buggy["r"].iter().copied().collect::<Vec<_>>(), [INF, 1.0]);
        // The old rule ("a cell not finite on one side is not finite on the other") passes it.
        let names = ["r".to_string()];
        assert!(compare::stores(&names, &oracle, &buggy, Tolerance::Bound, ("o", "c")).is_ok());
        assert!(
            matches!(
                verdict,
                Judgement::Rejected(validate::ValidationError::Differs { .. })
            ),
            "M = {pad}: {verdict:?}"
        );
    }
    // The campaign reports the planted kernel at every M, with the law behind the difference.
    let r = replay(&p, &inputs, 1, Some(Bug::OffByOne));
    let failures: Vec<_> = r.mismatches.iter().flat_map(|m| &m.failures).collect();
    for pad in [1, 3, 8] {
        // A replay compiles for the first kernel target of the configuration: the default.
        let lifted = Check::C {
            pad,
            lift: true,
            fma: false,
            isa: Isa::Default,
        };
        let f = failures
            .iter()
            .find(|f| f.check == lifted)
            .unwrap_or_else(|| panic!("M = {pad} not reported:\n{}", describe(&r)));
        assert!(
            f.detail.contains("judgement: not permitted (law: none)"),
            "{}",
            f.detail
        );
        // Its reproducer states the judgement, and replays to the same failure.
        let dir = tempfile::tempdir().expect("temporary directory");
        let cfg = Config {
            plant: Some(Bug::OffByOne),
            ..Config::default()
        };
        let file = repro::write(dir.path(), &cfg, 7, f, p.program(), &inputs, None)
            .expect("the reproducer is written");
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(
            text.lines()
                .any(|l| l.starts_with("// judgement: not permitted (law: none)")),
            "{text}"
        );
        let r = repro::read(&file).expect("the reproducer reads back");
        assert_eq!(r.isa, Some(Isa::Default));
        let again = campaign::replay(
            &Config {
                pads: r.pads.clone(),
                plant: r.plant,
                ..Config::default()
            },
            r.program,
            r.inputs,
            r.seed,
        );
        assert!(
            again
                .mismatches
                .iter()
                .flat_map(|m| &m.failures)
                .any(|g| g.check == lifted && g.detail.contains("law: none")),
            "{}",
            describe(&again)
        );
    }
    // A bug that changes the kind of a result: the lifted r_1 becomes NaN instead of ∞ (the
    // dropped term was 1 · 0 of the second row) is caught the same way.
    let inputs = mmv_inputs(
        [[INF, 1.0], [1.0, 1.0]],
        [[0.0, 1.0], [0.0, 0.0]],
        [1.0, 1.0],
    );
    let (fine, verdict) = lifted_run(&p, &inputs, 1, None);
    let (buggy, wrong) = lifted_run(&p, &inputs, 1, Some(Bug::OffByOne));
    assert_ne!(
        fine["r"][[0]].is_nan(),
        buggy["r"][[0]].is_nan(),
        "{:?} {:?}",
        fine["r"],
        buggy["r"]
    );
    assert!(matches!(verdict, Judgement::Permitted(_)), "{verdict:?}");
    assert!(matches!(wrong, Judgement::Rejected(_)), "{wrong:?}");
}
