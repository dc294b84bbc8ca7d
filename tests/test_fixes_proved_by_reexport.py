"""A fix block is printed only after exporting again with it applied has succeeded.

``export`` applies the first round of fixes to the spec, captures again, and folds the
fixes of any guard that capture still meets into one block, so one refine step is enough.
"""
import importlib

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.specs.refine import combine_fix_rounds

export_module = importlib.import_module("tensorplay_export.export")


def pool2(x):
    b, c, h, w = x.shape
    return x.reshape(b, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


SPEC = {"x": {2: Dim("h", max=64), 3: Dim("w", max=64)}}


def x_of(h, w):
    return np.ones((1, 2, h, w), np.float32)


def test_combine_composes_chains_and_renames_the_final_root():
    rounds = [["_h = Dim('_h', max=128)", "h = 2*_h", "w = 2*_w", "_w = Dim('_w', max=128)"],
              ["__h = Dim('__h', max=64)", "_h = 2*__h"],
              ["___h = Dim('___h', max=32)", "__h = 2*___h"]]
    assert combine_fix_rounds(rounds, {"h", "w"}) == [
        "_w = Dim('_w', max=128)", "_h = Dim('_h', max=32)", "h = 8*_h", "w = 2*_w"]


def test_combine_substitutes_constants_and_keeps_one_round_as_it_is():
    assert combine_fix_rounds([["dy = 2*_d", "_d = Dim('_d', max=9)"], ["_d = 3"]], {"dy"}) == ["dy = 6"]
    one = ["dx = Dim('dx', max=50)", "dy = 2*dx"]
    assert combine_fix_rounds([one], {"dx", "dy"}) == one


def test_fixes_a_first_round_missed_are_found_by_exporting_again(monkeypatch):
    real = export_module.build_violation_error
    calls = []

    def first_round_misses_w(violations, dims):
        err = real(violations, dims)
        calls.append(list(err.fixes))
        if len(calls) == 1:   # a fix search that found only h's fixes
            err.fixes = [ln for ln in err.fixes if "w" not in ln]
        return err

    monkeypatch.setattr(export_module, "build_violation_error", first_round_misses_w)
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(pool2, x_of(8, 6), dynamic_shapes=SPEC)
    err = info.value
    assert len(calls) >= 2, "the block was not checked by exporting again"
    assert any("h = 2*_h" == ln for ln in err.fixes) and any("w = 2*_w" == ln for ln in err.fixes)
    assert err.fixes_note is None
    monkeypatch.setattr(export_module, "build_violation_error", real)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), SPEC)
    ep = tpe.export(pool2, x_of(8, 6), dynamic_shapes=spec)   # one refine step
    np.testing.assert_allclose(ep.module()(x_of(10, 4)), pool2(x_of(10, 4)))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(x_of(10, 5))


def test_when_only_unexpressible_guards_remain_the_message_says_one_step_is_not_enough(monkeypatch):
    real = export_module.build_violation_error
    calls = []

    def second_round_unfixable(violations, dims):
        err = real(violations, dims)
        calls.append(1)
        if len(calls) == 1:
            err.fixes = [ln for ln in err.fixes if "w" not in ln]
        else:
            err.fixes = []
        return err

    monkeypatch.setattr(export_module, "build_violation_error", second_round_unfixable)
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(pool2, x_of(8, 6), dynamic_shapes=SPEC)
    text = str(info.value)
    assert "one refine step will not be enough" in text
    assert text.index("Note: with these fixes applied") < text.index("Suggested fixes:")
    # the block still applies (the note stands before it, not inside it)
    tpe.refine_dynamic_shapes_from_suggested_fixes(text, SPEC)
