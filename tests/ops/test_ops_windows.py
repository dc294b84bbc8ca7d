"""``sliding_window_view``, ``np.ix_`` and ``np.corrcoef``: exported, compared with eager numpy
at sizes other than the example, saved and loaded; writes through the views refused."""
from __future__ import annotations

import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

from _check import check, randn

windows = np.lib.stride_tricks.sliding_window_view


def test_moving_average_over_a_dynamic_axis_needs_the_window():
    fn = lambda x: windows(x, 3, axis=0).mean(-1)  # noqa: E731
    ep = check(fn, lambda n: (randn(n, 4),), {"x": {0: Dim("n", min=3)}}, example=6, sizes=(3, 4, 9, 40),
               ops=("numpy.lib.stride_tricks.sliding_window_view",))
    assert ep.module()(np.ones((5, 4), np.float32)).shape == (3, 4)


def test_a_window_larger_than_its_axis_narrows_auto_to_the_window():
    ep = tpe.export(lambda x: windows(x, (2, 2)).sum((-1, -2)), randn(6, 5),
                    dynamic_shapes={"x": {0: Dim.AUTO, 1: Dim.AUTO}})
    assert sorted((r.lower, r.upper) for r in ep.range_constraints.values()) == [(2, np.inf), (2, np.inf)]
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(1, 5))
    x = randn(7, 3)
    np.testing.assert_allclose(ep.module()(x), windows(x, (2, 2)).sum((-1, -2)), rtol=1e-6)


def test_a_named_dim_below_the_window_is_a_violation_with_a_fix():
    spec = {"x": {0: Dim("n")}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(lambda x: windows(x, 4, axis=0).sum(-1), randn(6, 2), dynamic_shapes=spec)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(lambda x: windows(x, 4, axis=0).sum(-1), randn(6, 2), dynamic_shapes=fixed)
    x = randn(4, 2)
    np.testing.assert_allclose(ep.module()(x), windows(x, 4, axis=0).sum(-1), rtol=1e-6)


def test_repeated_axes_and_a_size_window():
    check(lambda x: windows(x, (2, 2), axis=(1, 1)).sum((-1, -2)), lambda n: (randn(3, n),),
          {"x": {1: Dim("n", min=3)}}, example=6, sizes=(3, 8))
    check(lambda x: windows(x, x.shape[1] // 2, axis=1).max(-1), lambda n: (randn(2, n),),
          {"x": {1: Dim("n", min=2)}}, example=6, sizes=(2, 5, 11))


def test_writes_through_a_window_view_are_refused():
    def writes_into_the_argument(x):
        h = x * 1.0
        w = windows(h, 2, axis=0)
        h[...] = np.abs(h)
        return w.sum(-1)

    with pytest.raises(tpe.UnsupportedOpError, match="sliding_window_view"):
        tpe.export(writes_into_the_argument, randn(5, 3), dynamic_shapes={"x": {0: Dim("n", min=2)}})
    with pytest.raises((tpe.UnsupportedOpError, tpe.CaptureError), match="writeable"):
        tpe.export(lambda x: windows(x, 2, axis=0, writeable=True).sum(-1), randn(5, 3),
                   dynamic_shapes={"x": {0: Dim("n", min=2)}})


def test_ix_open_mesh_at_other_sizes():
    fn = lambda x: x[np.ix_(np.arange(0, x.shape[0], 2), [0, 2])]  # noqa: E731
    check(fn, lambda n: (randn(n, 3),), {"x": {0: Dim("n")}}, example=6, sizes=(1, 2, 7, 30),
          ops=("numpy.ix_",))
    grid = lambda x, i: x[np.ix_(i, i)]  # noqa: E731
    check(grid, lambda n: (randn(9, 9), np.arange(n) % 9), {"x": None, "i": {0: Dim("k", max=64)}},
          example=4, sizes=(1, 3, 20))


def test_ix_of_a_boolean_mask_is_refused_with_what_to_pass():
    with pytest.raises((tpe.UnsupportedOpError, tpe.CaptureError), match=r"np.nonzero\(mask\)\[0\]"):
        tpe.export(lambda x: x[np.ix_(x[:, 0] > 0, [0, 1])], randn(6, 3), dynamic_shapes={"x": {0: Dim("n")}})


@pytest.mark.parametrize("rowvar", [True, False])
def test_corrcoef_like_eager(rowvar):
    fn = lambda x: np.corrcoef(x, rowvar=rowvar)  # noqa: E731
    make = (lambda n: (randn(n, 8, dtype=np.float64, seed=n),)) if rowvar else \
        (lambda n: (randn(8, n, dtype=np.float64, seed=n),))
    spec = {"x": {0 if rowvar else 1: Dim("v", min=2)}}
    check(fn, make, spec, example=4, sizes=(2, 3, 9), ops=("numpy.corrcoef",))


def test_the_new_ops_round_trip_through_an_archive():
    def fn(x):
        smooth = windows(x, 3, axis=0).mean(-1)
        pick = smooth[np.ix_(np.arange(0, smooth.shape[0], 2), [0, 1])]
        return np.corrcoef(pick, rowvar=False) + pick.sum()

    ep = tpe.export(fn, randn(9, 2, dtype=np.float64), dynamic_shapes={"x": {0: Dim("n", min=5)}})
    buf = io.BytesIO()
    tpe.save(ep, buf)
    back = tpe.load(io.BytesIO(buf.getvalue()))
    for n in (5, 8, 21):
        x = randn(n, 2, dtype=np.float64, seed=n)
        np.testing.assert_allclose(back.module()(x), fn(x), rtol=1e-9)
