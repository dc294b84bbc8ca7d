"""Views capture does not follow (``np.rot90``, ``np.atleast_3d``, pieces of ``np.split``...):
a write through one, or into its argument, is refused at the write's line.  The replay check
alone missed writes that change nothing at the example (``abs`` of non-negative values), and
the program then differed from eager on other inputs."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("b", min=2, max=16), 1: Dim("n", min=2, max=16)}}
EXAMPLE = np.arange(12, dtype=np.float64).reshape(3, 4)   # non-negative: abs changes nothing here


def via_rot90(x):
    y = np.rot90(x)
    y[...] = np.abs(y)
    return x * 1


def via_atleast_3d(x):
    y = np.atleast_3d(x)
    np.maximum(y, 0.0, out=y)
    return x * 1


def via_array_split(x):
    y = np.array_split(x, 2, axis=0)[0]
    y[...] = np.abs(y)
    return x * 1


def via_split(x):
    y = np.split(x, [1])[1]
    y += np.abs(y) - y
    return x * 1


def into_the_argument(x):
    h = x * 1.0
    top = np.array_split(h, 2, axis=0)[0]
    h[...] = np.abs(h)
    return top * 1


@pytest.mark.parametrize("model, op", [(via_rot90, "numpy.rot90"), (via_atleast_3d, "numpy.atleast_3d"),
                                       (via_array_split, "numpy.array_split"), (via_split, "numpy.split"),
                                       (into_the_argument, "numpy.array_split")],
                         ids=lambda v: getattr(v, "__name__", v))
def test_a_write_through_an_unfollowed_view_is_refused_at_its_line(model, op):
    with pytest.raises(tpe.UnsupportedOpError, match=rf"a write into the (result|argument) of {op}, whose result "
                                                      r"numpy makes a view .* write into a copy") as info:
        tpe.export(model, EXAMPLE.copy(), dynamic_shapes=SPEC)
    assert "test_unfollowed_views.py" in str(info.value)


def pieces_read_and_copied(x):
    top, bottom = np.array_split(x, 2, axis=0)
    mine = np.rot90(x).copy()       # a copy is the model's own array: writes into it are fine
    mine[...] = np.abs(mine)
    return top.sum(0) - bottom.sum(0) + mine.sum()


def test_reading_unfollowed_views_and_writing_a_copy_export():
    ep = tpe.export(pieces_read_and_copied, EXAMPLE.copy(), dynamic_shapes=SPEC)
    for b, n in [(2, 2), (5, 3), (16, 16)]:
        x = np.linspace(-4.0, 4.0, b * n).reshape(b, n)
        xe, xp = x.copy(), x.copy()
        np.testing.assert_allclose(ep.module()(xp), pieces_read_and_copied(xe))
        np.testing.assert_array_equal(xp, xe)


def test_every_unfollowed_view_op_is_a_registered_op():
    import tensorplay_export.nn._composites  # noqa: F401 - registers the nn composites
    from tensorplay_export.capture.views import UNFOLLOWED_VIEW_OPS, VIEW_OPS
    from tensorplay_export.ops.registry import all_ops

    assert UNFOLLOWED_VIEW_OPS <= set(all_ops()) and not UNFOLLOWED_VIEW_OPS & set(VIEW_OPS)
