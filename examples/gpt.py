"""A GPT-2-style decoder in tensorplay_export.nn, with seeded random weights.

Pre-LayerNorm blocks (causal multi-head self-attention, then a GELU MLP of width
4*d_model), 1024 learned positions, a final LayerNorm, and an output projection tied
to the token embedding (logits = h @ wte.weight.T). Initialization follows GPT-2:
N(0, 0.02) weights, zero biases, residual projections scaled by 1/sqrt(2*n_layer).

Run: ``python examples/gpt.py [--layers N] [--tokens K] [--out PATH]``: exports with dynamic
batch and seq, saves and loads the program, and greedy-decodes a few tokens by calling the
loaded program on a growing sequence.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tensorplay_export import nn
from tensorplay_export.nn import functional as F


@dataclass(frozen=True)
class GPTConfig:
    n_layer: int = 2
    d_model: int = 128
    n_head: int = 4
    vocab: int = 1024
    n_positions: int = 1024
    eps: float = 1e-5
    gelu: str = "tanh"  # GPT-2 uses the tanh approximation; "none" for exact


def _normal(rng, shape, std):
    return nn.Parameter((rng.standard_normal(shape) * std).astype(np.float32))


class CausalSelfAttention(nn.Module):
    """(B, S, d_model) -> (B, S, d_model); query i attends to keys 0..i."""

    def __init__(self, cfg: GPTConfig, rng: np.random.Generator) -> None:
        super().__init__()
        if cfg.d_model % cfg.n_head:
            raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_head ({cfg.n_head})")
        self.n_head, self.head_dim = cfg.n_head, cfg.d_model // cfg.n_head
        self.c_attn = nn.Linear(cfg.d_model, 3 * cfg.d_model, rng=rng)
        self.c_proj = nn.Linear(cfg.d_model, cfg.d_model, rng=rng)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.c_attn(x).reshape(b, s, 3, self.n_head, self.head_dim).transpose(2, 0, 3, 1, 4)
        ctx = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)  # (B, H, S, hd)
        return self.c_proj(ctx.transpose(0, 2, 1, 3).reshape(b, s, d))


class MLP(nn.Module):
    """(B, S, d_model) -> (B, S, d_model) through a 4*d_model GELU layer."""

    def __init__(self, cfg: GPTConfig, rng: np.random.Generator) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.d_model, 4 * cfg.d_model, rng=rng)
        self.act = nn.GELU(cfg.gelu)
        self.c_proj = nn.Linear(4 * cfg.d_model, cfg.d_model, rng=rng)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    """Pre-LN residual block: x + attn(ln_1(x)), then + mlp(ln_2(.))."""

    def __init__(self, cfg: GPTConfig, rng: np.random.Generator) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.attn = CausalSelfAttention(cfg, rng)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.mlp = MLP(cfg, rng)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Decoder-only language model.

    Args (forward):
        input_ids: int64 (batch, seq), seq <= n_positions (1024).
    Returns:
        float32 logits (batch, seq, vocab).
    """

    def __init__(self, cfg: GPTConfig, seed: int = 0) -> None:
        super().__init__()
        self.config = cfg
        rng = np.random.default_rng(seed)
        self.wte = nn.Embedding(cfg.vocab, cfg.d_model, rng=rng)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.d_model, rng=rng)
        self.h = nn.ModuleList([Block(cfg, rng) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self._init_gpt2(rng)

    def _init_gpt2(self, rng: np.random.Generator) -> None:
        resid_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        for name, mod in self.named_modules():
            if isinstance(mod, nn.Linear):
                std = resid_std if name.endswith("c_proj") else 0.02
                mod.weight = _normal(rng, mod.weight.shape, std)
                mod.bias = nn.Parameter(np.zeros(mod.bias.shape, np.float32))
            elif isinstance(mod, nn.Embedding):
                mod.weight = _normal(rng, mod.weight.shape, 0.02 if mod is self.wte else 0.01)

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        # Learned positions 0..seq-1: the 1024-row table bounds seq.
        x = self.wte(input_ids) + self.wpe.weight[:seq]
        for block in self.h:
            x = block(x)
        # Output projection tied to the token embedding.
        return F.linear(self.ln_f(x), self.wte.weight)


def build_gpt(n_layer: int = 2, d_model: int = 128, n_head: int = 4, vocab: int = 1024, seed: int = 0,
              n_positions: int = 1024, gelu: str = "tanh") -> GPT:
    """A GPT in eval mode with seeded random weights (same seed, same weights)."""
    cfg = GPTConfig(n_layer=n_layer, d_model=d_model, n_head=n_head, vocab=vocab, n_positions=n_positions,
                    gelu=gelu)
    return GPT(cfg, seed).eval()


def greedy_decode(step: Callable[[np.ndarray], np.ndarray], input_ids: np.ndarray, n_new: int) -> np.ndarray:
    """Append ``n_new`` tokens, each the argmax of the last position's logits.

    Args:
        step: ids (batch, seq) int64 -> logits (batch, seq, vocab): the model, or a loaded program.
        input_ids: int64 (batch, seq0) prompt.
    Returns:
        int64 (batch, seq0 + n_new); the whole sequence is re-run at every step (no KV cache),
        so one program with a dynamic seq serves every length.
    """
    ids = np.asarray(input_ids, dtype=np.int64)
    for _ in range(n_new):
        logits = step(ids)
        nxt = np.argmax(logits[:, -1, :], axis=-1).astype(np.int64)
        ids = np.concatenate([ids, nxt[:, None]], axis=1)
    return ids


def export_gpt(model: GPT, example_ids: np.ndarray, max_batch: int = 64):
    """Export ``model`` with dynamic ``batch`` (<= max_batch) and ``seq`` (<= n_positions)."""
    import tensorplay_export as tpe

    spec = {"input_ids": {0: tpe.Dim("batch", max=max_batch), 1: tpe.Dim("seq", max=model.config.n_positions)}}
    return tpe.export(model, example_ids, dynamic_shapes=spec)


def main(argv=None) -> int:
    """Export, save, load, then greedy-decode with the loaded program and check it against eager."""
    import os
    import tempfile

    import tensorplay_export as tpe

    parser = argparse.ArgumentParser(description="Greedy decoding with a seeded random GPT, via its exported program.")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="where to write the program archive (default: a temporary file)")
    args = parser.parse_args(argv)
    model = build_gpt(n_layer=args.layers, seed=args.seed)
    prompt = np.array([[1, 2, 3, 4], [10, 20, 30, 40]], dtype=np.int64)
    ep = export_gpt(model, prompt)
    print("contract: " + ", ".join(f"{k} in [{v.lower}, {v.upper}]" for k, v in ep.range_constraints.items()))
    with tempfile.TemporaryDirectory() as tmp:
        path = args.out or os.path.join(tmp, "gpt.pt2")
        tpe.save(ep, path)
        program = tpe.load(path).module()
    # One program serves every length: the sequence grows by one token per step.
    out = greedy_decode(program, prompt, args.tokens)
    same = np.array_equal(out, greedy_decode(model, prompt, args.tokens))
    for row in out:
        print(" ".join(str(t) for t in row))
    print(f"loaded program and eager model decode the same tokens: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
