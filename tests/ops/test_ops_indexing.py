"""Indexing with dynamic sizes: slices (symbolic bounds/steps), None, ..., integer arrays, masks, take, setitem."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}
TABLE = randn(512, 3, seed=1)


def one(n):
    return (randn(n, 3),)


def test_basic_slices():
    check(lambda x: (x[1:], x[:-1], x[::2], x[::-1], x[-3:], x[None, ..., 1], x[..., None], x[x.shape[0] - 1],
                     x[: x.shape[0] // 2], x[1::3, ::-2]), one, SPEC, sizes=(1, 2, 3, 7, 10), ops=["tpe.getitem"])


def test_slice_of_constant_by_size_is_min():
    def f(x):
        return TABLE[: x.shape[0]] + x
    ep = check(f, one, {"x": {0: Dim("n", max=512)}}, sizes=(1, 511, 512))
    assert "c_TABLE" in [n.name for n in ep.graph.placeholders()]


def test_integer_array_and_take_with_known_range_are_bounded():
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x: x + TABLE[np.arange(x.shape[0])], randn(4, 3), dynamic_shapes=SPEC | {
            "x": {0: Dim("n", max=1000)}})
    assert err.value.violations[0].kind == "index_bounds"
    check(lambda x: (x + TABLE[np.arange(x.shape[0])], np.take(TABLE, np.arange(x.shape[0]), axis=0)), one,
          {"x": {0: Dim("n", max=512)}}, ops=["tpe.getitem", "numpy.take"])


def test_user_index_arrays_give_no_guard():
    def make(n):
        return randn(n, 3), np.arange(n) % 5
    ep = check(lambda x, ids: x + TABLE[ids], make, {"x": {0: Dim("n", max=4096)}, "ids": {0: Dim("n", max=4096)}})
    assert str(ep.range_constraints[next(iter(ep.range_constraints))]) == "[1, 4096]"


def test_boolean_mask_is_unbacked_and_bound_at_run_time():
    ep = check(lambda x: (lambda y: y[: y.shape[0] // 2] * 2)(x[x > 0]), one, SPEC, sizes=(1, 3, 9))
    assert any(s.name.startswith("u") for s in ep.range_constraints)


def test_take_along_axis_and_setitem():
    def f(x):
        z = np.zeros((x.shape[0], x.shape[0]), dtype=x.dtype)
        z[:, 0] = 1.0
        z[1:, :1] = x[1:, :1]
        return np.take_along_axis(x, np.argsort(x, axis=1), axis=1), z
    check(f, one, SPEC, ops=["numpy.take_along_axis", "tpe.setitem"])


def test_nonzero_unique_sort_searchsorted():
    check(lambda x: (np.nonzero(x > 0)[1], np.unique((x > 0).astype(np.int64)), np.sort(x, axis=0),
                     np.argsort(x[:, 0]), np.searchsorted(np.sort(x[:, 0]), x[:, 1])), one, SPEC,
          ops=["numpy.nonzero", "tpe.unique", "numpy.sort", "numpy.argsort", "numpy.searchsorted"])


# -- constant index lists, constant masks (soundness regressions) ---------------------------------
def test_constant_index_lists_on_dynamic_axis_are_bounded():
    for fn in (lambda x: x[[0, 2]], lambda x: x[[-1, -3]], lambda x: np.take(x, [0, 2], 0),
               lambda x: x.take([0, 2], axis=0), lambda x: x[[0, 2], 1]):
        with pytest.raises(tpe.ConstraintViolationError) as err:
            tpe.export(fn, randn(5, 3), dynamic_shapes=SPEC)
        assert [v.kind for v in err.value.violations] == ["index_bounds"]
        check(fn, one, {"x": {0: Dim("n", min=3, max=64)}}, sizes=(3, 4, 64))


def test_const_index_range_and_constant_vrange():
    import sympy

    from tensorplay_export.ops.indexing import const_index_range, constant_vrange
    s = sympy.Symbol("s", integer=True, positive=True)
    assert const_index_range([3, -1, 2]) == [(-1, 3)]
    assert const_index_range([[0], [4]]) == [(0, 4)]
    assert const_index_range([0, s, 2]) == [(0, 2), (s, s)]
    assert const_index_range(s) == [(s, s)]
    assert const_index_range([True, False]) is None and const_index_range([0.5]) is None
    assert constant_vrange(np.array([4, -2, 7])) == (-2, 7)
    assert constant_vrange(np.array([], np.int64)) is None
    assert constant_vrange(np.array([True])) is None and constant_vrange(np.ones(2)) is None


def test_constant_boolean_list_is_a_mask():
    fn = lambda x: x[:, [True, False, True]]  # noqa: E731
    ep = check(fn, one, SPEC, sizes=(1, 2, 9))
    assert ep.module()(randn(9, 3)).shape == (9, 2)
    with pytest.raises(tpe.ConstraintViolationError, match="n = 5"):
        tpe.export(lambda x: x[[True, False, True, False, True]], randn(5, 3), dynamic_shapes=SPEC)


def test_assigned_values_stretch_a_dynamic_axis_of_size_one_in_the_example():
    # setitem, ufunc.at values and where= masks: the example's side of `v == 1 or v == slot` is the
    # requirement (was an internal error: Eq(v, slot) false at the example)
    def f(x, v, w):
        y = x.copy()
        y[1:] = v
        np.add.at(y, np.array([0, 2]), v)
        return y, np.sum(x, axis=0, where=w)

    ep = tpe.export(f, randn(6, 3), randn(1, 3), np.ones((1, 3), bool),
                    dynamic_shapes=({0: Dim("n", min=3, max=64)}, {0: Dim.AUTO}, {0: Dim.AUTO}))
    for n in (3, 7):
        args = randn(n, 3), randn(1, 3, seed=2), np.array([[True, False, True]])
        for got, want in zip(ep.module()(*args), f(*args)):
            np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("fn", [lambda x: x[0, :, x[0, 0] > 0], lambda x: x[:, 0, x[0, 0] > 0],
                                lambda x: x[x[:, 0, 0] > 0, :, 0], lambda x: x[:, x[0, :, 0] > -5, 1:],
                                lambda x: x[1, x[1, :, 2] > 0]],
                         ids=["int-slice-mask", "slice-int-mask", "mask-slice-int", "slice-mask-slice", "int-mask"])
def test_boolean_mask_beside_an_integer_binds_where_numpy_puts_its_axis(fn):
    """An integer beside a mask is an advanced index too: non-adjacent ones put the True count
    first (x[0, :, m] is (count, 3)); its data-dependent size binds from that axis."""
    check(fn, lambda n: (randn(n, 3, 5, seed=n),), {"x": {0: Dim("n", min=2, max=20)}}, example=6, sizes=(2, 9, 20))
