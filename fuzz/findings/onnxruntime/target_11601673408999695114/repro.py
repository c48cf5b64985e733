#!/usr/bin/env python3
"""A float64 MatMul whose operand is a Div by a Constant 0 (shrunk.

Target: onnxruntime 1.32.0 (ORT_ENABLE_ALL), workaround nan-reductions. Standalone: needs only NumPy and onnxruntime. Exits 1 while the
target's values differ from the expected ones (or it fails), 0 once they agree.

Expected values: TeIL's oracle (IEEE 754 arithmetic: x / 0 is ±inf or NaN, and a product with an infinity is ±inf or NaN; ONNX's Div: "Performs element-wise binary division (with Numpy-style broadcasting support)", and MatMul: "Matrix product that behaves like numpy.matmul"; the model passes onnx.checker's full check and loads at ORT_DISABLE_ALL), written below as literals.
Written by TeIL's fuzz/targets/standalone.py from the finding fuzz/findings/onnxruntime/target_11601673408999695114.
"""
import base64
import sys

import numpy as np

# The ONNX model (opset 18), serialised: Constant, Div, Constant, Reshape, Transpose, Constant, Reshape, MatMul, Constant, Reshape.
MODEL = base64.b64decode(
    "CAgSBHRlaWw6kgUKMBIEJTE6MCIIQ29uc3RhbnQqHgoFdmFsdWUqEhALQgQlMTowSggAAAAAAAAA"
    "AKABBAoZCgZ0M3gyXzAKBCUxOjASBCUyOjEiA0RpdgpOEg5oMDoyOmxoc19zaGFwZSIIQ29uc3Rh"
    "bnQqMgoFdmFsdWUqJggCEAdCDmgwOjI6bGhzX3NoYXBlShACAAAAAAAAAAIAAAAAAAAAoAEECicK"
    "AmgxCg5oMDoyOmxoc19zaGFwZRIIaDA6MjpsaHMiB1Jlc2hhcGUKLAoEJTI6MRIKaDA6MjpyaHNf"
    "dCIJVHJhbnNwb3NlKg0KBHBlcm1AAUAAoAEHCk4SDmgwOjI6cmhzX3NoYXBlIghDb25zdGFudCoy"
    "CgV2YWx1ZSomCAIQB0IOaDA6MjpyaHNfc2hhcGVKEAIAAAAAAAAAAwAAAAAAAACgAQQKLwoKaDA6"
    "MjpyaHNfdAoOaDA6MjpyaHNfc2hhcGUSCGgwOjI6cmhzIgdSZXNoYXBlCioKCGgwOjI6bGhzCgho"
    "MDoyOnJocxIMaDA6Mjpwcm9kdWN0IgZNYXRNdWwKThIOaDA6MjpvdXRfc2hhcGUiCENvbnN0YW50"
    "KjIKBXZhbHVlKiYIAhAHQg5oMDoyOm91dF9zaGFwZUoQAgAAAAAAAAADAAAAAAAAAKABBAorCgxo"
    "MDoyOnByb2R1Y3QKDmgwOjI6b3V0X3NoYXBlEgJoMCIHUmVzaGFwZRIEdGVpbFoYCgZ0M3gyXzAS"
    "DgoMCAsSCAoCCAMKAggCWhQKAmgxEg4KDAgLEggKAggCCgIIAmIUCgJoMBIOCgwICxIICgIIAgoC"
    "CANqDgoEJTE6MBIGCgQICxIAahYKBCUyOjESDgoMCAsSCAoCCAMKAggCQgQKABAS"
)
INPUTS = {
    't3x2_0': np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float64).reshape((3, 2)),
    'h1': np.array([0.0, 0.0, 0.0, 0.0], dtype=np.float64).reshape((2, 2)),
}
EXPECTED = {
    'h0': np.array([float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), float("nan")], dtype=np.float64).reshape((2, 3)),
}
# Finite values may be this many ulps (of their type) from the expected ones.
ULPS = 0


def run():
    """The target's outputs, by name, in the graph's output order."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)  # the exception says it; no second copy in its log
    session = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, INPUTS)))


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
