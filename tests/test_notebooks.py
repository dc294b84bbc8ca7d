"""Every notebook in notebooks/ runs top to bottom without error (nbclient, kernel of this venv).

Each notebook runs with a temporary folder as its working directory, so files
it writes (archives, snapshots, model files) never land in the repository.
"""
from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_notebooks_exist():
    names = [p.name for p in NOTEBOOKS]
    for expected in ("01_draft_export_diagnostics.ipynb", "02_refine_loop.ipynb", "03_shape_contracts_in_ci.ipynb"):
        assert expected in names


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    # "python3" is launched with this interpreter (jupyter_client maps "python" to sys.executable).
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError (with the cell and traceback) on any error
    errors = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert outputs, "the notebook printed nothing"
    text = "\n".join(_text(o) for o in outputs)
    assert "ipykernel" not in text   # a notebook location names its cell, never IPython's temporary file
    if path.stem.startswith("01_"):
        # the model is defined in the first code cell, run first: In [1]
        assert "cell 1, line 16" in text and "cell 1, line 19" in text
        assert "models reach the widest contract in at most one refine round" in text  # the zoo table
        zoo_rows = [ln for ln in text.splitlines() if ln.startswith("|") and "yes" in ln]
        assert len(zoo_rows) >= 10
    if path.stem.startswith("03_"):
        # it writes its files (models.py, archives, snapshots) into a folder of its own
        assert not any(tmp_path.iterdir()), sorted(p.name for p in tmp_path.iterdir())
        assert not (path.parent / "models.py").exists() and not (path.parent / "snapshots").exists()


def _text(output) -> str:
    if "text" in output:
        return "".join(output["text"])
    data = output.get("data") or {}
    return "".join(data.get("text/plain", "")) + "".join(output.get("traceback", []))
