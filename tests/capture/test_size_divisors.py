"""Sizes divided by sizes that can be 0 at other sizes (``n // 2`` for ``n = 1``): capture keeps
them symbolic instead of crashing or pinning, and the program fails where eager fails."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def _compare(fn, ep, sizes):
    admitted = []
    for n in sizes:
        x = np.arange(n * 3, dtype=np.float64).reshape(n, 3)
        try:
            want = fn(x)
        except (ValueError, ZeroDivisionError) as err:
            want = err
        try:
            got = ep.module()(x)
        except tpe.ConstraintsExceededError:
            assert isinstance(want, Exception), f"n = {n}: refused, eager runs"
            continue
        except ZeroDivisionError:
            assert isinstance(want, ZeroDivisionError), f"n = {n}"
            continue
        assert not isinstance(want, Exception), f"n = {n}: ran, eager raised {want!r}"
        np.testing.assert_array_equal(got, want)
        admitted.append(n)
    return admitted


def test_reshape_by_half_the_rows_stays_dynamic_for_auto():
    fn = lambda x: x.reshape(x.shape[0] // 2, -1)  # noqa: E731
    ep = tpe.export(fn, np.ones((8, 3)), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(2, np.inf)]
    assert _compare(fn, ep, range(1, 25)) == [n for n in range(2, 25) if (3 * n) % (n // 2) == 0]


def test_a_named_dim_gets_the_even_fix():
    fn = lambda x: x.reshape(x.shape[0] // 2, -1)  # noqa: E731
    spec = {"x": {0: Dim("n", max=100)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(fn, np.ones((8, 3)), dynamic_shapes=spec)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(fn, np.ones((8, 3)), dynamic_shapes=fixed)
    assert _compare(fn, ep, (2, 4, 10, 64)) == [2, 4, 10, 64]


def test_a_floor_division_by_a_size_that_can_be_zero_is_a_requirement():
    fn = lambda x: x[: 7 // (x.shape[0] // 3)]  # noqa: E731
    ep = tpe.export(fn, np.ones((16, 3)), dynamic_shapes=({0: Dim.AUTO},))
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(3, np.inf)]
    assert _compare(fn, ep, range(1, 30)) == list(range(3, 30))


@pytest.mark.parametrize("fn", [lambda x: x * (7 // (x.shape[0] // 3)), lambda x: x * (7 % (x.shape[0] // 3)),
                                lambda x: x * (7 / (x.shape[0] // 3))], ids=["floordiv", "mod", "truediv"])
def test_a_named_dim_gets_the_nonzero_divisor_fix(fn):
    spec = {"x": {0: Dim("n", max=64)}}
    with pytest.raises(tpe.ConstraintViolationError, match="ZeroDivisionError") as info:
        tpe.export(fn, np.ones((12, 3)), dynamic_shapes=spec)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(fn, np.ones((12, 3)), dynamic_shapes=fixed)
    assert _compare(fn, ep, range(1, 40)) == list(range(3, 40))
