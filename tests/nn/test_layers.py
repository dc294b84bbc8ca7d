"""Layers against straightforward numpy references; containers; deterministic init."""

import math
from collections import OrderedDict

import numpy as np
import pytest

from tensorplay_export import nn
from tensorplay_export.nn import functional as F

RNG = np.random.default_rng(1)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_linear():
    m = nn.Linear(4, 3, rng=0)
    assert m.weight.shape == (3, 4) and m.bias.shape == (3,) and m.weight.dtype == np.float32
    assert np.all(np.abs(m.weight) <= 0.5)
    for shape in ((4,), (2, 4), (2, 5, 4)):
        x = randn(*shape)
        ref = np.einsum("...i,oi->...o", x.astype(np.float64), m.weight) + m.bias
        out = m(x)
        assert out.shape == shape[:-1] + (3,) and out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    nb = nn.Linear(4, 3, bias=False)
    assert nb.bias is None and [n for n, _ in nb.named_parameters()] == ["weight"]
    assert repr(nb) == "Linear(in_features=4, out_features=3, bias=False)"


def test_deterministic_init():
    nn.manual_seed(7)
    a = nn.Linear(5, 5)
    nn.manual_seed(7)
    b = nn.Linear(5, 5)
    np.testing.assert_array_equal(a.weight, b.weight)
    np.testing.assert_array_equal(nn.Linear(5, 5, rng=3).weight, nn.Linear(5, 5, rng=3).weight)
    assert not np.array_equal(nn.Linear(5, 5).weight, nn.Linear(5, 5).weight)  # one stream, new values


def test_embedding():
    m = nn.Embedding(10, 4, padding_idx=2, rng=0)
    np.testing.assert_array_equal(m.weight[2], 0)
    ids = np.array([[1, 2, 9], [0, 0, 3]])
    out = m(ids)
    assert out.shape == (2, 3, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out[1, 2], m.weight[3])
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(3, 2, padding_idx=5)
    assert repr(m) == "Embedding(10, 4, padding_idx=2)"


def test_layer_norm_and_rms_norm():
    x = randn(2, 3, 6)
    ln = nn.LayerNorm(6, eps=1e-12)
    ln.weight[...] = randn(6)
    ln.bias[...] = randn(6)
    x64 = x.astype(np.float64)
    mu, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    np.testing.assert_allclose(ln(x), (x64 - mu) / np.sqrt(var + 1e-12) * ln.weight + ln.bias, rtol=1e-5, atol=1e-5)
    assert nn.LayerNorm((3, 6), elementwise_affine=False)(x).shape == x.shape
    assert nn.LayerNorm(6, bias=False).bias is None
    rms = nn.RMSNorm(6, eps=1e-6)
    rms.weight[...] = randn(6)
    ref = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * rms.weight
    out = rms(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_dropout_modes():
    d = nn.Dropout(0.5, rng=0)
    x = np.ones((100, 100), np.float32)
    y = d(x)
    assert set(np.unique(y)) == {0.0, 2.0}
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(-0.1)


def test_activations():
    x = randn(3, 7) * 3
    np.testing.assert_array_equal(nn.ReLU()(x), np.maximum(x, 0))
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel().astype(float)]).reshape(x.shape)
    np.testing.assert_allclose(nn.GELU()(x), exact, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(nn.GELU("tanh")(x), exact, atol=1e-3)
    with pytest.raises(ValueError):
        nn.GELU("erf")
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(nn.SiLU()(x), x * s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nn.Sigmoid()(x), s, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(nn.Tanh()(x), np.tanh(x))
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(nn.Softmax(dim=0)(x), e / e.sum(0), rtol=1e-5)
    np.testing.assert_allclose(nn.LogSoftmax()(x), np.log(e / e.sum(-1, keepdims=True)), rtol=1e-5, atol=1e-5)
    for m in (nn.ReLU(), nn.GELU(), nn.SiLU(), nn.Tanh(), nn.Softmax()):
        assert m(x).dtype == np.float32


def test_flatten_identity():
    x = randn(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 1)(x).shape == (6, 4, 5)
    assert nn.Flatten(1, 2)(x).shape == (2, 12, 5)
    assert nn.Flatten(-2)(x).shape == (2, 3, 20)
    assert nn.Identity(3, key=1)(x) is x


# ----------------------------------------------------------------- attention
def _mha_ref(m, q, k, v, kpm=None, attn_mask=None, causal=False):
    """Per-batch, per-head loops; inputs batch-first (N, L, E)."""
    e, h = m.embed_dim, m.num_heads
    d = e // h
    w = m.in_proj_weight.astype(np.float64)
    b = m.in_proj_bias.astype(np.float64)
    n, L, S = q.shape[0], q.shape[1], k.shape[1]
    out = np.zeros((n, L, e))
    weights = np.zeros((n, h, L, S))
    for bi in range(n):
        Q = q[bi] @ w[:e].T + b[:e]
        K = k[bi] @ w[e:2 * e].T + b[e:2 * e]
        V = v[bi] @ w[2 * e:].T + b[2 * e:]
        for hi in range(h):
            sl = slice(hi * d, (hi + 1) * d)
            s = Q[:, sl] @ K[:, sl].T / math.sqrt(d)
            for i in range(L):
                for j in range(S):
                    blocked = (kpm is not None and kpm[bi, j]) or (causal and j > i)
                    if attn_mask is not None and attn_mask.dtype == bool:
                        blocked = blocked or attn_mask[i, j]
                    elif attn_mask is not None:
                        s[i, j] += attn_mask[i, j]
                    if blocked:
                        s[i, j] = -np.inf
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            weights[bi, hi] = p
            out[bi, :, sl] = p @ V[:, sl]
    out = out @ m.out_proj.weight.T.astype(np.float64) + m.out_proj.bias
    return out, weights


def test_multihead_attention_batch_first_and_masks():
    m = nn.MultiheadAttention(12, 3, batch_first=True, rng=0)
    m.in_proj_bias[...] = randn(36)
    m.out_proj.bias[...] = randn(12)
    q, k, v = randn(2, 4, 12), randn(2, 5, 12), randn(2, 5, 12)
    out, w = m(q, k, v)
    ref, ref_w = _mha_ref(m, q, k, v)
    assert out.shape == (2, 4, 12) and out.dtype == np.float32 and w.shape == (2, 4, 5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w, ref_w.mean(1), rtol=1e-4, atol=1e-6)
    kpm = np.array([[False, False, True, False, True], [False, False, False, False, False]])
    amask = RNG.random((4, 5)) > 0.7
    amask[:, 0] = False
    out, w = m(q, k, v, key_padding_mask=kpm, attn_mask=amask, average_attn_weights=False)
    ref, ref_w = _mha_ref(m, q, k, v, kpm, amask)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w, ref_w, rtol=1e-4, atol=1e-6)
    fmask = randn(4, 5)
    out, none = m(q, k, v, attn_mask=fmask, need_weights=False)
    assert none is None
    np.testing.assert_allclose(out, _mha_ref(m, q, k, v, attn_mask=fmask.astype(np.float64))[0], rtol=1e-4, atol=1e-5)
    # a (N*H, L, S) mask equals the per-head broadcast of an (L, S) one
    out3, _ = m(q, k, v, attn_mask=np.broadcast_to(amask, (6, 4, 5)))
    np.testing.assert_allclose(out3, m(q, k, v, attn_mask=amask)[0], rtol=1e-6)


def test_multihead_attention_seq_first_unbatched_causal():
    m = nn.MultiheadAttention(8, 2, rng=1)
    x = randn(3, 6, 8)  # (L, N, E)
    out, w = m(x, x, x, is_causal=True)
    xb = np.swapaxes(x, 0, 1)
    ref, ref_w = _mha_ref(m, xb, xb, xb, causal=True)
    assert out.shape == (3, 6, 8)
    np.testing.assert_allclose(out, np.swapaxes(ref, 0, 1), rtol=1e-4, atol=1e-5)
    u_out, u_w = m(x[:, 0], x[:, 0], x[:, 0])
    assert u_out.shape == (3, 8) and u_w.shape == (3, 3)
    np.testing.assert_allclose(u_out, _mha_ref(m, xb[:1], xb[:1], xb[:1])[0][0], rtol=1e-4, atol=1e-5)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                    "out_proj.bias"]
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)


def test_multihead_attention_kdim_vdim():
    m = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=True, bias=False, rng=2)
    assert m.in_proj_weight is None and m.k_proj_weight.shape == (8, 5)
    out, w = m(randn(2, 4, 8), randn(2, 6, 5), randn(2, 6, 3))
    assert out.shape == (2, 4, 8) and w.shape == (2, 4, 6)


# -------------------------------------------------------------- conv / norm
def test_conv_layers_match_functional():
    c2 = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, dilation=(1, 2), groups=2, rng=0)
    assert c2.weight.shape == (6, 2, 3, 2) and c2.bias.shape == (6,)
    x = randn(2, 4, 9, 9)
    np.testing.assert_array_equal(c2(x), F.conv2d(x, c2.weight, c2.bias, 2, 1, (1, 2), 2))
    c1 = nn.Conv1d(3, 5, 3, padding="same", bias=False, rng=0)
    y = randn(2, 3, 10)
    assert c1.bias is None and c1(y).shape == (2, 5, 10)
    # explicit loop reference for Conv1d
    xp = np.pad(y.astype(np.float64), ((0, 0), (0, 0), (1, 1)))
    ref = np.zeros((2, 5, 10))
    for b in range(2):
        for o in range(5):
            for i in range(10):
                ref[b, o, i] = np.sum(xp[b, :, i:i + 3] * c1.weight[o])
    np.testing.assert_allclose(c1(y), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 1, groups=2)
    assert "groups=2" in repr(c2)


def test_batch_norm_running_stats_and_modes():
    bn = nn.BatchNorm2d(3, momentum=0.5)
    x1, x2 = randn(4, 3, 2, 2) + 1, randn(4, 3, 2, 2) * 2
    out = bn(x1)
    x64 = x1.astype(np.float64)
    mean, var = x64.mean((0, 2, 3)), x64.var((0, 2, 3))
    np.testing.assert_allclose(out, (x64 - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean, 0.5 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var, 0.5 + 0.5 * x64.var((0, 2, 3), ddof=1), rtol=1e-5)
    bn(x2)
    assert int(bn.num_batches_tracked) == 2
    assert bn.running_mean.dtype == np.float32 and bn.running_var.dtype == np.float32
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    bn.eval()
    rm, rv = bn.running_mean.copy(), bn.running_var.copy()
    out = bn(x2)
    np.testing.assert_allclose(out, (x2 - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5), rtol=1e-5)
    np.testing.assert_array_equal(bn.running_mean, rm)  # eval leaves the stats alone
    with pytest.raises(ValueError, match="expected 4D input, got 3D"):
        bn(x2[0])


def test_batch_norm1d_cumulative_and_untracked():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [randn(5, 2), randn(5, 2) + 3]
    for x in xs:
        bn(x)
    np.testing.assert_allclose(bn.running_mean, np.mean([x.mean(0) for x in xs], axis=0), rtol=1e-5)
    assert bn(randn(4, 2, 3)).shape == (4, 2, 3)
    free = nn.BatchNorm1d(2, track_running_stats=False, affine=False).eval()
    x = randn(6, 2)
    np.testing.assert_allclose(free(x), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-5)
    assert list(free.state_dict()) == []


def test_pool_layers():
    x = randn(2, 3, 6, 7)
    np.testing.assert_array_equal(nn.MaxPool2d(2)(x), F.max_pool2d(x, 2, 2))
    np.testing.assert_array_equal(nn.MaxPool2d(3, 2, 1, ceil_mode=True)(x), F.max_pool2d(x, 3, 2, 1, ceil_mode=True))
    np.testing.assert_allclose(nn.AvgPool2d(2)(x), x[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).mean((3, 5)), rtol=1e-6)
    with pytest.raises(NotImplementedError):
        nn.MaxPool2d(2, return_indices=True)


# ---------------------------------------------------------------- containers
def test_sequential():
    seq = nn.Sequential(nn.Linear(4, 8, rng=0), nn.ReLU(), nn.Linear(8, 2, rng=1))
    x = randn(3, 4)
    np.testing.assert_array_equal(seq(x), seq[2](seq[1](seq[0](x))))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and len(seq[:2]) == 2
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    named = nn.Sequential(OrderedDict(fc=nn.Linear(4, 2), act=nn.Tanh()))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"] and named(x).shape == (3, 2)
    seq.append(nn.Softmax())
    seq[1] = nn.GELU()
    assert isinstance(seq[1], nn.GELU) and len(seq) == 4
    with pytest.raises(IndexError):
        seq[7]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and [n for n, _ in ml.named_children()] == ["0", "1", "2"]
    ml.insert(0, nn.ReLU())
    del ml[1]
    assert [type(m).__name__ for m in ml] == ["ReLU", "Linear", "Linear"]
    assert list(ml._modules) == ["0", "1", "2"]
    assert isinstance(ml[1:], nn.ModuleList)
    md = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Linear(2, 3)})
    md["c"] = nn.Tanh()
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert list(md.state_dict()) == ["b.weight", "b.bias"]
    md.pop("a")
    del md["c"]
    assert list(md.keys()) == ["b"]
    with pytest.raises(KeyError, match="already exists"):
        md["update"] = nn.ReLU()


def test_composite_state_dict_round_trip():
    def build(seed):
        return nn.Sequential(nn.Conv2d(1, 2, 3, rng=seed), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3, rng=seed))

    a, b = build(0), build(1)
    a(randn(2, 1, 4, 4))  # move running stats
    b.load_state_dict(a.state_dict())
    a.eval(), b.eval()
    x = randn(2, 1, 4, 4)
    np.testing.assert_array_equal(a(x), b(x))
