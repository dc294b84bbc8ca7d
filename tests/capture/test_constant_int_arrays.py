"""Integer arrays the program holds as constants act as their values where numpy takes ints.

An array numpy made from Python ints during the call (``np.array(3)``, ``np.array([2, -1])``)
or a module global is a constant of the program: used as a slice bound or step, a shape,
repetitions or axes, it is its value (no data-dependent size, nothing pinned), as in eager.
A constant read by a node at the top of the graph has its value wherever the program's
regions run (the small-example probe of the eager safety net runs the input checks there).
An array made during the call is the model's own: writing into it is no constant write.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

X = np.arange(24, dtype=np.float32).reshape(6, 4)
BOUND = np.array(3)


def _equal_at(ep, fn, shapes) -> bool:
    for shape in shapes:
        x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        want, got = fn(x), ep.module()(x)
        want = want if isinstance(want, (tuple, list)) else [want]
        got = got if isinstance(got, (tuple, list)) else [got]
        if not all(np.array_equal(np.asarray(w), np.asarray(g)) for w, g in zip(want, got)):
            return False
    return True


@pytest.mark.parametrize("spec", [{"x": {0: Dim("n")}}, {"x": {1: Dim("m")}}, {"x": {0: Dim.AUTO}}])
def test_zero_d_array_as_slice_bound_with_dynamic_dims(spec):
    def f(x):
        return x[:np.array(3)]

    ep = tpe.export(f, X, dynamic_shapes=spec)
    assert _equal_at(ep, f, [(10, 4)] if 0 in spec["x"] else [(6, 4)])


def test_buffer_read_as_a_size_at_the_top_of_the_graph_has_its_value_in_the_probe():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("k", np.array(3))

        def forward(self, x):
            return x[:self.k]

    m = M()
    ep = tpe.export(m, X, dynamic_shapes={"x": {0: Dim("n")}})
    x = np.ones((9, 4), np.float32)
    assert np.array_equal(ep.module()(x), m(x))


@pytest.mark.parametrize("name,fn", [
    ("slice step", lambda x: x[::np.array(2)]),
    ("slice start", lambda x: x[np.array(1):]),
    ("global bound", lambda x: x[:BOUND]),
    ("reshape", lambda x: x.reshape(np.array([2, -1]))),
    ("tile", lambda x: np.tile(x, np.array([1, 2]))),
    ("transpose method", lambda x: x.transpose(np.array([1, 0]))),
    ("zeros", lambda x: x.sum() + np.zeros(np.array([2, 3]))),
])
def test_constant_int_array_is_its_value(name, fn):
    ep = tpe.export(fn, X)
    assert _equal_at(ep, fn, [(6, 4)])
    # a constant's value is no data-dependent size: the program has no unbacked symbol, and
    # holds the value in its code rather than an input it reads at run time
    assert not [s for s in ep.range_constraints if str(s).startswith("u")]
    assert not ep.constants


def test_constant_fill_value_keeps_its_dtype():
    def f(x):
        return np.full(np.array([2, 2], np.int32), np.array(7, np.int8)) + x[:2, :2].astype(np.int8)

    ep = tpe.export(f, X)
    got = ep.module()(X)
    assert got.dtype == f(X).dtype == np.int8 and np.array_equal(got, f(X))


def test_constant_step_keeps_the_axis_dynamic():
    def f(x):
        return x[::np.array(2)]

    ep = tpe.export(f, X, dynamic_shapes={"x": {0: Dim("n", max=100)}})
    assert [str(s) for s in ep.range_constraints] == ["n"]
    assert _equal_at(ep, f, [(7, 4), (1, 4), (50, 4)])


def test_array_made_in_the_call_may_be_written_and_the_program_starts_from_its_made_value():
    def f(x):
        s = np.array([6, 4])
        s[0] += 1           # applied once per call, in eager and in the program
        s[-1] = 2
        return x[:3], s

    ep = tpe.export(f, X)
    m = ep.module()
    for _ in range(2):
        assert np.array_equal(m(X)[1], f(X)[1])


def test_shape_copied_to_an_array_and_edited():
    def f(x):
        s = np.array(x.shape)
        s[0] = -1
        s[-1] = 2
        return x.reshape(s)

    ep = tpe.export(f, X)
    assert _equal_at(ep, f, [(6, 4)])


def test_a_write_into_a_module_global_is_still_refused():
    table = np.array([1, 2, 3])

    def f(x):
        t = np.asarray(table)   # the global itself, not a copy
        t[0] = 5
        return x + 1

    with pytest.raises(tpe.CaptureError, match="does not own"):
        tpe.export(f, X)


def test_int_array_computed_from_data_is_still_data():
    def f(x):
        return x.reshape((x[0, :2] * 0 + np.array([2, 12])).astype(np.int64))

    with pytest.raises(tpe.DataDependentError):
        tpe.export(f, X)
