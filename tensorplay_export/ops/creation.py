"""Creation ops with (possibly symbolic) sizes: arange, zeros/ones/empty/full, *_like,
eye/identity/tri/tril/triu, linspace, indices/triu_indices/tril_indices/diag_indices (and their
``*_from`` forms), and ``tpe.shape_array`` (``np.array(x.shape)``).

During capture the numpy creation functions are patched (see
``capture/patching.py``) so these run even when no argument is an array.
``arange`` records its value range ``[start, stop - 1]`` so gathers with it
get index-bounds guards.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import as_dim, is_static
from .elementwise import same_shape, shape_of
from ..errors import UnsupportedOpError
from .registry import register_op
from ..records import sympy


def require_nonneg(ctx: Any, sizes: Any, what: str) -> None:
    """Every symbolic count in ``sizes`` is >= 0: numpy raises on a negative size.

    Every rule that takes sizes from its arguments (creation shapes, reshape
    targets, pad widths, tile/repeat counts, linspace's ``num``) calls this, so
    ``zeros((n - 5, 4))`` requires ``n >= 5`` (a violation with a fix) instead
    of a program that fails at run time.  Static sizes were checked by numpy on
    the example; sizes sympy already knows are >= 0 fold without the solver.
    """
    for d in sizes:
        # a size sympy's assumptions already call nonnegative (a product of positive symbols)
        # needs no relation built: Ge would fold to true
        if isinstance(d, sympy.Basic) and not d.is_Integer and d.is_nonnegative is not True:
            ctx.require(sympy.Ge(d, 0), lambda d=d: f"{what}: size {ctx.text(d)} must be >= 0")


def norm_shape(shape: Any, ctx: Any = None, what: str = "shape") -> tuple:
    """A creation shape as a tuple of ints / sympy sizes (each required >= 0 when ``ctx`` is given)."""
    if isinstance(shape, (list, tuple)):
        out = tuple(as_dim(sympy.sympify(d)) if isinstance(d, sympy.Basic) else int(d) for d in shape)
    else:
        out = (as_dim(sympy.sympify(shape)) if isinstance(shape, sympy.Basic) else int(shape),)
    if ctx is not None:
        require_nonneg(ctx, out, what)
    return out


def _exact_value(v: Any) -> Any:
    """An arange bound as an exact rational: ints and sizes as they are; float constants and
    float size expressions (``0.5*n`` from ``n / 2``) when their binary value is short enough
    that numpy's float arithmetic on them is exact (``0.5``, ``0.25``); else None."""
    if isinstance(v, (bool, np.bool_)):
        return sympy.Integer(int(v))
    if isinstance(v, (int, np.integer)):
        return sympy.Integer(int(v))
    if isinstance(v, (float, np.floating)):
        v = sympy.Float(float(v))
    if not isinstance(v, sympy.Basic):
        return None
    # an integer-valued float operation (math.floor(n * 1.3): the solver's FFloor) is an exact
    # integer whatever float constants it rounds: its own constants are no bound's
    whole = {a: sympy.Dummy(integer=True) for a in v.atoms(sympy.Function)
             if a.is_integer and a.has(sympy.Float)}
    out = {}
    for f in (v.xreplace(whole) if whole else v).atoms(sympy.Float):
        r = sympy.Rational(float(f))
        q = int(r.q)
        if q & (q - 1) or q > 2 ** 16 or abs(int(r.p)) >= 2 ** 24:
            return None
        out[f] = r
    return v.xreplace(out) if out else v


def _arange_rule(ctx: Any, start: Any, stop: Any = None, step: Any = None, dtype: Any = None,
                 **kwargs: Any) -> tuple:
    """numpy's length rule: ``max(ceil((stop - start) / step), 0)``, as an integer size expression.

    A float bound (``np.arange(n / 2)``) gives ``ceiling(n/2)``; a symbolic step must keep the
    example's sign (recorded) and be nonzero.  Raises UnsupportedOpError for float bounds whose
    binary value makes the length depend on float rounding (``n * 0.1``).
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    values = (start, stop, step)
    if all(is_static(v) or isinstance(v, (float, np.floating)) for v in values):
        return (len(np.arange(*(int(v) if isinstance(v, sympy.Basic) else v for v in values))),)
    exact = [_exact_value(v) for v in values]
    if any(e is None for e in exact):
        raise UnsupportedOpError(
            f"numpy.arange({', '.join(str(v) for v in values)}): a float bound or step whose binary value is "
            "inexact makes the length depend on float rounding; use integer sizes (e.g. n // 10) or "
            "dyadic constants (0.5, 0.25)")
    lo, hi, st = exact
    if st.is_Number:
        positive = bool(st > 0)
    else:
        positive = ctx.choose(sympy.Gt(st, 0), f"numpy.arange: the sign of the step {ctx.text(st)} (as in the example)")
        if not positive:
            ctx.require(sympy.Lt(st, 0), f"numpy.arange: the step {ctx.text(st)} must be nonzero")
    span = hi - lo if positive else lo - hi
    mag = st if positive else -st
    n = sympy.ceiling(span / mag)
    all_int = all(v.is_integer for v in exact) and not any(
        isinstance(v, (float, np.floating)) or (isinstance(v, sympy.Basic) and v.has(sympy.Float))
        for v in values)
    if all_int:
        last = lo + (n - 1) * st
        ctx.vrange(lo, last) if positive else ctx.vrange(last, lo)
    return (ctx.canon(sympy.Max(n, 0)),)


register_op("numpy.arange", np.arange, _arange_rule, numpy_funcs=(np.arange,))


def _fill_rule(ctx: Any, shape: Any, *args: Any, **kwargs: Any) -> tuple:
    return norm_shape(shape, ctx, "array shape")


for _name in ("zeros", "ones", "empty", "full"):
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _fill_rule, numpy_funcs=(_fn,))


def _like_rule(ctx: Any, a: Any, *args: Any, shape: Any = None, **kwargs: Any) -> tuple:
    return shape_of(a) if shape is None else norm_shape(shape, ctx, "shape=")


for _name in ("zeros_like", "ones_like", "empty_like", "full_like"):
    _fn = getattr(np, _name)
    register_op(f"numpy.{_name}", _fn, _like_rule, numpy_funcs=(_fn,))


def _eye_rule(ctx: Any, N: Any, M: Any = None, k: Any = 0, *args: Any, **kwargs: Any) -> tuple:
    return norm_shape((N, N if M is None else M), ctx, "N, M")


register_op("numpy.eye", np.eye, _eye_rule, numpy_funcs=(np.eye,))
register_op("numpy.tri", np.tri, _eye_rule, numpy_funcs=(np.tri,))
register_op("numpy.identity", np.identity, lambda ctx, n, *a, **k: norm_shape((n, n), ctx, "identity"),
            numpy_funcs=(np.identity,))


register_op("numpy.tril", np.tril, same_shape, numpy_funcs=(np.tril,))
register_op("numpy.triu", np.triu, same_shape, numpy_funcs=(np.triu,))


def _linspace_rule(ctx: Any, start: Any, stop: Any, num: Any = 50, endpoint: bool = True,
                   retstep: bool = False, dtype: Any = None, axis: int = 0, **kwargs: Any) -> tuple:
    if retstep:
        raise UnsupportedOpError("numpy.linspace(retstep=True) is not supported during capture")
    extra = shape_of(start) or shape_of(stop)
    if extra:
        raise UnsupportedOpError("numpy.linspace with array start/stop is not supported during capture")
    return norm_shape(num, ctx, "linspace num")


def _linspace(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, retstep: bool = False, dtype: Any = None,
              axis: int = 0, **kwargs: Any) -> Any:
    """numpy.linspace without ``retstep`` (that form is ``tpe.linspace_retstep``, an op with two outputs)."""
    if retstep:
        raise UnsupportedOpError("numpy.linspace(retstep=True) with array start/stop is not supported during "
                                 "capture; use scalar start and stop")
    return np.linspace(start, stop, num, endpoint, False, dtype, axis, **kwargs)


register_op("numpy.linspace", _linspace, _linspace_rule, numpy_funcs=(np.linspace,))


def _linspace_retstep(start: Any, stop: Any, num: Any = 50, endpoint: bool = True, dtype: Any = None,
                      axis: int = 0, **kwargs: Any) -> tuple:
    return np.linspace(start, stop, num, endpoint, True, dtype, axis, **kwargs)


def _linspace_retstep_rule(ctx: Any, start: Any, stop: Any, num: Any = 50, endpoint: bool = True,
                           dtype: Any = None, axis: int = 0, **kwargs: Any) -> list:
    """``(num,)`` samples and a 0-d step ``(stop - start) / (num - 1)`` (``/ num`` without ``endpoint``).

    numpy gives the step as a numpy scalar of the bounds' inexact type, except when the divisor is 0
    (``num == 1`` with ``endpoint``, ``num == 0`` without): then it is the Python float ``nan``,
    which promotes as a weak scalar (``float32_array * step`` stays float32).  A symbolic ``num``
    must therefore keep the divisor >= 1, so the step's type is the same at every size.
    """
    shape = _linspace_rule(ctx, start, stop, num, endpoint, False, dtype, axis, **kwargs)
    if not is_static(num):
        div = num - 1 if endpoint else num
        ctx.require(sympy.Ge(div, 1), lambda: "numpy.linspace(retstep=True): the step's divisor "
                                              f"{ctx.text(div)} must be "
                    "at least 1 (numpy returns the Python float nan as the step there, whose type promotes "
                    "differently from the numpy scalar at other sizes)")
    return [shape, ()]


register_op("tpe.linspace_retstep", _linspace_retstep, _linspace_retstep_rule, multi_output=True,
            doc="numpy.linspace(..., retstep=True): (samples, step); capture routes the retstep form here")


def _shape_array(*sizes: Any) -> np.ndarray:
    return np.array(sizes)


def _shape_array_rule(ctx: Any, *sizes: Any) -> tuple:
    lo = sympy.Min(*[sympy.sympify(s) for s in sizes]) if sizes else 0
    hi = sympy.Max(*[sympy.sympify(s) for s in sizes]) if sizes else 0
    ctx.vrange(lo, hi)
    return (len(sizes),)


register_op("tpe.shape_array", _shape_array, _shape_array_rule,
            doc="np.array of a tuple of sizes (x.shape): an int64 vector, never an object array")


def _size_scalar(value: Any, dtype: Any) -> Any:
    return np.dtype(dtype).type(value)


def _size_scalar_rule(ctx: Any, value: Any, dtype: Any) -> tuple:
    ctx.vrange(value, value)
    return ()


register_op("tpe.size_scalar", _size_scalar, _size_scalar_rule,
            doc="a size as the numpy scalar eager code holds (n + np.int32(1) is an np.int32): "
                "arrays it meets promote as numpy 2 promotes that scalar type")


# -- logspace / geomspace: linspace's length rule ----------------------------------------------------
def _logspace_rule(ctx: Any, start: Any, stop: Any, num: Any = 50, endpoint: bool = True, base: Any = 10.0,
                   dtype: Any = None, axis: int = 0) -> tuple:
    if shape_of(base):
        raise UnsupportedOpError("numpy.logspace with an array base is not supported during capture")
    return _linspace_rule(ctx, start, stop, num, endpoint, False, dtype, axis)


def _geomspace_rule(ctx: Any, start: Any, stop: Any, num: Any = 50, endpoint: bool = True, dtype: Any = None,
                    axis: int = 0) -> tuple:
    return _linspace_rule(ctx, start, stop, num, endpoint, False, dtype, axis)


register_op("numpy.logspace", np.logspace, _logspace_rule, numpy_funcs=(np.logspace,))
register_op("numpy.geomspace", np.geomspace, _geomspace_rule, numpy_funcs=(np.geomspace,))


# -- window functions of a size ----------------------------------------------------------------------
def _window_rule(ctx: Any, M: Any, *args: Any) -> tuple:  # noqa: N803 - numpy's name
    """``(max(M, 0),)``: numpy returns an empty window for ``M < 1`` and ``ones(1)`` for ``M == 1``."""
    if is_static(M):
        return (max(int(M), 0),)
    if not isinstance(M, sympy.Basic) or not M.is_integer:
        raise UnsupportedOpError(f"a window length must be an integer size, got {M!r}")
    return (ctx.canon(sympy.Max(M, 0)),)


for _fn in (np.hanning, np.hamming, np.blackman, np.bartlett, np.kaiser):
    register_op(f"numpy.{_fn.__name__}", _fn, _window_rule, numpy_funcs=(_fn,))


# -- indices / triu_indices / tril_indices -----------------------------------------------------------
def _indices(dimensions: Any, dtype: Any = int, sparse: bool = False) -> Any:
    """numpy.indices, dense only (the sparse form returns a tuple; see the rule)."""
    if sparse:
        raise UnsupportedOpError("numpy.indices(sparse=True) is not supported during capture; use "
                                 "np.meshgrid(np.arange(d0), np.arange(d1), indexing='ij', sparse=True)")
    return np.indices(dimensions, dtype)


def _indices_rule(ctx: Any, dimensions: Any, dtype: Any = int, sparse: bool = False) -> tuple:
    """``(len(dimensions), *dimensions)``; grid ``i`` holds values in ``[0, dimensions[i] - 1]``."""
    dims = norm_shape(tuple(dimensions), ctx, "numpy.indices dimensions")
    if dims:
        ctx.vrange(0, sympy.Max(*[sympy.sympify(d) for d in dims]) - 1)
    return (len(dims), *dims)


register_op("numpy.indices", _indices, _indices_rule, numpy_funcs=(np.indices,))


def _triangle(t: Any) -> Any:
    """``t * (t + 1) / 2`` for ``t = max(t, 0)``: the number of cells on and above the diagonal of a
    ``t x t`` square."""
    t = sympy.Max(t, 0)
    return sympy.floor(t * (t + 1) / 2)


def _tri_count(ctx: Any, n: Any, k: Any, m: Any, upper: bool, name: str) -> Any:
    """Cells of an ``n x m`` array with ``j - i >= k`` (upper) or ``j - i <= k`` (lower).

    For a square array (``m`` None or equal to ``n``) and a static ``k`` there is a closed form over
    triangles: upper ``T(n - k)`` for ``k >= 0`` and ``n**2 - T(n + k - 1)`` below; lower by
    symmetry (``tril(k)`` of a square is ``triu(-k)`` transposed).  A rectangle of a dynamic size
    (or a dynamic ``k``) has a piecewise count: its sizes are pinned to the example's.
    """
    if all(is_static(v) for v in (n, k)) and (m is None or is_static(m)):
        return len((np.triu_indices if upper else np.tril_indices)(int(n), int(k), None if m is None else int(m))[0])
    square = m is None or sympy.sympify(m) - sympy.sympify(n) == 0
    if not square or not is_static(k):
        for d in (n, m, k):
            if d is not None:
                ctx.pin(d, f"{name}: the cell count of a non-square triangle (m given, not n) or of a "
                                f"dynamic k has no closed form here")
        n_, m_ = int(ctx.hint(n)), None if m is None else int(ctx.hint(m))
        return len((np.triu_indices if upper else np.tril_indices)(n_, int(ctx.hint(k)), m_)[0])
    k = int(k) if upper else -int(k)  # lower(k) == upper(-k) on a square
    n = sympy.sympify(n)
    count = _triangle(n - k) if k >= 0 else n * n - _triangle(n + k - 1)
    return ctx.canon(count)


def _tri_indices_rule(upper: bool, name: str):
    def rule(ctx: Any, n: Any, k: Any = 0, m: Any = None) -> list:
        require_nonneg(ctx, [d for d in (n, m) if d is not None], name)
        count = _tri_count(ctx, n, k, m, upper, name)
        ctx.vrange(0, sympy.sympify(n) - 1, 0)
        ctx.vrange(0, sympy.sympify(n if m is None else m) - 1, 1)
        return [(as_dim(sympy.sympify(count)),), (as_dim(sympy.sympify(count)),)]
    return rule


def _tri_indices_from_rule(upper: bool, name: str):
    def rule(ctx: Any, arr: Any, k: Any = 0) -> list:
        shape = shape_of(arr)
        if len(shape) != 2:
            raise ValueError("input array must be 2-d")
        return _tri_indices_rule(upper, name)(ctx, shape[-2], k, shape[-1])
    return rule


for _fn, _upper in ((np.triu_indices, True), (np.tril_indices, False)):
    register_op(f"numpy.{_fn.__name__}", _fn, _tri_indices_rule(_upper, f"numpy.{_fn.__name__}"),
                numpy_funcs=(_fn,), multi_output=True)
for _fn, _upper in ((np.triu_indices_from, True), (np.tril_indices_from, False)):
    register_op(f"numpy.{_fn.__name__}", _fn, _tri_indices_from_rule(_upper, f"numpy.{_fn.__name__}"),
                numpy_funcs=(_fn,), multi_output=True)


# -- diag_indices / diag_indices_from -------------------------------------------------------------------------
def _diag_indices_rule(ctx: Any, n: Any, ndim: Any = 2) -> list:
    """numpy.diag_indices: ``ndim`` copies of ``arange(n)`` (values in ``[0, n - 1]``)."""
    require_nonneg(ctx, (n,), "numpy.diag_indices n")
    size = as_dim(sympy.sympify(n)) if isinstance(n, sympy.Basic) else int(n)
    for i in range(int(ndim)):
        ctx.vrange(0, sympy.sympify(n) - 1, i)
    return [(size,)] * int(ndim)


def _diag_indices_from_rule(ctx: Any, arr: Any) -> list:
    """numpy.diag_indices_from: an array of >= 2 dimensions, all of one size ``n``: ``diag_indices(n, ndim)``."""
    shape = tuple(shape_of(arr))
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    for i, d in enumerate(shape[1:], 1):
        ctx.eq(d, shape[0], f"numpy.diag_indices_from: All dimensions of input must be of equal length (axis {i} "
                            f"has {ctx.text(d)}, axis 0 {ctx.text(shape[0])})")
    return _diag_indices_rule(ctx, shape[0], len(shape))


register_op("numpy.diag_indices", np.diag_indices, _diag_indices_rule, numpy_funcs=(np.diag_indices,),
            multi_output=True, doc="numpy.diag_indices(n, ndim): a tuple of ndim aranges")
register_op("numpy.diag_indices_from", np.diag_indices_from, _diag_indices_from_rule,
            numpy_funcs=(np.diag_indices_from,), multi_output=True,
            doc="numpy.diag_indices_from(arr): diag_indices(arr.shape[0], arr.ndim)")
