"""Concurrency: ``load_pt2(..., num_runners=4)`` runners shared by 8 threads give the sequential
results (refusals included), and a capture in one thread never leaks traced values into eager
numpy running in another.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

from _rel_util import rel_settings

POS = np.linspace(-1.0, 1.0, 64 * 4).reshape(64, 4)


class Block(nn.Module):
    """x: (b, s, 4) -> (b, s, 4): a parameter, a buffer, a causal mask and a position slice."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(7)
        self.w = nn.Parameter(rng.standard_normal((4, 4)))
        self.register_buffer("shift", rng.standard_normal(4))

    def forward(self, x):
        s = x.shape[1]
        h = x @ self.w + self.shift + POS[:s]
        scores = h @ h.swapaxes(-1, -2)
        mask = np.tril(np.ones((s, s), dtype=bool))
        scores = np.where(mask, scores, -np.inf)
        scores = scores - scores.max(axis=-1, keepdims=True)
        w = np.exp(scores)
        return (w / w.sum(axis=-1, keepdims=True)) @ h


def inputs(b: int, s: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((b, s, 4))


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    ep = tpe.export(Block(), inputs(2, 5, 0), dynamic_shapes={"x": {0: Dim("b", max=8), 1: Dim("s", max=64)}})
    path = tmp_path_factory.mktemp("arch") / "block.pt2"
    tpe.package_pt2(path, exported_programs={"block": ep})
    return ep, path


def outcome(fn, x):
    try:
        return fn(x)
    except tpe.ConstraintsExceededError as err:
        return ("refused", str(err))


def same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("single", [False, True], ids=["parallel", "run_single_threaded"])
@rel_settings(scale=0.5)
@given(sizes=st.lists(st.tuples(st.integers(0, 10), st.integers(0, 70)), min_size=8, max_size=32))
def test_runners_from_8_threads_match_sequential(archive, single, sizes):
    ep, path = archive
    contents = tpe.load_pt2(path, num_runners=4, run_single_threaded=single)
    runner = contents.tp_runners["block"]
    xs = [inputs(b, s, seed) for seed, (b, s) in enumerate(sizes)]
    want = [outcome(ep.module(), x) for x in xs]
    start = threading.Barrier(8)

    def work(k):
        start.wait()
        # each thread walks all inputs from a different offset, several times
        got = {}
        for rep in range(3):
            for i in range(len(xs)):
                j = (i + k + rep) % len(xs)
                got.setdefault(j, []).append(outcome(runner, xs[j]))
        return got

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(8)))
    for got in results:
        for j, outs in got.items():
            for out in outs:
                assert same(out, want[j]), f"input {sizes[j]}: a concurrent call differs from the sequential one"


def test_capture_does_not_leak_into_other_threads():
    """While one thread exports, eager numpy in other threads sees plain arrays and right values."""
    def model(x):
        n = x.shape[0]
        return x + np.arange(n) + POS[:n, 0]

    def eager(n):
        x = np.ones(n)
        out = model(x)
        assert type(out) is np.ndarray and type(np.arange(n)) is np.ndarray
        return np.array_equal(out, 1.0 + np.arange(n) + POS[:n, 0])

    stop = threading.Event()
    bad: list = []

    def hammer():
        while not stop.is_set():
            for n in (1, 3, 17):
                try:
                    if not eager(n):
                        bad.append(n)
                except Exception as err:  # noqa: BLE001 - any failure here is the leak
                    bad.append(repr(err))

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for size in (4, 9, 13):
            ep = tpe.export(model, np.ones(size), dynamic_shapes={"x": {0: Dim("n", max=64)}})
            np.testing.assert_array_equal(ep.module()(np.ones(21)), model(np.ones(21)))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not bad, f"eager calls in other threads broke during capture: {bad[:5]}"


def test_concurrent_exports_agree():
    """Four threads exporting the same model at once get the same program code."""
    def one(seed):
        ep = tpe.export(Block(), inputs(2, 5, seed), dynamic_shapes={"x": {0: Dim("b", max=8), 1: Dim("s", max=64)}})
        return ep.code

    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(one, range(4)))
    assert len(set(codes)) == 1
