#!/usr/bin/env python3
"""A teil-target/1 adapter for Apache TVM: `teil fuzz --target "python3 tvm_ops.py"`
(`--target-timeout 60` or so: TVM compiles every program).

Each program's ops/1 form (spec/fuzzing.md) becomes one ONNX model (float64 and float32 tensors
as the steps' types say, opset 18) through
TeIL's exporter, `teil.onnx.from_ops` (from the installed `teil` package or, without it, this
checkout's teil-py/python/teil/onnx.py), which TVM imports with its Relax ONNX front end
(`tvm.relax.frontend.onnx.from_onnx`), lowers with `relax.transform.LegalizeOps`, compiles with
`tvm.compile` for `llvm` at its default optimisation level (`--opt-level N` sets
`PassContext(opt_level=N)`) and runs in the Relax virtual machine on the CPU.

Answers: any failure to import, compile or run an exported model is an `error` (a finding of the
class "error on a valid model": every exported model passes `onnx.checker.check_model(
full_check=True)` and ONNX's reference evaluator computes the oracle's values); an operator the
front end documents as not supported (its `OpNotImplemented`) is `unsupported`. Without tvm or
onnx installed every program is `unsupported`. Every adapter in fuzz/targets/ stands alone on
purpose, protocol loop included: a tester copies one file.
"""
import argparse
import importlib.util
import json
import pathlib
import sys

import numpy as np

try:
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
except ImportError:  # reported per case as "unsupported"
    tvm = None


def load_exporter():
    """`teil.onnx`: from the installed package, else from this checkout."""
    try:
        import teil.onnx

        return teil.onnx
    except ImportError:
        pass
    path = pathlib.Path(__file__).resolve().parents[2] / "teil-py" / "python" / "teil" / "onnx.py"
    spec = importlib.util.spec_from_file_location("teil_onnx", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    return module


def operand_dtype(step):
    """The type of a step's arguments: its own, except that a cast converts from the other."""
    if step["op"] == "cast":
        return "float64" if step["to"] == "float32" else "float32"
    return step.get("dtype", "float64")


def float32_interface(request):
    """The interface variables of type f32 (the document's "float32", which a request does not
    carry), read off the steps: an input by the first step that reads it before any rebinds
    it, an output by the last step that binds it (else as the input). An input no step reads
    counts as f64: its values are exact in binary64 too."""
    first, last, bound = {}, {}, set()
    for step in request["ops"]:
        for a in step["args"]:
            if a in request["inputs"] and a not in bound:
                first.setdefault(a, operand_dtype(step))
        bound.add(step["out"])
        last[step["out"]] = step.get("dtype", "float64")
    return sorted({n for n in request["inputs"] if first.get(n) == "float32"}
                  | {n for n in request["outputs"] if last.get(n, first.get(n)) == "float32"})


def document(request):
    """The ops/1 document of a request (the protocol sends its steps and the interface)."""
    return {
        "format": "ops/1",
        "inputs": {n: v["shape"] for n, v in request["inputs"].items()},
        "outputs": {n: v["shape"] for n, v in request["outputs"].items()},
        "float32": float32_interface(request),
        "undefined": [],
        "steps": request["ops"],
    }


def feed(path, name, model):
    """An input file as the model takes it: float32 for a FLOAT input, an f32 variable (exactly:
    its values are binary32), float64 otherwise."""
    [elem] = [i.type.tensor_type.elem_type for i in model.graph.input if i.name == name]
    return np.load(path).astype(np.float32 if elem == 1 else np.float64)  # 1: TensorProto.FLOAT


class Unsupported(Exception):
    pass


def tensor(array):
    # TVM 0.2x renamed tvm.nd.array to tvm.runtime.tensor; either takes a NumPy array.
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    return make(np.array(array, order="C"), tvm.cpu())  # keeps shape () and the dtype


def run_case(request, exporter, opt_level, workarounds, spelling="drawn"):
    if tvm is None or exporter is None:
        raise Unsupported("tvm or onnx is not installed")
    if request["ops"] is None:
        raise Unsupported("this adapter runs the ops/1 form only")
    # About half the steps in the spellings real models use (MatMul, Gemm, Tile, Slice,
    # initializers: teil.onnx.SPELLINGS), drawn from the program's steps; `--spelling canonical`
    # keeps Einsum, Gather, Expand and Constant nodes.
    seed = exporter.spelling_seed(request["ops"]) if spelling == "drawn" else None
    model = exporter.from_ops(document(request), spellings=seed)
    if "nan-reductions" in workarounds:
        model = exporter.nan_propagating_reductions(model)
    try:
        mod = from_onnx(model, opset=18)
    except tvm.error.OpNotImplemented as e:
        raise Unsupported(f"tvm {tvm.__version__}: {e}") from None
    if opt_level is None:
        mod = relax.transform.LegalizeOps()(mod)
        executable = tvm.compile(mod, target="llvm")
    else:
        with tvm.transform.PassContext(opt_level=opt_level):
            mod = relax.transform.LegalizeOps()(mod)
            executable = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    args = [tensor(feed(v["path"], name, model)) for name, v in request["inputs"].items()]
    result = vm["main"](*args)
    # One output is returned as a tensor, several as a tuple, in the graph's output order.
    values = [result] if len(request["outputs"]) == 1 else list(result)
    if len(values) != len(request["outputs"]):
        raise RuntimeError(f"{len(values)} results for {len(request['outputs'])} outputs")
    for (name, v), value in zip(request["outputs"].items(), values):
        np.save(v["path"], np.array(value.numpy(), dtype=np.float64, order="C"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--opt-level", type=int, choices=range(4), default=None)
    parser.add_argument(
        "--workaround",
        action="append",
        default=[],
        choices=["nan-reductions"],
        help="rewrite every ReduceMax/ReduceMin to propagate NaN with other ops (teil.onnx."
        "nan_propagating_reductions): look past the known NaN finding of fuzz/FINDINGS.md",
    )
    parser.add_argument(
        "--spelling",
        choices=["drawn", "canonical"],
        default="drawn",
        help="drawn (default): about half the steps exported in the spellings real models use "
        "(teil.onnx.SPELLINGS), chosen by the program; canonical: Einsum, Gather, Expand, Constant",
    )
    args = parser.parse_args()
    exporter = load_exporter()
    np.seterr(all="ignore")
    name = f"tvm {tvm.__version__} (relax, llvm)" if tvm else "tvm (not installed)"
    name += "".join(f", workaround {w}" for w in args.workaround)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        answer = {"id": request["id"], "status": "ok"}
        try:
            run_case(request, exporter, args.opt_level, args.workaround, args.spelling)
        except Unsupported as e:
            answer = {"id": request["id"], "status": "unsupported", "reason": str(e)}
        except Exception as e:  # anything else is a finding: report it, keep serving
            answer = {"id": request["id"], "status": "error", "message": f"{type(e).__name__}: {e}"}
        answer["target"] = name  # recorded in reproducers
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
