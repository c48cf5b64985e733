//! The harness can fail: with each planted bug (teil_cbackend::plant) the campaign finds a
//! mismatch within the budget stated in spec/fuzzing.md, only the C backend's checks (runs and
//! translation validation) fail, and without a bug the same programs are clean. A found bug shrinks to a small reproducer that
//! replays the failure with the bug and passes without it.

use teil::ast::{ExprKind, RedOp};
use teil_cbackend::plant::Bug;
use teil_fuzz::campaign::{self, Check, Config, Report};
use teil_fuzz::repro;

/// Programs within which the campaign must find each bug (spec/fuzzing.md: with the detection
/// rate `p` measured over 1,600 programs, a fresh seed misses a bug within its budget `N` with
/// probability `(1 - p)^N < 10^-3`).
///
/// The bugs planted in the kernel forms of the optimisation passes (`fold-overwrite`,
/// `panel-edge`, `k-bound`, `tile-edge`, `outer-bound`) live in the template programs of
/// `teil_fuzz::forms` (indices 16 to 19 of every 20), each of which reaches its form: two
/// periods (the two-level sum is index 37's template).
fn budget(bug: Bug) -> u64 {
    match bug {
        Bug::OffByOne => 10,
        Bug::PaddingNotRezeroed => 40,
        Bug::AliasingIgnored => 150,
        Bug::RedmaxPadded => 100,
        Bug::WrongStride => 10,
        Bug::FoldOverwrite | Bug::PanelEdge | Bug::KBound | Bug::TileEdge | Bug::OuterBound => 40,
    }
}

const SEEDS: [u64; 2] = [1, 2];

fn planted(bug: Bug, seed: u64) -> Report {
    let cfg = Config {
        programs: Some(budget(bug)),
        seed,
        plant: Some(bug),
        shrink: 0,
        stop_after: Some(1),
        jobs: 2,
        // Small chunks, so that the campaign stops soon after the first find.
        chunk: 16,
        ..Config::default()
    };
    campaign::run(&cfg, &|_| {})
}

fn found_within_budget(bug: Bug) {
    for seed in SEEDS {
        let report = planted(bug, seed);
        let first = report.mismatches.first().unwrap_or_else(|| {
            panic!(
                "{bug} was not found in {} programs (seed {seed}); {} kernels were changed",
                budget(bug),
                report.stats.planted
            )
        });
        let index = first.index.expect("campaign programs have an index");
        assert!(index < budget(bug), "{bug}: found only at program {index}");
        assert!(report.stats.planted > 0);
        // The bug is in the C backend: only its runs and the validator may fail.
        for m in &report.mismatches {
            for f in &m.failures {
                assert!(
                    matches!(f.check, Check::C { .. } | Check::Validate { .. }),
                    "{bug}, seed {seed}, program {:?}: {} ({})",
                    m.index,
                    f.check.describe(),
                    f.detail
                );
            }
        }
        eprintln!("{bug}, seed {seed}: found at program {index}");
    }
}

#[test]
fn off_by_one_loop_bound_is_found() {
    found_within_budget(Bug::OffByOne);
}

#[test]
fn padding_not_rezeroed_after_expa_is_found() {
    found_within_budget(Bug::PaddingNotRezeroed);
}

#[test]
fn ignored_in_place_aliasing_is_found() {
    found_within_budget(Bug::AliasingIgnored);
}

#[test]
fn redmax_over_padded_extents_is_found() {
    found_within_budget(Bug::RedmaxPadded);
}

#[test]
fn wrong_stride_is_found() {
    found_within_budget(Bug::WrongStride);
}

#[test]
fn a_wrong_panel_edge_in_packed_contractions_is_found() {
    found_within_budget(Bug::PanelEdge);
}

#[test]
fn a_wrong_k_bound_in_contraction_kernels_is_found() {
    found_within_budget(Bug::KBound);
}

#[test]
fn a_wrong_tile_edge_is_found() {
    found_within_budget(Bug::TileEdge);
}

#[test]
fn an_overwritten_fold_in_interchanged_nests_is_found() {
    found_within_budget(Bug::FoldOverwrite);
}

#[test]
fn a_wrong_outer_bound_in_two_level_contractions_is_found() {
    found_within_budget(Bug::OuterBound);
}

#[test]
fn without_a_planted_bug_the_same_programs_are_clean() {
    let longest = Bug::ALL.into_iter().map(budget).max().unwrap_or(0);
    for seed in SEEDS {
        let cfg = Config {
            programs: Some(longest),
            seed,
            shrink: 0,
            jobs: 2,
            ..Config::default()
        };
        let report = campaign::run(&cfg, &|_| {});
        assert_eq!(report.stats.programs, longest);
        assert!(
            report.mismatches.is_empty(),
            "seed {seed}: {:?}",
            report.mismatches[0].failures
        );
    }
}

fn nodes(p: &teil::ast::Program) -> usize {
    let mut n = 0;
    for s in &p.stmts {
        s.value.walk(&mut |_| n += 1);
    }
    n
}

/// Finds `bug`, shrinks the first failing program, writes and reads back its reproducer, and
/// replays it with and without the bug. Returns the shrunk program.
fn shrinks_and_replays(bug: Bug) -> teil::ast::Program {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        programs: Some(budget(bug)),
        seed: 1,
        plant: Some(bug),
        shrink: 1,
        stop_after: Some(1),
        out: Some(dir.path().join("failures")),
        jobs: 2,
        chunk: 16,
        ..Config::default()
    };
    let report = campaign::run(&cfg, &|_| {});
    let m = report.mismatches.first().expect("the bug is found");
    let s = m.shrunk.as_ref().expect("the first mismatch is shrunk");
    // A C run when one failed, else the validator (which also sees what a run cannot).
    let c_failed = m
        .failures
        .iter()
        .any(|f| matches!(f.check, Check::C { .. }));
    assert!(
        matches!(s.failure.check, Check::C { .. }) == c_failed
            && matches!(s.failure.check, Check::C { .. } | Check::Validate { .. }),
        "{:?}",
        s.failure
    );
    assert!(nodes(&s.program) <= nodes(&m.program));
    let file = s
        .file
        .clone()
        .expect("a reproducer directory was given")
        .unwrap();
    assert_eq!(
        file,
        dir.path()
            .join("failures")
            .join(format!("repro_{}.teil", m.seed))
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(&format!(
            "// run again with: {}",
            repro::replay_command(&file)
        )),
        "{text}"
    );
    let r = repro::read(&file).unwrap();
    assert!(r.program.same_as(&s.program), "{text}");
    assert_eq!(r.inputs, s.inputs);
    assert_eq!((r.seed, r.plant), (m.seed, Some(bug)));
    let (Check::C { pad, .. } | Check::Validate { pad }) = s.failure.check else {
        unreachable!()
    };
    assert_eq!(r.pads, vec![pad]);
    // On the kernel target the reproducer names, as `teil fuzz --replay` does.
    let replay_cfg = Config {
        pads: r.pads.clone(),
        plant: r.plant,
        isas: r
            .isa
            .map_or_else(|| Config::default().isas, |isa| vec![isa]),
        ..Config::default()
    };
    let again = campaign::replay(&replay_cfg, r.program.clone(), r.inputs.clone(), r.seed);
    assert_eq!(again.mismatches.len(), 1, "{text}");
    assert!(
        again.mismatches[0]
            .failures
            .iter()
            .any(|f| f.check == s.failure.check),
        "{text}\n{:?}",
        again.mismatches[0].failures
    );
    let fixed = Config {
        plant: None,
        ..replay_cfg
    };
    let clean = campaign::replay(&fixed, r.program, r.inputs, r.seed);
    assert!(clean.mismatches.is_empty(), "{text}");
    s.program.clone()
}

#[test]
fn an_aliasing_bug_shrinks_to_one_small_statement_that_reads_its_target() {
    let p = shrinks_and_replays(Bug::AliasingIgnored);
    let text = teil::fmt::program(&p, teil::fmt::Style::Infix);
    assert_eq!(p.stmts.len(), 1, "{text}");
    assert!(p.stmts[0].value.reads(&p.stmts[0].target.name), "{text}");
    assert!(nodes(&p) <= 6, "{text}");
}

#[test]
fn a_redmax_padding_bug_shrinks_to_a_redmax() {
    let p = shrinks_and_replays(Bug::RedmaxPadded);
    let text = teil::fmt::program(&p, teil::fmt::Style::Infix);
    assert_eq!(p.stmts.len(), 1, "{text}");
    let mut redmax = 0;
    p.stmts[0].value.walk(&mut |e| {
        redmax += usize::from(matches!(e.kind, ExprKind::Reduce(RedOp::Max, ..)));
    });
    assert_eq!(redmax, 1, "{text}");
    assert!(nodes(&p) <= 4, "{text}");
}
