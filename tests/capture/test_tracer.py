"""Tracer: value ranges of constant arrays, the argument views of one op."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.tracer import Tracer
from tensorplay_export.errors import ConstraintViolationError
from tensorplay_export.ops.registry import ArrayInfo
from tensorplay_export.capture.shape_env import ShapeEnv

IDX = np.array([0, 3])          # a module global: lifted lazily as c_IDX
SPEC = {"x": {0: Dim("n", min=1, max=50)}}


def _tracer() -> Tracer:
    from solver import ShapeSolver

    return Tracer(ShapeEnv(ShapeSolver(timeout_ms=200), "export"))


def test_lifted_integer_constant_carries_its_value_range():
    tracer = _tracer()
    t = tracer.lift_constant("c_idx", np.array([4, -2, 7]))
    assert t.vrange == (-2, 7)
    assert tracer.lift_constant("c_f", np.ones(3)).vrange is None          # floats: no range
    assert tracer.lift_constant("c_e", np.zeros(0, dtype=np.int64)).vrange is None


def test_plain_ndarray_argument_info_has_its_value_range():
    tracer = _tracer()
    info = tracer.info((np.array([1, 5]), [np.arange(3.0)]))
    assert isinstance(info[0], ArrayInfo) and info[0].vrange == (1, 5)
    assert info[1][0].vrange is None


@pytest.mark.parametrize("fn", [lambda x: x[np.array([0, 3])], lambda x: x[IDX]],
                         ids=["array-in-body", "global-array"])
def test_constant_index_array_on_a_dynamic_axis_needs_the_axis_long_enough(fn):
    x = np.arange(10.0).reshape(5, 2)
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, x, dynamic_shapes=SPEC)
    text = str(info.value)
    assert "Dim('n', min=4, max=50)" in text, text
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, SPEC)
    mod = tpe.export(fn, x, dynamic_shapes=spec).module()
    for n in (4, 9):
        y = np.arange(2.0 * n).reshape(n, 2)
        np.testing.assert_array_equal(mod(y), fn(y))
    with pytest.raises(tpe.ConstraintsExceededError):
        mod(np.zeros((3, 2)))


BAD = np.ones((7, 7))


def _walks(tracer, value):
    return tracer.example(value), tracer.info(value), tracer.node_arg(value)


def test_one_walk_gives_the_three_views_of_the_separate_walks():
    import sympy

    from tensorplay_export.capture.symbolic import SymBool, SymFloat, SymInt

    tracer = _tracer()
    n = tracer.env.create_symbol("n", 1, 64, 5, "named")
    x = tracer.placeholder("x", np.ones((5, 3)), (n, 3))
    lazy = tracer.lift_constant("c_tab", np.arange(6).reshape(2, 3))
    env = tracer.env
    values = [
        (x, 1, 2.5, None, "s", Ellipsis, np.float32, np.dtype("int64"), np.float32(2)),
        {"a": [x, (SymInt(n, env), slice(None, SymInt(n - 1, env)))], "b": SymFloat(n / 2, env)},
        [SymBool(sympy.Ge(n, 2), env), np.array([1, 4]), lazy],
        (slice(1, None), [np.int64(3)]),
    ]
    from tensorplay_export.capture.tracer import CURRENT

    token = CURRENT.set(tracer)  # the example of a SymBool is its bool(): a guard of this capture
    try:
        for value in values:
            ex, info, narg, deferred = tracer.views(value)
            if deferred:
                narg = tracer.node_arg(narg)
            assert (ex, info, narg) == _walks(tracer, value)
    finally:
        CURRENT.reset(token)
    assert tracer.views((x, 1, (2, [None])))[3] is False     # nothing to materialize
    fresh = tracer.lift_constant("c_fresh", np.zeros(2))
    count = len(tracer.graph.placeholders())
    assert tracer.views([fresh])[3] is True and len(tracer.graph.placeholders()) == count  # not made yet


def test_a_failed_op_lifts_no_constant():
    def model(x):
        try:
            np.matmul(x, BAD)  # numpy raises: the shapes do not match
        except (RuntimeError, ValueError):  # capture wraps numpy's ValueError in a CaptureError
            pass
        return x + 1.0

    ep = tpe.export(model, np.ones((3, 4)), dynamic_shapes=SPEC)
    assert [n.name for n in ep.graph.placeholders()] == ["x"]


def test_a_rule_whose_shape_disagrees_with_numpy_is_an_internal_error():
    from tensorplay_export.errors import CaptureError
    from tensorplay_export.ops.registry import OpDef

    tracer = _tracer()
    n = tracer.env.create_symbol("n", 1, 64, 5, "named")
    x = tracer.placeholder("x", np.ones((5, 3)), (n, 3))
    good = OpDef("test.good", lambda a: a * 2, lambda ctx, a: (a.shape[0], np.int64(3)))
    out = tracer.call(good, (x,))
    assert out._shape == (n, 3) and type(out._shape[1]) is int
    for bad_rule in (lambda ctx, a: (a.shape[0] + 1, 3), lambda ctx, a: (a.shape[0],),
                     lambda ctx, a: (a.shape[0], 3, 1)):
        with pytest.raises(CaptureError, match=r"internal error: shape rule of test.bad gives .* but numpy "
                                               r"gives \(5, 3\)"):
            tracer.call(OpDef("test.bad", lambda a: a * 2, bad_rule), (x,))


def test_one_stack_walk_per_method_or_numpy_function_call(monkeypatch):
    import tensorplay_export.capture.traced as traced_mod
    import tensorplay_export.capture.tracer as tracer_mod

    walks = []
    real = traced_mod.user_source

    def counting(depth=1):
        walks.append(depth)
        return real(depth + 1)

    monkeypatch.setattr(traced_mod, "user_source", counting)
    monkeypatch.setattr(tracer_mod, "user_source", counting)
    seen = {}

    def model(x):
        start = len(walks)
        y = x.reshape(-1)          # an ndarray method
        middle = len(walks)
        z = np.transpose(x)        # a numpy function (__array_function__)
        seen.setdefault("walks", (middle - start, len(walks) - middle))  # the traced run's (not the eager check's)
        return y, z

    tpe.export(model, np.ones((3, 4)), dynamic_shapes=SPEC)
    assert seen["walks"] == (1, 1)


def _arange_float_step(x):
    return np.arange(0, x.shape[0], 0.1 * x.shape[0])  # the rule refuses an inexact float step


@pytest.mark.parametrize("model, line", [
    (_arange_float_step, _arange_float_step.__code__.co_firstlineno + 1),
    (lambda x: np.histogram(x, bins="auto")[0], None),  # the rule refuses a data-chosen bin count
])
def test_an_unsupported_op_error_from_a_rule_names_the_users_line_once(model, line):
    line = line or model.__code__.co_firstlineno
    with pytest.raises(tpe.UnsupportedOpError) as info:
        tpe.export(model, np.ones(10), dynamic_shapes=SPEC)
    msg = str(info.value)
    assert f"\n  at test_tracer.py:{line}  `" in msg, msg
    assert msg.count("\n  at ") == 1, msg
