"""IPython magics: ``%load_ext teil`` registers ``%%teil`` and ``%teil_einsum``.

``%%teil [--backend fast|oracle|c] [--pad M] [--fma] [--random-inputs [SEED]] [--trace CELL]``
checks the cell as a TeIL program. A rejected program shows its diagnostics and raises (so
that "Run all" stops there). A program that checks runs with its inputs taken from the
notebook's variables of the same names (or drawn uniformly from [-1, 1) with
``--random-inputs``, as float32 arrays for ``f32`` inputs, and bound to those names too), and
every output is bound back as a NumPy array (float32 for ``f32`` variables); ``--trace CELL``
also shows the unfolding of the semantics at that cell (TeIL paper, Fig. 7). The cell's result
is a summary of what was bound (and the program, for a display).

``%teil_einsum [--backend B] EQUATION NAME ...`` is ``teil.einsum(EQUATION, *arrays)`` on the
notebook's variables ``NAME ...``; its value is the result (``C = %teil_einsum ij,jk->ik A B``).

IPython is imported here only, when a notebook loads the extension.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, Optional

import numpy as np

from . import _native
from . import _display


class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting the kernel."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise _ArgumentError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: Optional[str] = None) -> Any:  # type: ignore[override]
        raise _ArgumentError(message or f"{self.prog}: exit {status}")


def _cell_parser() -> _Parser:
    p = _Parser(prog="%%teil", add_help=False)
    p.add_argument("--backend", choices=["fast", "oracle", "c"], default="fast")
    p.add_argument("--pad", type=int, default=1)
    p.add_argument("--fma", action="store_true")
    p.add_argument("--random-inputs", nargs="?", type=int, const=0, default=None, metavar="SEED")
    p.add_argument("--trace", metavar="CELL", default=None)
    return p


def _einsum_parser() -> _Parser:
    p = _Parser(prog="%teil_einsum", add_help=False)
    p.add_argument("--backend", choices=["fast", "oracle", "c"], default="fast")
    p.add_argument("equation")
    p.add_argument("names", nargs="*")
    return p


class Bound:
    """What a ``%%teil`` cell did: the program, the names it bound and their shapes, and the
    trace it was asked for (a display in a notebook)."""

    def __init__(self, program: Any, bound: dict[str, np.ndarray], drawn: list[str],
                 trace: Any = None) -> None:
        self.program = program
        self.bound = bound
        self.drawn = drawn
        self.trace = trace

    def __repr__(self) -> str:
        names = ", ".join(f"{n} {v.shape}" for n, v in self.bound.items())
        return f"<teil %%teil result: bound {names or 'nothing'}>"

    def _repr_html_(self) -> str:
        return _display.bound_html(self)

    def _repr_markdown_(self) -> str:
        return _display.bound_markdown(self)


def _show_rejection(e: Exception) -> None:
    """Shows a rejected program's diagnostics richly and makes IPython's own report of the
    exception one line (the diagnostics are above it)."""
    from IPython.display import display

    diagnostics = getattr(e, "diagnostics", [])
    for d in diagnostics:
        display(d)
    codes = ", ".join(d.code for d in diagnostics)
    summary = f"{type(e).__name__}: TeIL rejected the cell ({codes or e})"
    e._render_traceback_ = lambda: [summary]  # type: ignore[attr-defined]


def run_cell(line: str, cell: str, namespace: dict[str, Any]) -> Bound:
    """The ``%%teil`` magic on `namespace` (the notebook's variables); see the module."""
    args = _cell_parser().parse_args(shlex.split(line))
    try:
        program = _native.Program(cell, filename="<cell>")
    except _native.TeilError as e:
        _show_rejection(e)
        raise
    inputs: dict[str, Any] = {}
    drawn: list[str] = []
    if args.random_inputs is not None:
        rng = np.random.default_rng(args.random_inputs)
        for name in program.required_inputs:
            shape = program.variables[name][0]
            # Drawn in float64, then rounded for an `f32` input (which refuses float64 values).
            inputs[name] = rng.uniform(-1.0, 1.0, size=shape).astype(program.dtypes[name])
            drawn.append(name)
    else:
        missing = [n for n in program.required_inputs if n not in namespace]
        if missing:
            raise NameError(
                "%%teil: the program's inputs " + ", ".join(missing)
                + " are not variables of the notebook; define them or pass --random-inputs"
            )
        # Only what the program reads: a notebook variable that happens to share an output's
        # name (a result of an earlier cell) is not passed in as its initial value.
        inputs = {n: namespace[n] for n in program.required_inputs}
    outputs = program.run(inputs, backend=args.backend, pad=args.pad, fma=args.fma)
    trace = program.trace(args.trace, inputs) if args.trace else None
    bound = {n: np.asarray(inputs[n]) for n in drawn}
    bound.update(outputs)
    namespace.update(bound)
    return Bound(program, bound, drawn, trace)


def einsum_line(line: str, namespace: dict[str, Any]) -> np.ndarray:
    """The ``%teil_einsum`` magic on `namespace`; see the module."""
    args = _einsum_parser().parse_args(shlex.split(line))
    missing = [n for n in args.names if n not in namespace]
    if missing:
        raise NameError("%teil_einsum: no notebook variable " + ", ".join(missing))
    return _native.einsum(args.equation, *(namespace[n] for n in args.names),
                          backend=args.backend)


def register(ipython: Any) -> None:
    """Registers the magics with `ipython` (what ``%load_ext teil`` calls)."""
    from IPython.core.error import UsageError

    def teil(line: str, cell: str) -> Bound:
        try:
            return run_cell(line, cell, ipython.user_ns)
        except _ArgumentError as e:
            raise UsageError(str(e)) from None

    def teil_einsum(line: str) -> np.ndarray:
        try:
            return einsum_line(line, ipython.user_ns)
        except _ArgumentError as e:
            raise UsageError(str(e)) from None

    teil.__doc__ = __doc__
    teil_einsum.__doc__ = __doc__
    ipython.register_magic_function(teil, magic_kind="cell", magic_name="teil")
    ipython.register_magic_function(teil_einsum, magic_kind="line", magic_name="teil_einsum")
