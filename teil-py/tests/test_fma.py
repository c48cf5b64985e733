"""fma=True: the C backend's fused multiply-add mode (spec/values.md, "Fused multiply-add")."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import teil
from conftest import small_ints

if shutil.which("cc") is None:
    pytest.skip("no C compiler named cc", allow_module_level=True)

# Large enough for the packed matrix-product kernel (321 columns, more than a small
# product's) and the dot-product kernel.
PROGRAM = """
input  alloc A : [20, 30]
input  alloc B : [30, 321]
input  alloc x : [30]
output alloc C : [20, 321]
output alloc y : [20]
C = red+ 2 (diag 2 3 (prod A B))
y = red+ 2 (diag 2 3 (prod A x))
"""

U = 2.0**-53


def gamma(k):
    return k * U / (1 - k * U)


def native_flags():
    """`-std=c99 -O2 -march=native` where cc accepts it (C99 mode: exact mode contracts
    nothing, spec/abi.md), and whether the target then has a fast FMA."""
    probe = subprocess.run(
        ["cc", "-march=native", "-dM", "-E", "-x", "c", "/dev/null"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return "-std=c99 -O2", False
    return "-std=c99 -O2 -march=native", "#define __FP_FAST_FMA 1" in probe.stdout


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEIL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_fma_is_off_by_default_and_shows_in_the_c():
    p = teil.Program(PROGRAM)
    assert "fma" not in p.emit_c()
    assert p.emit_c(fma=False) == p.emit_c()
    c = p.emit_c(fma=True)
    assert "static void teil_tile_6x8_fma(" in c and "teil_s0 = teil_fma(" in c


def test_integer_inputs_give_the_exact_results(cache):
    rng = np.random.default_rng(3)
    a, b, x = small_ints(rng, (20, 30)), small_ints(rng, (30, 321)), small_ints(rng, (30,))
    p = teil.Program(PROGRAM)
    flags, _ = native_flags()
    k = p.compile(cflags=flags, fma=True)
    got = k(A=a, B=b, x=x)
    np.testing.assert_array_equal(got["C"], a @ b)
    np.testing.assert_array_equal(got["y"], a @ x)
    ran = p.run(A=a, B=b, x=x, backend="c", cflags=flags, fma=True)
    np.testing.assert_array_equal(ran["C"], a @ b)


def test_random_floats_stay_within_two_gamma_k_of_the_exact_result(cache):
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, (20, 30))
    b = rng.uniform(-2, 2, (30, 321))
    x = rng.uniform(-2, 2, (30,))
    p = teil.Program(PROGRAM)
    flags, fast = native_flags()
    exact = p.compile(cflags=flags)(A=a, B=b, x=x)
    fused = p.compile(cflags=flags, fma=True)(A=a, B=b, x=x)
    # spec/values.md: |fma - exact| <= 2 gamma_k sum_i |a_i b_i|, k = 30 (the factor
    # 1 + 1e-12 covers NumPy's rounding of the bound itself).
    for out, want in [("C", np.abs(a) @ np.abs(b)), ("y", np.abs(a) @ np.abs(x))]:
        bound = 2 * gamma(30) * want * (1 + 1e-12)
        assert np.all(np.abs(fused[out] - exact[out]) <= bound)
    # Exact mode is exact; fma mode rounds differently somewhere where the target fuses.
    assert np.array_equal(exact["C"], p.run(A=a, B=b, x=x, backend="oracle")["C"])
    assert (not np.array_equal(fused["C"], exact["C"])) == fast


def test_a_product_that_does_not_round_shows_the_fusion(cache):
    # -(1 + 2^-26) + (1 + 2^-27)^2 is 2^-54 exactly; exact mode rounds the product to
    # 1 + 2^-26 first and gets 0.
    p = teil.Program(PROGRAM)
    a, b, x = np.zeros((20, 30)), np.zeros((30, 321)), np.zeros(30)
    a[0, :2] = [-1.0, 1 + 2.0**-27]
    b[:2, 0] = [1 + 2.0**-26, 1 + 2.0**-27]
    x[:2] = b[:2, 0]
    flags, fast = native_flags()
    exact = p.compile(cflags=flags)(A=a, B=b, x=x)
    fused = p.compile(cflags=flags, fma=True)(A=a, B=b, x=x)
    assert exact["C"][0, 0] == 0.0 and exact["y"][0] == 0.0
    if not fast:
        pytest.skip("cc -march=native does not define __FP_FAST_FMA: nothing is fused here")
    assert fused["C"][0, 0] == 2.0**-54  # the packed micro-kernel
    assert fused["y"][0] == 2.0**-54  # the dot-product kernel
