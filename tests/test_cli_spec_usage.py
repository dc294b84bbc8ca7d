"""A target whose dynamic_shapes does not fit its own inputs is a usage error (exit 2), for
`check` and `export` alike: exit 1 says the model's contract broke, and this is the target's
mistake, found before anything is traced."""
from __future__ import annotations

import json
import textwrap

import pytest

from tensorplay_export.face.cli import main

MODELS = textwrap.dedent('''
    import numpy as np
    from tensorplay_export import Dim

    def model(x):
        return x * 2

    X = np.zeros((3, 4), np.float32)

    def names_a_missing_argument():
        return model, (X,), {"y": {0: Dim("b")}}

    def names_a_missing_axis():
        return model, (X,), {"x": {5: Dim("b")}}

    def one_entry_too_many():
        return model, (X,), ({0: Dim("b")}, {0: Dim("c")})

    def an_entry_that_is_no_dim():
        return model, (X,), {"x": {0: "batch"}}

    def example_outside_its_range():
        return model, (X,), {"x": {0: Dim("b", min=5)}}
''')

MISFITS = ["names_a_missing_argument", "names_a_missing_axis", "one_entry_too_many", "an_entry_that_is_no_dim"]


@pytest.fixture
def models(tmp_path, monkeypatch):
    (tmp_path / "specs_models.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    return "specs_models.py"


@pytest.mark.parametrize("func", MISFITS)
def test_check_and_export_call_a_misfit_spec_a_usage_error(models, func, tmp_path, capsys):
    assert main(["check", f"{models}:{func}"]) == 2
    _out, err = capsys.readouterr()
    assert err.startswith(f"error: {func}(): dynamic_shapes does not fit the inputs: ") and err.count("\n") == 1
    assert main(["export", f"{models}:{func}", "-o", str(tmp_path / "m.pt2")]) == 2
    assert not (tmp_path / "m.pt2").exists()
    capsys.readouterr()
    assert main(["check", f"{models}:{func}", "--format", "json"]) == 2
    assert json.loads(capsys.readouterr().out)["exit_status"] == 2


def test_the_missing_argument_is_named(models, capsys):
    main(["check", f"{models}:names_a_missing_argument"])
    err = capsys.readouterr().err
    assert "'y'" in err and "the inputs are 'x'" in err


def test_an_example_outside_its_range_stays_a_broken_contract_with_a_fix(models, capsys):
    assert main(["check", f"{models}:example_outside_its_range"]) == 1
    assert "b = Dim('b', min=3)" in capsys.readouterr().out
