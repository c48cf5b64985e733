#!/usr/bin/env python3
"""Element-wise Max drops a NaN first operand.

Target: tvm 0.27.0.post1 (relax, llvm), workaround nan-reductions. Standalone: needs only NumPy, apache-tvm and onnx (which TVM's ONNX front end reads the model with). Exits 1 while the
target's values differ from the expected ones (or it fails), 0 once they agree.

Expected values: TeIL's oracle (NaN propagates through maximum: ONNX's Max is "Element-wise max of each of the input tensors (with Numpy-style broadcasting support)", and numpy.maximum propagates NaN ("If one of the elements being compared is a NaN, then that element is returned"); ONNX Runtime and ONNX's reference evaluator return NaN), written below as literals.
Written by TeIL's fuzz/targets/standalone.py from the finding fuzz/findings/tvm/target_358639683874489043.
"""
import base64
import sys

import numpy as np

# The ONNX model (opset 18), serialised: Max, Identity, Identity.
MODEL = base64.b64decode(
    "CAgSBHRlaWw6jQIKFQoCaDEKAmgyEgZoMDpvdXQiA01heAoWCgJoMRIGaDE6b3V0IghJZGVudGl0"
    "eQoWCgJoMhIGaDI6b3V0IghJZGVudGl0eRIEdGVpbFocCgJoMBIWChQIARIQCgIIAQoCCAEKAggC"
    "CgIIAlocCgJoMRIWChQIARIQCgIIAQoCCAEKAggCCgIIAlocCgJoMhIWChQIARIQCgIIAQoCCAEK"
    "AggCCgIIAmIgCgZoMDpvdXQSFgoUCAESEAoCCAEKAggBCgIIAgoCCAJiIAoGaDE6b3V0EhYKFAgB"
    "EhAKAggBCgIIAQoCCAIKAggCYiAKBmgyOm91dBIWChQIARIQCgIIAQoCCAEKAggCCgIIAkIECgAQ"
    "Eg=="
)
INPUTS = {
    'h0': np.array([0.0, 0.0, 0.0, 0.0], dtype=np.float32).reshape((1, 1, 2, 2)),
    'h1': np.array([0.0, 0.0, 0.0, float("nan")], dtype=np.float32).reshape((1, 1, 2, 2)),
    'h2': np.array([0.0, 0.0, 0.0, 0.0], dtype=np.float32).reshape((1, 1, 2, 2)),
}
EXPECTED = {
    'h0:out': np.array([0.0, 0.0, 0.0, float("nan")], dtype=np.float32).reshape((1, 1, 2, 2)),
    'h1:out': np.array([0.0, 0.0, 0.0, float("nan")], dtype=np.float32).reshape((1, 1, 2, 2)),
    'h2:out': np.array([0.0, 0.0, 0.0, 0.0], dtype=np.float32).reshape((1, 1, 2, 2)),
}
# Finite values may be this many ulps (of their type) from the expected ones.
ULPS = 0


def run():
    """The target's outputs, by name, in the graph's output order."""
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    model = onnx.load_from_string(MODEL)
    mod = relax.transform.LegalizeOps()(from_onnx(model, opset=18))
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    result = vm["main"](*[make(INPUTS[i.name], tvm.cpu()) for i in model.graph.input])
    names = [o.name for o in model.graph.output]
    values = [result] if len(names) == 1 else list(result)
    return {n: v.numpy() for n, v in zip(names, values)}


def differs(outputs):
    """The cells where `outputs` differ from EXPECTED: NaN must be NaN, an infinity the same
    infinity, a finite value finite and within ULPS ulps (-0 equals +0)."""
    found = []
    for name, want in EXPECTED.items():
        got = np.asarray(outputs[name])
        if got.shape != want.shape:
            found.append((name, "shape", want.shape, got.shape))
            continue
        w, g = want.astype(np.float64), got.astype(np.float64)
        ulp = np.spacing(np.abs(want)).astype(np.float64)
        with np.errstate(invalid="ignore"):
            ok = np.where(np.isnan(w), np.isnan(g),
                          np.where(np.isinf(w), w == g, np.isfinite(g) & (np.abs(g - w) <= ULPS * ulp)))
        for at in zip(*np.nonzero(~ok)):
            found.append((name, at, want[at], got[at]))
    return found


def main():
    try:
        outputs = run()
    except Exception as e:  # a failure on a valid model is the bug too
        print(f"the target failed: {type(e).__name__}: {e}")
        return 1
    for name, want in EXPECTED.items():
        print(f"{name}: expected {want.ravel().tolist()}")
        print(f"{' ' * len(name)}  target   {np.asarray(outputs[name]).ravel().tolist()}")
    found = differs(outputs)
    for name, at, want, got in found:
        where = " shape" if at == "shape" else [int(i) for i in at]
        print(f"differs: {name}{where}: expected {want!r}, target {got!r}")
    print("BUG PRESENT" if found else "fixed: the target agrees")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
