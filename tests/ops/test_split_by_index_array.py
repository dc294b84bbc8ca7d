"""np.split / np.array_split by split points from a traced int array (the MoE dispatch
``np.split(x[order], np.cumsum(counts)[:-1])``): pieces of data-dependent length, bound at run time;
programs equal eager numpy at other sizes and after a save/load round trip."""
import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import UnsupportedOpError

E = 4
SPEC = {"x": {0: Dim("n", max=1024)}, "eid": {0: Dim("n", max=1024)}}


def moe_split(x, eid):
    order = np.argsort(eid, kind="stable")
    counts = np.bincount(eid, minlength=E)[:E]  # a static length: every id is below E
    segs = np.split(x[order], np.cumsum(counts)[:-1])
    return [s.sum(axis=0) * (e + 1) for e, s in enumerate(segs)] + [segs[1], segs[3]]


def _inputs(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 2)), rng.integers(0, E, n)


def test_moe_split_pieces_have_unbacked_lengths_and_equal_numpy():
    ep = tpe.export(moe_split, *_inputs(6, 0), dynamic_shapes=SPEC)
    split = next(n for n in ep.graph.nodes if n.target == "numpy.split")
    assert split is not None
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    for n, seed in ((1, 1), (5, 2), (40, 3), (1024, 4)):
        x, eid = _inputs(n, seed)
        want = moe_split(x, eid)
        for mod in (ep.module(), loaded.module()):
            got = mod(x, eid)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape
                np.testing.assert_array_equal(g, w)


def test_an_empty_expert_gives_an_empty_piece():
    ep = tpe.export(moe_split, *_inputs(6, 0), dynamic_shapes=SPEC)
    x, eid = np.ones((5, 2)), np.array([0, 0, 2, 2, 3])
    assert ep.module()(x, eid)[4].shape == (0, 2)  # segs[1]: no token chose expert 1
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((1025, 2)), np.zeros(1025, np.int64))


@pytest.mark.parametrize("fn", [
    lambda x, i: np.split(x, i),
    lambda x, i: np.array_split(x, i[::-1]),       # unsorted points: numpy's empty pieces
    lambda x, i: np.split(x.T, i, axis=1)[1:],
], ids=["split", "array_split-unsorted", "axis1"])
def test_split_by_points_out_of_range_or_unsorted_equals_numpy(fn):
    spec = {"x": {0: Dim("n", max=64)}}
    ep = tpe.export(fn, np.arange(12.0).reshape(6, 2), np.array([1, 4, 9]), dynamic_shapes=spec)
    for n, pts in ((1, [0, 0, 1]), (8, [2, 5, 6]), (30, [-3, 10, 100])):
        x, i = np.arange(2.0 * n).reshape(n, 2), np.array(pts)
        got, want = ep.module()(x, i), fn(x, i)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_points_of_a_data_dependent_count_are_refused_with_the_fix():
    def fn(x, eid):
        return np.split(x, np.cumsum(np.bincount(eid, minlength=E))[:-1])
    with pytest.raises(UnsupportedOpError, match=r"data-dependent length.*\[:E\]"):
        tpe.export(fn, *_inputs(6, 0), dynamic_shapes=SPEC)


def test_points_of_a_symbolic_count_are_refused():
    with pytest.raises(UnsupportedOpError, match="static length"):
        tpe.export(lambda x, i: np.split(x, i), np.ones((6, 2)), np.array([1, 3]),
                   dynamic_shapes={"x": None, "i": {0: Dim("k", max=4)}})
