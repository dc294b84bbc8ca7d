"""Guard normalization for the fix search: branches picked by the example, products split.

``alternatives(guard, hints, ranges)`` rewrites one (canonical) guard into lists
of *atoms*: relations whose conjunction implies the guard for every integer
assignment inside ``ranges`` and that all hold at the example sizes ``hints``.
The fix search then fixes atoms one symbol or one linear relation at a time.
Each rule below is sound in that sense (each has a z3 soundness test in
tests/solver/test_normalize.py):

1. ``And`` splits into its parts.
2. ``Or`` is replaced by a disjunct the example satisfies (every such disjunct is
   an alternative; relations between dims rank before pinning one dim to a constant).
3. ``Min(a1, ..., an)`` inside a relation is replaced by the argument ``ai`` that
   is smallest at the example, and the branch condition ``ai <= aj`` (every j)
   is kept as atoms: under them ``Min(...) == ai``. ``Max`` likewise with ``>=``,
   ``Abs(e)`` by ``e`` (``e >= 0``) or ``-e`` (``e <= 0``), ``Piecewise`` by the
   first branch whose condition holds at the example (earlier conditions false,
   its own true). When the example ties several arguments (``Min(3, dx)`` at
   ``dx = 3``) each is an alternative; the caller keeps the one whose fixes admit
   the most sizes. Innermost first, so ``Max(0, dy - Min(2, dy))`` at dy = 7
   becomes ``dy - 2`` with ``dy >= 2``.
   3a. Before that, an inequality with a ``Max`` (or ``Abs``) making up its smaller side
   or a ``Min`` its larger side splits into the inequalities it is equivalent to
   (:func:`split_extrema`): no branch is kept, so ``Max(m, n) <= Min(m, n) + 29`` is
   ``m <= n + 29`` and ``n <= m + 29`` (a box fix may then cross the example's branch).
   3b. Likewise an inequality with a ``Min`` making up its smaller side or a ``Max`` its larger
   side is the ``Or`` of the inequalities of their arguments (:func:`split_extrema_or`), which
   rule 2 resolves: ``Min(a, b) <= 12`` at (19, 3) is ``b <= 12`` with no condition on ``a``
   (the branch ``b <= a`` kept as an atom refused (5, 3), which the guard admits).
4. Nested floors are flattened: ``floor((floor(y) + n)/k) -> floor((y + n)/k)`` for
   an integer ``n`` and an integer ``k > 0`` (``floor(floor(h/2)/2) -> floor(h/4)``),
   ``ceiling`` likewise (``floor(y) + n == floor(y + n)`` and
   ``floor(floor(z)/k) == floor(z/k)`` for every real ``y``, ``z``): a pooling
   pyramid's atoms then show every modulus (2, 4, 8) of its root. Only here, for
   the fix search: the guards capture records and prints keep their form.
5. A product equality whose factors each depend on one symbol, every symbol on
   both sides (``(h//2)*(w//2) == 4*(h//4)*(w//4)``), splits per symbol by the
   example's ratio: ``h//2 == 2*(h//4)`` and ``w//2 == 2*(w//4)``. The factors'
   equalities imply the product's whenever the ratios multiply to the product's
   constant, which is checked exactly. (An equality where some symbol appears on
   one side only, ``h*w == 16``, is left whole: pinning is the caller's last resort.)

Nothing here narrows a guard the ranges already decide: ``canonicalize`` runs
first and removes the Min/Max arguments the ranges dominate.
"""
from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Mapping

import sympy
from sympy.core.relational import Relational

from .canon import canonicalize
from .numeric import NumericError, value

MAX_ALTERNATIVES = 8  # per guard; the first ones (by rank) are kept
_BRANCHED = (sympy.Min, sympy.Max, sympy.Abs, sympy.Piecewise)


def alternatives(guard, hints: Mapping[str, int], ranges: Mapping, limit: int = MAX_ALTERNATIVES) -> list:
    """Lists of atoms, each list a sufficient condition for ``guard`` that holds at ``hints``.

    Args:
        guard: a sympy boolean (canonicalized or not) that holds at ``hints``.
        hints: example size of every free symbol, by name.
        ranges: ``{name or Symbol: (lo, hi_or_None)}`` passed to ``canonicalize``.
        limit: at most this many alternatives (the best-ranked ones).

    Returns:
        ``[[atom, ...], ...]``, best-ranked first; ``[[]]`` for a guard that needs no
        atom (``true``), ``[[guard]]`` when nothing applies. An atom false at ``hints``
        only appears when ``guard`` itself is false there.
    """
    e = sympy.to_nnf(canonicalize(flatten_floors(guard), ranges), simplify=False)
    return _alts(e, hints, ranges, limit)


def flatten_floors(e):
    """``e`` with nested floors / ceilings flattened (rule 4), bottom-up."""
    if e.is_Atom or not e.has(sympy.floor, sympy.ceiling):
        return e
    args = [flatten_floors(a) for a in e.args]
    if isinstance(e, (sympy.floor, sympy.ceiling)):
        flat = _flatten_nested(type(e), args[0])
        if flat is not None:
            return flat
    if all(x is y for x, y in zip(args, e.args)):
        return e
    return e.func(*args)


def _flatten_nested(kind, arg):
    """``kind((y + n)/k)`` for ``arg == (kind(y) + n)/k`` (integer n, integer k > 0), else None."""
    num, den = arg.as_numer_denom()
    if not den.is_Integer or int(den) < 1:
        return None
    const, rest = num.as_coeff_Add()
    if not const.is_Integer or not isinstance(rest, kind):
        return None
    return kind((rest.args[0] + const) / den)


def first(guard, hints, ranges) -> list:
    """The best-ranked alternative of :func:`alternatives`."""
    return alternatives(guard, hints, ranges, limit=1)[0]


def _holds(e, hints) -> bool:
    try:
        return value(e, hints) is True
    except NumericError:
        return False


def _alts(e, hints, ranges, limit) -> list:
    if e is sympy.true:
        return [[]]
    if isinstance(e, sympy.And):
        out = [[]]
        for part in e.args:
            part_alts = _alts(part, hints, ranges, limit)
            out = [a + b for a, b in itertools.product(out, part_alts)][:limit]
        return [_dedupe(a) for a in out]
    if isinstance(e, sympy.Or):
        true_args = [a for a in e.args if _holds(a, hints)]
        if not true_args:
            return [[e]]  # the example violates it: leave it whole (reported, not narrowed)
        true_args.sort(key=disjunct_rank)
        out = []
        for a in true_args:
            for alt in _alts(sympy.to_nnf(canonicalize(flatten_floors(a), ranges), simplify=False), hints, ranges,
                             limit):
                if alt not in out:
                    out.append(alt)
        return out[:limit]
    if isinstance(e, Relational):
        pairs = split_extrema(e)
        if pairs is not None:
            return _alts(sympy.to_nnf(canonicalize(sympy.And(*pairs), ranges), simplify=False), hints, ranges, limit)
        either = split_extrema_or(e)
        if either is not None and _holds(e, hints):
            return _alts(sympy.Or(*either, evaluate=False), hints, ranges, limit)
        node = _innermost_branch(e)
        if node is not None and _holds(e, hints):
            out = []
            for replacement, conditions in _branches(node, hints):
                rel = e.xreplace({node: replacement})
                whole = sympy.And(*conditions, rel) if conditions else rel
                whole = sympy.to_nnf(canonicalize(flatten_floors(whole), ranges), simplify=False)
                for alt in _alts(whole, hints, ranges, limit):
                    if alt not in out:
                        out.append(alt)
            if out:
                return out[:limit]
        split = split_product(e, hints)
        if split is not None:
            return [_dedupe([a for part in split for a in first(part, hints, ranges)])]
    return [[e]]


_MAX_PAIRS = 16  # inequalities one Max/Min comparison may split into (rule 3a)


def split_extrema(rel):
    """Rule 3a: ``A <= B`` with a ``Max``/``Abs`` making up ``A`` or a ``Min`` making up ``B``, as
    the inequalities it is equivalent to, else None.

    ``Max(a1, ...) + c <= B`` holds exactly when every ``ai + c <= B`` does, and
    ``A <= Min(b1, ...) + c`` exactly when every ``A <= bi + c`` does (``Abs(e)`` is
    ``Max(e, -e)``; a negative multiple turns a ``Min`` into a ``Max``): no branch of the
    example is kept, so ``Max(m, n) <= Min(m, n) + 29`` becomes ``m <= n + 29`` and
    ``n <= m + 29``, both directions of ``|m - n| <= 29``.
    """
    return _pairs(rel, sympy.Max, sympy.Min)


def split_extrema_or(rel):
    """Rule 3b: ``A <= B`` with a ``Min`` making up ``A`` or a ``Max`` making up ``B``, as the
    inequalities whose ``Or`` it is equivalent to, else None.

    ``Min(a1, ...) + c <= B`` holds exactly when some ``ai + c <= B`` does, and ``A <= Max(b1,
    ...) + c`` exactly when some ``A <= bi + c`` does (a negative multiple turns a ``Max`` into
    a ``Min``).
    """
    return _pairs(rel, sympy.Min, sympy.Max)


def _pairs(rel, small_kind, big_kind):
    """``[a <= b]`` for ``a`` among the ``small_kind`` terms of the smaller side of inequality ``rel``
    and ``b`` among the ``big_kind`` terms of the larger (strictness kept), or None when that is
    one pair or more than :data:`_MAX_PAIRS`."""
    if isinstance(rel, (sympy.Le, sympy.Lt)):
        small, big = rel.lhs, rel.rhs
    elif isinstance(rel, (sympy.Ge, sympy.Gt)):
        small, big = rel.rhs, rel.lhs
    else:
        return None
    lows, highs = _extreme_terms(small, small_kind), _extreme_terms(big, big_kind)
    if len(lows) * len(highs) <= 1 or len(lows) * len(highs) > _MAX_PAIRS:
        return None
    strict = isinstance(rel, (sympy.Lt, sympy.Gt))
    return [(sympy.Lt if strict else sympy.Le)(a, b) for a in lows for b in highs]


def _extreme_terms(e, kind):
    """Terms whose ``kind`` (``Max`` or ``Min``) equals ``e`` (``[e]`` when none is found)."""
    other = sympy.Min if kind is sympy.Max else sympy.Max
    if isinstance(e, kind):
        return [t for a in e.args for t in _extreme_terms(a, kind)]
    if kind is sympy.Max and isinstance(e, sympy.Abs):
        return _extreme_terms(e.args[0], kind) + _extreme_terms(-e.args[0], kind)
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff.is_Number and coeff != 0 and isinstance(rest, (kind, other)):
            if coeff > 0 and isinstance(rest, kind):
                return [coeff * t for t in _extreme_terms(rest, kind)]
            if coeff < 0 and isinstance(rest, other):  # -Min(a, b) == Max(-a, -b)
                return [coeff * t for t in _extreme_terms(rest, other)]
        return [e]
    if isinstance(e, sympy.Add):
        for term in e.args:
            parts = _extreme_terms(term, kind)
            if len(parts) > 1:
                rest = e - term
                return [t for p in parts for t in _extreme_terms(rest + p, kind)]
    return [e]


def disjunct_rank(a) -> int:
    """0 for a relation between dims, 1 for pinning one dim to a constant (``dx == 1``)."""
    if isinstance(a, sympy.Eq) and len(a.free_symbols) == 1 and (a.lhs.is_Number or a.rhs.is_Number):
        return 1
    return 0


def _dedupe(atoms: list) -> list:
    out = []
    for a in atoms:
        if a is not sympy.true and a not in out:
            out.append(a)
    return out


def _innermost_branch(e):
    """A Min/Max/Abs/Piecewise node of ``e`` with no such node inside its arguments, or None."""
    for node in sympy.preorder_traversal(e):
        if isinstance(node, _BRANCHED) and not any(
                isinstance(sub, _BRANCHED) for arg in node.args for sub in sympy.preorder_traversal(arg)):
            return node
    return None


def _branches(node, hints) -> list:
    """``[(replacement, conditions), ...]``: under ``conditions``, ``node == replacement``.

    Only the branches the example takes (several when the example ties them).
    """
    if isinstance(node, (sympy.Min, sympy.Max)):
        args = list(node.args)
        try:
            vals = [value(a, hints) for a in args]
        except NumericError:
            return []
        best = min(vals) if isinstance(node, sympy.Min) else max(vals)
        rel = sympy.Le if isinstance(node, sympy.Min) else sympy.Ge
        out = []
        for i, (a, v) in enumerate(zip(args, vals)):
            if v != best:
                continue
            conds = [rel(a, b, evaluate=False) for j, b in enumerate(args) if j != i]
            out.append((a, conds))
        return out
    if isinstance(node, sympy.Abs):
        (a,) = node.args
        try:
            v = value(a, hints)
        except NumericError:
            return []
        out = []
        if v >= 0:
            out.append((a, [sympy.Ge(a, 0, evaluate=False)]))
        if v <= 0:
            out.append((-a, [sympy.Le(a, 0, evaluate=False)]))
        return out
    if isinstance(node, sympy.Piecewise):
        earlier = []
        for val, cond in node.args:
            try:
                taken = cond is sympy.true or value(cond, hints) is True
            except NumericError:
                return []
            if taken:
                conds = [sympy.to_nnf(sympy.Not(c), simplify=False) for c in earlier]
                if cond is not sympy.true:
                    conds.append(cond)
                return [(val, conds)]
            earlier.append(cond)
        return []
    return []


def split_product(rel, hints):
    """Per-symbol equalities implying the product equality ``rel`` (rule 4), or None."""
    if not isinstance(rel, sympy.Eq) or len(rel.free_symbols) < 2:
        return None
    sides = []
    for side in (rel.lhs, rel.rhs):
        coeff, factors = sympy.Rational(1), {}
        for f in sympy.Mul.make_args(side):
            if f.is_Number:
                coeff *= f
                continue
            syms = f.free_symbols
            if len(syms) != 1 or f.is_Add and not f.has(sympy.floor, sympy.ceiling, sympy.Mod):
                return None  # a sum of symbols or a factor over two symbols: not a product per symbol
            (s,) = syms
            factors[s.name] = factors.get(s.name, sympy.Integer(1)) * f
        sides.append((coeff, factors))
    (lc, lf), (rc, rf) = sides
    if set(lf) != set(rf) or len(lf) < 2 or lc == 0:
        return None
    ratios = {}
    for name in lf:
        try:
            a, b = value(lf[name], hints), value(rf[name], hints)
        except NumericError:
            return None
        if a == 0 or b == 0:
            return None
        ratios[name] = Fraction(a) / Fraction(b)
    prod = Fraction(1)
    for r in ratios.values():
        prod *= r
    if prod * Fraction(int(lc.p), int(lc.q)) != Fraction(int(rc.p), int(rc.q)):
        return None  # the example violates the product equality
    out = []
    for name in sorted(lf):
        r = ratios[name]
        out.append(sympy.Eq(r.denominator * lf[name], r.numerator * rf[name]))
    return out
