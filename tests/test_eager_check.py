"""Export's safety net (program/eager_check.py): the program on the examples against an untraced run.

A model that decides on something the tracer cannot intercept (``type(n) is int``) takes
another path while traced: the program is then wrong at every size, the example included,
and export must refuse it with EagerMismatchError naming the first differing output.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.errors import CaptureError, EagerMismatchError
from tensorplay_export.program.eager_check import RunRecord, first_difference, leaf_difference


def type_checked(x):
    return x * 2 if type(x.shape[0]) is int else x * 3


def test_type_check_of_a_size_fails_export_with_the_eager_mismatch():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(EagerMismatchError) as info:
        tpe.export(type_checked, x, dynamic_shapes={"x": {0: Dim("n", max=16)}})
    err = info.value
    assert isinstance(err, CaptureError) and isinstance(err, RuntimeError)  # old except clauses still catch it
    assert err.path == "output"
    # the net runs on the small example x[:2] (n = 2, the smallest admitted size >= 2):
    # x*3 vs x*2 at its largest element, 3
    assert err.max_abs_diff == pytest.approx(3.0)
    text = str(err)
    assert "float32 array of shape (2, 2)" in text and "type(n) is int" in text and "hashing a size" in text
    # with a static size the traced run sees a plain int, takes eager's branch, and export succeeds
    ep = tpe.export(type_checked, x)
    np.testing.assert_array_equal(ep.module()(x), x * 2)


def test_the_first_differing_leaf_is_named_by_its_path_in_the_output_pytree():
    def model(x):
        same = x + 1
        other = x - 1 if type(x.shape[1]) is int else x + 1
        return {"same": same, "pair": (same * 2, other)}

    with pytest.raises(EagerMismatchError) as info:
        tpe.export(model, np.ones((2, 5)), dynamic_shapes={"x": {1: Dim("s")}})
    assert info.value.path == "output['pair'][1]"
    assert "output['pair'][1]" in str(info.value)


def test_a_model_that_raises_only_when_run_eagerly_is_refused():
    def model(x):
        if type(x.shape[0]) is int:
            raise ValueError("eager-only failure")
        return x + 1

    with pytest.raises(EagerMismatchError, match="raised when run eagerly") as info:
        tpe.export(model, np.ones(4), dynamic_shapes={"x": {0: Dim("n")}})
    assert isinstance(info.value.__cause__, ValueError)


class Counter(nn.Module):
    """The output is right on both paths; only the buffer update differs (the net compares buffers too)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("seen", np.zeros((), np.int64))

    def forward(self, x):
        self.seen = self.seen + (1 if type(x.shape[0]) is int else 2)
        return x * 2


def test_a_differing_buffer_update_is_found():
    model = Counter()
    with pytest.raises(EagerMismatchError) as info:
        tpe.export_for_training(model, np.ones(3), dynamic_shapes={"x": {0: Dim("n")}})
    assert info.value.path == "buffer 'seen' after the call"
    assert int(model.seen) == 0  # neither the capture nor the eager run changed the user's module


def test_eager_run_uses_copies_of_inputs_and_state():
    class Writes(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(3)
            self.table = np.ones(3, np.float32)

        def forward(self, x):
            x[0] = 5.0           # a write to the input: the program writes it back too
            return self.bn(x) * self.table

    model = Writes().train()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    before = x.copy()
    ep = tpe.export_for_training(model, x, dynamic_shapes={"x": {0: Dim("n", min=2, max=32)}})
    np.testing.assert_array_equal(x, before)
    assert not model.bn.running_mean.any() and int(model.bn.num_batches_tracked) == 0
    assert model.bn.running_mean.flags.writeable and model.table.flags.writeable
    # the program still matches eager at another size
    y = np.random.default_rng(1).standard_normal((9, 3)).astype(np.float32)
    y_eager, y_prog = y.copy(), y.copy()
    ref = Writes().train()
    np.testing.assert_allclose(ep.module()(y_prog), ref(y_eager), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y_prog, y_eager)


def test_a_forward_writing_its_parameter_is_run_on_writable_copies():
    class Bumps(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(np.ones(3))

        def forward(self, x):
            self.w[0] = 7.0      # read-only in the net's first try: retried on a copy
            return x * self.w

    model = Bumps()
    try:
        ep = tpe.export(model, np.ones((2, 3)), dynamic_shapes={"x": {0: Dim("n")}})
    except EagerMismatchError as err:  # a program that cannot reproduce it must not pass silently
        pytest.fail(f"the net blamed a parameter write it should have retried on a copy: {err}")
    except CaptureError:
        return  # refused by capture itself: loud, which is all this test asks
    x = np.full((5, 3), 2.0)
    np.testing.assert_array_equal(ep.module()(x), x * np.array([7.0, 1.0, 1.0]))


@pytest.mark.parametrize("expected, got, diff", [
    (np.float32(1.0), np.float64(1.0), "dtype float64 instead of float32"),
    (np.ones(3, np.int32), np.array([1, 1, 2], np.int32), "the values differ"),
    (np.ones((2, 3)), np.ones((3, 2)), "shape (3, 2) instead of (2, 3)"),
    (np.array([True, False]), np.array([True, True]), "the values differ"),
    (3, 3.0, "the Python types differ"),
    ("a", "b", "the values differ"),
])
def test_leaf_difference_is_exact_on_dtype_shape_integers_and_booleans(expected, got, diff):
    err = leaf_difference("output", expected, got)
    assert err is not None and err.detail == diff


@pytest.mark.parametrize("expected, got", [
    (np.array([np.nan, 1.0, np.inf]), np.array([np.nan, 1.0 + 1e-12, np.inf])),  # NaN equal, tiny float diff
    (np.float32(0.1), np.array(np.float32(0.1))),                                  # scalar vs 0-d array
    (4, np.int64(4)),                                                               # int vs numpy int64
    (None, None),
])
def test_leaf_difference_accepts_equal_values(expected, got):
    assert leaf_difference("output", expected, got) is None


def test_float_tolerance_follows_the_precision():
    e16 = np.array([1.0], np.float16)
    assert leaf_difference("o", e16, e16 + np.float16(0.001)) is None       # below float16 resolution
    e32 = np.array([1.0], np.float32)
    assert leaf_difference("o", e32, e32 + np.float32(1e-3)) is not None
    e64 = np.array([1.0])
    assert leaf_difference("o", e64, e64 + 1e-6) is not None


def test_first_difference_orders_structure_outputs_buffers_inputs():
    a = RunRecord((np.ones(2), np.ones(2)), {"b": np.zeros(1)}, [("args[0]", np.ones(1))])
    assert first_difference(a, RunRecord((np.ones(2), np.ones(2)), {"b": np.zeros(1)},
                                         [("args[0]", np.ones(1))])) is None
    assert first_difference(a, RunRecord([np.ones(2), np.ones(2)], {}, [])).path == "output"
    assert first_difference(a, RunRecord((np.ones(2), np.ones(2)), {"b": np.ones(1)}, [])).path == \
        "buffer 'b' after the call"
    assert first_difference(a, RunRecord((np.ones(2), np.ones(2)), {"b": np.zeros(1)},
                                         [("args[0]", np.zeros(1))])).path == \
        "args[0] after the call (written by the model)"


def test_an_all_zeros_example_does_not_hide_a_path_eager_does_not_take():
    # zeros make x * 2 and x * 1 equal; the net runs again on seeded values and sees the difference
    def model(x):
        return x * (2 if type(x.shape[0]) is int else 1)

    with pytest.raises(EagerMismatchError, match="values differ"):
        tpe.export(model, np.zeros((8, 4), np.float32), dynamic_shapes={"x": {0: tpe.Dim("n", max=20)}})
    # a model that is right exports from zeros as before
    ep = tpe.export(lambda x: x * 2.0, np.zeros((8, 4), np.float32), dynamic_shapes={"x": {0: tpe.Dim("n", max=20)}})
    np.testing.assert_array_equal(ep.module()(np.ones((3, 4), np.float32)), np.full((3, 4), 2.0, np.float32))


def test_the_eager_run_keeps_the_examples_memory_order():
    # np.array(x, copy=False, order="F") is fine on a Fortran-order x and raises on a C-order one:
    # the safety net runs on copies in the example's own order, so it does not refuse this model
    def model(x):
        return np.array(x, copy=False, order="F") * 2.0

    example = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    ep = tpe.export(model, example, dynamic_shapes={"x": {0: Dim("b", max=16)}})
    for b in (1, 3, 7):
        x = np.asfortranarray(np.arange(b * 4.0).reshape(b, 4))
        np.testing.assert_array_equal(ep.module()(x), model(x))


class ListHeldWeight(nn.Module):
    """A parameter also held in a plain list and written through it: the net's run must write
    into its own view of the weight, not through the list into the caller's array."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.zeros((4, 4), np.float32))
        self.lst = [self.w]

    def forward(self, x):
        self.lst[0] += 1.0
        return x @ self.w


@pytest.mark.parametrize("entry", ["export_for_training", "draft_export"])
def test_a_parameter_held_in_a_list_is_not_written_by_the_net(entry):
    model = ListHeldWeight()
    result = getattr(tpe, entry)(model, np.ones((3, 4), np.float32), dynamic_shapes={"x": {0: Dim("n", max=32)}})
    np.testing.assert_array_equal(model.w, 0.0)
    assert model.lst[0] is model.w
    ep = result if entry == "export_for_training" else result.exported_program
    run, eager = ep.module(), ListHeldWeight()
    for n in (2, 5):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(run(x), eager(x), rtol=1e-6)
        np.testing.assert_allclose(run.state_dict()["w"], eager.w, rtol=1e-6)
