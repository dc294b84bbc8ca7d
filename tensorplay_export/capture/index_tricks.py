"""``np.mgrid``, ``np.ogrid``, ``np.r_`` and ``np.c_`` as model code sees them during capture.

numpy's index tricks are Python objects whose ``__getitem__`` computes sizes with
``math.ceil`` and ``np.result_type`` and fills arrays through numpy's private module
references, none of which capture sees: a size in a slice was pinned, and ``np.r_`` of traced
arrays asked for their data.  Model code gets these views instead (``np.mgrid`` through the
capture's numpy view, or the object itself read from a global).  When a subscript holds a size
or a traced array, a view builds the same array from ops capture knows (``np.indices``,
``np.arange``, ``np.concatenate``), following numpy's own steps
(``numpy/lib/_index_tricks_impl.py``: ``nd_grid.__getitem__``, ``AxisConcatenator.__getitem__``)
so dtypes and values are numpy's; otherwise numpy's own object answers.

Covered: slices with integer bounds and steps (sizes or ints); for ``r_``/``c_`` also arrays,
scalars and a leading ``"axis[,ndmin[,trans1d]]"`` directive.  A complex step (a point count),
float bounds, a matrix directive (``'r'``, ``'c'``) or a list with a size in the subscript is
numpy's own code, which pins the size with its reason (or refuses a traced array's data).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..ops.registry import get_op
from .symbolic import SymBool, SymFloat, SymInt
from .traced import TracedArray
from .tracer import CURRENT

__all__ = ["INDEX_TRICKS", "view_of"]

_INT_DTYPE = np.result_type(0)  # numpy's dtype for Python ints (np.int_), what nd_grid starts from


def _captured(key: Any) -> Optional[Any]:
    """The running tracer when ``key`` holds a size or a traced array and model code (not an op's
    numpy impl) subscripts, else None."""
    tracer = CURRENT.get()
    if tracer is None or tracer.in_impl:
        return None
    items = key if isinstance(key, tuple) else (key,)
    for item in items:
        parts = (item.start, item.stop, item.step) if isinstance(item, slice) else (item,)
        if any(isinstance(p, (SymInt, SymFloat, SymBool, TracedArray)) for p in parts):
            return tracer
    return None


def _pinned(key: Any, name: str) -> Any:
    """``key`` with its sizes pinned to their example values (numpy's own code reads them as
    numbers; a float step or bound of a size is no slice capture follows)."""
    from .stdlib import plain

    items = key if isinstance(key, tuple) else (key,)
    out = tuple(slice(*(plain(p, f"{name}[...] (a float or complex slice)") for p in (k.start, k.stop, k.step)))
                if isinstance(k, slice) else k for k in items)
    return out if isinstance(key, tuple) else out[0]


def _int_like(v: Any) -> bool:
    """A Python int or a size without a numpy scalar type: both act as Python ints in numpy."""
    return type(v) is int or (type(v) is SymInt and v.numpy_type is None)


def _int_slice(item: Any) -> Optional[tuple]:
    """``(start, stop, step)`` of a slice numpy's index tricks read with integer arithmetic, else None."""
    if not isinstance(item, slice) or item.stop is None:
        return None
    start = 0 if item.start is None else item.start
    step = 1 if item.step is None else item.step
    if not (_int_like(start) and _int_like(item.stop) and _int_like(step)):
        return None
    return start, item.stop, step


def _arange(tracer: Any, *args: Any, **kwargs: Any) -> Any:
    from .patching import creation_call  # patching imports this module

    return creation_call(tracer, "arange", args, kwargs)


def _scaled(values: Any, step: Any, start: Any) -> Any:
    """``values * step + start`` as nd_grid computes it, without the ops that change nothing."""
    if not (type(step) is int and step == 1):
        values = values * step
    if not (type(start) is int and start == 0):
        values = values + start
    return values


class GridView:
    """``np.mgrid`` (dense) or ``np.ogrid`` (sparse) during capture (see the module docstring)."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._name = "np.ogrid" if real.sparse else "np.mgrid"

    def __getitem__(self, key: Any) -> Any:
        tracer = _captured(key)
        if tracer is None:
            return self._real[key]
        if not isinstance(key, tuple):
            # numpy's one-slice form is np.arange(start, stop, step)
            parts = _int_slice(key)
            if parts is None:
                return self._real[_pinned(key, self._name)]
            return _arange(tracer, *parts)
        slices = [_int_slice(k) for k in key]
        if not slices or any(s is None for s in slices):
            return self._real[_pinned(key, self._name)]
        # nd_grid's size per axis, ceil((stop - start) / step), in integer arithmetic
        sizes = tuple(-((start - stop) // step) for start, stop, step in slices)
        if self._real.sparse:
            out = []
            for k, (size, (start, _stop, step)) in enumerate(zip(sizes, slices)):
                axis = _scaled(_arange(tracer, size, dtype=_INT_DTYPE), step, start)
                shape = [1] * len(sizes)
                shape[k] = -1
                out.append(axis.reshape(tuple(shape)) if len(sizes) > 1 else axis)
            return tuple(out)
        from .patching import creation_call

        grid = creation_call(tracer, "indices", (sizes,), {"dtype": _INT_DTYPE})
        if all(type(start) is int and start == 0 and type(step) is int and step == 1 for start, _s, step in slices):
            return grid
        axes = [_scaled(grid[k], step, start) for k, (start, _stop, step) in enumerate(slices)]
        return tracer.call(get_op("numpy.stack"), (axes,), {})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __repr__(self) -> str:
        return repr(self._real)


class ConcatenatorView:
    """``np.r_`` or ``np.c_`` during capture (see the module docstring)."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getitem__(self, key: Any) -> Any:
        tracer = _captured(key)
        real = self._real
        if tracer is None or getattr(real, "matrix", False):
            return real[key]
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = real.axis, real.ndmin, real.trans1d
        if items and isinstance(items[0], str):
            directive = _directive(items[0])
            if directive is None:  # a matrix ('r', 'c') or a malformed directive: numpy's own answer
                return real[key]
            axis, ndmin, trans1d = directive if len(directive) == 3 else (directive[0], ndmin, trans1d)
            items = items[1:]
        objs, kinds = [], []
        for item in items:
            if isinstance(item, slice):
                parts = _int_slice(item)
                if parts is None:
                    return real[key]
                obj = _arange(tracer, *parts)
                if ndmin > 1:  # numpy: array(obj, ndmin=ndmin), then the 1-d axis moved to trans1d
                    obj = obj.reshape((1,) * (ndmin - 1) + (-1,))
                    if trans1d != -1:
                        obj = obj.swapaxes(-1, trans1d)
                objs.append(obj)
                kinds.append(obj.dtype)
            elif isinstance(item, (int, float, bool, complex, SymInt, SymFloat)) and not isinstance(item, SymBool):
                objs.append(item)  # a Python scalar: weak in the result type, as numpy's ScalarType
                kinds.append(_python_stand_in(item))
            elif isinstance(item, (TracedArray, np.ndarray)):
                obj = item
                if obj.ndim < ndmin:
                    obj = _at_least(obj, ndmin, trans1d)
                objs.append(obj)
                kinds.append(obj.dtype)
            else:  # strings (directives), lists, other objects: numpy's own code
                return real[key]
        final = np.result_type(*kinds)
        arrays = [_as_array(tracer, obj, ndmin, final) for obj in objs]
        return tracer.call(get_op("numpy.concatenate"), (tuple(arrays),), {"axis": axis})

    def __len__(self) -> int:
        return 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __repr__(self) -> str:
        return repr(self._real)


def _directive(text: str) -> Optional[tuple]:
    """``(axis,)`` or ``(axis, ndmin, trans1d)`` of an AxisConcatenator string directive
    (``"1"``, ``"0,2"``, ``"0,2,0"``), as numpy reads it; None for anything else."""
    parts = text.split(",")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        return None
    if len(values) == 1:
        return (values[0],)
    if len(values) == 2:
        return (values[0], values[1], -1)
    return tuple(values) if len(values) == 3 else None


def _python_stand_in(item: Any) -> Any:
    """A Python number of ``item``'s kind: the result type reads only the kind of a Python scalar."""
    if isinstance(item, SymInt):
        return 0 if item.numpy_type is None else item.numpy_type
    if isinstance(item, SymFloat):
        return 0.0 if item.numpy_type is None else item.numpy_type
    return item


def _at_least(obj: Any, ndmin: int, trans1d: int) -> Any:
    """numpy's ``array(item, ndmin=ndmin)`` then its transpose for ``trans1d`` (AxisConcatenator)."""
    item_ndim = obj.ndim
    obj = obj.reshape((1,) * (ndmin - item_ndim) + tuple(obj.shape))
    if trans1d != -1:
        k2, k1 = ndmin - item_ndim, trans1d
        if k1 < 0:
            k1 += k2 + 1
        defaxes = list(range(ndmin))
        axes = defaxes[:k1] + defaxes[k2:] + defaxes[k1:k2]
        if axes != defaxes:
            obj = obj.transpose(axes)
    return obj


def _as_array(tracer: Any, obj: Any, ndmin: int, dtype: np.dtype) -> Any:
    """numpy's ``array(obj, copy=None, ndmin=ndmin, dtype=dtype)`` of one piece."""
    from .patching import creation_call

    if not isinstance(obj, (TracedArray, np.ndarray)):
        obj = creation_call(tracer, "array", (obj,), {"dtype": dtype})
    elif obj.dtype != dtype:
        obj = obj.astype(dtype)
    if obj.ndim < ndmin:
        obj = obj.reshape((1,) * (ndmin - obj.ndim) + tuple(obj.shape))
    return obj


INDEX_TRICKS = {"mgrid": GridView(np.mgrid), "ogrid": GridView(np.ogrid),
                "r_": ConcatenatorView(np.r_), "c_": ConcatenatorView(np.c_)}
_BY_ID = {id(getattr(np, name)): view for name, view in INDEX_TRICKS.items()}


def view_of(value: Any) -> Optional[Any]:
    """The capture's view of numpy's index-trick object ``value``, or None if it is none of them."""
    return _BY_ID.get(id(value))
