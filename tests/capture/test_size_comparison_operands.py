"""A comparison of sizes used as a number (``x * (n > 3)``) is computed by the program at run
time: no branch is taken, so no guard narrows the dim (an elementwise result's shape and
dtype do not depend on the bool's value; a Python bool is a weak scalar in numpy 2)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe


def _mixed(x):
    n = x.shape[0]
    return x * (n > 3) + (n >= 2) - np.logical_and(x > 0, n < 6)


def _reflected(x):
    n, m = x.shape
    return (n == m) * x + np.maximum(x, n != 4)


def _dim_spec():
    return {"x": {0: tpe.Dim("n", max=64)}}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64])
def test_comparison_operand_keeps_the_named_dim_and_matches_eager(dtype):
    ep = tpe.export(_mixed, np.ones((5, 2), dtype), dynamic_shapes=_dim_spec())
    (rng,) = ep.range_constraints.values()
    assert (rng.lower, rng.upper) == (1, 64)  # no guard on n > 3 / n >= 2 / n < 6
    for n in (1, 2, 3, 4, 5, 6, 7, 40):
        x = (np.arange(n * 2).reshape(n, 2) - 3).astype(dtype)
        got, want = ep.module()(x), _mixed(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_reflected_and_two_dims_after_save_and_load(tmp_path):
    spec = {"x": {0: tpe.Dim("n", max=32), 1: tpe.Dim("m", max=32)}}
    ep = tpe.export(_reflected, np.ones((4, 4), np.float32), dynamic_shapes=spec)
    assert sorted((r.lower, r.upper) for r in ep.range_constraints.values()) == [(1, 32), (1, 32)]
    tpe.save(ep, tmp_path / "p.pt2")
    loaded = tpe.load(tmp_path / "p.pt2")
    for shape in ((4, 4), (3, 5), (4, 6), (7, 7)):
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(loaded.module()(x), _reflected(x))
        np.testing.assert_array_equal(ep.module()(x), _reflected(x))


def test_a_branch_on_the_same_comparison_is_still_guarded():
    def branchy(x):
        if x.shape[0] > 3:
            return x * 2.0
        return x

    with pytest.raises(tpe.ConstraintViolationError, match="n > 3|n <= 3"):
        tpe.export(branchy, np.ones((5, 2), np.float32), dynamic_shapes=_dim_spec())


def test_large_example_defers_and_still_matches():
    ep = tpe.export(_mixed, np.ones((48, 300), np.float32), dynamic_shapes=_dim_spec())
    x = np.linspace(-1, 1, 3 * 300, dtype=np.float32).reshape(3, 300)
    np.testing.assert_array_equal(ep.module()(x), _mixed(x))


def _arithmetic(x):
    n = x.shape[0]
    count = sum(n > j for j in range(4)) + (True + (n > 5)) - -(n > 6)
    y = x * (2.0 * (n > 3)) + (n > 2) + (n > 1) * 1 + count
    return y / (1 + (n > 4)) + ((n > 3) == 1) + ((n > 2) != 0) + abs(n > 7) // 1


def test_comparison_arithmetic_is_python_int_arithmetic():
    ep = tpe.export(_arithmetic, np.ones((5, 2), np.float32), dynamic_shapes=_dim_spec())
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(1, 64)]
    for n in range(1, 10):
        x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        got, want = ep.module()(x), _arithmetic(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_branch_on_comparison_arithmetic_guards_with_a_fix():
    def model(x):
        n = x.shape[0]
        return x[: 2 + (n > 3)] if (n > 3) + (n > 10) >= 1 else x

    with pytest.raises(tpe.ConstraintViolationError, match=r"n = Dim\('n', min=4, max=64\)"):
        tpe.export(model, np.ones((5, 2), np.float32), dynamic_shapes=_dim_spec())
    ep = tpe.export(model, np.ones((5, 2), np.float32),
                    dynamic_shapes={"x": {0: tpe.Dim("n", min=4, max=64)}})
    for n in (4, 9, 11, 64):
        x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        np.testing.assert_array_equal(ep.module()(x), model(x))


def _bool_ops(x):
    n = x.shape[0]
    a, b = n > 3, n > 5
    return (x[a:] .sum() + (a != b) + (a == b) + (a ^ b) + (~a) + (a << 2) + divmod(a, 1)[0]
            + x * (a & (n < 9)))


def test_every_int_operation_on_a_comparison_is_pythons():
    ep = tpe.export(_bool_ops, np.arange(6, dtype=np.float32), dynamic_shapes=_dim_spec())
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(1, 64)]
    for n in range(1, 12):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(ep.module()(x), _bool_ops(x))
