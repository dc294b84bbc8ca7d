"""Decomposition cases of the issue-17 composites, in ``tests/test_decomp.py``'s CASES format.

name -> (model, make(n, rng) -> args, dynamic_shapes (over Dim "n"), sizes to run).
``test_ops_decompositions.py`` runs them; ``tests/test_decomp.py`` can merge them into its
CASES (its ``test_every_default_entry_has_a_case`` wants one case per default entry).
"""
from __future__ import annotations

import numpy as np

from tensorplay_export import Dim

N0 = {0: Dim("n", max=64)}
SIZES = (1, 2, 5)


def _f(shape_fn, dtype=np.float64):
    def make(n, rng):
        return tuple(rng.standard_normal(s).astype(dtype) for s in shape_fn(n))
    return make


def m_meshgrid(x, y):
    gx, gy = np.meshgrid(x, y)
    ix, iy, iz = np.meshgrid(x, y, x[:2], indexing="ij")
    sx, sy = np.meshgrid(x, y, sparse=True)
    return gx, gy, ix, iz, sx, sy


def m_kron(a, b):
    return np.kron(a, b), np.kron(a[:, 0], b), np.kron(b, a)


def m_unravel_index(x):
    r, c = np.unravel_index(np.argmax(x.reshape(-1)), x.shape)
    rows, cols = np.unravel_index(np.arange(x.shape[0] * 3), (x.shape[0], 3))
    return r, c, rows, cols


def m_isin(x, t):
    return np.isin(x, t), np.isin(x, t, invert=True), np.isin(x, [1, 3])


def m_convolve(a, v):
    return np.convolve(a, v), np.convolve(a, v, "same"), np.convolve(a, v, "valid"), np.convolve(v, a, "same")


def m_correlate(a, v):
    return np.correlate(a, v), np.correlate(a, v, "full"), np.correlate(v, a, "valid"), \
        np.correlate(a[:3], np.array([1.0, 2.0, 0.5, 4.0]), "same")  # static lengths (3 < 4)


def m_average(x, w):
    return np.average(x, axis=0, weights=w), np.average(x, axis=1), np.average(x, weights=np.abs(x)), \
        np.average((x > 0).astype(np.int32), axis=0, weights=w, keepdims=True)


def m_ptp(x):
    return np.ptp(x, axis=0), np.ptp(x), np.ptp(x, axis=1, keepdims=True)


def m_quantile(x, i):
    y = np.where(x > 1.5, np.nan, x)
    return (np.quantile(x, 0.3, axis=0), np.quantile(x, [0.0, 0.25, 1.0], axis=1, keepdims=True),
            np.quantile(x.astype(np.float32), 0.5), np.quantile(x.astype(np.float32), np.float64(0.5)),
            np.quantile(i, 0.4, axis=0), np.quantile(y, 0.6, axis=0), np.quantile(x, 0.7, method="lower"),
            np.quantile(x, [0.2, 0.9], axis=0, method="higher"))


def m_percentile(x, i):
    return (np.percentile(x, 50), np.percentile(x, [10, 90], axis=0), np.percentile(i, 25, axis=1),
            np.percentile(x.astype(np.float32), 75.0, axis=0, keepdims=True), np.percentile(x, 100, axis=-1))


def _qx(n, rng):
    return rng.standard_normal((n, 3)), rng.integers(0, 9, (n, 3))


def _ints(n, rng):
    return rng.integers(0, 6, (n, 3)), rng.integers(0, 6, n + 1)


def _conv(n, rng):  # a: n, v: 6 - n .. (both orders of lengths across the sizes)
    return rng.standard_normal(n), rng.standard_normal(max(1, 6 - n))


def _avg(n, rng):
    return rng.standard_normal((n, 3)), rng.random(n) + 0.1


CASES = {
    "numpy.meshgrid": (m_meshgrid, _f(lambda n: [(n,), (n + 1,)], np.float32),
                       {"x": N0, "y": {0: Dim("m", max=65)}}, SIZES),
    "numpy.kron": (m_kron, _f(lambda n: [(n, 2), (3, n)]), {"a": N0, "b": {1: Dim("n", max=64)}}, SIZES),
    "numpy.unravel_index": (m_unravel_index, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "numpy.isin": (m_isin, _ints, {"x": N0, "t": {0: Dim("m", max=65)}}, SIZES),
    "numpy.convolve": (m_convolve, _conv, {"a": N0, "v": {0: Dim("m", max=64)}}, (1, 2, 3, 4, 5)),
    "numpy.correlate": (m_correlate, _conv, {"a": {0: Dim("n", min=3, max=64)}, "v": {0: Dim("m", max=64)}},
                        (3, 4, 5)),
    "numpy.average": (m_average, _avg, {"x": N0, "w": N0}, SIZES),
    "numpy.ptp": (m_ptp, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "numpy.quantile": (m_quantile, _qx, {"x": N0, "i": N0}, (1, 2, 3, 5, 8)),
    "numpy.percentile": (m_percentile, _qx, {"x": N0, "i": N0}, (1, 2, 3, 5, 8)),
}
