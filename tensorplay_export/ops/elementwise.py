"""Elementwise ops: every numpy ufunc (broadcasting), ``where``, ``clip``, rounding.

Shape rule: numpy broadcasting of the array operands through ``ctx.broadcast``
(the one shared helper: for each axis it follows the disjunct the example
satisfies and records it).  Value ranges propagate through ``+ - *`` with
constants, ``minimum``/``maximum`` and ``clip``, so index arrays built from
``arange`` keep known bounds.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .registry import ArrayInfo, WritingFlag, register_op
from ..records import sympy

_GUFUNCS = {"matmul", "matvec", "vecdot", "vecmat"}


def shape_of(value: Any) -> tuple:
    """Symbolic shape of any operand: arrays, scalars, nested lists of scalars."""
    if isinstance(value, ArrayInfo):
        return value.shape
    if isinstance(value, (sympy.Basic, int, float, complex, bool, np.generic)) or value is None:
        return ()
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, ArrayInfo) for v in value):
            inner = [shape_of(v) for v in value]
            return (len(value),) + inner[0]
        return tuple(np.shape(value))
    return tuple(np.shape(value))


def _scalar_value(value: Any) -> Any:
    """sympy value of a scalar operand (int / size expression), or None."""
    if isinstance(value, sympy.Basic) and not _is_condition(value):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return sympy.Integer(int(value))
    return None


def _is_condition(value: Any) -> bool:
    """A size comparison or logic operand (``x * (n > 3)``); sympy's relations are not ``is_Boolean``."""
    return bool(value.is_Boolean or value.is_Relational)


def value_bounds(value: Any) -> Any:
    """(lo, hi) of an operand's values: an ArrayInfo's vrange or a scalar's own value."""
    if isinstance(value, ArrayInfo):
        return value.vrange
    v = _scalar_value(value)
    return (v, v) if v is not None else None


def _int_scalar_fits(ctx: Any, inputs: tuple) -> None:
    """A symbolic Python int mixed with a small integer array must fit its dtype (NEP 50)."""
    dtypes = [v.dtype for v in inputs if isinstance(v, ArrayInfo) and v.dtype is not None]
    scalars = [v for v in inputs if isinstance(v, sympy.Basic) and not _is_condition(v) and not v.is_number]
    if not scalars or not dtypes:
        return
    try:
        kind = np.result_type(*dtypes)
    except TypeError:
        return
    if kind.kind not in "iu" or kind.itemsize >= 8:
        return
    info = np.iinfo(kind)
    for v in scalars:
        if v.has(sympy.Float):
            continue
        ctx.require(sympy.Le(v, int(info.max)), f"Python int {ctx.text(v)} must fit {kind} (numpy raises "
                                                "OverflowError)")
        ctx.require(sympy.Ge(v, int(info.min)), f"Python int {ctx.text(v)} must fit {kind} (numpy raises "
                                                "OverflowError)")


# comparisons take a Python int outside the array's dtype (numpy 2 compares the values exactly)
_COMPARISONS = frozenset(f"numpy.{n}" for n in ("less", "less_equal", "greater", "greater_equal", "equal",
                                                  "not_equal"))


def broadcast_rule(ctx: Any, *inputs: Any, **kwargs: Any) -> tuple:
    if getattr(ctx, "op", None) not in _COMPARISONS:
        _int_scalar_fits(ctx, inputs)
    shapes = [shape_of(v) for v in inputs]
    sites = [v.sites if isinstance(v, ArrayInfo) else None for v in inputs]
    where = kwargs.get("where")
    if isinstance(where, ArrayInfo):
        shapes.append(where.shape)
        sites.append(where.sites)
    return ctx.broadcast(*shapes, sites=sites)


def _range_rule(name: str):
    """Value-range propagation for integer arithmetic used to build indices."""
    def rule(ctx: Any, *inputs: Any, **kwargs: Any) -> tuple:
        shape = broadcast_rule(ctx, *inputs, **kwargs)
        if len(inputs) == 2:
            a, b = value_bounds(inputs[0]), value_bounds(inputs[1])
            if a is not None and b is not None:
                if name == "add":
                    ctx.vrange(a[0] + b[0], a[1] + b[1])
                elif name == "subtract":
                    ctx.vrange(a[0] - b[1], a[1] - b[0])
                elif name == "maximum":
                    ctx.vrange(sympy.Max(a[0], b[0]), sympy.Max(a[1], b[1]))
                elif name == "minimum":
                    ctx.vrange(sympy.Min(a[0], b[0]), sympy.Min(a[1], b[1]))
                elif name == "multiply" and isinstance(inputs[1], int) and inputs[1] >= 0:
                    ctx.vrange(a[0] * b[0], a[1] * b[0])
        return shape
    return rule


def _multi_rule(nout: int):
    def rule(ctx: Any, *inputs: Any, **kwargs: Any) -> list:
        shape = broadcast_rule(ctx, *inputs, **kwargs)
        return [shape] * nout
    return rule


def _register_ufuncs() -> None:
    seen = set()
    for attr in sorted(vars(np)):
        uf = vars(np)[attr]
        if not isinstance(uf, np.ufunc) or uf.__name__ in _GUFUNCS or uf.__name__ in seen:
            continue
        seen.add(uf.__name__)
        name = f"numpy.{uf.__name__}"
        if uf.nout > 1:
            register_op(name, uf, _multi_rule(uf.nout), numpy_funcs=(uf,), multi_output=True)
        elif uf.__name__ in ("add", "subtract", "maximum", "minimum", "multiply"):
            register_op(name, uf, _range_rule(uf.__name__), numpy_funcs=(uf,))
        else:
            register_op(name, uf, broadcast_rule, numpy_funcs=(uf,))


_register_ufuncs()


def _where_rule(ctx: Any, condition: Any, *xy: Any) -> Any:
    if not xy:
        from ..errors import UnsupportedOpError

        raise UnsupportedOpError("numpy.where(condition) with one argument: use numpy.nonzero(condition)")
    return ctx.broadcast(*(shape_of(v) for v in (condition, *xy)))


def _where_impl(condition: Any, *xy: Any) -> Any:
    return np.where(condition, *xy)


def _where_variant(condition: Any, *xy: Any, **kwargs: Any) -> Any:
    return "numpy.nonzero" if not xy and not kwargs else None  # np.where(c) is np.nonzero(c)


register_op("numpy.where", _where_impl, _where_rule, numpy_funcs=(np.where,), variant=_where_variant)


def _clip_rule(ctx: Any, a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kw: Any) -> tuple:
    lo = kw.pop("min", a_min)
    hi = kw.pop("max", a_max)
    shape = ctx.broadcast(*(shape_of(v) for v in (a, lo, hi) if v is not None))
    lb, hb = value_bounds(lo) if lo is not None else None, value_bounds(hi) if hi is not None else None
    if lb is not None and hb is not None:
        ctx.vrange(lb[0], hb[1])
    return shape


def _clip_method(a: Any, min: Any = None, max: Any = None, **kw: Any) -> Any:  # noqa: A002
    return a.clip(min, max, **kw)


register_op("numpy.clip", np.clip, _clip_rule, numpy_funcs=(np.clip,))
register_op("numpy.ndarray.clip", _clip_method, _clip_rule, methods=("clip",))


def same_shape(ctx: Any, a: Any, *args: Any, **kwargs: Any) -> tuple:
    """The rule of every op whose output has its first operand's shape (round, flip, astype, ...)."""
    return shape_of(a)


register_op("numpy.round", np.round, same_shape, numpy_funcs=(np.round, np.around), methods=("round",))
register_op("numpy.real", np.real, same_shape, numpy_funcs=(np.real,))
register_op("numpy.imag", np.imag, same_shape, numpy_funcs=(np.imag,))
# copy=False (and None: numpy copies only when it must) replaces NaNs in x itself and returns x
register_op("numpy.nan_to_num", np.nan_to_num, same_shape, numpy_funcs=(np.nan_to_num,),
            writing_flag=WritingFlag.unless_true("copy", scrambles=False))
register_op("numpy.ndarray.conj", lambda a: a.conj(), same_shape, methods=("conj", "conjugate"))
