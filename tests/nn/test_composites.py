"""nn.functional composites: the capture hook, registration, and each shape rule.

Each rule runs on symbolic shapes through the real ShapeCtx with a small stand-in
environment; substituting the example sizes must give numpy's shape (the check capture
makes on every op), and every recorded guard must hold at the example sizes.
"""

import numpy as np
import pytest
import sympy

from tensorplay_export.nn import functional as F
from tensorplay_export.nn._dispatch import _FUNCTIONAL_HOOK, COMPOSITES

composites = pytest.importorskip("tensorplay_export.nn._composites")
from tensorplay_export.ops.ctx import ShapeCtx  # noqa: E402
from tensorplay_export.ops.registry import ArrayInfo, get_op, lookup_func  # noqa: E402


class Env:
    """The slice of ShapeEnv a ShapeCtx uses: hints by substitution, guards recorded."""

    def __init__(self, hints):
        self.hints = hints
        self.guards = []

    def hint(self, expr):
        value = sympy.sympify(expr).subs(self.hints)
        return bool(value) if isinstance(value, sympy.logic.boolalg.Boolean) else int(value)

    def guard(self, cond, kind, reason, source, op, cause=None):
        self.guards.append((cond, kind, reason))

    def canon(self, expr):
        return expr


B, S, H, W = sympy.symbols("B S H W", integer=True, positive=True)
HINTS = {B: 2, S: 5, H: 9, W: 7}


def sym(shape):
    """Replace sizes given as strings by symbols."""
    return tuple({"B": B, "S": S, "H": H, "W": W}.get(d, d) if isinstance(d, str) else d for d in shape)


def concrete(shape):
    return tuple(int(sympy.sympify(d).subs(HINTS)) for d in sym(shape))


def arr(shape, dtype=np.float32, ints=None):
    shape = concrete(shape)
    rng = np.random.default_rng(0)
    if ints is not None:
        return rng.integers(0, ints, shape)
    return rng.standard_normal(shape).astype(dtype)


def run_rule(name, args, kwargs, sym_shapes, vranges=None):
    """Rule on symbolic ArrayInfos (for array args) vs the function on arrays."""
    env = Env(HINTS)
    fn = COMPOSITES[name]
    expected = fn(*args, **kwargs)
    infos = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            infos.append(ArrayInfo(sym(sym_shapes[i]), a.dtype, (vranges or {}).get(i)))
        else:
            infos.append(a)
    kw = {k: (ArrayInfo(sym(sym_shapes[k]), v.dtype) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    ctx = ShapeCtx(env, name, None, [np.shape(e) for e in (expected if isinstance(expected, tuple) else (expected,))])
    out = composites.RULES[name](ctx, *infos, **kw)
    outs = out if isinstance(out, list) else [out]
    exps = expected if isinstance(expected, tuple) else (expected,)
    for o, e in zip(outs, exps):
        got = tuple(int(sympy.sympify(d).subs(HINTS)) for d in o)
        assert got == np.shape(e), (name, o, np.shape(e))
    for cond, kind, reason in env.guards:
        assert env.hint(cond), (cond, reason)
    return outs, env.guards


CASES = [
    ("tpe.nn.relu", lambda: ((arr(("B", "S")),), {}), {0: ("B", "S")}),
    ("tpe.nn.gelu", lambda: ((arr(("B", 3)),), {"approximate": "tanh"}), {0: ("B", 3)}),
    ("tpe.nn.erf", lambda: ((arr(("S",)),), {}), {0: ("S",)}),
    ("tpe.nn.erfc", lambda: ((arr(("S",)),), {}), {0: ("S",)}),
    ("tpe.nn.sigmoid", lambda: ((arr(("S", 2)),), {}), {0: ("S", 2)}),
    ("tpe.nn.silu", lambda: ((arr(("S", 2)),), {}), {0: ("S", 2)}),
    ("tpe.nn.tanh", lambda: ((arr(("S", 2)),), {}), {0: ("S", 2)}),
    ("tpe.nn.softmax", lambda: ((arr(("B", "S")), 0), {}), {0: ("B", "S")}),
    ("tpe.nn.log_softmax", lambda: ((arr(("B", "S")),), {"dim": -1}), {0: ("B", "S")}),
    ("tpe.nn.normalize", lambda: ((arr(("B", 4)),), {}), {0: ("B", 4)}),
    ("tpe.nn.linear", lambda: ((arr(("B", "S", 4)), arr((3, 4)), arr((3,))), {}), {0: ("B", "S", 4), 1: (3, 4), 2: (3,)}),
    ("tpe.nn.layer_norm", lambda: ((arr(("B", "S", 4)), (4,), arr((4,)), arr((4,))), {}),
     {0: ("B", "S", 4), 2: (4,), 3: (4,)}),
    ("tpe.nn.rms_norm", lambda: ((arr(("B", 4)), 4), {"weight": arr((4,))}), {0: ("B", 4), "weight": (4,)}),
    ("tpe.nn.batch_norm", lambda: ((arr(("B", 3, "S")), arr((3,)), arr((3,)) ** 2), {}),
     {0: ("B", 3, "S"), 1: (3,), 2: (3,)}),
    ("tpe.nn.batch_stats", lambda: ((arr(("B", 3, "H", "W")),), {}), {0: ("B", 3, "H", "W")}),
    ("tpe.nn.one_hot", lambda: ((arr(("B", "S"), ints=4), 4), {}), {0: ("B", "S")}),
    ("tpe.nn.scaled_dot_product_attention",
     lambda: ((arr(("B", 2, "S", 4)), arr(("B", 2, "S", 4)), arr(("B", 2, "S", 3))),
              {"attn_mask": arr(("B", 1, 1, "S")) > 0, "is_causal": True}),
     {0: ("B", 2, "S", 4), 1: ("B", 2, "S", 4), 2: ("B", 2, "S", 3), "attn_mask": ("B", 1, 1, "S")}),
    ("tpe.nn.pad", lambda: ((arr(("B", "S", "W")), (1, 2, 0, 3)), {}), {0: ("B", "S", "W")}),
    ("tpe.nn.cross_entropy", lambda: ((arr(("B", 4, "S")), arr(("B", "S"), ints=4)), {"reduction": "none"}),
     {0: ("B", 4, "S"), 1: ("B", "S")}),
    ("tpe.nn.cross_entropy", lambda: ((arr(("B", 4)), arr(("B", 4))), {}), {0: ("B", 4), 1: ("B", 4)}),
    ("tpe.nn.conv2d", lambda: ((arr(("B", 4, "H", "W")), arr((6, 2, 3, 2)), arr((6,))),
                               {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2}),
     {0: ("B", 4, "H", "W"), 1: (6, 2, 3, 2), 2: (6,)}),
    ("tpe.nn.conv2d", lambda: ((arr((3, "H", "W")), arr((2, 3, 3, 4))), {"padding": "same"}),
     {0: (3, "H", "W"), 1: (2, 3, 3, 4)}),
    ("tpe.nn.conv1d", lambda: ((arr(("B", 4, "S")), arr((6, 4, 3))), {"padding": 2, "dilation": 2}),
     {0: ("B", 4, "S"), 1: (6, 4, 3)}),
    ("tpe.nn.max_pool2d", lambda: ((arr(("B", 3, "H", "W")), 3, 2, 1), {"ceil_mode": True}),
     {0: ("B", 3, "H", "W")}),
    ("tpe.nn.max_pool2d", lambda: ((arr(("B", 3, "H", "W")), (2, 3)), {"dilation": 2}), {0: ("B", 3, "H", "W")}),
    ("tpe.nn.avg_pool2d", lambda: ((arr(("B", 3, "H", "W")), 2, 3), {"ceil_mode": True}), {0: ("B", 3, "H", "W")}),
]


@pytest.mark.parametrize("name,make,shapes", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_rule_matches_numpy(name, make, shapes):
    args, kwargs = make()
    run_rule(name, args, kwargs, shapes)


def test_every_composite_is_registered_and_covered():
    assert set(COMPOSITES) == set(composites.RULES)
    assert {c[0] for c in CASES} | {"tpe.nn.embedding"} == set(COMPOSITES)
    for name, fn in COMPOSITES.items():
        op = get_op(name)
        assert op.impl is fn and op.decomposition is fn and lookup_func(fn) is op
    assert get_op("tpe.nn.batch_stats").multi_output


def test_embedding_rule_bounds_guard():
    table, ids = arr((10, 4)), np.arange(5)
    outs, guards = run_rule("tpe.nn.embedding", (ids, table), {}, {0: ("S",), 1: (10, 4)},
                            vranges={0: (0, S - 1)})
    assert outs[0] == (S, 4)
    assert any(g[0] == sympy.Le(S - 1, 9) for g in guards)


def test_conv_rule_requires_a_window():
    _, guards = run_rule("tpe.nn.conv2d", (arr(("B", 1, "H", "W")), arr((1, 1, 3, 3))), {},
                         {0: ("B", 1, "H", "W"), 1: (1, 1, 3, 3)})
    assert {str(g[0]) for g in guards} == {"H >= 3", "W >= 3"}


def test_rule_errors():
    with pytest.raises(ValueError, match="num_classes=-1 depends on the data"):
        run_rule("tpe.nn.one_hot", (arr(("S",), ints=3),), {}, {0: ("S",)})
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        composites.RULES["tpe.nn.softmax"](None, ArrayInfo((S,), np.float32), 3)


def test_hook_receives_plain_function_and_can_trace_through():
    seen = []

    def hook(name, fn, args, kwargs):
        seen.append(name)
        return fn(*args, **kwargs)

    token = _FUNCTIONAL_HOOK.set(hook)
    try:
        out = F.silu(np.ones(3, np.float32))  # silu's body calls sigmoid: nested composite
        F.dropout(np.ones(3, np.float32), training=False)  # not a composite
    finally:
        _FUNCTIONAL_HOOK.reset(token)
    assert seen == ["tpe.nn.silu", "tpe.nn.sigmoid"]
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-1.0)), rtol=1e-6)
    assert F.gelu.op_name == "tpe.nn.gelu" and F.gelu.__wrapped__ is COMPOSITES["tpe.nn.gelu"]
