"""The ``nn.functional`` composites (``tpe.nn.*``): traced through their own numpy code.

Each composite op carries its plain numpy function in the registry's
``decomposition`` slot (``nn/_composites.py``); tracing that function with no
functional hook set yields primitive numpy ops only (a composite that calls
another, like ``silu`` -> ``sigmoid``, is traced through as well), with the
same numerics as the op itself.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["decompositions"]


def decompositions() -> dict[str, Callable[..., Any]]:
    """Registry name -> numpy function of every registered ``tpe.nn.*`` composite."""
    from ..ops.registry import all_ops

    return {name: op.decomposition for name, op in sorted(all_ops().items())
            if name.startswith("tpe.nn.") and op.decomposition is not None}
