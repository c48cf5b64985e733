"""`teil.guarded` accepts exactly what the wrapped library accepts and returns its result.

Each case calls the guarded function and the function itself on the same arguments: either both
results are equal (values and shapes), or the guard raises `ShapeError` where the library
raises too. torch and JAX are not installed: their rules are exercised through stand-ins whose
`__module__` and `__name__` are the libraries' own, since the guard reads nothing else.
"""

from __future__ import annotations

import doctest
import sys
import threading
import types

import numpy as np
import opt_einsum as oe
import pytest

import teil

RNG = np.random.default_rng(25)


def rand(*shape):
    return RNG.standard_normal(shape)


def same(fn, *args, **kwargs):
    """The guarded call returns what the unguarded one does, and the einsum the guard checked
    has the shape of that result (so the guard read the call as the library does)."""
    got = teil.guarded(fn)(*args, **kwargs)
    want = fn(*args, **kwargs)
    assert np.shape(got) == np.shape(want)
    assert teil._check(fn, args, kwargs) == np.shape(want)
    np.testing.assert_allclose(got, want)
    return got


def rejected(fn, *args, **kwargs):
    """The guard raises `ShapeError` before `fn` runs, and `fn` itself rejects the call too."""
    with pytest.raises(teil.ShapeError) as info:
        teil.guarded(fn)(*args, **kwargs)
    assert info.value.diagnostics, "the error carries TeIL's diagnostics"
    with pytest.raises((ValueError, RuntimeError)):
        fn(*args, **kwargs)
    return info.value


def stand_in(module, name, impl):
    """A function that the guard takes for `module.name`, computing with `impl`."""

    def fn(*args, **kwargs):
        return impl(*args, **kwargs)

    fn.__module__, fn.__name__, fn.__qualname__ = module, name, name
    return fn


# --- 1. interleaved labels -------------------------------------------------------------------


def test_numpy_reads_0_as_A_and_26_as_a():
    # 0 is `A` and 30 is `e`: the implicit output is `Ae`, so the axes keep their order.
    got = same(np.einsum, rand(2, 3), [0, 30])
    assert got.shape == (2, 3)
    assert same(np.einsum, rand(2, 3), [26, 0]).shape == (3, 2)
    assert same(np.einsum, rand(2, 3), [51, 25]).shape == (3, 2)


@pytest.mark.parametrize(
    "args",
    [
        lambda: (rand(2, 3), [0, 27], rand(3, 4), [27, 51]),
        lambda: (rand(2, 3), [0, 27], rand(3, 4), [27, 51], [51, 0]),
        lambda: (rand(2, 3), [np.int64(3), np.int32(1)], rand(3), [np.int8(1)]),
        lambda: (rand(3, 3), [5, 5]),
        lambda: (rand(4, 2, 3), [Ellipsis, 0, 1], rand(3, 5), [1, 2]),
        lambda: (rand(4, 2, 3), [Ellipsis, 0, 1], rand(3, 5), [1, 2], [2, Ellipsis, 0]),
        lambda: (rand(5, 1, 3), [Ellipsis, 1], rand(4, 3), [Ellipsis, 1], [Ellipsis]),
    ],
)
def test_numpy_interleaved(args):
    same(np.einsum, *args())


def test_numpy_interleaved_rejections():
    e = rejected(np.einsum, rand(2, 3), [0, 1], rand(4, 5), [1, 2])
    assert [d.code for d in e.diagnostics] == ["E0404"]
    rejected(np.einsum, rand(2, 3), [Ellipsis, 0], rand(4, 3), [Ellipsis, 0], [Ellipsis])
    # Calls the guard cannot read are the library's to reject, with its own error.
    for args in [(rand(2), [52]), (rand(2), [-1]), (rand(2), ["i"]), (rand(2), 0), ()]:
        with pytest.raises(Exception) as guarded_error:
            teil.guarded(np.einsum)(*args)
        with pytest.raises(Exception) as own_error:
            np.einsum(*args)
        assert type(guarded_error.value) is type(own_error.value)
        assert str(guarded_error.value) == str(own_error.value)
        assert teil._check(np.einsum, args, {}) is None


@pytest.mark.parametrize(
    "args",
    [
        lambda: (rand(2, 3), ["left", "right"]),
        lambda: (rand(2, 3), ["right", "left"]),
        lambda: (rand(2, 3), [1000, 7], rand(3, 4), [7, -1]),
        lambda: (rand(2, 3), [1000, 7], rand(3, 4), [7, -1], [-1, 1000]),
        lambda: (rand(2, 3), [(1, "x"), (0, "y")], rand(3), [(0, "y")]),
        lambda: (rand(4, 2, 3), [Ellipsis, "i", "j"], rand(3), ["j"]),
        lambda: (rand(3, 3), ["d", "d"]),
    ],
)
def test_opt_einsum_interleaved(args):
    same(oe.contract, *args())


def _labelled(labels):
    # Extent 2 on every seventh label, 1 elsewhere: the same extent wherever a label occurs.
    return rand(*[2 if k % 7 == 0 else 1 for k in labels])


def test_opt_einsum_past_26_labels_orders_implicit_output_as_opt_einsum():
    # Labels 26.. are opt_einsum's `A`.., which sort before `a`: the implicit output starts
    # with them, unlike NumPy's order for the same integers.
    la, lb = list(range(16)), list(range(12, 30))
    a, b = _labelled(la), _labelled(lb)
    got = same(oe.contract, a, la, b, lb)
    assert got.shape == oe.contract(a, la, b, lb).shape
    # With 27 labels, opt_einsum names the 27th `A`, first in its implicit output; NumPy names
    # the same integers `A`..`Z`, `a`, keeping the order.
    x = rand(*([3] + [1] * 25 + [2]))
    labels = list(range(27))
    assert same(oe.contract, x, labels).shape == (2, 3) + (1,) * 25
    assert same(np.einsum, x, labels).shape == (3,) + (1,) * 25 + (2,)


def test_jax_reads_interleaved_labels_as_opt_einsum():
    jnp_einsum = stand_in("jax.numpy", "einsum", oe.contract)
    same(jnp_einsum, rand(2, 3), ["left", "right"], rand(3), ["right"])
    rejected(jnp_einsum, rand(2, 3), ["left", "right"], rand(4), ["right"])


def test_opt_einsum_fallback_parser_matches_opt_einsum(monkeypatch):
    args = [rand(2, 3), [1000, 7], rand(3, 4), [7, -1], [-1, 1000]]
    want = oe.parser.convert_interleaved_input(args)[0]
    monkeypatch.delitem(sys.modules, "opt_einsum.parser")
    assert teil._opt_einsum_interleaved(args)[0] == want


def test_opt_einsum_unicode_labels_are_renamed_in_order():
    # opt_einsum accepts non-ASCII labels in equations; the guard renames them keeping order.
    same(oe.contract, "αβ,βγ", rand(2, 3), rand(3, 4))
    rejected(oe.contract, "αβ,βγ", rand(2, 3), rand(4, 4))


# --- 2. torch's ellipsis summing -------------------------------------------------------------


def _torch_einsum_impl(equation, *operands):
    """torch.einsum's rules on NumPy arrays: operands may be one list, and an explicit output
    without `...` sums the dimensions under `...`."""
    if not isinstance(equation, str):  # the interleaved form, read as NumPy reads it
        return np.einsum(equation, *operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if "->" in equation:
        inputs, output = equation.split("->")
        if "..." in inputs and "..." not in output:
            full = np.einsum(inputs + "->..." + output, *operands)
            return full.sum(axis=tuple(range(full.ndim - len(output))))
    return np.einsum(equation, *operands)


torch_einsum = stand_in("torch.functional", "einsum", _torch_einsum_impl)


def test_torch_sums_ellipsis_dimensions():
    x = rand(4, 2, 3)
    got = teil.guarded(torch_einsum)("...ij->j", x)
    np.testing.assert_allclose(got, x.sum(axis=(0, 1)))
    got = teil.guarded(torch_einsum)("...->", x)
    np.testing.assert_allclose(got, x.sum())
    y = rand(5, 1, 3)
    got = teil.guarded(torch_einsum)("...i,...i->i", y, rand(4, 3))
    assert got.shape == (3,)
    # NumPy rejects the same equation, and so does the guard of numpy.einsum.
    rejected(np.einsum, "...ij->j", x)


def test_torch_operand_list():
    a, b = rand(2, 3), rand(3, 4)
    np.testing.assert_allclose(teil.guarded(torch_einsum)("ij,jk", [a, b]), a @ b)
    with pytest.raises(teil.ShapeError):
        teil.guarded(torch_einsum)("ij,jk", [a, rand(4, 4)])


def test_torch_still_rejects_what_torch_rejects():
    x = rand(4, 2, 3)
    for equation, operands in [
        ("...ij->k", [x]),  # `k` in no input
        ("...ij->jj", [x]),  # repeated output label
        ("...i,...i->i", [rand(2, 3), rand(4, 3)]),  # batch 2 against 4
        ("ij,jk->ik", [rand(2, 3), rand(4, 4)]),
    ]:
        with pytest.raises(teil.ShapeError):
            teil.guarded(torch_einsum)(equation, *operands)
        with pytest.raises(ValueError):
            _torch_einsum_impl(equation, *operands)


def test_torch_interleaved_reads_as_numpy():
    x = rand(2, 3)
    np.testing.assert_allclose(teil.guarded(torch_einsum)(x, [0, 30]), x)
    np.testing.assert_allclose(teil.guarded(torch_einsum)(x, [26, 0]), x.T)


# --- 3. einsums in disguise ------------------------------------------------------------------

MATMUL_OK = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 1, 2, 3), (4, 3, 6)),
    ((1, 2, 3), (7, 3, 4)),
    ((7, 1, 2, 3), (1, 6, 3, 4)),
]
MATMUL_BAD = [
    ((3,), (4,)),
    ((2, 3), (4,)),
    ((4,), (3, 2)),
    ((2, 3), (4, 5)),
    ((2, 2, 3), (3, 3, 4)),
    ((5, 1, 2, 3), (4, 3, 3, 6)),
]


@pytest.mark.parametrize("a,b", MATMUL_OK)
def test_matmul(a, b):
    same(np.matmul, rand(*a), rand(*b))


@pytest.mark.parametrize("a,b", MATMUL_BAD)
def test_matmul_rejected(a, b):
    rejected(np.matmul, rand(*a), rand(*b))


def test_matmul_scalar_is_numpys_error():
    with pytest.raises(ValueError) as info:
        teil.guarded(np.matmul)(np.float64(2.0), rand(3))
    assert not isinstance(info.value, teil.ShapeError)


@pytest.mark.parametrize(
    "a,b,kwargs",
    [
        ((2, 3, 4), (3, 4, 5), {}),
        ((2, 3, 4), (4, 5), {"axes": 1}),
        ((2, 3), (4, 5), {"axes": 0}),
        ((2, 3, 4), (4, 3), {"axes": ([1, 2], [1, 0])}),
        ((2, 3, 4), (4, 5), {"axes": (-1, 0)}),
        ((2, 3, 4), (3, 5), {"axes": ([1], [0])}),
    ],
)
def test_tensordot(a, b, kwargs):
    same(np.tensordot, rand(*a), rand(*b), **kwargs)


def test_tensordot_rejected():
    rejected(np.tensordot, rand(2, 3, 4), rand(3, 5), axes=([1, 2], [0, 1]))
    rejected(np.tensordot, rand(2, 3), rand(4, 5), axes=1)
    rejected(np.tensordot, rand(2, 3), rand(4, 5), 1)


def test_torch_tensordot_takes_dims():
    tensordot = stand_in("torch.functional", "tensordot",
                         lambda a, b, dims=2: np.tensordot(a, b, axes=dims))
    same(tensordot, rand(2, 3, 4), rand(4, 5), dims=1)
    rejected(tensordot, rand(2, 3, 4), rand(3, 5), dims=1)


@pytest.mark.parametrize(
    "fn,a,b",
    [
        (np.inner, (3,), (3,)),
        (np.inner, (2, 3), (4, 3)),
        (np.inner, (5, 2, 3), (3,)),
        (np.inner, (), (2, 3)),
        (np.inner, (), ()),
        (np.outer, (), (2, 3)),
        (np.outer, (3,), (4,)),
        (np.outer, (2, 3), (4,)),
        (np.outer, (2, 3), (4, 5)),
    ],
)
def test_inner_outer(fn, a, b):
    same(fn, rand(*a), rand(*b))


def test_inner_rejected():
    rejected(np.inner, rand(2, 3), rand(3, 2))


def test_torch_outer_takes_vectors_only():
    def impl(a, b):
        if np.ndim(a) != 1 or np.ndim(b) != 1:
            raise RuntimeError("outer: expected 1-D tensors")
        return np.outer(a, b)

    outer = stand_in("torch", "outer", impl)
    same(outer, rand(3), rand(4))
    with pytest.raises(RuntimeError):
        teil.guarded(outer)(rand(2, 3), rand(4))


@pytest.mark.parametrize(
    "shape,kwargs",
    [
        ((3, 3), {}),
        ((2, 3), {}),
        ((3, 2), {}),
        ((3, 4), {"offset": 1}),
        ((4, 3), {"offset": -2}),
        ((2, 3, 4), {"axis1": 0, "axis2": 2}),
        ((2, 3, 4), {"axis1": -1, "axis2": 1}),
        ((2, 3, 4), {"offset": 1}),
    ],
)
def test_trace(shape, kwargs):
    same(np.trace, rand(*shape), **kwargs)


@pytest.mark.parametrize(
    "fn,shape,args",
    [
        (np.transpose, (2, 3, 4), ()),
        (np.transpose, (2, 3, 4), ((1, 2, 0),)),
        (np.transpose, (2, 3, 4), ([-1, 0, 1],)),
        (np.transpose, (), ()),
        (np.moveaxis, (2, 3, 4), (0, -1)),
        (np.moveaxis, (2, 3, 4, 5), ([0, 1], [3, 0])),
    ],
)
def test_transpose_moveaxis(fn, shape, args):
    same(fn, rand(*shape), *args)


def test_bad_axes_are_the_wrapped_functions_to_reject():
    # Except transpose's: an invalid permutation is a ShapeError (test_guard_arguments.py).
    for fn, args in [
        (np.moveaxis, (rand(2, 3), 0, 5)),
        (np.moveaxis, (rand(2, 3), [0, 0], [0, 1])),
        (np.tensordot, (rand(2, 3), rand(3, 4), ([5], [0]))),
        (np.trace, (rand(3),)),
    ]:
        with pytest.raises((ValueError, IndexError)) as info:
            teil.guarded(fn)(*args)
        assert not isinstance(info.value, teil.ShapeError)


def test_torch_transpose_swaps_two_dimensions():
    transpose = stand_in("torch", "transpose", np.swapaxes)
    got = same(transpose, rand(2, 3, 4), 0, 2)
    assert got.shape == (4, 3, 2)


def test_guard_module_patches_and_restores():
    originals = {n: getattr(np, n) for n in ("einsum", "matmul", "tensordot", "trace")}
    with teil.guard_module(np) as module:
        assert module is np
        assert np.einsum is not originals["einsum"]
        np.testing.assert_allclose(
            np.matmul(np.ones((2, 3)), np.ones((3, 4))), np.full((2, 4), 3.0)
        )
        with pytest.raises(teil.ShapeError):
            np.einsum("ij,jk", rand(2, 3), rand(4, 4))
        with teil.guard_module(np):  # nested: nothing is guarded twice
            assert np.trace.__wrapped__ is originals["trace"]
    for name, fn in originals.items():
        assert getattr(np, name) is fn


def test_guard_module_restores_on_error_and_takes_names():
    module = types.ModuleType("fake")
    module.einsum = np.einsum
    module.matmul = np.matmul
    with pytest.raises(teil.ShapeError):
        with teil.guard_module(module, names=["matmul"]):
            assert module.einsum is np.einsum
            module.matmul(rand(2, 3), rand(4, 5))
    assert module.matmul is np.matmul


def test_guard_module_from_another_thread():
    seen = []
    with teil.guard_module(np):
        t = threading.Thread(target=lambda: seen.append(hasattr(np.einsum, "__wrapped__")))
        t.start()
        t.join()
    assert seen == [True]  # the patch is process-wide, as documented


@pytest.mark.parametrize("obj", [teil.guarded, teil.guard_module])
def test_docstring_examples(obj):
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, globs={"teil": teil})]
    assert any(t.examples for t in tests)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


def test_opt_einsum_more_labels_than_ascii_letters():
    # opt_einsum names labels past the 52nd with other characters; the guard renames them to
    # letters TeIL reads, in the same order, so an implicit output keeps its axes' order.
    args = []
    for k in range(59):
        args += [rand(1, 2) if k == 0 else rand(2, 2) if k < 58 else rand(2, 3), [k, k + 1]]
    got = same(oe.contract, *args, [59, 0])
    assert got.shape == (3, 1)
    equation, _ = teil._einsum_call("opt_einsum", tuple(args))
    assert len(set(equation) - set(",->")) == 60
