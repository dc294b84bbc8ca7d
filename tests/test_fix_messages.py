"""Issue 13, item 11: messages claim no more than the fix search did, and read well in a second round.

- "no fix form expresses" names every form searched (range, constant, divisibility,
  dy = k*dx + c, dy = c - dx, dz = dx + dy, pinning), and says the search was cut short
  when a bound stopped it;
- a fix block printed beside guards no fix expresses says one refine step will not be
  enough, and why;
- a root used through a derived dim shows the derived dim as an equation,
  ``_h (x.shape[2] = 2*_h)``, not ``_h = x.shape[2] (2*_h)``.
"""
import numpy as np
import pytest
import sympy

import solver
import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.entry import capture
from tensorplay_export.errors import UNFIXABLE_MARK
from tensorplay_export.records import DimInfo, derived_site, split_site
from tensorplay_export.violations import build_violation_error

POS = np.ones((16, 64), np.float32)
FORMS = ("Dim range", "constant", "divisibility n = k*_n + c", "dy = k*dx + c", "dy = c - dx", "dz = dx + dy",
         "pinning")


def table_and_product_branch(x):
    y = x + POS[: x.shape[0], : x.shape[1]]     # fixable: n <= 16, m <= 64
    if (x.shape[0] - x.shape[1]) ** 2 > 100:    # no fix form expresses (n - m)**2 <= 100 (not monotone)
        return y * 2
    return y


SPEC = {"x": {0: Dim("n", max=64), 1: Dim("m", max=64)}}


def test_the_search_reports_every_form_it_tried():
    n, m = sympy.symbols("n m", integer=True, positive=True)
    fs = solver.suggest_fixes([(n - m) ** 2 <= 100], {"n": (1, 64), "m": (1, 64)}, {"n": 8, "m": 8},
                              relations="linear")
    assert fs.unfixable and fs.complete
    text = ", ".join(fs.searched)
    for form in FORMS:
        assert form in text, form
    narrow = solver.suggest_fixes([(n - m) ** 2 <= 100], {"n": (1, 64), "m": (1, 64)}, {"n": 8, "m": 8})
    assert "dz = dx + dy" not in ", ".join(narrow.searched)   # "increasing" searches fewer forms


def test_a_search_cut_short_does_not_claim_no_form_exists():
    """More branch combinations than the search solves: the sentence says a fix may exist."""
    xs = sympy.symbols("a0:5", integer=True, positive=True)
    ys = sympy.symbols("b0:5", integer=True, positive=True)
    # each Min ties at the example (a_i = 3): two alternatives per guard (b_i = 3 with a_i >= 3, or
    # b_i = a_i with a_i <= 3), 2**5 combinations, more than the search solves
    guards = [sympy.Eq(sympy.Min(x, 3), y) for x, y in zip(xs, ys)]
    dims = {s.name: (1, 64) for s in xs + ys}
    fs = solver.suggest_fixes(guards, dims, {s.name: 3 for s in xs + ys}, relations="linear")
    assert not fs.complete and fs.bound == "the example's branches give 32 combinations and 6 were solved"
    few = solver.suggest_fixes(guards[:2], dims, {s.name: 3 for s in xs + ys}, relations="linear")
    assert few.complete


def test_unfixable_bullets_name_the_forms_and_the_block_says_one_step_is_not_enough():
    x = np.ones((8, 8), np.float32)
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(table_and_product_branch, x, dynamic_shapes=SPEC)
    err = info.value
    text = str(err)
    stuck = [v for v in err.violations if v.unfixable is not None]
    assert [v.guard_text for v in stuck] == ["(-m + n)**2 <= 100"]
    assert stuck[0].unfixable.startswith("no fix form expresses (-m + n)**2 <= 100 (searched: ")
    for form in FORMS:
        assert form in stuck[0].unfixable, form
    assert "no Dim range, constant or relation dy = k*dx + c expresses" not in text
    # the fixable lines are printed, and the text says plainly one step will not do
    assert "n = Dim('n', max=16)" in err.fixes
    assert "one refine step will not be enough" in text
    assert text.index("one refine step will not be enough") < text.index("Suggested fixes:")
    # and it is true: after one refine step export still stops at the product guard
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, SPEC)
    with pytest.raises(tpe.ConstraintViolationError) as again:
        tpe.export(table_and_product_branch, x, dynamic_shapes=spec)
    assert [v.guard_text for v in again.value.violations] == ["(-m + n)**2 <= 100"]


def test_the_unproved_error_says_so_too():
    """build_violation_error alone (no re-export) marks the block as not enough by the bullets' records."""
    x = np.ones((8, 8), np.float32)
    result = capture(table_and_product_branch, (x,), {}, SPEC)
    err = build_violation_error(result.env.violations, result.dims)
    text = str(err)
    assert err.fixes and "hold (the bullets above without a fix), so one refine step will not be enough" in text
    assert text.count(UNFIXABLE_MARK) == 1   # the note does not repeat the mark refine reads


def pool_twice(x):
    b, c, h, w = x.shape
    y = x.reshape(b, c, h // 2, 2, w).mean(axis=3)
    return y.reshape(b, c, h // 4, 2, w).mean(axis=3)


def test_a_second_round_shows_the_derived_dim_as_an_equation():
    _h = Dim("_h", max=32)
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(pool_twice, np.ones((1, 2, 8, 3)), dynamic_shapes={"x": {2: 2 * _h}})
    text = str(info.value)
    assert "Not all values of _h (x.shape[2] = 2*_h) in the specified range _h <= 32" in text
    assert "x.shape[2] (2*_h)" not in text
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, {"x": {2: 2 * _h}})
    ep = tpe.export(pool_twice, np.ones((1, 2, 8, 3)), dynamic_shapes=spec)
    np.testing.assert_allclose(ep.module()(np.ones((1, 2, 12, 3))), pool_twice(np.ones((1, 2, 12, 3))))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((1, 2, 10, 3)))


def test_dim_info_where():
    info = DimInfo("b", 1, 8, 4, ["x.shape[0]", derived_site("y.shape[0]", "2*b + 1")])
    assert info.where() == "b = x.shape[0] (y.shape[0] = 2*b + 1)"
    assert DimInfo("_h", 1, 32, 4, [derived_site("x.shape[2]", "2*_h")]).where() == "_h (x.shape[2] = 2*_h)"
    assert DimInfo("n", 1, 8, 4, ["x.shape[0]", "y.shape[1]"]).where() == "n = x.shape[0] = y.shape[1]"
    assert split_site("x.shape[0]") == ("x.shape[0]", None)


def test_a_cut_short_search_is_worded_as_such():
    from tensorplay_export.violations import _search_scope

    full = solver.FixSuggestion(searched=solver.SEARCHED_FORMS["linear"])
    assert _search_scope(full) == ("no fix form", "searched: " + ", ".join(solver.SEARCHED_FORMS["linear"]))
    cut = solver.FixSuggestion(searched=solver.SEARCHED_FORMS["linear"], complete=False,
                               bound="the example's branches give 32 combinations and 16 were solved")
    subject, scope = _search_scope(cut)
    assert subject == "no fix form found"
    assert scope.endswith("; the example's branches give 32 combinations and 16 were solved, so a fix may exist")


def test_a_pinned_compound_size_reads_as_its_guard_not_as_the_size():
    """``1 << (n % 4)`` pins ``n % 4``, not ``n``: the bullet says the guard its fix answers."""
    spec = {"x": {0: tpe.Dim("n", max=20)}}
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x: x * (1 << (x.shape[0] % 4)), np.ones(8), dynamic_shapes=spec)
    text = str(err.value)
    assert "satisfy the guard n % 4 == 0 (shift count of `<<`" in text and "specialized to 8" not in text
    assert "n = 4*_n" in text


def test_dynamic_axes_take_a_sum_relation_and_a_table_bound():
    # torch.export's Dim.DYNAMIC: c = a + b and a + b <= 64 are inferred, not reported
    table = np.ones((64, 2), np.float32)

    def model(a, b, c):
        ab = np.concatenate([a, b], axis=0)
        return ab * c + table[: ab.shape[0]]

    args = np.ones((3, 2), np.float32), np.ones((5, 2), np.float32), np.ones((8, 2), np.float32)
    spec = ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})
    ep = tpe.export(model, *args, dynamic_shapes=spec)
    for p, q in ((1, 1), (31, 33), (2, 7)):
        a, b, c = np.ones((p, 2), np.float32), np.full((q, 2), 2.0, np.float32), np.ones((p + q, 2), np.float32)
        np.testing.assert_array_equal(ep.module()(a, b, c), model(a, b, c))
    for p, q, r in ((31, 34, 65), (2, 7, 10)):   # past the table; c is not a + b
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(np.ones((p, 2), np.float32), np.ones((q, 2), np.float32), np.ones((r, 2), np.float32))


def test_a_dynamic_axis_note_is_said_once_per_message():
    # a is pinned to the table's 4 rows, b and c to a through broadcasting: each axis's note once
    table = np.ones((4, 2), np.float32)

    def model(a, b, c):
        return a + table, b * a, c + b

    args = [np.ones((4, 2), np.float32)] * 3
    spec = ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, *args, dynamic_shapes=spec)
    text = str(info.value)
    assert text.count("  - ") == 3 and "  - a_dim0 = a.shape[0] was specialized to 4" in text
    for name, entry in (("a", 0), ("b", 1), ("c", 2)):
        assert text.count(f"{name}.shape[0] is Dim.DYNAMIC") == 1
        assert (f"{name}.shape[0] is Dim.DYNAMIC ({name}_dim0 in [1, inf]), but the model specialized it to the "
                f"constant 4") in text
        assert f"its input is entry {entry}." in text
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert refined == ({0: 4}, {0: 4}, {0: 4})
    ep = tpe.export(model, *args, dynamic_shapes=refined)
    a, b, c = (np.full((4, 2), v, np.float32) for v in (1.0, 2.0, 3.0))
    for want, have in zip(model(a, b, c), ep.module()(a, b, c)):
        np.testing.assert_array_equal(have, want)
