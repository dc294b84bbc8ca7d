"""Range-aware canonical form of size guards: readable and cheap to decide.

``canonicalize(expr, ranges)`` rewrites bottom-up with a few rules, each sound
for every assignment inside ``ranges`` (each has a z3 soundness test in
tests/solver/test_canon.py):

1. ``Min``/``Max``: drop an argument another argument dominates over the ranges
   (interval of their difference, or of a bound of it with its floors relaxed), e.g.
   ``Min(128*s, 512*s) -> 128*s`` and ``Min(b, b // 2) -> b // 2`` for s, b >= 0.
2. ``Eq(x, Min(x, a, ...)) -> x <= a & ...`` and ``Eq(x, Max(x, a)) -> x >= a``
   (true for any integers; the readable form of a broadcast/slice guard).
3. ``x - k*floor(x/k) -> Mod(x, k)`` for a constant k > 0 (any integer x).
4. Relations: move everything to one side, pull out the common factor
   (``factor_terms``) and drop factors whose interval excludes 0 (for ``Eq``/``Ne``)
   or is > 0 (inequalities; a negative factor flips the relation). This is why
   the form depends on the ranges: ``batch`` is dropped only when ``batch >= 1``.
5. A relation the intervals decide becomes ``true``/``false``.
6. A relation with an integer constant term is rewritten as ``diff <rel> 0``
   split into positive and negative terms, so the constant ends up on one side
   (``seq - 1 <= 511 -> seq <= 512``, ``dx - 1 >= 1 -> dx >= 2``,
   ``dx - 1 == dy -> dx == dy + 1``): the same integer added to both sides,
   sound for every assignment.

Never calls ``sympy.simplify`` (slow, and not range-aware).
"""
from __future__ import annotations

from typing import Mapping

import sympy
from sympy.core.relational import Relational

from .intervals import bounds, decide, symbol_range

_REL = (sympy.Eq, sympy.Ne, sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge)
_FLIP = {sympy.Lt: sympy.Gt, sympy.Le: sympy.Ge, sympy.Gt: sympy.Lt, sympy.Ge: sympy.Le,
         sympy.Eq: sympy.Eq, sympy.Ne: sympy.Ne}


def canonicalize(expr, ranges: Mapping | None = None):
    """Range-aware cleanup of a size expression or guard.

    Args:
        expr: sympy expression or boolean over size symbols.
        ranges: ``{Symbol or name: (lo, hi_or_None)}`` inclusive; symbols not
            listed use their sympy assumptions (positive -> >= 1).

    Returns:
        An expression equal to ``expr`` for every assignment inside ``ranges``
        (possibly ``sympy.true``/``sympy.false``).

    Example:
        >>> import sympy
        >>> seq = sympy.Symbol("seq", integer=True, positive=True)
        >>> canonicalize(sympy.Eq(seq, sympy.Min(512, seq)), {seq: (1, 1024)})
        seq <= 512
    """
    ranges = ranges or {}
    e = sympy.sympify(expr)
    if e.is_Atom:
        return e
    # The form depends on ranges only through the intervals of e's own symbols, so those
    # key the cache: capture canonicalizes each guard again in the solver's query and
    # assumption (tens of ms each for floors), under the same intervals.
    key = (e, tuple(sorted(((s.name, s, symbol_range(s, ranges)) for s in e.free_symbols),
                           key=lambda t: t[0])))
    hit = _CACHE.get(key)
    if hit is None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        hit = _CACHE[key] = _canon(e, ranges)
    return hit


_CACHE: dict = {}
_CACHE_SIZE = 8192


def clear_cache() -> None:
    """Forget every cached canonical form (benchmarks measure an export that shares none)."""
    _CACHE.clear()


def _canon(e: sympy.Basic, ranges: Mapping) -> sympy.Basic:
    if e.is_Atom:
        return e
    if isinstance(e, sympy.Piecewise):
        return sympy.Piecewise(*[(_canon(v, ranges), _canon(c, ranges)) for v, c in e.args])
    args = [_canon(a, ranges) for a in e.args]
    if isinstance(e, (sympy.Min, sympy.Max)):
        return _drop_dominated(type(e), args, ranges, e)
    if isinstance(e, Relational) and isinstance(e, _REL):
        same = args[0] is e.args[0] and args[1] is e.args[1]
        return _canon_rel(type(e), args[0], args[1], ranges, e if same else None)
    if isinstance(e, sympy.Add):
        return _mod_pattern(sympy.Add(*args))
    if tuple(args) == e.args:
        return e
    return e.func(*args)


def _drop_dominated(kind, args, ranges, orig) -> sympy.Basic:
    """Min/Max without the arguments that can never be the answer."""
    kept: list = []
    for a in args:
        if any(_dominates(kind, k, a, ranges) for k in kept):
            continue  # a kept argument is always at least as good
        kept = [k for k in kept if not _dominates(kind, a, k, ranges)]
        kept.append(a)
    if len(kept) == 1:
        return kept[0]
    if len(kept) == len(orig.args) and all(k is o for k, o in zip(kept, orig.args)):
        return orig
    # sympy's Min/Max constructor compares every pair through its assumption system (ms each)
    return kind(*kept, evaluate=False)


def _dominates(kind, a, b, ranges) -> bool:
    """True if ``a`` is always the Min (resp. Max) of {a, b}: a <= b (resp. a >= b).

    The interval of ``a - b`` decides; when it does not, so does the interval of a bound of
    ``a - b`` in which each top-level ``floor(u)``/``ceiling(u)`` is replaced by ``u`` or
    ``u -+ 1`` (``u - 1 <= floor(u) <= u <= ceiling(u) <= u + 1``), the one on the side that
    keeps it a bound: ``b // 2 <= b`` because ``b // 2 - b <= b/2 - b = -b/2 <= 0``.
    """
    diff = a - b
    lo, hi = bounds(diff, ranges)
    if (hi <= 0) if kind is sympy.Min else (lo >= 0):
        return True
    if not diff.has(sympy.floor, sympy.ceiling):
        return False
    upper = kind is sympy.Min  # Min: show a - b <= 0 (an upper bound); Max: a - b >= 0 (a lower one)
    lo, hi = bounds(floor_relaxed(diff, upper), ranges)
    return hi <= 0 if upper else lo >= 0


def floor_relaxed(expr, upper: bool):
    """An upper (``upper=True``) or lower bound of ``expr`` for every assignment, with each of its
    top-level ``c*floor(u)`` / ``c*ceiling(u)`` terms replaced by ``c*u`` or ``c*(u -+ 1)``
    (``u - 1 <= floor(u) <= u <= ceiling(u) <= u + 1``), whichever keeps it a bound: a linear
    form where ``expr`` was one but for its floors."""
    relaxed = []
    for term in sympy.Add.make_args(sympy.expand(expr)):
        coeff, rest = term.as_coeff_Mul()
        if isinstance(rest, (sympy.floor, sympy.ceiling)) and coeff.is_Rational:
            u = rest.args[0]
            high = (coeff > 0) == upper  # this term's largest value is wanted
            if isinstance(rest, sympy.floor):
                rest = u if high else u - 1
            else:
                rest = u + 1 if high else u
        relaxed.append(coeff * rest)
    return sympy.Add(*relaxed)


def _minmax_eq(lhs, rhs):
    """Eq(x, Min(x, a, ..)) -> And(x <= a, ..); Max likewise; else None."""
    for x, m in ((lhs, rhs), (rhs, lhs)):
        if isinstance(m, (sympy.Min, sympy.Max)) and x in m.args:
            others = [a for a in m.args if a != x]
            rel = sympy.Le if isinstance(m, sympy.Min) else sympy.Ge
            return sympy.And(*[_rel_or_const(rel, x, a) for a in others])
    return None


def _canon_rel(kind, lhs, rhs, ranges, orig=None) -> sympy.Basic:
    if kind in (sympy.Eq, sympy.Ne):
        rewritten = _minmax_eq(lhs, rhs)
        if rewritten is not None:
            out = _canon(rewritten, ranges)
            return out if kind is sympy.Eq else sympy.Not(out)
    # sympy's own evaluation of a relation walks its assumption system (slow);
    # build unevaluated and let the intervals decide
    rel = orig if orig is not None else _rel_or_const(kind, lhs, rhs)
    if rel in (sympy.true, sympy.false):
        return rel
    verdict = decide(rel, ranges)
    if verdict is not None:
        return sympy.true if verdict else sympy.false
    reduced = _cancel_factors(kind, lhs, rhs, ranges)
    if reduced is None:
        moved = _move_constant(kind, lhs - rhs)
        return rel if moved is None or moved == rel else moved
    kind2, diff = reduced
    out = _split(kind2, diff)
    verdict = decide(out, ranges) if out not in (sympy.true, sympy.false) else None
    if verdict is not None:
        return sympy.true if verdict else sympy.false
    return out


def _cancel_factors(kind, lhs, rhs, ranges):
    """(kind, diff) with ``diff <kind> 0`` equivalent to the relation, or None if nothing changed."""
    diff = lhs - rhs
    if diff.is_Number:
        return None
    content, prim = diff.as_content_primitive()  # content is a positive rational
    if content == 1 and not prim.has(sympy.floor) and not _common_symbolic_factor(prim):
        return None  # factor_terms costs ms; nothing to cancel here
    factored = sympy.factor_terms(prim)
    if factored.is_Number:  # the sides were one polynomial written two ways (s*(s + 1) vs s**2 + s)
        return kind, factored * content
    coeff, factors = factored.as_coeff_mul()
    changed = content != 1 or (coeff != 1 and coeff != -1)
    keep = []
    sign = 1
    if coeff < 0:
        sign = -1
    for f in factors:
        lo, hi = bounds(f, ranges)
        if kind in (sympy.Eq, sympy.Ne):
            if lo > 0 or hi < 0:
                changed = True
                continue
        else:
            if lo > 0:
                changed = True
                continue
            if hi < 0:
                changed = True
                sign = -sign
                continue
        keep.append(f)
    core = sympy.Mul(*keep)
    modded = _mod_pattern(core)
    if modded != core:
        changed = True
        core = modded
    if not changed:
        return None
    if sign < 0:
        if kind in (sympy.Eq, sympy.Ne):
            core = -core
        else:
            kind = _FLIP[kind]
    return kind, core


def _common_symbolic_factor(e) -> bool:
    """True if every term of ``e`` shares a non-numeric factor (cheap test before factor_terms)."""
    terms = sympy.Add.make_args(e)
    if len(terms) < 2:
        return not e.is_Number and not e.is_Symbol
    common = None
    for t in terms:
        factors = set(sympy.Mul.make_args(t.as_coeff_Mul()[1]))
        for f in list(factors):
            if f.is_Pow and f.exp.is_Integer and f.exp > 0:
                factors.add(f.base)
        common = factors if common is None else common & factors
        if not common:
            return False
    return bool(common)


def _move_constant(kind, diff):
    """``diff <kind> 0`` with its integer constant term moved across (via :func:`_split`), or None.

    None when ``diff`` has no nonzero integer constant term or nothing symbolic.
    """
    const, rest = diff.as_coeff_Add()
    if const == 0 or not const.is_Integer or rest == 0 or rest.is_Number:
        return None
    return _split(kind, diff)


def _split(kind, diff) -> sympy.Basic:
    """``diff <kind> 0`` written as ``positive terms <kind> negated negative terms``.

    A constant goes with the side where it is positive (``dx + 1 == dy``,
    ``dx == dy + 1``), or opposite the symbols when they are all on one side
    (``seq <= 512``, not ``seq - 512 <= 0``).
    """
    terms = sympy.Add.make_args(diff)
    pos = [t for t in terms if not _is_negative_term(t)]
    neg = [-t for t in terms if _is_negative_term(t)]
    if not pos or (all(t.is_Number for t in pos) and not all(t.is_Number for t in neg)):
        # keep the symbols on the left: `seq > 4`, not `4 < seq`
        return _rel_or_const(_FLIP[kind], sympy.Add(*neg), sympy.Add(*pos))
    return _rel_or_const(kind, sympy.Add(*pos), sympy.Add(*neg))


def _rel_or_const(kind, lhs, rhs) -> sympy.Basic:
    """``kind(lhs, rhs)`` without sympy's assumption-based evaluation, constants folded."""
    if lhs.is_Number and rhs.is_Number:
        return kind(lhs, rhs)
    if lhs == rhs:
        return sympy.true if kind in (sympy.Eq, sympy.Le, sympy.Ge) else sympy.false
    return kind(lhs, rhs, evaluate=False)


def _is_negative_term(t) -> bool:
    c, _ = t.as_coeff_Mul()
    return bool(c.is_negative)


def _mod_pattern(e: sympy.Basic) -> sympy.Basic:
    """Rewrite ``x - k*floor(x/k)`` inside an Add as ``Mod(x, k)`` (k a positive integer)."""
    if not isinstance(e, sympy.Add):
        return e
    terms = list(e.args)
    for t in terms:
        c, rest = t.as_coeff_Mul()
        if not isinstance(rest, sympy.floor) or not c.is_Integer or c >= 0:
            continue
        num, den = rest.args[0].as_numer_denom()
        if not den.is_Integer or int(den) != -int(c):
            continue
        k = int(den)
        if _terms_subset(num, e - t):
            # x - k*floor(x/k) == Mod(x, k) for every integer x
            return sympy.Mod(num, k) + sympy.expand(e - t - num)
    return e


def _terms_subset(num, rest) -> bool:
    have = list(sympy.Add.make_args(sympy.expand(rest)))
    for term in sympy.Add.make_args(sympy.expand(num)):
        if term in have:
            have.remove(term)
        else:
            return False
    return True
