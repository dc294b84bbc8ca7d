"""numpy.linalg's array-API entry points (ops/linalg_namespace.py) against eager numpy at several sizes."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

LA = np.linalg
SPEC = {"x": {0: Dim("n", max=32)}, "y": {0: Dim("n", max=32)}}
SIZES = (1, 2, 3, 9)


def pair(dtype):
    def make(n):
        return randn(n, 4, 3, dtype=dtype, seed=n), randn(n, 4, 3, dtype=dtype, seed=n + 100)
    return make


def _exact(fn, make, spec, sizes=SIZES, example=5):
    """Like check(), and every float result is bit-identical to eager numpy (numpy's own call runs)."""
    ep = check(fn, make, spec, example=example, sizes=sizes)
    mod = ep.module()
    for n in sizes:
        args = make(n)
        got, want = mod(*args), fn(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(g, w)
    return ep


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_products_and_transposes(dtype):
    def fn(x, y):
        return (LA.vecdot(x, y), LA.vecdot(x, y, axis=1), LA.cross(x, y), LA.cross(x[:, :3], y[:, :3], axis=1),
                LA.matrix_transpose(x), LA.matmul(x, LA.matrix_transpose(y)),
                LA.tensordot(x, y, axes=([1, 2], [1, 2])), LA.tensordot(x[0], y[0].T, axes=1),
                LA.outer(x[:, 0, 0], y[0, :, 1]))
    ep = _exact(fn, pair(dtype), SPEC)
    targets = {n.target for n in ep.graph.nodes if n.op == "call_function"}
    assert {"numpy.linalg.vecdot", "numpy.linalg.cross", "numpy.linalg.matrix_transpose", "numpy.linalg.matmul",
            "numpy.linalg.tensordot", "numpy.linalg.outer"} <= targets


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_diagonal_trace(dtype):
    def fn(x, y):
        return (LA.diagonal(x), LA.diagonal(x, offset=1), LA.trace(x), LA.trace(x, offset=-1),
                LA.trace(x, dtype=np.float64), LA.diagonal(np.swapaxes(x, 0, 2), offset=2))
    _exact(fn, pair(dtype), SPEC)


@pytest.mark.parametrize("ord_", [None, 1, -1, 2, np.inf, -np.inf, 0, 3])
def test_vector_norm(ord_):
    kw = {} if ord_ is None else {"ord": ord_}

    def fn(x, y):
        return (LA.vector_norm(x, **kw), LA.vector_norm(x, axis=0, **kw), LA.vector_norm(x, axis=(0, 2), **kw),
                LA.vector_norm(x, axis=1, keepdims=True, **kw), LA.vector_norm(y, keepdims=True, **kw))
    _exact(fn, pair(np.float32), SPEC)


@pytest.mark.parametrize("ord_", ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norm(ord_):
    def fn(x, y):
        return LA.matrix_norm(x, ord=ord_), LA.matrix_norm(np.swapaxes(y, 0, 1), ord=ord_, keepdims=True)
    _exact(fn, pair(np.float64), SPEC)


def test_integer_norms_are_float64_as_numpy():
    ep = _exact(lambda x, y: (LA.vector_norm(x), LA.matrix_norm(y)), pair(np.int16), SPEC)
    assert ep.module()(*pair(np.int16)(4))[0].dtype == np.float64


def test_svdvals_and_symbolic_k():
    make = lambda n: (randn(n, 3, dtype=np.float64, seed=n),)  # noqa: E731
    ep = check(lambda x: LA.svdvals(x), make, {"x": {0: Dim("n", max=32)}}, sizes=(1, 2, 3, 8))
    for n in (1, 2, 8):
        assert ep.module()(*make(n)).shape == (min(n, 3),)


def test_min_norms_keep_the_axis_nonempty():
    """ord=-inf of a vector / -1 of a matrix is a min: numpy refuses an empty axis, so the contract does."""
    spec = {"x": {1: Dim("m", min=0, max=32)}}
    x = randn(3, 5)
    with pytest.raises(ValueError):
        LA.vector_norm(randn(3, 0), axis=1, ord=-np.inf)
    for fn in (lambda x: LA.vector_norm(x, axis=1, ord=-np.inf), lambda x: LA.matrix_norm(x, ord=-1)):
        with pytest.raises(tpe.ConstraintViolationError, match=r"m >= 1[\s\S]*counterexample: m = 0"):
            tpe.export(fn, x, dynamic_shapes=spec)
        ep = tpe.export(fn, x, dynamic_shapes={"x": {1: Dim("m", min=1, max=32)}})
        for m in (1, 2, 17):
            np.testing.assert_array_equal(ep.module()(randn(3, m, seed=m)), fn(randn(3, m, seed=m)))
    # the others are defined on an empty axis: the range stays [0, 32] and the program agrees with numpy
    ep = tpe.export(lambda x: LA.vector_norm(x, axis=1, ord=np.inf), x, dynamic_shapes=spec)
    assert ep.range_constraints[next(iter(ep.range_constraints))].lower == 0
    np.testing.assert_array_equal(ep.module()(randn(3, 0)), LA.vector_norm(randn(3, 0), axis=1, ord=np.inf))


def test_cross_needs_three_components():
    with pytest.raises(tpe.ConstraintViolationError):
        tpe.export(lambda x, y: LA.cross(x, y), randn(2, 3), randn(2, 3), dynamic_shapes={"x": {1: Dim("c", max=8)},
                                                                                          "y": None})
    with pytest.raises(Exception, match="3-dimensional"):
        tpe.export(lambda x, y: LA.cross(x, y), randn(2, 2), randn(2, 2))


def test_outer_needs_vectors():
    with pytest.raises(Exception, match="one-dimensional"):
        tpe.export(lambda x: LA.outer(x, x), randn(2, 2))
