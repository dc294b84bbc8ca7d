"""The benchmark scripts still run: each main() in --quick mode (tiny models, a few seconds).

Nothing here asserts a timing: only that each script finishes, exits 0 and prints its table
rows. The torch side of compare_torch_export runs only when torch is installed (it is an
optional extra), and profile_export only when pyinstrument is.
"""
from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

from benchmarks import _common as C


def _run(module_name: str, argv: list[str], capsys) -> str:
    module = importlib.import_module(f"benchmarks.{module_name}")
    assert module.main(argv) == 0
    return capsys.readouterr().out


def test_bench_export_quick(capsys):
    out = _run("bench_export", ["--quick"], capsys)
    assert "command: python benchmarks/bench_export.py --quick" in out
    names = [ln.split("|")[1].strip() for ln in out.splitlines() if ln.startswith("|")]
    assert names[2:] == ["gpt (d32)", "mlp", "gpt (d32) seq<=1024"]  # after header and rule


def test_bench_runtime_quick(capsys):
    out = _run("bench_runtime", ["--quick"], capsys)
    rows = [ln for ln in out.splitlines() if ln.startswith("|") and ("gpt" in ln or "mlp" in ln)]
    assert len(rows) == 2
    # the check share column holds a number (ExportedModule still exposes its GraphModule)
    assert all(ln.rstrip(" |").split("|")[-1].strip() != "n/a" for ln in rows)


def test_bench_archive_quick(capsys):
    out = _run("bench_archive", ["--quick"], capsys)
    rows = [ln for ln in out.splitlines() if ln.startswith("| gpt (d32) |")]
    steps = [ln.split("|")[3].strip() for ln in rows if ln.split("|")[2].strip() != "this"]
    assert steps == ["save", "load_pt2 mmap", "load_pt2 mmap, code cache off",
                     "load_pt2 mmap, first on the machine (empty cache)", "load (read)",
                     "load_pt2 mmap + first call",
                     "np.load 16 .npy (read)", "np.load 16 .npy (mmap)"]
    cold = [ln.split("|") for ln in rows if ln.split("|")[2].strip() == "this"]
    # the fresh process loaded and ran the archive without importing z3
    assert len(cold) == 1 and cold[0][-2].strip() == "False"


def test_bench_compile_at_export_quick(capsys):
    out = _run("bench_compile_at_export", ["--quick"], capsys)
    rows = [ln.split("|")[1].strip() for ln in out.splitlines() if ln.startswith("|")]
    assert rows[2:] == ["export (compiles once)", "generate + compile the forward"]


def test_compare_torch_export_quick(capsys):
    out = _run("compare_torch_export", ["--quick"], capsys)
    assert "ratio (torch/ours)" in out and "torch ratio" in out
    row = next(ln for ln in out.splitlines() if ln.startswith("|") and "gpt" in ln)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[7] != "n/a"  # our export seconds are always measured
    if not C.have_torch():
        assert "torch: not installed" in out and cells[8] == "n/a"
    else:
        assert cells[8] != "n/a"


@pytest.mark.skipif(importlib.util.find_spec("pyinstrument") is None, reason="pyinstrument not installed")
def test_profile_export_quick(capsys):
    out = _run("profile_export", ["--model", "mlp", "--layers", "2", "--repeat", "1", "--top", "3"], capsys)
    assert "top 3 inclusive" in out and "top 3 self" in out


def test_export_stats_counts_nodes_and_solver():
    stats = C.export_stats(C.build_mlp(2), (C.mlp_input(2),), C.mlp_spec())
    assert stats["nodes"] > 0
    assert stats["solver_queries"] is not None and stats["z3_calls"] is not None


def test_table_formats_missing_values_as_na():
    text = C.table(["a", "b"], [[1, None], [0.123456, 2.0]])
    assert "n/a" in text and "0.123" in text


def test_torch_twins_compute_the_same_numbers():
    if not C.have_torch():
        pytest.skip("torch not installed (optional benchmark extra)")
    import torch

    from benchmarks import _torch_models as T

    gpt = C.build_gpt(1, d_model=32, n_head=2)
    twin = T.load_numpy_state(T.torch_gpt(1, d_model=32, n_head=2, n_positions=C.GPT_POSITIONS), gpt.state_dict())
    ids = C.gpt_ids(2, 16)
    with torch.no_grad():
        got = twin(torch.from_numpy(ids)).numpy()
    np.testing.assert_allclose(got, gpt(ids), rtol=1e-4, atol=1e-5)
    mlp = C.build_mlp(3)
    tmlp = T.load_numpy_state(T.torch_mlp(3), mlp.state_dict())
    x = C.mlp_input(4)
    with torch.no_grad():
        np.testing.assert_allclose(tmlp(torch.from_numpy(x)).numpy(), mlp(x), rtol=1e-5, atol=1e-6)


def test_bench_diagnostics_quick(capsys):
    out = _run("bench_diagnostics", ["--quick"], capsys)
    rows = [ln.split("|")[1].strip() for ln in out.splitlines() if ln.startswith("|")]
    assert rows[2:] == ["moe_routing", "gqa_rope"]
    assert "models reach the widest contract" in out


def test_bench_auto_relations_quick(capsys):
    out = _run("bench_auto_relations", ["--quick", "--profile"], capsys)
    assert "command: python benchmarks/bench_auto_relations.py --quick --profile" in out
    assert "export s (warm median):" in out and "cProfile top-10" in out


def test_bench_example_size_quick(capsys):
    out = _run("bench_example_size", ["--quick"], capsys)
    assert "command: python benchmarks/bench_example_size.py --quick" in out
    rows = [ln.split("|")[1].strip() for ln in out.splitlines() if ln.startswith("|")]
    assert rows[2:] == ["(2, 16)", "(4, 32)"]


def test_bench_example_size_draft_rounds_against_a_checkout(capsys):
    """--before with --draft-rounds: this repository against itself, one round of fresh processes."""
    from pathlib import Path

    here = str(Path(C.__file__).resolve().parent.parent)
    out = _run("bench_example_size", ["--quick", "--sizes", "2x16", "--before", here, "--draft-rounds", "1"], capsys)
    tables = [ln for ln in out.splitlines() if ln.startswith("|")]
    assert tables[-3].split("|")[1].strip() == "round" and tables[-1].split("|")[1].strip() == "1"
    assert tables[-1].rstrip(" |").endswith("%")
