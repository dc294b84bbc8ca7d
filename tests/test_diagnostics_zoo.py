"""The diagnostics zoo (benchmarks/zoo.py) as contract checks, no timings.

Per model: the hand-written ``admits`` agrees with eager numpy on the grid, and one refine
loop from the naive spec reaches a program whose contract equals ``admits`` on the grid in at
most one refine round (issue 13's goal). Models where today's project does not get there are
strict expected failures naming what goes wrong, so the work that fixes them flips the marks.
"""
from __future__ import annotations

import pytest

from benchmarks import zoo as Z

# What goes wrong today, per model (measured with benchmarks/bench_diagnostics.py --errors); every
# model closes in one round now (flatten_head since product equalities pin per-dim terms).
TODAY: dict = {}

MODELS = Z.zoo()


def _param(zm: Z.ZooModel):
    if zm.name in TODAY:
        return pytest.param(zm.name, marks=pytest.mark.xfail(strict=True, reason=TODAY[zm.name]), id=zm.name)
    return pytest.param(zm.name, id=zm.name)


def test_the_zoo_has_the_issue_architectures():
    names = [zm.name for zm in MODELS]
    assert len(names) == len(set(names)) >= 12
    assert set(TODAY) <= set(names)
    for zm in MODELS:
        assert zm.admits(**zm.example), zm.name
        assert set(zm.grid) == set(zm.example), zm.name


@pytest.mark.parametrize("name", [zm.name for zm in MODELS])
def test_admits_agrees_with_eager_numpy(name):
    """An admitted size runs eagerly on the example's branch; a size eager refuses is not admitted."""
    report = Z.check_admits(Z.by_name(name))
    assert report["bad"] == []


@pytest.mark.parametrize("name", [_param(zm) for zm in MODELS])
def test_one_refine_round_reaches_the_widest_contract(name):
    zm = Z.by_name(name)
    res = Z.refine_loop(zm, max_rounds=5)
    assert res.outcome == "ok", "\n".join(res.errors)
    assert res.rounds <= 1, f"{res.rounds} refine rounds:\n" + "\n".join(res.errors)
    contract = Z.check_contract(zm, res.ep)
    assert contract == {"narrower": [], "wider": [], "wrong": []}, Z.contract_notes(contract)


def test_the_contract_check_sees_a_narrower_and_a_wider_program():
    """The check fails a program that refuses admitted sizes, and one that runs refused sizes."""
    import dataclasses

    import tensorplay_export as tpe

    zm = Z.by_name("cnn_stride2")
    args = zm.make_inputs(**zm.example)
    narrow = {"x": {0: tpe.Dim("batch", max=8), 2: tpe.Dim("h", min=9, max=64), 3: tpe.Dim("w", min=7, max=64)}}
    ep = tpe.export(zm.model, *args, dynamic_shapes=narrow)
    res = Z.check_contract(zm, ep)
    assert {s["h"] for s in res["narrower"]} == {7, 8} and res["wider"] == [] and res["wrong"] == []
    assert Z.contract_notes(res)[0].startswith("narrower: refuses batch=1,h=7,w=7")
    tight = dataclasses.replace(zm, admits=lambda batch, h, w: zm.admits(batch, h, w) and h <= 32)
    res = Z.check_contract(tight, ep)
    assert {s["h"] for s in res["wider"]} == {33, 64}


def test_check_admits_refuses_a_contract_wider_than_eager():
    import dataclasses

    zm = Z.by_name("vit_patchify")
    loose = dataclasses.replace(zm, admits=lambda batch, h, w: 1 <= batch <= 8 and 4 <= h <= 64 and 4 <= w <= 64)
    assert any("'h': 6" in p for p in Z.check_admits(loose)["bad"])
