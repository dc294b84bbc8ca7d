"""diff as a CI gate: derived dims, renamed dims, specialization, signature changes, divisibility offsets."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.face.contract import contract_of, diff_contracts


def X(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def strided(x):
    return x[::4]


def doubled(x, z):
    return x.sum(0), z[: 2 * x.shape[0]]


def _c(fn, args, spec):
    return contract_of(tpe.export(fn, *args, dynamic_shapes=spec))


def _lines(d, tag=None):
    return [str(c) for c in d.changes if tag is None or str(c).startswith(tag)]


def test_derived_dims_renamed_are_no_change_and_narrowed_names_a_witness_inside_old():
    def spec(name, lo, hi):
        a = Dim(name, min=lo, max=hi)
        return {"x": {0: a}, "z": {0: 2 * a}}

    old = _c(doubled, (X(4, 3), X(8, 3)), spec("a", 2, 64))
    same = diff_contracts(old, _c(doubled, (X(4, 3), X(8, 3)), spec("b", 2, 64)))
    assert not same.breaking and not same.changes, str(same)
    narrow = diff_contracts(old, _c(doubled, (X(4, 3), X(8, 3)), spec("c", 2, 32)))
    assert narrow.breaking and narrow.narrowed
    w = narrow.witness
    assert 33 <= w["x.shape[0]"] <= 64 and w["z.shape[0]"] == 2 * w["x.shape[0]"], w
    wide = diff_contracts(old, _c(doubled, (X(4, 3), X(8, 3)), spec("d", 1, 128)))
    assert not wide.breaking and "[widens]  x.shape[0] (d): widened max 64 -> 128" in _lines(wide)


def test_a_stride_with_an_offset_names_its_residue_and_outputs_compare_where_both_admit():
    old = _c(strided, (X(9, 3),), {"x": {0: 4 * Dim("_k", max=15) + 1}})
    finer = diff_contracts(old, _c(strided, (X(9, 3),), {"x": {0: 8 * Dim("_k", max=15) + 1}}))
    assert finer.narrowed and finer.witness["x.shape[0]"] % 8 == 5, finer.witness
    assert "[narrows] new divisibility: x.shape[0] % 8 == 1 (was x.shape[0] % 4 == 1)" in _lines(finer)
    # x[::4] has (x - 1)//4 + 1 rows on both sides wherever both admit x: no output change
    assert not finer.outputs_changed, str(finer)
    free = _c(strided, (X(9, 3),), {"x": {0: Dim("m", min=1, max=61)}})
    wide = diff_contracts(old, free)
    assert not wide.breaking and "[widens]  divisibility: x.shape[0] any size (was x.shape[0] % 4 == 1)" \
        in _lines(wide)
    back = diff_contracts(free, old)
    assert back.narrowed and "[narrows] new divisibility: x.shape[0] % 4 == 1" in _lines(back)
    shifted = diff_contracts(old, _c(strided, (X(11, 3),), {"x": {0: 4 * Dim("_k", max=15) + 3}}))
    assert shifted.narrowed and any(ln.startswith("[narrows] divisibility: x.shape[0] % 4 == 3")
                                    for ln in _lines(shifted)), str(shifted)


def test_a_dim_that_became_static_is_a_narrowing_not_an_output_change():
    old = _c(lambda x: x * 2, (X(4, 3),), {"x": {0: Dim("n", max=64)}})
    static = _c(lambda x: x * 2, (X(4, 3),), {"x": {0: None}})
    d = diff_contracts(old, static)
    assert d.breaking and d.narrowed and d.witness["x.shape[0]"] != 4
    assert _lines(d) == ["[narrows] x.shape[0]: now static = 4 (was n in [1, 64])"]
    back = diff_contracts(static, old)
    assert not back.breaking and _lines(back) == ["[widens]  x.shape[0]: now dynamic n (was static 4)"]


@pytest.mark.parametrize("new_fn, new_args, new_spec, lines", [
    (lambda z: z * 2, (X(4, 3),), {"z": {0: Dim("n", max=64)}},
     ["[narrows] input x removed", "[narrows] input z added (calls made for OLD lack it)"]),
    (lambda x, y: x * 2 + y.sum(), (X(4, 3), X(2)), {"x": {0: Dim("n", max=64)}, "y": None},
     ["[narrows] input y added (calls made for OLD lack it)"]),
    (lambda x: x * 2, (X(4, 3, dtype=np.float64),), {"x": {0: Dim("n", max=64)}},
     ["[narrows] input x: dtype float32 -> float64", "[output]  out: dtype float32 -> float64"]),
])
def test_signature_changes_break_without_a_crash(new_fn, new_args, new_spec, lines):
    old = _c(lambda x: x * 2, (X(4, 3),), {"x": {0: Dim("n", max=64)}})
    d = diff_contracts(old, _c(new_fn, new_args, new_spec))
    assert d.breaking and d.narrowed and _lines(d) == lines, str(d)


def test_an_output_that_grows_by_one_and_an_output_dtype_break():
    old = _c(lambda x: x * 2, (X(4, 3),), {"x": {0: Dim("n", max=64)}})
    grown = diff_contracts(old, _c(lambda x: np.concatenate([x * 2, x[:1]], 0), (X(4, 3),),
                                   {"x": {0: Dim("n", max=64)}}))
    assert grown.breaking and not grown.narrowed and _lines(grown) == ["[output]  out.shape[0]: n -> n + 1"]
    cast = diff_contracts(old, _c(lambda x: (x * 2).astype(np.float64), (X(4, 3),), {"x": {0: Dim("n", max=64)}}))
    assert cast.breaking and _lines(cast) == ["[output]  out: dtype float32 -> float64"]


def test_a_data_dependent_output_size_is_still_compared():
    spec = {"x": {0: Dim("n", max=64)}}
    masked = _c(lambda x: x[x > 0], (X(4, 3),), spec)
    assert not diff_contracts(masked, _c(lambda x: x[x > 0] * 2, (X(4, 3),), spec)).changes
    grown = diff_contracts(masked, _c(lambda x: np.concatenate([x[x > 0], x[0]]), (X(4, 3),), spec))
    assert grown.breaking and _lines(grown) == ["[output]  out.shape[0]: u0 -> u0 + 3"]


def test_a_widening_says_it_breaks_nothing():
    old = _c(lambda x: x * 2, (X(4, 3),), {"x": {0: Dim("n", min=2, max=64)}})
    wide = diff_contracts(old, _c(lambda x: x * 2, (X(4, 3),), {"x": {0: Dim("n", max=128)}}))
    assert not wide.breaking and str(wide).startswith("NEW admits every size OLD admits (wider: not breaking)\n")
    assert _lines(wide) == ["[widens]  x.shape[0] (n): widened min 2 -> 1",
                            "[widens]  x.shape[0] (n): widened max 64 -> 128"]
    grown = diff_contracts(old, _c(lambda x: np.concatenate([x, x]), (X(4, 3),), {"x": {0: Dim("n", max=128)}}))
    assert grown.breaking and str(grown).startswith(
        "NEW admits every size OLD admits (wider); what it returns changed\n"), str(grown)
