"""GPT decoder example, run eagerly, against an independent loop reference."""

import math

import numpy as np
import pytest

from examples import gpt


def _ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def reference_logits(model, ids):
    """float64 forward with explicit per-sequence, per-head, per-position loops."""
    sd = {k: v.astype(np.float64) for k, v in model.state_dict().items()}
    cfg = model.config
    hd = cfg.d_model // cfg.n_head
    out = []
    for row in ids:
        s = len(row)
        x = sd["wte.weight"][row] + sd["wpe.weight"][:s]
        for i in range(cfg.n_layer):
            p = f"h.{i}."
            h = _ln(x, sd[p + "ln_1.weight"], sd[p + "ln_1.bias"])
            qkv = h @ sd[p + "attn.c_attn.weight"].T + sd[p + "attn.c_attn.bias"]
            q, k, v = np.split(qkv, 3, axis=-1)
            ctx = np.zeros((s, cfg.d_model))
            for head in range(cfg.n_head):
                sl = slice(head * hd, (head + 1) * hd)
                for t in range(s):
                    scores = np.array([q[t, sl] @ k[j, sl] / math.sqrt(hd) for j in range(t + 1)])
                    w = np.exp(scores - scores.max())
                    w /= w.sum()
                    ctx[t, sl] = w @ v[: t + 1, sl]
            x = x + ctx @ sd[p + "attn.c_proj.weight"].T + sd[p + "attn.c_proj.bias"]
            h = _ln(x, sd[p + "ln_2.weight"], sd[p + "ln_2.bias"])
            h = _gelu_tanh(h @ sd[p + "mlp.c_fc.weight"].T + sd[p + "mlp.c_fc.bias"])
            x = x + h @ sd[p + "mlp.c_proj.weight"].T + sd[p + "mlp.c_proj.bias"]
        x = _ln(x, sd["ln_f.weight"], sd["ln_f.bias"])
        out.append(x @ sd["wte.weight"].T)
    return np.stack(out)


@pytest.mark.parametrize("batch,seq", [(1, 1), (2, 7)])
def test_matches_reference(batch, seq):
    model = gpt.build_gpt(n_layer=2, d_model=32, n_head=4, vocab=50, seed=3)
    ids = np.random.default_rng(0).integers(0, 50, (batch, seq))
    logits = model(ids)
    assert logits.shape == (batch, seq, 50) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, reference_logits(model, ids), rtol=1e-4, atol=1e-5)


def test_exact_gelu_variant_and_config():
    model = gpt.build_gpt(n_layer=1, d_model=16, n_head=2, vocab=20, gelu="none")
    assert model.h[0].mlp.act.approximate == "none"
    assert model(np.array([[1, 2, 3]])).shape == (1, 3, 20)
    with pytest.raises(ValueError, match="divisible"):
        gpt.build_gpt(d_model=30, n_head=4)


def test_seeded_tied_and_eval():
    a, b = gpt.build_gpt(seed=5), gpt.build_gpt(seed=5)
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb
        np.testing.assert_array_equal(pa, pb)
    c = gpt.build_gpt(seed=6)
    assert not np.array_equal(a.wte.weight, c.wte.weight)
    names = [n for n, _ in a.named_parameters()]
    assert not any("lm_head" in n for n in names)  # output projection is the embedding
    assert a.wpe.weight.shape == (1024, 128) and not a.training
    assert len(names) == 2 + 2 * 12 + 2
    assert np.allclose(a.h[0].attn.c_proj.bias, 0) and abs(a.h[0].mlp.c_fc.weight.std() - 0.02) < 0.002


def test_causality():
    model = gpt.build_gpt(n_layer=2, d_model=32, n_head=4, vocab=40, seed=1)
    ids = np.array([[3, 4, 5, 6, 7]])
    changed = ids.copy()
    changed[0, 3] = 9
    la, lb = model(ids), model(changed)
    np.testing.assert_allclose(la[:, :3], lb[:, :3], rtol=1e-6, atol=1e-6)
    assert not np.allclose(la[:, 3:], lb[:, 3:])


def test_greedy_decode():
    model = gpt.build_gpt(n_layer=1, d_model=32, n_head=2, vocab=30, seed=2)
    prompt = np.array([[1, 2, 3], [4, 5, 6]])
    out = gpt.greedy_decode(model, prompt, 4)
    assert out.shape == (2, 7) and out.dtype == np.int64
    np.testing.assert_array_equal(out[:, :3], prompt)
    for row in range(2):  # rows decode independently, each token the argmax of the prefix
        single = gpt.greedy_decode(model, prompt[row:row + 1], 4)
        np.testing.assert_array_equal(single[0], out[row])
        for t in range(3, 7):
            assert out[row, t] == np.argmax(model(out[row:row + 1, :t])[0, -1])
    calls = []
    gpt.greedy_decode(lambda ids: calls.append(ids.shape) or model(ids), prompt, 3)
    assert calls == [(2, 3), (2, 4), (2, 5)]
