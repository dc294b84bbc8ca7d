"""A conv stack + flatten guard reads in one notation: the guard and its reason print through the one
printer (``//``, nested floors collapsed, the product factored), and the proved fix exports a program
that matches eager at other sizes."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, stride=2, padding=1, rng=0)
        self.c2 = nn.Conv2d(4, 4, 3, stride=2, padding=1, rng=1)
        self.fc = nn.Linear(64, 10, rng=2)

    def forward(self, x):
        h = self.c2(self.c1(x))
        return self.fc(h.reshape(h.shape[0], -1))


def _x(b, h, w, seed=0):
    return np.random.default_rng(seed).standard_normal((b, 1, h, w)).astype(np.float32)


def test_conv_flatten_guard_and_reason_share_one_notation():
    model = CNN().eval()
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, _x(2, 16, 16), dynamic_shapes={"x": {0: Dim("b"), 2: Dim("h"), 3: Dim("w")}})
    text = str(info.value)
    assert "((h + 3) // 4)*((w + 3) // 4) == 16" in text
    assert "input features 4*((h + 3) // 4)*((w + 3) // 4) must equal weight's in_features 64" in text
    assert "floor(" not in text and "1/2" not in text
    # the fix the message proves exports, and the program is eager numpy at other sizes
    ep = tpe.export(model, _x(2, 16, 16), dynamic_shapes={"x": {0: Dim("b"), 2: Dim("h", min=13, max=16),
                                                                  3: Dim("w", min=13, max=16)}})
    for b, h, w in ((1, 13, 14), (3, 15, 13), (2, 14, 16)):
        x = _x(b, h, w, seed=h * w)
        np.testing.assert_array_equal(ep.module()(x), model(x))


def test_draft_report_has_no_sympy_floor_notation():
    report = str(tpe.draft_export(CNN().eval(), _x(2, 16, 16),
                                  dynamic_shapes={"x": {0: Dim("b"), 2: Dim("h"), 3: Dim("w")}}))
    assert "((h + 3) // 4)*((w + 3) // 4) == 16" in report and "floor(" not in report


def test_reshape_reason_prints_its_sizes_like_the_guard():
    fn = lambda x: x[::2, ::2].reshape(-1, 4)  # noqa: E731
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(fn, np.ones((8, 8)), dynamic_shapes={"x": {0: Dim("h"), 1: Dim("w")}})
    text = str(info.value)
    assert "(reshape of ((h + 1) // 2)*((w + 1) // 2) elements into (-1, 4))" in text and "floor(" not in text
    ep = tpe.export(fn, np.ones((8, 8)), dynamic_shapes={"x": {0: 8 * Dim("_h", max=4), 1: Dim("w", max=16)}})
    for h, w in ((8, 3), (16, 5), (32, 16)):
        x = np.arange(h * w, dtype=np.float64).reshape(h, w)
        np.testing.assert_array_equal(ep.module()(x), fn(x))
