"""ufunc.accumulate of every binary ufunc, numpy.insert, ndarray.view(dtype), x.flat[i]: exported
programs equal eager numpy bit for bit at sizes other than the example, sizes outside are refused,
and a saved program loads and runs the same."""
import io

import numpy as np
import pytest

import tensorplay_export as tpe
from _check import randn
from tensorplay_export import Dim
from tensorplay_export.errors import ConstraintViolationError, UnsupportedOpError

SPEC = {"x": {0: Dim("n", min=2, max=64)}}


def _round_trip(ep):
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    return tpe.load(buf)


def _same(fn, ep, sizes, make=lambda n: randn(n, 3, dtype=np.float64, seed=n)):
    loaded = _round_trip(ep)
    for n in sizes:
        x = make(n)
        want = fn(x.copy())
        for mod in (ep.module(), loaded.module()):
            got = mod(x)
            assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want), n
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", [
    lambda x: np.logaddexp.accumulate(x, axis=0),
    lambda x: np.logaddexp2.accumulate(x.astype(np.float32), axis=1),
    lambda x: np.logaddexp.accumulate(x[:, 0]),  # 1-d, axis defaults to 0
    lambda x: np.hypot.accumulate(x, 0) + np.arctan2.accumulate(x, 1),
    lambda x: np.divide.accumulate(x + 3.0, axis=0) - np.power.accumulate(np.abs(x) + 1, axis=1),
    lambda x: np.gcd.accumulate((x * 10).astype(np.int64), axis=0) + np.left_shift.accumulate(
        np.ones_like(x, dtype=np.int32), axis=1),
    lambda x: np.less.accumulate(x > 0, axis=0) ^ np.equal.accumulate(x > 0, axis=1),
], ids=["logaddexp", "logaddexp2-f32", "1d", "hypot-arctan2", "divide-power", "gcd-shift", "compare"])
def test_accumulate_of_binary_ufuncs_equals_numpy(fn):
    ep = tpe.export(fn, randn(5, 3, dtype=np.float64), dynamic_shapes=SPEC)
    assert any(str(node.target).endswith(".accumulate") for node in ep.graph.nodes)
    _same(fn, ep, (2, 3, 17, 64))


def test_heinsen_log_space_scan_exports_with_a_dynamic_length():
    """The Heinsen / minGRU parallel scan: h_t = a_t h_{t-1} + b_t in log space."""
    def scan(log_a, log_b):
        a_star = np.cumsum(log_a, axis=1)
        return np.exp(a_star + np.logaddexp.accumulate(log_b - a_star, axis=1))

    spec = {"log_a": {1: Dim("t", max=256)}, "log_b": {1: Dim("t", max=256)}}
    ep = tpe.export(scan, -np.abs(randn(2, 7, 4)), randn(2, 7, 4), dynamic_shapes=spec)
    loaded = _round_trip(ep)
    for t in (1, 5, 100):
        la, lb = -np.abs(randn(2, t, 4, seed=t)), randn(2, t, 4, seed=t + 1)
        for mod in (ep.module(), loaded.module()):
            np.testing.assert_array_equal(mod(la, lb), scan(la, lb))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(2, 257, 4), randn(2, 257, 4))


def test_accumulate_refuses_a_scalar_and_a_bad_axis_like_numpy():
    with pytest.raises(Exception, match="axis"):
        tpe.export(lambda x: np.logaddexp.accumulate(x, axis=2), randn(5, 3), dynamic_shapes=SPEC)


@pytest.mark.parametrize("fn", [
    lambda x: np.insert(x, 0, 0.0, axis=0),                  # a CLS row
    lambda x: np.insert(x, 0, x[0] * 2, axis=0),             # a row of values
    lambda x: np.insert(x, -1, x[-1:], axis=0),              # negative index, (1, 3) values
    lambda x: np.insert(x, [0, 2], 7.0, axis=0),             # two positions
    lambda x: np.insert(x, 2, x[:, :2].T, axis=1),           # a column block of n rows
    lambda x: np.insert(x, 1, 5.0),                          # axis=None: raveled
    lambda x: np.insert(x.astype(np.int32), 1, 2.7, axis=1),  # values cast to the array's dtype
], ids=["cls-row", "row", "negative", "list", "columns", "ravel", "cast"])
def test_insert_equals_numpy(fn):
    ep = tpe.export(fn, randn(5, 3, dtype=np.float64), dynamic_shapes=SPEC)
    assert "numpy.insert" in {n.target for n in ep.graph.nodes if n.op == "call_function"}
    _same(fn, ep, (2, 3, 9, 64))


def test_insert_length_along_the_axis_is_dynamic():
    ep = tpe.export(lambda x: np.insert(x, 0, 0.0, axis=0), randn(5, 3), dynamic_shapes=SPEC)
    assert ep.module()(randn(40, 3)).shape == (41, 3)


def test_insert_past_the_end_of_small_sizes_is_a_violation():
    fn = lambda x: np.insert(x, 3, 1.0, axis=0)  # noqa: E731 - numpy: index 3 needs n >= 3
    with pytest.raises(ConstraintViolationError, match=r"n >= 3"):
        tpe.export(fn, randn(5, 3), dynamic_shapes=SPEC)
    ep = tpe.export(fn, randn(5, 3, dtype=np.float64), dynamic_shapes={"x": {0: Dim("n", min=3, max=64)}})
    _same(fn, ep, (3, 4, 30))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(2, 3, dtype=np.float64))


def test_insert_values_of_the_wrong_width_are_refused():
    with pytest.raises(Exception):
        tpe.export(lambda x: np.insert(x, 0, np.ones(2), axis=0), randn(5, 3), dynamic_shapes=SPEC)


def test_insert_by_an_array_of_positions_is_refused_clearly():
    with pytest.raises(UnsupportedOpError, match="Python ints"):
        tpe.export(lambda x: np.insert(x, np.argsort(x[:2, 0]), 0.0, axis=0), randn(5, 3), dynamic_shapes=SPEC)


def test_view_as_a_dtype_of_the_same_item_size_equals_numpy():
    fn = lambda x: (x.astype(np.float32).view(np.uint32) >> 16).astype(np.float32)  # noqa: E731 - bfloat16
    ep = tpe.export(fn, randn(5, 3, dtype=np.float64), dynamic_shapes=SPEC)
    _same(fn, ep, (2, 7, 64))
    back = lambda x: (x.view(np.int64) & ~np.int64(0xFFFF)).view(np.float64)  # noqa: E731
    _same(back, tpe.export(back, randn(5, 3, dtype=np.float64), dynamic_shapes=SPEC), (2, 11))


def test_view_changing_the_item_size_is_refused_clearly():
    with pytest.raises(UnsupportedOpError, match="item size"):
        tpe.export(lambda x: x.view(np.uint8), randn(5, 3, dtype=np.float64), dynamic_shapes=SPEC)


def test_a_write_through_a_dtype_view_is_refused():
    def fn(x):
        v = x.view(np.int64)
        v[0] = 0
        return x
    with pytest.raises(UnsupportedOpError, match="view"):
        tpe.export(fn, randn(5, 3, dtype=np.float64), dynamic_shapes=SPEC)


@pytest.mark.parametrize("fn", [lambda x: x * x.flat[4], lambda x: x.flat[-1] + x.flat[1:7:2],
                                lambda x: x.T.flat[5] + 0.0], ids=["int", "negative-slice", "transposed"])
def test_flat_reads_equal_numpy(fn):
    ep = tpe.export(fn, randn(5, 3, dtype=np.float64), dynamic_shapes=SPEC)
    _same(fn, ep, (3, 8, 64))


def test_flat_read_past_small_sizes_is_a_violation():
    with pytest.raises(ConstraintViolationError, match=r"3\*n >= 7"):
        tpe.export(lambda x: x.flat[6], randn(5, 3), dynamic_shapes={"x": {0: Dim("n", min=1, max=64)}})


@pytest.mark.parametrize("fn, what", [(lambda x: [v for v in x.flat], "iterating"),
                                      (lambda x: x.flat.__setitem__(slice(None, None, 4), 0.0), "write"),
                                      (lambda x: x.flat[x.shape[0]], "Python int")])
def test_flat_iteration_writes_and_size_indices_are_refused_clearly(fn, what):
    with pytest.raises(UnsupportedOpError, match=what):
        tpe.export(fn, randn(5, 3), dynamic_shapes=SPEC)
