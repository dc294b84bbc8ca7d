"""ShapeEnv.guard routing: proved, named violation, AUTO acceptance with replacement, data-dependent."""
import pytest
import sympy
from solver import ShapeSolver

from tensorplay_export.errors import CaptureError, DataDependentError
from tensorplay_export.capture.shape_env import ShapeEnv


def make(mode="export"):
    return ShapeEnv(ShapeSolver(), mode)


def test_guard_implied_by_declaration_is_not_recorded():
    env = make()
    s = env.create_symbol("seq", 1, 256, 7, "named")
    env.guard(sympy.Le(s, 512), "shape", "table has 512 rows")
    assert not env.violations and not env.accepted


def test_named_violation_is_recorded_assumed_and_deduplicated():
    env = make()
    s = env.create_symbol("seq", 1, 1024, 16, "named")
    env.guard(sympy.Eq(s, sympy.Min(512, s)), "shape", "broadcast")
    env.guard(sympy.Le(s, 512), "shape", "again")
    [rec] = env.violations
    assert rec.expr == sympy.Le(s, 512)  # canonical form, deduplicated
    assert env.solver.implies(sympy.Le(s, 512)).status == "proved"  # assumed so capture goes on


def test_auto_guard_is_accepted_and_becomes_a_replacement():
    env = make()
    dx = env.create_symbol("dx", 1, 20, 3, "named")
    dy = env.create_symbol("dy", 1, 20, 4, "named")
    s0 = env.auto_symbol(7)
    env.guard(sympy.Eq(dx + dy, s0), "shape", "broadcast")
    assert not env.violations
    assert env.replacements == {s0: dx + dy}
    [rec] = env.accepted
    assert isinstance(rec.expr, sympy.Eq) and rec.expr.free_symbols == {dx, dy, s0}
    env.guard(sympy.Le(s0, 40), "shape", "after the replacement this is about dx + dy only")
    assert not env.violations  # dx + dy <= 40 holds for dx, dy in [1, 20]


def test_auto_divisibility_is_kept_as_a_contract_guard():
    env = make()
    s0 = env.auto_symbol(200)
    env.guard(sympy.Eq(sympy.Mod(s0, 100), 0), "shape", "reshape")
    assert [r.expr for r in env.accepted] == [sympy.Eq(sympy.Mod(s0, 100), 0)]
    assert not env.replacements


def test_data_dependent_guard_raises_in_export_and_is_assumed_in_draft():
    env = make()
    u = env.unbacked_symbol(10, 6, "numpy.nonzero", None)
    with pytest.raises(DataDependentError, match="data-dependent"):
        env.evaluate(sympy.Gt(u, 3), "branch")
    draft = make("draft")
    u = draft.unbacked_symbol(10, 6, "numpy.nonzero", None)
    assert draft.evaluate(sympy.Gt(u, 3), "branch") is True
    assert draft.data_dependent and draft.data_dependent[0].kind == "data_dependent"


def test_requirement_false_for_the_example_is_an_internal_error():
    env = make()
    s = env.create_symbol("s", 1, None, 4, "named")
    with pytest.raises(CaptureError, match="internal error"):
        env.guard(sympy.Eq(s, 5), "shape", "bad rule")


def test_specialize_records_eq_with_example():
    env = make()
    b = env.create_symbol("batch", 1, 64, 4, "named")
    assert env.specialize(b * 6, "reshape") == 24
    assert env.violations[0].expr == sympy.Eq(b, 4)
    assert env.violations[0].kind == "specialization"


def test_unbacked_range_uses_declared_maxima():
    env = make()
    n = env.create_symbol("n", 1, 100, 10, "named")
    u = env.unbacked_symbol(3 * n, 5, "mask", None)
    assert env.ranges[u] == (0, 300)


def test_repeated_float_guard_reaches_the_solver_once():
    env = make()
    s = env.create_symbol("seq", 1, 1024, 16, "named")
    guard = sympy.Le(s * sympy.Float(0.5), 100)
    env.guard(guard, "guard", "first")
    env.guard(guard, "guard", "again")
    assert env.stats["queries"] == 1
    [rec] = env.violations
    assert rec.expr == sympy.Le(s / 2, 100)  # rationalized for the solver


def test_names_export_makes_skip_the_users_dim_names():
    env = make()
    env.reserve_names({"s0", "s1", "u0", "x_dim0"})
    a = env.auto_symbol(3)
    b = env.auto_symbol(4, 2, 8)
    u = env.unbacked_symbol(10, 2, "nonzero", None)
    assert (a.name, b.name, u.name) == ("s2", "s3", "u1")
    assert env.ranges[b] == (2, 8)
    assert env.fresh_name("x_dim0") == "x_dim0_1" and env.fresh_name("y_dim0") == "y_dim0"
    d = env.create_symbol(env.fresh_name("x_dim0"), 1, None, 5, "dynamic")
    assert env.fresh_name("x_dim0") == "x_dim0_2" and d.name == "x_dim0_1"
    # the user's own s0 is still a symbol of its own, not the AUTO one
    s0 = env.create_symbol("s0", 1, None, 7, "named")
    assert s0 not in (a, b) and env.kinds[s0] == "named"
