"""The smallest and largest value one size can take under conditions on it alone.

``Dim.AUTO`` roots get their range from the guards the model accepted; a bound on the
root alone (``s <= 512``) folds into the range directly, but a nonlinear one
(``s // 2 >= 2`` from a pooling pyramid, ``s % 4 == 0`` with it) leaves the reported range
wider than what the program admits (``[2, inf]`` where every admitted size is >= 4).
:func:`value_extent` finds the true ends with satisfiability queries, so the reported
range is exactly ``[min admitted, max admitted]`` (a range says nothing of the gaps:
the guards stay runtime checks).
"""
from __future__ import annotations

from typing import Optional

import sympy

from .bisection import last_holding
from .decide import ShapeSolver

_FAR = 2 ** 40  # beyond any size: satisfiable here means "no upper end"


def value_extent(conds: list, name: str, lower: int, upper: Optional[int], example: int,
                 timeout_ms: int = 200) -> tuple[int, Optional[int]]:
    """``(lo, hi)``: the least and greatest ``name`` in ``[lower, upper]`` satisfying every
    condition of ``conds`` (sympy booleans over ``name`` alone; ``example`` satisfies them).

    Binary search with one satisfiability query per step (``O(log range)`` queries per end);
    an undecided query keeps that end where it is, so the result is never narrower than the
    admitted set.  ``hi`` is None for no upper end.
    """
    def some_value(lo: Optional[int], hi: Optional[int]) -> bool:
        s = ShapeSolver(timeout_ms)
        sym = s.declare(name, lo, hi)
        verdict = s.satisfiable(_conjunction(conds, sym, name))
        return not verdict.refuted  # undecided counts as "maybe there": never narrows wrongly

    lo = lower
    if example > lower:
        # the least m with some value in [lower, m]: example has one, lower - 1 has none
        lo = last_holding(lambda m: some_value(lower, m), example, lower - 1)
    if upper is None:
        if some_value(_FAR, None):
            return lo, None
        top = _FAR
    else:
        top = upper
    if top <= example:
        return lo, example if upper is None or example < upper else upper
    # the greatest m with some value in [m, top]: example has one, top + 1 has none
    return lo, last_holding(lambda m: some_value(m, top), example, top + 1)




def _conjunction(conds: list, sym, name: str):
    out = []
    for c in conds:
        free = {s.name: s for s in c.free_symbols}
        if set(free) != {name}:
            raise ValueError(f"value_extent: condition {c} is not over {name!r} alone")
        out.append(c.xreplace({free[name]: sym}))
    return sympy.And(*out)
