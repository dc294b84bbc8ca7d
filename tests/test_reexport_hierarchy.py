"""A re-exported module keeps the first program's module hierarchy: ``unflatten`` of
``export(ep.module(), ...)`` has the same submodules, each running as the eager one does
(program/retrace.py logs the program's module calls in the caller's capture)."""
from __future__ import annotations

import io

import numpy as np

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

RNG = np.random.default_rng(11)
SPEC = {"x": {0: Dim("b", max=64)}}


class Block(nn.Module):
    def __init__(self, seed):
        super().__init__()
        self.fc = nn.Linear(8, 8, rng=seed)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(nn.functional.gelu(self.fc(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8, rng=0)
        self.blocks = nn.ModuleList([Block(1), Block(2)])
        self.out = nn.Linear(8, 2, rng=3)

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h)
        return self.out(h)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def fqns(ep):
    return [e.fqn for e in ep.module_call_graph]


def test_reexport_lists_the_same_module_calls():
    net = Net().eval()
    ep = tpe.export(net, arr(3, 4), dynamic_shapes=SPEC)
    again = tpe.export(ep.module(), arr(3, 4), dynamic_shapes=SPEC)
    assert fqns(again) == fqns(ep)
    assert "blocks.1.fc" in fqns(again)


def test_unflatten_of_a_reexport_runs_each_submodule_as_eager():
    net = Net().eval()
    ep = tpe.export(net, arr(3, 4), dynamic_shapes=SPEC)
    again = tpe.export(ep.module(), arr(3, 4), dynamic_shapes=SPEC)
    u = tpe.unflatten(again)
    for n in (1, 5, 17):
        x, h = arr(n, 4), arr(n, 8)
        np.testing.assert_allclose(u(x), net(x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(u.inp(x), net.inp(x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(u.blocks[1](h), net.blocks[1](h), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(u.blocks[0].norm(h), net.blocks[0].norm(h), rtol=1e-5, atol=1e-6)


def test_hierarchy_survives_a_second_reexport_and_an_archive():
    net = Net().eval()
    ep = tpe.export(net, arr(3, 4), dynamic_shapes=SPEC)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    twice = tpe.export(tpe.export(loaded.module(), arr(3, 4), dynamic_shapes=SPEC).module(),
                       arr(3, 4), dynamic_shapes=SPEC)
    assert fqns(twice) == fqns(ep)
    x = arr(9, 4)
    np.testing.assert_allclose(tpe.unflatten(twice).blocks[0](net.inp(x)), net.blocks[0](net.inp(x)),
                               rtol=1e-5, atol=1e-6)


def test_a_program_called_as_a_plain_callable_adds_no_submodules():
    """An exported module held as a plain attribute (not a submodule) is no module of the caller's
    tree: its nodes belong to the calling module, and no call of it is invented."""
    ep = tpe.export(Net().eval(), arr(3, 4), dynamic_shapes=SPEC)

    class Outer(nn.Module):
        def __init__(self, m):
            super().__init__()
            object.__setattr__(self, "enc", m)
            self.head = nn.Linear(2, 3, rng=4)

        def forward(self, x):
            return self.head(self.enc(x))

    outer = Outer(ep.module())
    ep3 = tpe.export(outer, arr(3, 4), dynamic_shapes=SPEC)
    assert fqns(ep3) == ["", "head"]
    x = arr(7, 4)
    np.testing.assert_allclose(tpe.unflatten(ep3)(x), outer(x), rtol=1e-5, atol=1e-6)
