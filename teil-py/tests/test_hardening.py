"""Issue 24, "Hardening the new surfaces": the cache, special files, sizes, scalars, argument
ranges, Ctrl-C and fork, each checked with values or errors."""

from __future__ import annotations

import _thread
import os
import random
import shutil
import signal
import stat
import sys
import threading
import time

import numpy as np
import pytest

import teil
from conftest import MATMUL

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler named cc")

DOUBLED = MATMUL + "C = C + C\n"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TEIL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


# Point 1: the kernel cache loads only what this user wrote.


@needs_cc
def test_a_planted_object_is_rebuilt_not_loaded(cache):
    a, b = np.arange(12.0).reshape(3, 4), np.ones((4, 5))
    k = teil.Program(MATMUL).compile()
    other = teil.Program(DOUBLED).compile()
    path = k.path
    del k
    # Another kernel's object and record at MATMUL's name: wrong values if it were loaded.
    shutil.copyfile(other.path, path)
    shutil.copyfile(other.path.with_suffix(".mac"), path.with_suffix(".mac"))
    k = teil.Program(MATMUL).compile()
    np.testing.assert_array_equal(k(A=a, B=b)["C"], a @ b)
    # A symbolic link at its name is replaced, not followed.
    del k
    path.unlink()
    path.symlink_to(other.path)
    k = teil.Program(MATMUL).compile()
    np.testing.assert_array_equal(k(A=a, B=b)["C"], a @ b)
    assert not path.is_symlink()


@needs_cc
def test_a_cache_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(teil.RunError, match="lets the group or others write it"):
        teil.Program(MATMUL).compile(cache_dir=shared)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(teil.RunError, match="symbolic link"):
        teil.Program(MATMUL).compile(cache_dir=link)
    fresh = tmp_path / "fresh"
    k = teil.Program(MATMUL).compile(cache_dir=fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    assert k(A=np.ones((3, 4)), B=np.ones((4, 5)))["C"].tolist() == [[4.0] * 5] * 3


# Point 19: `cache_dir=""` would be the current directory.


def test_an_empty_cache_dir_is_a_value_error():
    with pytest.raises(ValueError, match="must not be empty"):
        teil.Program(MATMUL).compile(cache_dir="")


# Point 7: sanitizers only in a separate process.


def test_sanitizer_flags_are_refused_in_process(cache):
    with pytest.raises(ValueError, match="-fsanitize=address") as info:
        teil.Program(MATMUL).compile(cflags="-O1 -fsanitize=address")
    assert 'backend="c"' in str(info.value)
    assert "separate process" in str(info.value)


# Point 6: an OpenMP kernel in a forked child.


@needs_cc
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_an_openmp_kernel_refuses_to_run_after_fork(cache):
    k = teil.Program(MATMUL).compile(openmp=True)
    a, b = np.ones((3, 4)), np.ones((4, 5))
    assert k(A=a, B=b)["C"].tolist() == [[4.0] * 5] * 3
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns to pytest
        code = 1
        try:
            signal.alarm(60)  # a hang ends the child instead of the suite
            k(A=a, B=b)
            code = 2
        except teil.RunError as e:
            os.write(write, str(e).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    message = os.read(read, 4096).decode()
    os.close(read)
    assert os.WIFEXITED(status), status
    assert os.WEXITSTATUS(status) == 0, (status, message)
    assert "forked" in message and "spawn" in message
    # The parent still runs it.
    assert k(A=a, B=b)["C"].tolist() == [[4.0] * 5] * 3


# Point 5: special files and missing files.


def test_from_file_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "prog.teil"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(ValueError, match="FIFO"):
        teil.Program.from_file(fifo)
    assert time.monotonic() - start < 5


def test_from_file_refuses_devices_and_directories(tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        teil.Program.from_file("/dev/zero")
    with pytest.raises(ValueError, match="directory"):
        teil.Program.from_file(tmp_path)


def test_from_file_missing_is_file_not_found_with_the_path():
    with pytest.raises(FileNotFoundError, match="/nope.teil") as info:
        teil.Program.from_file("/nope.teil")
    assert info.value.filename == "/nope.teil"


# Point 2: diagnostics in linear time.


def test_check_of_100_kb_of_garbage_is_fast():
    rng = random.Random(24)
    text = "".join(rng.choice("@$?!~`^&|\\;#{}\n abc123") for _ in range(100_000))
    start = time.monotonic()
    diags = teil.check(text)
    took = time.monotonic() - start
    assert len(diags) > 1000
    assert all(d.severity == "error" for d in diags)
    # The quadratic conversion took 40 s here; linear, well under a second.
    assert took < 5, took
    # Positions keep their meaning: the last one's line is that of its offset.
    last = diags[-1]
    assert last.line == text[: last.start].count("\n") + 1
    with pytest.raises(teil.ParseError) as info:
        teil.Program(text)
    assert len(info.value.diagnostics) == len(diags)


# Point 13: scalars stay 0-d.


@pytest.mark.parametrize("backend", ["fast", "oracle"])
def test_scalar_inputs_to_run(backend):
    p = teil.Program("input alloc x : []\noutput alloc y : []\ny = x * x")
    assert p.run(x=2.0, backend=backend)["y"] == 4.0
    assert p.run(x=np.float64(3), backend=backend)["y"] == 9.0
    assert p.run(x=np.array(5), backend=backend)["y"] == 25.0
    with pytest.raises(teil.RunError, match="shape"):
        p.run(x=[2.0], backend=backend)


@needs_cc
def test_scalar_inputs_to_a_kernel(cache):
    k = teil.Program("input alloc x : []\noutput alloc y : []\ny = x * x").compile()
    assert k(x=2.0)["y"] == 4.0
    assert k(x=True)["y"] == 1.0


def test_einsum_of_scalars_is_numpys():
    assert teil.einsum(",->", 3.0, 2.0) == np.einsum(",->", 3.0, 2.0) == 6.0
    assert teil.einsum("i,->i", [1.0, 2.0], 3).tolist() == [3.0, 6.0]


# Point 16: a memory budget for kernel calls.


@needs_cc
def test_kernel_calls_have_the_memory_budget_of_run(cache):
    p = teil.Program(MATMUL)
    k = p.compile()
    a, b = np.ones((3, 4)), np.ones((4, 5))
    with pytest.raises(teil.RunError, match=r"\[E0701\]"):
        k(A=a, B=b, max_memory=100)
    with pytest.raises(teil.RunError, match=r"\[E0701\]"):
        p.run(A=a, B=b, max_memory=100)
    assert k(A=a, B=b, max_memory=10**6)["C"].tolist() == [[4.0] * 5] * 3
    # A variable named max_memory goes through the mapping.
    q = teil.Program("input alloc max_memory : [2]\noutput alloc y : [2]\ny = max_memory")
    assert q.compile()({"max_memory": [1, 2]})["y"].tolist() == [1.0, 2.0]


# Point 15: integers out of range are ValueErrors naming the argument.


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda p: p.run(A=np.ones((3, 4)), B=np.ones((4, 5)), max_memory=-1), "max_memory"),
        (lambda p: p.run(A=np.ones((3, 4)), B=np.ones((4, 5)), max_memory=2**64), "max_memory"),
        (lambda p: p.run(A=np.ones((3, 4)), B=np.ones((4, 5)), max_work=-5), "max_work"),
        (lambda p: p.run(A=np.ones((3, 4)), B=np.ones((4, 5)), pad=-1), "pad"),
        (lambda p: p.trace("C[1,1]", max_work=-1), "max_work"),
        (lambda p: p.emit_c(pad=2**70), "pad"),
        (lambda p: p.compile(pad=-1), "pad"),
    ],
)
def test_integers_out_of_range_are_value_errors(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b.* must be an integer from \d+ to 2\*\*64 - 1"):
        call(teil.Program(MATMUL))


def test_non_integers_are_type_errors():
    with pytest.raises(TypeError, match="integer"):
        teil.Program(MATMUL).emit_c(pad=1.5)


@needs_cc
def test_kernel_max_memory_out_of_range(cache):
    k = teil.Program(MATMUL).compile()
    with pytest.raises(ValueError, match="max_memory must be an integer"):
        k(A=np.ones((3, 4)), B=np.ones((4, 5)), max_memory=-1)


def test_einsum_shape_extent_out_of_range():
    with pytest.raises(ValueError, match="out of range") as info:
        teil.einsum_shape("i->i", (2**200,))
    assert "digits" in str(info.value)
    with pytest.raises(ValueError, match="out of range"):
        teil.einsum_shape("i->i", (-1,))
    with pytest.raises(TypeError, match="shape 0 must be a tuple of integers"):
        teil.einsum_shape("i->i", (1.5,))


# Point 14: Ctrl-C during a compilation.


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as the compiler")
def test_ctrl_c_stops_a_slow_compiler(tmp_path, cache):
    slow = tmp_path / "slow-cc"
    slow.write_text("#!/bin/sh\nexec sleep 60\n")
    slow.chmod(0o755)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, _thread.interrupt_main)
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            teil.Program(MATMUL).compile(cc=str(slow))
        assert time.monotonic() - start < 20
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
