"""Exporting from several threads at once: each export gets the verdict it gets alone.

z3's default context is not thread-safe and capture patches numpy for the process, so
the entry points that trace or decide run one at a time (``capture.exclusive``); this
used to fail at random with z3 "context mismatch" errors, or crash the process.
"""
import threading

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

TABLE = np.ones((40, 2), np.float32)


def too_short(x):
    return x + TABLE[: x.shape[0]]       # needs n <= 40


def by_threes(x):
    return x.reshape(-1, 3, 2).sum(1)    # needs n % 3 == 0


def fits(x):
    return x * 2 + TABLE[: x.shape[0]]   # exports with n <= 40 declared


def _verdict(fn, wide=100):
    spec = {"x": {0: Dim("n", max=40 if fn is fits else wide)}}
    try:
        ep = tpe.export(fn, np.ones((12, 2), np.float32), dynamic_shapes=spec)
    except tpe.ConstraintViolationError as err:
        return "violation", str(err).split("Suggested fixes:")[-1].strip()
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    np.testing.assert_array_equal(ep.module()(x), fn(x))
    return "exported", str(ep.range_constraints)


def test_exports_from_threads_get_their_serial_verdicts():
    # each job its own range, so no cached decision spares the solver its work
    jobs = [(fn, 100 + 3 * i + k) for i in range(12) for k, fn in enumerate((too_short, by_threes, fits))]
    got: dict = {}

    def work(i):
        try:
            got[i] = _verdict(*jobs[i])
        except Exception as err:  # anything else is what this test is about
            got[i] = ("error", f"{type(err).__name__}: {err}")

    for start in range(0, len(jobs), 9):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(start, start + 9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    alone = {i: _verdict(*job) for i, job in enumerate(jobs)}
    assert got == alone
    assert alone[0] == ("violation", "n = Dim('n', max=40)")
    assert alone[2][0] == "exported"


def test_programs_run_concurrently_while_another_thread_exports():
    ep = tpe.export(fits, np.ones((12, 2), np.float32), dynamic_shapes={"x": {0: Dim("n", max=40)}})
    module = ep.module()
    results: dict = {}

    def run(i):
        x = np.full((i + 1, 2), float(i), np.float32)
        results[i] = np.array_equal(module(x), fits(x))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    exporter = threading.Thread(target=_verdict, args=(by_threes,))
    exporter.start()
    for t in threads:
        t.start()
    for t in threads + [exporter]:
        t.join()
    assert results == {i: True for i in range(8)}


def test_entry_points_keep_their_signatures():
    import inspect

    params = inspect.signature(tpe.export).parameters
    assert list(params)[:2] == ["model", "args"] and "dynamic_shapes" in params
    assert "dynamic_shapes" in inspect.signature(tpe.draft_export).parameters
    with pytest.raises(TypeError):
        tpe.export()  # still the function's own argument error
