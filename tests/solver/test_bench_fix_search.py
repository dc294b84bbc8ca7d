"""benchmarks/bench_fix_search.py still runs (--quick); its rows carry the issue-13 fix lines.
No timing is asserted."""
from __future__ import annotations

import importlib

import pytest

pytestmark = pytest.mark.z3


def test_bench_fix_search_quick(capsys):
    module = importlib.import_module("benchmarks.bench_fix_search")
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    rows = {ln.split("|")[1].strip(): ln for ln in out.splitlines() if ln.startswith("| ") and "case" not in ln}
    assert "n = 2520*_n" in rows["5 rows of 56, 45, 8"]
    assert "h = 8*_h" in rows["3 pooling pyramid"]
    assert "dz = dx + dy" in rows["8 dx + dy == dz"]
    assert "n = 5040*_n" in rows["export, 40 reshapes"]
