"""Creation composites over ``arange``: ``linspace``, ``tri``, ``tril``, ``triu``.

Sizes may be symbolic (``np.tri(x.shape[0])``); nothing here branches on them.
"""
from __future__ import annotations

import numpy as np

from ...capture.symbolic import sym_max

__all__ = ["DECOMPOSITIONS", "linspace", "tri", "tril", "triu"]


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (scalar bounds).

    ``y[i] = i / div * (stop - start) + start`` with ``div = num - 1`` (``num``
    without ``endpoint``), the last value pinned to ``stop`` as numpy does.
    ``div`` is clamped to 1 symbolically, so ``num = 1`` gives ``[start]`` without a guard.
    Returns ``NotImplemented`` for array bounds, ``retstep=True`` or ``axis != 0``.
    """
    if retstep or axis != 0 or isinstance(start, np.ndarray) or isinstance(stop, np.ndarray):
        return NotImplemented
    out_dtype = np.dtype(dtype) if dtype is not None else np.result_type(start, stop, 1.0)
    idx = np.arange(num)
    div = (num - 1) if endpoint else num
    y = idx / sym_max(div, 1) * (stop - start) + start
    if endpoint:
        y = np.where((idx == num - 1) & (idx > 0), stop, y)
    if out_dtype.kind in "iu":
        y = np.floor(y)
    return y.astype(out_dtype) if y.dtype != out_dtype else y


def tri(N, M=None, k=0, dtype=float, *, like=None):
    """Ones at and below the ``k``-th diagonal: ``(N, M)`` of ``dtype``."""
    if like is not None:
        return NotImplemented
    M = N if M is None else M
    mask = np.arange(N)[:, None] >= np.arange(M)[None, :] - k
    return mask.astype(dtype)


def tril(m, k=0):
    """``m`` with the elements above the ``k``-th diagonal zeroed (last two axes)."""
    rows, cols = (m.shape[0], m.shape[0]) if m.ndim == 1 else m.shape[-2:]
    mask = np.arange(rows)[:, None] >= np.arange(cols)[None, :] - k
    return np.where(mask, m, m.dtype.type(0))


def triu(m, k=0):
    """``m`` with the elements below the ``k``-th diagonal zeroed (last two axes)."""
    rows, cols = (m.shape[0], m.shape[0]) if m.ndim == 1 else m.shape[-2:]
    mask = np.arange(rows)[:, None] >= np.arange(cols)[None, :] - (k - 1)
    return np.where(mask, m.dtype.type(0), m)


DECOMPOSITIONS = {"numpy.linspace": linspace, "numpy.tri": tri, "numpy.tril": tril, "numpy.triu": triu}
