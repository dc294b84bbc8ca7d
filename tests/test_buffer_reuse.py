"""Generated code writes an elementwise result into a dead operand's buffer (``out=``), issue 19.

What is checked: results stay bit-identical (module() against eager numpy for GPT and
MiniLM at sizes other than the example's, and a decomposed GPT, where the reuse fires,
against the one Interpreter, which never reuses); a reused buffer is never an input, a
weight, a constant or a value something else may view; inputs and weights are untouched.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tensorplay_export as tpe
from benchmarks import _common as C
from tensorplay_export.graph.interpreter import Interpreter
from tensorplay_export.ops.registry import resolve_op

_OUT = re.compile(r"^    (\w+) = .*\bout=(\w+)\)$", re.M)


def _reused(code: str) -> list[tuple[str, str]]:
    """(B, A) of each ``B = f(..., out=A)``; ``out=None`` (a composite's out-variant without a dead buffer) is no reuse."""
    return [(b, a) for b, a in _OUT.findall(code) if a != "None"]


def _owns_result(n) -> bool:
    """n's result is a new array: a plain ufunc call, or a composite with an out-variant (never a view)."""
    op = resolve_op(n.target)
    return isinstance(op.impl, np.ufunc) or op.out_impl is not None


def _check_reuse_is_safe(gm) -> int:
    """Every ``B = f(..., out=A)`` of gm's code: A is a fresh result read only by ops with fresh results, B its
    last reader, or (a composite B) A died before B; a composite B reads A as its first argument."""
    nodes = {n.name: n for n in gm.graph.nodes}
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    pairs = _reused(gm.code)
    for b_name, a_name in pairs:
        a, b = nodes[a_name], nodes[b_name]
        assert a.op == "call_function"  # never a placeholder (input, weight) or get_attr
        for n in [a, *a.users]:
            assert n.op == "call_function" and _owns_result(n), n.target  # nothing views A
        if b in a.users:
            assert max(order[u] for u in a.users) == order[b]
            assert isinstance(resolve_op(b.target).impl, np.ufunc) or b.args[0] is a
        else:  # a composite given a buffer that died earlier
            assert resolve_op(b.target).out_impl is not None and max(order[u] for u in a.users) < order[b]
        assert a.meta["shape"] == b.meta["shape"] and a.meta["dtype"] == b.meta["dtype"]
    return len(pairs)


@pytest.fixture(scope="module")
def gpt():
    model = C.build_gpt(2, d_model=32, n_head=2)
    return model, tpe.export(model, C.gpt_ids(*C.GPT_EXAMPLE), dynamic_shapes=C.gpt_spec())


@pytest.mark.parametrize("size", [(2, 16), (3, 7), (5, 33)])
def test_gpt_module_bit_identical_to_eager(gpt, size):
    model, ep = gpt
    ids = C.gpt_ids(*size, seed=size[1])
    assert np.array_equal(ep.module()(ids), model(ids))
    _check_reuse_is_safe(ep.module())


@pytest.mark.skipif(not C.have_minilm(), reason="MiniLM weights not installed")
@pytest.mark.parametrize("size", [(2, 5), (4, 19)])
def test_minilm_module_bit_identical_to_eager(size):
    model, inputs, spec = _minilm()
    ep = _minilm_program()
    rng = np.random.default_rng(size[1])
    ids = rng.integers(1000, 30000, size).astype(np.int64)
    mask = np.ones(size, np.int64)
    mask[0, -2:] = 0  # padding in one row
    types = np.zeros(size, np.int64)
    assert np.array_equal(ep.module()(ids, mask, types), model(ids, mask, types))
    _check_reuse_is_safe(ep.module())


_MINILM: dict = {}


def _minilm():
    if "case" not in _MINILM:
        _MINILM["case"] = C.minilm_case()
    return _MINILM["case"]


def _minilm_program():
    if "ep" not in _MINILM:
        model, inputs, spec = _minilm()
        _MINILM["ep"] = tpe.export(model, *inputs, dynamic_shapes=spec)
    return _MINILM["ep"]


def test_decomposed_gpt_reuses_buffers_bit_identically(gpt):
    model, ep = gpt
    dec = ep.run_decompositions()
    module = dec.module()
    assert _check_reuse_is_safe(module) > 0  # decomposed elementwise chains do reuse buffers
    ids = C.gpt_ids(3, 9, seed=4)
    weights = {k: np.array(v) for k, v in dec.state_dict.items()}
    flat = [dec.state_dict[s.target] if s.target is not None and s.target in dec.state_dict
            else dec.constants.get(s.target, ids) for s in dec.graph_signature.input_specs]
    want = Interpreter(dec.graph).run(*flat)
    got = dec.graph_module(*flat)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert np.array_equal(module(ids), want[-1])
    assert all(np.array_equal(dec.state_dict[k], v) for k, v in weights.items())  # weights untouched


def f_chain(x, w):
    y = np.exp(x * 0.5)
    z = np.sin(y)          # z is also reshaped (a view): its buffer is never reused
    v = np.tanh(z) * y
    return np.maximum(v, 0.1) + w, z.reshape(-1), x + 0.0


def test_reuse_never_takes_inputs_or_viewed_values():
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    w = np.ones(6, np.float32)
    ep = tpe.export(f_chain, x, w, dynamic_shapes=({0: tpe.Dim("n", min=2, max=64)}, None))
    module = ep.module()
    pairs = dict(_reused(module.code))
    assert pairs and "x" not in pairs.values() and "w" not in pairs.values()
    assert "sin" not in pairs.values()  # read by a reshape: a view of it is returned
    assert _check_reuse_is_safe(module) == len(pairs)
    x2 = np.random.default_rng(1).standard_normal((9, 6)).astype(np.float32)
    x2_before, w_before = x2.copy(), w.copy()
    got, want = module(x2, w), f_chain(x2, w)
    assert all(np.array_equal(g, e) and g.dtype == e.dtype for g, e in zip(got, want))
    assert np.array_equal(x2, x2_before) and np.array_equal(w, w_before)
    # the returned arrays do not share memory: a buffer handed to a later op was not also returned
    assert not any(np.shares_memory(got[i], got[j]) for i in range(3) for j in range(i + 1, 3))
