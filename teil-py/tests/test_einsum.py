"""The einsum guard: einsum_shape, einsum, einsum_program and guarded()."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

import teil
from conftest import small_ints

# (equation, operand shapes): matrix product, chains, diagonals, traces, scalars, broadcasting.
CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]),
    ("ijk,jl,kl->il", [(2, 3, 4), (3, 5), (4, 5)]),
    (",ij->ij", [(), (2, 2)]),
    # An extent of 1 broadcasts across operands for letters too (NumPy's and JAX's batch tests).
    ("i,i->i", [(3,), (1,)]),
    ("i,i", [(1,), (4,)]),
    ("ij,j->i", [(2, 3), (1,)]),
    ("ij,ij->ij", [(1, 3), (2, 1)]),
    ("ii,i->i", [(1, 1), (3,)]),
    ("bij,bjk->bik", [(1, 2, 3), (4, 3, 2)]),
    ("bij,bjk->bik", [(4, 2, 3), (1, 3, 2)]),
    ("...i,...i->...i", [(1, 3), (4, 1)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 1, 4)]),
]


@pytest.mark.parametrize("equation,shapes", CASES)
def test_einsum_shape_agrees_with_numpy(equation, shapes):
    operands = [np.zeros(s) for s in shapes]
    assert teil.einsum_shape(equation, *shapes) == np.einsum(equation, *operands).shape


@pytest.mark.parametrize("equation,shapes", CASES)
@pytest.mark.parametrize("backend", ["fast", "oracle"])
def test_einsum_agrees_with_numpy_exactly(equation, shapes, backend):
    rng = np.random.default_rng(7)
    operands = [small_ints(rng, s) for s in shapes]
    got = teil.einsum(equation, *operands, backend=backend)
    want = np.einsum(equation, *operands)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_einsum_converts_operands():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(teil.einsum("ij->ji", a), a.T.astype(float))
    np.testing.assert_array_equal(teil.einsum("i,i->", [1, 2], [3, 4]), 11.0)
    with pytest.raises(TypeError, match="operand 1"):
        teil.einsum("i,i->", [1, 2], ["x", "y"])


def test_einsum_shape_errors_point_into_the_equation():
    eq = "ij,jk->ik"
    with pytest.raises(teil.ShapeError) as info:
        teil.einsum_shape(eq, (2, 3), (4, 4))
    [d] = info.value.diagnostics
    assert d.code == "E0404" and d.file == "<equation>"
    assert eq[d.start : d.end] == "j"
    with pytest.raises(teil.ShapeError) as info:
        teil.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 4)))
    assert [d.code for d in info.value.diagnostics] == ["E0404"]


@pytest.mark.parametrize(
    "equation,shapes",
    [
        ("ij,jk->ik", [(2, 3)]),  # too few operands
        ("ij->ik", [(2, 3)]),  # output label not in any input
        ("ij->i", [(2, 3, 4)]),  # rank mismatch
        ("i$->i", [(2, 3)]),  # not a label
        ("i,i->i", [(2,), (3,)]),  # extents 2 and 3 do not broadcast
        ("ii,i->i", [(1, 3), (3,)]),  # a diagonal needs equal extents even with a 1
    ],
)
def test_einsum_shape_rejections_are_shape_errors(equation, shapes):
    with pytest.raises(teil.ShapeError) as info:
        teil.einsum_shape(equation, *shapes)
    assert info.value.diagnostics
    assert all(d.code.startswith("E04") for d in info.value.diagnostics)
    with pytest.raises(ValueError):  # numpy agrees that these are wrong
        np.einsum(equation, *[np.zeros(s) for s in shapes])


@pytest.mark.parametrize(
    "equation,shapes",
    [
        ("αβ,βγ->αγ", [(2, 3), (3, 4)]),
        ("βα,γβ", [(2, 3), (4, 2)]),  # implicit output in code-point order
        ("αz", [(2, 3)]),
        ("ÄÄ->Ä", [(3, 3)]),
        ("iα,α->i", [(2, 3), (1,)]),  # with broadcasting of an extent of 1
    ],
)
def test_unicode_labels_agree_with_opt_einsum(equation, shapes):
    rng = np.random.default_rng(3)
    operands = [small_ints(rng, s) for s in shapes]
    want = opt_einsum.contract(equation, *operands)
    assert teil.einsum_shape(equation, *shapes) == want.shape
    np.testing.assert_array_equal(teil.einsum(equation, *operands), want)


def test_invalid_characters_make_one_diagnostic():
    eq = "i2,2$->i2"
    with pytest.raises(teil.ShapeError) as info:
        teil.einsum_shape(eq, (2, 3), (3,))
    [d] = info.value.diagnostics
    assert d.code == "E0401" and eq[d.start : d.end] == "2"
    assert d.message == "invalid characters '2', '$' in an einsum equation"


ZERO_EXTENT_CASES = [
    ("i,i", [(0,), (0,)]),
    ("ij->i", [(2, 0)]),
    ("ij->j", [(2, 0)]),
    ("ij,jk", [(2, 0), (0, 3)]),
    ("i,i->i", [(0,), (1,)]),
    ("ij,j->i", [(2, 0), (1,)]),
    ("ii->i", [(0, 0)]),
    ("...,...", [(0,), (1,)]),
    ("bij,bjk->bik", [(0, 2, 3), (1, 3, 4)]),
]


@pytest.mark.parametrize("equation,shapes", ZERO_EXTENT_CASES)
@pytest.mark.parametrize("backend", ["fast", "oracle"])
def test_zero_extents_agree_with_numpy(equation, shapes, backend):
    operands = [np.ones(s) for s in shapes]
    want = np.einsum(equation, *operands)
    assert teil.einsum_shape(equation, *shapes) == want.shape
    got = teil.einsum(equation, *operands, backend=backend)
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_zero_extents_have_no_program_and_keep_every_other_check():
    with pytest.raises(teil.ShapeError) as info:
        teil.einsum_program("ij->i", (2, 0))
    [d] = info.value.diagnostics
    assert d.code == "E0102"
    assert "the result has shape [2] and holds only zeros" in d.notes[0]
    with pytest.raises(teil.ShapeError) as info:
        teil.einsum_shape("i,i->i", (0,), (3,))  # 0 broadcasts against 1 only
    assert [d.code for d in info.value.diagnostics] == ["E0404"]
    with pytest.raises(ValueError):
        np.einsum("i,i->i", np.ones(0), np.ones(3))


def test_einsum_shape_argument_errors():
    with pytest.raises(TypeError, match="shape 0"):
        teil.einsum_shape("i->i", "ab")
    with pytest.raises(ValueError, match="negative"):
        teil.einsum_shape("i->i", (-1,))


def test_einsum_shape_has_no_element_limit_below_overflow():
    # The product's index space has 2.4e13 cells: checking never allocates it.
    assert teil.einsum_shape("ij,jk->ik", (20000, 30000), (30000, 40000)) == (20000, 40000)


def test_einsum_program():
    text = teil.einsum_program("ij,jk->ik", (2, 3), (3, 4))
    assert "input alloc in0 : [2, 3]" in text and "output alloc out : [2, 4]" in text
    p = teil.Program(text)
    rng = np.random.default_rng(1)
    a, b = small_ints(rng, (2, 3)), small_ints(rng, (3, 4))
    np.testing.assert_array_equal(p.run(in0=a, in1=b)["out"], a @ b)
    infix = teil.einsum_program("ij,jk->ik", (2, 3), (3, 4), syntax="infix")
    assert "var in0 : [2 3]" in infix
    assert teil.Program(infix).fmt() == p.fmt()


class Spy:
    """An einsum-like function that records its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.mark.parametrize("fn", [np.einsum, opt_einsum.contract], ids=["numpy", "opt_einsum"])
def test_guarded(fn):
    spy = Spy(fn)
    guarded = teil.guarded(spy)
    a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
    result = guarded("ij,jk,kl->il", a, b, c)
    np.testing.assert_array_equal(result, fn("ij,jk,kl->il", a, b, c))
    assert spy.calls == 1
    with pytest.raises(teil.ShapeError) as info:
        guarded("ij,jk,kl->il", a, b, np.ones((5, 5)))
    assert spy.calls == 1  # rejected before the wrapped function ran
    assert [d.code for d in info.value.diagnostics] == ["E0404"]


def test_guarded_passes_keywords_and_returns_the_wrapped_result():
    guarded = teil.guarded(np.einsum)
    out = np.empty((2, 4))
    r = guarded("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)), out=out, optimize=True)
    assert r is out
    guarded_contract = teil.guarded(opt_einsum.contract)
    np.testing.assert_array_equal(
        guarded_contract("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)), optimize="greedy"),
        np.full((2, 4), 3.0),
    )
    assert guarded.__wrapped__ is np.einsum and guarded.__name__ == "einsum"


def test_guarded_reads_only_the_shape():
    class Shaped:
        """A tensor of another library: only `.shape` is read."""

        def __init__(self, *shape):
            self.shape = shape

        def __array__(self, *args, **kwargs):
            raise AssertionError("the guard must not convert operands")

    seen = []
    guarded = teil.guarded(lambda *args: seen.append(args) or "ran")
    assert guarded("ij,jk->ik", Shaped(2, 3), Shaped(3, 4)) == "ran"
    with pytest.raises(teil.ShapeError):
        guarded("ij,jk->ik", Shaped(2, 3), Shaped(2, 4))
    assert len(seen) == 1


def test_guarded_interleaved_form():
    guarded = teil.guarded(np.einsum)
    a, b = np.ones((2, 3)), np.ones((3, 4))
    np.testing.assert_array_equal(guarded(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
    np.testing.assert_array_equal(guarded(a, [0, 1], b, [1, 2]), a @ b)
    np.testing.assert_array_equal(guarded(a, [Ellipsis, 1], [Ellipsis]), a.sum(axis=1))
    with pytest.raises(teil.ShapeError):
        guarded(a, [0, 1], a, [1, 2])
    with pytest.raises(TypeError) as info:  # NumPy's own error: the guard cannot read it
        guarded(a, ["i", "j"])
    assert "teil" not in str(info.value)
