"""Zero-copy reads of C-contiguous float64 inputs, conversion of everything else."""

from __future__ import annotations

import numpy as np

import teil
from teil import _native
from conftest import MATMUL


def copies_made(fn):
    before = _native._conversion_copies()
    result = fn()
    return _native._conversion_copies() - before, result


def test_c_contiguous_float64_is_read_in_place(tmp_path):
    p = teil.Program(MATMUL)
    a = np.arange(12.0).reshape(3, 4)
    b = np.ones((4, 5))
    n, out = copies_made(lambda: p.run(A=a, B=b))
    assert n == 0
    np.testing.assert_array_equal(out["C"], a @ b)
    # A read-only array and a memory-mapped file are read in place too (and left untouched).
    a.setflags(write=False)
    path = tmp_path / "b.npy"
    np.save(path, b)
    mapped = np.load(path, mmap_mode="r")
    n, out = copies_made(lambda: p.run(A=a, B=mapped))
    assert n == 0
    np.testing.assert_array_equal(out["C"], a @ b)
    n, _ = copies_made(lambda: teil.einsum("ij,jk->ik", a, mapped))
    assert n == 0


def test_everything_else_is_converted_once():
    p = teil.Program(MATMUL)
    a = np.arange(12.0).reshape(3, 4)
    b = np.ones((4, 5))
    for other in [a.astype(np.float32), np.asfortranarray(a), a.tolist(), a.astype(int)]:
        n, out = copies_made(lambda: p.run(A=other, B=b))
        assert n == 1
        np.testing.assert_array_equal(out["C"], a @ b)
    wide = np.arange(24.0).reshape(3, 8)
    n, _ = copies_made(lambda: p.run(A=wide[:, ::2], B=b))  # a strided view
    assert n == 1


def test_inputs_are_not_modified():
    p = teil.Program("inout alloc B : [2]\nB = B + B")
    b = np.array([1.0, 2.0])
    out = p.run(B=b)
    np.testing.assert_array_equal(out["B"], [2.0, 4.0])
    np.testing.assert_array_equal(b, [1.0, 2.0])
    assert not np.shares_memory(out["B"], b)


def test_outputs_are_fresh_writable_arrays():
    out = teil.Program(MATMUL).run(A=np.ones((3, 4)), B=np.ones((4, 5)))["C"]
    # Moved out of Rust without a copy: NumPy does not own the buffer, but nobody else sees it.
    assert out.flags.c_contiguous and out.flags.writeable
