"""The guard's promise: the wrapped result never changes.

For every function the guard knows (`teil._EINSUM_NAMES` and `teil._TRANSLATED_NAMES`, of NumPy,
opt_einsum, and stand-ins for torch and JAX), each call below is made with its collection
arguments (subscript lists, axes, operands) given as every kind of Python collection: a list, a
tuple, a generator, an iterator, a range, a NumPy array, a `Sequence` subclass and an iterable
that is not a `Sequence`. The guarded call must return exactly what the unguarded call returns
(same value, shape, dtype and type), or raise what it raises: its own exception with its own
message, or a `ShapeError` where the library fails too. A one-shot iterator is never advanced
before the wrapped function sees it. The only rejection the guard adds of its own is an invalid
`transpose` permutation, which NumPy rejects too: a `ShapeError` with TeIL's codes.
"""

from __future__ import annotations

import collections.abc
import inspect
import operator
import re
from pathlib import Path

import numpy as np
import opt_einsum as oe
import pytest

import teil

SPEC = Path(__file__).resolve().parents[2] / "spec"

# --- the kinds of collection ------------------------------------------------------------------


class NotRepresentable(Exception):
    """These values cannot be given as this kind (a range of non-integers)."""


class Seq(collections.abc.Sequence):
    """A user-defined `Sequence`."""

    def __init__(self, values):
        self._values = list(values)

    def __len__(self):
        return len(self._values)

    def __getitem__(self, k):
        return self._values[k]

    def __repr__(self):
        return f"Seq({self._values!r})"


class Iterable:
    """A user-defined iterable that is not a `Sequence` (no length, no indexing)."""

    def __init__(self, values):
        self._values = list(values)

    def __iter__(self):
        return iter(self._values)

    def __repr__(self):
        return f"Iterable({self._values!r})"


def as_range(values):
    values = list(values)
    if not all(type(v) is int for v in values):
        raise NotRepresentable
    if len(values) < 2:
        return range(values[0], values[0] + 1) if values else range(0)
    step = values[1] - values[0]
    if step == 0 or any(b - a != step for a, b in zip(values, values[1:])):
        raise NotRepresentable
    return range(values[0], values[-1] + step, step)


# The length each iterator of the "iterator" kind started with, by id, so that a test can tell
# whether anything advanced it (it stays alive as long as the call's arguments do).
STARTED = {}


def as_iterator(values):
    values = list(values)
    it = iter(values)
    STARTED[id(it)] = len(values)
    return it


KINDS = {
    "list": list,
    "tuple": tuple,
    "generator": lambda values: (v for v in list(values)),
    "iterator": as_iterator,
    "range": as_range,
    "array": np.array,
    "sequence": Seq,
    "iterable": Iterable,
}
# The kinds that may be one-shot (or may not survive a second reading): the guard never reads
# them, so a call with one in a subscript or axis argument is passed on unchecked.
UNREAD = {"generator", "iterator", "iterable"}


# --- the functions -----------------------------------------------------------------------------


def stand_in(module, name, impl):
    """A function the guard takes for `module.name` (it reads nothing else), computing `impl`."""

    def fn(*args, **kwargs):
        return impl(*args, **kwargs)

    fn.__module__, fn.__name__, fn.__qualname__ = module, name, name
    return fn


def _torch_outer(a, b):
    if np.ndim(a) != 1 or np.ndim(b) != 1:
        raise RuntimeError("outer: expected 1-D tensors")
    return np.outer(a, b)


def _torch_trace(a):
    if np.ndim(a) != 2:
        raise RuntimeError("trace: expected a matrix")
    return np.trace(a)


FUNCTIONS = {
    "numpy": {name: getattr(np, name) for name in
              ("einsum", "tensordot", "matmul", "inner", "outer", "trace", "transpose",
               "moveaxis")},
    "opt_einsum": {"contract": oe.contract},
    # torch reads interleaved subscripts as NumPy does, calls tensordot's axes `dims`, and
    # torch.transpose swaps two dimensions.
    "torch": {
        "einsum": stand_in("torch.functional", "einsum", np.einsum),
        "tensordot": stand_in("torch.functional", "tensordot",
                              lambda a, b, dims=2: np.tensordot(a, b, axes=dims)),
        "matmul": stand_in("torch", "matmul", np.matmul),
        "inner": stand_in("torch", "inner", np.inner),
        "outer": stand_in("torch", "outer", _torch_outer),
        "trace": stand_in("torch", "trace", _torch_trace),
        "transpose": stand_in("torch", "transpose", np.swapaxes),
        "moveaxis": stand_in("torch", "moveaxis", np.moveaxis),
    },
    # jax.numpy reads interleaved subscripts as opt_einsum does; the rest as NumPy.
    "jax": {
        "einsum": stand_in("jax.numpy", "einsum", oe.contract),
        **{name: stand_in("jax.numpy", name, getattr(np, name)) for name in
           ("tensordot", "matmul", "inner", "outer", "trace", "transpose", "moveaxis")},
    },
}

A = np.arange(24.0).reshape(2, 3, 4) - 11.5
B = np.arange(12.0).reshape(3, 4) / 7
V4 = np.array([0.5, -1.0, 2.0, 3.0])
V5 = np.ones(5)
M23 = np.arange(6.0).reshape(2, 3)
R = np.arange(120.0).reshape(2, 3, 4, 5)


# Each template: the functions it calls (names; libraries, or None for all), an id, whether its
# collections are subscripts or axes (`reads`: the guard reads them unless one-shot), and the
# call, built from `S`, which makes a collection of the kind under test.
TEMPLATES = [
    # einsum, interleaved: subscript lists (and an output list)
    (("einsum", "contract"), None, "sublists", True, lambda S: ((A, S([0, 1, 2]), V4, S([2])), {})),
    (("einsum", "contract"), None, "sublists-out", True,
     lambda S: ((A, S([0, 1, 2]), V4, S([2]), S([2, 1])), {})),
    (("einsum", "contract"), None, "sublists-ellipsis", True,
     lambda S: ((A, S([Ellipsis, 2]), V4, S([2]), S([Ellipsis])), {})),
    (("einsum",), ("numpy",), "sublists-optimize", True,
     lambda S: ((A, S([0, 1, 2]), B, S([1, 2])), {"optimize": True})),
    (("einsum", "contract"), None, "sublists-mismatch", True,
     lambda S: ((A, S([0, 1, 2]), V5, S([2])), {})),
    (("einsum", "contract"), None, "sublists-rank", True,
     lambda S: ((A, S([0, 1]), V4, S([1])), {})),
    # einsum with an equation: operands as collections
    (("einsum", "contract"), None, "operands", False,
     lambda S: (("i,i->", S([1, 2, 3]), S([4, 5, 6])), {})),
    (("einsum", "contract"), None, "operands-mismatch", False,
     lambda S: (("i,i->", S([1, 2, 3]), S([4, 5])), {})),
    # tensordot: the pair of axis lists, each list, or the pair alone
    (("tensordot",), None, "pair-of-lists", True,
     lambda S: ((A, B, S([S([1, 2]), S([0, 1])])), {})),
    (("tensordot",), None, "lists", True, lambda S: ((A, B, (S([1, 2]), S([0, 1]))), {})),
    (("tensordot",), None, "pair", True, lambda S: ((A, M23.T, S([0, 1])), {})),
    (("tensordot",), None, "lists-mismatch", True,
     lambda S: ((A, B, (S([1, 2]), S([1, 0]))), {})),
    (("tensordot",), None, "lists-out-of-range", True,
     lambda S: ((A, B, (S([1, 5]), S([0, 1]))), {})),
    (("tensordot",), None, "operands", False,
     lambda S: ((S([1, 2, 3]), S([4, 5, 6]), 1), {})),
    # matmul, inner, outer: operands as collections
    (("matmul", "inner", "outer"), None, "vectors", False,
     lambda S: ((S([1, 2, 3]), S([4, 5, 6])), {})),
    (("matmul", "inner", "outer"), None, "vectors-mismatch", False,
     lambda S: ((S([1, 2, 3]), S([4, 5])), {})),
    (("matmul", "inner", "outer"), None, "matrices", False,
     lambda S: ((S([S([1, 2, 3]), S([4, 5, 6])]), S([S([1, 2]), S([3, 4]), S([5, 6])])), {})),
    (("matmul", "inner", "outer"), None, "rows", False,
     lambda S: (([S([1, 2, 3]), S([4, 5, 6])], [S([1, 2, 3]), S([3, 4, 5])]), {})),
    # trace: the operand as a collection
    (("trace",), None, "matrix", False, lambda S: ((S([S([1, 2]), S([3, 4])]),), {})),
    (("trace",), None, "rows", False, lambda S: (([S([1, 2, 3]), S([4, 5, 6])],), {})),
    (("trace",), ("numpy", "jax"), "rows-offset", False,
     lambda S: (([S([1, 2, 3]), S([4, 5, 6])],), {"offset": 1})),
    # transpose: axes (NumPy, JAX), and the operand
    (("transpose",), ("numpy", "jax"), "axes", True, lambda S: ((A, S([1, 2, 0])), {})),
    (("transpose",), ("numpy", "jax"), "axes-range", True, lambda S: ((A, S([2, 1, 0])), {})),
    (("transpose",), ("numpy", "jax"), "axes-keyword", True,
     lambda S: ((R,), {"axes": S([0, 2, 1, 3])})),
    (("transpose",), ("numpy", "jax"), "axes-negative", True,
     lambda S: ((A, S([-1, 0, 1])), {})),
    (("transpose",), ("numpy", "jax"), "axes-too-few", True, lambda S: ((A, S([0, 1])), {})),
    (("transpose",), ("numpy", "jax"), "axes-too-many", True,
     lambda S: ((A, S([0, 1, 2, 3])), {})),
    (("transpose",), ("numpy", "jax"), "axes-repeated", True,
     lambda S: ((A, S([0, 0, 1])), {})),
    (("transpose",), ("numpy", "jax"), "axes-out-of-range", True,
     lambda S: ((A, S([0, 1, 5])), {})),
    (("transpose",), ("numpy", "jax"), "axes-not-integers", True,
     lambda S: ((A, S([0.0, 1.0, 2.0])), {})),
    (("transpose",), ("numpy", "jax"), "operand", False,
     lambda S: ((S([S([1, 2, 3]), S([4, 5, 6])]),), {})),
    (("transpose",), ("torch",), "operand", False,
     lambda S: ((S([S([1, 2, 3]), S([4, 5, 6])]), 0, 1), {})),
    (("transpose",), ("torch",), "rows", False,
     lambda S: (([S([1, 2, 3]), S([4, 5, 6])], 1, 0), {})),
    # moveaxis: source and destination
    (("moveaxis",), None, "one", True, lambda S: ((A, S([0]), S([2])), {})),
    (("moveaxis",), None, "two", True, lambda S: ((R, S([0, 1]), S([3, 0])), {})),
    (("moveaxis",), None, "two-range", True, lambda S: ((R, S([0, 1]), S([2, 3])), {})),
    (("moveaxis",), None, "count-mismatch", True, lambda S: ((A, S([0, 1]), S([2])), {})),
    (("moveaxis",), None, "out-of-range", True, lambda S: ((A, S([0]), S([7])), {})),
    (("moveaxis",), None, "operand", False, lambda S: ((S([S([1, 2]), S([3, 4])]), 0, 1), {})),
]


def _representable(build, make):
    try:
        build(make)
    except NotRepresentable:
        return False
    return True


CASES = [
    pytest.param(library, name, build, reads, kind,
                 id=f"{library}.{name}-{template}-{kind}")
    for library, functions in FUNCTIONS.items()
    for name in functions
    for names, libraries, template, reads, build in TEMPLATES
    if name in names and (libraries is None or library in libraries)
    for kind in KINDS
    if _representable(build, KINDS[kind])
]


def test_every_guarded_function_meets_every_kind():
    """The table above covers every function the guard knows, with every kind of collection:
    a name added to the guard fails here until it has calls of its own."""
    covered = {(c.values[0], c.values[1], c.values[4]) for c in CASES}
    names = set(teil._EINSUM_NAMES) | set(teil._TRANSLATED_NAMES)
    assert {n for fns in FUNCTIONS.values() for n in fns} == names
    for library, functions in FUNCTIONS.items():
        for name in functions:
            for kind in KINDS:
                assert (library, name, kind) in covered, (library, name, kind)


# --- the check ---------------------------------------------------------------------------------


def _one_shots(value, found):
    """Every generator and iterator in an argument (inside lists, tuples and `Seq`s)."""
    if isinstance(value, collections.abc.Iterator):
        found.append(value)
    elif isinstance(value, (list, tuple, Seq)):
        for item in value:
            _one_shots(item, found)
    return found


def _untouched(it):
    if inspect.isgenerator(it):
        return inspect.getgeneratorstate(it) == inspect.GEN_CREATED
    return operator.length_hint(it) == STARTED[id(it)]


def _equal(got, want):
    """`np.array_equal`, where an object array holding the call's own iterators (NumPy's
    reading of an iterator operand: a 0-d object) holds another call's iterators of the type."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype == object and want.dtype == object and got.shape == want.shape:
        def key(x):
            return type(x) if isinstance(x, (collections.abc.Iterator, Iterable)) else x

        return [key(x) for x in got.flat] == [key(x) for x in want.flat]
    return np.array_equal(got, want)


def _message(e):
    # Object addresses differ between the two calls' generators.
    return re.sub(r" at 0x[0-9a-f]+", "", str(e))


def _outcome(fn, make, build):
    args, kwargs = build(make)
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # the library's own error, compared below
        return None, e


@pytest.mark.parametrize("library,name,build,reads,kind", CASES)
def test_guarded_result_never_changes(library, name, build, reads, kind):
    fn = FUNCTIONS[library][name]
    make = KINDS[kind]

    want, want_error = _outcome(fn, make, build)
    got, got_error = _outcome(teil.guarded(fn), make, build)

    if want_error is None:
        assert got_error is None, f"the guard rejected a call the library accepts: {got_error!r}"
        assert type(got) is type(want)
        assert np.shape(got) == np.shape(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        assert _equal(got, want)
    elif isinstance(got_error, teil.ShapeError):
        assert isinstance(got_error, ValueError) and got_error.diagnostics
    else:
        assert type(got_error) is type(want_error)
        assert _message(got_error) == _message(want_error)

    # The wrapped function sees every one-shot iterator as the caller made it.
    seen = []

    def spy(*args, **kwargs):
        seen.append(all(_untouched(it) for it in _one_shots((args, kwargs), [])))
        return fn(*args, **kwargs)

    spy.__module__, spy.__name__ = fn.__module__, fn.__name__
    again, again_error = _outcome(teil.guarded(spy), make, build)
    assert seen in ([], [True])
    assert (again_error is None) == (got_error is None)
    if got_error is None:
        assert _equal(again, want)
    else:
        assert type(again_error) is type(got_error)

    # What the guard read: a collection it may read, in a call the library accepts, is
    # checked as the library reads it; a generator, an iterator or an iterable without a
    # length in a subscript or axis argument is not read at all.
    args, kwargs = build(make)
    try:
        checked = teil._check(fn, args, kwargs)
    except teil.ShapeError:
        checked = "rejected"
        assert want_error is not None
    if reads and kind in UNREAD:
        assert checked is None
    elif want_error is None and reads:
        assert checked == np.shape(want)
    for it in _one_shots((args, kwargs), []):
        assert _untouched(it)


# --- the examples ---------------------------------------------------------------------


def test_moveaxis_with_generators_returns_numpys_result():
    a = np.ones((2, 3, 4))
    got = teil.guarded(np.moveaxis)(a, (i for i in [0]), (i for i in [2]))
    assert got.shape == np.moveaxis(a, (i for i in [0]), (i for i in [2])).shape == (3, 4, 2)


def test_tensordot_with_generator_axes_returns_numpys_result():
    a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(3, 4)
    got = teil.guarded(np.tensordot)(a, b, (g for g in ([1, 2], [0, 1])))
    want = np.tensordot(a, b, (g for g in ([1, 2], [0, 1])))
    assert got.shape == want.shape == (2,)
    np.testing.assert_array_equal(got, want)


def test_einsum_with_a_generator_sublist_is_passed_on_whole():
    a = np.arange(6.0).reshape(2, 3)
    got = teil.guarded(np.einsum)(a, (i for i in [0, 1]), (i for i in [1, 0]))
    np.testing.assert_array_equal(got, a.T)
    with teil.guard_module(np):
        np.testing.assert_array_equal(np.einsum(a, iter([0, 1]), iter([1])), a.sum(axis=0))


# --- transpose's invalid permutations ---------------------------------------------------------


@pytest.mark.parametrize(
    "shape,axes,codes",
    [
        ((2, 3, 4), [0, 1], ["E0403"]),
        ((2, 3, 4), [0, 1, 2, 3], ["E0403"]),
        ((2, 3, 4), [2, 1], ["E0403"]),
        ((2, 3), 0, ["E0403"]),
        ((), [0], ["E0403"]),
        ((2, 3, 4), [0, 0, 1], ["E0406"]),
        ((2, 3, 4), [2, 1, -1], ["E0406"]),
        ((2, 3, 4), [0, 1, 5], ["E0405"]),
        ((2, 3, 4), [0, 1, -4], ["E0405"]),
        ((3,), 5, ["E0405"]),
        ((2, 3, 4), [0, 5, 5], ["E0405", "E0406"]),
    ],
)
@pytest.mark.parametrize("kind", ["list", "tuple", "array", "sequence", "range"])
def test_transpose_with_invalid_axes_is_a_shape_error(shape, axes, codes, kind):
    a = np.zeros(shape)
    if isinstance(axes, int):
        given = axes
    else:
        try:
            given = KINDS[kind](axes)
        except NotRepresentable:  # not a range: the same call as a tuple
            given = tuple(axes)
    with pytest.raises((ValueError, np.exceptions.AxisError)) as numpy_error:
        np.transpose(a, given)
    assert not isinstance(numpy_error.value, teil.ShapeError)
    for fn in (np.transpose, FUNCTIONS["jax"]["transpose"]):
        with pytest.raises(teil.ShapeError) as info:
            teil.guarded(fn)(a, given)
        e = info.value
        assert isinstance(e, ValueError)
        assert [d.code for d in e.diagnostics] == codes
        assert str(e).startswith(f"[{codes[0]}]")
        assert any("transpose was checked as the einsum" in n for n in e.__notes__)
    with teil.guard_module(np):
        with pytest.raises(teil.ShapeError):
            np.transpose(a, axes=given)


def test_transpose_shape_error_names_the_problem():
    with pytest.raises(teil.ShapeError) as info:
        teil.guarded(np.transpose)(np.zeros((2, 3, 4)), (1, 0))
    d = info.value.diagnostics[0]
    assert (d.code, d.message) == (
        "E0403", "operand 0 has 2 subscripts but its shape [2, 3, 4] has 3 dimensions")
    assert info.value.__notes__ == [
        "teil.guarded: numpy.transpose was checked as the einsum 'AB->BA' of shapes (2, 3, 4)"]
    with pytest.raises(teil.ShapeError) as info:
        teil.guarded(np.transpose)(np.zeros((2, 3, 4)), (0, 1, 7))
    assert [d.message for d in info.value.diagnostics] == [
        "output index `D` does not occur in any operand"]


def test_transpose_calls_numpy_rejects_for_their_types_stay_numpys():
    a = np.zeros((2, 3))
    for args in [(a, (0.0, 1.0)), (a, (i for i in [1, 0])), (a, iter([0])), (a, "ab"),
                 (a, 1, 0)]:
        with pytest.raises(Exception) as own:
            np.transpose(*args)
        with pytest.raises(Exception) as guarded:
            teil.guarded(np.transpose)(*args)
        assert type(guarded.value) is type(own.value)
        assert _message(guarded.value) == _message(own.value)


def test_torch_transpose_out_of_range_stays_torchs():
    transpose = FUNCTIONS["torch"]["transpose"]
    with pytest.raises(np.exceptions.AxisError):
        teil.guarded(transpose)(np.zeros((2, 3)), 0, 5)


# --- what TeIL cannot check is the library's ---------------------------------------------------


@pytest.mark.parametrize(
    "fn,args",
    [
        (np.transpose, (np.zeros((1,) * 60),)),
        (np.moveaxis, (np.zeros((1,) * 60), 0, -1)),
        (np.trace, (np.zeros((1,) * 55 + (2, 2)),)),
        (np.einsum, ("...->...", np.zeros((1,) * 40))),
        (np.matmul, (np.zeros((1,) * 40 + (2, 3)), np.zeros((3, 4)))),
        (np.tensordot, (np.zeros((1,) * 30), np.zeros((1,) * 30), 0)),
        (np.inner, (np.zeros((1,) * 30 + (3,)), np.zeros((1,) * 30 + (3,)))),
    ],
)
def test_calls_past_teils_limits_are_the_librarys(fn, args):
    """NumPy allows 64 dimensions, TeIL checks 32 (E0104): such calls go on unchecked."""
    np.testing.assert_array_equal(teil.guarded(fn)(*args), fn(*args))
    assert np.shape(teil.guarded(fn)(*args)) == np.shape(fn(*args))
    assert teil._check(fn, args, {}) is None


def test_a_real_error_past_the_limits_is_still_a_shape_error():
    with pytest.raises(teil.ShapeError) as info:
        teil.guarded(np.einsum)("...i,...i", np.zeros((1,) * 40 + (2,)), np.zeros((3,)))
    assert "E0404" in [d.code for d in info.value.diagnostics]


def test_limit_codes_are_the_einsum_front_ends():
    """The codes the guard takes for 'too large to check' are those of the einsum front end's
    limits table (spec/frontends.md, "Limits"), less E0005, which only `.tin` files reach."""
    section = (SPEC / "frontends.md").read_text().split("\n## Limits\n", 1)[1].split("```")[0]
    codes = set(re.findall(r"E0\d{3}", section))
    assert teil._LIMIT_CODES == codes - {"E0005"}


def test_trace_offset_of_a_wrong_type_is_numpys_error():
    for offset in (1.0, np.array([1]), "1"):
        with pytest.raises(TypeError) as own:
            np.trace(np.ones((3, 3)), offset=offset)
        with pytest.raises(TypeError) as guarded:
            teil.guarded(np.trace)(np.ones((3, 3)), offset=offset)
        assert str(guarded.value) == str(own.value)


def test_an_operand_whose_shape_cannot_be_read_is_the_librarys():
    class Unknown:
        shape = (None, 3)  # a symbolic dimension, as other libraries have

    seen = []
    fn = stand_in("numpy", "matmul", lambda a, b: seen.append((a, b)) or "ran")
    assert teil.guarded(fn)(Unknown(), np.ones((3, 2))) == "ran"
    assert len(seen) == 1
