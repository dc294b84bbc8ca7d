"""compose(): contracts that compose, decided by the solver (proved, refuted with a witness, undecided, loops)."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay_export import (ComposedContract, CompositionError, ConstraintsExceededError,
                               ConstraintViolationError, Dim, compose, export, load,
                               refine_dynamic_shapes_from_suggested_fixes, save)

POS = np.arange(512 * 4, dtype=np.float32).reshape(512, 4) / 1000.0
TABLE = np.arange(64 * 4, dtype=np.float32).reshape(64, 4) / 100.0


def doubler(ids):
    """A preprocessing program: (1, seq) int64 -> (1, 2*seq, 4) float32."""
    return np.concatenate([ids, ids], axis=1).astype(np.float32)[:, :, None] * np.ones(4, np.float32)


def encoder(x):
    """Adds a 512-row position table: x.shape[1] <= 512."""
    return x + POS[: x.shape[1]]


def encoder_with_mask(x, mask):
    return (x + POS[: x.shape[1]]) * mask[:, :, None]


def float64_doubler(ids):
    return np.concatenate([ids, ids], axis=1).astype(np.float64)[:, :, None] * np.ones(4)


def flat(ids):
    return np.concatenate([ids, ids], axis=1).astype(np.float32)


def window(x, m):
    """x must be no longer than m (an accepted Dim.AUTO guard between two inputs)."""
    return x + m[: x.shape[0]]


def decode_step(tok, cache):
    """One decode step: the cache grows by one row; positions come from a 64-row table."""
    new = np.concatenate([cache, tok], axis=0)
    h = new + TABLE[: new.shape[0]]
    return h.sum(axis=0, keepdims=True), new


def _ids(n, seed=0):
    return np.random.default_rng(seed).integers(0, 100, size=(1, n)).astype(np.int64)


@pytest.fixture(scope="module")
def enc():
    return export(encoder, np.ones((1, 16, 4), np.float32), dynamic_shapes={"x": {1: Dim("n", max=512)}})


@pytest.fixture(scope="module")
def wide():
    return export(doubler, _ids(8), dynamic_shapes={"ids": {1: Dim("seq", max=1024)}})


def test_proved_pair_gives_the_composed_contract(enc):
    narrow = export(doubler, _ids(8), dynamic_shapes={"ids": {1: Dim("seq", max=256)}})
    got = compose(narrow, enc)
    assert isinstance(got, ComposedContract) and got.verdict == "proved" and got.proved
    assert got.wiring == [("out0", "x")]
    (path, dtype, shape), = got.inputs
    assert path == "ids" and dtype == "int64" and str(shape[1]) == "seq"
    (out_shape, out_dtype), = got.outputs
    assert out_dtype == "float32" and str(out_shape[1]) == "2*seq" and out_shape[2] == 4
    text = got.describe()
    assert text.startswith("proved:") and "seq in [1, 256]" in text and "out0: (1, 2*seq, 4) float32" in text
    assert got.to_json()["verdict"] == "proved"
    for n in (1, 7, 256):  # the pair runs at sizes other than the example, and matches eager numpy
        ids = _ids(n, n)
        y = enc.module()(narrow.module()(ids))
        np.testing.assert_allclose(y, encoder(doubler(ids)), rtol=1e-6)
        assert y.shape == (1, 2 * n, 4)


def test_refuted_pair_has_a_witness_the_programs_confirm(wide, enc):
    with pytest.raises(ConstraintViolationError) as info:
        compose(wide, enc)
    err = info.value
    text = str(err)
    assert text.startswith("Constraints violated (seq)!")
    assert "2*seq <= 512" in text and "test_compose.py:" in text and "Suggested fixes:" in text
    assert text.rstrip().splitlines()[-1].strip() == "seq = Dim('seq', max=256)"
    (v,) = err.violations
    assert v.names == ("seq",) and v.counterexample and v.counterexample["seq"] > 256
    w = err.witness
    assert w.consumer_input == "x" and "n <= 512" in w.rule
    seq = w.inputs["ids.shape[1]"]
    assert 256 < seq <= 1024 and w.outputs["out0"] == (1, 2 * seq, 4)
    assert w.producer_line.startswith("test_compose.py:") and w.consumer_line.startswith("test_compose.py:")
    # the witness, re-checked by running both programs at those sizes
    out = wide.module()(_ids(seq))
    assert out.shape == w.outputs["out0"]
    with pytest.raises(ConstraintsExceededError):
        enc.module()(out)


def test_the_fix_makes_the_pair_fit_in_one_refine(wide, enc):
    spec = {"ids": {1: Dim("seq", max=1024)}}
    with pytest.raises(ConstraintViolationError) as info:
        compose(wide, enc)
    fixed = refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    again = export(doubler, _ids(8), dynamic_shapes=fixed)
    assert compose(again, enc).verdict == "proved"


def test_dtype_and_rank_mismatches_are_reported(enc):
    f64 = export(float64_doubler, _ids(8), dynamic_shapes={"ids": {1: Dim("seq", max=100)}})
    with pytest.raises(ConstraintViolationError) as info:
        compose(f64, enc)
    (m,) = info.value.mismatches
    assert (m.what, m.got, m.expected, m.input) == ("dtype", "float64", "float32", "x")
    assert "output out0 has dtype float64, but the consumer's input x must have dtype float32" in str(info.value)
    assert not info.value.fixes
    two_d = export(flat, _ids(8), dynamic_shapes={"ids": {1: Dim("seq", max=100)}})
    with pytest.raises(ConstraintViolationError) as info:
        compose(two_d, enc)
    assert [m.what for m in info.value.mismatches] == ["rank"]


def test_extra_consumer_inputs_keep_their_contract(wide):
    narrow = export(doubler, _ids(8), dynamic_shapes={"ids": {1: Dim("seq", max=200)}})
    n = Dim("n", max=512)
    cons = export(encoder_with_mask, np.ones((1, 6, 4), np.float32), np.ones((1, 6), np.float32),
                  dynamic_shapes={"x": {1: n}, "mask": {1: n}})
    got = compose(narrow, cons, {"out0": "x"})
    assert got.verdict == "proved"
    paths = [p for p, _dt, _s in got.inputs]
    assert paths == ["ids", "mask"]
    mask_shape = got.inputs[1][2]
    assert mask_shape[0] == 1 and str(mask_shape[1]) == "2*seq"  # the mask is tied to the producer's size
    with pytest.raises(ConstraintViolationError):  # the fed input still breaks the range past 256
        compose(wide, cons, {"out0": "x"})


def test_undecided_is_never_called_proved(enc):
    narrow = export(lambda ids: doubler(ids)[0, :, 0], _ids(8), dynamic_shapes={"ids": {1: Dim("seq", max=64)}})
    cons = export(window, np.ones(4, np.float32), np.ones(9, np.float32),
                  dynamic_shapes={"x": {0: Dim.AUTO}, "m": {0: Dim.AUTO}})
    got = compose(narrow, cons, {"out0": "x"})
    assert got.verdict == "unknown" and not got.proved
    text = got.describe()
    assert text.startswith("undecided:") and "proved" not in text.splitlines()[0].replace("not proved", "")
    assert got.undecided and "does not feed" in got.undecided[0][1]


def test_mapping_errors(wide, enc):
    for mapping, words in (({"out3": "x"}, "has 1 output"), ({"out0": "y"}, "not an array input"),
                           ({"first": "x"}, "is not an output"), ({}, "non-empty")):
        with pytest.raises(CompositionError, match=words):
            compose(wide, enc, mapping)
    step = export(decode_step, np.ones((1, 4), np.float32), np.ones((5, 4), np.float32),
                  dynamic_shapes={"tok": None, "cache": {0: Dim("past", min=0, max=63)}})
    with pytest.raises(CompositionError, match="fed twice"):
        compose(step, step, {"out0": "cache", "out1": "cache"})
    with pytest.raises(CompositionError, match="2 outputs but the consumer only 1"):
        compose(step, enc)
    with pytest.raises(CompositionError, match="steps must be a positive int"):
        compose(step, step, {"out0": "tok", "out1": "cache"}, steps=0)
    with pytest.raises(CompositionError, match="not a dim"):
        compose(step, step, {"out0": "tok", "out1": "cache"}, steps=3, initial={"cache": 0})
    with pytest.raises(CompositionError, match="outside the program's range"):
        compose(step, step, {"out0": "tok", "out1": "cache"}, steps=3, initial={"past": 64})


@pytest.fixture(scope="module")
def step():
    return export(decode_step, np.ones((1, 4), np.float32), np.ones((5, 4), np.float32),
                  dynamic_shapes={"tok": None, "cache": {0: Dim("past", min=0, max=63)}})


LOOP = {"out0": "tok", "out1": "cache"}


def test_loop_proved_for_the_table_length(step):
    got = compose(step, step, LOOP, steps=64, initial={"past": 0})
    assert got.verdict == "proved" and got.steps == 64
    assert str(got.outputs[1][0][0]) == "past + 64"
    tok, cache = np.ones((1, 4), np.float32), np.zeros((0, 4), np.float32)
    run = step.module()
    for _ in range(64):  # and the program does run 64 calls from an empty cache
        tok, cache = run(tok, cache)
    assert cache.shape == (64, 4)


def test_loop_refuted_at_the_first_call_that_leaves_the_contract(step):
    with pytest.raises(ConstraintViolationError) as info:
        compose(step, step, LOOP, steps=65, initial={"past": 0})
    err = info.value
    assert err.step == 65 and err.witness.step == 65 and err.witness.outputs["out1"] == (64, 4)
    assert "call 65" in str(err) and "past + 64 <= 63" in str(err)
    tok, cache = np.ones((1, 4), np.float32), np.zeros((0, 4), np.float32)
    run = step.module()
    for _ in range(64):
        tok, cache = run(tok, cache)
    with pytest.raises(ConstraintsExceededError):  # call 65, as the witness says
        run(tok, cache)


def test_loop_start_range_covers_every_call(step):
    with pytest.raises(ConstraintViolationError) as info:
        compose(step, step, LOOP, steps=3)
    err = info.value
    # the program is its own consumer: no dynamic_shapes change helps, a start range does (re-decided)
    assert err.step == 2 and err.fixes == [] and err.initial == {"past": (0, 61)}
    assert "no dynamic_shapes change fixes a loop" in str(err) and "start the loop inside past in [0, 61]" in str(err)
    assert compose(step, step, LOOP, steps=3, initial=err.initial).verdict == "proved"
    with pytest.raises(ConstraintViolationError):
        compose(step, step, LOOP, steps=3, initial={"past": (0, 62)})


def test_a_program_composed_with_itself_is_a_loop(step):
    with pytest.raises(ConstraintViolationError) as info:
        compose(step, step, LOOP)
    assert info.value.step == 2 and info.value.initial == {"past": (0, 62)}


def test_loaded_programs_compose_the_same(tmp_path, wide, enc):
    save(wide, tmp_path / "a.pt2")
    save(enc, tmp_path / "b.pt2")
    with pytest.raises(ConstraintViolationError) as info:
        compose(load(tmp_path / "a.pt2"), load(tmp_path / "b.pt2"))
    assert info.value.fixes == ["seq = Dim('seq', max=256)"]


def test_a_static_size_that_never_fits_is_a_mismatch(enc):
    eight = export(lambda ids: doubler(ids)[:, :, :2].repeat(4, axis=2), _ids(8),
                   dynamic_shapes={"ids": {1: Dim("seq", max=100)}})
    assert eight.module()(_ids(3)).shape == (1, 6, 8)
    with pytest.raises(ConstraintViolationError) as info:
        compose(eight, enc)
    (m,) = info.value.mismatches
    assert (m.what, m.input, m.got, m.expected) == ("size", "x", "8", "x.shape[2] == 4")
    assert "at every size" in str(info.value) and not info.value.fixes


def test_a_program_composed_with_itself_names_a_static_width_mismatch_as_such():
    w = np.ones((16, 8), np.float32)

    def enc(x):
        return x @ w

    ep = export(enc, np.ones((2, 16, 16), np.float32), dynamic_shapes={"x": {0: Dim("b"), 1: Dim("s")}})
    with pytest.raises(ConstraintViolationError) as info:
        compose(ep, ep)
    text = str(info.value)
    assert text.startswith("Constraints violated (size)!")
    assert "gives the consumer's input x the size 8 at every size of the producer" in text
    assert "loop whose sizes grow" not in text and "Not all values of  in" not in text
