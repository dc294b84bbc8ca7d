"""A dataclass (or namedtuple) defined and registered in a script run as ``python train.py``:
the archive names it as importing the script does (``train.Batch``), so
``tensorplay-export run a.pt2 --import train.py`` (or ``--import train``) runs it; an archive
saved before that rule (``__main__.Batch``) runs too.  Checked through the CLI and, at other
sizes, against eager numpy in a fresh interpreter."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

SCRIPT = textwrap.dedent('''
    import dataclasses
    import typing

    import numpy as np
    import tensorplay_export as tpe


    @dataclasses.dataclass
    class Batch:
        tokens: np.ndarray
        scale: np.ndarray


    class Stats(typing.NamedTuple):
        mean: np.ndarray
        peak: np.ndarray


    tpe.register_dataclass(Batch)
    tpe.pytree.register_namedtuple(Stats)


    def model(b):
        y = b.tokens * b.scale
        return Batch(y, b.scale + 1.0), Stats(y.mean(axis=1), y.max(axis=1))


    def example(n):
        rng = np.random.default_rng(n)
        return Batch(rng.standard_normal((n, 4)), rng.standard_normal(4))


    if __name__ == "__main__":
        ep = tpe.export(model, example(3), dynamic_shapes={"b": Batch({0: tpe.Dim("n", max=64)}, None)})
        tpe.save(ep, "batch.pt2")
''')

CHECK = textwrap.dedent('''
    import numpy as np
    import tensorplay_export as tpe
    import train

    ep = tpe.load("{archive}")
    for n in (1, 5, 17):
        got, want = ep.module()(train.example(n)), train.model(train.example(n))
        assert type(got[0]) is train.Batch and type(got[1]) is train.Stats, (type(got[0]), type(got[1]))
        for g, w in ((got[0].tokens, want[0].tokens), (got[0].scale, want[0].scale),
                     (got[1].mean, want[1].mean), (got[1].peak, want[1].peak)):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    print("same as eager")
''')


def _env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _py(tmp_path, *argv):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)


def _cli(tmp_path, *argv):
    return _py(tmp_path, "-m", "tensorplay_export", *argv)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("main_script")
    (folder / "train.py").write_text(SCRIPT)
    proc = _py(folder, "train.py")
    assert proc.returncode == 0, proc.stderr
    return folder


def _program_json(path) -> str:
    with zipfile.ZipFile(path) as z:
        return "".join(z.read(n).decode() for n in z.namelist() if n.endswith("program.json"))


def test_the_archive_names_the_class_as_importing_the_script_does(saved):
    text = _program_json(saved / "batch.pt2")
    assert '"train.Batch"' in text and '"train.Stats"' in text and "__main__" not in text


@pytest.mark.parametrize("mod", ["train.py", "train"])
def test_run_with_import_of_the_script(saved, mod):
    proc = _cli(saved, "run", "batch.pt2", "--import", mod)
    assert proc.returncode == 0, proc.stderr
    assert "out[0].tokens: (3, 4) float64" in proc.stdout and "out[1].peak: (3,) float64" in proc.stdout


def test_run_without_the_import_says_what_to_pass(saved):
    proc = _cli(saved, "run", "batch.pt2")
    assert proc.returncode == 2 and "train.Batch" in proc.stderr and "--import MODULE" in proc.stderr


def test_the_program_matches_eager_at_other_sizes_after_import(saved):
    (saved / "check.py").write_text(CHECK.format(archive="batch.pt2"))
    proc = _py(saved, "check.py")
    assert proc.returncode == 0, proc.stderr
    assert "same as eager" in proc.stdout


def test_an_archive_naming_main_runs_after_import_of_the_script(saved):
    """Archives saved before the rule store ``__main__.Batch``; ``--import train.py`` resolves them."""
    src = zipfile.ZipFile(saved / "batch.pt2")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("program.json"):
                data = data.replace(b'"train.Batch"', b'"__main__.Batch"').replace(b'"train.Stats"', b'"__main__.Stats"')
            dst.writestr(info, data)
    (saved / "old.pt2").write_bytes(out.getvalue())
    assert '"__main__.Batch"' in _program_json(saved / "old.pt2")
    for mod in ("train.py", "train"):
        proc = _cli(saved, "run", "old.pt2", "--import", mod)
        assert proc.returncode == 0, proc.stderr
        assert "out[0].tokens: (3, 4) float64" in proc.stdout


def test_cli_export_of_the_script_names_the_class_the_same(saved):
    (saved / "targets.py").write_text("import train\n\n\ndef target():\n    return train.model, "
                                      "(train.example(3),), {'b': train.Batch({0: train.tpe.Dim('n', max=64)}, None)}\n")
    proc = _cli(saved, "export", "targets.py:target", "-o", "cli.pt2")
    assert proc.returncode == 0, proc.stderr
    text = _program_json(saved / "cli.pt2")
    assert '"train.Batch"' in text and '"train.Stats"' in text
    proc = _cli(saved, "run", "cli.pt2", "--import", "train.py")
    assert proc.returncode == 0, proc.stderr
