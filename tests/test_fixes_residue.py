"""A divisibility over several dims (``(a + b) % 2 == 0``: two inputs concatenated, then split into
pairs) gets a fix that closes in one refine step: each dim on its lattice with the example's
remainder (found by a fresh user's fuzz of two-input models, where this form was the most common
"no suggested fix")."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def pairs(x, y):
    return np.concatenate([x, y]).reshape(-1, 2, 3).sum(1)


def triples_after_tile(x, y):
    return np.concatenate([x, np.tile(y, (2, 1))[: y.shape[0] + 2]]).reshape(-1, 3, 3).sum(1)


@pytest.mark.parametrize("model, a, b, k", [(pairs, 3, 5, 2), (pairs, 4, 8, 2), (triples_after_tile, 4, 6, 3)])
def test_a_sum_divisibility_closes_in_one_step(model, a, b, k):
    spec = {"x": {0: Dim("a", max=50)}, "y": {0: Dim("b", max=50)}}
    x, y = np.ones((a, 3)), np.ones((b, 3))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, x, y, dynamic_shapes=spec)
    assert "Suggested fixes:" in str(info.value) and "will not be enough" not in str(info.value)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, x, y, dynamic_shapes=fixed)
    admitted = 0
    rng = np.random.default_rng(0)
    for a2 in range(1, 50):
        for b2 in range(1, 50):
            xs, ys = rng.standard_normal((a2, 3)), rng.standard_normal((b2, 3))
            try:
                got = ep.module()(xs, ys)
            except tpe.ConstraintsExceededError:
                continue
            np.testing.assert_allclose(got, model(xs, ys))
            admitted += 1
    assert admitted >= (49 // k) ** 2 - 2 * (49 // k)  # each dim keeps its example's residue mod k


@pytest.mark.parametrize("rows, a0, line, a_of_b", [
    (lambda y: y.shape[0], 12, "a = 3*b", lambda b: 3 * b),
    (lambda y: 2 * y.shape[0], 16, "a = 4*b", lambda b: 4 * b),
    (lambda y: y.shape[0] + 1, 15, "a = 3*b + 3", lambda b: 3 * b + 3),
], ids=["b", "2b", "b+1"])
def test_a_reshape_by_another_inputs_size_gets_the_multiple_relation(rows, a0, line, a_of_b):
    model = lambda x, y: x.reshape(rows(y), -1)  # noqa: E731
    spec = {"x": {0: Dim("a", max=100)}, "y": {0: Dim("b", max=100)}}
    x, y = np.ones((a0, 3)), np.ones((4, 3))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, x, y, dynamic_shapes=spec)
    assert line in str(info.value)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, x, y, dynamic_shapes=fixed)
    for b in (1, 5, 24):
        xs, ys = np.arange(3.0 * a_of_b(b)).reshape(a_of_b(b), 3), np.ones((b, 3))
        np.testing.assert_array_equal(ep.module()(xs, ys), model(xs, ys))


def test_nested_moduli_give_the_lattice_their_product():
    # stride-2 conv output regrouped by 4: ((t - 1) // 2) % 4 == 0 repeats every 8 sizes
    model = lambda x: (x[:, 2:] + x[:, :-2])[:, ::2].reshape(x.shape[0], -1, 4)  # noqa: E731
    spec = {"x": {0: Dim("b"), 1: Dim("t", max=200)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones((2, 18)), dynamic_shapes=spec)
    assert "t = 8*_t + 2" in str(info.value)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, np.ones((2, 18)), dynamic_shapes=fixed)
    for t in (10, 18, 82, 194):
        x = np.arange(3.0 * t).reshape(3, t)
        np.testing.assert_array_equal(ep.module()(x), model(x))


def test_half_of_one_dim_below_another_gets_a_box():
    # x[: b // 2] + y[: b // 2]: Min(a, b // 2) == Min(b, b // 2), which is b // 2 <= a
    model = lambda x, y: x[: y.shape[0] // 2] + y[: y.shape[0] // 2]  # noqa: E731
    spec = {"x": {0: Dim("a", max=50)}, "y": {0: Dim("b", max=50)}}
    x, y = np.ones((10, 2)), np.ones((8, 2))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, x, y, dynamic_shapes=spec)
    assert "b // 2 <= a" in str(info.value) and "Suggested fixes:" in str(info.value)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, x, y, dynamic_shapes=fixed)
    da, db = fixed["x"][0], fixed["y"][0]
    inside = lambda a, b: da.min <= a <= da.max and db.min <= b <= db.max  # noqa: E731
    ran = 0
    for a in range(1, 51):
        for b in range(1, 51):
            xs, ys = np.arange(2.0 * a).reshape(a, 2), np.arange(2.0 * b).reshape(b, 2)
            try:
                got = ep.module()(xs, ys)
            except tpe.ConstraintsExceededError:
                assert not inside(a, b), (a, b)  # refused only outside the box
                continue
            assert inside(a, b) and b // 2 <= a, (a, b)
            np.testing.assert_array_equal(got, model(xs, ys))
            ran += 1
    assert inside(10, 8) and ran >= 100


def test_an_example_outside_its_range_beside_a_residue_closes_in_one_step():
    # the widened range of a and the residue's lattice for b are both lines of the block
    model = lambda x, y: np.concatenate([x, y]).reshape(-1, 2).sum(1)  # noqa: E731
    spec = {"x": {0: Dim("a", max=10)}, "y": {0: Dim("b", max=64)}}
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        tpe.export(model, np.ones(13), np.ones(5), dynamic_shapes=spec)
    assert "b = 2*_b + 1" in str(info.value)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, np.ones(13), np.ones(5), dynamic_shapes=fixed)
    np.testing.assert_array_equal(ep.module()(np.arange(13.0), np.arange(5.0)), model(np.arange(13.0), np.arange(5.0)))
