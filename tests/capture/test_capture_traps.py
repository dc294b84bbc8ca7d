"""The measured capture traps (notes/capture-traps.md), each as a requirement."""
import functools
import math
import threading

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.traced import TracedArray
from tensorplay_export.errors import CaptureError, DataDependentError

POS = np.arange(512 * 4, dtype=np.float32).reshape(512, 4)
UNUSED = np.zeros(7)
SPEC = {"x": {0: Dim("n", max=512)}}


def x_of(n, d=4):
    return np.random.default_rng(n).standard_normal((n, d)).astype(np.float32)


def same_as_eager(fn, ep, sizes):
    mod = ep.module()
    for n in sizes:
        got, want = mod(x_of(n)), fn(x_of(n))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


def model_global(x):
    return x + POS[: x.shape[0]]


def test_global_table_sliced_by_size_is_lifted_lazily():
    ep = tpe.export(model_global, x_of(5), dynamic_shapes=SPEC)
    names = [n.name for n in ep.graph.placeholders()]
    assert names == ["c_POS", "x"]  # UNUSED is never lifted
    assert "c_POS" in ep.tensor_constants
    same_as_eager(model_global, ep, (1, 512))


def test_closure_and_default_arguments_are_reached():
    table = POS * 2

    def model(x, extra=POS):
        return x + table[: x.shape[0]] + extra[: x.shape[0]]
    ep = tpe.export(model, x_of(3), dynamic_shapes=SPEC)
    same_as_eager(model, ep, (1, 200))


def test_helper_function_in_module_globals_is_reached():
    ep = tpe.export(lambda x: helper(x), x_of(3), dynamic_shapes=SPEC)
    same_as_eager(helper, ep, (2, 400))


def helper(x):
    return x * POS[: x.shape[0], :1]


def test_unreachable_table_specializes_with_a_hint():
    holder = {"pos": POS}
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x: x + holder["pos"][: x.shape[0]], x_of(3), dynamic_shapes=SPEC)
    assert "register_buffer" in str(err.value) and "n = 3" in str(err.value)


def test_nothing_traced_leaks_into_caches_or_globals():
    @functools.lru_cache
    def table():
        return np.ones((512, 4), np.float32)

    with pytest.raises(tpe.ConstraintViolationError):
        tpe.export(lambda x: x + table()[: x.shape[0]], x_of(3), dynamic_shapes=SPEC)
    assert type(table()) is np.ndarray
    assert type(POS) is np.ndarray and type(np.arange(3)) is np.ndarray


def test_everything_restored_when_the_model_raises():
    def bad(x):
        np.zeros(3)
        raise KeyError("boom")
    originals = (np.arange, np.zeros, np.ones, np.array)
    with pytest.raises(KeyError):
        tpe.export(bad, x_of(3), dynamic_shapes=SPEC)
    assert (np.arange, np.zeros, np.ones, np.array) == originals
    assert type(np.zeros(2)) is np.ndarray


def test_other_threads_never_see_traced_values():
    seen = set()
    stop = threading.Event()

    def other():
        while not stop.is_set():
            seen.add(type(np.arange(3)))
            seen.add(type(POS))
    th = threading.Thread(target=other)
    th.start()
    try:
        for _ in range(10):
            tpe.export(lambda x: x + np.arange(x.shape[1], dtype=np.float32) + POS[: x.shape[0]], x_of(3),
                       dynamic_shapes=SPEC)
    finally:
        stop.set()
        th.join()
    assert seen == {np.ndarray}


def test_write_through_a_view_capture_cannot_follow_fails_export_naming_the_line():
    def model(x):
        m = x.astype(np.complex128)
        part = m.real          # a strided view of other values: not followed (capture.views)
        part[:] = 7
        return m
    with pytest.raises(CaptureError, match=r"mutation through a view\?.*\n.*part\[:\] = 7"):
        tpe.export(model, x_of(3), dynamic_shapes=SPEC)


def test_write_through_a_view_of_a_model_array_is_seen_through_the_array():
    def model(x):
        m = x.copy()
        row = m[0]
        row[:] = 7
        return m
    ep = tpe.export(model, x_of(3), dynamic_shapes=SPEC)
    np.testing.assert_allclose(ep.module()(x_of(5)), model(x_of(5)))


def test_inplace_on_alias_of_input_writes_the_input_back_like_eager():
    def model(x):
        y = x.T
        y += 1
        return x
    ep = tpe.export(model, x_of(3), dynamic_shapes=SPEC)
    a, b = x_of(5), x_of(5)
    np.testing.assert_allclose(ep.module()(a), model(b))
    np.testing.assert_allclose(a, b)   # the caller's array changed as eager changed it


def test_inputs_are_not_mutated_by_capture():
    x = x_of(3)
    before = x.copy()

    def model(x):
        x += 1
        x[0] = 0
        return x * 2
    ep = tpe.export(model, x, dynamic_shapes=SPEC)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(ep.module()(x_of(5)), model(x_of(5)))


def test_array_conversion_raises_with_line():
    with pytest.raises(DataDependentError, match="data-dependent.*\n.*test_capture_traps.py"):
        tpe.export(lambda x: x * float(x.sum()), x_of(3))
    with pytest.raises(CaptureError, match="concrete data"):
        tpe.export(lambda x: x + sum(1 for _ in np.nditer(x)), x_of(3))
    with pytest.raises(TypeError):
        tpe.export(lambda x: x + memoryview(x).nbytes, x_of(3))


def test_isinstance_ndarray_keeps_eager_branch():
    fn = (lambda x: x * 2 if isinstance(x, np.ndarray) else x)
    ep = tpe.export(fn, x_of(3), dynamic_shapes=SPEC)
    same_as_eager(fn, ep, (2,))


@pytest.mark.parametrize("fn", [
    lambda x: x / np.sqrt(x.shape[1] // 2),
    lambda x: x / np.sqrt(x.shape[0]),
    lambda x: x * x.shape[0],
    lambda x: x * x.size,
    lambda x: x * np.prod(x.shape),
    lambda x: x * np.prod(x.shape[1:]),
    lambda x: x * (np.int64(2) * x.shape[0]),
    lambda x: x * np.float64(2),
    lambda x: x + x.sum(),
    lambda x: np.where(x > 0, x, -np.inf),
    lambda x: (x > 0) + 1,
    lambda x: np.arange(x.shape[0])[:, None] * x[:, :1],
    lambda x: x * x.shape[0] ** 0.5,
    lambda x: x * (196 / x.shape[0]),
    lambda x: x / math.sqrt(x.shape[0]),
    lambda x: x * np.array(x.shape)[0],
])
def test_dtypes_follow_numpy2_promotion(fn):
    ep = tpe.export(fn, x_of(6), dynamic_shapes=SPEC)
    same_as_eager(fn, ep, (1, 6, 200))


@pytest.mark.parametrize("fn", [
    lambda x: x[: min(x.shape[0], 3)],
    lambda x: x * max(x.shape),
    lambda x: x * sum(x.shape),
    lambda x: x * math.prod(x.shape),
    lambda x: x * divmod(x.shape[0], 4)[1],
    lambda x: x * abs(x.shape[0] - 20),
    lambda x: x * x.shape[0] ** 2,
    lambda x: np.zeros((*x.shape, 1)) + x[..., None],
])
def test_python_builtins_on_sizes_stay_symbolic(fn):
    ep = tpe.export(fn, x_of(6), dynamic_shapes=SPEC)
    same_as_eager(fn, ep, (1, 5, 100))


def test_a_size_as_a_dict_key_pins_it():
    # a dict lookup hashes the size: it can only answer for the example's value (issue 14)
    with pytest.raises(tpe.ConstraintViolationError, match="hashed"):
        tpe.export(lambda x: x * {x.shape[0]: 3}[x.shape[0]], x_of(6), dynamic_shapes=SPEC)


def test_traced_array_is_a_duck_not_a_subclass():
    seen = []
    tpe.export(lambda x: seen.append(type(x)) or x, x_of(2))
    # the traced run, then export's eager safety net on a copy of the example
    assert seen == [TracedArray, np.ndarray] and not issubclass(TracedArray, np.ndarray)


def test_static_dims_stay_python_ints():
    seen = []
    tpe.export(lambda x: seen.append(x.shape) or x, x_of(2), dynamic_shapes=SPEC)
    assert type(seen[0][1]) is int and type(seen[0][0]).__name__ == "SymInt"


def test_helper_methods_of_a_module_reach_globals_and_are_unbound_afterwards():
    from tensorplay_export import nn

    class M(nn.Module):
        def _pos(self, s):
            return POS[:s]

        def forward(self, x):
            return x + self._pos(x.shape[0])
    m = M()
    ep = tpe.export(m, x_of(3), dynamic_shapes=SPEC)
    assert "_pos" not in m.__dict__
    np.testing.assert_allclose(ep.module()(x_of(9)), m(x_of(9)))


def test_values_a_module_stores_during_capture_do_not_leak():
    from tensorplay_export import nn

    class Cache(nn.Module):
        def forward(self, x):
            self.last = x * 2
            return self.last + 1
    m = Cache()
    tpe.export(m, x_of(3), dynamic_shapes=SPEC)
    assert "last" not in m.__dict__
    m.last = np.zeros(1)
    tpe.export(m, x_of(3), dynamic_shapes=SPEC)
    assert type(m.last) is np.ndarray and m.last.shape == (1,)


def test_a_callback_function_of_numpy_is_named_in_the_refusal():
    import tensorplay_export as tpe

    with pytest.raises(tpe.CaptureError, match=r"numpy's vectorize.*callback"):
        tpe.export(lambda x: np.vectorize(lambda v: v + 1)(x), np.ones(4), dynamic_shapes={"x": {0: tpe.Dim("n")}})
