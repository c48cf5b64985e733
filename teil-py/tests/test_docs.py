"""Every example in the package's docstrings runs and prints what it shows."""

from __future__ import annotations

import doctest

import pytest

import teil
import teil.onnx

OBJECTS = [
    teil,
    teil.check,
    teil.explain,
    teil.Trace,
    teil.Diagnostic,
    teil.Program,
    teil.Program.run,
    teil.Program.fmt,
    teil.Program.core,
    teil.Program.ops,
    teil.Program.trace,
    teil.Program.emit_c,
    teil.Program.from_file,
    teil.Program.statements,
    teil.Program.dtypes,
    teil.einsum_shape,
    teil.einsum,
    teil.einsum_program,
    teil.guarded,
    teil.onnx.export,
]
if hasattr(teil, "Kernel"):  # built with the `kernel` feature
    OBJECTS += [teil.Kernel, teil.Program.compile]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: getattr(o, "__qualname__", o.__name__))
def test_docstring_examples(obj):
    finder = doctest.DocTestFinder(recurse=False)
    tests = [t for t in finder.find(obj, globs={"teil": teil}) if t.examples]
    assert tests, "every documented function shows an example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0
