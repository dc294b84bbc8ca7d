"""Contractions as ``matmul``: ``tensordot``, ``dot``, ``inner``, ``outer``, ``einsum``.

``tensordot`` moves the contracted axes together, flattens to ``(M, K) @ (K, N)``
and restores the free axes; the flattened sizes are symbolic products.
``einsum`` (explicit or implicit output, no ``...``, no repeated index inside
one operand) lines every operand up on one index order, multiplies with
broadcasting and sums the contracted indices; two operands go through
``tensordot``-style ``matmul`` with batch axes instead, so no outer product is formed.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DECOMPOSITIONS", "tensordot", "dot", "inner", "outer", "einsum"]


def _prod(sizes: Any) -> Any:
    out: Any = 1
    for s in sizes:
        out = out * s
    return out


def tensordot(a, b, axes=2):
    """Sum products over ``axes`` of ``a`` and ``b`` (numpy's forms: int or a pair of sequences)."""
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ax_a, ax_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [int(i) % a.ndim for i in (ax_a if isinstance(ax_a, (list, tuple)) else [ax_a])]
        ax_b = [int(i) % b.ndim for i in (ax_b if isinstance(ax_b, (list, tuple)) else [ax_b])]
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    at = np.transpose(a, free_a + ax_a).reshape(_prod(a.shape[i] for i in free_a),
                                                _prod(a.shape[i] for i in ax_a))
    bt = np.transpose(b, ax_b + free_b).reshape(_prod(b.shape[i] for i in ax_b),
                                                _prod(b.shape[i] for i in free_b))
    out = np.matmul(at, bt)
    return out.reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


def dot(a, b, out=None):
    """numpy ``dot``: scalars multiply; else contract a's last axis with b's second-to-last (or only)."""
    if out is not None:
        return NotImplemented
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([a.ndim - 1], [max(b.ndim - 2, 0)]))


def inner(a, b):
    """numpy ``inner``: contract the last axes of ``a`` and ``b``."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a, b, out=None):
    """numpy ``outer``: ``a.ravel()[:, None] * b.ravel()[None, :]``."""
    if out is not None:
        return NotImplemented
    return np.ravel(a)[:, None] * np.ravel(b)[None, :]


def _parse(subscripts: str, n_ops: int) -> Any:
    spec = subscripts.replace(" ", "")
    if "." in spec:
        return None
    if "->" in spec:
        ins, out = spec.split("->")
    else:
        ins, out = spec, None
    terms = ins.split(",")
    if len(terms) != n_ops or any(len(set(t)) != len(t) for t in terms):
        return None
    if out is None:
        counts: dict = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, k in counts.items() if k == 1))
    return terms, out


def _sum_private(x, term: str, keep: str):
    """Sum axes of ``x`` whose index is not in ``keep``; returns (array, remaining term)."""
    drop = tuple(i for i, c in enumerate(term) if c not in keep)
    if not drop:
        return x, term
    return np.sum(x, axis=drop), "".join(c for c in term if c in keep)


def _einsum_two(a, ta: str, b, tb: str, out: str):
    a, ta = _sum_private(a, ta, tb + out)
    b, tb = _sum_private(b, tb, ta + out)
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]
    size = {c: a.shape[ta.index(c)] for c in ta}
    size.update({c: b.shape[tb.index(c)] for c in tb if c not in size})
    at = np.transpose(a, [ta.index(c) for c in batch + left + contract])
    bt = np.transpose(b, [tb.index(c) for c in batch + contract + right])
    lead = tuple(size[c] for c in batch)
    at = at.reshape(lead + (_prod(size[c] for c in left), _prod(size[c] for c in contract)))
    bt = bt.reshape(lead + (_prod(size[c] for c in contract), _prod(size[c] for c in right)))
    res = np.matmul(at, bt).reshape(lead + tuple(size[c] for c in left + right))
    have = batch + left + right
    return np.transpose(res, [have.index(c) for c in out])


def einsum(subscripts, *operands, out=None, optimize=False, **kwargs):
    """Einstein summation over string subscripts (see the module docstring for what is covered)."""
    if out is not None or kwargs or not isinstance(subscripts, str):
        return NotImplemented
    parsed = _parse(subscripts, len(operands))
    if parsed is None or any(op.dtype == np.bool_ for op in operands):
        return NotImplemented
    terms, result = parsed
    if len(operands) == 2:
        return _einsum_two(operands[0], terms[0], operands[1], terms[1], result)
    order = []
    for t in terms:
        order += [c for c in t if c not in order]
    total = None
    for op, t in zip(operands, terms):
        ranked = sorted(t, key=order.index)
        x = np.transpose(op, [t.index(c) for c in ranked]) if list(t) != ranked else op
        x = x[tuple(slice(None) if c in t else None for c in order)]
        total = x if total is None else total * x
    drop = tuple(i for i, c in enumerate(order) if c not in result)
    if drop:
        total = np.sum(total, axis=drop)
    kept = [c for c in order if c in result]
    perm = [kept.index(c) for c in result]
    return np.transpose(total, perm) if perm != list(range(len(perm))) else total


DECOMPOSITIONS = {"numpy.tensordot": tensordot, "numpy.dot": dot, "numpy.inner": inner,
                  "numpy.outer": outer, "numpy.einsum": einsum}
