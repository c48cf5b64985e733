#!/usr/bin/env python3
"""Times NumPy on the benchmark kernels of PERFORMANCE.md and compares with TeIL's C kernels.

Usage (bench/run does all of this):

    numpy_bench.py MANIFEST [--rounds R] [--min-seconds S] [--write PERFORMANCE.md]

MANIFEST is written by `cargo run --release -p teil-cbackend --example bench_suite`: for every
kernel its einsum equation, its operands' shapes and one executable per padding multiple M.
For each round and each kernel this script runs the TeIL executable (which times its own kernel
calls, see bench_suite.rs) and then times NumPy on the same inputs, so both sides see the same
machine load; the reported time of each side is its minimum over all rounds. Before timing, the
TeIL result is compared with NumPy's; a difference beyond the tolerance below fails the run.

NumPy runs single-threaded (threadpoolctl limits BLAS and OpenMP to one thread, and bench/run
sets OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1). The matrix product is `np.matmul(a, b, out=c)`;
every other kernel is `np.einsum(eq, *ops, optimize=True, out=out)`. Passing `out=` spares NumPy
the allocation of its result (TeIL's kernels write into the caller's buffer too), and makes the
transposition materialise its result instead of returning a view.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

#: |teil - numpy| <= TOLERANCE * max(1, max |numpy|), cell by cell. Both sides sum at most
#: 4096 products of values in [-0.5, 0.5) in different orders; the rounding difference is
#: below 4096 * 2^-52 * (sum of |terms|) ~ 1e-12 * max(1, |result|).
TOLERANCE = 1e-10


def operand(shape, seed):
    """The deterministic values of bench_suite.rs `value()`: exact in binary64."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    t = np.arange(n, dtype=np.uint64)
    h = (t * np.uint64(2654435761) + np.uint64(seed * 97)) % np.uint64(2**32)
    return (h.astype(np.float64) / 4294967296.0 - 0.5).reshape(shape)


def numpy_call(k, ops, out):
    if k["numpy"] == "matmul":
        return lambda: np.matmul(ops[0], ops[1], out=out)
    return lambda: np.einsum(k["einsum"], *ops, optimize=True, out=out)


def time_numpy(f, min_seconds):
    f()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_seconds or len(times) < 5:
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def run_teil(build, min_seconds, env=None):
    out = subprocess.run(
        [build["exe"], build["out"], str(min_seconds)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    best, median, _reps = out.stdout.split()
    return float(best), float(median)


def fmt_ms(s):
    return f"{s * 1e3:.3f}"


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    flags = " ".join(x for x in ["sse4_2", "avx", "avx2", "fma", "avx512f"] if x in have)
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores ({flags}), {platform.system()} {platform.release()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=0.5)
    ap.add_argument("--write", help="replace the results section of this markdown file")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads for NumPy, OMP_NUM_THREADS for TeIL")
    ap.add_argument("--section", default="main", help="which results section of --write to replace")
    args = ap.parse_args()
    with open(args.manifest) as f:
        manifest = json.load(f)
    threadpool_limits(limits=args.threads)
    teil_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    blas = [
        f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')} kernels, "
        f"{i.get('num_threads')} thread{'s' if i.get('num_threads') != 1 else ''})"
        for i in threadpool_info()
    ]
    env = {v: os.environ.get(v) for v in ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"]}

    kernels = manifest["kernels"]
    pads = sorted({b["pad"] for k in kernels for b in k["builds"]})
    results = {}
    for k in kernels:
        ops = [operand(o["shape"], seed) for seed, o in enumerate(k["operands"])]
        out = np.empty(k["output"]["shape"])
        f = numpy_call(k, ops, out)
        f()
        expected = out.copy()
        for b in k["builds"]:
            run_teil(b, 0.0, teil_env)
            got = np.fromfile(b["out"], dtype=np.float64).reshape(k["output"]["shape"])
            diff = float(np.max(np.abs(got - expected))) if got.size else 0.0
            scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 0.0)
            if not (diff <= TOLERANCE * scale):
                sys.exit(
                    f"error: {k['name']} (M = {b['pad']}): TeIL and NumPy differ by {diff:.3e} "
                    f"(tolerance {TOLERANCE * scale:.3e})"
                )
            results[(k["name"], b["pad"])] = {"diff": diff, "teil": [], "teil_med": []}
        results[(k["name"], "numpy")] = {"numpy": [], "numpy_med": []}
        print(f"checked {k['name']}: max |TeIL - NumPy| = {max(results[(k['name'], b['pad'])]['diff'] for b in k['builds']):.2e}", file=sys.stderr)

    for r in range(args.rounds):
        for k in kernels:
            for b in k["builds"]:
                best, med = run_teil(b, args.min_seconds, teil_env)
                results[(k["name"], b["pad"])]["teil"].append(best)
                results[(k["name"], b["pad"])]["teil_med"].append(med)
            ops = [operand(o["shape"], seed) for seed, o in enumerate(k["operands"])]
            out = np.empty(k["output"]["shape"])
            best, med = time_numpy(numpy_call(k, ops, out), args.min_seconds)
            results[(k["name"], "numpy")]["numpy"].append(best)
            results[(k["name"], "numpy")]["numpy_med"].append(med)
            print(f"round {r + 1}: {k['name']} done", file=sys.stderr)

    main_pad = pads[0]
    lines = []
    lines.append(f"Machine: {machine()}.  ")
    lines.append(f"C compiler: {manifest['cc']}, flags `{manifest['cflags']}`; optimisations: "
                 + f"`{manifest.get('tuning', '?')}`.  ")
    lines.append(f"NumPy {np.__version__}, Python {platform.python_version()}, BLAS: {'; '.join(blas) or 'none found'}.  ")
    outer = os.environ.get("TEIL_BENCH_OUTER_ENV")
    lines.append("Environment of the NumPy process: " + ", ".join(f"{k}={'unset' if v is None else v}" for k, v in env.items())
                 + (f" (bench/run's own environment: {outer})" if outer else "") + ".  ")
    if args.threads != 1:
        lines.append(f"Threads: {args.threads} (TeIL: OpenMP, OMP_NUM_THREADS={args.threads}; NumPy: {args.threads} BLAS threads).  ")
    lines.append(f"Times: minimum over {args.rounds} rounds of each side's minimum over at least "
                 f"{args.min_seconds} s of calls (median of medians in parentheses); M = {main_pad}.")
    lines.append("")
    header = "| kernel | TeIL ms | NumPy ms | ratio | target | met |"
    sep = "|---|---:|---:|---:|---:|:---:|"
    lines.append(header)
    lines.append(sep)
    all_met = True
    for k in kernels:
        t = results[(k["name"], main_pad)]
        n = results[(k["name"], "numpy")]
        tb, nb = min(t["teil"]), min(n["numpy"])
        tm, nm = statistics.median(t["teil_med"]), statistics.median(n["numpy_med"])
        ratio = tb / nb
        met = ratio <= k["target"]
        all_met &= met
        lines.append(
            f"| `{k['einsum']}` ({k['name']}) | {fmt_ms(tb)} ({fmt_ms(tm)}) | {fmt_ms(nb)} ({fmt_ms(nm)}) "
            f"| {ratio:.2f} | {k['target']:.1f} | {'yes' if met else '**no**'} |"
        )
    if len(pads) > 1:
        lines.append("")
        lines.append("TeIL time (ms, minimum) by padding multiple M:")
        lines.append("")
        lines.append("| kernel | " + " | ".join(f"M = {p}" for p in pads) + " |")
        lines.append("|---|" + "---:|" * len(pads))
        for k in kernels:
            cells = []
            for p in pads:
                t = results.get((k["name"], p))
                cells.append(fmt_ms(min(t["teil"])) if t else "-")
            lines.append(f"| {k['name']} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("All targets met." if all_met else "Not every target is met.")
    table = "\n".join(lines)
    print(table)
    if args.write:
        begin, end = f"<!-- bench:{args.section}:begin -->", f"<!-- bench:{args.section}:end -->"
        with open(args.write) as f:
            text = f.read()
        if begin in text and end in text:
            head, rest = text.split(begin, 1)
            _, tail = rest.split(end, 1)
            text = f"{head}{begin}\n{table}\n{end}{tail}"
        else:
            text = f"{text.rstrip()}\n\n{begin}\n{table}\n{end}\n"
        d = os.path.dirname(os.path.abspath(args.write))
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".perf-", suffix=".md")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, args.write)
        print(f"wrote {args.write}", file=sys.stderr)


if __name__ == "__main__":
    main()
