"""Fuzzing campaigns on many machines: ``python -m teil.campaign`` and :func:`run`.

A campaign of ``programs`` programs with seed ``seed`` is cut into shards of ``shard_size``
programs; shard ``k`` is one ``teil fuzz --seed S --skip kK --programs K --summary-json ...``
(programs ``kK .. kK+K-1`` of the same campaign a single ``teil fuzz --seed S`` would run), run
as a `Ray <https://docs.ray.io>`_ task on whatever node of the cluster has a free CPU. Without
an address a local Ray instance is started, bound to the loopback address; with one the
driver joins that cluster. The campaign directory ``DIR`` holds (spec/fuzzing.md, *Campaigns
on a cluster*):

``campaign.json``
    the command line's campaign (programs, seed, shard size, target, ``teil fuzz`` flags),
    written once; the same command on the same ``DIR`` resumes it, another is refused;
``shards/NNNNNNNN.json``
    the ledger: one file per finished shard, written atomically (the shard's
    ``teil-fuzz-summary/1`` and where its reproducers went). A shard is counted from its file,
    once, whatever happened to the workers and drivers that ran it;
``findings/SIGNATURE/``
    one reproducer per finding signature (spec/fuzzing.md: the failing check and the shrunk
    program's skeleton), the first one gathered; its replay command rewritten to this place;
``summary.json``
    the figures of the whole campaign so far, rewritten atomically as shards finish.

Ray retries a shard whose worker dies (``retries`` times); a driver killed with SIGKILL loses
only the shards in flight, which the next run of the same command runs again. Ctrl-C (SIGINT)
or SIGTERM cancels the shards in flight and leaves ``DIR`` resumable.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from ._files import write_atomically as _write_atomically

try:
    from ._native import TeilError as _Base
except ImportError:  # loaded by path, without the compiled package
    _Base = ValueError

__all__ = ["CampaignError", "FORMAT", "SUMMARY_FORMAT", "run", "main"]

#: The format of ``campaign.json``.
FORMAT = "teil-campaign/1"
#: The format of ``summary.json``.
SUMMARY_FORMAT = "teil-campaign-summary/1"
#: The format of the per-shard summaries ``teil fuzz --summary-json`` writes.
SHARD_FORMAT = "teil-fuzz-summary/1"

#: ``teil fuzz`` flags the campaign sets itself, per shard; refused among the passed-on flags.
CONTROLLED = (
    "--seed", "--skip", "--programs", "--out", "--summary-json", "--time", "--replay",
    "--export", "--progress", "--profile-time", "--target",
)
#: The most shards one campaign may have (the ledger holds one file per shard).
MAX_SHARDS = 10_000_000
#: The most bytes of reproducers one shard sends back, and the most files of one reproducer.
MAX_SHARD_BYTES = 64 << 20
MAX_REPRODUCER_FILES = 1000
#: The most characters of a failed shard's standard error kept for its error message.
STDERR_TAIL = 4000


class CampaignError(_Base):
    """A campaign that cannot run as asked: ``reason`` says why. A ``ValueError`` (through
    :class:`teil.TeilError` when the compiled package is there)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


# ---------------------------------------------------------------------------------------------
# The shard: what a Ray worker runs.


def _find_teil(explicit: Optional[str]) -> str:
    """The ``teil`` binary: ``explicit``, else ``$TEIL_BIN``, else ``teil`` on ``PATH``."""
    path = explicit or os.environ.get("TEIL_BIN") or shutil.which("teil")
    if not path or not os.path.isfile(path):
        raise CampaignError(
            f"no `teil` binary on {socket.gethostname()}: put it on PATH or set TEIL_BIN"
            + (f" (looked for {path})" if path else "")
        )
    return path


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Has the kernel kill the shard's ``teil fuzz`` when the worker that started it dies, so a
    killed or cancelled worker leaves no campaign running on its node (Linux only)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _collect(path: str, budget: List[int]) -> Optional[Dict[str, bytes]]:
    """The files of the reproducer at ``path`` (a target's directory, or a ``repro_S.teil``
    file and its ``repro_S/`` directory of inputs), keyed by their path relative to the
    reproducer's parent. ``None`` when it would take more than what is left of ``budget``."""
    parent = os.path.dirname(path)
    roots = [path]
    if os.path.isfile(path) and path.endswith(".teil"):
        roots.append(path[: -len(".teil")])
    files: Dict[str, bytes] = {}
    for root in roots:
        walk = [(root, [], [os.path.basename(root)])] if os.path.isfile(root) else os.walk(root)
        for dirpath, _, names in walk:
            base = parent if os.path.isfile(root) else dirpath
            for name in names:
                full = os.path.join(base, name)
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                size = os.path.getsize(full)
                if size > budget[0] or len(files) >= MAX_REPRODUCER_FILES:
                    return None
                budget[0] -= size
                with open(full, "rb") as f:
                    files[os.path.relpath(full, parent)] = f.read()
    return files


def _run_shard(spec: Dict[str, Any]) -> Dict[str, Any]:
    """Runs one shard with ``teil fuzz`` and returns its summary, with the reproducers' files
    and the directory they were written to (``out``) added."""
    binary = _find_teil(spec.get("teil_bin"))
    cwd = spec["cwd"] if os.path.isdir(spec["cwd"]) else None
    with tempfile.TemporaryDirectory(prefix="teil-shard-") as tmp:
        out = os.path.join(tmp, "out")
        summary_path = os.path.join(tmp, "summary.json")
        cmd = [
            binary, "fuzz", "--seed", str(spec["seed"]), "--skip", str(spec["skip"]),
            "--programs", str(spec["programs"]), "--out", out, "--summary-json", summary_path,
        ]
        if spec["target"] is not None:
            cmd += ["--target", spec["target"]]
        cmd += spec["fuzz_args"]
        proc = subprocess.run(
            cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, preexec_fn=_die_with_parent,
        )
        if proc.returncode not in (0, 1) or not os.path.isfile(summary_path):
            tail = proc.stderr.decode("utf-8", "replace")[-STDERR_TAIL:]
            raise CampaignError(
                f"shard {spec['shard']} (`{shlex.join(cmd[1:])}`) exited with status "
                f"{proc.returncode} on {socket.gethostname()}:\n{tail}"
            )
        with open(summary_path, encoding="utf-8") as f:
            summary = json.load(f)
        budget = [MAX_SHARD_BYTES]
        for finding in summary.get("findings", []):
            path = finding.get("reproducer")
            finding["files"] = _collect(path, budget) if path else None
        summary["out"] = out
        summary["node"] = socket.gethostname()
        return summary


# ---------------------------------------------------------------------------------------------
# The campaign directory.


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _safe_relpath(rel: str) -> bool:
    parts = rel.split("/")
    return (
        not os.path.isabs(rel)
        and all(p not in ("", ".", "..") for p in parts)
        and "\\" not in rel
        and "\0" not in rel
    )


def _count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _record_problem(record: Any, k: int, config: Dict[str, Any]) -> Optional[str]:
    """Why ``record`` is not the ledger record shard ``k`` of the campaign ``config`` writes
    (`_record`: the shard's `teil fuzz --summary-json`, spec/fuzzing.md), or ``None``: every
    figure a whole number within the shard's programs, the findings one per mismatch, each of
    the types `teil fuzz` writes, a kept reproducer a path inside the campaign directory."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("format") != SHARD_FORMAT:
        return f"format {json.dumps(record.get('format'))}, not {json.dumps(SHARD_FORMAT)}"
    if not _count(record.get("shard")) or record["shard"] != k:
        return f"shard {json.dumps(record.get('shard'))} in the file of shard {k}"
    size = config["shard_size"]
    expected = min(size, config["programs"] - k * size)
    # `teil fuzz` counts a program it discards (too large for the oracle) or skips (a target
    # that cannot take it) apart from `programs`, and a program the oracle fails on only as a
    # mismatch: each count lies within the shard's programs, and those three do together.
    for key in ("programs", "mismatches", "unsupported", "skipped", "unjudged", "discarded"):
        required = key in ("programs", "mismatches")
        if (required or key in record) and not (_count(record.get(key)) and record[key] <= expected):
            return f"{key} {json.dumps(record.get(key))}, not 0 to the shard's {expected}"
    taken = record["programs"] + record.get("discarded", 0) + record.get("skipped", 0)
    if taken > expected:
        return f"programs, discarded and skipped add up to {taken}, more than the shard's {expected}"
    elapsed = record.get("elapsed_s", 0)
    if isinstance(elapsed, bool) or not isinstance(elapsed, (int, float)) or not 0 <= elapsed < float("inf"):
        return f"elapsed_s {json.dumps(elapsed)}, not a number of seconds"
    for key in ("target", "teil"):
        if record.get(key) is not None and not isinstance(record[key], str):
            return f"{key} {json.dumps(record[key])}, not a string"
    findings = record.get("findings")
    if not isinstance(findings, list) or len(findings) != record["mismatches"]:
        return f"findings {json.dumps(findings)[:60]}, not a list of one per mismatch"
    for f in findings:
        if not isinstance(f, dict):
            return f"a finding {json.dumps(f)[:60]}, not a JSON object"
        if f.get("index") is not None and not _count(f["index"]):
            return f"a finding's index {json.dumps(f['index'])}"
        for key in ("check", "describe", "signature", "skeleton"):
            if f.get(key) is not None and not isinstance(f[key], str):
                return f"a finding's {key} {json.dumps(f[key])[:60]}, not a string"
        if f.get("statements") is not None and not _count(f["statements"]):
            return f"a finding's statements {json.dumps(f['statements'])}"
        rel = f.get("reproducer")
        if rel is not None and not (isinstance(rel, str) and _safe_relpath(rel)):
            return f"a finding's reproducer {json.dumps(rel)[:60]}, not a path inside the directory"
    return None


class _Directory:
    """The campaign directory: its configuration, ledger, findings and summary."""

    def __init__(self, root: str, config: Dict[str, Any]):
        self.root = root
        self.config = config
        #: Ledger files that are not a shard's record, by shard: why ([`ledger`]).
        self.problems: Dict[int, str] = {}
        self.shards_dir = os.path.join(root, "shards")
        self.findings_dir = os.path.join(root, "findings")
        os.makedirs(self.shards_dir, exist_ok=True)
        os.makedirs(self.findings_dir, exist_ok=True)
        self._lock = open(os.path.join(root, ".lock"), "a+")
        try:
            import fcntl

            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise CampaignError(f"another campaign driver is running in {root}") from None
        try:
            self._check_config(config)
        except BaseException:
            # Released on every refusal: an exception kept alive (IPython keeps the last one)
            # holds this object, and with it the lock, until it is collected.
            self._lock.close()
            raise

    def _check_config(self, config: Dict[str, Any]) -> None:
        """Refuses a directory that holds another campaign; records ``config`` in a new one."""
        root = self.root
        path = os.path.join(root, "campaign.json")
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    recorded = json.load(f)
            except (OSError, ValueError) as e:
                raise CampaignError(f"{path} cannot be read: {e}") from None
            if not isinstance(recorded, dict):
                raise CampaignError(
                    f"{path} is not a campaign's record (a JSON object), but "
                    f"{json.dumps(recorded)[:80]}; give a new directory"
                )
            if recorded != config:
                changed = sorted(
                    k for k in set(recorded) | set(config) if recorded.get(k) != config.get(k)
                )
                details = "; ".join(
                    f"{k}: {json.dumps(recorded.get(k))} there, {json.dumps(config.get(k))} now"
                    for k in changed
                )
                raise CampaignError(
                    f"{root} holds another campaign ({details}); run the same command to resume "
                    "it, or give a new directory"
                )
        else:
            _write_atomically(path, _json_bytes(config))

    def close(self) -> None:
        self._lock.close()

    def shard_path(self, k: int) -> str:
        return os.path.join(self.shards_dir, f"{k:08d}.json")

    def ledger(self, total: int) -> Dict[int, Dict[str, Any]]:
        """The finished shards, by index. A file that is not exactly a record its shard writes
        ([`_record_problem`]: a damaged or tampered file; none should be, they are written
        atomically) is not counted: its shard runs again, and [`problems`] says why."""
        done: Dict[int, Dict[str, Any]] = {}
        self.problems = {}
        for name in os.listdir(self.shards_dir):
            stem, ext = os.path.splitext(name)
            if ext != ".json" or not stem.isdigit() or int(stem) >= total:
                continue
            k = int(stem)
            try:
                with open(os.path.join(self.shards_dir, name), encoding="utf-8") as f:
                    record = json.load(f)
            except (OSError, ValueError) as e:
                self.problems[k] = f"cannot be read as JSON ({e})"
                continue
            problem = _record_problem(record, k, self.config)
            if problem is None:
                done[k] = record
            else:
                self.problems[k] = problem
        return done

    def gather(self, signature: str, finding: Dict[str, Any], old_root: str) -> Optional[str]:
        """The reproducer kept for ``signature``, as a path relative to the campaign directory:
        the one in ``findings/SIGNATURE/`` if there is one, else ``finding``'s, moved there
        (its replay command rewritten). ``None`` when there is none to keep."""
        if not signature or not all(c in "0123456789abcdef" for c in signature):
            return None
        dest = os.path.join(self.findings_dir, signature)
        if os.path.isdir(dest):
            return self._kept(dest)
        files = finding.get("files")
        if not files or not all(_safe_relpath(rel) for rel in files):
            return None
        old = finding["reproducer"]
        new_path = os.path.join(dest, os.path.relpath(old, old_root))
        staging = tempfile.mkdtemp(prefix=".tmp-", dir=self.findings_dir)
        try:
            for rel, data in files.items():
                full = os.path.join(staging, rel)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                if rel.endswith((".teil", ".txt")):
                    # The replay command names where the shard wrote the reproducer.
                    data = data.replace(old.encode(), shlex.quote(new_path).encode())
                with open(full, "wb") as f:
                    f.write(data)
            os.rename(staging, dest)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            return self._kept(dest) if os.path.isdir(dest) else None
        return os.path.relpath(new_path, self.root)

    def _kept(self, dest: str) -> Optional[str]:
        """The reproducer in ``findings/SIGNATURE/``: a ``repro_S.teil`` file (a self-checking
        campaign's) or a ``target_S`` directory."""
        names = sorted(os.listdir(dest))
        chosen = [n for n in names if n.endswith(".teil")] or [
            n for n in names if os.path.isdir(os.path.join(dest, n))
        ]
        return os.path.relpath(os.path.join(dest, chosen[0]), self.root) if chosen else None


# ---------------------------------------------------------------------------------------------
# The figures.


class _Tally:
    """The campaign's figures, from the ledger: each shard counted once."""

    SUMS = ("programs", "mismatches", "unsupported", "skipped", "unjudged", "discarded", "elapsed_s")

    def __init__(self, root: str, config: Dict[str, Any], total: int):
        self.root = root
        self.config = config
        self.total = total
        self.shards: Dict[int, Dict[str, Any]] = {}
        self.sums = {k: 0 for k in self.SUMS}
        self.findings: Dict[str, Dict[str, Any]] = {}
        self.unshrunk = 0
        self.targets: set = set()
        self.versions: set = set()
        self.started = time.monotonic()
        self.run_programs = 0

    def add(self, k: int, record: Dict[str, Any], this_run: bool = False) -> None:
        if k in self.shards:
            return
        self.shards[k] = record
        for key in self.SUMS:
            value = record.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.sums[key] += value
        if this_run:
            self.run_programs += record.get("programs", 0)
        if record.get("target"):
            self.targets.add(record["target"])
        if record.get("teil"):
            self.versions.add(record["teil"])
        for f in record.get("findings", []):
            sig = f.get("signature")
            if not sig:
                self.unshrunk += 1
                continue
            entry = self.findings.setdefault(sig, {
                "signature": sig, "count": 0, "check": f.get("check"),
                "skeleton": f.get("skeleton"), "reproducer": None,
                "first": {"shard": k, "index": f.get("index")},
            })
            entry["count"] += 1
            if (k, f.get("index") or 0) < (entry["first"]["shard"], entry["first"]["index"] or 0):
                entry["first"] = {"shard": k, "index": f.get("index")}
            if f.get("reproducer") and entry["reproducer"] is None:
                entry["reproducer"] = f["reproducer"]

    def recount(self, ledger: Dict[int, Dict[str, Any]], resumed: set) -> None:
        """Takes the figures again from ``ledger``, the truth: an interrupt can fall between a
        record reaching the ledger and its count (or halfway through a count)."""
        started = self.started
        self.__init__(self.root, self.config, self.total)
        self.started = started
        for k, record in sorted(ledger.items()):
            self.add(k, record, this_run=k not in resumed)

    def summary(self, interrupted: bool = False) -> Dict[str, Any]:
        seconds = time.monotonic() - self.started
        findings = sorted(self.findings.values(), key=lambda e: (-e["count"], e["signature"]))
        target = self.config["target"]
        for e in findings:
            rel = e["reproducer"]
            if rel is None:
                e["replay"] = None
                continue
            replay = ["teil", "fuzz"]
            if target is not None:
                replay += ["--target", target]
            e["replay"] = shlex.join(replay + ["--replay", os.path.join(self.root, rel)])
        return {
            "format": SUMMARY_FORMAT,
            "programs": self.sums["programs"],
            "mismatches": self.sums["mismatches"],
            "shards": {"done": len(self.shards), "total": self.total,
                       "size": self.config["shard_size"]},
            "complete": len(self.shards) == self.total,
            "interrupted": interrupted,
            "findings": findings,
            "unshrunk": self.unshrunk,
            "unsupported": self.sums["unsupported"],
            "skipped": self.sums["skipped"],
            "unjudged": self.sums["unjudged"],
            "discarded": self.sums["discarded"],
            "shard_seconds": round(self.sums["elapsed_s"], 3),
            "this_run": {
                "programs": self.run_programs,
                "seconds": round(seconds, 3),
                "programs_per_s": round(self.run_programs / seconds, 3) if seconds > 0 else 0.0,
            },
            "targets": sorted(self.targets),
            "teil": sorted(self.versions),
            "campaign": self.config,
        }

    def line(self) -> str:
        s = self.summary()
        return (
            f"{s['shards']['done']}/{s['shards']['total']} shards, {s['programs']} programs, "
            f"{s['mismatches']} mismatches, {len(self.findings)} signatures, "
            f"{s['this_run']['programs_per_s']:.1f} programs/s"
        )


class _Progress:
    """A progress line on a terminal, redrawn; elsewhere a log line every ``every`` seconds."""

    def __init__(self, tally: _Tally, every: Optional[float], stream=None):
        self.tally = tally
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every = every
        self.last = time.monotonic()

    def update(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r\x1b[K" + self.tally.line())
            self.stream.flush()
        elif self.every is not None and (force or now - self.last >= self.every):
            self.stream.write("progress: " + self.tally.line() + "\n")
            self.stream.flush()
            self.last = now

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# ---------------------------------------------------------------------------------------------
# The driver.


def _check_fuzz_args(fuzz_args: Sequence[str]) -> List[str]:
    args = [str(a) for a in fuzz_args]
    for a in args:
        flag = a.split("=", 1)[0]
        if flag in CONTROLLED:
            raise CampaignError(
                f"`{flag}` is set by the campaign for each shard; give the campaign's own "
                "--programs, --seed, --out or --target instead"
            )
    return args


def _preflight(teil_bin: str, target: Optional[str], fuzz_args: List[str]) -> None:
    """Runs ``teil fuzz`` with the campaign's flags on no program (on one without a target), so
    that a flag it refuses is one clear error before any shard runs."""
    with tempfile.TemporaryDirectory(prefix="teil-campaign-") as tmp:
        # A campaign against a target accepts no program; a self-checking one needs one.
        cmd = [teil_bin, "fuzz", "--programs", "0" if target is not None else "1",
               "--out", os.path.join(tmp, "out"),
               "--summary-json", os.path.join(tmp, "s.json")]
        if target is not None:
            cmd += ["--target", target]
        cmd += fuzz_args
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise CampaignError(f"`{shlex.join(cmd)}` did not finish in 120 s") from None
        if proc.returncode not in (0, 1):
            raise CampaignError(
                "teil fuzz refuses the campaign's flags:\n" + proc.stderr[-STDERR_TAIL:].strip()
            )


@contextlib.contextmanager
def _ray_session(address: Optional[str], num_cpus: Optional[int]):
    """Ray, started locally on the loopback address (no ``address``) or joined to a cluster;
    shut down at the end unless the caller had started it."""
    if address is None:
        # Ray advertises the machine's network address unless told it is not clustering
        # (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read when `ray` is first imported): then every
        # component listens on and talks to 127.0.0.1 only.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    # Ray reports usage statistics to its authors over the network unless this is 0.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise CampaignError(
            "teil.campaign runs on Ray, which is not installed: pip install 'teil[campaign]'"
        ) from None
    owned = not ray.is_initialized()
    if owned:
        ray.init(
            address=address, num_cpus=num_cpus if address is None else None,
            include_dashboard=False, log_to_driver=False, logging_level="WARNING",
        )
    try:
        yield ray
    finally:
        if owned:
            ray.shutdown()


def run(
    out: str,
    *,
    programs: int,
    seed: int = 0,
    shard_size: int = 100,
    target: Optional[str] = None,
    fuzz_args: Iterable[str] = (),
    address: Optional[str] = None,
    num_cpus: Optional[int] = None,
    cpus_per_shard: int = 1,
    retries: int = 3,
    teil_bin: Optional[str] = None,
    progress: Optional[float] = 30.0,
    stream=None,
) -> Dict[str, Any]:
    """Runs (or resumes) the campaign in directory ``out`` and returns its summary (the
    contents of ``out/summary.json``).

    ``fuzz_args`` are more ``teil fuzz`` flags, passed to every shard (``--profile compiler``,
    ``--target-timeout 60``, ``--shrink 1``, ...). ``address`` joins a Ray cluster
    (``"auto"``, ``"HOST:PORT"``); without it a local instance with ``num_cpus`` CPUs is
    started. Each shard reserves ``cpus_per_shard`` CPUs and runs ``teil fuzz --jobs`` with as
    many threads, unless ``fuzz_args`` sets ``--jobs``. A shard whose worker dies is retried
    ``retries`` times. ``progress`` is the interval of log lines where ``stream`` (standard
    error) is not a terminal, ``None`` for none.

    Raises :class:`CampaignError` for a campaign that cannot run (bad arguments, another
    campaign in ``out``, a shard that ``teil fuzz`` refuses); ``KeyboardInterrupt`` after
    Ctrl-C, once the shards in flight are cancelled and ``out`` is left resumable.
    """
    for name, value, low in (("programs", programs, 1), ("shard_size", shard_size, 1),
                             ("cpus_per_shard", cpus_per_shard, 1), ("retries", retries, 0),
                             ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise CampaignError(f"`{name}` must be a whole number of at least {low}, not {value!r}")
    if seed >= 1 << 64 or programs >= 1 << 63:
        raise CampaignError("`seed` must fit in 64 bits and `programs` in 63")
    if num_cpus is not None and (
        isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1
    ):
        raise CampaignError(f"`num_cpus` must be a whole number of at least 1, not {num_cpus!r}")
    # A shard no node can take waits forever (Ray calls it infeasible): refused before anything
    # starts where the local instance's CPUs are known, and once joined on a cluster (`_drive`).
    local_cpus = num_cpus if num_cpus is not None else os.cpu_count()
    if address is None and local_cpus is not None and cpus_per_shard > local_cpus:
        raise CampaignError(
            f"each shard reserves {cpus_per_shard} CPUs (`cpus_per_shard`), more than the local "
            f"instance's {local_cpus}: no shard could ever start"
        )
    total = -(-programs // shard_size)
    if total > MAX_SHARDS:
        raise CampaignError(
            f"{total} shards are more than {MAX_SHARDS}: make `shard_size` at least "
            f"{-(-programs // MAX_SHARDS)}"
        )
    args = _check_fuzz_args(fuzz_args)
    if not any(a == "--jobs" or a.startswith("--jobs=") for a in args):
        args += ["--jobs", str(cpus_per_shard)]
    config = {
        "format": FORMAT, "programs": programs, "seed": seed, "shard_size": shard_size,
        "target": target, "fuzz_args": args,
    }
    local_bin = teil_bin or os.environ.get("TEIL_BIN") or shutil.which("teil")
    if local_bin and os.path.isfile(local_bin):
        _preflight(local_bin, target, args)
    elif address is None:
        _find_teil(teil_bin)  # a local campaign needs it here: say so now
    os.makedirs(out, exist_ok=True)
    directory = _Directory(os.path.abspath(out), config)
    try:
        return _drive(directory, config, total, address, num_cpus, cpus_per_shard, retries,
                      teil_bin, progress, stream)
    finally:
        directory.close()


def _drive(directory: _Directory, config: Dict[str, Any], total: int, address, num_cpus,
           cpus_per_shard, retries, teil_bin, progress, stream) -> Dict[str, Any]:
    tally = _Tally(directory.root, config, total)
    for k, record in sorted(directory.ledger(total).items()):
        tally.add(k, record)
    for k, problem in sorted(directory.problems.items()):
        print(f"shard {k}: {directory.shard_path(k)} is not a record a shard writes "
              f"({problem}); running the shard again", file=stream or sys.stderr)
    resumed = set(tally.shards)
    summary_path = os.path.join(directory.root, "summary.json")
    pending = [k for k in range(total) if k not in tally.shards]
    bar = _Progress(tally, progress, stream)
    written = [0.0]

    def write_summary(interrupted: bool = False, force: bool = False) -> Dict[str, Any]:
        summary = tally.summary(interrupted)
        now = time.monotonic()
        if force or now - written[0] >= 1.0:
            _write_atomically(summary_path, _json_bytes(summary))
            written[0] = now
        return summary

    if not pending:
        return write_summary(force=True)
    write_summary(force=True)
    with _ray_session(address, num_cpus) as ray:
        largest = max((n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("Alive")),
                      default=0)
        if largest < cpus_per_shard:
            raise CampaignError(
                f"each shard reserves {cpus_per_shard} CPUs (`--cpus-per-shard`), and no node of "
                f"the cluster has that many (the largest has {largest:g}): no shard could ever start"
            )
        task = ray.remote(num_cpus=cpus_per_shard, max_retries=retries)(_run_shard)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        window = max(2, 2 * cpus // cpus_per_shard)
        in_flight: Dict[Any, int] = {}
        cwd = os.getcwd()

        def submit() -> None:
            while pending and len(in_flight) < window:
                k = pending.pop(0)
                skip = k * config["shard_size"]
                spec = {
                    "shard": k, "seed": config["seed"], "skip": skip,
                    "programs": min(config["shard_size"], config["programs"] - skip),
                    "target": config["target"], "fuzz_args": config["fuzz_args"],
                    "teil_bin": teil_bin, "cwd": cwd,
                }
                in_flight[task.remote(spec)] = k

        try:
            submit()
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                for ref in ready:
                    k = in_flight.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as e:
                        cause = e.cause if isinstance(e.cause, CampaignError) else None
                        raise CampaignError(
                            cause.reason if cause else f"shard {k} failed: {e}"
                        ) from None
                    _record(directory, tally, k, result)
                    write_summary()
                    bar.update(force=False)
                submit()
                if not ready:
                    bar.update()
        except BaseException as e:
            # The summary first: the directory says what happened even if cancelling fails.
            bar.finish()
            with contextlib.suppress(OSError):
                tally.recount(directory.ledger(total), resumed)
            write_summary(interrupted=isinstance(e, KeyboardInterrupt), force=True)
            # Only shards still running: cancelling one whose result is arriving can abort
            # Ray 2.60's driver ("Tried to complete task that was not pending").
            with contextlib.suppress(Exception):
                refs = list(in_flight)
                _, running = ray.wait(refs, num_returns=len(refs), timeout=0)
                for ref in running:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref, force=True)
            raise
    bar.update(force=True)
    bar.finish()
    return write_summary(force=True)


def _record(directory: _Directory, tally: _Tally, k: int, result: Dict[str, Any]) -> None:
    """Gathers a finished shard's reproducers, then records the shard in the ledger: a driver
    killed between the two runs the shard again and finds the reproducer already there."""
    if result.get("format") != SHARD_FORMAT:
        raise CampaignError(f"shard {k}: `teil fuzz` wrote a summary of another format")
    findings = []
    for f in result.get("findings", []):
        entry = {key: f.get(key) for key in ("index", "check", "describe", "signature",
                                             "skeleton", "statements")}
        entry["reproducer"] = directory.gather(f.get("signature"), f, result["out"])
        findings.append(entry)
    record = {key: value for key, value in result.items()
              if key not in ("findings", "out")}
    record["shard"] = k
    record["findings"] = findings
    _write_atomically(directory.shard_path(k), _json_bytes(record))
    tally.add(k, record, this_run=True)


# ---------------------------------------------------------------------------------------------
# The command line.


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m teil.campaign",
        description="Run a `teil fuzz` campaign in shards on a Ray cluster (or a local Ray "
        "instance), resumably, gathering the findings of all shards into one directory. "
        "Flags it does not know are passed on to every `teil fuzz`.",
    )
    parser.add_argument("--programs", type=int, required=True, metavar="N")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.add_argument("--shard-size", type=int, default=100, metavar="K",
                        help="programs per shard (default 100)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the campaign directory: ledger, findings, summary.json")
    parser.add_argument("--address", metavar="ADDR",
                        help="join this Ray cluster (`auto`, HOST:PORT); default: a local instance")
    parser.add_argument("--target", metavar="CMD", help="as `teil fuzz --target`")
    parser.add_argument("--num-cpus", type=int, metavar="N",
                        help="CPUs of the local Ray instance (default: all)")
    parser.add_argument("--cpus-per-shard", type=int, default=1, metavar="C")
    parser.add_argument("--retries", type=int, default=3, metavar="R",
                        help="times a shard whose worker died is run again (default 3)")
    parser.add_argument("--progress", type=float, default=30.0, metavar="SECONDS",
                        help="where standard error is not a terminal, a log line this often")
    args, fuzz_args = parser.parse_known_args(argv)

    def stop(signum, frame):  # SIGTERM stops the campaign as Ctrl-C does
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    # Ray prints what its processes report (a worker that died, a retried task) on the
    # driver's standard output: keep standard output for the summary line.
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        summary = run(
            args.out, programs=args.programs, seed=args.seed, shard_size=args.shard_size,
            target=args.target, fuzz_args=fuzz_args, address=args.address,
            num_cpus=args.num_cpus, cpus_per_shard=args.cpus_per_shard, retries=args.retries,
            progress=args.progress,
        )
    except CampaignError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # The file system refused (`--out` a regular file, `shards/` a file, a read-only or
        # full disk): its message names the path. Every record already in the ledger stays,
        # written atomically.
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: {args.out} is left resumable; run the same command again",
              file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        sys.stdout = stdout
    for f in summary["findings"]:
        print(f"finding {f['signature']} ({f['check']}), found {f['count']} time(s): "
              f"{(f['skeleton'] or '').strip()}", file=sys.stderr)
        if f["replay"]:
            print(f"  reproduce: {f['replay']}", file=sys.stderr)
    print(f"{summary['programs']} programs, {summary['mismatches']} mismatches, "
          f"{len(summary['findings'])} signatures, {summary['shards']['done']} of "
          f"{summary['shards']['total']} shards")
    return 1 if summary["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
