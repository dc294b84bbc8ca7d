"""numpy's Python-level functions (ops/lib.py) on a dynamic axis: exported programs equal eager numpy."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}


def one(n):
    return (randn(n, 3),)


def test_select_cov_lexsort():
    check(lambda x: (np.select([x < -0.5, x > 0.5], [x * 2, x[:1] / 2], default=-1.0),
                     np.cov(x.T), np.cov(x, rowvar=False), np.cov(x[:, 0], x[:, 1]),
                     np.lexsort((x[:, 1], x[:, 0])), np.lexsort(x.T)),
          one, SPEC, sizes=(2, 3, 9),
          ops=["numpy.select", "numpy.cov", "numpy.lexsort"])


def test_cov_of_one_variable_is_0d_like_numpy():
    ep = check(lambda x: np.cov(x[:, 0]) + np.cov(x.T[:1]), one, SPEC, sizes=(2, 5), ops=["numpy.cov"])
    assert ep.module()(*one(4)).shape == ()


def test_lexsort_indices_gather_without_bounds_guards():
    """lexsort's indices lie in [0, n - 1]: gathering x with them needs no guard."""
    check(lambda x: x[np.lexsort((x[:, 2], x[:, 0]))], one, SPEC, sizes=(1, 4, 11), ops=["numpy.lexsort"])


def test_ufunc_accumulate_and_outer():
    check(lambda x: (np.maximum.accumulate(x, axis=0), np.minimum.accumulate(x, axis=1),
                     np.fmax.accumulate(x[:, 0]), np.subtract.accumulate(x, 0),
                     np.logical_or.accumulate(x > 0, axis=0), np.bitwise_xor.accumulate((x > 0).astype(np.int64)),
                     np.multiply.outer(x[:, 0], x[0]), np.add.outer(x, x[0]), np.greater.outer(x[:, 1], x[:, 2]),
                     np.maximum.outer(x[:, 0], np.arange(4.0, dtype=np.float32))),
          one, SPEC, sizes=(1, 2, 7),
          ops=["numpy.maximum.accumulate", "numpy.minimum.accumulate", "numpy.fmax.accumulate",
               "numpy.subtract.accumulate", "numpy.logical_or.accumulate", "numpy.bitwise_xor.accumulate",
               "numpy.multiply.outer", "numpy.add.outer", "numpy.greater.outer", "numpy.maximum.outer"])


def test_ufunc_accumulate_program_round_trips():
    import io

    fn = lambda x: np.maximum.accumulate(x, axis=0) - np.minimum.outer(x[:, 0], x[0])  # noqa: E731
    ep = tpe.export(fn, *one(5), dynamic_shapes=SPEC)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    for n in (1, 6, 30):
        (x,) = one(n)
        np.testing.assert_array_equal(loaded.module()(x), fn(x))


def test_append_delete():
    check(lambda x: (np.append(x, x[:1], axis=0), np.append(x, 1.0), np.append(x, x[:, :2], axis=1),
                     np.delete(x, 0, axis=0), np.delete(x, [0, -1], axis=1), np.delete(x, slice(1, None, 2), 0),
                     np.delete(x, [2, 0]), np.delete(x, -1, axis=0)),
          one, SPEC, sizes=(1, 2, 7), ops=["numpy.append", "numpy.delete"])


def test_delete_mixed_signs_follow_the_example_and_bounds_are_violations():
    # [0, -1] are one row at n == 1: the example (n = 4) keeps them apart, so n == 1 is refused
    fn = lambda x: np.delete(x, [0, -1], axis=0)  # noqa: E731
    ep = tpe.export(fn, *one(4), dynamic_shapes={"x": {0: Dim("n", min=2, max=64)}})
    for n in (2, 3, 9):
        np.testing.assert_array_equal(ep.module()(*one(n)), fn(*one(n)))
    with pytest.raises(tpe.ConstraintViolationError, match="n = 1"):
        tpe.export(fn, *one(4), dynamic_shapes=SPEC)
    with pytest.raises(tpe.ConstraintViolationError, match=r"n >= 4(.|\n)*min=4"):
        tpe.export(lambda x: np.delete(x, 3, axis=0), *one(5), dynamic_shapes=SPEC)
    with pytest.raises(tpe.UnsupportedOpError, match="numpy.delete with an array"):
        tpe.export(lambda x: np.delete(x, np.array([0, 1]), axis=0), *one(5), dynamic_shapes=SPEC)


def test_rot90_block_column_stack_dstack_atleast_3d():
    check(lambda x: (np.rot90(x), np.rot90(x, 2), np.rot90(x[:, :, None], -1, axes=(0, 2)),
                     np.block([[x, x[:, :1]], [x[:1], x[:1, :1]]]), np.block([x[:, 0], x[0]]),
                     np.column_stack([x[:, 0], x]), np.column_stack((x[:, 1], x[:, 2])),
                     np.dstack([x, x]), np.dstack([x[:, 0], x[:, 1]]),
                     np.atleast_3d(x), np.atleast_3d(x[:, 0]), np.atleast_3d(x[0, 0])),
          one, SPEC, sizes=(1, 2, 7),
          ops=["numpy.rot90", "numpy.block", "numpy.column_stack", "numpy.dstack", "numpy.atleast_3d"])


def test_ediff1d_vander_polyval_trapezoid_resize():
    check(lambda x: (np.ediff1d(x), np.ediff1d(x[:, 0], to_begin=0.0, to_end=x[0]),
                     np.vander(x[:, 0]), np.vander(x[:, 0], 3, increasing=True), np.vander(x[0], x.shape[0]),
                     np.polyval(x[:, 0], x[0]), np.polyval(x[0], x), np.polyval(x, x[0]),
                     np.trapezoid(x, axis=0), np.trapezoid(x), np.trapezoid(x, x[:, 0], axis=0),
                     np.trapezoid(x, dx=0.5, axis=0),
                     np.resize(x, (x.shape[0] + 1, 4)), np.resize(x[:, 0], 5), np.resize(x, (2, x.shape[0]))),
          one, SPEC, sizes=(1, 2, 7),
          ops=["numpy.ediff1d", "numpy.vander", "numpy.polyval", "numpy.trapezoid", "numpy.resize"])


def test_resize_of_an_empty_axis_gives_zeros():
    spec = {"x": {0: Dim("e", min=0, max=8)}}
    check(lambda x: np.resize(x, (3, 2)), lambda n: (randn(n, 2),), spec, example=3, sizes=(0, 1, 5),
          ops=["numpy.resize"])


def test_ravel_multi_index_and_fill_diagonal():
    def fill(a):
        y = a.copy()
        np.fill_diagonal(y, -1.0)
        z = a.copy()
        ret = np.fill_diagonal(z, x_diag(a), wrap=True)
        return y, z, ret is None

    def x_diag(a):
        return a[0, :1]

    check(lambda x: (np.ravel_multi_index((np.arange(x.shape[0]), np.arange(x.shape[0]) % 3), x.shape),
                     np.ravel_multi_index((np.array([0, 1]), np.array([2, 0])), (x.shape[0] + 1, 3)),
                     *fill(x @ x.T)[:2], *fill(np.concatenate([x, x], axis=0))[:2]),
          one, SPEC, sizes=(1, 2, 7), ops=["numpy.ravel_multi_index", "tpe.fill_diagonal"])


def test_ravel_multi_index_bounds_are_violations():
    with pytest.raises(tpe.ConstraintViolationError, match="numpy.ravel_multi_index"):
        tpe.export(lambda x: np.ravel_multi_index((np.arange(x.shape[0]), np.zeros(x.shape[0], int)), (4, 3)),
                   *one(3), dynamic_shapes=SPEC)
