"""BatchNorm in training mode needs more than one value per channel (N * spatial > 1).

With one value the unbiased variance divides by zero and running_var becomes NaN; torch
raises "Expected more than 1 value per channel when training". Eager raises a ValueError,
and an exported training program has the requirement in its contract.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.nn import functional as F


def randn(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("make, shape", [(lambda: nn.BatchNorm1d(3), (1, 3)), (lambda: nn.BatchNorm1d(3), (1, 3, 1)),
                                         (lambda: nn.BatchNorm2d(3), (1, 3, 1, 1)),
                                         (lambda: nn.BatchNorm2d(3, track_running_stats=False).eval(),
                                          (1, 3, 1, 1))])
def test_eager_training_refuses_one_value_per_channel_and_leaves_the_stats(make, shape):
    bn = make()
    before = None if bn.running_var is None else bn.running_var.copy()
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(randn(*shape))
    if before is not None:
        np.testing.assert_array_equal(bn.running_var, before)  # no NaN written
        assert int(bn.num_batches_tracked) == 0


def test_eager_training_accepts_two_values_and_eval_accepts_one():
    bn = nn.BatchNorm2d(3)
    bn(randn(1, 3, 2, 1))                       # N * H * W = 2
    assert np.isfinite(bn.running_var).all() and int(bn.num_batches_tracked) == 1
    bn.eval()
    out = bn(randn(1, 3, 1, 1))                 # running statistics: fine with one value
    assert out.shape == (1, 3, 1, 1) and np.isfinite(out).all()
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(randn(1, 4), np.zeros(4), np.ones(4), training=True)


def test_training_export_with_batch_from_1_is_a_violation_with_the_fix():
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export_for_training(nn.BatchNorm1d(3), randn(4, 3), dynamic_shapes={"x": {0: Dim("b")}})
    text = str(info.value)
    assert "more than 1 value per channel" in text and "b = Dim('b', min=2)" in text


@pytest.mark.parametrize("spec, where", [({"x": {0: Dim("b", min=2, max=64)}}, "outside b"),
                                         ({"x": {0: Dim.AUTO}}, r"outside s0 in \[2, inf\]")])
def test_training_program_refuses_one_value_per_channel(spec, where):
    ep = tpe.export_for_training(nn.BatchNorm1d(3), randn(4, 3), dynamic_shapes=spec)
    run = ep.module()
    with pytest.raises(tpe.ConstraintsExceededError, match=where):
        run(randn(1, 3))
    # at other sizes the program matches eager, running statistics included
    ref = nn.BatchNorm1d(3)
    for n in (2, 7):
        x = randn(n, 3)
        np.testing.assert_allclose(run(x), ref(x), rtol=1e-5, atol=1e-6)
    state = dict(run.named_buffers())
    np.testing.assert_allclose(state["running_var"], ref.running_var, rtol=1e-5)
    assert np.isfinite(state["running_var"]).all() and int(state["num_batches_tracked"]) == 2


def test_eval_export_keeps_batch_1():
    bn = nn.BatchNorm2d(3).eval()
    ep = tpe.export(bn, randn(2, 3, 4, 4), dynamic_shapes={"x": {0: Dim("b"), 2: Dim("h"), 3: Dim("w")}})
    x = randn(1, 3, 1, 1)
    np.testing.assert_allclose(ep.module()(x), bn(x), rtol=1e-6)
