"""Recognizers for the simple forms size expressions take (sympy in, plain ints out).

- :func:`affine`: ``k*r + c`` over one root symbol (a derived size);
- :func:`linear_bound`: a relation on one symbol as the inclusive integer bounds it states;
- :func:`min_max_parts`: a bound on a ``Min``/``Max`` as the conjunction of bounds it is.

These are the one place such forms are read: the solver's bound absorption, the
program's input checks and the contract all call them.
"""
from __future__ import annotations

from typing import Any, Optional

import sympy

__all__ = ["affine", "linear_bound", "min_max_parts"]

_RELATIONS = (sympy.Eq, sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt)


def affine(expr: Any) -> Optional[tuple[sympy.Symbol, int, int]]:
    """``k*r + c`` with integers ``k >= 1`` and ``c`` over one symbol ``r`` -> ``(r, k, c)``; else None.

    A bare symbol is ``(r, 1, 0)``.  Negative ``k`` (``32 - r``) is not affine in this sense.
    """
    if not isinstance(expr, sympy.Expr) or len(expr.free_symbols) != 1:
        return None
    (r,) = expr.free_symbols
    if not expr.is_polynomial(r):
        return None
    poly = sympy.Poly(expr, r)
    if poly.degree() != 1:
        return None
    k, c = poly.all_coeffs()
    if not (k.is_Integer and c.is_Integer and k >= 1):
        return None
    return r, int(k), int(c)


def linear_bound(rel: Any) -> Optional[tuple[sympy.Symbol, Optional[int], Optional[int]]]:
    """``(r, lo, hi)`` when ``rel`` is ``a*r + b <op> 0`` on one symbol with integers ``a != 0``, ``b``.

    ``<op>`` is one of ``== <= < >= >``; ``lo``/``hi`` are the inclusive integer
    bounds on ``r`` it states (None = no bound on that side): ``2*r + 1 <= 9`` ->
    ``(r, None, 4)``, ``4 <= r`` -> ``(r, 4, None)``, ``r == 3`` -> ``(r, 3, 3)``.
    An equality whose solution is not an integer (``2*r == 3``) is not a bound: None.
    Integer division rounds toward the admitted side, so the bounds are exact
    over the integers.
    """
    if not isinstance(rel, _RELATIONS) or len(rel.free_symbols) != 1:
        return None
    (r,) = rel.free_symbols
    diff = sympy.expand(rel.lhs - rel.rhs)  # rel: diff <op> 0
    if not diff.is_polynomial(r):
        return None
    poly = sympy.Poly(diff, r)
    if poly.degree() != 1:
        return None
    a, b = poly.all_coeffs()
    if not (a.is_Integer and b.is_Integer):
        return None
    a, b = int(a), int(b)
    op = type(rel)
    if op is sympy.Eq:
        if b % a:
            return None
        return r, -b // a, -b // a
    if a < 0:  # -r + 512 >= 0  ->  r - 512 <= 0
        a, b = -a, -b
        op = {sympy.Le: sympy.Ge, sympy.Lt: sympy.Gt, sympy.Ge: sympy.Le, sympy.Gt: sympy.Lt}[op]
    if op in (sympy.Le, sympy.Lt):  # a*r <= -b  (or < -b)
        return r, None, (-b - (1 if op is sympy.Lt else 0)) // a
    bound = -b + (1 if op is sympy.Gt else 0)  # a*r >= -b  (or > -b)
    return r, -(-bound // a), None


def min_max_parts(rel: Any) -> list:
    """``rel`` as the conjunction it is when a ``Min`` is bounded below or a ``Max`` above:
    ``Min(h, w) > 4`` is ``h > 4`` and ``w > 4`` (and ``Max(h, w) <= 8`` is ``h <= 8`` and
    ``w <= 8``), so each part can tighten its size's range (a Swin block's ``min(H, W) > ws``
    gives both ``H`` and ``W`` the lower bound); ``[rel]`` for anything else."""
    if not isinstance(rel, (sympy.Ge, sympy.Gt, sympy.Le, sympy.Lt)):
        return [rel]
    big, small = (rel.lhs, rel.rhs) if isinstance(rel, (sympy.Ge, sympy.Gt)) else (rel.rhs, rel.lhs)
    op = type(rel)
    if isinstance(big, sympy.Min):
        parts = [op(arg, small) if op in (sympy.Ge, sympy.Gt) else op(small, arg) for arg in big.args]
    elif isinstance(small, sympy.Max):
        parts = [op(big, arg) if op in (sympy.Ge, sympy.Gt) else op(arg, big) for arg in small.args]
    else:
        return [rel]
    return [q for part in parts for q in min_max_parts(part)]
