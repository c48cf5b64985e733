"""Concurrency: programs called from several threads; the GIL is released while evaluating."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import teil
from conftest import small_ints


def test_one_program_from_many_threads():
    p = teil.Program(
        "input alloc A : [6, 7]\ninput alloc B : [7, 5]\noutput alloc C : [6, 5]\n"
        "C = red+ 2 (diag 2 3 (prod A B))"
    )
    rng = np.random.default_rng(3)
    jobs = [(small_ints(rng, (6, 7)), small_ints(rng, (7, 5))) for _ in range(64)]

    def call(job):
        a, b = job
        return p.run(A=a, B=b, backend="oracle" if id(a) % 2 else "fast")["C"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(call, jobs))
    for (a, b), c in zip(jobs, results):
        np.testing.assert_array_equal(c, a @ b)


def matmul(n):
    return teil.Program(
        f"input alloc A : [{n}, {n}]\ninput alloc B : [{n}, {n}]\noutput alloc C : [{n}, {n}]\n"
        "C = red+ 2 (diag 2 3 (prod A B))"
    )


def test_the_gil_is_released_during_evaluation():
    # The oracle evaluates pointwise: a large enough matrix product takes a noticeable time
    # (n is doubled until one run takes 0.1 s). While it runs, another Python thread must keep
    # running; if the GIL were held, that thread could only run before the call started and
    # after it returned.
    n = 32
    while True:
        p, a = matmul(n), np.ones((n, n))
        t0 = time.perf_counter()
        # Beyond the default work budget (10**8 steps) at n = 512 on a slow machine.
        p.run(A=a, B=a, backend="oracle", max_work=10**10)
        if time.perf_counter() - t0 > 0.1 or n >= 512:
            break
        n *= 2
    stamps = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        time.sleep(0.01)
        t0 = time.perf_counter()
        out = p.run(A=a, B=a, backend="oracle", max_work=10**10)
        t1 = time.perf_counter()
    finally:
        stop.set()
        ticker.join()
        sys.setswitchinterval(old)
    np.testing.assert_array_equal(out["C"], np.full((n, n), float(n)))
    assert t1 - t0 > 0.05, "the evaluation was too quick to tell"
    middle = [s for s in stamps if t0 + 0.25 * (t1 - t0) < s < t0 + 0.75 * (t1 - t0)]
    assert middle, "no other thread ran during the evaluation"
