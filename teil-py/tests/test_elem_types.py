"""Element types (`f32`, `f64`) and functions from Python: float32 arrays in and out of
`Program.run` and `Program.compile`'s kernels, the E0605 rule for inputs, `teil.einsum` in
float32, the C backend's bits (the evaluators', functions and conversions included), and the
element type in the program's metadata and displays."""

from __future__ import annotations

import shutil
from fractions import Fraction

import numpy as np
import pytest

import teil
from teil import _native

EVALUATORS = ["fast", "oracle"]
BACKENDS = EVALUATORS + ["c"]

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler named cc")

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


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEIL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def assert_same(got: np.ndarray, want: np.ndarray, what: str = ""):
    """The same dtype, shape and values, the signs of zeros included (`assert_array_equal`
    takes -0 for +0); NaN equals NaN, whatever its sign and payload (spec/values.md)."""
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, what
    np.testing.assert_array_equal(got, want, err_msg=what)
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]), err_msg=what)


def uniform32(rng, shape) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Program.run


@pytest.mark.parametrize("backend", BACKENDS)
def test_f32_inputs_and_outputs_are_float32_with_binary32_arithmetic(rng, backend):
    x, w = uniform32(rng, (2, 3)), uniform32(rng, (3,))
    y = teil.Program(SCALE).run(x=x, w=w, backend=backend)["y"]
    assert y.dtype == np.float32 and y.shape == (2, 3)
    # NumPy's float32 operations round each result to binary32, as TeIL's f32 does.
    np.testing.assert_array_equal(y, x * w[None, :] + x / np.float32(3))


@pytest.mark.parametrize("backend", BACKENDS)
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
    y = p.run(x=np.array([[0.5, 1.0], [0.1, 2.0]]).astype(np.float32), backend=backend)["y"]
    assert y.dtype == np.float32 and y[1, 0] == np.float32(0.1) * 2


@needs_cc
def test_a_compiled_kernel_takes_f32_inputs_by_the_same_rule(cache):
    # The shared object converts each value to a C `float`, which would round 0.1 silently:
    # the kernel checks first, as the evaluators do, with the same message.
    p = teil.Program("input alloc x : f32[2, 2]\noutput alloc y : f32[2, 2]\ny = x + x")
    k = p.compile()
    with pytest.raises(teil.RunError) as info:
        k(x=np.array([[0.5, 1.0], [0.1, 2.0]]))
    e = info.value
    assert isinstance(e, ValueError)
    assert (e.code, e.codes, e.diagnostics) == ("E0605", ["E0605"], [])
    assert str(e) == "[E0605] input `x` is declared f32 but element 2 (0.1) is not an f32 value"
    for bad in [[[0.1, 0], [0, 0]], np.full((2, 2), 2**24 + 1), np.full((2, 2), 1e300)]:
        with pytest.raises(teil.RunError, match=r"^\[E0605\] input `x` is declared f32"):
            k(x=bad)
    # Names and shapes first, as Program.run checks them.
    with pytest.raises(teil.RunError) as info:
        k(x=np.full((2, 3), 0.1))
    assert info.value.codes == ["E0603"]
    with pytest.raises(teil.RunError) as info:
        k({})
    assert info.value.codes == ["E0604"]
    # Binary32 values in any array-like are accepted; the result is float32.
    for given in [np.array([[0.5, 1.0], [0.1, 2.0]]).astype(np.float32), [[1, 2], [3, 4.5]],
                  np.array([[1, 2], [3, 4.5]])]:
        y = k(x=given)["y"]
        assert_same(y, p.run(x=given)["y"])
    assert np.isnan(k(x=[[np.nan, 1], [2, 3]])["y"][0, 0])


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


# ---------------------------------------------------------------------------------------------
# The C backend: the evaluators' bits


@needs_cc
def test_the_c_backend_computes_f32_programs_with_the_evaluators_bits(rng):
    p = teil.Program(SCALE)
    x, w = uniform32(rng, (2, 3)), uniform32(rng, (3,))
    x[0] = [0.0, -0.0, np.float32(1e-45)]  # zeros and the smallest subnormal
    x[1, 2], w[2] = 2.0, 3e38  # a product that overflows binary32 but not binary64
    fast = p.run(x=x, w=w)["y"]
    assert fast.dtype == np.float32 and np.isinf(fast[1, 2])
    for backend in ["oracle", "c"]:
        assert_same(p.run(x=x, w=w, backend=backend)["y"], fast, backend)


@needs_cc
def test_the_c_backend_computes_exp_in_f64_with_the_evaluators_bits():
    p = teil.Program("input alloc x : [9]\noutput alloc y : [9]\ny = exp x")
    x = np.array([0.0, 1.0, 709.782712893384, np.nextafter(709.782712893384, np.inf), -745.2,
                  -708.5, -np.inf, np.inf, np.nan])
    fast = p.run(x=x)["y"]
    np.testing.assert_array_equal(fast[:2], [1.0, np.e])
    # exp's overflow threshold: the largest finite result, then +inf; subnormal, then +0.
    assert np.isfinite(fast[2]) and np.isinf(fast[3])
    assert fast[4] == 0 and 0 < fast[5] < np.finfo(np.float64).tiny
    for backend in ["oracle", "c"]:
        assert_same(p.run(x=x, backend=backend)["y"], fast, backend)


def functions_program(elem: str, n: int) -> str:
    """Every element-wise function and both conversions, on `x` (and `y` for max and min)."""
    other = "f64" if elem == "f32" else "f32"
    outs = {"e": "exp x", "l": "log x", "s": "sqrt x", "t": "tanh x", "r": "erf x",
            "a": "abs x", "hi": "max x y", "lo": "min x y", "back": f"{elem} ({other} x)"}
    lines = [f"input alloc x : {elem}[{n}]", f"input alloc y : {elem}[{n}]",
             f"output alloc c : {other}[{n}]"]
    lines += [f"output alloc {name} : {elem}[{n}]" for name in outs]
    lines += [f"c = {other} x"] + [f"{name} = {e}" for name, e in outs.items()]
    return "\n".join(lines) + "\n"


def exp_threshold(dtype):
    """The largest number of `dtype` whose exp is finite: about 88.72 for float32, 709.78 for
    float64 (NumPy's float64 exp is far enough from a rounding boundary there)."""
    v = np.log(np.finfo(dtype).max).astype(dtype)
    up = np.nextafter(v, dtype(np.inf))
    with np.errstate(over="ignore"):
        while np.isinf(np.exp(v.astype(np.float64)).astype(dtype)):
            v, up = np.nextafter(v, dtype(0)), v
        while np.isfinite(np.exp(up.astype(np.float64)).astype(dtype)):
            v, up = up, np.nextafter(up, dtype(np.inf))
    return v


def special_values(dtype) -> np.ndarray:
    fi = np.finfo(dtype)
    over = exp_threshold(dtype)
    values = [
        0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 3.0, 0.1, 5.0, -5.0, 1e-8, -1e-8,
        fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny, fi.tiny / 2, -fi.tiny / 2,
        fi.max, -fi.max, fi.eps, 1 + fi.eps, 1 - fi.epsneg,
        over, np.nextafter(over, dtype(np.inf)), np.nextafter(over, dtype(0)), -over,
        -104.0 if dtype == np.float32 else -746.0,    # exp underflows to +0
        -88.0 if dtype == np.float32 else -708.5,     # exp's subnormal results
        9.0, -9.0, 27.0, -27.0, 0.88, 1e30 if dtype == np.float32 else 1e300,
    ]
    return np.array(values, dtype=dtype)


@pytest.fixture(scope="module")
def function_inputs():
    """Per element type: `x` and `y` (special values, every pair of them for max and min,
    and random values of every magnitude)."""
    rng = np.random.default_rng(9)
    out = {}
    for elem, dtype in [("f32", np.float32), ("f64", np.float64)]:
        sp = special_values(dtype)
        top = 88.0 if dtype == np.float32 else 709.0
        rnd = np.concatenate([rng.normal(size=60) * 10, rng.uniform(-3, 3, 60),
                              np.exp(rng.uniform(-top, top, 60)) * rng.choice([-1, 1], 60)])
        x = np.concatenate([sp, np.repeat(sp, len(sp)), rnd.astype(dtype)])
        y = np.concatenate([sp[::-1], np.tile(sp, len(sp)), rnd[::-1].astype(dtype)])
        out[elem] = (x, y)
    return out


@needs_cc
@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_functions_and_conversions_on_the_c_backend_are_the_evaluators_bits(
    function_inputs, cache, elem
):
    x, y = function_inputs[elem]
    p = teil.Program(functions_program(elem, len(x)))
    fast = p.run(x=x, y=y)
    results = {"oracle": p.run(x=x, y=y, backend="oracle"), "c": p.run(x=x, y=y, backend="c"),
               "kernel": p.compile(pad=4)(x=x, y=y)}
    dtype = x.dtype.type
    other = np.float64 if dtype == np.float32 else np.float32
    assert all(fast[n].dtype == dtype for n in fast if n != "c") and fast["c"].dtype == other
    for backend, out in results.items():
        assert list(out) == list(fast), backend
        for name in fast:
            assert_same(out[name], fast[name], f"{backend}: {name}")
    # A few values to show the comparison is not vacuous.
    fi = np.finfo(dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fast["s"], np.sqrt(x))      # IEEE sqrt: correctly rounded
        np.testing.assert_array_equal(fast["a"], np.abs(x))
        np.testing.assert_array_equal(fast["c"], x.astype(other))  # the conversion: NumPy's cast
    assert fast["back"].dtype == dtype

    def at(v):
        return np.flatnonzero(x == dtype(v))[0]

    over = exp_threshold(dtype)
    assert np.isfinite(fast["e"][at(over)])
    assert fast["e"][at(np.nextafter(over, over * 2))] == np.inf
    assert 0 < fast["e"][at(-88.0 if dtype == np.float32 else -708.5)] < fi.tiny  # subnormal
    assert fast["e"][at(-104.0 if dtype == np.float32 else -746.0)] == 0
    assert fast["s"][1] == 0 and np.signbit(fast["s"][1])          # sqrt(-0) = -0
    assert fast["a"][1] == 0 and not np.signbit(fast["a"][1])      # abs(-0) = +0
    assert fast["t"][2] == 1 and fast["r"][3] == -1                # tanh(+inf), erf(-inf)
    assert np.isnan(fast["l"][6])                                  # log(-1)


@needs_cc
def test_the_conversion_to_f32_rounds_to_nearest_even_on_the_c_backend():
    near = [1 + 2.0**-24, 1 + 3 * 2.0**-24, 1 + 2.0**-24 + 2.0**-60, 2.0**-150, 2.0**-149 * 1.5,
            2.0**-150 * 1.0000001, np.finfo(np.float32).max * (1 + 2.0**-25),
            np.finfo(np.float32).max * (1 + 2.0**-24), 1e300, -1e300, -0.0, 0.1, 1 / 3]
    x = np.array(near)
    p = teil.Program(f"input alloc x : [{len(x)}]\noutput alloc y : f32[{len(x)}]\ny = f32 x")
    fast = p.run(x=x)["y"]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(fast, x.astype(np.float32))  # NumPy's cast rounds so
    assert_same(p.run(x=x, backend="c")["y"], fast)
    assert_same(p.run(x=x, backend="oracle")["y"], fast)


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


@needs_cc
@pytest.mark.parametrize("equation,shapes", EQUATIONS[:5])
def test_einsum_of_float32_on_the_c_backend_is_the_fast_evaluators(rng, equation, shapes):
    ops = [uniform32(rng, s) for s in shapes]
    got = teil.einsum(equation, *ops, backend="c")
    assert got.dtype == np.float32
    assert_same(got, teil.einsum(equation, *ops, backend="fast"))


# ---------------------------------------------------------------------------------------------
# Program.compile: the in-process kernel


@needs_cc
@pytest.mark.parametrize("pad", [1, 4])
def test_a_compiled_f32_kernel_returns_float32_with_the_evaluators_bits(cache, rng, pad):
    p = teil.Program(SOFTMAX)
    k = p.compile(pad=pad)
    assert k.inputs == ["X"] and k.outputs == ["Y"]
    for call in range(4):
        x = (rng.normal(size=(4, 8)) * 4 * (call + 1)).astype(np.float32)
        x[call, call] = [np.inf, -np.inf, np.nan, 100.0][call]
        got = k(X=x)["Y"]
        assert_same(got, p.run(X=x)["Y"], f"call {call}")
    # `out=` takes an array of the output's dtype, float32 here.
    y = np.full((4, 8), 7, np.float32)
    assert k(X=x, out={"Y": y})["Y"] is y
    assert_same(y, p.run(X=x)["Y"])
    with pytest.raises(TypeError, match="output `Y` must be a numpy.ndarray of float32"):
        k(X=x, out={"Y": np.empty((4, 8))})
    # A mixed program: each output in its own dtype, as Program.run gives it.
    mixed = teil.Program("""\
input alloc x : f32[3]
output alloc y : [3]
output alloc z : f32[3]
y = 0.1 * f64 x
z = 0.1 * x
""")
    x = np.array([1.0, 2.5, -3.0], np.float32)
    got, want = mixed.compile(pad=pad)(x=x), mixed.run(x=x)
    assert got["y"].dtype == np.float64 and got["z"].dtype == np.float32
    for name in want:
        assert_same(got[name], want[name], name)


MATMUL32 = """\
input alloc A : f32[19, 23]
input alloc B : f32[23, 335]
output alloc C : f32[19, 335]
C = (A # B) .[2 3]
"""


@needs_cc
def test_a_compiled_f32_kernel_reads_and_writes_float32_arrays_in_place(cache, rng):
    # A binary32 packed product (its tiles hold floats): float32 inputs cross unconverted, a
    # float32 `out=` array is the kernel's own buffer, and the bits are the evaluators'.
    p = teil.Program(MATMUL32)
    k = p.compile()
    a = uniform32(rng, (19, 23))
    b = uniform32(rng, (23, 335))
    a.setflags(write=False)
    want = p.run(A=a, B=b)["C"]
    before = _native._conversion_copies()
    got = k(A=a, B=b)["C"]
    assert _native._conversion_copies() == before
    assert got.dtype == np.float32
    assert_same(got, want)
    out = np.full((19, 335), np.nan, np.float32)
    assert k(A=a, B=b, out={"C": out})["C"] is out
    assert _native._conversion_copies() == before
    assert_same(out, want)
    # float64 arrays of binary32 values are converted, with the same bits; a float32 `out`
    # that is a view of another layout receives the results from the call's buffer.
    assert_same(k(A=a.astype(np.float64), B=b.astype(np.float64))["C"], want)
    wide = np.zeros((19, 670), np.float32)
    k(A=a, B=b, out={"C": wide[:, ::2]})
    assert_same(wide[:, ::2], want)
    assert not wide[:, 1::2].any()


FMA32 = """\
input alloc A : f32[3, 16]
input alloc B : f32[16, 5]
input alloc x : f32[3, 5]
input alloc w : f32[3, 5]
output alloc C : f32[3, 5]
output alloc D : f32[3, 5]
C = red+ 2 (diag 2 3 (prod A B))
D = x * w + C
"""


def fmaf(x: np.float32, y: np.float32, c: np.float32) -> np.float32:
    """IEEE fusedMultiplyAdd in binary32: `x * y + c` exactly, rounded once to the nearest
    binary32 (ties to even), computed with fractions (finite operands and result)."""
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(c))
    near = np.float32(float(exact))  # within one binary32 step of the correct rounding
    candidates = [np.nextafter(near, np.float32(-np.inf)), near,
                  np.nextafter(near, np.float32(np.inf))]
    def key(v):
        return (abs(Fraction(float(v)) - exact), int(v.view(np.uint32)) & 1)
    return min(candidates, key=key)


def cpu_has_fma() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return any(" fma" in line for line in f if line.startswith("flags"))
    except OSError:
        return False


@needs_cc
def test_fma_mode_fuses_f32_pairs_in_binary32(cache, rng):
    # fma mode fuses binary32 pairs as binary64 ones (spec/values.md): `x * w + C` is
    # fmaf(x, w, C), rounded once to binary32, where the target fuses (-march=native on a
    # machine with FMA), and the contraction differs from exact mode by at most the bound
    # 2 γ_D M with u = 2^-24 and D = 2k (each binary32 operation counted twice).
    p = teil.Program(FMA32)
    k = p.compile(fma=True, cflags="-O2 -march=native")
    fused_somewhere = False
    for _ in range(3):
        given = {"A": uniform32(rng, (3, 16)), "B": uniform32(rng, (16, 5)),
                 "x": uniform32(rng, (3, 5)), "w": uniform32(rng, (3, 5))}
        want = p.run(given)
        got = k(given)
        assert got["C"].dtype == got["D"].dtype == np.float32
        terms = np.abs(given["A"].astype(np.float64)) @ np.abs(given["B"].astype(np.float64))
        u, depth = 2.0**-24, 2 * 16
        gamma = depth * u / (1 - depth * u)
        assert (np.abs(got["C"] - want["C"].astype(np.float64)) <= 2 * gamma * terms).all()
        for i, j in np.ndindex(3, 5):
            x, w, c = given["x"][i, j], given["w"][i, j], got["C"][i, j]
            unfused = np.float32(np.float32(x * w) + c)
            fused = fmaf(x, w, c)
            if cpu_has_fma():
                assert got["D"][i, j] == fused, (i, j)
            else:  # "may": without FMA instructions the pair is computed unfused
                assert got["D"][i, j] in (fused, unfused), (i, j)
            fused_somewhere |= fused != unfused
    # The inputs were such that fusing shows.
    assert fused_somewhere
    # On small integers nothing rounds: fma mode gives the exact-mode bits.
    ints = {name: rng.integers(-3, 4, shape).astype(np.float32)
            for name, shape in [("A", (3, 16)), ("B", (16, 5)), ("x", (3, 5)), ("w", (3, 5))]}
    want = p.run(ints)
    for name, got in k(ints).items():
        assert_same(got, want[name], name)


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
    for code in ["E0605", "E0311"]:
        text = teil.explain(code)
        assert text.startswith(code + ": "), text[:80]
    assert teil.explain("e0605") == teil.explain("E0605")
    assert "element type" in teil.explain("E0605").splitlines()[0]
    # E0802 stays in the table of codes, though nothing reports it any more: the C backend
    # compiles f32 programs, functions and conversions.
    assert teil.explain("E0802").startswith("E0802: ")
