"""Sizes as values: a program output computed from the sizes it runs at.

``return y, x.shape[0] * 2 + 1`` returns a size, not an array.  Capture records
it as a ``tpe.size_value`` node whose argument is the size expression (over the
input symbols and data-dependent sizes bound by earlier nodes); the graph
signature names it with a ``SymIntArgument`` (``SymFloatArgument`` for
``x.shape[0] / 2``, ``SymBoolArgument`` for ``x.shape[0] > 3``), as
``torch.export`` does.  At run time the node evaluates the expression at the
call's sizes and returns a plain Python ``int`` / ``float`` / ``bool``.
"""
from __future__ import annotations

from typing import Any

from ..errors import ConstraintsExceededError
from .registry import register_op

__all__ = ["SIZE_KINDS", "item_size", "size_value"]

# the kind a size output has -> the Python type it is at run time
SIZE_KINDS = {"int": int, "float": float, "bool": bool}


def size_value(value: Any, kind: str) -> Any:
    """``value`` (the size expression evaluated at the call's sizes) as a Python ``kind``.

    Raises:
        ValueError: ``kind`` is not one of :data:`SIZE_KINDS`.
    """
    convert = SIZE_KINDS.get(kind)
    if convert is None:
        raise ValueError(f"tpe.size_value kind must be one of {sorted(SIZE_KINDS)}, got {kind!r}")
    return convert(value)


def _size_value_rule(ctx: Any, value: Any, kind: str) -> tuple:
    return ()  # a Python number: no array shape


# side_effect: a size a preserved submodule returns is read only by its module-call signature
# (unflatten), so dead-code elimination must keep the node
register_op("tpe.size_value", size_value, _size_value_rule, side_effect=True,
            doc="a size expression returned as a Python int/float/bool (a SymInt/SymFloat/SymBool output)")


def item_size(a: Any, where: str = "?") -> int:
    """The value of a one-element integer array as a Python int (``a.item()``, ``x[:a]`` in
    model code): capture binds a data-dependent size to it, so it must be a size.

    Raises:
        TypeError: ``a`` is not an integer array (a float or bool value is no size).
        ValueError: ``a`` has more than one element (numpy's own message).
        ConstraintsExceededError: the value is negative (``where``: the model's line).
    """
    kind = getattr(getattr(a, "dtype", None), "kind", None)
    if kind not in ("i", "u"):
        raise TypeError(f"tpe.item_size reads an integer array, got dtype {getattr(a, 'dtype', type(a))}")
    value = int(a.item())
    if value < 0:
        raise ConstraintsExceededError(
            f"an array value used as a size is {value}, but a size is >= 0 (the program was exported with "
            f"it as a data-dependent size), at {where}")
    return value


def _item_size_rule(ctx: Any, a: Any, where: str = "?") -> tuple:
    return ()  # a Python int: no array shape


# side_effect: the node's only reader is the size symbol it binds (meta["bind"]), which
# dead-code elimination does not see as a use
register_op("tpe.item_size", item_size, _item_size_rule, side_effect=True,
            doc="the value of a one-element int array as a Python int, bound to a data-dependent size")
