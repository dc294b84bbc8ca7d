"""Python state a forward may change that no program can carry: module attributes and input containers.

A program's state is its parameters and buffers; its effects on the caller are its outputs,
buffer updates and writes into input arrays.  A forward can also change plain Python state:
``self.seen += n`` (a counter on the module), ``self.hist.append(h)`` (a list on the module),
``cache.append(kv)`` or ``cache["k"] = k`` (a container the caller passed).  The program
replays none of that, so from the second call on it would differ from the model (torch.export
refuses assignments to module attributes for the same reason).  Export's safety net
(:mod:`..program.eager_check`) runs the model eagerly on a clone; this module takes a
snapshot of that clone's Python attributes and of the input containers before the run, and
names what changed after it.

Snapshots compare scalars and strings by value, arrays and other objects by identity, and
lists, tuples, dicts and sets by their items (to a bounded depth): an ``append``, a new key,
a rebound entry or a rebound attribute all show.  A run (the capture's, the net's) works on the
user's own lists, dicts, sets and deques, so whatever shares them (two submodules, a global)
sees what eager would; :func:`saved_contents` and :func:`restore_contents` put their items back
after it, so an export never changes the user's module and a traced value never stays in it.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Optional

import numpy as np

__all__ = ["module_roots", "saved_contents", "restore_contents", "attribute_snapshot", "changed_attribute", "container_snapshot",
           "changed_container"]

# attributes of nn.Module's own bookkeeping (the state export does carry, or none at all)
_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "training",
                               "_exported_submodules"})
_MAX_DEPTH = 6
_MAX_ITEMS = 10_000
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def module_roots(model: Any) -> list:
    """The plain attribute values of every module of ``model``'s tree (none for a function)."""
    from ..nn.module import Module

    if not isinstance(model, Module):
        owner = getattr(model, "__self__", None)
        if not isinstance(owner, Module):
            return []
        model = owner
    return [v for _fqn, m in model.named_modules() for k, v in vars(m).items() if k not in _MODULE_INTERNALS]


def saved_contents(roots: list) -> list:
    """``(container, its items)`` of each list, dict, set and deque reachable from ``roots``
    through containers and tuples (each once, by identity; bounded in depth and count)."""
    seen: set = set()
    out: list = []
    stack = [(v, 0) for v in roots]
    budget = _MAX_ITEMS
    while stack and budget > 0:
        v, depth = stack.pop()
        if depth > _MAX_DEPTH:
            continue
        if isinstance(v, (list, dict, set, deque)):
            if id(v) in seen:
                continue
            seen.add(id(v))
            items = list(v.items()) if isinstance(v, dict) else list(v)
            budget -= len(items) + 1
            out.append((v, items))
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
        elif type(v) is tuple:
            stack.extend((x, depth + 1) for x in v)
    return out


def restore_contents(saved: list) -> None:
    """Put back the items :func:`saved_contents` saved, into the same objects (every alias sees it)."""
    for obj, items in saved:
        if isinstance(obj, dict):
            obj.clear()
            obj.update(items)
        elif isinstance(obj, list):
            obj[:] = items
        else:  # set, deque
            obj.clear()
            (obj.update if isinstance(obj, set) else obj.extend)(items)


def _fingerprint(value: Any, depth: int = 0) -> Any:
    t = type(value)
    if t in _SCALARS or isinstance(value, np.generic):
        return (t, value)
    if depth < _MAX_DEPTH and isinstance(value, (list, tuple, deque)) and len(value) <= _MAX_ITEMS:
        return (t, id(value), tuple(_fingerprint(v, depth + 1) for v in value))
    if depth < _MAX_DEPTH and isinstance(value, dict) and len(value) <= _MAX_ITEMS:
        return (t, id(value), tuple((k, _fingerprint(v, depth + 1)) for k, v in value.items()))
    if depth < _MAX_DEPTH and t in (set, frozenset) and len(value) <= _MAX_ITEMS:
        return (t, frozenset(_fingerprint(v, depth + 1) for v in value))
    return ("object", id(value))  # arrays and everything else: the same object or not


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    if isinstance(value, (list, tuple, dict, set)):
        return f"a {type(value).__name__} of {len(value)} items"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def attribute_snapshot(modules: dict) -> dict:
    """``(fqn, attribute) -> fingerprint`` of the plain attributes of each module (``fqn -> module``):
    every instance attribute but the parameters, buffers and submodules."""
    out = {}
    for fqn, m in modules.items():
        for key, value in vars(m).items():
            if key not in _MODULE_INTERNALS:
                out[(fqn, key)] = (_fingerprint(value), value)
    return out


def changed_attribute(before: dict, modules: dict) -> Optional[tuple]:
    """``(where, before text, after text)`` of the first plain module attribute the run assigned,
    added or changed inside (``before``: :func:`attribute_snapshot` before it), else None."""
    after = attribute_snapshot(modules)
    for key in list(before) + [k for k in after if k not in before]:
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and old[0] == new[0]:
            continue
        fqn, name = key
        where = f"module attribute {fqn + '.' if fqn else ''}{name}"
        return (where, "absent" if old is None else _describe(old[1]), "deleted" if new is None else _describe(new[1]))
    return None


def _tree_fingerprint(value: Any) -> Any:
    from .. import pytree

    try:
        leaves, spec = pytree.tree_flatten(value)
    except Exception:  # noqa: BLE001 - an object pytree cannot walk: compared by identity
        return ("object", id(value))
    return (spec, tuple(_fingerprint(v) for v in leaves))


def container_snapshot(items: list) -> list:
    """``(path, fingerprint)`` of the input containers (``items``: ``(path, value)`` of the
    top-level arguments), as their pytree flattening sees them (registered dataclasses too)."""
    return [(path, _tree_fingerprint(value)) for path, value in items]


def changed_container(before: list, items: list) -> Optional[str]:
    """The path of the first input whose container the run changed (an item appended, removed or
    rebound, a key added), else None."""
    for (path, old), (_p, value) in zip(before, items):
        if old != _tree_fingerprint(value):
            return path
    return None
