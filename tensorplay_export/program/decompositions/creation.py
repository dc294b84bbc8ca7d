"""Creation composites over ``arange``: ``linspace``, ``tri``, ``tril``, ``triu``.

Sizes may be symbolic (``np.tri(x.shape[0])``); nothing here branches on them.
"""
from __future__ import annotations

import numpy as np

from ...capture.symbolic import is_symbolic, sym_max

__all__ = ["DECOMPOSITIONS", "linspace", "tri", "tril", "triu"]


def _bound(value, dt):
    """A linspace bound as a 0-d array of the computing dtype ``dt``, cast as numpy casts both bounds
    before subtracting: a size (int or float) is added to a 0-d zero of ``dt`` at run time (a Python
    number meets an array of ``dt`` in ``dt``), a constant is cast now."""
    return np.zeros((), dt) + value if is_symbolic(value) else np.asarray(value).astype(dt)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (scalar bounds, sizes included).

    numpy's own steps (``numpy/_core/function_base.py``), in the dtype numpy computes in
    (``result_type(start, stop, 1.0)``, read off the example values: a size is the Python int
    eager code passes): ``step = (stop - start) / div`` with ``div = num - 1`` (``num`` without
    ``endpoint``), ``y = arange(num) * step + start``, or ``arange(num) / div * delta`` where
    the step underflows to 0 (both computed, one selected: no branch on a size); the last value
    set to ``stop``; floored before an integer ``dtype``.  ``div`` is clamped to 1
    symbolically, so ``num = 1`` gives ``[start]`` without a guard.  The values are
    numpy's bit for bit.  Returns ``NotImplemented`` for array bounds, ``retstep=True`` or
    ``axis != 0``.
    """
    if retstep or axis != 0 or isinstance(start, np.ndarray) or isinstance(stop, np.ndarray):
        return NotImplemented
    # a size as a bound is the int eager numpy sees (np.result_type would read a size as a dtype name)
    dt = np.result_type(*(v.example() if is_symbolic(v) else v for v in (start, stop)), 1.0)
    out_dtype = np.dtype(dtype) if dtype is not None else dt
    lo, hi = _bound(start, dt), _bound(stop, dt)
    delta = hi - lo
    idx = np.arange(num)
    y = idx.astype(dt)
    div = sym_max((num - 1) if endpoint else num, 1)
    step = delta / div
    y = np.where(step == 0, y / div * delta, y * step) + lo
    if endpoint:
        y = np.where((idx == num - 1) & (idx > 0), hi, y)
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
