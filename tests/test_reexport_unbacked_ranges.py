"""A data-dependent size's range in ``range_constraints`` is what the program's checks on it
admit (torch's test_export_with_inline_constraints: ``a = x.item(); torch._check(4 <= a <= 7)``
gives ``u0: [4, 7]``), decided by the solver from the checks the program carries, so a loaded
program and a re-export state the same."""
from __future__ import annotations

import numpy as np
import pytest

from _shared import refused, roundtrip

import tensorplay_export as tpe
from tensorplay_export import Dim


def ranges(ep):
    return {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()}


def _item_between(x):
    a = x.item()
    tpe.check(a >= 4)
    tpe.check(a <= 7)
    return np.zeros((a, 4), np.float32)


def _nonzero_at_least_two(x):
    n = np.nonzero(x)[0]
    tpe.check(n.shape[0] >= 2)
    return n * 2


def _item_even_below(x):
    a = x.item()
    tpe.check(a % 2 == 0)
    tpe.check(a < 11)
    tpe.check(a > 1)
    return np.ones(a, np.float32)


def _item_related(x, y):
    a = x.item()
    tpe.check(a <= y.shape[0])  # over two sizes: says nothing about a alone
    return y[:a]


CASES = {
    # model, example args, spec, expected ranges, (inputs, refused) at other values
    "item_between": (_item_between, (np.array([5]),), None, {"u0": (4, 7)},
                     [((np.array([4]),), False), ((np.array([7]),), False), ((np.array([8]),), True),
                      ((np.array([3]),), True)]),
    "nonzero_at_least_two": (_nonzero_at_least_two, (np.array([1, 0, 1, 1, 0]),), None, {"u0": (2, 5)},
                             [((np.array([0, 0, 0, 0, 1]),), True), ((np.array([1, 1, 0, 0, 0]),), False),
                              ((np.array([1, 1, 1, 1, 1]),), False)]),
    "item_even_below": (_item_even_below, (np.array(4),), None, {"u0": (2, 10)},
                        [((np.array(10),), False), ((np.array(2),), False), ((np.array(12),), True),
                         ((np.array(5),), True)]),
    "item_related": (_item_related, (np.array(2), np.ones(5, np.float32)), ({}, {0: Dim("n")}),
                     {"n": (1, float("inf")), "u0": (0, float("inf"))},
                     [((np.array(5), np.ones(5, np.float32)), False), ((np.array(6), np.ones(5, np.float32)), True)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_range_of_a_data_dependent_size_is_what_its_checks_admit(name):
    model, args, spec, expected, calls = CASES[name]
    ep = tpe.export(model, *args, dynamic_shapes=spec)
    assert ranges(ep) == expected
    assert ranges(roundtrip(ep)) == expected
    for inputs, refuse in calls:
        assert refused(ep, *inputs) == refuse, inputs
        if not refuse:
            np.testing.assert_array_equal(ep.module()(*inputs), model(*inputs))


@pytest.mark.parametrize("name", sorted(CASES))
def test_reexport_states_the_same_ranges(name):
    model, args, spec, expected, calls = CASES[name]
    ep = tpe.export(model, *args, dynamic_shapes=spec)
    ep2 = tpe.export(ep.module(), *args, dynamic_shapes=spec)
    assert ranges(ep2) == expected
    for inputs, refuse in calls:
        assert refused(ep2, *inputs) == refuse, inputs
        if not refuse:
            np.testing.assert_array_equal(ep2.module()(*inputs), model(*inputs))


def test_a_range_check_on_a_backed_size_still_narrows_its_auto_dim():
    def model(x):
        tpe.check(x.shape[0] <= 32)
        tpe.check(x.shape[0] >= 3)
        return x * 2

    ep = tpe.export(model, np.ones(4), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert list(ranges(ep).values()) == [(3, 32)]
