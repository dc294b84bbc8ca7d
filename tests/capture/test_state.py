"""capture.state: one walk lifts shared/tied state once, helper methods cloned once per function."""
import numpy as np

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.capture.state import ModuleCalls, lift_module_state, make_call_hook
from tensorplay_export.capture.tracer import Tracer
from tensorplay_export.capture.shape_env import ShapeEnv

SCALE = np.float32(0.5) * np.ones(4, np.float32)


class Base(nn.Module):
    def _helper(self, x):
        return x * SCALE


class Leaf(Base):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("shift", np.ones(4, np.float32))
        self.register_buffer("seen", np.zeros(4, np.float32), persistent=False)

    def forward(self, x):
        return self._helper(self.lin(x)) + self.shift + self.seen


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Leaf()
        self.b = Leaf()
        self.again = self.a               # the same module at a second fqn
        self.b.lin.weight = self.a.lin.weight  # a tied parameter

    def forward(self, x):
        return self.again(self.b(self.a(x)))


def _tracer() -> Tracer:
    from solver import ShapeSolver

    return Tracer(ShapeEnv(ShapeSolver(timeout_ms=200), "export"))


def test_shared_modules_and_tied_parameters_are_lifted_once_under_their_first_fqn():
    model = Shared()
    tracer = _tracer()
    state = lift_module_state(tracer, model)
    view = state.root
    assert [fqn for fqn, _t, _v in state.params] == ["a.lin.weight", "a.lin.bias", "b.lin.bias"]
    assert [(fqn, persistent) for fqn, _t, _v, persistent in state.buffers] == [
        ("a.shift", True), ("a.seen", False), ("b.shift", True), ("b.seen", False)]
    # the view keeps the sharing: one clone for a module at two fqns, one traced value for a tied weight
    assert view.again is view.a and state.fqn_of[id(view.again)] == "a"
    assert view.b.lin.weight is view.a.lin.weight and type(view.a.lin.weight).__name__ == "TracedArray"
    # the helper of the base class is one clone, bound to each instance of the view
    assert view.a._helper.__func__ is view.b._helper.__func__
    assert view.a._helper.__func__ is not Base._helper
    # the user's module was never touched
    assert "_helper" not in model.a.__dict__ and type(model.a.lin._parameters["weight"]) is nn.Parameter
    assert view.a is not model.a and model.b.lin.weight is model.a.lin.weight


def test_export_of_shared_modules_matches_eager_and_records_each_call():
    model = Shared()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ep = tpe.export(model, x, dynamic_shapes={"x": {0: Dim("n", max=10)}})
    np.testing.assert_allclose(ep.module()(x), model(x), rtol=1e-6)
    assert [s.target for s in ep.graph_signature.input_specs][:3] == ["a.lin.weight", "a.lin.bias", "b.lin.bias"]


def test_call_hook_keeps_first_call_order_once_per_module():
    model = Shared()
    tracer = _tracer()
    state = lift_module_state(tracer, model)
    calls = ModuleCalls()
    hook = make_call_hook(tracer, state, calls)
    view = state.root
    for module in (view.a, view.b, view.a, view.b.lin):
        hook(module, (np.ones((2, 4), np.float32),), {})
    # (the inner self.lin calls do not pass through this hook: _CALL_HOOK is not set here)
    assert calls.order == ["a", "b", "b.lin"]
    assert calls.ordered == set(calls.order)
    assert calls.log == [("a", 0), ("b", 1), ("a", 2), ("b.lin", 3)]
