"""Contracts of programs, their JSON form, and the solver-decided diff."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy

from _shared import roundtrip

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.face.contract import Contract, contract_of, diff_contracts, load_contract
from tensorplay_export.serde import save


def X(n: int, cols: int = 3) -> np.ndarray:
    return np.ones((n, cols), np.float32)


def three(x, y, z):
    return x + y, np.concatenate([x, z], axis=0)


def pair(x, y):
    return x.sum() + y.sum()


def reshaped(x):
    return x.reshape(-1, 4)


def three_ep(dmax: int):
    dx = Dim("dx", max=dmax)
    return tpe.export(three, X(4), X(4), X(9), dynamic_shapes={"x": {0: dx}, "y": {0: dx}, "z": {0: 2 * dx + 1}})


def test_contract_fields():
    c = contract_of(three_ep(64))
    assert [(p, dt) for p, dt, _ in c.inputs] == [("x", "float32"), ("y", "float32"), ("z", "float32")]
    assert {s.name: r for s, r in c.ranges.items()} == {"dx": (1, 64)}
    assert c.equalities() == [["x.shape[0]", "y.shape[0]"]]
    assert c.relations() == ["z.shape[0] == 2*dx + 1"]
    assert c.divisibility() == ["z.shape[0] % 2 == 1  (z.shape[0] == 2*dx + 1)"]
    assert [dt for _shape, dt in c.outputs] == ["float32", "float32"]
    text = c.describe()
    assert "x: (dx, 3) float32" in text and "dx in [1, 64]" in text and "[1]: (3*dx + 1, 3) float32" in text


def test_json_round_trip_and_archive(tmp_path):
    ep = three_ep(64)
    c = contract_of(ep)
    data = json.loads(json.dumps(c.to_json()))
    back = Contract.from_json(data)
    assert back.describe() == c.describe() and back.to_json() == c.to_json()
    save(ep, tmp_path / "m.pt2")
    assert load_contract(str(tmp_path / "m.pt2")).to_json() == c.to_json()
    (tmp_path / "c.json").write_text(json.dumps(data))
    assert load_contract(str(tmp_path / "c.json")).to_json() == c.to_json()
    with pytest.raises(ValueError, match="not a tensorplay_export contract"):
        Contract.from_json({"format": "other"})


def test_diff_catches_narrowed_max_with_witness():
    old, new = contract_of(three_ep(64)), contract_of(three_ep(32))
    d = diff_contracts(old, new)
    assert d.narrowed is True
    assert d.witness["x.shape[0]"] in range(33, 65)
    assert d.witness["z.shape[0]"] == 2 * d.witness["x.shape[0]"] + 1
    assert any("narrowed max 64 -> 32" in c.what and c.narrowing for c in d.changes)
    back = diff_contracts(new, old)
    assert back.narrowed is False and any("widened max" in c.what for c in back.changes)


def test_diff_catches_new_equality():
    old = contract_of(tpe.export(pair, X(4), X(5), dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}}))
    new = contract_of(tpe.export(pair, X(4), X(4), dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("a")}}))
    d = diff_contracts(old, new)
    assert d.narrowed is True
    assert [c.what for c in d.changes] == ["new equality: x.shape[0] == y.shape[0]"]
    assert d.witness["x.shape[0]"] != d.witness["y.shape[0]"]
    assert diff_contracts(new, old).narrowed is False


def test_diff_catches_new_divisibility():
    old = contract_of(tpe.export(lambda x: x * 2, np.ones(8), dynamic_shapes={"x": {0: Dim.AUTO}}))
    new = contract_of(tpe.export(reshaped, np.ones(8), dynamic_shapes={"x": {0: Dim.AUTO}}))
    d = diff_contracts(old, new)
    assert d.narrowed is True and d.witness["x.shape[0]"] % 4 != 0
    assert any(c.what.startswith("new divisibility") for c in d.changes)


def test_diff_same_contract_and_renamed_dims_are_not_narrowing():
    a = contract_of(three_ep(64))
    assert diff_contracts(a, a).narrowed is False and diff_contracts(a, a).changes == []
    e = Dim("e", max=64)
    renamed = contract_of(tpe.export(three, X(4), X(4), X(9),
                                     dynamic_shapes={"x": {0: e}, "y": {0: e}, "z": {0: 2 * e + 1}}))
    assert diff_contracts(a, renamed).narrowed is False  # decided on sizes, not on names


def test_diff_signature_change_is_narrowing():
    old = contract_of(three_ep(64))
    new = contract_of(tpe.export(pair, X(4), X(4), dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("a")}}))
    d = diff_contracts(old, new)
    assert d.narrowed is True and any(c.what == "input z removed" for c in d.changes)
    s = str(d)
    assert s.startswith("NEW admits fewer sizes than OLD") and "input z removed" in s


# --- bounds accepted on AUTO sizes are ranges; renamed dims are no change -------------------

TABLE = np.ones((512, 4), np.float32)


def table_rows(x):
    return x + TABLE[: x.shape[0]]


def test_auto_bound_is_the_range_not_an_other_guard():
    ep = tpe.export(table_rows, np.ones((8, 4), np.float32), dynamic_shapes={"x": {0: Dim.AUTO}})
    c = contract_of(ep)
    (root,) = c.ranges
    assert c.ranges[root] == (1, 512) and c.guards == []
    text = c.describe()
    assert f"  {root.name} in [1, 512]" in text and "Other guards" not in text
    back = Contract.from_json(json.loads(json.dumps(c.to_json())))
    assert back.ranges == c.ranges and back.guards == []


def test_auto_and_named_dim_of_the_same_contract_diff_as_no_change():
    x = np.ones((8, 4), np.float32)
    auto = contract_of(tpe.export(table_rows, x, dynamic_shapes={"x": {0: Dim.AUTO}}))
    named = contract_of(tpe.export(table_rows, x, dynamic_shapes={"x": {0: Dim("n", max=512)}}))
    for a, b in ((auto, named), (named, auto)):
        d = diff_contracts(a, b)
        assert d.narrowed is False and d.changes == []
        assert str(d).splitlines()[0] == "NEW admits every size OLD admits (no change)"
        assert "widened" not in str(d) and "[narrows]" not in str(d)


def test_fold_simple_bounds_forms():
    import sympy

    from tensorplay_export.face.contract import fold_simple_bounds

    s, t = sympy.Symbol("s", integer=True, positive=True), sympy.Symbol("t", integer=True, positive=True)
    ranges, kept = fold_simple_bounds({s: (1, None), t: (1, None)},
                                      [s <= 512, 2 * s >= 7, sympy.Lt(t, 10), s <= 2 * t, sympy.Ne(t, 3)])
    assert ranges == {s: (4, 512), t: (1, 9)}
    assert kept == [s <= 2 * t, sympy.Ne(t, 3)]


def twice(x, y):
    return np.concatenate([x, x], axis=0) + y


def ordered(x, y):
    if x.shape[0] <= 2 * y.shape[0]:
        return x.sum() + y.sum()
    return x.sum()


def test_renamed_dims_are_no_change():
    args = (X(4), X(8))
    a = contract_of(tpe.export(twice, *args, dynamic_shapes={"x": {0: Dim("n", max=100)},
                                                             "y": {0: 2 * Dim("n", max=100)}}))
    b = contract_of(tpe.export(twice, *args, dynamic_shapes={"x": {0: Dim("q", max=100)},
                                                             "y": {0: 2 * Dim("q", max=100)}}))
    d = diff_contracts(a, b)
    assert d.narrowed is False and d.changes == [] and "no change" in str(d)


def test_renamed_auto_relation_is_no_change_but_a_real_widening_is_listed():
    import sympy

    c = contract_of(tpe.export(ordered, X(4), X(8), dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}}))
    assert len(c.guards) == 1
    ren = {r: sympy.Symbol(f"renamed_{r.name}", integer=True, positive=True) for r in c.ranges}
    renamed = Contract([(p, dt, tuple(sympy.sympify(d).xreplace(ren) for d in shape)) for p, dt, shape in c.inputs],
                       {ren[r]: v for r, v in c.ranges.items()}, [g.xreplace(ren) for g in c.guards], c.outputs)
    d = diff_contracts(c, renamed)
    assert d.narrowed is False and d.changes == []
    wider = Contract(renamed.inputs, renamed.ranges, [], renamed.outputs)
    d = diff_contracts(c, wider)
    assert d.narrowed is False and [str(ch) for ch in d.changes] == [
        "[widens]  relation/guard dropped: x.shape[0] <= 2*y.shape[0]"]
    d = diff_contracts(wider, c)
    assert d.narrowed is True and [str(ch) for ch in d.changes] == [
        "[narrows] new relation/guard: x.shape[0] <= 2*y.shape[0]"]


def test_auto_bound_narrows_range_constraints_and_the_runtime_check():
    ep = tpe.export(table_rows, np.ones((8, 4), np.float32), dynamic_shapes={"x": {0: Dim.AUTO}})
    (root, vr), = ep.range_constraints.items()
    assert (vr.lower, vr.upper) == (1, 512)
    assert ep.module()(np.ones((512, 4), np.float32)).shape == (512, 4)
    with pytest.raises(tpe.ConstraintsExceededError, match=rf"^x\.shape\[0\] = 600 is outside {root} in \[1, 512\]"):
        ep.module()(np.ones((600, 4), np.float32))


def test_contract_outputs_are_named_by_where_the_model_returns_them():
    import numpy as np

    import tensorplay_export as tpe
    from tensorplay_export.face.contract import Contract, contract_of

    ep = tpe.export(lambda x: {"h": x * 2, "pooled": x.sum(0)}, np.ones((3, 4)),
                    dynamic_shapes={"x": {0: tpe.Dim("n")}})
    c = contract_of(ep)
    assert c.output_paths == ["out['h']", "out['pooled']"]
    assert "out['h']: (n, 4) float64" in c.describe() and "out['pooled']: (4,) float64" in c.describe()
    assert Contract.from_json(c.to_json()).output_paths == c.output_paths


# --- hints are labelled as declared; sizes are simplified under the final ranges -----------------

T512 = np.arange(512.0)


def sliced(x, y):
    return x + T512[: x.shape[0]], x[:512] + y  # the table bounds x to 512, so x[:512] is all of x


def test_a_dynamic_axis_is_labelled_dim_dynamic_and_an_auto_axis_dim_auto():
    ep = tpe.export(pair, X(3), X(5), dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim.AUTO}})
    for c in (contract_of(ep), contract_of(roundtrip(ep)), Contract.from_json(json.loads(json.dumps(
            contract_of(ep).to_json())))):
        lines = c.describe().splitlines()
        assert [ln for ln in lines if "x.shape[0]" in ln][0].endswith("(x_dim0 = x.shape[0], Dim.DYNAMIC)")
        assert [ln for ln in lines if "y.shape[0]" in ln][0].endswith(", Dim.AUTO)")
    hints = {d["axis"]: d["hint"] for d in contract_of(ep).to_json()["dims"]}
    assert hints == {"x.shape[0]": "DYNAMIC", "y.shape[0]": "AUTO"}


def test_a_slice_min_the_range_decides_is_printed_simplified():
    ep = tpe.export(sliced, np.ones(8), np.ones(8), dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: Dim.AUTO}})
    c = contract_of(roundtrip(ep))
    text = c.describe()
    assert "Min" not in text and "Relations" not in text
    assert c.equalities() == [["x.shape[0]", "y.shape[0]"]]
    assert "  x_dim0 in [1, 512]  (x_dim0 = x.shape[0], Dim.DYNAMIC)" in text.splitlines()
    assert "  out[1]: (x_dim0,) float64" in text.splitlines()
    # the simplified contract admits exactly what the program does
    ep.module()(np.ones(512), np.ones(512))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones(7), np.ones(6))
    assert not diff_contracts(contract_of(ep), c).breaking and not diff_contracts(c, contract_of(ep)).breaking


def test_a_min_the_ranges_do_not_decide_is_kept():
    def head(x):
        return x[:4]

    c = contract_of(tpe.export(head, np.ones(8), dynamic_shapes={"x": {0: Dim("n")}}))
    assert c.outputs[0][0] == (sympy.Min(4, c.inputs[0][2][0]),)


def test_a_strided_conv_stacks_length_reads_as_one_floor():
    from tensorplay_export import nn
    from tensorplay_export.face.contract import contract_of

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv1d(4, 8, 3, stride=2, rng=1)
            self.c2 = nn.Conv1d(8, 8, 3, stride=2, rng=2)
            self.c3 = nn.Conv1d(8, 8, 3, stride=2, padding=1, rng=3)

        def forward(self, x):
            return self.c3(self.c2(self.c1(x)))

    ep = tpe.export(Stack().eval(), np.ones((2, 4, 50), np.float32),
                    dynamic_shapes={"x": {0: Dim("b"), 2: Dim("t", min=7)}})
    text = contract_of(ep).describe()
    assert "(b, 8, (t + 1) // 8)" in text, text  # ((t + 1) // 4) // 2 is the same size
