"""TeIL in notebooks: the rich displays (`teil._display`), the IPython magics
(`teil._magics`) and the example notebook `examples/notebooks/tour.ipynb`, executed with
nbclient and its outputs checked."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import teil

from conftest import MATMUL, ROOT

TVM = "alloc A : [4, 6]\nalloc B : [5, 6]\nalloc C : [4, 5]\nC = contr 1 3 (prod A B)\n"


def rejection(src: str) -> teil.Diagnostic:
    with pytest.raises(teil.ShapeError) as e:
        teil.Program(src)
    return e.value.diagnostics[0]


def test_a_diagnostic_displays_its_code_rule_report_help_and_explanation():
    d = rejection(TVM)
    html = d._repr_html_()
    assert 'class="error">error[E0305]</span>' in html
    assert "<code>T-Contr</code>" in html
    assert "contr 1 3 (prod A B)" in html  # the report's source line
    assert "<b>help:</b> did you mean `contr 2 4`?" in html
    assert teil.explain("E0305").splitlines()[0] in html
    md = d._repr_markdown_()
    assert md.startswith("**error[E0305]**: contraction of dimensions 1 and 3")
    assert "(rule `T-Contr`)" in md and "```text\n[E0305] Error" in md


def test_user_text_is_escaped_in_html():
    # A variable name cannot hold markup, but a file name can: it reaches the report.
    with pytest.raises(teil.ShapeError) as e:
        teil.Program(TVM, filename="<b>x</b>.teil")
    html = e.value.diagnostics[0]._repr_html_()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    p = teil.Program(MATMUL, filename="<i>m</i>")
    assert "<i>m</i>" not in p._repr_html_()


def test_a_program_displays_declarations_and_statement_shapes():
    p = teil.Program(MATMUL)
    assert p.statements == [("C = red+ 2 (diag 2 3 (prod A B))", (3, 5))]
    html = p._repr_html_()
    for row in [
        "<td><code>A</code></td><td><code>[3, 4]</code></td><td>input</td>",
        "<td><code>C</code></td><td><code>[3, 5]</code></td><td>output</td>",
        "<td><code>C = red+ 2 (diag 2 3 (prod A B))</code></td><td><code>[3, 5]</code></td>",
    ]:
        assert row in html
    assert "<th>element</th>" in html and "<td>output</td><td><code>f64</code></td>" in html
    md = p._repr_markdown_()
    assert "| `B` | `[4, 5]` | input | `f64` |" in md
    assert "| `C = red+ 2 (diag 2 3 (prod A B))` | `[3, 5]` |" in md


def test_a_trace_is_a_string_with_its_steps():
    p = teil.Program(MATMUL)
    a, b = np.ones((3, 4)), np.ones((4, 5))
    t = p.trace("C[1,2]", A=a, B=b)
    assert isinstance(t, str) and isinstance(t, teil.Trace)
    assert str(t).splitlines() == [s for s in str(t).splitlines()]
    assert len(t.steps) == len(str(t).splitlines())
    first = t.steps[0]
    assert first.rule == "[St-Stmt]"
    assert first.formula.startswith("C[1, 2] = ⟦red+ 2 (diag 2 3 (prod A B))⟧[1, 2]")
    start, end = first.span
    assert MATMUL.encode()[start:end] == b"red+ 2 (diag 2 3 (prod A B))"
    assert t.steps[-1].span is None and t.steps[-1].formula.strip() == "= 4"
    html = t._repr_html_()
    assert "<mark>red+ 2 (diag 2 3 (prod A B))</mark>" in html
    assert "<td>[S-Red]</td>" in html
    assert "| 1 | `C[1, 2] = ⟦red+ 2 (diag 2 3 (prod A B))⟧[1, 2]` | \\[St-Stmt\\] |" in (
        t._repr_markdown_()
    )


def test_a_kernel_displays_its_interface(tmp_path):
    k = teil.Program(MATMUL).compile(cache_dir=tmp_path)
    html = k._repr_html_()
    assert "<tr><th>inputs</th><td>A, B</td></tr>" in html
    assert "<tr><th>outputs</th><td>C</td></tr>" in html
    assert str(k.path) in html
    assert k._repr_markdown_().startswith("**TeIL kernel**: inputs A, B; outputs C;")


def test_explain_names_unknown_codes():
    assert teil.explain("e0305") == teil.explain("E0305")
    with pytest.raises(ValueError, match="no diagnostic code `E9999`"):
        teil.explain("E9999")


def test_displays_do_not_import_ipython():
    code = (
        "import sys, teil\n"
        f"p = teil.Program({MATMUL!r})\n"
        "p._repr_html_(); p.trace('C[1,1]')._repr_html_()\n"
        "assert 'IPython' not in sys.modules, 'IPython imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture
def ip():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "teil")
    shell.user_ns.clear()
    yield shell
    shell.user_ns.clear()


def test_the_cell_magic_runs_on_notebook_variables_and_binds_outputs(ip):
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, size=(3, 4)).astype(float)
    b = rng.integers(-3, 4, size=(4, 5)).astype(float)
    ip.user_ns.update(A=a, B=b)
    result = ip.run_cell_magic("teil", "--trace C[2,3]", MATMUL)
    assert np.array_equal(ip.user_ns["C"], a @ b)
    assert list(result.bound) == ["C"] and result.drawn == []
    assert "[S-Red]" in result._repr_html_() and result.trace.steps[0].rule == "[St-Stmt]"
    # Every backend computes the same values (small integers: exact).
    for line in ["--backend oracle", "--backend c --pad 4", "--backend c --fma"]:
        ip.user_ns.pop("C")
        ip.run_cell_magic("teil", line, MATMUL)
        assert np.array_equal(ip.user_ns["C"], a @ b), line


def test_only_the_inputs_a_program_reads_come_from_the_notebook(ip):
    # Without qualifiers every variable may be given, but only `A` and `B` are read before
    # they are assigned: a `C` of another shape left by an earlier cell is not passed in.
    src = "alloc A : [2, 3]\nalloc B : [3, 4]\nalloc C : [2, 4]\nC = red+ 2 (diag 2 3 (prod A B))\n"
    ip.user_ns.update(A=np.ones((2, 3)), B=np.ones((3, 4)), C=np.zeros((7, 7)))
    ip.run_cell_magic("teil", "", src)
    assert np.array_equal(ip.user_ns["C"], np.full((2, 4), 3.0))


def test_random_inputs_are_drawn_from_the_seed_and_bound(ip):
    ip.run_cell_magic("teil", "--random-inputs 5", MATMUL)
    ns = dict(ip.user_ns)
    assert ns["A"].shape == (3, 4) and ns["B"].shape == (4, 5)
    assert np.all((-1 <= ns["A"]) & (ns["A"] < 1))
    assert np.allclose(ns["C"], ns["A"] @ ns["B"], rtol=1e-14, atol=1e-14)
    ip.run_cell_magic("teil", "--random-inputs 5", MATMUL)
    assert np.array_equal(ip.user_ns["A"], ns["A"])
    ip.run_cell_magic("teil", "--random-inputs 6", MATMUL)
    assert not np.array_equal(ip.user_ns["A"], ns["A"])


def test_f32_cells_draw_and_bind_float32_arrays(ip):
    src = "input alloc x : f32[2, 3]\noutput alloc y : f32[3]\ny = red+ 1 x\n"
    result = ip.run_cell_magic("teil", "--random-inputs 3", src)
    x, y = ip.user_ns["x"], ip.user_ns["y"]
    assert x.dtype == y.dtype == np.float32
    assert np.all((-1 <= x) & (x < 1))
    np.testing.assert_array_equal(y, x[0] + x[1])  # one binary32 addition per cell
    html = result._repr_html_()
    assert "<td><code>x</code></td><td><code>[2, 3]</code></td><td>random input</td>" \
           "<td><code>float32</code></td>" in html
    assert "| `y` | `[3]` | output | `float32` |" in result._repr_markdown_()
    # Notebook variables given to an f32 input: float64 values must be binary32 (E0605).
    ip.user_ns.update(x=np.full((2, 3), 0.1))
    with pytest.raises(teil.RunError, match=r"^\[E0605\] input `x` is declared f32"):
        ip.run_cell_magic("teil", "", src)
    ip.user_ns.update(x=np.full((2, 3), 0.1, np.float32))
    ip.run_cell_magic("teil", "", src)
    assert ip.user_ns["y"].dtype == np.float32
    assert ip.run_line_magic("teil_einsum", "ij->j x").dtype == np.float32


def test_a_rejected_cell_raises_with_its_diagnostics(ip, capsys):
    with pytest.raises(teil.ShapeError) as e:
        ip.run_cell_magic("teil", "", TVM)
    assert [d.code for d in e.value.diagnostics] == ["E0305"]
    # IPython's report of it is one line; the diagnostics were displayed above it.
    assert e.value._render_traceback_() == ["ShapeError: TeIL rejected the cell (E0305)"]
    assert "E0305" in capsys.readouterr().out
    assert "C" not in ip.user_ns


def test_missing_inputs_and_bad_options_are_reported(ip):
    from IPython.core.error import UsageError

    with pytest.raises(NameError, match="inputs A, B are not variables of the notebook"):
        ip.run_cell_magic("teil", "", MATMUL)
    with pytest.raises(UsageError, match="--backend: invalid choice: 'gpu'"):
        ip.run_cell_magic("teil", "--backend gpu", MATMUL)
    with pytest.raises(UsageError, match="unrecognized arguments: --bogus"):
        ip.run_cell_magic("teil", "--bogus", MATMUL)
    ip.user_ns.update(A=np.ones((4, 3)), B=np.ones((4, 5)))
    with pytest.raises(teil.RunError, match=r"\[E0603\] input `A` has shape \[4, 3\]"):
        ip.run_cell_magic("teil", "", MATMUL)


def test_the_einsum_magic_returns_the_result(ip):
    x, y = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    ip.user_ns.update(X=x, Y=y)
    assert np.array_equal(ip.run_line_magic("teil_einsum", "ij,jk->ik X Y"), x @ y)
    assert np.array_equal(
        ip.run_line_magic("teil_einsum", "--backend oracle ij->ji X"), x.T
    )
    with pytest.raises(NameError, match="no notebook variable Z"):
        ip.run_line_magic("teil_einsum", "ij,jk->ik X Z")
    with pytest.raises(teil.ShapeError):
        ip.run_line_magic("teil_einsum", "ij,jk->ik X X")


def outputs(cell) -> dict[str, list[str]]:
    """A code cell's outputs by kind: display/result MIME data as text, errors by name."""
    out: dict[str, list[str]] = {}
    for o in cell.get("outputs", []):
        if o["output_type"] == "error":
            out.setdefault("error", []).append(o["ename"])
            out.setdefault("traceback", []).extend(o["traceback"])
        elif o["output_type"] == "stream":
            out.setdefault(o["name"], []).append(o["text"])
        else:
            for mime, data in o.get("data", {}).items():
                out.setdefault(mime, []).append(data if isinstance(data, str) else str(data))
    return out


def test_the_tour_notebook_runs_and_shows_what_it_says():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = ROOT / "examples" / "notebooks" / "tour.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    cells = {c.source.splitlines()[0]: outputs(c) for c in nb.cells if c.cell_type == "code"}

    tvm = next(o for src, o in cells.items() if src == "%%teil")
    assert tvm["error"] == ["ShapeError"]
    assert tvm["traceback"] == ["ShapeError: TeIL rejected the cell (E0305)"]
    assert any("error[E0305]" in h and "T-Contr" in h for h in tvm["text/html"])

    fig7 = cells["%%teil --trace C[1,2]"]
    html = "".join(fig7["text/html"])
    assert "<mark>red+ 2 (diag 2 3 (prod A B))</mark>" in html and "<td>[S-Red]</td>" in html
    assert "<td><code>C</code></td><td><code>[2, 4]</code></td><td>output</td>" in html
    assert cells["np.array_equal(C, A @ B)"]["text/plain"] == ["True"]

    cfd = cells["%%teil --random-inputs 7 --backend c --pad 4"]
    assert "<td><code>v</code></td><td><code>[3, 4, 4, 4]</code></td>" in cfd["text/html"][0]
    assert "<td><code>u</code></td><td><code>[3, 4, 4, 4]</code></td><td>random input</td>" in (
        cfd["text/html"][0]
    )
    assert cells['np.allclose(v, np.einsum("il,jm,kn,elmn->eijk", A, B, C, u), rtol=1e-13, '
                 'atol=1e-13)']["text/plain"] == ["True"]

    program = cells['teil.Program(teil.einsum_program("ij,jk->ik", (2, 3), (3, 4)))']
    assert "<td><code>out</code></td><td><code>[2, 4]</code></td><td>output</td>" in (
        program["text/html"][0]
    )
    guarded = cells["checked_einsum = teil.guarded(np.einsum)"]
    assert "error[E0404]" in guarded["text/html"][0]
    assert cells["X = np.arange(6.0).reshape(2, 3)"]["text/plain"] == ["True"]
    kernel = cells['kernel = teil.Program(teil.einsum_program("ij,jk->ik", (2, 3), (3, 4))).compile()']
    assert "<tr><th>outputs</th><td>out</td></tr>" in kernel["text/html"][0]
    assert cells['np.array_equal(kernel(in0=X, in1=Y)["out"], X @ Y)']["text/plain"] == ["True"]

    softmax = cells["%%teil --backend oracle"]
    assert ("<td><code>Y</code></td><td><code>[4, 8]</code></td><td>output</td>"
            "<td><code>float32</code></td>") in softmax["text/html"][0]
    shown = cells["Y.dtype, np.isnan(Y[1]).all(), Y[2, 0] == 0.0, np.allclose(Y[[0, 3]].sum(axis=1), 1.0, atol=1e-6)"]
    assert shown["text/plain"] == ["(dtype('float32'), np.True_, np.True_, True)"]
    gelu = "".join(cells['gelu = teil.Program(open("../kernels/gelu.teil").read())']["text/plain"])
    # GELU(-30) = -0 (erf saturates at -1), GELU(30) = 30, in float32.
    assert gelu.startswith("array([-0.0000000e+00,") and "3.0000000e+01" in gelu
    assert "dtype=float32" in gelu
    # Nothing else failed.
    assert [src for src, o in cells.items() if "error" in o] == ["%%teil"]
