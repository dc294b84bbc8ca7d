"""``clip`` as ``minimum(maximum(a, lo), hi)`` (numpy documents it as exactly that)."""
from __future__ import annotations

import numpy as np

__all__ = ["DECOMPOSITIONS", "clip"]



def _given(v) -> bool:
    # identity tests only: ``==`` on an array bound would compare its values
    return v is not None and v is not np._NoValue


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    """Limit values to ``[lo, hi]``; either bound may be None (array bounds broadcast).

    Accepts numpy's names (``a_min``/``a_max``) and the method's (``min``/``max``).
    Returns ``NotImplemented`` for ``out=``, extra ufunc keywords, or no bound at all.
    """
    lo = a_min if _given(a_min) else (min if _given(min) else None)
    hi = a_max if _given(a_max) else (max if _given(max) else None)
    if out is not None or kwargs or (lo is None and hi is None):
        return NotImplemented
    y = a if lo is None else np.maximum(a, lo)
    return y if hi is None else np.minimum(y, hi)


DECOMPOSITIONS = {"numpy.clip": clip}
