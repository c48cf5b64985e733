#!/usr/bin/env python3
"""Tanh on float32 loses the accuracy of tiny arguments.

Target: onnxruntime 1.32.0 (ORT_ENABLE_ALL). Standalone: needs only NumPy and onnxruntime. Exits 1 while the
target's values differ from the expected ones (or it fails), 0 once they agree.

Expected values: TeIL's oracle (tanh correctly rounded to binary32; ONNX's Tanh: 'Calculates the hyperbolic tangent of the given input tensor element-wise'), written below as literals.
Written by TeIL's fuzz/targets/standalone.py from the finding fuzz/findings/onnxruntime/accuracy_tanh_f32.
"""
import base64
import sys

import numpy as np

# The ONNX model (opset 18), serialised: Tanh.
MODEL = base64.b64decode(
    "CAgSBHRlaWw6NgoMCgFBEgFDIgRUYW5oEgR0ZWlsWg8KAUESCgoICAESBAoCCAhiDwoBQxIKCggI"
    "ARIECgIICEIECgAQEg=="
)
INPUTS = {
    'A': np.array([1.1754943508222875e-38, 2.1865271290670965e-38, 1.0000002153053333e-39, 9.99994610111476e-41, 1.401298464324817e-45, -9.99994610111476e-41, 1.0000000031710769e-30, 0.5], dtype=np.float32).reshape((8,)),
}
EXPECTED = {
    'C': np.array([1.1754943508222875e-38, 2.1865271290670965e-38, 1.0000002153053333e-39, 9.99994610111476e-41, 1.401298464324817e-45, -9.99994610111476e-41, 1.0000000031710769e-30, 0.46211716532707214], dtype=np.float32).reshape((8,)),
}
# Finite values may be this many ulps (of their type) from the expected ones.
ULPS = 4


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
