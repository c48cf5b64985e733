"""Result files are written atomically with the mode `open()` would give them (issue 52,
point 12): `mkstemp`'s 0600 would make a shared campaign directory or an exported model
unreadable to colleagues."""
from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys

import pytest

from teil import _files


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_write_atomically_gives_the_umasks_mode(tmp_path, mask, mode):
    path = tmp_path / "result.json"
    with umask(mask):
        assert _files.umask() == mask
        _files.write_atomically(str(path), b"first")
        assert stat.S_IMODE(path.stat().st_mode) == mode
        # Replacing keeps it whole and gives the new file the same mode.
        _files.write_atomically(str(path), b"second")
    assert path.read_bytes() == b"second"
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]  # no temporary left


def test_a_campaigns_record_and_an_exported_model_are_readable_by_others(tmp_path):
    from teil import campaign

    config = {"format": campaign.FORMAT, "programs": 10, "seed": 0, "shard_size": 10,
              "target": None, "fuzz_args": []}
    with umask(0o022):
        directory = campaign._Directory(str(tmp_path / "c"), config)
        directory.close()
    assert stat.S_IMODE((tmp_path / "c" / "campaign.json").stat().st_mode) == 0o644
    pytest.importorskip("onnx")
    program = tmp_path / "p.teil"
    program.write_text("input var A : [2]\noutput var B : [2]\nB = A + A\n")
    model = tmp_path / "p.onnx"
    r = subprocess.run([sys.executable, "-c", "import os, sys; os.umask(0o022); "
                        "from teil.onnx import main; sys.exit(main(sys.argv[1:]))",
                        str(program), "-o", str(model)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(model.stat().st_mode) == 0o644
