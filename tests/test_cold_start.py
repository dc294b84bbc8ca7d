"""Cold start (issue 19): a fresh process that imports the package, loads an archive and runs it.

The load-and-run path imports neither z3 nor sympy (nor the capture, solver or face
layers): a loaded program keeps its size expressions in their stored form
(graph/stored.py) until something asks for sympy; the public names that need them still
resolve, on first access.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn

ROOT = Path(__file__).resolve().parent.parent

_RUN = """
import json, sys
import numpy as np
import tensorplay_export as tpe
after_import = sorted(m for m in ('sympy', 'z3', 'solver', 'tensorplay_export.capture', 'tensorplay_export.face')
                      if m in sys.modules)
ep = tpe.load(sys.argv[1]) if sys.argv[3] == 'load' else tpe.load_pt2(sys.argv[1]).exported_programs['model']
x = np.load(sys.argv[2])
out = ep.module()(x)
print(json.dumps({"after_import": after_import,
                  "modules": sorted(m for m in sys.modules if m.split('.')[0] in ('sympy', 'z3', 'solver')
                                    or m.startswith(('tensorplay_export.capture', 'tensorplay_export.face'))),
                  "out": np.asarray(out).tolist()}))
"""


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4, rng=np.random.default_rng(0))

    def forward(self, x):
        return nn.functional.gelu(self.fc(x)).reshape(x.shape[0] * 2, 2) + 1.0


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cold")
    model = _Net().eval()
    ep = tpe.export(model, np.ones((3, 8), np.float32), dynamic_shapes={"x": {0: tpe.Dim("b", min=2, max=64)}})
    path = tmp / "net.pt2"
    tpe.save(ep, path)
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)  # not the example's size
    np.save(tmp / "x.npy", x)
    return path, tmp / "x.npy", model(x)


def _run(archive, how: str) -> dict:
    path, x_path, _ = archive
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _RUN, str(path), str(x_path), how], env=env, cwd=path.parent,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("how", ["load", "load_pt2"])
def test_load_and_run_without_z3_or_capture(archive, how):
    got = _run(archive, how)
    assert got["after_import"] in ([], ["sympy"])
    assert not [m for m in got["modules"] if m.split(".")[0] in ("z3", "solver")]
    assert not [m for m in got["modules"] if m.startswith(("tensorplay_export.capture", "tensorplay_export.face"))]
    # and it computed the model's answer, at a size other than the example's
    want = archive[2]
    assert np.array_equal(np.asarray(got["out"], np.float32), want)


def test_load_and_run_without_sympy(archive):
    got = _run(archive, "load")
    assert not [m for m in got["modules"] if m.split(".")[0] == "sympy"]


def test_lazy_public_names_resolve():
    code = ("import sys, tensorplay_export as tpe; assert 'z3' not in sys.modules; "
            "f = tpe.export; d = tpe.Dim; r = tpe.draft_export; "
            "assert callable(f) and callable(r) and d('n').__class__.__name__; "
            "assert 'export' in dir(tpe) and 'Dim' in dir(tpe); "
            "from tensorplay_export import export, dims, unflatten, compose; print('ok')")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    # the submodule tensorplay_export.export imported first (by the face) does not replace the function
    code = ("import sys, types, tensorplay_export as tpe, tensorplay_export.face.draft; "
            "assert not isinstance(tpe.export, types.ModuleType); "
            "assert tpe.export is sys.modules['tensorplay_export.export'].export; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        tpe.no_such_name  # noqa: B018
