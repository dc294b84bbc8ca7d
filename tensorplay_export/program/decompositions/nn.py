"""Composites that carry their own decomposition in the op registry, e.g. ``nn.functional``.

Each ``tpe.nn.*`` composite op carries its plain numpy function in the
registry's ``decomposition`` slot (``nn/_composites.py``); tracing that
function with no functional hook set yields primitive numpy ops only (a
composite that calls another, like ``silu`` -> ``sigmoid``, is traced through
as well), with the same numerics as the op itself.  Any other op registered
with a ``decomposition`` (a numpy function with the op's signature) joins the
default table the same way.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["decompositions"]


def decompositions() -> dict[str, Callable[..., Any]]:
    """Registry name -> numpy function of every op registered with a ``decomposition``."""
    from ...ops.registry import all_ops

    return {name: op.decomposition for name, op in sorted(all_ops().items())
            if op.decomposition is not None}
