"""Basic layers: Linear, Embedding, normalization, dropout, activations, Flatten, Identity.

Every layer takes ``rng=`` (Generator, int seed, or None for the module-wide generator,
see `init.manual_seed`) and ``dtype=`` (default float32) where it owns parameters.
"""

from __future__ import annotations

import math

import numpy as np

from tensorplay_export.nn import functional as F
from tensorplay_export.nn import init
from tensorplay_export.nn.module import Module, Parameter

__all__ = ["Linear", "Embedding", "LayerNorm", "RMSNorm", "Dropout", "ReLU", "GELU", "SiLU", "Sigmoid",
           "Tanh", "Softmax", "LogSoftmax", "Flatten", "Identity"]


def _shape_tuple(normalized_shape) -> tuple[int, ...]:
    return (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)


class Linear(Module):
    """y = x @ weight.T + bias.

    Shapes: input (*, in_features) -> output (*, out_features).
    Parameters: weight (out_features, in_features), bias (out_features,) when ``bias=True``;
    both U(-1/sqrt(in_features), 1/sqrt(in_features)).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, rng=None,
                 dtype=np.float32) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        rng = init.get_rng(rng)
        self.weight = Parameter(init.fan_in_uniform((out_features, in_features), in_features, rng, dtype))
        if bias:
            self.bias = Parameter(init.fan_in_uniform((out_features,), in_features, rng, dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """Lookup table: integer ids (*) -> vectors (*, embedding_dim).

    Parameters: weight (num_embeddings, embedding_dim), N(0, 1); the ``padding_idx`` row starts at zero.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, *, rng=None,
                 dtype=np.float32) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"padding_idx must be within num_embeddings, got {padding_idx}")
        self.padding_idx = padding_idx
        weight = init.normal((num_embeddings, embedding_dim), 1.0, rng, dtype)
        if padding_idx is not None:
            weight[padding_idx] = 0
        self.weight = Parameter(weight)

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    """Layer normalization over the trailing ``normalized_shape`` axes.

    Shapes: input (*, *normalized_shape) -> same. Parameters (``elementwise_affine``):
    weight (ones) and bias (zeros, when ``bias=True``), each of ``normalized_shape``.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 *, dtype=np.float32) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing axes, times ``weight`` (ones).

    Shapes: input (*, *normalized_shape) -> same. ``eps=None`` uses the input dtype's epsilon.
    """

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, *,
                 dtype=np.float32) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Dropout(Module):
    """Randomly zero elements with probability ``p`` in training mode; identity in eval mode.

    Shapes: any -> same.  The layer owns its random generator as module state: the
    non-persistent buffer ``generator_state`` (uint64, shape (6,): numpy's PCG64 state,
    see `F.generator_state`), advanced by every training-mode call.  So a training export
    draws its masks with a ``tpe.random.uniform`` op from that buffer and writes the next
    state back (a ``BUFFER_MUTATION``): a program's masks are the module's masks from the
    same state.  Not in `state_dict` (as in torch, dropout has no saved state).

    Args:
        p: the probability of zeroing an element, in [0, 1].
        rng: seeds the generator: an int seed (the stream of ``np.random.default_rng(seed)``),
            a ``np.random.Generator`` (a seed is drawn from it), or None (a seed is drawn from
            the module-wide generator, see `init.manual_seed`).

    Raises:
        ValueError: ``p`` outside [0, 1].
    """

    def __init__(self, p: float = 0.5, *, rng=None) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
            seed = int(rng)
        else:
            seed = int(init.get_rng(rng).integers(0, 2 ** 63))
        self.register_buffer("generator_state", F.generator_state(seed), persistent=False)

    def manual_seed(self, seed: int) -> "Dropout":
        """Restart the generator at ``np.random.default_rng(seed)``'s state; returns ``self``."""
        self.generator_state = F.generator_state(seed)
        return self

    def forward(self, x):
        y, self.generator_state = F.dropout_with_state(x, self.generator_state, self.p, self.training)
        return y

    def extra_repr(self) -> str:
        return f"p={self.p}"


class ReLU(Module):
    """max(x, 0). Shapes: any -> same."""

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """Gaussian error linear unit, ``approximate="none"`` (exact erf) or ``"tanh"``. Shapes: any -> same."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x). Shapes: any -> same."""

    def forward(self, x):
        return F.silu(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)). Shapes: any -> same."""

    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    """tanh(x). Shapes: any -> same."""

    def forward(self, x):
        return F.tanh(x)


class Softmax(Module):
    """Softmax along ``dim`` (default the last axis). Shapes: any -> same."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax(x)) along ``dim``. Shapes: any -> same."""

    def forward(self, x):
        return F.log_softmax(x, self.dim)


class Flatten(Module):
    """Merge axes ``start_dim..end_dim`` into one.

    Shapes: (d0, ..., d_start, ..., d_end, ...) -> (d0, ..., d_start*...*d_end, ...).
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        nd = x.ndim
        start = self.start_dim % nd if nd else 0
        end = self.end_dim % nd if nd else 0
        shape = tuple(x.shape)
        # The merged size is a product of sizes (symbolic during capture), not -1.
        merged = math.prod(shape[start:end + 1])
        return x.reshape(shape[:start] + (merged,) + shape[end + 1:])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Identity(Module):
    """Returns its input unchanged; accepts and ignores constructor arguments. Shapes: any -> same."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, x):
        return x
