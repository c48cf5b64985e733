//! The short differential campaign CI runs (spec/fuzzing.md), and the campaign's
//! bookkeeping: determinism, one program re-run on its own, the time limit, replays.

use std::time::Duration;
use teil_fuzz::campaign::{self, Check, Config, FLAVOURS};
use teil_fuzz::isa::{self, Isa};
use teil_fuzz::laws::Law;
use teil_fuzz::repro;

/// The CI campaign: 240 programs (60 of each flavour) through every check, each program's C at
/// the multiple of 1, 3, 8 its seed draws.
#[test]
fn short_campaign_finds_no_mismatch() {
    let cfg = Config {
        programs: Some(240),
        seed: 20261122,
        jobs: 2,
        shrink: 1,
        ..Config::default()
    };
    let report = campaign::run(&cfg, &|_| {});
    let s = &report.stats;
    let failures: Vec<String> = report
        .mismatches
        .iter()
        .flat_map(|m| {
            m.failures.iter().map(move |f| {
                format!(
                    "program {:?}: {}: {}\n{}",
                    m.index,
                    f.check.describe(),
                    f.detail,
                    teil::fmt::program(&m.program, teil::fmt::Style::Infix)
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
    assert_eq!(
        report.summary().split(", ").take(2).collect::<Vec<_>>(),
        ["240 programs", "0 mismatches"]
    );
    assert_eq!(s.programs, 240);
    assert_eq!(s.discarded, 0);
    assert_eq!(s.by_flavour, [60; FLAVOURS.len()]);
    // Every division program is a "division" flavour program (the others have none).
    assert!(s.division > 0 && s.division <= 60, "{}", s.division);
    // One kernel per program at the multiple its seed draws, plus the exact re-runs of lifted
    // ones and the fma-mode runs.
    assert!(s.kernels >= 240 + s.fma, "{}", s.kernels);
    assert!(s.lifted > 0, "no kernel was lifted");
    // Programs with a product-then-add also run in fma mode.
    assert!(s.fma >= 24 && s.fma <= 240, "{} fma kernels", s.fma);
    assert!(
        s.compiles >= 2 && s.compiles <= 10,
        "{} compiler runs",
        s.compiles
    );
    // Two round trips, Core-TeIL and a law chain per program.
    assert_eq!(s.variants, 4 * 240);
    assert!(s.mutants >= 200, "{}", s.mutants);
    for (i, law) in Law::ALL.iter().enumerate() {
        assert!(s.laws[i] > 0, "{law:?} never applied: {:?}", s.laws);
    }
    assert!(s.retargeted >= 30, "{}", s.retargeted);
    assert_eq!(s.planted, 0);
}

/// Each program is lowered at one multiple, drawn from its seed: over a campaign every multiple
/// is drawn about equally often, and a single multiple is always drawn.
#[test]
fn the_padding_multiple_is_drawn_per_program() {
    let mut drawn = std::collections::BTreeMap::new();
    for k in 0..240 {
        let seed = campaign::program_seed(20261122, k);
        *drawn
            .entry(campaign::drawn_pad(&campaign::DEFAULT_PADS, seed).unwrap())
            .or_insert(0) += 1;
        assert_eq!(campaign::drawn_pad(&[5], seed), Some(5));
    }
    assert_eq!(drawn.keys().copied().collect::<Vec<_>>(), [1, 3, 8]);
    assert!(drawn.values().all(|&n| n >= 60), "{drawn:?}");
    assert_eq!(campaign::drawn_pad(&[], 3), None);
}

/// With `every_pad`, each program is lowered at every multiple (`--every-pad`).
#[test]
fn every_pad_lowers_each_program_at_every_multiple() {
    let cfg = |every_pad| Config {
        programs: Some(40),
        seed: 3,
        jobs: 1,
        validation: false,
        every_pad,
        ..Config::default()
    };
    let one = campaign::run(&cfg(false), &|_| {}).stats;
    let every = campaign::run(&cfg(true), &|_| {}).stats;
    assert_eq!((one.programs, every.programs), (40, 40));
    // Kernels with lifting: one per program, or three; the runs without lifting (exact and fma)
    // come at most once per program either way.
    assert!(one.unlifted + one.fma <= 2 * 40 && every.unlifted + every.fma <= 2 * 40);
    let lifted_one = one.kernels - one.fma - one.unlifted;
    let lifted_every = every.kernels - every.fma - every.unlifted;
    assert_eq!((lifted_one, lifted_every), (40, 3 * 40));
}

/// The kernel targets take turns, a block of programs each, and each block's C is compiled
/// with its target's flags (seen by a compiler wrapper that logs its arguments); every target
/// gives the oracle's results.
#[test]
fn kernel_targets_take_turns_with_their_flags() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let cc = dir.path().join("cc-logging");
    std::fs::write(
        &cc,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec cc \"$@\"\n",
            log.display()
        ),
    )
    .expect("write the wrapper");
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let isas = vec![Isa::Portable, Isa::Default, Isa::Vec128, Isa::Vec512];
    let mut cfg = Config {
        programs: Some(4 * isa::BLOCK),
        seed: 17,
        jobs: 2,
        validation: false,
        isas: isas.clone(),
        ..Config::default()
    };
    cfg.toolchain.cc = cc.to_string_lossy().into_owned();
    let report = campaign::run(&cfg, &|_| {});
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    assert_eq!(report.stats.programs, 4 * isa::BLOCK);
    let log = std::fs::read_to_string(&log).expect("the wrapper ran");
    // CORE-MATH's units, compiled once each for the whole campaign with its own flags
    // (`CompiledMath`); the rest are the batches.
    let (math, compiles): (Vec<&str>, Vec<&str>) = log
        .lines()
        .partition(|c| c.contains(" -c -o ") && c.contains("/cr_"));
    assert!(!math.is_empty() && math.len() <= 8, "{log}");
    for unit in &math {
        assert!(
            unit.starts_with("-std=c99 -O0 ") && !unit.contains(" -m"),
            "{unit}"
        );
        let name = unit.rsplit('/').next().unwrap_or("");
        assert_eq!(
            math.iter().filter(|u| u.ends_with(name)).count(),
            1,
            "{log}"
        );
    }
    // One translation unit per block of programs, each with its target's flags alone.
    assert_eq!(compiles.len() as u64, report.stats.compiles, "{log}");
    assert_eq!(compiles.len(), 4, "{log}");
    for isa in isas {
        let with = |f: &str| compiles.iter().filter(|c| c.contains(f)).count();
        for f in isa.flags() {
            assert_eq!(with(f), 1, "{isa}: {log}");
        }
    }
    // A flag, not a path: a staging directory's random name may hold "-D" (`.teil-tmp-D...`).
    assert_eq!(
        compiles.iter().filter(|c| !c.contains(" -D")).count(),
        1,
        "{log}"
    );
    // Program k's target, and a replay's: the first.
    assert_eq!(cfg.isa(Some(isa::BLOCK + 1)), Isa::Default);
    assert_eq!(cfg.isa(None), Isa::Portable);
}

#[test]
fn programs_are_determined_by_the_seed_and_their_index() {
    assert_eq!(campaign::program_seed(7, 3), campaign::program_seed(7, 3));
    assert_ne!(campaign::program_seed(7, 3), campaign::program_seed(7, 4));
    assert_ne!(campaign::program_seed(7, 3), campaign::program_seed(8, 3));
    // One program of a campaign, re-run on its own with `skip`, is checked identically.
    let base = Config {
        seed: 11,
        c_backend: false,
        jobs: 1,
        ..Config::default()
    };
    let whole = campaign::run(
        &Config {
            programs: Some(12),
            ..base.clone()
        },
        &|_| {},
    );
    let alone = campaign::run(
        &Config {
            programs: Some(1),
            skip: 9,
            ..base.clone()
        },
        &|_| {},
    );
    let again = campaign::run(
        &Config {
            programs: Some(12),
            jobs: 2,
            chunk: 5,
            ..base
        },
        &|_| {},
    );
    assert_eq!(whole.stats.programs, 12);
    assert_eq!(alone.stats.programs, 1);
    assert_eq!(alone.stats.by_flavour, [0, 1, 0, 0]);
    // Splitting into other chunks on other threads compares the same cells.
    assert_eq!(whole.stats.cells, again.stats.cells);
    assert_eq!(whole.stats.laws, again.stats.laws);
    assert!(alone.stats.cells.compared > 0);
    assert!(alone.stats.cells.compared < whole.stats.cells.compared);
}

#[test]
fn the_time_limit_stops_the_campaign() {
    let cfg = Config {
        programs: None,
        time: Some(Duration::ZERO),
        ..Config::default()
    };
    let report = campaign::run(&cfg, &|_| {});
    assert_eq!(report.stats.programs, 0);
    assert_eq!(report.summary(), "0 programs, 0 mismatches, 0.0 programs/s");

    // A limit that leaves time for a few chunks: whole chunks only.
    let cfg = Config {
        programs: None,
        time: Some(Duration::from_millis(300)),
        chunk: 4,
        c_backend: false,
        jobs: 1,
        ..Config::default()
    };
    let report = campaign::run(&cfg, &|_| {});
    assert!(report.stats.programs >= 4, "{}", report.stats.programs);
    assert_eq!(report.stats.programs % 4, 0);
    assert!(report.mismatches.is_empty());
}

#[test]
fn progress_is_reported_after_every_chunk() {
    let seen = std::sync::Mutex::new(Vec::new());
    let cfg = Config {
        programs: Some(10),
        chunk: 3,
        c_backend: false,
        jobs: 1,
        ..Config::default()
    };
    campaign::run(&cfg, &|p| {
        seen.lock().unwrap().push((p.done, p.total, p.mismatches))
    });
    assert_eq!(
        seen.into_inner().unwrap(),
        [
            (3, Some(10), 0),
            (6, Some(10), 0),
            (9, Some(10), 0),
            (10, Some(10), 0)
        ]
    );
}

#[test]
fn a_hand_written_reproducer_replays_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mm.teil");
    std::fs::write(
        &file,
        "// fuzz-replay: seed=5 pads=1,3\ninput var A : [2 3]\ninput var B : [3 2]\noutput var C : [2 2]\nC = (A # B) .[2 3]\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("mm")).unwrap();
    let a = ndarray::ArrayD::from_shape_vec(vec![2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
    std::fs::write(dir.path().join("mm/A.npy"), teil_io::npy::to_bytes(&a)).unwrap();
    let r = repro::read(&file).unwrap();
    assert_eq!((r.seed, r.pads.clone(), r.plant), (5, vec![1, 3], None));
    assert_eq!(r.inputs.keys().collect::<Vec<_>>(), ["A"]);
    let cfg = Config {
        pads: r.pads.clone(),
        ..Config::default()
    };
    // B is not given: it is undefined, so C is undefined everywhere, in every evaluator.
    let report = campaign::replay(&cfg, r.program, r.inputs, r.seed);
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    assert_eq!(report.stats.programs, 1);
    // M = 1 and 3, and the fma-mode kernel (the product-then-add of the contraction).
    assert_eq!(report.stats.kernels, 3);
    assert_eq!(report.stats.fma, 1);
}

/// A reproducer's kernel target is read back; an unknown one is an error naming the field.
#[test]
fn a_reproducers_kernel_target_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.teil");
    let program = "var A : [2]\nA = A\n";
    std::fs::write(
        &file,
        format!("// fuzz-replay: seed=3 pads=8 isa=vec128\n{program}"),
    )
    .unwrap();
    let r = repro::read(&file).unwrap();
    assert_eq!((r.seed, r.pads, r.isa), (3, vec![8], Some(Isa::Vec128)));
    std::fs::write(
        &file,
        format!("// fuzz-replay: seed=3 pads=8 isa=sse9\n{program}"),
    )
    .unwrap();
    let e = repro::read(&file).unwrap_err().to_string();
    assert!(e.contains("isa=sse9"), "{e}");
}

#[test]
fn replay_reports_an_ill_typed_program() {
    let p = teil::parse("var A : [2]\nvar B : [3]\nA = B\n").program;
    let report = campaign::replay(&Config::default(), p, Default::default(), 0);
    assert_eq!(report.mismatches.len(), 1);
    assert_eq!(report.mismatches[0].failures[0].check, Check::Generator);
    assert_eq!(
        report.mismatches[0].failures[0].detail,
        "the checker reports E0202"
    );
}

/// The padding bound of `Config::validate` (spec/fuzzing.md): rank 5, extents up to 3.
#[test]
fn padding_multiples_are_bounded_by_the_largest_padded_buffer() {
    use campaign::{largest_padded_buffer, CellCount, ConfigError, MAX_PADDED_CELLS};
    assert_eq!(largest_padded_buffer(1), Some(243));
    assert_eq!(largest_padded_buffer(2), Some(1024));
    assert_eq!(largest_padded_buffer(3), Some(243));
    assert_eq!(largest_padded_buffer(8), Some(32768));
    assert_eq!(largest_padded_buffer(16), Some(MAX_PADDED_CELLS));
    assert_eq!(largest_padded_buffer(17), Some(1_419_857));
    assert_eq!(largest_padded_buffer(1 << 13), None);
    assert_eq!(largest_padded_buffer(u64::MAX), None);
    let with_pads = |pads: &[u64]| Config {
        pads: pads.to_vec(),
        ..Config::default()
    };
    assert_eq!(with_pads(&[1, 3, 8, 16]).validate(), Ok(()));
    assert_eq!(
        with_pads(&[1, 17]).validate(),
        Err(ConfigError::PadTooLarge {
            pad: 17,
            cells: CellCount(Some(1_419_857)),
            max: 16
        })
    );
    assert_eq!(
        with_pads(&[u64::MAX]).validate(),
        Err(ConfigError::PadTooLarge {
            pad: u64::MAX,
            cells: CellCount(None),
            max: 16
        })
    );
    assert_eq!(with_pads(&[]).validate(), Err(ConfigError::NoPads));
    assert_eq!(with_pads(&[0]).validate(), Err(ConfigError::ZeroPad(0)));
    assert_eq!(
        with_pads(&[8, 1, 8]).validate(),
        Err(ConfigError::DuplicatePad(8))
    );
}

#[test]
fn counts_that_cannot_work_are_refused() {
    use campaign::ConfigError;
    let cases = [
        (
            Config {
                programs: Some(0),
                ..Config::default()
            },
            ConfigError::NoPrograms,
        ),
        (
            Config {
                programs: Some(2),
                skip: u64::MAX,
                ..Config::default()
            },
            ConfigError::IndexOverflow {
                skip: u64::MAX,
                programs: 2,
            },
        ),
        (
            Config {
                jobs: 0,
                ..Config::default()
            },
            ConfigError::NoJobs,
        ),
        (
            Config {
                jobs: campaign::MAX_JOBS + 1,
                ..Config::default()
            },
            ConfigError::TooManyJobs(campaign::MAX_JOBS + 1),
        ),
        (
            Config {
                chunk: 0,
                ..Config::default()
            },
            ConfigError::BadChunk(0),
        ),
    ];
    for (cfg, expected) in cases {
        assert_eq!(cfg.validate(), Err(expected));
    }
    // The last index itself is fine.
    let last = Config {
        programs: Some(1),
        skip: u64::MAX,
        ..Config::default()
    };
    assert_eq!(last.validate(), Ok(()));
}

/// A campaign whose cancellation flag is set stops before its first chunk completes and says
/// so; nothing is counted or shrunk.
#[test]
fn a_cancelled_campaign_reports_the_interruption() {
    let cfg = Config {
        programs: Some(1000),
        jobs: 2,
        ..Config::default()
    };
    cfg.toolchain.cancel.cancel();
    let report = campaign::run(&cfg, &|_| {});
    assert_eq!(report.stopped, Some(campaign::Stop::Interrupted));
    assert_eq!(report.stats.programs, 0);
    assert!(report.mismatches.is_empty());
    assert!(
        report.summary().ends_with(" programs/s, interrupted"),
        "{}",
        report.summary()
    );
}
