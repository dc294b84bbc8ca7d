"""The README's first-export example runs as written and says what the README says it says."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import tensorplay_export as tpe

README = Path(__file__).resolve().parent.parent / "README.md"


def _first_export_block() -> str:
    text = README.read_text()
    section = text[text.index("## A first export"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_first_export_example_runs_and_refuses_513(capsys):
    lines = _first_export_block().splitlines()
    # The block's last statement is the refused call (its comment says so); run the rest first.
    last = max(i for i, line in enumerate(lines) if line.startswith("ep.module()"))
    namespace: dict = {}
    exec(compile("\n".join(lines[:last]), str(README), "exec"), namespace)
    ep = namespace["ep"]
    assert {str(k): str(v) for k, v in ep.range_constraints.items()} == {"batch": "[1, 64]", "seq": "[1, 512]"}
    printed = capsys.readouterr().out
    assert "counterexample: seq = 513" in printed and "seq = Dim('seq', max=512)" in printed
    with pytest.raises(tpe.ConstraintsExceededError, match=re.escape("x.shape[1] = 513 is outside seq in [1, 512]")):
        exec(compile(lines[last], str(README), "exec"), namespace)


def test_the_archive_section_names_the_version_save_writes_and_the_graph_keys():
    import io
    import json
    import re
    import zipfile

    import numpy as np

    import tensorplay_export as tpe

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    buf = io.BytesIO()
    tpe.save(tpe.export(lambda x: x * 2, np.zeros((2, 3), np.float32)), buf)
    with zipfile.ZipFile(buf) as z:
        version = z.read("version").decode().strip()
        graph = json.loads(z.read("models/model/program.json"))["graph"]
    assert re.search(r"^## Archive format \(version (\d+)\)$", text, re.M).group(1) == version
    section = text[text.index("## Archive format"):text.index("## Benchmarks")]
    assert all(f"`{key}`" in section for key in graph), sorted(graph)
