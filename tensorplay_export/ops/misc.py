"""Smaller families: norms, differences, diagonals, 2-d promotion.

The long tail of numpy lives here until it grows into its own family module.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import as_dim, is_static, prod
from .elementwise import shape_of
from .reduce import norm_axes, reduced_shape
from .registry import register_op
from ..records import sympy


def _norm_rule(ctx: Any, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> tuple:  # noqa: A002
    shape = shape_of(x)
    if axis is None and ord is not None and len(shape) > 2:
        raise ValueError("Improper number of dimensions to norm.")
    return reduced_shape(shape, axis, bool(keepdims))


register_op("numpy.linalg.norm", np.linalg.norm, _norm_rule, numpy_funcs=(np.linalg.norm,))


def _diff_rule(ctx: Any, a: Any, n: Any = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> tuple:
    """``np.diff``: the axis shrinks by the order ``n`` (a size or an int), to no less than 0.

    numpy returns ``a`` itself for ``n == 0`` (before ``prepend``/``append`` are added) and
    raises for ``n < 0``: a symbolic order follows the example's side, ``n >= 1`` or
    ``n == 0`` (a requirement), so the program never meets the other.
    """
    shape = list(shape_of(a))
    if not is_static(n):
        n = sympy.sympify(n)
        if ctx.hint(n) == 0:
            ctx.require(sympy.Eq(n, 0), lambda: f"np.diff's order {ctx.text(n)} is 0 in the example (the input "
                                                "comes back "
                                                 f"as it is)")
            return tuple(shape)
        ctx.require(sympy.Ge(n, 1), lambda: f"np.diff's order {ctx.text(n)} must stay >= 1 as in the example (numpy "
                                             f"rejects a negative order and returns the input itself for 0)")
    elif int(n) == 0:
        return tuple(shape)
    ax = int(axis) % len(shape)
    d = shape[ax]
    for extra in (prepend, append):
        if extra is not None:
            es = shape_of(extra)
            d = d + (es[ax] if len(es) == len(shape) else 1)
    out = sympy.sympify(d) - n
    shape[ax] = ctx.canon(sympy.Max(out, 0)) if not is_static(out) else max(int(out), 0)
    return tuple(shape)


register_op("numpy.diff", np.diff, _diff_rule, numpy_funcs=(np.diff,))


def _diagonal_rule(ctx: Any, a: Any, offset: Any = 0, axis1: int = 0, axis2: int = 1) -> tuple:
    """``np.diagonal``: the length of the ``offset``-th diagonal (a size or an int) of the
    ``axis1`` x ``axis2`` plane, ``min(rows + min(k, 0), cols - max(k, 0))`` and at least 0."""
    shape = shape_of(a)
    i, j = int(axis1) % len(shape), int(axis2) % len(shape)
    k = int(offset) if is_static(offset) else sympy.sympify(offset)
    rows, cols = sympy.sympify(shape[i]), sympy.sympify(shape[j])
    length = sympy.Min(rows + sympy.Min(k, 0), cols - sympy.Max(k, 0))
    rest = tuple(d for t, d in enumerate(shape) if t not in (i, j))
    return rest + (ctx.canon(sympy.Max(length, 0)),)


register_op("numpy.diagonal", np.diagonal, _diagonal_rule, numpy_funcs=(np.diagonal,), methods=("diagonal",))


def _trace_rule(ctx: Any, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
                out: Any = None) -> tuple:
    shape = shape_of(a)
    i, j = int(axis1) % len(shape), int(axis2) % len(shape)
    return tuple(d for t, d in enumerate(shape) if t not in (i, j))


register_op("numpy.trace", np.trace, _trace_rule, numpy_funcs=(np.trace,), methods=("trace",))


def _diag_rule(ctx: Any, v: Any, k: Any = 0) -> tuple:
    """``np.diag``: a 1-d ``v`` of length m gives an ``(m + |k|)``-square matrix; a 2-d one its
    ``k``-th diagonal (``k`` a size or an int)."""
    shape = shape_of(v)
    k = int(k) if is_static(k) else sympy.sympify(k)
    if len(shape) == 1:
        n = as_dim(sympy.sympify(shape[0]) + (abs(k) if isinstance(k, int) else sympy.Max(k, -k)))
        return (n, n)
    return _diagonal_rule(ctx, v, k)


register_op("numpy.diag", np.diag, _diag_rule, numpy_funcs=(np.diag,))


def _atleast_2d_rule(ctx: Any, a: Any) -> tuple:
    shape = shape_of(a)
    return shape if len(shape) >= 2 else (1,) * (2 - len(shape)) + tuple(shape)


register_op("numpy.atleast_2d", np.atleast_2d, _atleast_2d_rule, numpy_funcs=(np.atleast_2d,))


def _count_nonzero_rule(ctx: Any, a: Any, axis: Any = None, *, keepdims: bool = False) -> tuple:
    shape = shape_of(a)
    if axis is not None:
        norm_axes(axis, len(shape))
    ctx.vrange(0, prod(shape))
    return reduced_shape(shape, axis, bool(keepdims))


register_op("numpy.count_nonzero", lambda a, axis=None, *, keepdims=False: np.asarray(
    np.count_nonzero(a, axis=axis, keepdims=keepdims)), _count_nonzero_rule, numpy_funcs=(np.count_nonzero,))


def _isclose_rule(ctx: Any, a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> tuple:
    return ctx.broadcast(*(shape_of(v) for v in (a, b, rtol, atol)))


register_op("numpy.isclose", np.isclose, _isclose_rule, numpy_funcs=(np.isclose,),
            doc="numpy.isclose: elementwise |a - b| <= atol + rtol * |b| (broadcast shapes)")
