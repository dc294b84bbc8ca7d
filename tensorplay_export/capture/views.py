"""Writes through views: the functional graph computes what eager numpy computes through aliases.

numpy views share memory: after ``y = x.T; y += 1.0`` the array ``x`` has changed
too, and after ``row = m[0]; row[:] = 7.0`` so has ``m``.  The captured graph is
functional (every write makes a new node), so capture records which traced
arrays are views of which (numpy itself says so: the example result shares the
argument example's memory) and, after a write to any of them, rebuilds the
others' values from the written one:

1. **up** the chain from the written view to its root array, each base gets the
   value ``inverse(view)``: ``tpe.setitem(base, key, view)`` for a basic index,
   the inverse permutation for ``transpose``/``permute_dims``/``moveaxis``/``.T``, the op
   itself for ``swapaxes``/``flip``/``fliplr``/``flipud``,
   ``reshape(view, base.shape)`` for ``reshape``/``ravel``/``squeeze``/``expand_dims``
   and the ops that may return their argument itself (``atleast_2d``, ``real`` of a
   real array, ``astype(copy=False)``, ``ascontiguousarray``): all of the base's
   elements, in its C order, same dtype;
2. **down** from the root, every other view (in creation order, parents first)
   is recomputed by its own op on its base's new value.

A root that is a user input, a parameter or a buffer then ends up rebound to a
new node, which capture already returns as a ``USER_INPUT_MUTATION``,
``PARAMETER_MUTATION`` or ``BUFFER_MUTATION`` output.  Views through ops this
module cannot invert (``diagonal``, ``real`` of a complex array, a reshape in
Fortran order...) are left alone: the replay check
(``capture.replay``) still compares the graph with the traced run and refuses
a capture whose write it did not follow.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Aliases", "VIEW_OPS"]

_INDEX = "index"
_PERMUTE = "permute"
_RESHAPE = "reshape"
_SELF_INVERSE = "self-inverse"
# registry op -> how a write to its (view) result goes back to its first argument
VIEW_OPS = {
    "tpe.getitem": _INDEX,
    "numpy.transpose": _PERMUTE, "numpy.ndarray.transpose": _PERMUTE, "numpy.permute_dims": _PERMUTE,
    "numpy.moveaxis": _PERMUTE,
    "numpy.swapaxes": _SELF_INVERSE, "numpy.flip": _SELF_INVERSE, "numpy.fliplr": _SELF_INVERSE,
    "numpy.flipud": _SELF_INVERSE,
    "numpy.reshape": _RESHAPE, "numpy.ndarray.reshape": _RESHAPE, "numpy.ravel": _RESHAPE,
    "numpy.squeeze": _RESHAPE, "numpy.expand_dims": _RESHAPE, "numpy.atleast_1d": _RESHAPE,
    "numpy.atleast_2d": _RESHAPE, "numpy.ascontiguousarray": _RESHAPE, "numpy.real": _RESHAPE,
    "numpy.ndarray.astype": _RESHAPE, "numpy.astype": _RESHAPE,
}


@dataclass
class _View:
    """``array`` was made by ``op(*args, **kwargs)`` and shares ``args[0]``'s memory (its base)."""

    array: Any
    op: Any
    args: tuple
    kwargs: dict

    @property
    def base(self) -> Any:
        return self.args[0]


class Aliases:
    """The views of one capture and the rebuilding of their values after a write.

    ``note`` is called by the tracer for every op result, ``wrote`` after every
    in-place write (``TracedArray._rebind``).  Traced arrays are tracked by
    ``id`` with a strong reference (for the capture's lifetime only).
    """

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer
        self._views: dict[int, _View] = {}        # id(view array) -> how it was made
        self._children: dict[int, list] = {}      # id(base) -> its views, in creation order
        self._busy = False                        # rebuilding: results are not new views, writes not new writes

    def note(self, op: Any, args: tuple, kwargs: dict, result: Any) -> None:
        """Record ``result`` of ``op`` as a view when numpy made it one (memory shared with ``args[0]``)."""
        if self._busy or op.name not in VIEW_OPS or not args:
            return
        base = args[0]
        example = result.example
        if (type(base).__name__ != "TracedArray" or not isinstance(example, np.ndarray)
                or not isinstance(base.example, np.ndarray) or not np.may_share_memory(example, base.example)):
            return
        kind = VIEW_OPS[op.name]
        if kind != _INDEX and (example.size != base.example.size or example.dtype != base.example.dtype):
            return  # not all of the base, or other values (``real`` of a complex array): not followed
        if kind == _RESHAPE and kwargs.get("order", "C") not in ("C", None):
            return
        self._views[id(result)] = _View(result, op, tuple(args), dict(kwargs))
        self._children.setdefault(id(base), []).append(result)

    def wrote(self, array: Any) -> None:
        """``array`` was just rebound to the node of a write: rebuild every alias of it."""
        if self._busy or (id(array) not in self._views and id(array) not in self._children):
            return
        chain = [array]
        while id(chain[-1]) in self._views:
            view = self._views[id(chain[-1])]
            if not self._invertible(view):
                return  # cannot follow this write: the replay check reports it
            chain.append(view.base)
        self._busy = True
        try:
            for child in chain[:-1]:
                view = self._views[id(child)]
                _assign(view.base, self._inverse(view))
            on_chain = {id(a) for a in chain}
            for view_array in self._descendants(chain[-1]):
                if id(view_array) not in on_chain:
                    view = self._views[id(view_array)]
                    _assign(view_array, self._tracer.call(view.op, view.args, view.kwargs))
        finally:
            self._busy = False

    # -- helpers -------------------------------------------------------------------------------
    def _descendants(self, root: Any) -> list:
        out, stack = [], list(reversed(self._children.get(id(root), [])))
        while stack:
            a = stack.pop()
            out.append(a)
            stack.extend(reversed(self._children.get(id(a), [])))
        return out

    def _invertible(self, view: _View) -> bool:
        kind = VIEW_OPS[view.op.name]
        if kind == _INDEX:
            return len(view.args) == 2 and not view.kwargs
        return True

    def _inverse(self, view: _View) -> Any:
        """The base's value after a write to ``view`` (whose node is the written value)."""
        tracer, kind = self._tracer, VIEW_OPS[view.op.name]
        if kind == _INDEX:
            return tracer.call("tpe.setitem", (view.base, view.args[1], view.array))
        if kind == _RESHAPE:
            return tracer.call("numpy.reshape", (view.array, tuple(view.base.shape)))
        if kind == _SELF_INVERSE:  # swapping two axes, flipping: the same op undoes it
            return tracer.call(view.op, (view.array, *view.args[1:]), view.kwargs)
        perm = _permutation(view.op.name, view.base.ndim, tracer.example(tuple(view.args[1:])),
                            tracer.example(view.kwargs))
        return tracer.call("numpy.transpose", (view.array, tuple(int(i) for i in np.argsort(perm))))


def _permutation(op: str, ndim: int, rest: tuple, kwargs: dict) -> list:
    """``perm`` with ``view.shape[i] == base.shape[perm[i]]`` for a transposing op and its arguments
    (numpy's own argument conventions for ``transpose``, ``ndarray.transpose``, ``permute_dims``, ``moveaxis``)."""
    if op == "numpy.moveaxis":
        source = rest[0] if len(rest) > 0 else kwargs["source"]
        destination = rest[1] if len(rest) > 1 else kwargs["destination"]
        src = [int(v) % ndim for v in (source if isinstance(source, (tuple, list)) else (source,))]
        dst = [int(v) % ndim for v in (destination if isinstance(destination, (tuple, list)) else (destination,))]
        order = [i for i in range(ndim) if i not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        return order
    axes = kwargs.get("axes") if not rest else (rest[0] if len(rest) == 1 else rest)
    if op == "numpy.ndarray.transpose" and len(rest) == 1 and not isinstance(rest[0], (tuple, list)) \
            and rest[0] is not None:
        axes = rest   # a.transpose(1) on a 1-d array
    if axes is None or (isinstance(axes, (tuple, list)) and len(axes) == 0):
        return list(reversed(range(ndim)))
    return [int(v) % ndim for v in axes]


def _assign(array: Any, value: Any) -> None:
    """``array`` now stands for ``value``'s node (its example already holds the values: shared memory)."""
    array._node = value.node
    array._shape = value._shape
    array.vrange = value.vrange
