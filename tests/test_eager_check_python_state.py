"""Python state no program carries (capture/python_state.py, program/eager_check.py): a forward
that changes a container the caller passed, or a plain module attribute its later outputs depend
on, is refused at export, naming it; stashes and caches the outputs do not depend on pass, and
the user's module and containers are never changed by an export."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.errors import EagerMismatchError

SPEC = {"x": {0: Dim("n", max=8)}}


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = 0

    def forward(self, x):
        self.seen += x.shape[0]
        return x * self.seen


class Decay(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 1.0

    def forward(self, x):
        self.scale *= 0.5
        return x * self.scale


class Running(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = np.zeros(3)

    def forward(self, x):
        self.state = self.state + x.sum(0)
        return self.state * 1.0


@pytest.mark.parametrize("cls, attr", [(Counter, "seen"), (Decay, "scale"), (Running, "state")])
def test_state_the_outputs_depend_on_is_refused_by_name(cls, attr):
    m = cls()
    before = vars(m)[attr]
    with pytest.raises(EagerMismatchError, match=rf"module attribute {attr}.*Python state of its module.*second call"):
        tpe.export(m, np.ones((2, 3)), dynamic_shapes=SPEC)
    assert vars(m)[attr] is before  # the user's module is as it was


class Stash(nn.Module):
    def __init__(self):
        super().__init__()
        self.hist = []
        self.last = None

    def forward(self, x):
        y = x * 2
        self.hist.append(y.sum())
        self.last = y
        return y + 1


def test_a_stash_the_outputs_do_not_depend_on_passes_and_leaks_nothing():
    m = Stash()
    ep = tpe.export(m, np.ones((2, 3)), dynamic_shapes=SPEC)
    assert m.hist == [] and m.last is None
    for n in (1, 4, 8):
        x = np.arange(n * 3.0).reshape(n, 3)
        np.testing.assert_array_equal(ep.module()(x), x * 2 + 1)


def appends(x, cache):
    cache.append(x.sum(0))
    return np.stack(cache).sum(0)


def adds_key(x, cache):
    cache["n"] = cache["base"] + x.sum(0)
    return cache["n"] * 1.0


def rebinds(x, cache):
    cache["base"] = cache["base"] + x.sum(0)
    return cache["base"] * 1.0


@pytest.mark.parametrize("model, make", [(appends, lambda: [np.zeros(3)]), (adds_key, lambda: {"base": np.zeros(3)}),
                                         (rebinds, lambda: {"base": np.zeros(3)})],
                         ids=["append", "new key", "rebound entry"])
def test_a_change_to_an_input_container_is_refused(model, make):
    cache = make()
    with pytest.raises(EagerMismatchError, match=r"args\[1\] after the call.*changes a container it was given"):
        tpe.export(model, np.ones((2, 3)), cache, dynamic_shapes={"x": {0: Dim("n", max=8)}, "cache": None})
    assert len(cache) == 1  # the caller's container is as it was


@dataclass
class KV:
    keys: list


tpe.register_dataclass(KV)


def test_a_registered_dataclass_appended_to_is_refused():
    def model(x, kv):
        kv.keys.append(x * 1)
        return np.concatenate(kv.keys)

    kv = KV([np.zeros((1, 3))])
    with pytest.raises(EagerMismatchError, match="changes a container it was given"):
        tpe.export(model, np.ones((2, 3)), kv, dynamic_shapes={"x": {0: Dim("n", max=8)}, "kv": None})
    assert len(kv.keys) == 1


def test_reading_an_input_container_is_fine():
    def model(x, cache):
        return x + cache["base"]

    ep = tpe.export(model, np.ones((2, 3)), {"base": np.ones(3)}, dynamic_shapes={"x": {0: Dim("n")}, "cache": None})
    np.testing.assert_array_equal(ep.module()(np.ones((5, 3)), {"base": np.ones(3)}), np.full((5, 3), 2.0))


# -- shared containers keep their aliasing (the run uses the user's own, then restores them) -------
SHARED_G = []


class _Producer(nn.Module):
    def __init__(self, scratch):
        super().__init__()
        self.scratch = scratch

    def forward(self, x):
        self.scratch.append(x.shape[0])
        return x


class _Consumer(nn.Module):
    def __init__(self, scratch):
        super().__init__()
        self.scratch = scratch

    def forward(self, x):
        n = len(self.scratch)
        self.scratch.clear()
        return x * n


class _Top(nn.Module):
    def __init__(self):
        super().__init__()
        scratch = []
        self.a, self.b = _Producer(scratch), _Consumer(scratch)

    def forward(self, x):
        return self.b(self.a(x))


class _Global(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = SHARED_G

    def forward(self, x):
        SHARED_G.append(1)
        out = x * len(self.q)
        SHARED_G.clear()
        return out


@pytest.mark.parametrize("cls", [_Top, _Global], ids=["two submodules", "a global"])
def test_a_container_shared_with_others_keeps_its_aliasing(cls):
    m = cls()
    ep = tpe.export(m, np.ones((2, 3)), dynamic_shapes=SPEC)
    for n in (1, 3, 8):
        x = np.ones((n, 3))
        np.testing.assert_array_equal(ep.module()(x), cls()(x))
    assert SHARED_G == []


def test_the_user_list_holds_what_it_held_after_an_export_failed_or_not():
    m = Stash()
    m.hist.append(7)
    tpe.export(m, np.ones((2, 3)), dynamic_shapes=SPEC)
    assert m.hist == [7]

    class Bad(Stash):
        def forward(self, x):
            self.hist.append(x)
            return np.stack(self.hist[1:]).sum(0) + x.shape[0] ** 2.5j  # fails in capture

    b = Bad()
    b.hist.append(1)
    with pytest.raises(Exception):
        tpe.export(b, np.ones((2, 3)), dynamic_shapes=SPEC)
    assert b.hist == [1]


def test_an_ordered_dict_or_deque_input_changed_is_refused():
    from collections import OrderedDict, deque

    def adds(x, cache):
        cache["k"] = x.sum(0)
        return x * 2

    def appends(x, q):
        q.append(x.shape[0])
        return x * 2

    for model, make in ((adds, OrderedDict), (appends, deque)):
        box = make()
        with pytest.raises(EagerMismatchError, match="changes a container it was given"):
            tpe.export(model, np.ones((2, 3)), box, dynamic_shapes={"x": {0: Dim("n", max=8)}, "cache" if model is adds else "q": None})
        assert len(box) == 0
