"""The per-machine cache of a loaded program's generated forward (serde/forward_cache.py).

A second load of the same archive takes module()'s forward from the cache instead of
generating it; the module it gives computes what the first did; an entry that is damaged,
names an op the registry does not have, or belongs to other bytes is a miss.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.graph import codecache, codegen
from tensorplay_export.graph.codegen import PythonCode
from tensorplay_export.serde import forward_cache


class _Stack(nn.Module):
    """Enough layers that the forward is over the code cache's minimum size."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(6)])

    def forward(self, x):
        for layer in self.layers:
            x = np.tanh(layer(x)) + x
        return x.reshape(x.shape[0], 2, 4).sum(axis=1)


@pytest.fixture
def archive(tmp_path, monkeypatch):
    monkeypatch.setenv("TPE_CODE_CACHE", str(tmp_path / "cache"))
    model = _Stack().eval()
    ep = tpe.export(model, np.ones((3, 8), np.float32), dynamic_shapes={"x": {0: tpe.Dim("b", min=2, max=64)}})
    path = tmp_path / "stack.pt2"
    tpe.save(ep, path)
    return model, path, tmp_path / "cache"


@pytest.fixture
def emits(monkeypatch):
    """Count the forwards codegen generates."""
    calls = []
    real = codegen._Emitter.emit

    def counting(self, fn_name):
        calls.append(fn_name)
        return real(self, fn_name)

    monkeypatch.setattr(codegen._Emitter, "emit", counting)
    return calls


def _load(path):
    return tpe.load_pt2(path, load_weights_from_disk=True).exported_programs["model"]


def _forward_entries(folder):
    return sorted(p for p in folder.iterdir() if p.name.endswith(".forward"))


def test_a_second_load_takes_the_forward_from_the_cache(archive, emits):
    model, path, folder = archive
    first = _load(path)
    assert len(emits) == 1 and len(_forward_entries(folder)) == 1
    second = _load(path)
    assert len(emits) == 1  # the second load generated nothing
    assert second.module().code == first.module().code
    x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    np.testing.assert_array_equal(second.module()(x), first.module()(x))
    np.testing.assert_allclose(second.module()(x), model(x), rtol=1e-6, atol=1e-6)
    # a hit still enforces the contract: its first statements are the input checks
    with pytest.raises(tpe.ConstraintsExceededError):
        second.module()(np.ones((65, 8), np.float32))
    # the graph is the program's own, generated on request as before
    assert "def forward" in second.graph_module.code


def test_a_damaged_entry_is_a_miss_and_is_written_again(archive, emits):
    _model, path, folder = archive
    _load(path)
    entry = _forward_entries(folder)[0]
    data = bytearray(entry.read_bytes())
    data[-3] ^= 0x20  # inside the JSON payload: the digest no longer matches
    entry.write_bytes(bytes(data))
    _load(path)
    assert len(emits) == 2
    assert entry.read_bytes() != bytes(data)  # rewritten whole
    _load(path)
    assert len(emits) == 2


def test_an_entry_naming_an_unknown_op_is_a_miss(archive, emits):
    _model, path, folder = archive
    _load(path)
    entry = _forward_entries(folder)[0]
    key = entry.name[: -len(".forward")]
    payload = bytes(codecache.read_entry(str(entry), forward_cache._FORMAT, key))
    doc = json.loads(payload)
    name = next(n for n, r in doc["globals"].items() if r[0] == "op")
    doc["globals"][name] = ["op", "numpy.no_such_op"]
    codecache.write_entry(str(folder), str(entry), forward_cache._FORMAT, key, json.dumps(doc).encode(), ".forward")
    ep = _load(path)
    assert len(emits) == 2
    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(ep.module()(x), _load(path).module()(x))


def test_other_bytes_are_another_key(archive, emits, tmp_path):
    model, path, folder = archive
    _load(path)
    ep = tpe.export(model, np.ones((3, 8), np.float32), dynamic_shapes={"x": {0: tpe.Dim("b", min=2, max=32)}})
    other = tmp_path / "other.pt2"
    tpe.save(ep, other)
    del emits[:]  # export and save generate their own forwards
    narrower = _load(other)
    assert len(emits) == 1 and len(_forward_entries(folder)) == 2
    with pytest.raises(tpe.ConstraintsExceededError):
        narrower.module()(np.ones((40, 8), np.float32))


def test_the_cache_turned_off_writes_nothing(archive, emits, monkeypatch):
    _model, path, folder = archive
    monkeypatch.setenv("TPE_CODE_CACHE", "off")
    _load(path)
    _load(path)
    assert len(emits) == 2 and not _forward_entries(folder)


def _code(globals_, recipes, lines=80):
    src = "def forward(self, x):\n" + "".join(f"    x = x + {i}\n" for i in range(lines)) + "    return [x]\n"
    assert len(src) >= codecache.MIN_SOURCE_CHARS
    return PythonCode(src, globals_, "forward", recipes)


def test_a_forward_with_a_global_no_recipe_makes_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("TPE_CODE_CACHE", str(tmp_path / "cache"))
    doc = b'{"a program": 1}'
    slot = forward_cache.forward_slot(doc)
    # an array constant: only this process holds it
    forward_cache.store_forward(slot, _code({"np": np, "c": np.zeros(3)}, None))
    # a recipe that makes another object than the global it stands for
    forward_cache.store_forward(slot, _code({"np": np, "d": np.dtype("<i8")}, {"np": ("np",), "d": ("dtype", "<i4")}))
    # a global without a recipe entry
    forward_cache.store_forward(slot, _code({"np": np, "e": np.dtype("<i8")}, {"np": ("np",)}))
    assert forward_cache.cached_forward(slot) is None
    folder = tmp_path / "cache"
    assert not folder.exists() or not _forward_entries(folder)
    forward_cache.store_forward(slot, _code({"np": np, "d": np.dtype("<i8")}, {"np": ("np",), "d": ("dtype", "<i8")}))
    code, fn = forward_cache.cached_forward(slot)
    assert code.globals["d"] == np.dtype("<i8") and fn(None, 1) == [1 + sum(range(80))]
    assert forward_cache.cached_forward(forward_cache.forward_slot(doc + b" ")) is None
