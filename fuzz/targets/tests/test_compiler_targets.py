"""Campaigns of `teil fuzz --target` against the compiler adapters (spec/fuzzing.md, "Compiler
targets"): ONNX Runtime, TVM and XLA through their pinned packages (teil-py/requirements-dev.txt),
and the committed findings of fuzz/FINDINGS.md replayed. Each adapter also has a planted bug (a `max` reduction turned into `min` where the adapter builds
what it hands to the compiler) that a campaign must find, shrink to at most three statements and
replay. A missing package fails the test rather than skipping it, so that CI cannot pass without
running the campaigns; only torch, whose wheel is too large for CI, is optional (its adapter
must then answer `unsupported`, which is tested too).
"""
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from harness import ROOT, TARGETS, require, teil_bin

FINDINGS = ROOT / "fuzz" / "findings"


def fuzz(target, *flags, timeout=900):
    return subprocess.run(
        [teil_bin(), "fuzz", "--target", target, *flags], capture_output=True, text=True, timeout=timeout
    )


def counters(result):
    """(passed, exact, unsupported) from the campaign's line on standard error."""
    m = re.search(r"target: (\d+) passed \((\d+) compared exactly.*?(\d+) unsupported", result.stderr)
    assert m, result.stderr
    return tuple(map(int, m.groups()))


def assert_clean(result, programs):
    assert result.returncode == 0, result.stderr[-4000:]
    assert re.fullmatch(rf"{programs} programs, 0 mismatches, \d+\.\d programs/s\n", result.stdout)
    passed, exact, unsupported = counters(result)
    # Unsupported: ONNX Runtime's missing float64 Erf (GELU draws erf often), XLA's programs
    # with a subnormal input; at most a fifth.
    assert passed + unsupported == programs and unsupported <= programs // 5, result.stderr
    return passed, exact


@pytest.mark.parametrize("level", ["all", "disable"])
def test_onnxruntime_agrees_with_the_oracle(tmp_path, level):
    require("onnxruntime")
    require("onnx")
    target = f"{sys.executable} {TARGETS / 'onnxruntime_ops.py'} --level {level}"
    result = fuzz(target, "--programs", "300", "--seed", "1", "--out", str(tmp_path))
    passed, exact = assert_clean(result, 300)
    # Unsupported: the programs with a float64 `erf` (ONNX Runtime has no such kernel); exact:
    # the binary64 programs without functions (spec/fuzzing.md, "Judging functions").
    assert passed >= 270 and exact >= 60


def test_xla_agrees_with_the_oracle(tmp_path):
    require("jax")
    target = f"{sys.executable} {TARGETS / 'xla_ops.py'}"
    result = fuzz(target, "--programs", "100", "--seed", "1", "--out", str(tmp_path))
    passed, _ = assert_clean(result, 100)
    assert passed == 100


def test_tvm_compiles_einsum_programs(tmp_path):
    # TVM compiles each program (about 0.4 s here); the einsum profile has no NaN, so the known
    # ReduceMax finding below cannot occur.
    require("tvm")
    require("onnx")
    target = f"{sys.executable} {TARGETS / 'tvm_ops.py'}"
    result = fuzz(target, "--programs", "25", "--seed", "1", "--profile", "einsum",
                  "--target-timeout", "120", "--out", str(tmp_path))
    passed, _ = assert_clean(result, 25)
    assert passed == 25


def test_torch_compile_runs_or_says_it_cannot(tmp_path):
    target = f"{sys.executable} {TARGETS / 'torch_ops.py'} --compile"
    result = fuzz(target, "--programs", "10", "--seed", "1", "--target-timeout", "300", "--out", str(tmp_path))
    try:
        import torch  # noqa: F401
    except ImportError:
        assert result.returncode == 0, result.stderr
        assert counters(result) == (0, 0, 10)
        return
    assert_clean(result, 10)


# A planted bug behind each compiler adapter: a wrong rewrite of every `max` reduction into a
# `min` one, where each adapter builds what it hands to the compiler (the ONNX model, or the
# traced jnp function).
PLANTS = {
    "onnxruntime_ops.py": (
        "    model = exporter.from_ops(document(request), spellings=seed)\n",
        "    for node in model.graph.node:\n"
        "        if node.op_type == 'ReduceMax':\n"
        "            node.op_type = 'ReduceMin'\n",
    ),
    "tvm_ops.py": (
        "    model = exporter.from_ops(document(request), spellings=seed)\n",
        "    for node in model.graph.node:\n"
        "        if node.op_type == 'ReduceMax':\n"
        "            node.op_type = 'ReduceMin'\n",
    ),
    "xla_ops.py": (
        'FOLDS = {"sum": "sum", "prod": "prod", "max": "max", "min": "min"}',
        '\nFOLDS["max"] = "min"\n',
    ),
}


def planted(adapter, tmp_path):
    """A copy of `adapter` with its planted bug, outside the checkout (the ONNX adapters then
    load the exporter from the installed package)."""
    source = (TARGETS / adapter).read_text()
    anchor, insertion = PLANTS[adapter]
    assert anchor in source
    copy = tmp_path / f"bad_{adapter}"
    copy.write_text(source.replace(anchor, anchor + insertion))
    return f"{sys.executable} {copy}"


@pytest.mark.parametrize(
    "adapter,module,programs,flags",
    [
        ("onnxruntime_ops.py", "onnxruntime", 100, []),
        ("xla_ops.py", "jax", 60, []),
        # TVM compiles every candidate; a budget that keeps the test near a minute.
        ("tvm_ops.py", "tvm", 30, ["--target-timeout", "120"]),
    ],
)
def test_a_bug_behind_each_compiler_is_found_and_shrunk(tmp_path, adapter, module, programs, flags):
    require(module)
    target = planted(adapter, tmp_path)
    out = tmp_path / "failures"
    result = fuzz(target, "--programs", str(programs), "--seed", "1", "--shrink", "1", "--out", str(out), *flags)
    assert result.returncode == 1, result.stderr[-4000:]
    assert re.fullmatch(rf"{programs} programs, [1-9]\d* mismatches, \d+\.\d programs/s\n", result.stdout)
    [repro] = list(out.iterdir())
    program = (repro / "program.teil").read_text()
    statements = [l for l in program.splitlines() if "=" in l and not l.startswith("//")]
    assert 1 <= len(statements) <= 3, program
    assert "// class: wrong value; target: " in program
    ops = json.loads((repro / "ops.json").read_text())
    assert any(s["op"] == "reduce" and s["kind"] == "max" for s in ops["steps"]), ops
    replay = fuzz(target, "--replay", str(repro), *flags, timeout=300)
    assert replay.returncode == 1 and replay.stdout.startswith("1 programs, 1 mismatches")
    fixed = fuzz(f"{sys.executable} {TARGETS / adapter}", "--replay", str(repro), *flags, timeout=300)
    assert fixed.returncode == 0 and fixed.stdout.startswith("1 programs, 0 mismatches"), fixed.stderr


def committed_findings():
    return sorted(p for p in FINDINGS.glob("*/*") if (p / "finding.json").is_file())


def test_every_committed_finding_is_listed_and_replays_as_recorded():
    """Each fuzz/findings/TARGET/ID/ is a reproducer with a finding.json (target, version,
    class, adapter command, whether it reproduces with the pinned version, the upstream issue or
    null, which workaround hides it or null); FINDINGS.md lists it. The ones marked to reproduce must still fail when replayed with the pinned packages."""
    listed = (ROOT / "fuzz" / "FINDINGS.md").read_text()
    findings = committed_findings()
    assert findings, "fuzz/findings/ holds the campaigns' findings"
    for d in findings:
        meta = json.loads((d / "finding.json").read_text())
        assert meta["class"] in {"crash", "wrong value", "wrong shape", "error on a valid model"}
        assert f"{d.parent.name}/{d.name}" in listed, f"{d} is not in FINDINGS.md"
        require(meta["module"])
        adapter = TARGETS / meta["adapter"]
        target = " ".join([sys.executable, str(adapter), *meta.get("flags", [])])
        replay = fuzz(target, "--replay", str(d), "--target-timeout", "120", timeout=300)
        want = 1 if meta["reproduces"] else 0
        assert replay.returncode == want, (d, replay.stdout, replay.stderr[-2000:])


@pytest.mark.parametrize("finding", committed_findings(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_finding_has_a_standalone_reproducer_and_an_issue(finding, tmp_path):
    """Each finding's repro.py (written by fuzz/targets/standalone.py, spec/fuzzing.md
    "Findings") is what the generator writes from the finding now, runs with TeIL made
    unimportable, exits 1 while the bug is present (0 where `finding.json` says it no longer
    reproduces), and its judgement passes the expected values and fails the target's recorded
    ones; issue.md holds repro.py verbatim and the sections a maintainer needs."""
    meta = json.loads((finding / "finding.json").read_text())
    require(meta["module"])
    repro = (finding / "repro.py").read_text()
    issue = (finding / "issue.md").read_text()
    # Regenerated in a copy: the committed files are the generator's output for this finding.
    copy = tmp_path / finding.parent.name / finding.name  # the same TARGET/ID names
    shutil.copytree(finding, copy)
    subprocess.run([sys.executable, str(TARGETS / "standalone.py"), str(copy)], check=True, capture_output=True, timeout=600)
    assert (copy / "repro.py").read_text() == repro, "repro.py is stale: run fuzz/targets/standalone.py on the finding"
    # Standalone: `import teil` fails inside it.
    blocked = "import sys, runpy; sys.modules['teil'] = None; runpy.run_path(sys.argv[1], run_name='__main__')"
    run = subprocess.run([sys.executable, "-c", blocked, str(finding / "repro.py")], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert run.returncode == (1 if meta["reproduces"] else 0), run.stdout + run.stderr
    assert ("BUG PRESENT" in run.stdout or "the target failed" in run.stdout) == meta["reproduces"], run.stdout
    # The judgement: the expected values pass, the recorded outputs (where the target wrote
    # some) do not.
    module = {}
    exec(compile(repro.split('\nif __name__ == "__main__":')[0], "repro.py", "exec"), module)
    assert module["differs"](module["EXPECTED"]) == []
    outputs = finding / "outputs"
    if outputs.is_dir() and any(outputs.iterdir()) and meta["class"] == "wrong value":
        doc = json.loads((finding / "ops.json").read_text())
        names = dict(zip(doc["outputs"], module["EXPECTED"]))
        recorded = {names[p.stem]: np.load(p) for p in outputs.glob("*.npy") if p.stem in names}
        assert module["differs"]({**module["EXPECTED"], **recorded}), "the recorded outputs pass"
    for section in ("\n## Versions\n", "\n## Reproducer\n", "\n## Expected\n", "\n## Actual\n"):
        assert section in issue, section
    assert issue.startswith("# ") and repro.rstrip() in issue
    assert meta["target"] in issue and (meta["upstream"] or "") in issue


def test_the_nan_workaround_looks_past_the_known_reduction_findings(tmp_path):
    # `--workaround nan-reductions` rewrites ReduceMax/ReduceMin into NaN-propagating nodes: the
    # known NaN findings of ONNX Runtime and TVM then replay clean, so a campaign can find others.
    require("onnxruntime")
    require("tvm")
    hidden = 0
    for d in committed_findings():
        meta = json.loads((d / "finding.json").read_text())
        if meta["module"] not in ("onnxruntime", "tvm"):
            continue
        # Those it hides replay clean; the others (another bug) still fail.
        target = f"{sys.executable} {TARGETS / meta['adapter']} --workaround nan-reductions"
        replay = fuzz(target, "--replay", str(d), "--target-timeout", "120", timeout=300)
        want = 0 if meta["hidden_by_workaround"] == "nan-reductions" else 1
        assert replay.returncode == want, (d, replay.stdout, replay.stderr[-2000:])
        assert "workaround nan-reductions" in replay.stderr
        hidden += 1 - want
    assert hidden == 2
    result = fuzz(f"{sys.executable} {TARGETS / 'onnxruntime_ops.py'} --workaround nan-reductions",
                  "--programs", "300", "--seed", "3", "--profile", "compiler", "--out", str(tmp_path))
    assert_clean(result, 300)


def test_xla_spells_contractions_three_ways():
    # xla_ops.py writes a two-operand contraction as jnp.einsum, lax.dot_general or
    # jnp.tensordot (drawn per program); each spelling computes the einsum's values.
    require("jax")
    import importlib.util

    spec = importlib.util.spec_from_file_location("xla_ops", TARGETS / "xla_ops.py")
    xla = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(xla)
    rng = np.random.default_rng(0)
    cases = [("ab,bc->ac", (2, 3), (3, 4)), ("abc,acd->abd", (2, 3, 4), (2, 4, 5)),
             ("ab,cb->ca", (2, 3), (4, 3)), ("a,b->ba", (3,), (2,)), ("abc,b->ca", (2, 3, 4), (3,)),
             ("ab,ab->", (2, 3), (2, 3)), ("aab,b->a", (2, 2, 3), (3,))]
    spelled = 0
    for equation, sa, sb in cases:
        a, b = rng.integers(-3, 4, sa).astype(np.float64), rng.integers(-3, 4, sb).astype(np.float64)
        want = np.einsum(equation, a, b)
        plan = xla.contraction(equation, [sa, sb])
        for spelling in (0, 1, 2):
            got = np.asarray(xla.spelled_einsum({"equation": equation}, [xla.jnp.asarray(a), xla.jnp.asarray(b)], spelling))
            assert got.shape == want.shape and np.array_equal(got, want), (equation, spelling)
        spelled += plan is not None
    assert spelled == len(cases) - 1  # the repeated label is einsum's alone


def test_xla_program_source_computes_what_the_adapter_computes():
    # The standalone reproducers write XLA's programs out as Python (xla_ops.program_source,
    # fuzz/targets/standalone.py); every op, every contraction spelling, a name that is not an
    # identifier and one that rebinds: the source's function returns the adapter's values,
    # bit for bit.
    require("jax")
    import importlib.util

    spec = importlib.util.spec_from_file_location("xla_ops", TARGETS / "xla_ops.py")
    xla = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(xla)
    steps = [
        {"out": "%1", "op": "einsum", "args": ["A", "B"], "equation": "ab,bc->ca"},
        {"out": "%2", "op": "add", "args": ["%1", "%1"]},
        {"out": "%3", "op": "sub", "args": ["%2", "%1"]},
        {"out": "%4", "op": "mul", "args": ["%3", "%2"]},
        {"out": "%5", "op": "div", "args": ["%4", "s"]},
        {"out": "%6", "op": "reduce", "kind": "max", "axis": 1, "args": ["%5"]},
        {"out": "%7", "op": "expand", "axis": 1, "shape": [4, 3], "args": ["%6"]},
        {"out": "%8", "op": "take", "axis": 0, "index": 2, "args": ["%7"]},
        {"out": "%9", "op": "const", "value": float("inf"), "args": []},
        {"out": "%10", "op": "min", "args": ["%8", "%9"]},
        {"out": "%11", "op": "max", "args": ["%10", "%10"]},
        {"out": "%12", "op": "cast", "to": "float32", "args": ["%11"]},
        {"out": "%13", "op": "func", "name": "erf", "args": ["%12"]},
        {"out": "lambda", "op": "func", "name": "tanh", "args": ["%13"]},
        {"out": "lambda", "op": "func", "name": "exp", "args": ["lambda"]},
        {"out": "r", "op": "reduce", "kind": "sum", "axis": 0, "args": ["lambda"]},
    ]
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((3, 5)), rng.standard_normal((5, 4)), np.float64(0.75)]
    for only_einsum in (False, True):
        xla.ONLY_EINSUM = only_einsum
        for n in range(4):  # other steps, other spellings drawn
            request = {"inputs": {"A": {}, "B": {}, "s": {}}, "outputs": {"r": {}, "lambda": {}},
                       "ops": steps[:len(steps) - n] if n < 2 else steps + [dict(steps[0], out="%99")] * n}
            if "r" not in {s["out"] for s in request["ops"]}:
                request["outputs"] = {"lambda": {}}
            want = xla.jax.jit(xla.program(request))(*args)
            source = xla.program_source(request, indent="")
            assert "%" not in source and " lambda =" not in source, source
            scope = {"jax": xla.jax, "jnp": xla.jnp}
            exec(source, scope)
            got = xla.jax.jit(scope["program"])(*args)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and np.array_equal(np.asarray(g), np.asarray(w), equal_nan=True), source
