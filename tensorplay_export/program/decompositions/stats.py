"""Statistics composites: ``average`` (weighted mean), ``ptp`` (max - min), and
``percentile`` / ``quantile`` with the methods ``linear`` (the default), ``lower``, ``higher``.

``average`` follows numpy's own code: integer and bool inputs average in
float64, 1-d weights along ``axis`` are broadcast to that axis, and the result
is ``sum(a * w) / sum(w)`` in the result dtype (no weights: ``mean``).

The quantiles sort along the reduced axis and follow numpy's ``_quantile``
step by step, with the axis length ``n`` symbolic: virtual index
``(n - 1) * q``, neighbours ``floor`` and ``floor + 1`` (both ``-1`` at or past
the last element), numpy's two-sided lerp, and a NaN anywhere in a slice
making its result NaN.  A Python-scalar ``q`` promotes weakly (a float32 input
gives float32), so the interpolation weight is cast to the input's dtype then.
Other methods, ``weights=``, ``out=`` and tuple axes keep the node.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DECOMPOSITIONS", "average", "ptp", "quantile", "percentile"]


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


def _quantiles(a, q, axis, keepdims, method, percent):
    if method not in ("linear", "lower", "higher") or a.dtype.kind not in "biuf" or \
            isinstance(axis, (tuple, list)) or hasattr(q, "node"):
        return NotImplemented
    weak_q = type(q) in (int, float)
    qa = np.true_divide(q, 100) if percent else np.asarray(q)
    if np.asarray(qa).dtype.kind != "f" or np.ndim(qa) > 1:
        return NotImplemented
    qa = np.asarray(qa)
    kept = tuple(1 for _ in a.shape) if axis is None else \
        tuple(1 if i == int(axis) % a.ndim else d for i, d in enumerate(a.shape))
    arr = np.ravel(a) if axis is None else np.moveaxis(a, int(axis) % a.ndim, 0)
    n = arr.shape[0]
    ordered = np.sort(arr, axis=0)
    virtual = (n - 1) * qa
    if method != "linear":
        idx = (np.floor(virtual) if method == "lower" else np.ceil(virtual)).astype(np.intp)
        result = np.take(ordered, idx, axis=0)
    else:
        prev = np.floor(virtual)
        nxt = prev + 1
        above = virtual >= n - 1
        prev = np.where(above, -1.0, prev)
        nxt = np.where(above, -1.0, nxt)
        below = virtual < 0
        prev = np.where(below, 0.0, prev)
        nxt = np.where(below, 0.0, nxt)
        lo = np.take(ordered, prev.astype(np.intp), axis=0)
        hi = np.take(ordered, nxt.astype(np.intp), axis=0)
        gamma = virtual - prev
        if weak_q:
            if a.dtype.kind == "f":
                gamma = gamma.astype(a.dtype)
        else:
            gamma = np.reshape(gamma, tuple(qa.shape) + (1,) * (arr.ndim - 1))
        diff = hi - lo
        result = lo + diff * gamma
        result = np.where(gamma >= 0.5, (hi - diff * (1 - gamma)).astype(result.dtype), result)
    if a.dtype.kind == "f":
        last = ordered[-1]
        result = np.where(np.isnan(last), last.astype(result.dtype), result)
    if keepdims:
        result = np.reshape(result, tuple(qa.shape) + kept)
    return result


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
    """``q``-th quantiles along ``axis`` (``q`` in [0, 1]; methods linear, lower, higher)."""
    if out is not None or weights is not None or interpolation is not None:
        return NotImplemented
    return _quantiles(a, q, axis, keepdims, method, percent=False)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               weights=None, interpolation=None):
    """``q``-th percentiles along ``axis`` (``q`` in [0, 100]; methods linear, lower, higher)."""
    if out is not None or weights is not None or interpolation is not None:
        return NotImplemented
    return _quantiles(a, q, axis, keepdims, method, percent=True)


DECOMPOSITIONS = {"numpy.average": average, "numpy.ptp": ptp, "numpy.quantile": quantile,
                  "numpy.percentile": percentile}
