"""CI campaigns of `teil fuzz --target` against the shipped adapters (spec/fuzzing.md).

The `teil` binary is $TEIL_BIN, or target/debug/teil in the repository; build it first
(`cargo build -p teil-cli`). The adapters run under this interpreter (sys.executable), which
needs numpy and opt_einsum: a missing one fails the test rather than skipping it, so that CI
cannot pass without running the campaigns.
"""
import re
import subprocess
import sys

import pytest

from harness import TARGETS, planted_max_adapter, require, teil_bin


def campaign(adapter, *flags, tmp_path):
    target = f"{sys.executable} {TARGETS / adapter}"
    return subprocess.run(
        [teil_bin(), "fuzz", "--target", target, "--programs", "200", "--seed", "1",
         "--out", str(tmp_path / "failures"), *flags],
        capture_output=True, text=True, timeout=600,
    )


def assert_clean(result, programs=200):
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(rf"{programs} programs, 0 mismatches, \d+\.\d programs/s\n", result.stdout)


def test_numpy_adapter_agrees_with_the_oracle(tmp_path):
    require("numpy")
    result = campaign("numpy_ops.py", tmp_path=tmp_path)
    assert_clean(result)
    # Every program was judged but those with `erf`, which NumPy lacks (about 1 in 10); those
    # without functions in binary64 bit for bit, the others as their cells permit
    # (spec/fuzzing.md, "Judging functions").
    m = re.search(r"target: (\d+) passed \((\d+) compared exactly.*?(\d+) unsupported", result.stderr)
    assert m, result.stderr
    passed, exact, unsupported = map(int, m.groups())
    assert passed + unsupported == 200 and 0 < unsupported <= 40, result.stderr
    assert exact >= 30


def test_numpy_agrees_on_the_compiler_profile_with_special_values(tmp_path):
    # NumPy sums pairwise and picks its own einsum paths: the compiler profile's special values
    # (±0, ±inf, NaN) must not make a correct library differ (spec/fuzzing.md, "Special values").
    require("numpy")
    result = campaign("numpy_ops.py", "--profile", "compiler", tmp_path=tmp_path)
    assert_clean(result)
    # What was sent: `sent: OP N, ...; PATTERN N, ...; rank 5 or more in N programs, special
    # inputs in N, float32 in N`.
    sent = re.search(r"^sent: (.*); (.*); rank 5 or more in (\d+) programs, special inputs in (\d+), "
                     r"float32 in (\d+)$",
                     result.stderr, re.M)
    assert sent, result.stderr
    counts = {}
    for part in (sent.group(1) + ", " + sent.group(2)).split(", "):
        name, n = part.rsplit(" ", 1)
        counts[name] = int(n)
    for construct in ("einsum", "reduce max", "expand", "take", "element-wise on einsum",
                      "reduce of expand", "reduce of reduce", "einsum of einsum", "repeated step",
                      # the kernels written with the functions
                      "function of einsum", "softmax", "log-softmax", "layer norm", "GELU",
                      "ReLU or clamp", "attention", "constant inf or NaN"):
        assert counts[construct] > 0, (construct, counts)
    assert int(sent.group(3)) > 0 and int(sent.group(4)) == 100
    # The new vocabulary: binary32 programs and every function (spec/fuzzing.md, "Judging
    # functions").
    assert int(sent.group(5)) > 0, sent.group(0)
    for f in ("exp", "log", "sqrt", "tanh", "erf", "abs"):
        assert counts.get("func " + f, 0) > 0, (f, counts)
    assert counts.get("max", 0) > 0 and counts.get("min", 0) > 0, counts


def test_opt_einsum_adapter_agrees_on_einsum_programs(tmp_path):
    require("opt_einsum")
    result = campaign("opt_einsum_ops.py", "--profile", "einsum", tmp_path=tmp_path)
    assert_clean(result)
    assert re.search(r"target: 200 passed .* 0 unsupported", result.stderr), result.stderr


def test_a_wrong_adapter_is_found_and_shrunk(tmp_path):
    # A copy of the NumPy adapter whose `max` starts from 0: the campaign must fail, shrink the
    # finding and write a reproducer that replays with one command.
    require("numpy")
    target = planted_max_adapter(tmp_path)
    out = tmp_path / "failures"
    result = subprocess.run(
        [teil_bin(), "fuzz", "--target", target, "--programs", "100", "--seed", "1",
         "--shrink", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 1, result.stderr
    assert re.fullmatch(r"100 programs, [1-9]\d* mismatches, \d+\.\d programs/s\n", result.stdout)
    [repro] = list(out.iterdir())
    program = (repro / "program.teil").read_text()
    statements = [l for l in program.splitlines() if "=" in l and not l.startswith("//")]
    assert 1 <= len(statements) <= 3, program
    assert '"kind": "max"' in (repro / "ops.json").read_text()
    replay = subprocess.run(
        [teil_bin(), "fuzz", "--target", target, "--replay", str(repro)],
        capture_output=True, text=True, timeout=60,
    )
    assert replay.returncode == 1 and replay.stdout.startswith("1 programs, 1 mismatches")


def test_outputs_of_the_wrong_shape_are_their_own_class(tmp_path):
    # A copy of the NumPy adapter that writes every output with an extra leading axis: each
    # finding is of the class "wrong shape", and the reproducer names the class and the target.
    require("numpy")
    source = (TARGETS / "numpy_ops.py").read_text()
    anchor = 'np.save(v["path"], np.array(env[name], dtype=np.float64, order="C"))'
    assert anchor in source
    adapter = tmp_path / "shape_ops.py"
    adapter.write_text(source.replace(anchor, anchor.replace("np.array(env[name]", "np.array([env[name]]")))
    out = tmp_path / "failures"
    result = subprocess.run(
        [teil_bin(), "fuzz", "--target", f"{sys.executable} {adapter}", "--programs", "5",
         "--seed", "1", "--shrink", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 1, result.stderr
    mismatches = [l for l in result.stderr.splitlines() if l.startswith("mismatch: ")]
    assert mismatches and all(l.endswith("have the wrong shape (wrong shape)") for l in mismatches), mismatches
    [repro] = list(out.iterdir())
    import numpy as np

    message = (repro / "message.txt").read_text()
    assert message.startswith(
        "the target's outputs have the wrong shape\nclass: wrong shape\n"
        f"target: numpy {np.__version__}\n"
    ), message
    assert f"// class: wrong shape; target: numpy {np.__version__}\n" in (repro / "program.teil").read_text()
