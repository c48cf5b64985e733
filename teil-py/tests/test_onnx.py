"""ONNX export (`teil.onnx`, spec/fuzzing.md "ONNX export"): every exported model passes ONNX's
full check, and ONNX's own reference semantics (`onnx.reference.ReferenceEvaluator`) compute the
oracle's outputs on the fuzzer's test vectors (`teil fuzz --export`).

`onnx` is required (teil-py/requirements-dev.txt pins it): a missing one fails, so that CI
cannot pass without running these tests.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import onnx
import teil
import teil.onnx
from onnx.reference import ReferenceEvaluator

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


def run_reference(model, inputs: dict) -> list:
    with np.errstate(all="ignore"):  # 1/0 and 0/0 are IEEE results in TeIL, not warnings
        return ReferenceEvaluator(model).run(None, inputs)


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
    compared = {"exact": 0, "bound": 0}
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
        values = run_reference(model, inputs) if document["outputs"] else []
        for name, value in zip(document["outputs"], values):
            want = np.load(case_dir / "expected" / f"{name}.npy")
            got = np.asarray(value, dtype=np.float64)
            for cell in case.get("unjudged", {}).get(name, []):  # any value is correct there
                want[tuple(cell)] = got[tuple(cell)]
            special += int(np.count_nonzero(~np.isfinite(want)))
            ok = same(want, got) if case["tolerance"] == "exact" else within(want, got)
            assert ok, f"{case['dir']} `{name}` ({case['tolerance']}): oracle {want}, ONNX {got}"
        compared[case["tolerance"]] += 1
    assert compared["exact"] >= programs // 2, compared
    if profile != "einsum":
        # Every op of ops/1 was exported and evaluated, and NaN and infinities were met.
        assert ops_seen == {"einsum", "add", "sub", "mul", "div", "reduce", "expand", "take", "const"}
        assert special > 0
    else:
        assert ops_seen == {"einsum"}


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
        values = run_reference(model, inputs) if document["outputs"] else []
        if any(
            not within(np.load(out / case["dir"] / "expected" / f"{name}.npy"), np.asarray(value))
            for name, value in zip(document["outputs"], values)
        ):
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
