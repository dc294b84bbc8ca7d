"""The hook through which capture sees an ``nn.functional`` call as one composite op.

Every public function of `tensorplay_export.nn.functional` that has a shape rule is
wrapped by `composite`. Eagerly (``_FUNCTIONAL_HOOK`` unset) the wrapper just calls the
function. While a capture sets the hook, a call becomes
``hook(name, fn, args, kwargs)``: ``name`` is the op's registry name
(``"tpe.nn.gelu"``), ``fn`` the plain numpy function (also the op's impl and, traced,
its decomposition). The hook decides: record one node, or call ``fn`` to trace
through it. Nothing here imports capture code.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable

__all__ = ["_FUNCTIONAL_HOOK", "composite", "registry_op", "COMPOSITES"]

_FUNCTIONAL_HOOK: contextvars.ContextVar = contextvars.ContextVar("tpe_functional_hook", default=None)

# registry name -> plain function, in definition order (read by nn._composites).
COMPOSITES: dict[str, Callable[..., Any]] = {}


def composite(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark ``fn`` as the composite op ``name``; the wrapper keeps ``fn`` as ``__wrapped__``."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in COMPOSITES:
            raise ValueError(f"composite {name!r} is defined twice")
        COMPOSITES[name] = fn
        return registry_op(name)(fn)

    return wrap


def registry_op(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Route calls of ``fn`` through the hook as the registry op ``name`` (no composite, no decomposition).

    For a primitive op whose impl ``fn`` is (``tpe.random.uniform``): eagerly the
    wrapper calls ``fn``; during a capture the hook records one ``name`` node.
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            hook = _FUNCTIONAL_HOOK.get()
            return fn(*args, **kwargs) if hook is None else hook(name, fn, args, kwargs)

        call.op_name = name
        return call

    return wrap
