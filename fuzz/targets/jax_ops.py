#!/usr/bin/env python3
"""A teil-target/1 adapter for JAX: `teil fuzz --target "python3 jax_ops.py"`.

It runs TeIL's fuzz programs in their ops/1 form (spec/fuzzing.md) with jax.numpy, in x64 mode:
float32 arrays for a step with "dtype": "float32", float64 otherwise, and writes every output as
float64 .npy in C order. The inputs come as float64 files; an input the program declares f32 is
converted to float32 (exactly), its type read off the first step that reads it
(`input_dtypes`). Functions are jax.numpy's (`jnp.exp`, ...) and `jax.scipy.special.erf`,
`max`/`min` `jnp.maximum`/`jnp.minimum` (NaN propagating), casts `astype`. XLA on the CPU
flushes subnormals to zero (fuzz/targets/tests/test_adapter_elem_types.py). Without jax
installed it answers "unsupported" for every program. Every adapter in fuzz/targets/ stands
alone on purpose, protocol loop included: a tester copies one file, and a little repetition
between adapters is the price of that.
"""
import json
import sys

import numpy as np

try:
    import jax

    jax.config.update("jax_enable_x64", True)  # TeIL's f64 is binary64
    import jax.numpy as jnp
    import jax.scipy.special
except ImportError:  # reported per case as "unsupported"
    jax = None


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
    """An input file as a NumPy array of `dtype`; a float32 input must hold binary32 values."""
    x = np.load(path)
    y = x.astype(dtype)
    if not np.array_equal(y, x, equal_nan=True):
        raise ValueError(f"{path}: an f32 input holds values that are not binary32")
    return y


def run_step(step, env):
    op, args = step["op"], [env[a] for a in step["args"]]
    funcs = {"exp": jnp.exp, "log": jnp.log, "sqrt": jnp.sqrt, "tanh": jnp.tanh,
             "erf": jax.scipy.special.erf, "abs": jnp.abs}
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
        return jnp.asarray(step["value"], dtype=step.get("dtype", "float64"))
    if op == "func":
        return funcs[step["name"]](args[0])
    if op == "max":  # jnp.maximum and jnp.minimum propagate NaN
        return jnp.maximum(args[0], args[1])
    if op == "min":
        return jnp.minimum(args[0], args[1])
    if op == "cast":
        return args[0].astype(step["to"])
    raise NotImplementedError(f"op `{op}`")


#: Whether programs with subnormal inputs are sent to XLA anyway (`--keep-subnormals`, for
#: `teil fuzz --accuracy`, which measures the flush).
KEEP_SUBNORMALS = "--keep-subnormals" in sys.argv[1:]


def refuse_subnormals(arrays):
    """XLA's CPU runtime computes with flush-to-zero and denormals-are-zero set, on purpose
    (https://github.com/jax-ml/jax/issues/16200: "working as intended"), so a subnormal input
    reads as zero: a program with one is `unsupported` (counted by the campaign), unless
    `--keep-subnormals`. Subnormal results of steps are flushed too; the campaign's bound
    covers most of them, and the rest read as findings of this documented choice."""
    if KEEP_SUBNORMALS:
        return
    for x in arrays:
        tiny = np.finfo(x.dtype).tiny
        if np.any((x != 0) & (np.abs(x) < tiny)):
            raise NotImplementedError("a subnormal input: XLA on the CPU flushes subnormals to zero (jax#16200)")


def run_case(request):
    if jax is None:
        raise NotImplementedError("jax is not installed")
    if request["ops"] is None:
        raise NotImplementedError("this adapter runs the ops/1 form only")
    dtypes = input_dtypes(request)
    loaded = {name: load(v["path"], dtypes[name]) for name, v in request["inputs"].items()}
    refuse_subnormals(loaded.values())
    env = {name: jnp.asarray(x) for name, x in loaded.items()}
    for step in request["ops"]:
        env[step["out"]] = run_step(step, env)
        want = step.get("dtype", "float64")
        if env[step["out"]].dtype != want:  # this adapter's bug, not JAX's
            raise TypeError(f"step {step['out']} computed {env[step['out']].dtype}, not {want}")
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
