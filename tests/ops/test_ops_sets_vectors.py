"""vdot, vecdot, cross, matrix_transpose, einsum's sublist form, unstack, ufunc.reduce of binary
ufuncs (logaddexp.reduce), compress / extract, and the data-dependent set ops (unique(axis=),
trim_zeros, setdiff1d, intersect1d, union1d) on a dynamic axis.

Each program is exported once with a dynamic dim, saved and loaded, and both the program and the
loaded one are run at sizes other than the example: values equal to eager numpy's bit for bit
(same shape, same dtype).
"""
import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import UnsupportedOpError

SPEC = {"x": {0: Dim("n", min=4, max=32)}}


def _as_list(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def rounded(n, seed=0):
    """(n, 4) of small integers as floats: repeated values, zeros and rows that coincide."""
    rng = np.random.default_rng(seed + n)
    x = np.round(rng.uniform(-1.5, 2.5, (n, 4))).astype(np.float32)
    x[1] = x[0]  # a duplicated row for unique(axis=0)
    x[0, 0] = x[-1, 0] = 0.0  # zeros to trim
    return x


def exact(fn, make=rounded, spec=SPEC, example=6, sizes=(4, 9, 32), ops=()):
    """Export ``fn`` on ``make(example)``; the program and its save/load copy equal eager at ``sizes``."""
    ep = tpe.export(fn, make(example), dynamic_shapes=spec)
    targets = {n.target for n in ep.graph.nodes if n.op == "call_function"}
    for op in ops:
        assert op in targets, f"{op} not in the graph: {sorted(targets)}"
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    for n in sizes:
        x = make(n)
        want = _as_list(fn(x.copy()))
        for run in (ep.module(), loaded.module()):
            got = _as_list(run(x))
            assert len(got) == len(want)
            for g, w in zip(got, want):
                g, w = np.asarray(g), np.asarray(w)
                assert g.shape == w.shape and g.dtype == w.dtype, (n, g.shape, w.shape, g.dtype, w.dtype)
                np.testing.assert_array_equal(g, w)
    return ep


# -- vectors and matrices ------------------------------------------------------------------------
def test_vdot_vecdot_matrix_transpose():
    ep = exact(lambda x: (np.vdot(x, x), np.vdot(x[:, :2], x[:, 2:].astype(np.float64)), np.vecdot(x, x),
                          np.vecdot(x, x[:1], axis=-1), np.vecdot(x.T, x.T, axis=0),
                          np.vecdot(x.T, x.T, axis=0, keepdims=True),
                          np.vecdot(x, x, keepdims=True, dtype=np.float64), np.matrix_transpose(x),
                          np.matrix_transpose(x[None] * 2)),
               ops=["numpy.vdot", "numpy.vecdot", "numpy.matrix_transpose"])
    assert ep.module()(rounded(9))[7].shape == (4, 9)


def test_vdot_and_vecdot_sizes_must_match():
    two = ({0: Dim("n", min=4, max=32)}, {0: Dim("m", min=4, max=32)})
    with pytest.raises(tpe.ConstraintViolationError, match="vdot"):
        tpe.export(lambda x, y: np.vdot(x, y), rounded(6), rounded(6), dynamic_shapes=two)
    with pytest.raises(tpe.ConstraintViolationError, match="vecdot"):
        tpe.export(lambda x, y: np.vecdot(x.T, y.T, axis=0), rounded(6), rounded(6), dynamic_shapes=two)


def test_cross_products():
    exact(lambda x: (np.cross(x[:, :3], x[:, 1:]), np.cross(x[:, :3], x[:1, 1:]),
                     np.cross(x[:, :3].T, x[:, 1:].T, axis=0), np.cross(x[:, :3], x[:, 1:], axisc=0),
                     np.cross(x[:, None, :3], x[None, :4, 1:])),
          ops=["numpy.cross"])


def test_cross_pins_a_symbolic_component_count():
    with pytest.raises(tpe.ConstraintViolationError, match="number of vector components"):
        tpe.export(lambda x: np.cross(x, x[::-1], axisa=0, axisb=0), rounded(6)[:3],
                   dynamic_shapes={"x": {0: Dim("n")}})


def test_einsum_sublist_form():
    exact(lambda x: (np.einsum(x, [0, 1], x, [0, 1], [1]), np.einsum(x, [0, 1], [1, 0]),
                     np.einsum(x, [Ellipsis, 1], x, [Ellipsis, 1], [Ellipsis]), np.einsum(x, [0, 1], x, [2, 1])),
          ops=["numpy.einsum"])


def test_einsum_sublist_bad_subscript():
    with pytest.raises(tpe.CaptureError, match=r"valid range \[0, 52\)"):  # numpy's own message, at the line
        tpe.export(lambda x: np.einsum(x, [0, 60]), rounded(6), dynamic_shapes=SPEC)


def test_unstack_along_a_static_axis_and_pins_a_dynamic_one():
    exact(lambda x: np.unstack(x, axis=1), ops=["numpy.unstack"])
    exact(lambda x: np.unstack(x.T)[2] + 1)
    with pytest.raises(tpe.ConstraintViolationError, match="unstack"):
        tpe.export(lambda x: np.unstack(x)[0], rounded(6), dynamic_shapes=SPEC)


# -- ufunc.reduce -----------------------------------------------------------------------------------
def test_ufunc_reduce_of_binary_ufuncs():
    exact(lambda x: (np.logaddexp.reduce(x, axis=0), np.logaddexp.reduce(x, axis=1), np.logaddexp2.reduce(x),
                     np.logaddexp.reduce(x, axis=None), np.logaddexp.reduce(x, axis=0, keepdims=True),
                     np.fmax.reduce(x, axis=1), np.hypot.reduce(x, 0), np.subtract.reduce(x, axis=1),
                     np.bitwise_xor.reduce(x.astype(np.int64), axis=0), np.gcd.reduce(x.astype(np.int32) + 3, axis=0),
                     np.logical_xor.reduce(x > 0, axis=0)),
          ops=["numpy.logaddexp.reduce", "numpy.fmax.reduce", "numpy.gcd.reduce"])


def test_ufunc_reduce_without_identity_needs_a_nonempty_axis():
    f = lambda x: np.fmax.reduce(x[4:], axis=0)  # noqa: E731
    with pytest.raises(tpe.ConstraintViolationError, match="must be nonempty"):
        tpe.export(f, rounded(6), dynamic_shapes=SPEC)
    exact(lambda x: np.fmax.reduce(x[4:], axis=0, initial=-5.0), sizes=(4, 5, 12))
    exact(lambda x: np.logaddexp.reduce(x[4:], axis=0), sizes=(4, 5, 12))  # identity -inf
    with pytest.raises(tpe.ConstraintViolationError, match="must be nonempty"):  # None: from the first element
        tpe.export(lambda x: np.logaddexp.reduce(x[4:], axis=0, initial=None), rounded(6), dynamic_shapes=SPEC)


# -- compress / extract -----------------------------------------------------------------------------
def test_compress_static_condition_has_a_static_size():
    ep = exact(lambda x: (np.compress([True, False, True, True], x, axis=1), np.compress([False, True], x, axis=0),
                          x.compress([True, True, False], axis=1), np.compress([True, False, True], x)),
               ops=["numpy.compress"])
    shapes = [n.meta.get("shape") for n in ep.graph.nodes if n.target == "numpy.compress"]
    n = next(iter(ep.range_constraints))
    assert shapes == [(n, 3), (1, 4), (2,)]


def test_compress_by_an_array_and_extract_are_data_dependent():
    ep = exact(lambda x: (np.compress(x[:, 0] > 0, x, axis=0), np.compress(x[0] > 0, x, axis=1),
                          np.extract(x > 1, x), np.extract(x[:, :2] > 0, x[:, 2:] * 2), np.extract([1, 0, 1], x)),
               ops=["numpy.compress", "numpy.extract"])
    assert any(str(s).startswith("u") for s in ep.range_constraints)


def test_compress_condition_past_the_axis_is_a_bounds_requirement():
    with pytest.raises(tpe.ConstraintViolationError):
        tpe.export(lambda x: np.compress([False] * 5 + [True], x, axis=0), rounded(6), dynamic_shapes=SPEC)


# -- data-dependent set operations ------------------------------------------------------------------
def test_unique_along_an_axis():
    ep = exact(lambda x: (np.unique(x, axis=0), np.unique(x, axis=1), np.unique(x.T, axis=-1)),
               ops=["tpe.unique"])
    assert any(str(s).startswith("u") for s in ep.range_constraints)
    exact(lambda x: np.unique(x, axis=0, return_index=True, return_inverse=True, return_counts=True))


def test_unique_axis_rows_feed_later_ops():
    exact(lambda x: np.unique(x, axis=0).sum(axis=1) * 2)


def test_trim_zeros():
    exact(lambda x: (np.trim_zeros(x[:, 0]), np.trim_zeros(x[:, 0], "f"), np.trim_zeros(x[:, 0], trim="b"),
                     np.trim_zeros(np.floor(x[:, 1]))), ops=["numpy.trim_zeros"])


def test_trim_zeros_2d_and_axis():
    def make(n):
        x = np.zeros((n, 5), np.float32)
        x[1:n - 1, 1:3] = np.arange(1, 2 * (n - 2) + 1).reshape(n - 2, 2)
        return x
    exact(lambda x: (np.trim_zeros(x), np.trim_zeros(x, axis=0), np.trim_zeros(x, "f", axis=1)), make=make)


def test_setdiff_intersect_union():
    exact(lambda x: (np.setdiff1d(x[:, 0], [1.0]), np.setdiff1d(x[:, 0], x[:, 1]), np.intersect1d(x[:, 0], [1.0, 0.0]),
                     np.intersect1d(x[:, 0], x[:, 1]), np.union1d(x[:, 0], [1.0]), np.union1d(x, x[:, 1:] + 1),
                     np.setdiff1d(np.unique(x[:, 2]), x[:, 3], assume_unique=True)),
          ops=["numpy.setdiff1d", "numpy.intersect1d", "numpy.union1d"])


def test_intersect1d_with_indices():
    exact(lambda x: np.intersect1d(x[:, 0], x[:, 1], return_indices=True), ops=["tpe.intersect1d_indices"])


def test_set_op_lengths_are_bound_at_run_time():
    """A later op on the result checks against the size bound from that result, not the example's."""
    f = lambda x: np.union1d(x[:, 0], [7.0]) + np.zeros(1)  # noqa: E731
    ep = exact(f)
    x = rounded(20)
    assert ep.module()(x).shape == f(x).shape


def test_vecdot_other_gufunc_arguments_are_refused_clearly():
    with pytest.raises(UnsupportedOpError, match="vecdot"):
        tpe.export(lambda x: np.vecdot(x, x, axes=[(0,), (0,), ()]), rounded(6), dynamic_shapes=SPEC)
