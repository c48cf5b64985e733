"""Element types (`f32`, `f64`) and functions from Python: float32 arrays in and out of
`Program.run`, the E0605 rule for inputs, `teil.einsum` in float32, and the element type in
the program's metadata and displays."""

from __future__ import annotations

import numpy as np
import pytest

import teil

EVALUATORS = ["fast", "oracle"]

SCALE = """\
input alloc x : f32[2, 3]
input alloc w : f32[3]
output alloc y : f32[2, 3]
y = x * expa 1 2 w + x / 3
"""


def f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def sequential_sum(terms: np.ndarray) -> np.float32:
    """A sum in binary32, left to right, each step rounded: TeIL's `red+` on `f32`."""
    acc = np.float32(terms[0])
    for t in terms[1:]:
        acc = np.float32(acc + np.float32(t))
    return acc


@pytest.fixture
def rng():
    return np.random.default_rng(5)


def uniform32(rng, shape) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Program.run


@pytest.mark.parametrize("backend", EVALUATORS)
def test_f32_inputs_and_outputs_are_float32_with_binary32_arithmetic(rng, backend):
    x, w = uniform32(rng, (2, 3)), uniform32(rng, (3,))
    y = teil.Program(SCALE).run(x=x, w=w, backend=backend)["y"]
    assert y.dtype == np.float32 and y.shape == (2, 3)
    # NumPy's float32 operations round each result to binary32, as TeIL's f32 does.
    np.testing.assert_array_equal(y, x * w[None, :] + x / np.float32(3))


@pytest.mark.parametrize("backend", EVALUATORS)
def test_f32_sums_round_every_step(backend):
    p = teil.Program("input alloc x : f32[4]\noutput alloc s : f32[]\ns = red+ 1 x")
    # 1 + 2^-24 rounds to 1 in binary32 at every step; in binary64 the three would count.
    x = f32([1.0, 2.0**-24, 2.0**-24, 2.0**-24])
    s = p.run(x=x, backend=backend)["s"]
    assert s.dtype == np.float32 and s.shape == ()
    assert s == sequential_sum(x) == np.float32(1.0)
    p64 = teil.Program("input alloc x : [4]\noutput alloc s : []\ns = red+ 1 x")
    assert p64.run(x=x, backend=backend)["s"] == 1.0 + 3 * 2.0**-24  # float32 widens exactly


def test_fast_and_oracle_agree_bit_for_bit_on_f32(rng):
    src = """\
input alloc A : f32[3, 4]
input alloc B : f32[4, 5]
output alloc C : f32[3, 5]
output alloc D : f32[3, 5]
C = red+ 2 (diag 2 3 (prod A B))
D = tanh C + max C (expa 1 3 (expa 1 5 0.25))
"""
    p = teil.Program(src)
    a, b = uniform32(rng, (3, 4)), uniform32(rng, (4, 5))
    fast, oracle = p.run(A=a, B=b), p.run(A=a, B=b, backend="oracle")
    for name in ["C", "D"]:
        assert fast[name].dtype == oracle[name].dtype == np.float32
        assert fast[name].tobytes() == oracle[name].tobytes()
    # Each cell of C: products rounded to binary32, summed left to right in binary32.
    for i in range(3):
        for k in range(5):
            assert fast["C"][i, k] == sequential_sum(a[i, :] * b[:, k])


def test_mixed_program_returns_each_output_in_its_own_dtype():
    src = """\
input alloc x : f32[3]
output alloc y : [3]
output alloc z : f32[3]
y = 0.1 * f64 x
z = 0.1 * x
"""
    x = f32([1.0, 2.5, -3.0])
    out = teil.Program(src).run(x=x)
    assert out["y"].dtype == np.float64 and out["z"].dtype == np.float32
    np.testing.assert_array_equal(out["y"], x.astype(np.float64) * 0.1)
    # The literal takes its context's type: 0.1 rounded once to binary32.
    np.testing.assert_array_equal(out["z"], x * np.float32(0.1))


def test_undefined_f32_cells_are_float32_nan():
    p = teil.Program(
        "input alloc x : f32[2]\noutput alloc y : f32[2]\noutput alloc u : f32[2]\ny = x"
    )
    out = p.run(x=f32([1, 2]))
    assert out["u"].dtype == np.float32 and np.isnan(out["u"]).all()


# The boundary rule: nothing rounds a caller's number silently.


@pytest.mark.parametrize("backend", EVALUATORS)
def test_values_that_are_binary32_are_accepted_in_any_array_like(backend):
    p = teil.Program("input alloc x : f32[3]\noutput alloc y : f32[3]\ny = x + x")
    want = f32([1.0, -0.5, 3.0]) * 2
    for given in [
        f32([1.0, -0.5, 3.0]),                      # float32, read as it is
        np.array([1.0, -0.5, 3.0]),                 # float64 holding binary32 values
        [1.0, -0.5, 3],                             # a list
        np.array([1, 0, 3], np.int64) - np.array([0, 0.5, 0]),  # computed in float64
        np.array([1.0, -0.5, 3.0], np.float16),     # narrower floats widen exactly
        np.asfortranarray(np.array([1.0, -0.5, 3.0])),
    ]:
        y = p.run(x=given, backend=backend)["y"]
        assert y.dtype == np.float32
        np.testing.assert_array_equal(y, want)
    # 2^24 + 1 is an integer, but not a binary32 number; 2^24 + 2 is.
    assert p.run(x=np.array([1, 2, 2**24 + 2]))["y"][2] == 2.0**25 + 4
    # Any NaN is a binary32 value.
    assert np.isnan(p.run(x=[np.nan, 1, 2], backend=backend)["y"][0])


@pytest.mark.parametrize("backend", EVALUATORS + ["c"])
def test_values_that_are_not_binary32_raise_e0605(backend):
    p = teil.Program("input alloc x : f32[2, 2]\noutput alloc y : f32[2, 2]\ny = x + x")
    with pytest.raises(teil.RunError) as info:
        p.run(x=np.array([[0.5, 1.0], [0.1, 2.0]]), backend=backend)
    e = info.value
    assert isinstance(e, ValueError)
    assert (e.code, e.codes, e.diagnostics) == ("E0605", ["E0605"], [])
    assert str(e) == "[E0605] input `x` is declared f32 but element 2 (0.1) is not an f32 value"
    for bad in [[[0.1, 0], [0, 0]], np.full((2, 2), 2**24 + 1), np.full((2, 2), 1e300)]:
        with pytest.raises(teil.RunError, match=r"^\[E0605\] input `x` is declared f32"):
            p.run(x=bad, backend=backend)
    # Rounded by the caller, the same numbers are accepted.
    if backend != "c":
        y = p.run(x=np.array([[0.5, 1.0], [0.1, 2.0]]).astype(np.float32), backend=backend)["y"]
        assert y[1, 0] == np.float32(0.1) * 2


def test_e0605_is_reported_with_the_other_input_errors_first():
    p = teil.Program(
        "input alloc x : f32[2]\ninput alloc y : f32[2]\noutput alloc z : f32[2]\nz = x + y"
    )
    # Names are checked before values: E0604 for the missing input, not E0605.
    with pytest.raises(teil.RunError) as info:
        p.run(x=[0.1, 0.2])
    assert info.value.codes == ["E0604"]
    # Shapes, then element types, of each input.
    with pytest.raises(teil.RunError) as info:
        p.run(x=[0.1, 0.2, 0.3], y=[1, 2])
    assert info.value.code == "E0603"


def test_trace_takes_f32_inputs_by_the_same_rule():
    p = teil.Program("input alloc x : f32[3]\noutput alloc s : f32[]\ns = red+ 1 x")
    t = p.trace("s", x=f32([1.0, 2.0**-24, 2.0**-24]))
    assert t.steps[-1].formula.split() == ["=", "1"]  # each step rounded to binary32
    with pytest.raises(teil.RunError) as info:
        p.trace("s", x=[0.1, 0, 0])
    assert info.value.codes == ["E0605"]


def test_float32_arrays_widen_exactly_into_f64_inputs(rng):
    p = teil.Program("input alloc x : [3]\noutput alloc y : [3]\ny = x / 3")
    x = uniform32(rng, (3,))
    y = p.run(x=x)["y"]
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, x.astype(np.float64) / 3)


def test_the_c_backend_refuses_f32_programs_and_functions_with_e0802():
    with pytest.raises(teil.RunError) as info:
        teil.Program(SCALE).run(x=np.ones((2, 3), np.float32), w=np.ones(3, np.float32),
                                backend="c")
    assert info.value.code == "E0802"
    p = teil.Program("input alloc x : [2]\noutput alloc y : [2]\ny = exp x")
    with pytest.raises(teil.RunError) as info:
        p.run(x=[0.0, 1.0], backend="c")
    assert info.value.code == "E0802"
    np.testing.assert_array_equal(p.run(x=[0.0, 1.0])["y"], [1.0, np.e])


# ---------------------------------------------------------------------------------------------
# Functions


SOFTMAX = """\
input alloc X : f32[4, 8]
output alloc Y : f32[4, 8]
alloc M : f32[4]
alloc E : f32[4, 8]
M = redmax 2 X
E = exp (X - expa 2 8 M)
Y = E / expa 2 8 (red+ 2 E)
"""


def test_softmax_in_f32(rng):
    x = rng.normal(size=(4, 8)).astype(np.float32) * 4
    p = teil.Program(SOFTMAX)
    y = p.run(X=x)["Y"]
    assert y.dtype == np.float32
    assert y.tobytes() == p.run(X=x, backend="oracle")["Y"].tobytes()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    # NumPy's float32 exp is not always correctly rounded, and it sums in pairs: a few ulps.
    np.testing.assert_allclose(y, want, rtol=4e-6, atol=0)
    # The same program in float64, for reference: the f32 result is within binary32's precision.
    y64 = teil.Program(SOFTMAX.replace("f32", "f64")).run(X=x)["Y"]
    np.testing.assert_allclose(y, y64, rtol=4e-6, atol=0)


@pytest.mark.parametrize("backend", EVALUATORS)
def test_functions_in_f64(backend):
    x = np.array([0.5, 1.0, 2.0, 0.25])
    prog = """\
input alloc x : [4]
output alloc e : [4]
output alloc l : [4]
output alloc s : [4]
output alloc t : [4]
output alloc a : [4]
output alloc hi : [4]
output alloc lo : [4]
e = exp x
l = log x
s = sqrt x
t = tanh x
a = abs ((0 - 1) * x)
hi = max x (expa 1 4 1)
lo = min x (expa 1 4 1)
"""
    out = teil.Program(prog).run(x=x, backend=backend)
    np.testing.assert_allclose(out["e"], np.exp(x), rtol=1e-15)
    np.testing.assert_allclose(out["l"], np.log(x), rtol=1e-15)
    np.testing.assert_array_equal(out["s"], np.sqrt(x))  # IEEE sqrt is correctly rounded
    np.testing.assert_allclose(out["t"], np.tanh(x), rtol=1e-15)
    np.testing.assert_array_equal(out["a"], x)
    np.testing.assert_array_equal(out["hi"], np.maximum(x, 1))
    np.testing.assert_array_equal(out["lo"], np.minimum(x, 1))


# ---------------------------------------------------------------------------------------------
# teil.einsum


EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("i,i->", [(7,), (7,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]),
    ("ij,j->i", [(2, 3), (1,)]),
]


@pytest.mark.parametrize("backend", EVALUATORS)
@pytest.mark.parametrize("equation,shapes", EQUATIONS)
def test_einsum_of_float32_is_float32_as_in_numpy(rng, backend, equation, shapes):
    ops = [uniform32(rng, s) for s in shapes]
    got = teil.einsum(equation, *ops, backend=backend)
    want = np.einsum(equation, *ops)
    assert got.dtype == want.dtype == np.float32
    assert got.shape == want.shape
    # NumPy may sum in another order (or in pairs): within a few dozen binary32 roundings
    # (2^-24 each, relative) of sums of at most 12 products of numbers in [-1, 1).
    np.testing.assert_allclose(got, want, rtol=0, atol=32 * 2.0**-24)
    # Exactly the f32 program einsum_program prints, run on the same arrays.
    p = teil.Program(teil.einsum_program(equation, *shapes, dtype=np.float32))
    assert set(p.dtypes.values()) == {"float32"}
    ran = p.run({f"in{k}": a for k, a in enumerate(ops)}, backend=backend)["out"]
    assert ran.dtype == np.float32 and got.tobytes() == ran.tobytes()


def test_einsum_in_float32_rounds_as_teil_f32():
    # Products and sums each rounded to binary32, summed left to right.
    a = f32([1.0, 2.0**-24, 2.0**-24, 2.0**-24])
    got = teil.einsum("i,i->", a, np.ones(4, np.float32))
    assert got.dtype == np.float32 and got == np.float32(1.0)
    # The float64 computation of the same numbers counts every term.
    assert teil.einsum("i,i->", a.astype(np.float64), np.ones(4)) == 1.0 + 3 * 2.0**-24
    rng = np.random.default_rng(1)
    a, b = uniform32(rng, (3, 6)), uniform32(rng, (6, 2))
    c = teil.einsum("ij,jk->ik", a, b)
    for i in range(3):
        for k in range(2):
            assert c[i, k] == sequential_sum(a[i, :] * b[:, k])


def test_einsum_dtype_follows_numpy_promotion(rng):
    a32, b32 = uniform32(rng, (2, 3)), uniform32(rng, (3, 2))
    cases = [
        ((a32, b32), np.float32),
        ((a32, b32.astype(np.float64)), np.float64),              # mixed: promoted to float64
        ((a32, b32.astype(np.float16)), np.float32),
        ((a32, np.ones((3, 2), np.int8)), np.float32),
        ((a32, np.ones((3, 2), np.int16)), np.float32),
        ((a32, np.ones((3, 2), np.int64)), np.float64),
        ((a32, np.ones((3, 2), bool)), np.float32),
        ((a32.tolist(), b32), np.float64),                        # a list of Python floats
        ((a32.astype(np.float16), b32.astype(np.float16)), np.float64),  # float16 alone: f64
        ((a32.astype(np.float64), b32.astype(np.float64)), np.float64),
    ]
    for (a, b), dtype in cases:
        got = teil.einsum("ij,jk->ik", a, b)
        assert got.dtype == dtype, (np.asarray(a).dtype, np.asarray(b).dtype)
        if np.einsum("ij,jk->ik", a, b).dtype in (np.float32, np.float64):
            assert got.dtype == np.einsum("ij,jk->ik", a, b).dtype
        np.testing.assert_allclose(got, np.asarray(a, np.float64) @ np.asarray(b, np.float64),
                                   rtol=1e-5, atol=1e-6)
    # A Python scalar is float64 (as NumPy's einsum reads it).
    assert teil.einsum(",i", 2.0, f32([1, 2])).dtype == np.einsum(",i", 2.0, f32([1, 2])).dtype
    assert teil.einsum(",i", np.float32(2.0), f32([1, 2])).dtype == np.float32


def test_float64_einsum_is_unchanged(rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    got = teil.einsum("ij,jk->ik", a, b)
    assert got.dtype == np.float64
    assert got.tobytes() == teil.Program(teil.einsum_program("ij,jk->ik", (3, 4), (4, 5))).run(
        in0=a, in1=b)["out"].tobytes()
    assert teil.einsum_program("ij,jk->ik", (3, 4), (4, 5)) == teil.einsum_program(
        "ij,jk->ik", (3, 4), (4, 5), dtype=np.float64)


def test_einsum_shape_errors_are_the_same_in_float32():
    for ops in [(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)),
                (np.ones((2, 3)), np.ones((4, 5)))]:
        with pytest.raises(teil.ShapeError) as info:
            teil.einsum("ij,jk->ik", *ops)
        assert [d.code for d in info.value.diagnostics] == ["E0404"]


def test_einsum_with_an_extent_of_0_keeps_the_dtype():
    got = teil.einsum("ij,jk->ik", np.ones((2, 0), np.float32), np.ones((0, 3), np.float32))
    want = np.einsum("ij,jk->ik", np.ones((2, 0), np.float32), np.ones((0, 3), np.float32))
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    assert teil.einsum("ij,jk->ik", np.ones((2, 0)), np.ones((0, 3))).dtype == np.float64


def test_einsum_on_the_c_backend_refuses_float32():
    with pytest.raises(teil.RunError) as info:
        teil.einsum("ij,jk->ik", np.ones((2, 3), np.float32), np.ones((3, 2), np.float32),
                    backend="c")
    assert info.value.code == "E0802"


def test_einsum_program_dtype_argument():
    text = teil.einsum_program("ij,jk->ik", (2, 3), (3, 4), dtype="float32")
    assert text.splitlines()[:3] == [
        "input alloc in0 : f32[2, 3]",
        "input alloc in1 : f32[3, 4]",
        "output alloc out : f32[2, 4]",
    ]
    for same in [np.float32, np.dtype(np.float32), "f4", "float32"]:
        assert teil.einsum_program("ij,jk->ik", (2, 3), (3, 4), dtype=same) == text
    for bad in [np.int32, "float16", "f32", object()]:
        with pytest.raises(ValueError, match="dtype must be numpy.float64 or numpy.float32"):
            teil.einsum_program("ij->ji", (2, 3), dtype=bad)


def test_guarded_einsum_on_float32_is_unchanged(rng):
    a, b = uniform32(rng, (2, 3)), uniform32(rng, (3, 4))
    einsum = teil.guarded(np.einsum)
    got = einsum("ij,jk->ik", a, b)
    want = np.einsum("ij,jk->ik", a, b)
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()
    with pytest.raises(teil.ShapeError):
        einsum("ij,jk->ik", a, a)


# ---------------------------------------------------------------------------------------------
# Metadata and displays


def test_dtypes_name_each_variables_element_type():
    p = teil.Program("alloc t : f64[2]\nalloc u : [2]\n" + SCALE)
    assert p.dtypes == {"t": "float64", "u": "float64", "x": "float32", "w": "float32",
                        "y": "float32"}
    assert list(p.dtypes) == list(p.variables)
    # Usable as NumPy dtypes.
    assert np.zeros(p.variables["x"][0], p.dtypes["x"]).dtype == np.float32
    assert teil.Program("alloc A : [2]\nA = A").dtypes == {"A": "float64"}


def test_program_displays_show_the_element_type():
    p = teil.Program(SCALE)
    html = p._repr_html_()
    assert "<th>element</th>" in html
    assert "<td><code>x</code></td><td><code>[2, 3]</code></td><td>input</td>" \
           "<td><code>f32</code></td>" in html
    md = p._repr_markdown_()
    assert "| `y` | `[2, 3]` | output | `f32` |" in md
    p64 = teil.Program("input alloc A : [2]\noutput alloc B : [2]\nB = A + A")
    assert "<td><code>B</code></td><td><code>[2]</code></td><td>output</td>" \
           "<td><code>f64</code></td>" in p64._repr_html_()


def test_explain_covers_the_element_type_codes():
    for code in ["E0605", "E0311", "E0802"]:
        text = teil.explain(code)
        assert text.startswith(code + ": "), text[:80]
    assert teil.explain("e0605") == teil.explain("E0605")
    assert "element type" in teil.explain("E0605").splitlines()[0]
