"""percentile / quantile (and nan forms, every common method), histogram, digitize, average, ptp,
and the reductions' where= / initial= keywords on dynamic sizes."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

N0 = Dim("n", min=0, max=64)
N1 = Dim("n", max=64)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf",
                                    "median_unbiased", "closest_observation"])
def test_percentile_and_quantile_methods(method):
    def f(x):
        return (np.percentile(x, 50, method=method), np.percentile(x, [10, 90], axis=0, method=method),
                np.quantile(x, 0.25, axis=1, keepdims=True, method=method),
                np.quantile(x, np.array([[0.1], [0.7]]), axis=0, method=method))

    check(f, lambda n: (randn(n, 3),), {"x": {0: N1}}, sizes=(1, 2, 7), ops=["numpy.percentile", "numpy.quantile"])


def test_percentile_dtypes_follow_numpy():
    def f(x, i):
        return np.percentile(x, 30.0), np.percentile(x, np.float64(30)), np.quantile(i, 0.5), \
            np.quantile(i, 0.5, method="lower")

    check(f, lambda n: (randn(n), np.arange(n, dtype=np.int32)), {"x": {0: N1}, "i": {0: N1}}, sizes=(1, 4))


def test_percentile_over_an_empty_axis_is_refused_but_nan_forms_allow_it():
    with pytest.raises(tpe.ConstraintViolationError, match="n >= 1"):
        tpe.export(lambda x: np.percentile(x, 50, axis=0), randn(3, 2), dynamic_shapes={"x": {0: N0}})
    # reducing only the static axis: the dynamic one may be empty
    check(lambda x: np.quantile(x, [0.5], axis=1), lambda n: (randn(n, 3),), {"x": {0: N0}}, sizes=(0, 1, 3))

    def g(x):
        x = np.where(x > 1.0, np.nan, x)
        return np.nanpercentile(x, 40, axis=0), np.nanquantile(x, 0.2, axis=1)

    def h(x):  # an array q: numpy drops q's axes for an empty input, so the input must be nonempty
        return np.nanquantile(np.where(x > 1.0, np.nan, x), [0.2, 0.8], axis=1)

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN / empty slices
        check(g, lambda n: (randn(n, 3),), {"x": {0: N0}}, sizes=(0, 1, 2, 7),
              ops=["numpy.nanpercentile", "numpy.nanquantile"])
        assert np.nanquantile(np.ones((0, 3)), [0.2, 0.8], axis=1).shape == (0,)  # not (2, 0)
        with pytest.raises(tpe.ConstraintViolationError, match="nonempty"):
            tpe.export(h, randn(3, 3), dynamic_shapes={"x": {0: N0}})
        check(h, lambda n: (randn(n, 3),), {"x": {0: N1}}, sizes=(1, 2, 7), ops=["numpy.nanquantile"])


def test_weighted_quantile():
    def f(x, w):
        return np.quantile(x, 0.5, axis=0, weights=w, method="inverted_cdf")

    check(f, lambda n: (randn(n, 2), np.random.default_rng(n).random(n) + 0.1), {"x": {0: N1}, "w": {0: N1}},
          sizes=(1, 5))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # density of an empty input
def test_histogram():
    def f(x, edges):
        h, e = np.histogram(x, bins=5, range=(-3.0, 3.0))
        hd, _ = np.histogram(x, bins=4, range=(-2.0, 2.0), density=True)
        hw, ew = np.histogram(x, bins=edges, weights=np.abs(x))
        hn, en = np.histogram(x, bins=x.shape[0] + 1, range=(-1.0, 1.0))  # a size as the bin count
        return h, e, hd, hw, ew, hn, en

    def make(n):
        return randn(n), np.sort(randn(n + 2, seed=1))

    check(f, make, {"x": {0: N0}, "edges": {0: Dim("k", max=66)}}, sizes=(0, 1, 2, 7), ops=["numpy.histogram"])
    with pytest.raises(tpe.UnsupportedOpError, match="bins='auto'"):
        tpe.export(lambda x: np.histogram(x, bins="auto")[0], randn(8))


def test_digitize_gives_bounded_indices():
    def f(x, bins):
        i = np.digitize(x, bins)
        j = np.digitize(x, bins, right=True)
        table = np.concatenate([bins, bins[-1:]])          # len(bins) + 1 entries: i indexes it
        return i, j, table[i]

    check(f, lambda n: (randn(n), np.sort(randn(n + 2, seed=1))), {"x": {0: N0}, "bins": {0: Dim("k", max=66)}},
          sizes=(0, 1, 2, 7), ops=["numpy.digitize"])


def test_average_and_ptp():
    def f(x, w):
        return (np.average(x, axis=0, weights=w), np.average(x), np.average(x, axis=1, keepdims=True),
                np.average(x, weights=np.ones_like(x)), np.ptp(x, axis=1), np.ptp(x))

    check(f, lambda n: (randn(n, 3), np.random.default_rng(n).random(n) + 0.1), {"x": {0: N1}, "w": {0: N1}},
          sizes=(1, 2, 7), ops=["numpy.average", "numpy.ptp"])
    with pytest.raises(tpe.ConstraintViolationError, match="n >= 1"):
        tpe.export(lambda x: np.ptp(x, axis=0), randn(3, 2), dynamic_shapes={"x": {0: N0}})


def test_reductions_with_where_and_initial():
    import warnings

    def f(x, m):
        return (np.sum(x, axis=0, where=m), np.max(x, axis=0, where=m, initial=-10.0),
                np.nansum(x, axis=1, where=m), np.nanmax(x, axis=0, where=m, initial=-5.0),
                np.nanmin(x, initial=7.0, where=m), np.mean(x, axis=0, where=m), np.nanmean(x, where=m),
                np.nanstd(x, axis=0, where=m), np.nanvar(x, where=m), np.nanprod(x, axis=0, where=m),
                x.max(axis=0, initial=-1.0), np.min(x, axis=0, initial=3.0))

    def make(n):
        x = randn(n, 3)
        x[x > 1.2] = np.nan
        return x, np.random.default_rng(n).random((n, 3)) > 0.3

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # initial= gives max/min an identity: the empty axis is allowed
        check(f, make, {"x": {0: N0}, "m": {0: N0}}, sizes=(0, 1, 2, 7),
              ops=["numpy.nansum", "numpy.nanmax", "numpy.nanstd", "numpy.nanvar", "numpy.nanprod"])
    with pytest.raises(tpe.ConstraintViolationError, match="where= mask"):
        tpe.export(lambda x, m: np.sum(x, where=m), randn(3), np.ones(3, bool),
                   dynamic_shapes={"x": {0: Dim("a", max=9)}, "m": {0: Dim("b", max=9)}})


def test_nan_arg_reductions_and_scans():
    def f(x):
        y = np.where(x > 1.0, np.nan, x)
        return (np.nanargmax(y, axis=1), np.nanargmin(y, axis=1), np.nancumsum(y, axis=0), np.nancumprod(y),
                np.cumulative_sum(x, axis=0, include_initial=True), np.cumulative_prod(x[:, 0]),
                np.cumprod(x, axis=1), np.diff(x, axis=0, prepend=0.0))

    check(f, lambda n: (randn(n, 3),), {"x": {0: N0}}, sizes=(0, 1, 2, 7),
          ops=["numpy.nanargmax", "numpy.nanargmin", "numpy.nancumsum", "numpy.nancumprod",
               "numpy.cumulative_sum", "numpy.cumulative_prod", "numpy.cumprod"])
    with pytest.raises(tpe.ConstraintViolationError, match="n >= 1"):
        tpe.export(lambda x: np.nanargmax(x, axis=0), randn(3, 2), dynamic_shapes={"x": {0: N0}})


def test_isclose():
    check(lambda x, y: (np.isclose(x, y), np.isclose(x, 0.0, equal_nan=True), np.isclose(x, y[:, :1], rtol=0.5)),
          lambda n: (randn(n, 3), randn(n, 3, seed=1)), {"x": {0: N0}, "y": {0: N0}}, sizes=(0, 1, 4),
          ops=["numpy.isclose"])
