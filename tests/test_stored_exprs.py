"""Stored size expressions (issue 19, goals 3-4): a loaded program keeps the archive's checked
operator trees, runs without building any sympy object, and turns into sympy, once and
exactly, when something reads it as sympy."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.errors import ArchiveError
from tensorplay_export.graph.ir import iter_exprs, map_arg
from tensorplay_export.graph.stored import SizeExpr, holds_stored
from tensorplay_export.serde.exprs import decode_expr, decode_stored, encode_expr

ROOT = Path(__file__).resolve().parent.parent


class _Net(nn.Module):
    """A symbolic reshape (2*b rows), a derived dim (y has b + 1 rows), a floor size output."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4, rng=np.random.default_rng(0))

    def forward(self, x, y):
        h = self.fc(x).reshape(x.shape[0] * 2, -1)
        return h[: y.shape[0]] + y[:, :2].sum(), x.shape[0] // 2


def _export():
    b = tpe.Dim("b", min=2, max=64)
    x, y = np.ones((6, 8), np.float32), np.ones((7, 3), np.float32)
    return tpe.export(_Net(), x, y, dynamic_shapes={"x": {0: b}, "y": {0: b + 1}})


def _inputs(n: int):
    rng = np.random.default_rng(n)
    return rng.standard_normal((n, 8)).astype(np.float32), rng.standard_normal((n + 1, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    ep = _export()
    path = tmp_path_factory.mktemp("stored") / "net.pt2"
    tpe.save(ep, path)
    return ep, path


def _stored_values(graph):
    for n in graph.nodes:
        for v in (n.args, n.kwargs, *n.meta.values()):
            yield from _walk(v)


def _walk(v):
    if type(v) is SizeExpr:
        yield v
    elif isinstance(v, (list, tuple)):
        for a in v:
            yield from _walk(a)
    elif isinstance(v, dict):
        for k, a in v.items():
            yield from _walk(k)
            yield from _walk(a)
    elif isinstance(v, slice):
        for a in (v.start, v.stop, v.step):
            yield from _walk(a)


_FRESH = r"""
import json, sys
import numpy as np
import tensorplay_export as tpe
from tensorplay_export.graph import stored
from tensorplay_export.serde import exprs

def refuse(*args, **kwargs):
    raise AssertionError("a sympy expression was built on the load-and-run path")

# every way a stored tree becomes sympy
stored._build = stored.build_sympy = exprs.build_sympy = exprs.decode_expr = refuse
stored.SizeExpr.to_sympy = refuse
path, how = sys.argv[1], sys.argv[2]
ep = tpe.load(path) if how == "load" else tpe.load_pt2(path).exported_programs["model"]
out = {}
for n in (5, 17):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = rng.standard_normal((n + 1, 3)).astype(np.float32)
    arr, size = ep.module()(x, y)
    out[n] = [np.asarray(arr).tolist(), int(size)]
try:
    ep.module()(np.ones((5, 8), np.float32), np.ones((5, 3), np.float32))  # y must have b + 1 rows
    out["checked"] = False
except Exception as err:
    out["checked"] = type(err).__name__
print(json.dumps(out))
"""


@pytest.mark.parametrize("how", ["load", "load_pt2"])
def test_load_and_run_builds_no_sympy_expression(saved, how):
    """A fresh process loads and runs the program with every tree -> sympy path disabled: the eager
    answer at sizes other than the example's, and the derived dim's check still refuses."""
    _, path = saved
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _FRESH, str(path), how], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    model = _Net()
    for n in (5, 17):
        want_arr, want_size = model(*_inputs(n))
        arr, size = got[str(n)]
        assert np.array_equal(np.asarray(arr, np.float32), want_arr) and size == want_size == n // 2
    assert got["checked"] == "ConstraintsExceededError"


def test_loaded_graph_is_stored_until_read(saved):
    ep, path = saved
    loaded = tpe.load(path)
    raw = loaded.graph_module._graph
    assert holds_stored(raw) and list(_stored_values(raw))
    assert loaded.code == ep.code  # one printer: the export's source and the loaded one's agree
    # reading the graph turns it into sympy, in place and once
    graph = loaded.graph
    assert graph is raw and not holds_stored(graph) and not list(_stored_values(graph))
    assert str(graph) == str(ep.graph)
    for a, b in zip(graph.nodes, ep.graph.nodes):
        def named(v):
            return map_arg(v, lambda n: ("node", n.name))
        assert named(a.args) == named(b.args) and named(a.kwargs) == named(b.kwargs)
        assert a.meta.get("shape") == b.meta.get("shape") and a.meta.get("bind") == b.meta.get("bind")
        for e in iter_exprs((a.args, a.kwargs, a.meta.get("shape"))):
            assert isinstance(e, sympy.Basic)
    assert loaded.graph is graph and loaded.code == ep.code


def test_range_constraints_built_on_first_access(saved):
    ep, path = saved
    loaded = tpe.load(path)
    assert all(type(k) is SizeExpr for k in loaded._range_constraints)
    rc = loaded.range_constraints
    assert rc == ep.range_constraints
    assert all(isinstance(k, sympy.Symbol) and k.is_integer for k in rc)
    assert loaded.range_constraints is rc


def test_module_graph_and_signature_read_as_sympy(saved):
    ep, path = saved
    loaded = tpe.load(path)
    m = loaded.module()
    assert holds_stored(m._graph)
    assert not list(_stored_values(m.graph))
    assert [(s.kind, s.target, s.arg.name) for s in loaded.graph_signature.input_specs] == \
        [(s.kind, s.target, s.arg.name) for s in ep.graph_signature.input_specs]
    x, y = _inputs(9)
    want = _Net()(x, y)
    got = m(x, y)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def _archive_bytes(ep, tmp_path, name):
    path = tmp_path / name
    tpe.save(ep, path)
    return path.read_bytes()


def test_save_of_a_loaded_program_round_trips(saved, tmp_path):
    ep, path = saved
    first = _archive_bytes(ep, tmp_path, "a.pt2")
    again = _archive_bytes(ep, tmp_path, "b.pt2")
    loaded = tpe.load(path)
    resaved = _archive_bytes(loaded, tmp_path, "c.pt2")  # read through the stored graph
    assert first == again  # the writer is deterministic ...
    assert resaved == first  # ... and the loaded program writes the same bytes
    back = tpe.load(tmp_path / "c.pt2")
    assert back.code == ep.code and back.range_constraints == ep.range_constraints
    x, y = _inputs(12)
    want = _Net()(x, y)
    got = back.module()(x, y)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def test_passes_on_a_loaded_program(saved):
    ep, path = saved
    loaded = tpe.load(path)
    dec = loaded.run_decompositions()
    x, y = _inputs(7)
    want = _Net()(x, y)
    got = dec.module()(x, y)
    assert np.allclose(got[0], want[0], rtol=1e-5, atol=1e-6) and got[1] == want[1]
    un = tpe.unflatten(tpe.load(path))
    got = un(x, y)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


S = sympy.Symbol("s", integer=True, positive=True)
B = sympy.Symbol("b", integer=True, positive=True)


@pytest.mark.parametrize("expr", [
    S, 2 * S - 3, 3 - S, sympy.floor((S + 1) / 2), sympy.Mod(S, 4) + B, sympy.Max(S, B, 8), sympy.Min(S, 512),
    sympy.ceiling(S / 4), sympy.Piecewise((S, S < 8), (0, True)), sympy.And(S <= 512, sympy.Eq(B, 2 * S)),
    sympy.Rational(1, 2) * S, S ** 2, sympy.Integer(7),
])
def test_stored_expression_is_the_sympy_one(expr):
    tree = json.loads(json.dumps(encode_expr(expr)))
    stored = decode_stored(tree)
    assert type(stored) is SizeExpr and hash(stored) == hash(decode_stored(tree)) and stored == decode_stored(tree)
    back = stored.to_sympy()
    assert back == expr == decode_expr(tree) and sympy.srepr(back) == sympy.srepr(expr)
    assert stored.free_symbols == {("Symbol", s.name, (("integer", True), ("positive", True)))
                                   for s in getattr(expr, "free_symbols", ())}


@pytest.mark.parametrize("tree, words", [
    (["Add", 1], "arguments"),
    (["Symbol", "x", {"positive": True, "negative": True}], "inconsistent"),
    (["Symbol", "x", {"integer": True, "rational": False}], "inconsistent"),
    (["Pow", ["Symbol", "x", {}], 1000], "exponent"),
    (["Pow", ["Pow", ["Pow", ["Symbol", "x", {}], 64], 64], 64], "bits"),
    (["Mod", ["Symbol", "x", {}], 0], "modulo by zero"),
    (["Mod", ["true"], 2], "must be a number"),
])
def test_stored_trees_refused_as_the_sympy_decoder_refuses(tree, words):
    for decode in (decode_stored, decode_expr):
        with pytest.raises(ArchiveError, match=words):
            decode(tree, "models/m/program.json")


def test_consistent_assumptions_need_no_sympy_check():
    """Assumption sets capture writes are decided by a witness, the rest by sympy itself."""
    from tensorplay_export.serde.exprs import _consistent

    for good in ({"integer": True, "positive": True}, {"integer": True, "nonnegative": True}, {},
                 {"integer": False}, {"even": True, "zero": True}, {"real": False}):
        assert _consistent(good), good
        sympy.Symbol("t", **good)  # and sympy agrees
    for bad in ({"zero": True, "positive": True}, {"even": True, "odd": True}, {"integer": True, "rational": False}):
        assert not _consistent(bad), bad
