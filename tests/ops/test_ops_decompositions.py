"""The issue-17 composites decompose into primitives with the same numerics on dynamic sizes
(the checks of tests/test_decomp.py's per-entry test, over the cases in _decomp_cases.py)."""
import numpy as np
import pytest

from _decomp_cases import CASES
from tensorplay_export import export
from tensorplay_export.program.decompositions.table import canonical_target, default_decompositions
from tensorplay_export.program.signature import InputKind


def _targets(ep) -> set:
    return {canonical_target(n.target) for n in ep.graph.nodes if n.op == "call_function"}


def _close(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    tol = 2e-5 if a.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_every_new_composite_is_a_default_entry():
    assert set(CASES) <= set(default_decompositions())


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_decomposes_with_the_same_numerics(name):
    model, make, dyn, sizes = CASES[name]
    ep = export(model, *make(4, np.random.default_rng(0)), dynamic_shapes=dyn)
    assert name in _targets(ep), f"the case for {name} does not exercise it"
    ep2 = ep.run_decompositions()
    ep2.graph.lint()
    assert name not in _targets(ep2)
    assert not any(t in default_decompositions() for t in _targets(ep2) if t is not None)
    assert ep2.range_constraints == ep.range_constraints
    kept = [(s.kind, s.arg.name) for s in ep2.graph_signature.input_specs if s.kind != InputKind.CONSTANT_TENSOR]
    assert kept == [(s.kind, s.arg.name) for s in ep.graph_signature.input_specs
                    if s.kind != InputKind.CONSTANT_TENSOR]
    for n in sizes:
        inputs = make(n, np.random.default_rng(n))
        want = model(*[a.copy() for a in inputs])
        _close(ep.module()(*inputs), want)
        _close(ep2.module()(*inputs), want)
