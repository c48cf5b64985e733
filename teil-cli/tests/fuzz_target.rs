//! `teil fuzz --target`, `teil fuzz --export` and `teil lower --ops` through the binary
//! (spec/fuzzing.md, *Targets*). The target is the binary's own hidden `teil ops-target`, the
//! reference evaluator of the ops/1 form, clean or with a planted bug, so no Python is needed:
//! each bug must be found within its budget of programs and shrunk to a reproducer of at most
//! three statements that replays with one command; misbehaving targets (silent, exiting,
//! answering garbage) are findings, and the campaign goes on.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const TEIL: &str = env!("CARGO_BIN_EXE_teil");

mod support;
use support::{stderr, stdout, summary, teil_in};

fn ops_target(plant: Option<&str>) -> String {
    match plant {
        Some(b) => format!("{TEIL} ops-target --plant {b}"),
        None => format!("{TEIL} ops-target"),
    }
}

/// Runs a campaign of `programs` against `target`, reproducers into `dir/out`.
fn campaign(dir: &Path, target: &str, programs: u64, seed: u64, extra: &[&str]) -> Output {
    let (p, s) = (programs.to_string(), seed.to_string());
    let mut args = vec![
        "fuzz",
        "--target",
        target,
        "--programs",
        &p,
        "--seed",
        &s,
        "--out",
        "out",
    ];
    args.extend_from_slice(extra);
    teil_in(dir, &args)
}

fn reproducers(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("out"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn statements(program: &str) -> usize {
    let (c, _) = teil::compile(program).expect("the reproducer checks");
    c.program().stmts.len()
}

#[test]
fn the_reference_target_agrees_on_every_program_of_both_profiles() {
    let dir = tempfile::tempdir().unwrap();
    for profile in ["all", "einsum"] {
        let o = campaign(
            dir.path(),
            &ops_target(None),
            150,
            3,
            &["--profile", profile],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(summary(&o), (150, 0));
        assert!(stderr(&o).contains("target: 150 passed"), "{}", stderr(&o));
        assert!(stderr(&o).contains("0 unsupported"), "{}", stderr(&o));
    }
    assert!(reproducers(dir.path()).is_empty());
}

/// Each planted bug is found within its budget (spec/fuzzing.md gives the detection rates),
/// shrunk to at most three statements that use the buggy op, and the printed command replays
/// the reproducer: failing with the bug, clean without it.
#[test]
fn planted_bugs_are_found_shrunk_and_replayed() {
    // (bug, profile, budget in programs, what the shrunk ops form must contain)
    let cases = [
        ("take-off-by-one", "all", 30, "\"op\": \"take\""),
        ("max-from-zero", "all", 100, "\"kind\": \"max\""),
        ("einsum-drops-repeated", "einsum", 30, "\"op\": \"einsum\""),
        // About 7 % of the programs (seeds 1-3: 13, 20 and 9 of 200).
        ("exp-off", "all", 200, "\"name\": \"exp\""),
    ];
    for (bug, profile, budget, op) in cases {
        for seed in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let target = ops_target(Some(bug));
            let o = campaign(
                dir.path(),
                &target,
                budget,
                seed,
                &["--profile", profile, "--shrink", "1"],
            );
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{bug}, seed {seed}: {err}");
            let (n, k) = summary(&o);
            assert!(n == budget && k >= 1, "{bug}, seed {seed}: {n} {k}");
            let repros = reproducers(dir.path());
            assert_eq!(repros.len(), 1, "{bug}: {err}");
            let repro = &repros[0];
            let program = std::fs::read_to_string(repro.join("program.teil")).unwrap();
            assert!(
                program.contains(&format!(
                    "// class: wrong value; target: teil ops-target --plant {bug}\n"
                )),
                "{bug}: {program}"
            );
            let stmts = statements(&program);
            assert!(
                (1..=3).contains(&stmts),
                "{bug}: {stmts} statements\n{program}"
            );
            let ops = std::fs::read_to_string(repro.join("ops.json")).unwrap();
            assert!(ops.contains(op), "{bug}: {ops}");
            assert!(repro.join("program.prefix.teil").is_file(), "{bug}");
            let message = std::fs::read_to_string(repro.join("message.txt")).unwrap();
            assert!(
                message.starts_with(&format!(
                    "the target's outputs differ from the oracle's\nclass: wrong value\n\
                     target: teil ops-target --plant {bug}\n"
                )) && message.contains("replay: teil fuzz --target '"),
                "{bug}: {message}"
            );
            for sub in ["inputs", "expected", "outputs"] {
                assert!(repro.join(sub).is_dir(), "{bug}: no {sub}/");
            }
            // `teil run` takes the reproducer's inputs as they are (each file in its variable's
            // declared type) and prints the expected outputs.
            let mut run: Vec<String> = vec![
                "run".into(),
                "program.teil".into(),
                "--out".into(),
                "got".into(),
            ];
            for f in std::fs::read_dir(repro.join("inputs")).unwrap() {
                let f = f.unwrap().path();
                let name = f.file_stem().unwrap().to_string_lossy().into_owned();
                run.extend(["--in".into(), format!("{name}=inputs/{name}.npy")]);
            }
            let args: Vec<&str> = run.iter().map(String::as_str).collect();
            let o = teil_in(repro, &args);
            assert_eq!(o.status.code(), Some(0), "{bug}: {}", stderr(&o));
            for f in std::fs::read_dir(repro.join("expected")).unwrap() {
                let f = f.unwrap().path();
                let got = repro.join("got").join(f.file_name().unwrap());
                assert!(
                    teil_interp::same_values(&npy(&got), &npy(&f)),
                    "{bug}: {}",
                    f.display()
                );
            }
            // The printed command, run as printed (relative to the campaign's directory).
            let line = err
                .lines()
                .find_map(|l| l.trim().strip_prefix("reproduce: "))
                .expect("a reproduce line");
            assert!(line.starts_with("teil fuzz --target '"), "{line}");
            assert!(
                line.ends_with(&format!("--replay {}", rel(dir.path(), repro))),
                "{line}"
            );
            let replay = |t: &str| {
                teil_in(
                    dir.path(),
                    &["fuzz", "--target", t, "--replay", &rel(dir.path(), repro)],
                )
            };
            let again = replay(&target);
            assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
            assert_eq!(summary(&again), (1, 1));
            let clean = replay(&ops_target(None));
            assert_eq!(clean.status.code(), Some(0), "{}", stderr(&clean));
            assert_eq!(summary(&clean), (1, 0));
        }
    }
}

/// A function result within the allowance is no finding, one outside is, and the allowance is
/// the campaign's: with `--function-ulps 16384` the `exp` off by `2^-12` passes, and the
/// reproduce line of a finding made under another allowance than the default repeats it.
#[test]
fn function_results_are_judged_by_the_allowance_in_ulps() {
    let dir = tempfile::tempdir().unwrap();
    let one_ulp = campaign(dir.path(), &ops_target(Some("exp-one-ulp")), 300, 1, &[]);
    assert_eq!(one_ulp.status.code(), Some(0), "{}", stderr(&one_ulp));
    assert_eq!(summary(&one_ulp), (300, 0));
    let sent = stderr(&one_ulp);
    assert!(sent.contains("func exp "), "{sent}");
    let off = ops_target(Some("exp-off"));
    let wide = campaign(dir.path(), &off, 200, 1, &["--function-ulps", "16384"]);
    assert_eq!(wide.status.code(), Some(0), "{}", stderr(&wide));
    let narrow = campaign(
        dir.path(),
        &off,
        200,
        1,
        &["--function-ulps", "8", "--shrink", "1"],
    );
    assert_eq!(narrow.status.code(), Some(1), "{}", stderr(&narrow));
    let err = stderr(&narrow);
    let line = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("reproduce: "))
        .expect("a reproduce line");
    assert!(line.contains("' --function-ulps 8 --replay "), "{line}");
}

fn rel(base: &Path, p: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn einsum_profile_programs_are_einsum_steps_only() {
    let dir = tempfile::tempdir().unwrap();
    let o = teil_in(
        dir.path(),
        &[
            "fuzz",
            "--export",
            "v",
            "--programs",
            "40",
            "--seed",
            "9",
            "--profile",
            "einsum",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for k in 0..40 {
        let ops: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("v/case_{k:05}/ops.json"))).unwrap(),
        )
        .unwrap();
        for s in ops["steps"].as_array().unwrap() {
            assert_eq!(s["op"], "einsum", "case {k}: {s}");
        }
    }
}

#[test]
fn targets_that_hang_exit_or_answer_garbage_are_findings_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    // A target that answers, then crashes: the crash is a finding on the program it was
    // given, the target is restarted, and the campaign goes on. It answers two programs per
    // start: programs 0 and 1, then dies on 2; restarted, 3 and 4.
    let crashing = format!("{} --exit-after 2", ops_target(None));
    let o = campaign(dir.path(), &crashing, 5, 1, &["--shrink", "0"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(summary(&o), (5, 1));
    assert_eq!(
        stderr(&o).matches("mismatch: program 2 ").count(),
        1,
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("exited without answering"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("started 2 time(s)"), "{}", stderr(&o));
    // `sleep` never answers: a timeout per program, the target restarted each time.
    let o = campaign(
        dir.path(),
        "sleep 100",
        2,
        1,
        &["--target-timeout", "0.3", "--shrink", "0"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(summary(&o), (2, 2));
    assert_eq!(
        stderr(&o).matches("did not answer within 0.3 s").count(),
        2,
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("started 2 time(s)"), "{}", stderr(&o));
    // `cat` answers every request with the request itself, which is not an answer of the
    // protocol (no `status`), and keeps running: a finding per program, restarted each time.
    let o = campaign(dir.path(), "cat", 3, 1, &["--shrink", "0"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(summary(&o), (3, 3));
    assert_eq!(
        stderr(&o)
            .matches("the target's answer is not teil-target/1")
            .count(),
        3,
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("started 3 time(s)"), "{}", stderr(&o));
    // `true` exits at once: it never answers, so the campaign stops after the first two
    // programs with one message, as a usage problem, not one finding per program.
    let o = campaign(dir.path(), "true", 50, 1, &["--shrink", "0"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(stdout(&o).is_empty());
    assert_eq!(err.matches("the target never answered").count(), 1, "{err}");
    assert_eq!(err.matches("exited without answering").count(), 2, "{err}");
    assert!(!err.contains("mismatch:"), "{err}");
    // A command that cannot be started is a usage problem, before any program.
    let o = campaign(dir.path(), "/nonexistent/target", 3, 1, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("cannot be started"), "{}", stderr(&o));
    for args in [
        &["fuzz", "--target", "  ", "--programs", "1"][..],
        &["fuzz", "--target", "true", "--target-timeout", "0"],
        &["fuzz", "--profile", "einsum", "--programs", "1"],
        &["fuzz", "--profile", "matmul", "--programs", "1"],
    ] {
        let o = teil_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

fn npy(p: &Path) -> teil_interp::Tensor {
    teil_io::npy::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn export_lists_the_cells_not_judged() {
    // The compiler profile divides by computed zeros: the index lists those cells (0-based,
    // per output, in bounds), and only where a case has any.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "fuzz",
        "--export",
        "vectors",
        "--programs",
        "200",
        "--seed",
        "3",
        "--profile",
        "compiler",
    ];
    let o = teil_in(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let root = dir.path().join("vectors");
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("index.json")).unwrap()).unwrap();
    assert!(index["tolerances"]["unjudged"].is_string());
    let mut listed = 0;
    for case in index["cases"].as_array().unwrap() {
        let Some(unjudged) = case.get("unjudged") else {
            continue;
        };
        let outputs = case["outputs"].as_object().unwrap();
        for (name, cells) in unjudged.as_object().unwrap() {
            let shape: Vec<u64> = serde_json::from_value(outputs[name].clone()).unwrap();
            let cells = cells.as_array().unwrap();
            assert!(!cells.is_empty(), "{name}");
            for cell in cells {
                let at: Vec<u64> = serde_json::from_value(cell.clone()).unwrap();
                assert_eq!(at.len(), shape.len());
                assert!(
                    at.iter().zip(&shape).all(|(i, n)| i < n),
                    "{at:?} {shape:?}"
                );
                listed += 1;
            }
        }
        // Only a division or an infinite input (through a summing einsum) makes cells unjudged.
        let dir = root.join(case["dir"].as_str().unwrap());
        let program = std::fs::read_to_string(dir.join("ops.json")).unwrap();
        let infinite = case["inputs"].as_object().unwrap().keys().any(|n| {
            npy(&dir.join(format!("inputs/{n}.npy")))
                .iter()
                .any(|x| x.is_infinite())
        });
        assert!(program.contains("\"op\": \"div\"") || infinite, "{program}");
    }
    assert!(listed > 0);
}

#[test]
fn export_writes_cases_whose_expected_outputs_are_the_oracles() {
    let dir = tempfile::tempdir().unwrap();
    let o = teil_in(
        dir.path(),
        &[
            "fuzz",
            "--export",
            "vectors",
            "--programs",
            "30",
            "--seed",
            "4",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "30 cases written to vectors\n");
    let root = dir.path().join("vectors");
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["format"], "teil-vectors/1");
    assert_eq!(index["seed"], 4);
    let cases = index["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 30);
    let (mut permitted, mut binary32) = (0, 0);
    for case in cases {
        let d = root.join(case["dir"].as_str().unwrap());
        let text = std::fs::read_to_string(d.join("program.teil")).unwrap();
        let (c, _) = teil::compile(&text).expect("the exported program checks");
        let prefix = std::fs::read_to_string(d.join("program.prefix.teil")).unwrap();
        let (p, _) = teil::compile(&prefix).expect("the prefix form checks");
        assert!(p.program().same_as(c.program()));
        let mut inputs = std::collections::BTreeMap::new();
        for name in case["inputs"].as_object().unwrap().keys() {
            inputs.insert(name.clone(), npy(&d.join(format!("inputs/{name}.npy"))));
        }
        let want = teil_interp::run_oracle(&c, &inputs).unwrap();
        // The ops/1 form, evaluated by the reference evaluator, gives the expected outputs.
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("ops.json")).unwrap()).unwrap();
        let steps: Vec<teil::ops::Step> = doc["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| teil::ops::Step::from_json(s).unwrap())
            .collect();
        let mut env = inputs.clone();
        teil_fuzz::ops_eval::run(&steps, &mut env, None).unwrap();
        for (name, shape) in case["outputs"].as_object().unwrap() {
            let got = npy(&d.join(format!("expected/{name}.npy")));
            assert_eq!(
                teil_interp::tensor_shape(&got),
                serde_json::from_value::<Vec<u64>>(shape.clone()).unwrap()
            );
            assert!(teil_interp::same_values(&got, &want[name]), "{name}");
            if case["tolerance"] == "exact" {
                assert!(teil_interp::same_values(&got, &env[name]), "{name}");
            }
            if case["tolerance"] == "permitted" {
                // The ops/1 evaluator's value (binary32 steps in binary32, the functions
                // correctly rounded, NumPy's order of sums) is permitted in every cell.
                let bound = npy(&d.join(format!("permitted/{name}.npy")));
                assert_eq!(bound.shape(), got.shape());
                for ((&b, &w), &g) in bound.iter().zip(&got).zip(&env[name]) {
                    let ok = if b.is_nan() {
                        !g.is_finite()
                    } else {
                        b == f64::INFINITY || (g.is_finite() && (w - g).abs() <= b)
                    };
                    assert!(ok, "{name}: bound {b}, expected {w}, ops/1 {g}");
                }
                permitted += 1;
            }
        }
        // Every input and expected output is stored in its variable's declared type.
        for (dir, names) in [("inputs", &case["inputs"]), ("expected", &case["outputs"])] {
            for name in names.as_object().unwrap().keys() {
                let path = d.join(format!("{dir}/{name}.npy"));
                let (_, stored) = teil_io::npy::read_typed(&path, None).unwrap();
                assert_eq!(stored, c.decl(name).unwrap().elem, "{}", path.display());
                binary32 += usize::from(stored == teil::ast::ElemType::F32);
            }
        }
    }
    // Half the programs have functions, conversions or binary32 variables.
    assert!(permitted >= 5 && binary32 >= 5, "{permitted} {binary32}");
    // The same export again is refused, and the first one is left as it was.
    let before = std::fs::read_to_string(root.join("index.json")).unwrap();
    let o = teil_in(
        dir.path(),
        &[
            "fuzz",
            "--export",
            "vectors",
            "--programs",
            "3",
            "--seed",
            "5",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(root.join("index.json")).unwrap(),
        before
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, vec!["vectors".to_string()]);
}

#[test]
fn lower_ops_prints_the_ops_form_of_teil_and_tin_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mm.teil"),
        "input var A : [2 3]\ninput var B : [3 4]\noutput var C : [2 4]\nC = (A # B) .[2 3]\n",
    )
    .unwrap();
    let o = teil_in(dir.path(), &["lower", "--ops", "mm.teil"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        r#"{
  "format": "ops/1",
  "inputs": {"A": [2, 3], "B": [3, 4]},
  "outputs": {"C": [2, 4]},
  "undefined": [],
  "steps": [
    {"out": "C", "op": "einsum", "args": ["A", "B"], "equation": "ab,bc->ac", "shape": [2, 4]}
  ]
}
"#
    );
    let tin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/tin/fig2c.tin");
    let o = teil_in(dir.path(), &["lower", "--ops", tin.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(doc["format"], "ops/1");
    assert!(!doc["steps"].as_array().unwrap().is_empty());
    // An ill-typed program is rejected as by every subcommand.
    std::fs::write(
        dir.path().join("bad.teil"),
        "var A : [2]\nvar B : [3]\nA = B\n",
    )
    .unwrap();
    let o = teil_in(dir.path(), &["lower", "--ops", "bad.teil"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).is_empty());
}

/// `--skip K` runs programs K.. of the campaign: as many as asked, each the one a campaign
/// from 0 would send at that index (a shard of `python -m teil.campaign`).
#[test]
fn skipping_runs_the_later_programs() {
    let dir = tempfile::tempdir().unwrap();
    let target = ops_target(None);
    let o = campaign(dir.path(), &target, 10, 1, &["--skip", "50"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(summary(&o), (10, 0));
    assert!(stderr(&o).contains("target: 10 passed"), "{}", stderr(&o));
}

/// `--accuracy N`: the rows of the table, by `(function, type)`: inputs, largest error in ulps
/// (`None` for `-`), class differences.
fn accuracy_rows(dir: &Path, target: &str, n: &str) -> Vec<(String, String, u64, f64, u64)> {
    let o = teil_in(dir, &["fuzz", "--target", target, "--accuracy", n]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let mut lines = text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("| function | type | inputs | largest error (ulps) |"));
    lines.next();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").map(|c| c.trim_matches(['|', ' '])).collect();
            assert_eq!(cells.len(), 9, "{l}");
            let class: u64 = cells[7].split(' ').next().unwrap().parse().unwrap();
            let ulps = cells[3].parse().unwrap_or_else(|_| panic!("{l}"));
            (
                cells[0].into(),
                cells[1].into(),
                cells[2].parse().unwrap(),
                ulps,
                class,
            )
        })
        .collect()
}

#[test]
fn accuracy_measures_every_function_in_ulps_of_the_correctly_rounded_value() {
    let dir = tempfile::tempdir().unwrap();
    // The reference evaluator rounds every function correctly: 0 ulps everywhere, 12 rows of
    // 2 programs each (5000 inputs, rounded up to whole programs of 4096).
    let rows = accuracy_rows(dir.path(), &ops_target(None), "5000");
    assert_eq!(rows.len(), 12);
    for (f, t, inputs, ulps, class) in &rows {
        assert_eq!((*inputs, *ulps, *class), (8192, 0.0, 0), "{f} {t}");
    }
    // One ulp off in `exp` is one ulp; 2^-12 relative is about 2^11 (up to 2^12 at the bottom
    // of a binade), with results past exp's overflow threshold in a class of their own; the
    // other functions stay at 0.
    for (bug, range) in [("exp-one-ulp", 1.0..=1.0), ("exp-off", 2048.0..=4096.0)] {
        for (f, t, _, ulps, class) in accuracy_rows(dir.path(), &ops_target(Some(bug)), "4096") {
            if f == "exp" {
                assert!(range.contains(&ulps), "{bug}: exp {t}: {ulps}");
                assert_eq!(class > 0, bug == "exp-off", "{bug}: exp {t}: {class}");
            } else {
                assert_eq!((ulps, class), (0.0, 0), "{bug}: {f} {t}");
            }
        }
    }
    // Usage errors: no inputs, too many, with --replay.
    for args in [
        &["--accuracy", "0"][..],
        &["--accuracy", "16777217"],
        &["--accuracy", "10", "--replay", "x"],
    ] {
        let target = ops_target(None);
        let mut all = vec!["fuzz", "--target", &target];
        all.extend_from_slice(args);
        let o = teil_in(dir.path(), &all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
    }
}
