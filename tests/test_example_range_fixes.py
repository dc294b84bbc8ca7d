"""Issue 13, item 9: an example outside its declared range gets the violation layout and a fix.

The error stays ``ConstraintsExceededError`` (the seed names it for this case); its
text is rendered from violation records (the one layout), and one refine step with
its ``Suggested fixes:`` block makes export succeed with the widest range the
example needs, no wider.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, draft_export, refine_dynamic_shapes_from_suggested_fixes
from tensorplay_export.errors import ConstraintsExceededError, render_violations

HERE = Path(__file__)


def rows(x):
    return x * 2.0


def two(x, y):
    return x.sum(0) + y.sum(0)


def _admits(ep, model, sizes_ok, sizes_bad, make):
    for n in sizes_ok:
        args = make(n)
        np.testing.assert_allclose(ep.module()(*args), model(*args))
    for n in sizes_bad:
        with pytest.raises(ConstraintsExceededError):
            ep.module()(*make(n))


def test_example_above_max_fails_refines_and_exports_admitting_20_refusing_21():
    spec = {"x": {0: Dim("b", max=8)}}
    x = np.ones((20, 3))
    with pytest.raises(ConstraintsExceededError) as info:
        tpe.export(rows, x, dynamic_shapes=spec)  # call-site
    err = info.value
    text = str(err)
    assert text.startswith("Constraints violated (b)!\n")
    assert "  - x.shape[0] = 20 is outside b in [1, 8]" in text
    line = next(i for i, ln in enumerate(HERE.read_text().splitlines(), 1) if ln.rstrip().endswith("# call-site"))
    assert f"at {HERE.name}:{line}" in text  # the user's call of export
    assert text.endswith("Suggested fixes:\n  b = Dim('b', max=20)")
    # rendered from the records, by the one renderer of the layout
    assert err.fixes == ["b = Dim('b', max=20)"]
    (v,) = err.violations
    assert v.example is not None and (v.example.site, v.example.size) == ("x.shape[0]", 20)
    assert (v.example.lower, v.example.upper) == (1, 8) and v.cause == "example_range"
    assert v.source is not None and v.source.lineno == line
    assert text == render_violations(err.violations, err.fixes)

    refined = refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = tpe.export(rows, x, dynamic_shapes=refined)
    assert {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()} == {"b": (1, 20)}
    _admits(ep, rows, [1, 8, 19, 20], [21, 40], lambda n: (np.ones((n, 3)),))


def test_example_below_min_gets_a_min_fix_keeping_the_max():
    spec = {"x": {0: Dim("b", min=4, max=64)}}
    with pytest.raises(ConstraintsExceededError) as info:
        tpe.export(rows, np.ones((2, 3)), dynamic_shapes=spec)
    text = str(info.value)
    assert "x.shape[0] = 2 is outside b in [4, 64]" in text
    assert info.value.fixes == ["b = Dim('b', min=2, max=64)"]
    ep = tpe.export(rows, np.ones((2, 3)), dynamic_shapes=refine_dynamic_shapes_from_suggested_fixes(text, spec))
    _admits(ep, rows, [2, 3, 64], [1, 65], lambda n: (np.ones((n, 3)),))


def test_empty_example_gets_min_0():
    spec = {"x": {0: Dim("b", max=8)}}
    with pytest.raises(ConstraintsExceededError) as info:
        tpe.export(rows, np.ones((0, 3)), dynamic_shapes=spec)
    assert info.value.fixes == ["b = Dim('b', min=0, max=8)"]
    ep = tpe.export(rows, np.ones((0, 3)),
                    dynamic_shapes=refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec))
    _admits(ep, rows, [0, 1, 8], [9], lambda n: (np.ones((n, 3)),))


def test_derived_dim_widens_its_roots_range():
    c = Dim("c", max=4)
    spec = {"x": {0: Dim("b", max=8)}, "y": {0: 2 * c}}
    with pytest.raises(ConstraintsExceededError) as info:
        tpe.export(two, np.ones((20, 3)), np.ones((12, 3)), dynamic_shapes=spec)
    text = str(info.value)
    assert text.startswith("Constraints violated (b, c)!")
    assert "y.shape[0] = 12 is outside 2*c for c in [1, 4]" in text
    assert info.value.fixes == ["b = Dim('b', max=20)", "c = Dim('c', max=6)"]
    refined = refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = tpe.export(two, np.ones((20, 3)), np.ones((12, 3)), dynamic_shapes=refined)
    assert {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()} == {"b": (1, 20), "c": (1, 6)}
    for n, m in [(20, 12), (1, 2), (5, 8)]:
        np.testing.assert_allclose(ep.module()(np.ones((n, 3)), np.ones((m, 3))),
                                   two(np.ones((n, 3)), np.ones((m, 3))))
    for n, m in [(21, 12), (20, 14), (20, 13)]:
        with pytest.raises(ConstraintsExceededError):
            ep.module()(np.ones((n, 3)), np.ones((m, 3)))


def test_derived_dim_off_its_lattice_has_no_fix_and_says_why():
    spec = {"x": {0: 2 * Dim("c", max=4)}}
    with pytest.raises(ConstraintsExceededError) as info:
        tpe.export(rows, np.ones((9, 3)), dynamic_shapes=spec)
    text = str(info.value)
    assert "x.shape[0] = 9 is outside 2*c for c in [1, 4]" in text
    assert "no suggested fix: x.shape[0] = 9 is not 2*c for any integer c" in text
    assert info.value.fixes == []
    with pytest.raises(ValueError, match="nothing to apply|no suggested fix"):
        refine_dynamic_shapes_from_suggested_fixes(text, spec)


def test_draft_export_reports_the_same_fix_and_its_text_refines():
    spec = {"x": {0: Dim("b", max=8)}}
    report = draft_export(rows, np.ones((20, 3)), dynamic_shapes=spec)
    (f,) = report.failures
    assert f.kind == "example_out_of_range" and f.fix == "b = Dim('b', max=20)"
    assert f.message.startswith("x.shape[0] = 20 is outside b in [1, 8]")
    assert report.fixes == ["b = Dim('b', max=20)"]
    with pytest.raises(ConstraintsExceededError) as info:
        report.raise_on_failure()
    assert info.value.fixes == ["b = Dim('b', max=20)"]
    refined = refine_dynamic_shapes_from_suggested_fixes(str(report), spec)
    assert draft_export(rows, np.ones((20, 3)), dynamic_shapes=refined).successful()


def branches_above_10(x):
    if x.shape[0] > 10:
        return x * 2.0
    return x


def test_widened_range_is_checked_by_capture_so_one_refine_step_suffices():
    spec = {"x": {0: Dim("b", max=8)}}
    x = np.ones((20, 3))
    with pytest.raises(ConstraintsExceededError) as info:
        tpe.export(branches_above_10, x, dynamic_shapes=spec)
    text = str(info.value)
    assert "x.shape[0] = 20 is outside b in [1, 8]" in text
    assert "satisfy the guard b > 10" in text  # found by a capture with the widened range
    assert info.value.fixes == ["b = Dim('b', min=11, max=20)"]
    ep = tpe.export(branches_above_10, x, dynamic_shapes=refine_dynamic_shapes_from_suggested_fixes(text, spec))
    _admits(ep, branches_above_10, [11, 20], [10, 21], lambda n: (np.ones((n, 3)),))
    report = draft_export(branches_above_10, x, dynamic_shapes=spec)
    assert report.fixes == ["b = Dim('b', min=11, max=20)"]
    assert sorted(f.kind for f in report.failures) == ["constraint_violation", "example_out_of_range"]
    with pytest.raises(ConstraintsExceededError):
        report.raise_on_failure()


def test_widened_range_the_model_cannot_run_says_so_in_export_and_draft():
    # the example (100 rows) is outside n <= 64 and too long for the model's 64-row table:
    # widening n admits it, and the proof's failed re-export is printed beside the fix block
    table = np.arange(64, dtype=np.float32)

    def model(x):
        return x + table[: x.shape[0]]

    spec = {"x": {0: Dim("n", max=64)}}
    x = np.ones((100,), np.float32)
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        tpe.export(model, x, dynamic_shapes=spec)
    err = info.value
    assert err.fixes == ["n = Dim('n', max=100)"]
    assert err.fixes_note is not None and "operands could not be broadcast" in err.fixes_note
    assert "one refine step will not be enough" in str(err)
    report = tpe.draft_export(model, x, dynamic_shapes=spec)
    assert report.fixes_note == err.fixes_note and "one refine step will not be enough" in str(report)
    # an example the widened range does admit needs no note
    with pytest.raises(tpe.ConstraintsExceededError) as ok:
        tpe.export(model, np.ones((40,), np.float32), dynamic_shapes={"x": {0: Dim("n", max=32)}})
    assert ok.value.fixes_note is None and ok.value.fixes == ["n = Dim('n', max=40)"]
