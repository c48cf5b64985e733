#!/usr/bin/env python3
"""A teil-target/1 adapter for NumPy: `teil fuzz --target "python3 numpy_ops.py"`.

TeIL's fuzzer sends one JSON request per line on standard input, each naming a case directory
with the inputs as .npy files and the program in its ops/1 form (spec/fuzzing.md): a list of
steps, each binding `out` to `op` applied to the values named in `args`. This adapter runs the
steps with NumPy, writes every output as float64 .npy and answers one JSON line:
{"id": N, "status": "ok"}, "unsupported" (with a "reason") or "error" (with a "message").

To fuzz your own tensor library, copy this file and change `run_step`. Every adapter in
fuzz/targets/ stands alone on purpose, protocol loop included: a tester copies one file, and a
little repetition between adapters is the price of that.
"""
import json
import sys

import numpy as np

FOLDS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def run_step(step, env):
    """The value of one step; raise NotImplementedError for what your library cannot do."""
    op, args = step["op"], [env[a] for a in step["args"]]
    if op == "einsum":
        return np.einsum(step["equation"], *args)
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":  # a shape-() first argument broadcasts: it scales the second
        return args[0] * args[1]
    if op == "div":  # a shape-() second argument broadcasts: it divides the first
        return args[0] / args[1]
    if op == "reduce":  # np.maximum and np.minimum propagate NaN, as TeIL's max and min do
        return FOLDS[step["kind"]].reduce(args[0], axis=step["axis"])
    if op == "expand":
        return np.repeat(np.expand_dims(args[0], step["axis"]), step["n"], axis=step["axis"])
    if op == "take":
        return np.take(args[0], step["index"], axis=step["axis"])
    if op == "const":
        return np.float64(step["value"])
    raise NotImplementedError(f"op `{op}`")


def run_case(request):
    if request["ops"] is None:
        raise NotImplementedError("this adapter runs the ops/1 form only")
    env = {name: np.load(v["path"]) for name, v in request["inputs"].items()}
    for step in request["ops"]:
        env[step["out"]] = run_step(step, env)
    for name, v in request["outputs"].items():
        # teil-target/1 wants float64 in C order (np.save would keep a transposed array in
        # Fortran order).
        np.save(v["path"], np.array(env[name], dtype=np.float64, order="C"))


def main():
    np.seterr(all="ignore")  # 1/0 and 0/0 are IEEE results in TeIL, not warnings
    name = f"numpy {np.__version__}"
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        answer = {"id": request["id"], "status": "ok"}
        try:
            run_case(request)
        except NotImplementedError as e:
            answer = {"id": request["id"], "status": "unsupported", "reason": str(e)}
        except Exception as e:  # anything else is a finding: report it, keep serving
            answer = {"id": request["id"], "status": "error", "message": f"{type(e).__name__}: {e}"}
        answer["target"] = name  # recorded in reproducers
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
