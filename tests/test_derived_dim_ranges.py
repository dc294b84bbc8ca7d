"""A derived dim is a size: never negative over its root's declared range (torch.export refuses such
a spec too); and an empty example of a Dim.AUTO axis admits size 0 instead of falling outside its hint."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def _refine_and_export(model, args, spec):
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, *args, dynamic_shapes=spec)
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    return str(info.value), tpe.export(model, *args, dynamic_shapes=refined)


def _ranges(ep):
    return {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()}


def test_increasing_derived_dim_below_zero_narrows_the_root_min():
    def model(x, y):
        return x[3:] + y

    dx = Dim("dx")
    text, ep = _refine_and_export(model, (np.arange(6.0), np.ones(3)), {"x": {0: dx}, "y": {0: dx - 3}})
    assert "guard dx - 3 >= 0" in text and "counterexample: dx = 1" in text
    assert text.endswith("Suggested fixes:\n  dx = Dim('dx', min=3)")
    assert _ranges(ep) == {"dx": (3, float("inf"))}
    m = ep.module()
    for n in (3, 4, 9):
        np.testing.assert_array_equal(m(np.arange(n * 1.0), np.ones(n - 3)), model(np.arange(n * 1.0), np.ones(n - 3)))
    with pytest.raises(tpe.ConstraintsExceededError):
        m(np.arange(2.0), np.ones(0))


def test_decreasing_derived_dim_of_an_unbounded_root_gets_a_max():
    def model(x, y):
        return np.concatenate([x, y]) * 2

    dx = Dim("dx")
    text, ep = _refine_and_export(model, (np.ones(2), np.ones(3)), {"x": {0: dx}, "y": {0: 5 - dx}})
    assert "counterexample: dx = 6" in text and text.endswith("dx = Dim('dx', max=5)")
    assert _ranges(ep) == {"dx": (1, 5)}
    for n in (1, 4, 5):
        np.testing.assert_array_equal(ep.module()(np.ones(n), np.ones(5 - n)), model(np.ones(n), np.ones(5 - n)))


def test_all_derived_dims_of_one_root_share_one_fix_and_an_empty_intersection_has_none():
    model = lambda x, y, z: x.sum() + y.sum() + z.sum()  # noqa: E731
    dx = Dim("dx")
    args = (np.ones(4), np.ones(1), np.ones(0))
    text, ep = _refine_and_export(model, args, {"x": {0: dx}, "y": {0: dx - 3}, "z": {0: 4 - dx}})
    assert text.endswith("dx = Dim('dx', min=3, max=4)") and _ranges(ep) == {"dx": (3, 4)}
    with pytest.raises(tpe.ConstraintViolationError, match="no dx makes dx - 10 >= 0 and 4 - dx >= 0 hold"):
        tpe.export(model, *args, dynamic_shapes={"x": {0: dx}, "y": {0: dx - 10}, "z": {0: 4 - dx}})


def test_derived_dims_inside_their_root_range_are_untouched():
    dx = Dim("dx", min=3, max=31)
    ep = tpe.export(lambda x, y, z: (x * 2, y * 2, z * 2), np.ones(4), np.ones(1), np.ones(28),
                    dynamic_shapes={"x": {0: dx}, "y": {0: dx - 3}, "z": {0: 32 - dx}})
    assert _ranges(ep) == {"dx": (3, 31)}


def test_draft_export_reports_the_negative_derived_dim_with_its_fix():
    dx = Dim("dx")
    report = tpe.draft_export(lambda x, y: x[3:] + y, np.ones(6), np.ones(3),
                              dynamic_shapes={"x": {0: dx}, "y": {0: dx - 3}})
    assert "dx - 3 >= 0" in str(report) and "dx = Dim('dx', min=3)" in str(report)


def test_auto_axis_with_an_empty_example_admits_zero():
    def model(x):
        return x.sum(0) + x.shape[0]

    ep = tpe.export(model, np.zeros((0, 3), np.float32), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(0, float("inf"))]
    for n in (0, 1, 5):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(ep.module()(x), model(x))


def test_ranged_auto_axis_with_an_empty_example_is_widened_to_zero_in_one_step():
    def model(x):
        return x.reshape(-1, 2)

    spec = {"x": {0: Dim.AUTO(min=2)}}
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        tpe.export(model, np.zeros((0,), np.float32), dynamic_shapes=spec)
    assert str(info.value).endswith("x_dim0 = Dim.AUTO(min=0)")
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, np.zeros((0,), np.float32), dynamic_shapes=refined)
    for n in (0, 2, 6):
        np.testing.assert_array_equal(ep.module()(np.ones(n, np.float32)), model(np.ones(n, np.float32)))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones(3, np.float32))


def test_the_narrowed_root_is_proved_with_the_models_own_guards_in_export_and_draft():
    # k - 3 needs k >= 3, and the model's 20-row table needs k <= 20: one block has both
    table = np.ones((20, 2))

    def model(x, y):
        return x + table[: x.shape[0]], y * 2

    args = (np.ones((10, 2)), np.ones((7, 2)))
    k = Dim("k", max=40)
    spec = {"x": {0: k}, "y": {0: k - 3}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, *args, dynamic_shapes=spec)
    assert info.value.fixes == ["k = Dim('k', min=3, max=20)"] and info.value.fixes_note is None
    report = tpe.draft_export(model, *args, dynamic_shapes=spec)
    assert report.fixes == info.value.fixes
    for text in (str(info.value), str(report)):
        ep = tpe.export(model, *args, dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec))
        assert _ranges(ep) == {"k": (3, 20)}
        for n in (3, 11, 20):
            got, want = ep.module()(np.ones((n, 2)), np.ones((n - 3, 2))), model(np.ones((n, 2)), np.ones((n - 3, 2)))
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
