"""Periods and monotonicity of size expressions, per dim: what lets a fix put one dim on a lattice.

The fix search meets guards over several dims built from floors and remainders (two inputs
downsampled, concatenated, then regrouped: ``(a + b // 4) % 2 == 0``,
``(a // 2 + 1) // 2 == b // 2 + 1``).  Two facts about such an expression ``e`` decide
which fix forms express them:

- :func:`shift_period`: the least ``P`` with ``e(x + P) - e(x) == c`` for one constant
  ``c`` and every size (``x`` from a given start, the other dims in their ranges).  On the
  lattice ``x = P*_x + r`` the expression is then ``c*_x + e(r)`` *exactly*: a remainder
  guard drops ``x`` (``c == 0``), a floor equality becomes linear in ``_x`` (a relation can
  state it).  Floors and remainders by constants are periodic this way, with a period
  dividing the product of the divisors ``x`` passes through (:func:`divisor_product`).
- :func:`monotone_signs`: the direction (+1 up, -1 down) in which ``e`` moves with each dim,
  when it is monotone in each separately (floors of increasing forms are non-decreasing):
  a box of ranges around the example then implies ``e >= 0`` once its worst corner does.

Pure sympy and the solver's own evaluator and decision procedure; no arrays.
"""
from __future__ import annotations

import random
from typing import Callable, Mapping, Optional

import sympy

from . import numeric
from .decide import ShapeSolver

_MAX_PERIOD = 4096      # periods beyond this are not tried (the lattice would admit few sizes)
_SAMPLES = 6            # random points of the other dims per candidate, before z3 is asked


def divisor_product(expr, name: str) -> int:
    """The product of the integer divisors (``floor(u/k)``, ``ceiling(u/k)``, ``Mod(u, k)``) of the
    nodes of ``expr`` whose argument contains ``name``; 1 when ``name`` enters only polynomially.

    Nested nodes multiply (``(x // 2) // 2`` gives 4, ``(x // 2) % 3`` gives 6): a shift of
    ``x`` by the product moves every such node by an integer, or leaves a remainder unchanged.
    """
    out = 1
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Mod):
            arg, k = node.args
            if k.is_Integer and int(k) > 1 and _has_name(arg, name):
                out *= int(k)
        elif isinstance(node, (sympy.floor, sympy.ceiling)) and _has_name(node.args[0], name):
            den = sympy.fraction(sympy.together(node.args[0]))[1]
            if den.is_Integer and int(den) > 1:
                out *= int(den)
    return out


def _has_name(e, name: str) -> bool:
    return any(s.name == name for s in e.free_symbols)


def _divisors(n: int) -> list:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def shift_period(expr, name: str, hints: Mapping[str, int], start: Optional[int], ranges: Mapping,
                 *, timeout_ms: int = 200, cache: Optional[dict] = None) -> Optional[tuple[int, int]]:
    """``(P, c)``: the least ``P >= 1`` such that ``expr(name + P) - expr(name) == c`` for every
    ``name >= start`` and every other dim in ``ranges`` (proved by z3), else None.

    ``P`` is tried among the divisors of :func:`divisor_product` (smallest first, at most
    ``_MAX_PERIOD``); each candidate is checked at integers first (a window of sizes around the
    example, and random sizes of the other dims), so z3 sees only the ones that pass.  ``c`` is
    the shift at the example.  On the lattice ``name = P*t + r`` (``r >= start``) the expression
    is ``c*t + expr(r)`` for every ``t >= 0``, by induction on ``t``.

    Args:
        expr: a sympy expression over size symbols.
        hints: example size of every symbol, by name.
        start: the least value of ``name`` the identity must hold from (None: unbounded).
        ranges: ``{name: (lo, hi_or_None)}`` of every other symbol.

    Raises:
        UnsupportedExpressionError: a construct the solver cannot translate.
    """
    q = divisor_product(expr, name)
    if q > _MAX_PERIOD * _MAX_PERIOD:
        return None
    sym = next(s for s in expr.free_symbols if s.name == name)
    others = sorted((s for s in expr.free_symbols if s.name != name), key=lambda s: s.name)
    h = hints[name]
    rng = random.Random(h * 7919 + q)
    envs = [dict(hints)]
    for _ in range(_SAMPLES):
        env = dict(hints)
        for s in others:
            lo, hi = ranges.get(s.name, (1, None))
            lo = 0 if lo is None else lo
            hi = max(lo, hints[s.name]) + 3 * q if hi is None else hi
            env[s.name] = rng.randint(lo, hi)
        envs.append(env)
    base = h if start is None else max(start, h - q)
    for p in _divisors(q):
        if p > _MAX_PERIOD:
            break
        shifted = expr.xreplace({sym: sym + p})
        c = _shift_at(expr, shifted, hints)
        if c is None or not _holds_at(expr, shifted, c, name, base, q, envs):
            continue
        s = ShapeSolver(timeout_ms, cache=cache)
        for o in others:
            lo, hi = ranges.get(o.name, (1, None))
            s.declare(o.name, lo, hi)
        s.declare(name, start, None)
        if s.implies(sympy.Eq(shifted - expr, c)).proved:
            return p, c
    return None


def _shift_at(expr, shifted, env) -> Optional[int]:
    try:
        v = numeric.value(shifted - expr, env)
    except numeric.NumericError:
        return None
    return int(v) if not isinstance(v, bool) and v == int(v) else None


def _holds_at(expr, shifted, c, name, base, q, envs) -> bool:
    for env in envs:
        for x in range(base, base + 2 * q + 1):
            point = {**env, name: x}
            if _shift_at(expr, shifted, point) != c:
                return False
    return True


def monotone_signs(expr, nonnegative: Optional[Callable[[object], bool]] = None) -> Optional[dict]:
    """``{name: +1 or -1}``: ``expr`` never decreases (+1) or never increases (-1) as that dim
    grows with the others fixed; None when some dim enters both ways or through a node that is
    not monotone (``Mod``, a product of two sizes).

    Sums and constant multiples combine the signs; ``floor``, ``ceiling``, ``Min`` and ``Max``
    keep them (each is non-decreasing in its arguments).  With ``nonnegative`` (a test that an
    expression is >= 0 wherever the caller evaluates it, e.g. over the declared ranges), a
    product of monotone factors that are all nonnegative is monotone too, and so is a positive
    integer power of one: ``(a // 2) * (b // 3)`` gets ``{a: 1, b: 1}`` (for ``u, v >= 0``
    non-decreasing, ``u*v`` is: ``u'v' - uv = (u' - u)v' + u(v' - v) >= 0``).  A dim in two
    factors needs the same sign in both.
    """
    if expr.is_Number:
        return {}
    if expr.is_Symbol:
        return {expr.name: 1}
    if isinstance(expr, sympy.Mul):
        coeff, rest = expr.as_coeff_Mul()
        if isinstance(rest, sympy.Mul):  # a product of sizes: monotone when every factor is >= 0
            if nonnegative is None:
                return None
            inner = _product_signs(rest.args, nonnegative)
        else:
            inner = monotone_signs(rest, nonnegative)
        if inner is None:
            return None
        return {n: (v if coeff > 0 else -v) for n, v in inner.items()}
    if isinstance(expr, sympy.Pow):
        base, exp = expr.args
        if nonnegative is None or not exp.is_Integer or int(exp) < 1:
            return None
        return _product_signs([base], nonnegative)
    if isinstance(expr, (sympy.Add, sympy.Min, sympy.Max)):
        return _combined([monotone_signs(arg, nonnegative) for arg in expr.args])
    if isinstance(expr, (sympy.floor, sympy.ceiling)):
        return monotone_signs(expr.args[0], nonnegative)
    return None


def _product_signs(factors, nonnegative) -> Optional[dict]:
    parts = []
    for f in factors:
        if not f.free_symbols:
            if not f.is_nonnegative:
                return None
            continue
        if not nonnegative(f):
            return None
        parts.append(monotone_signs(f, nonnegative))
    return _combined(parts)


def _combined(parts) -> Optional[dict]:
    out: dict = {}
    for part in parts:
        if part is None:
            return None
        for n, v in part.items():
            if out.setdefault(n, v) != v:
                return None
    return out
