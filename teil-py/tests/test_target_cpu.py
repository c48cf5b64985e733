"""The machine kernels are sized for (spec/padding.md, *Sizes from the machine*): the Python
package reads ``TEIL_TARGET_CPU`` (``host``, ``reference`` or a description file) like the CLI;
the machine changes which kernel form is printed, never a value, and a bad description is a
``ValueError`` naming the variable and the line."""

import numpy as np
import pytest

import teil

# Issue 43's product: the dot kernel's tile on a 1 MiB L2 (the reference), packed on 512 KiB.
PRODUCT = (
    "input var A : [257 263]\ninput var B : [263 269]\noutput var C : [257 269]\n"
    "C = (A # B) .[2 3]\n"
)


def packed(c):
    return "teil_kcb" in c


def test_the_variable_names_the_machine(tmp_path, monkeypatch):
    zen3 = tmp_path / "zen3.txt"
    zen3.write_text("# a Zen 3\nl1d = 32K\nl2 = 512K\nvector_bits = 256\n")
    p = teil.Program(PRODUCT)
    monkeypatch.setenv("TEIL_TARGET_CPU", "reference")
    assert not packed(p.emit_c())
    monkeypatch.setenv("TEIL_TARGET_CPU", str(zen3))
    assert packed(p.emit_c())


def test_results_do_not_depend_on_the_machine(tmp_path, monkeypatch):
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("l2 = 16K\n")
    p = teil.Program(
        "input var A : [40 33]\ninput var B : [33 37]\noutput var C : [40 37]\n"
        "C = (A # B) .[2 3]\n"
    )
    rng = np.random.default_rng(43)
    a, b = rng.standard_normal((40, 33)), rng.standard_normal((33, 37))
    oracle = p.run(A=a, B=b, backend="oracle")["C"]
    results = {}
    for machine in ["reference", str(tiny)]:
        monkeypatch.setenv("TEIL_TARGET_CPU", machine)
        results[machine] = (
            packed(p.emit_c(reassociate=False)),
            p.run(A=a, B=b, backend="c", reassociate=False)["C"],
            p.compile(reassociate=False, cache_dir=tmp_path / "cache")(A=a, B=b)["C"],
        )
    assert results[str(tiny)][0] and not results["reference"][0]
    for _, run, called in results.values():
        assert run.tobytes() == oracle.tobytes()
        assert called.tobytes() == oracle.tobytes()


def test_a_bad_description_is_a_value_error(tmp_path, monkeypatch):
    bad = tmp_path / "bad.txt"
    bad.write_text("l1d = 32K\nl2 = lots\n")
    monkeypatch.setenv("TEIL_TARGET_CPU", str(bad))
    p = teil.Program(PRODUCT)
    for call in [
        lambda: p.emit_c(),
        lambda: p.compile(cache_dir=tmp_path / "cache"),
        lambda: p.run(A=np.zeros((257, 263)), B=np.zeros((263, 269)), backend="c"),
    ]:
        with pytest.raises(ValueError, match=r"TEIL_TARGET_CPU: `.*bad.txt`, line 2: `l2` must be a size"):
            call()
