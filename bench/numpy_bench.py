#!/usr/bin/env python3
"""Times TeIL's C kernels against NumPy, OpenBLAS and opt_einsum on the benchmark of PERFORMANCE.md.

Usage (bench/run does all of this):

    numpy_bench.py MANIFEST [--rounds R] [--min-seconds S] [--min-calls N] [--threads 1,2]
                   [--write PERFORMANCE.md --section NAME]

MANIFEST is written by `cargo run --release -p teil-cbackend --example bench_suite`: for every
kernel its group, its einsum equation or NumPy expression, its operands' shapes, how its result
is checked, and one executable per mode (exact, fma) and padding multiple M.

Peers, all on the same inputs, writing into a preallocated result where the call allows it
(TeIL's kernels write into the caller's buffer too; `out=` also makes a transposition
materialise its result instead of returning a view):

- `einsum`: `np.einsum(eq, *ops, optimize=True, out=out)`;
- `matmul`: `np.matmul(a, b, out=out)` where the equation is a (batched) matrix product,
  matrix-vector or vector-matrix product, i.e. OpenBLAS;
- `tensordot`: `np.tensordot(a, b, axes)` (or `(b, a)`, if that order needs no transposition)
  where the equation is a two-operand contraction without batch labels or diagonals; it
  allocates its result (it has no `out=`), and a result whose labels are not in tensordot's
  order is copied into `out` transposed;
- `opt_einsum`: `opt_einsum.contract(eq, *ops, out=out)`;
- `expr`: the kernel's NumPy expression, for kernels einsum cannot write (reductions by `max`,
  element-wise chains, broadcasting sums).

"NumPy's time", which issue 16's targets refer to, is the fastest of `einsum`, `matmul` and
`expr` (whichever apply); the best peer is the fastest of all of them.

Checks, before anything is timed: every TeIL build and every peer is compared with the
reference result (`einsum`'s, or the expression's), cell by cell:

- `exact` kernels (moves, maxima, one addition per cell) and `exact-unless-fma` kernels in
  exact mode must agree bit for bit;
- `ulps` kernels (element-wise functions, the `functions` group) within FUNCTION_ULPS units
  in the last place of NumPy's value, in the kernel's type;
- otherwise each cell must be within 2 γ(n) (1 + 2 γ(n)) T of the reference, where T is the sum
  of the absolute values of the terms the cell adds up (`einsum` on |operands|, or the kernel's
  `terms` expression), n the number of roundings one term can go through (the number of summed
  terms plus the number of factors, or the kernel's `roundings`), γ(n) = n u / (1 - n u) with
  u = 2^-53. This is the classical bound for a sum of products evaluated in any order and
  association, with or without fused multiply-adds, applied to both sides (hence 2); the factor
  (1 + 2 γ(n)) covers the rounding of T itself.

Timing: for each round and each kernel, every TeIL executable (which times its own kernel calls,
see bench_suite.rs) and then every peer, one after the other, so all sides see the same machine
load; each side's time is the minimum over at least --min-seconds and --min-calls calls, and the
reported time is the minimum over the rounds. NumPy's thread count is set with threadpoolctl
(BLAS and OpenMP pools) for each measurement; TeIL's with OMP_NUM_THREADS (OpenMP builds only).
With more than one thread count (an OpenMP build), only NumPy's own peers (`einsum`, `matmul`,
`expr`) are timed, at every thread count, and the table is a speed-up table.
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import opt_einsum
from threadpoolctl import threadpool_info, threadpool_limits

U = 2.0**-53

#: Issue 16's targets: TeIL time / NumPy's time at most this, by mode; BLAS-bound matrix
#: products are held to 1.25x OpenBLAS in exact mode only.
TARGET = {"exact": 1.0, "fma": 1.0}
TARGET_BLAS = {"exact": 1.25, "fma": 1.0}

#: How far an element-wise function's value may be from NumPy's, in units in the last place of
#: NumPy's value: TeIL's are correctly rounded (within half an ulp of the truth), NumPy's within a
#: few ulps (its float32 `exp` and `log` up to 2-3, PERFORMANCE.md, "Functions").
FUNCTION_ULPS = 4

#: The peers that are NumPy itself (issue 16's "NumPy's time"), in column order.
NUMPY_PEERS = ["einsum", "matmul", "expr"]
ALL_PEERS = ["einsum", "expr", "matmul", "tensordot", "opt_einsum"]


def target(k, mode):
    """The kernel's target TeIL ÷ NumPy in `mode`; None for an element-wise function (`ulps`
    kernels), whose ratio is stated, not held to a target: correctly rounded costs more than
    NumPy's functions within a few ulps (issue 50, point 6)."""
    if k["check"] == "ulps":
        return None
    return (TARGET_BLAS if k["blas"] else TARGET)[mode]


def gamma(n, u=U):
    return n * u / (1.0 - n * u)


def dtype(k):
    """The kernel's element type: float64, or float32 (the `float32` group)."""
    return np.dtype(k.get("dtype", "float64"))


def operand(shape, seed, dt=np.float64):
    """The deterministic values of bench_suite.rs `value()`: exact in binary64, rounded to
    binary32 for a float32 kernel (as the harness's `(float)` cast)."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    t = np.arange(n, dtype=np.uint64)
    h = (t * np.uint64(2654435761) + np.uint64(seed * 97)) % np.uint64(2**32)
    return (h.astype(np.float64) / 4294967296.0 - 0.5).reshape(shape).astype(dt)


def operands(k):
    return {o["name"]: operand(o["shape"], seed, dtype(k)) for seed, o in enumerate(k["operands"])}


def parse_eq(eq):
    ins, out = eq.split("->")
    return ins.split(","), out


def matmul_form(eq):
    """Whether np.matmul(a, b) computes the two-operand equation `eq` (batch labels first)."""
    ins, o = parse_eq(eq)
    if len(ins) != 2:
        return False
    a, b = ins
    if any(len(set(x)) != len(x) for x in (a, b, o)):
        return False
    if len(a) >= 2 and len(b) >= 2:
        p = a[:-2]
        i, j, k = a[-2], a[-1], b[-1]
        return b[:-2] == p and b[-2] == j and o == p + i + k and len({i, j, k} | set(p)) == len(p) + 3
    if len(b) == 1 and len(a) >= 2:  # matrix-vector
        return a[-1] == b and o == a[:-1]
    if len(a) == 1 and len(b) >= 2:  # vector-matrix
        return b[-2] == a and o == b[:-2] + b[-1]
    return False


def tensordot_form(eq):
    """(order, axes, perm) when np.tensordot(*[ops[i] for i in order], axes) computes `eq`,
    transposed by perm; else None. Of the two operand orders, one needing no transposition is
    preferred."""
    ins, o = parse_eq(eq)
    if len(ins) != 2:
        return None
    if any(len(set(x)) != len(x) for x in (*ins, o)):
        return None
    forms = []
    for order in ([0, 1], [1, 0]):
        a, b = ins[order[0]], ins[order[1]]
        shared = [c for c in a if c in b]
        if any(c in o for c in shared):  # a batch label
            return None
        free = [c for c in a if c not in shared] + [c for c in b if c not in shared]
        if sorted(free) != sorted(o):  # a label summed within one operand
            return None
        axes = ([a.index(c) for c in shared], [b.index(c) for c in shared])
        perm = [free.index(c) for c in o]
        forms.append((perm != sorted(perm), order, axes, perm))
    _, order, axes, perm = min(forms)
    return order, axes, perm


def peers(k, ops, out, which):
    """The peers of kernel k among `which`: name -> a call returning the result."""
    p = {}
    if k["einsum"]:
        eq = k["einsum"]
        arrs = [ops[o["name"]] for o in k["operands"]]
        p["einsum"] = lambda: np.einsum(eq, *arrs, optimize=True, out=out)
        if matmul_form(eq):
            p["matmul"] = lambda: np.matmul(*arrs, out=out)
        td = tensordot_form(eq)
        if td is not None:
            order, axes, perm = td
            x, y = arrs[order[0]], arrs[order[1]]
            if perm == sorted(perm):
                p["tensordot"] = lambda: np.tensordot(x, y, axes)
            else:

                def tensordot():
                    np.copyto(out, np.tensordot(x, y, axes).transpose(perm))
                    return out

                p["tensordot"] = tensordot
        p["opt_einsum"] = lambda: opt_einsum.contract(eq, *arrs, out=out)
    if k["numpy"]:
        p["expr"] = eval("lambda: " + k["numpy"], {"np": np, "out": out, **ops})
    return {n: f for n, f in p.items() if n in which}


def bound(k, ops, exact, ref=None):
    """None when the result must agree bit for bit, else the per-cell error bound (for an
    element-wise function, `ulps` kernels, FUNCTION_ULPS units in the last place of the
    reference value `ref` in its own type)."""
    if k["check"] == "exact" or (k["check"] == "exact-unless-fma" and exact):
        return None
    if k["check"] == "ulps":
        return FUNCTION_ULPS * np.spacing(np.abs(ref)).astype(np.float64)
    if k["einsum"]:
        ins, o = parse_eq(k["einsum"])
        extent = {}
        for labels, op in zip(ins, k["operands"]):
            extent.update(zip(labels, op["shape"]))
        summed = set("".join(ins)) - set(o)
        n = math.prod(extent[c] for c in summed) + len(ins)
        arrs = [np.abs(ops[op["name"]].astype(np.float64)) for op in k["operands"]]
        terms = np.einsum(k["einsum"], *arrs, optimize=True)
    else:
        if not k["terms"]:
            sys.exit(f"error: {k['name']}: the manifest gives no `terms` for its error bound")
        n = k["roundings"]
        terms = eval(k["terms"], {"np": np, **ops})
    # In binary32 every operation rounds with u = 2^-24 (NumPy's float32 BLAS and TeIL alike).
    g = gamma(n, 2.0**-24 if dtype(k) == np.float32 else U)
    return 2.0 * g * (1.0 + 2.0 * g) * np.asarray(terms)


def compare(got, ref, bnd):
    """(ok, text): whether got agrees with ref under bnd, and how closely."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return False, f"shape {got.shape} instead of {ref.shape}"
    if got.dtype != ref.dtype:
        return False, f"dtype {got.dtype} instead of {ref.dtype}"
    if bnd is None:
        word = np.uint32 if got.dtype == np.float32 else np.uint64
        same = np.array_equal(np.ascontiguousarray(got).view(word), np.ascontiguousarray(ref).view(word))
        if same:
            return True, "bit for bit"
        bits = np.ascontiguousarray(got).view(word) != np.ascontiguousarray(ref).view(word)
        diff = np.abs(got.astype(np.float64) - ref)
        return False, f"not bit for bit: {int(np.count_nonzero(bits))} cells differ, max |diff| {np.max(diff):.3e}"
    with np.errstate(invalid="ignore"):
        diff = np.abs(got.astype(np.float64) - ref)
    # Equal values (infinities included) agree whatever the bound.
    diff = np.where(got == ref, 0.0, diff)
    ok = bool(np.all(diff <= bnd))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(bnd > 0, diff / np.where(bnd > 0, bnd, 1.0), np.where(diff > 0, np.inf, 0.0))
    worst = float(np.max(rel)) if rel.size else 0.0
    return ok, f"max |diff| {float(np.max(diff)) if diff.size else 0.0:.2e} = {worst:.2e} of the bound"


def time_call(f, min_seconds, min_calls):
    f()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_seconds or len(times) < max(min_calls, 1):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def run_teil(build, min_seconds, min_calls, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [build["exe"], build["out"], str(min_seconds), str(min_calls)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    best, median, _reps = out.stdout.split()
    return float(best), float(median)


def fmt_ms(s):
    if s is None:
        return "–"
    ms = s * 1e3
    return f"{ms:.3f}" if ms < 100 else f"{ms:.1f}"


def fmt_ratio(r, goal=None):
    if r is None:
        return "–"
    if goal is None:
        return f"{r:.2f}"
    return f"{r:.2f} ✓" if r <= goal else f"**{r:.2f}** ✗"


def thp_setting():
    """The system's transparent huge page policy (the bracketed word), or `unknown`."""
    try:
        text = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        return "unknown"
    chosen = [w.strip("[]") for w in text.split() if w.startswith("[")]
    return chosen[0] if chosen else text.strip()


def hugepage_policy():
    """Whether NumPy madvises huge pages for large arrays (its `hugepage` policy)."""
    try:
        from numpy._core import multiarray
        return "on" if multiarray._get_madvise_hugepage() else "off"
    except (ImportError, AttributeError):
        return "unknown"


def cpu_info():
    cpu, flags = "unknown CPU", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu == "unknown CPU":
                    cpu = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    have = set(line.split(":", 1)[1].split())
                    flags = " ".join(x for x in ["sse4_2", "avx", "avx2", "fma", "avx512f"] if x in have)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores ({flags}), {platform.system()} {platform.release()}"


def load():
    try:
        return "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    except OSError:
        return "unknown"


class Runner:
    def __init__(self, manifest, args):
        self.kernels = manifest["kernels"]
        self.args = args
        self.threads = args.threads
        self.modes = sorted({b["mode"] for k in self.kernels for b in k["builds"]}, key=["exact", "fma"].index)
        self.pads = sorted({b["pad"] for k in self.kernels for b in k["builds"]})
        self.which = NUMPY_PEERS if len(self.threads) > 1 else ALL_PEERS
        self.peer_names = {}  # kernel -> peers that ran
        self.times = {}  # (kernel, side, threads) -> [best per round], [median per round]

    def record(self, key, best, med):
        b, m = self.times.setdefault(key, ([], []))
        b.append(best)
        m.append(med)

    def best(self, *key):
        t = self.times.get(key)
        return min(t[0]) if t else None

    def check(self):
        for k in self.kernels:
            ops = operands(k)
            out = np.empty(k["output"]["shape"], dtype(k))
            calls = peers(k, ops, out, ALL_PEERS)
            ref_name = "einsum" if "einsum" in calls else "expr"
            ref = np.array(calls[ref_name](), copy=True)
            bounds = {}

            def bound_for(exact):
                if exact not in bounds:
                    bounds[exact] = bound(k, ops, exact, ref)
                return bounds[exact]

            lines, ran = [], [ref_name]
            for name, f in calls.items():
                if name not in self.which or name == ref_name:
                    continue
                try:
                    got = np.array(f(), copy=True)
                except Exception as e:  # a peer that cannot run this form is left out, said so
                    print(f"warning: {k['name']}: peer {name} fails ({type(e).__name__}: {e}); left out", file=sys.stderr)
                    continue
                ok, how = compare(got, ref, bound_for(True))
                if not ok:
                    sys.exit(f"error: {k['name']}: peer {name} differs from {ref_name}: {how}")
                ran.append(name)
            self.peer_names[k["name"]] = [n for n in self.which if n in ran]
            for b in k["builds"]:
                for t in self.threads:
                    run_teil(b, 0.0, 0, t)
                    got = np.fromfile(b["out"], dtype=dtype(k)).reshape(k["output"]["shape"])
                    ok, how = compare(got, ref, bound_for(b["mode"] == "exact"))
                    if not ok:
                        sys.exit(
                            f"error: {k['name']} ({b['mode']} mode, M = {b['pad']}, {t} thread(s)): "
                            f"TeIL and NumPy ({ref_name}) differ: {how}"
                        )
                    lines.append(f"{b['mode']}: {how}")
            print(f"checked {k['name']}: {'; '.join(sorted(set(lines)))}", file=sys.stderr)

    def time(self):
        a = self.args
        for r in range(a.rounds):
            for i, k in enumerate(self.kernels):
                # Which kernel is being timed, before its (possibly long) measurements.
                print(f"round {r + 1}/{a.rounds}, kernel {i + 1}/{len(self.kernels)}: timing {k['name']} ...",
                      file=sys.stderr, flush=True)
                for b in k["builds"]:
                    for t in self.threads:
                        best, med = run_teil(b, a.min_seconds, a.min_calls, t)
                        self.record((k["name"], ("teil", b["mode"], b["pad"]), t), best, med)
                ops = operands(k)
                out = np.empty(k["output"]["shape"], dtype(k))
                calls = peers(k, ops, out, self.peer_names[k["name"]])
                for name, f in calls.items():
                    for t in self.threads:
                        with threadpool_limits(limits=t):
                            best, med = time_call(f, a.min_seconds, a.min_calls)
                        self.record((k["name"], ("peer", name), t), best, med)
                del ops, out, calls

    def numpy_time(self, k, t):
        ts = [self.best(k["name"], ("peer", n), t) for n in NUMPY_PEERS]
        ts = [x for x in ts if x is not None]
        return min(ts) if ts else None

    def best_peer(self, k, t):
        ts = [(self.best(k["name"], ("peer", n), t), n) for n in self.peer_names[k["name"]]]
        ts = [x for x in ts if x[0] is not None]
        return min(ts) if ts else (None, None)

    def groups(self, manifest):
        for g, what in manifest["groups"]:
            ks = [k for k in self.kernels if k["group"] == g]
            if ks:
                yield g, what, ks

    def wide_table(self, manifest):
        """One table per group: TeIL per mode, every peer, ratios with targets."""
        m0, t = self.pads[0], self.threads[0]
        lines = []
        misses = {m: [] for m in self.modes}
        counts = {m: 0 for m in self.modes}
        for g, what, ks in self.groups(manifest):
            lines.append(f"**{g}** — {what}.")
            lines.append("")
            head = ["kernel"] + [f"TeIL {m}" for m in self.modes] + ["einsum / expr", "matmul", "tensordot", "opt_einsum"]
            head += [f"{m} ÷ NumPy" for m in self.modes] + [f"{m} ÷ best" for m in self.modes] + ["target " + " / ".join(self.modes)]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|---|" + "---:|" * (len(head) - 2) + ":---:|")
            for k in ks:
                name = k["name"] + (" ᴮ" if k["blas"] else "") + (" ˢ" if k["slow"] else "")
                teil = [self.best(k["name"], ("teil", m, m0), t) for m in self.modes]
                expr_or_einsum = self.best(k["name"], ("peer", "einsum" if k["einsum"] else "expr"), t)
                cells = [f"`{name}`"] + [fmt_ms(x) for x in teil] + [fmt_ms(expr_or_einsum)]
                cells += [fmt_ms(self.best(k["name"], ("peer", n), t)) for n in ["matmul", "tensordot", "opt_einsum"]]
                npt = self.numpy_time(k, t)
                bt, bn = self.best_peer(k, t)
                for m, x in zip(self.modes, teil):
                    r = x / npt if x is not None and npt else None
                    goal = target(k, m)
                    cells.append(fmt_ratio(r, goal))
                    if goal is None:
                        continue
                    counts[m] += 1
                    if r is not None and r > goal:
                        misses[m].append(f"{k['name']} {r:.2f}")
                for x in teil:
                    cells.append(f"{fmt_ratio(x / bt)} ({bn})" if x is not None and bt else "–")
                goals = [target(k, m) for m in self.modes]
                cells.append("–" if None in goals else " / ".join(f"{g:g}" for g in goals))
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        for m in self.modes:
            if misses[m]:
                lines.append(f"{m} mode: {counts[m] - len(misses[m])} of {counts[m]} targets met; missed: {', '.join(misses[m])}.  ")
            else:
                lines.append(f"{m} mode: all {counts[m]} targets met.  ")
        lines += self.distribution([k for k in self.kernels if k["group"] == "random"])
        if len(self.pads) > 1:
            lines.append("")
            lines.append("TeIL time (ms, minimum) by padding multiple M:")
            lines.append("")
            cols = [(m, p) for m in self.modes for p in self.pads]
            lines.append("| kernel | " + " | ".join(f"{m}, M = {p}" for m, p in cols) + " |")
            lines.append("|---|" + "---:|" * len(cols))
            for k in self.kernels:
                cells = [fmt_ms(self.best(k["name"], ("teil", m, p), t)) for m, p in cols]
                lines.append(f"| {k['name']} | " + " | ".join(cells) + " |")
        return lines

    def distribution(self, ks):
        """The ratios to NumPy of kernels drawn at random (`bench/run --random`), as a
        distribution per mode: no one tunes to a fixed list."""
        if not ks:
            return []
        m0, t = self.pads[0], self.threads[0]
        lines = [""]
        for m in self.modes:
            rs = []
            for k in ks:
                x, npt = self.best(k["name"], ("teil", m, m0), t), self.numpy_time(k, t)
                if x is not None and npt:
                    rs.append((x / npt, k["name"]))
            if not rs:
                continue
            rs.sort()
            q = lambda f: rs[min(len(rs) - 1, int(f * len(rs)))][0]  # noqa: E731
            over = [f"{n} {r:.2f}" for r, n in rs if r > 1.0]
            lines.append(
                f"{m} mode, {len(rs)} random kernels, TeIL ÷ NumPy: minimum {rs[0][0]:.2f}, "
                f"quartiles {q(0.25):.2f} / {q(0.5):.2f} / {q(0.75):.2f}, 90th percentile "
                f"{q(0.9):.2f}, maximum {rs[-1][0]:.2f}; above 1.0: "
                + (", ".join(over) if over else "none") + ".  "
            )
        return lines

    def thread_table(self, manifest):
        """Per mode, TeIL and NumPy at each thread count, speed-ups and ratios."""
        m0, ts = self.pads[0], self.threads
        lines = []
        for m in self.modes:
            lines.append(f"{m} mode, M = {m0}; NumPy: the fastest of einsum / matmul / expr at each thread count.")
            lines.append("")
            head = ["kernel"] + [f"TeIL {t}" for t in ts] + ["TeIL speed-up"] + [f"NumPy {t}" for t in ts] + ["NumPy speed-up"]
            head += [f"÷ NumPy at {t}" for t in ts]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|---|" + "---:|" * (len(head) - 1))
            for g, _what, ks in self.groups(manifest):
                for k in ks:
                    teil = [self.best(k["name"], ("teil", m, m0), t) for t in ts]
                    npy = [self.numpy_time(k, t) for t in ts]
                    cells = [f"`{k['name']}`"] + [fmt_ms(x) for x in teil]
                    cells.append(fmt_ratio(teil[0] / teil[-1]) + "x" if teil[0] and teil[-1] else "–")
                    cells += [fmt_ms(x) for x in npy]
                    cells.append(fmt_ratio(npy[0] / npy[-1]) + "x" if npy[0] and npy[-1] else "–")
                    cells += [fmt_ratio(x / y if x and y else None, target(k, m)) for x, y in zip(teil, npy)]
                    lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
        return lines


def write_section(path, section, table):
    begin, end = f"<!-- bench:{section}:begin -->", f"<!-- bench:{section}:end -->"
    with open(path) as f:
        text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{table}\n{end}{tail}"
    else:
        text = f"{text.rstrip()}\n\n{begin}\n{table}\n{end}\n"
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".perf-", suffix=".md")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    print(f"wrote {path} (section {section})", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--min-calls", type=int, default=3)
    ap.add_argument("--threads", default="1", help="thread counts, e.g. 1,2 (an OpenMP build)")
    ap.add_argument("--write", help="replace a results section of this markdown file")
    ap.add_argument("--section", default="wide", help="which results section of --write to replace")
    ap.add_argument("--command", default="", help="the command line to state in the table")
    args = ap.parse_args()
    args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if not args.threads or min(args.threads) < 1 or args.rounds < 1 or args.min_calls < 1:
        sys.exit("error: --threads, --rounds and --min-calls need values of at least 1")
    with open(args.manifest) as f:
        manifest = json.load(f)
    if len(args.threads) > 1 and not manifest["openmp"]:
        sys.exit("error: several thread counts need an OpenMP build (bench/run --openmp 1,2)")
    started, load_start = time.time(), load()
    threadpool_limits(limits=max(args.threads))
    blas = sorted({f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')} kernels)" for i in threadpool_info()})
    env = {v: os.environ.get(v) for v in ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"]}

    run = Runner(manifest, args)
    run.check()
    run.time()

    lines = []
    if args.command:
        lines.append(f"Command: `{args.command}`.  ")
    lines.append(f"Machine: {cpu_info()}; load average {load_start} at the start, {load()} at the end; "
                 f"the run took {(time.time() - started) / 60:.1f} min after the build.  ")
    lines.append(f"C compiler: {manifest['cc']}; flags: "
                 + "; ".join(f"{m} `{fl}`" for m, fl in manifest["cflags"].items())
                 + f"; optimisations: `{manifest.get('tuning', '?')}`.  ")
    if manifest.get("machine"):
        lines.append(f"Kernels sized for: {manifest['machine']}.  ")
    lines.append(f"NumPy {np.__version__}, opt_einsum {opt_einsum.__version__}, Python {platform.python_version()}, "
                 f"BLAS: {'; '.join(blas) or 'none found'}.  ")
    lines.append(f"Memory: transparent huge pages `{thp_setting()}`; NumPy's madvise(MADV_HUGEPAGE) for arrays of "
                 f"4 MiB or more: {hugepage_policy()}; TeIL's timing driver asks the same for its buffers.  ")
    outer = os.environ.get("TEIL_BENCH_OUTER_ENV")
    lines.append("Environment of the NumPy process: " + ", ".join(f"{k}={'unset' if v is None else v}" for k, v in env.items())
                 + (f" (bench/run's own environment: {outer})" if outer else "") + ".  ")
    lines.append(f"Threads: {', '.join(map(str, args.threads))} (TeIL: OMP_NUM_THREADS; NumPy: threadpoolctl).  "
                 if manifest["openmp"] else "Threads: 1 (TeIL sequential; NumPy's BLAS limited to 1 thread).  ")
    lines.append(f"Times in ms: minimum over {args.rounds} round(s) of each side's minimum over at least "
                 f"{args.min_seconds} s and {args.min_calls} calls; M = {run.pads[0]}. "
                 "ᴮ: BLAS-bound product (exact-mode target 1.25x OpenBLAS); ˢ: a shape issue 16 reports as slow. "
                 "÷ NumPy: TeIL's time over the fastest of einsum, matmul and expr (✓: target met); "
                 "÷ best: over the fastest peer (named).")
    lines.append("")
    lines += run.thread_table(manifest) if len(args.threads) > 1 else run.wide_table(manifest)
    table = "\n".join(lines).rstrip()
    print(table)
    print("medians (ms, median over the rounds of each side's median call):", file=sys.stderr)
    for (name, side, t), (_bests, meds) in run.times.items():
        print(f"  {name} {'/'.join(map(str, side))} {t} thread(s): {statistics.median(meds) * 1e3:.3f}", file=sys.stderr)
    if args.write:
        write_section(args.write, args.section, table)


if __name__ == "__main__":
    main()
