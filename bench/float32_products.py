"""Binary32 against binary64 products in the C backend: `C = (A # B) .[2 3]` compiled in-process
(`Program.compile`, exact and fma mode, `-O3 -march=native`) against NumPy's `matmul` in each
dtype, one thread (NumPy's BLAS is held to one thread: the variables below are set before NumPy
loads, unless given), in the same run (PERFORMANCE.md, "The same functions compiled by the C
backend").

    target/py-test-venv/bin/python bench/float32_products.py

It needs the `teil` package built in release mode in that environment (`maturin develop
--release` in teil-py/) and NumPy. Inputs are small integers, so every product is exact in both
types and the kernel's result must equal NumPy's bit for bit (asserted). Float32 arrays are
passed to a binary32 kernel as they are (`teil.Kernel` reads and returns float32 without a
conversion). Each figure is the minimum of 20 calls, in ms; the shapes are squares and one of
odd extents (`m x k x n`), which no tile divides."""

from __future__ import annotations

import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402 (after the thread limits)

import teil  # noqa: E402

SHAPES = [(128, 128, 128), (256, 256, 256), (512, 512, 512), (257, 263, 269)]


def best(f, n: int = 20) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    print("OPENBLAS_NUM_THREADS=" + os.environ["OPENBLAS_NUM_THREADS"])
    print("| m x k x n | type | exact (ms) | fma (ms) | NumPy matmul (ms) | exact ÷ NumPy | fma ÷ NumPy |")
    print("|---|---|---|---|---|---|---|")
    for m, kk, n in SHAPES:
        for ty, dtype in [("f64", np.float64), ("f32", np.float32)]:
            rng = np.random.default_rng(0)
            a = rng.integers(-3, 4, (m, kk)).astype(dtype)
            b = rng.integers(-3, 4, (kk, n)).astype(dtype)
            p = teil.Program(
                f"input alloc A : {ty}[{m} {kk}]\ninput alloc B : {ty}[{kk} {n}]\n"
                f"output alloc C : {ty}[{m} {n}]\nC = (A # B) .[2 3]"
            )
            t = {}
            for fma in (False, True):
                k = p.compile(fma=fma, cflags="-O3 -march=native")
                c = k(A=a, B=b)["C"]
                assert c.dtype == dtype
                np.testing.assert_array_equal(c, a @ b)
                t[fma] = best(lambda: k(A=a, B=b))
            t_np = best(lambda: a @ b)
            print(
                f"| {m}x{kk}x{n} | {ty} | {t[False]:.3f} | {t[True]:.3f} | {t_np:.3f} | "
                f"{t[False] / t_np:.2f} | {t[True] / t_np:.2f} |"
            )


if __name__ == "__main__":
    main()
