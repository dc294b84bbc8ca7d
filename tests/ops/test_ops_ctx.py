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


def test_reasons_print_sizes_with_the_printer_the_ctx_was_given():
    from tensorplay_export.graph.printing import format_guard

    h = sympy.Symbol("h", integer=True, positive=True)
    quarter = sympy.floor(sympy.floor(h / 2 - sympy.Rational(1, 2)) / 2) + 1
    bare = ShapeCtx.bare({h: 16})
    assert bare.text(quarter) == str(quarter)  # a bare ctx: sympy's str
    printed = ShapeCtx(bare._env, "numpy.test", None, [()], size_text=format_guard)
    assert printed.text(quarter) == "(h + 3) // 4"
    assert printed.text((quarter, 3)) == "((h + 3) // 4, 3)" and printed.text((quarter,)) == "((h + 3) // 4,)"
    assert printed.text([quarter, 2]) == "[(h + 3) // 4, 2]"
    assert printed.text("rows") == "rows" and printed.text(7) == "7" and printed.text((1, 2)) == "(1, 2)"
    printed.require(sympy.Eq(quarter, 4), lambda: f"size {printed.text(quarter)} must be 4")
    assert printed.recorded[-1].reason == "size (h + 3) // 4 must be 4"
