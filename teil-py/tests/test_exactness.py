"""Exact mode computes the spec's values whatever ``cflags`` say; fma mode fuses only what
spec/values.md lists; flags that change values are refused (spec/abi.md, "Compiling the C")."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import teil

if shutil.which("cc") is None:
    pytest.skip("no C compiler named cc", allow_module_level=True)


def contracting_flags():
    """Flags under which GCC (GNU mode) contracts ``a * b + c``: ``-O3 -march=native``, and
    ``-O2 -mfma`` on an x86-64 CPU with FMA."""
    flags = ["-O3 -march=native"]
    probe = subprocess.run(
        ["cc", "-march=native", "-dM", "-E", "-x", "c", "/dev/null"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return ["-O3"]
    if "#define __FMA__ 1" in probe.stdout:
        flags.append("-O2 -mfma")
    return flags


DOT = "input var x : [2]\ninput var y : [2]\noutput var s : []\ns = red+ 1 (x * y)\n"
E = 2.0**-27
X = np.array([1 + E, -(1 + 2 * E)])
Y = np.array([1 + E, 1.0])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEIL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("cflags", contracting_flags())
def test_exact_mode_is_exact_under_contracting_flags(cache, cflags):
    p = teil.Program(DOT)
    # The spec's value is 0; a fused x1*y1 + x2*y2 gives 2**-54.
    assert p.run(x=X, y=Y, backend="oracle")["s"] == 0.0
    assert p.compile(cflags=cflags)(x=X, y=Y)["s"] == 0.0
    assert p.run(x=X, y=Y, backend="c", cflags=cflags)["s"] == 0.0

    m = teil.Program(
        "input var A : [64 64]\ninput var B : [64 64]\noutput var C : [64 64]\n"
        "C = (A # B) .[2 3]\n"
    )
    rng = np.random.default_rng(23)
    a, b = rng.uniform(-1, 1, (64, 64)), rng.uniform(-1, 1, (64, 64))
    want = m.run(A=a, B=b, backend="oracle")["C"]
    np.testing.assert_array_equal(m.compile(cflags=cflags)(A=a, B=b)["C"], want)


@pytest.mark.parametrize("cflags", contracting_flags())
def test_fma_mode_never_fuses_a_subtraction(cache, cflags):
    p = teil.Program(
        "input var x : [1]\ninput var y : [1]\ninput var c : [1]\noutput var r : [1]\nr = x * y - c\n"
    )
    args = dict(x=[1 + E], y=[1 + E], c=[1 + 2 * E])
    assert p.compile(cflags=cflags, fma=True)(**args)["r"][0] == 0.0
    assert p.run(backend="c", cflags=cflags, fma=True, **args)["r"][0] == 0.0


@pytest.mark.parametrize("flag", ["-ffast-math", "-Ofast", "-ffinite-math-only", "-ffp-contract=fast"])
def test_value_changing_flags_are_refused(cache, flag):
    p = teil.Program(DOT)
    with pytest.raises(ValueError, match=f"`{flag}` is refused"):
        p.compile(cflags=f"-O2 {flag}")
    with pytest.raises(ValueError, match=f"`{flag}` is refused"):
        p.run(x=X, y=Y, backend="c", cflags=f"-O2 {flag}")
    # Nothing was compiled into the cache.
    assert not cache.exists() or not any(cache.iterdir())
