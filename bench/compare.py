"""Times this build's kernels against the C an older TeIL prints for the same programs.

Usage (bench/compare runs it): compare.py MANIFEST --old-teil PATH --label REV
    [--rounds R] [--min-seconds S] [--min-calls N]

MANIFEST is what `bench_suite --out DIR` wrote: for every kernel and mode it built STEM (the
executable), STEM.c (the kernel), STEM_main.c (the timing harness) and STEM.teil (the program).
For each build this script asks the old `teil emit-c` for the same program's C (same function
name, same mode, default padding and reassociation, reference sizes where the old build knows
no machines), compiles it with the same harness and flags into STEM_old, and then times the two
executables in alternation, R rounds, each for at least S seconds and N calls (the harness's
own minimum). It reports the builds whose outputs differ: both sides reassociate sums where
the spec permits it (the suite's default), and a newer commit may reassociate more (sums in
lanes), so a difference is not an error here; `bench/run` checks every result of this build
against NumPy within the error bound. Prints a Markdown table and a summary line. Needs only
the Python standard library.
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time


def run_exe(exe, out, min_seconds, min_calls):
    r = subprocess.run([exe, out, str(min_seconds), str(min_calls)],
                       check=True, capture_output=True, text=True, timeout=600)
    best, median, _reps = r.stdout.split()
    return float(best), float(median)


def cpu():
    name, family, model, flags = platform.processor() or "?", "?", "?", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k, v = k.strip(), v.strip()
                if k == "model name":
                    name = v
                elif k == "cpu family":
                    family = v
                elif k == "model" and model == "?":
                    model = v
                elif k == "flags" and not flags:
                    flags = v
    except OSError:
        pass
    isa = "AVX-512" if "avx512f" in flags.split() else "AVX2" if "avx2" in flags.split() else "?"
    return f"{name} (family {family} model {model}, {isa})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--old-teil", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--min-calls", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated kernel names (default: all)")
    ap.add_argument("--slower", type=float, default=1.10,
                    help="ratio above which a kernel is listed as slower")
    args = ap.parse_args()
    with open(args.manifest) as f:
        m = json.load(f)
    cc = m["cc"].split(" (")[0]
    pairs = []
    # Kernels the old commit's language cannot write (`f32`, the functions: issue 50): left
    # out, and said so.
    unwritable = []
    only = set(filter(None, args.only.split(",")))
    for k in m["kernels"]:
        if only and k["name"] not in only:
            continue
        for b in k["builds"]:
            exe = b["exe"]
            old = exe + "_old"
            mode = b["mode"]
            emit = [args.old_teil, "emit-c", exe + ".teil", "--name", "bench_" + k["name"],
                    "-o", old + ".c"] + (["--fma"] if mode == "fma" else [])
            emitted = subprocess.run(emit, capture_output=True, text=True, timeout=600)
            if emitted.returncode != 0:
                unwritable.append(f"{k['name']} ({mode})")
                continue
            flags = shlex.split(m["cflags"][mode]) + (["-fopenmp"] if m["openmp"] else [])
            subprocess.run([cc] + flags + ["-o", old, old + ".c", exe + "_main.c"],
                           check=True, timeout=600)
            pairs.append((k["name"], mode, b, old))
    print(f"# {len(pairs)} builds; machine: {cpu()}; {m.get('machine', '')}", file=sys.stderr)
    best = {}
    mismatches = []
    for r in range(args.rounds):
        for name, mode, b, old in pairs:
            for side, exe, out in (("now", b["exe"], b["out"]), ("old", old, b["out"] + ".old")):
                t, _ = run_exe(exe, out, args.min_seconds, args.min_calls)
                key = (name, mode, side)
                best[key] = min(best.get(key, t), t)
            if r == 0:
                with open(b["out"], "rb") as f1, open(b["out"] + ".old", "rb") as f2:
                    if f1.read() != f2.read():
                        mismatches.append((name, mode))
        print(f"# round {r + 1} of {args.rounds} done", file=sys.stderr)
    print(f"| kernel | mode | {args.label} | now | now ÷ {args.label} |")
    print("|---|---|---:|---:|---:|")
    ratios = []
    for name, mode, _b, _old in pairs:
        o, n = best[(name, mode, "old")], best[(name, mode, "now")]
        ratios.append((n / o, name, mode))
        mark = " ✗" if n / o > args.slower else ""
        print(f"| {name} | {mode} | {o * 1e3:.3f} ms | {n * 1e3:.3f} ms | {n / o:.2f}{mark} |")
    ratios.sort()
    slower = [x for x in ratios if x[0] > args.slower]
    geo = 1.0
    for x in ratios:
        geo *= x[0]
    geo **= 1 / max(len(ratios), 1)
    print(f"\n{len(ratios)} builds: geometric mean now ÷ {args.label} {geo:.3f}, "
          f"best {ratios[0][0]:.2f} ({ratios[0][1]} {ratios[0][2]}), "
          f"worst {ratios[-1][0]:.2f} ({ratios[-1][1]} {ratios[-1][2]}); "
          f"{len(slower)} more than {args.slower:.2f}x slower"
          + (": " + ", ".join(f"{n} {md} {r:.2f}" for r, n, md in slower) if slower else ""))
    if unwritable:
        print(f"\nLeft out, not in {args.label}'s language (its `teil emit-c` refuses them): "
              + ", ".join(unwritable))
    if mismatches:
        print(f"\nOutputs that differ from {args.label}'s (permitted reassociations; bench/run "
              f"checks them against NumPy): " + ", ".join(f"{n} ({md})" for n, md in mismatches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
