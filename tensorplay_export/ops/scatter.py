"""Scatter and segment ops: ufunc ``.at`` (``np.add.at`` ...), ufunc ``.reduceat``,
``np.put_along_axis`` and ``np.bincount``.

``np.add.at(a, idx, b)`` and ``np.put_along_axis(a, idx, v, axis)`` write into
``a`` and return None.  Each is registered as a functional ``tpe.*`` op with
``writes_arg=0`` (its impl returns the updated copy); capture writes the result
into ``a``'s example and rebinds ``a`` (see ``writes_arg`` in ``registry.py``).
The output shape is ``a``'s; the rules check what numpy checks on sizes: the
index key as ``a[idx]`` would (``index_bounds`` guards for index arrays of
known range), and that the values broadcast to the indexed slots.

``np.bincount(x, minlength=m)`` has length ``max(x) + 1`` (at least ``m``):
data-dependent, an unbacked ``u<n>`` the solver knows is ``>= m``.  When ``x``'s
value range is known and below ``m`` (``argmax`` over ``m`` experts), the
length is exactly ``m`` and stays backed.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import as_dim, is_static, prod
from .elementwise import shape_of
from .indexing import const_index_range, getitem_shape, require_assignable
from .reduce import norm_axes
from .registry import ArrayInfo, register_op
from ..records import sympy

# ufuncs whose ``.at`` (unbuffered in-place scatter) capture supports
AT_UFUNCS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin",
             "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor")
# ufuncs whose ``.reduceat`` (segment reduction) capture supports
REDUCEAT_UFUNCS = ("add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or",
                   "bitwise_and", "bitwise_or")


def value_range(idx: Any) -> Any:
    """``(lo, hi)`` of an integer index operand (traced array with a vrange, or a constant), else None."""
    if isinstance(idx, ArrayInfo):
        return idx.vrange
    pairs = const_index_range(idx)
    if not pairs:
        return None
    lo = sympy.Min(*[sympy.sympify(p[0]) for p in pairs])
    hi = sympy.Max(*[sympy.sympify(p[1]) for p in pairs])
    return lo, hi


def require_in_range(ctx: Any, idx: Any, n: Any, what: str, negative_ok: bool) -> None:
    """Index values of known range stay in ``[0, n)`` (``[-n, n)`` when ``negative_ok``)."""
    vr = value_range(idx)
    if vr is None:
        return
    lo, hi = vr
    if is_static(lo) and is_static(hi) and is_static(n):
        return  # numpy checked the example
    # unevaluated: a bound no size satisfies (u0 <= u0 - 1) keeps its sides for the message
    ctx.bounds(sympy.Le(hi, sympy.sympify(n) - 1, evaluate=False), lambda: f"{what}: index values up to {ctx.text(hi)} on an "
                                                           f"axis of size {ctx.text(n)}")
    low = -sympy.sympify(n) if negative_ok else sympy.Integer(0)
    ctx.bounds(sympy.Ge(lo, low, evaluate=False), lambda: f"{what}: index values down to {ctx.text(lo)} on an axis of size "
                                          f"{ctx.text(n)}")


# -- ufunc.at ------------------------------------------------------------------------------------
def _has_mask(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, ArrayInfo) and k.dtype == np.bool_ for k in keys)


def _at_rule(name: str):
    def rule(ctx: Any, a: Any, indices: Any, b: Any = None) -> tuple:
        shape = shape_of(a)
        if _has_mask(indices):  # a masked scatter: the slot count is data-dependent; numpy checks b
            return shape
        sub = getitem_shape(ctx, shape, indices)
        if b is not None:
            require_assignable(ctx, shape_of(b), sub, f"numpy.{name}.at: the values")
        return shape
    return rule


def _at_impl(ufunc: np.ufunc):
    def impl(a: Any, indices: Any, b: Any = None) -> np.ndarray:
        out = np.array(a, copy=True)
        if b is None:
            ufunc.at(out, indices)
        else:
            ufunc.at(out, indices, b)
        return out
    impl.__name__ = f"{ufunc.__name__}_at"
    return impl


for _name in AT_UFUNCS:
    _uf = getattr(np, _name)
    register_op(f"tpe.{_name}_at", _at_impl(_uf), _at_rule(_name), numpy_funcs=(_uf.at,), writes_arg=0,
                doc=f"functional numpy.{_name}.at(a, indices, b): returns the updated copy of a")


# -- ufunc.reduceat --------------------------------------------------------------------------------
def _reduceat_rule(name: str):
    def rule(ctx: Any, array: Any, indices: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> tuple:
        shape = shape_of(array)
        ishape = shape_of(indices)
        if len(ishape) != 1:
            raise ValueError(f"numpy.{name}.reduceat: indices must be 1-d, got shape {ishape}")
        if axis is None:
            raise ValueError(f"numpy.{name}.reduceat does not take axis=None")
        ax = norm_axes(axis, len(shape))[0]
        require_in_range(ctx, indices, shape[ax], f"numpy.{name}.reduceat", negative_ok=False)
        return tuple(ishape[0] if i == ax else d for i, d in enumerate(shape))
    return rule


for _name in REDUCEAT_UFUNCS:
    _uf = getattr(np, _name)
    register_op(f"numpy.{_name}.reduceat", _uf.reduceat, _reduceat_rule(_name), numpy_funcs=(_uf.reduceat,),
                doc=f"numpy.{_name}.reduceat(a, indices, axis): reductions over the segments starting at indices")


# -- put_along_axis --------------------------------------------------------------------------------
def _put_along_axis_impl(arr: Any, indices: Any, values: Any, axis: Any) -> np.ndarray:
    out = np.array(arr, copy=True)
    np.put_along_axis(out, indices, values, axis)
    return out


def _put_along_axis_rule(ctx: Any, arr: Any, indices: Any, values: Any, axis: Any) -> tuple:
    shape = shape_of(arr)
    ishape = shape_of(indices)
    if axis is None:
        if len(ishape) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        require_in_range(ctx, indices, prod(shape), "put_along_axis", negative_ok=True)
        require_assignable(ctx, shape_of(values), ishape, "put_along_axis: the values")
        return shape
    if len(ishape) != len(shape):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ax = norm_axes(axis, len(shape))[0]
    require_in_range(ctx, indices, shape[ax], "put_along_axis", negative_ok=True)
    slots = tuple(e if i == ax else ctx.broadcast_dim(d, e) for i, (d, e) in enumerate(zip(shape, ishape)))
    require_assignable(ctx, shape_of(values), slots, "put_along_axis: the values")
    return shape


register_op("tpe.put_along_axis", _put_along_axis_impl, _put_along_axis_rule, numpy_funcs=(np.put_along_axis,),
            writes_arg=0, doc="functional numpy.put_along_axis(arr, indices, values, axis): returns the updated copy")


# -- bincount ----------------------------------------------------------------------------------------
def _bincount_rule(ctx: Any, x: Any, weights: Any = None, minlength: Any = 0) -> tuple:
    shape = shape_of(x)
    if len(shape) != 1:
        raise ValueError(f"numpy.bincount takes a 1-d array, got shape {shape}")
    n = shape[0]
    if weights is not None:
        ws = shape_of(weights)
        if len(ws) != 1:
            raise ValueError("numpy.bincount: weights must be 1-d")
        ctx.eq(ws[0], n, "numpy.bincount: the weights and the list must have the same length")
    if minlength is None:
        minlength = 0
    if not is_static(minlength):
        ctx.require(sympy.Ge(minlength, 0), f"numpy.bincount: minlength {ctx.text(minlength)} must be non-negative")
    m = sympy.sympify(minlength)
    vr = value_range(x)
    if weights is None:
        ctx.vrange(0, n)  # a count of some of the n values
    if vr is not None:
        lo, hi = vr
        if not (is_static(lo) and is_static(n)):
            ctx.bounds(sympy.Ge(lo, 0), lambda: f"numpy.bincount: values down to {ctx.text(lo)} must be non-negative")
        # every value is below minlength: the length is minlength, a size known ahead of time
        if sympy.sympify(sympy.Le(sympy.sympify(hi) + 1, m)) is sympy.true:
            return (as_dim(m),)
        upper = sympy.Max(sympy.sympify(hi) + 1, m)
    else:
        upper = None
    return (ctx.new_unbacked(upper, 0, 0, lower=m),)


register_op("numpy.bincount", np.bincount, _bincount_rule, numpy_funcs=(np.bincount,),
            doc="numpy.bincount: counts (or summed weights) of each value in a 1-d non-negative int array")
