"""Selections and set operations whose length depends on the data: compress, extract, trim_zeros,
setdiff1d, intersect1d, union1d (``numpy.unique``, ``nonzero`` and boolean masks are in indexing).

Each output length is a data-dependent size (``ctx.new_unbacked``): a symbol ``u<n>`` with the
range numpy's definition bounds it by (a selection of ``n`` values has at most ``n``), bound
at run time from the output it is the length of.  A condition given as a constant list is no
data: ``np.compress([True, False, True], x, axis=1)`` has the static length 2.  Values and
dtypes are numpy's own (each impl is numpy's function).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..records import sympy
from .ctx import as_dim, is_static, prod
from .elementwise import shape_of
from .indexing import _count_key
from .registry import ArrayInfo, register_op


def _flat(a: Any) -> Any:
    return prod(shape_of(a))


def _require_within(ctx: Any, length: Any, size: Any, op: str) -> None:
    """A selector of ``length`` entries over an axis of ``size``: numpy reads selector entries beyond
    the axis only if they are true (then IndexError); required here for every entry, which is
    exact when the selector is as long as the axis (the usual case) and stricter otherwise."""
    if is_static(length) and is_static(size):
        return
    ctx.bounds(sympy.Le(length, size), lambda: f"{op}: a condition of {ctx.text(length)} entries over an axis "
                                               f"of size {ctx.text(size)}")


# -- compress / extract ---------------------------------------------------------------------------
def _compress_rule(ctx: Any, condition: Any, a: Any, axis: Any = None, out: Any = None) -> tuple:
    """numpy.compress: the entries of ``a`` along ``axis`` (flattened for None) where ``condition``
    is true; a constant condition gives a static length (its true count), an array one a
    data-dependent size of at most its length."""
    shape = tuple(shape_of(a))
    if axis is None:
        along, rest, ax = _flat(a), (), 0
    else:
        if not shape:
            raise np.exceptions.AxisError(f"numpy.compress: axis {axis} is out of bounds for array of dimension 0")
        ax = int(axis) % len(shape)
        along, rest = shape[ax], shape
    if isinstance(condition, ArrayInfo):
        cshape = tuple(condition.shape)
        if len(cshape) != 1:
            raise ValueError("condition must be a 1-d array")
        _require_within(ctx, cshape[0], along, "numpy.compress")
        size: Any = ctx.new_unbacked(cshape[0], 0, ax, same_as=_count_key(condition))
    else:
        flags = np.asarray(condition).reshape(-1)
        if not isinstance(condition, (list, tuple, np.ndarray)) or np.asarray(condition).ndim != 1:
            raise ValueError("condition must be a 1-d array")
        true_at = np.flatnonzero(flags)
        if len(true_at):
            last = int(true_at[-1]) + 1
            if not is_static(along):
                ctx.bounds(sympy.Ge(along, last), "numpy.compress: condition selects index "
                                                  f"{ctx.text(last - 1)} of the axis")
        size = len(true_at)
    if axis is None:
        return (size,)
    return tuple(size if i == ax else d for i, d in enumerate(rest))


def _compress_method(a: Any, condition: Any, axis: Any = None, out: Any = None) -> Any:
    return np.compress(condition, a, axis, out)


register_op("numpy.compress", np.compress, _compress_rule, numpy_funcs=(np.compress,))
register_op("numpy.ndarray.compress", _compress_method,
            lambda ctx, a, condition, axis=None, out=None: _compress_rule(ctx, condition, a, axis, out),
            methods=("compress",))


def _extract_rule(ctx: Any, condition: Any, arr: Any) -> tuple:
    """numpy.extract: ``take(ravel(arr), nonzero(ravel(condition)))``; a data-dependent length."""
    n_cond, n_arr = _flat(condition), _flat(arr)
    _require_within(ctx, n_cond, n_arr, "numpy.extract")
    if not isinstance(condition, ArrayInfo):  # a constant: its true count
        flags = np.asarray(condition).reshape(-1)
        return (int(np.count_nonzero(flags)),)
    return (ctx.new_unbacked(n_cond, 0, 0, same_as=_count_key(condition)),)


register_op("numpy.extract", np.extract, _extract_rule, numpy_funcs=(np.extract,))


# -- trim_zeros -------------------------------------------------------------------------------------
def _trim_zeros_rule(ctx: Any, filt: Any, trim: str = "fb", axis: Any = None) -> tuple:
    """numpy.trim_zeros: a slice without the leading / trailing zeros; each trimmed axis (every
    axis for ``axis=None``) gets a data-dependent size of at most its own."""
    shape = tuple(shape_of(filt))
    if not shape:
        raise ValueError("trim_zeros needs an array of at least one dimension")
    axes = range(len(shape)) if axis is None else [int(a) % len(shape) for a in np.atleast_1d(axis)]
    out = list(shape)
    for ax in axes:
        out[ax] = ctx.new_unbacked(shape[ax], 0, ax)
    return tuple(out)


register_op("numpy.trim_zeros", np.trim_zeros, _trim_zeros_rule, numpy_funcs=(np.trim_zeros,))


# -- set operations of 1-d results ------------------------------------------------------------------
def _setdiff1d_rule(ctx: Any, ar1: Any, ar2: Any, assume_unique: bool = False) -> tuple:
    """numpy.setdiff1d: the (unique, sorted) values of ``ar1`` not in ``ar2``: at most ``ar1.size``."""
    return (ctx.new_unbacked(_flat(ar1), 0, 0),)


def _intersect1d_rule(ctx: Any, ar1: Any, ar2: Any, assume_unique: bool = False,
                      return_indices: bool = False) -> Any:
    """numpy.intersect1d: the sorted common values: at most the smaller size."""
    n1, n2 = _flat(ar1), _flat(ar2)
    upper = min(int(n1), int(n2)) if is_static(n1) and is_static(n2) else as_dim(sympy.Min(n1, n2))
    u = ctx.new_unbacked(upper, 0, 0)
    if return_indices:
        ctx.vrange(0, sympy.sympify(n1) - 1, out=1)
        ctx.vrange(0, sympy.sympify(n2) - 1, out=2)
        return [(u,), (u,), (u,)]
    return (u,)


def _intersect1d_variant(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False) -> Any:
    return "tpe.intersect1d_indices" if return_indices else None


def _intersect1d_indices(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = True) -> tuple:
    return tuple(np.intersect1d(ar1, ar2, assume_unique, True))


def _union1d_rule(ctx: Any, ar1: Any, ar2: Any) -> tuple:
    """numpy.union1d: the sorted unique values of both: at most ``ar1.size + ar2.size``."""
    total = _flat(ar1) + _flat(ar2)
    return (ctx.new_unbacked(int(total) if is_static(total) else as_dim(sympy.sympify(total)), 0, 0),)


register_op("numpy.setdiff1d", np.setdiff1d, _setdiff1d_rule, numpy_funcs=(np.setdiff1d,))
register_op("numpy.intersect1d", np.intersect1d, _intersect1d_rule, numpy_funcs=(np.intersect1d,),
            variant=_intersect1d_variant)
register_op("tpe.intersect1d_indices", _intersect1d_indices,
            lambda ctx, ar1, ar2, assume_unique=False, return_indices=True: _intersect1d_rule(ctx, ar1, ar2,
                                                                                                assume_unique, True),
            multi_output=True,
            doc="numpy.intersect1d(..., return_indices=True): (values, indices in ar1, indices in ar2)")
register_op("numpy.union1d", np.union1d, _union1d_rule, numpy_funcs=(np.union1d,))
