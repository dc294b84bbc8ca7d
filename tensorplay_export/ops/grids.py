"""Grids and products of shapes: ``np.meshgrid`` (xy and ij, dense and sparse), ``np.kron``,
``np.unravel_index``, ``np.broadcast_arrays``.

None needs a guard beyond broadcasting: ``meshgrid`` flattens each input (its
length is the product of its sizes) and ``kron``'s sizes are products.
``unravel_index`` outputs have value range ``[0, d_i - 1]`` for a shape
``(d_0, d_1, ...)`` and require known-range indices to stay below the product.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import as_dim, prod
from .creation import norm_shape
from .elementwise import shape_of
from .scatter import require_in_range
from .registry import ArrayInfo, register_op
from ..errors import UnsupportedOpError
from ..records import sympy


def meshgrid_shapes(sizes: list, sparse: bool, indexing: str) -> list:
    """Output shapes of ``meshgrid`` over inputs of ``sizes`` elements each."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    full = list(sizes)
    if indexing == "xy" and len(full) > 1:
        full[0], full[1] = full[1], full[0]
    if not sparse:
        return [tuple(full)] * len(sizes)
    out = []
    for i in range(len(sizes)):
        pos = i
        if indexing == "xy" and len(sizes) > 1 and i < 2:
            pos = 1 - i
        out.append(tuple(full[pos] if j == pos else 1 for j in range(len(sizes))))
    return out


def _meshgrid_rule(ctx: Any, *xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    return meshgrid_shapes([prod(shape_of(x)) for x in xi], bool(sparse), indexing)


def _meshgrid_impl(*xi: Any, **kwargs: Any) -> tuple:
    return tuple(np.meshgrid(*xi, **kwargs))


register_op("numpy.meshgrid", _meshgrid_impl, _meshgrid_rule, numpy_funcs=(np.meshgrid,), multi_output=True,
            doc="numpy.meshgrid: coordinate grids from 1-d coordinate vectors (a tuple, one per input)")


def _ix_rule(ctx: Any, *args: Any) -> list:
    """numpy.ix_: the k 1-d index sequences reshaped for an open mesh, the i-th to
    ``(1, ..., len_i, ..., 1)`` (k axes).  A boolean mask stands for its ``nonzero`` indices, a
    count only the data knows: refused (pass ``np.nonzero(mask)[0]``)."""
    out = []
    for i, seq in enumerate(args):
        shape = shape_of(seq)
        if len(shape) != 1:
            raise ValueError("Cross index must be 1 dimensional")
        dtype = seq.dtype if isinstance(seq, ArrayInfo) else np.asarray(seq).dtype
        if dtype.kind == "b":
            raise UnsupportedOpError("np.ix_ of a boolean mask: its length is the number of True values, "
                                      "which only the data knows; pass np.nonzero(mask)[0]")
        out.append((1,) * i + (shape[0],) + (1,) * (len(args) - i - 1))
    return out


def _ix_impl(*args: Any) -> tuple:
    return tuple(np.ix_(*args))


register_op("numpy.ix_", _ix_impl, _ix_rule, numpy_funcs=(np.ix_,), multi_output=True,
            doc="numpy.ix_: an open mesh of 1-d index sequences (a tuple, one per input)")


def _kron_rule(ctx: Any, a: Any, b: Any) -> tuple:
    sa, sb = shape_of(a), shape_of(b)
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + tuple(sa)
    sb = (1,) * (nd - len(sb)) + tuple(sb)
    return tuple(as_dim(sympy.sympify(x * y)) if not (isinstance(x, int) and isinstance(y, int)) else x * y
                 for x, y in zip(sa, sb))


register_op("numpy.kron", np.kron, _kron_rule, numpy_funcs=(np.kron,),
            doc="numpy.kron: Kronecker product (sizes multiply axis by axis, shorter shape padded with 1s)")


def _unravel_rule(ctx: Any, indices: Any, shape: Any, order: str = "C") -> list:
    dims = norm_shape(shape, ctx, "unravel_index shape")
    require_in_range(ctx, indices, prod(dims), "numpy.unravel_index", negative_ok=False)
    ishape = tuple(shape_of(indices))
    for i, d in enumerate(dims):
        ctx.vrange(0, sympy.sympify(d) - 1, out=i)
    return [ishape] * len(dims)


def _unravel_impl(indices: Any, shape: Any, order: str = "C") -> tuple:
    return tuple(np.unravel_index(indices, shape, order=order))


register_op("numpy.unravel_index", _unravel_impl, _unravel_rule, numpy_funcs=(np.unravel_index,),
            multi_output=True, doc="numpy.unravel_index: flat indices -> one coordinate array per axis")


def _broadcast_arrays_rule(ctx: Any, *args: Any, subok: bool = False) -> list:
    shape = ctx.broadcast(*(shape_of(a) for a in args))
    return [shape] * len(args)


def _broadcast_arrays_impl(*args: Any, **kwargs: Any) -> tuple:
    return tuple(np.broadcast_arrays(*args, **kwargs))


register_op("numpy.broadcast_arrays", _broadcast_arrays_impl, _broadcast_arrays_rule,
            numpy_funcs=(np.broadcast_arrays,), multi_output=True,
            doc="numpy.broadcast_arrays: every input broadcast to the common shape (a tuple)")
