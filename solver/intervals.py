"""Interval arithmetic over sympy size expressions: the solver's fast path.

An interval is a pair ``(lo, hi)`` of ``int``/``Fraction`` bounds or
``-math.inf``/``math.inf``; both ends inclusive. Every function here is sound:
the true value of the expression, for every assignment inside ``ranges``, lies
in the returned interval, and a relation reported ``True``/``False`` holds/fails
for every such assignment. ``None`` means "cannot tell" (never a guess).

``ranges`` maps ``sympy.Symbol`` (or the symbol's name) to ``(lo, hi_or_None)``;
``hi=None`` means unbounded. A symbol missing from ``ranges`` gets the range its
sympy assumptions give (``positive`` -> [1, oo), ``nonnegative`` -> [0, oo)).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping, Optional, Tuple

import sympy

INF = math.inf
Interval = Tuple[object, object]


class _Unbounded(Exception):
    """Raised internally for constructs the fast path does not bound."""


def symbol_range(sym: sympy.Symbol, ranges: Mapping) -> Interval:
    """Inclusive range of ``sym``: from ``ranges`` (by symbol or name) or its assumptions."""
    r = ranges.get(sym)
    if r is None:
        r = ranges.get(sym.name)
    if r is None:
        if sym.is_positive:
            return (1, INF)
        if sym.is_nonnegative:
            return (0, INF)
        return (-INF, INF)
    lo, hi = r
    return (-INF if lo is None else lo, INF if hi is None else hi)


def _mul1(a, b):
    # 0 * inf is 0 here: an unbounded end multiplies a size that is exactly 0
    if a == 0 or b == 0:
        return 0
    return a * b


def _imul(x: Interval, y: Interval) -> Interval:
    cands = [_mul1(a, b) for a in x for b in y]
    return (min(cands), max(cands))


def _floor_div(x: Interval, d) -> Interval:
    """floor(x / d) for a constant d != 0."""
    def f(v):
        if v in (INF, -INF):
            return v if d > 0 else -v
        return math.floor(Fraction(v) / d)
    a, b = f(x[0]), f(x[1])
    return (min(a, b), max(a, b))


def bounds(expr, ranges: Mapping) -> Interval:
    """Interval enclosing ``expr`` over ``ranges``; ``(-inf, inf)`` when unknown."""
    try:
        return _bounds(sympy.sympify(expr), ranges)
    except _Unbounded:
        return (-INF, INF)


def _bounds(e: sympy.Basic, ranges: Mapping) -> Interval:
    if e.is_Integer:
        v = int(e)
        return (v, v)
    if e.is_Rational:
        v = Fraction(int(e.p), int(e.q))
        return (v, v)
    if e.is_Symbol:
        return symbol_range(e, ranges)
    if e.is_Add:
        lo, hi = 0, 0
        for a in e.args:
            alo, ahi = _bounds(a, ranges)
            lo, hi = lo + alo, hi + ahi
        return (lo, hi)
    if e.is_Mul:
        out: Interval = (1, 1)
        for a in e.args:
            out = _imul(out, _bounds(a, ranges))
        return out
    if e.is_Pow:
        base, exp = e.args
        if not exp.is_Integer or int(exp) < 0:
            raise _Unbounded
        n = int(exp)
        lo, hi = _bounds(base, ranges)
        if n % 2 == 1 or lo >= 0:
            return (_pow(lo, n), _pow(hi, n))
        if hi <= 0:
            return (_pow(hi, n), _pow(lo, n))
        return (0, max(_pow(lo, n), _pow(hi, n)))
    if isinstance(e, (sympy.floor, sympy.ceiling)):
        num, den = e.args[0].as_numer_denom()
        if not den.is_Integer or den == 0:
            raise _Unbounded
        d = int(den)
        x = _bounds(num, ranges)
        if isinstance(e, sympy.floor):
            return _floor_div(x, d)
        lo, hi = _floor_div((-x[1], -x[0]), d)  # ceiling(v) == -floor(-v)
        return (-hi, -lo)
    if isinstance(e, sympy.Mod):
        a, b = e.args
        if not b.is_Integer or int(b) <= 0:
            raise _Unbounded
        m = int(b)
        alo, ahi = _bounds(a, ranges)
        if alo != -INF and ahi != INF and math.floor(Fraction(alo) / m) == math.floor(Fraction(ahi) / m):
            # the whole range sits in one period: Mod is a shift of a
            base = math.floor(Fraction(alo) / m) * m
            return (alo - base, ahi - base)
        return (0, m - 1)
    if isinstance(e, sympy.Min):
        bs = [_bounds(a, ranges) for a in e.args]
        return (min(b[0] for b in bs), min(b[1] for b in bs))
    if isinstance(e, sympy.Max):
        bs = [_bounds(a, ranges) for a in e.args]
        return (max(b[0] for b in bs), max(b[1] for b in bs))
    if isinstance(e, sympy.Abs):
        lo, hi = _bounds(e.args[0], ranges)
        if lo >= 0:
            return (lo, hi)
        if hi <= 0:
            return (-hi, -lo)
        return (0, max(-lo, hi))
    if isinstance(e, sympy.Piecewise):
        bs = [_bounds(v, ranges) for v, _ in e.args]
        return (min(b[0] for b in bs), max(b[1] for b in bs))
    raise _Unbounded


def _pow(v, n):
    if v in (INF, -INF):
        return v if (n % 2 == 1 or v > 0) else INF
    return v ** n


def decide(expr, ranges: Mapping) -> Optional[bool]:
    """True/False if ``expr`` holds/fails for every assignment in ``ranges``; else None.

    Args:
        expr: a sympy boolean (relation, And/Or/Not, true/false).
        ranges: ``{Symbol or name: (lo, hi_or_None)}``.
    """
    e = sympy.sympify(expr)
    if e is sympy.true:
        return True
    if e is sympy.false:
        return False
    if isinstance(e, sympy.And):
        vals = [decide(a, ranges) for a in e.args]
        if any(v is False for v in vals):
            return False
        return True if all(v is True for v in vals) else None
    if isinstance(e, sympy.Or):
        vals = [decide(a, ranges) for a in e.args]
        if any(v is True for v in vals):
            return True
        return False if all(v is False for v in vals) else None
    if isinstance(e, sympy.Not):
        v = decide(e.args[0], ranges)
        return None if v is None else not v
    if isinstance(e, sympy.core.relational.Relational):
        try:
            lo, hi = _bounds(e.lhs - e.rhs, ranges)
        except _Unbounded:
            return None
        except TypeError:
            return None
        return _decide_rel(type(e), lo, hi)
    return None


def _decide_rel(kind, lo, hi) -> Optional[bool]:
    """Decide ``d <op> 0`` for d in [lo, hi]."""
    if kind is sympy.Eq:
        if lo == hi == 0:
            return True
        return False if (lo > 0 or hi < 0) else None
    if kind is sympy.Ne:
        v = _decide_rel(sympy.Eq, lo, hi)
        return None if v is None else not v
    if kind is sympy.Le:
        return True if hi <= 0 else (False if lo > 0 else None)
    if kind is sympy.Lt:
        return True if hi < 0 else (False if lo >= 0 else None)
    if kind is sympy.Ge:
        return True if lo >= 0 else (False if hi < 0 else None)
    if kind is sympy.Gt:
        return True if lo > 0 else (False if hi <= 0 else None)
    return None
