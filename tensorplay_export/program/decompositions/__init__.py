"""Built-in decompositions, one module per op family.

Each family module maps registry names to plain numpy functions with the op's
signature (``reductions.var``, ``linalg.einsum``, ...); :func:`builtin_builders`
wraps each one with :func:`traced_builder`, giving the ``builder(graph, node)``
callables ``default_decompositions()`` holds.  A function may return
``NotImplemented`` for argument forms it does not cover (the node is kept).
"""
from __future__ import annotations

from typing import Any, Callable

from . import creation, elementwise, grids, linalg, movement, nn, reductions, signal, stats
from ._trace import DecompositionError, DecompSession, SESSION, traced_builder

__all__ = ["builtin_functions", "builtin_builders", "traced_builder", "DecompositionError",
           "DecompSession", "SESSION"]


def builtin_functions() -> dict[str, Callable[..., Any]]:
    """Registry name -> numpy function of every built-in decomposition (fresh dict)."""
    out: dict = {}
    for family in (reductions, linalg, creation, movement, elementwise, grids, signal, stats):
        out.update(family.DECOMPOSITIONS)
    for name, fn in nn.decompositions().items():
        out.setdefault(name, fn)  # the family modules' versions take precedence
    return out


_BUILDERS: dict = {}


def builtin_builders() -> dict[str, Callable[..., Any]]:
    """Registry name -> ``builder(graph, node)`` of every built-in decomposition (fresh dict;
    the builder objects are shared, so tables compare equal)."""
    fns = builtin_functions()
    for name, fn in fns.items():
        if name not in _BUILDERS or _BUILDERS[name].traced_fn is not fn:
            _BUILDERS[name] = traced_builder(fn, name=f"decompose_{name.rsplit('.', 1)[-1]}")
    return {name: _BUILDERS[name] for name in fns}
