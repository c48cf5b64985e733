"""The adapters on f32 and f64 programs with the element-wise functions, max, min and casts
(spec/fuzzing.md, "The ops/1 form": `func`, `max`, `min`, `cast`, `dtype`).

Each test starts an adapter as `teil fuzz --target` does and speaks `teil-target/1` to it
itself: a case directory with the inputs as float64 .npy files (what the harness writes, also
for an f32 variable, whose values are binary32), one request line with the program's ops/1
steps, one answer line. The answers are compared with TeIL's oracle (`teil.Program.run(...,
backend="oracle")`): bit for bit where both sides are IEEE operations (+ - * /, abs, sqrt, max
and min but for the sign of zero, casts), within a library's measured accuracy for exp, log,
tanh and erf, which TeIL rounds correctly and the libraries do not.

What the libraries do differently from TeIL is pinned here, as findings for the fuzzer's
comparison (each with the versions of teil-py/requirements-dev.txt):

- NumPy has no erf: numpy_ops.py answers `unsupported`. ONNX Runtime has no float64 Erf kernel:
  onnxruntime_ops.py answers `unsupported` (NOT_IMPLEMENTED).
- np.maximum/np.minimum, and ONNX Runtime's and TVM's Max/Min, return the second operand of two
  equal ones, so max(+0, -0) is -0 and min(-0, +0) is +0 (TeIL: +0 and -0, IEEE 754-2019);
  jnp.maximum/jnp.minimum (XLA) agree with TeIL.
- TVM's Max/Min (tvm_ops.py: Relax's ONNX front end, LegalizeOps, llvm) do not propagate a NaN
  first operand: max(NaN, 1) is 1, max(1, NaN) is NaN; and max(-inf, -inf) is the lowest finite
  number (-3.4028235e38 in float32), min(inf, inf) the largest, in float32 and float64.
- TVM's Tanh is 0 for tiny nonzero operands (tanh(-2.8e-10) in float32, tanh(-2.8e-73) in
  float64, where tanh(x) rounds to x) and loses relative accuracy as |x| shrinks (thousands of
  ulps near 1e-5 in float64), consistent with (e^2x - 1)/(e^2x + 1); within 2 ulps for
  |x| >= 0.5.
- XLA on the CPU (jax_ops.py, xla_ops.py) flushes subnormals to zero, in float32 and float64:
  as operands (log of the smallest subnormal is -inf) and as results (exp(-100) in float32 is
  0). The comparisons below leave out cells with a subnormal operand and compare results with
  subnormals flushed, for those two adapters.
- Accuracy, in units in the last place, largest measured here over these inputs: `ULPS`.

torch is not installed by the dev requirements: without it torch_ops.py must answer
`unsupported`, which is what is checked then.
"""
import json
import subprocess
import sys

import numpy as np
import pytest

from harness import TARGETS, require

require("teil")
import teil  # noqa: E402

NP = {"f32": np.float32, "f64": np.float64}
FTZ = {"jax_ops.py", "xla_ops.py"}  # XLA:CPU flushes subnormals
#: The largest error in ulps measured here (4000 inputs, the ranges of FUNC_RANGE, subnormals
#: left out for FTZ adapters); the tests allow max(4, 2 × this). torch's are not measured.
ULPS = {
    "numpy_ops.py": {("exp", "f32"): 2, ("log", "f32"): 1, ("tanh", "f32"): 1,
                     ("exp", "f64"): 1, ("log", "f64"): 0, ("tanh", "f64"): 1},
    "jax_ops.py": {("exp", "f32"): 5, ("log", "f32"): 1, ("tanh", "f32"): 4, ("erf", "f32"): 5,
                   ("exp", "f64"): 1, ("log", "f64"): 0, ("tanh", "f64"): 7, ("erf", "f64"): 1},
    "onnxruntime_ops.py": {("exp", "f32"): 1, ("log", "f32"): 2, ("tanh", "f32"): 102, ("erf", "f32"): 1,
                           ("exp", "f64"): 1, ("log", "f64"): 1, ("tanh", "f64"): 7},
    "tvm_ops.py": {("exp", "f32"): 1, ("log", "f32"): 1, ("erf", "f32"): 1,
                   ("exp", "f64"): 1, ("log", "f64"): 0, ("erf", "f64"): 1},
    "torch_ops.py": {},
}
ULPS["xla_ops.py"] = ULPS["jax_ops.py"]
#: What each adapter answers `unsupported` for, and why.
UNSUPPORTED = {
    "numpy_ops.py": {("erf", "f32"): "NumPy has no erf", ("erf", "f64"): "NumPy has no erf"},
    "onnxruntime_ops.py": {("erf", "f64"): "NOT_IMPLEMENTED"},
}
ADAPTERS = ["numpy_ops.py", "jax_ops.py", "xla_ops.py", "onnxruntime_ops.py", "tvm_ops.py", "torch_ops.py"]
MODULE = {"numpy_ops.py": "numpy", "jax_ops.py": "jax", "xla_ops.py": "jax",
          "onnxruntime_ops.py": "onnxruntime", "tvm_ops.py": "tvm", "torch_ops.py": None}


def has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


class Target:
    """One adapter process, as the harness starts it, and the case directories it is sent."""

    def __init__(self, adapter, tmp_path, flags=None):
        self.adapter, self.tmp, self.id = adapter, tmp_path, 0
        # The XLA adapters refuse subnormal inputs (XLA flushes them) unless told to keep them:
        # this module measures the flush (unless `flags` says otherwise).
        if flags is None:
            flags = ["--keep-subnormals"] if adapter in FTZ else []
        self.proc = subprocess.Popen([sys.executable, str(TARGETS / adapter), *flags], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def ask(self, source, inputs, files=np.float64):
        """Sends `source`'s ops/1 steps with `inputs` written as `files` .npy; the answer, the
        oracle's outputs and the target's (None unless it answered ok)."""
        program = teil.Program(source)
        doc = program.ops()
        case = self.tmp / f"case{self.id}"
        (case / "inputs").mkdir(parents=True)
        (case / "outputs").mkdir()
        (case / "program.teil").write_text(source)
        request = {"id": self.id, "dir": str(case), "program": str(case / "program.teil"), "ops": doc["steps"],
                   "inputs": {}, "outputs": {}}
        for name, shape in doc["inputs"].items():
            path = case / "inputs" / f"{name}.npy"
            np.save(path, np.asarray(inputs[name]).astype(files))
            request["inputs"][name] = {"path": str(path), "shape": shape}
        for name, shape in doc["outputs"].items():
            request["outputs"][name] = {"path": str(case / "outputs" / f"{name}.npy"), "shape": shape}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        assert answer["id"] == self.id
        self.id += 1
        want = program.run(**inputs, backend="oracle")
        got = None
        if answer["status"] == "ok":
            got = {}
            for name, v in request["outputs"].items():
                value = np.load(v["path"])
                assert value.dtype == np.float64 and value.flags.c_contiguous
                assert list(value.shape) == v["shape"]
                # Outputs are written in float64; an f32 output's values must be binary32.
                with np.errstate(over="ignore"):  # a float64 value out of float32's range fails below
                    got[name] = value.astype(want[name].dtype)
                assert np.array_equal(got[name].astype(np.float64), value, equal_nan=True), name
        return answer, want, got

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


@pytest.fixture(scope="module", params=ADAPTERS)
def target(request, tmp_path_factory):
    adapter = request.param
    if MODULE[adapter]:
        require(MODULE[adapter])
    t = Target(adapter, tmp_path_factory.mktemp(adapter.replace(".py", "")))
    yield t
    t.close()


def usable(target, answer):
    """Whether `answer` is one to compare: torch's adapter without torch must say so."""
    if target.adapter == "torch_ops.py" and not has_torch():
        assert answer["status"] == "unsupported" and answer["reason"] == "torch is not installed", answer
        return False
    assert answer["status"] == "ok", answer
    return True


def subnormal(x):
    return (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)


def compared(target, want, got, *operands):
    """`want` and `got` where they are compared: for an adapter that flushes subnormals, the
    cells without a subnormal operand, subnormal results flushed to zero."""
    if target.adapter not in FTZ:
        return want, got
    keep = np.ones(want.shape, bool)
    for x in operands:
        keep &= ~subnormal(np.asarray(x))
    flush = lambda x: np.where(subnormal(x), np.zeros_like(x), x)  # noqa: E731
    return flush(want[keep]), flush(got[keep])


def same(want, got):
    """TeIL's exact equality: bit for bit, except that NaN equals NaN and -0 equals +0."""
    return want.shape == got.shape and bool(np.all((np.isnan(want) & np.isnan(got)) | (want == got)))


def ulps(want, got):
    """The largest distance in ulps along the ordered representations; NaN must face NaN."""
    bits = np.int32 if want.dtype == np.float32 else np.int64

    def ordered(x):
        i = np.ascontiguousarray(x).view(bits).astype(np.int64)
        return np.where(i < 0, np.int64(np.iinfo(bits).min) - i, i)

    if np.any(np.isnan(want) != np.isnan(got)):
        return int(np.iinfo(bits).max)
    keep = ~np.isnan(want)
    return int(np.max(np.abs(ordered(want[keep]) - ordered(got[keep])), initial=0))


def draws(t, n, lo, hi, rng):
    """`n` values of type `t`: uniform in [lo, hi), a quarter of magnitudes across the range
    (subnormals included, both signs), and the special values."""
    x = rng.uniform(lo, hi, n)
    k = n // 4
    x[:k] = rng.uniform(-1, 1, k) * 10.0 ** rng.integers(-45 if t == "f32" else -320, 3, k)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, np.finfo(NP[t]).max, np.finfo(NP[t]).smallest_subnormal]
    x[k : k + len(special)] = special
    return x.astype(NP[t])


FUNC_RANGE = {
    "exp": {"f32": (-110, 95), "f64": (-760, 720)},
    "log": {"f32": (0, 1e30), "f64": (0, 1e300)},
    "sqrt": {"f32": (0, 1e30), "f64": (0, 1e300)},
    "tanh": {"f32": (-25, 25), "f64": (-40, 40)},
    "erf": {"f32": (-7, 7), "f64": (-7, 7)},
    "abs": {"f32": (-1e6, 1e6), "f64": (-1e6, 1e6)},
}
N = 4000


@pytest.mark.parametrize("func", sorted(FUNC_RANGE))
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_functions(target, func, t):
    a = draws(t, N, *FUNC_RANGE[func][t], np.random.default_rng(sorted(FUNC_RANGE).index(func) * 2 + (t == "f32")))
    answer, want, got = target.ask(f"input var A : {t}[{N}]\noutput var C : {t}[{N}]\nC = {func} A", {"A": a})
    why = UNSUPPORTED.get(target.adapter, {}).get((func, t))
    if why is not None:
        assert answer["status"] == "unsupported" and why in answer["reason"], answer
        return
    if not usable(target, answer):
        return
    if (target.adapter, func) == ("tvm_ops.py", "tanh"):  # TVM's finding (module documentation)
        tiny = (a != 0) & (np.abs(a) < 1e-20)
        assert np.any(tiny) and np.all(got["C"][tiny] == 0) and np.all(want["C"][tiny] != 0)
        big = np.abs(a) >= 0.5
        assert ulps(want["C"][big], got["C"][big]) <= 4
        return
    w, g = compared(target, want["C"], got["C"], a)
    if func in ("abs", "sqrt"):  # IEEE operations: exact in every library
        assert same(w, g), func
    else:
        bound = max(4, 2 * ULPS[target.adapter].get((func, t), 8))
        assert ulps(w, g) <= bound, (func, t, ulps(w, g))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_max_and_min(target, op, t):
    rng = np.random.default_rng(11 + (op == "min") * 2 + (t == "f32"))
    a, b = draws(t, N, -10, 10, rng), draws(t, N, -10, 10, rng)
    b[: N // 8] = a[: N // 8]  # equal operands
    a[N // 8 : N // 8 + 16] = np.nan  # NaN on either side, a number on the other
    b[N // 8 + 16 : N // 8 + 32] = np.nan
    src = f"input var A : {t}[{N}]\ninput var B : {t}[{N}]\noutput var C : {t}[{N}]\nC = {op} A B"
    answer, want, got = target.ask(src, {"A": a, "B": b})
    if not usable(target, answer):
        return
    nan_first, nan_second = slice(N // 8, N // 8 + 16), slice(N // 8 + 16, N // 8 + 32)
    assert np.all(np.isnan(want["C"][N // 8 : N // 8 + 32]))
    assert np.all(np.isnan(got["C"][nan_second]))
    if target.adapter == "tvm_ops.py":  # TVM's findings (module documentation)
        dropped = np.isnan(a) & ~np.isnan(b)  # a NaN first operand is dropped
        assert same(got["C"][dropped], b[dropped])
        got["C"][dropped] = np.nan
        inf = -np.inf if op == "max" else np.inf  # max(-inf, -inf) is the lowest finite number
        both = (a == inf) & (b == inf)
        assert np.any(both) and np.all(got["C"][both] == np.copysign(np.finfo(NP[t]).max, inf))
        got["C"][both] = inf
    assert np.all(np.isnan(got["C"][nan_first]))  # NaN propagates from either side
    assert same(*compared(target, want["C"], got["C"], a, b))
    # The sign of zero: TeIL's (IEEE 754-2019) max(+0, -0) is +0 and min(-0, +0) is -0.
    zeros = {"A": np.array([0.0, -0.0, 0.0, -0.0], NP[t]), "B": np.array([-0.0, 0.0, 0.0, -0.0], NP[t])}
    src = f"input var A : {t}[4]\ninput var B : {t}[4]\noutput var C : {t}[4]\nC = {op} A B"
    answer, want, got = target.ask(src, zeros)
    ieee = {"max": [False, False, False, True], "min": [True, True, False, True]}[op]
    assert np.signbit(want["C"]).tolist() == ieee
    if target.adapter in ("numpy_ops.py", "onnxruntime_ops.py", "tvm_ops.py"):  # the second operand's zero
        assert np.signbit(got["C"]).tolist() == [True, False, False, True]
    elif target.adapter in FTZ:
        assert np.signbit(got["C"]).tolist() == ieee


def test_casts(target):
    rng = np.random.default_rng(17)
    a = draws("f64", N, -1e6, 1e6, rng)
    edge = [1 + 2.0**-24, 1 + 3 * 2.0**-24, -(1 + 2.0**-24), 2.0**128, 3.4028235677973366e38, 1e-46, 2.0**-150,
            3 * 2.0**-150, 1e-40]
    a[-len(edge):] = edge  # halfway cases (to even), overflow, underflow, a subnormal result
    answer, want, got = target.ask(f"input var A : [{N}]\noutput var C : f32[{N}]\nC = f32 A", {"A": a})
    if not usable(target, answer):
        return
    assert want["C"][-len(edge):][:4].tolist() == [1.0, 1 + 2.0**-22, -1.0, np.inf]
    assert same(*compared(target, want["C"], got["C"], a, want["C"]))
    b = draws("f32", N, -1e6, 1e6, rng)
    answer, want, got = target.ask(f"input var A : f32[{N}]\noutput var C : [{N}]\nC = f64 A", {"A": b})
    assert answer["status"] == "ok", answer
    assert same(*compared(target, want["C"], got["C"], b))


ARITHMETIC = """
input  var A : f32[3]
input  var B : f32[3]
input  var X : [3]
output var T : f32[3]
output var C : f32[3]
output var D : f32[]
output var E : [3]
output var F : f32[]
output var G : f32[3]
T = (A + B) - A
C = max (0.5 * T) (abs (B + B))
D = red+ 1 (C + C)
E = X + f64 (sqrt C)
F = (A # B) .[1 2]
G = 0.1 * A
"""
ARITHMETIC_INPUTS = {"A": np.array([2**24, 0, 0], np.float32), "B": np.array([1, 1, 1], np.float32),
                     "X": np.array([0.5, 1, 2])}


@pytest.mark.parametrize("files", [np.float64, np.float32])
def test_float32_steps_compute_in_binary32(target, files):
    # 2^24 + 1 is 2^24 in binary32: (A + B) - A is 0 there, 1 in binary64. The literal is
    # binary32's 0.1. The inputs come as float64 files (what the harness writes) or as float32
    # ones: either way the f32 inputs are float32 to the library.
    if files is np.float32:
        inputs = {n: v.astype(np.float32) if n != "X" else v for n, v in ARITHMETIC_INPUTS.items()}
    else:
        inputs = ARITHMETIC_INPUTS
    answer, want, got = target.ask(ARITHMETIC, inputs, files=files)
    if not usable(target, answer):
        return
    assert want["T"].tolist() == [0, 1, 1]
    for name in want:
        assert got[name].dtype == want[name].dtype and same(want[name], got[name]), (name, want[name], got[name])


def test_a_float32_input_that_is_not_binary32_is_an_error(tmp_path):
    # The harness writes f32 inputs as float64 files of binary32 values; one that is not is the
    # harness's bug, and the adapter says so instead of rounding it.
    t = Target("numpy_ops.py", tmp_path)
    try:
        answer, _, _ = t.ask("input var A : f32[1]\noutput var C : f32[1]\nC = exp A", {"A": np.array([0.1], np.float32)})
        assert answer["status"] == "ok"
        case = tmp_path / "case1"
        request = {"id": 1, "dir": str(case), "program": "", "ops": teil.Program(
            "input var A : f32[1]\noutput var C : f32[1]\nC = exp A").ops()["steps"],
            "inputs": {"A": {"path": str(tmp_path / "A.npy"), "shape": [1]}},
            "outputs": {"C": {"path": str(tmp_path / "C.npy"), "shape": [1]}}}
        np.save(tmp_path / "A.npy", np.array([0.1]))
        t.proc.stdin.write(json.dumps(request) + "\n")
        t.proc.stdin.flush()
        answer = json.loads(t.proc.stdout.readline())
        assert answer["status"] == "error" and "not binary32" in answer["message"], answer
    finally:
        t.close()


@pytest.mark.parametrize("adapter", ["jax_ops.py", "xla_ops.py"])
def test_xla_flushes_subnormals(tmp_path, adapter):
    # A finding for the fuzzer's comparison, not a bug of the adapters: XLA on the CPU treats
    # subnormal operands as zero and flushes subnormal results, in float32 and float64.
    require("jax")
    t = Target(adapter, tmp_path)
    try:
        tiny32, tiny64 = np.finfo(np.float32).smallest_subnormal, np.finfo(np.float64).smallest_subnormal
        src = ("input var A : f32[1]\ninput var B : [1]\ninput var X : f32[1]\n"
               "output var C : f32[1]\noutput var D : [1]\noutput var E : f32[1]\n"
               "C = log A\nD = log B\nE = exp X")
        answer, want, got = t.ask(src, {"A": np.array([tiny32]), "B": np.array([tiny64]), "X": np.array([-100], np.float32)})
        assert answer["status"] == "ok", answer
        assert want["C"][0] == np.float32(np.log(np.float64(tiny32))) and got["C"][0] == -np.inf
        assert np.isfinite(want["D"][0]) and got["D"][0] == -np.inf
        assert subnormal(want["E"]).all() and got["E"][0] == 0
    finally:
        t.close()


@pytest.mark.parametrize("adapter", ["jax_ops.py", "xla_ops.py"])
def test_xla_adapters_refuse_subnormal_inputs_unless_kept(tmp_path, adapter):
    # Campaigns send the XLA adapters no program with a subnormal input: XLA would read it as
    # zero, by design (jax#16200), so the adapters answer `unsupported` (counted) for one.
    require("jax")
    t = Target(adapter, tmp_path, flags=[])
    try:
        src = "input var A : f32[2]\noutput var C : f32[2]\nC = A + A"
        tiny = np.finfo(np.float32).smallest_subnormal
        answer, _, _ = t.ask(src, {"A": np.array([1.0, tiny])})
        assert answer["status"] == "unsupported" and "jax#16200" in answer["reason"], answer
        answer, want, got = t.ask(src, {"A": np.array([1.0, -2.0])})
        assert answer["status"] == "ok" and np.array_equal(want["C"], got["C"]), answer
    finally:
        t.close()


def test_opt_einsum_contracts_float32_and_refuses_the_functions(tmp_path):
    require("opt_einsum")
    t = Target("opt_einsum_ops.py", tmp_path)
    try:
        src = "input var A : f32[2 3]\ninput var B : f32[3 4]\noutput var C : f32[2 4]\nC = (A # B) .[2 3]"
        rng = np.random.default_rng(5)
        inputs = {"A": rng.integers(-9, 10, (2, 3)).astype(np.float32), "B": rng.integers(-9, 10, (3, 4)).astype(np.float32)}
        answer, want, got = t.ask(src, inputs)
        assert answer["status"] == "ok", answer
        assert same(want["C"], got["C"])  # small integers: exact in any order
        answer, _, _ = t.ask("input var A : f32[2]\noutput var C : f32[2]\nC = exp A", {"A": np.ones(2, np.float32)})
        assert answer["status"] == "unsupported" and "func" in answer["reason"], answer
    finally:
        t.close()
