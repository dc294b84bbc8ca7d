"""Rendering of DraftExportReport: text, HTML, markdown, dict — the same content in each."""
from __future__ import annotations

import json

import numpy as np

from tensorplay_export import Dim
from tensorplay_export.face.draft import DraftExportReport, FailureReport, draft_export
from tensorplay_export.records import SourceLoc
from tensorplay_export.specs.refine import parse_suggested_fixes
from tensorplay_export.face.report import render_html, render_markdown, render_text, report_to_dict, status_line

POS = np.zeros((64, 4), np.float32)


def two_kinds(x):
    h = x + POS[: x.shape[0]]  # source-a
    idx = np.nonzero(h > -1)[0]
    if idx.shape[0] > 2:  # source-b
        return h
    return -h


def report() -> DraftExportReport:
    x = np.ones((8, 4), np.float32)
    return draft_export(two_kinds, x, dynamic_shapes={"x": {0: Dim("n", max=100)}})


def test_text_groups_by_kind_and_ends_with_one_fix_block():
    r = report()
    text = render_text(r)
    assert text == str(r)
    lines = text.splitlines()
    assert lines[0] == status_line(r) and "2 failures" in lines[0] and "program built" in lines[0]
    assert "Constraint violations (1)" in lines and "Data-dependent guards (1)" in lines
    assert lines.index("Constraint violations (1)") < lines.index("Data-dependent guards (1)")
    assert text.count("Suggested fixes:") == 1
    assert lines[-2:] == ["Suggested fixes:", "  n = Dim('n', max=64)"]
    assert [f.line for f in parse_suggested_fixes(text)] == ["n = Dim('n', max=64)"]
    assert "test_report.py:" in text and "# source-a" in text and "# source-b" in text


def test_html_table_has_every_failure_with_source_line():
    r = report()
    out = r._repr_html_()
    assert out == render_html(r)
    failures_table, _, region = out.partition("<div class='tpe-region'>")
    assert failures_table.count("<tr>") == 1 + len(r.failures)
    assert region.count("<tr>") > 1  # the picture of the admitted sizes follows the table
    for f in r.failures:
        assert f"test_report.py:{f.source.lineno}" in out
    assert "&lt;" not in status_line(r) and "Suggested fixes:" in out
    assert "<script" not in out


def test_markdown_table_escapes_cells():
    f = FailureReport("capture_error", "a | b\nsecond <line>", SourceLoc(__file__, 1), "n = 4")
    r = DraftExportReport([f], model_name="m")
    md = r._repr_markdown_()
    assert md == render_markdown(r)
    row = [ln for ln in md.splitlines() if ln.startswith("| 1 |")][0]
    assert "a \\| b<br>second &lt;line&gt;" in row and "`n = 4`" in row and "test_report.py:1" in row
    assert "| # | kind | message | source | fix |" in md


def test_dict_is_json_and_mirrors_failures():
    r = report()
    data = json.loads(json.dumps(report_to_dict(r)))
    assert data["program_built"] and not data["successful"]
    assert [f["kind"] for f in data["failures"]] == [f.kind for f in r.failures]
    assert data["suggested_fixes"] == ["n = Dim('n', max=64)"]
    assert data["failures"][0]["source"]["line"] == r.failures[0].source.lineno
    assert data["comparison"]["max_abs"] == 0.0


def test_report_without_program():
    r = DraftExportReport([FailureReport("numpy_error", "the model raised ValueError: x")], model_name="f")
    assert "no program could be built" in str(r)
    assert "Suggested fixes:" not in str(r) and "Suggested fixes:" not in r._repr_html_()
    assert report_to_dict(r)["comparison"] is None
    assert repr(r) == "<DraftExportReport f: 1 failure(s)>"


P32 = np.ones((32, 1))


def table_and_product(x):
    h, w = x.shape
    x = x + P32[:h]
    if (h - w) ** 2 > 100:  # not monotone in h or w: no fix line expresses it
        return x * 2
    return x + 1


def test_unfixable_violation_shows_no_fix_of_another_guard():
    spec = {"x": {0: Dim("h", max=64), 1: Dim("w", max=64)}}
    r = draft_export(table_and_product, np.ones((8, 8)), dynamic_shapes=spec)
    text = str(r)
    fixable, product = [f for f in r.failures if f.kind == "constraint_violation"]
    assert "h <= 32" in fixable.message and "(h - w)**2 <= 100" in product.message
    part = text.split("  2. ")[1].split("Suggested fixes:")[0]
    assert "no suggested fix:" in part and "fix: h = " not in part
    assert "     fix: h = Dim('h', max=32)" in text.split("  2. ")[0]
    assert text.endswith("Suggested fixes:\n  h = Dim('h', max=32)")
    assert [f["fix"] for f in report_to_dict(r)["failures"]] == ["h = Dim('h', max=32)", None]
    assert render_markdown(r).count("`h = Dim('h', max=32)`") == 1


def concat_add(x, y, z):
    return np.concatenate([x, y], axis=1) + z



def flat_pos(x):
    if (x.shape[0] - x.shape[1]) ** 2 > 100:
        return x * 2
    return x.reshape(-1) + 1


def test_report_without_fix_lines_ends_with_the_no_fixes_line_refine_explains():
    # (h - w)**2 <= 100 is a guard no fix form expresses (not monotone in either dim, so no box's
    # corners decide it; h*w <= 1000, used before, now gets a box of ranges)
    from tensorplay_export.specs.refine import refine_dynamic_shapes_from_suggested_fixes as refine
    from tensorplay_export.violations import NO_FIXES_LINE

    spec = {"x": {0: Dim("h"), 1: Dim("w")}}
    r = draft_export(flat_pos, np.ones((8, 8)), dynamic_shapes=spec)
    text = str(r)
    assert "Suggested fixes:" not in text and text.endswith("\n\n" + NO_FIXES_LINE)
    assert NO_FIXES_LINE in render_markdown(r) and NO_FIXES_LINE in render_html(r)
    try:
        refine(text, spec)
    except ValueError as err:
        assert str(err).startswith("there are no suggested fixes to apply: the message found no fix form that "
                                   "makes (h - w)**2 <= 100 hold")
        assert "declare x.shape[1] as Dim.AUTO instead of Dim('w')" in str(err)
    else:
        raise AssertionError("refine applied something from a report without fixes")
