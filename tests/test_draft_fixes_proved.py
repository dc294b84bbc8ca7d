"""Issue 13, item 1 for draft_export: its fix block is proved by capturing again, as export's is.

``draft_export`` folds the fixes of the guards a capture with the block applied still
meets into one block (``export.prove_fixes`` in draft mode), so refining with the
report's text once reaches a program; what could not be proved is said before the block.
"""
import importlib

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, draft_export, refine_dynamic_shapes_from_suggested_fixes
from tensorplay_export.face.report import render_markdown, report_to_dict

from _opaque import NO_RULE

export_module = importlib.import_module("tensorplay_export.export")


def pool2(x):
    b, c, h, w = x.shape
    return x.reshape(b, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


def opaque_then_pool2(x):
    scale = NO_RULE(x.sum(axis=(2, 3)))   # no shape rule, over sizes that are not h or w
    return pool2(x) * scale[:, :, None, None]


SPEC = {"x": {2: Dim("h", max=64), 3: Dim("w", max=64)}}


def x_of(h, w):
    return np.ones((1, 2, h, w), np.float32)


def _first_round_misses_w(monkeypatch, later=None):
    """A fix search whose first round finds only h's fixes (``later``: what the next rounds return)."""
    real = export_module.build_violation_error
    calls = []

    def search(violations, dims):
        err = real(violations, dims)
        calls.append(list(err.fixes))
        if len(calls) == 1:
            err.fixes = [ln for ln in err.fixes if "w" not in ln]
        elif later is not None:
            err.fixes = later(err.fixes)
        return err

    monkeypatch.setattr(export_module, "build_violation_error", search)
    monkeypatch.setattr(importlib.import_module("tensorplay_export.violations"), "build_violation_error", search)
    return calls


def test_the_draft_block_is_the_export_block_on_real_models():
    def pyramid(x):
        return pool2(pool2(pool2(x)))

    for model, x in [(pool2, x_of(8, 6)), (pyramid, x_of(16, 24))]:
        report = draft_export(model, x, dynamic_shapes=SPEC)
        with pytest.raises(tpe.ConstraintViolationError) as info:
            tpe.export(model, x, dynamic_shapes=SPEC)
        assert report.fixes == info.value.fixes and report.fixes
        assert report.fixes_note is None and "Note:" not in str(report)


def test_draft_finds_what_a_first_round_missed_by_capturing_again(monkeypatch):
    calls = _first_round_misses_w(monkeypatch)
    report = draft_export(pool2, x_of(8, 6), dynamic_shapes=SPEC)
    assert len(calls) >= 2, "the draft block was not checked by capturing again"
    assert "h = 2*_h" in report.fixes and "w = 2*_w" in report.fixes
    assert report.fixes_note is None
    monkeypatch.undo()
    spec = refine_dynamic_shapes_from_suggested_fixes(str(report), SPEC)
    ep = tpe.export(pool2, x_of(8, 6), dynamic_shapes=spec)   # one refine step
    np.testing.assert_allclose(ep.module()(x_of(10, 4)), pool2(x_of(10, 4)))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(x_of(10, 5))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(x_of(9, 4))


def test_guards_past_an_op_without_a_shape_rule_are_proved_too(monkeypatch):
    """Proving in draft mode goes on past the opaque op, and the report says export still fails."""
    calls = _first_round_misses_w(monkeypatch)
    report = draft_export(opaque_then_pool2, x_of(8, 6), dynamic_shapes=SPEC)
    assert len(calls) >= 2
    assert "h = 2*_h" in report.fixes and "w = 2*_w" in report.fixes
    assert report.fixes_blocked_by == ["unsupported_op"] and report.fixes_note is None
    assert "These fixes do not make export succeed" in str(report)
    monkeypatch.undo()
    spec = refine_dynamic_shapes_from_suggested_fixes(str(report), SPEC)
    with pytest.raises(tpe.UnsupportedOpError):   # the fixes are right, the op still blocks export
        tpe.export(opaque_then_pool2, x_of(8, 6), dynamic_shapes=spec)
    again = draft_export(opaque_then_pool2, x_of(8, 6), dynamic_shapes=spec)
    assert [f.kind for f in again.failures] == ["unsupported_op"]


def test_when_later_guards_stay_unfixable_the_report_says_one_step_is_not_enough(monkeypatch):
    _first_round_misses_w(monkeypatch, later=lambda fixes: [])
    report = draft_export(pool2, x_of(8, 6), dynamic_shapes=SPEC)
    text = str(report)
    assert report.fixes and "one refine step will not be enough" in report.fixes_note
    assert text.index("Note: with these fixes applied") < text.index("Suggested fixes:")
    assert report.fixes_note in render_markdown(report)
    assert report_to_dict(report)["fixes_note"] == report.fixes_note
    # the note stands before the block, so refine still reads the block
    refine_dynamic_shapes_from_suggested_fixes(text, SPEC)
