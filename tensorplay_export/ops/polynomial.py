"""numpy's ``poly*`` functions over coefficient arrays: polyadd, polysub, polymul, polyder, polyint,
polyfit (``numpy.polyval`` is in ``lib.py``).

Each runs numpy's own function (values and dtypes are eager numpy's).  Shapes, from
``numpy/lib/_polynomial_impl.py``, for 1-d coefficient arrays of lengths ``n1``, ``n2``
(a 0-d one counts as length 1, as ``atleast_1d`` makes it):

- ``polyadd`` / ``polysub``: the shorter operand is padded with leading zeros, so
  ``Max(n1, n2)`` coefficients;
- ``polymul``: ``convolve`` of the two operands as ``poly1d``s, which first trim their leading
  zeros (an all-zero operand becomes ``[0]``): ``t1 + t2 - 1`` coefficients for the trimmed
  lengths, a data-dependent size in ``[1, Max(n1, 1) + Max(n2, 1) - 1]``;
- ``polyder(p, m)``: each derivative drops the last coefficient, ``Max(n - m, 0)`` for ``m >= 1``;
- ``polyint(p, m, k)``: each integral appends one, ``n + m``; ``k`` a scalar or ``len(k)`` 1 or at
  least ``m`` (numpy's ValueError otherwise, a guard for a symbolic length);
- ``polyfit(x, y, deg)``: ``x`` 1-d and nonempty, ``y`` 1-d or 2-d with ``len(x)`` rows, a 1-d
  ``w`` of that length: ``(deg + 1,)`` coefficients, ``(deg + 1, K)`` for a 2-d ``y``.

Refused with what to write instead: ``poly1d`` operands (a ``poly1d`` result is no array:
pass ``p.coeffs``), ``polyder``/``polyint`` with ``m=0`` (numpy returns the argument itself:
drop the call), coefficient arrays of more than one dimension (numpy's own arithmetic then
broadcasts against the wrong axis), and ``polyfit(..., full=True)`` / ``cov=True`` (the
residuals' length is the fit's rank, the data's; the covariance needs more points than
coefficients, checked on the data's scale).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOpError
from ..records import sympy
from .ctx import as_dim, is_static
from .elementwise import shape_of
from .registry import ArrayInfo, register_op


def _no_poly1d(name: str, *values: Any) -> None:
    if any(isinstance(v, np.poly1d) for v in values):
        raise UnsupportedOpError(f"{name} of a numpy.poly1d is not supported during capture (its result is a "
                                 f"poly1d, no array): pass the coefficient array p.coeffs instead")


def _length(name: str, p: Any) -> Any:
    """The coefficient count of a 0-d or 1-d operand (0-d: 1, as numpy's atleast_1d)."""
    shape = tuple(shape_of(p))
    if len(shape) > 1:
        raise UnsupportedOpError(f"{name} of a {len(shape)}-d coefficient array is not supported during capture "
                                 f"(numpy treats its first axis as the coefficients and broadcasts the rest "
                                 f"against the last): call it once per 1-d coefficient array")
    return shape[0] if shape else 1


def _size(d: Any) -> Any:
    return as_dim(sympy.sympify(d)) if isinstance(d, sympy.Basic) else int(d)


def _padded_rule(name: str):
    def rule(ctx: Any, a1: Any, a2: Any) -> tuple:
        """The longer operand's length: numpy pads the shorter with leading zeros."""
        _no_poly1d(name, a1, a2)
        n1, n2 = _length(name, a1), _length(name, a2)
        if is_static(n1) and is_static(n2):
            return (max(int(n1), int(n2)),)
        return (ctx.canon(sympy.Max(sympy.sympify(n1), sympy.sympify(n2))),)
    return rule


def _polymul_rule(ctx: Any, a1: Any, a2: Any) -> tuple:
    """``t1 + t2 - 1`` for the operands' lengths without leading zeros (at least 1 each): data-dependent."""
    _no_poly1d("numpy.polymul", a1, a2)
    n1, n2 = (sympy.sympify(_length("numpy.polymul", a)) for a in (a1, a2))
    upper = ctx.canon(sympy.Max(n1, 1) + sympy.Max(n2, 1) - 1)
    return (ctx.new_unbacked(upper, 0, 0, lower=1),)


def _order(name: str, m: Any) -> int:
    m = int(m)
    if m < 0:
        other = "polyint" if name.endswith("polyder") else "polyder"
        raise ValueError(f"{name}: the order m must be >= 0, got {m} (see {other})")
    if m == 0:
        raise UnsupportedOpError(f"{name}(p, m=0) returns p itself (no new array) and is not supported during "
                                 f"capture: use p")
    return m


def _polyder_rule(ctx: Any, p: Any, m: Any = 1) -> tuple:
    """``Max(n - m, 0)``: each derivative drops the constant term."""
    _no_poly1d("numpy.polyder", p)
    m = _order("numpy.polyder", m)
    n = _length("numpy.polyder", p)
    if is_static(n):
        return (max(int(n) - m, 0),)
    return (ctx.canon(sympy.Max(n - m, 0)),)


def _polyint_rule(ctx: Any, p: Any, m: Any = 1, k: Any = None) -> tuple:
    """``n + m``: each integral appends an integration constant (``k[i]``, 0 by default)."""
    _no_poly1d("numpy.polyint", p)
    m = _order("numpy.polyint", m)
    n = _length("numpy.polyint", p)
    if isinstance(k, ArrayInfo):
        ks = tuple(k.shape)
        if len(ks) > 1:
            raise ValueError("numpy.polyint: k must be a scalar or a rank-1 array of length 1 or >m.")
        lk = ks[0] if ks else 1
        if not is_static(lk):
            ctx.require(sympy.Or(sympy.Eq(lk, 1), sympy.Ge(lk, m)),
                        lambda: f"numpy.polyint: k of length {ctx.text(lk)} must have length 1 or at least m = {m}")
    return (_size(sympy.sympify(n) + m),)


def _polyfit_variant(x: Any, y: Any, deg: Any, rcond: Any = None, full: Any = False, w: Any = None,
                     cov: Any = False) -> None:
    """Refuses the tuple-returning forms before numpy runs them (this op returns the coefficients alone)."""
    if full or (cov is not False and cov is not None):
        raise UnsupportedOpError(
            "numpy.polyfit with full=True or cov= is not supported during capture (the residuals' length is the "
            "fit's rank, the data's; the covariance needs more points than coefficients): call np.polyfit(x, y, deg) "
            "for the coefficients, and compute residuals as np.polyval(coef, x) - y")
    return None


def _polyfit_rule(ctx: Any, x: Any, y: Any, deg: Any, rcond: Any = None, full: Any = False, w: Any = None,
                  cov: Any = False) -> tuple:
    """``(deg + 1,)`` for a 1-d ``y``, ``(deg + 1, K)`` for a 2-d ``(len(x), K)`` one."""
    _polyfit_variant(x, y, deg, rcond, full, w, cov)
    sx, sy = tuple(shape_of(x)), tuple(shape_of(y))
    if len(sx) != 1:
        raise TypeError("expected 1D vector for x")
    if len(sy) not in (1, 2):
        raise TypeError("expected 1D or 2D array for y")
    n = sx[0]
    if not is_static(n):
        ctx.require(sympy.Ge(n, 1), "numpy.polyfit: expected non-empty vector for x")
    ctx.eq(n, sy[0], f"numpy.polyfit: x and y must have the same length ({ctx.text(n)} and {ctx.text(sy[0])})")
    if w is not None:
        sw = tuple(shape_of(w))
        if len(sw) != 1:
            raise TypeError("expected a 1-d array for weights")
        ctx.eq(sw[0], n, f"numpy.polyfit: the weights' length {ctx.text(sw[0])} must be y's {ctx.text(n)}")
    if isinstance(deg, sympy.Basic) and not deg.is_Integer:
        ctx.require(sympy.Ge(deg, 0), lambda: f"numpy.polyfit: deg {ctx.text(deg)} must be >= 0")
        order = _size(deg + 1)
    else:
        if int(deg) < 0:
            raise ValueError("expected deg >= 0")
        order = int(deg) + 1
    return (order,) + sy[1:]


for _fn, _rule in ((np.polyadd, _padded_rule("numpy.polyadd")), (np.polysub, _padded_rule("numpy.polysub")),
                   (np.polymul, _polymul_rule), (np.polyder, _polyder_rule), (np.polyint, _polyint_rule)):
    register_op(f"numpy.{_fn.__name__}", _fn, _rule, numpy_funcs=(_fn,))
register_op("numpy.polyfit", np.polyfit, _polyfit_rule, numpy_funcs=(np.polyfit,), variant=_polyfit_variant,
            doc="numpy.polyfit(x, y, deg, rcond, w=w): the least-squares coefficients (full= and cov= refused)")
