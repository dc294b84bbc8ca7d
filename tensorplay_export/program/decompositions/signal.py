"""1-d convolution and correlation as an outer product summed along its anti-diagonals.

For ``a`` of length ``n`` and ``v`` of length ``m`` the products
``P = a[:, None] * v[None, :]`` are padded with ``n`` zero columns, flattened,
cut to ``n * (n + m - 1)`` elements and viewed as ``(n, n + m - 1)``: row ``j``
is ``P[j]`` shifted right by ``j``, so summing the rows gives the full
convolution ``c[i] = sum_j a[j] v[i - j]``.  ``valid`` and ``same`` are slices
of it at symbolic offsets (``Min``/``Max`` of the lengths).  Correlation is the
convolution with ``conj(v[::-1])``; its ``same`` mode centres differently when
``n < m`` and is decomposed only for static lengths.

Numerics: only ``run_decompositions`` uses these; the default program runs
``np.convolve``/``np.correlate`` itself and is bit-identical to eager numpy.  The
anti-diagonal sum adds each output's ``K = min(n, m)`` products in another order than
numpy's, so a float result differs in the last bits, within
``K * eps * sum(|products|)`` per element (measured: up to 4e-6 absolute in float32 for
~100-sample signals of unit scale, under a tenth of the bound; checked by
``tests/test_decomp_numerics.py``).  Integer inputs give numpy's values exactly.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...capture.symbolic import sym_max, sym_min

__all__ = ["DECOMPOSITIONS", "convolve", "correlate"]

_MODES = {0: "valid", 1: "same", 2: "full"}


def _vector(x):
    x = x if hasattr(x, "node") else np.asarray(x)
    return np.reshape(x, (1,)) if x.ndim == 0 else x


def _full(a, v):
    n, m = a.shape[0], v.shape[0]
    prods = a[:, None] * v[None, :]
    padded = np.concatenate([prods, np.zeros((n, n), dtype=prods.dtype)], axis=1)
    skew = np.reshape(np.ravel(padded)[: n * (n + m - 1)], (n, n + m - 1))
    return np.sum(skew, axis=0, dtype=prods.dtype)


def _mode(mode):
    return _MODES.get(mode, mode) if not isinstance(mode, str) else mode


def _operands(a, v) -> tuple:
    """Both operands as 1-d numeric vectors, or ``(None, None)`` when the builder does not apply."""
    a, v = _vector(a), _vector(v)
    if a.ndim != 1 or v.ndim != 1 or a.dtype.kind not in "iufc" or v.dtype.kind not in "iufc":
        return None, None
    return a, v


def convolve(a, v, mode="full"):
    """Discrete linear convolution of two 1-d sequences (modes full, same, valid).

    Floats: within ``K * eps * sum(|products|)`` of ``np.convolve`` per element (module docstring).
    """
    mode, (a, v) = _mode(mode), _operands(a, v)
    if a is None:
        return NotImplemented
    n, m = a.shape[0], v.shape[0]
    return _mode_slice(_full(a, v), n, m, mode, lambda lo: (lo - 1) // 2)


def correlate(a, v, mode="valid"):
    """Cross-correlation ``c[k] = sum_n a[n + k] conj(v[n])`` of two 1-d sequences.

    Floats: within ``K * eps * sum(|products|)`` of ``np.correlate`` per element (module docstring).
    """
    mode, (a, v) = _mode(mode), _operands(a, v)
    if a is None:
        return NotImplemented
    n, m = a.shape[0], v.shape[0]
    if mode == "same" and not (isinstance(n, int) and isinstance(m, int)):
        return NotImplemented  # the centre depends on which operand is longer
    rev = v[::-1]
    full = _full(a, np.conj(rev) if rev.dtype.kind == "c" else rev)
    return _mode_slice(full, n, m, mode, lambda lo: (m - 1) // 2 if n >= m else n // 2)


def _mode_slice(full: Any, n: Any, m: Any, mode: str, same_start: Callable[[Any], Any]) -> Any:
    """numpy's ``mode`` window of the full result of two sequences of lengths ``n`` and ``m``:
    all of it, the ``max - min + 1`` fully overlapping positions, or ``max`` positions from
    ``same_start(min)`` (where convolve and correlate centre differently)."""
    lo, hi = sym_min(n, m), sym_max(n, m)
    if mode == "full":
        return full
    if mode == "valid":
        return full[lo - 1: hi]
    if mode == "same":
        start = same_start(lo)
        return full[start: start + hi]
    return NotImplemented


DECOMPOSITIONS = {"numpy.convolve": convolve, "numpy.correlate": correlate}
