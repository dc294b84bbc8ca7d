"""Run-time aliasing: whether numpy made a view, and a value chosen by that answer.

numpy's ``reshape``, ``ravel``, ``ascontiguousarray``, ``astype(copy=False)``...
return a view of their argument when its memory layout allows one, else a copy
(``h[::8].reshape(-1)`` is a view while ``h[::8]`` has one row, a copy from two
rows on; ``x.reshape(-1)`` is a copy for a strided or Fortran-order ``x``).  A
write through such a result reaches the argument only in the first case, so a
captured program asks numpy at run time, on its own arrays
(:mod:`tensorplay_export.capture.views` emits these ops):

``numpy.asfortranarray`` is here too: it is one of those ops (a view of an
argument that is Fortran-contiguous already).

- ``tpe.is_view(view, base)``: a 0-d bool, ``np.may_share_memory(view, base)``
  (exact here: numpy's copy has a buffer of its own, its view lies inside the
  base's);
- ``tpe.where_view(new, old, *flags)``: ``new`` when every flag is true, else
  ``old`` itself (the very object: an input write-back of ``old`` into the
  caller's array is then no write, ``np.copyto`` skips an array onto its own
  memory).

``tpe.is_view`` is registered with ``observes_layout=True``: its result depends on
the memory layout (strides) of its operands, not only on their values, so generated
code gives every value that reaches it the layout eager numpy gives it (no result
written into a reused buffer ``out=``, no elided temporary: ``graph/codegen.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import shape_of
from .registry import register_op

__all__: list[str] = []


def _is_view(view: Any, base: Any) -> np.bool_:
    return np.bool_(isinstance(view, np.ndarray) and isinstance(base, np.ndarray)
                    and np.may_share_memory(view, base))


def _is_view_rule(ctx: Any, view: Any, base: Any) -> tuple:
    return ()


def _where_view(new: Any, old: Any, *flags: Any) -> Any:
    return new if all(bool(f) for f in flags) else old


def _where_view_rule(ctx: Any, new: Any, old: Any, *flags: Any) -> tuple:
    """``new`` and ``old`` are one array's values before and after a write: the same shape."""
    a, b = shape_of(new), shape_of(old)
    if len(a) != len(b):
        raise ValueError(f"tpe.where_view: values of {len(a)} and {len(b)} dimensions")
    for da, db in zip(a, b):
        ctx.eq(da, db, "tpe.where_view: the written and the unwritten value have one shape")
    if any(shape_of(f) != () for f in flags):
        raise ValueError("tpe.where_view: flags are 0-d bools (tpe.is_view)")
    return tuple(b)


def _asfortranarray_rule(ctx: Any, a: Any, dtype: Any = None) -> tuple:
    """numpy's shape: the argument's, a 0-d one made 1-d (``np.asfortranarray(2.0).shape == (1,)``)."""
    return tuple(shape_of(a)) or (1,)


# a view when the argument already is Fortran-contiguous, else a copy (capture/views.py follows writes)
register_op("numpy.asfortranarray", np.asfortranarray, _asfortranarray_rule, numpy_funcs=(np.asfortranarray,))
register_op("tpe.is_view", _is_view, _is_view_rule, observes_layout=True,
            doc="whether numpy made `view` a view of `base` (memory shared), on the run's own arrays")
register_op("tpe.where_view", _where_view, _where_view_rule,
            doc="`new` when every flag is true (numpy made the views a write went through), else `old` itself")
