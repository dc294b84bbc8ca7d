"""Contractions as ``matmul``: ``tensordot``, ``dot``, ``inner``, ``outer``, ``einsum``.

``tensordot`` moves the contracted axes together, flattens to ``(M, K) @ (K, N)``
and restores the free axes; the flattened sizes are symbolic products.
``einsum`` (explicit or implicit output, ``...``, repeated indices inside one
operand) spells ``...`` out as letters, takes diagonals (``ii``) with ``eye``,
lines every operand up on one index order, multiplies with broadcasting and
sums the contracted indices; two operands whose shared indices have equal
sizes go through ``tensordot``-style ``matmul`` with batch axes instead, so no
outer product is formed.

Numerics: these builders run only under ``run_decompositions``; the default program
runs numpy's own ``einsum``/``tensordot``/... and is bit-identical to eager numpy.
A decomposed float contraction sums its terms in ``matmul``'s (BLAS's) order, not
``einsum``'s, so it differs in the last bits: for an output element summing ``K``
products, ``|decomposed - numpy| <= K * eps * sum(|products|)`` (the bound of any
reordered sum; ``eps`` the dtype's machine epsilon).  Measured on unit-scale data:
up to 6e-5 absolute in float32 for sums of ~100 terms of magnitude ~10, about a fifth
of the bound (``tests/test_decomp_numerics.py`` checks the bound at several sizes).
Integer contractions are exact (wrapping as numpy's do).
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


def _parse(subscripts: str, ndims: list) -> Any:
    """(terms, output) with ``...`` spelled out as fresh upper-case letters; None if malformed."""
    spec = subscripts.replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) != len(ndims):
        return None
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec]
    width = 0
    spelled = []
    for term, ndim in zip(terms, ndims):
        if "..." in term:
            k = ndim - (len(term) - 3)
            if k < 0 or k > len(free):
                return None
            width = max(width, k)
            term = term.replace("...", "".join(free[len(free) - k:]) if k else "")
        if len(term) != ndim or not term.isalpha():
            return None
        spelled.append(term)
    ell = "".join(free[len(free) - width:]) if width else ""
    if arrow:
        if "..." in out:
            out = out.replace("...", ell)
        elif ell:
            return None  # numpy: broadcast axes must be kept when an output is given
    else:
        counts: dict = {}
        for t in spelled:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    if len(set(out)) != len(out) or any(c not in "".join(spelled) for c in out):
        return None
    return spelled, out


def _take_diagonals(x, term: str):
    """Collapse a repeated index (``ii``) of one operand to a single axis: multiply by ``eye``
    and sum the second copy, so the values on the diagonal stay exact."""
    while len(set(term)) != len(term):
        c = next(ch for ch in term if term.count(ch) > 1)
        p, q = term.index(c), term.index(c, term.index(c) + 1)
        rest = [i for i in range(len(term)) if i not in (p, q)]
        x = np.transpose(x, rest + [p, q])
        x = np.sum(x * np.eye(x.shape[-1], dtype=x.dtype), axis=-1)
        term = "".join(term[i] for i in rest) + c
    return x, term


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


def _same_sizes(operands: list, terms: list) -> bool:
    """True when every index shared by the operands has the same size expression in both
    (no size-1 broadcasting), so the ``matmul`` path applies."""
    seen: dict = {}
    for op, t in zip(operands, terms):
        for c, d in zip(t, op.shape):
            key = getattr(d, "expr", d)
            if c in seen and seen[c] != key:
                return False
            seen.setdefault(c, key)
    return True


def einsum(subscripts, *operands, out=None, optimize=False, **kwargs):
    """Einstein summation over string subscripts (see the module docstring for what is covered).

    Float results agree with ``np.einsum`` within ``K * eps * sum(|products|)`` per element
    (``K`` products summed; another summation order), not bit for bit; integers exactly.
    Returns NotImplemented (numpy's call stays) for ``out=``, extra keywords, the sublist
    form, bool operands or subscripts it cannot read.
    """
    if out is not None or kwargs or not isinstance(subscripts, str):
        return NotImplemented
    if any(op.dtype == np.bool_ for op in operands):
        return NotImplemented
    parsed = _parse(subscripts, [op.ndim for op in operands])
    if parsed is None:
        return NotImplemented
    terms, result = parsed
    operands = list(operands)
    for i, (op, t) in enumerate(zip(operands, terms)):
        operands[i], terms[i] = _take_diagonals(op, t)
    if len(operands) == 2 and _same_sizes(operands, terms):
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
