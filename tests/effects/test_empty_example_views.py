"""A view that is empty in the example is still a view: a write through it reaches its base at
every other size.  An empty array shares no memory with anything, so numpy's own answer on the
example (``np.may_share_memory``) says no; basic indexing and transposes are views whatever the
sizes, and capture follows them as such (``capture/views.py``)."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("b", max=16)}}


def through_slice(x):
    y = x[1:]
    y[...] = 0.0
    return x.copy()


def through_slice_then_reshape(x):
    y = x[1:].reshape(-1)
    y[...] = 0.0
    return x.sum()


def intermediate_in_place(x):
    h = x * 1.0
    v = h[1:]
    v *= 0.0
    return h


def copyto_a_slice(x):
    h = x * 1.0
    np.copyto(h[1:], 7.0)
    return h


def through_transposed_slice(x):
    h = x * 1.0
    h[1:].T[0] = -1.0
    return h


@pytest.mark.parametrize("model", [through_slice, through_slice_then_reshape, intermediate_in_place, copyto_a_slice,
                                   through_transposed_slice], ids=lambda f: f.__name__)
def test_a_write_through_a_view_empty_in_the_example(model, tmp_path):
    ep = tpe.export(model, np.ones((1, 4)), dynamic_shapes=SPEC)   # x[1:] is empty here
    tpe.save(ep, tmp_path / "p.pt2")
    loaded = tpe.load(tmp_path / "p.pt2")
    for b in (1, 2, 3, 16):
        for program in (ep, loaded):
            x = np.arange(b * 4, dtype=np.float64).reshape(b, 4) + 1.0
            xe, xp = x.copy(), x.copy()
            np.testing.assert_array_equal(program.module()(xp), model(xe))
            np.testing.assert_array_equal(xp, xe)   # the caller's input written as eager writes it
