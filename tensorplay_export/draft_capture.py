"""What draft mode adds to capture, kept out of the core's files until it moves there.

``draft_export`` needs capture to go on where ``export`` stops:

- a numpy function or ndarray method without a shape rule runs as an opaque
  registry op ``tpe.opaque.<name>`` whose rule pins every size it sees to the
  example's (so the program is sound, and specialized);
- reading an array's value (``if x.sum() > 0``, ``int(a)``, ``.item()``) follows
  the example and leaves a ``tpe.assert_guard`` runtime check;
- each guard on a data-dependent size (``env.data_dependent``) gets a
  ``tpe.assert_guard`` right after the node that binds the size.

The first two work by wrapping capture's op lookups and ``TracedArray``'s value
reads once; the wrappers act only while :data:`DRAFT` holds a
:class:`DraftState` (one draft capture, this context), so ``export`` behaves
exactly as before.  Opaque ops stay in the registry only for the duration of one
``draft_export`` call (:func:`release_opaque`).
"""
from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

__all__ = ["DRAFT", "DraftState", "install", "release_opaque", "insert_data_dependent_checks"]


DRAFT: contextvars.ContextVar = contextvars.ContextVar("tpe_draft_state", default=None)


@dataclass
class DraftState:
    unsupported: list = field(default_factory=list)   # (qualified name, SourceLoc | None)
    values: list = field(default_factory=list)        # (what, example value, SourceLoc | None)
    registered: set = field(default_factory=set)      # opaque op names this draft holds in the registry


def _opaque_rule(name: str) -> Any:
    """Shape rule of an op without one: pin every size it sees to the example's, return numpy's shape."""
    from .ops.registry import ArrayInfo

    def sizes(value: Any) -> list:
        if isinstance(value, ArrayInfo):
            return list(value.shape)
        if isinstance(value, sympy.Expr):
            return [value]
        if isinstance(value, (tuple, list)):
            return [d for v in value for d in sizes(v)]
        if isinstance(value, dict):
            return [d for v in value.values() for d in sizes(v)]
        if isinstance(value, slice):
            return sizes((value.start, value.stop, value.step))
        return []

    def rule(ctx: Any, *args: Any, **kwargs: Any) -> tuple:
        for d in sizes((args, kwargs)):
            if isinstance(d, sympy.Expr) and not d.is_number:
                ctx.env.guard(sympy.Eq(d, ctx.hint(d)), "specialization",
                              f"{name} has no shape rule", ctx.source, ctx.op)
        return ctx.concrete[0]

    return rule


_OPAQUE_LOCK = threading.Lock()
_OPAQUE_REFS: dict[str, int] = {}   # opaque op name -> drafts in progress that use it


def _opaque_op(qualname: str, impl: Any, state: DraftState) -> Any:
    """A registry op ``tpe.opaque.<qualname>`` held for the duration of one draft_export call.

    It must be in the registry while capture replays the graph and codegen
    compiles it; :func:`release_opaque` removes it afterwards, so ``export``
    and the registry's own tests never see it (a draft program using one cannot
    be loaded in another process: its op is not in the opset).
    """
    from .ops.registry import get_op, has_op, register_op

    name = f"tpe.opaque.{qualname}"
    with _OPAQUE_LOCK:
        if name not in state.registered:
            state.registered.add(name)
            _OPAQUE_REFS[name] = _OPAQUE_REFS.get(name, 0) + 1
        if not has_op(name):
            register_op(name, impl, _opaque_rule(qualname),
                        doc=f"draft_export only: {qualname} run without a shape rule (sizes pinned)")
    return get_op(name)


def release_opaque(state: DraftState) -> None:
    from .ops import registry

    with _OPAQUE_LOCK:
        for name in state.registered:
            _OPAQUE_REFS[name] -= 1
            if _OPAQUE_REFS[name] == 0:
                del _OPAQUE_REFS[name]
                # TODO(CORE): a public registry.unregister_op; until then the private table is edited here.
                registry._OPS.pop(name, None)
        state.registered.clear()


def _note_unsupported(state: DraftState, qualname: str) -> None:
    from .shape_env import user_source

    src = user_source(1)
    if (qualname, src) not in state.unsupported:
        state.unsupported.append((qualname, src))


def install() -> None:
    """Wrap capture's op lookups once: in a draft capture, a numpy callable without an op gets an opaque one.

    Outside a draft capture (``DRAFT`` unset) the wrappers return exactly what
    the registry says, so ``export`` still raises ``UnsupportedOpError``.
    """
    from .capture import traced
    from .ops.registry import func_name

    if getattr(traced, "_tpe_draft_fallbacks", False):
        return
    orig_func, orig_method = traced.lookup_func, traced.lookup_method

    def lookup_func(func: Any) -> Any:
        op = orig_func(func)
        state = DRAFT.get()
        if op is None and state is not None and callable(func):
            qualname = func_name(func)
            if qualname.startswith("numpy"):
                _note_unsupported(state, qualname)
                return _opaque_op(qualname, func, state)
        return op

    def lookup_method(name: str) -> Any:
        op = orig_method(name)
        state = DRAFT.get()
        if op is None and state is not None and hasattr(np.ndarray, name) and callable(getattr(np.ndarray, name)):
            qualname = f"numpy.ndarray.{name}"
            _note_unsupported(state, qualname)
            return _opaque_op(qualname, getattr(np.ndarray, name), state)
        return op

    traced.lookup_func = lookup_func
    traced.lookup_method = lookup_method
    _install_value_reads(traced.TracedArray)
    traced._tpe_draft_fallbacks = True


_VALUE_READS = {"__bool__": ("branches on the truth value", bool),
                "__int__": ("reads the int value", int),
                "__index__": ("uses as a Python int the value", int),
                "__float__": ("reads the float value", float),
                "item": ("reads .item()", lambda a: a.item())}


def _install_value_reads(cls: type) -> None:
    """In a draft capture, reading an array's value follows the example and leaves a runtime check.

    ``if x.sum() > 0:`` (or ``int(n_arr)``) makes ``export`` raise ``DataDependentError``;
    ``draft_export`` records a ``data_dependent`` failure, returns the example's value,
    and adds a ``tpe.assert_guard`` node so the draft program refuses inputs that
    would take the other branch (or produce another value).
    """
    for name in _VALUE_READS:
        original = getattr(cls, name)

        def method(self: Any, *args: Any, _original: Any = original, _name: str = name) -> Any:
            state = DRAFT.get()
            if state is None or args:
                return _original(self, *args)
            return _assume_value(self, _name, state)

        method.__name__ = name
        setattr(cls, name, method)


def _assume_value(t: Any, name: str, state: DraftState) -> Any:
    from .ops.registry import get_op
    from .shape_env import user_source

    what, convert = _VALUE_READS[name]
    value = convert(np.asarray(t.example))  # raises like eager numpy (e.g. truth value of a 2-element array)
    src = user_source(1)
    tracer = t._tracer
    if name == "__bool__":
        cond = t if value else tracer.call(get_op("numpy.logical_not"), (t,), {}, source=src)
        shown, other = f"{value}", f"{not value}"
    else:
        cond = tracer.call(get_op("numpy.equal"), (t, value), {}, source=src)
        shown, other = f"{value!r}", "another value"
    code = f"`{src.text}` at {src}" if src is not None and src.text else "an array value"
    tracer.graph.call_function(
        "tpe.assert_guard",
        (cond.node, f"the array value read by {code.split(' at ')[0]}", other,
         f"the example's {shown} (draft_export assumed it)", (), ()),
        meta={"shape": None, "source": src})
    state.values.append((what, shown, src))
    return value



def insert_data_dependent_checks(result: Any) -> list[str]:
    """A ``tpe.assert_guard`` node after the node binding each data-dependent guard's last symbol."""
    from .violations import format_guard

    env = result.env
    graph = result.graph
    problems = []
    binder: dict = {}
    for node in graph.nodes:
        for _axis, sym in (node.meta.get("bind") or {}).items():
            binder.setdefault(sym, node)
    position = {n: i for i, n in enumerate(graph.nodes)}
    for rec in env.data_dependent:
        unbacked = [s for s in rec.expr.free_symbols if env.kinds.get(s) == "unbacked"]
        nodes = [binder.get(s) for s in unbacked]
        if not unbacked or any(n is None for n in nodes):
            problems.append(f"no runtime check for {rec.expr}: its data-dependent size is not bound in the graph")
            continue
        after = max(nodes, key=lambda n: position[n])
        syms = tuple(sorted(rec.expr.free_symbols, key=lambda s: s.name))
        first = sorted(unbacked, key=lambda s: s.name)[0]
        op, produced = env.unbacked_source.get(first, ("?", None))
        where = f"{first} (data-dependent size from {op}{f' at {produced}' if produced else ''})"
        with graph.inserting_after(after):
            graph.call_function("tpe.assert_guard",
                                (rec.expr, where, first, format_guard(rec.expr),
                                 tuple(s.name for s in syms), syms),
                                meta={"shape": None, "source": rec.source})
    return problems
