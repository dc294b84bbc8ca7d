"""SymInt / SymFloat / SymBool: arithmetic stays symbolic, concretization leaves a record."""

import numpy as np
import pytest
import sympy
from solver import ShapeSolver

from tensorplay_export.shape_env import ShapeEnv
from tensorplay_export.symbolic import SymBool, SymFloat, SymInt, sym_max, sym_min, sym_sqrt


@pytest.fixture
def env():
    return ShapeEnv(ShapeSolver())


def size(env, name="s", hint=16, lower=1, upper=1024):
    return SymInt(env.create_symbol(name, lower, upper, hint, "named"), env)


def test_arithmetic_stays_symbolic_and_folds_to_int(env):
    s = size(env)
    assert isinstance(s + 1, SymInt) and (s + 1).hint == 17
    assert (s - s) == 0 and type(s - s) is int
    assert (2 * s // 4).hint == 8 and (s % 5).hint == 1
    assert (s ** 2).hint == 256 and abs(s - 20).hint == 4
    q, r = divmod(s, 5)
    assert (q.hint, r.hint) == (3, 1)
    assert (-s).hint == -16 and round(s) is s
    assert str(s * 2) == "2*s"


def test_float_results_are_symfloat(env):
    s = size(env)
    assert isinstance(s / 4, SymFloat) and (s / 4).hint == 4.0
    assert isinstance(s ** 0.5, SymFloat) and (s ** 0.5).hint == 4.0
    assert isinstance(196 / s, SymFloat)
    assert sym_sqrt(s).hint == 4.0 and sym_sqrt(9) == 3.0


def test_comparisons_are_symbool_and_bool_records_a_guard(env):
    s = size(env)
    cond = s > 4
    assert isinstance(cond, SymBool)
    assert bool(cond) is True
    [rec] = env.violations
    assert rec.kind == "guard" and rec.expr == (s.expr > 4)
    assert rec.source is not None and rec.source.filename.endswith("test_symbolic.py")
    assert not (s < 4)  # the same guard (negated form) is deduplicated
    assert len(env.violations) == 1


def test_identity_comparison_needs_no_guard(env):
    s = size(env)
    assert s == s and {s: 1}[s] == 1
    assert not env.violations


def test_index_specializes_with_reason_and_line(env):
    s = size(env)
    assert list(range(s))[-1] == 15
    [rec] = env.violations
    assert rec.kind == "specialization" and rec.expr == sympy.Eq(s.expr, 16)
    assert "__index__" in rec.reason


def test_int_float_format_specialize(env):
    s = size(env)
    assert int(s) == 16 and float(s / 2) == 8.0 and f"{s:4d}" == "  16"
    assert f"{s}" == "s"  # plain str is symbolic text, not a specialization
    assert all(r.kind == "specialization" for r in env.violations)


def test_symbolic_min_max(env):
    s = size(env)
    assert str(sym_min(s, 512)) == "Min(512, s)"
    assert sym_min(128 * s, 512 * s).expr == 128 * s.expr  # the tautology folds away
    assert str(sym_max([s, 8])) == "Max(8, s)"
    assert sym_min(3, 4) == 3 and sym_max("a", "b") == "b"
    assert not env.violations


def test_numpy_scalar_operands(env):
    s = size(env)
    assert (s * np.int64(2)).hint == 32
    with pytest.raises(TypeError):
        s + "x"


def test_assumptions_match_ranges(env):
    u = env.create_symbol("u", 0, None, 0, "unbacked")
    assert u.is_nonnegative and u.is_positive is None  # never asserted False
    n = env.create_symbol("N", 1, None, 3, "named")
    assert n.is_positive and n.name == "N"
