"""Reductions with ``axis``/``keepdims``/``where``/``initial`` and scans (``cumsum``, ``cumprod``,
``cumulative_sum``, the nan forms).

Shape rule: drop (or keep as 1) the reduced axes; ``axis=None`` reduces all.
Reductions never need guards: numpy defines them for every size except
``max``/``min``/``argmax`` over an empty axis, which sizes >= 1 exclude (an
empty-capable dim records ``size >= 1``); an ``initial=`` value lifts that.
A ``where=`` mask must broadcast to the reduced array's shape.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import as_dim, is_static, prod
from .elementwise import shape_of
from .registry import WritingFlag, register_op
from ..records import sympy


def norm_axes(axis: Any, ndim: int) -> tuple:
    """Axis argument -> sorted tuple of non-negative axes (None: all)."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(out))


def reduced_shape(shape: tuple, axis: Any, keepdims: bool) -> tuple:
    axes = norm_axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def require_nonempty(ctx: Any, shape: tuple, axis: Any, reason: str) -> None:
    """Every reduced axis (``axis=None``: all) of a reduction without identity is nonempty."""
    for i in norm_axes(axis, len(shape)) if shape else ():  # 0-d: numpy takes axis 0/-1, nothing reduced
        d = shape[i]
        if not is_static(d):
            ctx.require(sympy.Ge(d, 1), reason)


_NO_IDENTITY = "reduction over an axis without identity needs it nonempty"


def check_where(ctx: Any, shape: tuple, where: Any) -> None:
    """A ``where=`` mask broadcasts (one way) to the shape of the array it selects from."""
    if where is None or isinstance(where, (bool, np.bool_)) or where is np._NoValue:
        return
    from .indexing import require_assignable  # indexing's rules use norm_axes from here

    require_assignable(ctx, shape_of(where), tuple(shape), "where= mask")


def _given(v: Any) -> bool:
    return v is not None and v is not np._NoValue


def _reduce_rule(nonempty: bool):
    def rule(ctx: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, *args: Any, **kwargs: Any) -> tuple:
        shape = shape_of(a)
        check_where(ctx, shape, kwargs.get("where"))
        if nonempty and not _given(kwargs.get("initial")):
            require_nonempty(ctx, shape, axis, _NO_IDENTITY)
        return reduced_shape(shape, axis, bool(keepdims))
    return rule


def _any_all_rule(ctx: Any, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *,
                  where: Any = None) -> tuple:
    """np.any / np.all: no ``dtype``, so a positional ``keepdims`` comes right after ``out``."""
    return _reduce_rule(False)(ctx, a, axis, None, out, keepdims, where=where)


def _extreme_rule(ctx: Any, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                  initial: Any = None, where: Any = None) -> tuple:
    """max / min / nanmax / nanmin: numpy raises over an empty axis (no identity) unless ``initial=``."""
    shape = shape_of(a)
    check_where(ctx, shape, where)
    if not _given(initial):
        require_nonempty(ctx, shape, axis, _NO_IDENTITY)
    return reduced_shape(shape, axis, bool(keepdims))


def _extreme_method_rule(ctx: Any, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                         initial: Any = None, where: Any = None) -> tuple:
    return _extreme_rule(ctx, a, axis, out, keepdims, initial, where)


def _arg_rule(ctx: Any, a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> tuple:
    shape = shape_of(a)
    require_nonempty(ctx, shape, axis, "argmax/argmin over an empty axis")  # axis=None: every axis
    if axis is None or not shape:  # a 0-d input (numpy takes axis 0/-1) gives () too
        return (1,) * len(shape) if keepdims else ()
    d = shape[norm_axes(axis, len(shape))[0]]
    ctx.vrange(0, d - 1)
    return reduced_shape(shape, axis, bool(keepdims))


def _stat_rule(ctx: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
               ddof: Any = 0, keepdims: bool = False, **kwargs: Any) -> tuple:
    shape = shape_of(a)
    check_where(ctx, shape, kwargs.get("where"))
    return reduced_shape(shape, axis, bool(keepdims))


def _scan_rule(ctx: Any, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> tuple:
    shape = shape_of(a)
    if axis is None:
        return (prod(shape),)
    norm_axes(axis, len(shape))
    return shape or (1,)  # numpy scans a 0-d input as 1-d


def _cumulative_rule(ctx: Any, x: Any, *, axis: Any = None, dtype: Any = None, out: Any = None,
                     include_initial: bool = False) -> tuple:
    """numpy 2's cumulative_sum / cumulative_prod: ``axis`` is needed beyond 1-d; the initial value adds one."""
    shape = shape_of(x)
    if not shape:
        raise ValueError("numpy.cumulative_sum/prod take an array of at least one dimension")
    if axis is None:
        if len(shape) != 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        ax = 0
    else:
        ax = norm_axes(axis, len(shape))[0]
    if not include_initial:
        return tuple(shape)
    d = shape[ax]
    grown = d + 1 if isinstance(d, int) else as_dim(sympy.sympify(d) + 1)
    return tuple(grown if i == ax else e for i, e in enumerate(shape))


def _method(name: str):
    def impl(a: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(np.asarray(a) if np.isscalar(a) else a, name)(*args, **kwargs)
    impl.__name__ = name
    return impl


_REDUCTIONS = [
    ("sum", np.sum, False), ("prod", np.prod, False), ("mean", np.mean, False),
    ("any", np.any, False), ("all", np.all, False),
    ("max", np.max, True), ("min", np.min, True),
]
for _name, _fn, _nonempty in _REDUCTIONS:
    _funcs = (_fn,) + ((np.amax,) if _name == "max" else (np.amin,) if _name == "min" else ())
    _rule = _extreme_rule if _nonempty else _reduce_rule(False)
    register_op(f"numpy.{_name}", _fn, _any_all_rule if _name in ("any", "all") else _rule, numpy_funcs=_funcs)
    register_op(f"numpy.ndarray.{_name}", _method(_name), _extreme_method_rule if _nonempty else _rule,
                methods=(_name,))

for _name, _fn in (("var", np.var), ("std", np.std)):
    register_op(f"numpy.{_name}", _fn, _stat_rule, numpy_funcs=(_fn,))
    register_op(f"numpy.ndarray.{_name}", _method(_name), _stat_rule, methods=(_name,))

for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register_op(f"numpy.{_name}", _fn, _arg_rule, numpy_funcs=(_fn,))
    register_op(f"numpy.ndarray.{_name}", _method(_name), _arg_rule, methods=(_name,))

for _name, _fn in (("cumsum", np.cumsum), ("cumprod", np.cumprod)):
    register_op(f"numpy.{_name}", _fn, _scan_rule, numpy_funcs=(_fn,))
    register_op(f"numpy.ndarray.{_name}", _method(_name), _scan_rule, methods=(_name,))

# positional parameters: nanstd/nanvar take ``ddof`` before ``keepdims`` (as var/std); the others take
# ``keepdims`` fifth (nansum, nanprod, nanmean after ``out``; median, nanmedian after ``overwrite_input``)
_NAN_RULES = {"nanmax": _extreme_rule, "nanmin": _extreme_rule, "nanstd": _stat_rule, "nanvar": _stat_rule}
# ``overwrite_input=True`` lets numpy partially sort its input in place, in an order it does not
# define (also percentile/quantile: ops/stats.py)
OVERWRITE_INPUT = WritingFlag.when_true("overwrite_input", scrambles=True)
for _name in ("nansum", "nanmean", "nanmax", "nanmin", "median", "nanmedian", "nanprod", "nanstd", "nanvar"):
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _NAN_RULES.get(_name, _reduce_rule(False)), numpy_funcs=(_fn,),
                writing_flag=OVERWRITE_INPUT if _name in ("median", "nanmedian") else None)

for _name in ("nanargmax", "nanargmin"):  # like argmax: an empty axis raises
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _arg_rule, numpy_funcs=(_fn,))

for _name in ("nancumsum", "nancumprod"):
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _scan_rule, numpy_funcs=(_fn,))

for _name in ("cumulative_sum", "cumulative_prod"):
    _fn = getattr(np, _name, None)
    if _fn is not None:  # numpy >= 2.1
        register_op(f"numpy.{_name}", _fn, _cumulative_rule, numpy_funcs=(_fn,))
