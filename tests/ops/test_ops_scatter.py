"""Scatter and segment ops on dynamic sizes (0 and 1 included): ufunc .at, ufunc .reduceat,
put_along_axis (in-place in numpy, functional in the graph) and bincount (data-dependent length)."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim
from tensorplay_export.ops.scatter import AT_UFUNCS, REDUCEAT_UFUNCS

N0 = Dim("n", min=0, max=64)
SIZES = (0, 1, 2, 7)
# spelled out for the registry walk (test_ops_registry.py looks for each op's name in the tests)
AT_OPS = ["tpe.add_at", "tpe.subtract_at", "tpe.multiply_at", "tpe.divide_at", "tpe.maximum_at", "tpe.minimum_at",
          "tpe.fmax_at", "tpe.fmin_at", "tpe.logical_and_at", "tpe.logical_or_at", "tpe.bitwise_and_at",
          "tpe.bitwise_or_at", "tpe.bitwise_xor_at"]
REDUCEAT_OPS = ["numpy.add.reduceat", "numpy.multiply.reduceat", "numpy.maximum.reduceat", "numpy.minimum.reduceat",
                "numpy.fmax.reduceat", "numpy.fmin.reduceat", "numpy.logical_and.reduceat",
                "numpy.logical_or.reduceat", "numpy.bitwise_and.reduceat", "numpy.bitwise_or.reduceat"]


def test_every_scatter_op_is_listed_and_dispatches_from_its_ufunc_method():
    from tensorplay_export.ops.registry import all_ops, lookup_func

    assert AT_OPS == [f"tpe.{u}_at" for u in AT_UFUNCS]
    assert REDUCEAT_OPS == [f"numpy.{u}.reduceat" for u in REDUCEAT_UFUNCS]
    ops = all_ops()
    for name, ufunc in zip(AT_OPS, AT_UFUNCS):
        assert lookup_func(getattr(np, ufunc).at) is ops[name] and ops[name].writes_arg == 0
    for name, ufunc in zip(REDUCEAT_OPS, REDUCEAT_UFUNCS):
        assert lookup_func(getattr(np, ufunc).reduceat) is ops[name] and ops[name].writes_arg is None
    assert ops["tpe.put_along_axis"].writes_arg == 0


def _operands(name, n, seed=0):
    """(target dtype, initial fill, values) for ``np.<name>.at`` on ``n`` rows of 3."""
    rng = np.random.default_rng(seed + n)
    if name.startswith("logical"):
        return np.bool_, name == "logical_and", rng.random((n, 3)) > 0.5
    if name.startswith("bitwise"):
        return np.int64, 5, rng.integers(0, 16, (n, 3))
    if name == "divide":
        return np.float64, 1.0, rng.random((n, 3)) + 0.5
    return np.float32, 1.0, randn(n, 3, seed=seed + n)


@pytest.mark.parametrize("name", AT_UFUNCS)
def test_ufunc_at_scatters_in_place(name):
    ufunc = getattr(np, name)

    def f(x, ids):
        out = np.full((8, 3), fill, dtype=dtype)
        ufunc.at(out, ids, x)           # rows hit several times accumulate (unbuffered)
        ufunc.at(out, (ids, 0), x[:, 1])  # a tuple key: one column
        return out

    def make(n):
        _dtype, _fill, vals = _operands(name, n)
        return vals, np.random.default_rng(n).integers(0, 8, n)

    dtype, fill, _ = _operands(name, 1)
    check(f, make, {"x": {0: N0}, "ids": {0: N0}}, sizes=SIZES, ops=[f"tpe.{name}_at"])


def test_add_at_scalar_value_slices_and_the_result_feeds_later_ops():
    def f(x, ids):
        hist = np.zeros(x.shape[1] + 2, dtype=np.int64)
        np.add.at(hist, ids, 1)                       # a scalar value
        acc = np.zeros_like(x)
        np.add.at(acc, (slice(None), ids[:1] * 0), 1.0)  # slice + index array
        return hist * 2, acc + x

    def make(n):
        return randn(4, n + 1), np.random.default_rng(n).integers(0, n + 3, 5)

    check(f, make, {"x": {1: Dim("m", max=32)}, "ids": None}, sizes=(1, 2, 6), ops=["tpe.add_at"])


def test_add_at_on_an_input_is_an_input_mutation():
    def f(x, ids):
        np.add.at(x, ids, 1.0)
        return x * 2

    x, ids = randn(5, 3), np.array([0, 0, 4])
    ep = tpe.export(f, x.copy(), ids, dynamic_shapes={"x": {0: Dim("n", min=5, max=64)}, "ids": None})
    got, want = x.copy(), x.copy()
    np.testing.assert_allclose(ep.module()(got, ids), f(want, ids))
    np.testing.assert_allclose(got, want)  # the caller's array sees the write, as in eager numpy


def test_add_at_index_bounds_and_value_shape_are_requirements():
    def f(x):
        out = np.zeros((8, 3), x.dtype)
        np.add.at(out, np.arange(x.shape[0]), x)  # rows 0 .. n-1 of 8
        return out

    with pytest.raises(tpe.ConstraintViolationError, match="n = Dim") as err:
        tpe.export(f, randn(5, 3), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    assert [v.kind for v in err.value.violations] == ["index_bounds"]
    check(f, lambda n: (randn(n, 3),), {"x": {0: Dim("n", min=0, max=8)}}, sizes=(0, 1, 8), ops=["tpe.add_at"])

    def g(x, y):
        out = np.zeros((4, x.shape[1]), x.dtype)
        np.add.at(out, [0, 1], y)  # y's columns must match out's
        return out

    with pytest.raises(tpe.ConstraintViolationError, match="numpy.add.at: the values"):
        tpe.export(g, randn(2, 3), randn(2, 3), dynamic_shapes={"x": {1: Dim("a", max=9)}, "y": {1: Dim("b", max=9)}})


def test_ufunc_at_into_a_plain_array_is_refused():
    def f(x, ids):
        np.add.at(BUF_PLAIN[0], ids, x)  # reached through a container: not a traced array
        return x

    with pytest.raises(tpe.UnsupportedOpError, match="must be a traced array"):
        tpe.export(f, randn(3), np.array([0, 1, 2]))


BUF_PLAIN = [np.zeros(8, np.float32)]


@pytest.mark.parametrize("name", REDUCEAT_UFUNCS)
def test_reduceat_segments(name):
    ufunc = getattr(np, name)

    def f(x):
        starts = np.arange(0, x.shape[0], 2)   # known range [0, n - 1]: no guard
        return ufunc.reduceat(x, starts, axis=0), ufunc.reduceat(x, np.array([0, 2]), axis=1)

    def make(n):
        dtype, _fill, vals = _operands(name, n)
        return (vals.astype(dtype),)

    check(f, make, {"x": {0: N0}}, sizes=SIZES, ops=[f"numpy.{name}.reduceat"])


def test_reduceat_index_bounds():
    def f(x):
        return np.add.reduceat(x, [0, 3])

    with pytest.raises(tpe.ConstraintViolationError, match=r"n >= 4") as err:
        tpe.export(f, randn(5), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    assert err.value.violations[0].kind == "index_bounds"
    check(f, lambda n: (randn(n),), {"x": {0: Dim("n", min=4, max=64)}}, sizes=(4, 9), ops=["numpy.add.reduceat"])
    # indices from user data: numpy checks them at run time, no guard
    check(lambda x, i: np.maximum.reduceat(x, i), lambda n: (randn(n + 3), np.array([0, 1, 2])),
          {"x": {0: Dim("n", max=64)}, "i": None}, sizes=(1, 5))


def test_put_along_axis():
    def f(x):
        y = x.copy()
        top = np.argsort(x, axis=1)[:, -1:]        # known range [0, 2] on a static axis of 3
        np.put_along_axis(y, top, 0.0, axis=1)
        z = np.zeros(x.shape[0] * 3, x.dtype)
        np.put_along_axis(z, np.arange(x.shape[0]), x[:, 0], axis=None)
        w = np.zeros_like(x)
        np.put_along_axis(w, np.zeros((1, 2), np.int64), x[:, :1], axis=1)  # broadcast index and values
        return y, z, w

    check(f, lambda n: (randn(n, 3),), {"x": {0: N0}}, sizes=SIZES, ops=["tpe.put_along_axis"])


def test_put_along_axis_values_must_broadcast():
    def f(x, v):
        y = np.zeros((x.shape[0], 4), x.dtype)
        np.put_along_axis(y, np.zeros((x.shape[0], 1), np.int64), v, axis=1)
        return y

    with pytest.raises(tpe.ConstraintViolationError, match="put_along_axis"):
        tpe.export(f, randn(3, 1), randn(3, 1), dynamic_shapes={"x": {0: Dim("a", max=9)}, "v": {0: Dim("b", max=9)}})


def test_bincount_length_is_data_dependent_with_minlength_as_lower_bound():
    def f(ids, w):
        c = np.bincount(ids, minlength=8)
        return c, c[7], np.bincount(ids), np.bincount(ids, weights=w, minlength=3)

    def make(n):
        rng = np.random.default_rng(n)
        return rng.integers(0, 12, n), rng.random(n).astype(np.float32)

    ep = check(f, make, {"ids": {0: N0}, "w": {0: N0}}, sizes=SIZES, ops=["numpy.bincount"])
    assert sum(s.name.startswith("u") for s in ep.range_constraints) == 3
    with pytest.raises(tpe.ConstraintViolationError, match="numpy.bincount: the weights"):
        tpe.export(f, *make(4), dynamic_shapes={"ids": {0: Dim("a", max=9)}, "w": {0: Dim("b", max=9)}})


def test_bincount_of_known_range_values_has_the_static_length():
    def f(logits):
        expert = np.argmax(logits, axis=1)        # values in [0, 3]
        load = np.bincount(expert, minlength=4)   # exactly 4 long: no data-dependent size
        return load / max(logits.shape[0], 1), load.reshape(2, 2)

    ep = check(f, lambda n: (randn(n, 4),), {"logits": {0: N0}}, sizes=SIZES, ops=["numpy.bincount"])
    assert not any(s.name.startswith("u") for s in ep.range_constraints)


def test_scatter_programs_save_load_and_draft_export(tmp_path):
    def f(x, ids):
        out = np.zeros((6, 3), x.dtype)
        np.add.at(out, ids, x)
        seg = np.maximum.reduceat(x, np.array([0, 1]), axis=0)
        y = x.copy()
        np.put_along_axis(y, np.argmax(x, axis=1)[:, None], 0.0, axis=1)
        return out, seg, y, np.bincount(ids, minlength=6)

    def make(n):
        return randn(n, 3), np.random.default_rng(n).integers(0, 6, n)

    spec = {"x": {0: Dim("n", min=2, max=64)}, "ids": {0: Dim("n", min=2, max=64)}}
    ep = tpe.export(f, *make(4), dynamic_shapes=spec)
    tpe.save(ep, tmp_path / "scatter.pt2")
    loaded = tpe.load(tmp_path / "scatter.pt2")
    for n in (2, 9):
        for got, want in zip(loaded.module()(*make(n)), f(*make(n))):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want)
    report = tpe.draft_export(f, *make(4), dynamic_shapes=spec)
    assert not report.failures
