"""diff: the containers around the outputs (a ``None`` returned or dropped, a tuple that became a list)
are changes of what the program returns, though no output array changed place."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.face.cli import main
from tensorplay_export.face.contract import Contract, contract_of, diff_contracts

X = np.ones((4, 3), np.float32)
SPEC = {"x": {0: Dim("n", max=64)}}


def _contract(fn):
    return contract_of(tpe.export(fn, X, dynamic_shapes=SPEC))


def _output_lines(d):
    return [c.what for c in d.changes if c.output]


@pytest.mark.parametrize("old, new, line", [
    (lambda x: (x, None), lambda x: (x,), "out[1]: None no longer returned"),
    (lambda x: (x,), lambda x: (x, None), "out[1]: None now returned"),
    (lambda x: (x * 2, x), lambda x: [x * 2, x], "out: tuple -> list"),
    (lambda x: {"a": x, "b": None}, lambda x: {"a": x}, "out['b']: None no longer returned"),
    (lambda x: (x, (x, None)), lambda x: (x, [x, None]), "out[1]: tuple -> list"),
    (lambda x: (x, ()), lambda x: (x,), "out[1]: tuple no longer returned"),
])
def test_a_container_change_breaks(old, new, line):
    d = diff_contracts(_contract(old), _contract(new))
    assert d.outputs_changed and d.breaking and d.narrowed is False
    assert _output_lines(d) == [line]
    # the same facts from contracts written as JSON and read back
    j = diff_contracts(Contract.from_json(json.loads(json.dumps(_contract(old).to_json()))),
                       Contract.from_json(json.loads(json.dumps(_contract(new).to_json()))))
    assert _output_lines(j) == [line]


def test_same_containers_are_no_change_and_a_dict_order_is_none():
    d = diff_contracts(_contract(lambda x: {"a": x, "b": None, "c": [x]}),
                       _contract(lambda x: {"c": [x + 0], "b": None, "a": x}))
    assert not d.breaking and not d.changes, str(d)
    d = diff_contracts(_contract(lambda x: (x, None)), _contract(lambda x: (x * 1, None)))
    assert not d.breaking and not d.changes, str(d)


def test_a_none_that_became_an_array_is_named_once():
    d = diff_contracts(_contract(lambda x: (x, None)), _contract(lambda x: (x, x)))
    assert _output_lines(d) == ["out[1]: now returned"]


def test_a_contract_written_before_the_structure_was_recorded_still_diffs():
    data = _contract(lambda x: (x, None)).to_json()
    del data["output_structure"]
    old = Contract.from_json(data)
    assert old.output_structure is None
    d = diff_contracts(old, _contract(lambda x: (x,)))
    assert not d.breaking  # nothing to compare the containers with; the arrays are the same
    with pytest.raises(ValueError, match="output_structure"):
        Contract.from_json(dict(data, output_structure=[1]))


def test_cli_diff_exits_1_on_a_dropped_none_and_a_list(tmp_path, capsys):
    paths = {}
    for name, fn in (("old", lambda x: (x, None)), ("dropped", lambda x: (x,)), ("listed", lambda x: [x, None])):
        paths[name] = str(tmp_path / f"{name}.pt2")
        tpe.save(tpe.export(fn, X, dynamic_shapes=SPEC), paths[name])
    assert main(["diff", paths["old"], paths["old"]]) == 0
    capsys.readouterr()
    assert main(["diff", paths["old"], paths["dropped"]]) == 1
    out = capsys.readouterr().out
    assert "what it returns changed" in out and "[output]  out[1]: None no longer returned" in out, out
    assert main(["diff", paths["old"], paths["listed"], "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["exit_status"] == 1 and report["outputs_changed"] and report["narrowed"] is False
    assert {"what": "out: tuple -> list", "narrowing": False, "same": False, "output": True} in report["changes"]
    # a JSON contract written by `contract --json` carries the containers too
    assert main(["contract", paths["old"], "--json"]) == 0
    (tmp_path / "old.json").write_text(capsys.readouterr().out)
    assert main(["diff", str(tmp_path / "old.json"), paths["dropped"]]) == 1
    assert "out[1]: None no longer returned" in capsys.readouterr().out
