"""Upsample/interpolate, adaptive pooling, transposed convolution, GroupNorm and recurrent cells.

Each layer is checked against an independent numpy reference written from torch's
documented formulas (scalar loops, float64) and against hand-computed values, at several
sizes; then exported with dynamic batch/H/W (or L) and its program run at sizes other
than the example; one save/load per family; state_dict names and shapes are torch's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _shared import roundtrip

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.nn import functional as F

RNG = np.random.default_rng(1234)
TOL = dict(rtol=2e-5, atol=2e-5)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def shapes(module):
    return [(k, tuple(v.shape)) for k, v in module.state_dict().items()]


# ----------------------------------------------------------------- references
def nearest_ref(x, out_sizes, factors):
    """torch's nearest_idx per axis: min(floor(dst * scale), in - 1), scale = 1/factor (float32) or in/out."""
    for k, (n_out, f) in enumerate(zip(out_sizes, factors)):
        axis = 2 + k
        n_in = x.shape[axis]
        scale = np.float32(1.0 / f) if f is not None else np.float32(n_in) / np.float32(n_out)
        src = [min(int(math.floor(np.float32(i) * scale)), n_in - 1) for i in range(n_out)]
        x = np.take(x, src, axis=axis)
    return x


def linear_ref(x, out_sizes, factors):
    """Half-pixel linear resizing per axis, one output cell at a time (torch, align_corners=False)."""
    x = x.astype(np.float64)
    for k, (n_out, f) in enumerate(zip(out_sizes, factors)):
        axis = 2 + k
        n_in = x.shape[axis]
        scale = 1.0 / f if f is not None else n_in / n_out
        cells = []
        for i in range(n_out):
            src = max(scale * (i + 0.5) - 0.5, 0.0)
            i0 = min(int(math.floor(src)), n_in - 1)
            i1 = min(i0 + 1, n_in - 1)
            lam = src - i0
            cells.append((1 - lam) * np.take(x, i0, axis=axis) + lam * np.take(x, i1, axis=axis))
        x = np.stack(cells, axis=axis)
    return x


def adaptive_ref(x, out_sizes, reduce):
    """Bins [floor(i*in/out), ceil((i+1)*in/out)) with exact integer arithmetic, one cell at a time."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    out = np.zeros((n, c) + tuple(out_sizes), np.float64)
    for cell in np.ndindex(*out_sizes):
        index = [slice(None), slice(None)]
        for i, n_in, n_out in zip(cell, spatial, out_sizes):
            index.append(slice(i * n_in // n_out, -(-(i + 1) * n_in // n_out)))
        block = x[tuple(index)].astype(np.float64)
        out[(slice(None), slice(None)) + cell] = reduce(block.reshape(n, c, -1), axis=-1)
    return out


def conv_transpose_ref(x, weight, bias, stride, padding, output_padding, groups, dilation):
    """Scatter form: input cell (h, w) adds x * weight[ci, o, p, q] at (h*s - pad + p*d, w*s - pad + q*d)."""
    n, c_in, h, w = x.shape
    _, og, kh, kw = weight.shape
    (sh, sw), (ph, pw), (oh_, ow_), (dh, dw) = stride, padding, output_padding, dilation
    h_out = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oh_ + 1
    w_out = (w - 1) * sw - 2 * pw + dw * (kw - 1) + ow_ + 1
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oh_, (w - 1) * sw + dw * (kw - 1) + 1 + ow_))
    per_group = c_in // groups
    for ci in range(c_in):
        g = ci // per_group
        for o in range(og):
            for p in range(kh):
                for q in range(kw):
                    full[:, g * og + o, p * dh:p * dh + (h - 1) * sh + 1:sh, q * dw:q * dw + (w - 1) * sw + 1:sw] += \
                        x[:, ci].astype(np.float64) * float(weight[ci, o, p, q])
    out = full[:, :, ph:ph + h_out, pw:pw + w_out]
    return out if bias is None else out + bias[None, :, None, None]


def group_norm_ref(x, groups, weight, bias, eps=1e-5):
    out = np.empty(x.shape, np.float64)
    per = x.shape[1] // groups
    for b in range(x.shape[0]):
        for g in range(groups):
            block = x[b, g * per:(g + 1) * per].astype(np.float64)
            out[b, g * per:(g + 1) * per] = (block - block.mean()) / math.sqrt(block.var() + eps)
    affine = (1, -1) + (1,) * (x.ndim - 2)
    return out * weight.reshape(affine) + bias.reshape(affine)


def sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def gru_ref(m, x, h):
    w_ir, w_iz, w_in = np.split(m.weight_ih.astype(np.float64), 3)
    w_hr, w_hz, w_hn = np.split(m.weight_hh.astype(np.float64), 3)
    b_ir, b_iz, b_in = np.split(m.bias_ih.astype(np.float64), 3)
    b_hr, b_hz, b_hn = np.split(m.bias_hh.astype(np.float64), 3)
    r = sig(x @ w_ir.T + b_ir + h @ w_hr.T + b_hr)
    z = sig(x @ w_iz.T + b_iz + h @ w_hz.T + b_hz)
    n = np.tanh(x @ w_in.T + b_in + r * (h @ w_hn.T + b_hn))
    return (1 - z) * n + z * h


def lstm_ref(m, x, h, c):
    gates = x @ m.weight_ih.T.astype(np.float64) + m.bias_ih + h @ m.weight_hh.T.astype(np.float64) + m.bias_hh
    i, f, g, o = np.split(gates, 4, axis=-1)
    c2 = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(c2), c2


# ----------------------------------------------------------------- interpolate
def test_nearest_and_bilinear_hand_values():
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float32)
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(x)[0, 0],
                                  [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])
    # torch's documented bilinear 2x of [[1, 2], [3, 4]] with align_corners=False
    want = [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]]
    np.testing.assert_allclose(nn.Upsample(scale_factor=2, mode="bilinear")(x)[0, 0], want, rtol=1e-6)
    line = np.array([[[1.0, 2.0]]], np.float32)
    np.testing.assert_allclose(F.interpolate(line, scale_factor=2, mode="linear")[0, 0], [1, 1.25, 1.75, 2])
    # 1.5x nearest: floor(2 * 1.5) = 3 cells, sources floor(i / 1.5) = 0, 0, 1
    np.testing.assert_array_equal(F.interpolate(line, scale_factor=1.5)[0, 0], [1, 1, 2])
    np.testing.assert_array_equal(F.interpolate(line, size=5)[0, 0], [1, 1, 1, 2, 2])
    # torch's float32 steps: 41 * float32(2 / 82) = 0.99999994, so cell 41 reads row 0 (the rational says 1)
    assert F.interpolate(line, size=82)[0, 0, 41] == 1.0
    assert F.interpolate(line, size=82)[0, 0, 42] == 2.0


def test_nearest_size_keeps_torch_float32_indices_after_export():
    m = nn.Upsample(size=(82, 3))
    ep = tpe.export(m, randn(1, 1, 5, 4), dynamic_shapes=({2: Dim("h", max=64), 3: Dim("w", max=64)},))
    x = np.arange(2 * 3, dtype=np.float32).reshape(1, 1, 2, 3)
    got = ep.module()(x)
    np.testing.assert_array_equal(got, m(x))
    assert got[0, 0, 41, 0] == 0.0 and got[0, 0, 42, 0] == 3.0


@pytest.mark.parametrize("kwargs", [dict(scale_factor=2), dict(scale_factor=3), dict(scale_factor=(2, 1.5)),
                                    dict(scale_factor=0.5), dict(size=(7, 3)), dict(size=4)])
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate_matches_reference_at_several_sizes(kwargs, mode):
    for h, w in [(1, 1), (2, 5), (5, 3), (8, 8)]:
        x = randn(2, 3, h, w)
        if "size" in kwargs:
            size = kwargs["size"]
            outs, factors = ((size, size) if isinstance(size, int) else size), (None, None)
        else:
            sf = kwargs["scale_factor"]
            factors = sf if isinstance(sf, tuple) else (sf, sf)
            outs = tuple(math.floor(n * f) for n, f in zip((h, w), factors))
            if 0 in outs:
                continue
        got = F.interpolate(x, mode=mode, **kwargs)
        ref = nearest_ref(x, outs, factors) if mode == "nearest" else linear_ref(x, outs, factors)
        assert got.shape == (2, 3) + outs and got.dtype == np.float32
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=f"{kwargs} at {h}x{w}")


UPSAMPLES = {
    "nearest_2x": lambda: nn.Upsample(scale_factor=2),
    "nearest_1.5x": lambda: nn.Upsample(scale_factor=1.5),
    "nearest_size": lambda: nn.Upsample(size=(6, 4)),
    "bilinear_2x": lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
    "bilinear_size": lambda: nn.Upsample(size=(5, 9), mode="bilinear"),
    "nearest2d": lambda: nn.UpsamplingNearest2d(scale_factor=3),
}


@pytest.mark.parametrize("name", list(UPSAMPLES))
def test_upsample_exports_with_dynamic_batch_h_w(name):
    m = UPSAMPLES[name]().eval()
    spec = ({0: Dim("batch", max=32), 2: Dim("h", max=64), 3: Dim("w", max=64)},)
    ep = tpe.export(m, randn(2, 3, 6, 7), dynamic_shapes=spec)
    assert {str(k) for k in ep.range_constraints} == {"batch", "h", "w"}
    run = ep.module()
    for shape in [(1, 3, 1, 1), (3, 3, 9, 2), (1, 3, 64, 63)]:
        x = randn(*shape)
        np.testing.assert_array_equal(run(x), m(x)) if "nearest" in name else \
            np.testing.assert_allclose(run(x), m(x), **TOL)
    assert shapes(m) == []


def test_linear_1d_upsample_exports_with_dynamic_length():
    m = nn.Upsample(scale_factor=2, mode="linear")
    ep = tpe.export(m, randn(2, 3, 10), dynamic_shapes=({0: Dim("b", max=8), 2: Dim("l", max=500)},))
    for shape in [(1, 3, 1), (4, 3, 37)]:
        x = randn(*shape)
        np.testing.assert_allclose(ep.module()(x), linear_ref(x, (2 * shape[2],), (2.0,)), **TOL)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate_to_another_inputs_symbolic_size(mode):
    """The decoder step of FPN / DeepLab / UNet: upsample a coarse map to a skip connection's size."""
    def f(y, skip):
        return F.interpolate(y, size=skip.shape[2:], mode=mode) + skip

    spec = ({0: Dim("b", max=8), 2: Dim("hy", max=64), 3: Dim("wy", max=64)},
            {0: Dim("b", max=8), 2: Dim("h", max=128), 3: Dim("w", max=128)})
    ep = tpe.export(f, randn(2, 3, 5, 6), randn(2, 3, 17, 22), dynamic_shapes=spec)
    assert {str(k) for k in ep.range_constraints} == {"b", "hy", "wy", "h", "w"}  # nothing pinned
    run = roundtrip(ep).module()
    for hy, wy, h, w in [(1, 1, 1, 1), (3, 7, 50, 9), (64, 64, 2, 128), (2, 4, 82, 3)]:
        y, skip = randn(1, 3, hy, wy), randn(1, 3, h, w)
        got = run(y, skip)
        assert got.shape == (1, 3, h, w)
        np.testing.assert_array_equal(got, f(y, skip))


def test_interpolate_back_to_the_input_size_and_linear_1d():
    seg = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1, rng=0), nn.Conv2d(4, 2, 1, rng=1)).eval()
    f = lambda x: F.interpolate(seg(x), size=x.shape[2:], mode="bilinear")  # noqa: E731
    ep = tpe.export(f, randn(2, 3, 17, 22), dynamic_shapes=({2: Dim("h", max=96), 3: Dim("w", max=96)},))
    for shape in [(2, 3, 1, 1), (2, 3, 9, 31), (2, 3, 96, 40)]:
        x = randn(*shape)
        np.testing.assert_array_equal(ep.module()(x), f(x))
    g = lambda y, ref: F.interpolate(y, size=ref.shape[-1], mode="linear")  # noqa: E731
    ep = tpe.export(g, randn(1, 2, 5), randn(1, 2, 9), dynamic_shapes=({2: Dim("l")}, {2: Dim("m")}))
    for l, m in [(1, 1), (3, 100), (100, 3)]:
        y, ref = randn(1, 2, l), randn(1, 2, m)
        np.testing.assert_array_equal(ep.module()(y, ref), g(y, ref))


def test_interpolate_symbolic_size_positivity_is_a_requirement():
    """size = n - 3 may reach 0 for n >= 1: a violation with a fix, not a type error."""
    f = lambda x: F.interpolate(x, size=(x.shape[2] - 3, 4))  # noqa: E731
    with pytest.raises(tpe.ConstraintViolationError, match=r"n >= 4|n = Dim\('n', min=4"):
        tpe.export(f, randn(1, 1, 8, 4), dynamic_shapes=({2: Dim("n", max=64)},))
    ep = tpe.export(f, randn(1, 1, 8, 4), dynamic_shapes=({2: Dim("n", min=4, max=64)},))
    x = randn(1, 1, 30, 4)
    np.testing.assert_array_equal(ep.module()(x), f(x))


def test_adaptive_pool_symbolic_output_size_is_pinned_at_the_call():
    f = lambda x, y: F.adaptive_avg_pool2d(x, y.shape[2:])  # noqa: E731
    x, y = randn(1, 2, 16, 16), randn(1, 2, 4, 5)
    with pytest.raises(tpe.ConstraintViolationError, match=r"(?s)specialized to 4.*test_more_layers.py"):
        tpe.export(f, x, y, dynamic_shapes=({2: Dim("h"), 3: Dim("w")}, {2: Dim("a", max=8), 3: Dim("b", max=8)}))
    ep = tpe.export(f, x, y, dynamic_shapes=({2: Dim("h", min=5), 3: Dim("w", min=5)}, None))
    x2 = randn(1, 2, 33, 9)
    np.testing.assert_array_equal(ep.module()(x2, y), f(x2, y))


def test_interpolate_refuses_bad_arguments():
    x = randn(1, 2, 3, 3)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="exactly one"):
        nn.Upsample(size=3, scale_factor=2)
    with pytest.raises(ValueError, match="needs a 3-D input"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(NotImplementedError, match="align_corners=True"):
        F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    with pytest.raises(NotImplementedError, match="bicubic"):
        nn.Upsample(scale_factor=2, mode="bicubic")
    with pytest.raises(ValueError, match="positive ints"):
        F.interpolate(x, size=(0, 2))


# ----------------------------------------------------------------- adaptive pooling
def test_adaptive_pool_hand_values():
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    # bins [0, 2), [1, 4), [3, 5): overlapping where 5/3 is not whole
    np.testing.assert_allclose(F.adaptive_avg_pool1d(x, 3)[0, 0], [0.5, 2.0, 3.5])
    np.testing.assert_array_equal(F.adaptive_max_pool1d(x, 3)[0, 0], [1, 3, 4])
    img = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(2)(img)[0, 0], [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_array_equal(nn.AdaptiveMaxPool2d((1, 2))(img)[0, 0], [[13, 15]])
    assert nn.AdaptiveAvgPool2d((None, 1))(img).shape == (1, 1, 4, 1)
    assert nn.AdaptiveAvgPool2d(1)(img[0]).shape == (1, 1, 1)  # unbatched in, unbatched out


@pytest.mark.parametrize("out", [1, (2, 3), (3, 3), (7, 7), (4, None)])
def test_adaptive_pools_match_reference_at_several_sizes(out):
    for h, w in [(1, 1), (3, 7), (7, 4), (10, 10)]:
        x = randn(2, 3, h, w)
        sizes = (out, out) if isinstance(out, int) else tuple(s if s is not None else n for s, n in zip(out, (h, w)))
        np.testing.assert_allclose(nn.AdaptiveAvgPool2d(out)(x), adaptive_ref(x, sizes, np.mean), **TOL)
        np.testing.assert_array_equal(nn.AdaptiveMaxPool2d(out)(x), adaptive_ref(x, sizes, np.max).astype(np.float32))


@pytest.mark.parametrize("make", [lambda: nn.AdaptiveAvgPool2d(1), lambda: nn.AdaptiveAvgPool2d((3, 2)),
                                  lambda: nn.AdaptiveMaxPool2d((2, 5)), lambda: nn.AdaptiveMaxPool2d(1)],
                         ids=["avg1", "avg3x2", "max2x5", "max1"])
def test_adaptive_pools_export_with_symbolic_bins(make):
    m = make()
    spec = ({0: Dim("batch", max=32), 2: Dim("h", max=128), 3: Dim("w", max=128)},)
    ep = tpe.export(m, randn(2, 3, 13, 11), dynamic_shapes=spec)
    assert {str(k): (int(v.lower), int(v.upper)) for k, v in ep.range_constraints.items()} == \
        {"batch": (1, 32), "h": (1, 128), "w": (1, 128)}
    run = ep.module()
    for shape in [(1, 3, 1, 1), (2, 3, 5, 2), (3, 3, 128, 77)]:
        x = randn(*shape)
        np.testing.assert_allclose(run(x), m(x), **TOL)


def test_adaptive_pool_head_roundtrips_through_save_load():
    model = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1, rng=0), nn.ReLU(), nn.AdaptiveAvgPool2d((2, 2)),
                          nn.Flatten(1), nn.Linear(16, 5, rng=1)).eval()
    ep = tpe.export(model, randn(2, 3, 16, 12),
                    dynamic_shapes=({0: Dim("batch", max=16), 2: Dim("h", min=3, max=128),
                                     3: Dim("w", min=3, max=128)},))
    loaded = roundtrip(ep)
    for shape in [(1, 3, 3, 3), (4, 3, 41, 100)]:
        x = randn(*shape)
        np.testing.assert_allclose(loaded.module()(x), model(x), **TOL)


def test_adaptive_pool_refuses_bad_output_size():
    with pytest.raises(ValueError, match="positive ints or None"):
        F.adaptive_avg_pool2d(randn(1, 1, 4, 4), (0, 2))
    with pytest.raises(ValueError, match="3-D or 4-D"):
        F.adaptive_avg_pool2d(randn(4, 4), 1)
    with pytest.raises(NotImplementedError, match="return_indices"):
        nn.AdaptiveMaxPool2d(2, return_indices=True)


# ----------------------------------------------------------------- transposed convolution
def test_conv_transpose_hand_values():
    x = np.array([[[1.0, 2.0]]], np.float32)
    w = np.array([[[1.0, 10.0]]], np.float32)  # (C_in=1, C_out=1, k=2)
    np.testing.assert_array_equal(F.conv_transpose1d(x, w)[0, 0], [1, 12, 20])
    np.testing.assert_array_equal(F.conv_transpose1d(x, w, stride=2)[0, 0], [1, 10, 2, 20])
    np.testing.assert_array_equal(F.conv_transpose1d(x, w, stride=3)[0, 0], [1, 10, 0, 2, 20])
    np.testing.assert_array_equal(F.conv_transpose1d(x, w, stride=2, padding=1)[0, 0], [10, 2])
    np.testing.assert_array_equal(F.conv_transpose1d(x, w, stride=2, output_padding=1)[0, 0], [1, 10, 2, 20, 0])


CONV_T = {
    # (in, out, kernel, stride, padding, output_padding, groups, dilation)
    "k2s2": (3, 2, 2, 2, 0, 0, 1, 1),
    "k3s2p1op1": (4, 6, 3, 2, 1, 1, 2, 1),
    "k3s1p1": (2, 3, 3, 1, 1, 0, 1, 1),
    "k4s2p1": (4, 4, 4, 2, 1, 0, 4, 1),
    "rect_dilated": (2, 2, (3, 2), (1, 3), (2, 0), (0, 2), 1, (2, 1)),
    "crop": (2, 2, 2, 3, 2, 1, 1, 1),
}


def _conv_t(spec, bias=True):
    cin, cout, k, s, p, op, g, d = spec
    return nn.ConvTranspose2d(cin, cout, k, stride=s, padding=p, output_padding=op, groups=g, bias=bias,
                              dilation=d, rng=7)


def _pairs(m):
    return m.stride, m.padding, m.output_padding, m.groups, m.dilation


@pytest.mark.parametrize("name", list(CONV_T))
def test_conv_transpose2d_matches_scatter_reference(name):
    m = _conv_t(CONV_T[name])
    for h, w in [(2, 2), (3, 5), (6, 4)]:
        x = randn(2, m.in_channels, h, w)
        got = m(x)
        ref = conv_transpose_ref(x, m.weight, m.bias, *_pairs(m))
        assert got.shape == ref.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, ref, **TOL)
    no_bias = _conv_t(CONV_T[name], bias=False)
    x = randn(1, m.in_channels, 3, 3)
    np.testing.assert_allclose(no_bias(x), conv_transpose_ref(x, no_bias.weight, None, *_pairs(no_bias)), **TOL)
    np.testing.assert_allclose(m(x[0]), m(x)[0], **TOL)  # unbatched


@pytest.mark.parametrize("name", list(CONV_T))
def test_conv_transpose2d_exports_with_dynamic_batch_h_w(name):
    m = _conv_t(CONV_T[name]).eval()
    lo = 2 if name == "crop" else 1  # (H-1)*3 - 4 + 1 + 1 + 1 >= 1 needs H >= 2
    spec = ({0: Dim("batch", max=16), 2: Dim("h", min=lo, max=64), 3: Dim("w", min=lo, max=64)},)
    ep = tpe.export(m, randn(2, m.in_channels, 5, 6), dynamic_shapes=spec)
    run = ep.module()
    for shape in [(1, lo, lo), (3, 9, 2), (1, 64, 31)]:
        x = randn(shape[0], m.in_channels, shape[1], shape[2])
        np.testing.assert_allclose(run(x), conv_transpose_ref(x, m.weight, m.bias, *_pairs(m)), **TOL)


def test_conv_transpose_crop_without_min_size_is_a_violation_with_a_fix():
    m = _conv_t(CONV_T["crop"]).eval()
    spec = ({0: Dim("batch", max=16), 2: Dim("h", max=64), 3: Dim("w", max=64)},)
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(m, randn(2, 2, 5, 6), dynamic_shapes=spec)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    ep = tpe.export(m, randn(2, 2, 5, 6), dynamic_shapes=fixed)
    x = randn(1, 2, 2, 7)
    np.testing.assert_allclose(ep.module()(x), m(x), **TOL)


def test_conv_transpose1d_matches_reference_and_exports():
    m = nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1, rng=3)
    for length in (1, 4, 9):
        x = randn(2, 3, length)
        ref = conv_transpose_ref(x[:, :, None, :], m.weight[:, :, None, :], m.bias, (1, 2), (0, 1), (0, 1), 1, (1, 1))
        np.testing.assert_allclose(m(x), ref[:, :, 0, :], **TOL)
        assert m(x).shape == (2, 4, 2 * length)
    ep = tpe.export(m, randn(2, 3, 8), dynamic_shapes=({0: Dim("b", max=8), 2: Dim("l", max=400)},))
    loaded = roundtrip(ep)
    for shape in [(1, 3, 1), (5, 3, 400)]:
        x = randn(*shape)
        np.testing.assert_allclose(loaded.module()(x), m(x), **TOL)


def test_conv_transpose_parameters_follow_torch():
    m = nn.ConvTranspose2d(4, 6, 3, groups=2, rng=0)
    assert shapes(m) == [("weight", (4, 3, 3, 3)), ("bias", (6,))]
    bound = 1 / math.sqrt(3 * 3 * 3)  # fan-in = weight.size(1) * kh * kw
    assert np.abs(m.weight).max() <= bound and np.abs(m.weight).max() > 0.8 * bound
    assert np.abs(m.bias).max() <= bound
    np.testing.assert_array_equal(m.weight, nn.ConvTranspose2d(4, 6, 3, groups=2, rng=0).weight)
    assert shapes(nn.ConvTranspose1d(4, 6, 5, bias=False)) == [("weight", (4, 6, 5))]
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.ConvTranspose2d(3, 4, 2, groups=2)
    with pytest.raises(ValueError, match="output_padding"):
        nn.ConvTranspose2d(3, 4, 2, stride=2, output_padding=2)
    assert m(randn(1, 4, 2, 2), output_size=(4, 4)).shape == (1, 6, 4, 4)  # stride 1: the default size only
    with pytest.raises(ValueError, match="valid sizes along axis 0 range from 4 to 4"):
        m(randn(1, 4, 2, 2), output_size=(5, 4))


def test_conv_transpose_decomposes_to_primitives():
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, rng=0).eval()
    ep = tpe.export(m, randn(2, 2, 5, 5), dynamic_shapes=({0: Dim("b", max=8), 2: Dim("h", max=32)},))
    dec = ep.run_decompositions()
    assert not [n for n in dec.graph_module.graph.nodes if str(n.target).startswith("tpe.nn.")]
    x = randn(3, 2, 17, 5)
    np.testing.assert_allclose(dec.module()(x), m(x), **TOL)


# ----------------------------------------------------------------- group norm
@pytest.mark.parametrize("groups, channels", [(1, 4), (2, 4), (4, 4), (3, 6)])
def test_group_norm_matches_reference(groups, channels):
    m = nn.GroupNorm(groups, channels)
    m.weight[...] = randn(channels)
    m.bias[...] = randn(channels)
    for shape in [(1, channels, 1, 2), (2, channels, 3, 5), (3, channels, 7)]:
        x = randn(*shape)
        np.testing.assert_allclose(m(x), group_norm_ref(x, groups, m.weight, m.bias), rtol=1e-4, atol=1e-5)
    assert shapes(m) == [("weight", (channels,)), ("bias", (channels,))]


def test_group_norm_hand_value_and_errors():
    x = np.array([[[1.0], [3.0], [10.0], [10.0]]], np.float32)  # (1, 4, 1); groups {1, 3} and {10, 10}
    want = np.array([-1, 1, 0, 0]) / np.sqrt(np.array([1 + 1e-5, 1 + 1e-5, 1e-5, 1e-5]))
    np.testing.assert_allclose(nn.GroupNorm(2, 4, affine=False)(x)[0, :, 0], want, rtol=1e-5)
    assert shapes(nn.GroupNorm(2, 4, affine=False)) == []
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"expected an input \(N, 4"):
        nn.GroupNorm(2, 4)(randn(1, 6, 2))


def test_group_norm_exports_dynamic_and_roundtrips():
    m = nn.GroupNorm(2, 6).eval()
    m.weight[...] = randn(6)
    spec = ({0: Dim("batch", max=32), 2: Dim("h", max=64), 3: Dim("w", max=64)},)
    ep = tpe.export(m, randn(2, 6, 5, 4), dynamic_shapes=spec)
    loaded = roundtrip(ep)
    for shape in [(1, 6, 1, 1), (4, 6, 64, 3), (2, 6, 9, 17)]:
        x = randn(*shape)
        np.testing.assert_allclose(ep.module()(x), m(x), **TOL)
        np.testing.assert_allclose(loaded.module()(x), group_norm_ref(x, 2, m.weight, m.bias), rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------- recurrent cells
def test_cells_hand_values_with_zero_weights():
    gru, lstm = nn.GRUCell(3, 2, rng=0), nn.LSTMCell(3, 2, rng=0)
    for cell in (gru, lstm):
        for p in cell.parameters():
            p[...] = 0
    x, h, c = randn(4, 3), randn(4, 2), randn(4, 2)
    np.testing.assert_allclose(gru(x, h), 0.5 * h, rtol=1e-6)  # r = z = 1/2, n = tanh(0) = 0
    h2, c2 = lstm(x, (h, c))  # i = f = o = 1/2, g = 0
    np.testing.assert_allclose(c2, 0.5 * c, rtol=1e-6)
    np.testing.assert_allclose(h2, 0.5 * np.tanh(0.5 * c), rtol=1e-6)


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_cells_match_reference(batch):
    gru, lstm = nn.GRUCell(5, 4, rng=1), nn.LSTMCell(5, 4, rng=2)
    rnn = nn.RNNCell(5, 4, nonlinearity="relu", rng=3)
    x, h, c = randn(batch, 5), randn(batch, 4), randn(batch, 4)
    np.testing.assert_allclose(gru(x, h), gru_ref(gru, x, h), **TOL)
    np.testing.assert_allclose(gru(x), gru_ref(gru, x, np.zeros((batch, 4))), **TOL)
    for got, want in zip(lstm(x, (h, c)), lstm_ref(lstm, x, h, c)):
        np.testing.assert_allclose(got, want, **TOL)
    for got, want in zip(lstm(x), lstm_ref(lstm, x, np.zeros((batch, 4)), np.zeros((batch, 4)))):
        np.testing.assert_allclose(got, want, **TOL)
    want = np.maximum(x @ rnn.weight_ih.T + rnn.bias_ih + h @ rnn.weight_hh.T + rnn.bias_hh, 0)
    np.testing.assert_allclose(rnn(x, h), want, **TOL)
    np.testing.assert_allclose(gru(x[0], h[0]), gru(x, h)[0], **TOL)  # unbatched


def test_cell_parameters_follow_torch():
    assert shapes(nn.GRUCell(6, 8)) == [("weight_ih", (24, 6)), ("weight_hh", (24, 8)),
                                        ("bias_ih", (24,)), ("bias_hh", (24,))]
    assert shapes(nn.LSTMCell(6, 8)) == [("weight_ih", (32, 6)), ("weight_hh", (32, 8)),
                                         ("bias_ih", (32,)), ("bias_hh", (32,))]
    assert shapes(nn.RNNCell(6, 8, bias=False)) == [("weight_ih", (8, 6)), ("weight_hh", (8, 8))]
    m = nn.LSTMCell(6, 16, rng=5)
    assert all(np.abs(p).max() <= 0.25 for p in m.parameters())  # U(-1/sqrt(16), 1/sqrt(16))
    np.testing.assert_array_equal(m.weight_hh, nn.LSTMCell(6, 16, rng=5).weight_hh)
    # a state_dict with torch's names loads
    other = nn.LSTMCell(6, 16, rng=6)
    other.load_state_dict({k: v.copy() for k, v in m.state_dict().items()})
    np.testing.assert_array_equal(other.bias_ih, m.bias_ih)
    with pytest.raises(ValueError, match="input_size=6"):
        m(randn(2, 5))
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(2, 2, nonlinearity="gelu")


class Unrolled(nn.Module):
    """An LSTMCell then a GRUCell unrolled over a static number of steps (a seq2seq decoder's loop)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTMCell(4, 6, rng=0)
        self.gru = nn.GRUCell(6, 5, rng=1)

    def forward(self, xs):
        h = c = None
        g = None
        outs = []
        for t in range(xs.shape[1]):
            h, c = self.lstm(xs[:, t], None if h is None else (h, c))
            g = self.gru(h, g)
            outs.append(g)
        return np.stack(outs, axis=1)


def test_cells_export_with_dynamic_batch_and_roundtrip():
    model = Unrolled().eval()
    ep = tpe.export(model, randn(3, 4, 4), dynamic_shapes=({0: Dim("batch", max=64)},))
    loaded = roundtrip(ep)
    for b in (1, 7, 64):
        x = randn(b, 4, 4)
        np.testing.assert_allclose(ep.module()(x), model(x), **TOL)
        np.testing.assert_allclose(loaded.module()(x), model(x), **TOL)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(2, 5, 4))  # the step count was static in the example
