"""Creation with symbolic sizes inside the model: arange, zeros/ones/empty/full, *_like, eye, tri, linspace."""
import numpy as np
import pytest

from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}


def one(n):
    return (randn(n, 3),)


def test_creation_functions_stay_symbolic():
    def f(x):
        n = x.shape[0]
        return (np.arange(n), np.arange(1, n + 1, 2), np.zeros((n, 2)), np.ones((n, 1), dtype=bool),
                np.full((2, n), 7.0, dtype=np.float32), np.empty((n, 0)).shape[0] + np.zeros(n),
                np.eye(n), np.identity(n), np.tri(n), np.tril(np.ones((n, n))), np.triu(np.ones((n, n)), 1),
                np.linspace(0.0, 1.0, n), np.zeros_like(x), np.ones_like(x, dtype=np.int64), np.full_like(x, 2))
    check(f, one, SPEC, ops=["numpy.arange", "numpy.zeros", "numpy.ones", "numpy.full", "numpy.eye",
                             "numpy.identity", "numpy.tri", "numpy.tril", "numpy.triu", "numpy.linspace",
                             "numpy.zeros_like", "numpy.ones_like", "numpy.full_like"])


def test_static_creation_inside_capture_is_traced():
    check(lambda x: x[:, 0] + np.arange(512)[: x.shape[0]], one, {"x": {0: Dim("n", max=512)}},
          ops=["numpy.arange"])


def test_size_scalar_carries_the_numpy_type():
    # n + np.int32(1) is an np.int32 in eager: an int8 array meeting it becomes int32
    check(lambda x: x.astype(np.int8) + (x.shape[0] + np.int32(1)), one, SPEC, ops=["tpe.size_scalar"])


def test_shape_array_is_int64_not_object():
    check(lambda x: (np.array(x.shape), x * np.prod(x.shape[1:]), x * np.prod(x.shape)), one, SPEC,
          ops=["tpe.shape_array"])


def test_sizes_from_arguments_must_be_nonnegative():
    import pytest

    import tensorplay_export as tpe
    from tensorplay_export import Dim

    spec = {"x": {0: Dim("n", max=40)}}
    for fn in (lambda x: np.zeros((x.shape[0] - 5, 2)), lambda x: np.full(x.shape[0] - 5, 1.0),
               lambda x: np.eye(x.shape[0] - 5), lambda x: np.linspace(0, 1, x.shape[0] - 5),
               lambda x: np.ones_like(x, shape=(x.shape[0] - 5,))):
        with pytest.raises(tpe.ConstraintViolationError, match=r"n = Dim\('n', min=5, max=40\)"):
            tpe.export(fn, np.ones((8, 2), np.float32), dynamic_shapes=spec)
    # sizes sympy knows are >= 0 fold without a guard
    ep = tpe.export(lambda x: np.zeros((x.shape[0] + 1, 2)), np.ones((8, 2), np.float32), dynamic_shapes=spec)
    assert ep.module()(np.ones((1, 2), np.float32)).shape == (2, 2)


def test_linspace_retstep_returns_samples_and_step():
    """np.linspace(..., retstep=True) is ``tpe.linspace_retstep``: (samples, step) as numpy gives them,
    the step computed from the size at run time; also decomposed and after save/load."""
    import io

    import pytest

    import tensorplay_export as tpe

    def f(x):
        n = x.shape[0]
        ys, step = np.linspace(0.0, n, n + 1, retstep=True)
        zs, step2 = np.linspace(-1, 1, n, False, True, np.float32)
        return x * step, ys, zs * step2, np.linspace(0.0, 1.0, 5, retstep=True)[1] * x[:1]

    ep = check(f, one, SPEC, sizes=(1, 2, 7, 64), ops=["tpe.linspace_retstep"])
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    for prog in (tpe.load(buf), ep.run_decompositions()):
        for n in (1, 9):
            (x,) = one(n)
            for g, w in zip(prog.module()(x), f(x)):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=1e-6)
    # numpy's step is the Python float nan when num - 1 == 0: a symbolic num keeps num >= 2
    with pytest.raises(tpe.ConstraintViolationError, match="n >= 2"):
        tpe.export(lambda x: x * np.linspace(0, 1, x.shape[0], retstep=True)[1][None], *one(5),
                   dynamic_shapes=SPEC)


def test_spacings_and_windows_of_a_size():
    """logspace/geomspace like linspace; windows are empty below 1 and ones(1) at 1, as numpy's."""
    check(lambda x: (np.logspace(0, 1, x.shape[0]), np.logspace(0, 2, x.shape[0] + 1, False, 2.0),
                     np.geomspace(1, 10, x.shape[0]), np.hanning(x.shape[0]), np.hamming(x.shape[0] - 2),
                     np.blackman(x.shape[0] + 1), np.bartlett(x.shape[0]), np.kaiser(x.shape[0], 4.0),
                     x * np.hanning(3)),
          one, SPEC, sizes=(1, 2, 3, 9),
          ops=["numpy.logspace", "numpy.geomspace", "numpy.hanning", "numpy.hamming", "numpy.blackman",
               "numpy.bartlett", "numpy.kaiser"])


def test_indices_of_sizes():
    check(lambda x: (np.indices((x.shape[0], 2)), np.indices((3, x.shape[0], x.shape[1]), dtype=np.int32),
                     x[np.indices(x.shape[:1])[0]]),
          one, SPEC, sizes=(1, 2, 7), ops=["numpy.indices"])


def test_triu_tril_indices_have_exact_counts():
    """Square triangles have closed-form counts (n(n+1)/2 for k = 0), so n stays dynamic; the
    indices gather from an (n, n) array without index guards."""
    check(lambda x: (np.triu_indices(x.shape[0]), np.tril_indices(x.shape[0], 1), np.triu_indices(x.shape[0], -2),
                     np.tril_indices(x.shape[0], -1), np.triu_indices(x.shape[0], 2, x.shape[0]),
                     (x @ x.T)[np.triu_indices(x.shape[0], 1)], (x @ x.T)[np.tril_indices_from(x @ x.T)],
                     np.triu_indices_from(x @ x.T, -1)),
          one, SPEC, sizes=(1, 2, 3, 8, 64),
          ops=["numpy.triu_indices", "numpy.tril_indices", "numpy.tril_indices_from", "numpy.triu_indices_from"])


def test_triu_indices_of_a_rectangle_pins_the_size():
    import pytest

    import tensorplay_export as tpe

    with pytest.raises(tpe.ConstraintViolationError, match="non-square triangle"):
        tpe.export(lambda x: np.triu_indices(x.shape[0], 0, 4), *one(5), dynamic_shapes=SPEC)


def test_constant_creation_composites_decompose():
    """linspace/tri with constant arguments decompose (their arange is traced, not an ndarray)."""
    import tensorplay_export as tpe

    def f(x):
        return x * np.linspace(0, 1, 3), x @ np.tri(3), np.triu(np.ones((3, 3))) @ x.T

    dec = tpe.export(f, *one(5), dynamic_shapes=SPEC).run_decompositions()
    targets = {n.target for n in dec.graph.nodes if n.op == "call_function"}
    assert not targets & {"numpy.linspace", "numpy.tri", "numpy.triu"}, targets
    for n in (1, 4, 9):
        (x,) = one(n)
        for g, w in zip(dec.module()(x), f(x)):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-6)


LINSPACE_BOUNDS = {
    "stop n": lambda x: x * np.linspace(0.0, x.shape[0], x.shape[0]),
    "stop n, num 5": lambda x: x[:5] * np.linspace(0, x.shape[0], 5),
    "-n..n, 2n+1, no endpoint": lambda x: np.linspace(-x.shape[0], x.shape[0], 2 * x.shape[0] + 1, endpoint=False),
    "n/3..n as float32": lambda x: np.linspace(x.shape[0] / 3, x.shape[0], x.shape[0], dtype=np.float32),
    "float32 start": lambda x: np.linspace(np.float32(0.5), x.shape[0], x.shape[0]),
    "int dtype": lambda x: np.linspace(1, x.shape[0], x.shape[0] - 2, dtype=np.int64),
    "start == stop": lambda x: np.linspace(x.shape[0], x.shape[0], x.shape[0]),
    "num 1 and 0": lambda x: (np.linspace(0, x.shape[0], x.shape[0] - 4), np.linspace(0.0, 1.0, x.shape[0] - 5)),
    "0..1 (step 1/(n-1))": lambda x: x * np.linspace(0, 1, x.shape[0]),
    "0.1..0.7": lambda x: x * np.linspace(0.1, 0.7, x.shape[0]),
}


@pytest.mark.parametrize("name", list(LINSPACE_BOUNDS))
def test_linspace_with_size_bounds_decomposes_bit_for_bit(name):
    """run_decompositions on np.linspace whose start/stop is a size (np.result_type read a size as a
    dtype name), and numpy's own step arithmetic: values equal eager numpy's exactly at every size."""
    import tensorplay_export as tpe

    f = LINSPACE_BOUNDS[name]
    ep = tpe.export(f, np.ones(7), dynamic_shapes={"x": {0: Dim("n", min=5, max=100)}})
    dec = ep.run_decompositions()
    assert "numpy.linspace" not in {n.target for n in dec.graph.nodes if n.op == "call_function"}
    for n in (5, 6, 9, 13, 49, 50, 97, 100):
        x = np.ones(n)
        got, want = dec.module()(x), f(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.shape == w.shape and g.dtype == w.dtype, (n, g.dtype, w.dtype)
            np.testing.assert_array_equal(g, w)
