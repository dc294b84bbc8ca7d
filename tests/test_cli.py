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


def test_a_directory_where_a_file_is_expected_is_named_as_such(target, tmp_path, capsys):
    for argv in (["contract", str(tmp_path)], ["show", str(tmp_path)], ["check", f"{tmp_path}:ok"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and err.strip() == f"error: {tmp_path} is a directory: give the path of a file", argv
    code, out, err = run(capsys, "contract", str(tmp_path / "gone.pt2"))
    assert code == 2 and err.strip() == f"error: no such file: {tmp_path / 'gone.pt2'}"


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


# -- CI formats, dataclass archives, Dim.AUTO axes, implied equalities, compose ------------------------
CI_TARGET = textwrap.dedent('''
    import numpy as np
    from tensorplay_export import Dim

    POS = np.zeros((512, 4), np.float32)


    def model(x):
        return x + POS[: x.shape[0]]


    def doubler(ids):
        return np.concatenate([ids, ids], axis=1).astype(np.float32)[0, :, None] * np.ones(4, np.float32)


    def too_wide():
        return model, (np.ones((8, 4), np.float32),), {"x": {0: Dim("n", max=1024)}}


    def auto():
        return model, (np.ones((8, 4), np.float32),), {"x": {0: Dim.AUTO}}


    def enc():
        return model, (np.ones((8, 4), np.float32),), {"x": {0: Dim("n", max=512)}}


    def tok_wide():
        return doubler, (np.ones((1, 8), np.int64),), {"ids": {1: Dim("seq", max=1024)}}


    def tok_ok():
        return doubler, (np.ones((1, 8), np.int64),), {"ids": {1: Dim("seq", max=256)}}
''')


@pytest.fixture
def ci(tmp_path, monkeypatch):
    (tmp_path / "ci_models.py").write_text(CI_TARGET)
    monkeypatch.chdir(tmp_path)
    return "ci_models.py"


def test_check_format_github_annotates_the_source_line(ci, capsys):
    code, out, _ = run(capsys, "check", f"{ci}:too_wide", "--format", "github")
    assert code == 1
    lines = out.splitlines()
    (ann,) = [ln for ln in lines if ln.startswith("::error ")]
    head, _, message = ann[len("::error "):].partition("::")
    props = dict(p.split("=", 1) for p in head.split(","))
    assert props["file"] == "ci_models.py" and props["line"] == "9" and props["title"] == "Constraint violations"
    assert "\n" not in message and "%0A" in message and "n <= 512" in message.replace("%0A", " ")
    assert lines[-1].strip() == "n = Dim('n', max=512)" and "Suggested fixes:" in lines  # refine can still read it
    code, out, _ = run(capsys, "check", f"{ci}:enc", "--format", "github")
    assert code == 0 and "::error" not in out and out.strip().endswith("contract holds")


def test_check_format_json_is_a_machine_readable_report(ci, capsys):
    code, out, _ = run(capsys, "check", f"{ci}:too_wide", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["exit_status"] == 1 and data["kinds"] == ["constraint_violation"]
    (f,) = data["failures"]
    assert f["guard"] == "n <= 512" and f["guard_kind"] and f["source"]["line"] == 9
    assert 512 < f["counterexample"]["n"] <= 1024 and f["fixes"] == ["n = Dim('n', max=512)"]
    code2, out2, _ = run(capsys, "check", f"{ci}:too_wide", "--json")  # the alias gives the same report
    assert code2 == 1 and json.loads(out2) == data
    code, out, _ = run(capsys, "check", f"{ci}:enc", "--format", "json")
    assert code == 0 and json.loads(out)["exit_status"] == 0 and json.loads(out)["kinds"] == []
    code, _out, err = run(capsys, "check", f"{ci}:enc", "--format", "yaml")
    assert code == 2 and "invalid choice" in err


def test_contract_names_the_axis_of_auto_dims(ci, capsys):
    assert run(capsys, "export", f"{ci}:auto", "-o", "auto.pt2")[0] == 0
    code, out, _ = run(capsys, "contract", "auto.pt2")
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if "Dim.AUTO" in ln]
    sym = line.split()[0]
    assert f"({sym} = x.shape[0], Dim.AUTO)" in line and "in [1, 512]" in line
    assert "Outputs:" in out and f"out: ({sym}, 4) float32" in out  # the output's shape over the input dims
    data = json.loads(run(capsys, "contract", "auto.pt2", "--format", "json")[1])
    assert data["dims"] == [dict(data["dims"][0], axis="x.shape[0]", auto=True)]
    (output,) = data["outputs"]
    assert output["shape"] == [sym, "4"] and output["dtype"] == "float32"
    from tensorplay_export.face.contract import Contract

    back = Contract.from_json(data)  # the output shape comes back as an expression of the input dim
    (shape, _dtype), = back.outputs
    assert shape[0] == back.inputs[0][2][0] and shape[1] == 4
    assert run(capsys, "export", f"{ci}:enc", "-o", "enc.pt2")[0] == 0
    out = run(capsys, "contract", "enc.pt2")[1]
    assert "n in [1, 512]" in out and "Dim.AUTO" not in out  # a named dim needs no axis note


def test_diff_does_not_call_an_implied_equality_a_widening(tmp_path, capsys):
    import sympy

    from tensorplay_export.face.contract import Contract

    n, a, b = (sympy.Symbol(s, integer=True, positive=True) for s in "nab")
    old = Contract([("x", "float32", (n, 4)), ("y", "float32", (n,))], {n: (1, 512)}, [], [])
    same = Contract([("x", "float32", (a, 4)), ("y", "float32", (b,))], {a: (1, 1024), b: (1, 1024)},
                    [sympy.Eq(a, b)], [])
    dropped = Contract([("x", "float32", (a, 4)), ("y", "float32", (b,))], {a: (1, 1024), b: (1, 1024)}, [], [])
    for name, c in (("old", old), ("same", same), ("dropped", dropped)):
        (tmp_path / f"{name}.json").write_text(json.dumps(c.to_json()))
    code, out, _ = run(capsys, "diff", str(tmp_path / "old.json"), str(tmp_path / "same.json"))
    assert code == 0 and "[widens]  x.shape[0] (a): widened max 512 -> 1024" in out
    assert "[same]    equality x.shape[0] == y.shape[0] now a guard instead of a shared dim" in out
    assert "equality dropped" not in out
    code, out, _ = run(capsys, "diff", str(tmp_path / "old.json"), str(tmp_path / "dropped.json"), "--format", "json")
    changes = json.loads(out)["changes"]
    assert code == 0 and {"what": "equality dropped: x.shape[0] == y.shape[0]", "narrowing": False,
                          "same": False} in changes
    code, out, _ = run(capsys, "diff", str(tmp_path / "same.json"), str(tmp_path / "old.json"), "--format", "github")
    assert code == 1 and out.startswith("::error file=") and "NEW admits fewer sizes than OLD" in out


DATACLASS_TARGET = textwrap.dedent('''
    import dataclasses

    import numpy as np
    from tensorplay_export import Dim, register_dataclass


    @dataclasses.dataclass
    class Batch:
        tokens: np.ndarray
        scale: np.ndarray


    register_dataclass(Batch, serialized_type_name="cli_test.Batch")


    def model(b):
        return b.tokens * b.scale


    def target():
        return model, (Batch(np.ones((3, 4)), np.ones(4)),), {"b": Batch(tokens={0: Dim.AUTO}, scale=None)}
''')


def _cli(tmp_path, *argv):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "tensorplay_export", *argv], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)


def test_dataclass_archives_open_without_the_class(tmp_path):
    (tmp_path / "dc_models.py").write_text(DATACLASS_TARGET)
    proc = _cli(tmp_path, "export", "dc_models.py:target", "-o", "dc.pt2")
    assert proc.returncode == 0, proc.stderr
    # a fresh interpreter that never imported dc_models: the contract is data
    proc = _cli(tmp_path, "contract", "dc.pt2")
    assert proc.returncode == 0, proc.stderr
    assert "b.tokens: (s0, 4) float64" in proc.stdout and "(s0 = b.tokens.shape[0], Dim.AUTO)" in proc.stdout
    proc = _cli(tmp_path, "show", "dc.pt2")
    assert proc.returncode == 0 and "def forward(self, b_tokens, b_scale)" in proc.stdout
    proc = _cli(tmp_path, "diff", "dc.pt2", "dc.pt2")
    assert proc.returncode == 0 and "no change" in proc.stdout
    # running it builds a Batch: without the class, a usage error that says what to pass
    proc = _cli(tmp_path, "run", "dc.pt2")
    assert proc.returncode == 2 and "cli_test.Batch" in proc.stderr and "--import MODULE" in proc.stderr
    for mod in ("dc_models", "dc_models.py"):
        proc = _cli(tmp_path, "run", "dc.pt2", "--import", mod)
        assert proc.returncode == 0, proc.stderr
        assert "out: (3, 4) float64" in proc.stdout
    proc = _cli(tmp_path, "run", "dc.pt2", "--import", "no_such_module_here")
    assert proc.returncode == 2 and "no module named 'no_such_module_here'" in proc.stderr


def test_compose_exit_codes_and_formats(ci, capsys):
    for name in ("enc", "tok_wide", "tok_ok"):
        assert run(capsys, "export", f"{ci}:{name}", "-o", f"{name}.pt2")[0] == 0
    code, out, _ = run(capsys, "compose", "tok_ok.pt2", "enc.pt2")
    assert code == 0 and out.startswith("proved:") and "out0: (2*seq, 4) float32" in out
    code, out, _ = run(capsys, "compose", "tok_wide.pt2", "enc.pt2", "--map", "out0=x")
    assert code == 1 and "witness: producer inputs" in out and "ids.shape[1] = " in out
    assert out.rstrip().splitlines()[-1].strip() == "seq = Dim('seq', max=256)"
    code, out, _ = run(capsys, "compose", "tok_wide.pt2", "enc.pt2", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "refuted" and data["exit_status"] == 1
    assert data["fixes"] == ["seq = Dim('seq', max=256)"] and data["witness"]["consumer_input"] == "x"
    seq = data["witness"]["inputs"]["ids.shape[1]"]
    assert data["witness"]["outputs"]["out0"] == [2 * seq, 4] and 2 * seq > 512
    code, out, _ = run(capsys, "compose", "tok_ok.pt2", "enc.pt2", "--json")
    assert code == 0 and json.loads(out)["verdict"] == "proved"
    code, out, _ = run(capsys, "compose", "tok_wide.pt2", "enc.pt2", "--format", "github")
    assert code == 1 and out.startswith("::error file=ci_models.py,line=9,title=programs do not compose::")
    for argv in (["compose", "tok_ok.pt2", "enc.pt2", "--map", "out0"], ["compose", "tok_ok.pt2", "enc.pt2",
                 "--map", "out4=x"], ["compose", "tok_ok.pt2", "enc.pt2", "--map", "out0=nope"],
                 ["compose", "tok_ok.pt2"], ["compose", "tok_ok.pt2", "missing.pt2"],
                 ["compose", "enc.pt2", "--steps", "0"], ["compose", "enc.pt2", "enc.pt2", "--steps", "x"]):
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        assert "Traceback" not in out + err


def test_compose_steps_in_a_ci_job(tmp_path):
    (tmp_path / "loop.py").write_text(textwrap.dedent('''
        import numpy as np
        from tensorplay_export import Dim

        TABLE = np.ones((64, 4), np.float32)


        def step(tok, cache):
            new = np.concatenate([cache, tok], axis=0)
            return (new + TABLE[: new.shape[0]]).sum(axis=0, keepdims=True), new


        def target():
            return step, (np.ones((1, 4), np.float32), np.ones((5, 4), np.float32)), \\
                {"tok": None, "cache": {0: Dim("past", min=0, max=63)}}
    '''))
    assert _cli(tmp_path, "export", "loop.py:target", "-o", "step.pt2").returncode == 0
    proc = _cli(tmp_path, "compose", "step.pt2", "--map", "out0=tok", "--map", "out1=cache", "--steps", "1")
    assert proc.returncode == 0 and proc.stdout.startswith("proved:")
    proc = _cli(tmp_path, "compose", "step.pt2", "--map", "out0=tok", "--map", "out1=cache", "--steps", "3")
    assert proc.returncode == 1 and "call 2" in proc.stdout and "start the loop inside past in [0, 61]" in proc.stdout
    loop = ["compose", "step.pt2", "--map", "out0=tok", "--map", "out1=cache", "--initial", "past=0"]
    proc = _cli(tmp_path, *loop, "--steps", "64")
    assert proc.returncode == 0 and "out1: (past + 64, 4) float32" in proc.stdout
    proc = _cli(tmp_path, *loop, "--steps", "65", "--format", "json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["witness"]["step"] == 65
    proc = _cli(tmp_path, *loop[:-2], "--initial", "past=zero", "--steps", "3")
    assert proc.returncode == 2 and "--initial takes DIM=N" in proc.stderr


PLAIN_DATACLASS_TARGET = '''
import dataclasses
import numpy as np
import tensorplay_export as tpe


@dataclasses.dataclass
class Pair:
    x: np.ndarray
    y: np.ndarray


tpe.register_dataclass(Pair)


def model(p):
    return p.x + p.y


def target():
    return model, (Pair(np.ones((4, 3)), np.ones((4, 3))),), None


def outside():
    return (lambda x: x * 2), (np.ones(20),), {"x": {0: tpe.Dim("b", max=8)}}


def raises():
    def f(x):
        raise ValueError("the model's own error")
    return f, (np.ones(3),), None
'''


def test_a_target_file_is_imported_under_its_own_name(tmp_path):
    """Archives of a CLI export are the same bytes every time, and name the class as Python would."""
    (tmp_path / "pairs.py").write_text(PLAIN_DATACLASS_TARGET)
    for name in ("a.pt2", "b.pt2"):
        proc = _cli(tmp_path, "export", "pairs.py:target", "-o", name)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a.pt2").read_bytes() == (tmp_path / "b.pt2").read_bytes()
    for mod in ("pairs", "pairs.py"):
        proc = _cli(tmp_path, "run", "a.pt2", "--import", mod)
        assert proc.returncode == 0, proc.stderr
        assert "out: (4, 3) float64" in proc.stdout


def test_export_of_a_model_that_raises_exits_1(tmp_path):
    (tmp_path / "pairs.py").write_text(PLAIN_DATACLASS_TARGET)
    proc = _cli(tmp_path, "export", "pairs.py:raises", "-o", "r.pt2")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "the model's own error" in proc.stdout
    assert not (tmp_path / "r.pt2").exists()


def test_console_script_is_never_the_reported_source(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "tensorplay-export")
    if not os.path.isfile(script):
        pytest.skip("the console script is not installed next to this interpreter")
    (tmp_path / "pairs.py").write_text(PLAIN_DATACLASS_TARGET)
    proc = subprocess.run([script, "check", "pairs.py:outside", "--format", "github"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "is outside b in [1, 8]" in proc.stdout
    assert "tensorplay-export" not in proc.stdout.split("draft_export")[0]  # no annotation names the script


def test_a_reader_closing_the_pipe_is_not_a_broken_contract(tmp_path):
    # `tensorplay-export show big.pt2 | head -1`: 141 (SIGPIPE, as shells report it), never 1
    import numpy as np

    import tensorplay_export as tpe

    def long_program(x):
        for _ in range(400):
            x = x * 1.0001 + 0.5
        return x

    path = tmp_path / "big.pt2"
    tpe.save(tpe.export(long_program, np.ones((3, 4)), dynamic_shapes={"x": {0: tpe.Dim("n")}}), path)
    proc = subprocess.Popen([sys.executable, "-m", "tensorplay_export", "show", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 141), err
    assert "Traceback" not in err


def test_model_picks_one_program_of_a_multi_model_archive(tmp_path, capsys):
    import numpy as np

    import tensorplay_export as tpe

    a = tpe.export(lambda x: x * 2, np.ones((3, 4)), dynamic_shapes={"x": {0: tpe.Dim("n")}})
    b = tpe.export(lambda x: x.sum(0), np.ones((3, 4)), dynamic_shapes={"x": {0: tpe.Dim("n")}})
    path = str(tmp_path / "pkg.pt2")
    tpe.package_pt2(path, exported_programs={"enc": a, "step": b})
    assert main(["contract", path]) == 2
    assert "holds 2 programs ['enc', 'step']: pass --model NAME" in capsys.readouterr().err
    assert main(["contract", path, "--model", "step"]) == 0
    assert "out: (4,) float64" in capsys.readouterr().out
    assert main(["run", path, "--model", "enc"]) == 0
    assert "out: (3, 4) float64" in capsys.readouterr().out
    assert main(["diff", path, path, "--model", "enc"]) == 0
    assert main(["show", path, "--model", "nope"]) == 2
    assert "none named 'nope'" in capsys.readouterr().err


OUTPUT_TARGETS = textwrap.dedent('''
    import numpy as np
    from tensorplay_export import Dim
    X = (np.ones((4, 3), np.float32),)
    S = {"x": {0: Dim("n", max=1024)}}
    def old():      return (lambda x: (x * 2, x)), X, S
    def rewritten(): return (lambda x: (x + x, x * 1)), X, S
    def narrower(): return (lambda x: ((x * 2)[:, :2], x)), X, S
    def doubled():  return (lambda x: (np.concatenate([x, x]) * 2, x)), X, S
    def float64():  return (lambda x: ((x * 2).astype(np.float64), x)), X, S
    def fewer():    return (lambda x: (x * 2,)), X, S
    def as_dict():  return (lambda x: {"a": x * 2, "b": x}), X, S
    def reordered(): return (lambda x: {"b": x, "a": x * 2}), X, S
    def renamed():  return (lambda x: {"a": x * 2, "c": x}), X, S
    def swapped():  return (lambda x: {"a": x[:1] * 2, "b": x}), X, S
    def size_out(): return (lambda x: (x, x.shape[0])), X, S
    def size_plus(): return (lambda x: (x, x.shape[0] + 1)), X, S
''')


def test_diff_fails_when_what_the_program_returns_changes(tmp_path, capsys):
    (tmp_path / "outs.py").write_text(OUTPUT_TARGETS)
    for name in ("old", "rewritten", "narrower", "doubled", "float64", "fewer", "as_dict", "reordered", "renamed",
                 "swapped", "size_out", "size_plus"):
        code, _, _ = run(capsys, "export", f"{tmp_path / 'outs.py'}:{name}", "-o", str(tmp_path / f"{name}.pt2"))
        assert code == 0, name
    old = str(tmp_path / "old.pt2")
    code, out, _ = run(capsys, "diff", old, str(tmp_path / "rewritten.pt2"))
    assert code == 0 and "(no change)" in out  # the same sizes written another way
    expected = {"narrower": "out[0].shape[1]: 3 -> 2", "doubled": "out[0].shape[0]: n -> 2*n",
                "float64": "out[0]: dtype float32 -> float64", "fewer": "out[1]: no longer returned"}
    for name, line in expected.items():
        code, out, _ = run(capsys, "diff", old, str(tmp_path / f"{name}.pt2"))
        assert code == 1 and f"[output]  {line}" in out and "what it returns changed" in out, (name, out)
    # outputs are matched by their place in what the model returns: a dict's key order is no change
    as_dict = str(tmp_path / "as_dict.pt2")
    code, out, _ = run(capsys, "diff", as_dict, str(tmp_path / "reordered.pt2"))
    assert code == 0 and "(no change)" in out, out
    for name, line in (("renamed", "out['c']: now returned"), ("swapped", "out['a'].shape[0]: n -> 1")):
        code, out, _ = run(capsys, "diff", as_dict, str(tmp_path / f"{name}.pt2"))
        assert code == 1 and f"[output]  {line}" in out, (name, out)
    code, out, _ = run(capsys, "diff", str(tmp_path / "size_out.pt2"), str(tmp_path / "size_plus.pt2"))
    assert code == 1 and "[output]  out[1]: n -> n + 1" in out, out
    code, out, _ = run(capsys, "diff", old, str(tmp_path / "doubled.pt2"), "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["breaking"] and report["outputs_changed"] and report["narrowed"] is False
    assert {"what": "out[0].shape[0]: n -> 2*n", "narrowing": False, "same": False, "output": True} in report["changes"]


def test_check_format_github_points_a_lineless_failure_at_the_model(tmp_path, monkeypatch, capsys):
    # an example outside its range has no line of the model's own: the annotation names the model's def
    (tmp_path / "m.py").write_text(textwrap.dedent('''
        import numpy as np
        from tensorplay_export import Dim

        def model(x):
            return x * 2

        def target():
            return model, (np.ones((20, 3), np.float32),), {"x": {0: Dim("b", max=8)}}
    '''))
    # the command as CI runs it (in-process, the caller's own frame would be the export's line)
    done = subprocess.run([sys.executable, "-m", "tensorplay_export", "check", "m.py:target", "--format", "github"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    (ann,) = [ln for ln in done.stdout.splitlines() if ln.startswith("::error ")]
    props = dict(p.split("=", 1) for p in ann[len("::error "):].partition("::")[0].split(","))
    assert done.returncode == 1 and props["file"] == "m.py" and props["line"] == "5"
