"""Witnesses: the sizes a counterexample shows.

A counterexample is only useful if the model really behaves differently there.  Two
rules make the point chosen a real one:

- it is a full assignment: every size of the condition (the failed guard and the
  weaker condition the eager run needs, which may name more sizes: broadcasting ``m``
  against ``n``), none left for the reader to guess;
- every size is >= 2 where its range allows it.  Sizes 0 and 1 are where numpy
  broadcasts and ops specialize (a size-1 axis broadcasts against any other), so
  ``b = 1, b2 = 2`` violates ``b == b2`` while the eager model runs fine.  Only
  when no such point exists inside the ranges is one with a 0 or 1 shown.

Among such points the one nearest the example sizes is shown, with one size changed
when that is enough (a boundary says more than a corner: ``seq = 513`` for
``seq <= 512``; ``m = 3, n = 2`` next to the example ``m = 1, n = 2``).  Points are checked exactly
(``evaluate``), z3 only finds a first one when the caller has none.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import sympy

from .decide import ShapeSolver
from .evaluation import evaluate

# sizes below this are where numpy broadcasts or specializes (0: empty, 1: stretches)
SMALL = 2


def witness(condition, ranges: Mapping, hints: Mapping, *, start: Optional[Mapping] = None,
            timeout_ms: int = 200) -> Optional[dict]:
    """A point ``{name: int}`` inside ``ranges`` where ``condition`` holds, chosen as a witness.

    Args:
        condition: a sympy boolean over size symbols (for a counterexample: the guard's
            negation, and the negation of what eager numpy needs, if weaker).
        ranges: ``{name: (lo, hi_or_None)}`` inclusive, for every symbol of ``condition``.
        hints: the example size of each symbol ``{name: int}`` (the point moves toward them).
        start: a point known to satisfy ``condition`` (the solver's counterexample), tried
            before z3 is asked for one.
        timeout_ms: z3 time limit for finding a first point.

    Returns:
        Every symbol of ``condition`` with a value: each >= 2 where its range allows and
        such a point exists, else any point; moved toward ``hints`` while ``condition``
        holds.  None when no point is found (the condition cannot hold in the ranges, or
        z3 could not tell in time).

    Raises:
        KeyError: a symbol of ``condition`` has no range.
    """
    condition = sympy.sympify(condition)
    syms = sorted(condition.free_symbols, key=lambda s: s.name)
    names = [s.name for s in syms]
    prefer = [s for s in syms if _allows(ranges[s.name], SMALL)]
    tries = [sympy.And(condition, *(sympy.Ge(s, SMALL) for s in prefer))] if prefer else []
    tries.append(condition)
    known = all(hints.get(n) is not None for n in names)
    for want in tries:
        fails = lambda p, want=want: _value(want, p)  # noqa: E731
        found = None
        point = next((p for p in _candidates(start, names, ranges, hints) if _true(want, p)), None)
        if point is not None:
            found = nearest(fails, point, hints)
            if not known or _changed(found, hints) <= 1:
                return found
        if known:
            # the example with one size changed shows the failure most plainly: look for one,
            # first next to the example (the same answer whatever z3's state: z3 picks any model)
            near = _one_size_off(fails, names, ranges, hints)
            if near is not None:
                return near
            for n in names:
                fixed = [sympy.Eq(s, int(hints[s.name])) for s in syms if s.name != n]
                point = _first_point(sympy.And(want, *fixed), names, ranges, timeout_ms)
                if point is not None:
                    return nearest(fails, point, hints)
        if found is not None:
            return found
        point = _first_point(want, names, ranges, timeout_ms)
        if point is not None:
            return nearest(fails, point, hints)
    return None


NEAR = 16  # sizes tried on each side of an example size before z3 is asked


def _one_size_off(fails: Callable[[dict], Optional[bool]], names: list, ranges: Mapping,
                  hints: Mapping) -> Optional[dict]:
    """The witness closest to the example that changes one size by at most :data:`NEAR`
    (smaller distance first, then the smaller value, then names in order), or None."""
    example = {n: int(hints[n]) for n in names}
    for d in range(1, NEAR + 1):
        for n in names:
            for v in (example[n] - d, example[n] + d):
                if _inside(ranges[n], v) and fails({**example, n: v}) is True:
                    return {**example, n: v}
    return None


def _changed(point: Mapping, hints: Mapping) -> int:
    return sum(1 for n, v in point.items() if hints.get(n) != v)


def nearest(fails: Callable[[dict], Optional[bool]], point: dict, hints: Mapping) -> dict:
    """Move ``point`` toward the example ``hints`` while ``fails`` stays True.

    ``fails(p)``: True where ``p`` is a witness, False where it is not, None where it
    cannot tell.  Starting from the example sizes (where it is not a witness), one size
    is moved toward ``point`` if that alone makes a witness (shows a relation most
    plainly), else all sizes together; then each size alone is moved back toward its
    example size.  Bisection keeps a witness end, so the result is always a witness (the
    boundary when ``fails`` is monotone along the path).
    """
    known = {n: int(hints[n]) for n in point if n in hints and hints[n] is not None}
    best = dict(point)
    if len(known) == len(point) and fails(known) is False and fails(best) is True:
        paths = [{**known, n: point[n]} for n in sorted(point) if point[n] != known[n]] + [dict(point)]
        for target in paths:
            if fails(target) is not True:
                continue
            steps = max(abs(target[n] - known[n]) for n in target)

            def along(i: int, target=target, steps=steps) -> dict:
                return {n: known[n] + (i * (target[n] - known[n])) // steps for n in target}

            best = along(_bisect(lambda i: fails(along(i)), steps))
            break
    for n in sorted(best):
        if n not in known or known[n] == best[n]:
            continue
        start, end = known[n], best[n]
        if fails(dict(best, **{n: start})) is not False:
            continue
        sign = 1 if end > start else -1

        def moved(i: int, n=n, start=start, sign=sign) -> Optional[bool]:
            return fails(dict(best, **{n: start + sign * i}))

        best[n] = start + sign * _bisect(moved, abs(end - start))
    return best


def _bisect(fails: Callable[[int], Optional[bool]], steps: int) -> int:
    """Smallest ``i`` in ``(0, steps]`` with ``fails(i)``, given not ``fails(0)`` and ``fails(steps)``.

    Only ever returns an index known to be a witness.
    """
    good, bad = 0, steps
    while bad - good > 1:
        mid = (good + bad) // 2
        verdict = fails(mid)
        if verdict is None:
            break
        good, bad = (mid, bad) if verdict is False else (good, mid)
    return bad


def _candidates(start: Optional[Mapping], names: list, ranges: Mapping, hints: Mapping) -> list:
    """Cheap first points from ``start``: as it is, then its sizes below 2 raised to 2 or to
    their example sizes (checked by the caller; z3 is asked only when none is a witness)."""
    if start is None or not set(names) <= set(start):
        return []
    point = {n: int(start[n]) for n in names}
    out = [point]
    for lift in (lambda n: SMALL, lambda n: hints.get(n)):
        moved = dict(point)
        for n in names:
            v = lift(n)
            if moved[n] < SMALL and v is not None and v >= SMALL and _inside(ranges[n], v):
                moved[n] = int(v)
        if moved != point:
            out.append(moved)
    return out


def _inside(rng, value: int) -> bool:
    lo, hi = rng
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def _allows(rng, value: int) -> bool:
    """Whether a range ``(lo, hi)`` holds a value >= ``value``."""
    _lo, hi = rng
    return hi is None or hi >= value


def _value(condition, point: Mapping) -> Optional[bool]:
    try:
        out = evaluate(condition, point)
    except Exception:  # noqa: BLE001 - an odd construct: cannot tell here
        return None
    return out if type(out) is bool else None


def _true(condition, point: Mapping) -> bool:
    return _value(condition, point) is True


def _first_point(condition, names: list, ranges: Mapping, timeout_ms: int) -> Optional[dict]:
    s = ShapeSolver(timeout_ms)
    for n in names:
        lo, hi = ranges[n]
        s.declare(n, lo, hi)
    try:
        v = s.satisfiable(condition)
    except Exception:  # noqa: BLE001 - a construct z3 cannot take: no point from it
        return None
    if not v.proved or v.counterexample is None:
        return None
    point = {n: int(v.counterexample[n]) for n in names if n in v.counterexample}
    return point if len(point) == len(names) and _true(condition, point) else None
