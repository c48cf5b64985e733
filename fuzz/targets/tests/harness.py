"""What the adapter campaigns share: where the repository, the adapters and the `teil` binary
are, and a check that a package the adapters need is installed (a missing one fails the test
rather than skipping it, so that CI cannot pass without running the campaigns)."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
TARGETS = ROOT / "fuzz" / "targets"


def require(module):
    try:
        __import__(module)
    except ImportError:
        pytest.fail(f"`{module}` is not installed in {sys.executable}; the adapters need it")


def teil_bin():
    """$TEIL_BIN, or target/debug/teil in the repository (`cargo build -p teil-cli`)."""
    path = pathlib.Path(os.environ.get("TEIL_BIN", ROOT / "target" / "debug" / "teil"))
    if not path.is_file():
        pytest.fail(f"no teil binary at {path}: run `cargo build -p teil-cli` or set TEIL_BIN")
    return str(path)


def planted_max_adapter(tmp_path):
    """A copy of the NumPy adapter whose `max` folds from 0 (a planted bug: the maximum of
    negative numbers comes out 0), written into `tmp_path`; its target command."""
    source = (TARGETS / "numpy_ops.py").read_text()
    bad = source.replace(
        'return FOLDS[step["kind"]].reduce(args[0], axis=step["axis"])',
        'return FOLDS[step["kind"]].reduce(args[0], axis=step["axis"], '
        'initial=0.0 if step["kind"] == "max" else None)',
    )
    assert bad != source, "the NumPy adapter's fold moved: update the planted bug"
    adapter = tmp_path / "bad_ops.py"
    adapter.write_text(bad)
    return f"{sys.executable} {adapter}"
