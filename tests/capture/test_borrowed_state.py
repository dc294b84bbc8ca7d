"""Parameters and buffers are read in place during capture, copied only when written (issue 19 goal 2).

Capture's example of a parameter or buffer is a read-only view of the caller's array
(``capture.borrowed``); a write in forward copies it first and moves the views already
taken onto the copy.  What must hold: no copy of the weights beyond the program's own, the
caller's arrays never change, and writes and views behave as eager numpy's.
"""
import tracemalloc

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.program.signature import OutputKind

SPEC = {"x": {0: Dim("n", max=64)}}
WIDE = 1024  # a 1024 x 1024 float32 weight: 4 MiB, far above everything else a capture allocates


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(WIDE, WIDE)

    def forward(self, x):
        return self.lin(x).sum(axis=-1)


def _x(n, width=WIDE, seed=0):
    return np.random.default_rng(seed).standard_normal((n, width)).astype(np.float32)


@pytest.mark.parametrize("entry", ["export", "draft_export"])
def test_no_copy_of_the_weights_beyond_the_programs_own(entry):
    model, x = Wide(), _x(2)
    weight = model.lin.weight.nbytes
    getattr(tpe, entry)(model, x, dynamic_shapes=SPEC)  # imports and caches outside the measurement
    tracemalloc.start()
    try:
        result = getattr(tpe, entry)(model, x, dynamic_shapes=SPEC)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    ep = result if entry == "export" else result.exported_program
    assert ep is not None
    # the program owns one copy; a capture that copied the parameters too peaked above two
    assert peak < 1.5 * weight, f"peak {peak / weight:.2f}x the weight's size"
    np.testing.assert_allclose(ep.module()(_x(5, seed=1)), model(_x(5, seed=1)), rtol=1e-4, atol=1e-3)


def _runs_like_eager(run, eager, state, sizes):
    """Outputs and the updated ``state`` entry of the program's module track an eager twin, call by call."""
    for step, n in enumerate(sizes):
        x = _x(n, 4, seed=step)
        np.testing.assert_allclose(run(x), eager(x), rtol=1e-6)
        np.testing.assert_allclose(run.state_dict()[state], getattr(eager, state), rtol=1e-6)


class ViewThenWrite(nn.Module):
    """Views taken before an in-place update see it, as numpy's views do."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.arange(12, dtype=np.float32).reshape(3, 4))

    def forward(self, x):
        t = self.w.T            # a view of the caller's weight, taken before the write
        row = self.w[1]
        self.w += 1.0           # the capture's copy is made here; t and row move onto it
        row[2] = -5.0           # a write through a view taken before the copy
        return x @ t + row.sum()


def test_views_taken_before_a_write_follow_it_and_the_caller_keeps_its_weight():
    model = ViewThenWrite()
    before = model.w.copy()
    ep = tpe.export_for_training(model, _x(2, 4), dynamic_shapes=SPEC)
    np.testing.assert_array_equal(model.w, before)  # the caller's parameter never changed
    targets = [s.target for s in ep.graph_signature.output_specs if s.kind == OutputKind.PARAMETER_MUTATION]
    assert targets == ["w"]
    _runs_like_eager(ep.module(), ViewThenWrite(), "w", (2, 7, 1))


class RunningMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", np.zeros(4, np.float32))

    def forward(self, x):
        self.mean *= 0.9
        self.mean += 0.1 * x.mean(axis=0)
        return x - self.mean


def test_a_buffer_updated_in_forward_is_copied_at_its_first_write_only():
    model = RunningMean()
    mean = model.mean
    ep = tpe.export(model, _x(3, 4), dynamic_shapes=SPEC)
    np.testing.assert_array_equal(mean, 0.0)  # the caller's buffer, unchanged by capture and the checks
    assert model.mean is mean
    _runs_like_eager(ep.module(), RunningMean(), "mean", (3, 8))


class TransposedWeight(nn.Module):
    """A parameter that is not C-contiguous: capture copies it up front, as it always did."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)))

    def forward(self, x):
        self.w[0] = 2.0
        return x @ self.w


def test_a_strided_parameter_written_in_forward():
    model = TransposedWeight()
    before = model.w.copy()
    ep = tpe.export_for_training(model, _x(2, 3), dynamic_shapes=SPEC)
    np.testing.assert_array_equal(model.w, before)
    run, eager = ep.module(), TransposedWeight()
    x = _x(4, 3)
    np.testing.assert_allclose(run(x), eager(x), rtol=1e-6)


def test_a_read_only_view_of_a_parameter_is_no_write_target_in_eager_either():
    class Broadcast(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(np.ones(4, np.float32))

        def forward(self, x):
            b = np.broadcast_to(self.w, (2, 4))
            self.w += 1.0  # b moves onto the copy and stays read-only, as numpy made it
            b[0, 0] = 3.0
            return x + b

    model = Broadcast()
    with pytest.raises(ValueError, match="read-only"):
        model(_x(2, 4))  # eager numpy refuses the write through the broadcast view
    model = Broadcast()
    with pytest.raises(Exception, match="read-only"):
        tpe.export(model, _x(2, 4), dynamic_shapes={"x": {0: Dim("n", min=2, max=2)}})
    np.testing.assert_array_equal(model.w, 1.0)


class EmptyWrites(nn.Module):
    """Writes of zero elements: an empty buffer, an empty slice of a parameter, and a slice that
    is empty only at the example's size.  numpy's empty arrays share no bytes with anything, so
    they are matched to the state they view by their owner."""

    def __init__(self):
        super().__init__()
        self.register_buffer("hist", np.zeros((0, 4), np.float32))
        self.register_buffer("seen", np.zeros(16, np.float32))
        self.w = nn.Parameter(np.ones((4, 4), np.float32))

    def forward(self, x):
        self.hist *= 0.5
        self.w[2:2] += 1.0
        self.seen[: x.shape[0] - 3] += 1.0
        return x @ self.w


def test_writes_of_zero_elements_into_state():
    model = EmptyWrites()
    before = {k: v.copy() for k, v in model.state_dict().items()}
    ep = tpe.export_for_training(model, _x(3, 4), dynamic_shapes={"x": {0: Dim("n", min=3, max=16)}})
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    run, eager = ep.module(), EmptyWrites()
    for step, n in enumerate((3, 7, 16)):
        x = _x(n, 4, seed=step)
        np.testing.assert_allclose(run(x), eager(x), rtol=1e-6)
        np.testing.assert_array_equal(run.state_dict()["seen"], eager.seen)


def test_a_view_made_writable_again_is_still_the_callers_memory(monkeypatch):
    """``v.setflags(write=True)`` is allowed over the caller's writable array; capture's write
    still goes to its own copy.  (The eager run's views are made copies here, so only capture
    could reach the caller's array.)"""
    from tensorplay_export.program import eager_check

    monkeypatch.setattr(eager_check, "_read_only", lambda v: np.array(v, copy=True))

    class Unlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(np.ones((4, 4), np.float32))

        def forward(self, x):
            v = self.w[0]
            v.setflags(write=True)
            v[0] = 42.0
            return x @ self.w

    model = Unlock()
    report = tpe.draft_export(model, _x(3, 4), dynamic_shapes=SPEC)
    assert report.exported_program is not None
    np.testing.assert_array_equal(model.w, 1.0)


def test_a_write_into_state_that_shares_memory_with_other_state_is_refused():
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(np.ones((4, 4), np.float32))
            self.b = nn.Parameter(self.a)  # the same memory: numpy's a sees b's writes

        def forward(self, x):
            self.b[0] = 9.0
            return x @ self.a

    model = Shared()
    with pytest.raises(tpe.UnsupportedOpError,
                       match=r"shares memory with other state \(a, b\)"):
        tpe.export_for_training(model, _x(2, 4), dynamic_shapes=SPEC)
    np.testing.assert_array_equal(model.a, 1.0)
