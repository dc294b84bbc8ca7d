"""Golden bytes and back-compat: the version-1 archive stored in tests/data must keep loading.

If an intended format change breaks ``test_same_program_gives_the_golden_bytes``,
bump ``FORMAT_VERSION`` (archive.py changelog), keep the old fixture and its
test, and add a new fixture with ``python tests/serde/test_golden.py``.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export.graph.codegen import GraphModule
from tensorplay_export.graph.ir import Graph
from tensorplay_export.program.exported import ExportedProgram, signature_from_graph
from tensorplay_export.records import ValueRange
import tensorplay_export.program.input_checks  # noqa: F401  (registers the tpe.check_* ops)
from tensorplay_export.program.signature import InputKind

FIXTURE_V1 = Path(__file__).parent.parent / "data" / "archive_v1.pt2"
FIXTURE_V2 = Path(__file__).parent.parent / "data" / "archive_v2.pt2"
FIXTURE_V3 = Path(__file__).parent.parent / "data" / "archive_v3.pt2"
FIXTURE_V4 = Path(__file__).parent.parent / "data" / "archive_v4.pt2"  # the current format (see archive.py)


def golden_program() -> ExportedProgram:
    """y = x * w + 0.5 over x: (N, 3) float32, N in [1, 8]; no source paths, so bytes are location-free."""
    f4 = np.dtype(np.float32)
    n = sympy.Symbol("N", integer=True, positive=True)
    g = Graph()
    w = g.placeholder("p_w", meta={"shape": (3,), "dtype": f4})
    x = g.placeholder("x", meta={"shape": (n, 3), "dtype": f4})
    # the runtime checks written out (not generated), so the fixture does not follow their message texts
    g.call_function("tpe.check_input", (x, "x", (None, 3), f4, "(N, 3)"),
                    meta={"shape": (n, 3), "dtype": f4, "bind": {0: n}}, name_hint="check_x")
    g.call_function("tpe.assert_range", (n, 1, 8, "x.shape[0]", "N"), meta={"shape": None})
    y = g.call_function("numpy.multiply", (x, w), meta={"shape": (n, 3), "dtype": f4})
    z = g.call_function("numpy.add", (y, np.float32(0.5)), meta={"shape": (n, 3), "dtype": f4})
    g.output([z])
    sig = signature_from_graph(g, {"p_w": (InputKind.PARAMETER, "w")})
    return ExportedProgram(GraphModule(g), sig, example_inputs=((np.ones((2, 3), f4),), {}),
                           dynamic_shapes={"x": {0: tpe.Dim("N", max=8)}}, range_constraints={n: ValueRange(1, 8)},
                           state_dict={"w": np.array([1.0, 2.0, 3.0], f4)})


@pytest.mark.parametrize("fixture", [FIXTURE_V1, FIXTURE_V2, FIXTURE_V3], ids=["v1", "v2", "v3"])
def test_older_fixtures_still_load_and_run(fixture):
    ep = tpe.load(fixture)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(ep.module()(x), x * np.array([1, 2, 3], np.float32) + np.float32(0.5))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.zeros((9, 3), np.float32))
    assert [str(s) for s in ep.range_constraints] == ["N"]


def test_same_program_gives_the_golden_bytes():
    buf = io.BytesIO()
    tpe.save(golden_program(), buf)
    assert buf.getvalue() == FIXTURE_V4.read_bytes()


def test_v2_differs_from_v1_only_in_the_version_member():
    import zipfile

    with zipfile.ZipFile(FIXTURE_V1) as a, zipfile.ZipFile(FIXTURE_V2) as b:
        assert a.namelist() == b.namelist()
        assert (a.read("version"), b.read("version")) == (b"1\n", b"2\n")
        assert all(a.read(n) == b.read(n) for n in a.namelist() if n != "version")


if __name__ == "__main__":  # regenerate the fixture (only for a new format version; see the docstring)
    tpe.save(golden_program(), FIXTURE_V4)
    print(f"wrote {FIXTURE_V4} ({FIXTURE_V4.stat().st_size} bytes)")
