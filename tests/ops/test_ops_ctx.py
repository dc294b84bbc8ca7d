"""ShapeCtx: reasons given as functions are formatted only for guards that are recorded."""
import sympy

from tensorplay_export.ops.ctx import ShapeCtx
from tensorplay_export.capture.shape_env import ShapeEnv


def _ctx():
    from solver import ShapeSolver

    env = ShapeEnv(ShapeSolver(timeout_ms=200), "export")
    n = env.create_symbol("n", 1, 100, 8, "named")
    return ShapeCtx(env, "numpy.test", None, [()]), env, n


def test_a_folded_requirement_never_formats_its_reason():
    ctx, env, n = _ctx()
    calls = []

    def reason():
        calls.append(1)
        return "never printed"

    ctx.require(sympy.Ge(n, 0), reason)    # n >= 1 by its symbol: folds
    ctx.bounds(sympy.true, reason)
    assert calls == [] and env.stats["folded"] == 2 and not env.violations


def test_a_recorded_requirement_carries_the_formatted_reason():
    ctx, env, n = _ctx()
    ctx.require(sympy.Le(n, 50), lambda: f"size {n} at most 50")
    ctx.choose(sympy.Lt(n, 10), lambda: f"sign of {n - 10}")
    reasons = [r.reason for r in env.violations + env.accepted]
    assert "size n at most 50" in reasons and "sign of n - 10" in reasons
