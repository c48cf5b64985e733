#!/usr/bin/env python3
"""A teil-target/1 adapter for XLA through JAX: `teil fuzz --target "python3 xla_ops.py"`.

Unlike jax_ops.py, which runs the ops/1 steps (spec/fuzzing.md) one by one, this adapter traces
the whole program into one function and compiles it with `jax.jit`, so that XLA sees every step
at once and fuses, reorders and simplifies across them, on the CPU, in x64 mode: float32 where a
step says "dtype": "float32", float64 otherwise. The inputs are the function's arguments (not
constants, which XLA would fold away; an input the program declares f32 is converted to float32,
exactly, its type read off the first step that reads it) and the outputs its results. Functions
are jax.numpy's and `jax.scipy.special.erf`, `max`/`min` `jnp.maximum`/`jnp.minimum`, casts
`astype`. A contraction of two operands is `jnp.einsum`, `lax.dot_general` or `jnp.tensordot`
(then transposed), drawn per step from the program's steps, so that XLA meets the spellings
models use and one program always compiles the same way (`--only-einsum` keeps `jnp.einsum`).
Each program is compiled once (jit's cache never hits: shapes and steps differ).

Answers: a program XLA fails to compile or run is an `error` (a finding of the class "error on a
valid model"); without jax installed every program is `unsupported`. Every adapter in
fuzz/targets/ stands alone on purpose, protocol loop included: a tester copies one file.
"""
import json
import keyword
import random
import sys
import zlib

import numpy as np

try:
    import jax

    jax.config.update("jax_enable_x64", True)  # TeIL's f64 is binary64
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    import jax.scipy.special
except ImportError:  # reported per case as "unsupported"
    jax = None

FOLDS = {"sum": "sum", "prod": "prod", "max": "max", "min": "min"}  # jnp.max propagates NaN


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


def contraction(equation, shapes):
    """The labels of a two-operand einsum as `(a, b, out, batch, summed)` where it is a
    `dot_general` (no label repeated in an operand, none summed out of one operand alone),
    else None."""
    terms, out = equation.split("->")
    operands = terms.split(",")
    if len(operands) != 2:
        return None
    a, b = operands
    if any(len(set(t)) != len(t) for t in (a, b, out)):
        return None
    if any(l not in out and not (l in a and l in b) for l in a + b):
        return None
    batch = [l for l in out if l in a and l in b]
    summed = [l for l in a if l in b and l not in out]
    return a, b, out, batch, summed


def spelling_of(equation, spelling):
    """How a two-operand einsum is spelled: `("dot_general", dimension_numbers, permutation)`
    (spelling 1), `("tensordot", axes, permutation)` (spelling 2, without batch labels), the
    result then transposed to the output's order; `("einsum",)` otherwise (spelling 0, or an
    equation neither spells)."""
    plan = contraction(equation, None)
    if plan is None or spelling == 0 or (spelling == 2 and plan[3]):
        return ("einsum",)
    a, b, out, batch, summed = plan
    ca, cb = [a.index(l) for l in summed], [b.index(l) for l in summed]
    if spelling == 1:
        ba, bb = [a.index(l) for l in batch], [b.index(l) for l in batch]
        order = batch + [l for l in a if l not in batch and l not in summed] \
            + [l for l in b if l not in batch and l not in summed]
        return ("dot_general", ((ca, cb), (ba, bb)), [order.index(l) for l in out])
    order = [l for l in a if l not in summed] + [l for l in b if l not in summed]
    return ("tensordot", (ca, cb), [order.index(l) for l in out])


def spelled_einsum(step, args, spelling):
    """A two-operand einsum in its spelling (`spelling_of`)."""
    how = spelling_of(step["equation"], spelling)
    if how[0] == "dot_general":
        return jnp.transpose(jax.lax.dot_general(args[0], args[1], how[1]), how[2])
    if how[0] == "tensordot":
        return jnp.transpose(jnp.tensordot(args[0], args[1], axes=how[1]), how[2])
    return jnp.einsum(step["equation"], *args)


#: The functions, by the ops/1 name, as the jax expressions `run_step` calls and `step_source`
#: writes.
FUNCS = {"exp": "jnp.exp", "log": "jnp.log", "sqrt": "jnp.sqrt", "tanh": "jnp.tanh",
         "erf": "jax.scipy.special.erf", "abs": "jnp.abs"}


def run_step(step, env, spelling=0):
    """The value of one ops/1 step; `step_source` writes the same computation as Python."""
    op, args = step["op"], [env[a] for a in step["args"]]
    if op == "einsum":
        return spelled_einsum(step, args, spelling)
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
        return jnp.asarray(step["value"], dtype=step.get("dtype", "float64"))
    if op == "func":
        path = FUNCS[step["name"]].split(".")
        f = {"jnp": jnp, "jax": jax}[path[0]]
        for part in path[1:]:
            f = getattr(f, part)
        return f(args[0])
    if op == "max":  # jnp.maximum and jnp.minimum propagate NaN
        return jnp.maximum(args[0], args[1])
    if op == "min":
        return jnp.minimum(args[0], args[1])
    if op == "cast":
        return args[0].astype(step["to"])
    raise NotImplementedError(f"op `{op}`")


def literal(x):
    """A float as Python source (infinities and NaN included)."""
    x = float(x)
    if x != x:
        return 'float("nan")'
    if x in (float("inf"), float("-inf")):
        return 'float("inf")' if x > 0 else '-float("inf")'
    return repr(x)


def step_source(step, args, spelling=0):
    """`run_step`'s computation as a Python expression over the argument names `args`, for the
    standalone reproducers of fuzz/targets/standalone.py (jax as `jax`, jax.numpy as `jnp`)."""
    op = step["op"]
    binary = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
    if op in binary:
        return f"{args[0]} {binary[op]} {args[1]}"
    if op == "einsum":
        how = spelling_of(step["equation"], spelling)
        if how[0] == "dot_general":
            return f"jnp.transpose(jax.lax.dot_general({args[0]}, {args[1]}, {how[1]!r}), {how[2]!r})"
        if how[0] == "tensordot":
            return f"jnp.transpose(jnp.tensordot({args[0]}, {args[1]}, axes={how[1]!r}), {how[2]!r})"
        return f"jnp.einsum({step['equation']!r}, {', '.join(args)})"
    if op == "reduce":
        return f"jnp.{FOLDS[step['kind']]}({args[0]}, axis={step['axis']!r})"
    if op == "expand":
        return f"jnp.broadcast_to(jnp.expand_dims({args[0]}, {step['axis']!r}), {tuple(step['shape'])!r})"
    if op == "take":
        return f"jnp.take({args[0]}, {step['index']!r}, axis={step['axis']!r})"
    if op == "const":
        return f"jnp.asarray({literal(step['value'])}, dtype={step.get('dtype', 'float64')!r})"
    if op == "func":
        return f"{FUNCS[step['name']]}({args[0]})"
    if op in ("max", "min"):
        return f"jnp.{'maximum' if op == 'max' else 'minimum'}({args[0]}, {args[1]})"
    if op == "cast":
        return f"{args[0]}.astype({step['to']!r})"
    raise NotImplementedError(f"op `{op}`")


def spellings_of(steps):
    """Each step's contraction spelling (0 einsum, 1 dot_general, 2 tensordot), drawn from the
    program's steps so that one program always compiles the same way."""
    draw = random.Random(zlib.crc32(json.dumps(steps, sort_keys=True).encode()))
    return [0 if ONLY_EINSUM else draw.randrange(3) for _ in steps]


def program_source(request, indent="    "):
    """`program(request)` as the source of a Python function `program` of the inputs (in
    request order) returning the outputs' tuple, each step one line; names that are not
    Python identifiers (`%3`) become `v_3`."""
    taken = {"jax", "jnp", "np", "program", "sys"}
    names = {}

    def name(n):
        if n not in names:
            base = n if n.isidentifier() and not keyword.iskeyword(n) else "v_" + "".join(
                c if c.isalnum() else "_" for c in n).strip("_")
            while base in taken:
                base += "_"
            taken.add(base)
            names[n] = base
        return names[n]

    params = [name(n) for n in request["inputs"]]
    lines = [f"def program({', '.join(params)}):"]
    for step, spelling in zip(request["ops"], spellings_of(request["ops"])):
        args = [name(a) for a in step["args"]]
        value = step_source(step, args, spelling)
        names.pop(step["out"], None)  # a step that rebinds a name gets a fresh one
        lines.append(f"    {name(step['out'])} = {value}")
    results = [name(n) for n in request["outputs"]]
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(indent + line for line in lines)


def program(request):
    """The whole program as one function of its inputs, in request order, returning its
    outputs in request order."""
    names, steps, outputs = list(request["inputs"]), request["ops"], list(request["outputs"])
    spellings = spellings_of(steps)

    def f(*values):
        env = dict(zip(names, values))
        for step, spelling in zip(steps, spellings):
            env[step["out"]] = run_step(step, env, spelling)
        return tuple(env[n] for n in outputs)

    return f


#: `--only-einsum` keeps every contraction a `jnp.einsum`; by default each two-operand one is
#: `jnp.einsum`, `lax.dot_general` or `jnp.tensordot`, drawn from the program.
ONLY_EINSUM = "--only-einsum" in sys.argv[1:]

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
    args = [load(v["path"], dtypes[name]) for name, v in request["inputs"].items()]
    refuse_subnormals(args)
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
