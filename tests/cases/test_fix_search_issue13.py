"""Issue 13, solver side, through the public API: export -> ConstraintViolationError ->
refine_dynamic_shapes_from_suggested_fixes -> export, and the final program checked over a
grid in both directions (admitted sizes run and match eager, refused sizes raise
ConstraintsExceededError), so a fix that pins or narrows more than needed fails.

Items 7 and 8 (``dy = 32 - dx``, ``dz = dx + dy``) need refine and Dim arithmetic for the
new derived-dim forms and are tested at the solver level (tests/solver/test_fixes_issue13.py).
"""
import numpy as np

import tensorplay_export as tpe
from _contract import verify
from tensorplay_export import Dim, nn

R = np.random.default_rng(13)


def rnd(*shape):
    return R.standard_normal(shape).astype(np.float32)


def one_block(model, args, spec):
    """The violation's fix block, and that one refine step is enough."""
    try:
        tpe.export(model, *args, dynamic_shapes=spec)
    except tpe.ConstraintViolationError as err:
        refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec)
        tpe.export(model, *args, dynamic_shapes=refined)
        return list(err.fixes)
    raise AssertionError("export accepted a model that violates the declared shapes")


# -- 1. offsets behind Min/Max ------------------------------------------------------------------------
def test_item1_offset_slice_gives_relation():
    def model(x, y):
        return x + y[2:]
    spec = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}}
    assert one_block(model, (rnd(5), rnd(7)), spec) == ["dy = dx + 2"]
    verify(model, lambda dx, dy: ((rnd(dx), rnd(dy)), {}), spec, dict(dx=5, dy=7),
           lambda dx, dy: dy == dx + 2, dict(dx=[1, 2, 5, 30], dy=[1, 3, 4, 7, 32]), "violation")


def test_item1_slice_by_other_length_gives_relation():
    def model(x, y):
        return x[:y.shape[0]] + y[2:]
    spec = {"x": {0: Dim("a")}, "y": {0: Dim("b")}}
    assert one_block(model, (rnd(5), rnd(7)), spec) == ["b = a + 2"]
    verify(model, lambda a, b: ((rnd(a), rnd(b)), {}), spec, dict(a=5, b=7),
           lambda a, b: b == a + 2, dict(a=[1, 2, 5, 9], b=[1, 3, 4, 7, 11]), "violation")


def test_item1_three_dims_from_one_root():
    def model(x, y, z):
        return x.reshape(-1, 3).sum() + (x + y) + (x + z[2:])
    spec = {"x": {0: Dim("dx", max=99)}, "y": {0: Dim("dy")}, "z": {0: Dim("dz", max=50)}}
    assert one_block(model, (rnd(6), rnd(6), rnd(8)), spec) == [
        "_dx = Dim('_dx', max=16)", "dx = 3*_dx", "dy = 3*_dx", "dz = 3*_dx + 2"]
    verify(model, lambda dx, dy, dz: ((rnd(dx), rnd(dy), rnd(dz)), {}), spec, dict(dx=6, dy=6, dz=8),
           lambda dx, dy, dz: dx % 3 == 0 and 3 <= dx <= 48 and dy == dx and dz == dx + 2,
           dict(dx=[3, 4, 6, 48, 51], dy=[3, 6, 48, 51], dz=[5, 8, 50, 53]), "violation")


# -- 2. a Min branch ------------------------------------------------------------------------------------
def test_item2_min_branch():
    def model(x, y):
        return x[:3] + y
    spec = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}}
    assert one_block(model, (rnd(5), rnd(3)), spec) == ["dx = Dim('dx', min=3)", "dy = 3"]
    verify(model, lambda dx, dy: ((rnd(dx), rnd(dy)), {}), spec, dict(dx=5, dy=3),
           lambda dx, dy: dx >= 3 and dy == 3, dict(dx=[1, 2, 3, 4, 40], dy=[1, 2, 3, 4]), "violation")


def test_item2_tied_example_keeps_wider_branch():
    def model(x, y):
        return x[:3] + y
    spec = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}}
    assert one_block(model, (rnd(3), rnd(3)), spec) == ["dx = Dim('dx', min=3)", "dy = 3"]


# -- 3. reshape pooling pyramid ----------------------------------------------------------------------------
def _down(x):
    b, c, h, w = x.shape
    return x.reshape(b, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


def _up(x):
    return x.repeat(2, axis=2).repeat(2, axis=3)


def _pyramid(x):
    s1 = x
    s2 = _down(s1)
    s3 = _down(s2)
    y = _down(s3)
    y = _up(y) + s3
    y = _up(y) + s2
    return _up(y) + s1


def test_item3_pooling_pyramid_in_one_block():
    spec = {"x": {0: Dim("batch", max=8), 2: Dim("h", max=256), 3: Dim("w", max=256)}}
    assert one_block(_pyramid, (rnd(2, 3, 16, 24),), spec) == [
        "_h = Dim('_h', max=32)", "_w = Dim('_w', max=32)", "h = 8*_h", "w = 8*_w"]
    verify(_pyramid, lambda batch, h, w: ((rnd(batch, 3, h, w),), {}), spec, dict(batch=2, h=16, w=24),
           lambda batch, h, w: 1 <= batch <= 8 and h % 8 == 0 and w % 8 == 0 and 8 <= h <= 256 and 8 <= w <= 256,
           dict(batch=[1, 8], h=[4, 8, 12, 16, 20, 256], w=[8, 24, 28, 248, 256]), "violation")


# -- 4. a fix that makes another guard expressible --------------------------------------------------------
def test_item4_both_lines_in_one_block():
    def model(x, y):
        return x.reshape(-1, 2).sum(axis=-1) + y
    spec = {"x": {0: Dim("dx", max=100)}, "y": {0: Dim("dy", max=100)}}
    assert one_block(model, (rnd(8), rnd(4)), spec) == ["dy = Dim('dy', max=50)", "dx = 2*dy"]
    verify(model, lambda dx, dy: ((rnd(dx), rnd(dy)), {}), spec, dict(dx=8, dy=4),
           lambda dx, dy: dx % 2 == 0 and 2 <= dx <= 100 and dy * 2 == dx,
           dict(dx=[1, 2, 7, 8, 100], dy=[1, 3, 4, 50, 51]), "violation")


# -- 5. a large least common multiple ---------------------------------------------------------------------
def test_item5_lcm_of_row_sizes():
    def model(x):
        return x.reshape(-1, 56).sum() + x.reshape(-1, 45).sum() + x.reshape(-1, 8).sum()
    spec = {"x": {0: Dim("n", max=100000)}}
    assert one_block(model, (rnd(5040),), spec) == ["_n = Dim('_n', max=39)", "n = 2520*_n"]
    verify(model, lambda n: ((rnd(n),), {}), spec, dict(n=5040),
           lambda n: n % 2520 == 0 and 2520 <= n <= 98280,
           dict(n=[8, 56, 2519, 2520, 5040, 7560, 98280, 100800]), "violation")


# -- 6. a product equality: pin the fewest dims ---------------------------------------------------------------
class _Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc(x.reshape(x.shape[0], -1))


def test_item6_flattened_linear_pins_both_dims():
    model = _Head()
    spec = {"x": {0: Dim("batch", max=8), 1: Dim("h", max=64), 2: Dim("w", max=64)}}
    assert one_block(model, (rnd(2, 4, 4),), spec) == ["h = 4", "w = 4"]
    verify(model, lambda batch, h, w: ((rnd(batch, h, w),), {}), spec, dict(batch=2, h=4, w=4),
           lambda batch, h, w: 1 <= batch <= 8 and h == 4 and w == 4,
           dict(batch=[1, 8, 9], h=[2, 4, 8], w=[2, 4, 8]), "violation")
