"""tensorplay_export.specs.dims: Dim, derived dims, hints, AdditionalInputs.verify."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tensorplay_export.specs.dims import AdditionalInputs, DerivedDim, Dim, _DerivedDim, dims


# --- Dim ------------------------------------------------------------------------------------

def test_dim_defaults_and_names():
    d = Dim("seq")
    assert (d.name, d.__name__, d.min, d.max) == ("seq", "seq", 1, None)
    for name in ("S", "N", "E", "I", "lambda", "_x"):
        assert Dim(name).name == name
    assert Dim("e", min=0).min == 0
    assert Dim("b", max=math.inf).max is None
    assert Dim("b", min=np.int64(2), max=np.int32(8)).max == 8
    assert repr(Dim("b", min=2, max=8)) == "Dim('b', min=2, max=8)"
    assert repr(Dim("b")) == "Dim('b')"


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(min=-1), ValueError, "negative"),
    (dict(min=5, max=4), ValueError, "smaller than min=5"),
    (dict(max=2.5), TypeError, "must be an integer"),
    (dict(min=True), TypeError, "must be an integer"),
    (dict(min="1"), TypeError, "must be an integer"),
])
def test_dim_bad_bounds(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        Dim("b", **kwargs)


def test_dim_bad_names():
    with pytest.raises(ValueError, match="identifier"):
        Dim("1x")
    with pytest.raises(ValueError, match="identifier"):
        Dim("a b")
    with pytest.raises(TypeError, match="must be a str"):
        Dim(3)
    with pytest.raises(TypeError):
        Dim("a", 1, 2)  # bounds are keyword-only


def test_dim_equality_by_value():
    assert Dim("a", max=4) == Dim("a", max=4)
    assert Dim("a", max=4) != Dim("a", max=5)
    assert len({Dim("a"), Dim("a")}) == 1


def test_hints_are_singletons():
    assert repr(Dim.AUTO) == "Dim.AUTO" and repr(Dim.STATIC) == "Dim.STATIC" and repr(Dim.DYNAMIC) == "Dim.DYNAMIC"
    assert Dim.AUTO is not Dim.DYNAMIC
    import pickle

    assert pickle.loads(pickle.dumps(Dim.AUTO)) is Dim.AUTO


def test_dims_helper():
    a, b = dims("a", "b", min=2, max=9)
    assert (a.name, b.name, a.min, b.max) == ("a", "b", 2, 9)


# --- derived dims ---------------------------------------------------------------------------

def test_derived_forms():
    dx = Dim("dx", min=2, max=10)
    for expr, (k, c) in [(2 * dx, (2, 0)), (dx * 3, (3, 0)), (dx + 1, (1, 1)), (1 + dx, (1, 1)),
                         (dx - 1, (1, -1)), (2 * dx + 1, (2, 1)), (3 * (2 * dx + 1), (6, 3)),
                         ((dx + 1) - 4, (1, -3)), (2 * (dx - 1) + 5, (2, 3))]:
        assert isinstance(expr, _DerivedDim) and expr.root is dx
        assert (expr.scale, expr.offset) == (k, c)
    assert DerivedDim is _DerivedDim and DerivedDim.__name__ == "_DerivedDim"
    d = 2 * dx + 1
    assert (d.min, d.max, d.name, repr(d)) == (5, 21, "2*dx + 1", "2*dx + 1")
    assert (dx - 1).name == "dx - 1" and (Dim("u") * 2).max is None
    assert 2 * dx == 2 * dx and hash(2 * dx) == hash(dx * 2)


@pytest.mark.parametrize("make, exc", [
    (lambda d: d * d, TypeError), (lambda d: d * 1.5, TypeError),
    (lambda d: d + 0.5, TypeError), (lambda d: 0 * d, NotImplementedError), (lambda d: d - d, NotImplementedError),
    (lambda d: d // 2, NotImplementedError),
    (lambda d: d / 2, NotImplementedError), (lambda d: d % 2, NotImplementedError), (lambda d: d ** 2, NotImplementedError),
    (lambda d: (d + 1) * (d + 1), TypeError), (lambda d: (2 * d) // 2, NotImplementedError),
    (lambda d: d * True, TypeError), (lambda d: (d + Dim("e")) * Dim("e"), TypeError),
    (lambda d: 1.5 - d, TypeError), (lambda d: (d - Dim("e")) // 2, NotImplementedError),
])
def test_derived_unsupported(make, exc):
    with pytest.raises(exc, match=re.escape("integer linear forms over dims: k*dx + c (integer k != 0")):
        make(Dim("d"))


def test_derived_decreasing_and_over_several_roots():
    dx, dy = Dim("dx", max=31), Dim("dy", max=10)
    d = 32 - dx
    assert isinstance(d, _DerivedDim) and d.root is dx and (d.scale, d.offset) == (-1, 32)
    assert (d.name, d.min, d.max) == ("32 - dx", 1, 31)
    assert (64 - 2 * dx).name == "64 - 2*dx" and (64 - 2 * dx).scale == -2
    assert -dx == (-1) * dx and (-(dx + 1)).offset == -1 and (3 - (dx + 1)).name == "2 - dx"
    s = dx + dy
    assert s.root is None and s.terms == ((dx, 1), (dy, 1)) and s.offset == 0
    assert (s.name, s.min, s.max) == ("dx + dy", 2, 41)
    t = dx - dy + 1
    assert t.name == "dx - dy + 1" and t.terms == ((dx, 1), (dy, -1)) and t.offset == 1
    assert (t.min, t.max) == (-8, 31)
    assert dx + dx == 2 * dx and (dx + dy) - dy == dx + 0 and hash(dx + dy) == hash(dy + dx)
    assert (2 * (dx + dy) + 1).name == "2*dx + 2*dy + 1"


# --- AdditionalInputs -----------------------------------------------------------------------

def test_additional_inputs_verify_runs_every_set():
    ai = AdditionalInputs()
    ai.add((np.zeros(2, dtype=np.float32),))
    ai.add([np.zeros(3, dtype=np.float32)])
    seen = []

    class EP:
        def module(self):
            return lambda x: seen.append(x.shape)

    ai.verify(EP())
    assert seen == [(2,), (3,)]
