#!/usr/bin/env python3
"""XLA's algebraic simplifier rewrites a division of a quotient, (a / b) / c, into a / (b * c).

Target: jax 0.10.2, jaxlib 0.10.2 (XLA CPU, jit). Standalone: needs only NumPy and jax (jaxlib: XLA on the CPU). Exits 1 while the
target's values differ from the expected ones (or it fails), 0 once they agree.

Expected values: TeIL's oracle (IEEE 754 division, each quotient rounded, as `jnp.divide` documents ("Divide arguments element-wise", the same as numpy.true_divide) and as eager JAX and NumPy compute it: (3.4028235e38 / 3.4028235e38) / -3 = 1 / -3 = -0.33333334 in float32; jax.jit is documented to compile the same function, not to change its value), written below as literals.
Written by TeIL's fuzz/targets/standalone.py from the finding fuzz/findings/xla/target_4865727875750240363.
"""
import sys

import numpy as np

INPUTS = {
    't1x1_0': np.array([3.4028234663852886e+38], dtype=np.float32).reshape((1, 1)),
    'h0': np.array([-3.0], dtype=np.float32).reshape(()),
}
EXPECTED = {
    'h2': np.array([-0.3333333432674408], dtype=np.float32).reshape((1, 1)),
}
# Finite values may be this many ulps (of their type) from the expected ones.
ULPS = 0


def run():
    """The target's outputs, by name, in the graph's output order."""
    import jax

    jax.config.update("jax_enable_x64", True)  # float64 where the program says so
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    import jax.scipy.special

    def program(t1x1_0, h0):
        v_1 = t1x1_0 / t1x1_0
        h2 = v_1 / h0
        return (h2,)

    results = jax.jit(program)(*INPUTS.values())
    return dict(zip(EXPECTED, (np.asarray(r) for r in results)))


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
