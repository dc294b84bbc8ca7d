"""The widest box of sizes around the example on which a monotone guard holds.

A contract cannot state an inequality between dims (``(a // 2) * (b // 3) <= 30``), nor the
level set of an equality of two step functions (``a // 8 == (b + 8) // 12``); a box of
per-dim ranges around the example can imply either.  When the guard's two sides subtracted,
``e``, is monotone in each dim (:func:`.periods.monotone_signs`), ``e`` is smallest over a box
at the corner where each dim sits at its *worst end* (the lower end for a dim ``e`` grows
with, the upper end otherwise) and largest at the opposite corner; so ``e >= 0`` holds on the
box exactly when it holds at one corner, and ``e == 0`` when it holds at both.

:func:`widest_monotone_box` finds, among the boxes containing the example inside the declared
ranges whose corners hold, one admitting the most sizes.  The corners that hold form a
down-set (moving a worst end outward only lowers the corner's value), and the count is a
product over dims, so the search is exact: per dim, divide and conquer over how far its end
moves, the best ends of the remaining dims solved recursively; if the remaining dims' best
ends at the near end of an interval still hold at its far end, they are the best for every
point between (the feasible sets are nested), and the far end wins.  A step function
(floors) has few steps, so few corners are evaluated; past ``budget`` evaluations the widest
box found so far is returned (still sound: every box returned has its corners checked).

Pure integers and the solver's exact evaluator; no z3, no arrays.  Every box is still proved
by the caller's final check.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from . import numeric

GROW_LIMIT = 2 ** 40   # an end that moves this far is no end: the dim keeps its declared side
_BUDGET = 2000         # corner evaluations per search


class _OutOfBudget(Exception):
    pass


def grow(ok: Callable[[int], bool], cap: Optional[int] = None) -> int:
    """The largest ``e`` in ``[0, cap]`` (``[0, GROW_LIMIT]`` when ``cap`` is None) with ``ok(e)``,
    for ``ok`` true at 0 and false from some point on (doubling, then bisection)."""
    limit = GROW_LIMIT if cap is None else min(cap, GROW_LIMIT)
    if limit <= 0:
        return 0
    good, bad = 0, 1
    while bad < limit and ok(bad):
        good, bad = bad, bad * 2
    if bad >= limit:
        if ok(limit):
            return limit
        bad = limit
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if ok(mid) else (good, mid)
    return good


@dataclass(frozen=True)
class Requirement:
    """``diff >= 0`` (``want`` +1; ``> 0`` when ``strict``) or ``diff <= 0`` (``want`` -1) on the
    whole box, ``diff`` monotone in each dim with the directions ``signs`` ({name: +1 or -1})."""

    diff: object
    signs: tuple          # ((name, +1 or -1), ...)
    want: int = 1
    strict: bool = False

    def sides(self) -> list:
        """The worst end of each dim, ``(name, -1)`` for the lower one, ``(name, +1)`` the upper."""
        return [(n, -s * self.want) for n, s in self.signs]


def widest_monotone_box(diff, signs: Mapping[str, int], hints: Mapping[str, int], ranges: Mapping,
                        *, at_least: bool = True, at_most: bool = False, strict: bool = False,
                        budget: int = _BUDGET) -> Optional[dict]:
    """Per-dim bounds around ``hints`` under which ``diff >= 0`` (``at_least``; ``> 0`` when
    ``strict``) and ``diff <= 0`` (``at_most``: both for an equality) hold on the whole box;
    :func:`widest_box` of those requirements."""
    signed = tuple(sorted(signs.items()))
    reqs = ([Requirement(diff, signed, 1, strict)] if at_least else []) + (
        [Requirement(diff, signed, -1)] if at_most else [])
    return widest_box(reqs, hints, ranges, budget=budget)


def widest_box(requirements: list, hints: Mapping[str, int], ranges: Mapping, *,
               budget: int = _BUDGET, span: Optional[Mapping] = None) -> Optional[dict]:
    """Per-dim bounds ``{name: (lower or None, upper or None)}`` around ``hints`` under which
    every :class:`Requirement` holds on the whole box; None when the example's corner fails one.

    Args:
        requirements: monotone conditions; those that move a common end are solved together
            (``m <= n + 29`` and ``n <= m + 29`` share none; ``a + b <= 40`` and ``a + 2*b <= 50``
            share both), the others in turn, twice, so each uses what the others left.
        hints: the example's size of every dim (the box contains it).
        ranges: ``{name: (lo or None, hi or None)}``, the ranges the box stays in.
        budget: corner evaluations allowed; past it, the widest box found so far.
        span: ``{name: (lo, hi)}``, sizes the box must contain besides ``hints`` (the other
            example sets'): each end starts there instead of at the hint.

    Returns:
        For each dim, ``(lo, hi)``: a bound the box adds on that side, or None where it keeps
        the range's end (an end no corner needs, or one that could move without limit).  Of
        the boxes found, the one admitting the most sizes (dims with no finite end count
        first, then the product of the finite widths).
    """
    names = sorted({n for r in requirements for n, _ in r.signs})
    if not requirements or any(n not in hints for n in names):
        return None
    room = {}
    for n in names:
        lo, hi = ranges.get(n, (1, None))
        room[(n, -1)] = None if lo is None else max(hints[n] - lo, 0)
        room[(n, +1)] = None if hi is None else max(hi - hints[n], 0)
    least = {}  # the extent each end needs to contain the span
    for n in names:
        lo, hi = (span or {}).get(n, (hints[n], hints[n]))
        least[(n, -1)], least[(n, +1)] = max(hints[n] - lo, 0), max(hi - hints[n], 0)
        for side in ((n, -1), (n, +1)):
            if room[side] is not None and least[side] > room[side]:
                return None  # a size to contain is outside the declared range
    groups = _groups(requirements)
    moving = {side for r in requirements for side in r.sides()}
    ext = {side: least[side] for side in moving}
    counter = [budget]

    def holds(req: Requirement, side_ext: Mapping) -> bool:
        if counter[0] <= 0:
            raise _OutOfBudget
        counter[0] -= 1
        env = dict(hints)
        for side in req.sides():
            env[side[0]] = hints[side[0]] + side[1] * max(side_ext.get(side, 0), least[side])
        try:
            v = numeric.value(req.diff, env) * req.want
        except numeric.NumericError:
            return False
        return v > 0 if req.strict else v >= 0

    try:
        if not all(holds(r, {}) for r in requirements):
            return None  # the example's corner (or the span's) fails
    except _OutOfBudget:
        return None

    def score(e: Mapping):
        # dims with no finite end first, then the sizes of the others; a dim already without
        # an end on one side still prefers its other end farther out (ties only)
        n_inf, logs, spare = 0, 0.0, 0
        for n in names:
            ends = []
            for side in ((n, -1), (n, +1)):
                m = e.get(side, room[side]) if side in moving else room[side]
                ends.append(m if m is None else max(m, least[side]))
            if any(m is None or m >= GROW_LIMIT for m in ends):
                n_inf += 1
                spare += sum(m for m in ends if m is not None and m < GROW_LIMIT)
            else:
                logs += math.log(1 + sum(ends))
        return n_inf, round(logs, 9), spare

    for _ in range(2 if len(groups) > 1 else 1):
        for group, sides in groups:
            ext.update(_best_ends(lambda se, g=group: all(holds(r, se) for r in g), sides, room, ext, score))
    out = {}
    for n in names:
        bounds = []
        for d in (-1, +1):
            e = ext.get((n, d))
            if e is not None:
                e = max(e, least[(n, d)])
            if e is None or e >= GROW_LIMIT or room[(n, d)] is not None and e >= room[(n, d)]:
                bounds.append(None)   # not moved by any requirement, or at the range's end
            else:
                bounds.append(hints[n] + d * e)
        out[n] = tuple(bounds)
    return out


def _groups(requirements: list) -> list:
    """``[(requirements, sides)]``: the requirements joined when they move a common end."""
    groups: list = []
    for r in requirements:
        sides = set(r.sides())
        joined = [g for g in groups if g[1] & sides]
        for g in joined:
            groups.remove(g)
            sides |= g[1]
        groups.append(([x for g in joined for x in g[0]] + [r], sides))
    return [(reqs, sorted(sides)) for reqs, sides in groups]


def _best_ends(ok, sides: list, room: Mapping, current: dict, score) -> dict:
    """The extents of ``sides`` (each in ``[0, room]``) maximizing ``score`` with ``ok`` true;
    ``ok`` and ``score`` take ``{side: extent}`` (``score`` over ``current`` updated)."""
    # the current extents hold already (found for this requirement, or the example's corner)
    best = {"ext": {s: current.get(s, 0) for s in sides}}
    best["score"] = score({**current, **best["ext"]})

    def consider(ext: dict) -> None:
        sc = score({**current, **ext})
        if sc > best["score"]:
            best["ext"], best["score"] = dict(ext), sc

    def solve(fixed: dict, rest: list) -> dict:
        v, tail = rest[0], rest[1:]
        zeros = {t: 0 for t in tail}
        top = grow(lambda e: ok({**fixed, v: e, **zeros}), room[v])
        if not tail:
            out = {v: top}
            consider({**fixed, **out})
            return out
        memo: dict = {}

        def inner(a):
            if a not in memo:
                memo[a] = solve({**fixed, v: a}, tail)
            return memo[a]
        winner, win_score = None, None
        stack = [(0, top)]
        while stack:
            lo, hi = stack.pop()
            r_lo = inner(lo)
            if hi == lo or ok({**fixed, v: hi, **r_lo}):
                cands = [{v: hi, **r_lo}]
            else:
                cands = [{v: lo, **r_lo}, {v: hi, **inner(hi)}]
                if hi - lo > 1:
                    mid = (lo + hi) // 2
                    stack += [(lo, mid), (mid, hi)]
            for c in cands:
                consider({**fixed, **c})
                sc = score({**current, **fixed, **c})
                if win_score is None or sc > win_score:
                    winner, win_score = c, sc
        return winner

    try:
        consider(_even_then_each(ok, sides, room, best["ext"]))  # a fair box first, should the budget end
        solve({}, list(sides))
    except _OutOfBudget:
        pass  # the widest box checked so far
    return best["ext"]


def _even_then_each(ok, sides: list, room: Mapping, start: dict) -> dict:
    """Every end moved out by the same amount while the corner holds, then each end alone."""
    def cap(e, side):
        return e if room[side] is None else min(e, room[side])
    base = dict(start)
    even = grow(lambda e: ok({s: max(base[s], cap(e, s)) for s in sides}))
    ext = {s: max(base[s], cap(even, s)) for s in sides}
    for s in sides:
        left = None if room[s] is None else room[s] - ext[s]
        ext[s] += grow(lambda e, s=s: ok({**ext, s: ext[s] + e}), left)
    return ext
