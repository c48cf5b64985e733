"""A pytest plugin that records the einsum calls a peer's own test suite makes.

Loaded with ``-p record_plugin`` (this directory on ``PYTHONPATH``) while pytest runs NumPy's
or opt_einsum's test files, it wraps ``numpy.einsum`` and ``opt_einsum.contract`` before the
test modules are imported (so ``from opt_einsum import contract`` binds the wrapper too) and
writes every distinct call to the JSON file named by ``TEIL_PEERS_OUT`` when the session ends.

A call is recorded by its form, never by its values: the library, the equation (or the
interleaved subscript lists, each label tagged with its type) and each operand's shape. What
the library answered is kept as well, for the report only: the replay asks the library again
(``test_peer_parity.py``), on operands of its own, so a test's exotic dtypes, ``out=`` arrays
or deliberately failing operands do not decide what counts as valid.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

_calls: dict[str, dict[str, Any]] = {}
_unrecordable: dict[str, int] = {}


def _shape(operand: Any) -> list[int]:
    return [int(n) for n in np.shape(operand)]


def _label(x: Any) -> Any:
    """A subscript of the interleaved form, tagged with its type so that the replay rebuilds
    the same object (``1`` and ``"1"`` are different opt_einsum labels)."""
    if x is Ellipsis:
        return "..."
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("a boolean subscript")
    if isinstance(x, (int, np.integer)):
        return {"int": int(x)}
    if isinstance(x, str):
        return {"str": x}
    raise TypeError(f"a subscript of type {type(x).__name__}")


def _is_sublist(a: Any) -> bool:
    if isinstance(a, np.ndarray):
        return a.ndim == 1 and a.dtype.kind in "iu"
    return isinstance(a, (list, tuple)) and all(
        x is Ellipsis or isinstance(x, (int, np.integer, str)) for x in a
    )


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    # opt_einsum's `contract(..., shapes=True)` takes the operands' shapes for the operands.
    shape = (lambda a: [int(n) for n in a]) if kwargs.get("shapes") else _shape
    if args and isinstance(args[0], str):
        return {"form": "equation", "equation": args[0], "shapes": [shape(a) for a in args[1:]]}
    items: list[dict[str, Any]] = []
    for k, a in enumerate(args):
        # Operands and subscript lists alternate; an odd count ends with the output's list.
        if k % 2 == 1 or k == len(args) - 1 and len(args) % 2 == 1:
            if not _is_sublist(a):
                raise TypeError(f"a subscript list of type {type(a).__name__}: {a!r:.40}")
            items.append({"sub": [_label(x) for x in list(a)]})
        else:
            items.append({"shape": shape(a)})
    return {"form": "interleaved", "items": items}


def _wrap(library: str, fn: Any) -> Any:
    def recording(*args: Any, **kwargs: Any) -> Any:
        try:
            call: dict[str, Any] | None = {"library": library, **_describe(args, kwargs)}
        except Exception as e:  # an operand without a shape, a subscript of an odd type
            reason = f"{library}: {e}"
            _unrecordable[reason] = _unrecordable.get(reason, 0) + 1
            call = None
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            outcome: dict[str, Any] = {"error": type(e).__name__}
            raise
        else:
            outcome = {"shape": _shape(result)} if hasattr(result, "shape") else {"value": True}
            return result
        finally:
            if call is not None:
                key = json.dumps(call, sort_keys=True)
                entry = _calls.setdefault(key, {**call, "outcomes": [], "keywords": []})
                if outcome not in entry["outcomes"]:
                    entry["outcomes"].append(outcome)
                for name in sorted(kwargs):
                    if name not in entry["keywords"]:
                        entry["keywords"].append(name)

    recording.__wrapped__ = fn  # type: ignore[attr-defined]
    return recording


def pytest_configure(config: Any) -> None:
    np.einsum = _wrap("numpy", np.einsum)
    try:
        import opt_einsum
    except ImportError:
        return
    opt_einsum.contract = _wrap("opt_einsum", opt_einsum.contract)


def pytest_unconfigure(config: Any) -> None:
    out = os.environ.get("TEIL_PEERS_OUT")
    if not out:
        return
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"calls": list(_calls.values()), "unrecordable": _unrecordable}, f)
