"""Shared helpers of the pytest suite of the `teil` package."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# What test_peer_parity.py found, entry point by entry point, for the end of the run.
PARITY_REPORT = pytest.StashKey[dict]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    report = config.stash.get(PARITY_REPORT, None)
    if report:
        terminalreporter.section("parity with the peers' einsum tests")
        for what, line in report.items():
            terminalreporter.write_line(f"{what}: {line}")


@pytest.fixture
def repo() -> pathlib.Path:
    """The repository root (the corpus under tests/, the snapshots under teil/tests/)."""
    return ROOT


MATMUL = """
input  alloc A : [3, 4]
input  alloc B : [4, 5]
output alloc C : [3, 5]
C = red+ 2 (diag 2 3 (prod A B))
"""


def small_ints(rng, shape):
    """Small integers as float64: every sum and product below is exact in binary64."""
    return rng.integers(-3, 4, size=shape).astype("float64")
