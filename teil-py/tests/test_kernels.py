"""The teaching kernels of examples/kernels/ (softmax, log-softmax, layer normalisation, GELU, a
ReLU layer, scaled dot-product attention), run in binary32 by both evaluators and compared with
values computed independently in float64 by NumPy (and `math.erf`); the C backend, out of
process and as an in-process kernel, computes each with the fast evaluator's bits.

The bounds are stated per kernel in units of `U = 2^-24` (half an ulp of 1 in binary32): each
is a few times the rounding error the kernel's chain of binary32 operations can accumulate on
these inputs (|x| <= 3, 8 features), so a kernel computed in another element type, or a
function off by more than a few ulps, fails them."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import teil

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
U = 2.0**-24
EVALUATORS = ["fast", "oracle"]


SHAPES = {
    "softmax": {"X": (4, 8)},
    "log_softmax": {"X": (4, 8)},
    "layer_norm": {"X": (4, 8), "gamma": (8,), "beta": (8,)},
    "gelu": {"X": (4, 8)},
    "relu_layer": {"X": (4, 8), "W": (8, 6), "b": (6,)},
    "attention": {"Q": (4, 8), "K": (6, 8), "V": (6, 5)},
}


def program(name: str) -> teil.Program:
    return teil.Program.from_file(KERNELS / f"{name}.teil")


@pytest.fixture
def rng():
    return np.random.default_rng(50)


def inputs32(rng, **shapes) -> dict[str, np.ndarray]:
    return {
        n: rng.uniform(-3.0, 3.0, size=s).astype(np.float32) for n, s in shapes.items()
    }


def f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def softmax64(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check(y: np.ndarray, ref: np.ndarray, bound: np.ndarray | float, what: str):
    assert y.dtype == np.float32, what
    err = np.abs(f64(y) - ref)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), (
        f"{what}: error {err[worst]:.3g} > bound {np.broadcast_to(bound, err.shape)[worst]:.3g}"
        f" at {worst} (value {y[worst]!r}, float64 reference {ref[worst]!r})"
    )


@pytest.mark.parametrize("backend", EVALUATORS)
def test_softmax(rng, backend):
    x = inputs32(rng, X=(4, 8))
    y = program("softmax").run(**x, backend=backend)["Y"]
    # exp of x - max (|x - max| <= 6: relative error 6U from the subtraction, U from exp),
    # eight-term sum, division: within 24 U relative.
    ref = softmax64(f64(x["X"]))
    check(y, ref, 24 * U * ref, "softmax")
    assert np.allclose(f64(y).sum(axis=1), 1.0, rtol=0, atol=16 * U)


@pytest.mark.parametrize("backend", EVALUATORS)
def test_log_softmax(rng, backend):
    x = inputs32(rng, X=(4, 8))
    y = program("log_softmax").run(**x, backend=backend)["Y"]
    s = f64(x["X"]) - f64(x["X"]).max(axis=1, keepdims=True)
    ref = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    check(y, ref, 16 * U * (1 + np.abs(ref)), "log-softmax")
    # The stable form: a row (0, -200, ...) keeps -200 where log(softmax) would be -inf.
    z = np.zeros((4, 8), dtype=np.float32)
    z[0, 1] = -200
    y = program("log_softmax").run(X=z, backend=backend)["Y"]
    assert np.isfinite(y).all() and y[0, 1] < -199


@pytest.mark.parametrize("backend", EVALUATORS)
def test_layer_norm(rng, backend):
    x = inputs32(rng, X=(4, 8), gamma=(8,), beta=(8,))
    y = program("layer_norm").run(**x, backend=backend)["Y"]
    X = f64(x["X"])
    mean = X.mean(axis=1, keepdims=True)
    var = ((X - mean) ** 2).mean(axis=1, keepdims=True)
    # 1e-5 as the program has it: the decimal rounded once to binary32.
    eps = float(np.float32(1e-5))
    ref = (X - mean) / np.sqrt(var + eps) * f64(x["gamma"]) + f64(x["beta"])
    check(y, ref, 64 * U * (1 + np.abs(ref)), "layer norm")
    # A constant row has variance 0: the row becomes beta.
    x["X"][2] = 1.5
    y = program("layer_norm").run(**x, backend=backend)["Y"]
    assert np.array_equal(y[2], x["beta"])


@pytest.mark.parametrize("backend", EVALUATORS)
def test_gelu(rng, backend):
    x = inputs32(rng, X=(4, 8))
    x["X"][0, :4] = [np.inf, -np.inf, 30.0, -30.0]
    y = program("gelu").run(**x, backend=backend)["Y"]
    X = f64(x["X"])
    with np.errstate(invalid="ignore"):
        ref = 0.5 * X * (1 + np.vectorize(math.erf)(X / math.sqrt(2)))
    finite = np.isfinite(ref)
    check(y[finite], ref[finite], 8 * U * (1 + np.abs(ref[finite])), "GELU")
    # erf saturates: GELU(30) = 30, GELU(-30) = -0; at +∞ it is +∞ and at -∞ NaN (-∞ · 0).
    assert y[0, 0] == np.inf and np.isnan(y[0, 1])
    assert y[0, 2] == 30.0 and y[0, 3] == 0.0 and np.signbit(y[0, 3])


@pytest.mark.parametrize("backend", EVALUATORS)
def test_relu_layer(rng, backend):
    x = inputs32(rng, X=(4, 8), W=(8, 6), b=(6,))
    y = program("relu_layer").run(**x, backend=backend)["Y"]
    X, W, b = f64(x["X"]), f64(x["W"]), f64(x["b"])
    ref = np.maximum(X @ W + b, 0.0)
    # Eight products and eight additions, each rounded: within 9 U of the sum of magnitudes.
    bound = 18 * U * (np.abs(X) @ np.abs(W) + np.abs(b))
    check(y, ref, bound, "ReLU layer")
    # A NaN passes through max (IEEE maximum), and max(-0, +0) is +0.
    x["X"][1, 0] = np.nan
    y = program("relu_layer").run(**x, backend=backend)["Y"]
    assert np.isnan(y[1]).all() and not np.isnan(y[0]).any()
    assert not np.signbit(y[y == 0]).any()


@pytest.mark.parametrize("backend", EVALUATORS)
def test_attention(rng, backend):
    x = inputs32(rng, Q=(4, 8), K=(6, 8), V=(6, 5))
    o = program("attention").run(**x, backend=backend)["O"]
    Q, K, V = f64(x["Q"]), f64(x["K"]), f64(x["V"])
    ref = softmax64(Q @ K.T / math.sqrt(8)) @ V
    # Scores of magnitude up to ~25 carry 8 rounded products and sums (about 10 U relative,
    # 250 U absolute), which exp turns into relative errors of the weights; the output mixes
    # values up to 3.
    check(o, ref, 2048 * U * (1 + np.abs(ref)), "attention")


def test_every_kernel_is_covered():
    assert sorted(SHAPES) == sorted(p.stem for p in KERNELS.glob("*.teil"))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler named cc")
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_c_backend_computes_each_kernel_with_the_evaluators_bits(
    rng, tmp_path, monkeypatch, name
):
    monkeypatch.setenv("TEIL_CACHE_DIR", str(tmp_path / "cache"))
    p = program(name)
    x = inputs32(rng, **SHAPES[name])
    first = next(iter(x))
    # Besides the random values, special ones in the first input's first row: infinities, a
    # NaN, signed zeros, a subnormal, and numbers large enough to overflow exp.
    special = [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, 100.0, -100.0]
    x[first][0, : len(special)] = special[: x[first].shape[1]]
    x[first][1] = 1.5  # a constant row
    want = p.run(**x)
    assert want and all(v.dtype == np.float32 for v in want.values())
    c = p.run(**x, backend="c")
    kernel = p.compile(pad=4)
    for got, what in [(c, "c"), (kernel(**x), "kernel"), (kernel(**x), "kernel, again")]:
        assert list(got) == list(want), what
        for out, value in want.items():
            assert got[out].dtype == np.float32, (what, out)
            np.testing.assert_array_equal(got[out], value, err_msg=f"{name}, {what}: {out}")
            # The signs of zeros too (NaNs aside, whose sign the spec leaves open).
            keep = ~np.isnan(value)
            np.testing.assert_array_equal(np.signbit(got[out][keep]), np.signbit(value[keep]))
