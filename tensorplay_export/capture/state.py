"""Module state during capture: lifted parameters/buffers/constants and module calls.

Parameters become ``p_<fqn>`` placeholders, buffers (persistent or not)
``b_<fqn>``, and plain ndarray attributes of modules lazily ``c_<fqn>``
(dots -> underscores).  The traced values are swapped into each module's
``_parameters``/``_buffers`` dicts (and instance ``__dict__`` for plain
arrays) for the duration of the capture and swapped back afterwards, only
where the binding still holds our object (``is`` check), so nothing traced is
left in the user's module.  A buffer that ``forward`` reassigns or writes in
place is a buffer mutation.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .traced import TracedArray
from .tracer import Tracer


_ABSENT = object()


def placeholder_name(prefix: str, fqn: str) -> str:
    return f"{prefix}_{fqn.replace('.', '_')}"


@dataclass
class LiftedState:
    """What was lifted from a module, and how to put the module back."""

    params: list = field(default_factory=list)       # (fqn, traced, value)
    buffers: list = field(default_factory=list)      # (fqn, traced, value, persistent)
    swaps: list = field(default_factory=list)        # (dict, key, original, traced)
    fqn_of: dict = field(default_factory=dict)       # id(module) -> fqn
    buffer_slots: dict = field(default_factory=dict)  # fqn -> (module, name)
    snapshots: list = field(default_factory=list)    # (instance dict, its items before capture)

    def restore(self) -> None:
        # anything forward stored on a module (self.cache = traced) must not outlive the capture
        for inst, before in self.snapshots:
            for key, value in list(inst.items()):
                if type(value) is TracedArray and before.get(key, _ABSENT) is not value:
                    if key in before:
                        inst[key] = before[key]
                    else:
                        del inst[key]
        for d, key, original, traced in reversed(self.swaps):
            if d.get(key) is traced:
                if original is _ABSENT:
                    del d[key]
                else:
                    d[key] = original
            elif key in d and type(d.get(key)) is TracedArray:
                # forward reassigned it (buffer update): put the original back, eager-free
                d[key] = original


def lift_module_state(tracer: Tracer, model: Any) -> LiftedState:
    """Create state placeholders (params first, then buffers) and swap traced values in.

    One walk of the module tree (every fqn, shared modules at each of theirs, as
    ``named_parameters(remove_duplicate=False)`` walks it): a parameter or buffer
    shared by several modules is lifted once, under its first fqn.
    """
    state = LiftedState()
    walk = list(model.named_modules(remove_duplicate=False))
    modules = []                                 # each module once, at its first fqn
    for fqn, m in walk:
        if id(m) not in state.fqn_of:
            state.fqn_of[id(m)] = fqn
            modules.append((fqn, m))
    seen: dict[int, Any] = {}
    for mfqn, m in walk:
        for name, param in m._parameters.items():
            if param is None or id(param) in seen:
                continue
            fqn = f"{mfqn}.{name}" if mfqn else name
            traced = tracer.placeholder(placeholder_name("p", fqn), np.asarray(param), tuple(param.shape))
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
            traced = tracer.placeholder(placeholder_name("b", fqn), value.copy(), tuple(value.shape))
            seen[id(buf)] = traced
            state.buffers.append((fqn, traced, buf, fqn not in non_persistent))
    methods: dict[type, list] = {}               # class -> its helper methods to clone (per capture)
    for mfqn, m in modules:
        for dict_name in ("_parameters", "_buffers"):
            d = getattr(m, dict_name, None) or {}
            for key, value in list(d.items()):
                traced = seen.get(id(value))
                if traced is not None:
                    state.swaps.append((d, key, value, traced))
                    d[key] = traced
                    if dict_name == "_buffers":
                        state.buffer_slots[f"{mfqn}.{key}" if mfqn else key] = (m, key)
        inst = m.__dict__
        state.snapshots.append((inst, dict(inst)))
        cls = type(m)
        helpers = methods.get(cls)
        if helpers is None:
            helpers = methods[cls] = _helper_methods(cls)
        if helpers:
            _bind_cloned_methods(tracer, m, inst, state, helpers)
        for key, value in list(inst.items()):
            if type(value) is np.ndarray:
                fqn = f"{mfqn}.{key}" if mfqn else key
                traced = tracer.lift_constant(placeholder_name("c", fqn), value)
                state.swaps.append((inst, key, value, traced))
                inst[key] = traced
    return state


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


def _bind_cloned_methods(tracer: Tracer, module: Any, inst: dict, state: LiftedState, helpers: list) -> None:
    """Helper methods of the model's classes (``self._attn(x)``) run as clones over a globals view.

    Bound in the instance dict for the capture only (restored afterwards), so the module
    constants they read are lifted like the forward's.  ``helpers``: :func:`_helper_methods`
    of the module's class; each function is cloned once per capture (``clone_function``).
    """
    from .patching import clone_function

    for name, fn in helpers:
        if name in inst:
            continue  # an instance attribute, or a method a subclass (earlier in the MRO) bound already
        bound = types.MethodType(clone_function(tracer, fn), module)
        inst[name] = bound
        state.swaps.append((inst, name, _ABSENT, bound))


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
    from .patching import clone_function

    def hook(module: Any, args: tuple, kwargs: dict) -> Any:
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
