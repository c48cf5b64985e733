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
        p.compile(cflags="-O2 -std=no-such-standard-teil")


@pytest.mark.parametrize("pad", [1, 4])
def test_kernel_writes_into_out_arrays(pad, cache):
    """`out=` as NumPy's: the results land in the caller's arrays, which the call returns; a
    row-major array of an unpadded kernel is the native code's own buffer, any other (padded,
    column-major) is written from the call's buffer. Every cell is written: garbage on entry
    does not survive."""
    k = teil.Program(MATMUL).compile(pad=pad)
    rng = np.random.default_rng(pad)
    a, b = small_ints(rng, (3, 4)), small_ints(rng, (4, 5))
    want = a @ b
    for order in ("C", "F"):
        c = np.full((3, 5), 7.5, order=order)
        got = k(A=a, B=b, out={"C": c})
        assert got["C"] is c
        np.testing.assert_array_equal(c, want)
        # Called again with new inputs, the same array receives the new result.
        k(A=a, B=2 * b, out={"C": c})
        np.testing.assert_array_equal(c, 2 * want)


def test_kernel_out_sharing_memory_with_an_input_reads_the_input_first(cache):
    # C[i, j] = A[i, j] + A[i, j] * B[i, j], and `out` is A itself.
    p = teil.Program(
        "input var A : [2 3]\ninput var B : [2 3]\noutput var C : [2 3]\nC = A + A * B"
    )
    k = p.compile()
    a = np.arange(6.0).reshape(2, 3)
    b = np.full((2, 3), 2.0)
    want = a + a * b
    got = k(A=a, B=b, out={"C": a})
    assert got["C"] is a
    np.testing.assert_array_equal(a, want)


def test_kernel_out_errors(cache):
    k = teil.Program(MATMUL).compile()
    a, b = np.ones((3, 4)), np.ones((4, 5))
    with pytest.raises(ValueError, match=r"^the array for output `C` has shape \[5, 3\], but the program declares \[3, 5\]$"):
        k(A=a, B=b, out={"C": np.empty((5, 3))})
    with pytest.raises(ValueError, match="`A` is not an output of the program"):
        k(A=a, B=b, out={"A": np.empty((3, 4))})
    with pytest.raises(TypeError, match="output `C` must be a numpy.ndarray of float64, not"):
        k(A=a, B=b, out={"C": np.empty((3, 5), dtype=np.float32)})
    with pytest.raises(TypeError, match="output `C` must be a numpy.ndarray of float64, not list"):
        k(A=a, B=b, out={"C": [[0.0] * 5] * 3})
    with pytest.raises(TypeError, match="`out` must map output names"):
        k(A=a, B=b, out=np.empty((3, 5)))
    ro = np.empty((3, 5))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="the array for output `C` is read-only"):
        k(A=a, B=b, out={"C": ro})
    # Nothing was written into a refused array.
    c = np.full((3, 5), 7.5)
    with pytest.raises(ValueError):
        k(A=a, B=b, out={"C": c, "Q": np.empty(1)})
    assert (c == 7.5).all()
