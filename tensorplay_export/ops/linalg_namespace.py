"""The array-API entry points of ``numpy.linalg`` (numpy >= 2.0): vecdot, cross, matrix_transpose,
matrix_norm, vector_norm, outer, diagonal, trace, tensordot, matmul; and multi_dot, cond, matrix_rank.

Each is a function of its own in ``numpy/linalg/_linalg.py`` (``np.linalg.matmul is not
np.matmul``), so each is registered as an op of its own, run by numpy's own function (so the
program's values and dtypes are eager numpy's, bit for bit).  Their shapes are the
``numpy`` namespace's counterparts with the array API's fixed axes, read from that file:

- ``vecdot(x1, x2, /, *, axis=-1)``: ``numpy.vecdot`` (no ``keepdims``);
- ``cross(x1, x2, /, *, axis=-1)``: both ``axis`` sizes must be 3 (a ``ValueError`` otherwise),
  then ``numpy.cross(..., axis=axis)``: the other axes broadcast, the 3 stays at ``axis``;
- ``outer(x1, x2, /)``: both 1-d (``ValueError`` otherwise), ``(n, m)``;
- ``diagonal(x, /, *, offset=0)`` / ``trace(x, /, *, offset=0, dtype=None)``: the last two axes;
- ``matrix_norm(x, /, *, keepdims=False, ord="fro")``: ``norm(x, axis=(-2, -1))``;
- ``vector_norm(x, /, *, axis=None, keepdims=False, ord=2)``: the ``axis`` axes (None: all) reduced;
- ``tensordot`` / ``matmul`` / ``matrix_transpose``: their ``numpy`` counterparts.

Norms taking a minimum over a reduced axis (``ord=-inf`` of a vector; ``-1``, ``-2``, ``-inf``
of a matrix) raise numpy's "zero-size array to reduction operation minimum" on an empty axis,
so those axes must stay nonempty (a guard); the others are defined on empty input.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..records import sympy
from .ctx import is_static
from .elementwise import shape_of
from .linalg import _cross_rule, _matmul_rule, _matrix_transpose_rule, _tensordot_rule, _vecdot_rule
from .misc import _diagonal_rule, _trace_rule
from .reduce import norm_axes, reduced_shape
from .registry import register_op


def _at_least(ndim_needed: int, shape: tuple, name: str) -> None:
    if len(shape) < ndim_needed:
        raise ValueError(f"{name}: the input must have at least {ndim_needed} dimensions, it has {len(shape)}")


def _nonempty(ctx: Any, sizes: Any, why: str) -> None:
    for d in sizes:
        if not is_static(d):
            ctx.require(sympy.Ge(d, 1), why)


def _is(value: Any, target: float) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and float(value) == target


def _vecdot(ctx: Any, x1: Any, x2: Any, /, *, axis: Any = -1) -> tuple:
    return _vecdot_rule(ctx, x1, x2, axis=axis)


def _cross(ctx: Any, x1: Any, x2: Any, /, *, axis: Any = -1) -> tuple:
    for x in (x1, x2):
        s = tuple(shape_of(x))
        if not s:
            raise ValueError("numpy.linalg.cross: both inputs need at least one dimension (the vectors' axis)")
        ctx.eq(s[int(axis) % len(s)], 3, "numpy.linalg.cross: both inputs must be (arrays of) 3-dimensional "
                                         "vectors along `axis`")
    return _cross_rule(ctx, x1, x2, axis=axis)


def _outer(ctx: Any, x1: Any, x2: Any, /) -> tuple:
    s1, s2 = tuple(shape_of(x1)), tuple(shape_of(x2))
    if len(s1) != 1 or len(s2) != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={len(s1)} and "
                         f"x2.ndim={len(s2)}.")
    return (s1[0], s2[0])


def _diagonal(ctx: Any, x: Any, /, *, offset: Any = 0) -> tuple:
    _at_least(2, tuple(shape_of(x)), "numpy.linalg.diagonal")
    return _diagonal_rule(ctx, x, offset, -2, -1)


def _trace(ctx: Any, x: Any, /, *, offset: Any = 0, dtype: Any = None) -> tuple:
    _at_least(2, tuple(shape_of(x)), "numpy.linalg.trace")
    return _trace_rule(ctx, x, offset, -2, -1)


def _matrix_norm(ctx: Any, x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> tuple:  # noqa: A002
    shape = tuple(shape_of(x))
    _at_least(2, shape, "numpy.linalg.matrix_norm")
    rows, cols = shape[-2], shape[-1]
    # numpy's norm: ord=-1 is a min over the column sums, -inf over the row sums, -2 over the singular values
    empty_min = {-1.0: (cols,), -2.0: (rows, cols), float("-inf"): (rows,)}
    for target, sizes in empty_min.items():
        if _is(ord, target):
            _nonempty(ctx, sizes, f"numpy.linalg.matrix_norm(ord={ord}) takes a minimum over the matrix's "
                                  "axes, which numpy refuses on an empty one")
    return reduced_shape(shape, (-2, -1), bool(keepdims))


def _vector_norm(ctx: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> tuple:  # noqa: A002
    shape = tuple(shape_of(x))
    if _is(ord, float("-inf")):
        _nonempty(ctx, [shape[i] for i in norm_axes(axis, len(shape))],
                  "numpy.linalg.vector_norm(ord=-inf) is a minimum over the reduced axes, which numpy "
                  "refuses on an empty one")
    return reduced_shape(shape, axis, bool(keepdims))


def _tensordot(ctx: Any, x1: Any, x2: Any, /, *, axes: Any = 2) -> tuple:
    return _tensordot_rule(ctx, x1, x2, axes)


def _matmul(ctx: Any, x1: Any, x2: Any, /) -> tuple:
    return _matmul_rule(ctx, x1, x2)


def _matrix_transpose(ctx: Any, x: Any, /) -> tuple:
    return _matrix_transpose_rule(ctx, x)


_RULES = {"vecdot": _vecdot, "cross": _cross, "outer": _outer, "diagonal": _diagonal, "trace": _trace,
          "matrix_norm": _matrix_norm, "vector_norm": _vector_norm, "tensordot": _tensordot,
          "matmul": _matmul, "matrix_transpose": _matrix_transpose}

for _name, _rule in _RULES.items():
    _fn = getattr(np.linalg, _name, None)
    if _fn is not None:  # numpy >= 2.0
        register_op(f"numpy.linalg.{_name}", _fn, _rule, numpy_funcs=(_fn,),
                    lazy="same" if _name == "matrix_transpose" else "")


# -- multi_dot, cond, matrix_rank (numpy/linalg/_linalg.py) -------------------------------------------------
def _multi_dot_rule(ctx: Any, arrays: Any, *, out: Any = None) -> tuple:
    """numpy.linalg.multi_dot: a chain of 2-d matrices, the first and last may be 1-d (a row / a
    column vector, dropped from the result); neighbours' inner sizes equal.  numpy picks the
    multiplication order from the sizes at run time; the program runs numpy's function, so its
    values are eager numpy's at every size."""
    shapes = [tuple(shape_of(a)) for a in arrays]
    if len(shapes) < 2:
        raise ValueError("Expecting at least two arrays.")
    first, last = shapes[0], shapes[-1]
    mats = [(1,) + first if len(first) == 1 else first, *shapes[1:-1], last + (1,) if len(last) == 1 else last]
    for s in mats:
        if len(s) != 2:
            raise np.linalg.LinAlgError(f"{len(s)}-dimensional array given. Array must be two-dimensional")
    for i, (p, q) in enumerate(zip(mats, mats[1:])):
        ctx.eq(p[1], q[0], f"numpy.linalg.multi_dot: array {i} has {ctx.text(p[1])} columns and array {i + 1} "
                           f"{ctx.text(q[0])} rows")
    return (() if len(first) == 1 else (first[0],)) + (() if len(last) == 1 else (last[-1],))


def _cond_rule(ctx: Any, x: Any, p: Any = None) -> tuple:
    """numpy.linalg.cond: one number per matrix; ``p`` other than None/2/-2 inverts, so square."""
    shape = tuple(shape_of(x))
    _at_least(2, shape, "numpy.linalg.cond")
    if p not in (None, 2, -2):
        ctx.eq(shape[-2], shape[-1], "numpy.linalg.cond: the matrices must be square for this p")
    return shape[:-2]


def _matrix_rank_rule(ctx: Any, A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> tuple:  # noqa: N803
    """numpy.linalg.matrix_rank: one count per matrix, in ``[0, min(m, n)]`` (a 0-d 0/1 below 2-d)."""
    shape = tuple(shape_of(A))
    if len(shape) < 2:
        ctx.vrange(0, 1)
        return ()
    ctx.vrange(0, sympy.Min(shape[-2], shape[-1]))
    return shape[:-2]


for _fn, _rule in ((np.linalg.multi_dot, _multi_dot_rule), (np.linalg.cond, _cond_rule),
                   (np.linalg.matrix_rank, _matrix_rank_rule)):
    register_op(f"numpy.linalg.{_fn.__name__}", _fn, _rule, numpy_funcs=(_fn,))
