"""Module state during capture: lifted parameters/buffers/constants and module calls.

Parameters become ``p_<fqn>`` placeholders, buffers (persistent or not)
``b_<fqn>``, and plain ndarray attributes of modules lazily ``c_<fqn>``
(dots -> underscores).  The capture runs on a per-capture view of the module
tree (:func:`clone_module_tree`): a shallow clone of every module whose
``_parameters``/``_buffers`` dicts (and instance attributes) hold the traced
values.  The user's module is never changed, so another thread calling it
eagerly meanwhile sees its own arrays, never traced ones, and whatever
``forward`` stores on ``self`` stays on the clone.  A buffer that ``forward``
reassigns or writes in place is a buffer mutation.
"""
from __future__ import annotations

import functools
import types
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .borrowed import Borrowed
from .patching import clone_function
from .tracer import Tracer


def placeholder_name(prefix: str, fqn: str) -> str:
    return f"{prefix}_{fqn.replace('.', '_')}"


def clone_module_tree(model: Any, value_of: Callable[[str, Any], Any]) -> dict:
    """A shallow clone of every module reachable from ``model``; ``{id(original): clone}``.

    Each clone is an instance of the same class with a copy of the instance dict;
    its ``_parameters``/``_buffers`` dicts are new, holding ``value_of(kind, value)``
    for each entry (``kind`` is ``"parameter"`` or ``"buffer"``; called once per distinct
    value, so a tied value stays tied; ``None`` entries stay ``None``), and ``_modules`` holds the clones of the children (a module shared by
    several parents has one clone).  Methods bound to a module of the tree and stored
    as instance attributes (``self.act = self._gelu``) are rebound to its clone.
    Other attribute values are shared with the original, as a shallow copy shares them (a run
    restores the lists and dicts among them afterwards: :mod:`.python_state`).
    """
    originals = list(model.named_modules(remove_duplicate=True))
    clones: dict[int, Any] = {}
    for _fqn, m in originals:
        clone = object.__new__(type(m))
        clone.__dict__.update(m.__dict__)
        clones[id(m)] = clone
    values: dict[int, Any] = {}                  # id(value) -> its stand-in: a tied value stays tied

    def stand_in(kind: str, value: Any) -> Any:
        if value is None:
            return None
        hit = values.get(id(value))
        if hit is None:
            hit = values[id(value)] = value_of(kind, value)
        return hit

    for _fqn, m in originals:
        inst = clones[id(m)].__dict__
        for store, kind in (("_parameters", "parameter"), ("_buffers", "buffer")):
            table = m.__dict__.get(store)
            if table is not None:
                inst[store] = OrderedDict((k, stand_in(kind, v)) for k, v in table.items())
        children = m.__dict__.get("_modules")
        if children is not None:
            inst["_modules"] = OrderedDict((k, None if c is None else clones[id(c)]) for k, c in children.items())
        if "_non_persistent_buffers_set" in inst:
            inst["_non_persistent_buffers_set"] = set(inst["_non_persistent_buffers_set"])
        for key, value in list(inst.items()):
            # the method keeps its module alive, so its id cannot be a reused one
            if type(value) is types.MethodType and id(value.__self__) in clones:
                inst[key] = types.MethodType(value.__func__, clones[id(value.__self__)])

    return clones


@dataclass
class LiftedState:
    """What was lifted from a module, and the per-capture view of its tree the capture runs.

    ``root``: the clone of the model to call; ``fqn_of`` maps ``id(clone)`` to its fqn;
    ``buffer_slots`` maps a buffer fqn to ``(clone, name)``, where ``forward``'s updates land.
    """

    root: Any = None
    params: list = field(default_factory=list)       # (fqn, traced, value)
    buffers: list = field(default_factory=list)      # (fqn, traced, value, persistent)
    fqn_of: dict = field(default_factory=dict)       # id(clone) -> fqn
    buffer_slots: dict = field(default_factory=dict)  # fqn -> (clone, name)
    clone_of: dict = field(default_factory=dict)     # id(original module) -> its clone


def lift_module_state(tracer: Tracer, model: Any) -> LiftedState:
    """Create state placeholders (params first, then buffers) over a clone of the module tree.

    One walk of the module tree (every fqn, shared modules at each of theirs, as
    ``named_parameters(remove_duplicate=False)`` walks it): a parameter or buffer
    shared by several modules is lifted once, under its first fqn.  ``model`` itself
    is left as it is; ``state.root`` is the view to call.
    """
    state = LiftedState()
    tracer.borrowed = borrowed = Borrowed()
    views = _exported_submodules(model)
    walk = list(_named_modules(model, views))
    modules = []                                 # each module once, at its first fqn
    first: dict[int, str] = {}
    for fqn, m in walk:
        if id(m) not in first:
            first[id(m)] = fqn
            modules.append((fqn, m))
    seen: dict[int, Any] = {}
    for mfqn, m in walk:
        for name, param in m._parameters.items():
            if param is None or id(param) in seen:
                continue
            fqn = f"{mfqn}.{name}" if mfqn else name
            traced = tracer.placeholder(placeholder_name("p", fqn), np.asarray(param), tuple(param.shape))
            borrowed.borrow(traced, fqn)  # an in-place update in forward (out=self.w) writes into a copy
            seen[id(param)] = traced
            state.params.append((fqn, traced, param))
    non_persistent = set()
    for mfqn, m in modules:
        for name in getattr(m, "_non_persistent_buffers_set", ()):
            non_persistent.add(f"{mfqn}.{name}" if mfqn else name)
    for mfqn, m in walk:
        for name, buf in m._buffers.items():
            if buf is None or id(buf) in seen:
                continue
            fqn = f"{mfqn}.{name}" if mfqn else name
            value = np.asarray(buf)
            traced = tracer.placeholder(placeholder_name("b", fqn), value, tuple(value.shape))
            borrowed.borrow(traced, fqn)
            seen[id(buf)] = traced
            state.buffers.append((fqn, traced, buf, fqn not in non_persistent))
    # a parameter or buffer is one value whatever path reaches it: read through a plain list or
    # dict attribute (self.ws = [self.lin.weight]), a global or a module outside the tree's
    # clones, it is its placeholder, never a constant lifted beside it
    for value, traced in [(p, t) for _f, t, p in state.params] + [(b, t) for _f, t, b, _p in state.buffers]:
        tracer.lift_state_alias(value, traced)
    clones = clone_module_tree(model, lambda _kind, value: seen[id(value)])
    for held in views.values():
        for key, view in held:
            if id(view) not in clones:
                clones.update(clone_module_tree(view, lambda _kind, value: seen[id(value)]))
    for mid, held in views.items():  # the clone holds the view's clone where the user's holds the exported module
        inst = clones[mid].__dict__
        for key, view in held:
            inst[key] = clones[id(view)]
    state.root = clones[id(model)]
    state.clone_of = tracer.module_clones = clones   # a module global of the tree reads as its clone (patching)
    methods: dict[type, list] = {}               # class -> its helper methods to clone (per capture)
    for mfqn, m in modules:
        clone = clones[id(m)]
        state.fqn_of[id(clone)] = mfqn
        for key in clone._buffers:
            state.buffer_slots[f"{mfqn}.{key}" if mfqn else key] = (clone, key)
        inst = clone.__dict__
        cls = type(m)
        helpers = methods.get(cls)
        if helpers is None:
            helpers = methods[cls] = _helper_methods(cls)
        if helpers:
            _bind_cloned_methods(tracer, clone, inst, helpers)
    stand_in = _ContainerStandIns(tracer, clones)
    for mfqn, m in modules:
        inst = clones[id(m)].__dict__
        for key, value in list(inst.items()):
            if key not in _MODULE_SLOTS:
                inst[key] = stand_in(value, f"{mfqn}.{key}" if mfqn else key)
    return state


_MODULE_SLOTS = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "_exported_submodules"})
_MAX_CONTAINER_DEPTH = 6  # as deep as python_state's snapshots look


class _ContainerStandIns:
    """The capture-time value of a plain module attribute: arrays and modules inside plain containers too.

    A plain ndarray attribute is a lazily lifted constant ``c_<fqn>``; inside a list, tuple or dict
    attribute (``self.ws = [w]``) it is one too, named by its path (``c_ws_0``), so the model's
    ``self.ws[0].T`` is traced rather than computed on the raw array and baked in.  A lifted
    parameter or buffer inside one (``self.ws = [self.lin.weight]``) is its placeholder, and a
    module of the tree (``self.layers = [self.lin]``) its clone, so state is lifted once by
    identity whatever path reaches it.  A container holding none of these stays the user's own
    object (shared, as the clone's other attributes are); one that does is copied, once per
    container (two attributes sharing a list share its copy), so the user's is never changed.
    """

    def __init__(self, tracer: Tracer, clones: dict):
        self.tracer, self.clones = tracer, clones
        self.copies: dict[int, Any] = {}

    def __call__(self, value: Any, path: str, depth: int = 0) -> Any:
        Module = _module_class()
        if isinstance(value, np.ndarray):
            # lift_constant answers a lifted parameter or buffer with its placeholder (by identity)
            if type(value) is np.ndarray or self.tracer.is_state_alias(value):
                return self.tracer.lift_constant(placeholder_name("c", path), value)
            return value
        if isinstance(value, Module):
            return self.clones.get(id(value), value)
        return rebuilt_container(value, lambda v, p: self(v, p, depth + 1), self.copies, path, depth)


def rebuilt_container(value: Any, item: Callable[[Any, str], Any], copies: dict, path: str = "",
                      depth: int = 0) -> Any:
    """``value`` with each item of a plain list, tuple or dict mapped by ``item(v, its path)``:
    the same object when no item changed, else one copy per container (``copies``, by id: two
    attributes sharing a list share its copy).  Anything else, or deeper than
    :data:`_MAX_CONTAINER_DEPTH`, is returned as it is."""
    if type(value) not in (list, tuple, dict) or depth >= _MAX_CONTAINER_DEPTH:
        return value
    known = copies.get(id(value))
    if known is not None:
        return known
    if type(value) is dict:
        items = {k: item(v, f"{path}.{k}") for k, v in value.items()}
        changed = any(items[k] is not v for k, v in value.items())
        new = items if changed else value
    else:
        seq = [item(v, f"{path}.{i}") for i, v in enumerate(value)]
        changed = any(a is not b for a, b in zip(seq, value))
        new = (seq if type(value) is list else tuple(seq)) if changed else value
    copies[id(value)] = new
    return new


def _exported_submodules(model: Any) -> dict:
    """``{id(module): [(attribute, view)]}``: the exported modules (``ep.module()``) the tree's
    modules hold as plain attributes, each as an ``nn.Module`` view over its state.

    torch's ``ep.module()`` is an ``nn.Module``, so a model holding one as ``self.inner`` has
    its state under ``inner.`` (``inner.linear.weight``); a re-export lifts it there.  Here an
    exported module offers the view (``_tpe_capture_submodule``: its parameters and buffers
    under their fqns, a forward that re-runs the program through the capture and writes its
    updates back; :func:`~tensorplay_export.program.retrace.capture_view`), and this walk
    places it under the attribute that holds it.  One view per exported module, so one held
    twice is one state.
    """
    views: dict[int, Any] = {}
    out: dict[int, list] = {}
    for _fqn, m in model.named_modules():
        held = m.__dict__.get("_exported_submodules") or ()
        for key in held:
            value = m.__dict__.get(key)
            offer = getattr(type(value), "_tpe_capture_submodule", None)
            if offer is None:
                continue
            view = views.get(id(value))
            if view is None:
                view = offer(value)
                if view is None:
                    continue
                views[id(value)] = view
            out.setdefault(id(m), []).append((key, view))
    return out


def _named_modules(model: Any, views: dict, prefix: str = "") -> Any:
    """``model.named_modules(remove_duplicate=False)`` with each exported submodule's view
    (:func:`_exported_submodules`) after the registered children, under its attribute."""
    yield prefix, model
    for name, child in model._modules.items():
        if child is not None:
            yield from _named_modules(child, views, f"{prefix}.{name}" if prefix else name)
    for key, view in views.get(id(model), ()):
        yield from _named_modules(view, views, f"{prefix}.{key}" if prefix else key)


def _helper_methods(cls: type) -> list:
    """``(name, function)`` of the user-written helper methods of ``cls`` and its bases up to Module."""
    from ..nn.module import Module
    from .frames import is_user_function

    out = []
    for base in cls.__mro__:
        if base is Module or base is object:
            break
        for name, fn in vars(base).items():
            if name.startswith("__") or name == "forward":
                continue
            if isinstance(fn, types.FunctionType) and is_user_function(fn):
                out.append((name, fn))
    return out


@functools.cache
def _module_class() -> type:
    """nn's Module class, imported on first use (not at import: this module stays importable
    without nn), once, not at each of the many values a capture walks."""
    from ..nn.module import Module

    return Module


def _bind_cloned_methods(tracer: Tracer, module: Any, inst: dict, helpers: list) -> None:
    """Helper methods of the model's classes (``self._attn(x)``) run as clones over a globals view.

    Bound in the instance dict of the module's per-capture clone, so the module
    constants they read are lifted like the forward's.  ``helpers``: :func:`_helper_methods`
    of the module's class; each function is cloned once per capture (``clone_function``).
    """
    for name, fn in helpers:
        if name in inst:
            continue  # an instance attribute, or a method a subclass (earlier in the MRO) bound already
        bound = types.MethodType(clone_function(tracer, fn), module)
        inst[name] = bound


def buffer_mutations(state: LiftedState) -> list:
    """(fqn, new traced value) of every buffer forward wrote or reassigned."""
    out = []
    for fqn, traced, _value, _persistent in state.buffers:
        module, key = state.buffer_slots.get(fqn, (None, None))
        current = module._buffers.get(key) if module is not None else traced
        if current is not traced or traced.node.op != "placeholder":
            out.append((fqn, current))
    return out


@dataclass
class ModuleCalls:
    """Module call boundaries recorded through ``nn.module._CALL_HOOK``.

    Every call gets a ``call_id`` from a per-capture counter (the root call is 0,
    then in call order); nodes made during the call carry it in
    ``meta["module_stack"]``.  ``preserve``: fqns whose call signatures are
    recorded, for every call (``signatures[fqn]``, in call order).
    """

    preserve: tuple = ()
    log: list = field(default_factory=list)          # (fqn, call_id) of every call, in call order
    signatures: dict = field(default_factory=dict)   # fqn -> [(flat ins, flat outs) per call]
    counter: int = 0

    @property
    def order(self) -> list:
        """The called fqns in first-call order (derived from ``log``)."""
        return list(dict.fromkeys(fqn for fqn, _call_id in self.log))

    @property
    def ordered(self) -> set:
        """The fqns in :attr:`order`."""
        return {fqn for fqn, _call_id in self.log}

    def next_id(self) -> int:
        call_id = self.counter
        self.counter += 1
        return call_id


def make_call_hook(tracer: Tracer, state: LiftedState, calls: ModuleCalls):
    """The ``_CALL_HOOK`` of a capture: module path stack, cloned forwards, call records."""
    def hook(module: Any, args: tuple, kwargs: dict) -> Any:
        # a module of the tree reached through a plain container (self.layers = [self.lin]; the
        # clones share such containers with the user's modules) runs as its clone: under its
        # fqn, over the lifted state, its buffer writes landing on the clone
        module = state.clone_of.get(id(module), module)
        fqn = state.fqn_of.get(id(module), type(module).__name__)
        call_id = calls.next_id()
        tracer.module_stack.append((fqn, call_id))
        calls.log.append((fqn, call_id))
        try:
            forward = module.__dict__.get("forward")
            if forward is None:
                fn = type(module).forward
                if isinstance(fn, types.FunctionType):
                    out = clone_function(tracer, fn)(module, *args, **kwargs)
                else:
                    out = module.forward(*args, **kwargs)
            else:
                out = forward(*args, **kwargs)
        finally:
            tracer.module_stack.pop()
        if fqn in calls.preserve:
            from ..pytree import tree_flatten

            calls.signatures.setdefault(fqn, []).append((tree_flatten((args, kwargs)), tree_flatten(out)))
        return out

    return hook


RANDOM_OP_PREFIX = "tpe.random."


def check_generator_state(name: str, state_arg: Any, buffer_nodes: set) -> None:
    """Refuse a random op (``tpe.random.*``) whose generator state is not module state of the capture.

    A program advances a generator only through a ``BUFFER_MUTATION``, so the state a
    draw reads must be a lifted buffer of the exported module (``buffer_nodes``: their
    placeholder nodes) or the next state of an earlier draw from one.  Anything else
    (an array in a global or a closure, a lifted constant, a module reached through a
    global whose buffers were not lifted) would draw the same numbers on every program
    call while eager advances, or would write a traced value into the user's module.

    Raises:
        UnsupportedOpError: (``random_draw=True``) with what to do and the user's line.
    """
    node = getattr(state_arg, "node", None)
    ok = node is not None and (node in buffer_nodes or _is_next_state(node))
    if ok:
        return
    from ..errors import UnsupportedOpError
    from .frames import user_source

    raise UnsupportedOpError(
        f"random numbers inside the model: {name} draws from a generator state that is not a buffer "
        f"of the exported module (an array in a global or a closure, a plain attribute, or a module "
        f"reached through a global or closure instead of as a submodule), so the program could not "
        f"advance it. Keep the state in a buffer of the exported module (register_buffer, or make the "
        f"nn.Dropout a submodule of the exported model) and assign the next state back to it"
        f"\n  at {user_source(3)}", random_draw=True)


def _is_next_state(node: Any) -> bool:
    """``tpe.item(draw, 1)`` of an earlier random op: the state after that draw."""
    if getattr(node, "target", None) != "tpe.item" or len(node.args) != 2 or node.args[1] != 1:
        return False
    src = node.args[0]
    return str(getattr(src, "target", "")).startswith(RANDOM_OP_PREFIX)
