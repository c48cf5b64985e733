#!/usr/bin/env python3
"""ReduceMin (and ReduceMax) along an axis drop a NaN that comes after a number.

Target: onnxruntime 1.32.0 (ORT_ENABLE_ALL). Standalone: needs only NumPy and onnxruntime. Exits 1 while the
target's values differ from the expected ones (or it fails), 0 once they agree.

Expected values: TeIL's oracle (ONNX's ReduceMax/ReduceMin (opset 18): "The above behavior is similar to numpy", and NumPy's max and min propagate NaN ("NaN values are propagated, that is if at least one item is NaN, the corresponding max value will be NaN as well", numpy.amax); ONNX's reference evaluator (onnx.reference) returns NaN), written below as literals.
Written by TeIL's fuzz/targets/standalone.py from the finding fuzz/findings/onnxruntime/target_13117790733350409029.
"""
import base64
import sys

import numpy as np

# The ONNX model (opset 18), serialised: Div, Constant, Unsqueeze, Constant, Tile, Constant, ReduceMin.
MODEL = base64.b64decode(
    "CAgSBHRlaWw6hAQKHwoIdDN4MngzXzEKCHQzeDJ4M18xEgQlMTowIgNEaXYKPBIJJTI6MTpheGVz"
    "IghDb25zdGFudColCgV2YWx1ZSoZCAEQB0IJJTI6MTpheGVzSggCAAAAAAAAAKABBAotCgQlMTow"
    "CgklMjoxOmF4ZXMSDyUyOjE6dW5zcXVlZXplZCIJVW5zcXVlZXplCloSDCUyOjE6cmVwZWF0cyII"
    "Q29uc3RhbnQqQAoFdmFsdWUqNAgEEAdCDCUyOjE6cmVwZWF0c0ogAQAAAAAAAAABAAAAAAAAAAEA"
    "AAAAAAAAAQAAAAAAAACgAQQKKwoPJTI6MTp1bnNxdWVlemVkCgwlMjoxOnJlcGVhdHMSBCUyOjEi"
    "BFRpbGUKPBIJcjA6MjpheGVzIghDb25zdGFudColCgV2YWx1ZSoZCAEQB0IJcjA6MjpheGVzSggA"
    "AAAAAAAAAKABBAoxCgQlMjoxCglyMDoyOmF4ZXMSAnIwIglSZWR1Y2VNaW4qDwoIa2VlcGRpbXMY"
    "AKABAhIEdGVpbFoeCgh0M3gyeDNfMRISChAICxIMCgIIAgoCCAEKAggCYhgKAnIwEhIKEAgLEgwK"
    "AggBCgIIAQoCCAJqGgoEJTE6MBISChAICxIMCgIIAgoCCAEKAggCah4KBCUyOjESFgoUCAsSEAoC"
    "CAIKAggBCgIIAQoCCAJCBAoAEBI="
)
INPUTS = {
    't3x2x3_1': np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float64).reshape((2, 1, 2)),
}
EXPECTED = {
    'r0': np.array([float("nan"), float("nan")], dtype=np.float64).reshape((1, 1, 2)),
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
