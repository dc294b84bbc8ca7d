"""Lifted state read in place: copy-on-write examples for parameters and buffers.

A parameter's or buffer's example is a read-only view of the caller's own array, not a
copy: a capture of GPT-24 used to copy its 20 MB of parameters once here and once more
into the program's own state (issue 19, goal 2).  The model may still write into its
state during forward (``self.w += 1``, ``out=self.running_mean``): every write capture
follows goes through one of the write sites of :mod:`.traced` (``__setitem__``, in-place
operators and ``out=``, ops that write an argument), and each asks :meth:`Borrowed.writable`
for its target's example first.  When that example shares the caller's memory, the
borrowed array is copied then, once, and every computed example that viewed it is moved
onto the copy at the same byte offset and strides, so views keep seeing later writes as
numpy's views do.

Why read-only: numpy refuses to write through a read-only array or any view of it, so a
write that does not go through a write site (an opaque op writing into its argument, say)
fails with numpy's own error instead of changing the caller's parameter.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..errors import UnsupportedOpError
from .frames import user_source


class Borrowed:
    """The arrays one capture reads in place, and the traced arrays whose examples may view them."""

    def __init__(self) -> None:
        self._roots: list = []     # (traced, its read-only view of the caller's array, fqn), while borrowed
        self._readers: list = []   # weakrefs of traced arrays whose example is read-only
        self._owners: set = set()  # id(_owner(view)) of every root ever borrowed (the caller's arrays)

    def borrow(self, traced: Any, fqn: str) -> None:
        """Make ``traced``'s example (the state at ``fqn``) a read-only view of the array it holds
        (a C-contiguous ndarray), or a copy of it otherwise (the copy's layout is all
        :func:`_rebased` moves onto)."""
        value = traced.example
        if not value.flags.c_contiguous:
            traced.example = value.copy()
            return
        view = value.view()
        view.flags.writeable = False
        traced.example = view
        self._roots.append((traced, view, fqn))
        self._owners.add(id(_owner(view)))  # the caller's array, kept alive by its module

    def note(self, traced: Any, value: Any) -> None:
        """``value`` became ``traced``'s example: kept track of when it is read-only (it may
        view a borrowed array)."""
        if self._roots and type(value) is np.ndarray and not value.flags.writeable:
            self._readers.append(weakref.ref(traced))

    def writable(self, target: Any) -> Any:
        """``target``'s example, no longer sharing memory with the caller's arrays.

        Every borrowed array it may share memory with is copied (once) first.  What is
        returned may still be read-only for numpy's own reasons (a broadcast view): the write
        then raises numpy's error, as it does in eager.
        """
        example = target.example
        if type(example) is not np.ndarray or not self._roots:
            return example
        # a writable example over memory of its own (an activation written in place, the common
        # write) is let through without a test per root; a read-only one, or a view made writable
        # again over the caller's array (v.setflags(write=True) is allowed there), is matched
        if example.flags.writeable and id(_owner(example)) not in self._owners:
            return example
        hit = [r for r in self._roots if _shares(example, r[1])]
        if not hit:
            return example
        # by identity: == on these tuples would compare traced arrays (a traced op)
        others = [r for r in self._roots if not any(r is h for h in hit) and any(_shares(r[1], h[1]) for h in hit)]
        if len(hit) > 1 or others:
            names = ", ".join(r[2] for r in hit + others)
            raise UnsupportedOpError(
                f"a write into state that shares memory with other state ({names}): numpy's arrays see each "
                f"other's writes, the program keeps each parameter and buffer as its own array; give each "
                f"one its own memory (nn.Parameter(w.copy()))"
                f"\n  at {user_source(2)}")
        self._unshare(hit[0][0], hit[0][1])
        return target.example

    def _unshare(self, root: Any, view: np.ndarray) -> None:
        own = view.copy()
        self._roots = [r for r in self._roots if r[1] is not view]
        live = []
        for ref in self._readers:
            t = ref()
            if t is None:
                continue
            live.append(ref)
            value = t._value
            if t is not root and type(value) is np.ndarray and _shares(value, view):
                t._value = _rebased(value, view, own)
        self._readers = live
        root.example = own


def _owner(a: np.ndarray) -> Any:
    """The object that holds ``a``'s memory: the ndarray at the end of its ``.base`` chain, or
    what that one views (a memory map, bytes)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a if a.base is None else a.base


def _shares(value: np.ndarray, view: np.ndarray) -> bool:
    """Memory shared, or (an empty array shares no bytes, yet ``w[2:2] += 1`` writes through
    one) a view of the same owner."""
    if np.may_share_memory(value, view):
        return True
    return (value.size == 0 or view.size == 0) and _owner(value) is _owner(view)


def _rebased(value: np.ndarray, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``value`` (a view into ``old``) as the same view into ``new``, a C-contiguous copy of ``old``.

    A zero stride along an axis longer than one (``np.broadcast_to``) stays read-only, as numpy
    makes it; any other view becomes writable, as it was over the caller's writable array.
    """
    offset = value.__array_interface__["data"][0] - old.__array_interface__["data"][0]
    try:
        out = np.ndarray(value.shape, value.dtype, buffer=new, offset=offset, strides=value.strides)
    except (ValueError, TypeError):  # not inside old's memory after all: left as it is (read-only)
        return value
    if any(s == 0 and n > 1 for s, n in zip(value.strides, value.shape)):
        out.flags.writeable = False
    return out
