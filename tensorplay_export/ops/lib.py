"""numpy's Python-level functions (``numpy/lib``, ``numpy/_core/shape_base.py``) over ops we support:
select, cov, lexsort, ufunc ``accumulate``/``outer``/``reduce``, append, delete, rot90, block, column_stack,
dstack, atleast_3d, ediff1d, vander, polyval, trapezoid, resize, insert, ``ndarray.view(dtype)``.

Each impl is numpy's own function (values are numpy's at run time); each rule states the output
shape numpy's code computes, with the guards that shape needs.  Where numpy's result shape
depends on a size comparison (``cov`` squeezes a single variable to 0-d) the rule follows the
example's side with ``ctx.choose``.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..errors import UnsupportedOpError
from ..records import sympy
from .creation import norm_shape, require_nonneg
from .ctx import as_dim, is_static, prod
from .elementwise import shape_of
from .movement import _concat_rule
from .reduce import check_where, reduced_shape, require_nonempty
from .registry import ArrayInfo, register_op


def _arr(shape: tuple) -> ArrayInfo:
    return ArrayInfo(tuple(shape), None)


def _axis(axis: Any, ndim: int, name: str) -> int:
    a = int(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(f"{name}: axis {a} is out of bounds for array of dimension {ndim}")
    return a % ndim


def _nonneg(d: Any) -> Any:
    """``max(d, 0)`` of a size difference, kept an int when static."""
    d = sympy.sympify(d)
    return max(int(d), 0) if d.is_Integer else sympy.Max(d, 0)


# -- select ---------------------------------------------------------------------------------------
def _select_rule(ctx: Any, condlist: Any, choicelist: Any, default: Any = 0) -> tuple:
    """numpy.select: every condition, choice and the default broadcast together."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    return ctx.broadcast(*(shape_of(v) for v in (*condlist, *choicelist, default)))


register_op("numpy.select", np.select, _select_rule, numpy_funcs=(np.select,))


# -- cov ------------------------------------------------------------------------------------------
def _variables(ctx: Any, m: Any, rowvar: bool, name: str, is_y: bool = False) -> Any:
    """The number of variables (rows of numpy's ``X``) in ``m`` (or ``y``) as cov arranges it."""
    shape = shape_of(m)
    if len(shape) > 2:
        raise ValueError(f"{'y' if is_y else 'm'} has more than 2 dimensions")
    if len(shape) < 2:
        return 1
    rows, cols = shape
    if rowvar:
        return rows
    if not is_y:
        return cols
    # numpy transposes y (not m) only when it has more than one row
    if is_static(rows):
        return cols if int(rows) != 1 else 1
    return 1 if ctx.choose(sympy.Eq(rows, 1), f"{name}: a single row is one variable (as in the example)") \
        else cols


def _cov_rule(ctx: Any, m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
              fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> tuple:
    """numpy.cov: a ``(k, k)`` matrix of the ``k`` variables, squeezed (one variable gives 0-d).

    With ``y`` its variables are stacked below ``m``'s (their observation counts must agree).
    """
    k = _variables(ctx, m, bool(rowvar), "numpy.cov")
    if y is not None:
        k = sympy.sympify(k) + _variables(ctx, y, bool(rowvar), "numpy.cov", is_y=True)
    k = as_dim(sympy.sympify(k))
    if is_static(k):
        return () if int(k) == 1 else (k, k)
    if ctx.choose(sympy.Eq(k, 1), "numpy.cov squeezes the matrix of a single variable to 0-d (as in the example)"):
        return ()
    return (k, k)


register_op("numpy.cov", np.cov, _cov_rule, numpy_funcs=(np.cov,))


def _corrcoef_rule(ctx: Any, x: Any, y: Any = None, rowvar: bool = True, *args: Any, dtype: Any = None,
                   **kwargs: Any) -> tuple:
    """numpy.corrcoef: the correlation matrix of cov's variables, cov's shape (numpy divides cov by
    the outer product of its diagonal's square roots); ``bias``/``ddof`` have no effect there."""
    return _cov_rule(ctx, x, y, rowvar)


register_op("numpy.corrcoef", np.corrcoef, _corrcoef_rule, numpy_funcs=(np.corrcoef,))


# -- lexsort --------------------------------------------------------------------------------------
def _lexsort_rule(ctx: Any, keys: Any, axis: int = -1) -> tuple:
    """numpy.lexsort: indices of the keys' common shape (a 2-d array of keys: its rows)."""
    if isinstance(keys, ArrayInfo):
        if not keys.shape:
            raise ValueError("numpy.lexsort: need sequence of keys with len > 0")
        shape = tuple(keys.shape[1:])
    else:
        keys = list(keys)
        if not keys:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        shape = tuple(shape_of(keys[0]))
        for kk in keys[1:]:
            other = shape_of(kk)
            if len(other) != len(shape):
                raise ValueError("all keys need to be the same shape")
            for a, b in zip(shape, other):
                ctx.eq(a, b, "numpy.lexsort: all keys need to be the same shape")
    if not shape:
        ctx.vrange(0, 0)
        return ()
    ax = _axis(axis, len(shape), "numpy.lexsort")
    ctx.vrange(0, sympy.sympify(shape[ax]) - 1)
    return shape


register_op("numpy.lexsort", np.lexsort, _lexsort_rule, numpy_funcs=(np.lexsort,))


# -- ufunc.accumulate / ufunc.outer ---------------------------------------------------------------
# add/multiply.accumulate are numpy.cumsum/cumprod (capture maps them there)
# every other binary ufunc numpy accumulates (numpy itself refuses the dtypes it has no loop for);
# logaddexp.accumulate is logcumsumexp, the log-space scan of Heinsen / minGRU models
ACCUMULATE_UFUNCS = ("maximum", "minimum", "fmax", "fmin", "subtract", "logical_and", "logical_or",
                     "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
                     "divide", "floor_divide", "remainder", "fmod", "power", "float_power", "arctan2", "hypot",
                     "copysign", "nextafter", "heaviside", "left_shift", "right_shift", "gcd", "lcm", "equal",
                     "not_equal", "less", "less_equal", "greater", "greater_equal")
OUTER_UFUNCS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal",
                "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "bitwise_and",
                "bitwise_or", "fmax", "fmin", "arctan2", "hypot")


def _accumulate_rule(name: str):
    def rule(ctx: Any, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> tuple:
        shape = tuple(shape_of(array))
        if not shape:
            raise TypeError(f"{name}: cannot accumulate on a scalar")
        if axis is None:
            if len(shape) != 1:
                raise ValueError(f"{name}: axis=None is only allowed for 1-d arrays")
        else:
            _axis(axis, len(shape), name)
        return shape
    return rule


def _outer_rule(ctx: Any, a: Any, b: Any, **kwargs: Any) -> tuple:
    """``ufunc.outer(a, b)``: ``a.shape + b.shape``."""
    return tuple(shape_of(a)) + tuple(shape_of(b))


for _u in ACCUMULATE_UFUNCS:
    _fn = getattr(np, _u).accumulate
    register_op(f"numpy.{_u}.accumulate", _fn, _accumulate_rule(f"numpy.{_u}.accumulate"), numpy_funcs=(_fn,))
for _u in OUTER_UFUNCS:
    _fn = getattr(np, _u).outer
    register_op(f"numpy.{_u}.outer", _fn, _outer_rule, numpy_funcs=(_fn,))


# ufunc.reduce of a binary ufunc without a reduction function of its own (add.reduce is numpy.sum,
# multiply / maximum / minimum / logical_and / logical_or likewise: capture maps those)
REDUCE_UFUNCS = ("logaddexp", "logaddexp2", "fmax", "fmin", "hypot", "subtract", "logical_xor", "bitwise_and",
                 "bitwise_or", "bitwise_xor", "gcd", "lcm")


def _ufunc_reduce_rule(name: str, has_identity: bool):
    """``ufunc.reduce(array, axis=0, dtype, out, keepdims, initial, where)``: the reduced axes
    dropped (kept as 1 with ``keepdims``); a ufunc without an identity needs every reduced axis
    nonempty unless ``initial`` is given, and so does every ufunc given ``initial=None`` (numpy then
    starts from the first element: "zero-size array to reduction operation")."""
    def rule(ctx: Any, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False,
             initial: Any = np._NoValue, where: Any = True) -> tuple:
        shape = tuple(shape_of(array))
        if not shape and axis is not None:
            raise np.exceptions.AxisError(f"{name}: axis {axis} is out of bounds for array of dimension 0")
        check_where(ctx, shape, where)
        if initial is None or (not has_identity and initial is np._NoValue):
            require_nonempty(ctx, shape, axis, f"{name}: the reduced axis must be nonempty (no identity to start "
                                               "from: pass initial= a value)")
        return reduced_shape(shape, axis, bool(keepdims))
    return rule


for _u in REDUCE_UFUNCS:
    _fn = getattr(np, _u).reduce
    register_op(f"numpy.{_u}.reduce", _fn,
                _ufunc_reduce_rule(f"numpy.{_u}.reduce", getattr(np, _u).identity is not None), numpy_funcs=(_fn,))


# -- append / delete ------------------------------------------------------------------------------
def _append_rule(ctx: Any, arr: Any, values: Any, axis: Any = None) -> tuple:
    """numpy.append: both raveled and joined (``axis=None``), else concatenated along ``axis``."""
    if axis is None:
        return (as_dim(sympy.sympify(prod(shape_of(arr))) + prod(shape_of(values))),)
    sa, sv = shape_of(arr), shape_of(values)
    if len(sa) != len(sv):
        raise ValueError("all the input array dimensions except for the concatenation axis must match exactly, "
                         f"but the arrays have {len(sa)} and {len(sv)} dimensions")
    return _concat_rule(ctx, [_arr(sa), _arr(sv)], axis)


register_op("numpy.append", np.append, _append_rule, numpy_funcs=(np.append,))


def _deleted(ctx: Any, n: Any, obj: Any) -> Any:
    """How many positions of ``range(n)`` the static index / list / slice ``obj`` names."""
    from .indexing import slice_length

    if isinstance(obj, slice):
        return slice_length(ctx, n, obj.start, obj.stop, obj.step)
    if isinstance(obj, ArrayInfo):
        raise UnsupportedOpError("numpy.delete with an array of indices is not supported during capture; "
                                 "pass the indices as Python ints (a list), or a slice")
    single = not isinstance(obj, (list, tuple))
    items = [obj] if single else list(obj)
    if any(isinstance(i, (bool, np.bool_)) for i in items):
        raise UnsupportedOpError("numpy.delete with a boolean mask is not supported during capture; use a "
                                 "mask selection (x[mask]) instead")
    if not all(is_static(i) for i in items):
        raise UnsupportedOpError("numpy.delete with a size as the index is not supported during capture; "
                                 "use a slice (x[:i], x[i + 1:]) and np.concatenate")
    pos = sorted({int(i) for i in items if int(i) >= 0})
    neg = sorted({int(i) for i in items if int(i) < 0})
    if not items:
        return 0
    if pos:
        ctx.bounds(sympy.Ge(n, pos[-1] + 1), lambda: f"numpy.delete: index {ctx.text(pos[-1])} is out of bounds "
                                                     f"for size {ctx.text(n)}")
    if neg:
        ctx.bounds(sympy.Ge(n, -neg[0]), lambda: f"numpy.delete: index {ctx.text(neg[0])} is out of bounds for "
                                                 f"size {ctx.text(n)}")
    count = sympy.Integer(len(pos) + len(neg))
    for j in neg:  # n + j and a non-negative i name the same position when n == i - j
        for i in pos:
            if is_static(n):
                count -= int(int(n) + j == i)
            elif ctx.choose(sympy.Eq(n, i - j), f"numpy.delete: indices {ctx.text(i)} and {ctx.text(j)} are the "
                                                "same position "
                                                 f"when the size is {ctx.text(i - j)} (as in the example or not)"):
                count -= 1
    return count


def _delete_rule(ctx: Any, arr: Any, obj: Any, axis: Any = None) -> tuple:
    """numpy.delete with static indices (an int, a list of ints, a slice): the axis loses them."""
    shape = list(shape_of(arr))
    if axis is None:
        shape = [prod(shape)]
        ax = 0
    else:
        ax = _axis(axis, len(shape), "numpy.delete")
    n = shape[ax]
    shape[ax] = as_dim(sympy.sympify(n) - _deleted(ctx, n, obj))
    return tuple(shape)


register_op("numpy.delete", np.delete, _delete_rule, numpy_funcs=(np.delete,))


def _insert_rule(ctx: Any, arr: Any, obj: Any, values: Any, axis: Any = None) -> tuple:
    """numpy.insert at static positions (an int or a list of ints; numpy/lib/_function_base_impl.py):
    the axis of size ``n`` grows by the number of inserted rows.

    An int index inserts ``values`` (given at least ``arr.ndim`` dims, its first axis moved to
    ``axis``) as ``values.shape[axis]`` rows; a list of ``k`` ints inserts ``k`` rows, ``values``
    broadcast to them (a one-item list as numpy does: like an int without the axis move).  Every
    index lies in ``[-n, n]`` (a bounds guard); the other axes of ``values`` stretch to ``arr``'s.

    Raises:
        UnsupportedOpError: a slice, an array or a size as the index.
    """
    shape = list(shape_of(arr))
    if axis is None:
        shape, ax = [prod(shape)], 0
    else:
        ax = _axis(axis, len(shape), "numpy.insert")
    if isinstance(obj, (slice, ArrayInfo)) or isinstance(obj, (bool, np.bool_)):
        raise UnsupportedOpError("numpy.insert with a slice, an array or a mask as the index is not supported "
                                 "during capture; pass the positions as Python ints (an int or a list)")
    single = not isinstance(obj, (list, tuple))
    items = [obj] if single else list(obj)
    if not all(is_static(i) and not isinstance(i, (bool, np.bool_)) for i in items):
        raise UnsupportedOpError("numpy.insert with a size as the index is not supported during capture; use "
                                 "slices (x[:i], x[i:]) and np.concatenate")
    n = shape[ax]
    for i in {int(i) for i in items}:
        bound = sympy.Ge(n, i) if i >= 0 else sympy.Ge(n, -i)
        ctx.bounds(bound, lambda i=i: f"numpy.insert: index {i} is out of bounds for axis {ax} with size "
                                      f"{ctx.text(n)}")
    vshape = list(_at_least(tuple(shape_of(values)), len(shape)))
    if single:  # numpy moves the first axis of the values to ``axis`` for a scalar index
        vshape.insert(ax, vshape.pop(0))
        numnew = vshape[ax] if len(vshape) > ax else 1
    else:
        numnew = len(items)
    target = list(shape)
    target[ax] = numnew
    if len(vshape) > len(target):
        raise ValueError(f"numpy.insert: values of {len(vshape)} dims do not fit an array of {len(target)}")
    for v, t in zip(vshape[len(vshape) - len(target):], target):
        ctx.stretch(v, t, "numpy.insert: the values need the shape of the inserted rows",
                    "numpy.insert: the values need size 1 or the size of the inserted rows")
    shape[ax] = as_dim(sympy.sympify(n) + numnew)
    return tuple(shape)


register_op("numpy.insert", np.insert, _insert_rule, numpy_funcs=(np.insert,))


# -- rot90 / block / column_stack / dstack / atleast_3d ----------------------------------------------
def _rot90_rule(ctx: Any, m: Any, k: int = 1, axes: Any = (0, 1)) -> tuple:
    shape = list(shape_of(m))
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if len(shape) < 2:
        raise ValueError("Axes must be different.")
    i, j = _axis(axes[0], len(shape), "numpy.rot90"), _axis(axes[1], len(shape), "numpy.rot90")
    if i == j:
        raise ValueError("Axes must be different.")
    if int(k) % 2:
        shape[i], shape[j] = shape[j], shape[i]
    return tuple(shape)


register_op("numpy.rot90", np.rot90, _rot90_rule, numpy_funcs=(np.rot90,))


def _at_least(shape: tuple, ndim: int) -> tuple:
    return (1,) * (ndim - len(shape)) + tuple(shape)


def _block_depth(arrays: Any) -> int:
    if isinstance(arrays, tuple):
        raise TypeError("numpy.block: arrays is a tuple; only lists can be used to arrange blocks")
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError("numpy.block: lists cannot be empty")
        depths = {_block_depth(a) for a in arrays}
        if len(depths) != 1:
            raise ValueError("numpy.block: list depths are mismatched")
        return depths.pop() + 1
    return 0


def _block_rule(ctx: Any, arrays: Any) -> tuple:
    """numpy.block: the innermost lists join along the last axis, each outer level one axis earlier;
    every block is first promoted to the result's rank (leading 1s)."""
    depth = _block_depth(arrays)

    def leaves(a: Any) -> list:
        return [x for b in a for x in leaves(b)] if isinstance(a, list) else [a]

    ndim = max([depth] + [len(shape_of(a)) for a in leaves(arrays)])

    def join(a: Any, level: int) -> tuple:
        if not isinstance(a, list):
            return _at_least(shape_of(a), ndim)
        parts = [join(b, level + 1) for b in a]
        return _concat_rule(ctx, [_arr(p) for p in parts], ndim - (depth - level))

    return join(arrays, 0)


register_op("numpy.block", np.block, _block_rule, numpy_funcs=(np.block,))


def _column_stack_rule(ctx: Any, tup: Any) -> tuple:
    """numpy.column_stack: 1-d (and 0-d) arrays become columns, then all join along axis 1."""
    shapes = []
    for a in tup:
        s = shape_of(a)
        shapes.append((s[0] if s else 1, 1) if len(s) < 2 else s)
    return _concat_rule(ctx, [_arr(s) for s in shapes], 1)


def _atleast_3d(shape: tuple) -> tuple:
    if len(shape) == 0:
        return (1, 1, 1)
    if len(shape) == 1:
        return (1, shape[0], 1)
    if len(shape) == 2:
        return (shape[0], shape[1], 1)
    return tuple(shape)


def _dstack_rule(ctx: Any, tup: Any) -> tuple:
    return _concat_rule(ctx, [_arr(_atleast_3d(shape_of(a))) for a in tup], 2)


def _atleast_3d_rule(ctx: Any, *arys: Any) -> tuple:
    if len(arys) != 1:
        raise UnsupportedOpError("numpy.atleast_3d of several arrays is not supported during capture; "
                                 "call it once per array")
    return _atleast_3d(shape_of(arys[0]))


register_op("numpy.column_stack", np.column_stack, _column_stack_rule, numpy_funcs=(np.column_stack,))
register_op("numpy.dstack", np.dstack, _dstack_rule, numpy_funcs=(np.dstack,))
register_op("numpy.atleast_3d", np.atleast_3d, _atleast_3d_rule, numpy_funcs=(np.atleast_3d,))


# -- ediff1d / vander / polyval / trapezoid / resize ----------------------------------------------------
def _ediff1d_rule(ctx: Any, ary: Any, to_end: Any = None, to_begin: Any = None) -> tuple:
    """numpy.ediff1d: ``max(N - 1, 0)`` differences of the raveled array, between the raveled extras."""
    length = sympy.sympify(_nonneg(sympy.sympify(prod(shape_of(ary))) - 1))
    for extra in (to_begin, to_end):
        if extra is not None:
            length = length + prod(shape_of(extra))
    return (ctx.canon(length) if not length.is_Integer else int(length),)


register_op("numpy.ediff1d", np.ediff1d, _ediff1d_rule, numpy_funcs=(np.ediff1d,))


def _vander_rule(ctx: Any, x: Any, N: Any = None, increasing: bool = False) -> tuple:  # noqa: N803 - numpy's
    shape = shape_of(x)
    if len(shape) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    cols = shape[0] if N is None else N
    require_nonneg(ctx, (cols,), "numpy.vander N")
    return (shape[0], as_dim(sympy.sympify(cols)) if isinstance(cols, sympy.Basic) else int(cols))


register_op("numpy.vander", np.vander, _vander_rule, numpy_funcs=(np.vander,))


def _polyval_rule(ctx: Any, p: Any, x: Any) -> tuple:
    """numpy.polyval: Horner's rule ``y = y * x + p[i]`` from ``zeros_like(x)``.

    The shape is ``x``'s broadcast with one coefficient's (``p.shape[1:]``); with no
    coefficients it is ``x``'s, and the dtype ``x``'s, so a symbolic count keeps the example's side.
    """
    sp, sx = shape_of(p), tuple(shape_of(x))
    if not sp:
        raise UnsupportedOpError("numpy.polyval of a 0-d coefficient array is not supported during capture")
    count = sp[0]
    if is_static(count):
        empty = int(count) == 0
    else:
        empty = ctx.choose(sympy.Eq(count, 0), f"numpy.polyval: whether there are coefficients ({ctx.text(count)}) "
                           "decides the result's dtype (as in the example)")
    return sx if empty else ctx.broadcast(sx, tuple(sp[1:]))


register_op("numpy.polyval", np.polyval, _polyval_rule, numpy_funcs=(np.polyval,))


def _trapezoid_rule(ctx: Any, y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> tuple:
    """numpy.trapezoid: ``sum(d * (y[1:] + y[:-1]) / 2)`` along ``axis``; ``d`` is ``diff(x)`` (a 1-d
    ``x`` along ``axis``) or ``dx``; the other axes broadcast."""
    sy = list(shape_of(y))
    ax = _axis(axis, len(sy), "numpy.trapezoid")
    pairs = list(sy)
    pairs[ax] = _nonneg(sympy.sympify(sy[ax]) - 1)
    if x is None:
        d = tuple(shape_of(dx))
    else:
        sx = list(shape_of(x))
        if len(sx) == 1:
            d = [1] * len(sy)
            d[ax] = _nonneg(sympy.sympify(sx[0]) - 1)
        else:
            d = list(sx)
            axx = _axis(axis, len(sx), "numpy.trapezoid")
            d[axx] = _nonneg(sympy.sympify(sx[axx]) - 1)
        d = tuple(d)
    pairs = tuple(ctx.canon(p) if isinstance(p, sympy.Basic) else p for p in pairs)
    d = tuple(ctx.canon(p) if isinstance(p, sympy.Basic) else p for p in d)
    full = list(ctx.broadcast(tuple(pairs), d))
    del full[len(full) - len(sy) + ax]
    return tuple(full)


register_op("numpy.trapezoid", np.trapezoid, _trapezoid_rule, numpy_funcs=(np.trapezoid,))


def _resize_rule(ctx: Any, a: Any, new_shape: Any) -> tuple:
    """numpy.resize: ``new_shape``, filled by repeating the raveled ``a`` (zeros when ``a`` is empty)."""
    return norm_shape(new_shape, ctx, "numpy.resize new_shape")


register_op("numpy.resize", np.resize, _resize_rule, numpy_funcs=(np.resize,))


# -- ravel_multi_index / fill_diagonal ------------------------------------------------------------------
def _ravel_multi_index_rule(ctx: Any, multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> tuple:
    """numpy.ravel_multi_index: the index arrays' broadcast shape, values in ``[0, prod(dims) - 1]``;
    with ``mode='raise'`` index values of a known range must stay inside their axis."""
    from .scatter import require_in_range

    dims = norm_shape(dims, ctx, "numpy.ravel_multi_index dims")
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = mode if isinstance(mode, (tuple, list)) else [mode] * len(dims)
    for idx, d, md in zip(multi_index, dims, modes):
        if md == "raise":
            require_in_range(ctx, idx, d, "numpy.ravel_multi_index", negative_ok=False)
    ctx.vrange(0, sympy.sympify(prod(dims)) - 1)
    return ctx.broadcast(*(shape_of(i) for i in multi_index))


register_op("numpy.ravel_multi_index", np.ravel_multi_index, _ravel_multi_index_rule,
            numpy_funcs=(np.ravel_multi_index,))


def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> Any:
    out = np.array(a, copy=True)
    np.fill_diagonal(out, val, wrap)
    return out


def _fill_diagonal_rule(ctx: Any, a: Any, val: Any, wrap: bool = False) -> tuple:
    """numpy.fill_diagonal writes ``a``'s main diagonal in place: ``a``'s shape (numpy needs 2-d, or
    all axes equal)."""
    shape = tuple(shape_of(a))
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2:
        for d in shape[1:]:
            ctx.eq(shape[0], d, "numpy.fill_diagonal: all dimensions of input must be of equal length")
    return shape


register_op("tpe.fill_diagonal", _fill_diagonal, _fill_diagonal_rule, numpy_funcs=(np.fill_diagonal,),
            writes_arg=0, doc="functional numpy.fill_diagonal(a, val, wrap): returns the updated copy")


# -- ndarray.view(dtype) ------------------------------------------------------------------------------
def _view(a: Any, dtype: Any = None) -> Any:
    return a.view() if dtype is None else a.view(dtype)


def _view_rule(ctx: Any, a: Any, dtype: Any = None, type: Any = None) -> tuple:
    """``a.view(dtype)`` with a dtype of ``a``'s item size: the same bytes read as ``dtype``,
    ``a``'s shape (numpy's ``ndarray.view``).

    Raises:
        UnsupportedOpError: ``type=`` (an ndarray subclass), or an item size other than ``a``'s
            (the last axis would change by the size ratio: use astype, or bit arithmetic).
    """
    if type is not None or (isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray)):
        raise UnsupportedOpError("ndarray.view(type=...) (an ndarray subclass) is not supported during capture")
    if dtype is not None and a.dtype is not None and np.dtype(dtype).itemsize != np.dtype(a.dtype).itemsize:
        raise UnsupportedOpError(f"ndarray.view({np.dtype(dtype)}) of a {np.dtype(a.dtype)} array changes the item "
                                 "size, so the last axis; only a view as a dtype of the same item size is supported "
                                 "during capture (x.view(np.uint32) of float32)")
    return tuple(shape_of(a))


register_op("numpy.ndarray.view", _view, _view_rule, methods=("view",),
            doc="a.view(dtype): a's bytes reinterpreted as a dtype of the same item size, a's shape")
