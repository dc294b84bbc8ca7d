"""Selections by the same graph value share one unbacked size (issue 16 item 5).

``x[m]``, ``np.nonzero(m)[i]``, ``np.flatnonzero(m)`` and ``np.argwhere(m)`` of one
mask value (the same node, or pure ops on the same inputs merged) have one length;
distinct masks never share one, even when their counts agree at the example.
"""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

RNG = np.random.default_rng(16)


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 4)).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))


SPEC = lambda: {"x": {0: Dim("n", max=64)}, "g": {0: Dim("n", max=64)}, "h": {0: Dim("n", max=64)}}


def _unbacked(ep):
    return sorted(str(s) for s in ep.range_constraints if str(s).startswith("u"))


def _check_sizes(ep, model, sizes=(1, 5, 17, 64)):
    run = ep.module()
    for n in sizes:
        for seed in range(3):
            args = _inputs(n, seed)
            np.testing.assert_allclose(run(*args), model(*args), rtol=1e-5, atol=1e-6)


def model_same_node(x, g, h):
    m = g > 0
    return (x[m] * h[m][:, None]).sum(axis=0)


def model_merged_pure_ops(x, g, h):
    # two `g > 0` nodes on the same input: one value after merging pure ops
    return (x[g > 0] * h[g > 0][:, None]).sum(axis=0)


def model_nonzero_and_mask(x, g, h):
    m = g > 0
    idx = np.nonzero(m)[0]
    return (x[m] * h[idx][:, None]).sum(axis=0)


def model_flatnonzero(x, g, h):
    m = g > 0
    return (x[np.flatnonzero(m)] + x[m]).sum(axis=0)


def model_argwhere(x, g, h):
    m = g > 0
    where = np.argwhere(m)          # (u, 1)
    return (x[m] * where).sum(axis=0)


@pytest.mark.parametrize("model", [model_same_node, model_merged_pure_ops, model_nonzero_and_mask,
                                   model_flatnonzero, model_argwhere], ids=lambda f: f.__name__)
def test_one_mask_value_gives_one_unbacked_size(model):
    args = _inputs(12)
    ep = tpe.export(model, *args, dynamic_shapes=SPEC())
    assert _unbacked(ep) == ["u0"]
    _check_sizes(ep, model)


def test_distinct_masks_never_share_even_when_counts_agree_at_the_example():
    def model(x, g, h):
        return (x[g > 0] * h[h > 0][:, None]).sum(axis=0)

    x = RNG.standard_normal((6, 4)).astype(np.float32)
    g = np.array([1, -1, 1, -1, 1, -1], np.float32)
    h = np.array([-1, 1, -1, 1, -1, 1], np.float32)   # three True each, at the example
    with pytest.raises(tpe.DataDependentError, match="u0 == u1"):
        tpe.export(model, x, g, h, dynamic_shapes=SPEC())


def test_pure_ops_with_different_static_args_are_different_values():
    def model(x, g, h):
        return (x[g > 0] * h[g > 1][:, None]).sum(axis=0)

    x = RNG.standard_normal((4, 4)).astype(np.float32)
    g = np.array([2, 2, -1, -1], np.float32)   # both masks select the first two rows here
    with pytest.raises(tpe.DataDependentError):
        tpe.export(model, x, g, g.copy(), dynamic_shapes=SPEC())


def test_a_mask_rewritten_in_place_is_a_new_value():
    def model(x, g, h):
        m = g > 0
        a = x[m]
        m[0] = True
        return (a * h[m][:, None]).sum(axis=0)

    x = RNG.standard_normal((4, 4)).astype(np.float32)
    g = np.array([1, 1, -1, -1], np.float32)
    g[0] = 1.0   # m[0] already True at the example: counts agree, values may not
    with pytest.raises(tpe.DataDependentError):
        tpe.export(model, x, g, g.copy(), dynamic_shapes=SPEC())


def test_shared_size_survives_save_load_and_decompositions(tmp_path):
    model = model_nonzero_and_mask
    ep = tpe.export(model, *_inputs(12), dynamic_shapes=SPEC())
    path = tmp_path / "p.pt2"
    tpe.save(ep, path)
    _check_sizes(tpe.load(path), model)
    _check_sizes(ep.run_decompositions(), model)
