"""Recurrent cells: RNNCell, GRUCell, LSTMCell (one time step, torch's parameter layout).

Parameters are torch's, by name and shape, so a torch state_dict loads by name:
``weight_ih`` (G*hidden, input), ``weight_hh`` (G*hidden, hidden), ``bias_ih`` and
``bias_hh`` (G*hidden,), with G = 1 (RNN), 3 (GRU, gates r, z, n) or 4 (LSTM, gates
i, f, g, o), stacked in that order. All start U(-1/sqrt(hidden), 1/sqrt(hidden)), drawn in
that order, as torch's ``reset_parameters``. A step is two `F.linear` calls and
elementwise numpy, so the batch stays dynamic.
"""

from __future__ import annotations

import numpy as np

from tensorplay_export.nn import functional as F
from tensorplay_export.nn import init
from tensorplay_export.nn.module import Module, Parameter

__all__ = ["RNNCell", "GRUCell", "LSTMCell"]


class _CellBase(Module):
    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, rng=None,
                 dtype=np.float32) -> None:
        super().__init__()
        if input_size < 1 or hidden_size < 1:
            raise ValueError(f"{type(self).__name__}: input_size and hidden_size must be positive, "
                             f"got {input_size} and {hidden_size}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rng = init.get_rng(rng)
        rows = self._gates * hidden_size
        bound = 1.0 / np.sqrt(hidden_size)
        self.weight_ih = Parameter(init.uniform((rows, input_size), -bound, bound, rng, dtype))
        self.weight_hh = Parameter(init.uniform((rows, hidden_size), -bound, bound, rng, dtype))
        if bias:
            self.bias_ih = Parameter(init.uniform((rows,), -bound, bound, rng, dtype))
            self.bias_hh = Parameter(init.uniform((rows,), -bound, bound, rng, dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def _batched(self, x):
        """(x as (B, input_size), whether the call was unbatched); checks the feature axis."""
        if x.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: expected input of 1 or 2 axes (batch, input_size), "
                             f"got shape {tuple(x.shape)}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input has {x.shape[-1]} features, expected "
                             f"input_size={self.input_size}")
        return (x[None], True) if x.ndim == 1 else (x, False)

    def _state(self, h, x, unbatched: bool):
        """A given state made 2-D, or zeros (B, hidden_size) in the input's dtype."""
        if h is None:
            return np.zeros((x.shape[0], self.hidden_size), x.dtype)
        return h[None] if unbatched else h

    def _gates_of(self, x, h):
        return F.linear(x, self.weight_ih, self.bias_ih), F.linear(h, self.weight_hh, self.bias_hh)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s if self.bias else s + ", bias=False"


class RNNCell(_CellBase):
    """Elman cell: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, act tanh or relu.

    Shapes: input (B, input_size) or (input_size,), hx same batch (hidden_size) or None (zeros)
    -> (B, hidden_size) or (hidden_size,).
    """

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", *,
                 rng=None, dtype=np.float32) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r} (expected 'tanh' or 'relu')")
        super().__init__(input_size, hidden_size, bias, rng=rng, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, unbatched = self._batched(input)
        h = self._state(hx, x, unbatched)
        gi, gh = self._gates_of(x, h)
        out = np.tanh(gi + gh) if self.nonlinearity == "tanh" else F.relu(gi + gh)
        return out[0] if unbatched else out


class GRUCell(_CellBase):
    """Gated recurrent unit step (Cho et al., 2014), torch's gate order r, z, n.

    ``r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)``, ``z`` alike,
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``.

    Shapes: as `RNNCell`.
    """

    _gates = 3

    def forward(self, input, hx=None):
        x, unbatched = self._batched(input)
        h = self._state(hx, x, unbatched)
        gi, gh = self._gates_of(x, h)
        d = self.hidden_size
        r = F.sigmoid(gi[..., :d] + gh[..., :d])
        z = F.sigmoid(gi[..., d:2 * d] + gh[..., d:2 * d])
        n = np.tanh(gi[..., 2 * d:] + r * gh[..., 2 * d:])
        out = (1.0 - z) * n + z * h
        return out[0] if unbatched else out


class LSTMCell(_CellBase):
    """Long short-term memory step (Hochreiter & Schmidhuber, 1997), torch's gate order i, f, g, o.

    ``c' = f * c + i * g``, ``h' = o * tanh(c')`` with i, f, o sigmoid and g tanh of
    ``x W_ih^T + b_ih + h W_hh^T + b_hh``.

    Shapes: input (B, input_size) or (input_size,); hx a pair (h, c), each (B, hidden_size), or
    None (zeros) -> the pair (h', c').
    """

    _gates = 4

    def forward(self, input, hx=None):
        x, unbatched = self._batched(input)
        if hx is None:
            h = c = self._state(None, x, unbatched)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise ValueError("LSTMCell: hx must be a pair (h, c) or None")
            h, c = self._state(hx[0], x, unbatched), self._state(hx[1], x, unbatched)
        gi, gh = self._gates_of(x, h)
        g4 = gi + gh
        d = self.hidden_size
        i, f = F.sigmoid(g4[..., :d]), F.sigmoid(g4[..., d:2 * d])
        g, o = np.tanh(g4[..., 2 * d:3 * d]), F.sigmoid(g4[..., 3 * d:])
        c_next = f * c + i * g
        h_next = o * np.tanh(c_next)
        return (h_next[0], c_next[0]) if unbatched else (h_next, c_next)
