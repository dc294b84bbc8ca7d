"""ConvTranspose1d/2d ``forward(x, output_size=...)`` (torch's semantics: output_padding is the
wanted size minus the default one, in ``[0, max(stride, dilation))``): eager equals the layer built
with that output_padding; exported with dynamic sizes (the U-Net idiom ``up(h, output_size=skip.shape)``)
it equals eager at every size, the range requirement is a guard, and a saved program loads the same."""
import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _with_padding(layer, cls, pads, **kw):
    other = cls(layer.in_channels, layer.out_channels, layer.kernel_size, stride=layer.stride,
                padding=layer.padding, output_padding=pads, dilation=layer.dilation, **kw)
    other.weight, other.bias = layer.weight, layer.bias
    return other


@pytest.mark.parametrize("h, w, out", [(4, 5, (8, 9)), (4, 5, (7, 10)), (3, 3, (1, 2, 6, 5))])
def test_eager_output_size_equals_the_layer_with_that_output_padding(h, w, out):
    up = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, rng=0)
    x = randn(1, 3, h, w)
    got = up(x, output_size=out)
    pads = (out[-2] - (2 * h - 1), out[-1] - (2 * w - 1))
    np.testing.assert_array_equal(got, _with_padding(up, nn.ConvTranspose2d, pads)(x))
    assert got.shape[-2:] == tuple(out[-2:])


def test_eager_output_size_out_of_reach_raises_like_torch():
    up = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, rng=0)
    with pytest.raises(ValueError, match="range from 7 to 8"):
        up(randn(1, 3, 4, 4), output_size=(9, 8))
    with pytest.raises(ValueError, match="2 or 4 elements"):
        up(randn(1, 3, 4, 4), output_size=(8,))


class UNetStep(nn.Module):
    def __init__(self, dims=2):
        super().__init__()
        conv, up = (nn.Conv2d, nn.ConvTranspose2d) if dims == 2 else (nn.Conv1d, nn.ConvTranspose1d)
        self.down = conv(2, 4, 3, stride=2, padding=1, rng=0)
        self.up = up(4, 2, 3, stride=2, padding=1, rng=1)

    def forward(self, x):
        return self.up(self.down(x), output_size=x.shape) + x


def _round_trip(ep):
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    return tpe.load(buf)


def test_unet_step_exports_with_dynamic_height_and_width():
    model = UNetStep()
    spec = {"x": {2: Dim("h", min=3, max=64), 3: Dim("w", min=3, max=64)}}
    ep = tpe.export(model, randn(1, 2, 9, 10), dynamic_shapes=spec)
    loaded = _round_trip(ep)
    for h, w in ((3, 3), (4, 7), (9, 10), (16, 33), (64, 64)):
        x = randn(1, 2, h, w, seed=h * w)
        want = model(x)
        for mod in (ep.module(), loaded.module()):
            np.testing.assert_array_equal(mod(x), want)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(1, 2, 65, 8))


def test_unet_step_1d_exports_with_a_dynamic_length():
    model = UNetStep(dims=1)
    ep = tpe.export(model, randn(2, 2, 11), dynamic_shapes={"x": {2: Dim("t", min=2, max=128)}})
    for t in (2, 3, 12, 127):
        x = randn(2, 2, t, seed=t)
        np.testing.assert_array_equal(_round_trip(ep).module()(x), model(x))
        np.testing.assert_array_equal(ep.module()(x), model(x))


def test_an_output_size_out_of_reach_for_some_sizes_is_a_violation():
    class Up(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.ConvTranspose2d(2, 2, 2, stride=2, rng=0)

        def forward(self, x, skip):  # default size 2*h; skip of 2*h + 1 rows reaches it, 2*h + 2 does not
            return self.up(x, output_size=skip.shape)

    spec = {"x": {2: Dim("h", max=16)}, "skip": {2: Dim("s", max=40)}}
    with pytest.raises(tpe.ConstraintViolationError):
        tpe.export(Up(), randn(1, 2, 4, 4), randn(1, 2, 9, 8), dynamic_shapes=spec)
