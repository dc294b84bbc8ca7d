"""MultiheadAttention (torch's parameter layout and mask conventions)."""

from __future__ import annotations

import numpy as np

from tensorplay_export.nn import functional as F
from tensorplay_export.nn import init
from tensorplay_export.nn.layers import Linear
from tensorplay_export.nn.module import Module, Parameter

__all__ = ["MultiheadAttention"]


def _additive_mask(mask, dtype):
    """A torch-MHA mask (bool True = blocked, or float added) as a float mask of ``dtype``."""
    if mask.dtype == np.bool_:
        return np.where(mask, -np.inf, 0.0).astype(dtype)
    return mask.astype(dtype)


def _check_masks(attn_mask, key_padding_mask, n, h, tgt_len, src_len, unbatched):
    """torch's mask shape rules; a mask that would only broadcast is an error, not a silent pass.

    attn_mask: (L, S), or (N*num_heads, L, S) (unbatched: (num_heads, L, S)).
    key_padding_mask: (N, S) (unbatched: (S,)).

    Raises:
        ValueError: a mask of another rank or shape (the message gives both shapes).
    """
    if attn_mask is not None:
        shape = tuple(attn_mask.shape)
        if len(shape) == 2:
            want = (tgt_len, src_len)
        elif len(shape) == 3:
            want = (n * h, tgt_len, src_len)
        else:
            raise ValueError(f"MultiheadAttention: attn_mask must be 2-D (L, S) or 3-D (N*num_heads, L, S), "
                             f"got a {len(shape)}-D mask of shape {shape}")
        # compared size by size: during capture each equality is a recorded guard
        if any(not (a == b) for a, b in zip(shape, want)):
            what = "(L, S)" if len(shape) == 2 else "(N*num_heads, L, S)"
            raise ValueError(f"MultiheadAttention: the shape of the {len(shape)}-D attn_mask is {shape}, "
                             f"but should be {want} {what}")
    if key_padding_mask is not None:
        shape = tuple(key_padding_mask.shape)
        want = (src_len,) if unbatched else (n, src_len)
        if len(shape) != len(want) or any(not (a == b) for a, b in zip(shape, want)):
            raise ValueError(f"MultiheadAttention: key_padding_mask must have shape {want} "
                             f"({'(S,)' if unbatched else '(N, S)'}), got {shape}")


class MultiheadAttention(Module):
    """Multi-head attention: ``out_proj(concat_h softmax(q_h k_h^T / sqrt(d) + mask) v_h)``.

    Shapes (E = embed_dim, L = target length, S = source length, N = batch):
        query (L, N, E), key (S, N, kdim), value (S, N, vdim); with ``batch_first=True``
        (N, L, E) / (N, S, kdim) / (N, S, vdim); unbatched (L, E) / (S, kdim) / (S, vdim).
        key_padding_mask: (N, S) or (S,); bool True = ignore that key, or float added.
        attn_mask: (L, S) or (N*num_heads, L, S); bool True = not allowed, or float added.
    Returns:
        (attn_output, attn_weights): output shaped like ``query``; weights (N, L, S) averaged
        over heads (``average_attn_weights=True``) or (N, num_heads, L, S), or None when
        ``need_weights=False``. Unbatched inputs give unbatched results.
    Parameters:
        in_proj_weight (3E, E) and in_proj_bias (3E,) when kdim == vdim == E, else
        q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim);
        out_proj (Linear E -> E).
    Buffers:
        generator_state (6,) uint64, non-persistent, when ``dropout > 0``: the generator of
        the attention-weight dropout (see ``nn.Dropout``), advanced by each training call.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False, *, rng=None,
                 dtype=np.float32) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.batch_first = batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        rng = init.get_rng(rng)
        # Xavier-uniform projections and zero biases, as torch initializes them.
        if self._qkv_same_embed_dim:
            bound = (6.0 / (embed_dim + embed_dim)) ** 0.5
            self.in_proj_weight = Parameter(init.uniform((3 * embed_dim, embed_dim), -bound, bound, rng, dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.register_parameter("in_proj_weight", None)
            for name, d in (("q_proj_weight", embed_dim), ("k_proj_weight", self.kdim), ("v_proj_weight", self.vdim)):
                bound = (6.0 / (embed_dim + d)) ** 0.5
                self.register_parameter(name, Parameter(init.uniform((embed_dim, d), -bound, bound, rng, dtype)))
        if bias:
            self.in_proj_bias = Parameter(np.zeros(3 * embed_dim, dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, rng=rng, dtype=dtype)
        if bias:
            self.out_proj.bias[...] = 0
        self.rng = rng
        if dropout > 0.0:
            # The attention-weight dropout owns its generator as module state, as nn.Dropout
            # does, so a training export draws the same masks as eager from the same state.
            seed = int(rng.integers(0, 2 ** 63))
            self.register_buffer("generator_state", F.generator_state(seed), persistent=False)

    def _projections(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return ws, bs

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        unbatched = query.ndim == 2
        _check_masks(attn_mask, key_padding_mask, 1 if unbatched else query.shape[0 if self.batch_first else 1],
                     self.num_heads, query.shape[-2 if unbatched or self.batch_first else 0],
                     key.shape[-2 if unbatched or self.batch_first else 0], unbatched)
        if unbatched:
            query, key, value = query[None], key[None], value[None]
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask[None]
        elif not self.batch_first:
            query, key, value = (np.swapaxes(t, 0, 1) for t in (query, key, value))
        n, tgt_len = query.shape[0], query.shape[1]
        src_len = key.shape[1]
        h, d = self.num_heads, self.head_dim
        (wq, wk, wv), (bq, bk, bv) = self._projections()

        def heads(x, w, b, length):
            return F.linear(x, w, b).reshape(n, length, h, d).transpose(0, 2, 1, 3)  # (N, H, len, d)

        q = heads(query, wq, bq, tgt_len)
        k = heads(key, wk, bk, src_len)
        v = heads(value, wv, bv, src_len)
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) * (d ** -0.5)  # (N, H, L, S)
        if is_causal and attn_mask is None:
            rows, cols = np.arange(tgt_len), np.arange(src_len)
            scores = np.where(rows[:, None] >= cols[None, :], scores, -np.inf)
        if attn_mask is not None:
            m = _additive_mask(attn_mask, scores.dtype)
            if m.ndim == 3:  # (N*H, L, S)
                m = m.reshape(n, h, tgt_len, src_len)
            scores = scores + m
        if key_padding_mask is not None:
            scores = scores + _additive_mask(key_padding_mask, scores.dtype)[:, None, None, :]
        weights = F.softmax(scores, dim=-1)
        attn = weights
        if self.training and self.dropout > 0.0:
            attn, self.generator_state = F.dropout_with_state(weights, self.generator_state, self.dropout, True)
        out = np.matmul(attn, v).transpose(0, 2, 1, 3).reshape(n, tgt_len, self.embed_dim)
        out = self.out_proj(out)
        if unbatched:
            out = out[0]
        elif not self.batch_first:
            out = np.swapaxes(out, 0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = np.mean(weights, axis=1)
        return out, (weights[0] if unbatched else weights)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"
