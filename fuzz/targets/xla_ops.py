#!/usr/bin/env python3
"""A teil-target/1 adapter for XLA through JAX: `teil fuzz --target "python3 xla_ops.py"`.

Unlike jax_ops.py, which runs the ops/1 steps (spec/fuzzing.md) one by one, this adapter traces
the whole program into one function and compiles it with `jax.jit`, so that XLA sees every step
at once and fuses, reorders and simplifies across them, on the CPU, in float64 (x64 mode). The
inputs are the function's arguments (not constants, which XLA would fold away) and the outputs
its results. Each program is compiled once (jit's cache never hits: shapes and steps differ).

Answers: a program XLA fails to compile or run is an `error` (a finding of the class "error on a
valid model"); without jax installed every program is `unsupported`. Every adapter in
fuzz/targets/ stands alone on purpose, protocol loop included: a tester copies one file.
"""
import json
import sys

import numpy as np

try:
    import jax

    jax.config.update("jax_enable_x64", True)  # TeIL computes in binary64
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
except ImportError:  # reported per case as "unsupported"
    jax = None

FOLDS = {"sum": "sum", "prod": "prod", "max": "max", "min": "min"}  # jnp.max propagates NaN


def run_step(step, env):
    op, args = step["op"], [env[a] for a in step["args"]]
    if op == "einsum":
        return jnp.einsum(step["equation"], *args)
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":  # a shape-() first argument broadcasts: it scales the second
        return args[0] * args[1]
    if op == "div":  # a shape-() second argument broadcasts: it divides the first
        return args[0] / args[1]
    if op == "reduce":
        return getattr(jnp, FOLDS[step["kind"]])(args[0], axis=step["axis"])
    if op == "expand":
        return jnp.broadcast_to(jnp.expand_dims(args[0], step["axis"]), step["shape"])
    if op == "take":
        return jnp.take(args[0], step["index"], axis=step["axis"])
    if op == "const":
        return jnp.float64(step["value"])
    raise NotImplementedError(f"op `{op}`")


def program(request):
    """The whole program as one function of its inputs, in request order, returning its
    outputs in request order."""
    names, steps, outputs = list(request["inputs"]), request["ops"], list(request["outputs"])

    def f(*values):
        env = dict(zip(names, values))
        for step in steps:
            env[step["out"]] = run_step(step, env)
        return tuple(env[n] for n in outputs)

    return f


def run_case(request):
    if jax is None:
        raise NotImplementedError("jax is not installed")
    if request["ops"] is None:
        raise NotImplementedError("this adapter runs the ops/1 form only")
    args = [np.load(v["path"]) for v in request["inputs"].values()]
    results = jax.jit(program(request))(*args)
    for (name, v), value in zip(request["outputs"].items(), results):
        np.save(v["path"], np.array(value, dtype=np.float64, order="C"))


def main():
    name = f"jax {jax.__version__}, jaxlib {jax.lib.__version__} (XLA CPU, jit)" if jax else "jax (not installed)"
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
