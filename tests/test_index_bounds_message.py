"""The error for index values whose known range reaches outside their axis says, in words, what
may go wrong and what to do (violations.index_bounds_text), never a bare False."""
import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import CaptureError
from tensorplay_export.violations import index_bounds_text


def _searchsorted_into_unique(x):
    u = np.unique((x * 2).astype(np.int64))
    return np.eye(u.shape[0])[np.searchsorted(u, (x * 2).astype(np.int64))]


def test_an_index_that_can_reach_a_data_dependent_axis_size_says_so():
    # searchsorted's values reach len(u) = u0, one past the last row of an axis of u0 rows,
    # whatever the sizes: no contract helps, only the values kept the example inside
    with pytest.raises(CaptureError) as info:
        tpe.export(_searchsorted_into_unique, np.array([1., -2, 3, 4, -5, 6]), dynamic_shapes={"x": {0: Dim("n")}})
    text = str(info.value)
    assert "False" not in text and "which is false" not in text, text
    assert "The index may reach the axis size u0 (its last position is u0 - 1) for every size" in text, text
    assert "This is a data-dependent bound (u0 is the size " in text, text
    assert "np.clip(i, 0, x.shape[0] - 1)" in text and "test_index_bounds_message.py:" in text, text


def test_a_bound_that_fails_at_the_example_names_the_example_sizes():
    def model(x, idx):
        return x[np.clip(idx, 0, 10)]

    with pytest.raises(CaptureError) as info:
        tpe.export(model, np.ones((6, 3)), np.array([0, 1, 4]), dynamic_shapes={"x": {0: Dim("n")}, "idx": None})
    text = str(info.value)
    assert "The index may reach 10, past the axis's last position n - 1 at the example sizes (n = 6)" in text, text
    assert "data-dependent" not in text, text


def test_the_text_words_each_form_of_bound():
    n, u = sympy.symbols("n u0", integer=True, positive=True)
    low = index_bounds_text(sympy.Ge(-10, -n, evaluate=False), False, "r", "n = 6")
    assert "The index may go down to -10, below -n, the first position counted from the end at the example " \
           "sizes (n = 6)" in low and "largest magnitude of a negative index" in low
    other = index_bounds_text(sympy.Eq(n, 3), True, "r", "")
    assert "staying inside needs n == 3" in other.lower() and "for every size" in other
    dd = index_bounds_text(sympy.Le(u, u - 1, evaluate=False), True, "r", "u0 = 5", produced={"u0": "numpy.unique"})
    assert "(u0 is the size numpy.unique produced)" in dd and "False" not in dd
