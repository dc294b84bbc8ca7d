"""Binary search over integer sizes for the end of a run where a predicate holds."""
from __future__ import annotations

from typing import Callable

__all__ = ["last_holding"]


def last_holding(holds: Callable[[int], bool], good: int, bad: int) -> int:
    """The ``holds`` end next to ``bad``: binary search between a point where ``holds`` is true
    (``good``) and one where it is false (``bad``), in either direction; ``holds`` must change
    once between them (a monotone predicate)."""
    while abs(bad - good) > 1:
        mid = (good + bad) // 2
        if holds(mid):
            good = mid
        else:
            bad = mid
    return good
