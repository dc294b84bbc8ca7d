"""Writes through views: the functional graph computes what eager numpy computes through aliases.

numpy views share memory: after ``y = x.T; y += 1.0`` the array ``x`` has changed
too, and after ``row = m[0]; row[:] = 7.0`` so has ``m``.  The captured graph is
functional (every write makes a new node), so capture records which traced
arrays are views of which and, after a write to any of them, rebuilds the
others' values from the written one:

1. **up** the chain from the written view to its root array, each base gets the
   value ``inverse(view)``: ``tpe.setitem(base, key, view)`` for a basic index,
   the inverse permutation for ``transpose``/``permute_dims``/``moveaxis``/``.T``, the op
   itself for ``swapaxes``/``flip``/``fliplr``/``flipud``,
   ``reshape(view, base.shape)`` (in the op's ``order``) for the *maybe-view* ops below;
2. **down** from the root, every other view (in creation order, parents first)
   is recomputed by its own op on its base's new value.

Basic indexing, transposes, swapaxes and flips always return views (numpy says so
on the example: memory shared).  The maybe-view ops -- ``reshape``, ``ravel``,
``squeeze``, ``expand_dims``, ``atleast_1d``/``atleast_2d``, ``ascontiguousarray``, ``asfortranarray``,
``real`` of a real array, ``astype(copy=False)`` -- return a view or a copy depending
on the sizes and the memory layout of their argument (``h[::8].reshape(-1)`` is a
view while ``h[::8]`` has one row; ``x.reshape(-1)`` copies a strided or
Fortran-order ``x``).  What numpy decided on the example says nothing about another
call, so every same-size, same-dtype result of one is recorded as a *possible* view,
and a write that flows through it is decided at run time, on the program's own
arrays (:mod:`tensorplay_export.ops.aliasing`):

- ``flag = tpe.is_view(view, base)`` (numpy's answer: memory shared), emitted once
  per possible view, at the first write through it;
- a rebuilt value becomes ``tpe.where_view(rebuilt, old, *flags)``: the rebuilt
  value only where numpy made every possible view between it and the written array
  a view, else the old value itself (for a user input: no write into the caller's
  array, as in eager).

The operands of ``tpe.is_view`` must have the memory layout eager numpy gives
the arrays, and a functional write's copy (``tpe.setitem``) is compact where
eager's array kept its strides (``x[::2]`` written in place stays strided): each
traced array's *layout node* is the node it had before its first write (a root),
or its own op on its base's layout node (a view made after its base was written),
and the flag is asked of those.  On the example values numpy's own in-place
writes give the same decisions (the example arrays keep their layout), so the
replay check (``capture.replay``) agrees with the program.

A root that is a user input, a parameter or a buffer then ends up rebound to a
new node, which capture already returns as a ``USER_INPUT_MUTATION``,
``PARAMETER_MUTATION`` or ``BUFFER_MUTATION`` output.  Views through ops this
module cannot invert (``diagonal``, ``real`` of a complex array...) are left
alone: the replay check still compares the graph with the traced run and
refuses a capture whose write it did not follow.  A write through a possible
view in a layout-dependent order (``order="A"``/``"K"``) is refused
(UnsupportedOpError): the replay on the example could not tell a wrong program.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..errors import UnsupportedOpError
from ..graph.ir import Node
from ..ops.registry import resolve_op
from .frames import user_source
from .symbolic import SymInt
from .traced import TracedArray

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
    "numpy.atleast_2d": _RESHAPE, "numpy.ascontiguousarray": _RESHAPE, "numpy.asfortranarray": _RESHAPE,
    "numpy.real": _RESHAPE,
    "numpy.ndarray.astype": _RESHAPE, "numpy.astype": _RESHAPE,
}
# where an op takes ``order`` positionally (after its array): numpy's signatures
_ORDER_AT = {"numpy.reshape": 2, "numpy.ravel": 1}
# where ``copy`` is positional: ndarray.astype(dtype, order, casting, subok, copy)
_COPY_AT = {"numpy.ndarray.astype": 5}


# Ops numpy answers with a view of their argument that writes are not followed through (no
# inverse here): a write into such a view, or into its argument while it lives, is refused.
UNFOLLOWED_VIEW_OPS = frozenset({
    "numpy.rot90", "numpy.atleast_3d", "numpy.split", "numpy.array_split", "numpy.diagonal",
    "numpy.broadcast_to", "numpy.imag", "numpy.lib.stride_tricks.sliding_window_view", "numpy.ix_",
    "numpy.matrix_transpose", "numpy.linalg.matrix_transpose", "numpy.linalg.diagonal", "numpy.rollaxis",
    "numpy.hsplit", "numpy.vsplit", "numpy.dsplit", "numpy.ndarray.view",
})


@dataclass
class _View:
    """``array`` was made by ``op(*args, **kwargs)`` and may share ``args[0]``'s memory (its base).

    ``node``/``base_node``: the view's and the base's nodes when it was made; ``maybe``:
    numpy decides at run time whether it is a view (``order``: the order its elements
    follow the base's in, ``"C"``/``"F"``; another one depends on the layout: not followed);
    ``flag``: the ``tpe.is_view`` value, once a write needed it.
    """

    array: Any
    op: Any
    args: tuple
    kwargs: dict
    node: Any
    base_node: Any
    maybe: bool
    order: Optional[str] = "C"
    flag: Any = None

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
        self._first: dict[int, tuple] = {}        # id(array) -> (array, its node before its first write)
        self._layouts: dict[int, tuple] = {}      # id(array) -> (array, traced value of its layout node)
        self._busy = False                        # rebuilding: results are not new views, writes not new writes
        self._unfollowed: dict[int, tuple] = {}   # id(view or its base) -> (op, view, base) of views not followed

    def note(self, op: Any, args: tuple, kwargs: dict, result: Any) -> None:
        """Record ``result`` of ``op`` as a view when numpy made it one (memory shared with
        ``args[0]``), or as a possible view for a maybe-view op (same size and dtype)."""
        if self._busy or not args:
            return
        if op.name in UNFOLLOWED_VIEW_OPS:
            self._note_unfollowed(op, args, result)
            return
        if op.name not in VIEW_OPS:
            return
        base = args[0]
        example = result.example
        if (not isinstance(base, TracedArray) or not isinstance(example, np.ndarray)
                or not isinstance(base.example, np.ndarray)):
            return
        kind = VIEW_OPS[op.name]
        if kind == _RESHAPE:
            if example.size != base.example.size or example.dtype != base.example.dtype:
                return  # not all of the base, or other values (``real`` of a complex array): not followed
            if _copy_arg(op.name, args, kwargs) is True:
                return  # numpy copies whatever the layout
            maybe, order = True, _order(op.name, args, kwargs)
        elif not (np.may_share_memory(example, base.example)
                  or ((example.size == 0 or base.example.size == 0) and _always_a_view(kind, args))):
            return  # an empty array shares no memory, yet basic indexing and transposes are views
        else:
            maybe, order = False, None
        node = result.node
        base_node = node.args[0] if node.args and isinstance(node.args[0], Node) else base.node
        self._views[id(result)] = _View(result, op, tuple(args), dict(kwargs), node, base_node, maybe, order)
        self._children.setdefault(id(base), []).append(result)

    def _note_unfollowed(self, op: Any, args: tuple, result: Any) -> None:
        base = args[0]
        if (isinstance(base, TracedArray) and isinstance(result.example, np.ndarray)
                and isinstance(base.example, np.ndarray) and np.may_share_memory(result.example, base.example)):
            self._unfollowed[id(result)] = (op.name, result, base)
            self._unfollowed[id(base)] = (op.name, result, base)

    def shares_memory(self, array: Any) -> bool:
        """Whether ``array`` is a view noted here, or one was taken of it (followed or not)."""
        key = id(array)
        return key in self._views or key in self._children or key in self._unfollowed

    def forget_view(self, view: Any, base: Any) -> None:
        """Drop the record that ``view`` is a view of ``base`` (``a.shape = ...``: the reshape
        replaces ``base``, so no write through one must rebuild the other)."""
        self._views.pop(id(view), None)
        children = self._children.get(id(base))
        if children is not None:
            children[:] = [c for c in children if c is not view]
            if not children:
                del self._children[id(base)]

    def wrote(self, array: Any) -> None:
        """``array`` was just rebound to the node of a write: rebuild every alias of it.

        Raises:
            UnsupportedOpError: the write goes through, or into the base of, a view capture does
                not follow (:data:`UNFOLLOWED_VIEW_OPS`).
        """
        if self._busy:
            return
        seen = self._unfollowed.get(id(array))
        if seen is not None:
            name, view, base = seen
            where = "the result of" if view is array else "the argument of"
            raise UnsupportedOpError(
                f"a write into {where} {name}, whose result numpy makes a view of its argument: the "
                f"program cannot follow writes through that view; write into a copy "
                f"({name.rpartition('.')[2]}(...).copy()) or into the argument itself\n  at {user_source(3)}")
        if id(array) not in self._first:
            before = _before_write(array.node, self._tracer.op_table)
            if before is not None:
                self._first[id(array)] = (array, before)
        if id(array) not in self._views and id(array) not in self._children:
            return
        chain = [array]
        while id(chain[-1]) in self._views:
            view = self._views[id(chain[-1])]
            if not self._invertible(view):
                if view.maybe:
                    raise _layout_ordered(view, "through")
                return  # cannot follow this write: the replay check reports it
            chain.append(view.base)
        self._busy = True
        try:
            flags: list = []  # the possible views between the written array and the base being rebuilt
            for child in chain[:-1]:
                view = self._views[id(child)]
                if view.maybe:
                    flags.append(self._flag(view))
                new = self._inverse(view)
                if flags:
                    new = self._tracer.call("tpe.where_view", (new, view.base, *flags))
                self._assign(view.base, new)
            on_chain = {id(a) for a in chain}
            for view_array in self._descendants(chain[-1]):
                if id(view_array) not in on_chain:
                    view = self._views[id(view_array)]
                    if view.maybe and not self._invertible(view):
                        raise _layout_ordered(view, "into the base of")
                    new = self._tracer.call(view.op, view.args, view.kwargs)
                    if view.maybe:
                        new = self._tracer.call("tpe.where_view", (new, view_array, self._flag(view)))
                    self._assign(view_array, new)
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
        if kind == _RESHAPE:
            return view.order in ("C", "F")
        return True

    def _flag(self, view: _View) -> Any:
        """``tpe.is_view`` of a possible view and its base, on their layout nodes (made once)."""
        if view.flag is None:
            view.flag = self._tracer.call("tpe.is_view", (self._layout(view.array), self._layout(view.base)))
        return view.flag

    def _layout(self, array: Any) -> Any:
        """A traced value whose program value has eager's memory layout for ``array``: its node
        before its first write, or (a view made from a base written before) its op on the base's."""
        known = self._layouts.get(id(array))
        if known is not None:
            return known[1]
        view = self._views.get(id(array))
        if view is not None:
            base_layout = self._layout(view.base)
            if base_layout.node is view.base_node:
                value = _shadow(view.node, array)
            else:
                value = self._tracer.call(view.op, (base_layout, *view.args[1:]), view.kwargs)
        else:
            first = self._first.get(id(array))
            value = _shadow(first[1] if first is not None else array.node, array)
        self._layouts[id(array)] = (array, value)
        return value

    def _assign(self, array: Any, value: Any) -> None:
        """``array`` now stands for ``value``'s node (its example already holds the values: shared memory)."""
        if id(array) not in self._first:
            self._first[id(array)] = (array, array.node)
        array._node = value.node
        array._shape = value._shape
        array.vrange = value.vrange

    def _inverse(self, view: _View) -> Any:
        """The base's value after a write to ``view`` (whose node is the written value)."""
        tracer, kind = self._tracer, VIEW_OPS[view.op.name]
        if kind == _INDEX:
            return tracer.call("tpe.setitem", (view.base, view.args[1], view.array))
        if kind == _RESHAPE:
            extra = {} if view.order == "C" else {"order": view.order}
            return tracer.call("numpy.reshape", (view.array, tuple(view.base.shape)), extra)
        if kind == _SELF_INVERSE:  # swapping two axes, flipping: the same op undoes it
            return tracer.call(view.op, (view.array, *view.args[1:]), view.kwargs)
        perm = _permutation(view.op.name, view.base.ndim, tracer.example(tuple(view.args[1:])),
                            tracer.example(view.kwargs))
        return tracer.call("numpy.transpose", (view.array, tuple(int(i) for i in np.argsort(perm))))


def _layout_ordered(view: _View, where: str) -> UnsupportedOpError:
    """The refusal of a write through (or into the base of) a possible view whose element order
    is the memory layout's (``ravel(order="K")``): which elements it holds is decided at run time."""
    return UnsupportedOpError(
        f"a write {where} the result of {view.op.name} with order={view.order!r}: numpy makes it a view or a "
        f"copy, in an element order that depends on the memory layout at run time, and the program cannot "
        f"follow such a write. Use order='C' (or 'F'), or write into an explicit copy (.copy())\n"
        f"  at {user_source(3)}")


def _shadow(node: Any, array: Any) -> Any:
    """A traced value of ``node`` standing for ``array``'s memory (its example: the very array
    numpy wrote in place, so its layout is eager's)."""
    return TracedArray(array._tracer, node, array._shape, array.example, array.vrange)


def _before_write(node: Any, op_table: Any) -> Any:
    """The node a write node (``tpe.setitem``, an op writing its argument) wrote into, or None."""
    if not isinstance(node, Node) or node.op != "call_function":
        return None
    if node.target == "tpe.setitem":
        return node.args[0] if node.args else None
    try:
        at = resolve_op(node.target, op_table).writes_arg
    except Exception:  # noqa: BLE001 - an op this module does not know: no layout node recorded
        return None
    return node.args[at] if at is not None and len(node.args) > at else None


def _order(op: str, args: tuple, kwargs: dict) -> Optional[str]:
    """The element order of a maybe-view op: ``"C"``, ``"F"`` (followed), ``"A"``/``"K"`` (the
    layout decides: not followed); ops without an ``order`` read their base in C order."""
    at = _ORDER_AT.get(op)
    order = args[at] if at is not None and len(args) > at else kwargs.get("order", "C")
    if op in ("numpy.ndarray.astype", "numpy.astype") or order is None:
        return "C"  # astype: the same shape, element for element, whatever order its memory has
    return order


def _copy_arg(op: str, args: tuple, kwargs: dict) -> Any:
    """The op's ``copy`` argument (astype's defaults to True; reshape's to None)."""
    at = _COPY_AT.get(op)
    if at is not None and len(args) > at:
        return bool(args[at])
    if op in ("numpy.ndarray.astype", "numpy.astype"):
        return bool(kwargs.get("copy", True))
    return kwargs.get("copy")


def _always_a_view(kind: str, args: tuple) -> bool:
    """Whether numpy returns a view for this op whatever the sizes: transposes, flips, and
    indexing by ints, slices, ``None`` and ``...`` only (an array, list or bool index copies)."""
    if kind in (_PERMUTE, _SELF_INVERSE):
        return True
    if kind != _INDEX or len(args) < 2:
        return False
    key = args[1] if isinstance(args[1], tuple) else (args[1],)
    return all(k is None or k is Ellipsis or isinstance(k, slice)
               or (isinstance(k, (int, SymInt)) and not isinstance(k, bool))
               for k in key)


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
