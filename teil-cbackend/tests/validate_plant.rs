//! Every planted bug (`teil_cbackend::plant`) is rejected by the translation validator
//! (spec/validation.md), on small programs designed to expose it.
//!
//! For each bug and each program and M where planting the bug changes the kernel, the correct
//! kernel validates and the planted one is rejected, with the kind of failure the bug must
//! cause: wrong output cells, or non-zero padding.

use teil_cbackend::plant::{self, Bug};
use teil_cbackend::validate::{self, ValidationError};
use teil_cbackend::Options;

/// Small programs, each exposing at least one bug (named in the comment).
const PROGRAMS: &[&str] = &[
    // off-by-one (every reduction), wrong-stride (A and B have padded rows at M = 3, 4)
    "input var A : [3 5]\ninput var B : [5 2]\noutput var C : [3 2]\nC = (A # B) .[2 3]\n",
    // alias: the transposition reads its target at other indices
    "var A : [3 3]\nA = A ^[1 2]\n",
    // alias through a contraction with the target
    "inout var A : [2 2]\ninput var B : [2 2]\nA = (A # B) .[2 3]\n",
    // no-rezero: broadcast loops over expanded dimensions
    "input var A : [2]\noutput var C : [3 2]\nC = expa 1 3 A\n",
    "input var A : [2]\noutput var C : [2 3]\nC = expa 2 3 A\n",
    // redmax-padding: a maximum over a padded extent (the inputs' maximum may be below 0)
    "input var A : [3 2]\noutput var m : [2]\nm = redmax 1 A\n",
    "input var A : [3 5]\noutput var d : [3]\nd = redmax 2 A - redmin 2 A\n",
    // fold-overwrite: reductions along a row-major array's first axis, which the interchange
    // pass moves outside the target loop (the partial results live in the target's cells)
    "input var A : [16 40]\noutput var s : [40]\ns = red+ 1 A\n",
    "input var A : [16 40]\noutput var m : [40]\nm = redmax 1 A\n",
    // off-by-one, redmax-padding (M = 3) in lane folds: maxima and minima along unit stride
    "input var A : [3 41]\noutput var d : [3]\nd = redmax 2 A - redmin 2 A\n",
];

const PADS: [u64; 3] = [1, 3, 4];

/// The failure the bug must cause.
fn expected(bug: Bug, f: &ValidationError) -> bool {
    match bug {
        Bug::PaddingNotRezeroed => matches!(f, ValidationError::Padding { .. }),
        Bug::OffByOne
        | Bug::AliasingIgnored
        | Bug::RedmaxPadded
        | Bug::PanelEdge
        | Bug::KBound
        | Bug::TileEdge
        | Bug::FoldOverwrite
        | Bug::OuterBound => {
            matches!(f, ValidationError::Differs { .. })
        }
        // Reading with the logical strides gives wrong cells; where a loop runs over the
        // padded extent, it also indexes past the shape the rewritten buffer declares, which
        // the validator reports as an out-of-bounds access (the C reads some other cell).
        Bug::WrongStride => matches!(
            f,
            ValidationError::Differs { .. } | ValidationError::Malformed { .. }
        ),
    }
}

#[test]
fn every_planted_bug_is_rejected() {
    // The bugs in the kernel forms of the optimisation passes need larger programs than these:
    // tests/kernel_forms.rs.
    let forms = [Bug::PanelEdge, Bug::KBound, Bug::TileEdge, Bug::OuterBound];
    for bug in Bug::ALL.into_iter().filter(|b| !forms.contains(b)) {
        let (mut planted, mut differs) = (0, 0);
        for src in PROGRAMS {
            let (p, _) = teil::compile(src).expect("checks");
            for pad in PADS {
                let opts = Options {
                    pad,
                    ..Options::default()
                };
                let mut k = teil_cbackend::lower(&p, &opts).expect("lowers");
                validate::validate(&p, &k)
                    .unwrap_or_else(|e| panic!("the correct kernel must validate: {e}\n{src}"));
                if !plant::apply(&mut k, bug) {
                    continue;
                }
                planted += 1;
                match validate::validate(&p, &k) {
                    Ok(v) => panic!("{bug} at M = {pad} is not rejected: {v}\n{src}"),
                    Err(e) => {
                        assert!(e.is_rejection(), "{bug}, M = {pad}: {e}\n{src}");
                        assert!(expected(bug, &e), "{bug}, M = {pad}: {e}\n{src}");
                        differs += usize::from(matches!(e, ValidationError::Differs { .. }));
                    }
                }
            }
        }
        assert!(planted >= 2, "{bug} changed only {planted} kernels");
        if bug != Bug::PaddingNotRezeroed {
            assert!(differs > 0, "{bug} never showed as a wrong output cell");
        }
    }
}

#[test]
fn a_planted_bug_is_reported_with_both_terms() {
    let (p, _) = teil::compile(PROGRAMS[0]).expect("checks");
    let mut k = teil_cbackend::lower(&p, &Options::default()).expect("lowers");
    assert!(plant::apply(&mut k, Bug::OffByOne));
    let e = validate::validate(&p, &k).expect_err("rejected");
    assert_eq!(
        e.to_string(),
        "output cell C[1,1] differs from the semantics\n  \
         kernel: A[1,1]*B[1,1] + A[1,2]*B[2,1] + A[1,3]*B[3,1] + A[1,4]*B[4,1]\n  \
         oracle: A[1,1]*B[1,1] + A[1,2]*B[2,1] + A[1,3]*B[3,1] + A[1,4]*B[4,1] + A[1,5]*B[5,1]"
    );
}

#[test]
fn bugs_planted_in_lane_folds_are_rejected() {
    let src = PROGRAMS.last().expect("programs");
    let (p, _) = teil::compile(src).expect("checks");
    for (bug, pad) in [
        (Bug::OffByOne, 1),
        (Bug::OffByOne, 4),
        (Bug::RedmaxPadded, 3),
    ] {
        let opts = Options {
            pad,
            ..Options::default()
        };
        let mut k = teil_cbackend::lower(&p, &opts).expect("lowers");
        let folds = |k: &teil_cbackend::ir::Kernel| k.to_string().matches("lanes for").count();
        assert_eq!(
            folds(&k),
            2,
            "M = {pad}: the max and the min are lane folds\n{k}"
        );
        validate::validate(&p, &k).unwrap_or_else(|e| panic!("M = {pad}: {e}"));
        assert!(plant::apply(&mut k, bug), "{bug} changes the kernel");
        // The bug is in the lane folds, which stay lane folds.
        assert_eq!(folds(&k), 2);
        let e = validate::validate(&p, &k).expect_err("rejected");
        assert!(
            matches!(e, ValidationError::Differs { .. }),
            "{bug}, M = {pad}: {e}"
        );
    }
}
