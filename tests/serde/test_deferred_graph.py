"""A program loaded from a forward-cache hit builds its graph when first read (issue 19 goal 3).

The second load of an archive on a machine runs module() from the cached forward, so it needs
no graph: the graph is decoded when something reads it (``ep.graph``, ``graph_module.code``,
an error message naming an input, a save), and is then the graph a first load builds.  What
depends on the arrays is still checked on a hit.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.graph.codegen import GraphModule, GraphOutline
from tensorplay_export.graph.ir import Graph
from tensorplay_export.ops import registry
from tensorplay_export.serde import program_load
from _shared import with_member


class _Net(nn.Module):
    """Enough layers that the forward is over the code cache's minimum size (a smaller one is
    not kept, so every load of it builds its graph)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.layers = nn.ModuleList([nn.Linear(6, 6) for _ in range(5)])
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        h = np.tanh(self.fc(x))
        for layer in self.layers:
            h = np.tanh(layer(h)) + h
        return self.out(h).sum(axis=-1)


def _x(n: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)


@pytest.fixture
def saved(tmp_path, monkeypatch):
    monkeypatch.setenv("TPE_CODE_CACHE", str(tmp_path / "cache"))
    model = _Net().eval()
    ep = tpe.export(model, _x(3), dynamic_shapes={"x": {0: tpe.Dim("b", min=2, max=64)}})
    buf = io.BytesIO()
    tpe.save(ep, buf)
    return model, buf.getvalue()


def _load(data: bytes):
    return tpe.load(io.BytesIO(data))


def _built(ep) -> bool:
    return ep.graph_module._graph is not None


def test_a_second_load_builds_its_graph_only_when_it_is_read(saved):
    model, data = saved
    first = _load(data)
    assert _built(first)  # a miss decodes and checks the graph at load
    second = _load(data)
    assert not _built(second)
    np.testing.assert_array_equal(second.module()(_x(5)), first.module()(_x(5)))
    np.testing.assert_allclose(second.module()(_x(5)), model(_x(5)), rtol=1e-6, atol=1e-6)
    assert not _built(second)  # running needs no graph
    assert [s.arg.name for s in second.graph_signature.input_specs] == [
        n.name for n in first.graph.nodes if n.op == "placeholder"]
    assert str(second.graph) == str(first.graph)
    assert _built(second)
    assert second.graph_module.code == first.graph_module.code
    assert second.module().code == first.module().code
    assert str(second) == str(first)


def test_a_hit_still_checks_each_array_against_its_entry(saved):
    _model, data = saved
    _load(data)  # the document's forward is now cached
    weight = "models/model/weights/0.npy"

    def npy(array: np.ndarray):
        def change(_body: bytes) -> bytes:
            out = io.BytesIO()
            np.save(out, array)
            return out.getvalue()
        return change

    for bad, said in ((np.zeros((6, 5), np.float32), "(6, 5)"), (np.zeros((6, 4), np.float64), "<f8")):
        with pytest.raises(tpe.ArchiveError, match=said.replace("(", r"\(").replace(")", r"\)")):
            _load(with_member(data, weight, npy(bad)))
    assert not _built(_load(data))  # the untouched archive is still a hit


def test_an_error_naming_an_input_reads_the_graph_of_a_hit(saved):
    _model, data = saved
    first, second = _load(data), _load(data)
    messages = []
    for ep in (first, second):
        with pytest.raises(tpe.ConstraintsExceededError) as err:
            ep.module()(np.ones((65, 4), np.float32))
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "65" in messages[0]


def test_a_hit_saves_and_reloads_to_the_same_program(saved):
    _model, data = saved
    _load(data)
    second = _load(data)
    buf = io.BytesIO()
    tpe.save(second, buf)
    again = tpe.load(io.BytesIO(buf.getvalue()))
    np.testing.assert_array_equal(again.module()(_x(7)), second.module()(_x(7)))
    assert str(again.graph) == str(second.graph)


def test_with_the_cache_off_every_load_builds_its_graph(saved, monkeypatch):
    _model, data = saved
    monkeypatch.setenv("TPE_CODE_CACHE", "0")
    assert _built(_load(data)) and _built(_load(data))


def test_a_deferred_module_builds_once_and_answers_its_outline_without_building():
    graph = Graph()
    x = graph.placeholder("x")
    graph.output([graph.call_function("numpy.negative", (x,))])
    calls = []

    def build() -> Graph:
        calls.append(1)
        return graph

    gm = GraphModule.deferred(build, GraphOutline(("x",), 1))
    assert gm.outline() == GraphOutline(("x",), 1) and not calls
    assert gm(np.arange(3.0))[0].tolist() == [-0.0, -1.0, -2.0]
    assert gm.graph is graph and len(calls) == 1
    gm.graph  # noqa: B018 - a second read builds nothing
    assert len(calls) == 1 and gm.outline() == GraphOutline(("x",), 1)


def test_a_deferred_build_that_fails_fails_at_each_read():
    def build() -> Graph:
        raise tpe.ArchiveError("exported_program: the document changed")

    gm = GraphModule.deferred(build, GraphOutline((), 0))
    for _ in range(2):
        with pytest.raises(tpe.ArchiveError, match="document changed"):
            gm.graph  # noqa: B018


class _Composites(nn.Module):
    """nn.functional's composite ops, which nn registers (a fresh process has not imported nn
    when it looks the forward up), over the code cache's minimum size."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = nn.functional.layer_norm(nn.functional.gelu(layer(x)) + x, (8,))
        return nn.functional.softmax(x, dim=-1)


_FRESH = """
import sys
import numpy as np
import tensorplay_export as tpe
ep = tpe.load_pt2(sys.argv[1], load_weights_from_disk=True).exported_programs['model']
built = ep.graph_module._graph is not None
out = ep.module()(np.load(sys.argv[2]))
np.save(sys.argv[3], out)
print('built' if built else 'deferred')
"""


def test_a_fresh_process_loads_an_archive_loaded_before_from_the_cache(tmp_path):
    model = _Composites().eval()
    ep = tpe.export(model, np.ones((3, 8), np.float32), dynamic_shapes={"x": {0: tpe.Dim("b", min=2, max=64)}})
    path = tmp_path / "net.pt2"
    tpe.save(ep, path)
    x = np.random.default_rng(2).standard_normal((6, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, TPE_CODE_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    said = []
    for k in range(2):
        run = subprocess.run([sys.executable, "-c", _FRESH, str(path), str(tmp_path / "x.npy"),
                              str(tmp_path / f"out{k}.npy")], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        said.append(run.stdout.split()[-1])
        np.testing.assert_allclose(np.load(tmp_path / f"out{k}.npy"), model(x), rtol=1e-5, atol=1e-6)
    assert said == ["built", "deferred"]


def test_threads_reading_a_deferred_graph_first_share_one_build():
    calls = []

    def build() -> Graph:
        calls.append(1)
        time.sleep(0.05)  # wide enough for every thread to arrive while the first builds
        graph = Graph()
        x = graph.placeholder("x")
        graph.output([graph.call_function("numpy.negative", (x,))])
        return graph

    gm = GraphModule.deferred(build, GraphOutline(("x",), 1))
    seen, barrier = [], threading.Barrier(8)

    def read() -> None:
        barrier.wait()
        seen.append(gm.graph)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(seen) == 8 and all(g is seen[0] for g in seen)


def test_a_module_keeps_the_graph_it_was_made_from_when_the_program_gets_another():
    ep = tpe.export(_Net().eval(), _x(3), dynamic_shapes={"x": {0: tpe.Dim("b", min=2, max=64)}})
    other = tpe.export(lambda x: x + 1, np.ones((3, 4), np.float32))
    m = ep.module()
    n_nodes = len(ep.graph.nodes)
    ep.graph_module.graph = other.graph_module.graph
    assert len(m.graph.nodes) == n_nodes  # the view of the graph its forward runs
    assert sum(n.op == "get_attr" for n in m.graph.nodes) == len(ep.state_dict)


def test_an_op_whose_signature_changed_since_the_entry_was_written_is_a_miss(saved, monkeypatch):
    _model, data = saved
    _load(data)  # the entry is written with the registry as shipped
    registry.get_op("numpy.tanh")  # the registry is loaded
    tanh = registry._OPS["numpy.tanh"]
    # an op registered from outside the package, at another version: its code is not the package's
    monkeypatch.setitem(registry._OPS, "numpy.tanh", replace(tanh, impl=lambda x, *, mode: np.tanh(x)))
    monkeypatch.setattr(program_load, "_SIGNATURES", {})  # as in a fresh process
    monkeypatch.setattr(program_load, "_CALL_FORMS", {})
    with pytest.raises(tpe.ArchiveError, match="do not fit numpy.tanh"):
        _load(data)  # a miss: the node checks run and refuse it
