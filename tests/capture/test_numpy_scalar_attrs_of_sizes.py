"""numpy integer scalars of sizes have numpy's scalar attributes during capture, as in eager:
``.itemsize`` (static), ``.tolist()`` (the size), ``.view()`` (between integer types of one
width: the value modulo 2**bits, a size expression; else the example's bits, pinned) and
``.tobytes()`` (the example's bytes, pinned).  Each program is run at every admitted size."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

TOP = 30


def rows(n):
    return np.arange(3.0 * n).reshape(n, 3)


def admitted(ep, model):
    ok = []
    for k in range(1, TOP + 1):
        try:
            got = ep.module()(rows(k))
        except tpe.ConstraintsExceededError:
            continue
        want = model(rows(k))
        assert got.dtype == want.dtype and np.array_equal(got, want), (k, got, want)
        ok.append(k)
    return ok


DYNAMIC = {  # name -> (model, the sizes eager runs at)
    "itemsize": (lambda x: x * np.int32(x.shape[0]).itemsize, range(1, TOP + 1)),
    "nbytes": (lambda x: x * np.int16(x.shape[0]).nbytes, range(1, TOP + 1)),
    "tolist": (lambda x: x * np.int8(x.shape[0]).tolist(), range(1, TOP + 1)),
    "view same width": (lambda x: x * np.int16(x.shape[0]).view(np.uint16), range(1, TOP + 1)),
    # np.int8(n + 120) needs n + 120 <= 127; the view wraps nothing then
    "view of a narrow type": (lambda x: x + np.int8(x.shape[0] + 120).view(np.uint8), range(1, 8)),
    "view negative": (lambda x: x + np.int8(-x.shape[0]).view(np.uint8), range(1, TOP + 1)),  # 256 - n
}


@pytest.mark.parametrize("name", list(DYNAMIC))
def test_scalar_attributes_stay_dynamic(name):
    model, sizes = DYNAMIC[name]
    ep = tpe.export(model, rows(5), dynamic_shapes={"x": {0: Dim("n", max=TOP)}} if name != "view of a narrow type"
                    else {"x": {0: Dim.AUTO(max=TOP)}})
    assert admitted(ep, model) == list(sizes)


@pytest.mark.parametrize("name, model, reason", [
    ("tobytes", lambda x: x * np.frombuffer(np.int64(x.shape[0]).tobytes(), np.int64)[0], ".tobytes()"),
    ("view as float", lambda x: x * np.int64(x.shape[0]).view(np.float64), ".view()"),
])
def test_bytes_of_a_size_pin_it_with_a_reason(name, model, reason):
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, rows(5), dynamic_shapes={"x": {0: Dim("n", max=TOP)}})
    assert reason in str(info.value)
    ep = tpe.export(model, rows(5), dynamic_shapes={"x": {0: Dim.AUTO(max=TOP)}})
    assert admitted(ep, model) == [5]


def test_a_python_int_size_has_no_numpy_attributes():
    def model(x):
        return x * (hasattr(x.shape[0], "itemsize") + 1)

    assert model(rows(2))[0, 1] == 1.0
    ep = tpe.export(model, rows(4), dynamic_shapes={"x": {0: Dim("n", max=TOP)}})
    assert admitted(ep, model) == list(range(1, TOP + 1))
