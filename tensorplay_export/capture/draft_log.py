"""Draft mode of capture (``capture(..., mode="draft")``): go on where ``export`` stops.

The tracer consults its mode at three places; in ``"export"`` mode each of them
raises, in ``"draft"`` mode capture records what happened in a :class:`DraftLog`
and builds a program that is sound for the inputs it accepts:

- **an op without a shape rule** (a numpy function or ndarray method the
  registry does not know) runs as an opaque op ``tpe.opaque.<name>``
  (:func:`~tensorplay_export.ops.registry.make_opaque_op`) held in the
  capture's op table overlay (``tracer.op_table``), never in the registry;
  its rule pins every size it sees to the example's;
- **a read of an array's value** (``if x.sum() > 0``, ``int(a)``, ``.item()``)
  follows the example and leaves a ``tpe.assert_guard`` node, so the program
  refuses inputs that take the other branch or give another value;
- **a guard on a data-dependent size** (``np.nonzero``...) is assumed as the
  example took it (``ShapeEnv`` in draft mode) and :func:`insert_data_dependent_checks`
  puts a ``tpe.assert_guard`` right after the node binding the size.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..graph.printing import format_guard
from ..ops.registry import OPAQUE_PREFIX, OpDef, func_name, get_op, make_opaque_op, refusal
from ..records import SourceLoc

__all__ = ["DraftLog", "VALUE_READS", "opaque_for", "assume_value", "insert_data_dependent_checks"]


@dataclass
class DraftLog:
    """What a draft capture did instead of raising (read by ``draft_export``'s report).

    Attributes:
        unsupported: ``(qualified numpy name, SourceLoc | None)`` per opaque op use site.
        values: ``(what the model did, the example value shown, SourceLoc | None)`` per value read.
        problems: data-dependent guards that got no runtime check (structural problems).
    """

    unsupported: list = field(default_factory=list)
    values: list = field(default_factory=list)
    problems: list = field(default_factory=list)


# value-read method -> (what the model did, conversion of the example)
VALUE_READS: dict[str, tuple[str, Any]] = {
    "__bool__": ("branches on the truth value", bool),
    "__int__": ("reads the int value", int),
    "__index__": ("uses as a Python int the value", int),
    "__float__": ("reads the float value", float),
    "item": ("reads .item()", lambda a: a.item()),
    "slice_bound": ("uses as a slice bound the value", int),
}


def opaque_for(tracer: Any, qualname: str, impl: Any, src: Optional[SourceLoc]) -> OpDef:
    """The capture's opaque op for ``qualname`` (made once per capture), the use site logged."""
    op = tracer.op_table.get(f"{OPAQUE_PREFIX}{qualname}")
    if op is None:
        op = make_opaque_op(qualname, impl)
        tracer.op_table[op.name] = op
    log = tracer.draft
    if (qualname, src) not in log.unsupported:
        log.unsupported.append((qualname, src))
    return op


def opaque_func(tracer: Any, func: Any, src: Optional[SourceLoc]) -> Optional[OpDef]:
    """Opaque op for a numpy function/ufunc in draft mode (None: not a numpy callable)."""
    if not callable(func):
        return None
    qualname = func_name(func)
    if not qualname.startswith("numpy"):
        return None
    return opaque_for(tracer, qualname, func, src)


def opaque_method(tracer: Any, name: str, src: Optional[SourceLoc]) -> Optional[OpDef]:
    """Opaque op for an ``ndarray`` method in draft mode (None: ndarray has no such method, or capture
    refuses it on purpose: ``a.resize`` writes the array in place, which an opaque op cannot)."""
    method = getattr(np.ndarray, name, None)
    if method is None or not callable(method) or refusal(method) is not None:
        return None
    return opaque_for(tracer, f"numpy.ndarray.{name}", method, src)


def assume_value(tracer: Any, t: Any, name: str, src: Optional[SourceLoc]) -> Any:
    """Draft mode's answer to a value read: the example's value, checked at run time.

    Raises:
        ValueError / TypeError: as eager numpy would (truth value of a 2-element array).
    """
    what, convert = VALUE_READS[name]
    value = convert(np.asarray(t.example))
    if name == "__bool__":
        cond = t if value else tracer.call(get_op("numpy.logical_not"), (t,), {}, source=src)
        shown, other = f"{value}", f"{not value}"
    else:
        cond = tracer.call(get_op("numpy.equal"), (t, value), {}, source=src)
        shown, other = f"{value!r}", t.node  # the check prints the value the call read
    code = f"`{src.text}`" if src is not None and src.text else "the model"
    tracer.graph.call_function(
        "tpe.assert_guard",
        (cond.node, f"the array value read by {code}", other,
         f"the example's {shown} (draft_export assumed it)", (), ()),
        meta=tracer.node_meta(src, shape=None))
    tracer.draft.values.append((what, shown, src))
    return value


def insert_data_dependent_checks(graph: Any, env: Any, log: DraftLog) -> None:
    """A ``tpe.assert_guard`` after the node binding the last data-dependent size of each such guard."""
    binder: dict = {}
    for node in graph.nodes:
        for _axis, sym in (node.meta.get("bind") or {}).items():
            binder.setdefault(sym, node)
    position = {n: i for i, n in enumerate(graph.nodes)}
    for rec in env.data_dependent:
        unbacked = [s for s in rec.expr.free_symbols if env.kinds.get(s) == "unbacked"]
        nodes = [binder.get(s) for s in unbacked]
        if not unbacked or any(n is None for n in nodes):
            log.problems.append(f"no runtime check for {rec.expr}: its data-dependent size is not bound "
                                "in the graph")
            continue
        after = max(nodes, key=lambda n: position[n])
        syms = tuple(sorted(rec.expr.free_symbols, key=lambda s: s.name))
        first = sorted(unbacked, key=lambda s: s.name)[0]
        op, produced = env.unbacked_source.get(first, ("?", None))
        where = f"{first} (data-dependent size from {op}{f' at {produced}' if produced else ''})"
        meta = {"shape": None, "source": rec.source}
        for key in ("module_path", "module_stack"):
            if key in after.meta:
                meta[key] = after.meta[key]
        with graph.inserting_after(after):
            graph.call_function("tpe.assert_guard",
                                (rec.expr, where, first, format_guard(rec.expr),
                                 tuple(s.name for s in syms), syms),
                                meta=meta)
