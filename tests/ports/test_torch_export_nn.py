"""Ports of torch.export dynamic-shape scenarios over nn modules (conv stems, attention,
embeddings, norms): fixes from the window arithmetic, dynamic batch and sequence, save/load.
Conventions as in test_torch_export_dynamic.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from test_torch_export_dynamic import agrees, arr, refine_once, roundtrip

nn = tpe.nn
F = tpe.nn.functional


class Stem(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.c2 = nn.Conv2d(4, 2, 3)

    def forward(self, x):
        return self.c2(self.pool(F.relu(self.c1(x))))


def test_conv_stem_fix_gives_the_smallest_image_and_runs_above_it():
    stem = Stem()
    spec = {"x": {0: Dim("b"), 2: Dim("h", max=64), 3: Dim("w", max=64)}}
    err, spec2, ep = refine_once(stem, arr(2, 3, 32, 32), dynamic_shapes=spec)
    assert "Dim('h', min=11, max=64)" in str(err) and "Dim('w', min=11, max=64)" in str(err)
    for shape in ((1, 3, 11, 11), (3, 3, 17, 64), (1, 3, 64, 12)):
        agrees(ep, stem, arr(*shape))
    for shape in ((1, 3, 10, 20), (1, 3, 65, 20)):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(arr(*shape))
    agrees(roundtrip(ep), stem, arr(2, 3, 23, 40))


def test_eager_conv_refuses_an_input_smaller_than_its_window_like_the_program():
    conv = nn.Conv2d(3, 2, 3)
    ep = tpe.export(conv, arr(1, 3, 8, 8), dynamic_shapes={"x": {2: Dim("h", min=3)}})
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(1, 3, 2, 8))
    with pytest.raises((ValueError, RuntimeError)):
        conv(arr(1, 3, 2, 8))


def test_conv_needing_a_minimum_size_gets_a_min_fix():
    conv = nn.Conv2d(3, 2, 3)
    err, spec, ep = refine_once(conv, arr(1, 3, 8, 8), dynamic_shapes={"x": {2: Dim("h")}})
    assert "h = Dim('h', min=3)" in str(err)
    for h in (3, 4, 20):
        agrees(ep, conv, arr(1, 3, h, 8))


def test_cross_attention_with_two_sequence_lengths():
    mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def model(q, k):
        return mha(q, k, k)[0]

    b = Dim("b")
    spec = {"q": {0: b, 1: Dim("tq")}, "k": {0: b, 1: Dim("tk")}}
    ep = tpe.export(model, arr(2, 5, 8), arr(2, 7, 8), dynamic_shapes=spec)
    for (bb, tq, tk) in ((1, 1, 1), (3, 1, 9), (2, 6, 2)):
        agrees(ep, model, arr(bb, tq, 8), arr(bb, tk, 8))
    agrees(roundtrip(ep), model, arr(3, 4, 8), arr(3, 11, 8))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(2, 4, 8), arr(3, 4, 8))


def test_causal_attention_with_dynamic_length_one():
    def model(x):
        return F.scaled_dot_product_attention(x, x, x, is_causal=True)

    ep = tpe.export(model, arr(2, 2, 5, 4), dynamic_shapes={"x": {0: Dim("b"), 2: Dim("t")}})
    for t in (1, 2, 13):
        agrees(ep, model, arr(1, 2, t, 4))


def test_embedding_with_dynamic_batch_and_sequence():
    emb = nn.Embedding(50, 4)

    def model(ids):
        return emb(ids).sum(axis=1)

    ep = tpe.export(model, np.array([[1, 2, 3]]), dynamic_shapes={"ids": {0: Dim("b"), 1: Dim("s")}})
    rng = np.random.default_rng(0)
    for shape in ((1, 1), (4, 9)):
        agrees(ep, model, rng.integers(0, 50, shape))
    with pytest.raises(IndexError):
        ep.module()(np.array([[60]]))  # as eager: an id beyond the table


def test_layer_norm_then_flatten_by_the_batch_dim():
    ln = nn.LayerNorm(4)

    def model(x):
        return ln(x).reshape(x.shape[0], -1)

    ep = tpe.export(model, arr(2, 3, 4), dynamic_shapes={"x": {0: Dim("b"), 1: Dim("s")}})
    for shape in ((1, 1, 4), (1, 7, 4), (5, 2, 4)):
        agrees(ep, model, arr(*shape))


def test_linear_head_pins_the_feature_dim():
    fc = nn.Linear(4, 3)
    err, spec, ep = refine_once(fc, arr(2, 4), dynamic_shapes={"x": {0: Dim("b"), 1: Dim("f")}})
    assert "f = 4" in str(err)
    agrees(ep, fc, arr(7, 4))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(7, 5))
