"""SymInt / SymFloat / SymBool: arithmetic stays symbolic, concretization leaves a record."""

import numpy as np
import pytest
import sympy
from solver import ShapeSolver, evaluate

from tensorplay_export.capture.shape_env import ShapeEnv
from tensorplay_export.capture.symbolic import (SymBool, SymFloat, SymInt, round_half_even, sym_float, sym_max, sym_min,
                                       sym_sqrt, trunc_exact)


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
    assert (s * 2).expr == 2 * s.expr and not env.violations
    # text in model code is data: the example's digits, pinned (a specialization)
    assert repr(s * 2) == "32" and str(s) == "16" and f"{s:03d}" == "016"
    [rec] = env.violations  # one pin, recorded where the text was first made
    assert rec.reason.startswith("converted to text with repr()") and rec.expr == sympy.Eq(s.expr, 16)


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
    assert s == s and not (s != s)
    assert not env.violations


def test_hash_pins_the_size_at_the_users_line(env):
    # a dict finds its key by the hash: only the example's value can be found, as in eager
    s = size(env)
    assert {16: "a", 8: "b"}.get(s) == "a" and s not in {8, 32}
    [rec] = env.violations
    assert rec.expr == sympy.Eq(s.expr, 16) and rec.cause == "hashed" and rec.kind == "specialization"
    assert "hashed (dict or set lookup)" in rec.reason and "s == 16" in rec.reason
    assert rec.source.filename.endswith("test_symbolic.py")
    assert hash(s) == hash(16)


def test_index_specializes_with_reason_and_line(env):
    s = size(env)
    assert list(range(s))[-1] == 15
    [rec] = env.violations
    assert rec.kind == "specialization" and rec.expr == sympy.Eq(s.expr, 16)
    assert "__index__" in rec.reason


def test_int_float_format_specialize(env):
    s = size(env)
    assert int(s) == 16 and float(s / 2) == 8.0 and f"{s:4d}" == "  16"
    assert f"{s}" == "16" and str(s) == "16"  # text is data: the example's digits, recorded
    env2 = ShapeEnv(ShapeSolver())
    assert int(str(size(env2))) == 16
    [rec] = env2.violations
    assert rec.kind == "specialization" and "str()" in rec.reason
    assert all(r.kind == "specialization" for r in env.violations)


def test_symbolic_min_max(env):
    s = size(env)
    assert sym_min(s, 512).expr == sympy.Min(512, s.expr)
    assert sym_min(128 * s, 512 * s).expr == 128 * s.expr  # the tautology folds away
    assert sym_max([s, 8]).expr == sympy.Max(8, s.expr)
    assert sym_min(3, 4) == 3 and sym_max("a", "b") == "b"
    assert not env.violations


def test_numpy_scalar_operands(env):
    s = size(env)
    assert (s * np.int64(2)).hint == 32
    # eager's numpy type is carried (n + np.int32(1) is an np.int32), folded values are numpy scalars
    t = s + np.int32(1)
    assert isinstance(t, SymInt) and t.dtype == np.int32 and (t * 2).dtype == np.int32
    assert (t * np.int64(2)).dtype == np.int64 and (t / 2).dtype == np.float64
    assert (s * np.float32(0.5)).dtype == np.float32 and (np.int32(3) + s).dtype == np.int32
    assert type(t - s) is np.int32 and (s + 1).numpy_type is None
    assert not hasattr(s, "dtype") and t.item().numpy_type is None and t.astype(np.int64).dtype == np.int64
    assert isinstance(t, np.int32) and not isinstance(t, int) and isinstance(s, int)
    assert not env.violations
    with pytest.raises(TypeError):
        s + "x"


def test_assumptions_match_ranges(env):
    u = env.create_symbol("u", 0, None, 0, "unbacked")
    assert u.is_nonnegative and u.is_positive is None  # never asserted False
    n = env.create_symbol("N", 1, None, 3, "named")
    assert n.is_positive and n.name == "N"


def test_float_rounding_is_exact_integer_arithmetic(env):
    import math
    s = size(env, hint=7)
    assert isinstance(round(s / 2), SymInt) and round(s / 2).hint == 4  # round(3.5) == 4
    assert math.ceil(s / 4).hint == 2 and math.floor(s / 4).hint == 1 and math.trunc(s / 2).hint == 3
    assert math.ceil(s / 4).expr == sympy.ceiling(s.expr / 4)
    assert not env.violations
    for n in range(1, 40):  # the expressions agree with Python's float functions at every size
        subs = {s.expr: n}
        for d in (2, 3, 4, 6):
            assert round_half_even(s.expr / d).subs(subs) == round(n / d)
            assert sympy.ceiling(s.expr / d).subs(subs) == math.ceil(n / d)
        assert trunc_exact((s.expr - 20) / 3).subs(subs) == math.trunc((n - 20) / 3)
    assert round(s, -1).hint == 10 and round(size(env, "t", hint=25), -1).hint == 20
    assert math.floor(s // 2.0).expr == sympy.floor(s.expr / 2)  # float floor division keeps exactness
    assert math.ceil(sym_float(s) / 2).hint == 4
    assert not env.violations


def test_inexact_float_rounding_is_python_rounding_of_the_float(env):
    # no exact form: the float nodes round as Python does (solver.floats), no specialization
    import math
    from solver.floats import FCeil, FMul, FRound
    s = size(env, hint=10)
    assert (s * 0.1).exact is None and (s / 49 * 49).exact is None
    up, near = math.ceil(s * 0.1), round(s * 0.1)
    assert up.expr == FCeil(FMul(s.expr, sympy.Float(0.1))) and up.hint == 1
    assert near.expr == FRound(FMul(s.expr, sympy.Float(0.1))) and near.hint == 1
    for n in range(1, 200):
        assert evaluate(up.expr, {s.expr: n}) == math.ceil(n * 0.1)
        assert evaluate(near.expr, {s.expr: n}) == round(n * 0.1)
    assert not env.violations


def test_bitwise_on_sizes(env):
    s = size(env, hint=13)
    assert (s >> 1).expr == sympy.floor(s.expr / 2) and (s << 2).hint == 52
    assert (s & 3).expr == sympy.Mod(s.expr, 4) and (s & 3).hint == 1
    assert not env.violations
    assert (s | 1) == 13 and (s ^ 1) == 12 and (1 << s) == 8192
    assert all(r.kind == "specialization" and "bitwise" in r.reason or "shift" in r.reason
               for r in env.violations)
    with pytest.raises(ValueError):
        s >> -1


def _mix(k, rounds):
    for _ in range(rounds):
        k = (k * 7 + 3) % 1000 + k // 3  # k is used twice per round: the tree doubles
    return k


def test_size_ops_counts_a_shared_subexpression_at_every_use():
    from tensorplay_export.capture.symbolic import size_ops

    s = sympy.Symbol("s", integer=True, positive=True)
    assert size_ops(s) == 0 and size_ops(s + 1) == 1
    shared = sympy.floor(s / 3)
    assert size_ops(shared + 2 * shared ** 2) == 1 + 1 + 1 + 2 * size_ops(shared)


def test_a_too_large_size_expression_is_pinned_to_its_example_value(env):
    from tensorplay_export.capture.symbolic import MAX_SIZE_OPS, size_ops

    s = size(env, hint=50, upper=10**6)
    small = _mix(s, 2)
    assert isinstance(small, SymInt) and size_ops(small.expr) <= MAX_SIZE_OPS and not env.violations
    k = _mix(s, 40)  # bounded: pinned once the expression is too large, then plain ints (no timing here)
    assert type(k) is int and k == _mix(50, 40)
    (rec,) = env.violations  # pinned once (the size s itself), then plain int arithmetic
    assert rec.kind == "specialization" and rec.expr == sympy.Eq(s.expr, 50)
    assert "size expression too large to reason about (" in rec.reason
    assert "operations); pinned to its example value" in rec.reason
    assert rec.source.filename == __file__ and rec.source.lineno == _mix.__code__.co_firstlineno + 2


def test_a_pinned_auto_size_gives_a_program_for_the_example_size_only():
    import tensorplay_export as tpe
    from tensorplay_export import Dim

    def model(x):
        n = x.shape[0]
        return x[: _mix(n, 12) % n + 1]

    ep = tpe.export(model, np.arange(50.0), dynamic_shapes={"x": {0: Dim.AUTO}})
    np.testing.assert_array_equal(ep.module()(np.arange(50.0) + 1), model(np.arange(50.0) + 1))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.arange(51.0))
