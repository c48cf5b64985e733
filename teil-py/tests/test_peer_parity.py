"""Parity with the peers' own einsum test suites (spec/frontends.md, "Parity with NumPy and
opt_einsum").

NumPy's and opt_einsum's wheels ship their tests. The session fixture runs those test files
under a plugin (``peers/record_plugin.py``) that records every ``numpy.einsum`` and
``opt_einsum.contract`` call by form and shapes, and each test below replays every recorded call
through one of TeIL's entry points: ``teil.einsum_shape``, ``teil.einsum`` on each backend,
``teil.einsum_program``, the ``teil einsum`` command and ``teil.guarded``.

The truth for each call is the library's own answer, asked again here on operands of the
recorded shapes holding small integers as float64 (so every value is exact and the comparison
is bit for bit). An entry point must give that answer: the same shape and the same values for
a call the library accepts, a ``ShapeError`` for a call it rejects. The only differences
allowed are documented ones, each counted in the report that ends the pytest run:

- *extension*: TeIL reads non-ASCII letters as labels, as opt_einsum does; a NumPy call that
  NumPy rejects for such a label and opt_einsum accepts gets opt_einsum's answer;
- *no program*: an operand with an extent of 0 has no TeIL program, so ``einsum_program`` and
  ``teil einsum`` give NumPy's result shape without one (E0102 with the shape in a note, and a
  comment, respectively).

Anything else (a wrong shape or value, an invalid call accepted, a valid one declined, any
exception other than ``ShapeError``) fails the test with the calls listed.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import hashlib
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from typing import Any, Callable, Optional

import numpy as np
import opt_einsum
import pytest

import teil
from conftest import PARITY_REPORT

PEERS = pathlib.Path(__file__).resolve().parent / "peers"

# The peers' test files that make einsum calls, relative to each installed package.
PEER_TESTS = {
    "numpy": ["_core/tests/test_einsum.py"],
    "opt_einsum": [
        "tests/test_contract.py",
        "tests/test_edge_cases.py",
        "tests/test_input.py",
        "tests/test_parser.py",
        "tests/test_paths.py",
        "tests/test_sharing.py",
    ],
}

# A recording smaller than this means the recorder or the peers' suites broke, not that TeIL
# agrees (about 1,800 distinct calls with numpy 2.4.6 and opt_einsum 3.4.0).
MIN_CALLS = 1200

LIBRARIES: dict[str, Callable[..., Any]] = {"numpy": np.einsum, "opt_einsum": opt_einsum.contract}


@dataclasses.dataclass(frozen=True)
class Call:
    """One recorded call: an equation and shapes, or the interleaved form."""

    library: str
    equation: Optional[str]
    shapes: tuple[tuple[int, ...], ...]
    # The interleaved form: operands' shapes and subscript lists in call order, each item
    # ("shape", dims) or ("sub", labels).
    items: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def from_json(c: dict[str, Any]) -> "Call":
        if c["form"] == "equation":
            return Call(c["library"], c["equation"], tuple(tuple(s) for s in c["shapes"]))
        items = []
        for item in c["items"]:
            if "shape" in item:
                items.append(("shape", tuple(item["shape"])))
            else:
                items.append(("sub", tuple(_label(x) for x in item["sub"])))
        shapes = tuple(dims for kind, dims in items if kind == "shape")
        return Call(c["library"], None, shapes, tuple(items))

    def describe(self) -> str:
        if self.equation is not None:
            return f"{self.library}: {self.equation!r} on {', '.join(map(str, self.shapes))}"
        return f"{self.library}: interleaved {[v for _, v in self.items]}"

    def operands(self) -> list[np.ndarray]:
        """Small integers as float64, the same for every entry point (seeded by the call)."""
        seed = int.from_bytes(hashlib.sha256(self.describe().encode()).digest()[:8], "little")
        rng = np.random.default_rng(seed)
        return [rng.integers(-3, 4, size=s).astype(np.float64) for s in self.shapes]

    def args(self, operands: list[np.ndarray]) -> list[Any]:
        if self.equation is not None:
            return [self.equation, *operands]
        it = iter(operands)
        return [next(it) if kind == "shape" else list(v) for kind, v in self.items]


def _label(x: Any) -> Any:
    if x == "...":
        return Ellipsis
    return x["int"] if "int" in x else x["str"]


@dataclasses.dataclass
class Truth:
    """The library's answer: a result, or the exception it raised."""

    result: Optional[np.ndarray]
    error: Optional[str]


def ask(call: Call, library: Optional[str] = None) -> Truth:
    fn = LIBRARIES[library or call.library]
    try:
        return Truth(np.asarray(fn(*call.args(call.operands()))), None)
    except Exception as e:  # the library's rejection, whatever its type
        return Truth(None, type(e).__name__)


def record(tmp: pathlib.Path) -> tuple[list[Call], dict[str, int]]:
    """Runs the peers' test files under the recording plugin; returns the distinct calls."""
    calls: dict[Call, None] = {}
    unrecordable: collections.Counter[str] = collections.Counter()
    for library, files in PEER_TESTS.items():
        spec = importlib.util.find_spec(library)
        assert spec is not None and spec.submodule_search_locations
        root = pathlib.Path(list(spec.submodule_search_locations)[0])
        # A copy outside the package, so that the package's conftest.py (NumPy's needs
        # hypothesis) is not loaded: the test files themselves need only pytest and numpy.
        here = tmp / library
        here.mkdir()
        for name in files:
            shutil.copy(root / name, here / pathlib.Path(name).name)
        out = tmp / f"{library}.json"
        env = {**os.environ, "PYTHONPATH": str(PEERS), "TEIL_PEERS_OUT": str(out)}
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "record_plugin", "-p", "no:cacheprovider",
             "-x", str(here)],
            cwd=tmp, env=env, capture_output=True, text=True, timeout=600,
        )
        # The wrapper must be transparent: the peer's suite passes under it.
        assert run.returncode == 0, f"{library}'s tests failed under the recorder:\n{run.stdout[-3000:]}"
        recorded = json.loads(out.read_text(encoding="utf-8"))
        for c in recorded["calls"]:
            calls.setdefault(Call.from_json(c), None)
        unrecordable.update(recorded["unrecordable"])
    return list(calls), dict(unrecordable)


@pytest.fixture(scope="session")
def peer_calls(tmp_path_factory, request) -> list[tuple[Call, Truth]]:
    calls, unrecordable = record(tmp_path_factory.mktemp("peers"))
    assert len(calls) >= MIN_CALLS, f"only {len(calls)} calls recorded"
    kinds = collections.Counter((c.library, c.equation is None) for c in calls)
    assert all(kinds[(lib, interleaved)] > 0 for lib in LIBRARIES for interleaved in (False, True)), kinds
    forms = ", ".join(
        f"{n} {lib} {'interleaved' if interleaved else 'equation'}"
        for (lib, interleaved), n in sorted(kinds.items())
    )
    skipped = "; ".join(f"{n} {why}" for why, n in sorted(unrecordable.items()))
    request.config.stash.setdefault(PARITY_REPORT, {})["recorded"] = (
        f"{len(calls)} distinct calls ({forms}); not recordable: {skipped or 'none'}"
    )
    return [(c, ask(c)) for c in calls]


class Tally:
    """Outcomes of one entry point over every call, and the calls that went wrong."""

    def __init__(self, name: str):
        self.name = name
        self.counts: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []

    def ok(self, kind: str) -> None:
        self.counts[kind] += 1

    def fail(self, kind: str, call: Call, detail: str) -> None:
        self.counts[kind] += 1
        self.failures.append(f"{kind}: {call.describe()}: {detail}")

    def finish(self, config: pytest.Config) -> None:
        config.stash.setdefault(PARITY_REPORT, {})[self.name] = ", ".join(
            f"{n} {kind}" for kind, n in sorted(self.counts.items())
        )
        assert not self.failures, f"{self.name}: {len(self.failures)} disagreements:\n" + "\n".join(
            self.failures[:40]
        )


def expected(call: Call, truth: Truth) -> tuple[Truth, str]:
    """The answer a direct entry point (equation and shapes) must give, and its category: the
    library's, except that TeIL reads non-ASCII labels as opt_einsum does."""
    if truth.error is not None and call.library == "numpy" and not call.equation.isascii():
        alternative = ask(call, "opt_einsum")
        if alternative.error is None:
            return alternative, "extension (non-ASCII labels, as opt_einsum)"
    return truth, "agree" if truth.error is None else "both reject"


def string_calls(peer_calls):
    return [(c, t) for c, t in peer_calls if c.equation is not None]


def check_shape_error(tally: Tally, call: Call, f: Callable[[], Any]) -> None:
    try:
        f()
    except teil.ShapeError as e:
        assert e.diagnostics and all(re.fullmatch(r"E0\d{3}", d.code) for d in e.diagnostics)
        tally.ok("both reject")
    except Exception as e:
        tally.fail("crash", call, f"{type(e).__name__}: {e}")
    else:
        tally.fail("accepts invalid", call, "no error")


def test_einsum_shape(peer_calls, request):
    tally = Tally("teil.einsum_shape")
    for call, truth in string_calls(peer_calls):
        want, kind = expected(call, truth)
        if want.error is not None:
            check_shape_error(tally, call, lambda: teil.einsum_shape(call.equation, *call.shapes))
            continue
        try:
            got = teil.einsum_shape(call.equation, *call.shapes)
        except Exception as e:
            tally.fail("declined", call, f"{type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        if got == want.result.shape:
            tally.ok(kind)
        else:
            tally.fail("wrong shape", call, f"{got} instead of {want.result.shape}")
    tally.finish(request.config)


@pytest.mark.parametrize("backend", ["fast", "oracle", "c"])
def test_einsum_values(peer_calls, backend, request):
    """Bit for bit: small integers keep every sum and product exact, in any order. The C
    backend compiles one kernel per call, on every core (the compiler runs outside the GIL)."""
    tally = Tally(f"teil.einsum(backend={backend!r})")

    def compute(case):
        call, truth = case
        operands = call.operands()
        try:
            return teil.einsum(call.equation, *operands, backend=backend)
        except Exception as e:
            return e

    cases = string_calls(peer_calls)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        answers = list(pool.map(compute, cases))
    for (call, truth), got in zip(cases, answers):
        want, kind = expected(call, truth)
        if want.error is not None:
            def again(got=got):
                if isinstance(got, Exception):
                    raise got
            check_shape_error(tally, call, again)
        elif isinstance(got, Exception):
            tally.fail("declined", call, f"{type(got).__name__}: {str(got).splitlines()[0]}")
        elif got.shape != want.result.shape:
            tally.fail("wrong shape", call, f"{got.shape} instead of {want.result.shape}")
        elif not np.array_equal(got, want.result.astype(np.float64)):
            tally.fail("wrong value", call, f"{got.ravel()[:6]} instead of {want.result.ravel()[:6]}")
        else:
            tally.ok(kind)
    tally.finish(request.config)


OUTPUT_DECL = re.compile(r"^output alloc out : \[([0-9, ]*)\]$", re.M)
EMPTY_COMMENT = re.compile(r"^// the result has shape \[([0-9, ]*)\] and holds only zeros$", re.M)


def dims(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(",") if n.strip())


def test_einsum_program(peer_calls, request):
    tally = Tally("teil.einsum_program")
    for call, truth in string_calls(peer_calls):
        want, kind = expected(call, truth)
        if want.error is not None:
            check_shape_error(tally, call, lambda: teil.einsum_program(call.equation, *call.shapes))
            continue
        try:
            program = teil.einsum_program(call.equation, *call.shapes)
        except teil.ShapeError as e:
            [d] = e.diagnostics if len(e.diagnostics) == 1 else [None]
            note = f"the result has shape [{', '.join(map(str, want.result.shape))}] and holds only zeros"
            if d is not None and d.code == "E0102" and any(0 in s for s in call.shapes) and any(note in n for n in d.notes):
                tally.ok("no program (extent 0)")
            else:
                tally.fail("declined", call, f"{d.code if d else '?'}: {str(e).splitlines()[0]}")
            continue
        except Exception as e:
            tally.fail("crash", call, f"{type(e).__name__}: {e}")
            continue
        # The program is well typed, and its output has the library's shape.
        checked = teil.Program(program)
        m = OUTPUT_DECL.search(program)
        if m and dims(m.group(1)) == want.result.shape and checked.outputs == ["out"]:
            tally.ok(kind)
        else:
            tally.fail("wrong shape", call, program)
    tally.finish(request.config)


def test_command(peer_calls, request):
    """`teil einsum`, one process per call."""
    teil_bin = os.environ.get("TEIL_BIN") or shutil.which("teil")
    if teil_bin is None:
        pytest.fail("the `teil` binary: set TEIL_BIN (./test does)")
    tally = Tally("teil einsum")
    for call, truth in string_calls(peer_calls):
        want, kind = expected(call, truth)
        shapes = json.dumps([list(s) for s in call.shapes])
        run = subprocess.run(
            [teil_bin, "einsum", "--format", "json", "--shapes", shapes, "--", call.equation],
            capture_output=True, text=True, timeout=60,
        )
        if want.error is not None:
            codes = [json.loads(line)["code"] for line in run.stdout.splitlines() if line.startswith("{")]
            if run.returncode == 1 and codes and all(re.fullmatch(r"E0\d{3}", c) for c in codes):
                tally.ok("both reject")
            else:
                tally.fail("accepts invalid" if run.returncode == 0 else "crash", call,
                           f"exit {run.returncode}: {run.stderr[-300:]}")
            continue
        if run.returncode != 0:
            tally.fail("declined", call, f"exit {run.returncode}: {(run.stdout + run.stderr)[-300:]}")
            continue
        shown = OUTPUT_DECL.search(run.stdout) or EMPTY_COMMENT.search(run.stdout)
        if shown and dims(shown.group(1)) == want.result.shape:
            tally.ok("no program (extent 0)" if shown.re is EMPTY_COMMENT else kind)
        else:
            tally.fail("wrong shape", call, run.stdout[-300:])
    tally.finish(request.config)


def test_guarded(peer_calls, request):
    """`teil.guarded` of the recording library's own function, on both forms: it returns the
    function's own result, and raises where the function raises (a `ShapeError` before the
    call, or the function's own exception when the guard passes the call on)."""
    tally = Tally("teil.guarded")
    for call, truth in peer_calls:
        fn = LIBRARIES[call.library]
        args = call.args(call.operands())
        try:
            got = teil.guarded(fn)(*args)
        except teil.ShapeError as e:
            if truth.error is None:
                tally.fail("declined", call, f"{e.diagnostics[0].code}: {str(e).splitlines()[0]}")
            else:
                tally.ok("both reject")
            continue
        except Exception as e:
            if truth.error == type(e).__name__:
                tally.ok("both reject")
            else:
                tally.fail("crash", call, f"{type(e).__name__}: {e} (the library: {truth.error})")
            continue
        if truth.error is not None:
            tally.fail("accepts invalid", call, "the library raised")
        elif np.shape(got) != truth.result.shape or not np.array_equal(got, truth.result):
            tally.fail("wrong value", call, "not the library's result")
        elif teil._check(fn, tuple(args), {}) != truth.result.shape:
            # The shape the guard checked is the library's: it read the call as the library does.
            tally.fail("misread", call, f"checked {teil._check(fn, tuple(args), {})}")
        else:
            tally.ok("agree")
    tally.finish(request.config)
