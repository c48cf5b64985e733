"""teil.Kernel: the C backend compiled once into a shared object and called in-process."""

from __future__ import annotations

import shutil
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import teil
from teil import _native
from conftest import MATMUL, small_ints

if shutil.which("cc") is None:
    pytest.skip("no C compiler named cc", allow_module_level=True)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEIL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("pad", [1, 3, 8])
def test_kernel_against_numpy_many_calls(pad, cache):
    k = teil.Program(MATMUL).compile(pad=pad)
    assert isinstance(k, teil.Kernel)
    assert k.inputs == ["A", "B"] and k.outputs == ["C"]
    assert k.path.parent == cache or cache in k.path.parents
    rng = np.random.default_rng(pad)
    for _ in range(200):
        a, b = small_ints(rng, (3, 4)), small_ints(rng, (4, 5))
        out = k({"A": a}, B=b)
        assert list(out) == ["C"]
        np.testing.assert_array_equal(out["C"], a @ b)


def test_kernel_agrees_with_the_fast_evaluator(cache):
    src = """
    input  alloc A : [3, 4, 5]
    input  alloc v : [5]
    inout  alloc S : [4]
    output alloc R : [4, 3]
    R = transp 1 2 (red+ 3 (diag 3 4 (prod A v)))
    S = S + red+ 2 R
    """
    p = teil.Program(src)
    rng = np.random.default_rng(5)
    a, v, s = small_ints(rng, (3, 4, 5)), small_ints(rng, (5,)), small_ints(rng, (4,))
    want = p.run(A=a, v=v, S=s)
    for pad in [1, 4]:
        got = p.compile(pad=pad)(A=a, v=v, S=s)
        assert set(got) == {"R", "S"}
        for name in got:
            np.testing.assert_array_equal(got[name], want[name])


def test_kernel_is_cached(cache):
    p = teil.Program(MATMUL)
    k1 = p.compile(pad=4)
    objects = sorted(cache.rglob("*"))
    k2 = teil.Program(MATMUL).compile(pad=4)
    assert k2.path == k1.path
    assert sorted(cache.rglob("*")) == objects  # nothing new was compiled
    assert teil.Program(MATMUL).compile(pad=8).path != k1.path


def test_kernel_reads_c_contiguous_float64_in_place(cache):
    k = teil.Program(MATMUL).compile()
    a, b = np.arange(12.0).reshape(3, 4), np.ones((4, 5))
    a.setflags(write=False)
    before = _native._conversion_copies()
    np.testing.assert_array_equal(k(A=a, B=b)["C"], a @ b)
    assert _native._conversion_copies() == before
    np.testing.assert_array_equal(k(A=a.astype(np.float32), B=b.tolist())["C"], a @ b)
    assert _native._conversion_copies() == before + 2


def test_kernel_from_many_threads(cache):
    k = teil.Program(
        "input alloc A : [6, 7]\ninput alloc B : [7, 5]\noutput alloc C : [6, 5]\n"
        "C = red+ 2 (diag 2 3 (prod A B))"
    ).compile(pad=4)
    rng = np.random.default_rng(11)
    jobs = [(small_ints(rng, (6, 7)), small_ints(rng, (7, 5))) for _ in range(200)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda j: k(A=j[0], B=j[1])["C"], jobs))
    for (a, b), c in zip(jobs, results):
        np.testing.assert_array_equal(c, a @ b)


def test_kernel_errors(cache):
    p = teil.Program(MATMUL)
    k = p.compile()
    with pytest.raises(teil.RunError, match=r"^\[E0604\] missing input `B`") as info:
        k(A=np.ones((3, 4)))
    assert (info.value.code, info.value.codes) == ("E0604", ["E0604"])
    with pytest.raises(teil.RunError, match="`A`"):
        k(A=np.ones((4, 3)), B=np.ones((4, 5)))
    with pytest.raises(teil.RunError, match="`C`"):
        k(A=np.ones((3, 4)), B=np.ones((4, 5)), C=np.ones((3, 5)))
    with pytest.raises(TypeError, match="`A`"):
        k(A=np.full((3, 4), "x"), B=np.ones((4, 5)))
    with pytest.raises(ValueError, match="padding multiple"):
        p.compile(pad=0)
    with pytest.raises(teil.RunError, match="no-such-cc-teil"):
        p.compile(cc="no-such-cc-teil")
    with pytest.raises(teil.RunError):
        p.compile(cflags="-O2 --no-such-flag-teil")
