"""Indexing: ``a[key]`` (basic and advanced), ``a[key] = v``, take, take_along_axis,
nonzero/argwhere/flatnonzero/unique (data-dependent sizes), sort/argsort/searchsorted.

Slices follow Python semantics exactly, clamped with ``Min``/``Max`` and
canonicalized over the ranges (``POS[:s]`` on 512 rows has length
``Min(s, 512)`` and needs no guard; ``x[1:]`` has length ``dx - 1``).
Integer index arrays with a known value range (``arange``, ``clip``, constant
lists and constants: their min and max) emit an ``index_bounds`` guard; arrays
of unknown values (user data) emit none.  Constant boolean lists are masks
with a known count; data masks and ``nonzero``/``unique`` give unbacked sizes
``u<n>``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import is_static, prod
from .elementwise import shape_of
from .registry import ArrayInfo, register_op
from ..records import sympy


# -- slices ---------------------------------------------------------------------------------
def _norm_bound(ctx: Any, b: Any, n: Any, lo: Any, hi: Any) -> Any:
    """Python's normalization of a slice bound ``b`` on a length-``n`` axis, clamped to [lo, hi]."""
    if is_static(b) and is_static(n):
        b, n = int(b), int(n)
        v = b + n if b < 0 else b
        return max(int(lo) if is_static(lo) else v, min(v, int(hi))) if is_static(hi) else v
    b = sympy.sympify(b)
    negative = ctx.choose(sympy.Lt(b, 0), lambda: f"sign of the slice bound {ctx.text(b)}")
    if negative:
        return _unevaluated(sympy.Max, b + n, lo)
    return _unevaluated(sympy.Min, b, hi)


def _unevaluated(kind: Any, a: Any, b: Any) -> Any:
    """``Min``/``Max`` of two sizes, decided here only when their difference is a number.

    sympy's evaluating constructor compares the arguments through its assumption system
    (most of a slice rule's cost, issue 13); ``slice_length``'s ``ctx.canon`` drops an
    argument the declared ranges dominate instead.
    """
    a, b = sympy.sympify(a), sympy.sympify(b)
    d = a - b
    if d.is_Number:
        return a if (d <= 0) == (kind is sympy.Min) else b
    return kind(a, b, evaluate=False)


def slice_length(ctx: Any, n: Any, start: Any, stop: Any, step: Any) -> Any:
    """Length of ``range(n)[start:stop:step]`` as a canonical size expression."""
    if start is None and stop is None and (step is None or (is_static(step) and int(step) == 1)):
        return n  # the full axis: the common case of every padded ':'
    step = 1 if step is None else step
    if all(is_static(v) for v in (n, step)) and all(v is None or is_static(v) for v in (start, stop)):
        return len(range(*slice(None if start is None else int(start), None if stop is None else int(stop),
                                int(step)).indices(int(n))))
    if not is_static(step):
        # the example's sign (a guard), then the same arithmetic as a constant step of that sign
        step = sympy.sympify(step)
        if ctx.choose(sympy.Eq(step, 0), lambda: f"slice step {ctx.text(step)} is zero"):
            raise ValueError("slice step cannot be zero")
        positive = ctx.choose(sympy.Gt(step, 0), lambda: f"sign of the slice step {ctx.text(step)}")
    else:
        if int(step) == 0:
            raise ValueError("slice step cannot be zero")
        positive = int(step) > 0
    n_ = sympy.sympify(n)
    if positive:
        s0 = sympy.Integer(0) if start is None else _norm_bound(ctx, start, n_, 0, n_)
        s1 = n_ if stop is None else _norm_bound(ctx, stop, n_, 0, n_)
        span = s1 - s0
        k = step
    else:
        s0 = n_ - 1 if start is None else _norm_bound(ctx, start, n_, -1, n_ - 1)
        s1 = sympy.Integer(-1) if stop is None else _norm_bound(ctx, stop, n_, -1, n_ - 1)
        span = s0 - s1
        k = -step if not is_static(step) else -int(step)
    length = span if k == 1 else sympy.floor((span + k - 1) / k)
    return ctx.canon(_unevaluated(sympy.Max, length, 0))


# -- getitem ---------------------------------------------------------------------------------
def _expand_key(key: Any, ndim: int) -> list:
    if not isinstance(key, tuple):
        key = (key,)
    consumed = 0
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)):
            continue  # a scalar bool indexes no axis (it adds one: see getitem_shape)
        if isinstance(k, ArrayInfo) and k.dtype == np.bool_:
            consumed += max(k.ndim, 1) if k.ndim else 0
        elif (mask := _const_mask(k)) is not None:
            consumed += max(mask.ndim, 1)
        else:
            consumed += 1
    out: list = []
    seen_ellipsis = False
    for k in key:
        if k is Ellipsis:
            if seen_ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(k)
    if not seen_ellipsis:
        out.extend([slice(None)] * (ndim - consumed))
    return out


def _const_mask(k: Any) -> Any:
    """A constant boolean mask (list/tuple of bools, bool ndarray) as an ndarray, else None."""
    if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim:
        return k
    if isinstance(k, (list, tuple)) and k:
        flat = np.ravel(np.asarray(k, dtype=object))
        if flat.size and all(isinstance(v, (bool, np.bool_)) for v in flat):
            return np.asarray(k, dtype=bool)
    return None


def const_index_range(idx: Any) -> Any:
    """Bounds of a constant integer index (an int, a list/tuple/ndarray of ints or sizes).

    Returns a list of ``(lo, hi)`` pairs that together cover every value (one
    pair for the static values: their min and max; one per symbolic entry), or
    None when ``idx`` is not a constant (a traced array: its ``vrange`` is used).
    Constant index arrays have known values, so a gather with them on a
    dynamic axis needs ``-n <= min`` and ``max <= n - 1`` like any index.
    """
    if isinstance(idx, ArrayInfo) or idx is None or isinstance(idx, slice):
        return None
    if isinstance(idx, (bool, np.bool_)):
        return None
    if isinstance(idx, (int, np.integer, sympy.Basic)):
        return [(idx, idx)]
    if not isinstance(idx, (list, tuple, np.ndarray)):
        return None
    flat = list(np.ravel(np.asarray(idx, dtype=object)))
    if not flat or any(isinstance(v, (bool, np.bool_, float, np.floating)) for v in flat):
        return None
    # a numpy integer in a list index is a constant as a Python int is
    static = [int(v) for v in flat if is_static(v) or isinstance(v, np.integer)]
    out = [(v, v) for v in dict.fromkeys(v for v in flat if not (is_static(v) or isinstance(v, np.integer)))]
    if static:
        out.insert(0, (min(static), max(static)))
    return out


def constant_vrange(value: Any) -> Any:
    """Value range ``(min, max)`` of a constant integer ndarray (a lifted constant), else None.

    Capture gives this to a constant's traced array (``ArrayInfo.vrange``) so
    ``x[np.array([0, 2])]`` and ``x[IDX]`` with a global ``IDX`` get the same
    ``index_bounds`` guards as ``x[[0, 2]]``.
    """
    if not isinstance(value, np.ndarray) or value.size == 0 or value.dtype.kind not in "iu":
        return None
    return int(value.min()), int(value.max())


def _index_bounds(ctx: Any, idx: Any, n: Any, what: str) -> None:
    """Values in [lo, hi] index an axis of size n: -n <= lo and hi <= n - 1."""
    if isinstance(idx, ArrayInfo):
        vr = idx.vrange
        if vr is None:
            return
        lo, hi = vr
    else:
        pairs = const_index_range(idx)
        if pairs is None:
            return
        for lo, hi in pairs:
            _index_bounds(ctx, ArrayInfo((), None, (lo, hi)), n, what)
        return
    if is_static(lo) and is_static(hi) and is_static(n):
        return  # numpy checked the example
    # unevaluated: a bound no size satisfies (u0 <= u0 - 1) keeps its sides for the message
    ctx.bounds(sympy.Le(hi, sympy.sympify(n) - 1, evaluate=False), lambda: f"{what}: index values up to {ctx.text(hi)} on an "
                                                           f"axis of size {ctx.text(n)}")
    ctx.bounds(sympy.Ge(lo, -sympy.sympify(n), evaluate=False), lambda: f"{what}: index values down to {ctx.text(lo)} on an "
                                                        f"axis of size {ctx.text(n)}")


def getitem_shape(ctx: Any, shape: tuple, key: Any) -> tuple:
    """The shape of ``a[key]`` for ``a`` of ``shape`` (numpy's basic and advanced indexing).

    As numpy does: a scalar bool (``x[True]``, ``x[n > 4]`` once capture decided the comparison)
    is a 0-d mask, an advanced index of shape ``(1,)`` (True) or ``(0,)`` (False) that indexes
    no axis; an integer scalar drops its axis, but next to another advanced index it is one
    itself (of shape ``()``), so ``x[0, :, [1, 2]]`` puts the broadcast axis first.
    """
    items = _expand_key(key, len(shape))
    out: list = []
    adv_shapes: list = []
    adv_pos: list = []
    scalar_pos: list = []   # positions in out of the integer scalars (advanced only beside others)
    dim = 0
    for k in items:
        if k is None:
            out.append(1)
            continue
        if isinstance(k, (bool, np.bool_)):
            adv_pos.append(len(out))
            adv_shapes.append(("int", (1,) if k else (0,)))
            out.append(None)
            continue
        if isinstance(k, slice):
            out.append(slice_length(ctx, shape[dim], k.start, k.stop, k.step))
            dim += 1
            continue
        if isinstance(k, ArrayInfo) and k.dtype == np.bool_ and k.ndim:
            covered = shape[dim:dim + k.ndim]
            for m, d in zip(k.shape, covered):
                ctx.eq(m, d, "boolean mask shape must match the indexed axes")
            adv_pos.append(len(out))
            adv_shapes.append(["mask", None, prod(covered), k.key])  # its size is made below, at its axis
            out.append(None)
            dim += k.ndim
            continue
        mask = _const_mask(k)
        if mask is not None:
            # a constant mask: its True count is known; numpy needs its shape to match the axes
            covered = shape[dim:dim + mask.ndim]
            for m, d in zip(mask.shape, covered):
                ctx.eq(m, d, "boolean mask shape must match the indexed axes")
            adv_pos.append(len(out))
            adv_shapes.append(("int", (int(mask.sum()),)))
            out.append(None)
            dim += mask.ndim
            continue
        if isinstance(k, (ArrayInfo, list, tuple, np.ndarray)):
            info = k if isinstance(k, ArrayInfo) else ArrayInfo(tuple(np.shape(k)), np.asarray(k, object).dtype)
            _index_bounds(ctx, k, shape[dim], "integer array index")
            adv_pos.append(len(out))
            adv_shapes.append(("int", info.shape))
            out.append(None)
            dim += 1
            continue
        # an integer (static or symbolic)
        if not is_static(k) or not is_static(shape[dim]):
            _index_bounds(ctx, sympy.sympify(k), shape[dim], "integer index")
        scalar_pos.append(len(out))
        out.append(None)
        dim += 1
    if not adv_shapes:  # integers alone drop their axes
        return tuple(d for d in out if d is not None)
    for p in scalar_pos:
        adv_shapes.insert(sorted(adv_pos + [p]).index(p), ("int", ()))
        adv_pos = sorted(adv_pos + [p])
    contiguous = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    # a mask's True count is the last axis of the broadcast advanced block, which numpy puts first
    # unless the advanced indices are adjacent: its data-dependent size takes its example value
    # (and its run-time binding) from that output axis
    block = max(len(entry[1]) if entry[0] == "int" else 1 for entry in adv_shapes)
    lead = sum(d is not None for d in out[:adv_pos[0]]) if contiguous else 0
    for entry in adv_shapes:
        if entry[0] == "mask":
            entry[1] = ctx.new_unbacked(entry[2], 0, lead + block - 1, same_as=("nonzero", entry[3]))
    shapes = [entry[1] if entry[0] == "int" else (entry[1],) for entry in adv_shapes]
    bshape = ctx.broadcast(*shapes)
    rest = [d for d in out if d is not None]
    if contiguous:
        first = adv_pos[0]
        before = [d for d in out[:first] if d is not None]
        after = [d for d in out[first:] if d is not None]
        result = tuple(before) + tuple(bshape) + tuple(after)
    else:
        result = tuple(bshape) + tuple(rest)
    return result


def _getitem_vrange(ctx: Any, a: Any) -> None:
    """A gather's values are some of ``a``'s: its value range carries over."""
    if isinstance(a, ArrayInfo) and a.vrange is not None:
        ctx.vrange(*a.vrange)


def _getitem_rule(ctx: Any, a: Any, key: Any) -> tuple:
    if isinstance(key, ArrayInfo) and key.dtype == np.bool_ and key.ndim == 0:
        raise ValueError("0-d boolean index is not supported")
    out = getitem_shape(ctx, shape_of(a), key)
    _getitem_vrange(ctx, a)
    return out


def _getitem(a: Any, key: Any) -> Any:
    return a[key]


register_op("tpe.getitem", _getitem, _getitem_rule, doc="a[key]")


def _setitem(a: Any, key: Any, value: Any) -> Any:
    out = np.array(a, copy=True)
    out[key] = value
    return out


def _setitem_rule(ctx: Any, a: Any, key: Any, value: Any) -> tuple:
    shape = shape_of(a)
    keys = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, ArrayInfo) and k.dtype == np.bool_ for k in keys):
        # a masked write: the slot count is data-dependent; numpy checks the value at run time
        return shape
    require_assignable(ctx, shape_of(value), getitem_shape(ctx, shape, key))
    return shape


def require_assignable(ctx: Any, vshape: tuple, sub: tuple, what: str = "assigned value") -> None:
    """A value of shape ``vshape`` broadcasts (one way) to the slot shape ``sub``."""
    for i in range(1, len(vshape) + 1):
        v = vshape[-i]
        if is_static(v) and int(v) == 1:
            continue
        if i > len(sub):
            ctx.eq(v, 1, f"{what} has more dimensions than the target")
            continue
        s = sub[-i]
        ctx.stretch(v, s, f"{what} of size {ctx.text(v)} into a slot of size {ctx.text(s)}",
                    f"{what} of size {ctx.text(v)} (size 1 in the example) into a slot of size {ctx.text(s)}")


register_op("tpe.setitem", _setitem, _setitem_rule, doc="functional a[key] = value (returns a copy)")


def _item_rule(ctx: Any, t: Any, i: int) -> tuple:
    raise TypeError("tpe.item only appears in graphs built by capture")


register_op("tpe.item", lambda t, i: t[i], _item_rule, doc="element i of a multi-output op's tuple")


# -- take ------------------------------------------------------------------------------------
def _take_rule(ctx: Any, a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> tuple:
    shape = shape_of(a)
    ishape = shape_of(indices)
    idx = indices
    if axis is None:
        n = prod(shape)
        if idx is not None and mode == "raise":
            _index_bounds(ctx, idx, n, "take")
        _getitem_vrange(ctx, a)
        return tuple(ishape)
    shape = shape or (1,)  # numpy takes from a 0-d input as 1-d
    ax = int(axis) % len(shape)
    if idx is not None and mode == "raise":
        _index_bounds(ctx, idx, shape[ax], "take")
    _getitem_vrange(ctx, a)
    return tuple(shape[:ax]) + tuple(ishape) + tuple(shape[ax + 1:])


register_op("numpy.take", np.take, _take_rule, numpy_funcs=(np.take,), methods=("take",))


def _take_along_rule(ctx: Any, arr: Any, indices: Any, axis: Any = -1) -> tuple:
    shape = shape_of(arr)
    ishape = shape_of(indices)
    if axis is None:
        _index_bounds(ctx, indices, prod(shape), "take_along_axis")
        return tuple(ishape)
    ax = int(axis) % len(shape)
    _index_bounds(ctx, indices, shape[ax], "take_along_axis")
    out = []
    for i, (d, e) in enumerate(zip(shape, ishape)):
        out.append(e if i == ax else ctx.broadcast_dim(d, e))
    return tuple(out)


register_op("numpy.take_along_axis", np.take_along_axis, _take_along_rule, numpy_funcs=(np.take_along_axis,))


# -- data-dependent sizes ------------------------------------------------------------------------
def _count_key(a: Any) -> tuple:
    """The key of "the number of nonzero entries of ``a``": ``x[a]`` (a boolean ``a``),
    ``nonzero``, ``flatnonzero`` and ``argwhere`` of one value share their length."""
    return ("nonzero", getattr(a, "key", None))


def nonzero_rule(ctx: Any, a: Any) -> list:
    shape = shape_of(a)
    n = len(shape) or 1
    sym = ctx.new_unbacked(prod(shape), 0, 0, same_as=_count_key(a))
    for i in range(n):
        ctx.vrange(0, (shape[i] if shape else 1) - 1, out=i)
    return [(sym,)] * n


register_op("numpy.nonzero", lambda a: tuple(np.nonzero(a)), nonzero_rule, numpy_funcs=(np.nonzero,),
            methods=("nonzero",), multi_output=True)


def _flatnonzero_rule(ctx: Any, a: Any) -> tuple:
    n = prod(shape_of(a))
    sym = ctx.new_unbacked(n, 0, 0, same_as=_count_key(a))
    ctx.vrange(0, n - 1)
    return (sym,)


register_op("numpy.flatnonzero", np.flatnonzero, _flatnonzero_rule, numpy_funcs=(np.flatnonzero,))


def _argwhere_rule(ctx: Any, a: Any) -> tuple:
    shape = shape_of(a)
    sym = ctx.new_unbacked(prod(shape), 0, 0, same_as=_count_key(a))
    return (sym, len(shape))


register_op("numpy.argwhere", np.argwhere, _argwhere_rule, numpy_funcs=(np.argwhere,))


def _unique_impl(ar: Any, return_index: bool = False, return_inverse: bool = False,
                 return_counts: bool = False, axis: Any = None, **kw: Any) -> Any:
    out = np.unique(ar, return_index, return_inverse, return_counts, axis, **kw)
    return tuple(out) if isinstance(out, tuple) else (out,)


def _unique_rule(ctx: Any, ar: Any, return_index: bool = False, return_inverse: bool = False,
                 return_counts: bool = False, axis: Any = None, **kw: Any) -> list:
    shape = shape_of(ar)
    if axis is not None:
        # unique slices along ``axis``: that axis becomes the data-dependent count, the others stay;
        # the inverse maps each slice of the input (numpy 2: 1-d along ``axis``)
        if not shape:
            raise np.exceptions.AxisError(f"numpy.unique: axis {axis} is out of bounds for array of dimension 0")
        ax = int(axis) % len(shape)
        sym = ctx.new_unbacked(shape[ax], 0, ax, same_as=("unique", getattr(ar, "key", None), ax))
        outs = [tuple(sym if i == ax else d for i, d in enumerate(shape))]
        inverse: tuple = (shape[ax],)
    else:
        sym = ctx.new_unbacked(prod(shape), 0, 0, same_as=("unique", getattr(ar, "key", None)))
        outs = [(sym,)]
        inverse = tuple(shape)
    if return_index:
        outs.append((sym,))
    if return_inverse:
        outs.append(inverse)
    if return_counts:
        outs.append((sym,))
    return outs


register_op("tpe.unique", _unique_impl, _unique_rule, multi_output=True, numpy_funcs=(np.unique,),
            doc="numpy.unique returning a tuple always (capture unwraps a single output)")


# -- sorting ---------------------------------------------------------------------------------------
def _sort_rule(ctx: Any, a: Any, axis: Any = -1, *args: Any, **kwargs: Any) -> tuple:
    shape = shape_of(a)
    if axis is None:
        return (prod(shape),)
    return shape


def _argsort_rule(ctx: Any, a: Any, axis: Any = -1, *args: Any, **kwargs: Any) -> tuple:
    shape = _sort_rule(ctx, a, axis) or (1,)  # numpy argsorts a 0-d input as 1-d
    n = shape[0] if axis is None else shape[int(axis) % len(shape)]
    ctx.vrange(0, n - 1)
    return shape


register_op("numpy.sort", np.sort, _sort_rule, numpy_funcs=(np.sort,))
register_op("numpy.argsort", np.argsort, _argsort_rule, numpy_funcs=(np.argsort,), methods=("argsort",))


def _searchsorted_rule(ctx: Any, a: Any, v: Any, side: str = "left", sorter: Any = None) -> tuple:
    n = shape_of(a)[0]
    ctx.vrange(0, n)
    return shape_of(v)


register_op("numpy.searchsorted", np.searchsorted, _searchsorted_rule, numpy_funcs=(np.searchsorted,),
            methods=("searchsorted",))
