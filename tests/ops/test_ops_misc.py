"""The long tail: complex parts, nan-aware reductions, flips, contiguity, data-dependent positions."""
import numpy as np

from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}


def one(n):
    return (randn(n, 3),)


def test_nan_reductions_and_median():
    check(lambda x: (np.nansum(x, axis=0), np.nanmean(x, axis=1), np.nanmax(x, axis=0), np.nanmin(x, axis=0),
                     np.median(x, axis=1), np.nanmedian(x, axis=0)), one, SPEC,
          ops=["numpy.nansum", "numpy.nanmean", "numpy.nanmax", "numpy.nanmin", "numpy.median", "numpy.nanmedian"])


def test_complex_parts_and_cleanup():
    check(lambda x: (np.real(x), np.imag(x), np.nan_to_num(x), x.conj(), np.ascontiguousarray(x.T),
                     np.atleast_1d(x)), one, SPEC,
          ops=["numpy.real", "numpy.imag", "numpy.nan_to_num", "numpy.ndarray.conj",
               "numpy.atleast_1d"])


def test_flips_and_permute_dims():
    check(lambda x: (np.fliplr(x), np.flipud(x), np.permute_dims(x, (1, 0)), np.empty_like(x).shape[0] + x),
          one, SPEC, ops=["numpy.fliplr", "numpy.flipud", "numpy.permute_dims"])


def test_data_dependent_positions():
    ep = check(lambda x: (np.flatnonzero(x > 0), np.argwhere(x > 0), np.nonzero(x[:, 0] > 0)[0]), one, SPEC,
               sizes=(1, 4, 9), ops=["numpy.flatnonzero", "numpy.argwhere", "numpy.nonzero", "tpe.item"])
    assert {s.name for s in ep.range_constraints} >= {"n", "u0", "u1"}


def test_any_std_argmax_argmin_functions():
    check(lambda x: (np.any(x > 0, axis=0), np.std(x, axis=1), np.argmax(x, axis=0), x.argmin(axis=1),
                     x.any(), x.std()), one, SPEC,
          ops=["numpy.any", "numpy.std", "numpy.argmax", "numpy.ndarray.argmin", "numpy.ndarray.any",
               "numpy.ndarray.std"])
