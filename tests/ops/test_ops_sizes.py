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
