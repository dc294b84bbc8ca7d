"""Products of sizes as sizes of their own: a linear over-approximation of a nonlinear query.

z3 decides linear integer arithmetic, but a guard over ``b*t`` (a reshape of a ``(b, t, d)``
input to ``(b*t, d)``) is nonlinear, and z3 often times out on it although the guard holds
for any value the product could take (``b*t - 1 <= S - 1`` given ``S == b*t``).  Replacing
each product of two or more symbols by a fresh symbol -- the same one wherever the product
occurs -- bounded by the product of its factors' ranges and tied to them by McCormick's
linear envelopes (``(b - lo_b)*(t - lo_t) >= 0`` and its mirror images) gives a linear query
whose models include every model of the original.  So when the linear query has no
counterexample, the original guard holds ("proved"); its counterexamples may be spurious and
are never reported.  (McCormick 1976, "Computability of global solutions to factorable
nonconvex programs", the envelopes of a bilinear term.)
"""
from __future__ import annotations

from typing import Optional

import sympy

__all__ = ["Abstraction", "abstract_products"]


class Abstraction:
    """The result of :func:`abstract_products`.

    ``exprs``: the expressions with each product replaced; ``products``: fresh symbol ->
    the product it stands for; ``bounds``: fresh symbol -> ``(lo, hi)`` (``hi`` None when
    unbounded); ``envelopes``: linear facts tying each fresh symbol of two factors to them.
    """

    def __init__(self, exprs: list, products: dict, bounds: dict, envelopes: list) -> None:
        self.exprs = exprs
        self.products = products
        self.bounds = bounds
        self.envelopes = envelopes


def _monomial(e: sympy.Mul) -> tuple:
    """``(coefficient, symbol part, other factors)`` of a product."""
    coeff, syms, other = sympy.Integer(1), [], []
    for f in e.args:
        if f.is_Number:
            coeff *= f
        elif f.is_Symbol or (f.is_Pow and f.base.is_Symbol and f.exp.is_Integer and f.exp > 0):
            syms.append(f)
        else:
            other.append(f)
    return coeff, sympy.Mul(*syms), other


def _degree(m: sympy.Basic) -> int:
    if m.is_Symbol:
        return 1
    if m.is_Pow:
        return int(m.exp)
    if m.is_Mul:
        return sum(_degree(f) for f in m.args)
    return 0


def _factors(m: sympy.Basic) -> list:
    """The symbols of a monomial, with multiplicity (``b**2*t`` -> ``[b, b, t]``)."""
    if m.is_Symbol:
        return [m]
    if m.is_Pow:
        return [m.base] * int(m.exp)
    out = []
    for f in m.args:
        out.extend(_factors(f))
    return out


def abstract_products(exprs: list, bounds: dict) -> Optional[Abstraction]:
    """Replace each product of two or more symbols in ``exprs`` by a fresh symbol.

    Args:
        exprs: sympy expressions and relations (the guard and the assumptions).
        bounds: symbol name -> ``(lo, hi)`` of every symbol in them (``hi`` None: unbounded).

    Returns:
        the :class:`Abstraction`, or None when no product of symbols occurs or a factor
        may be negative (the envelopes below assume nonnegative factors, as sizes are).
    """
    products: dict = {}   # monomial -> fresh symbol
    taken = {s.name for e in exprs for s in e.free_symbols}
    ok = [True]

    def fresh(m: sympy.Basic) -> sympy.Symbol:
        sym = products.get(m)
        if sym is None:
            for f in _factors(m):
                lo = bounds.get(f.name, (None, None))[0]
                if lo is None or lo < 0:
                    ok[0] = False
            i = len(products)
            while f"_prod{i}" in taken:
                i += 1
            sym = products[m] = sympy.Symbol(f"_prod{i}", integer=True)
            taken.add(sym.name)
        return sym

    def walk(e: sympy.Basic) -> sympy.Basic:
        if not e.args:
            return e
        if e.is_Pow and e.base.is_Symbol and e.exp.is_Integer and e.exp >= 2:
            return fresh(e)
        if e.is_Mul:
            coeff, mono, other = _monomial(e)
            if _degree(mono) >= 2:
                return coeff * fresh(mono) * sympy.Mul(*[walk(o) for o in other])
        return e.func(*[walk(a) for a in e.args])

    out = [walk(e) for e in exprs]
    if not products or not ok[0]:
        return None
    new_bounds, envelopes = {}, []
    for mono, sym in products.items():
        factors = _factors(mono)
        lo, hi = sympy.Integer(1), sympy.Integer(1)
        for f in factors:
            flo, fhi = bounds[f.name]
            lo *= flo
            hi = None if hi is None or fhi is None else hi * fhi
        new_bounds[sym] = (int(lo), None if hi is None else int(hi))
        if len(factors) == 2:
            (a, b) = factors
            (alo, ahi), (blo, bhi) = bounds[a.name], bounds[b.name]
            # (a - alo)(b - blo) >= 0, and with the upper ends where they are finite
            envelopes.append(sympy.Ge(sym - alo * b - blo * a + alo * blo, 0))
            if ahi is not None and bhi is not None:
                envelopes.append(sympy.Ge(sym - ahi * b - bhi * a + ahi * bhi, 0))
            if ahi is not None:
                envelopes.append(sympy.Le(sym - ahi * b - blo * a + ahi * blo, 0))
            if bhi is not None:
                envelopes.append(sympy.Le(sym - alo * b - bhi * a + alo * bhi, 0))
    return Abstraction(out, {s: m for m, s in products.items()}, new_bounds, envelopes)
