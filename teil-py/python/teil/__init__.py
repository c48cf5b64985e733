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

Everything but :func:`guarded` and :func:`guard_module` lives in the native module ``teil._native``; see the
docstrings of :func:`check`, :class:`Program`, :class:`Diagnostic`, :func:`einsum_shape`,
:func:`einsum` and :func:`einsum_program`.
"""

from __future__ import annotations

import collections.abc
import contextlib
import functools
import operator
import sys
import threading
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar

from . import _native
from ._native import (
    __version__,
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
    explain,
)
from ._display import Trace, TraceStep

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
    "explain",
    "guard_module",
    "guarded",
    "load_ipython_extension",
    "Trace",
    "TraceStep",
    "__version__",
]

Kernel = _native.Kernel
__all__.append("Kernel")


def load_ipython_extension(ipython: Any) -> None:
    """What ``%load_ext teil`` calls in IPython and Jupyter: registers the cell magic ``%%teil``
    (check a cell, run it on the notebook's variables, bind its outputs) and the line magic
    ``%teil_einsum`` (``teil.einsum`` on notebook variables). See ``teil._magics`` and the
    teil-py/README.md, "Notebooks". IPython is imported only here."""
    from ._magics import register

    register(ipython)

F = TypeVar("F", bound=Callable[..., Any])

# The letters NumPy (and torch) give the integers of the interleaved form
# `einsum(a, [0, 1], b, [1, 2])`: 0 is `A`, 25 is `Z`, 26 is `a`, 51 is `z`. This is also
# TeIL's (and NumPy's) character order, which orders an implicit output.
_LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# The letters opt_einsum gives its first 52 sorted labels (`opt_einsum.parser.get_symbol`).
_OPT_EINSUM_SYMBOLS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

# The functions `guard_module` replaces, and which `guarded` translates to einsum by name.
_EINSUM_NAMES = ("einsum", "contract")
_TRANSLATED_NAMES = ("tensordot", "matmul", "inner", "outer", "trace", "transpose", "moveaxis")


# The codes of TeIL's limits of checking (spec/limits.md; the einsum front end's "Limits" in
# spec/frontends.md): a call past them is one TeIL cannot check, not one that is wrong (NumPy
# allows 64 dimensions, TeIL checks 32), so the guard passes it on unchecked.
_LIMIT_CODES = frozenset({"E0103", "E0104", "E0309", "E0310", "E0409"})


class _Unchecked(Exception):
    """A call whose arguments the translation cannot read: the wrapped function rejects it."""


def _items(value: Any) -> list[Any]:
    """The items of a collection argument (subscripts, axes), read without using it up.

    Only a collection with a length that is not an iterator is read: a list, tuple, range,
    array or sequence, which iterating leaves as it was. A generator, an ``iter(...)``, or any
    other iterable without a length may be one-shot: reading it would hand the wrapped function
    an exhausted iterator, so the call is passed on unchecked (``_Unchecked``) with the very
    objects the caller gave. The same holds for a collection that cannot be read.
    """
    if isinstance(value, collections.abc.Iterator) or not hasattr(value, "__len__"):
        raise _Unchecked
    try:
        return list(value)
    except Exception:  # a 0-d array, a broken sequence: the library's to reject
        raise _Unchecked from None


def _labels(n: int) -> str:
    """``n`` labels for an equation: ``A``..``Z``, ``a``..``z``, then further letters (NumPy
    allows 64 dimensions, more than the 52 ASCII letters)."""
    return "".join(_letters(n))


def _library(fn: Any) -> str:
    """The top-level package ``fn`` comes from (``numpy``, ``torch``, ``jax``, ``opt_einsum``),
    read from ``fn.__module__`` so that nothing is imported."""
    return (getattr(fn, "__module__", None) or "").split(".")[0]


def _shape(operand: Any) -> tuple[int, ...]:
    """An operand's shape from its ``.shape`` alone (nested lists have none: NumPy's view,
    which reads a generator or iterator as a 0-d object without iterating it). An operand
    without a readable shape is the library's to reject (``_Unchecked``)."""
    try:
        shape = getattr(operand, "shape", None)
        if shape is None:
            import numpy

            return tuple(numpy.shape(operand))
        return tuple(int(n) for n in shape)
    except Exception:
        raise _Unchecked from None


def _numpy_subscripts(sublist: Any) -> str:
    """A sublist as NumPy and torch read it: integers 0..51 and Ellipsis. Anything else is a
    call the library rejects with its own error (``_Unchecked``)."""
    out = []
    for s in _items(sublist):
        if s is Ellipsis:
            out.append("...")
            continue
        try:
            k = operator.index(s)
        except TypeError:
            raise _Unchecked from None
        if not 0 <= k < len(_LABELS):
            raise _Unchecked
        out.append(_LABELS[k])
    return "".join(out)


def _opt_einsum_symbol(i: int) -> str:
    # A copy of `opt_einsum.parser.get_symbol`, for when opt_einsum's parser is not loaded.
    if i < 52:
        return _OPT_EINSUM_SYMBOLS[i]
    return chr(i + 2048) if i >= 55296 else chr(i + 140)


def _opt_einsum_interleaved(args: Sequence[Any]) -> tuple[str, list[Any]]:
    """The equation opt_einsum (and JAX, which parses with it) reads from an interleaved call.

    Labels are any hashable, comparable objects; opt_einsum sorts them and names the k-th
    ``get_symbol(k)``. Its own parser is used when it is loaded (``sys.modules``), so the guard
    reads the call exactly as the installed version does.
    """
    rest = list(args)
    ops, subs = rest[0:-1:2] if len(rest) % 2 else rest[0::2], rest[1::2]
    output = rest[-1] if len(rest) % 2 else None
    # opt_einsum's parser iterates each subscript list more than once: a one-shot one is never
    # handed to it (nor read here), so the call goes on unchecked with the caller's objects.
    for sub in subs + ([output] if output is not None else []):
        _items(sub)
    parser = sys.modules.get("opt_einsum.parser")
    convert = getattr(parser, "convert_interleaved_input", None)
    if convert is not None:
        equation, operands = convert(rest)
        return equation, list(operands)
    try:
        symbols = {s for sub in subs for s in sub if s is not Ellipsis}
        names = {s: _opt_einsum_symbol(k) for k, s in enumerate(sorted(symbols))}
    except TypeError:  # unhashable or unordered subscripts: opt_einsum rejects them
        raise _Unchecked from None

    def term(sub: Any) -> str:
        return "".join("..." if s is Ellipsis else names[s] for s in sub)

    equation = ",".join(term(sub) for sub in subs)
    if output is not None:
        equation += "->" + term(output)
    return equation, list(ops)


def _ascii_labels(equation: str) -> str:
    """``equation`` with its labels renamed to ASCII letters, keeping their character order.

    opt_einsum names labels past the 52nd with other Unicode characters, which TeIL's
    equations do not accept. An implicit output lists its labels in character order in
    opt_einsum, NumPy and TeIL alike, so a renaming that keeps that order keeps its meaning.
    """
    labels = sorted({c for c in equation if c not in ",.->" and not c.isspace()})
    if all(c in _LABELS for c in labels):
        return equation
    rename = dict(zip(labels, _letters(len(labels))))
    return "".join(rename.get(c, c) for c in equation)


def _letters(n: int) -> Iterator[str]:
    """``n`` letters TeIL reads as labels, in increasing character order: ``A``..``Z``,
    ``a``..``z``, then letters from U+0100 on (Latin Extended-A and beyond)."""
    yield from _LABELS[:n]
    c = 0x100
    for _ in range(n - len(_LABELS)):
        while not chr(c).isalpha():
            c += 1
        yield chr(c)
        c += 1


def _torch_to_numpy(equation: str) -> str:
    """A torch equation in NumPy's form: an explicit output without ``...`` sums the
    dimensions under ``...`` in torch and is an error in NumPy, so the output gains a leading
    ``...``: the check is the same, only the result's shape (never checked) differs."""
    if "->" not in equation:
        return equation
    inputs, output = equation.split("->", 1)
    if "..." in inputs and "..." not in output:
        return inputs + "->..." + output
    return equation


def _einsum_call(library: str, args: tuple[Any, ...]) -> tuple[str, list[tuple[int, ...]]]:
    """The equation and operand shapes of an einsum-like call of ``library``'s function.

    Two forms, as NumPy accepts them: ``f("ij,jk->ik", a, b)`` and the interleaved
    ``f(a, [0, 1], b, [1, 2], [0, 2])``; torch also takes the operands as one list,
    ``torch.einsum("ij,jk", [a, b])``.
    """
    if not args:
        raise _Unchecked
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if (
            library == "torch"
            and len(operands) == 1
            and isinstance(operands[0], (list, tuple))
        ):
            operands = list(operands[0])
    elif library in ("opt_einsum", "jax"):
        equation, operands = _opt_einsum_interleaved(args)
    else:
        rest = list(args)
        output = _numpy_subscripts(rest.pop()) if len(rest) % 2 == 1 else None
        operands = rest[0::2]
        equation = ",".join(_numpy_subscripts(s) for s in rest[1::2])
        if output is not None:
            equation += "->" + output
    if library in ("opt_einsum", "jax"):
        equation = _ascii_labels(equation)
    if library == "torch":
        equation = _torch_to_numpy(equation)
    # An operand with no shape raises _Unchecked: the library rejects it in its own words.
    return equation, [_shape(op) for op in operands]


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], k: int, names: Sequence[str],
              default: Any) -> Any:
    """Positional argument ``k``, or the first of its keyword ``names``, or ``default``."""
    if len(args) > k:
        return args[k]
    for name in names:
        if name in kwargs:
            return kwargs[name]
    return default


def _axis(axis: Any, rank: int) -> int:
    """``axis`` in ``0..rank-1`` (negative counts from the end), as NumPy normalises it."""
    try:
        k = operator.index(axis)
    except TypeError:
        raise _Unchecked from None
    if not -rank <= k < rank:
        raise _Unchecked
    return k % rank


def _integers(axes: Any) -> list[int]:
    """An axis argument as NumPy reads it (``normalize_axis_tuple``, ``PyArray_IntpConverter``):
    one integer, or a collection of them (read by :func:`_items`, never used up)."""
    if not isinstance(axes, (list, tuple)):
        try:
            return [operator.index(axes)]
        except TypeError:
            pass
    try:
        return [operator.index(a) for a in _items(axes)]
    except TypeError:
        raise _Unchecked from None


def _axes(axes: Any, rank: int) -> list[int]:
    out = [_axis(a, rank) for a in _integers(axes)]
    if len(set(out)) != len(out):
        raise _Unchecked
    return out


def _permutation(shape: tuple[int, ...], perm: Sequence[int]) -> tuple[str, list[tuple[int, ...]]]:
    letters = _labels(len(shape))
    return letters + "->" + "".join(letters[k] for k in perm), [shape]


def _transpose_axes(shape: tuple[int, ...], axes: list[int]) -> tuple[str, list[tuple[int, ...]]]:
    """``transpose(a, axes)`` as an einsum whose input term names ``len(axes)`` dimensions and
    whose output lists the letters of ``axes``: the permutation itself when ``axes`` is one of
    ``a``'s dimensions, and otherwise an equation the front end rejects as NumPy does. A wrong
    number of axes is E0403 (the term does not match ``a``'s rank), an axis out of range E0405
    (its letter, one no dimension has, is not among the inputs), a repeated axis E0406."""
    m = len(axes)
    outside = list(dict.fromkeys(k for k in axes if not -m <= k < m))
    letters = _labels(m + len(outside))
    out = "".join(letters[k % m] if -m <= k < m else letters[m + outside.index(k)] for k in axes)
    return letters[:m] + "->" + out, [shape]


def _translate(library: str, name: str, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> tuple[str, list[tuple[int, ...]]]:
    """The einsum equation and shapes that check a call of ``library.name``.

    Raises :class:`_Unchecked` where the call's arguments cannot be read (an axis out of range,
    an operand of too low a rank): the wrapped function raises its own error for those.
    """
    if name in ("matmul", "inner", "outer", "tensordot"):
        if len(args) < 2:
            raise _Unchecked
        a, b = _shape(args[0]), _shape(args[1])
        ra, rb = len(a), len(b)
    if name == "matmul":
        if "axes" in kwargs or "axis" in kwargs or ra == 0 or rb == 0:
            raise _Unchecked
        # NumPy's rules: a 1-d operand is a row (left) or a column (right) vector that the
        # result drops; the batch dimensions before the last two broadcast, which `...` does.
        left = "j" if ra == 1 else "...ij"
        right = "j" if rb == 1 else "...jk"
        batch = "..." if "..." in left + right else ""
        out = batch + ("i" if ra > 1 else "") + ("k" if rb > 1 else "")
        return f"{left},{right}->{out}", [a, b]
    if name == "inner":
        if ra == 0 or rb == 0:
            letters = _labels(ra + rb)
            la, lb = letters[:ra], letters[ra:]
            return f"{la},{lb}->{la}{lb}", [a, b]
        letters = _labels(ra + rb - 1)
        la, lb, z = letters[: ra - 1], letters[ra - 1 : ra + rb - 2], letters[-1]
        return f"{la}{z},{lb}{z}->{la}{lb}", [a, b]
    if name == "outer":
        if library == "torch":
            if ra != 1 or rb != 1:
                raise _Unchecked
            return "i,j->ij", [a, b]
        # NumPy and JAX flatten both operands first.
        return "i,j->ij", [(_size(a),), (_size(b),)]
    if name == "tensordot":
        axes = _argument(args, kwargs, 2, ("dims",) if library == "torch" else ("axes",), 2)
        try:
            n = operator.index(axes)
        except TypeError:
            try:
                axes_a, axes_b = _items(axes)  # never a one-shot iterator's items
            except ValueError:  # not two of them: NumPy's own error
                raise _Unchecked from None
            sa, sb = _axes(axes_a, ra), _axes(axes_b, rb)
        else:
            if not 0 <= n <= min(ra, rb):
                raise _Unchecked
            sa, sb = list(range(ra - n, ra)), list(range(n))
        if len(sa) != len(sb):
            raise _Unchecked
        letters = _labels(ra + rb)
        la = list(letters[:ra])
        lb = list(letters[ra:])
        for i, j in zip(sa, sb):
            lb[j] = la[i]
        out = [la[i] for i in range(ra) if i not in sa] + [lb[j] for j in range(rb) if j not in sb]
        return "".join(la) + "," + "".join(lb) + "->" + "".join(out), [a, b]
    if not args:
        raise _Unchecked
    a = _shape(args[0])
    rank = len(a)
    if name == "trace":
        if rank < 2 or (library == "torch" and rank != 2):
            raise _Unchecked
        try:
            offset = operator.index(_argument(args, kwargs, 1, ("offset",), 0))
        except TypeError:  # NumPy's own TypeError, in its words
            raise _Unchecked from None
        i = _axis(_argument(args, kwargs, 2, ("axis1",), 0), rank)
        j = _axis(_argument(args, kwargs, 3, ("axis2",), 1), rank)
        if i == j:
            raise _Unchecked
        # The diagonal NumPy sums: its length, the same for both axes, is what is checked.
        d = min(a[i], a[j] - offset) if offset >= 0 else min(a[i] + offset, a[j])
        if d <= 0:
            raise _Unchecked
        letters = list(_labels(rank))
        letters[j] = letters[i]
        shape = list(a)
        shape[i] = shape[j] = d
        out = "".join(letters[k] for k in range(rank) if k not in (i, j))
        return "".join(letters) + "->" + out, [tuple(shape)]
    if name == "transpose":
        if library == "torch":
            # torch.transpose(input, dim0, dim1) swaps two dimensions.
            perm = list(range(rank))
            if rank == 0:
                raise _Unchecked
            i = _axis(_argument(args, kwargs, 1, ("dim0",), None), rank)
            j = _axis(_argument(args, kwargs, 2, ("dim1",), None), rank)
            perm[i], perm[j] = perm[j], perm[i]
            return _permutation(a, perm)
        if len(args) > 2:  # numpy.transpose(a, axes) takes no more: its own TypeError
            raise _Unchecked
        axes = _argument(args, kwargs, 1, ("axes",), None)
        if axes is None:
            return _permutation(a, list(range(rank))[::-1])
        return _transpose_axes(a, _integers(axes))
    if name == "moveaxis":
        source = _argument(args, kwargs, 1, ("source",), None)
        destination = _argument(args, kwargs, 2, ("destination",), None)
        if source is None or destination is None or rank == 0:
            raise _Unchecked
        src, dst = _axes(source, rank), _axes(destination, rank)
        if len(src) != len(dst):
            raise _Unchecked
        # numpy.moveaxis's own construction of the permutation.
        order = [k for k in range(rank) if k not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        return _permutation(a, order)
    raise _Unchecked


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for extent in shape:
        n *= extent
    return n


def _check(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Optional[tuple[int, ...]]:
    """Raises :class:`ShapeError` when TeIL rejects the call ``fn(*args, **kwargs)``.

    Returns the shape of the einsum TeIL checked (``fn``'s result shape, except for torch's
    summed ellipsis dimensions), or None for a call passed on unchecked: one whose arguments
    the guard cannot read without changing them (:func:`_items`), or past TeIL's limits of
    checking (``_LIMIT_CODES``). Nothing here uses up or replaces an argument: the caller
    hands ``fn`` the very objects it was given.
    """
    library, name = _library(fn), getattr(fn, "__name__", "")
    try:
        if name in _TRANSLATED_NAMES:
            equation, shapes = _translate(library, name, args, kwargs)
        else:
            equation, shapes = _einsum_call(library, args)
    except _Unchecked:
        return None
    try:
        return einsum_shape(equation, *shapes)
    except ShapeError as e:
        if all(d.code in _LIMIT_CODES for d in e.diagnostics):
            return None  # too large for TeIL to check, not wrong: the library decides
        if name in _TRANSLATED_NAMES and hasattr(e, "add_note"):  # Python 3.11+
            e.add_note(
                f"teil.guarded: {library or '?'}.{name} was checked as the einsum "
                f"{equation!r} of shapes {', '.join(map(str, shapes))}"
            )
        raise


def guarded(fn: F) -> F:
    """Wraps an einsum-like function so that TeIL checks every call's shapes first.

    ``fn`` is ``numpy.einsum``, ``torch.einsum``, ``jax.numpy.einsum``,
    ``opt_einsum.contract`` or anything called like them: an equation followed by operands, or
    the interleaved form (operands each followed by a list of subscripts). Only the operands'
    ``.shape`` is read, so tensors of any library (on any device) work and nothing is imported
    for them. A call whose shapes TeIL rejects raises :class:`ShapeError` with TeIL's
    diagnostics before ``fn`` runs; otherwise ``fn``'s own result is returned unchanged.

    >>> import numpy as np
    >>> einsum = teil.guarded(np.einsum)
    >>> einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4))).shape
    (2, 4)
    >>> einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 4)))
    Traceback (most recent call last):
        ...
    teil.ShapeError: ...

    The call is read as the library that ``fn`` comes from (its ``__module__``) reads it:

    - NumPy and torch: interleaved subscripts are integers, 0 to 25 the labels ``A`` to ``Z``
      and 26 to 51 ``a`` to ``z``, which orders an implicit output;
    - opt_einsum and JAX: interleaved subscripts are any hashable, comparable objects, named
      in sorted order as opt_einsum's parser names them;
    - torch: an explicit output without ``...`` sums the dimensions under ``...``, and the
      operands may come as one list.

    >>> einsum(np.ones((2, 3)), [0, 30]).shape
    (2, 3)
    >>> import opt_einsum
    >>> contract = teil.guarded(opt_einsum.contract)
    >>> contract(np.ones((2, 3)), ["row", "col"], np.ones(3), ["col"]).shape
    (2,)

    Functions that are einsums in disguise are translated to one by their ``__name__``:
    ``tensordot``, ``matmul`` (broadcasting its batch dimensions, with NumPy's rules for 1-d
    operands), ``inner``, ``outer``, ``trace``, ``transpose`` and ``moveaxis`` of NumPy, JAX
    and torch (``torch.transpose`` swaps two dimensions, ``torch.tensordot`` takes ``dims``).
    A call the guard cannot read (no arguments, an interleaved subscript that is not an
    integer in 0..51 for NumPy and torch, an operand without a shape, an axis argument out of
    range) is passed on unchecked: ``fn`` rejects it with its own error, as it would unguarded.

    The wrapped result never changes: for any arguments ``fn`` accepts, the guarded call
    returns exactly what ``fn`` returns, and :class:`ShapeError` is raised only where ``fn``
    itself would fail. ``fn`` gets the very objects the caller gave, and the guard never
    iterates one it could use up: a subscript or axis argument that is an iterator (a
    generator, ``iter(...)``) or has no length is not read, and the call goes on unchecked, as
    do calls past TeIL's limits of checking (more than 32 dimensions). Of the axis arguments,
    only ``transpose``'s are checked themselves: axes that are no permutation of the operand's
    dimensions, which NumPy rejects too, raise :class:`ShapeError` with E0403 (wrong number of
    axes), E0405 (an axis out of range) or E0406 (a repeated axis).

    >>> teil.guarded(np.moveaxis)(np.ones((2, 3, 4)), (i for i in [0]), (i for i in [2])).shape
    (3, 4, 2)
    >>> teil.guarded(np.transpose)(np.ones((2, 3, 4)), (1, 0))
    Traceback (most recent call last):
        ...
    teil.ShapeError: [E0403] Error: operand 0 has 2 subscripts but its shape [2, 3, 4] has 3 ...
    ...

    >>> matmul = teil.guarded(np.matmul)
    >>> matmul(np.ones((5, 1, 2, 3)), np.ones((4, 3, 6))).shape
    (5, 4, 2, 6)
    >>> matmul(np.ones((2, 3)), np.ones(4))
    Traceback (most recent call last):
        ...
    teil.ShapeError: ...
    >>> teil.guarded(np.tensordot)(np.ones((2, 3, 4)), np.ones((4, 3)), axes=([1, 2], [1, 0])).shape
    (2,)
    """

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        _check(fn, args, kwargs)
        return fn(*args, **kwargs)

    checked.__teil_guarded__ = fn  # type: ignore[attr-defined]
    return checked  # type: ignore[return-value]


_PATCH_LOCK = threading.Lock()


@contextlib.contextmanager
def guard_module(module: Any, names: Optional[Sequence[str]] = None) -> Iterator[Any]:
    """Guards a module's einsum-like functions while the block runs.

    Replaces each of ``module``'s attributes ``einsum``, ``contract``, ``tensordot``,
    ``matmul``, ``inner``, ``outer``, ``trace``, ``transpose`` and ``moveaxis`` that exists
    (or those in ``names``) with :func:`guarded` of it, and restores the originals when the
    block ends, also on an exception. Yields ``module``.

    >>> import numpy as np
    >>> with teil.guard_module(np):
    ...     np.tensordot(np.ones((2, 3)), np.ones((3, 4)), axes=1).shape
    (2, 4)
    >>> with teil.guard_module(np):
    ...     np.matmul(np.ones((2, 3)), np.ones((4, 5)))
    Traceback (most recent call last):
        ...
    teil.ShapeError: ...
    >>> np.matmul(np.ones((2, 3)), np.ones((4, 5)))  # restored: NumPy's own error
    Traceback (most recent call last):
        ...
    ValueError: matmul: ...

    Threads: the patch changes the module for every thread of the process while the block
    runs, not only the thread that entered it. Patching and restoring each take a lock, so
    blocks that overlap in time never lose an original, but they must end in the reverse
    order they began (as nested blocks do): two threads whose blocks end out of order leave
    the module guarded or unguarded by whichever ended last. Names bound before the block
    (``from numpy import einsum``), methods (``a.transpose()``) and operators (``a @ b``) are
    not patched. An attribute that is already guarded is left as it is.
    """
    wanted = tuple(names) if names is not None else _EINSUM_NAMES + _TRANSLATED_NAMES
    replaced: list[tuple[str, Any]] = []
    with _PATCH_LOCK:
        for name in wanted:
            original = getattr(module, name, None)
            if original is None or hasattr(original, "__teil_guarded__"):
                continue
            setattr(module, name, guarded(original))
            replaced.append((name, original))
    try:
        yield module
    finally:
        with _PATCH_LOCK:
            for name, original in reversed(replaced):
                setattr(module, name, original)
