#!/usr/bin/env python3
"""A teil-target/1 adapter for PyTorch:
`teil fuzz --target "python3 torch_ops.py --device cpu"` (or `--device cuda`), and for its
compiler: `teil fuzz --target "python3 torch_ops.py --compile" --target-timeout 120`.

It runs TeIL's fuzz programs in their ops/1 form (spec/fuzzing.md) with float64 torch tensors
on the chosen device, and writes every output as float64 .npy in C order. With `--compile` the
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


def run_step(step, env, device):
    op, args = step["op"], [env[a] for a in step["args"]]
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
        return torch.tensor(step["value"], dtype=torch.float64, device=device)
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
    args = [torch.from_numpy(np.load(v["path"])).to(device) for v in request["inputs"].values()]
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
