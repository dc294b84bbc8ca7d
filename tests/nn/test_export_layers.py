"""Layers on dynamic sizes: export each with dynamic dims, then run the program at other sizes.

Each case exports on one example
size and compares ``ep.module()`` with eager execution at several admitted sizes
(including 1), so every layer is checked on static and dynamic sizes.
"""

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.nn import functional as F


from examples import gpt

RNG = np.random.default_rng(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def seq_model(*layers):
    return nn.Sequential(*layers).eval()


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4, batch_first=True, rng=0)

    def forward(self, x, pad):
        out, _ = self.mha(x, x, x, key_padding_mask=pad, need_weights=False)
        return out


def padding_mask(b, s):
    mask = RNG.random((b, s)) > 0.7  # True = padding; the first key always stays
    mask[:, 0] = False
    return mask


def bs_inputs(feat):
    return lambda b, s: (randn(b, s, feat),)


def bs_spec(names=("x",)):
    def spec():
        b, s = tpe.Dim("batch", max=64), tpe.Dim("seq", max=256)
        return {n: {0: b, 1: s} for n in names}
    return spec


def image_inputs(c):
    return lambda b, s: (randn(b, c, s + 4, s + 6),)


def image_spec():
    b = tpe.Dim("batch", max=64)
    h, w = tpe.Dim("h", min=4, max=300), tpe.Dim("w", min=4, max=300)
    return {"x": {0: b, 2: h, 3: w}}


CASES = {
    "linear": (lambda: seq_model(nn.Linear(8, 5, rng=0)), bs_inputs(8), bs_spec()),
    "mlp_gelu": (lambda: seq_model(nn.Linear(8, 16, rng=0), nn.GELU(), nn.Linear(16, 8, rng=1), nn.GELU("tanh")),
                 bs_inputs(8), bs_spec()),
    "activations": (lambda: seq_model(nn.ReLU(), nn.SiLU(), nn.Tanh(), nn.Sigmoid(), nn.Softmax(), nn.LogSoftmax()),
                    bs_inputs(6), bs_spec()),
    "norms": (lambda: seq_model(nn.LayerNorm(8), nn.RMSNorm(8), nn.Dropout(0.3)), bs_inputs(8), bs_spec()),
    "embedding": (lambda: seq_model(nn.Embedding(50, 8, rng=0), nn.Flatten(1)),
                  lambda b, s: (RNG.integers(0, 50, (b, s)),), bs_spec()),
    "attention": (SelfAttention,
                  lambda b, s: (randn(b, s, 16), padding_mask(b, s)),
                  bs_spec(("x", "pad"))),
    "conv1d": (lambda: seq_model(nn.Conv1d(3, 4, 3, padding=1, rng=0), nn.ReLU(), nn.Conv1d(4, 2, 1, rng=1)),
               lambda b, s: (randn(b, 3, s),), lambda: {"x": {0: tpe.Dim("batch", max=64), 2: tpe.Dim("seq", max=256)}}),
    "conv2d_bn_pool": (lambda: seq_model(nn.Conv2d(3, 4, 3, padding=1, rng=0), nn.BatchNorm2d(4), nn.ReLU(),
                                         nn.MaxPool2d(2), nn.AvgPool2d(2, 1)),
                       image_inputs(3), image_spec),
    "gpt": (lambda: gpt.build_gpt(n_layer=2, d_model=32, n_head=4, vocab=64, seed=0),
            lambda b, s: (RNG.integers(0, 64, (b, s)),),
            lambda: {"input_ids": {0: tpe.Dim("batch", max=64), 1: tpe.Dim("seq", max=1024)}}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_exports_and_matches_eager_on_other_sizes(name):
    make_model, make_inputs, make_spec = CASES[name]
    model = make_model()
    ep = tpe.export(model, *make_inputs(2, 7), dynamic_shapes=make_spec())
    run = ep.module()
    for b, s in ((1, 1), (3, 12), (2, 7)):
        inputs = make_inputs(b, s)
        np.testing.assert_allclose(run(*inputs), model(*inputs), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} at batch={b}, seq={s}")


@pytest.mark.parametrize("name", ["mlp_gelu", "norms", "attention", "conv2d_bn_pool", "gpt"])
def test_decomposed_program_has_no_composites_and_matches_eager(name):
    make_model, make_inputs, make_spec = CASES[name]
    model = make_model()
    ep = tpe.export(model, *make_inputs(2, 7), dynamic_shapes=make_spec())
    assert any(str(n.target).startswith("tpe.nn.") for n in ep.graph_module.graph.nodes)
    dec = ep.run_decompositions()
    left = [str(n.target) for n in dec.graph_module.graph.nodes if str(n.target).startswith("tpe.nn.")]
    assert left == []
    inputs = make_inputs(3, 11)
    np.testing.assert_allclose(dec.module()(*inputs), model(*inputs), rtol=1e-5, atol=1e-5)


def test_batch_norm_training_export_records_buffer_updates():
    bn, ref = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    ep = tpe.export_for_training(bn, randn(4, 3, 5), dynamic_shapes={"x": {0: tpe.Dim("b", min=2), 2: tpe.Dim("l")}})
    mutated = [s.target for s in ep.graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"]
    assert mutated == ["running_mean", "running_var", "num_batches_tracked"]
    assert int(bn.num_batches_tracked) == 0 and not bn.running_mean.any()  # capture left the model alone
    run = ep.module()
    for shape in ((6, 3, 9), (2, 3, 1)):
        y = randn(*shape)
        np.testing.assert_allclose(run(y), ref(y), rtol=1e-5, atol=1e-5)
    state = dict(run.named_buffers())
    np.testing.assert_allclose(state["running_mean"], ref.running_mean, rtol=1e-6)
    np.testing.assert_allclose(state["running_var"], ref.running_var, rtol=1e-6)
    assert int(state["num_batches_tracked"]) == 2


# ----------------------------------------------------- functions on dynamic sizes
def f_pad(x):
    return F.pad(x, (1, 2, 0, 3), value=-1.0) + F.pad(x, (2, 1, 3, 0), mode="replicate")


def f_one_hot_ce(logits, target):
    smooth = F.cross_entropy(logits, target, label_smoothing=0.1)
    probs = F.one_hot(target, 5).astype(np.float32)
    return smooth + F.cross_entropy(logits, probs, reduction="sum"), F.cross_entropy(logits, target, reduction="none")


def f_erf_sdpa(q, k, bias):
    return F.scaled_dot_product_attention(F.erf(q), k, k, attn_mask=bias), F.erfc(k)


FUNCTION_CASES = {
    "pad": (f_pad, lambda b, s: (randn(b, s, s + 2),),
            lambda: {"x": {0: tpe.Dim("batch", max=64), 1: tpe.Dim("seq", max=256), 2: tpe.Dim("w", max=300)}}),
    "one_hot_cross_entropy": (f_one_hot_ce, lambda b, s: (randn(b * s, 5), RNG.integers(0, 5, b * s)),
                              lambda: {"logits": {0: tpe.Dim("n", max=1000)}, "target": {0: tpe.Dim("n", max=1000)}}),
    "erf_sdpa_float_mask": (f_erf_sdpa, lambda b, s: (randn(b, 2, s, 4), randn(b, 2, s + 1, 4), randn(b, 1, s, s + 1)),
                            lambda: {"q": {0: tpe.Dim("batch", max=64), 2: tpe.Dim("seq", max=256)},
                                     "k": {0: tpe.Dim("batch", max=64), 2: tpe.Dim("seq", max=256) + 1},
                                     "bias": {0: tpe.Dim("batch", max=64), 2: tpe.Dim("seq", max=256),
                                              3: tpe.Dim("seq", max=256) + 1}}),
}


@pytest.mark.parametrize("name", list(FUNCTION_CASES))
def test_function_exports_and_matches_eager_on_other_sizes(name):
    fn, make_inputs, make_spec = FUNCTION_CASES[name]
    ep = tpe.export(fn, *make_inputs(2, 7), dynamic_shapes=make_spec())
    run = ep.module()
    for b, s in ((1, 1), (3, 12)):
        inputs = make_inputs(b, s)
        got, want = run(*inputs), fn(*inputs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{name} at batch={b}, seq={s}")
