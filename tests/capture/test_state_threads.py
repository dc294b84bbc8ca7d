"""Export never changes the user's module: capture runs on a per-capture view of the module tree.

A thread calling the module eagerly while another exports it must always get plain
ndarrays with the right values, and every exported program must hold only its own ops.
"""
from __future__ import annotations

import copy
import sys
import threading

import numpy as np

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

TABLE = np.linspace(0.0, 1.0, 4, dtype=np.float64)


class Block(nn.Module):
    """x: (n, 4) -> (n, 4); a parameter, a buffer, a plain array attribute, a helper method, a child."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(3)
        self.w = nn.Parameter(rng.standard_normal((4, 4)))
        self.register_buffer("shift", rng.standard_normal(4))
        self.scale = np.full(4, 0.5)          # a plain ndarray attribute: a lifted constant
        self.lin = nn.Linear(4, 4, dtype=np.float64)
        self.act = self._act                  # a bound method stored on the instance

    def _act(self, h):
        return np.tanh(h) * self.scale

    def forward(self, x):
        self.last_rows = x.shape[0]           # forward stores on self: must stay on the capture's view
        # np.arange / np.zeros are patched while any capture runs: other threads get numpy's own
        h = self.lin(x @ self.w + self.shift) + TABLE + np.arange(x.shape[1]) * 1e-3 + np.zeros(4)
        return self.act(h)


def _plain_state(model: nn.Module) -> dict:
    return {"params": {k: (type(v), v.copy()) for k, v in model.named_parameters()},
            "buffers": {k: (type(v), v.copy()) for k, v in model.named_buffers()},
            "attrs": {k: type(v) for k, v in model.__dict__.items()}}


def test_export_leaves_the_module_untouched():
    model = Block()
    before = _plain_state(model)
    ids = {k: id(v) for k, v in model.named_parameters()}
    tpe.export(model, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    after = _plain_state(model)
    assert after["attrs"] == before["attrs"] and "last_rows" not in model.__dict__
    for kind in ("params", "buffers"):
        for k, (t, v) in before[kind].items():
            assert after[kind][k][0] is t and np.array_equal(after[kind][k][1], v)
    assert {k: id(v) for k, v in model.named_parameters()} == ids
    assert model.act.__self__ is model


def test_training_export_leaves_running_stats_and_counters_untouched():
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).train()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    bn = model[1]
    mean, var, count = bn.running_mean.copy(), bn.running_var.copy(), bn.num_batches_tracked.copy()
    ep = tpe.export_for_training(model, x, dynamic_shapes={"x": {0: Dim("n", min=2, max=64)}})
    assert np.array_equal(bn.running_mean, mean) and np.array_equal(bn.running_var, var)
    assert np.array_equal(bn.num_batches_tracked, count)
    assert type(bn._buffers["running_mean"]) is np.ndarray
    # the program carries the update instead: the same as an eager step of a copy, at another size
    ref = copy.deepcopy(model)
    x7 = np.random.default_rng(1).standard_normal((7, 3)).astype(np.float32)
    m = ep.module()
    np.testing.assert_allclose(m(x7), ref(x7), rtol=1e-5, atol=1e-6)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(m.state_dict()[f"1.{name}"], getattr(ref[1], name), rtol=1e-5, atol=1e-7)
    assert not np.array_equal(ref[1].running_mean, mean)


def test_eager_calls_in_another_thread_never_see_traced_values():
    model = Block().eval()
    sizes = (1, 3, 17)
    xs = {n: np.random.default_rng(n).standard_normal((n, 4)) for n in sizes}
    want = {n: model(xs[n]) for n in sizes}
    stop = threading.Event()
    bad: list = []
    calls = [0]

    def hammer():
        while not stop.is_set():
            for n in sizes:
                try:
                    out = model(xs[n])
                    # numpy.random is refused inside a capture, and only there
                    draw = np.random.default_rng(n).random(2)
                    if type(draw) is not np.ndarray:
                        bad.append(("random", type(draw).__name__))
                    calls[0] += 1
                    if type(out) is not np.ndarray or not np.array_equal(out, want[n]):
                        bad.append((n, type(out).__name__))
                except Exception as err:  # noqa: BLE001 - any failure here is the leak
                    bad.append(repr(err))

    thread = threading.Thread(target=hammer)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # hand the GIL over often, so the threads interleave inside captures
    thread.start()
    programs = []
    try:
        for k in range(60):
            ep = tpe.export(model, xs[3] + k, dynamic_shapes={"x": {0: Dim("n", max=64)}})
            programs.append(ep)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert calls[0] > 0
    assert not bad, f"eager calls in the other thread broke during capture: {bad[:5]}"
    nodes = {len(ep.graph.nodes) for ep in programs}
    assert len(nodes) == 1, f"some program recorded the other thread's ops: node counts {sorted(nodes)}"
    for ep in programs:
        for n in (2, 17, 40):
            x = np.random.default_rng(100 + n).standard_normal((n, 4))
            np.testing.assert_allclose(ep.module()(x), model(x), rtol=1e-12, atol=1e-12)
