"""A zoo of small realistic architectures over numpy, each with its widest shape contract.

Every entry is a ``ZooModel``: the model (``tensorplay_export.nn`` modules, tiny channel
counts), ``make_inputs(**sizes) -> args``, the *naive* ``dynamic_shapes`` a user writes first
(every axis that varies in practice a named ``Dim`` with a max, nothing else), the example
sizes, and a hand-written ``admits(**sizes)``: the widest contract the fix forms can express
(ranges, ``dy = k*dx + c`` relations, divisibility through a fresh root ``n = k*_n``,
constants; pinning only for product equalities) that keeps the example's branch.

``check_admits(zm)`` holds ``admits`` against eager numpy on the grid: an admitted size
must run eagerly and take the example's branch (outputs non-empty and finite, and the
model's own ``branch`` check); a size eager numpy refuses (raises) must not be admitted.
``refine_loop(zm)`` and ``check_contract(zm, ep)`` are what ``bench_diagnostics.py`` and
``tests/test_diagnostics_zoo.py`` measure.

Sizes are dim names; ``grid`` lists the values tried per dim (every combination).
"""
from __future__ import annotations

import itertools
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from tensorplay_export import Dim, nn
from tensorplay_export.nn import functional as F

__all__ = ["ZooModel", "zoo", "by_name", "check_admits", "refine_loop", "check_contract", "RefineResult"]


# -- helpers --------------------------------------------------------------------------------
def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _randn(*shape: int, seed: int = 1) -> np.ndarray:
    return _rng(seed).standard_normal(shape).astype(np.float32)


def _table(*shape: int, seed: int = 2, std: float = 0.02) -> nn.Parameter:
    return nn.Parameter((_rng(seed).standard_normal(shape) * std).astype(np.float32))


@dataclass
class ZooModel:
    """One architecture with its naive spec and its widest contract.

    Attributes:
        name: short table name.
        what: one line saying what the model is and why its contract is what it is.
        model: the callable (an ``nn.Module`` in eval mode).
        make_inputs: ``(**sizes) -> tuple`` of positional arguments.
        spec: ``() -> dynamic_shapes``, the naive spec (fresh Dim objects per call).
        example: the example sizes (export runs on these).
        admits: ``(**sizes) -> bool``, the widest contract.
        grid: dim name -> sizes tried.
        branch: optional ``(sizes, outputs) -> bool``: the eager run took the example's branch.
    """

    name: str
    what: str
    model: Any
    make_inputs: Callable[..., tuple]
    spec: Callable[[], Any]
    example: dict
    admits: Callable[..., bool]
    grid: dict
    branch: Optional[Callable[[dict, list], bool]] = None

    def points(self):
        names = list(self.grid)
        for combo in itertools.product(*(self.grid[n] for n in names)):
            yield dict(zip(names, combo))


# -- 1. CNN with stride-2 convs -------------------------------------------------------------
class StrideCNN(nn.Module):
    """(B, 3, H, W) -> (B, 5): two 3x3 stride-2 'valid' convs, global mean, linear.

    Sizes: 3x3/s2/no padding maps h to (h-3)//2 + 1; the second conv needs that >= 3, so h >= 7.
    """

    def __init__(self, rng):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, stride=2, rng=rng)
        self.c2 = nn.Conv2d(4, 8, 3, stride=2, rng=rng)
        self.fc = nn.Linear(8, 5, rng=rng)

    def forward(self, x):
        y = F.relu(self.c1(x))
        y = F.relu(self.c2(y))
        return self.fc(y.mean(axis=(2, 3)))


def _cnn() -> ZooModel:
    return ZooModel(
        "cnn_stride2", "3x3 stride-2 valid convs: h, w >= 7", StrideCNN(_rng(10)).eval(),
        lambda batch, h, w: (_randn(batch, 3, h, w),),
        lambda: {"x": {0: Dim("batch", max=8), 2: Dim("h", max=64), 3: Dim("w", max=64)}},
        dict(batch=2, h=16, w=20),
        lambda batch, h, w: 1 <= batch <= 8 and 7 <= h <= 64 and 7 <= w <= 64,
        dict(batch=[1, 8, 9], h=[5, 6, 7, 8, 33, 64, 65], w=[6, 7, 64]))


# -- 2. ViT patchify with a position table ---------------------------------------------------
class PatchViT(nn.Module):
    """(B, 3, H, W) -> (B, 5): 4x4 patches by reshape, an 8x8 table of patch positions, a CLS token.

    Sizes: h and w multiples of 4 (the patch reshape), at most 8 patches per axis (the table).
    """

    P, D = 4, 16

    def __init__(self, rng):
        super().__init__()
        self.proj = nn.Linear(3 * self.P * self.P, self.D, rng=rng)
        self.pos = _table(8, 8, self.D, seed=3)
        self.cls = _table(1, 1, self.D, seed=4)
        self.ln = nn.LayerNorm(self.D)
        self.mlp = nn.Linear(self.D, self.D, rng=rng)
        self.head = nn.Linear(self.D, 5, rng=rng)

    def forward(self, x):
        b, c, h, w = x.shape
        gh, gw = h // self.P, w // self.P
        p = x.reshape(b, c, gh, self.P, gw, self.P).transpose(0, 2, 4, 1, 3, 5).reshape(b, gh, gw, -1)
        t = self.proj(p) + self.pos[:gh, :gw]
        t = t.reshape(b, gh * gw, self.D)
        t = np.concatenate([np.broadcast_to(self.cls, (b, 1, self.D)), t], axis=1)
        t = t + F.gelu(self.mlp(self.ln(t)))
        return self.head(t[:, 0])


def _vit() -> ZooModel:
    return ZooModel(
        "vit_patchify", "4x4 patch reshape + 8x8 position table: h, w = 4*k, k <= 8",
        PatchViT(_rng(11)).eval(),
        lambda batch, h, w: (_randn(batch, 3, h, w),),
        lambda: {"x": {0: Dim("batch", max=8), 2: Dim("h", max=64), 3: Dim("w", max=64)}},
        dict(batch=2, h=16, w=24),
        lambda batch, h, w: 1 <= batch <= 8 and h % 4 == 0 and w % 4 == 0 and 4 <= h <= 32 and 4 <= w <= 32,
        dict(batch=[1, 8], h=[4, 6, 16, 32, 36, 64], w=[4, 30, 32, 40]))


# -- 3. UNet with conv downsampling ----------------------------------------------------------
class ConvUNet(nn.Module):
    """(B, 3, H, W) -> (B, 3, H, W): two 3x3 stride-2 (padding 1) downsamplings, nearest 2x
    upsampling by repeat, skip additions.

    Sizes: down maps h to (h-1)//2 + 1, up doubles it; the skips need 2*down(h) == h at both
    levels, so h and w multiples of 4.
    """

    def __init__(self, rng):
        super().__init__()
        self.inc = nn.Conv2d(3, 4, 3, padding=1, rng=rng)
        self.d1 = nn.Conv2d(4, 4, 3, stride=2, padding=1, rng=rng)
        self.d2 = nn.Conv2d(4, 4, 3, stride=2, padding=1, rng=rng)
        self.u1 = nn.Conv2d(4, 4, 3, padding=1, rng=rng)
        self.u0 = nn.Conv2d(4, 4, 3, padding=1, rng=rng)
        self.out = nn.Conv2d(4, 3, 1, rng=rng)

    @staticmethod
    def _up(x):
        return x.repeat(2, axis=2).repeat(2, axis=3)

    def forward(self, x):
        s0 = F.relu(self.inc(x))
        s1 = F.relu(self.d1(s0))
        y = F.relu(self.d2(s1))
        y = F.relu(self.u1(self._up(y))) + s1
        y = F.relu(self.u0(self._up(y))) + s0
        return self.out(y)


def _unet_conv() -> ZooModel:
    return ZooModel(
        "unet_conv", "2 stride-2 conv downsamplings + repeat upsampling + skips: h, w = 4*k",
        ConvUNet(_rng(12)).eval(),
        lambda batch, h, w: (_randn(batch, 3, h, w),),
        lambda: {"x": {0: Dim("batch", max=4), 2: Dim("h", max=64), 3: Dim("w", max=64)}},
        dict(batch=2, h=16, w=24),
        lambda batch, h, w: 1 <= batch <= 4 and h % 4 == 0 and w % 4 == 0 and 4 <= h <= 64 and 4 <= w <= 64,
        dict(batch=[1, 4], h=[2, 4, 6, 8, 14, 64], w=[4, 10, 12, 64]))


# -- 4. UNet with reshape pooling ------------------------------------------------------------
class PoolUNet(nn.Module):
    """(B, 3, H, W) -> (B, 3, H, W): three 2x2 mean-poolings written as reshapes, repeat
    upsampling, skip additions, a 3x3 conv per level.

    Sizes: each pooling needs an even size, so h and w multiples of 8.
    """

    def __init__(self, rng):
        super().__init__()
        self.inc = nn.Conv2d(3, 4, 3, padding=1, rng=rng)
        self.mid = nn.ModuleList([nn.Conv2d(4, 4, 3, padding=1, rng=rng) for _ in range(3)])
        self.out = nn.Conv2d(4, 3, 1, rng=rng)

    @staticmethod
    def _down(x):
        b, c, h, w = x.shape
        return x.reshape(b, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))

    @staticmethod
    def _up(x):
        return x.repeat(2, axis=2).repeat(2, axis=3)

    def forward(self, x):
        s0 = F.relu(self.inc(x))
        s1 = self._down(s0)
        s2 = self._down(s1)
        y = F.relu(self.mid[0](self._down(s2)))
        y = F.relu(self.mid[1](self._up(y) + s2))
        y = F.relu(self.mid[2](self._up(y) + s1))
        return self.out(self._up(y) + s0)


def _unet_pool() -> ZooModel:
    return ZooModel(
        "unet_reshape_pool", "3 levels of 2x2 reshape pooling + skips: h, w = 8*k",
        PoolUNet(_rng(13)).eval(),
        lambda batch, h, w: (_randn(batch, 3, h, w),),
        lambda: {"x": {0: Dim("batch", max=4), 2: Dim("h", max=64), 3: Dim("w", max=64)}},
        dict(batch=2, h=16, w=24),
        lambda batch, h, w: 1 <= batch <= 4 and h % 8 == 0 and w % 8 == 0 and 8 <= h <= 64 and 8 <= w <= 64,
        dict(batch=[1, 4], h=[4, 8, 12, 64], w=[8, 20, 24, 64]))


# -- 5. Swin-style shifted windows -----------------------------------------------------------
class SwinBlock(nn.Module):
    """(B, H, W, C) -> same: cyclic shift by 2, 4x4 window partition by reshape, window
    attention (2 heads) with a learned 16x16 relative bias, window merge, shift back.

    Sizes: h and w multiples of the window (4).
    """

    WIN, C, HEADS = 4, 8, 2

    def __init__(self, rng):
        super().__init__()
        self.ln = nn.LayerNorm(self.C)
        self.qkv = nn.Linear(self.C, 3 * self.C, rng=rng)
        self.proj = nn.Linear(self.C, self.C, rng=rng)
        self.bias = _table(self.HEADS, self.WIN ** 2, self.WIN ** 2, seed=5)

    def forward(self, x):
        b, h, w, c = x.shape
        k, n, hd = self.WIN, self.WIN ** 2, self.C // self.HEADS
        y = np.roll(self.ln(x), shift=(-2, -2), axis=(1, 2))
        win = y.reshape(b, h // k, k, w // k, k, c).transpose(0, 1, 3, 2, 4, 5).reshape(-1, n, c)
        qkv = self.qkv(win).reshape(-1, n, 3, self.HEADS, hd).transpose(2, 0, 3, 1, 4)
        q, kk, v = qkv[0], qkv[1], qkv[2]
        att = F.softmax(q @ kk.swapaxes(-1, -2) / math.sqrt(hd) + self.bias, dim=-1)
        o = (att @ v).transpose(0, 2, 1, 3).reshape(-1, n, c)
        o = self.proj(o).reshape(b, h // k, w // k, k, k, c).transpose(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return x + np.roll(o, shift=(2, 2), axis=(1, 2))


def _swin() -> ZooModel:
    return ZooModel(
        "swin_windows", "4x4 window partition/merge by reshape: h, w = 4*k", SwinBlock(_rng(14)).eval(),
        lambda batch, h, w: (_randn(batch, h, w, 8),),
        lambda: {"x": {0: Dim("batch", max=4), 1: Dim("h", max=64), 2: Dim("w", max=64)}},
        dict(batch=2, h=8, w=12),
        lambda batch, h, w: 1 <= batch <= 4 and h % 4 == 0 and w % 4 == 0 and 4 <= h <= 64 and 4 <= w <= 64,
        dict(batch=[1, 4], h=[4, 6, 8, 64], w=[3, 4, 12, 62]))


# -- 6. KV-cache decoder step with a position table -----------------------------------------
class DecoderStep(nn.Module):
    """One decoding step: x (B, 1, D) plus caches (B, H, T, hd) -> (out (B, 1, D), caches (B, H, T+1, hd)).

    The new token's position is T, read from a 32-row learned table as ``wpe[T:T+1]`` (GPT
    style), so T <= 31; both caches have the same length.
    """

    D, HEADS, POS = 16, 2, 32

    def __init__(self, rng):
        super().__init__()
        self.wpe = _table(self.POS, self.D, seed=6)
        self.ln = nn.LayerNorm(self.D)
        self.qkv = nn.Linear(self.D, 3 * self.D, rng=rng)
        self.proj = nn.Linear(self.D, self.D, rng=rng)

    def forward(self, x, k_cache, v_cache):
        b = x.shape[0]
        t = k_cache.shape[2]
        hd = self.D // self.HEADS
        h = x + self.wpe[t:t + 1]
        qkv = self.qkv(self.ln(h)).reshape(b, 1, 3, self.HEADS, hd).transpose(2, 0, 3, 1, 4)
        k = np.concatenate([k_cache, qkv[1]], axis=2)
        v = np.concatenate([v_cache, qkv[2]], axis=2)
        o = F.scaled_dot_product_attention(qkv[0], k, v)
        return h + self.proj(o.transpose(0, 2, 1, 3).reshape(b, 1, self.D)), k, v


def _kv_step() -> ZooModel:
    def inputs(batch, past_k, past_v):
        return (_randn(batch, 1, 16), _randn(batch, 2, past_k, 8, seed=2), _randn(batch, 2, past_v, 8, seed=3))

    def spec():
        batch = Dim("batch", max=8)
        return {"x": {0: batch}, "k_cache": {0: batch, 2: Dim("past_k", max=64)},
                "v_cache": {0: batch, 2: Dim("past_v", max=64)}}

    return ZooModel(
        "kv_decoder_step", "GPT decoding step: caches equal, past <= 31 (32-row position table)",
        DecoderStep(_rng(15)).eval(), inputs, spec,
        dict(batch=2, past_k=5, past_v=5),
        lambda batch, past_k, past_v: 1 <= batch <= 8 and past_v == past_k and 1 <= past_k <= 31,
        dict(batch=[1, 8], past_k=[1, 5, 31, 32, 40], past_v=[1, 5, 31, 32]))


# -- 7. MoE routing --------------------------------------------------------------------------
class MoE(nn.Module):
    """(B, S, D) -> same: a softmax router, top-2 of 4 experts by argsort, gates renormalized,
    experts computed densely and combined by one-hot gate weights. No shape constraint."""

    D, E = 16, 4

    def __init__(self, rng):
        super().__init__()
        self.ln = nn.LayerNorm(self.D)
        self.router = nn.Linear(self.D, self.E, rng=rng)
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(self.D, 32, rng=rng), nn.GELU(),
                                                    nn.Linear(32, self.D, rng=rng)) for _ in range(self.E)])

    def forward(self, x):
        h = self.ln(x)
        probs = F.softmax(self.router(h), dim=-1)
        top = np.argsort(-probs, axis=-1)[..., :2]
        gate = np.take_along_axis(probs, top, axis=-1)
        gate = gate / gate.sum(axis=-1, keepdims=True)
        out = np.zeros_like(x)
        for e, expert in enumerate(self.experts):
            weight = (gate * (top == e)).sum(axis=-1, keepdims=True)
            out = out + weight * expert(h)
        return x + out


def _moe() -> ZooModel:
    return ZooModel(
        "moe_routing", "top-2 of 4 experts, dense combine: every size", MoE(_rng(16)).eval(),
        lambda batch, seq: (_randn(batch, seq, 16),),
        lambda: {"x": {0: Dim("batch", max=8), 1: Dim("seq", max=64)}},
        dict(batch=2, seq=6),
        lambda batch, seq: 1 <= batch <= 8 and 1 <= seq <= 64,
        dict(batch=[1, 8, 9], seq=[1, 6, 64, 65]))


# -- 8. A Python loop over the sequence ------------------------------------------------------
class LoopRNN(nn.Module):
    """(B, S, D) -> (B, S, H): an Elman RNN unrolled by ``for t in range(x.shape[1])``.

    The loop's trip count is a Python int: the program is unrolled for the example's S, so
    the widest contract pins seq to it (a constant).
    """

    D, H = 8, 16

    def __init__(self, rng):
        super().__init__()
        self.wx = nn.Linear(self.D, self.H, rng=rng)
        self.wh = nn.Linear(self.H, self.H, bias=False, rng=rng)

    def forward(self, x):
        state = np.zeros((x.shape[0], self.H), dtype=x.dtype)
        outs = []
        for t in range(x.shape[1]):
            state = np.tanh(self.wx(x[:, t]) + self.wh(state))
            outs.append(state)
        return np.stack(outs, axis=1)


def _loop() -> ZooModel:
    return ZooModel(
        "loop_over_seq", "for t in range(seq): unrolled, seq = example", LoopRNN(_rng(17)).eval(),
        lambda batch, seq: (_randn(batch, seq, 8),),
        lambda: {"x": {0: Dim("batch", max=8), 1: Dim("seq", max=32)}},
        dict(batch=2, seq=6),
        lambda batch, seq: 1 <= batch <= 8 and seq == 6,
        dict(batch=[1, 8], seq=[1, 5, 6, 7]),
        # eager runs every seq; only the example's trip count is the example's program
        branch=lambda sizes, outs: sizes["seq"] == 6)


# -- 9. Concatenated heads over a fixed context ----------------------------------------------
class ConcatHeads(nn.Module):
    """prefix (B, T, D) and patches (B, P, D) -> (B, 32, D): the two streams are concatenated
    into a fixed 32-slot context with a full learned position table (no slice), then attention
    computed head by head and the heads concatenated.

    Sizes: T + P == 32, i.e. P = 32 - T (a decreasing relation), T in [1, 31].
    """

    D, HEADS, CTX = 16, 2, 32

    def __init__(self, rng):
        super().__init__()
        self.prefix_proj = nn.Linear(self.D, self.D, rng=rng)
        self.pos = _table(self.CTX, self.D, seed=7)
        self.q = nn.ModuleList([nn.Linear(self.D, self.D // self.HEADS, rng=rng) for _ in range(self.HEADS)])
        self.k = nn.ModuleList([nn.Linear(self.D, self.D // self.HEADS, rng=rng) for _ in range(self.HEADS)])
        self.v = nn.ModuleList([nn.Linear(self.D, self.D // self.HEADS, rng=rng) for _ in range(self.HEADS)])
        self.out = nn.Linear(self.D, self.D, rng=rng)

    def forward(self, prefix, patches):
        x = np.concatenate([self.prefix_proj(prefix), patches], axis=1) + self.pos
        heads = [F.scaled_dot_product_attention(q(x), k(x), v(x)) for q, k, v in zip(self.q, self.k, self.v)]
        return x + self.out(np.concatenate(heads, axis=-1))


def _concat_heads() -> ZooModel:
    def spec():
        batch = Dim("batch", max=8)
        return {"prefix": {0: batch, 1: Dim("t", max=32)}, "patches": {0: batch, 1: Dim("p", max=32)}}

    return ZooModel(
        "concat_heads", "two streams into a fixed 32-slot context: p = 32 - t", ConcatHeads(_rng(18)).eval(),
        lambda batch, t, p: (_randn(batch, t, 16), _randn(batch, p, 16, seed=2)), spec,
        dict(batch=2, t=12, p=20),
        lambda batch, t, p: 1 <= batch <= 8 and p == 32 - t and 1 <= t <= 31,
        dict(batch=[1, 8], t=[1, 12, 20, 31, 32], p=[1, 12, 20, 21]))


# -- 10. Fusion of two streams with a key-padding mask over both -----------------------------
class FusionMask(nn.Module):
    """text (B, T, D), image (B, P, D), mask (B, L) -> (B, T+P, D): the streams are
    concatenated and attend under an additive key-padding mask over the joint sequence.

    Sizes: L == T + P (a relation over two roots).
    """

    D = 16

    def __init__(self, rng):
        super().__init__()
        self.qkv = nn.Linear(self.D, 3 * self.D, rng=rng)
        self.out = nn.Linear(self.D, self.D, rng=rng)

    def forward(self, text, image, mask):
        x = np.concatenate([text, image], axis=1)
        q, k, v = np.split(self.qkv(x), 3, axis=-1)
        scores = q @ k.swapaxes(-1, -2) / math.sqrt(self.D) + mask[:, None, :]
        return x + self.out(F.softmax(scores, dim=-1) @ v)


def _fusion() -> ZooModel:
    def inputs(batch, t, p, l):
        return (_randn(batch, t, 16), _randn(batch, p, 16, seed=2), np.zeros((batch, l), np.float32))

    def spec():
        batch = Dim("batch", max=8)
        return {"text": {0: batch, 1: Dim("t", max=32)}, "image": {0: batch, 1: Dim("p", max=32)},
                "mask": {0: batch, 1: Dim("l", max=64)}}

    return ZooModel(
        "fusion_mask", "key-padding mask over concatenated streams: l = t + p", FusionMask(_rng(19)).eval(),
        inputs, spec, dict(batch=2, t=5, p=7, l=12),
        lambda batch, t, p, l: 1 <= batch <= 8 and 1 <= t <= 32 and 1 <= p <= 32 and l == t + p,
        dict(batch=[2], t=[1, 5, 32], p=[1, 7, 32], l=[2, 12, 33, 64]))


# -- 11. Grouped-query attention with rotary tables ------------------------------------------
class GQA(nn.Module):
    """(B, S, D) -> same: 4 query heads sharing 2 key/value heads (repeat), rotary embedding
    from 32-row cos/sin tables sliced ``[:S]``, causal attention.

    Sizes: S <= 32 (the rotary tables).
    """

    D, HQ, HKV, HD, POS = 16, 4, 2, 4, 32

    def __init__(self, rng):
        super().__init__()
        self.wq = nn.Linear(self.D, self.HQ * self.HD, bias=False, rng=rng)
        self.wk = nn.Linear(self.D, self.HKV * self.HD, bias=False, rng=rng)
        self.wv = nn.Linear(self.D, self.HKV * self.HD, bias=False, rng=rng)
        self.wo = nn.Linear(self.HQ * self.HD, self.D, bias=False, rng=rng)
        inv = 1.0 / (10000 ** (np.arange(0, self.HD, 2) / self.HD))
        ang = np.arange(self.POS)[:, None] * inv[None, :]
        ang = np.concatenate([ang, ang], axis=-1).astype(np.float32)
        self.register_buffer("cos", np.cos(ang))
        self.register_buffer("sin", np.sin(ang))

    def _rope(self, x, cos, sin):
        half = self.HD // 2
        rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return x * cos + rot * sin

    def forward(self, x):
        b, s, _ = x.shape
        q = self.wq(x).reshape(b, s, self.HQ, self.HD).transpose(0, 2, 1, 3)
        k = self.wk(x).reshape(b, s, self.HKV, self.HD).transpose(0, 2, 1, 3)
        v = self.wv(x).reshape(b, s, self.HKV, self.HD).transpose(0, 2, 1, 3)
        cos, sin = self.cos[:s], self.sin[:s]
        q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
        rep = self.HQ // self.HKV
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.wo(o.transpose(0, 2, 1, 3).reshape(b, s, self.HQ * self.HD))


def _gqa() -> ZooModel:
    return ZooModel(
        "gqa_rope", "grouped-query attention, 32-row rotary tables: seq <= 32", GQA(_rng(20)).eval(),
        lambda batch, seq: (_randn(batch, seq, 16),),
        lambda: {"x": {0: Dim("batch", max=8), 1: Dim("seq", max=64)}},
        dict(batch=2, seq=6),
        lambda batch, seq: 1 <= batch <= 8 and 1 <= seq <= 32,
        dict(batch=[1, 8], seq=[1, 6, 32, 33, 64]))


# -- 12. Dilated conv stack (TCN) ------------------------------------------------------------
class DilatedTCN(nn.Module):
    """(B, 4, L) -> (B, 3): 'valid' kernel-3 convs with dilations 1, 2, 4, each a residual
    with the input cropped on the left (``x[:, :, 2*d:]``), then a mean over time and a linear.

    Sizes: the receptive field is 15, so L >= 15.
    """

    C, DILATIONS = 4, (1, 2, 4)

    def __init__(self, rng):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(self.C, self.C, 3, dilation=d, rng=rng) for d in self.DILATIONS])
        self.head = nn.Linear(self.C, 3, rng=rng)

    def forward(self, x):
        for d, conv in zip(self.DILATIONS, self.convs):
            x = x[:, :, 2 * d:] + F.relu(conv(x))
        return self.head(x.mean(axis=-1))


def _tcn() -> ZooModel:
    return ZooModel(
        "dilated_tcn", "dilations 1,2,4 valid convs with cropped residuals: L >= 15", DilatedTCN(_rng(21)).eval(),
        lambda batch, length: (_randn(batch, 4, length),),
        lambda: {"x": {0: Dim("batch", max=8), 2: Dim("length", max=128)}},
        dict(batch=2, length=40),
        lambda batch, length: 1 <= batch <= 8 and 15 <= length <= 128,
        dict(batch=[1, 8], length=[8, 14, 15, 16, 128, 129]))


# -- 13. Flattened linear head ---------------------------------------------------------------
class FlattenHead(nn.Module):
    """(B, 1, H, W) -> (B, 10): two 3x3 stride-2 (padding 1) convs, flatten, Linear(4*4*4, 10).

    Sizes: the flatten needs a 4x4 map after two halvings, i.e. (h-1)//2//2 + 1 == 4, so h in
    [13, 16] (and w alike): a product equality of the downsampled sizes, fixed by pinning the
    downsampled sizes (4 and 4), which leaves a range on each input size.
    """

    def __init__(self, rng):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, stride=2, padding=1, rng=rng)
        self.c2 = nn.Conv2d(4, 4, 3, stride=2, padding=1, rng=rng)
        self.fc = nn.Linear(64, 10, rng=rng)

    def forward(self, x):
        y = F.relu(self.c2(F.relu(self.c1(x))))
        return self.fc(y.reshape(y.shape[0], -1))


def _flatten() -> ZooModel:
    return ZooModel(
        "flatten_head", "conv stem + flatten into Linear(64): h, w in [13, 16]", FlattenHead(_rng(22)).eval(),
        lambda batch, h, w: (_randn(batch, 1, h, w),),
        lambda: {"x": {0: Dim("batch", max=8), 2: Dim("h", max=64), 3: Dim("w", max=64)}},
        dict(batch=2, h=16, w=16),
        lambda batch, h, w: 1 <= batch <= 8 and 13 <= h <= 16 and 13 <= w <= 16,
        dict(batch=[1, 8], h=[12, 13, 16, 17, 32], w=[12, 13, 16, 17]))


# -- 14. Multi-scale patch embedding of a time series ---------------------------------------
class MultiScalePatches(nn.Module):
    """(B, L) -> (B, 3): the series cut into patches of 8, 12 and 16 samples (three reshapes of
    the same axis), each scale embedded and mean-pooled, the scales concatenated.

    Sizes: L a multiple of lcm(8, 12, 16) = 48.
    """

    D, PATCHES = 8, (8, 12, 16)

    def __init__(self, rng):
        super().__init__()
        self.embed = nn.ModuleList([nn.Linear(p, self.D, rng=rng) for p in self.PATCHES])
        self.head = nn.Linear(self.D * len(self.PATCHES), 3, rng=rng)

    def forward(self, x):
        b, n = x.shape
        pooled = [emb(x.reshape(b, n // p, p)).mean(axis=1) for p, emb in zip(self.PATCHES, self.embed)]
        return self.head(np.concatenate(pooled, axis=-1))


def _multiscale() -> ZooModel:
    return ZooModel(
        "multiscale_patches", "patches of 8, 12, 16 samples of one axis: length = 48*k",
        MultiScalePatches(_rng(23)).eval(),
        lambda batch, length: (_randn(batch, length),),
        lambda: {"x": {0: Dim("batch", max=8), 1: Dim("length", max=480)}},
        dict(batch=2, length=96),
        lambda batch, length: 1 <= batch <= 8 and length % 48 == 0 and 48 <= length <= 480,
        dict(batch=[1, 8], length=[24, 48, 72, 96, 144, 480, 528]))


# -- 15. Hourglass token merging with a conditioning stream ----------------------------------
class HourglassMerge(nn.Module):
    """x (B, S, D), cond (B, C, D) -> (B, S/2, D): adjacent token pairs merged by a reshape
    (B, S/2, 2D) and a linear (hourglass transformers' shortening), then added to a
    conditioning stream at the shortened rate.

    Sizes: S = 2*_s (the pair reshape) and C = _s (the addition): a fix that unlocks a relation.
    """

    D = 8

    def __init__(self, rng):
        super().__init__()
        self.merge = nn.Linear(2 * self.D, self.D, rng=rng)
        self.ln = nn.LayerNorm(self.D)

    def forward(self, x, cond):
        b, s, d = x.shape
        return self.ln(self.merge(x.reshape(b, s // 2, 2 * d)) + cond)


def _hourglass() -> ZooModel:
    def spec():
        batch = Dim("batch", max=8)
        return {"x": {0: batch, 1: Dim("seq", max=64)}, "cond": {0: batch, 1: Dim("cond", max=64)}}

    return ZooModel(
        "hourglass_merge", "pair-merge reshape + a half-rate stream: seq = 2*_seq, cond = _seq",
        HourglassMerge(_rng(24)).eval(),
        lambda batch, seq, cond: (_randn(batch, seq, 8), _randn(batch, cond, 8, seed=2)), spec,
        dict(batch=2, seq=12, cond=6),
        lambda batch, seq, cond: 1 <= batch <= 8 and seq % 2 == 0 and 2 <= seq <= 64 and cond * 2 == seq,
        dict(batch=[1, 8], seq=[2, 11, 12, 64], cond=[1, 6, 32, 33]),
        # cond of length 1 broadcasts over the merged tokens: another branch (output length cond)
        branch=lambda sizes, outs: outs[0].shape[1] == sizes["seq"] // 2)


# -- 16. WaveNet-style stack with a conditioning input at the output rate -------------------
class CondWaveNet(nn.Module):
    """x (B, 4, L), cond (B, 4, Lc) -> (B, 4, L - 14): the dilated 'valid' stack of ``DilatedTCN``
    (receptive field 15, cropped residuals), then a conditioning signal given at the output
    length is added.

    Sizes: L >= 15 and Lc = L - 14 (an offset relation behind the crops' Max/Min).
    """

    C, DILATIONS = 4, (1, 2, 4)

    def __init__(self, rng):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(self.C, self.C, 3, dilation=d, rng=rng) for d in self.DILATIONS])
        self.cond_proj = nn.Conv1d(self.C, self.C, 1, rng=rng)

    def forward(self, x, cond):
        for d, conv in zip(self.DILATIONS, self.convs):
            x = x[:, :, 2 * d:] + np.tanh(conv(x))
        return x + self.cond_proj(cond)


def _wavenet() -> ZooModel:
    def spec():
        batch = Dim("batch", max=8)
        return {"x": {0: batch, 2: Dim("length", max=128)}, "cond": {0: batch, 2: Dim("cond", max=128)}}

    return ZooModel(
        "wavenet_cond", "dilated valid stack + conditioning at the output rate: cond = length - 14",
        CondWaveNet(_rng(25)).eval(),
        lambda batch, length, cond: (_randn(batch, 4, length), _randn(batch, 4, cond, seed=2)), spec,
        dict(batch=2, length=40, cond=26),
        lambda batch, length, cond: 1 <= batch <= 8 and 15 <= length <= 128 and cond == length - 14,
        dict(batch=[1, 8], length=[14, 15, 40, 128], cond=[1, 26, 27, 114]),
        # a length-1 conditioning signal broadcasts over time: another branch
        branch=lambda sizes, outs: sizes["cond"] == sizes["length"] - 14)


# -- 17. Video model over the last frames of a clip ------------------------------------------
class LastFrames(nn.Module):
    """clip (B, T, D), motion (B, M, D) -> (B, D): the last 4 frames of the clip (``clip[:, -4:]``)
    plus 4 motion vectors, a learned per-frame weight, mean over frames.

    Sizes: T >= 4 (the example's branch of ``Min(4, T)``) and M = 4 (a constant).
    """

    D, K = 8, 4

    def __init__(self, rng):
        super().__init__()
        self.proj = nn.Linear(self.D, self.D, rng=rng)
        self.frame_w = _table(self.K, 1, seed=8, std=1.0)

    def forward(self, clip, motion):
        recent = clip[:, -self.K:] + self.proj(motion)
        return (recent * self.frame_w).mean(axis=1)


def _last_frames() -> ZooModel:
    def spec():
        batch = Dim("batch", max=8)
        return {"clip": {0: batch, 1: Dim("frames", max=64)}, "motion": {0: batch, 1: Dim("moves", max=16)}}

    return ZooModel(
        "video_last_frames", "clip[:, -4:] + 4 motion vectors: frames >= 4, moves = 4",
        LastFrames(_rng(26)).eval(),
        lambda batch, frames, moves: (_randn(batch, frames, 8), _randn(batch, moves, 8, seed=2)), spec,
        dict(batch=2, frames=10, moves=4),
        lambda batch, frames, moves: 1 <= batch <= 8 and 4 <= frames <= 64 and moves == 4,
        dict(batch=[1, 8], frames=[1, 3, 4, 10, 64], moves=[1, 3, 4, 16]),
        # a single motion vector broadcasts over the frames: another branch
        branch=lambda sizes, outs: sizes["moves"] == 4 and sizes["frames"] >= 4)


_BUILDERS = [_cnn, _vit, _unet_conv, _unet_pool, _swin, _kv_step, _moe, _loop, _concat_heads, _fusion, _gqa,
             _tcn, _flatten, _multiscale, _hourglass, _wavenet, _last_frames]


def zoo() -> list[ZooModel]:
    """Fresh instances of every zoo model (seeded: same weights every call)."""
    return [b() for b in _BUILDERS]


def by_name(name: str) -> ZooModel:
    """A fresh instance of the zoo model called ``name``."""
    for zm in zoo():
        if zm.name == name:
            return zm
    raise KeyError(f"no zoo model {name!r}")


# -- checks ----------------------------------------------------------------------------------
def _flat(value) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    if isinstance(value, dict):
        return [a for k in sorted(value) for a in _flat(value[k])]
    return [np.asarray(value)]


def eager(zm: ZooModel, sizes: dict) -> tuple[bool, Optional[list]]:
    """(ran on the example's branch, outputs or None): raising counts as refusing."""
    args = zm.make_inputs(**sizes)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            outs = _flat(zm.model(*args))
        except Exception:  # eager numpy refuses this size
            return False, None
    same = all(o.size > 0 and np.all(np.isfinite(o)) for o in outs)
    if zm.branch is not None:
        same = same and zm.branch(sizes, outs)
    return same, outs


def check_admits(zm: ZooModel) -> dict:
    """Hold ``admits`` against eager numpy on the grid.

    Returns:
        {"bad": [problems], "eager_only": [sizes eager runs on the example's branch that admits
        refuses: the declared maxima, or what no fix form expresses]}.
    """
    bad, eager_only = [], []
    for sizes in zm.points():
        same, _ = eager(zm, sizes)
        if zm.admits(**sizes) and not same:
            bad.append(f"admits {sizes} but eager numpy refuses it or takes another branch")
        elif same and not zm.admits(**sizes):
            eager_only.append(sizes)
    if not zm.admits(**zm.example):
        bad.append(f"the example {zm.example} is not admitted")
    return {"bad": bad, "eager_only": eager_only}


@dataclass
class RefineResult:
    """What one refine loop did.

    ``rounds``: refine steps applied before the export that succeeded (0: the naive spec
    exported); ``ep``: the program or None; ``outcome``: "ok", "no fix", "cap" (5 rounds),
    or the error type that stopped the loop; ``errors``: the text of each error seen.
    """

    rounds: int
    ep: Any
    outcome: str
    errors: list = field(default_factory=list)
    first_error_s: Optional[float] = None
    success_s: Optional[float] = None
    spec: Any = None


def refine_loop(zm: ZooModel, max_rounds: int = 5) -> RefineResult:
    """export; on ConstraintViolationError apply the suggested fixes and export again (<= max_rounds)."""
    import tensorplay_export as tpe

    spec = zm.spec()
    args = zm.make_inputs(**zm.example)
    errors: list = []
    first = None
    t0 = time.perf_counter()
    rounds = 0
    while True:
        try:
            ep = tpe.export(zm.model, *args, dynamic_shapes=spec)
        except (tpe.ConstraintViolationError, tpe.ConstraintsExceededError) as err:
            if first is None:
                first = time.perf_counter() - t0
            errors.append(f"{type(err).__name__}: {err}")
            if rounds >= max_rounds:
                return RefineResult(rounds, None, "cap", errors, first, None, spec)
            try:
                spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec)
            except ValueError as rerr:
                errors.append(f"refine: {rerr}")
                return RefineResult(rounds, None, "no fix", errors, first, None, spec)
            rounds += 1
        except Exception as err:  # an unsupported op, a data-dependent guard, ...
            if first is None:
                first = time.perf_counter() - t0
            errors.append(f"{type(err).__name__}: {err}")
            return RefineResult(rounds, None, type(err).__name__, errors, first, None, spec)
        else:
            return RefineResult(rounds, ep, "ok", errors, first, time.perf_counter() - t0, spec)


def check_contract(zm: ZooModel, ep: Any) -> dict:
    """The program's contract against ``admits`` on the grid.

    Returns:
        {"narrower": [sizes admitted but refused], "wider": [sizes refused by admits but run],
         "wrong": [admitted sizes whose output differs from eager, or that fail otherwise]}.
    """
    import tensorplay_export as tpe

    mod = ep.module()
    out = {"narrower": [], "wider": [], "wrong": []}
    for sizes in zm.points():
        args = zm.make_inputs(**sizes)
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = mod(*args)
        except tpe.ConstraintsExceededError:
            if zm.admits(**sizes):
                out["narrower"].append(sizes)
            continue
        except Exception as err:
            out["wrong"].append(f"{sizes}: {type(err).__name__}: {str(err)[:120]}")
            continue
        if not zm.admits(**sizes):
            out["wider"].append(sizes)
            continue
        _, want = eager(zm, sizes)
        for g, w in zip(_flat(got), want):
            if g.shape != w.shape or g.dtype != w.dtype or not np.allclose(g, w, rtol=1e-4, atol=1e-5):
                out["wrong"].append(f"{sizes}: output differs from eager ({g.shape} vs {w.shape})")
                break
    return out


def contract_notes(res: dict) -> list[str]:
    """Short table notes: "narrower: refuses ...", "wider: admits ...", "wrong: ..."."""
    notes = []
    for key, verb in (("narrower", "refuses"), ("wider", "admits")):
        if res[key]:
            shown = ", ".join(",".join(f"{k}={v}" for k, v in s.items()) for s in res[key][:2])
            more = f" (+{len(res[key]) - 2})" if len(res[key]) > 2 else ""
            notes.append(f"{key}: {verb} {shown}{more}")
    if res["wrong"]:
        notes.append(f"wrong: {res['wrong'][0]}")
    return notes
