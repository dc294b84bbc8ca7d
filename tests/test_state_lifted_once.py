"""Module state is lifted once, by identity, whatever path the model reaches it by.

A parameter or buffer read through a plain list or dict attribute (``self.ws = [self.lin.weight]``),
a submodule called through one (``self.layers = [self.lin]``) or through a module global is the
same placeholder as through its module; a plain array inside a list attribute is one lifted
constant named by its path.  torch.export lifts parameters by their fqn in ``named_parameters``.
"""
from __future__ import annotations

import numpy as np

import tensorplay_export as tpe
from tensorplay_export import nn

RNG = np.random.default_rng(3)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def lifted(ep):
    return [(s.kind.name, s.target) for s in ep.graph_signature.input_specs if s.kind.name != "USER_INPUT"]


def agrees(ep, model, x):
    np.testing.assert_allclose(ep.module()(x), model(x), rtol=1e-6)


class ThroughList(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.layers = [self.lin]                    # a plain list: the same Linear, no new submodule
        self.ws = [self.lin.weight, arr(4)]         # a parameter and a plain array
        self.d = {"b": self.lin.bias}

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        x = x @ self.ws[0].T + self.d["b"]          # .T of the raw parameter, before any traced value
        return self.lin(x) * self.ws[1] + self.ws[1]


def test_a_parameter_reached_through_plain_containers_is_lifted_once_as_a_parameter():
    model = ThroughList()
    x = arr(2, 4)
    ep = tpe.export(model, x)
    assert lifted(ep) == [("PARAMETER", "lin.weight"), ("PARAMETER", "lin.bias"),
                          ("CONSTANT_TENSOR", "c_ws_1")]
    assert list(ep.state_dict) == ["lin.weight", "lin.bias"] and list(ep.constants) == ["c_ws_1"]
    agrees(ep, model, x)


class NormThroughList(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm1d(3)
        self.blocks = [self.norm]

    def forward(self, x):
        return self.blocks[0](x) + 1


def test_a_submodule_called_through_a_plain_list_updates_its_buffers_under_its_fqn():
    model = NormThroughList().train()
    x = arr(5, 3)
    ep = tpe.export(model, x)
    updates = [(s.kind.name, s.target) for s in ep.graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"]
    assert updates == [("BUFFER_MUTATION", "norm.running_mean"), ("BUFFER_MUTATION", "norm.running_var"),
                       ("BUFFER_MUTATION", "norm.num_batches_tracked")]
    assert not ep.constants
    # the user's module is left as it was: no traced value, no eager update stored in it
    assert type(model.norm.running_mean) is np.ndarray and not model.norm.running_mean.any()
    module = ep.module()
    np.testing.assert_allclose(module(x), model(x), rtol=1e-5)
    np.testing.assert_allclose(module.state_dict()["norm.running_mean"], model.norm.running_mean, rtol=1e-6)


SHARED = nn.Linear(3, 3)


class ThroughGlobal(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = SHARED

    def forward(self, x):
        return SHARED(x) + SHARED.weight.sum(0)


def test_a_submodule_reached_through_a_module_global_is_its_lifted_state():
    model = ThroughGlobal()
    x = arr(2, 3)
    ep = tpe.export(model, x)
    assert lifted(ep) == [("PARAMETER", "fc.weight"), ("PARAMETER", "fc.bias")]
    assert not ep.constants
    agrees(ep, model, x)


class ArrayInList(nn.Module):
    def __init__(self):
        super().__init__()
        w = arr(3, 3)
        self.ws = [w, w]                            # one array, twice
        self.pair = (w,)

    def forward(self, x):
        return x @ self.ws[0].T + x @ self.ws[1] + self.pair[0][0]


def test_a_plain_array_held_in_list_and_tuple_attributes_is_one_constant():
    model = ArrayInList()
    x = arr(2, 3)
    ep = tpe.export(model, x)
    assert lifted(ep) == [("CONSTANT_TENSOR", "c_ws_0")]
    agrees(ep, model, x)
    assert model.ws[0] is model.pair[0] and type(model.ws[0]) is np.ndarray   # the user's lists kept
