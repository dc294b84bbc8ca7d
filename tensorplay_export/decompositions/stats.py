"""Statistics composites: ``average`` (weighted mean) and ``ptp`` (max - min).

``average`` follows numpy's own code: integer and bool inputs average in
float64, 1-d weights along ``axis`` are broadcast to that axis, and the result
is ``sum(a * w) / sum(w)`` in the result dtype (no weights: ``mean``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["DECOMPOSITIONS", "average", "ptp"]


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """(Weighted) mean along ``axis``; ``NotImplemented`` for ``returned=True``."""
    if returned or not hasattr(a, "node"):
        return NotImplemented
    if weights is None:
        return np.mean(a, axis=axis, keepdims=keepdims)
    w = weights if hasattr(weights, "node") else np.asarray(weights)
    if a.dtype.kind in "biu":
        dtype = np.result_type(a.dtype, w.dtype, "f8")
    else:
        dtype = np.result_type(a.dtype, w.dtype)
    if w.ndim != a.ndim:  # (equal ndims: capture required equal shapes) 1-d weights along axis
        if axis is None or w.ndim != 1 or isinstance(axis, (tuple, list)):
            return NotImplemented
        ax = int(axis) % a.ndim
        w = np.reshape(w, tuple(w.shape[0] if i == ax else 1 for i in range(a.ndim)))
    scale = np.sum(w, axis=axis, dtype=dtype, keepdims=keepdims)
    return np.sum(np.multiply(a, w, dtype=dtype), axis=axis, keepdims=keepdims) / scale


def ptp(a, axis=None, out=None, keepdims=False):
    """Range of values along ``axis``: ``max - min``."""
    if out is not None:
        return NotImplemented
    return np.subtract(np.max(a, axis=axis, keepdims=keepdims), np.min(a, axis=axis, keepdims=keepdims))


DECOMPOSITIONS = {"numpy.average": average, "numpy.ptp": ptp}
