"""TeIL for Python: a shape guard, an oracle and a kernel compiler for NumPy users.

TeIL is a type-safe tensor language whose checker proves every shape statically. This package
calls the Rust toolchain in-process:

>>> import teil
>>> teil.einsum_shape("ij,jk->ik", (2, 3), (3, 4))
(2, 4)
>>> p = teil.Program('''
... input  alloc A : [2, 3]
... input  alloc B : [3, 4]
... output alloc C : [2, 4]
... C = red+ 2 (diag 2 3 (prod A B))''')
>>> import numpy as np
>>> p.run(A=np.ones((2, 3)), B=np.ones((3, 4)))["C"].shape
(2, 4)

Everything but :func:`guarded` lives in the native module ``teil._native``; see the
docstrings of :func:`check`, :class:`Program`, :class:`Diagnostic`, :func:`einsum_shape`,
:func:`einsum` and :func:`einsum_program`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from . import _native
from ._native import (
    Diagnostic,
    ParseError,
    Program,
    RunError,
    ShapeError,
    TeilError,
    check,
    einsum,
    einsum_program,
    einsum_shape,
)

__all__ = [
    "Diagnostic",
    "ParseError",
    "Program",
    "RunError",
    "ShapeError",
    "TeilError",
    "check",
    "einsum",
    "einsum_program",
    "einsum_shape",
    "guarded",
]

Kernel = _native.Kernel
__all__.append("Kernel")

F = TypeVar("F", bound=Callable[..., Any])

# The labels NumPy gives the integers of the interleaved form `einsum(a, [0, 1], b, [1, 2])`.
_LABELS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _shape(operand: Any) -> tuple[int, ...]:
    """An operand's shape from its ``.shape`` alone (nested lists have none: NumPy's view)."""
    shape = getattr(operand, "shape", None)
    if shape is None:
        import numpy

        return tuple(numpy.shape(operand))
    return tuple(int(n) for n in shape)


def _subscripts(sublist: Any) -> str:
    try:
        items = list(sublist)
    except TypeError:
        raise TypeError(
            "teil.guarded: in the interleaved form, every operand must be followed by a list "
            "of subscripts"
        ) from None
    out = []
    for s in items:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and 0 <= s < len(_LABELS):
            out.append(_LABELS[s])
        else:
            raise TypeError(
                f"teil.guarded: subscript {s!r} must be an integer in 0..{len(_LABELS) - 1} "
                "or Ellipsis"
            )
    return "".join(out)


def _equation_and_shapes(args: tuple[Any, ...]) -> tuple[str, list[tuple[int, ...]]]:
    """The equation and operand shapes of an einsum-like call.

    Two forms, as NumPy accepts them: ``f("ij,jk->ik", a, b)`` and the interleaved
    ``f(a, [0, 1], b, [1, 2], [0, 2])``.
    """
    if not args:
        raise TypeError("teil.guarded: an einsum call needs an equation or operands")
    if isinstance(args[0], str):
        return args[0], [_shape(op) for op in args[1:]]
    rest = list(args)
    output = None
    if len(rest) % 2 == 1:
        output = _subscripts(rest.pop())
    ops, subs = rest[0::2], rest[1::2]
    equation = ",".join(_subscripts(s) for s in subs)
    if output is not None:
        equation += "->" + output
    return equation, [_shape(op) for op in ops]


def guarded(fn: F) -> F:
    """Wraps an einsum-like function so that TeIL checks every call's shapes first.

    ``fn`` is ``numpy.einsum``, ``torch.einsum``, ``jax.numpy.einsum``,
    ``opt_einsum.contract`` or anything called like them: an equation followed by operands, or
    NumPy's interleaved form (operands each followed by a list of integer subscripts). Only the
    operands' ``.shape`` is read, so tensors of any library (on any device) work and nothing is
    imported for them. A call whose shapes TeIL rejects raises :class:`ShapeError` with TeIL's
    diagnostics before ``fn`` runs; otherwise ``fn``'s own result is returned unchanged.

    >>> import numpy as np
    >>> einsum = teil.guarded(np.einsum)
    >>> einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4))).shape
    (2, 4)
    >>> einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 4)))
    Traceback (most recent call last):
        ...
    teil.ShapeError: ...
    """

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        equation, shapes = _equation_and_shapes(args)
        einsum_shape(equation, *shapes)
        return fn(*args, **kwargs)

    return checked  # type: ignore[return-value]
