"""tensorplay_export.face.testing.assert_contract: snapshot on first run, readable diff afterwards."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.face.testing import UPDATE_ENV, assert_contract

POS = np.zeros((512, 4), np.float32)


def model(x):
    return x + POS[: x.shape[0]]


def program(max_n: int):
    return tpe.export(model, np.ones((8, 4), np.float32), dynamic_shapes={"x": {0: Dim("n", max=max_n)}})


def test_first_run_writes_then_same_contract_passes(tmp_path):
    snap = tmp_path / "snaps" / "model.json"
    assert_contract(program(512), snap)
    data = json.loads(snap.read_text())
    assert data["format"] == "tensorplay_export.contract" and data["dims"][0]["max"] == 512
    assert_contract(program(512), snap)  # unchanged: passes
    assert snap.read_text() == json.dumps(data, indent=2, sort_keys=True) + "\n"


def test_changed_contract_fails_with_readable_diff(tmp_path):
    snap = tmp_path / "model.json"
    assert_contract(program(512), snap)
    with pytest.raises(AssertionError) as info:
        assert_contract(program(256), snap)
    text = str(info.value)
    assert "shape contract changed" in text and "NEW admits fewer sizes than OLD" in text
    assert "narrowed max 512 -> 256" in text
    assert "-  n in [1, 512]" in text and "+  n in [1, 256]" in text
    assert_contract(program(256), snap, update=True)
    with pytest.raises(AssertionError, match="widened max 256 -> 512"):
        assert_contract(program(512), snap)  # any change fails, widening too


def test_update(tmp_path, monkeypatch):
    snap = tmp_path / "model.json"
    assert_contract(program(512), snap)
    assert_contract(program(256), snap, update=True)
    assert_contract(program(256), snap)
    monkeypatch.setenv(UPDATE_ENV, "1")
    assert_contract(program(128), snap)
    monkeypatch.delenv(UPDATE_ENV)
    assert json.loads(snap.read_text())["dims"][0]["max"] == 128


def test_accepts_target_report_and_archive(tmp_path, monkeypatch):
    (tmp_path / "models.py").write_text(textwrap.dedent('''
        import numpy as np
        from tensorplay_export import Dim
        POS = np.zeros((512, 4), np.float32)
        def model(x):
            return x + POS[: x.shape[0]]
        def build():
            return model, (np.ones((8, 4), np.float32),), {"x": {0: Dim("n", max=512)}}
    '''))
    monkeypatch.chdir(tmp_path)
    snap = tmp_path / "model.json"
    assert_contract("models.py:build", snap)
    assert_contract(program(512), snap)
    assert_contract(tpe.draft_export(model, np.ones((8, 4), np.float32),
                                     dynamic_shapes={"x": {0: Dim("n", max=512)}}), snap)
    tpe.save(program(512), tmp_path / "m.pt2")
    assert_contract(str(tmp_path / "m.pt2"), snap)
    with pytest.raises(TypeError, match="assert_contract takes"):
        assert_contract(42, snap)


def test_renamed_dim_or_auto_bound_is_no_change(tmp_path):
    snap = tmp_path / "model.json"
    assert_contract(program(512), snap)
    renamed = tpe.export(lambda x: x + POS[: x.shape[0]], np.ones((8, 4), np.float32),
                         dynamic_shapes={"x": {0: Dim("rows", max=512)}})
    assert_contract(renamed, snap)  # n -> rows everywhere (inputs and output shapes): no change
    wider_out = tpe.export(lambda x: np.concatenate([x, x], axis=1) + POS[: x.shape[0], :1],
                           np.ones((8, 4), np.float32), dynamic_shapes={"x": {0: Dim("n", max=512)}})
    with pytest.raises(AssertionError, match="shape contract changed"):
        assert_contract(wider_out, snap)  # same inputs, but the output is (n, 8) now
    auto = tpe.export(model, np.ones((8, 4), np.float32), dynamic_shapes={"x": {0: Dim.AUTO}})
    snap2 = tmp_path / "auto.json"
    assert_contract(auto, snap2)
    data = json.loads(snap2.read_text())
    assert data["dims"][0]["max"] == 512 and data["guards"] == []
    # a snapshot written when the bound was an extra guard is the same contract
    data["dims"][0]["max"] = None
    name = data["dims"][0]["name"]
    data["guards"] = [{"text": f"{name} <= 512", "tree": ["Le", data["dims"][0]["symbol"], 512]}]
    snap2.write_text(json.dumps(data))
    assert_contract(auto, snap2)
