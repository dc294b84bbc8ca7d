"""tensorplay-export CLI: exit codes, --json, one-line errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tensorplay_export.face.cli import main

TARGET = textwrap.dedent('''
    import numpy as np
    from tensorplay_export import Dim

    POS = np.zeros((512, 4), np.float32)


    def model(x):
        return x + POS[: x.shape[0]]


    def x():
        return np.ones((8, 4), np.float32)


    def too_wide():
        return model, (x(),), {"x": {0: Dim("n", max=1024)}}


    def ok():
        return model, (x(),), {"x": {0: Dim("n", max=512)}}


    def narrow():
        return model, (x(),), {}, {"x": {0: Dim("n", max=256)}}


    def wrong_shape():
        return model, (x(),)


    def explodes():
        raise RuntimeError("cannot build the model")
''')


@pytest.fixture
def target(tmp_path, monkeypatch):
    path = tmp_path / "models.py"
    path.write_text(TARGET)
    monkeypatch.chdir(tmp_path)
    return "models.py"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_exit_codes(target, capsys):
    code, out, _ = run(capsys, "check", f"{target}:too_wide")
    assert code == 1
    assert "Suggested fixes:" in out and "n = Dim('n', max=512)" in out and "models.py:9" in out
    code, out, _ = run(capsys, "check", f"{target}:ok")
    assert code == 0 and "contract holds" in out


def test_check_json(target, capsys):
    code, out, _ = run(capsys, "check", f"{target}:too_wide", "--json")
    data = json.loads(out)
    assert code == 1 and not data["successful"]
    assert data["failures"][0]["kind"] == "constraint_violation"
    assert data["failures"][0]["source"]["line"] == 9
    assert data["suggested_fixes"] == ["n = Dim('n', max=512)"]
    assert data["contract"]["format"] == "tensorplay_export.contract"
    code, out, _ = run(capsys, "check", f"{target}:ok", "--json")
    assert code == 0 and json.loads(out)["successful"]


def test_usage_errors_exit_2_with_one_line(target, capsys):
    for argv in (["check", "nothere.py:f"], ["check", f"{target}:missing"], ["check", "no-colon"],
                 ["check", f"{target}:wrong_shape"], ["contract", "nothere.pt2"], ["bogus"], []):
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        assert "Traceback" not in err + out
    code, _out, err = run(capsys, "check", f"{target}:explodes")
    assert code == 2 and err.strip().count("\n") == 0 and "cannot build the model" in err
    code, _out, err = run(capsys, "--debug", "check", f"{target}:explodes")  # same status, plus the traceback
    assert code == 2 and "Traceback" in err and err.rstrip().endswith("cannot build the model")
    code, _out, err = run(capsys, "check", f"{target}:explodes", "--debug")
    assert code == 2 and "Traceback" in err


def test_export_to_a_missing_folder_names_the_path(target, tmp_path, capsys):
    missing = tmp_path / "nonexistent" / "dir" / "x.pt2"
    code, out, err = run(capsys, "export", f"{target}:ok", "-o", str(missing))
    assert code == 2 and "Traceback" not in err + out and ".tmp" not in err
    assert err.strip() == f"error: cannot write {missing}: the directory {missing.parent} does not exist"
    code, out, err = run(capsys, "export", f"{target}:ok", "-o", str(tmp_path))
    assert code == 2 and err.strip() == f"error: cannot write {tmp_path}: it is a directory"


def test_export_contract_diff_show(target, tmp_path, capsys):
    code, out, _ = run(capsys, "export", f"{target}:ok", "-o", "old.pt2")
    assert code == 0 and (tmp_path / "old.pt2").exists()
    assert run(capsys, "export", f"{target}:narrow", "-o", "new.pt2")[0] == 0
    code, out, _ = run(capsys, "export", f"{target}:too_wide", "-o", "bad.pt2")
    assert code == 1 and "Suggested fixes:" in out and not (tmp_path / "bad.pt2").exists()

    code, out, _ = run(capsys, "contract", "old.pt2")
    assert code == 0 and "x: (n, 4) float32" in out and "n in [1, 512]" in out
    code, out, _ = run(capsys, "contract", "new.pt2", "--json")
    (tmp_path / "new.json").write_text(out)
    assert json.loads(out)["dims"][0]["max"] == 256

    code, out, _ = run(capsys, "diff", "old.pt2", "new.pt2")
    assert code == 1 and "narrowed max 512 -> 256" in out and "x.shape[0] = " in out
    code, out, _ = run(capsys, "diff", "old.pt2", "new.json", "--json")
    data = json.loads(out)
    assert code == 1 and data["narrowed"] is True and 257 <= data["witness"]["x.shape[0]"] <= 512
    code, out, _ = run(capsys, "diff", "new.json", "old.pt2")
    assert code == 0 and "widened max 256 -> 512" in out

    code, out, _ = run(capsys, "show", "old.pt2")
    assert code == 0 and "def forward(" in out and "Graph:" in out and "numpy.add" in out


def test_python_dash_m(target, tmp_path):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "tensorplay_export", "check", f"{target}:too_wide"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 1 and "Suggested fixes:" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "tensorplay_export", "check"], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 2 and "usage:" in proc.stderr
