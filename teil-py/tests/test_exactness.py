"""Exact mode computes the spec's values whatever ``cflags`` say; fma mode fuses only what
spec/values.md lists; flags that change values are refused (spec/abi.md, "Compiling the C")."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

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


@pytest.mark.parametrize(
    "cflags, word",
    [
        ("-O3 -Wp,-fassociative-math,-fno-signed-zeros", "-Wp,-fassociative-math,-fno-signed-zeros"),
        ("-O3 -Xclang -mreassociate", "-Xclang"),
        ("-O2 -U__FAST_MATH__", "-U__FAST_MATH__"),
        ("-O2 -mno-sse2", "-mno-sse2"),
        ("-O2 crtfastmath.o", "crtfastmath.o"),
        ("-O2 -include pragma.h", "-include"),
        ("-O2 --param max-unroll-times=4", "--param"),
    ],
)
def test_flags_off_the_allow_list_are_refused(cache, cflags, word):
    # Issue 42: an allow-list, not a list of refused spellings.
    p = teil.Program(DOT)
    with pytest.raises(ValueError, match=f"`{re.escape(word)}` is refused"):
        p.compile(cflags=cflags)
    with pytest.raises(ValueError, match=f"`{re.escape(word)}` is refused"):
        p.run(x=X, y=Y, backend="c", cflags=cflags)
    assert not cache.exists() or not any(cache.iterdir())


@pytest.mark.parametrize(
    "var, value, message",
    [
        ("TEIL_EXTRA_CFLAGS", "-Wp,-ffast-math", "`-Wp,-ffast-math` is refused"),
        ("CCC_OVERRIDE_OPTIONS", "+-Xclang +-mreassociate", "while `CCC_OVERRIDE_OPTIONS` is set"),
        ("COMPILER_PATH", "/tmp/stages", "while `COMPILER_PATH` is set"),
    ],
)
def test_a_compiler_environment_that_changes_values_is_refused(tmp_path, var, value, message):
    # In a child process: the environment is read when compiling, and is the process's own.
    probe = (
        "import teil\n"
        f"p = teil.Program({DOT!r})\n"
        "try:\n"
        f"    p.compile(cache_dir={str(tmp_path / 'cache')!r})\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    env = dict(os.environ, **{var: value})
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert message in result.stdout, result.stdout
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


LONG_SUM = "input var x : [1000]\noutput var s : []\ns = red+ 1 x\n"


def test_reassociate_false_keeps_the_folds_bits(cache):
    # A sum of 1000 terms runs in 16 lanes by default (spec/padding.md, "Sums in lanes"):
    # another association, which rounds differently from the spec's fold; with
    # reassociate=False every path gives the oracle's bits.
    p = teil.Program(LONG_SUM)
    rng = np.random.default_rng(7)
    differs = 0
    for _ in range(5):
        x = rng.uniform(-1, 1, 1000) / 3
        fold = p.run(x=x, backend="oracle")["s"]
        canonical = [
            p.compile(reassociate=False)(x=x)["s"],
            p.run(x=x, backend="c", reassociate=False)["s"],
        ]
        assert all(c.tobytes() == fold.tobytes() for c in canonical)
        lanes = [p.compile()(x=x)["s"], p.run(x=x, backend="c")["s"]]
        assert lanes[0].tobytes() == lanes[1].tobytes()
        # The lanes' value: 16 partial sums of the terms i = j (mod 16) of the whole blocks
        # of 16, combined as a tree (ir::LaneFold::TREE), then the last 1000 % 16 terms in
        # order, in binary64 like the kernel.
        terms = x.tolist()
        whole = len(terms) - len(terms) % 16
        lane = terms[:16]
        for i in range(16, whole):
            lane[i % 16] += terms[i]
        for dst, src in [(0, 4), (1, 5), (2, 6), (3, 7), (8, 12), (9, 13), (10, 14),
                         (11, 15), (0, 8), (1, 9), (2, 10), (3, 11), (0, 1), (2, 3), (0, 2)]:
            lane[dst] += lane[src]
        s = lane[0]
        for t in terms[whole:]:
            s += t
        assert float(lanes[0]) == s
        differs += float(lanes[0]) != float(fold)
        # Both are within the error bound of any order of the same additions.
        assert abs(float(lanes[0]) - float(fold)) <= 1000 * 2.0**-52 * np.abs(x).sum()
    assert differs >= 1
    assert "Sums in lanes" in p.emit_c()
    assert "Sums in lanes" not in p.emit_c(reassociate=False)
