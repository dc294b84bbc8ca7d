"""Creation ops with (possibly symbolic) sizes: arange, zeros/ones/empty/full, *_like,
eye/identity/tri/tril/triu, linspace, and ``tpe.shape_array`` (``np.array(x.shape)``).

During capture the numpy creation functions are patched (see
``capture/patching.py``) so these run even when no argument is an array.
``arange`` records its value range ``[start, stop - 1]`` so gathers with it
get index-bounds guards.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import as_dim, is_static
from .elementwise import same_shape, shape_of
from ..errors import UnsupportedOpError
from .registry import register_op
from ..records import sympy


def require_nonneg(ctx: Any, sizes: Any, what: str) -> None:
    """Every symbolic count in ``sizes`` is >= 0: numpy raises on a negative size.

    Every rule that takes sizes from its arguments (creation shapes, reshape
    targets, pad widths, tile/repeat counts, linspace's ``num``) calls this, so
    ``zeros((n - 5, 4))`` requires ``n >= 5`` (a violation with a fix) instead
    of a program that fails at run time.  Static sizes were checked by numpy on
    the example; sizes sympy already knows are >= 0 fold without the solver.
    """
    for d in sizes:
        if isinstance(d, sympy.Basic) and not d.is_Integer:
            ctx.require(sympy.Ge(d, 0), lambda d=d: f"{what}: size {d} must be >= 0")


def norm_shape(shape: Any, ctx: Any = None, what: str = "shape") -> tuple:
    """A creation shape as a tuple of ints / sympy sizes (each required >= 0 when ``ctx`` is given)."""
    if isinstance(shape, (list, tuple)):
        out = tuple(as_dim(sympy.sympify(d)) if isinstance(d, sympy.Basic) else int(d) for d in shape)
    else:
        out = (as_dim(sympy.sympify(shape)) if isinstance(shape, sympy.Basic) else int(shape),)
    if ctx is not None:
        require_nonneg(ctx, out, what)
    return out


def _exact_value(v: Any) -> Any:
    """An arange bound as an exact rational: ints and sizes as they are; float constants and
    float size expressions (``0.5*n`` from ``n / 2``) when their binary value is short enough
    that numpy's float arithmetic on them is exact (``0.5``, ``0.25``); else None."""
    if isinstance(v, (bool, np.bool_)):
        return sympy.Integer(int(v))
    if isinstance(v, (int, np.integer)):
        return sympy.Integer(int(v))
    if isinstance(v, (float, np.floating)):
        v = sympy.Float(float(v))
    if not isinstance(v, sympy.Basic):
        return None
    out = {}
    for f in v.atoms(sympy.Float):
        r = sympy.Rational(float(f))
        q = int(r.q)
        if q & (q - 1) or q > 2 ** 16 or abs(int(r.p)) >= 2 ** 24:
            return None
        out[f] = r
    return v.xreplace(out) if out else v


def _arange_rule(ctx: Any, start: Any, stop: Any = None, step: Any = None, dtype: Any = None,
                 **kwargs: Any) -> tuple:
    """numpy's length rule: ``max(ceil((stop - start) / step), 0)``, as an integer size expression.

    A float bound (``np.arange(n / 2)``) gives ``ceiling(n/2)``; a symbolic step must keep the
    example's sign (recorded) and be nonzero.  Raises UnsupportedOpError for float bounds whose
    binary value makes the length depend on float rounding (``n * 0.1``).
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    values = (start, stop, step)
    if all(is_static(v) or isinstance(v, (float, np.floating)) for v in values):
        return (len(np.arange(*(int(v) if isinstance(v, sympy.Basic) else v for v in values))),)
    exact = [_exact_value(v) for v in values]
    if any(e is None for e in exact):
        raise UnsupportedOpError(
            f"numpy.arange({', '.join(str(v) for v in values)}): a float bound or step whose binary value is "
            "inexact makes the length depend on float rounding; use integer sizes (e.g. n // 10) or "
            "dyadic constants (0.5, 0.25)")
    lo, hi, st = exact
    if st.is_Number:
        positive = bool(st > 0)
    else:
        positive = ctx.choose(sympy.Gt(st, 0), f"numpy.arange: the sign of the step {st} (as in the example)")
        if not positive:
            ctx.require(sympy.Lt(st, 0), f"numpy.arange: the step {st} must be nonzero")
    span = hi - lo if positive else lo - hi
    mag = st if positive else -st
    n = sympy.ceiling(span / mag)
    all_int = all(v.is_integer for v in exact) and not any(
        isinstance(v, (float, np.floating)) or (isinstance(v, sympy.Basic) and v.has(sympy.Float))
        for v in values)
    if all_int:
        last = lo + (n - 1) * st
        ctx.vrange(lo, last) if positive else ctx.vrange(last, lo)
    return (ctx.canon(sympy.Max(n, 0)),)


register_op("numpy.arange", np.arange, _arange_rule, numpy_funcs=(np.arange,))


def _fill_rule(ctx: Any, shape: Any, *args: Any, **kwargs: Any) -> tuple:
    return norm_shape(shape, ctx, "array shape")


for _name in ("zeros", "ones", "empty", "full"):
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _fill_rule, numpy_funcs=(_fn,))


def _like_rule(ctx: Any, a: Any, *args: Any, shape: Any = None, **kwargs: Any) -> tuple:
    return shape_of(a) if shape is None else norm_shape(shape, ctx, "shape=")


for _name in ("zeros_like", "ones_like", "empty_like", "full_like"):
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _like_rule, numpy_funcs=(_fn,))


def _eye_rule(ctx: Any, N: Any, M: Any = None, k: Any = 0, *args: Any, **kwargs: Any) -> tuple:
    return norm_shape((N, N if M is None else M), ctx, "N, M")


register_op("numpy.eye", np.eye, _eye_rule, numpy_funcs=(np.eye,))
register_op("numpy.tri", np.tri, _eye_rule, numpy_funcs=(np.tri,))
register_op("numpy.identity", np.identity, lambda ctx, n, *a, **k: norm_shape((n, n), ctx, "identity"),
            numpy_funcs=(np.identity,))


register_op("numpy.tril", np.tril, same_shape, numpy_funcs=(np.tril,))
register_op("numpy.triu", np.triu, same_shape, numpy_funcs=(np.triu,))


def _linspace_rule(ctx: Any, start: Any, stop: Any, num: Any = 50, endpoint: bool = True,
                   retstep: bool = False, dtype: Any = None, axis: int = 0, **kwargs: Any) -> tuple:
    if retstep:
        raise UnsupportedOpError("numpy.linspace(retstep=True) is not supported during capture")
    extra = shape_of(start) or shape_of(stop)
    if extra:
        raise UnsupportedOpError("numpy.linspace with array start/stop is not supported during capture")
    return norm_shape(num, ctx, "linspace num")


def _linspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, retstep: bool = False, dtype: Any = None,
              axis: int = 0, **kwargs: Any) -> Any:
    """numpy.linspace without ``retstep`` (that form is ``tpe.linspace_retstep``, an op with two outputs)."""
    if retstep:
        raise UnsupportedOpError("numpy.linspace(retstep=True) with array start/stop is not supported during "
                                 "capture; use scalar start and stop")
    return np.linspace(start, stop, num, endpoint, False, dtype, axis, **kwargs)


register_op("numpy.linspace", _linspace, _linspace_rule, numpy_funcs=(np.linspace,))


def _linspace_retstep(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, dtype: Any = None,
                      axis: int = 0, **kwargs: Any) -> tuple:
    return np.linspace(start, stop, num, endpoint, True, dtype, axis, **kwargs)


def _linspace_retstep_rule(ctx: Any, start: Any, stop: Any, num: Any = 50, endpoint: bool = True,
                           dtype: Any = None, axis: int = 0, **kwargs: Any) -> list:
    """``(num,)`` samples and a 0-d step ``(stop - start) / (num - 1)`` (``/ num`` without ``endpoint``).

    numpy gives the step as a numpy scalar of the bounds' inexact type, except when the divisor is 0
    (``num == 1`` with ``endpoint``, ``num == 0`` without): then it is the Python float ``nan``,
    which promotes as a weak scalar (``float32_array * step`` stays float32).  A symbolic ``num``
    must therefore keep the divisor >= 1, so the step's type is the same at every size.
    """
    shape = _linspace_rule(ctx, start, stop, num, endpoint, False, dtype, axis, **kwargs)
    if not is_static(num):
        div = num - 1 if endpoint else num
        ctx.require(sympy.Ge(div, 1), lambda: f"numpy.linspace(retstep=True): the step's divisor {div} must be "
                    "at least 1 (numpy returns the Python float nan as the step there, whose type promotes "
                    "differently from the numpy scalar at other sizes)")
    return [shape, ()]


register_op("tpe.linspace_retstep", _linspace_retstep, _linspace_retstep_rule, multi_output=True,
            doc="numpy.linspace(..., retstep=True): (samples, step); capture routes the retstep form here")


def _shape_array(*sizes: Any) -> np.ndarray:
    return np.array(sizes)


def _shape_array_rule(ctx: Any, *sizes: Any) -> tuple:
    lo = sympy.Min(*[sympy.sympify(s) for s in sizes]) if sizes else 0
    hi = sympy.Max(*[sympy.sympify(s) for s in sizes]) if sizes else 0
    ctx.vrange(lo, hi)
    return (len(sizes),)


register_op("tpe.shape_array", _shape_array, _shape_array_rule,
            doc="np.array of a tuple of sizes (x.shape): an int64 vector, never an object array")


def _size_scalar(value: Any, dtype: Any) -> Any:
    return np.dtype(dtype).type(value)


def _size_scalar_rule(ctx: Any, value: Any, dtype: Any) -> tuple:
    ctx.vrange(value, value)
    return ()


register_op("tpe.size_scalar", _size_scalar, _size_scalar_rule,
            doc="a size as the numpy scalar eager code holds (n + np.int32(1) is an np.int32): "
                "arrays it meets promote as numpy 2 promotes that scalar type")
