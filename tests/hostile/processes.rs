//! Hostile inputs: processes. A C compiler or a compiled kernel that never finishes, SIGINT and
//! SIGTERM in the middle of `teil fuzz` and `teil run --backend c`, and `teil fuzz` options that
//! cannot work.
//!
//! Every case runs with `TMPDIR` set to a fresh directory that must be empty afterwards (no
//! `teil-cc-*` left behind), and with fake compilers: shell scripts that record the id of every
//! process they start, so the case can check that no process of their groups survives.

use crate::support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// A scratch directory (`work`) and the empty `TMPDIR` given to `teil` (`tmp`).
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("tmp")).expect("tmp");
        std::fs::write(
            dir.path().join("add.teil"),
            "input var A : [2 3]\noutput var B : [2 3]\nB = A + A\n",
        )
        .expect("program");
        Sandbox { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// An executable shell script `name`; `PIDS` in `body` stands for the file collecting
    /// process ids.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path(name);
        let body = body.replace("PIDS", &self.path("pids").display().to_string());
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path.display().to_string()
    }

    /// A case in the sandbox with its own `TMPDIR`.
    fn case(&self, args: &[&str]) -> Case {
        Case::new(args.iter().copied())
            .cwd(self.dir.path())
            .env("TMPDIR", &self.path("tmp").display().to_string())
    }

    /// The process ids the scripts recorded.
    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path("pids"))
            .unwrap_or_default()
            .split_whitespace()
            .map(|p| p.parse().expect("a pid"))
            .collect()
    }

    /// Asserts that the scripts started processes, that none of them, nor anything in their
    /// process groups, is still running, and that `TMPDIR` is empty.
    fn assert_clean(&self) {
        let pids = self.pids();
        assert!(!pids.is_empty(), "the fake compiler never ran");
        for pid in pids {
            assert!(
                gone(pid),
                "process {pid} (or one of its group) outlived teil"
            );
        }
        let left: Vec<_> = std::fs::read_dir(self.path("tmp"))
            .expect("tmp")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    }
}

/// Whether no running process has id `pid` or belongs to process group `pid`, waiting up to 2 s
/// (a killed process needs a moment to die; zombies count as gone).
fn gone(pid: i32) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        if running().iter().all(|&(p, g)| p != pid && g != pid) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every live (not zombie) process as (pid, process group), from `/proc/PID/stat`.
fn running() -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may contain spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(&state), Some(pgrp)) = (fields.first(), fields.get(2)) {
            if state != "Z" && state != "X" {
                out.push((pid, pgrp.parse().unwrap_or(0)));
            }
        }
    }
    out
}

/// A compiler that never finishes: it starts a child that sleeps, as `cc` starts `cc1`.
const HANGING_CC: &str = "echo $$ >> PIDS\nsleep 1000 &\necho $! >> PIDS\nwait\n";

/// A compiler that compiles with the real `cc`, then replaces the driver by a script that
/// never finishes, except for the kernel named `teil_kernel` when `spare_teil_kernel` (the one
/// `teil fuzz` compiles before its campaign), and for objects (`-c`: the CORE-MATH units a
/// campaign compiles once).
fn hanging_driver_cc(sandbox: &Sandbox, spare_teil_kernel: bool) -> String {
    let spare = if spare_teil_kernel {
        "grep -q 'void teil_kernel(' \"$(dirname \"$out\")/kernels.c\" && exit 0\n"
    } else {
        ""
    };
    sandbox.script(
        "cc-hanging-driver",
        &format!(
            "cc \"$@\" || exit $?\n\
             case \" $* \" in *\" -c \"*) exit 0;; esac\n\
             out=\"\"; prev=\"\"\n\
             for a in \"$@\"; do [ \"$prev\" = \"-o\" ] && out=\"$a\"; prev=\"$a\"; done\n\
             {spare}\
             printf '#!/bin/sh\\necho $$ >> PIDS\\nsleep 1000\\n' > \"$out\"\n\
             chmod +x \"$out\"\n"
        ),
    )
}

/// A real compiler whose process ids are recorded (`exec` keeps the id, so `cc` and everything
/// it starts are in the recorded process group).
fn recorded_cc(sandbox: &Sandbox) -> String {
    sandbox.script("cc-recorded", "echo $$ >> PIDS\nexec cc \"$@\"\n")
}

/// The summary line of `teil fuzz`, ending in `, {end}` if given, as its program and mismatch
/// counts.
fn summary(stdout: &str, end: Option<&str>) -> (u64, u64) {
    let line = stdout.trim_end_matches('\n');
    assert!(!line.contains('\n'), "more than one line:\n{stdout}");
    let rest = match end {
        Some(end) => line
            .strip_suffix(&format!(", {end}"))
            .unwrap_or_else(|| panic!("summary does not end in `, {end}`: {line}")),
        None => line,
    };
    let parts: Vec<&str> = rest.split(", ").collect();
    assert_eq!(parts.len(), 3, "{line}");
    let count = |part: &str, unit: &str| -> u64 {
        part.strip_suffix(unit)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("`{part}` in {line}"))
    };
    assert!(parts[2].ends_with(" programs/s"), "{line}");
    (count(parts[0], " programs"), count(parts[1], " mismatches"))
}

#[test]
fn a_hanging_compiler_is_stopped_at_the_time_out() {
    let sb = Sandbox::new();
    let cc = sb.script("cc-hang", HANGING_CC);
    let o = sb
        .case(&[
            "run",
            "add.teil",
            "--random-inputs",
            "1",
            "--backend",
            "c",
            "--cc",
            &cc,
            "--cc-timeout",
            "1",
        ])
        .run();
    o.exits(2)
        .reports("error: [E0801]")
        .within(Duration::from_secs(4));
    assert!(o.elapsed >= Duration::from_secs(1), "{:?}", o.elapsed);
    assert!(
        o.stderr
            .contains(&format!("the C compiler `{cc}` did not finish within 1 s")),
        "{}",
        o.stderr
    );
    assert_eq!(o.stdout, "");
    sb.assert_clean();
}

#[test]
fn a_hanging_compiler_stops_a_campaign_without_a_finding() {
    let sb = Sandbox::new();
    let cc = sb.script("cc-hang", HANGING_CC);
    let o = sb
        .case(&["fuzz", "--programs", "20", "--cc", &cc, "--cc-timeout", "1"])
        .run();
    o.exits(2)
        .reports("error: [E0801]")
        .within(Duration::from_secs(4));
    assert!(o.stderr.contains("the C compiler"), "{}", o.stderr);
    assert!(!o.stderr.contains("mismatch"), "{}", o.stderr);
    assert_eq!(summary(&o.stdout, Some("stopped")), (0, 0));
    assert!(
        !sb.path("fuzz-failures").exists(),
        "a reproducer was written"
    );
    sb.assert_clean();
}

#[test]
fn a_hanging_driver_is_stopped_at_the_time_out() {
    let sb = Sandbox::new();
    let cc = hanging_driver_cc(&sb, false);
    let o = sb
        .case(&[
            "run",
            "add.teil",
            "--random-inputs",
            "1",
            "--backend",
            "c",
            "--cc",
            &cc,
            "--cc-timeout",
            "1",
        ])
        .run();
    o.exits(2)
        .reports("error: [E0801]")
        .within(Duration::from_secs(5));
    assert!(
        o.stderr
            .contains("the compiled kernel's driver did not finish within 1 s"),
        "{}",
        o.stderr
    );
    sb.assert_clean();
}

/// A kernel that does not terminate is a bug of the backend: the campaign reports it as a
/// mismatch of the C check (the batch is split like a crashing one), not as an environment
/// problem.
#[test]
fn a_hanging_driver_in_a_campaign_is_a_finding() {
    let sb = Sandbox::new();
    let cc = hanging_driver_cc(&sb, true);
    let o = sb
        .case(&[
            "fuzz",
            "--programs",
            "1",
            "--pad",
            "1",
            "--jobs",
            "1",
            "--shrink",
            "0",
            "--cc",
            &cc,
            "--cc-timeout",
            "1",
        ])
        .deadline(Duration::from_secs(60))
        .run();
    o.exits(1);
    assert!(
        o.stderr.contains("mismatch: program 0")
            && o.stderr
                .contains("the C backend at M = 1 differs from the oracle")
            && o.stderr
                .contains("the compiled kernel's driver did not finish within 1 s"),
        "{}",
        o.stderr
    );
    assert_eq!(summary(&o.stdout, None).0, 1);
    sb.assert_clean();
}

fn interrupt_a_campaign(signal: libc::c_int) {
    let sb = Sandbox::new();
    let cc = recorded_cc(&sb);
    let after = Duration::from_millis(1500);
    let o = sb
        .case(&["fuzz", "--programs", "100000", "--chunk", "10", "--cc", &cc])
        .signal_after(after, signal)
        .run();
    o.exits(130);
    assert!(
        o.elapsed < after + Duration::from_secs(2),
        "stopped {:?} after the signal",
        o.elapsed - after
    );
    let (programs, mismatches) = summary(&o.stdout, Some("interrupted"));
    assert!(programs < 100000, "{}", o.stdout);
    assert_eq!(mismatches, 0, "{}", o.stderr);
    assert!(
        !sb.path("fuzz-failures").exists(),
        "a reproducer was written"
    );
    sb.assert_clean();
}

#[test]
fn sigint_stops_a_campaign_with_its_summary() {
    interrupt_a_campaign(libc::SIGINT);
}

#[test]
fn sigterm_stops_a_campaign_with_its_summary() {
    interrupt_a_campaign(libc::SIGTERM);
}

fn interrupt_a_c_run(signal: libc::c_int) {
    let sb = Sandbox::new();
    let cc = sb.script("cc-hang", HANGING_CC);
    let after = Duration::from_millis(700);
    let o = sb
        .case(&[
            "run",
            "add.teil",
            "--random-inputs",
            "1",
            "--backend",
            "c",
            "--cc",
            &cc,
        ])
        .signal_after(after, signal)
        .run();
    o.exits(130);
    assert!(
        o.elapsed < after + Duration::from_secs(1),
        "stopped {:?} after the signal",
        o.elapsed - after
    );
    assert_eq!(o.stderr, "error: interrupted\n");
    assert_eq!(o.stdout, "");
    sb.assert_clean();
}

#[test]
fn sigint_stops_a_c_run_and_its_compiler() {
    interrupt_a_c_run(libc::SIGINT);
}

#[test]
fn sigterm_stops_a_c_run_and_its_compiler() {
    interrupt_a_c_run(libc::SIGTERM);
}

/// Options with which no campaign can run are usage errors (exit 2) before anything runs: no
/// compiler is started, no reproducer written.
#[test]
fn impossible_campaign_options_are_usage_errors() {
    let sb = Sandbox::new();
    let cc = recorded_cc(&sb);
    let replay = sb.path("repro.teil");
    std::fs::write(
        &replay,
        "// fuzz-replay: seed=1 pads=1000\nvar x : [2]\nx = 2 * x\n",
    )
    .expect("reproducer");
    // Its input, so that only the header's multiple is wrong (a reproducer without it is
    // refused for that first, `fuzz_cli.rs`).
    std::fs::create_dir(sb.path("repro")).expect("inputs");
    let x = teil_interp::Tensor::from_elem(vec![2], 1.0);
    std::fs::write(
        sb.path("repro/x.npy"),
        teil_io::npy::to_bytes_as(&x, teil::ast::ElemType::F64),
    )
    .expect("input");
    let replay = replay.display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--pad", "0"],
            "every padding multiple must be a whole number of at least 1",
        ),
        (
            &["--pad", ""],
            "every padding multiple must be a whole number",
        ),
        (
            &["--pad", "1,,3"],
            "every padding multiple must be a whole number",
        ),
        (
            &["--pad=-1"],
            "`--pad -1`: every padding multiple must be a whole number",
        ),
        (
            &["--pad", "17"],
            "`--pad 17`: a generated program can have a padded buffer of 1419857 cells",
        ),
        (
            &["--pad", "1,1000"],
            "`--pad 1000`: a generated program can have a padded buffer of 1000000000000000 cells",
        ),
        (
            &["--pad", "18446744073709551615"],
            "a padded buffer of more than 2^64 - 1 cells",
        ),
        (
            &["--pad", "3,8,3"],
            "`--pad` names the padding multiple 3 twice",
        ),
        (&["--replay", &replay], "`--pad 1000`: a generated program"),
        (
            &["--programs", "0"],
            "`--programs 0`: a campaign needs at least one program",
        ),
        (
            &["--skip", "18446744073709551615", "--programs", "2"],
            "goes past the last program index",
        ),
        (
            &["--chunk", "0"],
            "`--chunk 0`: a chunk holds 1 to 10000 programs",
        ),
        (&["--jobs", "0"], "`--jobs` must be at least 1"),
        (
            &["--jobs", "100000"],
            "`--jobs 100000`: at most 1024 worker threads",
        ),
        (
            &["--cc-timeout", "0"],
            "invalid value '0' for '--cc-timeout <SECONDS>'",
        ),
    ];
    for (flags, message) in cases {
        let mut args = vec!["fuzz", "--cc", &cc];
        args.extend_from_slice(flags);
        let o = sb.case(&args).run();
        o.exits(2);
        assert!(
            o.stderr.starts_with("error: ") && o.stderr.contains(message),
            "{flags:?}: {}",
            o.stderr
        );
        assert_eq!(o.stdout, "", "{flags:?}");
        assert!(
            !sb.path("fuzz-failures").exists(),
            "{flags:?}: a reproducer"
        );
        assert!(sb.pids().is_empty(), "{flags:?}: the compiler ran");
    }
    // The largest multiple that fits runs.
    let o = sb
        .case(&["fuzz", "--programs", "2", "--pad", "16", "--cc", &cc])
        .deadline(Duration::from_secs(60))
        .run();
    o.exits(0);
    assert_eq!(summary(&o.stdout, None).0, 2);
}

/// A `teil-target/1` target in Python: `body` runs for each request `req` (a dict) with `out`
/// (standard output, bytes) and `pids` (the file collecting process ids) in scope.
fn python_target(sb: &Sandbox, name: &str, body: &str) -> String {
    let script = sb.path(&format!("{name}.py"));
    let pids = sb.path("pids").display().to_string();
    let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
    std::fs::write(
        &script,
        format!(
            "import json, os, sys\nout = sys.stdout.buffer\npids = {pids:?}\n\
             with open(pids, 'a') as f:\n    f.write(f'{{os.getpid()}}\\n')\n\
             for line in sys.stdin:\n    req = json.loads(line)\n{body}"
        ),
    )
    .expect("target script");
    format!("python3 {}", script.display())
}

/// `teil fuzz --target TARGET --programs N --shrink 0` in the sandbox.
fn target_campaign(sb: &Sandbox, target: &str, programs: u64) -> Outcome {
    let n = programs.to_string();
    sb.case(&[
        "fuzz",
        "--target",
        target,
        "--programs",
        &n,
        "--shrink",
        "0",
    ])
    .run()
}

/// Answers every request as unsupported after `delay` seconds.
fn slow_target(sb: &Sandbox, delay: f64) -> String {
    python_target(
        sb,
        "slow",
        &format!(
            "import time\ntime.sleep({delay})\n\
             out.write(json.dumps({{'id': req['id'], 'status': 'unsupported', 'reason': 'slow'}}).encode() + b'\\n')\nout.flush()"
        ),
    )
}

fn interrupt_a_target_campaign(signal: libc::c_int) {
    // Issue 24, item 8: the harness died by the signal, printed nothing, left its work
    // directory and the target running.
    let sb = Sandbox::new();
    let target = slow_target(&sb, 0.2);
    let after = Duration::from_millis(1500);
    let o = sb
        .case(&[
            "fuzz",
            "--target",
            &target,
            "--programs",
            "1000",
            "--progress",
            "0.3",
        ])
        .signal_after(after, signal)
        .run();
    o.exits(130);
    assert!(
        o.elapsed < after + Duration::from_secs(2),
        "stopped {:?} after the signal",
        o.elapsed - after
    );
    let (programs, mismatches) = summary(&o.stdout, Some("interrupted"));
    assert!((1..1000).contains(&programs), "{}", o.stdout);
    assert_eq!(mismatches, 0, "{}", o.stderr);
    // Issue 29: standard error is not a terminal, so `--progress` writes a line at most every
    // 0.3 s while the target answers (one program per 0.2 s), each counting further.
    let counts: Vec<u64> = o
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("progress: "))
        .map(|l| {
            l.split('/')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("a count")
        })
        .collect();
    assert!(counts.len() >= 2, "{}", o.stderr);
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "{}", o.stderr);
    assert!(
        o.stderr.contains("/1000 programs, 0 mismatches, "),
        "{}",
        o.stderr
    );
    sb.assert_clean();
}

#[test]
fn sigint_stops_a_target_campaign_with_its_summary() {
    interrupt_a_target_campaign(libc::SIGINT);
}

#[test]
fn sigterm_stops_a_target_campaign_with_its_summary() {
    interrupt_a_target_campaign(libc::SIGTERM);
}

#[test]
fn an_endless_answer_is_a_fault_within_a_bounded_memory() {
    // Issue 24, item 4: a 4 GB line aborted the harness. Under the harness's 2 GiB address
    // space, a target writing without end is a finding as soon as 1 MiB arrived.
    let sb = Sandbox::new();
    let target = python_target(
        &sb,
        "endless",
        "chunk = b'x' * (1 << 20)\nwhile True:\n    out.write(chunk)",
    );
    let o = target_campaign(&sb, &target, 2);
    o.exits(1);
    assert_eq!(summary(&o.stdout, None), (2, 2), "{}", o.stderr);
    assert_eq!(
        o.stderr
            .matches("the answer is longer than 1048576 bytes")
            .count(),
        2,
        "{}",
        o.stderr
    );
    sb.assert_clean();
}

/// Issue 42, item 7: a target that exits while a descendant it detached (`setsid`, out of its
/// process group) keeps its standard output open. The exit is seen at once, not after the
/// time-out, the rule for a target that never answers applies, and the descendant (adopted by
/// `teil` as the subreaper of its orphans) does not outlive the campaign.
#[test]
fn a_target_that_exits_behind_an_escaped_descendant_is_seen_to_exit() {
    let sb = Sandbox::new();
    let target = sb.script(
        "escaping",
        "setsid sh -c 'echo $$ >> PIDS; exec sleep 1000' &\nsleep 0.3\nexit 3\n",
    );
    let o = sb
        .case(&[
            "fuzz",
            "--target",
            &target,
            "--programs",
            "5",
            "--shrink",
            "0",
            "--target-timeout",
            "60",
        ])
        .run();
    o.exits(2);
    assert!(
        o.stderr.contains("the target never answered")
            && o.stderr.contains("exited (exit status: 3)"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("did not answer within"), "{}", o.stderr);
    assert!(o.elapsed < Duration::from_secs(20), "{:?}", o.elapsed);
    let pids = sb.pids();
    assert_eq!(pids.len(), 2, "one escaped descendant per start: {pids:?}");
    for pid in pids {
        assert!(
            gone(pid),
            "the escaped descendant {pid} outlived the campaign"
        );
    }
}

#[test]
fn long_messages_are_shortened_and_other_bytes_named() {
    // Issue 24, item 22: a 50 MB error message was printed in full; a non-UTF-8 answer was
    // reported as a target that exited without answering.
    let sb = Sandbox::new();
    let long = python_target(
        &sb,
        "long",
        "out.write(json.dumps({'id': req['id'], 'status': 'error', 'message': 'e' * 100000}).encode() + b'\\n')\nout.flush()",
    );
    let o = target_campaign(&sb, &long, 1);
    o.exits(1);
    assert!(o.stderr.contains(" ... (98000 more bytes)"), "{}", o.stderr);
    assert!(
        o.stderr.len() < 20_000,
        "{} bytes of report",
        o.stderr.len()
    );
    let bytes = python_target(&sb, "bytes", "out.write(b'\\xff\\xfe{}\\n')\nout.flush()");
    let o = target_campaign(&sb, &bytes, 1);
    o.exits(1);
    assert!(o.stderr.contains("the answer is not UTF-8"), "{}", o.stderr);
    assert!(
        !o.stderr.contains("exited without answering"),
        "{}",
        o.stderr
    );
    sb.assert_clean();
}

#[test]
fn a_link_planted_where_the_next_case_would_go_is_not_followed() {
    // Issue 24, item 18: case directories had predictable names (`case_N`), and the harness
    // wrote the next case's files through a symbolic link the target planted there.
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    std::fs::create_dir(&outside).unwrap();
    let target = python_target(
        &sb,
        "planter",
        &format!(
            "parent = os.path.dirname(req['dir'])\n\
             for k in range(req['id'] + 1, req['id'] + 4):\n    \
                 for name in (f'case_{{k}}', f'case_{{k}}_'):\n        \
                     try:\n            os.symlink({outside:?}, os.path.join(parent, name))\n        \
                     except OSError:\n            pass\n\
             out.write(json.dumps({{'id': req['id'], 'status': 'unsupported', 'reason': 'x'}}).encode() + b'\\n')\nout.flush()",
            outside = outside.display().to_string()
        ),
    );
    let o = sb
        .case(&["fuzz", "--target", &target, "--programs", "5"])
        .run();
    o.exits(0);
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(written.is_empty(), "written through the link: {written:?}");
    // The links the target planted are removed with the work directory.
    sb.assert_clean();
}

#[test]
fn an_output_file_larger_than_its_header_says_is_refused_unread() {
    // Issue 24, item 9: target output files were read in full before their header was
    // checked (a 3 GB sparse file: 3 GB and 28 s). Its header is right; its size is not.
    let sb = Sandbox::new();
    let target = python_target(
        &sb,
        "sparse",
        "for name, o in req['outputs'].items():\n    \
             n = 1\n    \
             for e in o['shape']:\n        n *= e\n    \
             dims = [str(e) for e in o['shape']]\n    \
             shape = '(' + ', '.join(dims) + (',)' if len(dims) == 1 else ')')\n    \
             h = \"{'descr': '<f8', 'fortran_order': False, 'shape': %s, }\" % shape\n    \
             h += ' ' * (63 - (10 + len(h)) % 64) + '\\n'\n    \
             with open(o['path'], 'wb') as f:\n        \
                 f.write(b'\\x93NUMPY\\x01\\x00' + len(h).to_bytes(2, 'little') + h.encode() + b'\\0' * (8 * n))\n        \
                 f.truncate(3 << 30)\n\
             out.write(json.dumps({'id': req['id'], 'status': 'ok'}).encode() + b'\\n')\nout.flush()",
    );
    let o = target_campaign(&sb, &target, 3);
    o.exits(1);
    assert!(
        o.stderr.contains("bytes after the array data"),
        "{}",
        o.stderr
    );
    assert!(o.cpu < Duration::from_secs(3), "{:?} of CPU", o.cpu);
    sb.assert_clean();
}
