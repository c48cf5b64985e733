#!/usr/bin/env python3
"""A teil-target/1 adapter for JAX: `teil fuzz --target "python3 jax_ops.py"`.

It runs TeIL's fuzz programs in their ops/1 form (spec/fuzzing.md) with jax.numpy in float64
(x64 mode) and writes every output as float64 .npy in C order. Without jax installed it answers
"unsupported" for every program. Every adapter in fuzz/targets/ stands alone on purpose,
protocol loop included: a tester copies one file, and a little repetition between adapters is
the price of that.
"""
import json
import sys

import numpy as np

try:
    import jax

    jax.config.update("jax_enable_x64", True)  # TeIL computes in binary64
    import jax.numpy as jnp
except ImportError:  # reported per case as "unsupported"
    jax = None


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
    if op == "reduce":  # jnp.max and jnp.min propagate NaN, as TeIL's max and min do
        fold = {"sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min}
        return fold[step["kind"]](args[0], axis=step["axis"])
    if op == "expand":
        return jnp.repeat(jnp.expand_dims(args[0], step["axis"]), step["n"], axis=step["axis"])
    if op == "take":
        return jnp.take(args[0], step["index"], axis=step["axis"])
    if op == "const":
        return jnp.float64(step["value"])
    raise NotImplementedError(f"op `{op}`")


def run_case(request):
    if jax is None:
        raise NotImplementedError("jax is not installed")
    if request["ops"] is None:
        raise NotImplementedError("this adapter runs the ops/1 form only")
    env = {name: jnp.asarray(np.load(v["path"])) for name, v in request["inputs"].items()}
    for step in request["ops"]:
        env[step["out"]] = run_step(step, env)
    for name, v in request["outputs"].items():
        np.save(v["path"], np.array(env[name], dtype=np.float64, order="C"))


def main():
    name = f"jax {jax.__version__} (jax.numpy, op by op)" if jax else "jax (not installed)"
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
