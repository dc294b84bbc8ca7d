"""np.mgrid, np.ogrid, np.r_ and np.c_ with sizes in the subscript keep those sizes dynamic
(capture/index_tricks.py): each program equals eager numpy (structure, dtype, values bit for
bit) at every size of the range checked, and saves and loads."""
from __future__ import annotations

import io

import numpy as np
import pytest
from numpy import c_, mgrid, r_

from _shared import same_output

import tensorplay_export as tpe
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=40), 1: Dim("m", max=40)}}
SIZES = [(1, 1), (2, 3), (5, 4), (7, 2), (16, 9), (40, 40)]


def grid2(x):
    return np.mgrid[0:x.shape[0], 0:x.shape[1]].sum(0) + x


def grid_offset_step(x):
    n, m = x.shape
    return np.mgrid[1:n + 1, m:0:-2]  # an offset and a negative step


def ogrid2(x):
    a, b = np.ogrid[0:x.shape[0], 2:x.shape[1] + 2]
    return x * a + b


def ogrid3(x):
    n, m = x.shape
    i, j, k = np.ogrid[0:n, 0:m, 0:3]
    return i + j * k


def ogrid1(x):
    return x + np.ogrid[0:x.shape[1]]


def mgrid1(x):
    return x + np.mgrid[0:x.shape[0]][:, None]


def mgrid1_step(x):
    return np.mgrid[x.shape[0]:0:-3]


def r_slices(x):
    return np.r_[0:x.shape[0], 100:100 + x.shape[1]]


def r_arrays(x):
    return np.r_[x[:, 0], x[0], 7]


def r_size_scalar(x):
    return np.r_[x[:, 0], x.shape[1]]


def r_uint8(x):
    return r_[x[:, 0].astype(np.uint8), 3, 0:x.shape[1]]  # read from a global: `from numpy import r_`


def c_columns(x):
    return np.c_[x[:, 0], x[:, -1], 0:x.shape[0]]


def c_matrix(x):
    return c_[x, x[:, :1] * 2]


def mgrid_global(x):
    return mgrid[0:x.shape[1], 0:x.shape[0]][1]


MODELS = [grid2, grid_offset_step, ogrid2, ogrid3, ogrid1, mgrid1, mgrid1_step, r_slices, r_arrays,
          r_size_scalar, r_uint8, c_columns, c_matrix, mgrid_global]


def example(n, m):
    return np.arange(n * m, dtype=np.float32).reshape(n, m) / 7


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_program_equals_numpy_at_every_size(model):
    ep = tpe.export(model, example(5, 4), dynamic_shapes=SPEC)
    assert {str(k) for k in ep.range_constraints} == {"n", "m"}
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    for n, m in SIZES:
        x = example(n, m)
        want = model(x)
        same_output(ep.module()(x), want, f"{model.__name__} at {(n, m)}")
        same_output(loaded.module()(x), want, f"{model.__name__} loaded, at {(n, m)}")


def test_static_subscripts_are_numpy_own():
    def model(x):
        return x + np.mgrid[0:3, 0:4].sum(0) + np.r_[1:5]

    ep = tpe.export(model, example(3, 4), dynamic_shapes={"x": None})
    same_output(ep.module()(example(3, 4)), model(example(3, 4)), "static")


def r_directive(x):
    return np.r_["0,2", x[:, 0], 0:x.shape[0]]


def r_directive_trans(x):
    return np.r_["1,2,0", x[:, 0], x[:, -1]]


def r_axis_directive(x):
    return np.r_["1", x, x[:, :2]]


@pytest.mark.parametrize("model", [r_directive, r_directive_trans, r_axis_directive], ids=lambda f: f.__name__)
def test_directives_follow_numpy(model):
    ep = tpe.export(model, example(5, 4), dynamic_shapes=SPEC)
    for n, m in SIZES:
        same_output(ep.module()(example(n, m)), model(example(n, m)), f"{model.__name__} at {(n, m)}")


def test_a_complex_step_is_numpy_own_code_and_pins_with_a_reason():
    def model(x):
        return x[:, 0] + np.mgrid[0:x.shape[0]:5j][:1]

    with pytest.raises(tpe.ConstraintViolationError, match="specialized"):
        tpe.export(model, example(5, 4), dynamic_shapes=SPEC)


def test_mgrid_beyond_the_example_sizes_needs_no_guard():
    """The grid's sizes are the slice lengths, so nothing narrows n and m: the range stays [1, 40]."""
    ep = tpe.export(grid_offset_step, example(2, 9), dynamic_shapes=SPEC)
    assert [(v.lower, v.upper) for v in ep.range_constraints.values()] == [(1, 40), (1, 40)]


def test_a_float_step_of_a_size_pins_it_and_keeps_numpy_dtype():
    def model(x):
        return np.mgrid[0:1:1 / x.shape[0]] + x.sum()

    ep = tpe.export(model, np.ones(5), dynamic_shapes={"x": {0: Dim.AUTO}})
    same_output(ep.module()(np.ones(5)), model(np.ones(5)), "pinned at 5")
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones(4))
