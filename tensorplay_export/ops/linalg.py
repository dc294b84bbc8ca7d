"""Contractions: matmul / ``@``, dot, einsum (string and interleaved sublist forms), tensordot,
inner, outer, vdot, vecdot, cross, matrix_transpose.

The contracted sizes must be equal (``ctx.eq``: for ``x @ W`` with a dynamic
inner dim ``k`` and 16 rows in ``W`` that is ``Eq(k, 16)``); batch axes
broadcast through the shared helper.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import prod
from .elementwise import shape_of
from ..errors import UnsupportedOpError
from .registry import register_op


def matmul_shape(ctx: Any, a: tuple, b: tuple) -> tuple:
    if not a or not b:
        raise ValueError("matmul: input operand does not have enough dimensions")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    ctx.eq(a2[-1], b2[-2], f"matmul: inner sizes {ctx.text(a2[-1])} and {ctx.text(b2[-2])} must match")
    batch = ctx.broadcast(a2[:-2], b2[:-2])
    out = tuple(batch)
    if len(a) > 1:
        out += (a2[-2],)
    if len(b) > 1:
        out += (b2[-1],)
    return out


def _matmul_rule(ctx: Any, x1: Any, x2: Any, *args: Any, **kwargs: Any) -> tuple:
    return matmul_shape(ctx, shape_of(x1), shape_of(x2))


register_op("numpy.matmul", np.matmul, _matmul_rule, numpy_funcs=(np.matmul,))


def _dot_rule(ctx: Any, a: Any, b: Any, out: Any = None) -> tuple:
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        return ctx.broadcast(sa, sb) if sa or sb else ()
    if len(sa) <= 2 and len(sb) <= 2:
        return matmul_shape(ctx, sa, sb)
    k_b = sb[-2] if len(sb) > 1 else sb[0]
    ctx.eq(sa[-1], k_b, f"dot: contracted sizes {ctx.text(sa[-1])} and {ctx.text(k_b)} must match")
    return tuple(sa[:-1]) + tuple(sb[:-2]) + (tuple(sb[-1:]) if len(sb) > 1 else ())


register_op("numpy.dot", np.dot, _dot_rule, numpy_funcs=(np.dot,), methods=("dot",))


def _inner_rule(ctx: Any, a: Any, b: Any) -> tuple:
    sa, sb = shape_of(a), shape_of(b)
    if sa and sb:
        ctx.eq(sa[-1], sb[-1], "inner: last sizes must match")
    return tuple(sa[:-1]) + tuple(sb[:-1])


def _outer_rule(ctx: Any, a: Any, b: Any, out: Any = None) -> tuple:
    return (prod(shape_of(a)), prod(shape_of(b)))


register_op("numpy.inner", np.inner, _inner_rule, numpy_funcs=(np.inner,))
register_op("numpy.outer", np.outer, _outer_rule, numpy_funcs=(np.outer,))


def _tensordot_rule(ctx: Any, a: Any, b: Any, axes: Any = 2) -> tuple:
    sa, sb = shape_of(a), shape_of(b)
    if isinstance(axes, int):
        ax_a = list(range(len(sa) - axes, len(sa)))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [int(x) % len(sa) for x in (ax_a if isinstance(ax_a, (list, tuple)) else [ax_a])]
        ax_b = [int(x) % len(sb) for x in (ax_b if isinstance(ax_b, (list, tuple)) else [ax_b])]
    for i, j in zip(ax_a, ax_b):
        ctx.eq(sa[i], sb[j], f"tensordot: contracted sizes {ctx.text(sa[i])} and {ctx.text(sb[j])} must match")
    return tuple(d for i, d in enumerate(sa) if i not in ax_a) + \
        tuple(d for j, d in enumerate(sb) if j not in ax_b)


register_op("numpy.tensordot", np.tensordot, _tensordot_rule, numpy_funcs=(np.tensordot,))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist_text(sub: Any) -> str:
    """One sublist of einsum's interleaved form as subscripts: ints 0..51 are letters, ``...`` stays."""
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= int(s) < len(_LETTERS):
            out.append(_LETTERS[int(s)])
        else:
            raise ValueError(f"einsum: subscript {s!r} in a sublist must be an int in [0, 52) or Ellipsis")
    return "".join(out)


def _interleaved(args: tuple) -> tuple:
    """``einsum(op0, sub0, op1, sub1, ..., [sub_out])`` -> (subscripts text, operands), numpy's own
    reading of the interleaved form (``numpy/_core/einsumfunc.py``)."""
    pairs, rest = args[:len(args) - len(args) % 2], args[len(args) - len(args) % 2:]
    operands = pairs[0::2]
    for sub in pairs[1::2]:
        if not isinstance(sub, (list, tuple)):
            raise ValueError(f"einsum: expected a sublist (list of ints) after each operand, got {sub!r}")
    text = ",".join(_sublist_text(sub) for sub in pairs[1::2])
    if rest:
        text += "->" + _sublist_text(rest[0])
    return text, operands


def _einsum_rule(ctx: Any, subscripts: Any, *operands: Any, out: Any = None, **kwargs: Any) -> tuple:
    if not isinstance(subscripts, str):  # the interleaved (operand, sublist, ...) form
        subscripts, operands = _interleaved((subscripts, *operands))
    spec = subscripts.replace(" ", "")
    inputs, _, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum: number of subscripts and operands differ")
    sizes: dict = {}
    ell_shapes = []
    for term, op in zip(terms, operands):
        shape = shape_of(op)
        if "..." in term:
            left, right = term.split("...")
            n_ell = len(shape) - len(left) - len(right)
            ell_shapes.append(tuple(shape[len(left):len(left) + n_ell]))
            letters = list(left) + [None] * n_ell + list(right)
        else:
            letters = list(term)
        if len(letters) != len(shape):
            raise ValueError(f"einsum: operand of rank {len(shape)} for subscripts {term!r}")
        for letter, d in zip(letters, shape):
            if letter is None:
                continue
            if letter in sizes:
                prev = sizes[letter]
                if prev == 1:
                    sizes[letter] = d
                elif d != 1:
                    ctx.eq(prev, d, f"einsum: sizes of index {letter!r} must match")
            else:
                sizes[letter] = d
    ell = ctx.broadcast(*ell_shapes) if ell_shapes else ()
    if not _:
        # implicit output: letters appearing once, sorted
        counts: dict = {}
        for term in terms:
            for c in term.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        output = ("..." if ell_shapes else "") + "".join(sorted(c for c, k in counts.items() if k == 1))
    result: list = []
    if "..." in output:
        left, right = output.split("...")
        result = [sizes[c] for c in left] + list(ell) + [sizes[c] for c in right]
    else:
        result = [sizes[c] for c in output]
    return tuple(result)


def _einsum_impl(subscripts: Any, *operands: Any, **kwargs: Any) -> Any:
    return np.einsum(subscripts, *operands, **kwargs)


register_op("numpy.einsum", _einsum_impl, _einsum_rule, numpy_funcs=(np.einsum,))


# -- vdot / vecdot / cross / matrix_transpose -------------------------------------------------------
def _vdot_rule(ctx: Any, a: Any, b: Any) -> tuple:
    """numpy.vdot: both flattened, of one length (numpy: "vectors have different lengths"); a scalar."""
    na, nb = prod(shape_of(a)), prod(shape_of(b))
    ctx.eq(na, nb, f"numpy.vdot: the flattened lengths {ctx.text(na)} and {ctx.text(nb)} must be equal")
    return ()


register_op("numpy.vdot", np.vdot, _vdot_rule, numpy_funcs=(np.vdot,))


def _core_axis(shape: tuple, axis: Any, name: str) -> int:
    a = int(axis)
    if not -len(shape) <= a < len(shape):
        raise np.exceptions.AxisError(f"{name}: axis {a} is out of bounds for array of dimension {len(shape)}")
    return a % len(shape)


_UFUNC_TYPING = frozenset({"dtype", "casting", "order", "subok", "signature"})  # no effect on the shape


def _vecdot_rule(ctx: Any, x1: Any, x2: Any, /, *, axis: Any = -1, out: Any = None, keepdims: bool = False,
                 **kwargs: Any) -> tuple:
    """numpy.vecdot (a gufunc ``(n),(n)->()``): the ``axis`` of both has one size ``n``; the other
    axes broadcast (``keepdims``: the reduced axis kept as 1 at ``axis`` of the result)."""
    if set(kwargs) - _UFUNC_TYPING:
        raise UnsupportedOpError(f"numpy.vecdot with {sorted(set(kwargs) - _UFUNC_TYPING)} is not supported "
                                 "during capture (use axis=)")
    s1, s2 = tuple(shape_of(x1)), tuple(shape_of(x2))
    if not s1 or not s2:
        raise ValueError("vecdot: both operands need at least one dimension")
    a1, a2 = _core_axis(s1, axis, "vecdot"), _core_axis(s2, axis, "vecdot")
    ctx.eq(s1[a1], s2[a2], f"numpy.vecdot: the vector sizes {ctx.text(s1[a1])} and {ctx.text(s2[a2])} must match")
    shape = ctx.broadcast(s1[:a1] + s1[a1 + 1:], s2[:a2] + s2[a2 + 1:])
    if not keepdims:
        return shape
    pos = int(axis) % (len(shape) + 1)
    return shape[:pos] + (1,) + shape[pos:]


if hasattr(np, "vecdot"):  # numpy >= 2.0
    register_op("numpy.vecdot", np.vecdot, _vecdot_rule, numpy_funcs=(np.vecdot,))


def _matrix_transpose_rule(ctx: Any, x: Any, /) -> tuple:
    shape = tuple(shape_of(x))
    if len(shape) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {len(shape)}")
    return shape[:-2] + (shape[-1], shape[-2])


if hasattr(np, "matrix_transpose"):  # numpy >= 2.0
    register_op("numpy.matrix_transpose", np.matrix_transpose, _matrix_transpose_rule,
                numpy_funcs=(np.matrix_transpose,), lazy="same")


def _cross_rule(ctx: Any, a: Any, b: Any, axisa: Any = -1, axisb: Any = -1, axisc: Any = -1,
                axis: Any = None) -> tuple:
    """numpy.cross (``numpy/_core/numeric.py``): vectors of 2 or 3 components along ``axisa`` /
    ``axisb``; the other axes broadcast; a 3-component result puts its axis at ``axisc``, two
    2-component operands give the z component alone.  The component count decides the output's
    rank, so a symbolic one is pinned to the example's (numpy accepts only 2 or 3)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    if not sa or not sb:
        raise ValueError("cross: both operands need at least one dimension (the vectors' axis)")
    ia, ib = _core_axis(sa, axisa, "cross"), _core_axis(sb, axisb, "cross")
    ka, kb = sa[ia], sb[ib]
    for k in (ka, kb):
        ctx.pin(k, "numpy.cross: the number of vector components (2 or 3) fixes the result's shape")
    ka, kb = int(ctx.hint(ka)), int(ctx.hint(kb))
    if ka not in (2, 3) or kb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    shape = ctx.broadcast(sa[:ia] + sa[ia + 1:], sb[:ib] + sb[ib + 1:])
    if ka == 2 and kb == 2:
        return shape
    full = shape + (3,)
    ic = _core_axis(full, axisc, "cross")
    out = list(shape)
    out.insert(ic, 3)
    return tuple(out)


register_op("numpy.cross", np.cross, _cross_rule, numpy_funcs=(np.cross,))
