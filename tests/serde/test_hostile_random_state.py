"""Hostile archives around generator state: what capture never emits for a random op is refused at load.

Built from a real training export with two nn.Dropout layers (one called twice, so one
generator's state is a chain of two draws): a buffer mutation must name a buffer of the
program, once; a draw must read a buffer's state or the next state of an earlier draw
from one; a generator's next state goes back to its own buffer only.
"""
from __future__ import annotations

import copy
import io
import json

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

from conftest import archive_bytes, members_of
from test_hostile import PROGRAM, edit, expect_error, load_bytes, node
from _shared import program_bytes, program_doc


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 5, rng=0)
        self.drop = nn.Dropout(0.3, rng=1)
        self.other = nn.Dropout(0.6, rng=2)

    def forward(self, x):
        h = self.lin(x)
        return self.drop(h) + self.drop(h * 2.0) + self.other(h)


def x_of(b):
    return np.random.default_rng(b).standard_normal((b, 5)).astype(np.float32)


@pytest.fixture(scope="module")
def model():
    return Twice()


@pytest.fixture(scope="module")
def good(model) -> bytes:
    ep = tpe.export_for_training(model, x_of(4), dynamic_shapes={"x": {0: Dim("b", max=32)}})
    return archive_bytes(ep)


def outputs(doc):
    return doc["signature"]["outputs"]


def test_good_archive_loads_and_draws_like_eager(model, good):
    doc = program_doc(members_of(good)[PROGRAM])
    assert [(o["kind"], o["target"]) for o in outputs(doc)][:2] == [
        ("BUFFER_MUTATION", "drop.generator_state"), ("BUFFER_MUTATION", "other.generator_state")]
    mod, eager = load_bytes(good).module(), copy.deepcopy(model)
    for b in (2, 7, 7):
        np.testing.assert_array_equal(mod(x_of(b)), eager(x_of(b)))


def _retarget(position, target):
    def doc_fn(doc):
        outputs(doc)[position]["target"] = target
    return doc_fn


def _swap_targets(doc):
    a, b = outputs(doc)[0], outputs(doc)[1]
    a["target"], b["target"] = b["target"], a["target"]


def _duplicate_first(doc):
    outputs(doc)[1]["target"] = outputs(doc)[0]["target"]


def _draw_from(value):
    def doc_fn(doc):
        node(doc, "uniform")["args"][0] = value
    return doc_fn


STATE_INLINE = {"k": "ndarray", "dtype": "<u8", "shape": [6], "v": "00" * 48}


@pytest.mark.parametrize("doc_fn, words", [
    (_retarget(0, "drop.no_such_state"), "not a buffer"),       # a buffer the program does not have
    (_retarget(1, "lin.weight"), "not a buffer"),               # a parameter is not a generator's buffer
    (_duplicate_first, "twice"),
    (_swap_targets, "writes the generator state drawn from buffer 'drop.generator_state' into "
                    "'other.generator_state'"),
    (_draw_from({"k": "node", "v": "x"}), "draws from 'x', which is not a buffer"),
    (_draw_from({"k": "node", "v": "p_lin_weight"}), "draws from 'p_lin_weight', which is not a buffer"),
    (_draw_from(STATE_INLINE), "which is not a buffer"),           # a constant state: the same numbers every call
], ids=["unknown_buffer", "parameter", "twice", "crossed_chains", "user_input", "parameter_state", "inline"])
def test_generator_state_misuse_refused(good, doc_fn, words):
    expect_error(edit(good, doc_fn), PROGRAM, words)


def test_a_loaded_program_restarts_from_the_saved_state(model, good):
    loaded = tpe.load(io.BytesIO(good))
    # non-persistent, so not in state_dict (as torch.export keeps such buffers): stored with the constants
    assert "drop.generator_state" not in loaded.state_dict
    np.testing.assert_array_equal(loaded.constants["drop.generator_state"], model.drop.generator_state)
    first = [load_bytes(good).module()(x_of(6)) for _ in range(2)]
    np.testing.assert_array_equal(first[0], first[1])
    np.testing.assert_array_equal(first[0], copy.deepcopy(model)(x_of(6)))
