# Type stubs of the `teil` package (the native module teil._native, teil.guarded and
# teil.guard_module).
from contextlib import AbstractContextManager
from os import PathLike
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, NamedTuple, Sequence, TypeVar

import numpy
import numpy.typing

_Syntax = Literal["prefix", "infix"]
_Backend = Literal["fast", "oracle", "c"]
#: A variable's element type as a NumPy dtype name: TeIL's `f64` (and bare `[...]`) and `f32`.
_DType = Literal["float64", "float32"]
_ArrayLike = numpy.typing.ArrayLike
_F = TypeVar("_F", bound=Callable[..., Any])
_M = TypeVar("_M")

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
    "Kernel",
    "__version__",
]

#: The package's version (the toolchain's, from Cargo.toml).
__version__: str

class TeilError(ValueError):
    """A program, equation or run was rejected; `str(e)` is every rendered report."""

    diagnostics: list[Diagnostic]

class ParseError(TeilError):
    """A syntax error (E00xx)."""

class ShapeError(TeilError):
    """Any other rejection (E01xx to E05xx)."""

class RunError(TeilError):
    """A problem at run time (inputs, allocation, C compiler).

    `str(e)` is the message as `teil run` prints it, each coded problem's code in front
    (`[E0603] ...`); `codes` lists those codes in order, `code` is the first or `None`.
    """

    codes: list[str]
    code: str | None

class Diagnostic:
    """One diagnostic; `str(d)` is the report of `teil check --color never`."""

    @property
    def code(self) -> str: ...
    @property
    def severity(self) -> Literal["error", "warning"]: ...
    @property
    def message(self) -> str: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def file(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def labels(self) -> list[tuple[int, int, str]]: ...
    @property
    def notes(self) -> list[str]: ...
    @property
    def help(self) -> str | None: ...
    def to_dict(self) -> dict[str, Any]:
        """The object `teil check --format json` prints."""

def check(source: str, *, filename: str = "<string>") -> list[Diagnostic]:
    """Every diagnostic of `source`; never raises for an ill-formed program."""

def explain(code: str) -> str:
    """The long explanation of a diagnostic code, as `teil explain CODE` prints it."""

class TraceStep(NamedTuple):
    """One line of a trace: formula, equation, and the source span it evaluates."""

    formula: str
    rule: str
    span: tuple[int, int] | None

class Trace(str):
    """A trace's text (a `str`) with its steps and the program text their spans point into."""

    steps: list[TraceStep]
    source: str

def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext teil`: registers the `%%teil` and `%teil_einsum` magics."""

class Program:
    """A checked TeIL program; raises `ParseError` or `ShapeError` when rejected."""

    def __init__(self, source: str, *, filename: str = "<string>") -> None: ...
    @staticmethod
    def from_file(path: str | PathLike[str]) -> Program: ...
    @property
    def source(self) -> str: ...
    @property
    def filename(self) -> str: ...
    @property
    def warnings(self) -> list[Diagnostic]: ...
    @property
    def variables(self) -> dict[str, tuple[tuple[int, ...], Literal["input", "output", "inout"] | None]]: ...
    @property
    def dtypes(self) -> dict[str, _DType]:
        """Every variable's element type as a NumPy dtype name, in declaration order."""
    @property
    def inputs(self) -> list[str]: ...
    @property
    def required_inputs(self) -> list[str]: ...
    @property
    def outputs(self) -> list[str]: ...
    @property
    def statements(self) -> list[tuple[str, tuple[int, ...]]]: ...
    def run(
        self,
        inputs: Mapping[str, _ArrayLike] | None = None,
        *,
        backend: _Backend = "fast",
        pad: int = 1,
        cc: str = "cc",
        cflags: str | None = None,
        openmp: bool = False,
        fma: bool = False,
        reassociate: bool = True,
        max_memory: int | None = None,
        max_work: int | None = None,
        **named_inputs: _ArrayLike,
    ) -> dict[str, numpy.ndarray]:
        """Runs the program; each output is a float64 array, or float32 for an `f32` variable.

        Inputs are converted to float64 (float32 arrays widen exactly). Nothing rounds a number
        given for an `f32` input: a float32 array is read as it is, any other array-like is
        accepted when each of its values is a binary32 number, otherwise `RunError` E0605."""
    def ops(self) -> dict[str, Any]: ...
    def fmt(self, syntax: _Syntax = "prefix") -> str: ...
    def core(self, syntax: _Syntax = "prefix") -> str: ...
    def trace(
        self,
        cell: str,
        inputs: Mapping[str, _ArrayLike] | None = None,
        *,
        syntax: _Syntax | None = None,
        **named_inputs: _ArrayLike,
    ) -> Trace: ...
    def emit_c(
        self,
        *,
        pad: int = 1,
        name: str = "teil_kernel",
        openmp: bool = False,
        fma: bool = False,
        reassociate: bool = True,
    ) -> str: ...
    def compile(
        self,
        *,
        pad: int = 1,
        cflags: str | None = None,
        cc: str = "cc",
        openmp: bool = False,
        fma: bool = False,
        reassociate: bool = True,
        cache_dir: str | PathLike[str] | None = None,
    ) -> Kernel: ...

class Kernel:
    """A program compiled into a cached shared object, called in-process."""

    @property
    def inputs(self) -> list[str]: ...
    @property
    def outputs(self) -> list[str]: ...
    @property
    def path(self) -> Path: ...
    def __call__(
        self,
        inputs: Mapping[str, _ArrayLike] | None = None,
        *,
        out: Mapping[str, numpy.ndarray] | None = None,
        max_memory: int | None = None,
        **named_inputs: _ArrayLike,
    ) -> dict[str, numpy.ndarray]:
        """Runs the native code; each output is a float64 array, or float32 for an `f32` variable
        (inputs as for `Program.run`, E0605 included). `out` maps outputs to arrays of their
        dtypes that receive them."""

def einsum_shape(equation: str, *shapes: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """The output shape of `numpy.einsum(equation, ...)`, or `ShapeError`."""

def einsum(equation: str, *operands: _ArrayLike, backend: _Backend = "fast") -> numpy.ndarray:
    """`numpy.einsum(equation, *operands)` computed by TeIL: in float32 (returning float32) when
    the operands' dtypes promote to float32 (`numpy.result_type`), else in float64."""

def einsum_program(
    equation: str,
    *shapes: tuple[int, ...] | list[int],
    syntax: _Syntax = "prefix",
    dtype: numpy.typing.DTypeLike = None,
) -> str:
    """The TeIL program an einsum equation lowers to; `dtype` float64 (default) or float32 is
    the element type of every variable."""

def guarded(fn: _F) -> _F:
    """`fn` with every call's shapes checked by TeIL first.

    `fn` is an einsum (`numpy.einsum`, `torch.einsum`, `jax.numpy.einsum`,
    `opt_einsum.contract`, read by `fn.__module__` as that library reads its calls) or one of
    `tensordot`, `matmul`, `inner`, `outer`, `trace`, `transpose`, `moveaxis` (by
    `fn.__name__`), translated to an einsum.

    The wrapped result never changes: for any arguments `fn` accepts, the guarded call returns
    exactly what `fn` returns, and raises `ShapeError` only where `fn` itself would fail (such
    as `transpose` with axes that are no permutation: E0403, E0405, E0406). `fn` gets the
    caller's very objects; an iterator or an iterable without a length among the subscripts or
    axes is never read, and the call goes on unchecked."""

def guard_module(
    module: _M, names: Sequence[str] | None = None
) -> AbstractContextManager[_M]:
    """Replaces `module`'s einsum-like functions by `guarded` ones inside a `with` block,
    restoring them on exit; the patch is seen by every thread while the block runs."""
