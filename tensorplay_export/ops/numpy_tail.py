"""The long tail of numpy that models meet: functions of one array's shape (sinc, fix, isposinf,
isneginf, iscomplex, isreal, angle, unwrap, sort_complex, i0), hsplit/vsplit/dsplit, rollaxis, diagflat,
matvec/vecmat, the array-API ``unique_*`` functions and setxor1d, the in-place put/putmask/place and
the in-place ndarray methods fill/sort/partition/put, gradient, choose, packbits/unpackbits.

Each runs numpy's own function (values and dtypes are eager numpy's).  Shapes, from numpy's docs
and ``numpy/lib/_shape_base_impl.py``, ``_function_base_impl.py``, ``_arraysetops_impl.py``:

- the same-shape functions return their first argument's shape (``unwrap`` along ``axis``,
  ``sort_complex`` along the last axis);
- ``hsplit`` splits axis 1 (axis 0 of a 1-d array), ``vsplit`` axis 0 (needs 2-d), ``dsplit``
  axis 2 (needs 3-d), as ``numpy.split`` (equal parts: the size divisible, a guard);
- ``rollaxis(a, axis, start)``: ``axis`` moved to before ``start``;
- ``diagflat(v, k)``: the flattened ``v`` (``L`` values) on the ``k``-th diagonal of an
  ``(L + |k|) x (L + |k|)`` matrix;
- ``matvec(A, x)``: ``(..., m, n), (..., n) -> (..., m)``; ``vecmat(x, A)``:
  ``(..., n), (..., n, m) -> (..., m)`` (the batch axes broadcast);
- ``unique_values/counts/inverse/all``: ``u`` distinct values (a data-dependent size; NaNs are
  not merged, unlike ``np.unique``, so ``u`` is its own symbol), the inverse of the input's
  shape; ``setxor1d``: at most the two sizes together;
- ``put(a, ind, v)`` / ``putmask(a, mask, v)`` / ``place(a, mask, v)`` write into ``a``
  (``writes_arg=0``: the impl returns the updated copy, capture writes it back); ``put``'s
  indices stay inside ``a.size`` for ``mode="raise"``; the mask has ``a``'s shape;
- ``a.fill(v)``, ``a.sort(axis)``, ``a.partition(kth, axis)``, ``a.put(...)``: the same, as
  methods writing into ``a``;
- ``gradient``: one array of ``f``'s shape per axis (one array for a single axis), each axis
  at least ``edge_order + 1`` long; ``choose``: the broadcast of ``a`` and the choices;
  ``packbits``: ``ceil(d / 8)`` along the axis; ``unpackbits``: ``8 * d`` along it, or ``count``
  bits (zero-padded past ``8 * d``), or ``8 * d + count`` for a negative ``count`` (numpy's
  ValueError below zero: a guard for a symbolic one).

Refused, with what to write instead (``registry.register_refusal``): functions whose result's type or size
is the data's (``allclose``, ``array_equal``, ``real_if_close``...), that take Python callables
(``piecewise``, ``apply_over_axes``, ``frompyfunc``), that read/write files, and ``ndarray.resize``
(it resizes the caller's array in place: ``np.resize`` returns the resized copy).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..records import sympy
from .ctx import as_dim, is_static, prod
from .elementwise import shape_of
from .indexing import _sort_rule
from .movement import _split_rule
from .reduce import norm_axes
from .registry import ArrayInfo, register_op, register_refusal
from .scatter import require_in_range

# -- functions of one array's shape ------------------------------------------------------------------
_SAME_SHAPE = ("sinc", "fix", "isposinf", "isneginf", "iscomplex", "isreal", "angle", "unwrap",
               "sort_complex", "i0")


def _same_shape(ctx: Any, x: Any, *args: Any, **kwargs: Any) -> tuple:
    return tuple(shape_of(x))


def _unwrap_rule(ctx: Any, p: Any, discont: Any = None, axis: Any = -1, *, period: Any = 2 * np.pi) -> tuple:
    shape = tuple(shape_of(p))
    norm_axes(axis, len(shape))  # numpy's AxisError for a bad axis
    return shape


for _name in _SAME_SHAPE:
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _unwrap_rule if _name == "unwrap" else _same_shape, numpy_funcs=(_fn,))


# -- hsplit / vsplit / dsplit ------------------------------------------------------------------------
def _directional_split(name: str, axis_of: Any, min_ndim: int):
    rule = _split_rule(True)

    def split_rule(ctx: Any, ary: Any, indices_or_sections: Any) -> list:
        ndim = len(shape_of(ary))
        if ndim < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        return rule(ctx, ary, indices_or_sections, axis_of(ndim))
    return split_rule


def _split_impl(fn: Any):
    def impl(ary: Any, indices_or_sections: Any) -> list:
        return list(fn(ary, indices_or_sections))
    impl.__name__ = fn.__name__
    return impl


for _fn, _axis_of, _min in ((np.hsplit, lambda nd: 1 if nd > 1 else 0, 1), (np.vsplit, lambda nd: 0, 2),
                            (np.dsplit, lambda nd: 2, 3)):
    register_op(f"numpy.{_fn.__name__}", _split_impl(_fn), _directional_split(_fn.__name__, _axis_of, _min),
                numpy_funcs=(_fn,), multi_output=True)


# -- rollaxis ---------------------------------------------------------------------------------------------
def _rollaxis_rule(ctx: Any, a: Any, axis: Any, start: Any = 0) -> tuple:
    """numpy.rollaxis (``numpy/_core/numeric.py``): ``axis`` moved to before position ``start``."""
    shape = list(shape_of(a))
    n = len(shape)
    ax = norm_axes(int(axis), n)[0]
    st = int(start)
    if st < 0:
        st += n
    if not 0 <= st < n + 1:
        raise np.exceptions.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {int(start)} was passed in")
    if ax < st:
        st -= 1
    if ax == st:
        return tuple(shape)
    d = shape.pop(ax)
    shape.insert(st, d)
    return tuple(shape)


register_op("numpy.rollaxis", np.rollaxis, _rollaxis_rule, numpy_funcs=(np.rollaxis,))


# -- diagflat ---------------------------------------------------------------------------------------------
def _diagflat_rule(ctx: Any, v: Any, k: Any = 0) -> tuple:
    """numpy.diagflat: the ``L`` values of ``v`` flattened on diagonal ``k`` of an ``(L + |k|)``-square."""
    length = prod(shape_of(v))
    k = int(k) if is_static(k) else sympy.sympify(k)
    side = as_dim(sympy.sympify(length) + (abs(k) if isinstance(k, int) else sympy.Max(k, -k)))
    return (side, side)


register_op("numpy.diagflat", np.diagflat, _diagflat_rule, numpy_funcs=(np.diagflat,))


# -- matvec / vecmat (numpy >= 2.2 gufuncs) ------------------------------------------------------------------
def _no_gufunc_axes(name: str, kwargs: dict) -> None:
    extra = set(kwargs) - {"dtype", "casting", "order", "subok", "signature"}
    if extra:
        from ..errors import UnsupportedOpError

        raise UnsupportedOpError(f"numpy.{name} with {sorted(extra)} is not supported during capture "
                                 "(move the axes with np.moveaxis first)")


def _matvec_rule(ctx: Any, x1: Any, x2: Any, /, **kwargs: Any) -> tuple:
    """``(..., m, n), (..., n) -> (..., m)``: the vector's size is the matrix's columns."""
    return _matrix_vector(ctx, "matvec", shape_of(x1), shape_of(x2), kwargs)


def _vecmat_rule(ctx: Any, x1: Any, x2: Any, /, **kwargs: Any) -> tuple:
    """``(..., n), (..., n, m) -> (..., m)``: the vector's size is the matrix's rows."""
    return _matrix_vector(ctx, "vecmat", shape_of(x2), shape_of(x1), kwargs)


def _matrix_vector(ctx: Any, name: str, matrix: Any, vector: Any, kwargs: dict) -> tuple:
    """numpy.matvec (the vector meets the matrix's last axis) or numpy.vecmat (its second to last),
    with the stack axes broadcast, matrix first for matvec and vector first for vecmat."""
    _no_gufunc_axes(name, kwargs)
    a, v = tuple(matrix), tuple(vector)
    if len(a) < 2 or len(v) < 1:
        raise ValueError(f"{name}: the matrix needs 2 dimensions and the vector 1")
    matvec = name == "matvec"
    meets, keeps = (a[-1], a[-2]) if matvec else (a[-2], a[-1])
    axis = "columns" if matvec else "rows"
    ctx.eq(meets, v[-1], f"numpy.{name}: the matrix's {ctx.text(meets)} {axis} and the vector's "
                         f"{ctx.text(v[-1])} entries must match")
    stack = ctx.broadcast(a[:-2], v[:-1]) if matvec else ctx.broadcast(v[:-1], a[:-2])
    return tuple(stack) + (keeps,)


for _name, _rule in (("matvec", _matvec_rule), ("vecmat", _vecmat_rule)):
    _fn = getattr(np, _name, None)
    if _fn is not None:
        register_op(f"numpy.{_name}", _fn, _rule, numpy_funcs=(_fn,))


# -- the array API's unique functions, setxor1d ----------------------------------------------------------
def _distinct(ctx: Any, x: Any, kind: str) -> Any:
    """The data-dependent count of distinct values of ``x`` (NaNs apart: ``equal_nan=False``)."""
    n = prod(shape_of(x))
    u = ctx.new_unbacked(n, 0, 0, same_as=("unique_values", getattr(x, "key", None)))
    return u, n


def _tuple_of(fn: Any):
    def impl(x: Any) -> tuple:
        return fn(x)  # a namedtuple: capture keeps its fields
    impl.__name__ = fn.__name__
    return impl


def _unique_values_rule(ctx: Any, x: Any) -> tuple:
    return (_distinct(ctx, x, "values")[0],)


def _unique_counts_rule(ctx: Any, x: Any) -> list:
    """UniqueCountsResult(values ``(u,)``, counts ``(u,)``), counts in ``[1, x.size]``."""
    u, n = _distinct(ctx, x, "counts")
    ctx.vrange(1, n, 1)
    return [(u,), (u,)]


def _unique_inverse_rule(ctx: Any, x: Any) -> list:
    """UniqueInverseResult(values ``(u,)``, inverse_indices of ``x``'s shape, in ``[0, u - 1]``)."""
    u, _ = _distinct(ctx, x, "inverse")
    ctx.vrange(0, u - 1, 1)
    return [(u,), tuple(shape_of(x))]


def _unique_all_rule(ctx: Any, x: Any) -> list:
    """UniqueAllResult(values ``(u,)``, indices ``(u,)``, inverse_indices (``x``'s shape), counts ``(u,)``)."""
    u, n = _distinct(ctx, x, "all")
    ctx.vrange(0, n - 1, 1)
    ctx.vrange(0, u - 1, 2)
    ctx.vrange(1, n, 3)
    return [(u,), (u,), tuple(shape_of(x)), (u,)]


if hasattr(np, "unique_values"):  # numpy >= 2.0
    register_op("numpy.unique_values", np.unique_values, _unique_values_rule, numpy_funcs=(np.unique_values,))
    for _fn, _rule in ((np.unique_counts, _unique_counts_rule), (np.unique_inverse, _unique_inverse_rule),
                       (np.unique_all, _unique_all_rule)):
        register_op(f"numpy.{_fn.__name__}", _tuple_of(_fn), _rule, numpy_funcs=(_fn,), multi_output=True,
                    doc=f"numpy.{_fn.__name__}: a namedtuple of arrays")


def _setxor1d_rule(ctx: Any, ar1: Any, ar2: Any, assume_unique: bool = False) -> tuple:
    """numpy.setxor1d: the sorted values in exactly one of the two: at most both sizes together."""
    return (ctx.new_unbacked(prod(shape_of(ar1)) + prod(shape_of(ar2)), 0, 0),)


register_op("numpy.setxor1d", np.setxor1d, _setxor1d_rule, numpy_funcs=(np.setxor1d,))


# -- in-place writes: put, putmask, place; ndarray.fill / sort / partition / put ----------------------------
def _copy_then(fn: Any, name: str):
    def impl(a: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        out = np.array(a, copy=True)
        fn(out, *args, **kwargs)
        return out
    impl.__name__ = name
    return impl


def _put_rule(ctx: Any, a: Any, ind: Any, v: Any, mode: str = "raise") -> tuple:
    """``a``'s shape; with ``mode="raise"`` the flat indices stay in ``[-a.size, a.size)``."""
    shape = tuple(shape_of(a))
    if mode == "raise":
        require_in_range(ctx, ind, prod(shape), "numpy.put", negative_ok=True)
    return shape


def _mask_rule(name: str):
    def rule(ctx: Any, a: Any, mask: Any, values: Any) -> tuple:
        """``a``'s shape; the mask has ``a``'s shape (numpy: "mask and data must be the same size")."""
        shape, ms = tuple(shape_of(a)), tuple(shape_of(mask))
        if len(ms) == len(shape):
            for d, e in zip(shape, ms):
                ctx.eq(d, e, f"numpy.{name}: the mask's size {ctx.text(e)} must be the array's {ctx.text(d)}")
        else:
            ctx.eq(prod(shape), prod(ms), f"numpy.{name}: mask and data must be the same size")
        return shape
    return rule


def _fill_rule(ctx: Any, a: Any, value: Any) -> tuple:
    if isinstance(value, ArrayInfo) and prod(value.shape) != 1:
        ctx.eq(prod(value.shape), 1, "ndarray.fill: the value must be a single element")
    return tuple(shape_of(a))


def _partition_rule(ctx: Any, a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> tuple:
    """``a``'s shape; every ``kth`` inside ``[-n, n)`` of the axis's size ``n``."""
    shape = tuple(shape_of(a))
    n = shape[norm_axes(axis, len(shape))[0]] if shape else 1
    for k in np.atleast_1d(kth) if not isinstance(kth, ArrayInfo) else ():
        k = int(k)
        if not is_static(n):
            ctx.require(sympy.Gt(n, k) if k >= 0 else sympy.Ge(n, -k),
                        lambda: f"partition: kth {k} must be inside the axis of size {ctx.text(n)}")
    return shape


def _inplace_sort_rule(ctx: Any, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> tuple:
    if axis is None:
        raise ValueError("ndarray.sort sorts along an axis; axis=None is numpy's np.sort only")
    return _sort_rule(ctx, a, axis)


register_op("tpe.put", _copy_then(np.put, "put"), _put_rule, numpy_funcs=(np.put,), methods=("put",), writes_arg=0,
            doc="functional numpy.put(a, ind, v, mode) / a.put(...): returns the updated copy")
register_op("tpe.putmask", _copy_then(np.putmask, "putmask"), _mask_rule("putmask"), numpy_funcs=(np.putmask,),
            writes_arg=0, doc="functional numpy.putmask(a, mask, values): returns the updated copy")
register_op("tpe.place", _copy_then(np.place, "place"), _mask_rule("place"), numpy_funcs=(np.place,),
            writes_arg=0, doc="functional numpy.place(arr, mask, vals): returns the updated copy")
register_op("tpe.fill", _copy_then(np.ndarray.fill, "fill"), _fill_rule, methods=("fill",), writes_arg=0,
            doc="functional ndarray.fill(value): returns the filled copy")
register_op("tpe.sort_in_place", _copy_then(np.ndarray.sort, "sort"), _inplace_sort_rule, methods=("sort",),
            writes_arg=0, doc="functional ndarray.sort(axis, kind, order): returns the sorted copy")
register_op("tpe.partition_in_place", _copy_then(np.ndarray.partition, "partition"), _partition_rule,
            methods=("partition",), writes_arg=0,
            doc="functional ndarray.partition(kth, axis, kind, order): returns the partitioned copy")


# -- documented refusals ---------------------------------------------------------------------------------
# numpy callables capture refuses, and why (UnsupportedOpError names the reason and what to write)
_DATA_BOOL = ("returns a Python bool computed from the values (data-dependent): compute it as an array "
              "(np.isclose(a, b).all(), np.all(a == b)) and return it, or branch with np.where")
for _name, _why in (
        ("allclose", _DATA_BOOL), ("array_equal", _DATA_BOOL), ("array_equiv", _DATA_BOOL),
        ("real_if_close", "returns a real or a complex array depending on the values: use np.real(a) when the "
                          "imaginary parts are known to be small"),
        ("piecewise", "calls Python functions on data-dependent selections: use np.where / np.select"),
        ("apply_over_axes", "calls a Python function per axis: write the reductions out (a.sum(axis=(0, 1)))"),
        ("apply_along_axis", "calls a Python function per 1-d slice: vectorize the function over the axis"),
        ("frompyfunc", "makes a ufunc of a Python function, which capture cannot see into"),
        ("fromfunction", "calls a Python function on index grids: build the grids with np.indices/np.meshgrid"),
        ("fromiter", "reads a Python iterator, which capture cannot see into"),
        ("histogram2d", "its bins depend on the data unless bins and range are given: use np.histogram per axis"
                        " or np.bincount of computed bin indices"),
        ("histogramdd", "its bins depend on the data unless bins and range are given: use np.bincount of "
                        "computed bin indices"),
        ("histogram_bin_edges", "its edges depend on the data's minimum and maximum unless range is given: "
                                "np.linspace(lo, hi, bins + 1)"),
        ("roots", "the number of roots depends on leading zeros of the data"),
        ("polydiv", "the remainder's length depends on leading zeros of the data"),
        ("nested_iters", "an iterator over elements (Python loops over data)"),
        ("asarray_chkfinite", "raises on non-finite values, a check of the data: return np.isfinite(a).all() "
                              "or clean the values with np.nan_to_num"),
):
    _fn = getattr(np, _name, None)
    if _fn is not None:
        register_refusal(_fn, _why)
for _fn, _why in (
        (np.linalg.eig, "its dtype is real or complex depending on the values: use np.linalg.eigh for "
                        "symmetric matrices, or cast to complex first and take .real where known real"),
        (np.linalg.eigvals, "its dtype is real or complex depending on the values: use np.linalg.eigvalsh for "
                            "symmetric matrices"),
        (np.linalg.lstsq, "its residuals are empty or not depending on the matrix's rank (the data): use "
                          "np.linalg.pinv(a) @ b, or np.linalg.solve of the normal equations"),
):
    register_refusal(_fn, _why)


# -- gradient ---------------------------------------------------------------------------------------------
def _gradient_axes(f: Any, axis: Any) -> tuple:
    return norm_axes(axis, len(shape_of(f))) if axis is not None else tuple(range(len(shape_of(f))))


def _gradient_rule(ctx: Any, f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> list:
    """numpy.gradient (``numpy/lib/_function_base_impl.py``): one array of ``f``'s shape per axis;
    each axis needs at least ``edge_order + 1`` values (numpy: "Shape of array too small"), and a
    coordinate array given as spacing has that axis's length."""
    shape = tuple(shape_of(f))
    axes = _gradient_axes(f, axis)
    if len(varargs) not in (0, 1, len(axes)):
        raise TypeError("invalid number of arguments")
    for i, ax in enumerate(axes):
        d = shape[ax]
        if not is_static(d):
            ctx.require(sympy.Ge(d, int(edge_order) + 1),
                        lambda: f"numpy.gradient: axis {ax} of size {ctx.text(d)} needs at least edge_order + 1 = "
                                f"{int(edge_order) + 1} values")
        spacing = varargs[0] if len(varargs) == 1 else varargs[i] if varargs else None
        if isinstance(spacing, ArrayInfo) and len(spacing.shape) == 1:
            ctx.eq(spacing.shape[0], d, "numpy.gradient: when 1d, distances must match the length of the "
                                        "corresponding dimension")
    return [shape for _ in axes]


def _gradient_variant(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    return "tpe.gradient_one" if len(_gradient_axes(f, axis)) == 1 else None


def _gradient_many(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> tuple:
    return tuple(np.gradient(f, *varargs, axis=axis, edge_order=edge_order))


register_op("numpy.gradient", _gradient_many, _gradient_rule, numpy_funcs=(np.gradient,), multi_output=True,
            variant=_gradient_variant, doc="numpy.gradient over several axes: one array per axis")
register_op("tpe.gradient_one", np.gradient, lambda ctx, f, *v, **kw: _gradient_rule(ctx, f, *v, **kw)[0],
            doc="numpy.gradient over one axis (a 1-d input, or one axis=): a single array")


# -- choose -----------------------------------------------------------------------------------------------
def _choose_rule(ctx: Any, a: Any, choices: Any, out: Any = None, mode: str = "raise") -> tuple:
    """numpy.choose: ``a`` and every choice broadcast; with ``mode="raise"`` the values of ``a`` are
    in ``[0, len(choices))``."""
    if isinstance(choices, ArrayInfo):
        raise ValueError("numpy.choose during capture takes the choices as a list or tuple of arrays")
    if mode == "raise":
        require_in_range(ctx, a, len(choices), "numpy.choose", negative_ok=False)
    return ctx.broadcast(shape_of(a), *(shape_of(c) for c in choices))


register_op("numpy.choose", np.choose, _choose_rule, numpy_funcs=(np.choose,), methods=("choose",))


# -- packbits ---------------------------------------------------------------------------------------------
def _packbits_rule(ctx: Any, a: Any, axis: Any = None, bitorder: str = "big") -> tuple:
    """numpy.packbits: 8 values per byte, the last byte padded: ``ceil(d / 8)`` along ``axis``
    (None: of the flattened array)."""
    shape = tuple(shape_of(a))
    if axis is None:
        return (as_dim(sympy.floor((sympy.sympify(prod(shape)) + 7) / 8)),)
    ax = norm_axes(axis, len(shape))[0]
    d = shape[ax]
    packed = (int(d) + 7) // 8 if is_static(d) else as_dim(sympy.floor((d + 7) / 8))
    return shape[:ax] + (packed,) + shape[ax + 1:]


register_op("numpy.packbits", np.packbits, _packbits_rule, numpy_funcs=(np.packbits,))


def _unpacked(ctx: Any, d: Any, count: Any) -> Any:
    """The bits ``unpackbits`` keeps of ``8 * d``: ``count`` (zeros past them), or ``8 * d + count``
    for a negative one, which numpy refuses below zero ("-count larger than number of elements")."""
    bits = sympy.sympify(d) * 8
    if count is None:
        return _size_of(bits)
    count = sympy.sympify(count)
    if count.is_Integer:
        negative = int(count) < 0
    else:
        negative = not ctx.choose(sympy.Ge(count, 0), lambda: f"numpy.unpackbits: the sign of count {ctx.text(count)} "
                                  "decides whether it is the length or the bits trimmed off the end")
    if not negative:
        return _size_of(count)
    kept = bits + count
    if not kept.is_Integer:
        ctx.require(sympy.Ge(kept, 0), lambda: f"numpy.unpackbits: -count ({ctx.text(-count)}) cannot be larger "
                                               f"than the {ctx.text(bits)} bits unpacked")
    return _size_of(kept)


def _size_of(d: Any) -> Any:
    return as_dim(sympy.sympify(d))


def _unpackbits_rule(ctx: Any, a: Any, /, axis: Any = None, count: Any = None, bitorder: str = "big") -> tuple:
    """numpy.unpackbits: 8 bits per uint8 value along ``axis`` (None: of the flattened array), trimmed
    or zero-padded to ``count``."""
    if isinstance(a, ArrayInfo) and np.dtype(a.dtype) != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shape = tuple(shape_of(a))
    if axis is None:
        return (_unpacked(ctx, prod(shape), count),)
    ax = norm_axes(axis, len(shape))[0]
    return shape[:ax] + (_unpacked(ctx, shape[ax], count),) + shape[ax + 1:]


register_op("numpy.unpackbits", np.unpackbits, _unpackbits_rule, numpy_funcs=(np.unpackbits,))


register_refusal(np.ndarray.resize,
                 "resizes the array in place (numpy refuses it while views of it exist): use a = np.resize(a, "
                 "new_shape), which returns a resized copy (it repeats a's values where a.resize fills zeros: "
                 "for zeros, np.pad(a.ravel(), (0, extra)).reshape(...))")
