"""The long tail (ops/numpy_tail.py) against eager numpy at several sizes of a dynamic dim, and the
documented refusals' messages."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}
SIZES = (1, 2, 3, 9)


def one(n):
    return (randn(n, 6, seed=n),)


def _same(ep, fn, make, sizes=SIZES):
    """Bit-identical to eager numpy (numpy's own function runs) with numpy's dtype, at every size."""
    mod = ep.module()
    for n in sizes:
        args = make(n)
        got, want = mod(*[a.copy() for a in args]), fn(*[a.copy() for a in args])
        got = got if isinstance(got, (tuple, list)) else (got,)
        want = want if isinstance(want, (tuple, list)) else (want,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
            np.testing.assert_array_equal(g, w)


def test_same_shape_functions():
    def fn(x):
        z = x + 1j * x[::-1]
        return (np.sinc(x), np.fix(3 * x), np.isposinf(x / 0.0), np.isneginf(x / 0.0), np.iscomplex(z),
                np.isreal(z), np.angle(z), np.angle(z, deg=True), np.unwrap(5 * x, axis=0), np.unwrap(x),
                np.sort_complex(z), np.sort_complex(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        ep = tpe.export(fn, *one(5), dynamic_shapes=SPEC)
        _same(ep, fn, one)


def test_directional_splits_and_rollaxis():
    def fn(x):
        x3 = x.reshape(x.shape[0], 2, 3)
        return (*np.hsplit(x, 3), *np.hsplit(x, [1, 4]), *np.vsplit(x, [1]), *np.dsplit(x3, 3),
                *np.hsplit(x[:, 0], [2]), np.rollaxis(x3, 2), np.rollaxis(x3, 0, 3), np.rollaxis(x3, -1, 1))
    ep = check(fn, one, SPEC, sizes=(2, 3, 9))
    _same(ep, fn, one, sizes=(2, 3, 9))


def test_vsplit_into_equal_parts_requires_divisibility():
    with pytest.raises(tpe.ConstraintViolationError, match=r"n % 2 == 0"):
        tpe.export(lambda x: np.vsplit(x, 2), *one(4), dynamic_shapes=SPEC)
    ep = tpe.export(lambda x: np.vsplit(x, 2), *one(4), dynamic_shapes={"x": {0: 2 * Dim("h", max=32)}})
    _same(ep, lambda x: np.vsplit(x, 2), lambda n: one(2 * n), sizes=(1, 3, 8))


def test_diagflat_matvec_vecmat():
    def fn(x):
        a = x[:, :3, None] * x[:, None, 3:]  # (n, 3, 3)
        return (np.diagflat(x[:, 0]), np.diagflat(x[:, :2], 2), np.diagflat(x[:, 1], -1),
                np.matvec(a, x[:, :3]), np.vecmat(x[:, 3:], a), np.matvec(a, x[0, :3]))
    ep = check(fn, one, SPEC)
    _same(ep, fn, one)


def test_unique_functions_are_data_dependent_sizes():
    def fn(x):
        r = np.round(x * 2)
        return (np.unique_values(r), *np.unique_counts(r), *np.unique_inverse(r), *np.unique_all(r),
                np.setxor1d(r[:, 0], r[:, 1]))
    ep = tpe.export(fn, *one(5), dynamic_shapes=SPEC)
    _same(ep, fn, one)


def test_unique_results_keep_their_fields_and_inverse_indexes():
    def fn(x):
        u = np.unique_inverse(np.round(x))
        c = np.unique_counts(np.round(x))
        return u.values[u.inverse_indices], c.counts.sum()
    ep = tpe.export(fn, *one(5), dynamic_shapes=SPEC)
    _same(ep, fn, one)


def test_in_place_functions_and_methods():
    def fn(x):
        a, b, c, d, e, f = (x.copy() for _ in range(6))
        np.put(a, [0, -1], -7.0)
        np.putmask(b, b > 0, np.arange(3, dtype=np.float32))
        np.place(c, c < 0, [9.0, 8.0])
        d.fill(2.5)
        e.sort(axis=0)
        f.partition(2, axis=1)
        g = x.copy()
        g.put([1, 2], [5.0, 6.0])
        h = x.copy()
        h.sort()
        return a, b, c, d, e, f[:, 2], g, h
    ep = check(fn, one, SPEC, ops=["tpe.put", "tpe.putmask", "tpe.place", "tpe.fill", "tpe.sort_in_place",
                                   "tpe.partition_in_place"])
    _same(ep, fn, one)


def test_in_place_write_through_the_input_is_a_mutation():
    def fn(x):
        x.sort(axis=1)
        return x * 2
    ep = tpe.export(fn, *one(5), dynamic_shapes=SPEC)
    for n in (1, 4, 11):
        (x,) = one(n)
        mine, theirs = x.copy(), x.copy()
        np.testing.assert_array_equal(ep.module()(mine), fn(theirs))
        np.testing.assert_array_equal(mine, theirs)  # the input is sorted in place, as in eager numpy


def test_put_indices_stay_inside_the_array():
    with pytest.raises(tpe.ConstraintViolationError, match="numpy.put"):
        tpe.export(lambda x: (np.put(x, [11], 1.0), x)[1], randn(3, 4), dynamic_shapes={"x": {0: Dim("n")}})
    ep = tpe.export(lambda x: (np.put(x, [11], 1.0), x)[1], randn(3, 4), dynamic_shapes={"x": {0: Dim("n", min=3)}})
    _same(ep, lambda x: (np.put(x, [11], 1.0), x)[1], lambda n: (randn(n, 4, seed=n),), sizes=(3, 5))


def test_putmask_needs_the_array_shape():
    with pytest.raises(tpe.ConstraintViolationError, match="putmask"):
        tpe.export(lambda x, m: (np.putmask(x, m, 0.0), x)[1], randn(3, 4), np.ones((3, 4), bool),
                   dynamic_shapes={"x": {0: Dim("n")}, "m": None})


@pytest.mark.parametrize("fn, words", [
    (lambda x: np.allclose(x, x), "returns a Python bool computed from the values"),
    (lambda x: np.array_equal(x, x), "np.isclose(a, b).all()"),
    (lambda x: np.real_if_close(x), "real or a complex array depending on the values"),
    (lambda x: np.piecewise(x, [x > 0], [1.0, 0.0]), "np.where / np.select"),
    (lambda x: np.apply_along_axis(np.sum, 0, x), "vectorize the function over the axis"),
    (lambda x: np.histogram_bin_edges(x, 4), "np.linspace"),
    (lambda x: np.linalg.eig(x[:, :5] @ x[:, :5].T), "np.linalg.eigh"),
    (lambda x: np.linalg.lstsq(x, x[:, 0]), "np.linalg.pinv(a) @ b"),
])
def test_refusals_say_why_and_what_to_write(fn, words):
    with pytest.raises(tpe.UnsupportedOpError, match="is not supported during capture") as info:
        tpe.export(fn, *one(5), dynamic_shapes=SPEC)
    assert words in str(info.value)


@pytest.mark.parametrize("view", [np.linalg.matrix_transpose, lambda y: np.rollaxis(y, 1),
                                  lambda y: np.hsplit(y, 2)[0], np.matrix_transpose])
def test_writes_through_new_views_are_refused(view):
    def fn(x):
        y = x.copy()
        view(y)[0] = 0
        return y
    with pytest.raises(tpe.UnsupportedOpError, match="cannot follow writes through that view"):
        tpe.export(fn, *one(4), dynamic_shapes=SPEC)


def test_new_ops_survive_save_and_load():
    import io

    def fn(x):
        a = x.copy()
        a.sort(axis=0)
        return (np.linalg.vecdot(x, x), np.linalg.vector_norm(x, axis=1), np.unique_counts(np.round(x)).counts,
                np.hsplit(x, 2)[1], np.sinc(x), a)
    ep = tpe.export(fn, *one(5), dynamic_shapes=SPEC)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    _same(loaded, fn, one)


def test_gradient_choose_packbits():
    def fn(x):
        t = np.linspace(0.0, 1.0, 6).astype(np.float32)
        idx = (x > 0).astype(np.int64) + (x > 1)
        return (*np.gradient(x), np.gradient(x, axis=1), np.gradient(x[:, 0]), *np.gradient(x, 0.5, t),
                np.gradient(x, axis=0, edge_order=2), np.choose(idx, [x, -x, 2 * x]),
                np.packbits(x > 0, axis=1), np.packbits(x > 0), np.packbits(x > 0, axis=0))
    ep = check(fn, one, {"x": {0: Dim("n", min=3, max=64)}}, sizes=(3, 4, 9, 17),
               ops=["numpy.gradient", "tpe.gradient_one", "numpy.choose", "numpy.packbits"])
    _same(ep, fn, one, sizes=(3, 4, 9, 17))


def test_gradient_needs_edge_order_plus_one_values():
    with pytest.raises(tpe.ConstraintViolationError, match=r"n >= 3"):
        tpe.export(lambda x: np.gradient(x, axis=0, edge_order=2), *one(5), dynamic_shapes=SPEC)


def test_choose_indices_stay_below_the_number_of_choices():
    def fn(x, i):
        return np.choose(i[: x.shape[0]], [x, -x])
    # the index values are data: the program runs numpy's choose, which raises where eager does
    ep = tpe.export(fn, randn(4), np.array([0, 1, 1, 0, 1]), dynamic_shapes={"x": {0: Dim("n", max=5)}, "i": None})
    np.testing.assert_array_equal(ep.module()(randn(3), np.array([1, 0, 1, 1, 0])),
                                  fn(randn(3), np.array([1, 0, 1, 1, 0])))


def test_multi_dot_cond_matrix_rank():
    def fn(x):
        a = x[:, :3]
        return (np.linalg.multi_dot([x[0], x.T, a]), np.linalg.multi_dot([x, x.T, x, x[0]]),
                np.linalg.multi_dot([x.T, x]), np.linalg.cond(x.T @ x + np.eye(6, dtype=x.dtype)),
                np.linalg.cond(a.T @ a, "fro"), np.linalg.matrix_rank(x), np.linalg.matrix_rank(x[0]),
                np.linalg.matrix_rank(np.stack([x.T @ x, x.T @ x])))
    ep = check(fn, one, SPEC)
    _same(ep, fn, one)
