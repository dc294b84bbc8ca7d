"""Issue 13, item 11 (last part): draft_export reports one failure per guard and source line.

A loop asks the same question once per iteration; torch.export's draft_export
reports it once, and so do we, with a count (``FailureReport.count``).  The
program still checks every iteration's value at run time.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tensorplay_export import draft_export
from tensorplay_export.errors import ConstraintsExceededError
from tensorplay_export.face.failures import FailureReport, dedupe_failures
from tensorplay_export.face.report import render_markdown, report_to_dict
from tensorplay_export.records import SourceLoc


def add_positive_items(x, a, b):
    out = x
    for v in (a, b):
        s = v.item()  # item-line
        if s > 0:
            out = out + s
    return out


def count_nonzero_rows(x, a, b):
    out = x
    for v in (a, b):
        n = np.nonzero(v)[0].shape[0]
        if n > 1:  # branch-line
            out = out + 1
    return out


def _line(marker: str) -> int:
    from pathlib import Path

    for number, line in enumerate(Path(__file__).read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(marker)


@pytest.mark.parametrize("a, b", [(np.array(1.0), np.array(2.0))])
def test_item_read_in_a_loop_is_one_failure_with_a_count(a, b):
    report = draft_export(add_positive_items, np.ones(3), a, b)
    (f,) = report.failures
    assert f.kind == "data_dependent" and f.count == 2
    assert f.source is not None and f.source.lineno == _line("item-line")
    assert f"values {a.item()}, {b.item()}" in f.message  # every value the example read there
    text = str(report)
    assert "1 failure;" in text and "(2 times at this line" in text
    assert report_to_dict(report)["failures"][0]["count"] == 2
    json.dumps(report_to_dict(report))
    assert "2 times at this line" in render_markdown(report)
    # the program still checks each iteration's value
    m = report.exported_program.module()
    np.testing.assert_allclose(m(np.ones(3), a, b), add_positive_items(np.ones(3), a, b))
    with pytest.raises(ConstraintsExceededError):
        m(np.ones(3), a, -b)


def test_int_item_in_a_loop_is_a_size_and_its_branch_one_failure():
    # an int .item() is a data-dependent size (as torch's u0 = t.item()): the failure is the
    # branch on it, once per loop line, and the program checks each iteration's value
    a, b = np.array(1), np.array(2)
    report = draft_export(add_positive_items, np.ones(3), a, b)
    (f,) = report.failures
    assert f.kind == "data_dependent" and f.count == 2
    assert f.source.lineno == _line("item-line") + 1 and "u0 > 0" in f.message
    m = report.exported_program.module()
    np.testing.assert_allclose(m(np.ones(3), a, b), add_positive_items(np.ones(3), a, b))
    with pytest.raises(ConstraintsExceededError, match="violates u1 > 0"):
        m(np.ones(3), a, np.array(0))
    with pytest.raises(ConstraintsExceededError, match="a size is >= 0"):
        m(np.ones(3), a, -b)


def test_data_dependent_guard_in_a_loop_is_one_failure_with_a_count():
    a, b = np.array([1, 1, 0]), np.array([1, 1, 1])
    report = draft_export(count_nonzero_rows, np.ones(3), a, b)
    (f,) = report.failures
    assert f.kind == "data_dependent" and f.count == 2 and f.guard is not None
    assert f.source.lineno == _line("branch-line")
    m = report.exported_program.module()
    np.testing.assert_allclose(m(np.ones(3), a, b), count_nonzero_rows(np.ones(3), a, b))


def test_dedupe_keeps_different_patterns_and_lines_apart():
    here = SourceLoc(__file__, 10)
    there = SourceLoc(__file__, 11)
    fs = [FailureReport("data_dependent", "m1", here, pattern=("value_read", "reads .item()")),
          FailureReport("data_dependent", "m2", here, pattern=("value_read", "reads .tolist()")),
          FailureReport("data_dependent", "m3", there, pattern=("value_read", "reads .item()")),
          FailureReport("data_dependent", "m4", here, pattern=("value_read", "reads .item()")),
          FailureReport("capture_error", "no pattern", here),
          FailureReport("capture_error", "no pattern", here)]
    out = dedupe_failures(fs)
    assert [(f.message, f.count) for f in out] == [("m1", 2), ("m2", 1), ("m3", 1), ("no pattern", 1),
                                                    ("no pattern", 1)]
