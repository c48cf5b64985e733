"""TeIL programs as ONNX models: :func:`export` and ``python -m teil.onnx``.

A program's ops/1 form (:meth:`teil.Program.ops`, spec/fuzzing.md "The ops/1 form") becomes
an ONNX graph at opset :data:`OPSET` (spec/fuzzing.md "ONNX export"), one or a few nodes per
step. A value of element type ``f64`` is a ``DOUBLE`` tensor and one of ``f32`` a ``FLOAT``
tensor: the interface variables the document lists in ``float32``, and every step with
``"dtype": "float32"`` (inputs, outputs, constants and the ``value_info`` of every
intermediate value), so that a runtime computes each step in the step's own type:

=========== ===================================================================
ops/1 step  ONNX nodes
=========== ===================================================================
``einsum``  ``Einsum`` (the step's equation)
``add`` ... ``Add``, ``Sub``, ``Mul``, ``Div`` (a shape-``[]`` operand broadcasts)
``reduce``  ``ReduceSum``/``ReduceProd``/``ReduceMax``/``ReduceMin``, ``keepdims=0``,
            the axis as an ``int64`` input
``expand``  ``Unsqueeze`` then ``Expand`` to the step's shape
``take``    ``Gather`` with a scalar ``int64`` index (the axis is removed)
``const``   ``Constant`` (``FLOAT`` or ``DOUBLE``: the value, which ops/1 gives in the
            step's type, must be exact in it)
``func``    ``Exp``, ``Log``, ``Sqrt``, ``Tanh``, ``Erf``, ``Abs``
``max``     ``Max``, ``Min`` (two inputs of the same shape)
``min``
``cast``    ``Cast`` with ``to`` ``FLOAT`` or ``DOUBLE``
=========== ===================================================================

With ``spellings`` (a seed), :func:`from_ops` writes about half the steps that have one in
another spelling (:data:`SPELLINGS`: ``MatMul`` or ``Gemm`` with ``Transpose`` and ``Reshape``,
``keepdims=1`` and ``Squeeze``, ``Tile``, ``Slice``, initializers), the same values under ONNX's
semantics in the operators real models use.

Every one of these operators has ``tensor(float)`` and ``tensor(double)`` among its types at
opset 18 (``onnx.defs.get_schema(op, 18).type_constraints``), so no step is refused for its
type. What the models mean is ONNX's semantics, which differ from TeIL's in places that
ONNX's operator documentation leaves open (measured with onnx 1.23.2 and onnxruntime 1.32.0;
teil-py/tests/test_onnx.py pins each):

- ``Max``/``Min`` say nothing of NaN or of the sign of zero ("Element-wise max of each of the
  input tensors (with Numpy-style broadcasting support)"). The reference evaluator is
  ``np.maximum``/``np.minimum``: NaN propagates, as in TeIL, but of ``-0`` and ``+0`` it returns
  the *second* operand, so ``max(+0, -0)`` is ``-0`` and ``min(-0, +0)`` is ``+0``, where TeIL
  (IEEE 754-2019 maximum/minimum) gives ``+0`` and ``-0``; ONNX Runtime's CPU kernels give the
  same values as the reference evaluator.
- ``Erf`` on ``DOUBLE``: the reference evaluator computes ``math.erf`` through
  ``np.vectorize(erf, otypes=["f"])``, which rounds every result to binary32 before casting it
  back to float64; ONNX Runtime has no ``DOUBLE`` kernel for ``Erf`` (NOT_IMPLEMENTED).
- The functions are not correctly rounded in either runtime (TeIL's are): the reference
  evaluator's (NumPy's ``exp``, ``log``, ``tanh``) are within 2 ulps of TeIL's here, ONNX
  Runtime's within 2 but for ``Tanh``: 7 ulps in float64, about 100 in float32
  (fuzz/targets/tests/test_adapter_elem_types.py).

The graph's inputs are the program's input variables, by name, in declaration order, with
their static shapes; its outputs are the output variables in declaration order, each named as
the variable, except that an ``inout`` variable's output is ``NAME:out`` (its input keeps
``NAME``: an ONNX value has one producer). Values inside the graph are named ``NAME:K`` (``K``
the step's index); ``:`` never occurs in a TeIL identifier, so no name collides. A variable the
program reads before assigning it, and does not take as input, is ``•`` (NaN) everywhere
(semantics [Eval-Prog]): a ``ConstantOfShape`` of NaN.

Everything here is plain Python on top of the ``onnx`` package (its ``helper``; no hand-written
protobuf). :func:`from_ops` needs nothing else, so the fuzzing adapters in ``fuzz/targets/`` load
this file from a checkout without the compiled package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Mapping, Optional, Sequence

try:
    from ._native import TeilError as _Base
except ImportError:  # loaded by path, without the package (fuzz/targets/ from a checkout)
    _Base = ValueError

#: The ONNX operator set every exported model imports (the default domain, ``ai.onnx``).
OPSET = 18
#: The IR version of the models: 8, the one that opset 18 came with (onnx 1.13), so that
#: every runtime that implements opset 18 reads them.
IR_VERSION = 8

_REDUCE = {"sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin"}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min"}
_FUNCS = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "tanh": "Tanh", "erf": "Erf", "abs": "Abs"}
#: The element types of ops/1 (its ``dtype`` and ``to`` fields, NumPy's names).
DTYPES = ("float64", "float32")

__all__ = [
    "ExportError",
    "IR_VERSION",
    "OPSET",
    "export",
    "float32_interface",
    "from_ops",
    "nan_propagating_reductions",
    "output_names",
    "spelling_seed",
    "SPELLINGS",
]


class ExportError(_Base):
    """A program or ops/1 document that cannot become an ONNX model. ``reason`` says why;
    ``step`` is the index of the offending step, or ``None``."""

    def __init__(self, reason: str, step: Optional[int] = None):
        self.reason = reason
        self.step = step
        where = f"step {step}: " if step is not None else ""
        super().__init__(f"cannot export to ONNX: {where}{reason}")


def output_names(document: Mapping[str, Any]) -> list[str]:
    """The graph output names :func:`from_ops` gives ``document``'s outputs, in order:
    ``NAME``, or ``NAME:out`` for a variable that is also an input."""
    inputs = document["inputs"]
    return [f"{n}:out" if n in inputs else n for n in document["outputs"]]


def _dtype(step: Mapping[str, Any], field: str = "dtype", k: Optional[int] = None) -> str:
    """A step's ``dtype`` (absent: ``float64``) or a cast's ``to``, checked."""
    d = step.get(field, "float64" if field == "dtype" else None)
    if d not in DTYPES:
        raise ExportError(f"{field} {d!r} is not an ops/1 element type (float32, float64)", k)
    return d


def _operand_dtype(step: Mapping[str, Any], k: Optional[int] = None) -> str:
    """The element type of a step's arguments: the step's own, except that a ``cast``
    converts from the other type (TeIL refuses a conversion to its operand's own type,
    E0312)."""
    if step.get("op") == "cast":
        return "float64" if _dtype(step, "to", k) == "float32" else "float32"
    return _dtype(step, "dtype", k)


def float32_interface(
    steps: Sequence[Mapping[str, Any]], inputs: Sequence[str], outputs: Sequence[str]
) -> list[str]:
    """The interface variables of type ``f32``, inferred from the steps alone, for callers
    that have a program's steps and interface but not its document's ``float32`` list (a
    ``teil-target/1`` request): an input is ``f32`` when the first step that reads it (before
    any step rebinds it) takes ``f32`` operands; an output when the last step that binds it is
    ``f32``, or, when no step does, when it is an ``f32`` input. An input that no step reads
    counts as ``f64`` (no step depends on its type; its values, binary32 or not, are exact in
    binary64). Inputs first, then outputs, each in the order given."""
    found: list[str] = []
    bound: set[str] = set()
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for k, step in enumerate(steps):
        for a in step["args"]:
            if a in inputs and a not in bound and a not in first:
                first[a] = _operand_dtype(step, k)
        bound.add(step["out"])
        last[step["out"]] = _dtype(step, "dtype", k)
    for n in inputs:
        if first.get(n) == "float32":
            found.append(n)
    for n in outputs:
        if n not in found and last.get(n, first.get(n)) == "float32":
            found.append(n)
    return found


def export(program: Any, *, name: Optional[str] = None) -> Any:
    """The ONNX model (``onnx.ModelProto``) of a :class:`teil.Program`, checked with
    ``onnx.checker.check_model(full_check=True)``.

    >>> import teil, teil.onnx
    >>> p = teil.Program('''
    ... input  var A : [2 3]
    ... input  var B : [3 4]
    ... output var C : [2 4]
    ... C = (A # B) .[2 3]''')
    >>> m = teil.onnx.export(p)
    >>> [n.op_type for n in m.graph.node], [o.name for o in m.graph.output]
    (['Einsum'], ['C'])
    """
    shapes = {v: list(shape) for v, (shape, _) in program.variables.items()}
    if name is None:
        name = os.path.splitext(os.path.basename(program.filename))[0] or "teil"
    return from_ops(program.ops(), shapes=shapes, name=name)


def from_ops(
    document: Mapping[str, Any],
    *,
    shapes: Optional[Mapping[str, Sequence[int]]] = None,
    name: str = "teil",
    check: bool = True,
    spellings: Optional[int] = None,
) -> Any:
    """The ONNX model of an ops/1 document (a dict, as ``teil lower --ops`` prints it or
    :meth:`teil.Program.ops` returns it). ``shapes`` gives the shape of each variable in
    ``document["undefined"]`` that is not an output (the document does not carry it); with
    ``check`` (the default) the model is checked with ``full_check=True`` before it is
    returned. With ``spellings`` (a seed), about half the steps that have another spelling are
    written with it instead, drawn with the seed (:data:`SPELLINGS`): the same values under
    ONNX's semantics, through the operators real models use, where graph optimisations fire.
    Raises :class:`ExportError` for a document it cannot read, or one whose steps read a value
    of another element type than they compute in."""
    if not isinstance(document, Mapping):
        raise ExportError(f"not an ops/1 document: a JSON array or value, not an object ({type(document).__name__})")
    try:
        return _from_ops(document, shapes=shapes, name=name, check=check, spellings=spellings)
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        # A document of the wrong shape (a missing key, a list where an object belongs, an
        # unknown reduction): said as a refusal of the document, never a traceback.
        what = f"missing key {e}" if isinstance(e, KeyError) else f"{type(e).__name__}: {e}"
        raise ExportError(f"not a well-formed ops/1 document ({what})") from None


def _from_ops(
    document: Mapping[str, Any],
    *,
    shapes: Optional[Mapping[str, Sequence[int]]],
    name: str,
    check: bool,
    spellings: Optional[int],
) -> Any:
    import random

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if document.get("format") != "ops/1":
        raise ExportError(f"not an ops/1 document (format {document.get('format')!r})")
    inputs = dict(document["inputs"])
    outputs = dict(document["outputs"])
    steps = list(document["steps"])
    float32 = set(document.get("float32", []))
    elem = {"float64": TensorProto.DOUBLE, "float32": TensorProto.FLOAT}
    numpy_dtype = {"float64": np.float64, "float32": np.float32}
    nodes: list[Any] = []
    value_info: list[Any] = []
    env: dict[str, str] = {n: n for n in inputs}
    # The element type and shape of every value `env` names, by variable.
    types: dict[str, str] = {n: "float32" if n in float32 else "float64" for n in inputs}
    shape_of: dict[str, list[int]] = {n: list(shape) for n, shape in inputs.items()}
    initializers: list[Any] = []
    draw = random.Random(spellings)

    def respelled() -> bool:
        """Whether this step takes its other spelling (never without ``spellings``)."""
        return spellings is not None and draw.random() < 0.5

    def const(value_name: str, array: Any) -> str:
        nodes.append(helper.make_node("Constant", [], [value_name], value=numpy_helper.from_array(array, value_name)))
        return value_name

    def int64s(value_name: str, values: Sequence[int]) -> str:
        return const(value_name, np.array(list(values), dtype=np.int64))

    for var in document.get("undefined", []):
        shape = outputs.get(var, (shapes or {}).get(var))
        if shape is None:
            raise ExportError(f"`{var}` is read before it is assigned and its shape is not known (pass shapes=)")
        if var in outputs:
            dtype = "float32" if var in float32 else "float64"
        else:  # an internal variable: the type the first step that reads it expects
            dtype = next((_operand_dtype(s, k) for k, s in enumerate(steps) if var in s["args"]), "float64")
        dims = int64s(f"{var}:undefined_shape", shape)
        nan = numpy_helper.from_array(np.array([np.nan], dtype=numpy_dtype[dtype]), "nan")
        nodes.append(helper.make_node("ConstantOfShape", [dims], [f"{var}:undefined"], value=nan))
        env[var] = f"{var}:undefined"
        types[var] = dtype
        shape_of[var] = list(shape)

    # The step that gives each output its final value produces the graph output directly.
    final: dict[str, int] = {}
    for k, step in enumerate(steps):
        final[step["out"]] = k
    graph_out = dict(zip(outputs, output_names(document)))
    named_by_step = {final[v]: graph_out[v] for v in outputs if v in final}

    for k, step in enumerate(steps):
        try:
            op, out = step["op"], step["out"]
            args = [env[a] for a in step["args"]]
        except KeyError as e:
            raise ExportError(f"reads {e} before any step binds it", k) from None
        dtype = _dtype(step, "dtype", k)
        if op != "cast":  # a cast converts from either type; every other op stays in its own
            for a in step["args"]:
                if types[a] != dtype:
                    raise ExportError(f"`{op}` computes in {dtype} but `{a}` is {types[a]}", k)
        value = named_by_step.get(k, f"{out}:{k}")
        tmp = f"{out}:{k}:"  # the prefix of a multi-node spelling's intermediate values
        if op == "einsum":
            plan = _matmul_plan(step["equation"], [shape_of[a] for a in step["args"]])
            if plan is not None and respelled():
                _matmul(plan, args, value, tmp, draw.random() < 0.5, nodes, int64s)
            else:
                nodes.append(helper.make_node("Einsum", args, [value], equation=step["equation"]))
        elif op in _BINARY:
            nodes.append(helper.make_node(_BINARY[op], args, [value]))
        elif op == "func":
            if step.get("name") not in _FUNCS:
                raise ExportError(f"`{step.get('name')}` is not an ops/1 function", k)
            nodes.append(helper.make_node(_FUNCS[step["name"]], args, [value]))
        elif op == "cast":
            if _dtype(step, "to", k) != dtype:
                raise ExportError(f"a cast to {step['to']} whose dtype is {dtype}", k)
            nodes.append(helper.make_node("Cast", args, [value], to=elem[dtype]))
        elif op == "reduce":
            axes = int64s(f"{out}:{k}:axes", [step["axis"]])
            if respelled():  # keepdims=1, then Squeeze
                kept = tmp + "kept"
                nodes.append(helper.make_node(_REDUCE[step["kind"]], [args[0], axes], [kept], keepdims=1))
                nodes.append(helper.make_node("Squeeze", [kept, axes], [value]))
            else:
                nodes.append(helper.make_node(_REDUCE[step["kind"]], [args[0], axes], [value], keepdims=0))
        elif op == "expand":
            axes = int64s(f"{out}:{k}:axes", [step["axis"]])
            unsqueezed = f"{out}:{k}:unsqueezed"
            nodes.append(helper.make_node("Unsqueeze", [args[0], axes], [unsqueezed]))
            if respelled():  # Tile the new axis of extent 1
                repeats = [1] * len(step["shape"])
                repeats[step["axis"]] = step["shape"][step["axis"]]
                nodes.append(helper.make_node("Tile", [unsqueezed, int64s(tmp + "repeats", repeats)], [value]))
            else:
                shape = int64s(f"{out}:{k}:shape", step["shape"])
                nodes.append(helper.make_node("Expand", [unsqueezed, shape], [value]))
        elif op == "take":
            if respelled():  # Slice [index, index + 1), then Squeeze
                i, axis = step["index"], step["axis"]
                starts, ends, axes = (int64s(tmp + n, [v]) for n, v in (("starts", i), ("ends", i + 1), ("axes", axis)))
                nodes.append(helper.make_node("Slice", [args[0], starts, ends, axes], [tmp + "slice"]))
                nodes.append(helper.make_node("Squeeze", [tmp + "slice", axes], [value]))
            else:
                index = const(f"{out}:{k}:index", np.array(step["index"], dtype=np.int64))
                nodes.append(helper.make_node("Gather", [args[0], index], [value], axis=step["axis"]))
        elif op == "const":
            number = step["value"]
            array = np.array(number, dtype=numpy_dtype[dtype])
            if float(array) != number:  # ops/1 gives a literal's value in its step's type
                raise ExportError(f"the constant {number!r} is not a {dtype} value", k)
            if respelled() and value not in graph_out.values():  # a graph initializer
                initializers.append(numpy_helper.from_array(array, value))
            else:
                const(value, array)
        else:
            raise ExportError(f"`{op}` is not an ops/1 op", k)
        env[out] = value
        types[out] = dtype
        shape_of[out] = list(step["shape"])
        if value not in graph_out.values():
            value_info.append(helper.make_tensor_value_info(value, elem[dtype], list(step["shape"])))

    for var, out_name in graph_out.items():
        if var not in final:  # an input returned unchanged, or an undefined variable
            nodes.append(helper.make_node("Identity", [env[var]], [out_name]))
        if types[var] != ("float32" if var in float32 else "float64"):
            raise ExportError(f"output `{var}` is declared {'float32' if var in float32 else 'float64'} "
                              f"but its value is {types[var]}")

    def info(n: str, shape: Sequence[int], var: str) -> Any:
        return helper.make_tensor_value_info(n, elem["float32" if var in float32 else "float64"], list(shape))

    graph = helper.make_graph(
        nodes,
        name,
        [info(n, s, n) for n, s in inputs.items()],
        [info(graph_out[n], s, n) for n, s in outputs.items()],
        value_info=value_info,
        initializer=initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="teil",
        ir_version=IR_VERSION,
    )
    if check:
        onnx.checker.check_model(model, full_check=True)
    return model


#: The other spellings :func:`from_ops` draws from with ``spellings`` (each step that has one,
#: about half the time): what the step's canonical nodes mean, written as real models write it.
SPELLINGS = {
    "einsum": "a product of two operands without repeated labels, as Transpose, Reshape and "
              "MatMul (or Gemm, with no batch labels), then Reshape and Transpose to the output",
    "reduce": "the reduction with keepdims=1, then Squeeze",
    "expand": "Unsqueeze, then Tile",
    "take": "Slice of one index, then Squeeze",
    "const": "a graph initializer instead of a Constant node",
}


def spelling_seed(steps: Sequence[Mapping[str, Any]]) -> int:
    """The ``spellings`` seed of a program, from its ops/1 steps alone (a CRC-32 of their JSON
    with sorted keys): the fuzzing adapters draw each program's spellings with it, so that a
    reproducer replays with the same model."""
    import zlib

    return zlib.crc32(json.dumps(list(steps), sort_keys=True).encode())


def _matmul_plan(equation: str, shapes: Sequence[Sequence[int]]) -> Optional[tuple]:
    """The labels of a two-operand ``einsum`` as a batched matrix product: ``(a, b, out,
    batch, left, right, summed, extent)``, or ``None`` where it is not one (another count of
    operands, a label repeated in one operand, or summed out of one operand alone)."""
    terms, out = equation.split("->")
    operands = terms.split(",")
    if len(operands) != 2 or len(shapes) != 2:
        return None
    a, b = operands
    if any(len(set(t)) != len(t) for t in (a, b, out)):
        return None
    if any(l not in out and not (l in a and l in b) for l in a + b):
        return None
    extent = {l: n for t, shape in zip((a, b), shapes) for l, n in zip(t, shape)}
    batch = [l for l in out if l in a and l in b]
    left = [l for l in out if l in a and l not in b]
    right = [l for l in out if l in b and l not in a]
    summed = [l for l in a if l in b and l not in out]
    return a, b, out, batch, left, right, summed, extent


def _matmul(plan: tuple, args: Sequence[str], value: str, tmp: str, gemm: bool,
            nodes: list, int64s: Any) -> None:
    """Appends the nodes of ``plan`` (:func:`_matmul_plan`) computing ``value`` from the two
    operands ``args``: each operand transposed to (batch, free, summed) or (batch, summed,
    free) and reshaped to a batch of matrices, ``MatMul`` (``Gemm`` where ``gemm`` and there is
    no batch label), the product reshaped to its labels and transposed to the output's order."""
    from onnx import helper

    a, b, out, batch, left, right, summed, extent = plan

    def size(labels: Sequence[str]) -> int:
        n = 1
        for l in labels:
            n *= extent[l]
        return n

    def arrange(x: str, labels: str, order: list, shape: list, name: str) -> str:
        perm = [labels.index(l) for l in order]
        if perm != list(range(len(perm))):
            nodes.append(helper.make_node("Transpose", [x], [tmp + name + "_t"], perm=perm))
            x = tmp + name + "_t"
        nodes.append(helper.make_node("Reshape", [x, int64s(tmp + name + "_shape", shape)], [tmp + name]))
        return tmp + name

    batch_dims = [extent[l] for l in batch]
    lhs = arrange(args[0], a, batch + left + summed, batch_dims + [size(left), size(summed)], "lhs")
    rhs = arrange(args[1], b, batch + summed + right, batch_dims + [size(summed), size(right)], "rhs")
    if gemm and not batch:
        nodes.append(helper.make_node("Gemm", [lhs, rhs], [tmp + "product"]))
    else:
        nodes.append(helper.make_node("MatMul", [lhs, rhs], [tmp + "product"]))
    order = batch + left + right
    perm = [order.index(l) for l in out]
    shape = [extent[l] for l in order]
    if perm == list(range(len(perm))):
        nodes.append(helper.make_node("Reshape", [tmp + "product", int64s(tmp + "out_shape", shape)], [value]))
    else:
        nodes.append(helper.make_node("Reshape", [tmp + "product", int64s(tmp + "out_shape", shape)], [tmp + "out"]))
        nodes.append(helper.make_node("Transpose", [tmp + "out"], [value], perm=perm))


def nan_propagating_reductions(model: Any) -> Any:
    """``model`` with every ``ReduceMax`` and ``ReduceMin`` of an exported model (the axes as an
    input, ``keepdims`` as the node has it) replaced by nodes that propagate NaN whatever the runtime's reduction
    does with it: ``Where(ReduceMax(Cast(IsNaN(x))) > 0.5, NaN, Reduce(x))``. The same values
    under ONNX's semantics (NumPy's ``max`` propagates NaN); a workaround for runtimes whose
    reductions drop a NaN (fuzz/FINDINGS.md), so that a campaign can look past that known bug.
    The NaN is of ``x``'s element type (``FLOAT`` or ``DOUBLE``, as the graph's inputs and
    ``value_info`` declare it). Changes ``model`` in place and returns it."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    g = model.graph
    declared = {v.name: v.type.tensor_type.elem_type for v in [*g.input, *g.value_info, *g.output]}
    nodes: list[Any] = []
    for k, node in enumerate(model.graph.node):
        if node.op_type not in ("ReduceMax", "ReduceMin"):
            nodes.append(node)
            continue
        x, axes = node.input
        keepdims = next((a.i for a in node.attribute if a.name == "keepdims"), 1)
        p = f"{node.output[0]}:nan{k}:"

        def constant(name: str, value: float, dtype: Any = np.float64) -> Any:
            array = numpy_helper.from_array(np.array(value, dtype=dtype), name)
            return helper.make_node("Constant", [], [name], value=array)

        x_type = np.float32 if declared.get(x) == TensorProto.FLOAT else np.float64

        nodes += [
            helper.make_node(node.op_type, [x, axes], [p + "reduced"], keepdims=keepdims),
            helper.make_node("IsNaN", [x], [p + "isnan"]),
            helper.make_node("Cast", [p + "isnan"], [p + "flags"], to=TensorProto.DOUBLE),
            helper.make_node("ReduceMax", [p + "flags", axes], [p + "any"], keepdims=keepdims),
            constant(p + "half", 0.5),
            helper.make_node("Greater", [p + "any", p + "half"], [p + "has_nan"]),
            constant(p + "nan", float("nan"), x_type),
            helper.make_node("Where", [p + "has_nan", p + "nan", p + "reduced"], list(node.output)),
        ]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def _save(model: Any, path: str) -> None:
    """Writes ``model`` to ``path`` atomically: a temporary file beside it, with the mode
    ``open()`` would give it, renamed. (Imported here: the fuzzing adapters load this module
    on its own for :func:`from_ops`, which writes nothing.)"""
    from ._files import write_atomically

    write_atomically(path, model.SerializeToString(), prefix=".teil-onnx-")


def _vectors(directory: str) -> int:
    """Adds ``model.onnx`` to every case of a ``teil fuzz --export`` directory; the count.
    Every case is a directory of ``directory`` named by one plain path component (not ``..``,
    not a symbolic link), so no model is written anywhere else."""
    path = os.path.join(directory, "index.json")
    try:
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
    except ValueError as e:
        raise ExportError(f"{path} is not JSON: {e}") from None
    if not isinstance(index, dict) or index.get("format") != "teil-vectors/1":
        raise ExportError(f"{path} is not a teil-vectors/1 index")
    cases = index.get("cases")
    if not isinstance(cases, list):
        raise ExportError(f"{path}: `cases` is {json.dumps(cases)[:40]}, not a list")
    root = os.path.realpath(directory)
    for i, case in enumerate(cases):
        name = case.get("dir") if isinstance(case, dict) else None
        if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise ExportError(f"{path}: case {i} names {json.dumps(name)[:60]}, not a directory of {directory}")
        case_dir = os.path.join(directory, name)
        if os.path.islink(case_dir) or not os.path.isdir(case_dir) or os.path.dirname(os.path.realpath(case_dir)) != root:
            raise ExportError(f"case {name}: {case_dir} is not a directory inside {directory} (a symbolic link is not followed)")
        try:
            with open(os.path.join(case_dir, "ops.json"), encoding="utf-8") as f:
                document = json.load(f)
        except ValueError as e:
            raise ExportError(f"case {name}: ops.json is not JSON: {e}") from None
        try:
            model = from_ops(document, name=name)
        except ExportError as e:
            where = f" step {e.step}" if e.step is not None else ""
            raise ExportError(f"case {name}: ops.json{where}: {e.reason}") from None
        _save(model, os.path.join(case_dir, "model.onnx"))
    return len(index["cases"])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m teil.onnx",
        description="Export a TeIL program (.teil or .tin) as an ONNX model (float64 and float32, opset "
        f"{OPSET}), or add model.onnx to every case of a `teil fuzz --export` directory.",
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("program", nargs="?", help="the .teil or .tin file")
    group.add_argument("--vectors", metavar="DIR", help="a `teil fuzz --export` directory")
    parser.add_argument("-o", "--output", metavar="MODEL", help="where to write the model (with PROGRAM)")
    args = parser.parse_args(argv)
    try:
        if args.vectors is not None:
            if args.output is not None:
                parser.error("-o goes with PROGRAM, not with --vectors")
            count = _vectors(args.vectors)
            print(f"{count} models written to {args.vectors}")
            return 0
        if args.output is None:
            parser.error("PROGRAM needs -o MODEL")
        from . import Program

        _save(export(Program.from_file(args.program)), args.output)
    except (ValueError, OSError) as e:  # TeilError and ExportError are ValueErrors
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
