#!/usr/bin/env python3
"""A teil-target/1 adapter for opt_einsum's `contract`:
`teil fuzz --target "python3 opt_einsum_ops.py" --profile einsum`.

It runs `einsum` steps only and answers "unsupported" for programs with any other op, so it is
meant for `--profile einsum`, where every program's ops/1 form is a list of einsum steps
(spec/fuzzing.md). The protocol: one JSON request per line on standard input, the outputs
written as float64 .npy at the paths given, one JSON answer per line on standard output.

A step with "dtype": "float32" contracts float32 arrays (opt_einsum keeps NumPy's dtype). The
inputs come as float64 files; an input the program declares f32 is converted to float32
(exactly), its type read off the first step that reads it (`input_dtypes`). The element-wise
functions, max, min and casts of ops/1 are not einsum steps: "unsupported", like every other
non-einsum op.

Every adapter in fuzz/targets/ stands alone on purpose, protocol loop included: a tester copies
one file, and a little repetition between adapters is the price of that.
"""
import json
import sys

import numpy as np
import opt_einsum

DTYPES = {"float32": np.float32, "float64": np.float64}


def input_dtypes(request):
    """Each input's type: the dtype of the first step that reads it (einsum steps only, so
    the operands' type is the step's); float64 for an input no step reads."""
    types = {}
    for step in request["ops"]:
        for a in step["args"]:
            types.setdefault(a, step.get("dtype", "float64"))
    return {name: types.get(name, "float64") for name in request["inputs"]}


def load(path, dtype):
    """An input file as `dtype`; a float32 input must hold binary32 values."""
    x = np.load(path)
    y = x.astype(DTYPES[dtype])
    if not np.array_equal(y, x, equal_nan=True):
        raise ValueError(f"{path}: an f32 input holds values that are not binary32")
    return y


def run_step(step, env):
    if step["op"] != "einsum":
        raise NotImplementedError(f"op `{step['op']}` (this adapter tests einsum only)")
    return opt_einsum.contract(step["equation"], *[env[a] for a in step["args"]])


def run_case(request):
    if request["ops"] is None:
        raise NotImplementedError("this adapter runs the ops/1 form only")
    unsupported = sorted({s["op"] for s in request["ops"]} - {"einsum"})
    if unsupported:
        raise NotImplementedError(f"ops {unsupported} (this adapter tests einsum only)")
    dtypes = input_dtypes(request)
    env = {name: load(v["path"], dtypes[name]) for name, v in request["inputs"].items()}
    for step in request["ops"]:
        env[step["out"]] = np.asarray(run_step(step, env))
        want = DTYPES[step.get("dtype", "float64")]
        if env[step["out"]].dtype != want:  # this adapter's bug, not opt_einsum's
            raise TypeError(f"step {step['out']} computed {env[step['out']].dtype}, not {want.__name__}")
    for name, v in request["outputs"].items():
        # teil-target/1 wants float64 in C order (np.save would keep a transposed array in
        # Fortran order).
        np.save(v["path"], np.array(env[name], dtype=np.float64, order="C"))


def main():
    np.seterr(all="ignore")
    name = f"opt_einsum {opt_einsum.__version__} (numpy {np.__version__})"
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        answer = {"id": request["id"], "status": "ok"}
        try:
            run_case(request)
        except NotImplementedError as e:
            answer = {"id": request["id"], "status": "unsupported", "reason": str(e)}
        except Exception as e:
            answer = {"id": request["id"], "status": "error", "message": f"{type(e).__name__}: {e}"}
        answer["target"] = name  # recorded in reproducers
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
