"""Issue 13, item 10: draft_export says plainly when its fixes do not make export succeed.

A report whose export would still fail for another reason (an op without a shape
rule, a read of an array's value) records the blocking kinds
(``report.fixes_blocked_by``), and every rendering says so before the fix block.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, draft_export, refine_dynamic_shapes_from_suggested_fixes
from tensorplay_export.errors import ConstraintViolationError, DataDependentError, UnsupportedOpError
from tensorplay_export.face.report import fixes_blocked_line, render_html, render_markdown, report_to_dict

from _opaque import NO_RULE

POS = np.ones((16, 3))
SPEC = {"x": {0: Dim("n")}}


def table_then_opaque(x):
    y = x + POS[: x.shape[0]]
    return NO_RULE(y)


def table_then_item(x, t):
    y = x + POS[: x.shape[0]]
    return y * t.item()


def table_only(x):
    return x + POS[: x.shape[0]]


def test_fixes_with_an_unsupported_op_say_export_still_fails():
    x = np.ones((4, 3))
    report = draft_export(table_then_opaque, x, dynamic_shapes=SPEC)
    assert report.fixes and report.fixes_blocked_by == ["unsupported_op"]
    text = str(report)
    sentence = fixes_blocked_line(report)
    assert sentence.startswith("These fixes do not make export succeed")
    assert "Ops without shape rules" in sentence
    assert f"\n{sentence}\nSuggested fixes:\n" in text  # said right before the block
    assert sentence in render_html(report).replace("&#x27;", "'") and sentence in render_markdown(report)
    assert report_to_dict(report)["fixes_blocked_by"] == ["unsupported_op"]
    # and it is true: refine applies the block, export still refuses the op
    refined = refine_dynamic_shapes_from_suggested_fixes(text, SPEC)
    with pytest.raises(UnsupportedOpError):
        tpe.export(table_then_opaque, x, dynamic_shapes=refined)
    with pytest.raises(ConstraintViolationError, match="These fixes do not make export succeed"):
        report.raise_on_failure()


def test_fixes_with_a_value_read_say_export_still_fails():
    x, t = np.ones((4, 3)), np.array(2.0)
    report = draft_export(table_then_item, x, t, dynamic_shapes=SPEC)
    assert report.fixes and report.fixes_blocked_by == ["data_dependent"]
    assert "These fixes do not make export succeed" in str(report)
    refined = refine_dynamic_shapes_from_suggested_fixes(str(report), SPEC)
    with pytest.raises(DataDependentError):
        tpe.export(table_then_item, x, t, dynamic_shapes=refined)


def test_fixes_alone_make_export_succeed_and_say_nothing_more():
    x = np.ones((4, 3))
    report = draft_export(table_only, x, dynamic_shapes=SPEC)
    assert report.fixes and report.fixes_blocked_by == []
    assert fixes_blocked_line(report) is None
    assert "do not make export succeed" not in str(report)
    assert report_to_dict(report)["fixes_blocked_by"] == []
    ep = tpe.export(table_only, x, dynamic_shapes=refine_dynamic_shapes_from_suggested_fixes(str(report), SPEC))
    np.testing.assert_allclose(ep.module()(np.ones((16, 3))), table_only(np.ones((16, 3))))
