"""Shrunk counterexamples of every fault the reliability suite found, one test each.

Each docstring names the kind of fault.  A fault whose fix belongs to another engineer and is
not in yet is marked ``xfail(strict=True)`` so the test flips (and fails) once it is fixed.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def export_refined(model, args, spec):
    """export, or (after a violation) one refine and export again."""
    try:
        return tpe.export(model, *args, dynamic_shapes=spec)
    except tpe.ConstraintViolationError as err:
        refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec)
        return tpe.export(model, *args, dynamic_shapes=refined)


def test_reshape_minus_one_next_to_a_size_that_may_be_zero():
    """Kind: a shape rule missed a precondition of numpy (reshape infers -1 only when the other
    sizes are nonzero).  With ``A = Dim(min=0)`` the program admitted A = 0 and numpy raised
    ValueError inside it.  Fixed in ops/movement.py: the rule requires each symbolic size next
    to -1 to be >= 1, so export reports a violation whose fix is ``A = Dim('A')``."""
    def model(x):
        return x.reshape(x.shape[0], -1)

    spec = {"x": {0: Dim("A", min=0), 1: Dim("B", min=0)}}
    with pytest.raises(tpe.ConstraintViolationError, match="A >= 1"):
        tpe.export(model, np.ones((1, 1)), dynamic_shapes=spec)
    ep = export_refined(model, (np.ones((1, 1)),), spec)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((0, 0)))
    np.testing.assert_array_equal(ep.module()(np.ones((3, 0))), np.ones((3, 0)).reshape(3, -1))
