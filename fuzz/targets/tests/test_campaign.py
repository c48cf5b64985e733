"""`python -m teil.campaign`: shards of `teil fuzz` as Ray tasks, resumable, findings merged
(spec/fuzzing.md, *Campaigns on a cluster*).

Every campaign here starts a local Ray instance with 2 CPUs, bound to 127.0.0.1, in a driver
subprocess (so that Ray's process-wide state and environment stay out of pytest's). The target
is the NumPy adapter, correct or with a planted bug (`max` folding from 0, as in
test_numpy_target.py), so each figure can be compared with one plain `teil fuzz` run of the same
programs.
"""
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from harness import TARGETS, planted_max_adapter, require, teil_bin

SEED = 1


def driver(out, target, programs, *extra, entry=("-m", "teil.campaign"), shrink=1, **popen):
    env = dict(os.environ, TEIL_BIN=teil_bin())
    cmd = [sys.executable, *entry, "--programs", str(programs), "--seed",
           str(SEED), "--shard-size", "100", "--out", str(out), "--num-cpus", "2",
           "--target", target, "--progress", "1000", "--shrink", str(shrink), *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, **popen)


def finish(proc, timeout=300):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def shard_files(out):
    d = out / "shards"
    return sorted(p.name for p in d.iterdir() if p.suffix == ".json") if d.is_dir() else []


def stop_part_way(proc, out, after, sig):
    """Sends `sig` to the driver once `after` more shards are in the ledger; afterwards kills
    whatever is left of its process group (Ray's agents outlive a driver killed with SIGKILL)."""
    start = len(shard_files(out))
    deadline = time.monotonic() + 240
    while len(shard_files(out)) < start + after:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no shard finished"
        time.sleep(0.05)
    os.kill(proc.pid, sig)
    code, _, err = finish(proc, timeout=120)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    return code, err


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_a_campaign_interrupted_and_killed_counts_every_program_once(tmp_path):
    require("numpy")
    require("ray")
    target = planted_max_adapter(tmp_path)
    out = tmp_path / "campaign"

    # Ctrl-C part-way: the shards in flight are cancelled, the directory says so.
    code, err = stop_part_way(driver(out, target, 2000), out, 2, signal.SIGINT)
    assert code == 130, err
    assert "left resumable" in err
    first = summary(out)
    assert first["interrupted"] and not first["complete"]
    assert 2 <= first["shards"]["done"] < 20 and first["programs"] == 100 * first["shards"]["done"]

    # SIGKILL part-way: at most the shards in flight are lost.
    code, err = stop_part_way(driver(out, target, 2000), out, 2, signal.SIGKILL)
    assert code == -signal.SIGKILL
    before = len(shard_files(out))
    assert before < 20, "the campaign ended before it could be killed"

    code, stdout, err = finish(driver(out, target, 2000))
    assert code == 1, err
    s = summary(out)
    assert s["programs"] == 2000 and s["shards"] == {"done": 20, "total": 20, "size": 100}
    assert s["complete"] and not s["interrupted"]
    assert s["this_run"]["programs"] == 2000 - 100 * before
    assert len(shard_files(out)) == 20

    # Exactly the failing programs of one plain `teil fuzz` run over the same 2000 programs.
    ledger = [json.loads((out / "shards" / f).read_text()) for f in shard_files(out)]
    found = sorted(f["index"] for r in ledger for f in r["findings"])
    plain = tmp_path / "plain.json"
    result = subprocess.run(
        [teil_bin(), "fuzz", "--target", target, "--programs", "2000", "--seed", str(SEED),
         "--shrink", "0", "--jobs", "2", "--out", str(tmp_path / "plain"),
         "--summary-json", str(plain)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 1, result.stderr
    reference = json.loads(plain.read_text())
    assert found == sorted(f["index"] for f in reference["findings"])
    assert s["mismatches"] == reference["mismatches"] == len(found) > 0

    # One signature per bug shape, each with one reproducer and its count; the planted bug's
    # simplest form, `v0 = redmax(v1)`, was found in several shards.
    counts = {}
    shards_of = {}
    for r in ledger:
        for f in r["findings"]:
            if f["signature"]:
                counts[f["signature"]] = counts.get(f["signature"], 0) + 1
                shards_of.setdefault(f["signature"], set()).add(r["shard"])
    assert {f["signature"]: f["count"] for f in s["findings"]} == counts
    assert sum(counts.values()) + s["unshrunk"] == s["mismatches"]
    assert sorted(p.name for p in (out / "findings").iterdir()) == sorted(counts)
    [redmax] = [f for f in s["findings"] if f["skeleton"] == "v0 = redmax(v1)\n"]
    assert redmax["count"] >= 2 and len(shards_of[redmax["signature"]]) >= 2
    assert redmax["check"] == "wrong value"
    assert f"finding {redmax['signature']} (wrong value), found {redmax['count']} time(s)" in err

    # Each kept reproducer replays, from where it now is, with the command the summary gives.
    repro = out / redmax["reproducer"]
    assert str(repro) in (repro / "program.teil").read_text()
    replay = subprocess.run(
        [teil_bin(), "fuzz", "--target", target, "--replay", str(repro)],
        capture_output=True, text=True, timeout=120,
    )
    assert replay.returncode == 1 and replay.stdout.startswith("1 programs, 1 mismatches")
    assert redmax["replay"].endswith(f"--replay {repro}")

    # The same directory with another command line is refused, before anything runs.
    code, _, err = finish(driver(out, target, 2000, "--profile", "compiler"))
    assert code == 2
    assert "holds another campaign" in err and '"--profile"' in err


INTERRUPTED_BETWEEN = """
import sys
import teil.campaign as campaign
count, interrupted = campaign._Tally.add, []

def add(self, k, record, this_run=False):
    # The second shard of this run: its record is in the ledger, its count not yet taken.
    if this_run and len(self.shards) == 1 and not interrupted:
        interrupted.append(k)
        raise KeyboardInterrupt
    count(self, k, record, this_run)

campaign._Tally.add = add
sys.exit(campaign.main(sys.argv[1:]))
"""


def test_an_interrupt_between_a_record_and_its_count_still_counts_the_record(tmp_path):
    require("numpy")
    require("ray")
    out = tmp_path / "campaign"
    target = f"{sys.executable} {TARGETS / 'numpy_ops.py'}"
    code, _, err = finish(driver(out, target, 600, entry=("-c", INTERRUPTED_BETWEEN)))
    assert code == 130, err
    s = summary(out)
    assert len(shard_files(out)) == 2
    assert s["shards"]["done"] == 2 and s["programs"] == 200 and s["interrupted"]
    assert s["this_run"]["programs"] == 200


WRAPPER = """
import os, runpy, signal, sys
log = sys.argv[1]
with open(os.path.join(log, "starts"), "a") as f:
    f.write(f"{os.getpid()}\\n")
try:
    fd = os.open(os.path.join(log, "killed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
except FileExistsError:
    pass
else:
    # Kill the Ray worker running this shard: teil fuzz's parent.
    teil = os.getppid()
    with open(f"/proc/{teil}/stat") as f:
        worker = int(f.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{worker}/cmdline", "rb") as f:
        os.write(fd, f.read())
    os.close(fd)
    os.kill(worker, signal.SIGKILL)
sys.argv = [sys.argv[0]]
runpy.run_path(ADAPTER, run_name="__main__")
"""


def test_a_shard_whose_worker_dies_is_run_again_and_counted_once(tmp_path):
    require("numpy")
    require("ray")
    wrapper = tmp_path / "dying_ops.py"
    wrapper.write_text(f"ADAPTER = {str(TARGETS / 'numpy_ops.py')!r}\n" + WRAPPER)
    log = tmp_path / "log"
    log.mkdir()
    out = tmp_path / "campaign"
    code, stdout, err = finish(driver(out, f"{sys.executable} {wrapper} {log}", 400))
    assert code == 0, err
    assert b"ray" in (log / "killed").read_bytes()  # the killed process was a Ray worker
    starts = (log / "starts").read_text().split()
    assert len(starts) == 5  # four shards, one of them twice
    s = summary(out)
    assert s["programs"] == 400 and s["mismatches"] == 0 and s["complete"]
    assert [json.loads((out / "shards" / f).read_text())["programs"] for f in shard_files(out)] == [100] * 4
    assert stdout == "400 programs, 0 mismatches, 0 signatures, 4 of 4 shards\n"


def test_a_local_instance_listens_and_advertises_on_loopback_only():
    require("ray")
    probe = (
        "from teil.campaign import _ray_session\n"
        "with _ray_session(None, 1) as ray:\n"
        "    import ray._private.worker as w\n"
        "    print(ray.nodes()[0]['NodeManagerAddress'], w._global_node.gcs_address)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=120, env={k: v for k, v in os.environ.items()
                                              if not k.startswith("RAY_")})
    assert result.returncode == 0, result.stderr
    node, gcs = result.stdout.split()
    assert node == "127.0.0.1" and gcs.startswith("127.0.0.1:"), result.stdout


def test_bad_campaigns_are_refused_with_a_clear_error(tmp_path):
    from teil.campaign import CampaignError, run

    os.environ.setdefault("TEIL_BIN", teil_bin())
    target = f"{sys.executable} {TARGETS / 'numpy_ops.py'}"
    cases = [
        (dict(programs=0), "`programs` must be a whole number of at least 1"),
        (dict(programs=10, shard_size=0), "`shard_size` must be"),
        (dict(programs=10, fuzz_args=["--seed", "3"]), "`--seed` is set by the campaign"),
        (dict(programs=10, fuzz_args=["--out=x"]), "`--out` is set by the campaign"),
        (dict(programs=10, fuzz_args=["--bogus"]), "unexpected argument '--bogus'"),
        (dict(programs=10**8, shard_size=1), "more than 10000000"),
        # Issue 52, point 3: shards no node can take would wait forever.
        (dict(programs=10, num_cpus=0), "`num_cpus` must be a whole number of at least 1"),
        (dict(programs=10, num_cpus=2, cpus_per_shard=4),
         "each shard reserves 4 CPUs (`cpus_per_shard`), more than the local instance's 2"),
    ]
    for kwargs, message in cases:
        with pytest.raises(CampaignError, match=re.escape(message)) as e:
            run(str(tmp_path / "c"), target=target, **kwargs)
        assert isinstance(e.value, ValueError) and message in e.value.reason
    assert not (tmp_path / "c").exists()  # nothing written for a refused campaign
    # The same from the command line: an `error:` line and exit status 2, within seconds.
    for extra in [("--num-cpus", "0"), ("--cpus-per-shard", "4")]:
        start = time.monotonic()
        code, stdout, err = finish(driver(tmp_path / "c", target, 10, *extra), timeout=60)
        assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
        assert time.monotonic() - start < 30


def test_a_refused_campaign_releases_its_lock_and_names_a_damaged_record(tmp_path):
    # Issue 52, points 2 and 5: a refusal after the directory's lock was taken releases it,
    # even while the exception is kept alive (as IPython keeps the last one), so the next call
    # is refused for its own reason, not as "another campaign driver is running"; a
    # campaign.json that is not a JSON object is refused by name, never a traceback.
    from teil.campaign import CampaignError, run

    os.environ.setdefault("TEIL_BIN", teil_bin())
    target = f"{sys.executable} {TARGETS / 'numpy_ops.py'}"
    out = tmp_path / "c"
    out.mkdir()
    (out / "campaign.json").write_text('{"format": "another"}')
    kept = []
    for _ in range(2):
        with pytest.raises(CampaignError, match="holds another campaign") as info:
            run(str(out), programs=10, target=target)
        kept.append(info)
    for text in ["[1, 2]", '"abc"', "5"]:
        (out / "campaign.json").write_text(text)
        with pytest.raises(CampaignError, match="is not a campaign's record") as info:
            run(str(out), programs=10, target=target)
        kept.append(info)
        code, stdout, err = finish(driver(out, target, 10))
        assert code == 2 and stdout == "", err
        assert err.startswith("error: ") and "is not a campaign's record" in err, err
        assert "Traceback" not in err
    assert (out / "campaign.json").read_text() == "5"  # nothing recorded over it


def test_a_ledger_record_that_is_not_what_a_shard_writes_is_run_again_and_said_so(tmp_path):
    # Issue 52, points 1 and 2: tampered or damaged ledger records (negative counts, a bare
    # `{"shard": k}`, findings of the wrong type, a reproducer path out of the directory) are
    # never counted: each shard runs again, the driver says why, and the totals are the
    # campaign's own.
    require("numpy")
    require("ray")
    target = planted_max_adapter(tmp_path)
    out = tmp_path / "campaign"
    code, stdout, err = finish(driver(out, target, 400))
    assert code == 1, err
    first = summary(out)
    assert first["complete"] and first["programs"] == 400 and first["mismatches"] > 0
    ledger = out / "shards"
    good = json.loads((ledger / "00000000.json").read_text())
    damaged = {
        0: dict(good, programs=-1000, mismatches=-5),
        1: {"shard": 1},
        2: dict(json.loads((ledger / "00000002.json").read_text()), findings=5),
        3: dict(json.loads((ledger / "00000003.json").read_text()), target=[1]),
    }
    for k, record in damaged.items():
        (ledger / f"{k:08d}.json").write_text(json.dumps(record))
    code, stdout, err = finish(driver(out, target, 400))
    assert code == 1, err
    for k, why in [(0, "programs -1000, not 0 to the shard's 100"), (1, 'format null'),
                   (2, "findings 5, not a list"), (3, "target [1], not a string")]:
        assert f"shard {k}: {ledger / f'{k:08d}.json'} is not a record a shard writes ({why}" in err, err
    again = summary(out)
    assert again["programs"] == 400 and again["mismatches"] == first["mismatches"]
    assert again["this_run"]["programs"] == 400  # all four shards ran again
    assert json.loads((ledger / "00000000.json").read_text())["programs"] == 100


def test_file_system_refusals_are_an_error_line_not_a_traceback(tmp_path):
    # Issue 52, point 4: `--out` naming a regular file, or a campaign whose `shards` is a file.
    target = f"{sys.executable} {TARGETS / 'numpy_ops.py'}"
    plain = tmp_path / "plain"
    plain.write_text("keep me")
    code, stdout, err = finish(driver(plain, target, 10), timeout=60)
    assert code == 2 and err.startswith("error: ") and str(plain) in err, err
    assert "Traceback" not in err and plain.read_text() == "keep me"
    out = tmp_path / "campaign"
    out.mkdir()
    (out / "shards").write_text("not a directory")
    code, stdout, err = finish(driver(out, target, 10), timeout=60)
    assert code == 2 and err.startswith("error: ") and str(out / "shards") in err, err
    assert "Traceback" not in err and (out / "shards").read_text() == "not a directory"


def test_a_shards_own_record_passes_with_discarded_and_skipped_programs():
    # What `teil fuzz` writes for a shard of 100 programs, 10 of them discarded (too large for
    # the oracle) or skipped (a target that cannot take them), which `programs` does not count:
    # counted, not run again on every resume; counts beyond the shard's programs are not.
    from teil.campaign import SHARD_FORMAT, _record_problem

    config = {"programs": 250, "shard_size": 100}
    finding = {"index": 107, "check": "wrong value", "describe": "…", "signature": "0" * 16,
               "skeleton": "v0 = redmax(v1)\n", "statements": 1, "reproducer": "findings/" + "0" * 16}
    record = {"format": SHARD_FORMAT, "shard": 1, "programs": 90, "mismatches": 1,
              "discarded": 6, "skipped": 4, "unsupported": 3, "unjudged": 0, "elapsed_s": 1.5,
              "target": "numpy", "teil": "0.1.0", "findings": [finding]}
    assert _record_problem(record, 1, config) is None
    assert _record_problem(dict(record, shard=2, programs=50, discarded=0, skipped=0), 2, config) is None
    for bad, why in [
        (dict(record, programs=91), "add up to 101, more than the shard's 100"),
        (dict(record, programs=50), None),
        (dict(record, programs=True), "programs true, not 0 to the shard's 100"),
        (dict(record, elapsed_s=float("nan")), "elapsed_s NaN"),
        (dict(record, findings=[dict(finding, reproducer="../x")]), "not a path inside"),
        (dict(record, findings=[]), "not a list of one per mismatch"),
    ]:
        problem = _record_problem(bad, 1, config)
        assert (problem is None) if why is None else (why in (problem or "")), (bad, problem)


@pytest.mark.parametrize("bug", ["numpy max-from-zero", "max-from-zero", "exp-off", "min-drops-nan"])
def test_each_planted_bug_reads_as_at_most_two_signatures(tmp_path, bug):
    # Issue 51, point 6: shrunk from different programs in different shards, one bug reaches
    # one minimum, written one way (spec/fuzzing.md, "Shrinking and reproducers"), so a tester
    # triages one or two findings, not one per program. Every program found failing is shrunk.
    require("ray")
    if bug.startswith("numpy"):
        require("numpy")
        target = planted_max_adapter(tmp_path)
    else:
        target = f"{teil_bin()} ops-target --plant {bug}"
    out = tmp_path / "campaign"
    code, stdout, err = finish(driver(out, target, 600, "--profile", "compiler", shrink=100), timeout=600)
    assert code == 1, err
    s = summary(out)
    assert s["mismatches"] >= 3, s
    skeletons = {f["skeleton"]: f["count"] for f in s["findings"]}
    assert 1 <= len(skeletons) <= 2, skeletons
    assert sum(skeletons.values()) + s["unshrunk"] == s["mismatches"]
