"""Movement composites: ``moveaxis`` as one ``transpose``; ``split``/``array_split`` as slices.

``array_split(a, k)`` of an axis of size ``n`` gives the first ``n % k`` pieces
``n // k + 1`` elements and the rest ``n // k``: piece ``i`` starts at
``i * (n // k) + Min(i, n % k)``, which stays symbolic.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...capture.symbolic import sym_min

__all__ = ["DECOMPOSITIONS", "moveaxis", "array_split", "split"]


def _norm(axes: Any, ndim: int) -> list:
    items = list(axes) if isinstance(axes, (tuple, list)) else [axes]
    return [int(a) % ndim for a in items]


def moveaxis(a, source, destination):
    """Move axes ``source`` to positions ``destination`` (others keep their order)."""
    src, dst = _norm(source, a.ndim), _norm(destination, a.ndim)
    if len(src) != len(dst):
        return NotImplemented
    order = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return np.transpose(a, order)


def _pieces(ary, bounds: list, axis: int) -> tuple:
    lead = (slice(None),) * axis
    return tuple(ary[lead + (slice(lo, hi),)] for lo, hi in zip(bounds[:-1], bounds[1:]))


def array_split(ary, indices_or_sections, axis=0):
    """Pieces of ``ary`` along ``axis``: at the given indices, or ``k`` nearly equal sections."""
    axis = int(axis) % ary.ndim
    n = ary.shape[axis]
    if isinstance(indices_or_sections, (list, tuple)):
        return _pieces(ary, [0, *indices_or_sections, n], axis)
    if isinstance(indices_or_sections, np.ndarray):
        return NotImplemented
    k = indices_or_sections
    each, extra = n // k, n % k
    bounds = [0] + [i * each + sym_min(i, extra) for i in range(1, int(k))] + [n]
    return _pieces(ary, bounds, axis)


def split(ary, indices_or_sections, axis=0):
    """Pieces of ``ary`` along ``axis``: at the given indices, or ``k`` equal sections."""
    axis = int(axis) % ary.ndim
    n = ary.shape[axis]
    if isinstance(indices_or_sections, (list, tuple)):
        return _pieces(ary, [0, *indices_or_sections, n], axis)
    if isinstance(indices_or_sections, np.ndarray):
        return NotImplemented
    k = int(indices_or_sections)
    each = n // k
    return _pieces(ary, [i * each for i in range(k)] + [n], axis)


DECOMPOSITIONS = {"numpy.moveaxis": moveaxis, "numpy.array_split": array_split, "numpy.split": split}
