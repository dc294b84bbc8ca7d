"""Ports of torch.export dynamic-shape scenarios about which dims are distinct: duck sizing,
user Dim names against the names export makes itself (Dim.AUTO symbols, unbacked sizes,
Dim.DYNAMIC axis names), names that are also Python or sympy words, compound ranges and
specializations of roots.  Conventions as in test_torch_export_dynamic.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from test_torch_export_dynamic import agrees, arr, refine_once, roundtrip, violation

TABLE8 = np.arange(8, dtype=np.float32)
TABLE16 = np.arange(16, dtype=np.float32)


def _two_outputs(x, y):
    return x * 2, y * 3


@pytest.mark.parametrize("hint", [Dim.AUTO, Dim.DYNAMIC], ids=["auto", "dynamic"])
def test_equal_example_sizes_are_not_tied_without_a_reason(hint):
    # torch's "don't duck-size" tests: equal sizes in the example do not make one dim
    ep = tpe.export(_two_outputs, arr(4), arr(4), dynamic_shapes={"x": {0: hint}, "y": {0: hint}})
    assert len(ep.range_constraints) == 2
    agrees(ep, _two_outputs, arr(3), arr(7))


def test_equal_example_sizes_with_two_named_dims_stay_two_dims():
    ep = tpe.export(_two_outputs, arr(4), arr(4), dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}})
    agrees(ep, _two_outputs, arr(1), arr(9))


@pytest.mark.parametrize("names", [("E", "I"), ("S", "N"), ("oo", "zoo"), ("Min", "Max"),
                                   ("floor", "Mod"), ("lambda", "pi"), ("x", "y")])
def test_dim_names_that_are_sympy_or_python_words(names):
    def model(x, y):
        return x + TABLE8[: x.shape[0]], y[1:] * x

    a, b = names
    err, spec, ep = refine_once(model, arr(4), arr(5), dynamic_shapes={"x": {0: Dim(a)}, "y": {0: Dim(b)}})
    assert f"{a} = Dim('{a}', max=8)" in str(err) and f"{b} = {a} + 1" in str(err)
    for n in (1, 8):
        agrees(ep, model, arr(n), arr(n + 1))
    agrees(roundtrip(ep), model, arr(3), arr(4))


@pytest.mark.parametrize("name", ["np", "self", "check_x", "getitem", "add", "None", "return", "float64"])
def test_dim_names_that_collide_with_generated_code(name):
    def model(x, y):
        return x + TABLE8[: x.shape[0]], y[1:] * x

    d = Dim(name, max=8)
    ep = tpe.export(model, arr(4), arr(5), dynamic_shapes={"x": {0: d}, "y": {0: d + 1}})
    for prog in (ep, roundtrip(ep)):
        agrees(prog, model, arr(6), arr(7))
        with pytest.raises(tpe.ConstraintsExceededError):
            prog.module()(arr(9), arr(10))


def test_fix_names_avoid_a_users_dim_of_the_same_name():
    # the divisibility fix introduces a new root; the user already has a dim named _n
    def model(x, y):
        return x.reshape(-1, 2), y * 2

    spec = {"x": {0: Dim("n")}, "y": {0: Dim("_n", max=4)}}
    err, spec2, ep = refine_once(model, arr(6), arr(3), dynamic_shapes=spec)
    agrees(ep, model, arr(10), arr(4))
    agrees(ep, model, arr(2), arr(1))  # y's _n stays its own dim
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(10), arr(5))


def test_user_dim_named_like_an_auto_symbol():
    def model(x, y):
        return x * 2, y + TABLE16[: y.shape[0]]

    ep = tpe.export(model, arr(3), arr(4), dynamic_shapes={"x": {0: Dim("s0")}, "y": {0: Dim.AUTO}})
    agrees(ep, model, arr(20), arr(5))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(3), arr(17))


def test_auto_before_a_user_dim_named_s0():
    ep = tpe.export(_two_outputs, arr(3), arr(4), dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim("s0")}})
    agrees(ep, _two_outputs, arr(5), arr(6))


def test_user_dim_named_like_an_unbacked_size():
    def model(x, y):
        return np.nonzero(x)[0] * 2, y + 1

    ep = tpe.export(model, np.array([1, 0, 1]), arr(4),
                    dynamic_shapes={"x": {0: Dim("n")}, "y": {0: Dim("u0")}})
    agrees(ep, model, np.array([1, 1, 1, 1, 0]), arr(2))
    agrees(roundtrip(ep), model, np.array([0, 0]), arr(7))


def test_user_dim_named_like_a_dynamic_axis():
    def model(x, y):
        return x + TABLE8[: x.shape[0]], y * 2

    # the DYNAMIC axis takes the table's bound itself (torch's rule) under a name of its own
    spec = {"x": {0: Dim.DYNAMIC}, "y": {0: Dim("x_dim0")}}
    ep = tpe.export(model, arr(3), arr(4), dynamic_shapes=spec)
    assert {str(s): (v.lower, v.upper) for s, v in ep.range_constraints.items()} == \
        {"x_dim0_1": (1, 8), "x_dim0": (1, float("inf"))}
    agrees(ep, model, arr(8), arr(2))
    agrees(ep, model, arr(1), arr(30))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(9), arr(2))


def test_user_dim_named_like_a_specialized_dynamic_axis():
    def model(x, y):
        return x + TABLE8, y * 2

    spec = {"x": {0: Dim.DYNAMIC}, "y": {0: Dim("x_dim0")}}
    err, spec2, ep = refine_once(model, arr(8), arr(4), dynamic_shapes=spec)
    assert "x_dim0_1 = x.shape[0] was specialized to 8" in str(err)
    assert spec2 == {"x": {0: 8}, "y": {0: Dim("x_dim0")}}
    agrees(ep, model, arr(8), arr(2))


# --- compound ranges, specializations of roots ---------------------------------------------------

def test_compound_range_from_a_chained_comparison():
    def model(x):
        if 2 < x.shape[0] < 5:
            return x * 2
        return x

    err, spec, ep = refine_once(model, arr(3), dynamic_shapes={"x": {0: Dim("n")}})
    assert "Dim('n', min=3, max=4)" in str(err)
    for n in (3, 4):
        agrees(ep, model, arr(n))
    for n in (2, 5):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(arr(n))


def test_pinned_derived_dim_specializes_its_root():
    W = np.ones(5, np.float32)

    def model(x, y):
        return x + 1, y * W

    dx = Dim("dx")
    err, spec, ep = refine_once(model, arr(4), arr(5), dynamic_shapes={"x": {0: dx}, "y": {0: dx + 1}})
    assert "dx = 4" in str(err)
    assert spec == {"x": {0: 4}, "y": {0: 5}}
    agrees(ep, model, arr(4), arr(5))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(5), arr(6))


def test_dynamic_hint_pinned_by_the_model_gets_a_constant_fix():
    W = np.ones(3, np.float32)

    def model(x):
        return x * W

    err, spec, ep = refine_once(model, arr(3), dynamic_shapes={"x": {0: Dim.DYNAMIC}})
    assert "x_dim0 = 3" in str(err)
    assert spec == {"x": {0: 3}}
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(4))


def test_a_string_in_place_of_a_dim_is_refused_by_name():
    with pytest.raises(ValueError, match="must be a Dim"):
        tpe.export(lambda x: x, arr(3), dynamic_shapes={"x": {0: "n"}})


def test_even_and_odd_strided_halves_need_an_even_size():
    def model(x):
        return x[::2] + x[1::2]

    err, spec, ep = refine_once(model, arr(6), dynamic_shapes={"x": {0: Dim("n")}})
    assert "n = 2*_n" in str(err)
    for n in (2, 8):
        agrees(ep, model, arr(n))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(5))


def test_order_guard_between_two_dims_gets_a_box_fix_or_auto():
    # m <= n: no fix line states the relation; the fix is one box of ranges around the
    # example that implies it (main's documented behaviour), and Dim.AUTO keeps it exact
    def model(x, y):
        return x[: y.shape[0]] + y

    spec = {"x": {0: Dim("n")}, "y": {0: Dim("m")}}
    err, spec2, ep = refine_once(model, arr(5), arr(3), dynamic_shapes=spec)
    assert "m <= n" in str(err) and "one box" in str(err)
    lo_n = spec2["x"][0].min
    hi_m = spec2["y"][0].max
    assert hi_m is not None and lo_n is not None and hi_m <= lo_n
    for n, m in ((lo_n, 1), (lo_n + 7, hi_m), (5, 3)):
        agrees(ep, model, arr(n), arr(m))
    ep2 = tpe.export(model, arr(5), arr(3), dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim("m")}})
    for n, m in ((5, 3), (4, 4), (9, 1), (30, 20)):
        agrees(ep2, model, arr(n), arr(m))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep2.module()(arr(2), arr(3))
