"""Random draws in training exports: nn.Dropout's generator is module state, its draws are graph ops.

The program's stream is a function of the generator-state buffer: equal (bitwise) to the
eager module's stream from the same state, advanced by a BUFFER_MUTATION each call,
saved in the archive and restarted from there by a loaded program.
"""
import copy
import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.nn import functional as F
from tensorplay_export.ops.random import generator_from_state
from tensorplay_export.errors import EagerMismatchError
from tensorplay_export.program.eager_check import check_against_eager

B = {"x": {0: Dim("b", max=64)}}
SIZES = (3, 1, 8, 17)


def x_of(b, seed=0):
    return np.random.default_rng(100 + b + seed).standard_normal((b, 6)).astype(np.float32)


class Net(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.lin = nn.Linear(6, 6, rng=0)
        self.drop = nn.Dropout(p, rng=3)

    def forward(self, x):
        return self.drop(np.tanh(self.lin(x)))


def state(module, fqn="drop.generator_state"):
    return dict(module.named_buffers())[fqn]


def random_nodes(ep):
    return [n for n in ep.graph.nodes if n.op == "call_function" and str(n.target).startswith("tpe.random.")]


def assert_same_stream(program, eager, sizes=SIZES, fqns=("drop.generator_state",)):
    """Call both on the same inputs; outputs bitwise equal, generator states equal after every call."""
    seen = []
    for i, b in enumerate(sizes):
        x = x_of(b, i)
        got, want = program(x), eager(x)
        assert got.dtype == want.dtype and got.shape == want.shape == (b, 6)
        np.testing.assert_array_equal(got, want)
        for fqn in fqns:
            np.testing.assert_array_equal(state(program, fqn), state(eager, fqn))
        seen.append(got)
    return seen


@pytest.fixture()
def net():
    return Net()


@pytest.fixture()
def ep(net):
    return tpe.export_for_training(net, x_of(4), dynamic_shapes=B)


def test_training_dropout_exports_as_a_random_op_with_a_state_write_back(net, ep):
    assert [n.target for n in random_nodes(ep)] == ["tpe.random.uniform"]
    outs = [(s.kind.name, s.target) for s in ep.graph_signature.output_specs]
    assert outs == [("BUFFER_MUTATION", "drop.generator_state"), ("USER_OUTPUT", None)]
    ins = {s.target: (s.kind.name, s.persistent) for s in ep.graph_signature.input_specs if s.target}
    assert ins["drop.generator_state"] == ("BUFFER", False)
    assert "drop.generator_state" not in net.state_dict()      # dropout has no saved state, as in torch


def test_program_stream_equals_eager_from_the_same_state_at_every_size(net, ep):
    before = net.drop.generator_state.copy()
    eager = copy.deepcopy(net)                                # same initial generator state
    outs = assert_same_stream(ep.module(), eager, SIZES + SIZES)
    np.testing.assert_array_equal(net.drop.generator_state, before)   # export advanced nothing of the user's
    for y in outs:                                             # real masks: some kept (scaled by 2), some dropped
        if y.size >= 16:
            assert (y == 0).any() and (y != 0).any()


def test_state_advances_every_call(ep):
    mod = ep.module()
    x = x_of(8)
    states, outs = [state(mod).copy()], []
    for _ in range(4):
        outs.append(mod(x))
        states.append(state(mod).copy())
    assert len({s.tobytes() for s in states}) == len(states)
    assert not np.array_equal(outs[0], outs[1])                # same input, a new mask
    # the masks are those of numpy's generator from the initial state, drawn in turn
    g = generator_from_state(states[0])
    kept = np.tanh(x @ ep.state_dict["lin.weight"].T + ep.state_dict["lin.bias"]) * 2.0
    for y in outs:
        mask = g.random((8, 6)) >= 0.5
        np.testing.assert_array_equal(y, np.where(mask, kept, 0.0).astype(np.float32))


def test_seeded_dropout_is_default_rngs_stream():
    d = nn.Dropout(0.25, rng=5)
    x = np.ones((4, 5), np.float32)
    ref = np.random.default_rng(5)
    for _ in range(3):
        np.testing.assert_array_equal(d(x), np.where(ref.random((4, 5)) >= 0.25, x / 0.75, 0.0).astype(np.float32))
    d.manual_seed(5)
    np.testing.assert_array_equal(d(x), np.where(np.random.default_rng(5).random((4, 5)) >= 0.25,
                                                 x / 0.75, 0.0).astype(np.float32))
    nn.init.manual_seed(9)
    a = nn.Dropout(0.5)
    nn.init.manual_seed(9)
    np.testing.assert_array_equal(a.generator_state, nn.Dropout(0.5).generator_state)  # reproducible from the seed


def test_eager_safety_net_draws_from_a_copy_of_the_state(net, ep):
    before = net.drop.generator_state.copy()
    check_against_eager(ep, net, (x_of(4),), {})               # same state on both sides: passes
    np.testing.assert_array_equal(net.drop.generator_state, before)
    net.drop.manual_seed(12345)                                # eager now draws other masks than the program
    with pytest.raises(EagerMismatchError, match="differ"):
        check_against_eager(ep, net, (x_of(4),), {})


def test_save_stores_the_state_and_a_loaded_program_restarts_from_it(net, ep):
    initial = net.drop.generator_state.copy()
    mod = ep.module()
    for b in SIZES:                                           # the running module advances; the program does not
        mod(x_of(b))
    assert not np.array_equal(state(mod), initial)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    for _ in range(2):                                        # each load restarts from the saved state
        loaded = tpe.load(io.BytesIO(buf.getvalue()))
        np.testing.assert_array_equal(state(loaded.module()), initial)
        assert [n.target for n in random_nodes(loaded)] == ["tpe.random.uniform"]
        assert_same_stream(loaded.module(), copy.deepcopy(net))


def test_eval_mode_dropout_is_an_identity_without_random_ops(net):
    net.eval()
    ep = tpe.export(net, x_of(4), dynamic_shapes=B)
    assert random_nodes(ep) == []
    assert [s.kind.name for s in ep.graph_signature.output_specs] == ["USER_OUTPUT"]
    mod = ep.module()
    for b in SIZES:
        x = x_of(b)
        np.testing.assert_array_equal(mod(x), np.tanh(net.lin(x)))
    np.testing.assert_array_equal(state(mod), net.drop.generator_state)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_p_zero_or_one_draws_nothing(p):
    net = Net(p)
    ep = tpe.export_for_training(net, x_of(4), dynamic_shapes=B)
    assert random_nodes(ep) == []
    assert_same_stream(ep.module(), copy.deepcopy(net))


def test_decompositions_and_unflatten_keep_the_stream(net, ep):
    dec = ep.run_decompositions()
    assert [n.target for n in random_nodes(dec)] == ["tpe.random.uniform"]
    assert_same_stream(dec.module(), copy.deepcopy(net))
    flat = tpe.unflatten(ep)
    eager = copy.deepcopy(net)
    assert_same_stream(flat, eager)
    # a submodule call returns the dropout's output only, and advances its state like eager
    h = np.tanh(eager.lin(x_of(5)))
    got = flat.drop(h)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, eager.drop(h))
    np.testing.assert_array_equal(state(flat), eager.drop.generator_state)


class Twice(nn.Module):
    """One dropout called twice (a chain of draws) and a second dropout."""

    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.3, rng=1)
        self.other = nn.Dropout(0.6, rng=2)

    def forward(self, x):
        return self.drop(x) + self.drop(x * 2.0) + self.other(x)


def test_several_draws_per_call_and_several_generators():
    m = Twice()
    ep = tpe.export_for_training(m, x_of(4), dynamic_shapes=B)
    assert len(random_nodes(ep)) == 3
    muts = [s.target for s in ep.graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"]
    assert sorted(muts) == ["drop.generator_state", "other.generator_state"]
    fqns = ("drop.generator_state", "other.generator_state")
    assert_same_stream(ep.module(), copy.deepcopy(m), fqns=fqns)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    assert_same_stream(tpe.load(buf).module(), copy.deepcopy(m), fqns=fqns)


class Noisy(nn.Module):
    """Gaussian noise from a generator state the module keeps in its own buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("noise_state", F.generator_state(21))

    def forward(self, x):
        z, self.noise_state = F.random_normal(self.noise_state, x.shape, np.float32)
        return x + 0.1 * z


def test_module_owned_state_with_the_functional_draws():
    m = Noisy()
    ep = tpe.export_for_training(m, x_of(4), dynamic_shapes=B)
    assert [n.target for n in random_nodes(ep)] == ["tpe.random.normal"]
    assert_same_stream(ep.module(), copy.deepcopy(m), fqns=("noise_state",))
    buf = io.BytesIO()
    tpe.save(ep, buf)                                          # the float32 dtype argument survives the archive
    assert_same_stream(tpe.load(buf).module(), copy.deepcopy(m), fqns=("noise_state",))
    ref = np.random.default_rng(21)                            # the module's stream is numpy's from the seed
    fresh = tpe.export_for_training(Noisy(), x_of(4), dynamic_shapes=B).module()
    x = x_of(9)
    np.testing.assert_array_equal(fresh(x), x + 0.1 * ref.standard_normal((9, 6), dtype=np.float32))


# -- what stays refused ----------------------------------------------------------------------------------
class GlobalNoise(nn.Module):
    def forward(self, x):
        return x + np.random.rand(*x.shape)  # L_global


class OldDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.rng = np.random.default_rng(0)

    def forward(self, x):
        return F.dropout(x, 0.5, True, self.rng)  # a Generator object: eager only


@pytest.mark.parametrize("model, what", [(GlobalNoise(), "numpy.random.rand"),
                                         (OldDropout(), "numpy.random generator")])
def test_global_and_free_generators_stay_refused_with_the_way_out(model, what):
    with pytest.raises(tpe.UnsupportedOpError) as info:
        tpe.export_for_training(model, x_of(4), dynamic_shapes=B)
    text = str(info.value)
    assert text.startswith("random numbers inside the model:") and what in text, text
    assert "use nn.Dropout" in text and "nn.functional.generator_state" in text
    assert "pass them as an input" in text and "test_random_ops.py:" in text
    assert info.value.random_draw


def test_a_dropout_reached_through_a_closure_is_refused_and_left_alone():
    drop = nn.Dropout(0.5, rng=0)
    before = drop.generator_state.copy()
    for spec in (B, None):
        with pytest.raises(tpe.UnsupportedOpError, match="not a buffer of the exported module") as info:
            tpe.export_for_training(lambda x: drop(x), x_of(4), dynamic_shapes=spec)
        assert info.value.random_draw
        assert type(drop.generator_state) is np.ndarray       # no traced value left in the user's module
        np.testing.assert_array_equal(drop.generator_state, before)


def test_a_state_in_a_plain_attribute_is_refused():
    class Attr(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = F.generator_state(0)  # a plain attribute: lifted as a constant, never advanced

        def forward(self, x):
            u, self.s = F.random_uniform(self.s, x.shape)
            return x * u

    with pytest.raises(tpe.UnsupportedOpError, match="register_buffer"):
        tpe.export_for_training(Attr(), x_of(4), dynamic_shapes=B)


def test_draft_export_of_training_dropout_has_no_failures(net):
    report = tpe.draft_export(net, x_of(4), dynamic_shapes=B)
    assert report.failures == [], str(report)


def test_attention_dropout_in_training_draws_what_eager_draws():
    """nn.MultiheadAttention's weight dropout owns its generator too: same masks as eager, every call."""
    m = nn.MultiheadAttention(16, 4, dropout=0.3, batch_first=True, rng=0)
    m.train()
    twin = copy.deepcopy(m)
    x = np.random.default_rng(1).standard_normal((2, 5, 16)).astype(np.float32)
    s = Dim("s", max=64)
    ep = tpe.export_for_training(m, x, x, x, dynamic_shapes={"query": {1: s}, "key": {1: s}, "value": {1: s}})
    mod = ep.module()
    outs = []
    for n in (5, 3, 9, 3):
        y = np.random.default_rng(n).standard_normal((2, n, 16)).astype(np.float32)
        got, want = mod(y, y, y)[0], twin(y, y, y)[0]
        np.testing.assert_array_equal(got, want)
        outs.append(got)
    assert not np.array_equal(outs[1], outs[3])  # same input, the state advanced: another mask
    assert "generator_state" not in nn.MultiheadAttention(16, 4)._buffers  # no dropout: no generator
