"""Shape rules of the ``nn.functional`` composites, and their registration in the op registry.

Each ``tpe.nn.<name>`` op has as impl the plain numpy function (``COMPOSITES[name]``),
the same function as decomposition (traced, it yields primitive numpy ops), and a pure
shape rule here: symbolic shapes (`ArrayInfo`) in, output shape out, with every
requirement stated through the ``ctx`` (``ctx.eq``, ``ctx.require``, ``ctx.bounds``,
``ctx.choose``, ``ctx.broadcast``). Rules mirror their function's signature.

Importing this module registers the ops (idempotent). `tensorplay_export.nn` does not
import it, so eager use of nn never loads the op layer; the op registry's family loader
imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorplay_export.nn import functional as F  # noqa: F401  (defines every composite)
from tensorplay_export.nn._conv import ceil_mode_size
from tensorplay_export.nn._dispatch import COMPOSITES
from tensorplay_export.ops.ctx import as_dim, is_static
from tensorplay_export.ops.movement import require_pad_extendable
from tensorplay_export.ops.registry import ArrayInfo, register_op
from tensorplay_export.records import sympy

__all__ = ["RULES", "register"]


def _shape(a: Any) -> tuple:
    return tuple(a.shape) if isinstance(a, ArrayInfo) else ()


def _axis(axis: int, ndim: int, op: str) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"{op}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim if ndim else 0


def _dim(expr: Any) -> Any:
    return as_dim(sympy.sympify(expr)) if not isinstance(expr, int) else expr


def _pair(v: Any) -> tuple:
    return (v[0], v[1]) if isinstance(v, (tuple, list)) else (v, v)


# ------------------------------------------------------------------ elementwise
def _same_shape(ctx, x, *args, **kwargs):
    return _shape(x)


def _require_nonempty(ctx, op, size, what):
    """The body reduces with np.max over this axis, which numpy refuses when it is empty.

    A data-dependent size (``x[x > 0]``) is left alone: export would refuse it with a
    DataDependentError, while the composite program raises numpy's ValueError on an empty
    selection and its decomposition turns the same requirement into a runtime check
    (tests/test_decomp.py); the input contract is unaffected either way.
    """
    if not is_static(size) and not ctx.data_dependent(size):
        ctx.require(sympy.Ge(size, 1), f"{op}: {what} (size {ctx.text(size)}) must be nonempty (np.max over it)")


def _softmax_rule(ctx, x, dim=-1):
    xs = _shape(x)
    axis = _axis(dim, len(xs), "softmax")
    if xs:
        _require_nonempty(ctx, "softmax", xs[axis], f"axis {dim}")
    return xs


def _normalize_rule(ctx, x, p=2.0, dim=-1, eps=1e-12):
    _axis(dim, len(_shape(x)), "normalize")
    return _shape(x)


def _linear_rule(ctx, x, weight, bias=None):
    xs, ws = _shape(x), _shape(weight)
    ctx.eq(xs[-1], ws[-1], f"linear: input features {ctx.text(xs[-1])} must equal weight's in_features "
                           f"{ctx.text(ws[-1])}")
    out = tuple(xs[:-1]) + (tuple(ws[:1]) if len(ws) == 2 else ())
    return ctx.broadcast(out, _shape(bias)) if bias is not None else out


def _norm_affine(ctx, op, x, normalized_shape, params):
    xs = _shape(x)
    ns = (normalized_shape,) if not isinstance(normalized_shape, (tuple, list)) else tuple(normalized_shape)
    if len(ns) > len(xs):
        raise ValueError(f"{op}: normalized_shape {ns} has more axes than the input {xs}")
    for size, want in zip(xs[len(xs) - len(ns):], ns):
        ctx.eq(size, want, f"{op}: trailing input size {ctx.text(size)} must equal normalized_shape's {ctx.text(want)}")
    shapes = [_shape(p) for p in params if p is not None]
    return ctx.broadcast(xs, *shapes) if shapes else xs


def _layer_norm_rule(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _norm_affine(ctx, "layer_norm", x, normalized_shape, (weight, bias))


def _rms_norm_rule(ctx, x, normalized_shape, weight=None, eps=None):
    return _norm_affine(ctx, "rms_norm", x, normalized_shape, (weight,))


def _batch_norm_rule(ctx, x, mean, var, weight=None, bias=None, eps=1e-5):
    xs = _shape(x)
    if len(xs) < 2:
        raise ValueError(f"batch_norm: expected an input of at least 2 axes (N, C, ...), got {xs}")
    for name, stat in (("mean", mean), ("var", var), ("weight", weight), ("bias", bias)):
        if stat is not None:
            ss = _shape(stat)
            if len(ss) != 1:
                raise ValueError(f"batch_norm: {name} must be 1-D (C,), got {ss}")
            ctx.eq(ss[0], xs[1], f"batch_norm: {name} size {ctx.text(ss[0])} must equal the channels {ctx.text(xs[1])}")
    return xs


def _batch_stats_rule(ctx, x):
    xs = _shape(x)
    if len(xs) < 2:
        raise ValueError(f"batch_stats: expected an input of at least 2 axes (N, C, ...), got {xs}")
    per_channel = sympy.Mul(*[sympy.sympify(d) for d in (xs[0], *xs[2:])])
    # the unbiased variance divides by (count - 1), and an empty batch has no mean: eager
    # (functional.batch_stats) refuses both rather than write NaN into running statistics
    ctx.require(sympy.Ge(per_channel, 2),
                lambda: f"batch_stats: batch statistics need more than 1 value per channel "
                        f"(N * spatial = {ctx.text(per_channel)} must be at least 2)")
    return [(xs[1],), (xs[1],), (xs[1],)]


# ---------------------------------------------------------------------- lookups
def _embedding_rule(ctx, ids, weight, padding_idx=None):
    ws = _shape(weight)
    n = ws[0]
    vr = ids.vrange if isinstance(ids, ArrayInfo) else None
    if vr is not None and not (is_static(vr[0]) and is_static(vr[1]) and is_static(n)):
        lo, hi = vr
        ctx.bounds(sympy.Le(hi, sympy.sympify(n) - 1), f"embedding: ids up to {ctx.text(hi)} index a table of "
                                                       f"{ctx.text(n)} rows")
        ctx.bounds(sympy.Ge(lo, -sympy.sympify(n)), f"embedding: ids down to {ctx.text(lo)} index a table of "
                                                    f"{ctx.text(n)} rows")
    return _shape(ids) + tuple(ws[1:])


def _one_hot_rule(ctx, x, num_classes=-1):
    if is_static(num_classes) and int(num_classes) < 0:
        raise ValueError("one_hot: num_classes=-1 depends on the data (x.max() + 1); "
                         "pass num_classes explicitly to export")
    return _shape(x) + (_dim(num_classes),)


# -------------------------------------------------------------------- attention
def _sdpa_rule(ctx, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, rng=None):
    qs, ks, vs = _shape(query), _shape(key), _shape(value)
    ctx.eq(qs[-1], ks[-1], f"scaled_dot_product_attention: query and key head sizes {ctx.text(qs[-1])}, "
                           f"{ctx.text(ks[-1])} differ")
    ctx.eq(ks[-2], vs[-2], f"scaled_dot_product_attention: key and value lengths {ctx.text(ks[-2])}, "
                           f"{ctx.text(vs[-2])} differ")
    scores = tuple(ctx.broadcast(qs[:-2], ks[:-2])) + (qs[-2], ks[-2])
    _require_nonempty(ctx, "scaled_dot_product_attention", ks[-2], "the key length")
    if attn_mask is not None:
        scores = ctx.broadcast(scores, _shape(attn_mask))
    return tuple(ctx.broadcast(scores[:-2], vs[:-2])) + (scores[-2], vs[-1])


# ---------------------------------------------------------------------- padding
def _pad_rule(ctx, x, pad, mode="constant", value=0.0):
    xs = list(_shape(x))
    if len(pad) % 2 or len(pad) // 2 > len(xs):
        raise ValueError(f"pad: bad padding {tuple(pad)} for an array with {len(xs)} axes")
    pairs = [(0, 0)] * len(xs)
    for i in range(len(pad) // 2):
        pairs[len(xs) - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    require_pad_extendable(ctx, "pad", mode, tuple(xs), pairs)  # replicate/circular/reflect read the axis
    for i in range(len(pad) // 2):
        axis = len(xs) - 1 - i
        xs[axis] = _dim(xs[axis] + pad[2 * i] + pad[2 * i + 1])
    return tuple(xs)


# ------------------------------------------------------------------------ losses
def _cross_entropy_rule(ctx, input, target, weight=None, ignore_index=-100, reduction="mean",
                        label_smoothing=0.0):
    ins, ts = _shape(input), _shape(target)
    batch = () if len(ins) == 1 else (ins[:1] + ins[2:])
    want = ins if np.issubdtype(target.dtype, np.floating) else batch
    if len(ts) != len(want):
        raise ValueError(f"cross_entropy: target shape {ts} does not fit input shape {ins}")
    for t, w in zip(ts, want):
        ctx.eq(t, w, f"cross_entropy: target size {ctx.text(t)} must equal {ctx.text(w)}")
    _require_nonempty(ctx, "cross_entropy", ins[0 if len(ins) == 1 else 1], "the class axis")
    if weight is not None:
        ctx.eq(_shape(weight)[0], ins[0 if len(ins) == 1 else 1], "cross_entropy: one weight per class")
    return batch if reduction == "none" else ()


# ----------------------------------------------------------------- conv and pool
def _window_out(ctx, op, size, k, s, pad_total, d):
    """floor((size + pad_total - d*(k-1) - 1) / s) + 1, requiring at least one window."""
    need = d * (k - 1) + 1
    if not (is_static(size) and is_static(pad_total)):
        ctx.require(sympy.Ge(size + pad_total, need),
                    f"{op}: input size {ctx.text(size)} (+{ctx.text(pad_total)} padding) is smaller than the "
                    f"window {ctx.text(need)}")
    return _dim((size + pad_total - need) // s + 1)


def _conv_pads(op, padding, kernel, dilation, stride):
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * len(kernel)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
            return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(kernel, dilation)]
        raise ValueError(f"{op}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    return [(p, p) for p in padding]


def _conv_rule_nd(ctx, op, x, weight, bias, stride, padding, dilation, groups, nsp):
    xs, ws = _shape(x), _shape(weight)
    unbatched = len(xs) == nsp + 1
    if unbatched:
        xs = (1,) + xs
    c_out, cpg, kernel = ws[0], ws[1], ws[2:]
    ctx.eq(xs[1], cpg * groups, f"{op}: input channels {ctx.text(xs[1])} must equal {ctx.text(cpg)} * "
                                f"groups={ctx.text(groups)}")
    one = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * nsp  # noqa: E731
    stride, dilation = one(stride), one(dilation)
    pads = _conv_pads(op, padding if isinstance(padding, str) else one(padding), kernel, dilation, stride)
    spatial = tuple(_window_out(ctx, op, size, k, s, lo + hi, d)
                    for size, k, s, (lo, hi), d in zip(xs[2:], kernel, stride, pads, dilation))
    out = (xs[0], c_out) + spatial
    if bias is not None:
        ctx.eq(_shape(bias)[0], c_out, f"{op}: bias size must equal the output channels {ctx.text(c_out)}")
    return out[1:] if unbatched else out


def _conv2d_rule(ctx, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_rule_nd(ctx, "conv2d", x, weight, bias, stride, padding, dilation, groups, 2)


def _conv1d_rule(ctx, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_rule_nd(ctx, "conv1d", x, weight, bias, stride, padding, dilation, groups, 1)


def _pool_rule(ctx, op, x, kernel_size, stride, padding, dilation, ceil_mode):
    xs = _shape(x)
    unbatched = len(xs) == 3
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) else _pair(stride)
    pads, dil = _pair(padding), _pair(dilation)
    out = []
    for size, k, s, p, d in zip(xs[-2:], kernel, stride, pads, dil):
        if ceil_mode:
            # the body's own arithmetic (no branch on the size): the same expression; a partial
            # window counts, so an input smaller than the window still gives one output (torch's
            # rule), and only an empty output is refused
            n = ctx.canon(_dim(ceil_mode_size(sympy.sympify(size), k, s, p, d)[0]))
            if not is_static(n):
                ctx.require(sympy.Ge(n, 1), f"{op}: no window of {ctx.text(k)} (stride {ctx.text(s)}, "
                                            "ceil_mode) starts inside "
                                            f"input size {ctx.text(size)} (+{ctx.text(2 * p)} padding)")
        else:
            n = _window_out(ctx, op, size, k, s, 2 * p, d)
        out.append(n)
    return tuple(xs[:-2]) + tuple(out) if not unbatched else (xs[0],) + tuple(out)


def _max_pool2d_rule(ctx, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                     return_indices=False):
    if return_indices:
        raise ValueError("max_pool2d: return_indices=True is not supported")
    return _pool_rule(ctx, "max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode)


def _avg_pool2d_rule(ctx, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None):
    return _pool_rule(ctx, "avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode)


RULES = {
    "tpe.nn.erfc": _same_shape, "tpe.nn.erf": _same_shape, "tpe.nn.relu": _same_shape,
    "tpe.nn.gelu": _same_shape, "tpe.nn.sigmoid": _same_shape, "tpe.nn.silu": _same_shape,
    "tpe.nn.tanh": _same_shape, "tpe.nn.softmax": _softmax_rule, "tpe.nn.log_softmax": _softmax_rule,
    "tpe.nn.normalize": _normalize_rule, "tpe.nn.linear": _linear_rule, "tpe.nn.layer_norm": _layer_norm_rule,
    "tpe.nn.rms_norm": _rms_norm_rule, "tpe.nn.batch_norm": _batch_norm_rule,
    "tpe.nn.batch_stats": _batch_stats_rule, "tpe.nn.embedding": _embedding_rule,
    "tpe.nn.one_hot": _one_hot_rule, "tpe.nn.scaled_dot_product_attention": _sdpa_rule,
    "tpe.nn.pad": _pad_rule, "tpe.nn.cross_entropy": _cross_entropy_rule, "tpe.nn.conv2d": _conv2d_rule,
    "tpe.nn.conv1d": _conv1d_rule, "tpe.nn.max_pool2d": _max_pool2d_rule, "tpe.nn.avg_pool2d": _avg_pool2d_rule,
}

_MULTI_OUTPUT = {"tpe.nn.batch_stats"}


def register() -> None:
    """Register every composite (skipping names already registered)."""
    missing = set(COMPOSITES) ^ set(RULES)
    if missing:
        raise RuntimeError(f"nn composites without a rule or without a function: {sorted(missing)}")
    for name, fn in COMPOSITES.items():
        try:
            register_op(name, fn, RULES[name], decomposition=fn, numpy_funcs=(fn,),
                        multi_output=name in _MULTI_OUTPUT, doc=(fn.__doc__ or "").strip().split("\n")[0],
                        out_impl=F.OUT_VARIANTS.get(name))
        except ValueError:  # already registered (module imported twice under another name)
            pass


register()
