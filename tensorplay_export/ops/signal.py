"""1-d signal ops: ``np.convolve`` / ``np.correlate`` (modes full, same, valid) and ``np.interp``.

For inputs of lengths ``n`` and ``m`` (numpy raises when either is empty, so
both are required >= 1) the output has ``n + m - 1`` (full), ``Max(n, m)``
(same) or ``Max(n, m) - Min(n, m) + 1`` (valid) elements: numpy swaps the
operands when the second is longer, and the sizes say so without a guard.
``np.interp(x, xp, fp)`` has ``x``'s shape; ``xp`` and ``fp`` are 1-d of one
nonempty length.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import is_static
from .elementwise import shape_of
from .registry import register_op
from ..records import sympy

_MODES = {0: "valid", 1: "same", 2: "full", "valid": "valid", "same": "same", "full": "full"}


def mode_name(mode: Any, what: str) -> str:
    try:
        return _MODES[mode if isinstance(mode, str) else int(mode)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{what}: mode must be one of 'valid', 'same', 'full', got {mode!r}") from None


def conv_length(ctx: Any, n: Any, m: Any, mode: str) -> Any:
    """Output length of a 1-d convolution / correlation of lengths ``n`` and ``m``."""
    if is_static(n) and is_static(m):
        n, m = int(n), int(m)
        return {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}[mode]
    n_, m_ = sympy.sympify(n), sympy.sympify(m)
    if mode == "full":
        return ctx.canon(n_ + m_ - 1)
    if mode == "same":
        return ctx.canon(sympy.Max(n_, m_))
    return ctx.canon(sympy.Max(n_, m_) - sympy.Min(n_, m_) + 1)


def _conv_rule(name: str):
    def rule(ctx: Any, a: Any, v: Any, mode: Any = "full" if name == "convolve" else "valid") -> tuple:
        sa, sv = shape_of(a), shape_of(v)
        what = f"numpy.{name}"
        # convolve takes 0-d operands as length 1, correlate refuses them; both refuse more than one dimension
        if len(sa) > 1 or len(sv) > 1:
            raise ValueError(f"{what}: object too deep for desired array")
        if name == "correlate" and not (sa and sv):
            raise ValueError(f"{what}: object of too small depth for desired array")
        n = sa[0] if sa else 1
        m = sv[0] if sv else 1
        for d, arg in ((n, "a"), (m, "v")):
            if not is_static(d):
                ctx.require(sympy.Ge(d, 1), f"{what}: {arg} cannot be empty")
        return (conv_length(ctx, n, m, mode_name(mode, what)),)
    return rule


register_op("numpy.convolve", np.convolve, _conv_rule("convolve"), numpy_funcs=(np.convolve,),
            doc="numpy.convolve: discrete linear convolution of two 1-d sequences")
register_op("numpy.correlate", np.correlate, _conv_rule("correlate"), numpy_funcs=(np.correlate,),
            doc="numpy.correlate: cross-correlation of two 1-d sequences")


def _interp_rule(ctx: Any, x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
                 period: Any = None) -> tuple:
    sxp, sfp = shape_of(xp), shape_of(fp)
    if len(sxp) != 1 or len(sfp) != 1:
        raise ValueError("numpy.interp: xp and fp must be 1-d sequences")
    ctx.eq(sxp[0], sfp[0], "numpy.interp: fp and xp must be of the same length")
    if not is_static(sxp[0]):
        ctx.require(sympy.Ge(sxp[0], 1), "numpy.interp: the array of sample points xp cannot be empty")
    return tuple(shape_of(x))


register_op("numpy.interp", np.interp, _interp_rule, numpy_funcs=(np.interp,),
            doc="numpy.interp: 1-d piecewise-linear interpolation at x of the points (xp, fp)")
