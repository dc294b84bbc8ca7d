"""Order statistics and binning: ``np.percentile`` / ``np.quantile`` (and their nan forms),
``np.histogram``, ``np.digitize``, ``np.average``, ``np.ptp``.

``percentile(a, q, axis)`` has shape ``q.shape + reduced(a.shape)``; numpy
raises over an empty reduced axis (it indexes the last sorted element), so
each reduced axis is required nonempty, as for ``max``.  The nan forms return
NaN there instead, except that for an empty array with an array ``q`` numpy returns
``nanmean``'s shape (without ``q``'s axes): with an array ``q`` the input is required
nonempty.  Every method numpy accepts has that shape.

``histogram(a, bins)`` with an integer ``bins`` gives ``(bins,)`` counts and
``(bins + 1,)`` edges (``bins >= 1`` is required); with an array of ``k`` edges,
``(k - 1,)`` and ``(k,)``.  A string estimator (``bins="auto"``) picks the
count from the data and is refused.  ``digitize(x, bins)`` has ``x``'s shape
and values in ``[0, len(bins)]``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import as_dim, is_static
from .elementwise import shape_of
from ..errors import UnsupportedOpError
from .reduce import OVERWRITE_INPUT, norm_axes, reduced_shape, require_nonempty
from .registry import ArrayInfo, register_op
from ..records import sympy


def _quantile_rule(name: str, nan: bool):
    def rule(ctx: Any, a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None,
             interpolation: Any = None) -> tuple:
        shape = shape_of(a)
        if not nan:
            require_nonempty(ctx, shape, axis, f"numpy.{name} over an empty axis (numpy raises IndexError)")
        elif len(shape_of(q)):
            # numpy returns nanmean's shape for an empty array, dropping q's axes: the rule's
            # shape holds only for a nonempty one
            require_nonempty(ctx, shape, None, f"numpy.{name} with an array q needs a nonempty input "
                                               "(numpy drops q's axes for an empty one)")
        if weights is not None:
            ws = shape_of(weights)
            if len(ws) == len(shape):
                for w, d in zip(ws, shape):
                    ctx.eq(w, d, f"numpy.{name}: weights must have the shape of a")
            elif len(ws) == 1 and axis is not None and not isinstance(axis, (tuple, list)):
                ctx.eq(ws[0], shape[norm_axes(axis, len(shape))[0]],
                       f"numpy.{name}: 1-d weights must have the length of the reduced axis")
            else:
                raise ValueError(f"numpy.{name}: weights must have the shape of a (or be 1-d along axis)")
        return tuple(shape_of(q)) + reduced_shape(shape, axis, bool(keepdims))
    return rule


for _name, _nan in (("percentile", False), ("quantile", False), ("nanpercentile", True), ("nanquantile", True)):
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _quantile_rule(_name, _nan), numpy_funcs=(_fn,),
                writing_flag=OVERWRITE_INPUT)


def _histogram_rule(ctx: Any, a: Any, bins: Any = 10, range: Any = None, density: Any = None,  # noqa: A002
                    weights: Any = None) -> list:
    if weights is not None:
        sa, sw = shape_of(a), shape_of(weights)
        if len(sa) != len(sw):
            raise ValueError("weights should have the same shape as a.")
        for w, d in zip(sw, sa):
            ctx.eq(w, d, "numpy.histogram: weights should have the same shape as a")
    if isinstance(bins, str):
        raise UnsupportedOpError(f"numpy.histogram with bins={bins!r} picks the number of bins from the data; "
                                 "pass an int or an array of edges")
    if isinstance(bins, (ArrayInfo, list, tuple, np.ndarray)):
        sb = shape_of(bins)
        if len(sb) != 1:
            raise ValueError("`bins` must be 1d, when an array")
        k = sb[0]
        counts = k - 1 if is_static(k) and int(k) >= 1 else (0 if is_static(k) else ctx.canon(sympy.Max(k - 1, 0)))
        return [(as_dim(counts) if not isinstance(counts, int) else counts,), (k,)]
    if not is_static(bins):
        ctx.require(sympy.Ge(bins, 1), f"numpy.histogram: `bins` ({ctx.text(bins)}) must be positive, when an integer")
        return [(as_dim(sympy.sympify(bins)),), (as_dim(sympy.sympify(bins) + 1),)]
    return [(int(bins),), (int(bins) + 1,)]


def _histogram_impl(a: Any, bins: Any = 10, range: Any = None, density: Any = None,  # noqa: A002
                    weights: Any = None) -> tuple:
    return tuple(np.histogram(a, bins, range, density, weights))


register_op("numpy.histogram", _histogram_impl, _histogram_rule, numpy_funcs=(np.histogram,), multi_output=True,
            doc="numpy.histogram: (counts, bin edges) of a's values")


def _digitize_rule(ctx: Any, x: Any, bins: Any, right: bool = False) -> tuple:
    sb = shape_of(bins)
    if len(sb) != 1:
        raise ValueError("numpy.digitize: bins must be 1-d")
    ctx.vrange(0, sb[0])
    return tuple(shape_of(x))


register_op("numpy.digitize", np.digitize, _digitize_rule, numpy_funcs=(np.digitize,),
            doc="numpy.digitize: index of the bin each value of x falls in")


def _average_rule(ctx: Any, a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
                  keepdims: bool = False) -> tuple:
    if returned:
        raise UnsupportedOpError("numpy.average(..., returned=True) is not supported during capture; "
                                 "compute the weight sum with np.sum(weights, axis) beside it")
    shape = shape_of(a)
    if weights is not None:
        ws = shape_of(weights)
        if len(ws) == len(shape):
            for w, d in zip(ws, shape):
                ctx.eq(w, d, "numpy.average: weights must have the shape of a")
        elif axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        else:
            axes = norm_axes(axis, len(shape))
            if len(ws) != len(axes):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            for w, i in zip(ws, axes):
                ctx.eq(w, shape[i], "numpy.average: weights must have the length of the averaged axis")
    return reduced_shape(shape, axis, bool(keepdims))


register_op("numpy.average", np.average, _average_rule, numpy_funcs=(np.average,),
            doc="numpy.average: (weighted) mean along axis (returned=False)")


def _ptp_rule(ctx: Any, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> tuple:
    shape = shape_of(a)
    require_nonempty(ctx, shape, axis, "numpy.ptp over an empty axis (max has no identity)")
    return reduced_shape(shape, axis, bool(keepdims))


register_op("numpy.ptp", np.ptp, _ptp_rule, numpy_funcs=(np.ptp,), doc="numpy.ptp: max - min along axis")

