"""``np.float32(n)``, ``np.int64(n)`` of a size during capture: the size typed as eager types it
(a symbolic value, no pin), while the scalar types still answer as numpy's own (dtype arguments,
``isinstance``, ``==``); a narrow integer type requires the size to fit it."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from numpy import float32 as imported_float32

SPEC = {"x": {0: Dim("n", max=100)}}


def _compare(fn):
    ep = tpe.export(fn, np.full((3, 3), 2, np.float32), dynamic_shapes=SPEC)
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(1, 100)]  # nothing pinned
    for n in (1, 2, 5, 40, 100):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        got, want = ep.module()(x), fn(x)
        assert got.dtype == want.dtype and got.shape == want.shape, n
        np.testing.assert_array_equal(got, want)


def local_import(x):
    import numpy as npl
    return x * npl.float32(x.shape[0])


@pytest.mark.parametrize("fn", [
    lambda x: x * np.float32(x.shape[0]),                        # stays float32 (eager promotes so)
    lambda x: x * np.float64(x.shape[0]),                        # float64 scalar: float64 result
    lambda x: x[: np.int64(x.shape[0]) // 2],
    lambda x: x / np.sqrt(np.float32(x.shape[0] * 3)),
    lambda x: (x * 8).astype(np.int32) * np.int32(x.shape[0]),
    lambda x: x * imported_float32(x.shape[0]),                  # from numpy import float32
    local_import,                                                # import numpy inside the model
], ids=["float32", "float64", "int64_slice", "rsqrt", "int32", "imported", "local_import"])
def test_a_numpy_scalar_of_a_size_stays_symbolic(fn):
    _compare(fn)


def test_the_scalar_types_still_answer_as_numpys_own():
    seen = {}

    def fn(x):
        seen["isinstance"] = isinstance(np.float32(1.5), np.float32) and isinstance(x.dtype.type(1), np.float32)
        seen["eq"] = (x.dtype == np.float32, np.dtype(np.float32) == np.float32, x.dtype.type == np.float32)
        seen["zeros"] = np.zeros(2, np.float32).dtype
        seen["finfo"] = float(np.finfo(np.float32).eps)
        seen["plain"] = type(np.float32(2.5))
        return x.astype(np.float32) + np.zeros(x.shape, dtype=np.float32)

    tpe.export(fn, np.ones((3, 3), np.float32), dynamic_shapes=SPEC)
    assert seen == {"isinstance": True, "eq": (True, True, True), "zeros": np.dtype(np.float32),
                    "finfo": float(np.finfo(np.float32).eps), "plain": np.float32}


def test_a_size_in_a_narrow_integer_scalar_must_fit():
    fn = lambda x: x * np.int8(x.shape[0] * 40)  # noqa: E731
    with pytest.raises(tpe.ConstraintViolationError, match="OverflowError") as info:
        tpe.export(fn, np.ones((3, 3), np.float32), dynamic_shapes=SPEC)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), SPEC)
    ep = tpe.export(fn, np.ones((3, 3), np.float32), dynamic_shapes=fixed)
    np.testing.assert_array_equal(ep.module()(np.ones((3, 3), np.float32)), fn(np.ones((3, 3), np.float32)))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((4, 3), np.float32))


def test_a_size_that_does_not_fit_at_the_example_is_numpys_error_at_the_line():
    for fn in (lambda x: np.array([x.shape[0] * 40], dtype=np.int8), lambda x: x * np.int8(x.shape[0] * 40)):
        with pytest.raises(tpe.CaptureError, match="OverflowError: Python integer 480 out of bounds for int8") as info:
            tpe.export(fn, np.ones((12, 3)), dynamic_shapes=SPEC)
        assert "internal error" not in str(info.value) and "test_numpy_scalar_of_size.py" in str(info.value)


def test_a_comparison_takes_a_size_outside_a_narrow_dtype():
    # numpy 2 compares a Python int with an int8 array exactly; arithmetic raises OverflowError
    compare = lambda x: (np.ones(2, np.int8) < x.shape[0] * 10) * 1.0 + x[:2, 0]  # noqa: E731
    spec = {"x": {0: Dim("n", min=2, max=100)}}
    ep = tpe.export(compare, np.ones((13, 3)), dynamic_shapes=spec)
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(2, 100)]
    for n in (2, 13, 100):
        np.testing.assert_array_equal(ep.module()(np.ones((n, 3))), compare(np.ones((n, 3))))
    with pytest.raises(tpe.ConstraintViolationError, match="OverflowError"):
        tpe.export(lambda x: np.ones(2, np.int8) + x.shape[0] * 10, np.ones((3, 3)), dynamic_shapes=spec)
