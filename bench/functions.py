"""The cost of correctly rounded functions: TeIL's `exp`, `log`, `tanh`, `erf` (and `sqrt` and
`abs`) over 10^6 elements in both element types, run by the fast evaluator and by the C
backend's in-process kernel (`Program.compile`) through the Python package, against NumPy's
`np.exp`, `np.log`, `np.tanh`, `np.sqrt`, `np.abs` on the same arrays, in the same run
(PERFORMANCE.md, "Functions").

    target/py-test-venv/bin/python bench/functions.py            # the table
    target/py-test-venv/bin/python bench/functions.py --quick    # one round (a smoke test)

It needs the `teil` package built in release mode in that environment (`maturin develop
--release` in teil-py/, or ./test's environment after a release build) and NumPy. Each side is
timed as the minimum over rounds of at least 0.3 s of calls; TeIL's time includes what every
`Program.run` pays (checking the inputs, copying them into the evaluator's store and the result
out), measured separately as the time of `Y = X`, the identity, so the table gives both the
whole call and the function alone (the call minus the copy). The compiled kernel's call is
timed whole, and its copy likewise (`Y = X` compiled), for the same split. NumPy has no `erf`:
its column is empty there. The compiled kernel's values must equal the fast evaluator's bit for
bit. Values are checked, not only timed: TeIL's must be within 1 ulp of NumPy's (NumPy's
functions are within a few ulps of the truth; TeIL's are the truth rounded)."""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import teil

N = 10**6
FUNCS = ["exp", "log", "tanh", "erf", "sqrt", "abs"]


def cpu() -> str:
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                fields.setdefault(k.strip(), v.strip())
                if not line.strip():
                    break
    except OSError:
        return platform.processor() or "unknown CPU"
    flags = set(fields.get("flags", "").split())
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    return (
        f"{fields.get('model name', '?')}, family {fields.get('cpu family', '?')} "
        f"model {fields.get('model', '?')}, {isa}{' + FMA' if 'fma' in flags else ''}"
    )


def best(f, min_seconds: float, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        n, start = 0, time.perf_counter()
        while True:
            f()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds and n >= 3:
                break
        times.append(elapsed / n)
    return min(times)


def inputs(func: str, dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    lo, hi = {
        "exp": (-80, 80),
        "log": (1e-30, 1e30),
        "tanh": (-10, 10),
        "erf": (-6, 6),
        "sqrt": (0, 1e3),
    }.get(func, (-1e3, 1e3))
    if func == "log":
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), N))
    else:
        x = rng.uniform(lo, hi, N)
    return x.astype(dtype)


def ulps(a: np.ndarray, b: np.ndarray) -> float:
    """The largest |a - b| in units of the spacing of `b`'s own format at `b`."""
    spacing = np.spacing(np.abs(b)).astype(np.float64)
    a, b = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(a) & np.isfinite(b) & (spacing > 0)
    return float(np.max(np.abs(a - b)[finite] / spacing[finite])) if finite.any() else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, min_s = (1, 0.05) if args.quick else (3, 0.3)
    print(f"CPU: {cpu()}; NumPy {np.__version__}; 10^6 elements; one thread")
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print()
    print("| function | type | TeIL call (ms) | copy (ms) | TeIL function (ms) | C kernel call (ms) | C copy (ms) | C function (ms) | NumPy (ms) | function ÷ NumPy | C function ÷ NumPy | max diff (ulps of binary32/64) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for ty, dtype in [("f64", np.float64), ("f32", np.float32)]:
        ident = teil.Program(f"input alloc X : {ty}[{N}]\noutput alloc Y : {ty}[{N}]\nY = X")
        ident_c = ident.compile()
        for func in FUNCS:
            x = inputs(func, dtype)
            prog = teil.Program(
                f"input alloc X : {ty}[{N}]\noutput alloc Y : {ty}[{N}]\nY = {func} X"
            )
            y = prog.run(X=x)["Y"]
            assert y.dtype == dtype
            kernel = prog.compile()
            y_c = kernel(X=x)["Y"]
            assert y_c.dtype == dtype
            np.testing.assert_array_equal(y_c, y)
            t_teil = best(lambda: prog.run(X=x), min_s, rounds)
            t_copy = best(lambda: ident.run(X=x), min_s, rounds)
            t_c = best(lambda: kernel(X=x), min_s, rounds)
            t_c_copy = best(lambda: ident_c(X=x), min_s, rounds)
            ref = getattr(np, func, None)
            if ref is not None:
                z = ref(x)
                diff = ulps(y, z)
                assert diff <= 4, f"{func} {ty}: {diff} ulps from NumPy"
                t_np = best(lambda: ref(x), min_s, rounds)
                ratio = f"{(t_teil - t_copy) / t_np:.2f}"
                ratio_c = f"{(t_c - t_c_copy) / t_np:.2f}"
                np_ms, d = f"{t_np * 1e3:.2f}", f"{diff:.0f}"
            else:
                np_ms, ratio, ratio_c, d = "—", "—", "—", "—"
            print(
                f"| `{func}` | {ty} | {t_teil * 1e3:.2f} | {t_copy * 1e3:.2f} | "
                f"{(t_teil - t_copy) * 1e3:.2f} | {t_c * 1e3:.2f} | {t_c_copy * 1e3:.2f} | "
                f"{(t_c - t_c_copy) * 1e3:.2f} | {np_ms} | {ratio} | {ratio_c} | {d} |"
            )


if __name__ == "__main__":
    main()
