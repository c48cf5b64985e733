//! `teil fuzz` through the binary: the summary line and exit codes, a planted bug found,
//! shrunk, written as a reproducer and replayed by the one printed command, and the usage
//! errors.

mod support;
use support::{mkfifo, stderr, stdout, summary, teil_in, teil_within};

#[test]
fn a_clean_campaign_prints_one_summary_line_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let o = teil_in(
        dir.path(),
        &["fuzz", "--programs", "24", "--seed", "5", "--pad", "1,3"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(summary(&o), (24, 0));
    // Not a terminal: no progress bar, nothing else on stderr.
    assert_eq!(stderr(&o), "");
    assert!(!dir.path().join("fuzz-failures").exists());
}

/// `--profile-time`: the summary line stays alone on standard output; the phases' times go to
/// standard error, each phase a row with its seconds, share and time per program, the shares
/// adding up to the total.
#[test]
fn profile_time_prints_where_the_time_went() {
    let dir = tempfile::tempdir().unwrap();
    let o = teil_in(
        dir.path(),
        &[
            "fuzz",
            "--programs",
            "20",
            "--seed",
            "3",
            "--pad",
            "1",
            "--profile-time",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(summary(&o), (20, 0));
    let err = stderr(&o);
    let rows: Vec<(&str, f64, f64)> = err
        .lines()
        .skip(2)
        .map(|l| {
            // `NAME  SECONDS  SHARE%  MS`: the name may hold spaces.
            let cols: Vec<&str> = l.split_whitespace().collect();
            let n = cols.len();
            let share = cols[n - 2].trim_end_matches('%').parse().unwrap();
            (l[..24].trim_end(), cols[n - 3].parse().unwrap(), share)
        })
        .collect();
    assert!(err.starts_with("where the time went ("), "{err}");
    let names: Vec<&str> = rows.iter().map(|r| r.0).collect();
    for phase in ["generation", "oracle", "C compiler", "driver (kernels)"] {
        assert!(names.contains(&phase), "{phase} missing: {err}");
    }
    let (last, phases) = rows.split_last().unwrap();
    assert_eq!(last.0, "all phases (thread time)");
    let seconds: f64 = phases.iter().map(|r| r.1).sum();
    assert!((seconds - last.1).abs() < 0.01, "{err}");
    let shares: f64 = phases.iter().map(|r| r.2).sum();
    assert!((shares - 100.0).abs() < 0.5, "{err}");
    // Largest first.
    assert!(phases.windows(2).all(|w| w[0].1 >= w[1].1), "{err}");
}

/// `--progress SECONDS` on a standard error that is not a terminal: a line per update at most
/// every SECONDS, counting up to the total; a non-positive interval is a usage error.
#[test]
fn progress_lines_where_standard_error_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "fuzz",
        "--programs",
        "24",
        "--no-c",
        "--jobs",
        "1",
        "--chunk",
        "6",
    ];
    let o = teil_in(
        dir.path(),
        &[&args[..], &["--progress", "0.000001"]].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(summary(&o), (24, 0));
    let err = stderr(&o);
    let counts: Vec<&str> = err
        .lines()
        .map(|l| {
            l.strip_prefix("progress: ")
                .and_then(|l| l.split(" programs").next())
                .expect("only progress lines")
        })
        .collect();
    assert_eq!(counts, ["6/24", "12/24", "18/24", "24/24"], "{err}");
    for bad in ["0", "-1", "nan"] {
        let flag = format!("--progress={bad}");
        let o = teil_in(dir.path(), &[&args[..], &[flag.as_str()]].concat());
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(
            stderr(&o).contains("is not a positive number of seconds"),
            "{bad}"
        );
    }
}

#[test]
fn interpreters_only_and_a_zero_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let o = teil_in(
        dir.path(),
        &["fuzz", "--programs", "12", "--no-c", "--jobs", "1"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(summary(&o), (12, 0));
    let o = teil_in(dir.path(), &["fuzz", "--time", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "0 programs, 0 mismatches, 0.0 programs/s\n");
}

#[test]
fn a_planted_bug_is_reported_shrunk_and_replayed_by_the_printed_command() {
    let dir = tempfile::tempdir().unwrap();
    let o = teil_in(
        dir.path(),
        &[
            "fuzz",
            "--programs",
            "30",
            "--seed",
            "1",
            "--plant",
            "redmax-padding",
            "--shrink",
            "1",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let (n, k) = summary(&o);
    assert_eq!(n, 30);
    assert!(k >= 1, "{err}");
    assert_eq!(err.matches("mismatch: program ").count() as u64, k, "{err}");
    // The C backend's result or the translation validator catches it (each program's kernels
    // at the padding multiple its seed draws).
    assert!(
        err.contains("differs from the oracle")
            || err.contains("the translation validator rejects"),
        "{err}"
    );
    assert!(
        err.contains("  the whole program: teil fuzz --seed 1 --skip "),
        "{err}"
    );
    // With the host's kernel targets, the command names the program's (programs 0 to 49:
    // the first, the compiler's default).
    assert!(
        err.contains(" --programs 1 --isa default --plant redmax-padding\n"),
        "{err}"
    );
    // Exactly one reproducer, with its command.
    let commands: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("  reproduce: "))
        .collect();
    assert_eq!(commands.len(), 1, "{err}");
    let args: Vec<&str> = commands[0].split(' ').collect();
    assert_eq!(args[..3], ["teil", "fuzz", "--replay"], "{err}");
    let file = dir.path().join(args[3]);
    assert!(file.starts_with(dir.path().join("fuzz-failures")));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("redmax"), "{text}");
    assert!(text.contains("plant=redmax-padding"), "{text}");
    // The printed command, as printed, in the same directory.
    let o = teil_in(dir.path(), &args[1..]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(summary(&o), (1, 1));
    assert!(
        stderr(&o).contains("mismatch: the reproducer"),
        "{}",
        stderr(&o)
    );
    // The reproducer is a plain TeIL program: `teil check` accepts it.
    let o = teil_in(dir.path(), &["check", args[3]]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `--summary-json`: every failing program once, with the failing check's family; the shrunk
/// ones with their signature, skeleton and reproducer (spec/fuzzing.md, *Campaigns on a
/// cluster*).
#[test]
fn summary_json_lists_the_failing_programs_and_the_shrunk_ones_signatures() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "fuzz",
        "--programs",
        "30",
        "--seed",
        "1",
        "--plant",
        "redmax-padding",
        "--shrink",
        "2",
        "--summary-json",
        "s.json",
    ];
    let o = teil_in(dir.path(), &args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let (n, k) = summary(&o);
    let text = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
    let s: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(s["format"], "teil-fuzz-summary/1");
    assert_eq!(s["teil"], env!("CARGO_PKG_VERSION"));
    assert_eq!((s["seed"].as_u64(), s["skip"].as_u64()), (Some(1), Some(0)));
    assert_eq!(s["programs"].as_u64(), Some(n));
    assert_eq!(s["mismatches"].as_u64(), Some(k));
    assert_eq!(
        (s["interrupted"].as_bool(), s["stopped"].is_null()),
        (Some(false), true)
    );
    let findings = s["findings"].as_array().unwrap();
    let mut indices: Vec<u64> = findings
        .iter()
        .map(|f| f["index"].as_u64().unwrap())
        .collect();
    let mut reported: Vec<u64> = err
        .lines()
        .filter_map(|l| l.strip_prefix("mismatch: program "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    indices.sort_unstable();
    reported.sort_unstable();
    assert_eq!(indices, reported);
    let shrunk: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| !f["signature"].is_null())
        .collect();
    assert_eq!(shrunk.len() as u64, k.min(2), "{text}");
    for f in shrunk {
        let sig = f["signature"].as_str().unwrap();
        assert!(
            sig.len() == 16 && sig.bytes().all(|b| b.is_ascii_hexdigit()),
            "{sig}"
        );
        // The C backend's result, or the translation validator, catches the planted bug.
        let check = f["check"].as_str().unwrap();
        assert!(check == "validate" || check.starts_with('c'), "{f}");
        assert!(f["skeleton"].as_str().unwrap().contains("redmax("), "{f}");
        let repro = dir.path().join(f["reproducer"].as_str().unwrap());
        let program = std::fs::read_to_string(&repro).unwrap();
        assert_eq!(
            program
                .lines()
                .filter(|l| !l.starts_with("//") && l.contains(" = "))
                .count() as u64,
            f["statements"].as_u64().unwrap(),
            "{program}"
        );
    }
    for f in findings.iter().filter(|f| f["signature"].is_null()) {
        assert!(f["skeleton"].is_null() && f["reproducer"].is_null(), "{f}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 8] = [
        (
            &["fuzz", "--pad", "1,0"],
            "`--pad 1,0`: every padding multiple must be a whole number of at least 1",
        ),
        (&["fuzz", "--jobs", "0"], "`--jobs` must be at least 1"),
        (
            &["fuzz", "--plant", "typo"],
            "`--plant typo` is not a planted bug; the bugs are off-by-one, no-rezero, alias, redmax-padding, wrong-stride, panel-edge, k-bound, tile-edge, fold-overwrite",
        ),
        (&["fuzz", "--time", "inf"], "`--time inf` is not a number of seconds"),
        (
            &["fuzz", "--cc", "/nonexistent/cc", "--programs", "1"],
            "the C backend cannot run: cannot run the C compiler `/nonexistent/cc`",
        ),
        (&["fuzz", "--replay", "missing.teil"], "cannot read `missing.teil`"),
        (
            &["fuzz", "--isa", "portable,sse9"],
            "`--isa portable,sse9`: `sse9` is not a kernel target; they are host, default, avx2, avx512, vec128, vec256, vec512, portable",
        ),
        (
            &["fuzz", "--isa", "vec128,vec128"],
            "`--isa vec128,vec128`: `vec128` is named twice",
        ),
    ];
    for (args, message) in cases {
        let o = teil_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with(&format!("error: {message}")),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(stdout(&o), "", "{args:?}");
    }
}

/// A kernel target whose flags the C compiler refuses: left out with a note when it came from
/// `--isa host`, a usage error when `--isa` names it; the other targets still run.
#[test]
fn a_kernel_target_the_compiler_refuses_is_left_out_or_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cc = dir.path().join("cc-no-portable");
    std::fs::write(
        &cc,
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -Dteil_portable ] && { echo 'unknown flag' >&2; exit 1; }; done\nexec cc \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cc = cc.to_str().unwrap();
    // Programs 0 to 149: the first three targets of the host's list (never `portable`, its last).
    let o = teil_in(
        dir.path(),
        &["fuzz", "--cc", cc, "--programs", "150", "--seed", "2"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(summary(&o), (150, 0));
    assert_eq!(
        stderr(&o),
        format!(
            "note: the C compiler `{cc}` refuses the flags of kernel target `portable` \
             (-Dteil_portable): unknown flag; the campaign does not compile for it\n"
        )
    );
    let o = teil_in(
        dir.path(),
        &[
            "fuzz",
            "--cc",
            cc,
            "--isa",
            "vec128,portable",
            "--programs",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "error: `--isa`: the C compiler `{cc}` refuses the flags of kernel target `portable` \
             (-Dteil_portable): unknown flag\n"
        )
    );
    assert_eq!(stdout(&o), "");
}

/// Issue 52, point 9: every program file a replay reads is read as `teil check` reads one: a
/// FIFO or a link to `/dev/zero` is refused at once (exit 2, naming it), never waited on or
/// read until memory runs out, in both replays.
#[test]
fn replays_refuse_a_fifo_or_a_device_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    mkfifo(&dir.path().join("repro_1.teil"));
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.teil")).expect("symlink");
    let case = dir.path().join("target_1");
    std::fs::create_dir(&case).expect("case dir");
    std::os::unix::fs::symlink("/dev/zero", case.join("program.teil")).expect("symlink");
    for (args, what) in [
        (
            vec!["fuzz", "--replay", "repro_1.teil"],
            "a named pipe (FIFO), not a regular file",
        ),
        (
            vec!["fuzz", "--replay", "zero.teil"],
            "a character device, not a regular file",
        ),
        (
            vec!["fuzz", "--target", "true", "--replay", "target_1"],
            "a character device, not a regular file",
        ),
    ] {
        let o = teil_within(dir.path(), &args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
    }
}

/// Issue 52, point 10: a reproducer whose inputs do not fit its program (a reshaped `.npy`,
/// an extra one, a missing one) is refused with exit 2 naming the directory and the input,
/// never replayed as `0 programs, 0 mismatches` (which reads as a fixed bug).
#[test]
fn a_damaged_reproducer_is_refused_not_passed() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("repro_1.teil"),
        "// fuzz-replay: seed=1\ninput var A : [3 4]\noutput var B : [3 4]\nB = A + A\n",
    )
    .expect("write");
    let inputs = dir.path().join("repro_1");
    std::fs::create_dir(&inputs).expect("inputs dir");
    let npy = |shape: &[usize]| {
        let t = teil_interp::Tensor::from_elem(shape, 1.5);
        teil_io::npy::to_bytes_as(&t, teil::ast::ElemType::F64)
    };
    let replay = || teil_within(dir.path(), &["fuzz", "--replay", "repro_1.teil"], &[]);
    // Intact: one program, replayed and passing.
    std::fs::write(inputs.join("A.npy"), npy(&[3, 4])).expect("write");
    let o = replay();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("1 programs, 0 mismatches"));
    for (damage, name) in [("reshaped", "`A`"), ("extra", "`Z`"), ("missing", "`A`")] {
        match damage {
            "reshaped" => std::fs::write(inputs.join("A.npy"), npy(&[4, 3])).expect("write"),
            "extra" => {
                std::fs::write(inputs.join("A.npy"), npy(&[3, 4])).expect("write");
                std::fs::write(inputs.join("Z.npy"), npy(&[2])).expect("write");
            }
            _ => {
                std::fs::remove_file(inputs.join("Z.npy")).expect("remove");
                std::fs::remove_file(inputs.join("A.npy")).expect("remove");
            }
        }
        let o = replay();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{damage}: {err}");
        assert!(
            err.contains("the reproducer's inputs in `repro_1` do not fit") && err.contains(name),
            "{damage}: {err}"
        );
        assert!(o.stdout.is_empty(), "{damage}");
    }
}

#[test]
fn the_function_allowance_is_a_number_of_ulps_in_range() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0.25", "-1", "nan", "inf", "2000000"] {
        let flag = format!("--function-ulps={bad}");
        let o = teil_in(
            dir.path(),
            &["fuzz", "--target", "true", "--programs", "1", flag.as_str()],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is not a number of ulps from 0.5 to 2^20"),
            "{bad}: {}",
            stderr(&o)
        );
    }
}
