"""Reductions with axis/keepdims and scans, through np.f and methods, at sizes including 1."""
import numpy as np
import pytest

from _check import check, randn
from tensorplay_export import Dim
from tensorplay_export import errors as tpe_errors
from tensorplay_export import export as tpe_export

SPEC = {"x": {0: Dim("b", max=16), 1: Dim("n", max=64)}}


def two(n):
    return (randn(max(n // 2, 1), n, 3),)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std", "any", "all"])
def test_reductions_axis_keepdims(name):
    fn = getattr(np, name)
    check(lambda x: (fn(x, axis=1), fn(x, axis=(0, 2), keepdims=True), fn(x)), two, SPEC,
          ops=[f"numpy.{name}"])
    check(lambda x: getattr(x, name)(axis=-1, keepdims=True), two, SPEC, ops=[f"numpy.ndarray.{name}"])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions(name):
    check(lambda x: (getattr(np, name)(x, axis=1), getattr(x, name)()), two, SPEC,
          ops=[f"numpy.{name}", f"numpy.ndarray.{name}"])


def test_scans():
    check(lambda x: (np.cumsum(x, axis=1), x.cumsum(), np.cumprod(x, axis=0)), two, SPEC,
          ops=["numpy.cumsum", "numpy.ndarray.cumsum", "numpy.cumprod"])


def test_ufunc_reduce_maps_to_sum():
    check(lambda x: np.add.reduce(x, axis=1), two, SPEC, ops=["numpy.sum"])


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_nan_extremes_need_a_nonempty_axis(name):
    # numpy raises over an empty axis (fmax/fmin have no identity), as for max/min
    fn = getattr(np, name)
    check(lambda x: (fn(x, axis=1), fn(x)), two, SPEC, ops=[f"numpy.{name}"])
    n = Dim("n", min=0, max=10)
    with pytest.raises(tpe_errors.ConstraintViolationError, match="n >= 1"):
        tpe_export(lambda x: fn(x, axis=0), np.ones((3, 2)), dynamic_shapes=({0: n},))


def test_arg_reduction_of_all_axes_needs_a_nonempty_array():
    # np.argmax(x) with axis=None raises on an empty array ("attempt to get argmax of an empty sequence")
    n = Dim("n", min=0, max=10)
    with pytest.raises(tpe_errors.ConstraintViolationError, match="n >= 1"):
        tpe_export(lambda x: np.argmax(x), np.ones((3, 2)), dynamic_shapes=({0: n},))


def test_keepdims_by_position():
    # keepdims is the 4th positional of any/all (no dtype), 5th of nansum/nanprod/nanmean (after out) and
    # of median/nanmedian (after overwrite_input), 6th of nanstd/nanvar (after ddof)
    check(lambda x: (np.any(x > 0, 1, None, True), np.all(x > -9, 0, None, True), np.nanprod(x, 1, None, None, True),
                     np.nansum(x, 0, None, None, True), np.nanmean(x, 2, None, None, True),
                     np.median(x, 1, None, False, True), np.nanmedian(x, 0, None, False, True),
                     np.nanstd(x, 0, None, None, 0, True)), two, SPEC,
          ops=["numpy.any", "numpy.all", "numpy.nanprod", "numpy.nansum", "numpy.nanmean", "numpy.median",
               "numpy.nanmedian", "numpy.nanstd"])
