"""ONNX export (`teil.onnx`, spec/fuzzing.md "ONNX export"): every exported model passes ONNX's
full check, and ONNX's own reference semantics (`onnx.reference.ReferenceEvaluator`) compute the
oracle's outputs on the fuzzer's test vectors (`teil fuzz --export`).

`onnx` is required (teil-py/requirements-dev.txt pins it): a missing one fails, so that CI
cannot pass without running these tests.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import onnx
from onnx import helper
import teil
import teil.onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops._op import OpRunBinaryNum, OpRunUnaryNum

ROOT = pathlib.Path(__file__).resolve().parents[2]


def teil_bin() -> str:
    path = pathlib.Path(os.environ.get("TEIL_BIN", ROOT / "target" / "debug" / "teil"))
    if not path.is_file():
        pytest.fail(f"no teil binary at {path}: run `cargo build -p teil-cli` or set TEIL_BIN")
    return str(path)


def same(want: np.ndarray, got: np.ndarray) -> bool:
    """TeIL's exact equality (spec/values.md): bit for bit, except that NaN equals NaN and
    -0 equals +0. Infinities must match in sign."""
    if want.shape != got.shape:
        return False
    both_nan = np.isnan(want) & np.isnan(got)
    return bool(np.all(both_nan | (want == got)))


def within(want: np.ndarray, got: np.ndarray) -> bool:
    """The bound of spec/fuzzing.md for results an evaluator may sum in another order: finite
    cells within 1e-9 (1 + max(|x|, |y|)); a cell not finite on one side not finite on the
    other."""
    if want.shape != got.shape:
        return False
    finite_w, finite_g = np.isfinite(want), np.isfinite(got)
    if np.any(finite_w != finite_g):
        return False
    w, g = want[finite_w], got[finite_g]
    return bool(np.all(np.abs(w - g) <= 1e-9 * (1 + np.maximum(np.abs(w), np.abs(g)))))


def permitted(want: np.ndarray, got: np.ndarray, bound: np.ndarray) -> bool:
    """The `permitted` tolerance of a test vector (spec/fuzzing.md, "Test vectors"): per cell of
    `permitted/NAME.npy`, a finite number `d` asks for a finite value within `d` of the expected
    one, NaN for a value that is not finite, `+inf` allows any value."""
    if want.shape != got.shape or bound.shape != want.shape:
        return False
    finite = np.isfinite(got)
    with np.errstate(invalid="ignore"):
        close = finite & (np.abs(want - got) <= bound)
    return bool(np.all(np.where(np.isnan(bound), ~finite, (bound == np.inf) | close)))


def judged(case_dir: pathlib.Path, case: dict, name: str, got: np.ndarray) -> bool:
    """Whether `got` is a correct value of output `name` of the test vector in `case_dir`, under
    the case's tolerance and its unjudged cells."""
    want = np.load(case_dir / "expected" / f"{name}.npy").astype(np.float64)
    got = np.asarray(got, dtype=np.float64)
    if want.shape != got.shape:
        return False
    for cell in case.get("unjudged", {}).get(name, []):  # any value is correct there
        want[tuple(cell)] = got[tuple(cell)]
    if case["tolerance"] == "permitted":
        return permitted(want, got, np.load(case_dir / "permitted" / f"{name}.npy"))
    return same(want, got) if case["tolerance"] == "exact" else within(want, got)


#: Every op of ops/1 (spec/fuzzing.md, "The ops/1 form").
ALL_OPS = {"einsum", "add", "sub", "mul", "div", "reduce", "expand", "take", "const",
           "func", "max", "min", "cast"}


def run_reference(model, inputs: dict, as_specified: bool = False) -> list:
    """ONNX's reference evaluator on `model`. With `as_specified`, three of its operators compute
    what ONNX specifies instead of its own deviations (each pinned by a test below): `Erf` keeps
    a DOUBLE tensor in float64 (test_reference_erf_on_double_rounds_through_binary32), and
    `MatMul` and `Gemm` are `numpy.matmul` (test_reference_matmul_drops_nan_times_zero)."""
    with np.errstate(all="ignore"):  # 1/0 and 0/0 are IEEE results in TeIL, not warnings
        new_ops = [Erf, MatMul, Gemm] if as_specified else None
        return ReferenceEvaluator(model, new_ops=new_ops).run(None, inputs)


class Erf(OpRunUnaryNum):  # the class name is the op type it replaces
    """`Erf` of ONNX's reference evaluator, but each value computed by `math.erf` in binary64
    and rounded once to the tensor's type (binary32 results within an ulp of TeIL's correctly
    rounded ones, binary64 within the few ulps of the platform's `erf`)."""

    op_domain = ""

    def _run(self, x):
        return (np.vectorize(math.erf, otypes=[x.dtype])(x),)


class MatMul(OpRunBinaryNum):  # the class name is the op type it replaces
    """`MatMul` as ONNX specifies it, "Matrix product that behaves like numpy.matmul": the
    reference evaluator's calls `numpy.dot` for 2-D operands, whose BLAS matrix-vector product
    skips zeros (so `NaN * 0` is `0`)."""

    op_domain = ""

    def _run(self, a, b):
        return (np.matmul(a, b),)


class Gemm(OpRun):  # the class name is the op type it replaces
    """`Gemm` as the export writes it (`A * B`: alpha 1, no `C`, no transposes), by
    `numpy.matmul` (see `MatMul`)."""

    op_domain = ""

    def _run(self, a, b, c=None, alpha=None, beta=None, transA=None, transB=None):
        assert alpha in (None, 1.0) and not transA and not transB and c is None
        return (np.matmul(a, b),)


def export_vectors(tmp_path, *flags) -> tuple[pathlib.Path, dict]:
    out = tmp_path / "vectors"
    subprocess.run([teil_bin(), "fuzz", "--export", str(out), *flags], check=True, capture_output=True, timeout=600)
    return out, json.loads((out / "index.json").read_text())


# A seed nobody chose, new on every run (printed by pytest with the parameters on a failure),
# besides the fixed ones.
FRESH_SEED = int.from_bytes(os.urandom(8), "little")


@pytest.mark.parametrize(
    "profile,programs,seed",
    [("all", 1500, 20261128), ("einsum", 300, 7), ("compiler", 1000, 11), ("compiler", 500, FRESH_SEED)],
)
def test_reference_semantics_compute_the_oracles_outputs(tmp_path, profile, programs, seed):
    out, index = export_vectors(tmp_path, "--programs", str(programs), "--seed", str(seed), "--profile", profile)
    assert len(index["cases"]) == programs
    compared = {"exact": 0, "bound": 0, "permitted": 0}
    special = 0
    ops_seen = set()
    for case in index["cases"]:
        case_dir = out / case["dir"]
        document = json.loads((case_dir / "ops.json").read_text())
        ops_seen.update(s["op"] for s in document["steps"])
        model = teil.onnx.from_ops(document)  # checks the model with full_check=True
        assert [i.name for i in model.graph.input] == list(document["inputs"])
        assert len(model.graph.output) == len(document["outputs"])
        inputs = {n: np.load(case_dir / "inputs" / f"{n}.npy") for n in document["inputs"]}
        values = run_reference(model, inputs, as_specified=True) if document["outputs"] else []
        for name, value in zip(document["outputs"], values):
            want = np.load(case_dir / "expected" / f"{name}.npy")
            # An f32 output is a FLOAT tensor and its expected file float32 (the declared type).
            assert np.asarray(value).dtype == want.dtype, (case["dir"], name)
            special += int(np.count_nonzero(~np.isfinite(want)))
            ok = judged(case_dir, case, name, value)
            assert ok, f"{case['dir']} `{name}` ({case['tolerance']}): oracle {want}, ONNX {value}"
        compared[case["tolerance"]] += 1
    if profile != "einsum":
        # Half the programs have functions, conversions or binary32 (judged by their permits);
        # every op the generator draws was exported and evaluated, and NaN and infinities were
        # met.
        assert compared["exact"] >= programs // 12 and compared["permitted"] >= programs // 3, compared
        assert ops_seen == ALL_OPS, ops_seen
        assert special > 0
    else:
        assert ops_seen == {"einsum"}


@pytest.mark.parametrize("profile,seed", [("compiler", 5), ("all", FRESH_SEED)])
def test_other_spellings_compute_the_oracles_outputs(tmp_path, profile, seed):
    # `from_ops(..., spellings=SEED)` writes about half the steps the way real models do
    # (teil.onnx.SPELLINGS: MatMul or Gemm with Transpose and Reshape, keepdims and Squeeze,
    # Tile, Slice, initializers); each model passes the full check and ONNX's reference
    # evaluator computes the oracle's outputs with it, as with the canonical spelling.
    out, index = export_vectors(tmp_path, "--programs", "300", "--seed", str(seed), "--profile", profile)
    seen = {}
    initializers = 0
    for case in index["cases"]:
        case_dir = out / case["dir"]
        document = json.loads((case_dir / "ops.json").read_text())
        model = teil.onnx.from_ops(document, spellings=case["seed"])  # full_check=True
        for n in model.graph.node:
            seen[n.op_type] = seen.get(n.op_type, 0) + 1
        initializers += len(model.graph.initializer)
        inputs = {n: np.load(case_dir / "inputs" / f"{n}.npy") for n in document["inputs"]}
        values = run_reference(model, inputs, as_specified=True) if document["outputs"] else []
        for name, value in zip(document["outputs"], values):
            assert judged(case_dir, case, name, value), f"{case['dir']} `{name}`: ONNX {value}"
    for op in ("MatMul", "Gemm", "Transpose", "Reshape", "Squeeze", "Tile", "Slice"):
        assert seen.get(op, 0) > 0, (op, seen)
    assert initializers > 0 and seen["Einsum"] > 0  # the canonical spelling too
    # The same seed draws the same spellings (replays depend on it).
    document = json.loads((out / index["cases"][0]["dir"] / "ops.json").read_text())
    assert teil.onnx.from_ops(document, spellings=1) == teil.onnx.from_ops(document, spellings=1)


def test_an_exporter_bug_fails_the_comparison(tmp_path):
    # The comparison above can fail: an exporter that writes ReduceMin for `reduce max` is
    # caught on the same vectors.
    out, index = export_vectors(tmp_path, "--programs", "200", "--seed", "3")
    planted = failed = 0
    for case in index["cases"]:
        document = json.loads((out / case["dir"] / "ops.json").read_text())
        model = teil.onnx.from_ops(document)
        nodes = [n for n in model.graph.node if n.op_type == "ReduceMax"]
        if not nodes:
            continue
        planted += 1
        for n in nodes:
            n.op_type = "ReduceMin"
        inputs = {n: np.load(out / case["dir"] / "inputs" / f"{n}.npy") for n in document["inputs"]}
        values = run_reference(model, inputs, as_specified=True) if document["outputs"] else []
        if any(not judged(out / case["dir"], case, name, value) for name, value in zip(document["outputs"], values)):
            failed += 1
    assert planted >= 10 and failed >= planted // 3, (planted, failed)


def test_export_of_a_program_names_its_interface():
    p = teil.Program(
        """
input  var A : [2 3]
inout  var X : [3]
output var C : [2 3]
output var D : [2 3]
X = red+ 1 A
C = A
D = A
"""
    )
    model = teil.onnx.export(p)
    assert [i.name for i in model.graph.input] == ["A", "X"]
    # An inout's output is NAME:out; an output assigned from a variable is still its own value.
    assert [o.name for o in model.graph.output] == ["X:out", "C", "D"]
    assert model.opset_import[0].version == teil.onnx.OPSET == 18
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    rng = np.random.default_rng(5)
    a, x = rng.integers(-3, 4, (2, 3)).astype(float), np.zeros(3)
    want = p.run(A=a, X=x)
    got = dict(zip(["X", "C", "D"], run_reference(model, {"A": a, "X": x})))
    for name in ("X", "C", "D"):
        assert same(want[name], got[name]), name


def test_a_variable_read_before_it_is_assigned_is_nan():
    p = teil.Program("input var A : [2]\nvar T : [2]\noutput var C : [2]\nC = A + T\nT = A")
    assert p.ops()["undefined"] == ["T"]
    model = teil.onnx.export(p)
    [c] = run_reference(model, {"A": np.array([1.0, 2.0])})
    assert np.all(np.isnan(c)) and same(p.run(A=[1.0, 2.0])["C"], c)


def test_an_unreadable_document_is_an_export_error():
    with pytest.raises(teil.onnx.ExportError) as e:
        teil.onnx.from_ops({"format": "ops/2", "inputs": {}, "outputs": {}, "steps": []})
    assert isinstance(e.value, ValueError) and isinstance(e.value, teil.TeilError)
    doc = {"format": "ops/1", "inputs": {}, "outputs": {"C": [2]}, "undefined": [],
           "steps": [{"out": "C", "op": "add", "args": ["A", "A"], "shape": [2]}]}
    with pytest.raises(teil.onnx.ExportError) as e:
        teil.onnx.from_ops(doc)
    assert e.value.step == 0 and "'A'" in e.value.reason
    doc["steps"][0] = {"out": "C", "op": "fft", "args": [], "shape": [2]}
    with pytest.raises(teil.onnx.ExportError, match="`fft` is not an ops/1 op"):
        teil.onnx.from_ops(doc)


def test_the_command_line_writes_a_model_and_vectors(tmp_path):
    program = tmp_path / "matmul.teil"
    program.write_text("input var A : [2 3]\ninput var B : [3 4]\noutput var C : [2 4]\nC = (A # B) .[2 3]\n")
    model_path = tmp_path / "matmul.onnx"
    cmd = [sys.executable, "-m", "teil.onnx"]
    subprocess.run([*cmd, str(program), "-o", str(model_path)], check=True, timeout=120)
    model = onnx.load(str(model_path))
    onnx.checker.check_model(model, full_check=True)
    assert model.graph.name == "matmul" and [n.op_type for n in model.graph.node] == ["Einsum"]
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    [c] = run_reference(model, {"A": a, "B": b})
    assert same(a @ b, c)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".teil-onnx-")]

    # Errors: a missing file, an ill-typed program; nothing written.
    bad = tmp_path / "bad.teil"
    bad.write_text("input var A : [2]\noutput var C : [3]\nC = A\n")
    for source in (tmp_path / "missing.teil", bad):
        r = subprocess.run([*cmd, str(source), "-o", str(tmp_path / "x.onnx")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and r.stderr.startswith("error: "), r.stderr
        assert not (tmp_path / "x.onnx").exists()
    assert "E0" in r.stderr  # the checker's code

    out, index = export_vectors(tmp_path, "--programs", "20", "--seed", "1")
    r = subprocess.run([*cmd, "--vectors", str(out)], capture_output=True, text=True, check=True, timeout=300)
    assert r.stdout == f"20 models written to {out}\n"
    for case in index["cases"]:
        model = onnx.load(str(out / case["dir"] / "model.onnx"))
        onnx.checker.check_model(model, full_check=True)
        assert [o.name for o in model.graph.output] == teil.onnx.output_names(
            json.loads((out / case["dir"] / "ops.json").read_text())
        )


def test_nan_propagating_reductions_keep_onnx_values(tmp_path):
    # The workaround the ONNX adapters offer for runtimes whose ReduceMax drops NaN: the same
    # values as the exported model under ONNX's reference semantics, on vectors with NaN.
    out, index = export_vectors(tmp_path, "--programs", "300", "--seed", "5", "--profile", "compiler")
    rewritten = 0
    for case in index["cases"]:
        case_dir = out / case["dir"]
        document = json.loads((case_dir / "ops.json").read_text())
        if not document["outputs"]:
            continue
        inputs = {n: np.load(case_dir / "inputs" / f"{n}.npy") for n in document["inputs"]}
        model = teil.onnx.from_ops(document)
        want = run_reference(model, inputs)
        if any(n.op_type in ("ReduceMax", "ReduceMin") for n in model.graph.node):
            rewritten += 1
        safe = teil.onnx.nan_propagating_reductions(teil.onnx.from_ops(document))
        onnx.checker.check_model(safe, full_check=True)
        assert not any(n.op_type == "ReduceMin" and n.output[0] in {o.name for o in safe.graph.output}
                       for n in safe.graph.node)
        for w, g in zip(want, run_reference(safe, inputs)):
            assert same(np.asarray(w), np.asarray(g)), case["dir"]
    assert rewritten >= 50


# --- Element types and element-wise functions ------------------------------------------------
#
# Programs over f32 and f64 covering every `func`, `max`, `min` and `cast`, exported and run by
# ONNX's reference evaluator, compared with TeIL's oracle (`Program.run(backend="oracle")`):
# bit for bit where both sides are IEEE operations (abs, sqrt, max, min, casts, + - * /), within
# FUNC_ULPS units in the last place for exp, log, tanh and erf, which TeIL rounds correctly and
# NumPy (the reference evaluator's implementation) does not: measured on this machine with NumPy
# 2.4.6, at most 2 ulps for float32 exp, 1 for float32 log and tanh and float64 exp and tanh.

FUNC_ULPS = 4
NP = {"f32": np.float32, "f64": np.float64}
ELEM = {"f32": onnx.TensorProto.FLOAT, "f64": onnx.TensorProto.DOUBLE}


def ulps(want: np.ndarray, got: np.ndarray) -> int:
    """The largest distance in units in the last place between two arrays of one float type,
    counted along the ordered binary representations (so the largest finite number is one ulp
    from infinity, and -0 is +0); NaN must face NaN (else the distance is the type's range)."""
    assert want.dtype == got.dtype and want.shape == got.shape, (want.dtype, got.dtype)
    bits = np.int32 if want.dtype == np.float32 else np.int64

    def ordered(x: np.ndarray) -> np.ndarray:
        i = np.ascontiguousarray(x).view(bits).astype(np.int64)
        return np.where(i < 0, np.int64(np.iinfo(bits).min) - i, i)

    nan_w, nan_g = np.isnan(want), np.isnan(got)
    if np.any(nan_w != nan_g):
        return int(np.iinfo(bits).max)
    keep = ~nan_w
    return int(np.max(np.abs(ordered(want[keep]) - ordered(got[keep])), initial=0))


def draws(t: str, n: int, lo: float, hi: float, rng) -> np.ndarray:
    """`n` values of type `t`: uniform in [lo, hi), a quarter of magnitudes across the range
    (subnormals of the type included, both signs), and the special values."""
    x = rng.uniform(lo, hi, n)
    k = n // 4
    x[:k] = rng.uniform(-1, 1, k) * 10.0 ** rng.integers(-45 if t == "f32" else -320, 3, k)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, np.finfo(NP[t]).max, np.finfo(NP[t]).smallest_subnormal]
    x[k : k + len(special)] = special
    return x.astype(NP[t])


#: Each function's input range, by type (where the interesting values are: exp's overflow and
#: underflow, tanh's saturation; log and sqrt of negative numbers come from `draws`).
FUNC_RANGE = {
    "exp": {"f32": (-110, 95), "f64": (-760, 720)},
    "log": {"f32": (0, 1e30), "f64": (0, 1e300)},
    "sqrt": {"f32": (0, 1e30), "f64": (0, 1e300)},
    "tanh": {"f32": (-25, 25), "f64": (-40, 40)},
    "erf": {"f32": (-7, 7), "f64": (-7, 7)},
    "abs": {"f32": (-1e6, 1e6), "f64": (-1e6, 1e6)},
}
N = 4000


def oracle_and_onnx(source: str, inputs: dict) -> tuple[dict, dict, onnx.ModelProto]:
    p = teil.Program(source)
    model = teil.onnx.export(p)  # checked with full_check=True
    want = p.run(**inputs, backend="oracle")
    got = dict(zip(p.ops()["outputs"], run_reference(model, inputs)))
    return want, got, model


# erf on f64: test_reference_erf_on_double_rounds_through_binary32.
@pytest.mark.parametrize("func,t", [(f, t) for f in sorted(FUNC_RANGE) for t in ("f32", "f64") if (f, t) != ("erf", "f64")])
def test_functions_agree_with_the_oracle(func, t):
    rng = np.random.default_rng(sorted(FUNC_RANGE).index(func) * 2 + (t == "f32"))
    a = draws(t, N, *FUNC_RANGE[func][t], rng)
    want, got, model = oracle_and_onnx(f"input var A : {t}[{N}]\noutput var C : {t}[{N}]\nC = {func} A", {"A": a})
    assert [n.op_type for n in model.graph.node] == [func.capitalize()]
    assert model.graph.input[0].type.tensor_type.elem_type == ELEM[t]
    assert model.graph.output[0].type.tensor_type.elem_type == ELEM[t]
    w, g = want["C"], got["C"]
    assert w.dtype == g.dtype == NP[t]
    if func in ("abs", "sqrt"):  # IEEE operations, exact in both
        assert same(w, g) and np.array_equal(np.signbit(w), np.signbit(g)), func
    else:
        assert ulps(w, g) <= FUNC_ULPS, (func, t, ulps(w, g))
    # The inputs reached every interesting part of the function: NaN, infinities or zeros out.
    assert np.any(np.isnan(w)) and np.any(np.isfinite(w))


def test_reference_erf_on_double_rounds_through_binary32():
    # A difference between ONNX's reference evaluator and its specification, not the exporter:
    # Erf-13 takes tensor(double), but onnx/reference/ops/op_erf.py computes
    # `np.vectorize(math.erf, otypes=["f"])(x).astype(x.dtype)`, so every float64 result is
    # rounded to binary32 first. TeIL's erf is correctly rounded in binary64. (ONNX Runtime
    # 1.32.0 has no float64 Erf kernel at all: NOT_IMPLEMENTED, which onnxruntime_ops.py
    # answers as `unsupported`.)
    rng = np.random.default_rng(3)
    a = draws("f64", N, -7, 7, rng)
    want, got, model = oracle_and_onnx(f"input var A : [{N}]\noutput var C : [{N}]\nC = erf A", {"A": a})
    assert [n.op_type for n in model.graph.node] == ["Erf"]
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    w, g = want["C"], got["C"]
    assert g.dtype == np.float64
    assert np.array_equal(g.astype(np.float32).astype(np.float64), g, equal_nan=True)  # binary32 values
    assert ulps(w.astype(np.float32), g.astype(np.float32)) <= 1  # the oracle's, rounded to binary32
    assert ulps(w, g) > 1_000_000  # far from float64 precision


def test_reference_matmul_drops_nan_times_zero():
    # A difference between ONNX's reference evaluator and its specification, not the exporter:
    # MatMul "behaves like numpy.matmul", but onnx/reference/ops/op_matmul.py calls `np.dot`
    # for 2-D operands, and its BLAS matrix-vector product skips the zeros of the vector, so
    # a NaN or an infinity times 0 comes out 0 where `numpy.matmul` (and IEEE) give NaN. The
    # export's MatMul spelling meets it; the tests evaluate MatMul as specified.
    a = helper.make_tensor_value_info("A", onnx.TensorProto.FLOAT, [3, 1])
    b = helper.make_tensor_value_info("B", onnx.TensorProto.FLOAT, [1, 1])
    c = helper.make_tensor_value_info("C", onnx.TensorProto.FLOAT, [3, 1])
    model = helper.make_model(helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["C"])], "m", [a, b], [c]),
                              opset_imports=[helper.make_opsetid("", 18)])
    x, zero = np.array([[np.nan], [np.inf], [2.0]], np.float32), np.zeros((1, 1), np.float32)
    [got] = run_reference(model, {"A": x, "B": zero})
    assert got.ravel().tolist() == [0.0, 0.0, 0.0]
    [fixed] = run_reference(model, {"A": x, "B": zero}, as_specified=True)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(fixed, np.matmul(x, zero), equal_nan=True) and np.isnan(fixed[:2]).all()


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_and_min_agree_with_the_oracle_but_for_the_sign_of_zero(op, t):
    rng = np.random.default_rng(11 + (op == "min") * 2 + (t == "f32"))
    a, b = draws(t, N, -10, 10, rng), draws(t, N, -10, 10, rng)
    b[: N // 8] = a[: N // 8]  # equal operands too
    a[N // 8 : N // 8 + 16], b[N // 8 : N // 8 + 16] = np.nan, rng.uniform(-1, 1, 16)  # NaN on either side
    a[N // 8 + 16 : N // 8 + 32], b[N // 8 + 16 : N // 8 + 32] = rng.uniform(-1, 1, 16), np.nan
    src = f"input var A : {t}[{N}]\ninput var B : {t}[{N}]\noutput var C : {t}[{N}]\nC = {op} A B"
    want, got, model = oracle_and_onnx(src, {"A": a, "B": b})
    assert [n.op_type for n in model.graph.node] == [op.capitalize()]
    w, g = want["C"], got["C"]
    assert w.dtype == g.dtype == NP[t]
    # Values agree, NaN propagating from either operand in both (TeIL's equality: -0 == +0).
    assert same(w, g)
    assert np.all(np.isnan(g[N // 8 : N // 8 + 32]))
    # The sign of zero does not (ONNX's Max/Min documents neither NaN nor signed zeros; the
    # reference evaluator is np.maximum/np.minimum, which return the second operand of two
    # equal ones): max(+0, -0) and min(-0, +0) differ.
    zeros = {"A": np.array([0.0, -0.0, 0.0, -0.0], NP[t]), "B": np.array([-0.0, 0.0, 0.0, -0.0], NP[t])}
    src = f"input var A : {t}[4]\ninput var B : {t}[4]\noutput var C : {t}[4]\nC = {op} A B"
    want, got, _ = oracle_and_onnx(src, zeros)
    teil_sign = {"max": [False, False, False, True], "min": [True, True, False, True]}[op]
    onnx_sign = [True, False, False, True]  # B's sign, whatever op
    assert np.signbit(want["C"]).tolist() == teil_sign
    assert np.signbit(got["C"]).tolist() == onnx_sign


def test_a_signed_zero_from_max_is_observable():
    # The difference above is a value, not only a sign: 1 / max(+0, -0) is +inf in TeIL and
    # -inf under ONNX's reference evaluator, a disagreement a fuzzing campaign can find.
    src = "input var A : [1]\ninput var B : [1]\noutput var C : [1]\nC = 1 / (max A B)"
    with pytest.raises(teil.ShapeError):  # a scalar divides on the right only (T-SDiv)
        teil.Program(src)
    src = "input var A : [1]\ninput var B : [1]\ninput var O : [1]\noutput var C : [1]\nC = O / (max A B)"
    want, got, _ = oracle_and_onnx(src, {"A": np.array([0.0]), "B": np.array([-0.0]), "O": np.array([1.0])})
    assert want["C"].tolist() == [np.inf] and got["C"].tolist() == [-np.inf]


def test_casts_round_to_nearest_even_and_widen_exactly():
    rng = np.random.default_rng(17)
    a = draws("f64", N, -1e6, 1e6, rng)
    ties = [1 + 2.0**-24, 1 + 3 * 2.0**-24, -(1 + 2.0**-24), 2.0**128, 3.4028235677973366e38,
            3.4028235677973362e38, 1e-46, 7e-46, 2.0**-150, 3 * 2.0**-150, -(2.0**-150)]
    a[-len(ties):] = ties  # halfway cases, overflow, the largest float32's neighbourhood, underflow
    want, got, model = oracle_and_onnx(f"input var A : [{N}]\noutput var C : f32[{N}]\nC = f32 A", {"A": a})
    assert [(n.op_type, n.attribute[0].i) for n in model.graph.node] == [("Cast", onnx.TensorProto.FLOAT)]
    assert model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    w, g = want["C"], got["C"]
    assert w.dtype == g.dtype == np.float32
    assert same(w, g) and np.array_equal(np.signbit(w), np.signbit(g))
    assert w[-len(ties):].tolist()[:3] == [1.0, 1 + 2.0**-22, -1.0] and np.isinf(w[-len(ties) + 3])

    b = draws("f32", N, -1e6, 1e6, rng)
    want, got, model = oracle_and_onnx(f"input var A : f32[{N}]\noutput var C : [{N}]\nC = f64 A", {"A": b})
    assert [(n.op_type, n.attribute[0].i) for n in model.graph.node] == [("Cast", onnx.TensorProto.DOUBLE)]
    assert want["C"].dtype == got["C"].dtype == np.float64
    assert same(want["C"], got["C"]) and same(b.astype(np.float64), got["C"])


def test_float32_values_are_float_tensors_and_compute_in_binary32(tmp_path):
    src = """
input  var A : f32[3]
input  var B : f32[3]
input  var X : [3]
output var T : f32[3]
output var C : f32[3]
output var D : f32[]
output var E : [3]
output var F : f32[]
T = (A + B) - A
C = max (0.5 * T) (abs (B + B))
D = red+ 1 (A + B)
E = X + f64 (sqrt C)
F = (A # B) .[1 2]
"""
    p = teil.Program(src)
    doc = p.ops()
    assert doc["float32"] == ["A", "B", "T", "C", "D", "F"]
    model = teil.onnx.export(p)
    types = {v.name: v.type.tensor_type.elem_type for v in [*model.graph.input, *model.graph.output]}
    assert types == {"A": 1, "B": 1, "X": 11, "T": 1, "C": 1, "D": 1, "E": 11, "F": 1}
    # Every intermediate value has its type in value_info, float32 where its step says so.
    info = {v.name: v.type.tensor_type.elem_type for v in model.graph.value_info}
    for k, step in enumerate(doc["steps"]):
        name = f"{step['out']}:{k}"
        if name in info:
            assert info[name] == ELEM["f32" if step.get("dtype") == "float32" else "f64"], step
    assert len(info) == len(doc["steps"]) - len(doc["outputs"])
    # The literal is a float32 constant.
    [c] = [n for n in model.graph.node if n.op_type == "Constant" and n.attribute[0].t.data_type != 7]
    assert c.attribute[0].t.data_type == onnx.TensorProto.FLOAT
    # 2^24 + 1 rounds to 2^24 in binary32: (A + B) - A is 0 there (1 in binary64), and the
    # sum of A + B = [2^24, 1, 1] is 2^24 folded from the first element in binary32 (as TeIL
    # and NumPy's ReduceSum of 3 elements do), 2^24 + 3 in binary64.
    inputs = {"A": np.array([2**24, 0, 0], np.float32), "B": np.array([1, 1, 1], np.float32), "X": np.array([0.5, 1, 2])}
    want = p.run(**inputs, backend="oracle")
    got = dict(zip(doc["outputs"], run_reference(model, inputs)))
    for name in doc["outputs"]:
        assert want[name].dtype == got[name].dtype, name
    assert want["T"].tolist() == got["T"].tolist() == [0, 1, 1]
    assert want["D"] == got["D"] == np.float32(2**24)
    assert same(want["E"], got["E"])
    assert want["C"].tolist() == got["C"].tolist() == [2, 2, 2]
    # einsum sums in an order of its own (NumPy's float32 einsum: 2^24 + 2 here, where TeIL's
    # fold from the first element gives 2^24): within the float32 bound n·u·Σ|a·b|.
    assert abs(float(want["F"]) - float(got["F"])) <= 3 * 2.0**-24 * float(np.sum(np.abs(inputs["A"] * inputs["B"])))

    # The command line writes the same model.
    program = tmp_path / "f32.teil"
    program.write_text(src)
    subprocess.run([sys.executable, "-m", "teil.onnx", str(program), "-o", str(tmp_path / "f32.onnx")], check=True, timeout=120)
    written = onnx.load(str(tmp_path / "f32.onnx"))
    onnx.checker.check_model(written, full_check=True)
    assert [i.type.tensor_type.elem_type for i in written.graph.input] == [1, 1, 11]


def test_an_f32_variable_read_before_it_is_assigned_is_a_float_nan():
    p = teil.Program("input var A : f32[2]\nvar T : f32[2]\noutput var C : f32[2]\nC = A + T\nT = A")
    assert p.ops()["undefined"] == ["T"]
    model = teil.onnx.export(p)
    [fill] = [n for n in model.graph.node if n.op_type == "ConstantOfShape"]
    assert fill.attribute[0].t.data_type == onnx.TensorProto.FLOAT
    [c] = run_reference(model, {"A": np.array([1.0, 2.0], np.float32)})
    assert c.dtype == np.float32 and np.all(np.isnan(c))


def test_nan_propagating_reductions_of_float32():
    p = teil.Program("input var A : f32[2 3]\noutput var C : f32[2]\noutput var D : f32[2]\nC = redmax 2 A\nD = redmin 2 A")
    safe = teil.onnx.nan_propagating_reductions(teil.onnx.export(p))
    onnx.checker.check_model(safe, full_check=True)
    a = np.array([[1, np.nan, 3], [4, 5, 6]], np.float32)
    c, d = run_reference(safe, {"A": a})
    assert c.dtype == d.dtype == np.float32
    assert same(c, np.array([np.nan, 6], np.float32)) and same(d, np.array([np.nan, 4], np.float32))


def test_float32_interface_is_inferred_from_the_steps():
    # What a teil-target/1 request carries (the steps and the interface's names) is enough to
    # know which interface variables are f32.
    programs = [
        "input var A : f32[2]\ninput var B : [2]\noutput var C : f32[2]\nC = A + f32 B",
        "input var A : [2]\noutput var C : f32[2]\noutput var D : [2]\nC = f32 A\nD = f64 C",
        "input var A : f32[2]\ninout var X : f32[2]\noutput var C : [2]\nX = exp X\nC = f64 (max A X)",
        "input var A : f32[2]\noutput var C : f32[2]\nC = A",
    ]
    for src in programs:
        doc = teil.Program(src).ops()
        inferred = teil.onnx.float32_interface(doc["steps"], list(doc["inputs"]), list(doc["outputs"]))
        assert set(inferred) == set(doc.get("float32", [])), src
    # An input no step reads is counted f64 (nothing depends on its type; its values are exact
    # in binary64).
    doc = teil.Program("input var A : [2 2]\ninput var B : f32[2]\noutput var C : [2]\nC = red+ 2 (A * A)").ops()
    assert doc["float32"] == ["B"]
    assert teil.onnx.float32_interface(doc["steps"], ["A", "B"], ["C"]) == []


def test_a_step_of_the_wrong_type_is_an_export_error():
    def doc(steps, float32=()):
        return {"format": "ops/1", "inputs": {"A": [2]}, "outputs": {"C": [2]}, "undefined": [],
                "float32": list(float32), "steps": steps}

    add = {"out": "C", "op": "add", "args": ["A", "A"], "shape": [2], "dtype": "float32"}
    with pytest.raises(teil.onnx.ExportError, match="`add` computes in float32 but `A` is float64") as e:
        teil.onnx.from_ops(doc([add]))
    assert e.value.step == 0
    with pytest.raises(teil.onnx.ExportError, match="output `C` is declared float64 but its value is float32"):
        teil.onnx.from_ops(doc([add], ["A"]))
    with pytest.raises(teil.onnx.ExportError, match="'float16' is not an ops/1 element type"):
        teil.onnx.from_ops(doc([{**add, "dtype": "float16"}]))
    with pytest.raises(teil.onnx.ExportError, match="`cosh` is not an ops/1 function"):
        teil.onnx.from_ops(doc([{"out": "C", "op": "func", "name": "cosh", "args": ["A"], "shape": [2]}]))
    cast = {"out": "C", "op": "cast", "to": "float32", "args": ["A"], "shape": [2]}
    with pytest.raises(teil.onnx.ExportError, match="a cast to float32 whose dtype is float64"):
        teil.onnx.from_ops(doc([cast]))
    inexact = [{"out": "%1", "op": "const", "args": [], "value": 0.1, "shape": [], "dtype": "float32"},
               {"out": "C", "op": "mul", "args": ["%1", "A"], "shape": [2], "dtype": "float32"}]
    with pytest.raises(teil.onnx.ExportError, match="the constant 0.1 is not a float32 value"):
        teil.onnx.from_ops(doc(inexact, ["A", "C"]))
    # The same with the constant as ops/1 writes it (0.1 rounded to binary32) exports.
    inexact[0]["value"] = float(np.float32(0.1))
    model = teil.onnx.from_ops(doc(inexact, ["A", "C"]))
    [c] = run_reference(model, {"A": np.array([1, 2], np.float32)})
    assert c.dtype == np.float32 and c.tolist() == [np.float32(0.1), np.float32(0.1) * np.float32(2)]


def test_vectors_writes_only_inside_its_directory_and_names_what_is_wrong(tmp_path):
    # Issue 52, points 6 and 7: `--vectors DIR` never writes outside DIR (a case named `..`, a
    # case directory that is a symbolic link), and a damaged index or ops.json is an `error:`
    # line naming the case, never a traceback.
    cmd = [sys.executable, "-m", "teil.onnx", "--vectors"]
    out, index = export_vectors(tmp_path, "--programs", "3", "--seed", "1")
    pristine = {case["dir"]: (out / case["dir"] / "ops.json").read_text() for case in index["cases"]}
    first = index["cases"][0]["dir"]

    def refused(fragment):
        r = subprocess.run([*cmd, str(out)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 1 and r.stderr.startswith("error: "), r.stderr
        assert fragment in r.stderr and "Traceback" not in r.stderr, r.stderr

    def with_index(cases):
        (out / "index.json").write_text(json.dumps(dict(index, cases=cases)))

    with_index([{"dir": ".."}])
    refused('case 0 names ".."')
    assert not (tmp_path / "model.onnx").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "ops.json").write_text(pristine[first])
    (out / "linked").symlink_to(elsewhere)
    with_index([{"dir": "linked"}])
    refused("case linked: ")
    assert not (elsewhere / "model.onnx").exists()
    with_index(5)
    refused("`cases` is 5, not a list")
    with_index([7])
    refused("case 0 names null")

    with_index(index["cases"][:1])
    document = json.loads(pristine[first])
    no_inputs = {k: v for k, v in document.items() if k != "inputs"}
    for text, fragment in [("[]", "not an ops/1 document"), (json.dumps(no_inputs), "missing key 'inputs'")]:
        (out / first / "ops.json").write_text(text)
        refused(f"case {first}: ops.json: ")
        refused(fragment)
        assert not (out / first / "model.onnx").exists()
    # A reduction of a kind ops/1 does not have.
    avg = {"format": "ops/1", "inputs": {"x": [3]}, "outputs": {"y": []},
           "steps": [{"op": "reduce", "kind": "avg", "args": ["x"], "axes": [0], "value": "y"}]}
    (out / first / "ops.json").write_text(json.dumps(avg))
    refused(f"case {first}: ops.json")
    # Repaired, the same directory gets its model.
    (out / first / "ops.json").write_text(pristine[first])
    r = subprocess.run([*cmd, str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout == f"1 models written to {out}\n", r.stderr
