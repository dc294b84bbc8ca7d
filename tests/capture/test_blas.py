"""capture.blas: one BLAS thread while the model runs on the examples, restored afterwards."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.blas import one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def blas_threads() -> list:
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


def test_blas_is_single_threaded_during_capture_and_restored_after():
    if not blas_threads():
        pytest.skip("numpy links no BLAS threadpoolctl knows")
    seen = []

    def model(x):
        seen.append(blas_threads())
        return x @ x.T

    with threadpoolctl.threadpool_limits(2, "blas"):
        before = blas_threads()
        ep = tpe.export(model, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim("n", max=8)}})
        assert blas_threads() == before
    assert seen and all(n == 1 for n in seen[0])
    np.testing.assert_allclose(ep.module()(np.ones((5, 4))), np.full((5, 5), 4.0))


def test_limit_is_restored_when_the_block_raises():
    before = blas_threads()
    with pytest.raises(RuntimeError):
        with one_blas_thread():
            raise RuntimeError("model failed")
    assert blas_threads() == before
