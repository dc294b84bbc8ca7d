"""nn.functional: layer operations as plain functions over numpy calls.

Every function is written with numpy operations a tracer can follow (``np.exp``,
``np.matmul``, ``np.einsum``, ``np.take``, ``reshape``, ...): no Python loops over
data, no ``int()``/``float()`` of sizes, no strided tricks. Sizes read from
``x.shape`` are used as they are, so during capture they stay symbolic.

dtypes follow numpy 2 (NEP 50) promotion with care: constants are Python floats
(weak), so a float32 input gives a float32 output. Where more precision is needed
inside (``erf``), the work is done in float64 and cast back to the input dtype.

Convolution and pooling live in ``_conv.py`` and are re-exported here.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from tensorplay_export.nn._conv import avg_pool2d, conv1d, conv2d, max_pool2d
from tensorplay_export.nn._dispatch import composite, registry_op
from tensorplay_export.ops import random as _random

__all__ = [
    "linear", "relu", "gelu", "erf", "erfc", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
    "layer_norm", "rms_norm", "normalize", "batch_stats", "batch_norm_apply", "embedding", "dropout", "dropout_with_state", "generator_state",
    "random_uniform", "random_normal", "scaled_dot_product_attention",
    "conv1d", "conv2d", "batch_norm", "max_pool2d", "avg_pool2d", "pad", "one_hot", "cross_entropy",
]

_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

# erfcx(z) = exp(z*z) * erfc(z) for z >= 0 as a degree-14 polynomial in
# t = (z - 3) / (z + 3), which maps [0, inf) onto [-1, 1). The change of variable is the
# one used by Schonfelder, "Chebyshev expansions for the error and related functions",
# Math. Comp. 32 (1978). The numbers were computed for this module: Chebyshev
# interpolation at 80 nodes against mpmath's erfc at 40 digits, truncated to 15 terms
# (the first dropped term is 1.1e-11) and converted to the power basis (well conditioned
# here: no coefficient exceeds 0.33). Measured on [0, 10]: absolute error of erfc < 1e-11,
# relative error < 3e-10 (tests/nn/test_functional.py). Horner form: 2 ops per term.
_ERFCX_POLY = (
    0.17900115118463006, -0.32623356021379507, 0.24560380129251605, -0.1501159300585579,
    0.07166584615962049, -0.024392569876456213, 0.004269063035979719, 0.0007080890733412377,
    -0.0005967648149395954, 4.439292580567525e-05, 6.339167948257565e-05, -1.1676130934405533e-05,
    -7.126603599213882e-06, 1.2542912266598644e-06, 6.380692688931303e-07,
)


def _erfc_nonneg(z):
    """erfc(z) for float64 ``z >= 0``: exp(-z^2) times the polynomial above (Horner)."""
    t = (z - 3.0) / (z + 3.0)
    acc = t * _ERFCX_POLY[-1] + _ERFCX_POLY[-2]
    for c in _ERFCX_POLY[-3::-1]:
        acc = acc * t + c
    return np.exp(-(z * z)) * acc


@composite("tpe.nn.erfc")
def erfc(x):
    """Complementary error function, elementwise; float inputs keep their dtype.

    Args:
        x: float array, any shape.
    Returns:
        ``1 - erf(x)``, same shape and dtype; absolute error < 1e-11 before the cast.
    """
    x = _as_array(x)
    z = x.astype(np.float64)
    e = _erfc_nonneg(np.abs(z))
    out = np.where(z >= 0, e, 2.0 - e)
    return out.astype(_float_dtype(x))


@composite("tpe.nn.erf")
def erf(x):
    """Error function, elementwise, from the erfc expansion above (numpy has no erf).

    Source: a Chebyshev series of erfcx in t = (z - 3) / (z + 3) after Schonfelder (1978),
    coefficients fitted for this module against mpmath (see ``_ERFCX_POLY``); evaluated in
    float64 with np.exp/np.abs/np.where only, so capture records plain numpy ops.

    Args:
        x: float array, any shape.
    Returns:
        same shape and dtype; absolute error < 1e-11 before the cast to the input dtype.
    """
    x = _as_array(x)
    z = x.astype(np.float64)
    e = _erfc_nonneg(np.abs(z))
    out = np.where(z >= 0, 1.0 - e, e - 1.0)
    return out.astype(_float_dtype(x))


# registry name -> the composite's out-variant (OpDef.out_impl, read by nn._composites), what an
# exported program runs: the same operations in the same order and dtypes as the composite, so the
# same bits, but each pass after the first written into the array the previous one made (the
# composite, written as functional numpy calls so that tracing it gives its decomposition, allocates
# a new array per pass), and the first one into ``out`` when generated code has a dead buffer for the
# result (``out=None``: a new array).  Where in-place passes could change a dtype, a broadcast shape
# or the memory order a reduction reads, a variant runs the composite instead.  An eager call never
# gets here: composites never write into their inputs.
OUT_VARIANTS: dict = {}


def _out_variant(name: str):
    def wrap(fn):
        OUT_VARIANTS[name] = fn
        return fn
    return wrap


def _in_place_ok(x, out, *operands) -> bool:
    """Whether passes over ``x``'s shape may write into one array: x is float, no operand widens or
    promotes the result beyond ``x``'s shape and dtype, and ``out`` is None (the first pass allocates,
    in the composite's memory order), ``x`` itself, or C-ordered as ``x`` is (the memory order the
    composite's results would have: a later sum's order follows the layout it reads)."""
    if x.dtype.kind != "f":
        return False
    present = [o for o in operands if o is not None]
    if present and (np.result_type(x, *present) != x.dtype
                    or np.broadcast_shapes(x.shape, *[np.shape(o) for o in present]) != x.shape):
        return False
    if out is None:
        return True
    if out.shape != x.shape or out.dtype != x.dtype:
        return False
    return out is x or (x.flags.c_contiguous and out.flags.c_contiguous)


def _as_array(x):
    # Python data becomes an array; arrays (and traced arrays) pass through untouched.
    return np.asarray(x) if isinstance(x, (int, float, list, tuple)) else x


def _float_dtype(x):
    return x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)


# ---------------------------------------------------------------- activations
@composite("tpe.nn.linear")
def linear(x, weight, bias=None):
    """``x @ weight.T + bias``.

    Args:
        x: (*, in_features). weight: (out_features, in_features). bias: (out_features,) or None.
    Returns:
        (*, out_features).
    """
    y = np.matmul(x, weight.T)
    return y if bias is None else y + bias


@_out_variant("tpe.nn.linear")
def _linear_out(x, weight, bias=None, *, out):
    """`linear` into ``out``; a new array where BLAS could not write there as it writes a new one
    (``out`` strided, or not of the product's shape and dtype: a bias that widens or promotes it)."""
    if (out is None or not out.flags.c_contiguous or weight.ndim != 2
            or out.shape != tuple(x.shape[:-1]) + (weight.shape[0],)
            or np.result_type(x, weight) != out.dtype
            or (bias is not None and np.result_type(out, bias) != out.dtype)):
        y = np.matmul(x, weight.T)
        return y if bias is None else y + bias
    y = np.matmul(x, weight.T, out=out)  # out may be x itself: numpy buffers an overlapping operand
    return y if bias is None else np.add(y, bias, out=y)


@composite("tpe.nn.relu")
def relu(x):
    """max(x, 0) elementwise; same shape and dtype."""
    return np.maximum(x, 0)


@_out_variant("tpe.nn.relu")
def _relu_out(x, *, out):
    if out is not None and not _in_place_ok(x, out):
        return relu.__wrapped__(x)
    return np.maximum(x, 0, out=out)


@composite("tpe.nn.gelu")
def gelu(x, approximate: str = "none"):
    """Gaussian error linear unit; same shape and dtype.

    ``approximate="none"``: ``x * Phi(x) = 0.5 * x * erfc(-x / sqrt(2))`` (exact, via `erfc`).
    ``approximate="tanh"``: ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``.

    Raises:
        ValueError: unknown ``approximate``.
    """
    if approximate == "none":
        x64 = x.astype(np.float64)
        e = _erfc_nonneg(np.abs(x64) * _SQRT_HALF)
        cdf2 = np.where(x64 <= 0, e, 2.0 - e)  # 2 * Phi(x) = erfc(-x / sqrt(2))
        return (0.5 * x64 * cdf2).astype(x.dtype)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


@_out_variant("tpe.nn.gelu")
def _gelu_out(x, approximate: str = "none", *, out):
    """`gelu` into ``out`` (or the first pass's array) and one scratch array (tanh; the exact form:
    three float64 ones) where the composite allocates a new array per pass."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if not _in_place_ok(x, out):
        return gelu.__wrapped__(x, approximate)
    if approximate == "none":
        if out is None:
            out = np.empty_like(x)  # astype's layout
        if x.flags.c_contiguous and out.flags.c_contiguous:
            # block by block (each element's operations are its own): the float64 scratch stays in cache
            xf, of = x.reshape(-1), out.reshape(-1)
            size = min(_GELU_BLOCK, xf.size)
            scratch = [np.empty(size) for _ in range(4)]
            for start in range(0, xf.size, _GELU_BLOCK):
                stop = min(start + _GELU_BLOCK, xf.size)
                _gelu_exact_into(xf[start:stop], of[start:stop], [b[:stop - start] for b in scratch])
            return out
        return _gelu_exact_into(x, out, [np.empty(x.shape) for _ in range(4)])
    t = np.multiply(x, x)  # tanh
    np.multiply(t, x, out=t)
    np.multiply(0.044715, t, out=t)
    np.add(x, t, out=t)
    np.multiply(_SQRT_2_OVER_PI, t, out=t)
    np.tanh(t, out=t)
    np.add(1.0, t, out=t)
    half = np.multiply(0.5, x, out=out)  # x is read for the last time above
    return np.multiply(half, t, out=half)


# Elements per block of the exact gelu's float64 passes: four float64 scratch blocks (512 KB) stay in
# the core's cache across the ~35 passes.  A multiple of 64, so every element keeps its SIMD lane.
_GELU_BLOCK = 16384


def _gelu_exact_into(x, out, scratch):
    """The exact `gelu` of ``x`` into ``out`` (same shape; may be ``x``), with four float64 arrays of
    x's shape as scratch: the composite's operations in its order, x read before out is written."""
    x64 = x
    if x.dtype != np.float64:
        x64 = scratch[3]
        np.copyto(x64, x)  # astype's widening (exact)
    z = np.abs(x64, out=scratch[0])
    np.multiply(z, _SQRT_HALF, out=z)
    e, cdf2 = _erfc_nonneg_into(z, scratch[1], scratch[2])
    np.subtract(2.0, e, out=cdf2)
    np.copyto(cdf2, e, where=x64 <= 0)  # cdf2 = where(x64 <= 0, e, 2.0 - e)
    half = np.multiply(0.5, x64, out=e)
    # the float64 product cast to x's dtype as astype casts it
    return np.multiply(half, cdf2, out=out, casting="unsafe")


def _erfc_nonneg_into(z, t, acc):
    """`_erfc_nonneg` of float64 ``z`` (overwritten with the result), ``t`` and ``acc`` float64 scratch
    of z's shape: ``(erfc(z), t)``, ``t`` free again."""
    np.subtract(z, 3.0, out=t)
    np.add(z, 3.0, out=acc)
    np.divide(t, acc, out=t)
    np.multiply(t, _ERFCX_POLY[-1], out=acc)
    np.add(acc, _ERFCX_POLY[-2], out=acc)
    for c in _ERFCX_POLY[-3::-1]:
        np.multiply(acc, t, out=acc)
        np.add(acc, c, out=acc)
    np.multiply(z, z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    np.multiply(z, acc, out=z)
    return z, t


@composite("tpe.nn.sigmoid")
def sigmoid(x):
    """1 / (1 + exp(-x)), computed as 0.5 * (1 + tanh(x / 2)) so it never overflows."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@composite("tpe.nn.silu")
def silu(x):
    """x * sigmoid(x); same shape and dtype."""
    return x * sigmoid(x)


@_out_variant("tpe.nn.sigmoid")
def _sigmoid_out(x, *, out):
    if out is not None and not _in_place_ok(x, out):
        return sigmoid.__wrapped__(x)
    y = np.multiply(0.5, x, out=out)
    np.tanh(y, out=y)
    np.add(1.0, y, out=y)
    return np.multiply(0.5, y, out=y)


@composite("tpe.nn.tanh")
def tanh(x):
    """Hyperbolic tangent; same shape and dtype."""
    return np.tanh(x)


@_out_variant("tpe.nn.tanh")
def _tanh_out(x, *, out):
    if out is not None and not _in_place_ok(x, out):
        return tanh.__wrapped__(x)
    return np.tanh(x, out=out)


@composite("tpe.nn.softmax")
def softmax(x, dim: int = -1):
    """exp(x) / sum(exp(x)) along ``dim`` (max-shifted for stability); same shape and dtype."""
    shifted = x - np.max(x, axis=dim, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=dim, keepdims=True)


@_out_variant("tpe.nn.softmax")
def _softmax_out(x, dim: int = -1, *, out):
    """`softmax` with every pass written into ``out`` (or into the array the first pass makes)."""
    if not _in_place_ok(x, out):
        return softmax.__wrapped__(x, dim)
    out = np.subtract(x, np.max(x, axis=dim, keepdims=True), out=out)
    np.exp(out, out=out)
    return np.divide(out, np.sum(out, axis=dim, keepdims=True), out=out)


@composite("tpe.nn.log_softmax")
def log_softmax(x, dim: int = -1):
    """log(softmax(x)) along ``dim``, computed without forming softmax; same shape and dtype."""
    shifted = x - np.max(x, axis=dim, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))


# -------------------------------------------------------------- normalization
def _trailing_axes(normalized_shape) -> tuple[int, ...]:
    if isinstance(normalized_shape, (int, np.integer)):  # np.int64(4) is 4, as torch reads it
        normalized_shape = (normalized_shape,)
    return tuple(range(-len(normalized_shape), 0))


@composite("tpe.nn.layer_norm")
def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalize over the trailing ``normalized_shape`` axes, then scale and shift.

    Args:
        x: (*, *normalized_shape). weight, bias: normalized_shape or None. eps: added to the variance.
    Returns:
        same shape and dtype as ``x``.
    """
    axes = _trailing_axes(normalized_shape)
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=axes, keepdims=True)
    y = centered / np.sqrt(var + float(eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@_out_variant("tpe.nn.layer_norm")
def _layer_norm_out(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5, *, out):
    """`layer_norm` with its passes over x's shape written into ``out`` (or the first pass's array)
    and one scratch array for the squares."""
    if not _in_place_ok(x, out, weight, bias):
        return layer_norm.__wrapped__(x, normalized_shape, weight, bias, eps)
    axes = _trailing_axes(normalized_shape)
    centered = np.subtract(x, np.mean(x, axis=axes, keepdims=True), out=out)
    var = np.mean(np.multiply(centered, centered), axis=axes, keepdims=True)
    y = np.divide(centered, np.sqrt(var + float(eps)), out=centered)
    if weight is not None:
        np.multiply(y, weight, out=y)
    if bias is not None:
        np.add(y, bias, out=y)
    return y


@composite("tpe.nn.rms_norm")
def rms_norm(x, normalized_shape, weight=None, eps: float | None = None):
    """x / sqrt(mean(x^2) + eps) over the trailing axes, times ``weight``.

    ``eps=None`` uses the machine epsilon of ``x.dtype`` (as torch does).
    """
    axes = _trailing_axes(normalized_shape)
    if eps is None:
        eps = float(np.finfo(x.dtype).eps)
    y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + float(eps))
    return y if weight is None else y * weight


@composite("tpe.nn.normalize")
def normalize(x, p: float = 2.0, dim: int = -1, eps: float = 1e-12):
    """x / max(||x||_p, eps) along ``dim``; same shape and dtype."""
    if p == 2:
        norm = np.sqrt(np.sum(x * x, axis=dim, keepdims=True))
    else:
        norm = np.sum(np.abs(x) ** float(p), axis=dim, keepdims=True) ** (1.0 / p)
    return x / np.maximum(norm, float(eps))


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """Batch normalization over every axis but axis 1 (channels).

    In training mode the batch statistics normalize ``x`` and, when given, the running
    statistics are updated in place (``new = (1 - momentum) * old + momentum * batch``, with
    the unbiased batch variance), as torch does. In eval mode the running statistics normalize.

    Args:
        x: (N, C) or (N, C, *spatial). running_mean, running_var: (C,) or None (training only).
        weight, bias: (C,) or None.
    Returns:
        same shape and dtype as ``x``.
    """
    if training:
        mean, var, var_unbiased = batch_stats(x)
        if running_mean is not None:
            running_mean[...] = (1.0 - momentum) * running_mean + momentum * mean
        if running_var is not None:
            running_var[...] = (1.0 - momentum) * running_var + momentum * var_unbiased
    else:
        mean, var = running_mean, running_var
    return batch_norm_apply(x, mean, var, weight, bias, eps)


@composite("tpe.nn.batch_norm")
def batch_norm_apply(x, mean, var, weight=None, bias=None, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (axis 1); all stats (C,)."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + float(eps))
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


@composite("tpe.nn.batch_stats")
def batch_stats(x):
    """(mean, biased var, unbiased var) per channel of ``x`` (N, C, *spatial); each (C,).

    Raises:
        ValueError: at most one value per channel (N * prod(spatial) <= 1): the unbiased
            variance divides by zero (an empty batch has no mean either) and would put NaN
            into a running variance; torch refuses one value the same way ("Expected more
            than 1 value per channel when training").  An exported program states
            ``N * prod(spatial) >= 2`` in its contract (``tpe.nn.batch_stats``'s shape rule).
    """
    per_channel = x.shape[0]
    for size in x.shape[2:]:
        per_channel = per_channel * size
    if per_channel <= 1:
        raise ValueError(f"batch statistics need more than 1 value per channel, got an input of shape "
                         f"{tuple(x.shape)} (N * spatial = {per_channel}): use a batch of at least 2, "
                         f"or eval mode with running statistics")
    axes = (0,) + tuple(range(2, x.ndim))
    mean = np.mean(x, axis=axes)
    var = np.var(x, axis=axes)
    var_unbiased = np.var(x, axis=axes, ddof=1)
    return mean, var, var_unbiased


# ------------------------------------------------------------------- lookups
@composite("tpe.nn.embedding")
def embedding(ids, weight, padding_idx: int | None = None):
    """Rows of ``weight`` selected by integer ``ids``.

    Args:
        ids: integer array (*). weight: (num_embeddings, dim).
        padding_idx: accepted for torch parity (it only matters for gradients).
    Returns:
        (*, dim), dtype of ``weight``.
    Raises:
        IndexError: an id is outside ``[-num_embeddings, num_embeddings)``.
    """
    return np.take(weight, ids, axis=0)


@composite("tpe.nn.one_hot")
def one_hot(x, num_classes: int = -1):
    """int64 one-hot encoding: (*) -> (*, num_classes).

    ``num_classes=-1`` uses ``x.max() + 1``, which depends on the data (a capture
    specializes it); pass the number of classes explicitly when exporting.
    """
    if num_classes < 0:
        num_classes = int(np.max(x)) + 1
    return (x[..., None] == np.arange(num_classes)).astype(np.int64)


def dropout(x, p: float = 0.5, training: bool = True, rng: np.random.Generator | None = None):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``; identity when not training.

    ``rng`` (a ``np.random.Generator``, None for fresh entropy) is advanced in place, out of a
    capture's sight: a model that calls this in training mode cannot be exported.  For
    dropout that exports use `nn.Dropout`, or `dropout_with_state` with a generator-state
    buffer of your module.

    Raises:
        ValueError: ``p`` outside [0, 1].
    """
    _check_p(p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    rng = np.random.default_rng() if rng is None else rng
    return _apply_mask(x, rng.random(x.shape), p)


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply_mask(x, u, p: float):
    """Keep where ``u >= p`` (``u`` uniform in [0, 1)), scaled by ``1/(1-p)``; zero elsewhere."""
    return np.where(u >= p, x * (1.0 / (1.0 - p)), 0.0).astype(x.dtype)


generator_state = _random.generator_state

@registry_op("tpe.random.uniform")
def random_uniform(state, shape, dtype=np.float64):
    """Floats in [0, 1) of ``shape`` drawn from the generator-state array ``state``: ``(values, next_state)``.

    ``state`` (uint64, shape (6,), from `generator_state`) is not changed; store ``next_state``
    back where it came from (a buffer: ``u, self.state = F.random_uniform(self.state, x.shape)``)
    and the draw exports as the op ``tpe.random.uniform`` with a buffer mutation.  Equal to
    ``np.random.default_rng(seed).random(shape, dtype)`` for ``state = generator_state(seed)``.

    Raises:
        ValueError: ``state`` is not a generator state; ``dtype`` not float32/float64.
    """
    return _random.uniform(state, shape, dtype)


@registry_op("tpe.random.normal")
def random_normal(state, shape, dtype=np.float64):
    """Standard normal floats of ``shape`` drawn from ``state``: ``(values, next_state)``.

    As `random_uniform` (op ``tpe.random.normal``); equal to
    ``np.random.default_rng(seed).standard_normal(shape, dtype)`` for ``state = generator_state(seed)``.
    """
    return _random.normal(state, shape, dtype)


def dropout_with_state(x, state, p: float = 0.5, training: bool = True):
    """Dropout whose mask is drawn from the generator-state array ``state``: ``(y, next_state)``.

    ``y`` as `dropout` computes it from one ``random_uniform(state, x.shape)`` draw (float64);
    not training, ``p == 0`` or ``p == 1`` draw nothing and return ``state`` itself.  Store
    ``next_state`` back into the buffer ``state`` came from (`nn.Dropout` does), so each call
    draws a new mask and an exported program draws the same masks as eager from the same state.

    Raises:
        ValueError: ``p`` outside [0, 1]; ``state`` not a generator state.
    """
    _check_p(p)
    if not training or p == 0.0:
        return x, state
    if p == 1.0:
        return x * 0.0, state
    u, state = random_uniform(state, x.shape)
    return _apply_mask(x, u, p), state


# ----------------------------------------------------------------- attention
@composite("tpe.nn.scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 rng: np.random.Generator | None = None):
    """softmax(q @ k^T * scale + mask) @ v.

    Args:
        query: (*, L, E). key: (*, S, E). value: (*, S, Ev); leading axes broadcast.
        attn_mask: None, a bool mask (True = may attend) or an additive float mask,
            broadcastable to (*, L, S).
        dropout_p: dropout on the attention weights (applied when > 0).
        is_causal: query i attends to keys j <= i (top-left aligned, as torch);
            combined with ``attn_mask`` when both are given.
        scale: defaults to ``E ** -0.5``.
    Returns:
        (*, L, Ev), dtype of ``query``.
    """
    if scale is None:
        scale = query.shape[-1] ** -0.5  # a Python float (or a symbolic one during capture)
    scores = np.matmul(query, np.swapaxes(key, -1, -2)) * scale
    if is_causal:
        rows = np.arange(query.shape[-2])
        cols = np.arange(key.shape[-2])
        scores = np.where(rows[:, None] >= cols[None, :], scores, -np.inf)
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            scores = np.where(attn_mask, scores, -np.inf)
        else:
            scores = scores + attn_mask.astype(scores.dtype)
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True, rng=rng)
    return np.matmul(weights, value)


@_out_variant("tpe.nn.scaled_dot_product_attention")
def _sdpa_out(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
              scale: float | None = None, rng: np.random.Generator | None = None, *, out):
    """`scaled_dot_product_attention` with the masks and the softmax written into its own scores
    array, and the product into ``out`` (the query's buffer: read by the first matmul only)."""
    if scale is None:
        scale = query.shape[-1] ** -0.5
    scores = np.matmul(query, np.swapaxes(key, -1, -2)) * scale
    if is_causal:
        rows = np.arange(query.shape[-2])
        cols = np.arange(key.shape[-2])
        scores = _masked_fill(scores, rows[:, None] < cols[None, :])
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            scores = _masked_fill(scores, np.logical_not(attn_mask))
        elif np.broadcast_shapes(scores.shape, attn_mask.shape) == scores.shape:
            np.add(scores, attn_mask.astype(scores.dtype), out=scores)
        else:
            scores = scores + attn_mask.astype(scores.dtype)
    weights = _softmax_out(scores, -1, out=scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True, rng=rng)
    shape = np.broadcast_shapes(weights.shape[:-2], value.shape[:-2]) + (weights.shape[-2], value.shape[-1])
    if (out is None or not out.flags.c_contiguous or out.shape != shape
            or np.result_type(weights, value) != out.dtype):
        return np.matmul(weights, value)  # BLAS writes a C-ordered result; a strided out may take another loop
    return np.matmul(weights, value, out=out)


def _masked_fill(scores, blocked):
    """``np.where(~blocked, scores, -inf)``, written into ``scores`` when the mask does not widen it."""
    if np.broadcast_shapes(scores.shape, blocked.shape) != scores.shape:
        return np.where(np.logical_not(blocked), scores, -np.inf)
    np.copyto(scores, -np.inf, where=blocked)
    return scores


# ------------------------------------------------------------------- padding
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@composite("tpe.nn.pad")
def pad(x, pad: Sequence[int], mode: str = "constant", value: float = 0.0):
    """Pad trailing axes, torch order: ``(left_last, right_last, left_2nd_last, right_2nd_last, ...)``.

    Args:
        mode: "constant" (with ``value``), "reflect", "replicate" or "circular".
    Raises:
        ValueError: odd-length ``pad``, more pairs than axes, or an unknown mode.
    """
    if len(pad) % 2:
        raise ValueError(f"pad: padding length must be even, got {len(pad)}")
    pairs = len(pad) // 2
    if pairs > x.ndim:
        raise ValueError(f"pad: {pairs} padded axes for an array with {x.ndim} axes")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: unknown mode {mode!r} (expected one of {sorted(_PAD_MODES)})")
    widths = [(0, 0)] * (x.ndim - pairs)
    widths += [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(pairs))]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    return np.pad(x, widths, mode=_PAD_MODES[mode])


# -------------------------------------------------------------------- losses
@composite("tpe.nn.cross_entropy")
def cross_entropy(input, target, weight=None, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0):
    """Cross entropy between logits and class indices or class probabilities.

    Args:
        input: logits (C,), (N, C) or (N, C, *d).
        target: class indices (), (N,) or (N, *d) (integers), or probabilities with the
            shape of ``input`` (floats).
        weight: per-class weights (C,) or None.
        ignore_index: index targets equal to it contribute nothing (indices only).
        reduction: "mean" (weighted mean over non-ignored targets), "sum" or "none".
        label_smoothing: mixes the target with the uniform distribution.
    Returns:
        a 0-d array, or per-element losses for ``reduction="none"``.
    Raises:
        ValueError: unknown ``reduction``.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: unknown reduction {reduction!r}")
    if input.ndim == 1:  # unbatched: add the batch axis
        out = cross_entropy(input[None], target[None], weight, ignore_index, reduction, label_smoothing)
        return out[0] if reduction == "none" else out
    num_classes = input.shape[1]
    logp = np.moveaxis(log_softmax(input, dim=1), 1, -1)  # (N, *d, C)
    w = 1.0 if weight is None else weight
    eps = float(label_smoothing)
    if np.issubdtype(target.dtype, np.floating):
        probs = np.moveaxis(target, 1, -1)
        if eps:
            probs = probs * (1.0 - eps) + eps / num_classes
        loss = -np.sum(logp * probs * w, axis=-1)
        if reduction == "mean":
            return np.mean(loss)  # over N * prod(d), as torch
        return np.sum(loss) if reduction == "sum" else loss
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    picked = np.take_along_axis(logp, safe[..., None], axis=-1)[..., 0]
    w_t = valid.astype(logp.dtype) if weight is None else np.take(weight, safe) * valid
    loss = -picked * w_t
    if eps:
        smooth = -np.sum(logp * w, axis=-1) * valid.astype(logp.dtype)
        loss = loss * (1.0 - eps) + smooth * (eps / num_classes)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss)
    return np.sum(loss) / np.sum(w_t)


# ------------------------------------------------ resizing, transposed conv, group norm
# Plain numpy functions (no composite): each step already has a shape rule.
from tensorplay_export.nn._conv_transpose import conv_transpose1d, conv_transpose2d  # noqa: E402
from tensorplay_export.nn._norms import group_norm  # noqa: E402
from tensorplay_export.nn._resize import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,  # noqa: E402
                                          adaptive_max_pool2d, interpolate)

__all__ += ["interpolate", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
            "adaptive_max_pool2d", "conv_transpose1d", "conv_transpose2d", "group_norm"]
