#!/usr/bin/env python3
"""Mul by a Constant 0 is folded to 0.

Target: tvm 0.27.0.post1 (relax, llvm), workaround nan-reductions. Standalone: needs only NumPy, apache-tvm and onnx (which TVM's ONNX front end reads the model with). Exits 1 while the
target's values differ from the expected ones (or it fails), 0 once they agree.

Expected values: TeIL's oracle (IEEE 754 multiplication: 0 * ±inf and 0 * NaN are NaN; ONNX's Mul: "Performs element-wise binary multiplication (with Numpy-style broadcasting support)", and NumPy and ONNX Runtime give NaN), written below as literals.
Written by TeIL's fuzz/targets/standalone.py from the finding fuzz/findings/tvm/target_14702834358964954586.
"""
import base64
import sys

import numpy as np

# The ONNX model (opset 18), serialised: Mul, Constant, Gather, Constant, ReduceSum, Squeeze, Constant, ReduceSum, Constant, Unsqueeze, Constant, Expand, Constant, ReduceProd, Identity.
MODEL = base64.b64decode(
    "CAgSBHRlaWw69ggKHwoEJTE6MAoMdDN4M3gzeDF4M18wEgQlMjoxIgNNdWwKPBIKJTM6MjppbmRl"
    "eCIIQ29uc3RhbnQqJAoFdmFsdWUqGBAHQgolMzoyOmluZGV4SggCAAAAAAAAAKABBAotCgQlMjox"
    "CgolMzoyOmluZGV4EgQlMzoyIgZHYXRoZXIqCwoEYXhpcxgBoAECCjwSCSU0OjM6YXhlcyIIQ29u"
    "c3RhbnQqJQoFdmFsdWUqGQgBEAdCCSU0OjM6YXhlc0oIAwAAAAAAAACgAQQKOAoEJTM6MgoJJTQ6"
    "MzpheGVzEgklNDozOmtlcHQiCVJlZHVjZVN1bSoPCghrZWVwZGltcxgBoAECCiUKCSU0OjM6a2Vw"
    "dAoJJTQ6MzpheGVzEgQlNDozIgdTcXVlZXplCjwSCSU1OjQ6YXhlcyIIQ29uc3RhbnQqJQoFdmFs"
    "dWUqGQgBEAdCCSU1OjQ6YXhlc0oIAAAAAAAAAACgAQQKMwoEJTQ6MwoJJTU6NDpheGVzEgQlNTo0"
    "IglSZWR1Y2VTdW0qDwoIa2VlcGRpbXMYAKABAgo8EgklNjo1OmF4ZXMiCENvbnN0YW50KiUKBXZh"
    "bHVlKhkIARAHQgklNjo1OmF4ZXNKCAIAAAAAAAAAoAEECi0KBCU1OjQKCSU2OjU6YXhlcxIPJTY6"
    "NTp1bnNxdWVlemVkIglVbnNxdWVlemUKThIKJTY6NTpzaGFwZSIIQ29uc3RhbnQqNgoFdmFsdWUq"
    "KggDEAdCCiU2OjU6c2hhcGVKGAMAAAAAAAAAAQAAAAAAAAABAAAAAAAAAKABBAorCg8lNjo1OnVu"
    "c3F1ZWV6ZWQKCiU2OjU6c2hhcGUSBCU2OjUiBkV4cGFuZAo8EglyMDo2OmF4ZXMiCENvbnN0YW50"
    "KiUKBXZhbHVlKhkIARAHQglyMDo2OmF4ZXNKCAIAAAAAAAAAoAEECjYKBCU2OjUKCXIwOjY6YXhl"
    "cxIGcjA6b3V0IgpSZWR1Y2VQcm9kKg8KCGtlZXBkaW1zGACgAQIKKgoMdDN4M3gzeDF4M18wEhB0"
    "M3gzeDN4MXgzXzA6b3V0IghJZGVudGl0eRIEdGVpbCoSEAtCBCUxOjBKCAAAAAAAAAAAWioKDHQz"
    "eDN4M3gxeDNfMBIaChgICxIUCgIIAwoCCAMKAggDCgIIAQoCCANaFAoCcjASDgoMCAsSCAoCCAMK"
    "AggBYi4KEHQzeDN4M3gxeDNfMDpvdXQSGgoYCAsSFAoCCAMKAggDCgIIAwoCCAEKAggDYhgKBnIw"
    "Om91dBIOCgwICxIICgIIAwoCCAFqDgoEJTE6MBIGCgQICxIAaiIKBCUyOjESGgoYCAsSFAoCCAMK"
    "AggDCgIIAwoCCAEKAggDah4KBCUzOjISFgoUCAsSEAoCCAMKAggDCgIIAQoCCANqGgoEJTQ6MxIS"
    "ChAICxIMCgIIAwoCCAMKAggBahYKBCU1OjQSDgoMCAsSCAoCCAMKAggBahoKBCU2OjUSEgoQCAsS"
    "DAoCCAMKAggBCgIIAUIECgAQEg=="
)
INPUTS = {
    't3x3x3x1x3_0': np.array([2.0, -3.0, 3.0, -1.0, 3.0, 0.0, -2.0, 0.0, -2.0, 1.0, 3.0, -2.0, 1.0, 1.0, -1.0, 0.0, -2.0, -3.0, -3.0, -float("inf"), 2.0, 0.0, -2.0, 1.0, -3.0, -3.0, 0.0, 0.0, 3.0, 1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 2.0, -1.0, -1.0, 2.0, 0.0, -0.0, -1.0, 0.0, -2.0, -float("inf"), 0.0, 1.0, 3.0, -2.0, 2.0, 2.0, 2.0, -3.0, -3.0, 2.0, -2.0, -1.0, -1.0, 0.0, -2.0, 2.0, float("inf"), 2.0, -float("inf"), -3.0, 0.0, 1.0, -1.0, 0.0, 0.0, -2.0, 0.0, -2.0, -2.0, -3.0, 2.0, 0.0, 1.0, 1.0, 2.0], dtype=np.float64).reshape((3, 3, 3, 1, 3)),
    'r0': np.array([0.0, 0.0, 0.0], dtype=np.float64).reshape((3, 1)),
}
EXPECTED = {
    't3x3x3x1x3_0:out': np.array([2.0, -3.0, 3.0, -1.0, 3.0, 0.0, -2.0, 0.0, -2.0, 1.0, 3.0, -2.0, 1.0, 1.0, -1.0, 0.0, -2.0, -3.0, -3.0, -float("inf"), 2.0, 0.0, -2.0, 1.0, -3.0, -3.0, 0.0, 0.0, 3.0, 1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 2.0, -1.0, -1.0, 2.0, 0.0, -0.0, -1.0, 0.0, -2.0, -float("inf"), 0.0, 1.0, 3.0, -2.0, 2.0, 2.0, 2.0, -3.0, -3.0, 2.0, -2.0, -1.0, -1.0, 0.0, -2.0, 2.0, float("inf"), 2.0, -float("inf"), -3.0, 0.0, 1.0, -1.0, 0.0, 0.0, -2.0, 0.0, -2.0, -2.0, -3.0, 2.0, 0.0, 1.0, 1.0, 2.0], dtype=np.float64).reshape((3, 3, 3, 1, 3)),
    'r0:out': np.array([float("nan"), 0.0, 0.0], dtype=np.float64).reshape((3, 1)),
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
