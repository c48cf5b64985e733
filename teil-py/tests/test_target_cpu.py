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


def test_compiling_for_an_unmeasured_host_warns_once_per_cpu(tmp_path):
    # Issue 53: `compile` on a CPU with neither a profile shipped for its model nor the user's
    # own warns once (a UserWarning naming `teil tune`), remembered per CPU in the cache
    # directory; on a measured CPU, and for another target, never. Each run is a new process
    # with fresh configuration and cache directories, as a new user's.
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    teil_bin = pathlib.Path(os.environ.get("TEIL_BIN", root / "target" / "debug" / "teil"))
    if not teil_bin.exists():
        pytest.fail(f"no teil binary at {teil_bin}: run `cargo build -p teil-cli` or set TEIL_BIN")
    env = dict(os.environ)
    env.pop("TEIL_TARGET_CPU", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    described = subprocess.run(
        [str(teil_bin), "tune", "--describe"], env=env, capture_output=True, text=True, check=True
    ).stdout
    measured = "# small_product: from the profile shipped with teil" in described
    assert measured or "# small_product: from the formula" in described, described
    script = (
        "import warnings, teil\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    teil.Program('input var A : [4 4]\\noutput var B : [4 4]\\nB = A + A\\n')"
        ".compile(cache_dir=%r)\n"
        "print(sum('teil tune' in str(x.message) and x.category is UserWarning for x in w))\n"
    ) % str(tmp_path / "kernels")

    def warnings_of(target=None):
        e = dict(env)
        if target:
            e["TEIL_TARGET_CPU"] = target
        out = subprocess.run(
            [sys.executable, "-c", script], env=e, capture_output=True, text=True, check=True
        )
        return int(out.stdout.strip())

    assert warnings_of("reference") == 0
    assert warnings_of() == (0 if measured else 1)
    assert warnings_of() == 0
