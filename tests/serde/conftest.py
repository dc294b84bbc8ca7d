"""Programs the serde tests save and load: one exported from a real module, one built by hand."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.graph.codegen import GraphModule
from tensorplay_export.graph.ir import Graph
from tensorplay_export.program.exported import ExportedProgram, signature_from_graph
from tensorplay_export.records import ValueRange
from tensorplay_export.program.signature import InputKind

TABLE = np.linspace(0.0, 1.0, 64 * 8, dtype=np.float32).reshape(64, 8)


class Small(nn.Module):
    """x: (N, S, 8) -> (N, S, 8); a parameter, both buffer kinds and a global table sliced by S."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(0)
        self.weight = nn.Parameter(rng.standard_normal((8, 8)).astype(np.float32))
        self.register_buffer("shift", rng.standard_normal(8).astype(np.float32))
        self.register_buffer("scale", np.float32(2.0) * np.ones(8, np.float32), persistent=False)

    def forward(self, x):
        s = x.shape[1]
        return (x @ self.weight + self.shift) * self.scale + TABLE[:s]


def small_inputs(n: int = 2, s: int = 5) -> np.ndarray:
    return np.arange(n * s * 8, dtype=np.float32).reshape(n, s, 8) / 100


@pytest.fixture(scope="session")
def small_program():
    N, S = tpe.Dim("N", max=16), tpe.Dim("S", max=64)
    return tpe.export(Small(), small_inputs(), dynamic_shapes={"x": {0: N, 1: S}})


def _hand_graph() -> tuple[Graph, sympy.Symbol]:
    """A graph whose args hold the value kinds export rarely produces."""
    lam = sympy.Symbol("lambda", integer=True, positive=True)
    g = Graph()
    big = g.placeholder("c_big", meta={"shape": (16384,), "dtype": np.dtype(np.float64)})
    x = g.placeholder("x", meta={"shape": (lam,), "dtype": np.dtype(np.float64), "bind": {0: lam}})
    y = g.call_function("numpy.multiply", (x, np.float64(2.0)), meta={"shape": (lam,), "dtype": np.dtype("f8")})
    z = g.call_function("numpy.add", (y, float("inf")), meta={"shape": (lam,), "dtype": np.dtype("f8")})
    z2 = g.call_function("numpy.minimum", (z, 1e30), meta={"shape": (lam,), "dtype": np.dtype("f8")})
    w = g.call_function("numpy.ndarray.astype", (z2, np.dtype("float32")), meta={"shape": (lam,), "dtype": np.dtype("f4")})
    v = g.call_function("tpe.getitem", (w, (slice(None, lam - 1, None), Ellipsis)),
                        meta={"shape": (lam - 1,), "dtype": np.dtype("f4"), "module_path": "a.b",
                              "module_stack": (("a", 0), ("a.b", 1))})
    const = np.arange(16384, dtype=np.float64)  # big: lifted to constants/ as a graph constant
    u = g.call_function("numpy.add", (big, const), meta={"shape": (16384,), "dtype": np.dtype("f8")})
    k = g.call_function("numpy.sum", (u,), {"axis": 0, "dtype": np.float64, "keepdims": False},
                        meta={"shape": (), "dtype": np.dtype("f8")})
    g.output([v, k])
    return g, lam


@pytest.fixture
def hand_program():
    g, lam = _hand_graph()
    sig = signature_from_graph(g, {"c_big": (InputKind.CONSTANT_TENSOR, "big")})
    return ExportedProgram(GraphModule(g), sig, example_inputs={"args": (np.ones(3),), "kwargs": {}},
                           range_constraints={lam: ValueRange(2, 100)},
                           constants={"big": np.ones(16384)})


def archive_bytes(ep, **kw) -> bytes:
    buf = io.BytesIO()
    tpe.save(ep, buf, **kw)
    return buf.getvalue()


def members_of(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def repack(members: dict[str, bytes] | list[tuple[str, bytes]], compress: int = zipfile.ZIP_STORED) -> bytes:
    """A plain zip of ``members`` (duplicates allowed when given as a list) for hostile tests."""
    buf = io.BytesIO()
    items = members.items() if isinstance(members, dict) else members
    with zipfile.ZipFile(buf, "w", compression=compress) as zf:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # duplicate names on purpose
            for name, data in items:
                zf.writestr(name, data)
    return buf.getvalue()
