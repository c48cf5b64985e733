#!/usr/bin/env python3
"""A teil-target/1 adapter for PyTorch:
`teil fuzz --target "python3 torch_ops.py --device cpu"` (or `--device cuda`), and for its
compiler: `teil fuzz --target "python3 torch_ops.py --compile" --target-timeout 120`.

It runs TeIL's fuzz programs in their ops/1 form (spec/fuzzing.md) with torch tensors on the
chosen device, float32 for a step with "dtype": "float32" and float64 otherwise, and writes
every output as float64 .npy in C order. The inputs come as float64 files; an input the program
declares f32 is converted to float32 (exactly), its type read off the first step that reads it
(`input_dtypes`). Functions are torch's (`torch.exp`, ..., `torch.erf`), `max`/`min`
`torch.maximum`/`torch.minimum` (NaN propagating), casts `Tensor.to(dtype)`. With `--compile` the
whole program is one function compiled by `torch.compile` (TorchInductor, its default backend,
which generates C++ for the CPU and Triton for CUDA), so that Inductor fuses across steps; the
inputs are its arguments and the outputs its results; a program Inductor fails to compile or
run is an `error`. Without torch
installed it answers "unsupported" for every program, so a campaign still runs (and says so in
its counters). Every adapter in fuzz/targets/ stands alone on purpose, protocol loop included:
a tester copies one file, and a little repetition between adapters is the price of that.
"""
import argparse
import json
import sys

import numpy as np

try:
    import torch
except ImportError:  # reported per case as "unsupported"
    torch = None


def dtype(name):
    """The torch dtype of an ops/1 element type."""
    return {"float32": torch.float32, "float64": torch.float64}[name]


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


def load(path, dtype_name):
    """An input file as a NumPy array of `dtype_name`; a float32 input must hold binary32 values."""
    x = np.load(path)
    y = x.astype(dtype_name)
    if not np.array_equal(y, x, equal_nan=True):
        raise ValueError(f"{path}: an f32 input holds values that are not binary32")
    return y


def run_step(step, env, device):
    op, args = step["op"], [env[a] for a in step["args"]]
    funcs = {"exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh,
             "erf": torch.erf, "abs": torch.abs}
    if op == "einsum":
        return torch.einsum(step["equation"], *args)
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":  # a shape-() first argument broadcasts: it scales the second
        return args[0] * args[1]
    if op == "div":  # a shape-() second argument broadcasts: it divides the first
        return args[0] / args[1]
    if op == "reduce":  # amax and amin propagate NaN, as TeIL's max and min do
        fold = {"sum": torch.sum, "prod": torch.prod, "max": torch.amax, "min": torch.amin}
        return fold[step["kind"]](args[0], dim=step["axis"])
    if op == "expand":
        a = args[0].unsqueeze(step["axis"])
        return a.repeat_interleave(step["n"], dim=step["axis"])
    if op == "take":
        return args[0].select(step["axis"], step["index"])
    if op == "const":
        return torch.tensor(step["value"], dtype=dtype(step.get("dtype", "float64")), device=device)
    if op == "func":
        return funcs[step["name"]](args[0])
    if op == "max":  # torch.maximum and torch.minimum propagate NaN
        return torch.maximum(args[0], args[1])
    if op == "min":
        return torch.minimum(args[0], args[1])
    if op == "cast":
        return args[0].to(dtype(step["to"]))
    raise NotImplementedError(f"op `{op}`")


def program(request, device):
    """The whole program as one function of its inputs, in request order, returning its
    outputs in request order."""
    names, steps, outputs = list(request["inputs"]), request["ops"], list(request["outputs"])

    def f(*values):
        env = dict(zip(names, values))
        for step in steps:
            env[step["out"]] = run_step(step, env, device)
        return tuple(env[n] for n in outputs)

    return f


def run_case(request, device, compile):
    if torch is None:
        raise NotImplementedError("torch is not installed")
    if request["ops"] is None:
        raise NotImplementedError("this adapter runs the ops/1 form only")
    dtypes = input_dtypes(request)
    args = [torch.from_numpy(load(v["path"], dtypes[n])).to(device) for n, v in request["inputs"].items()]
    f = program(request, device)
    if compile:
        torch._dynamo.reset()  # each program is compiled afresh, not from an earlier one's guards
        f = torch.compile(f, fullgraph=True, dynamic=False)
    results = f(*args)
    for (name, v), value in zip(request["outputs"].items(), results):
        value = value.detach().to("cpu").numpy()
        np.save(v["path"], np.array(value, dtype=np.float64, order="C"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--compile", action="store_true", help="torch.compile (Inductor) the whole program")
    args = parser.parse_args()
    name = f"torch {torch.__version__} ({args.device}{', torch.compile' if args.compile else ''})" if torch else "torch (not installed)"
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        answer = {"id": request["id"], "status": "ok"}
        try:
            run_case(request, args.device, args.compile)
        except NotImplementedError as e:
            answer = {"id": request["id"], "status": "unsupported", "reason": str(e)}
        except Exception as e:
            answer = {"id": request["id"], "status": "error", "message": f"{type(e).__name__}: {e}"}
        answer["target"] = name  # recorded in reproducers
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
