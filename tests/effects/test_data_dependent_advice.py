"""The data-dependent guard error says how to state the fact (tpe.check), and doing what it says
exports a program that checks the fact at run time."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe

SPEC = {"x": {0: tpe.Dim("s", max=64)}, "mask": {0: tpe.Dim("s", max=64)}}


def _branchy(x, mask):
    k = np.nonzero(mask)[0].shape[0]
    if k > 3:
        return x * 2.0
    return x


def _checked(x, mask):
    k = np.nonzero(mask)[0].shape[0]
    tpe.check(k > 3)
    if k > 3:
        return x * 2.0
    return x


def test_the_error_names_tpe_check_and_following_it_exports():
    x, mask = np.ones(6, np.float32), np.ones(6, bool)
    with pytest.raises(tpe.DataDependentError) as info:
        tpe.export(_branchy, x, mask, dynamic_shapes=SPEC)
    assert "tpe.check(" in str(info.value) and "u0 > 3" in str(info.value)
    ep = tpe.export(_checked, x, mask, dynamic_shapes=SPEC)
    np.testing.assert_array_equal(ep.module()(np.ones(5, np.float32), np.ones(5, bool)), np.full(5, 2.0))
    with pytest.raises(tpe.ConstraintsExceededError, match=r"tpe.check\(u0 > 3\) failed: u0 = 1"):
        ep.module()(np.ones(5, np.float32), np.eye(5, dtype=bool)[0])
