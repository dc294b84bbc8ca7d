"""Contractions: matmul / ``@``, dot, einsum, tensordot, inner, outer.

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
    ctx.eq(a2[-1], b2[-2], f"matmul: inner sizes {a2[-1]} and {b2[-2]} must match")
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
    ctx.eq(sa[-1], k_b, f"dot: contracted sizes {sa[-1]} and {k_b} must match")
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
        ctx.eq(sa[i], sb[j], f"tensordot: contracted sizes {sa[i]} and {sb[j]} must match")
    return tuple(d for i, d in enumerate(sa) if i not in ax_a) + \
        tuple(d for j, d in enumerate(sb) if j not in ax_b)


register_op("numpy.tensordot", np.tensordot, _tensordot_rule, numpy_funcs=(np.tensordot,))


def _einsum_rule(ctx: Any, subscripts: Any, *operands: Any, out: Any = None, **kwargs: Any) -> tuple:
    if not isinstance(subscripts, str):
        raise UnsupportedOpError("numpy.einsum in the interleaved (operand, sublist) form is not supported")
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
