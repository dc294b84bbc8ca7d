"""`tensorplay-export diff` / `check` as a CI gate: the fix it prints closes the gap in one refine
step, several programs per archive, unreadable archives (exit 2 naming the file), --json documents."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.face.cli import main

MODELS = textwrap.dedent('''
    import numpy as np
    from tensorplay_export import Dim

    POS = np.zeros((512, 4), np.float32)


    def model(x):
        return x + POS[: x.shape[0]]


    def pair(x, z):
        return x.sum(0), z[: 2 * x.shape[0]]


    def X():
        return np.ones((8, 4), np.float32)


    def wide():
        return model, (X(),), {"x": {0: Dim("n", min=2, max=512)}}


    def narrow():
        return model, (X(),), {"x": {0: Dim("n", min=4, max=256)}}


    def too_wide():
        return model, (X(),), {"x": {0: Dim("n", max=1024)}}


    def pair_wide():
        a = Dim("a", max=64)
        return pair, (X(), np.ones((16, 4), np.float32)), {"x": {0: a}, "z": {0: 2 * a}}


    def pair_narrow():
        b = Dim("b", max=20)
        return pair, (X(), np.ones((16, 4), np.float32)), {"x": {0: b}, "z": {0: 2 * b}}
''')


@pytest.fixture
def models(tmp_path, monkeypatch):
    (tmp_path / "models.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    import models as mod

    return importlib.reload(mod)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _eager_matches(ep, model, sizes):
    for n in sizes:
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(ep.module()(x), model(x), rtol=1e-6)


@pytest.mark.parametrize("old, new, dims, witness_site", [
    ("wide", "narrow", "n", "x.shape[0]"),
    ("pair_wide", "pair_narrow", "b", "z.shape[0]"),
])
def test_a_narrowed_range_prints_a_witness_and_a_fix_one_refine_step_closes(models, capsys, old, new, dims,
                                                                             witness_site):
    assert run(capsys, "export", f"models.py:{old}", "-o", "old.pt2")[0] == 0
    assert run(capsys, "export", f"models.py:{new}", "-o", "new.pt2")[0] == 0
    code, out, _ = run(capsys, "diff", "old.pt2", "new.pt2")
    assert code == 1 and "NEW admits fewer sizes than OLD" in out and f"{witness_site} = " in out
    assert "Suggested fixes:" in out and f"{dims} = Dim('{dims}'" in out, out
    code, js, _ = run(capsys, "diff", "old.pt2", "new.pt2", "--json")
    report = json.loads(js)
    assert report["exit_status"] == 1 and report["narrowed"] and report["fixes"]
    assert all(f"  {line}" in out for line in report["fixes"])  # the same facts in both forms
    assert set(report["witness"]) <= {"x.shape[0]", "z.shape[0]"} and witness_site in report["witness"]

    # the user pastes the diff's text into refine on NEW's spec, re-exports: the gate passes
    model, args, spec = getattr(models, new)()
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(out, spec)
    ep = tpe.export(model, *args, dynamic_shapes=refined)
    tpe.save(ep, "fixed.pt2")
    code, out, _ = run(capsys, "diff", "old.pt2", "fixed.pt2")
    assert code == 0, out
    if new == "narrow":  # the refined program runs at OLD's extreme sizes, as eager numpy does
        _eager_matches(tpe.load("fixed.pt2"), models.model, (2, 3, 512))


def test_widened_is_not_breaking_and_says_so(models, capsys):
    assert run(capsys, "export", "models.py:wide", "-o", "old.pt2")[0] == 0
    assert run(capsys, "export", "models.py:narrow", "-o", "new.pt2")[0] == 0
    code, out, _ = run(capsys, "diff", "new.pt2", "old.pt2")
    assert code == 0 and "NEW admits every size OLD admits" in out
    assert "[widens]  x.shape[0] (n): widened min 4 -> 2" in out and "widened max 256 -> 512" in out
    assert "Suggested fixes:" not in out


def test_a_specialized_axis_names_how_to_make_it_dynamic_again(tmp_path, capsys):
    x = np.ones((4, 3), np.float32)
    tpe.save(tpe.export(lambda x: x * 2, x, dynamic_shapes={"x": {0: Dim("n", max=64)}}), tmp_path / "o.pt2")
    tpe.save(tpe.export(lambda x: x * 2, x, dynamic_shapes={"x": {0: None}}), tmp_path / "s.pt2")
    code, out, _ = run(capsys, "diff", str(tmp_path / "o.pt2"), str(tmp_path / "s.pt2"), "--json")
    report = json.loads(out)
    assert code == 1 and report["narrowed"] and report["fixes"] == []
    assert report["notes"] == [("x.shape[0] is static (4) in NEW: to admit OLD's sizes it must be dynamic again, "
                                "e.g. {0: Dim('n', max=64)} in dynamic_shapes['x']")]


def test_no_range_fix_when_the_model_narrowed_by_divisibility(tmp_path, capsys):
    x = np.ones((9, 3), np.float32)
    tpe.save(tpe.export(lambda x: x[::4], x, dynamic_shapes={"x": {0: Dim("m", max=61)}}), tmp_path / "o.pt2")
    tpe.save(tpe.export(lambda x: x[::4], x, dynamic_shapes={"x": {0: 4 * Dim("_k", max=15) + 1}}),
             tmp_path / "n.pt2")
    code, out, _ = run(capsys, "diff", str(tmp_path / "o.pt2"), str(tmp_path / "n.pt2"))
    assert code == 1 and "Suggested fixes:" not in out
    assert "note: no range of NEW's dims admits every size OLD admits" in out


def _pack(path, **programs):
    tpe.package_pt2(str(path), exported_programs=programs)
    return str(path)


def test_archives_of_several_programs_diff_program_by_program(tmp_path, capsys):
    x = np.ones((4, 3), np.float32)
    enc = tpe.export(lambda x: x * 2, x, dynamic_shapes={"x": {0: Dim("n", max=64)}})
    enc_narrow = tpe.export(lambda x: x * 2, x, dynamic_shapes={"x": {0: Dim("n", max=32)}})
    dec = tpe.export(lambda x: x[:2], x, dynamic_shapes={"x": {0: Dim("n", min=2, max=64)}})
    old = _pack(tmp_path / "old.pt2", enc=enc, dec=dec)
    code, out, _ = run(capsys, "diff", old, _pack(tmp_path / "same.pt2", dec=dec, enc=enc))
    assert code == 0 and out.startswith("0 of 2 programs of OLD break in NEW"), out
    code, out, _ = run(capsys, "diff", old, _pack(tmp_path / "n.pt2", enc=enc_narrow, dec=dec))
    assert code == 1 and out.startswith("1 of 2 programs of OLD break in NEW: enc"), out
    assert "program 'enc': NEW admits fewer sizes than OLD" in out and "n = Dim('n', max=64)" in out
    code, out, _ = run(capsys, "diff", old, _pack(tmp_path / "gone.pt2", enc=enc, extra=dec), "--json")
    report = json.loads(out)
    assert code == 1 and report["removed"] == ["dec"] and report["added"] == ["extra"]
    assert report["exit_status"] == 1 and not report["programs"]["enc"]["breaking"]
    code, out, _ = run(capsys, "diff", _pack(tmp_path / "one.pt2", enc=enc, dec=dec),
                       _pack(tmp_path / "more.pt2", enc=enc, dec=dec, extra=enc))
    assert code == 0 and "program 'extra': added" in out  # a new program breaks no caller of OLD
    code, out, _ = run(capsys, "diff", old, str(tmp_path / "n.pt2"), "--model", "enc")
    assert code == 1 and out.startswith("NEW admits fewer sizes than OLD")
    # one JSON contract against an archive of several: which one is meant cannot be guessed
    code, js, _ = run(capsys, "contract", old, "--model", "enc", "--json")
    assert code == 0
    (tmp_path / "enc.json").write_text(js)
    code, _, err = run(capsys, "diff", str(tmp_path / "enc.json"), old)
    assert code == 2 and "pass --model NAME" in err and "['dec', 'enc']" in err
    code, out, _ = run(capsys, "diff", str(tmp_path / "enc.json"), str(tmp_path / "n.pt2"), "--model", "enc")
    assert code == 1 and "narrowed max 64 -> 32" in out


@pytest.mark.parametrize("content, says", [
    (b"PK\x03\x04" + b"garbage" * 20, "cannot read NEW {p}: archive: not a readable zip file"),
    (b"", "NEW: {p} is neither a program archive nor a JSON contract"),
    (b'{"format": "something else"}', "NEW: bad.pt2 is not a tensorplay_export contract"),
    (None, "no such file: {p}"),
])
def test_an_unreadable_archive_exits_2_naming_the_file(tmp_path, capsys, content, says):
    x = np.ones((4, 3), np.float32)
    good = str(tmp_path / "good.pt2")
    tpe.save(tpe.export(lambda x: x * 2, x, dynamic_shapes={"x": {0: Dim("n", max=64)}}), good)
    bad = tmp_path / "bad.pt2"
    if content is not None:
        bad.write_bytes(content)
    code, out, err = run(capsys, "diff", good, str(bad))
    assert code == 2 and out == "" and err.strip().startswith("error: " + says.format(p=bad)), err
    assert "Traceback" not in err
    code, out, err = run(capsys, "diff", good, str(bad), "--json")
    doc = json.loads(out)
    assert code == 2 and doc["exit_status"] == 2 and doc["error"].startswith(says.format(p=bad))


def test_a_truncated_archive_is_named_by_every_reader(tmp_path, capsys):
    x = np.ones((4, 3), np.float32)
    good = tmp_path / "good.pt2"
    tpe.save(tpe.export(lambda x: x * 2, x, dynamic_shapes={"x": {0: Dim("n", max=64)}}), good)
    cut = tmp_path / "cut.pt2"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    for argv, role in ((["contract", str(cut)], ""), (["show", str(cut)], ""), (["run", str(cut)], ""),
                       (["diff", str(cut), str(good)], "OLD "), (["compose", str(good), str(cut)], "CONSUMER ")):
        code, _out, err = run(capsys, *argv)
        assert code == 2 and err.startswith(f"error: cannot read {role}{cut}: "), (argv, err)


def test_check_of_a_violating_model_exits_1_with_the_fix_one_refine_step_closes(models, capsys):
    code, out, _ = run(capsys, "check", "models.py:too_wide")
    assert code == 1 and "Suggested fixes:" in out and "n = Dim('n', max=512)" in out
    code, js, _ = run(capsys, "check", "models.py:too_wide", "--json")
    report = json.loads(js)
    assert code == 1 and report["exit_status"] == 1 and report["suggested_fixes"] == ["n = Dim('n', max=512)"]
    model, args, spec = models.too_wide()
    ep = tpe.export(model, *args, dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(out, spec))
    _eager_matches(ep, model, (1, 7, 512))
