"""The widest range fix finds both ends far from the example (beyond the local scan) exactly:
binary search with solver queries, upward and downward, on linear and nonlinear guards."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay_export as tpe


def _fix_line(model, example_rows, max_rows):
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones((example_rows,), np.float32),
                   dynamic_shapes={"x": {0: tpe.Dim("n", max=max_rows)}})
    return str(info.value).split("Suggested fixes:")[1].strip()


def test_linear_ends_far_from_the_example():
    def model(x):
        n = x.shape[0]
        return x + 1 if 37 <= n <= 1500 else x

    assert _fix_line(model, 500, 4096) == "n = Dim('n', min=37, max=1500)"


def test_nonlinear_ends_far_from_the_example():
    def model(x):
        n = x.shape[0]
        return x + 1 if 1500 <= n * n <= 2_000_000 else x

    lo, hi = math.isqrt(1499) + 1, math.isqrt(2_000_000)
    assert _fix_line(model, 500, 100_000) == f"n = Dim('n', min={lo}, max={hi})"
