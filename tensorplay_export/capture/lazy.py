"""Lazy example values: which ops may defer numpy's run on the example, and their exact dtype.

Capture records every op's node and symbolic shape; numpy's value on the example is
needed only when something reads it (a value read in draft mode, a write, the replay
check, an op that must run eagerly).  An op defers its run when it opts in (its
:attr:`OpDef.lazy` kind, else the table :data:`LAZY_KINDS` below) and its output
dtype can be had exactly without the full computation:

- ``"same"``: the dtype of the first array argument (movement: reshape, transpose,
  basic indexing -- numpy never changes the dtype there);
- ``"proxy"``: the op's own numpy impl run on proxies -- every traced argument as
  zeros of its shape with each symbolic axis made 1 (static axes kept, so weights
  and ``normalized_shape`` still fit); numpy 2's type promotion depends on dtypes
  and on Python scalars (kept as they are), never on values or sizes, so the
  proxy's dtype is the full run's.  A proxy run that raises means "run eagerly".

What stays eager: integer and unsigned ufuncs (numpy raises on values there, e.g.
integers to negative powers), anything with array indices (bounds are value
errors), random draws (their order on the generator matters), multi-output ops,
in-place ops, and every op not listed.  See :meth:`Tracer.call` and
:meth:`Tracer.force`.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .symbolic import SymBool, SymFloat, SymInt
from .traced import TracedArray

# ops whose output dtype a proxy run gives exactly (nn composites: pure numpy over their inputs)
_PROXY = ("tpe.nn.gelu", "tpe.nn.layer_norm", "tpe.nn.linear", "tpe.nn.log_softmax", "tpe.nn.softmax",
          "tpe.nn.relu", "tpe.nn.rms_norm", "tpe.nn.scaled_dot_product_attention", "tpe.nn.sigmoid",
          "tpe.nn.silu", "tpe.nn.tanh", "tpe.nn.erf", "tpe.nn.erfc", "tpe.nn.normalize",
          "numpy.matmul", "numpy.where", "numpy.clip", "numpy.ndarray.clip",
          *[f"{p}{r}" for p in ("numpy.", "numpy.ndarray.")
            for r in ("sum", "mean", "max", "min", "prod", "var", "std", "amax", "amin")])
_SAME = ("numpy.ndarray.reshape", "numpy.reshape", "numpy.transpose", "numpy.ndarray.transpose",
         "numpy.swapaxes", "numpy.expand_dims", "numpy.squeeze", "tpe.getitem")
LAZY_KINDS: dict[str, str] = {**{n: "proxy" for n in _PROXY}, **{n: "same" for n in _SAME}}

# argument types every walk of an op's arguments passes through as they are (no walk, no
# conversion): tested by exact type first, since isinstance on a TracedArray calls its
# __class__ property once per class tested
PLAIN_ARGS = frozenset({int, float, bool, str, type(None), type(Ellipsis), np.dtype, np.float32, np.float64,
                        np.int64, np.int32, np.bool_})
_BASIC_KEY = (int, slice, type(None), type(Ellipsis), SymInt)


def lazy_kind(op: Any, is_ufunc: bool) -> str:
    """The op's deferral kind: ``"same"``, ``"proxy"``, ``"ufunc"`` or ``""`` (run eagerly);
    ``is_ufunc``: the op's impl is a numpy ufunc."""
    kind = getattr(op, "lazy", "") or LAZY_KINDS.get(op.name, "")
    if not kind and is_ufunc and not op.multi_output:
        kind = "ufunc"
    if op.multi_output or op.writes_arg is not None or op.side_effect:
        return ""
    return kind


def _arrays(value: Any, out: list) -> list:
    """The arrays (traced or not) and random generators in an args pytree, in order: one walk
    answers both what :func:`proxy_args` asks of the arguments (exact types first: see
    :data:`PLAIN_ARGS`)."""
    t = type(value)
    if t is TracedArray or t is np.ndarray:
        out.append(value)
    elif t in PLAIN_ARGS:
        pass
    elif isinstance(value, (tuple, list)):
        for v in value:
            _arrays(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _arrays(v, out)
    elif isinstance(value, _COLLECTED):
        out.append(value)
    return out


_RNG = (np.random.Generator, np.random.RandomState)
_COLLECTED = (TracedArray, np.ndarray) + _RNG


def _basic_key(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(_basic_key(k) for k in key)
    if isinstance(key, slice):
        return all(v is None or isinstance(v, (int, SymInt)) for v in (key.start, key.stop, key.step))
    return isinstance(key, _BASIC_KEY) and not isinstance(key, bool)


def proxy_args(tracer: Any, op: Any, kind: str, args: tuple, kwargs: dict) -> Optional[tuple]:
    """``(args, kwargs, full)`` to run ``op``'s impl on instead of the example values, or None
    when the op must run eagerly (no cheap exact way).  :meth:`Tracer.call` runs them: the
    result's dtype is the full run's; a proxy run that raises means "run eagerly".

    ``full``: the proxies are zero-strided views of the whole example shapes (``"same"``
    ops: no data is touched, and numpy's own shape errors -- a reshape that does not fit,
    an index out of bounds -- raise as in the eager run), so the result's shape is numpy's
    shape at the example sizes; otherwise symbolic axes are made 1 (their shape rules
    check broadcasting and contraction sizes).
    """
    arrays = _arrays((args, kwargs), [])
    if (not arrays or any(type(a) is not TracedArray and isinstance(a, _RNG) for a in arrays) or kwargs.get("dropout_p")
            or (len(args) > 4 and op.name.endswith("attention") and args[4])):
        return None
    if kind == "same":
        if op.name == "tpe.getitem" and not (len(args) == 2 and _basic_key(args[1])):
            return None
        full = True
    elif kind == "ufunc" and any(a.dtype.kind not in "fcb" for a in arrays):
        return None
    else:
        full = False
    return _proxy(tracer, args, full), _proxy(tracer, kwargs, full), full


def _proxy(tracer: Any, value: Any, full: bool) -> Any:
    """Arguments for a proxy run: traced arrays as zeros with their symbolic axes made 1, or
    (``full``) as zero-strided views of their whole example shape."""
    t = type(value)
    if t is TracedArray:
        shape = value._shape
        if full:
            hint = tracer.env.hint
            key = (tuple(d if type(d) is int else int(hint(d)) for d in shape), value.dtype, True)
        elif all(type(d) is int for d in shape) and value._thunk is None:
            return value._value
        else:
            key = (tuple(d if type(d) is int else 1 for d in shape), value.dtype, False)
        # one read-only proxy per shape and dtype for the whole capture: only dtypes are read off
        # a proxy run, and an impl writing into its argument raises (that op then runs eagerly)
        proxy = tracer.proxies.get(key)
        if proxy is None:
            proxy = tracer.proxies[key] = _zeros(*key)
        return proxy
    if t is tuple:
        return tuple([_proxy(tracer, v, full) for v in value])
    if t is list:
        return [_proxy(tracer, v, full) for v in value]
    if t is dict:
        return {k: _proxy(tracer, v, full) for k, v in value.items()}
    if t in PLAIN_ARGS:
        return value
    if isinstance(value, (SymInt, SymFloat, SymBool, slice)):
        return tracer.example(value)
    return value


def proxy_run_key(op: Any, args: tuple, kwargs: dict) -> Optional[tuple]:
    """A hashable form of a proxy run (``op`` and the proxies of :func:`proxy_args`, not
    ``full``), or None when some argument has none.

    Arrays count by shape and dtype only: under numpy 2's promotion rules the result's dtype
    does not depend on values, and none of the ops that defer this way (:data:`LAZY_KINDS`,
    float and bool ufuncs) raises on values (their floating-point errors are ignored there).
    Scalars count by type and value (``axis=1``, ``eps``, a Python float's weak type).
    """
    try:
        return (id(op), _run_key(args), _run_key(kwargs))  # the registry keeps the OpDef alive
    except TypeError:  # an unhashable argument: this run is not kept
        return None


def _run_key(value: Any) -> Any:
    t = type(value)
    if t is np.ndarray:
        return (t, value.shape, value.dtype)
    if t is tuple or t is list:
        return (t, tuple([_run_key(v) for v in value]))
    if t is dict:
        return (t, tuple([(k, _run_key(v)) for k, v in value.items()]))
    if t is slice:
        return (t, _run_key(value.start), _run_key(value.stop), _run_key(value.step))
    hash(value)
    return (t, value)


def _zeros(shape: tuple, dtype: Any, strided: bool) -> np.ndarray:
    """Read-only zeros of ``shape``: zero-strided over one element when ``strided`` (no memory
    for a whole example shape), else allocated (symbolic axes are 1 there: small)."""
    if strided:
        return np.broadcast_to(np.zeros((), dtype), shape)
    out = np.zeros(shape, dtype)
    out.flags.writeable = False
    return out


def pending_in(value: Any, out: list) -> list:
    """The traced arrays in ``value`` (args pytree) whose values are not computed yet."""
    t = type(value)
    if t is TracedArray:
        if value._thunk is not None:
            out.append(value)
    elif t is tuple or t is list:
        for v in value:
            pending_in(v, out)
    elif t is dict:
        for v in value.values():
            pending_in(v, out)
    elif t is slice:
        pending_in((value.start, value.stop, value.step), out)
    return out
