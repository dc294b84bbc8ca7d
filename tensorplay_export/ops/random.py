"""Random draws as graph ops: explicit generator state in, the values and the next state out.

A program cannot reproduce draws from a generator it does not see, so every random
op here is a pure function of a *generator-state array*: the state of numpy's
default bit generator (PCG64, what ``np.random.default_rng`` uses) packed into
``STATE_SIZE`` uint64 words::

    [state >> 64, state & M, inc >> 64, inc & M, has_uint32, uinteger]     (M = 2**64 - 1)

(``PCG64.state``'s fields, in that order).  An op takes the state, draws with a
``np.random.Generator`` rebuilt from it, and returns ``(values, next_state)``; the
caller stores ``next_state`` where the state came from.  In a module that place is
a buffer (``nn.Dropout.generator_state``): capture lifts it as a ``b_<fqn>``
placeholder and the assignment becomes a ``BUFFER_MUTATION`` output, which
``module()`` applies after each call.  The same state gives the same numbers
eagerly, in a program, and in a loaded program (numpy's streams for a given
bit-generator state are stable across releases, NEP 19).

Ops (``shape``: an int or a tuple of ints / symbolic sizes; ``dtype``: float32 or float64):

- ``tpe.random.uniform(state, shape, dtype=float64)``: floats in [0, 1)
  (``Generator.random``), and the next state;
- ``tpe.random.normal(state, shape, dtype=float64)``: standard normal floats
  (``Generator.standard_normal``), and the next state.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .creation import norm_shape
from .registry import ArrayInfo, register_op

__all__ = ["STATE_SIZE", "generator_state", "state_of", "generator_from_state", "uniform", "normal"]

STATE_SIZE = 6
_M64 = (1 << 64) - 1
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def state_of(bit_generator: np.random.PCG64) -> np.ndarray:
    """The generator-state array (uint64, shape ``(STATE_SIZE,)``) of a PCG64 bit generator.

    Raises:
        TypeError: ``bit_generator`` is not a ``np.random.PCG64``.
    """
    if not isinstance(bit_generator, np.random.PCG64):
        raise TypeError(f"generator state is kept for numpy's PCG64 bit generator only, got "
                        f"{type(bit_generator).__name__} (use np.random.default_rng / np.random.PCG64)")
    st = bit_generator.state
    s, inc = int(st["state"]["state"]), int(st["state"]["inc"])
    return np.array([s >> 64, s & _M64, inc >> 64, inc & _M64, int(st["has_uint32"]), int(st["uinteger"])],
                    dtype=np.uint64)


def generator_state(seed: Any = None) -> np.ndarray:
    """The generator-state array of ``np.random.default_rng(seed)``: same seed, same stream.

    Args:
        seed: what ``np.random.default_rng`` takes (None draws fresh OS entropy), or a
            ``np.random.Generator`` over PCG64, whose current state is copied (not advanced).
    """
    if isinstance(seed, np.random.Generator):
        return state_of(seed.bit_generator)
    return state_of(np.random.PCG64(seed))


def _check_state(state: Any) -> np.ndarray:
    arr = np.asarray(state)
    if arr.dtype != np.uint64 or arr.shape != (STATE_SIZE,):
        raise ValueError(f"a generator state is a uint64 array of shape ({STATE_SIZE},) (from generator_state()), "
                         f"got {arr.dtype} of shape {arr.shape}")
    return arr


def generator_from_state(state: Any) -> np.random.Generator:
    """A new ``np.random.Generator`` positioned at ``state`` (a generator-state array; not changed).

    Raises:
        ValueError: ``state`` is not a uint64 array of shape ``(STATE_SIZE,)``, or its
            ``has_uint32`` word is not 0 or 1.
    """
    w = [int(v) for v in _check_state(state)]
    if w[4] not in (0, 1) or w[5] > 0xFFFFFFFF:
        raise ValueError(f"not a generator state: has_uint32 = {w[4]}, uinteger = {w[5]} "
                         "(expected 0 or 1 and a 32-bit value)")
    bg = np.random.PCG64(0)
    bg.state = {"bit_generator": "PCG64", "state": {"state": (w[0] << 64) | w[1], "inc": (w[2] << 64) | w[3]},
                "has_uint32": w[4], "uinteger": w[5]}
    return np.random.Generator(bg)


def _float_dtype(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        raise ValueError(f"random draws are float32 or float64, got dtype {dt}")
    return dt


def uniform(state: Any, shape: Any, dtype: Any = np.float64) -> tuple:
    """Floats in [0, 1) of ``shape`` drawn from ``state``, and the state after the draw.

    Equal to ``np.random.default_rng(seed).random(shape, dtype)`` when ``state`` is
    ``generator_state(seed)``.  ``state`` itself is not changed.
    """
    g = generator_from_state(state)
    values = g.random(shape, dtype=_float_dtype(dtype))
    return np.asarray(values), state_of(g.bit_generator)


def normal(state: Any, shape: Any, dtype: Any = np.float64) -> tuple:
    """Standard normal floats of ``shape`` drawn from ``state``, and the state after the draw.

    Equal to ``np.random.default_rng(seed).standard_normal(shape, dtype)`` for
    ``state = generator_state(seed)``.  ``state`` itself is not changed.
    """
    g = generator_from_state(state)
    values = g.standard_normal(shape, dtype=_float_dtype(dtype))
    return np.asarray(values), state_of(g.bit_generator)


def _draw_rule(ctx: Any, state: Any, shape: Any, dtype: Any = np.float64) -> list:
    """``[shape, (STATE_SIZE,)]``; each symbolic size of ``shape`` must be >= 0."""
    if not isinstance(state, ArrayInfo) or tuple(state.shape) != (STATE_SIZE,) or np.dtype(state.dtype) != np.uint64:
        got = f"{state.dtype} of shape {tuple(state.shape)}" if isinstance(state, ArrayInfo) else repr(state)
        raise ValueError(f"a generator state is a uint64 array of shape ({STATE_SIZE},), got {got}")
    _float_dtype(dtype)
    return [norm_shape(shape, ctx, "random draw"), (STATE_SIZE,)]


register_op("tpe.random.uniform", uniform, _draw_rule, multi_output=True,
            doc="floats in [0, 1) drawn from an explicit generator state; returns (values, next state)")
register_op("tpe.random.normal", normal, _draw_rule, multi_output=True,
            doc="standard normal floats drawn from an explicit generator state; returns (values, next state)")
