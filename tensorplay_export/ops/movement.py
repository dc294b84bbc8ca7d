"""Shape ops: reshape, transpose/swapaxes/moveaxis, expand_dims/squeeze, broadcast_to,
concatenate/stack/split, tile/repeat/pad/flip/roll/ravel, astype/copy.

Guards are minimal: ``reshape(-1, 4)`` emits ``Eq(Mod(n, 4), 0)``; a full
reshape emits the numel equality, which ``ctx.require`` canonicalizes
(``Eq(3*b*s, 6*b*floor(s/2))`` -> ``Eq(Mod(s, 2), 0)``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from .creation import require_nonneg
from .ctx import as_dim, is_static, prod
from .elementwise import same_shape, shape_of
from .reduce import norm_axes
from .registry import ArrayInfo, register_op
from ..errors import UnsupportedOpError
from ..records import sympy


# -- reshape ---------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def _quotient(numel: Any, known: Any) -> tuple:
    """(numerator, denominator) of numel / known in lowest terms.

    ``together`` matters: ``cancel((4*n - 4)/8)`` is ``n/2 - 1/2``, whose
    ``fraction`` is ``(n/2 - 1/2, 1)`` -- a "whole" quotient that would drop the
    divisibility guard.  Over one denominator it is ``(n - 1, 2)``.
    """
    num, den = sympy.fraction(sympy.together(sympy.cancel(sympy.sympify(numel) / sympy.sympify(known))))
    return num, den


def _per_factor_guards(src: Any, dst: Any) -> Any:
    """``[Eq(Mod(h, 4), 0), Eq(Mod(w, 4), 0)]`` for ``h*w == 16*floor(h/4)*floor(w/4)``, else None.

    A patchify reshape ``(h, w) -> (h//4, 4, w//4, 4)`` leaves a numel equality that
    multiplies independent sizes; the solver cannot turn it into fixes.  When every
    non-constant factor of ``dst`` is ``floor(e/k)`` of a distinct positive factor ``e``
    of ``src`` (all of ``src``'s factors used) and the constants agree, the equality
    holds exactly when each ``e`` is a multiple of its ``k``: each ``k*floor(e/k) <= e``
    with every ``e >= 1``, so the products are equal only if every pair is.
    """
    c_src, src_factors = sympy.sympify(src).as_coeff_mul()
    c_dst, dst_factors = sympy.sympify(dst).as_coeff_mul()
    if not (c_src.is_Integer and c_dst.is_Integer) or c_src <= 0 or c_dst <= 0:
        return None
    remaining = list(src_factors)
    guards, scale = [], sympy.Integer(1)
    for f in dst_factors:
        if not isinstance(f, sympy.floor):
            return None
        e, k = sympy.fraction(sympy.together(f.args[0]))
        if not k.is_Integer or k <= 1 or e not in remaining or not e.is_positive:
            return None
        remaining.remove(e)
        guards.append(sympy.Eq(sympy.Mod(e, k), 0))
        scale *= k
    if remaining or c_src * scale != c_dst:
        return None
    return guards


def _without_common_factors(src: Any, dst: Any) -> tuple:
    """``src`` and ``dst`` with the factors they share (structurally) divided out, unexpanded.

    ``_quotient`` cancels through ``sympy.cancel``, which expands: the numel of a padded
    ``(b, h + (-h) % 4, w + (-w) % 4, c)`` comes back as a sum, and the per-factor match is
    lost (z3 then has to decide a product of two mod-carrying sizes, and times out).
    """
    c_src, src_factors = sympy.sympify(src).as_coeff_mul()
    c_dst, dst_factors = sympy.sympify(dst).as_coeff_mul()
    remaining, rest = list(src_factors), []
    for f in dst_factors:
        if f in remaining:
            remaining.remove(f)
        else:
            rest.append(f)
    return sympy.Mul(c_src, *remaining), sympy.Mul(c_dst, *rest)


def reshape_rule_for(ctx: Any, shape: tuple, target: Any) -> tuple:
    if isinstance(target, (int, sympy.Basic)):
        target = (target,)
    target = list(target)
    numel = prod(shape)
    minus = [i for i, d in enumerate(target) if is_static(d) and int(d) == -1]
    if len(minus) > 1:
        raise ValueError("can only specify one unknown dimension")
    if minus:
        known = prod(d for i, d in enumerate(target) if i != minus[0])
        for d in target:  # numpy cannot infer -1 when the other sizes multiply to 0
            if not is_static(d):
                ctx.require(sympy.Ge(d, 1), lambda: f"reshape into ({', '.join(ctx.text(d) for d in target)}) infers -1",
                            "reshape")
        num, den = _quotient(numel, known)
        if den == 1:
            inferred = num
        else:
            ctx.require(sympy.Eq(sympy.Mod(num, den), 0), lambda: f"reshape of {ctx.text(numel)} elements into "
                        f"({', '.join(ctx.text(d) for d in target)})", "reshape")
            inferred = sympy.floor(num / den)
        target[minus[0]] = as_dim(sympy.sympify(inferred))
    else:
        require_nonneg(ctx, target, "reshape")
        total = prod(target)
        if not (is_static(numel) and is_static(total)):
            def what() -> str:  # printed only for a guard that does not fold (most reshapes print none)
                return f"reshape of {ctx.text(numel)} elements into ({', '.join(ctx.text(d) for d in target)})"

            split = _per_factor_guards(*_without_common_factors(numel, total))
            if split is None:
                num, den = _quotient(numel, total)
                split = [] if num == den else _per_factor_guards(num, den) or [sympy.Eq(num, den)]
            for guard in split:
                ctx.require(guard, what, "reshape")
    return tuple(as_dim(d) if isinstance(d, sympy.Basic) else int(d) for d in target)


def _reshape_rule(ctx: Any, a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
                  copy: Any = None) -> tuple:
    return reshape_rule_for(ctx, shape_of(a), shape if shape is not None else newshape)


def _reshape_method_rule(ctx: Any, a: Any, *shape: Any, order: str = "C", copy: Any = None) -> tuple:
    target = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return reshape_rule_for(ctx, shape_of(a), target)


def _reshape_method(a: Any, *shape: Any, **kwargs: Any) -> Any:
    return np.reshape(a, shape[0] if len(shape) == 1 else shape, **kwargs)


register_op("numpy.reshape", np.reshape, _reshape_rule, numpy_funcs=(np.reshape,))
register_op("numpy.ndarray.reshape", _reshape_method, _reshape_method_rule, methods=("reshape",))


def _ravel_rule(ctx: Any, a: Any, order: str = "C") -> tuple:
    return (prod(shape_of(a)),)


register_op("numpy.ravel", np.ravel, _ravel_rule, numpy_funcs=(np.ravel,), methods=("ravel",))
register_op("numpy.ndarray.flatten", lambda a, order="C": np.asarray(a).flatten(order), _ravel_rule,
            methods=("flatten",))


# -- axis permutations -------------------------------------------------------------------------
def _transpose_rule(ctx: Any, a: Any, axes: Any = None) -> tuple:
    shape = shape_of(a)
    if axes is None:
        return tuple(reversed(shape))
    axes = [int(x) % len(shape) for x in axes]
    return tuple(shape[i] for i in axes)


def _one_axes_argument(axes: tuple) -> bool:
    """``a.transpose(axes)`` with one argument holding every axis (None, a tuple, a list or a
    1-d int array, as ndarray.transpose takes them) rather than ``a.transpose(1, 0)``."""
    return len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))
                               or (isinstance(axes[0], np.ndarray) and axes[0].ndim == 1))


def _transpose_method(a: Any, *axes: Any) -> Any:
    if _one_axes_argument(axes):
        axes = axes[0]
    return np.transpose(a, None if axes is None or len(axes) == 0 else axes)


def _transpose_method_rule(ctx: Any, a: Any, *axes: Any) -> tuple:
    if _one_axes_argument(axes):
        axes = axes[0]
    return _transpose_rule(ctx, a, axes or None)


register_op("numpy.transpose", np.transpose, _transpose_rule, numpy_funcs=(np.transpose,))
register_op("numpy.ndarray.transpose", _transpose_method, _transpose_method_rule, methods=("transpose",))
register_op("numpy.permute_dims", np.permute_dims, _transpose_rule, numpy_funcs=(np.permute_dims,))


def _swapaxes_rule(ctx: Any, a: Any, axis1: int, axis2: int) -> tuple:
    shape = list(shape_of(a))
    i, j = int(axis1) % len(shape), int(axis2) % len(shape)
    shape[i], shape[j] = shape[j], shape[i]
    return tuple(shape)


register_op("numpy.swapaxes", np.swapaxes, _swapaxes_rule, numpy_funcs=(np.swapaxes,), methods=("swapaxes",))


def _moveaxis_rule(ctx: Any, a: Any, source: Any, destination: Any) -> tuple:
    shape = shape_of(a)
    n = len(shape)
    src = [int(s) % n for s in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [int(d) % n for d in (destination if isinstance(destination, (tuple, list)) else (destination,))]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return tuple(shape[i] for i in order)


register_op("numpy.moveaxis", np.moveaxis, _moveaxis_rule, numpy_funcs=(np.moveaxis,))


def _expand_dims_rule(ctx: Any, a: Any, axis: Any) -> tuple:
    shape = list(shape_of(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = len(shape) + len(axes)
    for ax in sorted(int(x) % n for x in axes):
        shape.insert(ax, 1)
    return tuple(shape)


register_op("numpy.expand_dims", np.expand_dims, _expand_dims_rule, numpy_funcs=(np.expand_dims,))


def _squeeze_rule(ctx: Any, a: Any, axis: Any = None) -> tuple:
    shape = shape_of(a)
    if axis is None:
        keep = []
        for d in shape:
            if is_static(d):
                if int(d) != 1:
                    keep.append(d)
            elif not ctx.choose(sympy.Eq(d, 1), f"squeeze drops axes of size 1 ({ctx.text(d)})"):
                keep.append(d)
        return tuple(keep)
    axes = norm_axes(axis, len(shape)) if shape else ()  # 0-d: numpy takes axis 0/-1, nothing to drop
    for i in axes:
        if not is_static(shape[i]):
            ctx.require(sympy.Eq(shape[i], 1), "squeeze of an axis needs size 1")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


register_op("numpy.squeeze", np.squeeze, _squeeze_rule, numpy_funcs=(np.squeeze,), methods=("squeeze",))


def _broadcast_to_rule(ctx: Any, array: Any, shape: Any, subok: bool = False) -> tuple:
    target = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    require_nonneg(ctx, target, "broadcast_to")
    src = shape_of(array)
    for i, d in enumerate(reversed(src)):
        t = target[len(target) - 1 - i]
        ctx.stretch(d, t, f"broadcast_to: size {ctx.text(d)} to {ctx.text(t)}", "broadcast_to: size "
                                                                                f"{ctx.text(d)} (size 1 in the "
                                                                                f"example) to {ctx.text(t)}")
    return tuple(as_dim(sympy.sympify(t)) if isinstance(t, sympy.Basic) else int(t) for t in target)


register_op("numpy.broadcast_to", np.broadcast_to, _broadcast_to_rule, numpy_funcs=(np.broadcast_to,))


def _sliding_window_view_rule(ctx: Any, x: Any, window_shape: Any, axis: Any = None, *, subok: bool = False,
                              writeable: bool = False) -> tuple:
    """numpy.lib.stride_tricks.sliding_window_view: each windowed axis of size ``d`` keeps
    ``d - w + 1`` positions, and the window sizes are appended as new trailing axes (numpy's
    docstring).  A window no larger than its axis is a requirement; ``writeable=True`` is
    refused: writes through the overlapping view would land in the argument."""
    if writeable:
        raise UnsupportedOpError("sliding_window_view(writeable=True) writes through overlapping windows "
                                  "into its argument; capture keeps the default read-only view")
    shape = list(shape_of(x))
    windows = tuple(window_shape) if isinstance(window_shape, (tuple, list)) else (window_shape,)
    if axis is None:
        if len(windows) != len(shape):
            raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; "
                             f"got {len(windows)} window_shape elements and `x.ndim` is {len(shape)}.")
        axes = tuple(range(len(shape)))
    else:  # in the order given, repeats allowed: each pairs with its window
        axes = []
        for a in (axis if isinstance(axis, (tuple, list)) else (axis,)):
            if not -len(shape) <= int(a) < len(shape):
                raise ValueError(f"axis {int(a)} is out of bounds for array of dimension {len(shape)}")
            axes.append(int(a) % len(shape))
        if len(windows) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got {len(windows)} "
                             f"window_shape elements and {len(axes)} axes elements.")
    require_nonneg(ctx, windows, "sliding_window_view")
    for ax, w in zip(axes, windows):
        d = shape[ax]
        if is_static(d) and not isinstance(w, sympy.Basic):
            if int(d) < int(w):
                raise ValueError("window shape cannot be larger than input array shape")
        else:
            ctx.require(sympy.Ge(d, w), f"sliding_window_view: a window of {ctx.text(w)} fits an axis of size "
                                        f"{ctx.text(d)}")
        left = sympy.sympify(d) - sympy.sympify(w) + 1
        shape[ax] = int(left) if left.is_Integer else as_dim(left)
    return tuple(shape) + tuple(int(w) if not isinstance(w, sympy.Basic) else as_dim(w) for w in windows)


register_op("numpy.lib.stride_tricks.sliding_window_view", np.lib.stride_tricks.sliding_window_view,
            _sliding_window_view_rule, numpy_funcs=(np.lib.stride_tricks.sliding_window_view,))


# -- joining and splitting -----------------------------------------------------------------------
def _concat_rule(ctx: Any, arrays: Any, axis: Any = 0, out: Any = None, **kwargs: Any) -> tuple:
    shapes = [shape_of(a) for a in arrays]
    if axis is None:
        return (sum((prod(s) for s in shapes), sympy.Integer(0)),)
    n = len(shapes[0])
    ax = int(axis) % n
    first = shapes[0]
    sites = [getattr(a, "sites", None) or (None,) * len(s) for a, s in zip(arrays, shapes)]
    for j, s in enumerate(shapes[1:], 1):
        for i in range(n):
            if i != ax:
                ctx.eq(first[i], s[i], lambda: f"concatenate: axis {i} sizes {ctx.sized(first[i], sites[0][i])} and "
                                               f"{ctx.sized(s[i], sites[j][i])} must match")
    total = sympy.Integer(0)
    for s in shapes:
        total = total + s[ax]
    return tuple(as_dim(total) if i == ax else first[i] for i in range(n))


register_op("numpy.concatenate", np.concatenate, _concat_rule, numpy_funcs=(np.concatenate, np.concat))


def _stack_rule(ctx: Any, arrays: Any, axis: int = 0, out: Any = None, **kwargs: Any) -> tuple:
    shapes = [shape_of(a) for a in arrays]
    first = shapes[0]
    for s in shapes[1:]:
        for i in range(len(first)):
            ctx.eq(first[i], s[i], "stack: all input shapes must match")
    out_shape = list(first)
    out_shape.insert(int(axis) % (len(first) + 1), len(shapes))
    return tuple(out_shape)


register_op("numpy.stack", np.stack, _stack_rule, numpy_funcs=(np.stack,))


def _hstack_rule(ctx: Any, tup: Any, **kwargs: Any) -> tuple:
    shapes = [shape_of(a) for a in tup]
    axis = 0 if len(shapes[0]) == 1 else 1
    return _concat_rule(ctx, [ArrayInfo(s, None) for s in shapes], axis)


def _vstack_rule(ctx: Any, tup: Any, **kwargs: Any) -> tuple:
    shapes = [shape_of(a) for a in tup]
    shapes = [(1, s[0]) if len(s) == 1 else s for s in shapes]
    return _concat_rule(ctx, [ArrayInfo(s, None) for s in shapes], 0)


register_op("numpy.hstack", np.hstack, _hstack_rule, numpy_funcs=(np.hstack,))
register_op("numpy.vstack", np.vstack, _vstack_rule, numpy_funcs=(np.vstack,))


def _split_sizes(ctx: Any, n: Any, sections: Any, equal: bool, axis: int = 0) -> list:
    if isinstance(sections, ArrayInfo):
        return _split_by_index_array(ctx, n, sections, axis)
    if isinstance(sections, (int, sympy.Basic)) and not isinstance(sections, bool):
        k = sections
        if equal:
            if not (is_static(n) and is_static(k)):
                ctx.require(sympy.Eq(sympy.Mod(n, k), 0), f"split of {ctx.text(n)} into {ctx.text(k)} equal parts")
            part = as_dim(sympy.floor(sympy.sympify(n) / k)) if not is_static(n) else int(n) // int(k)
            return [part] * int(k)
        return [as_dim(sympy.floor((sympy.sympify(n) - i + int(k) - 1) / int(k))) for i in range(int(k))]
    from .indexing import slice_length

    bounds = [None, *sections, None]
    return [slice_length(ctx, n, bounds[i], bounds[i + 1], None) for i in range(len(bounds) - 1)]


def _split_by_index_array(ctx: Any, n: Any, indices: ArrayInfo, axis: int) -> list:
    """Split points given as a traced int array (``np.split(x, np.cumsum(counts)[:-1])``, the MoE
    dispatch): ``k`` points make ``k + 1`` pieces, each of a data-dependent length in ``[0, n]`` (an
    unbacked size bound at run time from the piece numpy makes, as ``x[a:b]`` with ``a = c[0].item()``
    is).  The number of pieces is the program's structure: the array must be 1-d of a static length.

    Raises:
        UnsupportedOpError: the index array is not 1-d, or its length is a symbolic size.
        TypeError: it does not hold integers (numpy's slicing refuses other indices too).
    """
    shape = tuple(indices.shape)
    if len(shape) == 1 and ctx.data_dependent(shape[0]):
        raise UnsupportedOpError(
            f"numpy.split by an index array of data-dependent length {ctx.text(shape[0])} is not supported during "
            f"capture: the number of pieces is the program's structure. Give the split points a static length "
            f"(np.bincount(ids, minlength=E)[:E] when every id is below E, then np.cumsum(counts)[:-1])")
    if len(shape) != 1 or not is_static(shape[0]):
        raise UnsupportedOpError(
            f"numpy.split by an index array of shape {ctx.text(shape)} is not supported during capture: the number "
            f"of pieces is the program's structure, so the split points must be a 1-d array of a static length "
            f"(or Python ints)")
    if indices.dtype is not None and np.dtype(indices.dtype).kind not in "iu":
        raise TypeError(f"numpy.split: split points of dtype {np.dtype(indices.dtype)} are not integers")
    return [ctx.new_unbacked(n, out=j, axis=axis) for j in range(int(shape[0]) + 1)]


def _split_rule(equal: bool):
    def rule(ctx: Any, ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
        shape = shape_of(ary)
        ax = int(axis) % len(shape)
        sizes = _split_sizes(ctx, shape[ax], indices_or_sections, equal, ax)
        return [tuple(sz if i == ax else d for i, d in enumerate(shape)) for sz in sizes]
    return rule


def _split_impl(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """numpy.split: a list of the parts, as numpy returns (a model may return it as it is)."""
    return list(np.split(ary, indices_or_sections, axis))


def _array_split_impl(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return list(np.array_split(ary, indices_or_sections, axis))


register_op("numpy.split", _split_impl, _split_rule(True), numpy_funcs=(np.split,), multi_output=True)
register_op("numpy.array_split", _array_split_impl, _split_rule(False), numpy_funcs=(np.array_split,),
            multi_output=True)


def _unstack_rule(ctx: Any, x: Any, /, *, axis: int = 0) -> list:
    """numpy.unstack (numpy >= 2.1): one array per index of ``axis``, each without that axis.  The
    number of outputs is the program's structure, so a symbolic ``axis`` size is pinned."""
    shape = tuple(shape_of(x))
    if not shape:
        raise ValueError("Input array must be at least 1-d.")
    ax = norm_axes(axis, len(shape))[0]
    ctx.pin(shape[ax], "numpy.unstack: the number of arrays it returns is the size of the unstacked axis")
    rest = shape[:ax] + shape[ax + 1:]
    return [rest] * int(ctx.hint(shape[ax]))


def _unstack_impl(x: Any, /, *, axis: int = 0) -> tuple:
    return tuple(np.unstack(x, axis=axis))


if hasattr(np, "unstack"):
    register_op("numpy.unstack", _unstack_impl, _unstack_rule, numpy_funcs=(np.unstack,), multi_output=True)


# -- tile / repeat / pad / flip / roll ------------------------------------------------------------
def _tile_rule(ctx: Any, A: Any, reps: Any) -> tuple:
    shape = shape_of(A)
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + tuple(shape)
    reps = (1,) * (n - len(reps)) + reps
    require_nonneg(ctx, reps, "tile reps")
    return tuple(as_dim(sympy.sympify(d * r)) if not (is_static(d) and is_static(r)) else int(d) * int(r)
                 for d, r in zip(shape, reps))


register_op("numpy.tile", np.tile, _tile_rule, numpy_funcs=(np.tile,))


def _repeat_rule(ctx: Any, a: Any, repeats: Any, axis: Any = None) -> tuple:
    shape = shape_of(a) or (1,)  # numpy repeats a 0-d input as 1-d
    if isinstance(repeats, (list, tuple)) and len(repeats) == 1:
        repeats = repeats[0]
    if isinstance(repeats, (list, tuple)) and not any(isinstance(r, ArrayInfo) for r in repeats):
        # constant (or size-valued) per-element counts: the length is their sum
        require_nonneg(ctx, tuple(repeats), "repeat count")
        n = prod(shape) if axis is None else shape[int(axis) % len(shape)]
        ctx.eq(n, len(repeats), f"numpy.repeat: {len(repeats)} repeat counts for an axis of size {ctx.text(n)}")
        total = as_dim(sympy.sympify(sum(sympy.sympify(r) for r in repeats)))
        if axis is None:
            return (total,)
        ax = int(axis) % len(shape)
        return tuple(total if i == ax else d for i, d in enumerate(shape))
    if isinstance(repeats, ArrayInfo) or isinstance(repeats, (list, tuple)):
        # per-element repeat counts: the length depends on the data
        ax = 0 if axis is None else int(axis) % len(shape)
        counts = shape_of(repeats) if isinstance(repeats, ArrayInfo) else (len(repeats),)
        if len(counts) == 1:  # one count per element, or one for all (numpy broadcasts a single count)
            n = prod(shape) if axis is None else shape[ax]
            ctx.stretch(counts[0], n, f"numpy.repeat: {ctx.text(counts[0])} repeat counts for an axis of size "
                                      f"{ctx.text(n)}",
                        f"numpy.repeat: one repeat count (in the example) for an axis of size {ctx.text(n)}")
        sym = ctx.new_unbacked(None, 0, ax)  # its example value and run-time binding come from that axis
        if axis is None:
            return (sym,)
        return tuple(sym if i == ax else d for i, d in enumerate(shape))
    require_nonneg(ctx, (repeats,), "repeat count")
    if axis is None:
        return (as_dim(sympy.sympify(prod(shape) * repeats)),)
    ax = int(axis) % len(shape)
    return tuple(as_dim(sympy.sympify(d * repeats)) if i == ax else d for i, d in enumerate(shape))


register_op("numpy.repeat", np.repeat, _repeat_rule, numpy_funcs=(np.repeat,), methods=("repeat",))


def require_pad_extendable(ctx: Any, op: str, mode: Any, shape: tuple, pairs: list) -> None:
    """numpy.pad's rule for modes that read the array (edge, wrap, reflect, mean, ...): an
    empty axis cannot be extended, so an axis padded by a nonzero width must be nonempty
    (numpy raises "can't extend empty axis ... using modes other than 'constant' or 'empty'")."""
    if mode in ("constant", "empty") or callable(mode):
        return
    for axis, (d, (lo, hi)) in enumerate(zip(shape, pairs)):
        if is_static(d):
            continue
        padded = sympy.Or(sympy.Gt(lo, 0), sympy.Gt(hi, 0))
        if padded is sympy.false:
            continue
        cond = sympy.Ge(d, 1) if padded is sympy.true else sympy.Or(sympy.Ge(d, 1), sympy.Not(padded))
        ctx.require(cond, f"{op}: mode={mode!r} cannot extend axis {ctx.text(axis)} (size {ctx.text(d)}) when "
                          "it is empty")


def _pad_rule(ctx: Any, array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> tuple:
    shape = shape_of(array)
    n = len(shape)
    pw = pad_width
    if isinstance(pw, (int, sympy.Basic)):
        pairs = [(pw, pw)] * n
    else:
        pw = list(pw)
        if len(pw) and isinstance(pw[0], (int, sympy.Basic)):
            pairs = [tuple(pw) if len(pw) == 2 else (pw[0], pw[0])] * n
        elif len(pw) == 1:
            pairs = [tuple(pw[0]) if len(pw[0]) == 2 else (pw[0][0], pw[0][0])] * n
        else:
            pairs = [tuple(p) if len(p) == 2 else (p[0], p[0]) for p in pw]
    require_nonneg(ctx, [w for pair in pairs for w in pair], "pad width")
    require_pad_extendable(ctx, "numpy.pad", mode, shape, pairs)
    out = []
    for d, (lo, hi) in zip(shape, pairs):
        out.append(as_dim(sympy.sympify(d + lo + hi)) if not all(map(is_static, (d, lo, hi)))
                   else int(d) + int(lo) + int(hi))
    return tuple(out)


register_op("numpy.pad", np.pad, _pad_rule, numpy_funcs=(np.pad,))


register_op("numpy.flip", np.flip, same_shape, numpy_funcs=(np.flip,))
register_op("numpy.fliplr", np.fliplr, same_shape, numpy_funcs=(np.fliplr,))
register_op("numpy.flipud", np.flipud, same_shape, numpy_funcs=(np.flipud,))


register_op("numpy.roll", np.roll, same_shape, numpy_funcs=(np.roll,))


# -- dtype / copies ---------------------------------------------------------------------------------
def _astype(a: Any, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
            copy: bool = True) -> Any:
    return a.astype(dtype, order=order, casting=casting, copy=copy) if isinstance(a, np.ndarray) \
        else np.asarray(a).astype(dtype)[()]


register_op("numpy.ndarray.astype", _astype, same_shape, methods=("astype",))
register_op("numpy.astype", np.astype, same_shape, numpy_funcs=(np.astype,))
register_op("numpy.copy", np.copy, same_shape, numpy_funcs=(np.copy,), methods=("copy",))
register_op("numpy.ascontiguousarray", np.ascontiguousarray, same_shape, numpy_funcs=(np.ascontiguousarray,))
register_op("numpy.atleast_1d", np.atleast_1d,
            lambda ctx, a: shape_of(a) if len(shape_of(a)) >= 1 else (1,), numpy_funcs=(np.atleast_1d,))
