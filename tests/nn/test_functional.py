"""nn.functional against straightforward numpy / math references (loops on tiny sizes)."""

import itertools
import math

import mpmath
import numpy as np
import pytest

from tensorplay_export.nn import functional as F

RNG = np.random.default_rng(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------- erf/gelu
def test_erf_erfc_accuracy_against_mpmath():
    xs = np.concatenate([np.linspace(-8, 8, 4001), [0.0, 1e-12, -1e-9, 0.5, 3.0, 27.0, -27.0]])
    mpmath.mp.dps = 30
    ref_erf = np.array([float(mpmath.erf(v)) for v in xs])
    ref_erfc = np.array([float(mpmath.erfc(v)) for v in xs])
    got = F.erf(xs)
    assert got.dtype == np.float64
    assert np.max(np.abs(got - ref_erf)) < 1e-10
    assert np.max(np.abs(F.erfc(xs) - ref_erfc)) < 1e-10
    pos = xs > 0  # relative accuracy of the tail
    assert np.max(np.abs(F.erfc(xs[pos]) - ref_erfc[pos]) / ref_erfc[pos]) < 1e-9


def test_erf_keeps_float32_and_handles_python_data():
    x = randn(5)
    assert F.erf(x).dtype == np.float32
    np.testing.assert_allclose(F.erf([0.5, -1.0]), [math.erf(0.5), math.erf(-1.0)], atol=1e-12)


def test_gelu_exact_and_tanh():
    x = np.concatenate([randn(50) * 4, np.array([-30, -10, 0, 10, 30], np.float32)])
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    out = F.gelu(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, exact, rtol=1e-6, atol=1e-7)
    t = F.gelu(x, approximate="tanh")
    ref = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    assert t.dtype == np.float32
    np.testing.assert_allclose(t, ref, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="approximate must be"):
        F.gelu(x, approximate="fast")


def test_simple_activations():
    x = randn(3, 4) * 5
    np.testing.assert_array_equal(F.relu(x), np.where(x > 0, x, 0))
    sig = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(F.sigmoid(x), sig, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(F.silu(x), x * sig, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.tanh(x), np.tanh(x))
    big = np.array([-1000.0, 1000.0], np.float32)
    with np.errstate(all="raise"):
        np.testing.assert_allclose(F.silu(big), [0.0, 1000.0])
    for f in (F.relu, F.sigmoid, F.silu, F.tanh):
        assert f(x).dtype == np.float32


@pytest.mark.parametrize("shape,dim", [((4,), -1), ((2, 3, 5), 1), ((2, 3, 5), -1)])
def test_softmax_log_softmax(shape, dim):
    x = randn(*shape) * 10
    e = np.exp(x.astype(np.float64))
    ref = e / e.sum(axis=dim, keepdims=True)
    np.testing.assert_allclose(F.softmax(x, dim), ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(F.log_softmax(x, dim), np.log(ref), rtol=1e-5, atol=1e-5)
    assert F.softmax(x, dim).dtype == np.float32 == F.log_softmax(x, dim).dtype


def test_layer_norm_rms_norm_normalize():
    x = randn(2, 3, 8)
    w, b = randn(8), randn(8)
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(-1, keepdims=True)
    ref = (x64 - mu) / np.sqrt(var + 1e-5) * w + b
    out = F.layer_norm(x, (8,), w, b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    # over two axes, no affine
    mu2 = x64.mean((-2, -1), keepdims=True)
    ref2 = (x64 - mu2) / np.sqrt(((x64 - mu2) ** 2).mean((-2, -1), keepdims=True) + 1e-12)
    np.testing.assert_allclose(F.layer_norm(x, (3, 8), eps=1e-12), ref2, rtol=1e-5, atol=1e-5)
    eps32 = float(np.finfo(np.float32).eps)
    ref_rms = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + eps32) * w
    np.testing.assert_allclose(F.rms_norm(x, 8, w), ref_rms, rtol=1e-5, atol=1e-6)
    assert F.rms_norm(x, 8, w).dtype == np.float32
    n = F.normalize(x)
    np.testing.assert_allclose(np.linalg.norm(n, axis=-1), 1, rtol=1e-6)
    np.testing.assert_array_equal(F.normalize(np.zeros((2, 3), np.float32)), 0)
    np.testing.assert_allclose(F.normalize(x, p=1, dim=1), x / np.abs(x).sum(1, keepdims=True), rtol=1e-5)


def test_linear_embedding_one_hot():
    x, w, b = randn(2, 5, 4), randn(3, 4), randn(3)
    np.testing.assert_allclose(F.linear(x, w, b), np.einsum("bsi,oi->bso", x, w) + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.linear(x, w), np.einsum("bsi,oi->bso", x, w), rtol=1e-5, atol=1e-6)
    table = randn(10, 4)
    ids = np.array([[1, 9], [0, 1]])
    out = F.embedding(ids, table)
    assert out.shape == (2, 2, 4)
    np.testing.assert_array_equal(out[0, 1], table[9])
    with pytest.raises(IndexError):
        F.embedding(np.array([10]), table)
    oh = F.one_hot(np.array([0, 2, 1]), 4)
    assert oh.dtype == np.int64
    np.testing.assert_array_equal(oh, np.eye(4, dtype=np.int64)[[0, 2, 1]])
    assert F.one_hot(np.array([[3]])).shape == (1, 1, 4)


def test_dropout():
    x = np.ones((200, 50), np.float32)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    out = F.dropout(x, 0.25, rng=np.random.default_rng(1))
    assert out.dtype == np.float32
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_array_equal(F.dropout(x, 1.0), 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


def _sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    allowed = np.ones((L, S), bool)
    if causal:
        allowed &= np.array([[j <= i for j in range(S)] for i in range(L)])
    if mask is not None and mask.dtype == bool:
        allowed = allowed & mask
    elif mask is not None:
        s = s + mask
    s = np.where(allowed, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("L,S", [(4, 4), (3, 6), (1, 1)])
def test_scaled_dot_product_attention(L, S):
    q, k, v = randn(2, 3, L, 8), randn(2, 3, S, 8), randn(2, 3, S, 5)
    out = F.scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, L, 5) and out.dtype == np.float32
    np.testing.assert_allclose(out, _sdpa_ref(q, k, v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                               _sdpa_ref(q, k, v, causal=True), rtol=1e-5, atol=1e-6)
    bmask = RNG.random((L, S)) > 0.3
    bmask[:, 0] = True
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=bmask),
                               _sdpa_ref(q, k, v, mask=bmask), rtol=1e-5, atol=1e-6)
    fmask = RNG.standard_normal((2, 1, L, S))  # float64 mask must not promote the result
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=fmask, scale=0.3)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _sdpa_ref(q, k, v, mask=fmask, scale=0.3), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- conv / pool
def _conv2d_ref(x, w, b, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for bi, oc, i, j in itertools.product(range(n), range(o), range(ho), range(wo)):
        g = oc // og
        acc = 0.0 if b is None else float(b[oc])
        for ci, a, bb in itertools.product(range(cg), range(kh), range(kw)):
            acc += xp[bi, g * cg + ci, i * sh + a * dh, j * sw + bb * dw] * w[oc, ci, a, bb]
        out[bi, oc, i, j] = acc
    return out


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    ((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 1), 1), ((1, 2), (1, 0), (2, 1), 2),
    ((3, 2), (2, 2), (2, 2), 4),
])
def test_conv2d(stride, padding, dilation, groups):
    x = randn(2, 4, 7, 9)
    w = randn(8, 4 // groups, 3, 2)
    b = randn(8)
    out = F.conv2d(x, w, b, stride, padding, dilation, groups)
    ref = _conv2d_ref(x, w, b, stride, padding, dilation, groups)
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_conv2d_same_valid_unbatched_and_errors():
    x, w = randn(3, 6, 5), randn(2, 3, 3, 4)
    same = F.conv2d(x, w, padding="same")
    assert same.shape == (2, 6, 5)
    # kernel 4 wide: total pad 3 -> 1 left, 2 right
    xp = np.pad(x, ((0, 0), (1, 1), (1, 2)))[None]
    np.testing.assert_allclose(same, _conv2d_ref(xp, w, None, (1, 1), (0, 0), (1, 1), 1)[0], rtol=1e-4, atol=1e-5)
    assert F.conv2d(x, w, padding="valid").shape == (2, 4, 2)
    with pytest.raises(ValueError, match="not supported for strided"):
        F.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="expects 6"):
        F.conv2d(randn(1, 3, 4, 4), randn(4, 3, 1, 1), groups=2)
    with pytest.raises(ValueError, match="padding must be"):
        F.conv2d(x, w, padding="full")


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 3, 1)])
def test_conv1d(stride, padding, dilation, groups):
    x, w, b = randn(2, 4, 11), randn(6, 4 // groups, 3), randn(6)
    out = F.conv1d(x, w, b, stride, padding, dilation, groups)
    ref = _conv2d_ref(x[:, :, None], w[:, :, None], b, (1, stride), (0, padding), (1, dilation), groups)[:, :, 0]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    assert F.conv1d(x[0], w, b, stride, padding, dilation, groups).shape == ref.shape[1:]
    assert F.conv1d(x, w, padding="same", groups=groups).shape == (2, 6, 11)


def _pool_ref(x, k, s, p, d, ceil, kind, count_include_pad=True):
    n, c, h, w = x.shape
    outs = []
    for size, kk, ss, pp, dd in zip((h, w), k, s, p, d):
        span = size + 2 * pp - dd * (kk - 1) - 1
        o = (-(-span // ss) if ceil else span // ss) + 1
        if ceil and (o - 1) * ss >= size + pp:
            o -= 1
        outs.append(o)
    out = np.zeros((n, c, *outs))
    for bi, ci, i, j in itertools.product(range(n), range(c), range(outs[0]), range(outs[1])):
        vals, cells = [], 0
        for a, bb in itertools.product(range(k[0]), range(k[1])):
            r, q = i * s[0] + a * d[0] - p[0], j * s[1] + bb * d[1] - p[1]
            inside_pad = -p[0] <= r < h + p[0] and -p[1] <= q < w + p[1]
            if 0 <= r < h and 0 <= q < w:
                vals.append(x[bi, ci, r, q])
                cells += 1
            elif inside_pad:
                vals.append(0.0 if kind == "avg" else -np.inf)
                cells += count_include_pad
        out[bi, ci, i, j] = max(vals) if kind == "max" else sum(vals) / cells
    return out


@pytest.mark.parametrize("k,s,p,d,ceil", [
    ((2, 2), (2, 2), (0, 0), (1, 1), False), ((3, 2), (2, 1), (1, 1), (1, 1), False),
    ((3, 3), (2, 2), (1, 0), (2, 1), False), ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 2), (3, 3), (0, 0), (1, 1), True),
])
def test_max_pool2d(k, s, p, d, ceil):
    x = randn(2, 3, 7, 8)
    out = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil)
    ref = _pool_ref(x, k, s, p, d, ceil, "max")
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@pytest.mark.parametrize("k,s,p,ceil,cip", [
    ((2, 2), (2, 2), (0, 0), False, True), ((3, 2), (2, 1), (1, 1), False, True),
    ((3, 3), (2, 2), (1, 1), False, False), ((3, 3), (2, 2), (1, 1), True, True),
    ((3, 3), (2, 2), (1, 0), True, False), ((2, 2), (3, 3), (0, 0), True, True),
])
def test_avg_pool2d(k, s, p, ceil, cip):
    x = randn(2, 3, 7, 8)
    out = F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=cip)
    ref = _pool_ref(x, k, s, p, (1, 1), ceil, "avg", cip)
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_pool_misc():
    x = randn(3, 6, 6)
    assert F.max_pool2d(x, 2).shape == (3, 3, 3)
    np.testing.assert_allclose(F.avg_pool2d(x, 2, divisor_override=1), F.avg_pool2d(x, 2) * 4, rtol=1e-6)
    ints = np.arange(16).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(F.max_pool2d(ints, 3, 1, 1)[0, 0, 0], [5, 6, 7, 7])
    with pytest.raises(ValueError, match="at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(NotImplementedError, match="return_indices"):
        F.max_pool2d(x, 2, return_indices=True)


# ----------------------------------------------------------------- pad / bn / ce
def test_pad_modes():
    x = randn(2, 3, 4)
    out = F.pad(x, (1, 2))
    assert out.shape == (2, 3, 7)
    np.testing.assert_array_equal(out[..., 1:5], x)
    out = F.pad(x, (1, 0, 0, 2), value=7.0)
    assert out.shape == (2, 5, 5) and out[0, 4, 0] == 7 and out.dtype == np.float32
    np.testing.assert_array_equal(F.pad(x, (2, 1), mode="reflect"), np.pad(x, ((0, 0), (0, 0), (2, 1)), "reflect"))
    np.testing.assert_array_equal(F.pad(x, (1, 1), mode="replicate")[..., 0], x[..., 0])
    np.testing.assert_array_equal(F.pad(x, (1, 1), mode="circular")[..., 0], x[..., -1])
    with pytest.raises(ValueError, match="must be even"):
        F.pad(x, (1,))
    with pytest.raises(ValueError, match="unknown mode"):
        F.pad(x, (1, 1), mode="zeros")
    with pytest.raises(ValueError, match="padded axes"):
        F.pad(x, (1,) * 8)


def test_batch_norm_eval_and_train():
    x = randn(4, 3, 5)
    rm, rv, w, b = randn(3), np.abs(randn(3)) + 0.5, randn(3), randn(3)
    out = F.batch_norm(x, rm, rv, w, b, training=False)
    ref = (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-5) * w[:, None] + b[:, None]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    rm0, rv0 = rm.copy(), rv.copy()
    out = F.batch_norm(x, rm, rv, training=True, momentum=0.2)
    x64 = x.astype(np.float64)
    mean, var = x64.mean((0, 2)), x64.var((0, 2))
    np.testing.assert_allclose(out, (x64 - mean[:, None]) / np.sqrt(var[:, None] + 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm, 0.8 * rm0 + 0.2 * mean, rtol=1e-5)
    np.testing.assert_allclose(rv, 0.8 * rv0 + 0.2 * x64.var((0, 2), ddof=1), rtol=1e-5)
    assert out.dtype == np.float32 and rm.dtype == np.float32


def _ce_ref(logits, target, weight=None, ignore=-100, smoothing=0.0):
    losses, wsum = [], 0.0
    c = logits.shape[1]
    w = np.ones(c) if weight is None else weight
    for row, t in zip(logits.astype(np.float64), target):
        if t == ignore:
            continue
        logp = row - np.log(np.exp(row - row.max()).sum()) - row.max()
        nll = -logp[t] * w[t]
        smooth = -(logp * w).sum() / c
        losses.append((1 - smoothing) * nll + smoothing * smooth)
        wsum += w[t]
    return sum(losses) / wsum, sum(losses)


def test_cross_entropy_indices():
    logits, target = randn(6, 4), np.array([0, 3, 1, -100, 2, 3])
    w = np.abs(randn(4)) + 0.1
    for kwargs in ({}, {"weight": w}, {"label_smoothing": 0.1}, {"weight": w, "label_smoothing": 0.2}):
        mean, total = _ce_ref(logits, target, kwargs.get("weight"), smoothing=kwargs.get("label_smoothing", 0.0))
        out = F.cross_entropy(logits, target, **kwargs)
        assert out.dtype == np.float32 and out.shape == ()
        np.testing.assert_allclose(out, mean, rtol=1e-5)
        np.testing.assert_allclose(F.cross_entropy(logits, target, reduction="sum", **kwargs), total, rtol=1e-5)
    none = F.cross_entropy(logits, target, reduction="none")
    assert none.shape == (6,) and none[3] == 0
    # spatial (N, C, d) equals the flattened form
    lg, tg = randn(2, 4, 3), np.array([[0, 1, 2], [3, 3, 0]])
    flat = F.cross_entropy(np.moveaxis(lg, 1, -1).reshape(-1, 4), tg.reshape(-1))
    np.testing.assert_allclose(F.cross_entropy(lg, tg), flat, rtol=1e-6)
    np.testing.assert_allclose(F.cross_entropy(logits[0], np.array(0)), _ce_ref(logits[:1], [0])[0], rtol=1e-5)
    with pytest.raises(ValueError, match="unknown reduction"):
        F.cross_entropy(logits, target, reduction="avg")


def test_cross_entropy_probabilities():
    logits = randn(5, 3)
    probs = F.softmax(randn(5, 3))
    logp = F.log_softmax(logits.astype(np.float64), 1)
    ref = -(probs * logp).sum(1)
    np.testing.assert_allclose(F.cross_entropy(logits, probs), ref.mean(), rtol=1e-5)
    np.testing.assert_allclose(F.cross_entropy(logits, probs, reduction="none"), ref, rtol=1e-5)
    sm = probs * 0.9 + 0.1 / 3
    np.testing.assert_allclose(F.cross_entropy(logits, probs, label_smoothing=0.1), -(sm * logp).sum(1).mean(),
                               rtol=1e-5)
