"""Deferred example values (capture/lazy.py, Tracer.force) and the small-example safety net.

Capture records ops without running numpy on the example when the op's dtype can be had
exactly from a proxy; values are computed when something reads them.  The exported
programs must be the same as eager numpy at sizes other than the example, and the
eager net (program/eager_check.py) runs on a small example cut from the user's.
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.capture import tracer as tracer_mod
from tensorplay_export.errors import CaptureError, EagerMismatchError
from tensorplay_export.program.eager_check import check_against_eager, small_example


class Wide(nn.Module):
    """Each layer makes a (n, 4096) float64 activation: 32 MB per value at n = 1024."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(0)
        self.up = nn.Linear(8, 4096, rng=rng)
        self.down = nn.Linear(4096, 8, rng=rng)

    def forward(self, x):
        h = self.up(x)
        h = np.tanh(h) * 0.5 + h
        return self.down(h).sum(axis=-1)


def _count_big_impl_calls(monkeypatch, limit: int) -> list:
    """Record the output size of every op impl run by capture on an array above ``limit`` items."""
    seen: list = []
    real = tracer_mod.Tracer._compute

    def compute(self, t):
        real(self, t)
        if np.size(t._value) > limit:
            seen.append((t._thunk, np.size(t._value)))
    monkeypatch.setattr(tracer_mod.Tracer, "_compute", compute)
    return seen


def test_a_large_example_exports_without_a_full_forward(monkeypatch):
    model = Wide().eval()
    x = np.random.default_rng(1).standard_normal((1024, 8))  # float64: 32 MB per (1024, 4096) value
    forced = _count_big_impl_calls(monkeypatch, 1024 * 8)
    tracemalloc.start()
    try:
        ep = tpe.export(model, x, dynamic_shapes={"x": {0: Dim("n", min=2, max=4096)}})
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert forced == []  # no deferred value of the full example was computed
    assert peak < 16 * 2 ** 20, f"export allocated {peak / 2 ** 20:.1f} MB at its peak"  # one value is 32 MB
    for n in (3, 17, 1024):
        xs = np.random.default_rng(n).standard_normal((n, 8))
        out = ep.module()(xs)
        ref = model(xs)
        assert out.dtype == ref.dtype == np.float64 and out.shape == (n,)
        np.testing.assert_allclose(out, ref, rtol=1e-12)


def type_checked(x):
    return x * 2 if type(x.shape[0]) is int else x * 3


def test_the_small_example_net_still_catches_a_type_check_of_a_size():
    x = np.arange(2000, dtype=np.float32).reshape(1000, 2)
    with pytest.raises(EagerMismatchError) as info:
        tpe.export(type_checked, x, dynamic_shapes={"x": {0: Dim("n", max=4096)}})
    assert "float32 array of shape (2, 2)" in str(info.value)  # found on x[:2]


def test_small_example_sizes_follow_ranges_and_relations():
    def model(x, y):
        return x[:, : y.shape[0] * 2] + 1.0

    x = np.ones((40, 30), np.float32)
    y = np.ones((15,), np.float32)
    m = Dim("m", min=5, max=20)
    ep = tpe.export(model, x, y, dynamic_shapes={"x": {0: Dim("b", max=64), 1: 2 * m}, "y": {0: m}})
    (a, _k, sizes), reason = small_example(ep, (x, y), {})
    assert reason == "" and sizes == {"b": 2, "m": 5}
    assert a[0].shape == (2, 10) and a[1].shape == (5,)
    assert check_against_eager(ep, model, (x, y), {}).sizes == {"b": 2, "m": 5}


def test_the_net_runs_on_the_users_example_when_no_smaller_sizes_exist(caplog):
    def model(x):
        return x * 2.0

    x = np.ones((2, 3), np.float32)
    ep = tpe.export(model, x, dynamic_shapes={"x": {0: Dim("n", max=8)}})
    with caplog.at_level("INFO", logger="tensorplay_export.program.eager_check"):
        report = check_against_eager(ep, model, (x,), {})
    assert report.sizes is None and "already the smallest" in report.reason
    assert "user's example" in caplog.text
    static = tpe.export(model, x)
    assert check_against_eager(static, model, (x,), {}).sizes is None


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
def test_deferred_dtypes_are_numpys(dtype):
    """Python scalars stay weak, 0-d arrays strong, mixed widths promote: as eager numpy."""
    w = np.ones((3, 5), np.float64)

    def model(x):
        a = x * 2.5 + 1           # weak Python scalars keep x's dtype
        b = a @ w.astype(np.float32)[: x.shape[1]]  # float32 weight promotes narrower floats
        c = np.exp(a).sum(axis=0, keepdims=True) + np.float16(1)
        return a, b.reshape(-1), c.T

    x = (np.arange(12).reshape(4, 3) / 7).astype(dtype)
    ep = tpe.export(model, x, dynamic_shapes={"x": {0: Dim("n", max=64)}})
    for n in (4, 9):
        xs = (np.arange(n * 3).reshape(n, 3) / 50).astype(dtype)
        for got, ref in zip(ep.module()(xs), model(xs)):
            assert got.dtype == ref.dtype and got.shape == ref.shape
            np.testing.assert_allclose(got, ref, rtol=1e-3)


def test_a_write_computes_deferred_values_in_eager_order():
    """``y = x * 2`` deferred, then ``x[0] = 5``: y must be from x before the write."""
    def model(x):
        x = x + 0.0
        y = x * 2
        v = x[1:]           # a view: sees the write, as in numpy
        x[0] = 5.0
        return y, v + 0.0, x

    x = np.arange(8, dtype=np.float64).reshape(4, 2)
    ep = tpe.export(model, x, dynamic_shapes={"x": {0: Dim("n", max=64)}})
    for n in (4, 7):
        xs = np.arange(n * 2, dtype=np.float64).reshape(n, 2)
        for got, ref in zip(ep.module()(xs), model(xs.copy())):
            np.testing.assert_array_equal(got, ref)


def test_numpy_errors_of_deferred_movement_ops_still_name_the_op():
    def model(x):
        return (x * 2).reshape(5, 7)

    with pytest.raises(CaptureError, match=r"numpy.ndarray.reshape raised ValueError"):
        tpe.export(model, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim("n", max=8)}})


def test_draft_export_runs_numpy_twice_and_computes_no_capture_value(monkeypatch):
    """The eager run and the program's run; capture defers every value (none is read) and
    does not replay a graph without writes."""
    from tensorplay_export.capture import entry
    from tensorplay_export.face.draft import draft_export

    model = Wide().eval()
    x = np.random.default_rng(2).standard_normal((1024, 8))
    forced = _count_big_impl_calls(monkeypatch, 1024 * 8)
    replays: list = []
    real_replay = entry.check_replay
    monkeypatch.setattr(entry, "check_replay", lambda *a, **k: (replays.append(1), real_replay(*a, **k)))
    forwards: list = []
    real_forward = Wide.forward
    monkeypatch.setattr(Wide, "forward", lambda self, x: (forwards.append(type(x).__name__), real_forward(self, x))[1])
    report = draft_export(model, x, dynamic_shapes={"x": {0: Dim("n", min=2, max=4096)}})
    assert report.successful(), report
    assert forced == [] and replays == []
    assert forwards.count("ndarray") == 1  # the eager run; the other forward is the traced one
    assert report.comparison.ok
    xs = np.random.default_rng(3).standard_normal((5, 8))
    np.testing.assert_allclose(report.exported_program.module()(xs), model(xs), rtol=1e-12)


class Repeated(nn.Module):
    """Eight identical blocks, then the same ufunc with scalars of three kinds: weak Python
    floats keep float32, a numpy float64 scalar promotes, a float16 array stays float16."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(4)
        self.blocks = nn.ModuleList([nn.Linear(6, 6, rng=rng, dtype=np.float32) for _ in range(8)])
        self.norm = nn.LayerNorm(6, dtype=np.float32)

    def forward(self, x, h):
        for block in self.blocks:
            x = self.norm(block(x)) * 0.5
        return x * 2.0, x * np.float64(2.0), h * 2.0, np.tanh(h) + h


def test_one_proxy_run_per_op_and_argument_kinds_with_each_calls_dtype(monkeypatch):
    """Repeated layers share a proxy run (``Tracer.proxy_runs``); what tells calls apart (a
    scalar's type, an array's dtype or shape) gives a run of its own, so each output keeps
    numpy's dtype."""
    import tensorplay_export.nn._composites  # noqa: F401 - registers the composites as ops
    from tensorplay_export.ops.registry import get_op

    calls: list = []
    op = get_op("tpe.nn.layer_norm")
    real_impl = op.impl

    def impl(*args, **kwargs):
        calls.append(type(args[0]).__name__)  # proxies are ndarrays; nothing else runs it in capture
        return real_impl(*args, **kwargs)
    monkeypatch.setattr(op, "impl", impl)
    model = Repeated()
    x = np.random.default_rng(5).standard_normal((3, 6)).astype(np.float32)
    h = np.ones((3, 5), np.float16)
    spec = {"x": {0: Dim("n", max=16)}, "h": {0: Dim("n", max=16)}}
    ep = tpe.export(model, x, h, dynamic_shapes=spec)
    assert calls == ["ndarray"]  # eight layer_norm calls of the same kinds, one proxy run
    eager = model(x, h)
    for got, ref in zip(ep.module()(x, h), eager):
        assert got.dtype == ref.dtype
        np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert [r.dtype for r in eager] == [np.float32, np.float64, np.float16, np.float16]
    for n in (1, 9):
        xs = np.random.default_rng(n).standard_normal((n, 6)).astype(np.float32)
        hs = np.full((n, 5), 0.25, np.float16)
        for got, ref in zip(ep.module()(xs, hs), model(xs, hs)):
            assert got.dtype == ref.dtype
            np.testing.assert_allclose(got, ref, rtol=1e-3)
