#!/usr/bin/env python3
"""A teil-target/1 adapter for NumPy: `teil fuzz --target "python3 numpy_ops.py"`.

TeIL's fuzzer sends one JSON request per line on standard input, each naming a case directory
with the inputs as .npy files and the program in its ops/1 form (spec/fuzzing.md): a list of
steps, each binding `out` to `op` applied to the values named in `args`. This adapter runs the
steps with NumPy, writes every output as float64 .npy and answers one JSON line:
{"id": N, "status": "ok"}, "unsupported" (with a "reason") or "error" (with a "message").

A step with "dtype": "float32" computes in float32 (NumPy keeps float32 through every op here;
a constant is an np.float32), every other in float64. The inputs come as float64 files; an
input the program declares f32 is converted to float32 (exactly: its values are binary32), its
type read off the first step that reads it (`input_dtypes`), since a request carries the steps
but not the document's "float32" list. The functions are NumPy's (`np.exp`, ...); NumPy has no
erf, so a program with `erf` is "unsupported". `max`/`min` are np.maximum/np.minimum: NaN
propagates, as in TeIL, but of two zeros they return the second operand (max(+0, -0) is -0),
where TeIL's max is +0 (fuzz/targets/tests/test_adapter_elem_types.py pins this).

To fuzz your own tensor library, copy this file and change `run_step`. Every adapter in
fuzz/targets/ stands alone on purpose, protocol loop included: a tester copies one file, and a
little repetition between adapters is the price of that.
"""
import json
import sys

import numpy as np

FOLDS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
FUNCS = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs}
DTYPES = {"float32": np.float32, "float64": np.float64}


def operand_dtype(step):
    """The type of a step's arguments: its own, except that a cast converts from the other."""
    if step["op"] == "cast":
        return "float64" if step["to"] == "float32" else "float32"
    return step.get("dtype", "float64")


def input_dtypes(request):
    """Each input's type: what the first step that reads it (before any rebinds it) takes;
    float64 for an input no step reads."""
    types, bound = {}, set()
    for step in request["ops"]:
        for a in step["args"]:
            if a in request["inputs"] and a not in bound:
                types.setdefault(a, operand_dtype(step))
        bound.add(step["out"])
    return {name: types.get(name, "float64") for name in request["inputs"]}


def load(path, dtype):
    """An input file as `dtype`; a float32 input must hold binary32 values."""
    x = np.load(path)
    y = x.astype(DTYPES[dtype])
    if not np.array_equal(y, x, equal_nan=True):
        raise ValueError(f"{path}: an f32 input holds values that are not binary32")
    return y


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
        return DTYPES[step.get("dtype", "float64")](step["value"])
    if op == "func":
        if step["name"] not in FUNCS:
            raise NotImplementedError(f"func `{step['name']}` (NumPy has no {step['name']})")
        return FUNCS[step["name"]](args[0])
    if op == "max":  # NaN if either is NaN; of equal operands the second
        return np.maximum(args[0], args[1])
    if op == "min":
        return np.minimum(args[0], args[1])
    if op == "cast":  # to float32: round to nearest even (overflow to inf); to float64: exact
        return args[0].astype(DTYPES[step["to"]])
    raise NotImplementedError(f"op `{op}`")


def run_case(request):
    if request["ops"] is None:
        raise NotImplementedError("this adapter runs the ops/1 form only")
    dtypes = input_dtypes(request)
    env = {name: load(v["path"], dtypes[name]) for name, v in request["inputs"].items()}
    for step in request["ops"]:
        env[step["out"]] = run_step(step, env)
        want = DTYPES[step.get("dtype", "float64")]
        if env[step["out"]].dtype != want:  # this adapter's bug, not NumPy's
            raise TypeError(f"step {step['out']} computed {env[step['out']].dtype}, not {want.__name__}")
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
