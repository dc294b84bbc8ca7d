"""GPT in plain ``jax.numpy``, fed the weights of ``examples.gpt.GPT``, exported with ``jax.export``.

Same architecture as ``examples.gpt.GPT`` (and ``benchmarks._torch_models.TorchGPT``):
learned token and position embeddings, pre-LN blocks (causal multi-head self-attention,
then a tanh-GELU MLP of width 4*d_model), a final LayerNorm and an output projection tied
to ``wte``. The weights are our model's ``state_dict()`` (a dict of float32 arrays, keys
like ``h.0.attn.c_attn.weight``), passed as a pytree argument, so the exported program
holds no weights and the archive benchmark loads them with ``np.load`` beside it.

Token ids are int32 on the jax side: jax runs without 64-bit types unless
``jax_enable_x64`` is set, and ids below 2**31 index the same rows.

Importing this module imports jax (``pip install jax`` in a side venv: jax is not a
dependency, not even of the ``bench`` extra); callers import it only when jax imports.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export


def _layer_norm(x: jax.Array, weight: jax.Array, bias: jax.Array, eps: float) -> jax.Array:
    # Biased variance over the last axis, as tensorplay_export.nn.functional.layer_norm.
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = jnp.mean(centered * centered, axis=-1, keepdims=True)
    return centered / jnp.sqrt(var + eps) * weight + bias


def _linear(x: jax.Array, weight: jax.Array, bias: jax.Array) -> jax.Array:
    return x @ weight.T + bias  # weight (out, in), as nn.Linear


def _gelu_tanh(x: jax.Array) -> jax.Array:
    return 0.5 * x * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))))


def n_layers(params: Mapping[str, Any]) -> int:
    """Number of blocks ``h.<i>`` in a GPT state_dict."""
    return len({k.split(".")[1] for k in params if k.startswith("h.")})


def gpt_forward(params: Mapping[str, jax.Array], input_ids: jax.Array, *, n_head: int = 4,
                eps: float = 1e-5) -> jax.Array:
    """Logits float32 (batch, seq, vocab) of int32 ``input_ids`` (batch, seq), seq <= n_positions.

    ``params`` is ``examples.gpt.GPT.state_dict()`` (as numpy or jax arrays); d_model, vocab,
    positions and layer count come from its shapes.
    """
    b, s = input_ids.shape
    d = params["wte.weight"].shape[1]
    hd = d // n_head
    x = params["wte.weight"][input_ids] + params["wpe.weight"][:s]
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    for i in range(n_layers(params)):
        p = lambda name: params[f"h.{i}.{name}"]  # noqa: E731
        h = _layer_norm(x, p("ln_1.weight"), p("ln_1.bias"), eps)
        qkv = _linear(h, p("attn.c_attn.weight"), p("attn.c_attn.bias"))
        qkv = qkv.reshape(b, s, 3, n_head, hd).transpose(2, 0, 3, 1, 4)  # (3, B, H, S, hd)
        scores = (qkv[0] @ jnp.swapaxes(qkv[1], -1, -2)) * (hd ** -0.5)
        weights = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
        ctx = (weights @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, s, d)
        x = x + _linear(ctx, p("attn.c_proj.weight"), p("attn.c_proj.bias"))
        h = _layer_norm(x, p("ln_2.weight"), p("ln_2.bias"), eps)
        h = _gelu_tanh(_linear(h, p("mlp.c_fc.weight"), p("mlp.c_fc.bias")))
        x = x + _linear(h, p("mlp.c_proj.weight"), p("mlp.c_proj.bias"))
    x = _layer_norm(x, params["ln_f.weight"], params["ln_f.bias"], eps)
    return x @ params["wte.weight"].T


def export_gpt(params: Mapping[str, np.ndarray], n_head: int = 4) -> jax_export.Exported:
    """``jax.export.export(jax.jit(gpt_forward))`` with symbolic ``batch`` and ``seq``.

    Contract: batch >= 1, 1 <= seq <= n_positions (the ``wpe`` rows); the weights' shapes
    and dtypes are fixed. ``Exported.call(params, ids)`` runs it.
    """
    n_positions = params["wpe.weight"].shape[0]
    batch, seq = jax_export.symbolic_shape("batch, seq", constraints=(f"seq <= {n_positions}",))
    param_specs = {k: jax.ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype) for k, v in params.items()}
    ids_spec = jax.ShapeDtypeStruct((batch, seq), np.int32)
    fn = jax.jit(lambda p, ids: gpt_forward(p, ids, n_head=n_head))
    return jax_export.export(fn)(param_specs, ids_spec)


def run(exported: jax_export.Exported, params: Mapping[str, Any], input_ids: np.ndarray) -> np.ndarray:
    """Call ``exported`` on int64 or int32 ids; the logits as a numpy array (waits for the result)."""
    out = exported.call(dict(params), np.asarray(input_ids, dtype=np.int32))
    return np.asarray(jax.block_until_ready(out))
