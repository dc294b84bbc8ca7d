"""Statistics as sums: ``var``, ``std`` (function and ``ndarray`` method forms).

``var(a) = sum((a - sum(a)/n)**2) / (n - ddof)`` over the reduced axes, where
``n`` is the product of their (symbolic) sizes.  Integer and bool inputs are
promoted to float64 first and float16 is accumulated in float32, as numpy does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DECOMPOSITIONS", "var", "std"]


def _axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(sorted(int(a) % ndim for a in items)) if ndim else ()


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Variance over ``axis``; same result shape and dtype as ``np.var``.

    Args:
        a: array (*). axis: None, int or tuple. ddof: delta degrees of freedom.
    Returns:
        ``a``'s shape without (or, ``keepdims``, with size 1 on) the reduced axes.
        ``NotImplemented`` for ``out=``, ``where=``, ``mean=``, ``correction=`` and complex input.
    """
    if out is not None or where is not None or mean is not None or correction is not None:
        return NotImplemented
    kind = np.dtype(dtype).kind if dtype is not None else a.dtype.kind
    if kind == "c":
        return NotImplemented
    x = a
    if dtype is not None:
        x = x.astype(dtype)
    elif kind in "biu":
        x = x.astype(np.float64)
    result_dtype = x.dtype
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    axes = _axes(axis, a.ndim)
    n: Any = 1
    for i in axes:
        n = n * a.shape[i]
    centered = x - np.sum(x, axis=axes, keepdims=True) / n
    total = np.sum(centered * centered, axis=axes, keepdims=bool(keepdims))
    result = total / (n - ddof)
    return result.astype(result_dtype) if result.dtype != result_dtype else result


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Standard deviation: ``sqrt(var(...))`` with the same arguments and result as ``np.std``."""
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    if v is NotImplemented:
        return v
    return np.sqrt(v)


# registry name -> numpy function (the ndarray method forms share these entries).
DECOMPOSITIONS = {"numpy.var": var, "numpy.std": std}
