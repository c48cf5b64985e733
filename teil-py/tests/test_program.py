"""teil.Program: interface, run on every backend (against NumPy), fmt, core, trace, emit_c."""

from __future__ import annotations

import _thread
import shutil
import signal
import threading
import time

import numpy as np
import pytest

import teil
from conftest import MATMUL, small_ints

HAS_CC = shutil.which("cc") is not None


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)


def test_interface():
    p = teil.Program(
        "input alloc A : [2, 3]\ninout alloc B : [3]\noutput alloc C : [2]\nalloc T : [2]\n"
        "C = red+ 2 (diag 2 3 (prod A B))\nT = C\nB = B + B\nC = T"
    )
    assert p.inputs == ["A", "B"]
    assert p.required_inputs == ["A", "B"]
    assert p.outputs == ["B", "C"]
    assert p.variables == {
        "A": ((2, 3), "input"),
        "B": ((3,), "inout"),
        "C": ((2,), "output"),
        "T": ((2,), None),
    }
    assert list(p.variables) == ["A", "B", "C", "T"]


def test_interface_without_qualifiers():
    p = teil.Program("alloc A : [2]\nalloc B : [2]\nB = A\nA = B")
    assert p.inputs == ["A", "B"] and p.outputs == ["A", "B"]
    assert p.required_inputs == ["A"]
    assert p.variables["A"] == ((2,), None)
    # B is assigned before it is read: it may be given, but need not be.
    out = p.run(A=[1.0, 2.0])
    np.testing.assert_array_equal(out["B"], [1.0, 2.0])


def test_scalar_shape_is_the_empty_tuple():
    p = teil.Program("input alloc x : [3]\noutput alloc s : []\ns = red+ 1 x")
    assert p.variables["s"] == ((), "output")
    out = p.run(x=[1, 2, 3])
    assert out["s"].shape == () and out["s"].item() == 6.0


@pytest.mark.parametrize("backend", ["fast", "oracle"] + (["c"] if HAS_CC else []))
def test_matmul_against_numpy(backend, rng):
    a, b = small_ints(rng, (3, 4)), small_ints(rng, (4, 5))
    out = teil.Program(MATMUL).run({"A": a}, B=b, backend=backend)
    assert list(out) == ["C"]
    assert out["C"].dtype == np.float64 and out["C"].shape == (3, 5)
    np.testing.assert_array_equal(out["C"], a @ b)


@pytest.mark.skipif(not HAS_CC, reason="no C compiler named cc")
@pytest.mark.parametrize("pad", [1, 3, 8])
def test_c_backend_padding(pad, rng):
    src = """
    input  alloc A : [3, 4, 5]
    input  alloc v : [5]
    output alloc R : [4, 3]
    R = transp 1 2 (red+ 3 (diag 3 4 (prod A v)))
    """
    a, v = small_ints(rng, (3, 4, 5)), small_ints(rng, (5,))
    out = teil.Program(src).run(A=a, v=v, backend="c", pad=pad)
    np.testing.assert_array_equal(out["R"], np.einsum("ijk,k->ji", a, v))


def test_every_construct_against_numpy(rng):
    src = """
    input  alloc A : [2, 3]
    input  alloc B : [2, 3]
    input  alloc D : [3, 3]
    output alloc E : [2, 3]
    output alloc F : [3]
    output alloc G : [2, 3, 4]
    output alloc H : [3]
    output alloc P : [3]
    E = (A + B) * (A - B) + 2 * A
    F = red+ 1 A
    G = expa 3 4 A
    H = diag 1 2 D
    P = proj 1 2 A
    """
    a, b, d = small_ints(rng, (2, 3)), small_ints(rng, (2, 3)), small_ints(rng, (3, 3))
    for backend in ["fast", "oracle"]:
        out = teil.Program(src).run(A=a, B=b, D=d, backend=backend)
        np.testing.assert_array_equal(out["E"], (a + b) * (a - b) + 2 * a)
        np.testing.assert_array_equal(out["F"], a.sum(axis=0))
        np.testing.assert_array_equal(out["G"], np.repeat(a[:, :, None], 4, axis=2))
        np.testing.assert_array_equal(out["H"], np.diagonal(d))
        np.testing.assert_array_equal(out["P"], a[1])


def test_inout_and_undefined_outputs():
    p = teil.Program("inout alloc B : [2]\noutput alloc C : [2]\nB = B + B")
    out = p.run(B=np.array([1.0, -2.0]))
    np.testing.assert_array_equal(out["B"], [2.0, -4.0])
    assert np.isnan(out["C"]).all()  # never assigned: undefined cells are NaN


def test_inputs_are_converted(rng):
    a, b = small_ints(rng, (3, 4)), small_ints(rng, (4, 5))
    want = a @ b
    p = teil.Program(MATMUL)
    for conv_a, conv_b in [
        (a.astype(np.float32), b.astype(np.int64)),
        (a.astype(np.int8), b.astype(np.int16)),
        (a.tolist(), b.tolist()),
        (np.asfortranarray(a), b[:, ::-1].copy()[:, ::-1]),  # Fortran order, negative strides
    ]:
        np.testing.assert_array_equal(p.run(A=conv_a, B=conv_b)["C"], want)
    double = teil.Program("input alloc x : [2]\noutput alloc y : [2]\ny = x + x")
    np.testing.assert_array_equal(double.run(x=np.array([True, False]))["y"], [2.0, 0.0])
    np.testing.assert_array_equal(double.run(x=np.array([7, 65535], np.uint16))["y"], [14.0, 131070.0])


def test_non_numeric_input_is_a_type_error_naming_the_variable():
    p = teil.Program(MATMUL)
    for bad in [np.array([["a"] * 4] * 3), np.full((3, 4), object()), np.ones((3, 4), complex)]:
        with pytest.raises(TypeError, match="`A`"):
            p.run(A=bad, B=np.ones((4, 5)))


def test_run_errors_are_precise():
    p = teil.Program(MATMUL)
    with pytest.raises(teil.RunError) as info:
        p.run(A=np.ones((3, 4)))
    assert str(info.value) == "[E0604] missing input `B` of shape [4, 5]"
    assert info.value.diagnostics == []
    assert (info.value.code, info.value.codes) == ("E0604", ["E0604"])
    with pytest.raises(teil.RunError) as info:
        p.run(A=np.ones((4, 3)), B=np.ones((4, 5)))
    assert str(info.value) == "[E0603] input `A` has shape [4, 3], but the program declares [3, 4]"
    with pytest.raises(teil.RunError) as info:
        p.run(A=np.ones((3, 4)), B=np.ones((4, 5)), X=np.ones(1), C=np.ones((3, 5)))
    # Every problem at once, as `teil run` reports them.
    assert str(info.value).splitlines() == [
        "[E0602] `C` is not an input of the program (only `input` and `inout` variables take a value)",
        "[E0601] `X` is not a variable of the program",
    ]
    assert (info.value.code, info.value.codes) == ("E0602", ["E0602", "E0601"])
    with pytest.raises(TypeError, match="given twice"):
        p.run({"A": np.ones((3, 4))}, A=np.ones((3, 4)), B=np.ones((4, 5)))
    with pytest.raises(TypeError, match="mapping"):
        p.run([1, 2, 3])
    with pytest.raises(ValueError, match="backend"):
        p.run(A=np.ones((3, 4)), B=np.ones((4, 5)), backend="gpu")


@pytest.mark.skipif(not HAS_CC, reason="no C compiler named cc")
def test_c_backend_errors():
    p = teil.Program(MATMUL)
    args = dict(A=np.ones((3, 4)), B=np.ones((4, 5)), backend="c")
    with pytest.raises(teil.RunError, match="cannot run the C compiler `no-such-cc-teil`") as info:
        p.run(**args, cc="no-such-cc-teil")
    # An operational error without a code of its own.
    assert (info.value.code, info.value.codes) == (None, [])
    with pytest.raises(teil.RunError, match="the C compiler `cc` failed"):
        p.run(**args, cflags="-O2 -std=no-such-standard-teil")
    with pytest.raises(ValueError, match="padding multiple"):
        p.run(**args, pad=0)
    with pytest.raises(teil.RunError, match="shape"):
        p.run(A=np.ones((4, 3)), B=np.ones((4, 5)), backend="c")


def test_memory_and_work_budgets_refuse_before_evaluating():
    p = teil.Program(MATMUL)
    args = dict(A=np.ones((3, 4)), B=np.ones((4, 5)))
    for backend in ("fast", "oracle", "c"):
        with pytest.raises(teil.RunError, match=r"\[E0701\].*budget") as info:
            p.run(**args, backend=backend, max_memory=64)
        assert info.value.codes == ["E0701"]
    with pytest.raises(teil.RunError, match=r"\[E0702\]"):
        p.run(**args, backend="oracle", max_work=10)
    # Within the budgets the same run computes the product.
    assert p.run(**args, max_memory=1 << 20, max_work=10**6)["C"].tolist() == [[4.0] * 5] * 3
    with pytest.raises(teil.RunError, match=r"\[E0702\]"):
        p.trace("C[1,1]", args, max_work=1)


def test_the_reports_fig6_checks_and_its_run_is_refused_before_allocating(repo):
    src = (repo / "tests/papers/report_fig06_transposition.teil").read_text()
    assert [d.code for d in teil.check(src) if d.severity == "error"] == []
    p = teil.Program(src)
    assert p.variables["u"] == ((200, 300, 400, 500, 600), None)
    # A program of the same size that needs no input: its run is refused by the memory budget
    # (the store alone would be 58 TB), not attempted.
    big = teil.Program("output alloc v : [200, 300, 400, 500, 600]")
    with pytest.raises(teil.RunError, match=r"\[E0701\]"):
        big.run()


def test_ctrl_c_stops_a_long_oracle_run():
    # Four nested expansions: 4e13 oracle steps, hours of work without the interruption.
    e = "A"
    for _ in range(4):
        e = f"red+ 1 (expa 1 1000 ({e}))"
    p = teil.Program(f"input alloc A : [10]\noutput alloc B : [10]\nB = {e}")
    # `interrupt_main` does nothing where SIGINT is ignored (a job started in the background
    # by a non-interactive shell inherits SIG_IGN, and Python then installs no handler), and
    # the run would take hours: give the test Python's own handler, as an interactive session
    # has, and put back what was there.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, _thread.interrupt_main)
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            p.run(A=np.ones(10), backend="oracle", max_work=10**15)
        assert time.monotonic() - start < 10
    finally:
        signal.signal(signal.SIGINT, previous)
    # The process is usable afterwards, and the fast evaluator computes the result at once.
    assert p.run(A=np.ones(10))["B"].tolist() == [1e12] * 10


def test_fmt_matches_the_canonical_forms_of_the_corpus(repo):
    checked = 0
    for path in sorted((repo / "tests/check/pass").glob("*.teil")):
        snap = repo / f"teil/tests/snapshots/corpus__pass__{path.stem}.snap"
        if not snap.exists():
            continue
        canonical = snap.read_text().split("\ncanonical prefix form:\n", 1)[1]
        assert teil.Program(path.read_text()).fmt().rstrip() == canonical.rstrip(), path.name
        checked += 1
    assert checked >= 10


def test_fmt_infix_round_trips():
    p = teil.Program(MATMUL)
    infix = p.fmt("infix")
    assert "#" in infix and "var" in infix
    assert teil.Program(infix).fmt() == p.fmt()
    with pytest.raises(ValueError, match="syntax"):
        p.fmt("postfix")


def test_core_is_core_teil_and_computes_the_same(rng):
    p = teil.Program(MATMUL)
    core = p.core()
    # Core-TeIL reduces and takes diagonals over the first positions only (TeIL paper §4).
    assert "diag 1 2" in core and "red+ 1" in core and "diag 2 3" not in core
    a, b = small_ints(rng, (3, 4)), small_ints(rng, (4, 5))
    np.testing.assert_array_equal(teil.Program(core).run(A=a, B=b)["C"], a @ b)


def test_trace_without_and_with_values():
    p = teil.Program(MATMUL)
    text = p.trace("C[1,2]")
    lines = text.splitlines()
    assert lines[0].split() == ["C[1,", "2]", "=", "⟦red+", "2", "(diag", "2", "3", "(prod", "A", "B))⟧[1,", "2]", "[St-Stmt]"]
    assert lines[-2].split()[-1] == "[S-Var]" and "A[1, k] · B[k, 2]" in lines[-2]
    a = np.arange(12.0).reshape(3, 4)
    b = np.ones((4, 5))
    with_values = p.trace("C[1, 2]", A=a, B=b)
    last = with_values.splitlines()[-1].split()
    assert last == ["=", "%g" % (a[0] @ b[:, 1]), "[arithmetic]"]
    with pytest.raises(ValueError, match="cannot read the cell"):
        p.trace("C[1,")
    with pytest.raises(teil.RunError, match="1-based"):
        p.trace("C[0, 1]")
    with pytest.raises(teil.RunError, match="missing input `B`"):
        p.trace("C[1, 1]", A=a)


def test_trace_uses_the_written_syntax():
    p = teil.Program("var A : [2 3]\nvar B : [2 3]\nvar C : [2 2]\nC = (A # B) .[2 4]")
    assert "(A # B)" in p.trace("C[1, 2]")
    assert "(prod A B)" in p.trace("C[1, 2]", syntax="prefix")


def test_emit_c():
    c = teil.Program(MATMUL).emit_c(pad=4, name="matmul")
    assert "void matmul(double *restrict" in c
    assert c == teil.Program(MATMUL).emit_c(pad=4, name="matmul")  # deterministic
    with pytest.raises(ValueError, match="C name"):
        teil.Program(MATMUL).emit_c(name="not a name")
    with pytest.raises(ValueError, match="padding multiple"):
        teil.Program(MATMUL).emit_c(pad=0)


def test_from_file(repo, tmp_path):
    p = teil.Program.from_file(repo / "examples/matmul.teil")
    assert p.outputs == ["C", "D"]
    assert p.filename.endswith("matmul.teil")
    tin = teil.Program.from_file(repo / "tests/tin/fig2a.tin")
    assert tin.outputs
    bad = tmp_path / "bad.teil"
    bad.write_bytes(b"alloc A : [2]\nA = A \xff\n")
    with pytest.raises(teil.ParseError) as info:
        teil.Program.from_file(bad)
    assert info.value.diagnostics[0].code == "E0002"
    assert info.value.diagnostics[0].file == str(bad)
    with pytest.raises(FileNotFoundError):
        teil.Program.from_file(tmp_path / "missing.teil")


def test_a_trace_without_inputs_says_how_to_give_them_in_python():
    p = teil.Program("input var A : [2]\noutput var s : []\ns = red+ 1 (A * A)")
    last = p.trace("s").splitlines()[-1].strip()
    assert last == (
        '(no input values were given; pass the inputs as to run(), e.g. p.trace("C[1,2]", '
        'A=a, B=b), to see the values)'
    )
    assert "--in" not in p.trace("s")
    assert p.trace("s", A=[3, 4]).splitlines()[-1].split()[:2] == ["=", "25"]


def test_version_and_exports():
    assert teil.__version__.count(".") == 2 and all(x.isdigit() for x in teil.__version__.split("."))
    for name in teil.__all__:
        assert hasattr(teil, name), name
    assert "Kernel" in teil.__all__ or not hasattr(teil, "Kernel")
