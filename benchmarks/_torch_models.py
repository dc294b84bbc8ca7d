"""The benchmark models written in torch, with the same architecture as ours.

``TorchGPT`` mirrors ``examples.gpt.GPT`` (pre-LN blocks, causal SDPA, tanh GELU MLP of
width 4*d_model, learned positions sliced with ``wpe.weight[:seq]``, output projection
tied to ``wte``) and ``torch_mlp`` mirrors ``benchmarks._models.build_mlp``
(``Sequential(Linear, ReLU, ...)``). Module names equal ours, so
:func:`load_numpy_state` copies a numpy model's weights in and both compute the same
numbers (``tests/test_benchmarks_smoke.py`` checks that when torch is installed).

Importing this module imports torch: callers import it only when torch is available.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    """(B, S, d_model) -> (B, S, d_model); query i attends to keys 0..i."""

    def __init__(self, d_model: int, n_head: int) -> None:
        super().__init__()
        self.n_head, self.head_dim = n_head, d_model // n_head
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.c_attn(x).reshape(b, s, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        ctx = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)  # (B, H, S, hd)
        return self.c_proj(ctx.permute(0, 2, 1, 3).reshape(b, s, d))


class MLP(nn.Module):
    def __init__(self, d_model: int, gelu: str) -> None:
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.act = nn.GELU(approximate=gelu)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, eps: float, gelu: str) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model, eps=eps)
        self.attn = CausalSelfAttention(d_model, n_head)
        self.ln_2 = nn.LayerNorm(d_model, eps=eps)
        self.mlp = MLP(d_model, gelu)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(nn.Module):
    """input_ids int64 (batch, seq), seq <= n_positions -> float32 logits (batch, seq, vocab)."""

    def __init__(self, n_layer: int, d_model: int = 128, n_head: int = 4, vocab: int = 1024,
                 n_positions: int = 512, eps: float = 1e-5, gelu: str = "tanh") -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(n_positions, d_model)
        self.h = nn.ModuleList([Block(d_model, n_head, eps, gelu) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model, eps=eps)

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe.weight[:seq]
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def torch_gpt(n_layer: int, d_model: int = 128, n_head: int = 4, vocab: int = 1024,
              n_positions: int = 512) -> TorchGPT:
    """A TorchGPT in eval mode (weights: torch's default init; copy ours with load_numpy_state)."""
    return TorchGPT(n_layer, d_model, n_head, vocab, n_positions).eval()


def torch_mlp(n_layer: int, width: int = 64) -> nn.Sequential:
    """``n_layer`` times Linear(width, width) + ReLU, in eval mode."""
    mods: list = []
    for _ in range(n_layer):
        mods += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*mods).eval()


def load_numpy_state(model: nn.Module, state: dict) -> nn.Module:
    """Copy a numpy ``state_dict`` (same keys and shapes) into ``model``; returns it.

    Raises:
        RuntimeError: keys or shapes differ (torch's strict load_state_dict).
    """
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()}, strict=True)
    return model
