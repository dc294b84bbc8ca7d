"""tpe.size_value: a size expression returned as a Python int/float/bool (issue 16 item 1)."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.ops.sizes import size_value


def test_size_value_converts_to_the_python_kind():
    assert (type(size_value(np.int64(7), "int")), size_value(np.int64(7), "int")) == (int, 7)
    assert (type(size_value(3, "float")), size_value(3, "float")) == (float, 3.0)
    assert size_value(np.True_, "bool") is True


def test_size_value_refuses_an_unknown_kind():
    with pytest.raises(ValueError, match="kind must be one of"):
        size_value(3, "str")


def test_size_value_nodes_compute_at_the_call_sizes():
    def model(x):
        return x.shape[0] * x.shape[1] - 1

    ep = tpe.export(model, np.ones((3, 4)), dynamic_shapes={"x": {0: tpe.Dim("a"), 1: tpe.Dim("b")}})
    assert [n.target for n in ep.graph.nodes].count("tpe.size_value") == 1
    assert ep.module()(np.ones((5, 6))) == 29


# -- tpe.item_size: a one-element int array's value as a data-dependent size ------------------
def test_item_size_is_the_int_value_and_refuses_what_is_no_size():
    from tensorplay_export.errors import ConstraintsExceededError
    from tensorplay_export.ops.sizes import item_size

    assert item_size(np.array([7]), "m.py:1") == 7 and type(item_size(np.array(3, np.uint8))) is int
    with pytest.raises(ConstraintsExceededError, match=r"is -2, but a size is >= 0 .*at m.py:9"):
        item_size(np.array(-2), "m.py:9")
    with pytest.raises(TypeError, match="integer array"):
        item_size(np.array(2.0))
    with pytest.raises(ValueError):
        item_size(np.array([1, 2]))


def test_item_of_an_int_array_is_an_unbacked_size_through_save_and_load(tmp_path):
    def model(x, k):
        n = k[0].item()
        return np.zeros(n, x.dtype) + x[:n].sum()

    ep = tpe.export(model, np.ones(10, np.float32), np.array([3]),
                    dynamic_shapes={"x": {0: tpe.Dim("t", max=256)}, "k": None})
    assert [n.target for n in ep.graph.nodes].count("tpe.item_size") == 1
    tpe.save(ep, tmp_path / "p.pt2")
    loaded = tpe.load(tmp_path / "p.pt2")
    x = np.arange(12, dtype=np.float32)
    for k in (0, 2, 12, 20):
        np.testing.assert_array_equal(loaded.module()(x, np.array([k])), model(x, np.array([k])))
