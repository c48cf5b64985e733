#!/usr/bin/env python3
"""The Python package's benchmark (PERFORMANCE.md, "The Python package"): not a test.

Usage, in an environment where `teil` is installed (teil-py/bench/run does everything):

    bench.py [--min-seconds S] [--rounds R] [--manifest MANIFEST] [--write PERFORMANCE.md]

Measures, against NumPy in the same process and run:

1. the guard: `teil.einsum_shape` per call for a three-operand equation (goal < 20 us), and
   what `teil.guarded(numpy.einsum)` adds to a real call;
2. call overhead on tiny inputs: `teil.Kernel` (goal < 10 us beyond the kernel's own time,
   which is a few nanoseconds for a 2 x 2 matrix product), `Program.run` and `teil.einsum` (the
   fast evaluator) against `numpy.einsum` on 2 x 2 matrices;
3. the eight kernels of PERFORMANCE.md: `teil.Kernel` (compiled with bench/run's flags,
   `-O3 -march=native -ffp-contract=off`) and `teil.einsum` (the in-process fast evaluator)
   against `numpy.einsum(optimize=True)`, after checking that the results agree;
4. with `--manifest` (bench/run's `target/bench/manifest.json`): every kernel of bench/run,
   exact mode, as `teil.Kernel` (in-process, returning new arrays, and writing into `out=`
   arrays as NumPy's peers do) against the C harness of bench/run (the same C, compiled with
   the same flags, timing its own calls in its own process, into buffers it reuses) and NumPy,
   all in this run: what the in-process path adds per call.

Without `teil.Kernel` (a build without the `kernel` feature) its rows are left out.

Every figure is the minimum over batches of calls (about 5 ms each, R rounds of at least S
seconds) of the mean time per call; the median over batches is in parentheses. NumPy runs single-threaded
(OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, set before NumPy is imported), as TeIL does.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import teil  # noqa: E402

#: PERFORMANCE.md's kernels: name, einsum equation, operand shapes.
KERNELS = [
    ("matmul", "ij,jk->ik", [(512, 512), (512, 512)]),
    ("cfd", "il,jm,kn,elmn->eijk", [(12, 12), (12, 12), (12, 12), (400, 12, 12, 12)]),
    ("abc", "ai,bj,ck,ijk->abc", [(24, 24), (24, 24), (24, 24), (24, 24, 24)]),
    ("ttm", "ijk,kl->ijl", [(96, 96, 96), (96, 64)]),
    ("mttkrp", "ijk,jr,kr->ir", [(64, 64, 64), (64, 32), (64, 32)]),
    ("transpose", "abc->cba", [(256, 256, 64)]),
    ("trace_prod", "ij,ji->", [(700, 700), (700, 700)]),
    ("batched_matvec", "bij,bj->bi", [(256, 128, 128), (256, 128)]),
]

#: |teil - numpy| <= TOLERANCE * max(1, max |numpy|), cell by cell (sums in different orders).
TOLERANCE = 1e-10

#: bench/run's flags for the C kernels.
CFLAGS = "-O3 -march=native -ffp-contract=off"

BEGIN, END = "<!-- bench:python:begin -->", "<!-- bench:python:end -->"


def per_call(f, min_seconds, rounds):
    """(minimum, median) of the mean seconds per call of f over batches of calls.

    Calls run in batches of about 5 ms (at least one call), for at least `min_seconds` per
    round; the minimum over all batches is the cost without interference from other
    processes on the shared machine (timeit's advice), the median shows the interference.
    """
    f()
    t0 = time.perf_counter()
    f()
    batch = max(1, int(0.005 / max(time.perf_counter() - t0, 1e-9)))
    means = []
    for _ in range(rounds):
        start = time.perf_counter()
        while True:
            b0 = time.perf_counter()
            for _ in range(batch):
                f()
            now = time.perf_counter()
            means.append((now - b0) / batch)
            if now - start >= min_seconds and len(means) >= 3:
                break
    return min(means), statistics.median(means)


def us(t):
    return f"{t[0] * 1e6:.1f} ({t[1] * 1e6:.1f})"


def ms(t):
    return f"{t[0] * 1e3:.3f} ({t[1] * 1e3:.3f})"


def operand(shape, seed):
    """Deterministic values in [-0.5, 0.5), exact in binary64 (as bench/numpy_bench.py)."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    t = np.arange(n, dtype=np.uint64)
    h = (t * np.uint64(2654435761) + np.uint64(seed * 97)) % np.uint64(2**32)
    return (h.astype(np.float64) / 4294967296.0 - 0.5).reshape(shape)


def harness(build, min_seconds, calls=3):
    """The C harness's own time per call (bench/numpy_bench.py's protocol): (best, median)."""
    done = subprocess.run(
        [build["exe"], build["out"], str(min_seconds), str(calls)],
        env=dict(os.environ, OMP_NUM_THREADS="1"),
        check=True,
        capture_output=True,
        text=True,
    )
    best, median, _reps = done.stdout.split()
    return float(best), float(median)


def numpy_call(k, ops, out):
    """NumPy's call for kernel `k` of the manifest: its einsum, or its NumPy expression."""
    if k["einsum"]:
        eq = k["einsum"]
        args = [ops[o["name"]] for o in k["operands"]]
        return lambda: np.einsum(eq, *args, optimize=True, out=out)
    code = compile(k["numpy"], k["name"], "eval")
    names = {"np": np, "out": out, **ops}
    return lambda: eval(code, names)  # noqa: S307 - the manifest's own expression


def every_kernel(manifest, s, r, out):
    """Section 4: every kernel of bench/run through `teil.Kernel`, the C harness and NumPy."""
    with open(manifest, encoding="utf-8") as f:
        m = json.load(f)
    out(
        "Every kernel of `bench/run`, exact mode, M = 1: `teil.Kernel` (compiled in-process "
        f"with `{CFLAGS}`) returning new arrays and writing into `out=` arrays, the C harness "
        "of `bench/run` on the same C (its own time per call, in its own process, into buffers "
        "it reuses) and NumPy (`numpy.einsum(optimize=True, out=)` or the kernel's NumPy "
        "expression, into a preallocated array). The overhead is `Kernel(out=)` minus the "
        "harness, per call; a new result array costs its allocation and first touch on top."
    )
    out("")
    out(
        "| kernel | NumPy ms | C harness ms | `Kernel` ms | `Kernel(out=)` ms | overhead µs "
        "| `Kernel(out=)` / NumPy |"
    )
    out("|---|---:|---:|---:|---:|---:|---:|")
    overheads = []
    for k in m["kernels"]:
        build = next((b for b in k["builds"] if b["mode"] == "exact" and b["pad"] == 1), None)
        if build is None:
            continue
        decls = [
            f"input var {o['name']} : [{' '.join(map(str, o['shape']))}]" for o in k["operands"]
        ]
        res = k["output"]
        decls.append(f"output var {res['name']} : [{' '.join(map(str, res['shape']))}]")
        program = teil.Program("\n".join(decls) + "\n" + k["statement"] + "\n")
        kp = program.compile(cflags=CFLAGS)
        ops = {o["name"]: operand(tuple(o["shape"]), j) for j, o in enumerate(k["operands"])}
        want = np.empty(tuple(res["shape"]))
        call = numpy_call(k, ops, want)
        call()
        got = kp(ops)[res["name"]]
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
        exact = k["check"] == "exact" or k["check"] == "exact-unless-fma"
        if exact and not np.array_equal(got, want):
            sys.exit(f"{k['name']}: teil.Kernel differs from NumPy (an exact kernel)")
        if np.max(np.abs(got - want), initial=0.0) > TOLERANCE * scale:
            sys.exit(f"{k['name']}: teil.Kernel disagrees with NumPy")
        mine = {res["name"]: np.empty(tuple(res["shape"]))}
        kp(ops, out=mine)
        if not np.array_equal(mine[res["name"]], got, equal_nan=True):
            sys.exit(f"{k['name']}: teil.Kernel(out=) differs from teil.Kernel")
        t_np = per_call(call, s, r)
        t_c = min(harness(build, s) for _ in range(r))
        t_k = per_call(lambda: kp(ops), s, r)
        t_o = per_call(lambda: kp(ops, out=mine), s, r)
        over = (t_o[0] - t_c[0]) * 1e6
        overheads.append(over)
        out(
            f"| {k['name']} | {ms(t_np)} | {t_c[0] * 1e3:.3f} | {ms(t_k)} | {ms(t_o)} | "
            f"{over:.1f} | {t_o[0] / t_np[0]:.2f} |"
        )
    if overheads:
        overheads.sort()
        out("")
        out(
            f"Overhead of `Kernel(out=)` over the harness, {len(overheads)} kernels: median "
            f"{overheads[len(overheads) // 2]:.1f} µs, largest {overheads[-1]:.1f} µs, smallest "
            f"{overheads[0]:.1f} µs (negative: the in-process call was faster)."
        )
    out("")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", metavar="FILE", help="replace the section between the markers")
    ap.add_argument(
        "--manifest",
        metavar="FILE",
        help="bench/run's manifest.json: time every kernel through teil.Kernel and the C harness",
    )
    args = ap.parse_args()
    s, r = args.min_seconds, args.rounds
    lines = []
    out = lines.append

    out(
        f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.0f} at the start; per-call "
        f"times: minimum over batches of about 5 ms ({r} rounds of at least {s} s) of the mean "
        "per call, median over batches in parentheses. NumPy writes into a preallocated `out=` "
        "array created per call (which also makes it materialise the transposition)."
    )
    out("")

    # 1. The guard.
    eq3 = "ij,jk,kl->il"
    shapes3 = [(8, 16), (16, 32), (32, 4)]
    ops3 = [np.ones(sh) for sh in shapes3]
    guarded = teil.guarded(np.einsum)
    shape_t = per_call(lambda: teil.einsum_shape(eq3, *shapes3), s, r)
    plain_t = per_call(lambda: np.einsum(eq3, *ops3), s, r)
    guarded_t = per_call(lambda: guarded(eq3, *ops3), s, r)
    out("| guard, `" + eq3 + "` on 8 x 16, 16 x 32, 32 x 4 | µs per call |")
    out("|---|---:|")
    out(f"| `teil.einsum_shape` (goal < 20 µs) | {us(shape_t)} |")
    out(f"| `numpy.einsum` | {us(plain_t)} |")
    out(f"| `teil.guarded(numpy.einsum)` | {us(guarded_t)} |")
    out("")

    # 1b. The guard's cost against the number of operands (issue 25: under 20 µs for
    # einsum_shape and under 30 µs of overhead per guarded call, up to 8 operands): a chain of
    # n matrix products on 4 x 4 operands. The overhead is the guard's own time: it wraps a
    # function that the guard reads as `numpy.einsum` but that does nothing, since the
    # difference of two timings of NumPy's (milliseconds for 8 operands) would be noise.
    out("| operands (chain `ab,bc,...`, 4 x 4 each) | `einsum_shape` µs | guard overhead µs |")
    out("|---:|---:|---:|")

    def nothing(*args):
        return None

    nothing.__module__, nothing.__name__ = "numpy", "einsum"
    guarded_nothing = teil.guarded(nothing)
    letters = "abcdefghij"
    for n in (2, 4, 8):
        eq = ",".join(letters[i] + letters[i + 1] for i in range(n)) + "->a" + letters[n]
        shapes = [(4, 4)] * n
        ops = [np.ones(sh) for sh in shapes]
        t_shape = per_call(lambda: teil.einsum_shape(eq, *shapes), s, r)
        t_plain = per_call(lambda: nothing(eq, *ops), s, r)
        t_guarded = per_call(lambda: guarded_nothing(eq, *ops), s, r)
        out(f"| {n} | {us(t_shape)} | {us((t_guarded[0] - t_plain[0], t_guarded[1] - t_plain[1]))} |")
    out("")

    # 2. Call overhead on tiny inputs.
    prog = teil.Program(
        "input alloc A : [2, 2]\ninput alloc B : [2, 2]\noutput alloc C : [2, 2]\n"
        "C = contr 2 3 (prod A B)"
    )
    a, b = operand((2, 2), 1), operand((2, 2), 2)
    kernel = hasattr(teil, "Kernel")
    if kernel:
        k = prog.compile(cflags=CFLAGS)
        kernel_t = per_call(lambda: k(A=a, B=b), s, r)
    run_t = per_call(lambda: prog.run(A=a, B=b), s, r)
    einsum_t = per_call(lambda: teil.einsum("ij,jk->ik", a, b), s, r)
    np_t = per_call(lambda: np.einsum("ij,jk->ik", a, b), s, r)
    out("| tiny call, `ij,jk->ik` on 2 x 2 | µs per call |")
    out("|---|---:|")
    if kernel:
        out(f"| `teil.Kernel` call (goal < 10 µs) | {us(kernel_t)} |")
    out(f"| `Program.run` (fast evaluator) | {us(run_t)} |")
    out(f"| `teil.einsum` (guard + fast evaluator) | {us(einsum_t)} |")
    out(f"| `numpy.einsum` | {us(np_t)} |")
    out("")

    # 3. The kernels.
    head = "| kernel | NumPy ms |"
    rule = "|---|---:|"
    if kernel:
        head += " `teil.Kernel` ms | ratio |"
        rule += "---:|---:|"
    out(head + " `teil.einsum` ms | ratio |")
    out(rule + "---:|---:|")

    def agree(name, got, want):
        scale = max(1.0, float(np.max(np.abs(want))))
        if got.shape != want.shape or np.max(np.abs(got - want)) > TOLERANCE * scale:
            sys.exit(f"{name}: TeIL disagrees with numpy.einsum")

    for name, eq, shapes in KERNELS:
        ops = [operand(sh, j + 1) for j, sh in enumerate(shapes)]
        want = np.einsum(eq, *ops, optimize=True)
        t_np = per_call(
            lambda: np.einsum(eq, *ops, optimize=True, out=np.empty(want.shape)), s, r
        )
        row = f"| `{eq}` ({name}) | {ms(t_np)} |"
        if kernel:
            kp = teil.Program(teil.einsum_program(eq, *shapes)).compile(cflags=CFLAGS)
            named = dict(zip(kp.inputs, ops))
            agree(name, kp(named)["out"], want)
            t_k = per_call(lambda: kp(named), s, r)
            row += f" {ms(t_k)} | {t_k[0] / t_np[0]:.2f} |"
        agree(name, teil.einsum(eq, *ops), want)
        t_teil = per_call(lambda: teil.einsum(eq, *ops), s, r)
        out(row + f" {ms(t_teil)} | {t_teil[0] / t_np[0]:.2f} |")

    if args.manifest and kernel:
        every_kernel(args.manifest, s, r, out)

    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.write:
        with open(args.write, encoding="utf-8") as f:
            doc = f.read()
        if BEGIN not in doc or END not in doc:
            sys.exit(f"{args.write} has no {BEGIN} ... {END} section")
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        with open(args.write + ".tmp", "w", encoding="utf-8") as f:
            f.write(head + BEGIN + "\n" + text + END + tail)
        os.replace(args.write + ".tmp", args.write)


if __name__ == "__main__":
    main()
