"""Grid and product composites: ``meshgrid``, ``kron``, ``unravel_index``, ``isin``.

``meshgrid`` reshapes each input to its axis of the grid and broadcasts (as
numpy's own code does); ``kron`` interleaves the axes of an outer product and
merges them pairwise; ``unravel_index`` peels the coordinates off with ``%``
and ``//`` from the last axis; ``isin`` compares every element with every test
element and reduces with ``any``.  Sizes stay symbolic (``x.size`` is the
product of the traced sizes), so no reshape needs a guard.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DECOMPOSITIONS", "meshgrid", "kron", "unravel_index", "isin"]


def _traced(v) -> bool:
    return hasattr(v, "node")  # a traced array (a constant or Python value has no node)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate grids: input ``i`` runs along grid axis ``i`` (axes 0 and 1 swapped for ``"xy"``)."""
    if indexing not in ("xy", "ij") or not all(_traced(x) for x in xi):
        return NotImplemented
    ndim = len(xi)
    axes = list(range(ndim))
    if indexing == "xy" and ndim > 1:
        axes[0], axes[1] = 1, 0
    sizes = [x.size for x in xi]
    full = [1] * ndim
    for i, s in zip(axes, sizes):
        full[i] = s
    out = []
    for x, i, s in zip(xi, axes, sizes):
        shape = [1] * ndim
        shape[i] = s
        g = np.reshape(x, tuple(shape))
        if not sparse:
            g = np.broadcast_to(g, tuple(full))
        out.append(np.copy(g) if copy else g)
    return tuple(out)


def kron(a, b):
    """Kronecker product: ``a[i, None, j, None] * b[None, k, None, l]`` merged to ``(i*k, j*l)``."""
    if not (_traced(a) and _traced(b)) or max(a.ndim, b.ndim) == 0:
        return NotImplemented
    nd = max(a.ndim, b.ndim)
    a = np.reshape(a, (1,) * (nd - a.ndim) + tuple(a.shape))
    b = np.reshape(b, (1,) * (nd - b.ndim) + tuple(b.shape))
    outer = a[(slice(None), None) * nd] * b[(None, slice(None)) * nd]
    return np.reshape(outer, tuple(a.shape[i] * b.shape[i] for i in range(nd)))


def unravel_index(indices, shape, order="C"):
    """Coordinates of flat ``indices`` in ``shape`` (C order): ``% d`` and ``// d`` from the last axis."""
    if order != "C" or not _traced(indices):
        return NotImplemented
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    rest = indices.astype(np.intp)
    coords = []
    for d in reversed(dims[1:]):
        coords.append(rest % d)
        rest = rest // d
    coords.append(rest)
    return tuple(reversed(coords))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Membership by comparison: ``any(element[..., None] == ravel(test_elements), axis=-1)``."""
    if not _traced(element) or element.dtype.kind not in "biufc":
        return NotImplemented
    test = np.ravel(test_elements) if _traced(test_elements) else np.ravel(np.asarray(test_elements))
    if test.dtype.kind not in "biufc":
        return NotImplemented
    hit = np.any(np.expand_dims(element, -1) == test, axis=-1)
    return np.logical_not(hit) if invert else hit


DECOMPOSITIONS = {"numpy.meshgrid": meshgrid, "numpy.kron": kron, "numpy.unravel_index": unravel_index,
                  "numpy.isin": isin}
