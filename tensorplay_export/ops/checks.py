"""The runtime input-check ops: the dynamic-shape contract as ordinary registry ops.

:func:`tensorplay_export.program.input_checks.insert_input_checks` puts calls of
these ops ahead of all compute in an exported graph, so the contract travels
with the program (generated code, save/load, decompositions).  They are
registered with ``side_effect=True``: dead-code elimination keeps them although
nothing reads their results.  Each is a plain int comparison (well under 2% of
a call).

Shape problems raise :class:`~tensorplay_export.errors.ConstraintsExceededError`;
a wrong dtype raises :class:`~tensorplay_export.errors.InputDtypeError` (a ``TypeError``).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import ConstraintsExceededError, InputDtypeError
from ..records import format_range_brackets
from .registry import register_op

__all__ = ["check_input", "derived_root", "assert_range", "assert_dim", "assert_guard", "check_size", "check_int",
           "assert_int"]


def check_input(x: Any, path: str, static: tuple, dtype: Optional[np.dtype], shape_text: str) -> Any:
    """Check rank, static sizes (``static[i]`` int; None = dynamic) and dtype; returns ``x``.

    Raises:
        ConstraintsExceededError: not an array, wrong rank, or a static size differs.
        InputDtypeError: dtype differs.
    """
    shape = getattr(x, "shape", None)
    if shape is None:
        raise ConstraintsExceededError(
            f"{path} must be an array of shape {shape_text}, got {type(x).__name__}")
    if len(shape) != len(static):
        raise ConstraintsExceededError(
            f"{path} has rank {len(shape)} (shape {tuple(shape)}), but the contract expects rank "
            f"{len(static)}: {shape_text}")
    for axis, want in enumerate(static):
        if want is not None and shape[axis] != want:
            raise ConstraintsExceededError(
                f"{path}.shape[{axis}] = {shape[axis]} must be {want} (static in {shape_text})")
    if dtype is not None and x.dtype != dtype:
        raise InputDtypeError(f"{path} has dtype {x.dtype}, but the program expects {dtype}; "
                              f"cast it first, e.g. {path}.astype(np.{dtype})")
    return x


def derived_root(x: Any, path: str, axis: int, k: int, c: int, lo: int, hi: Optional[int],
                 expr_text: str, root: str) -> int:
    """Bind root ``r`` from ``x.shape[axis] == k*r + c``; check divisibility and ``lo <= r <= hi``.

    Raises:
        ConstraintsExceededError: the size is not ``k*r + c`` for an integer ``r`` in range.
    """
    size = x.shape[axis]
    r, rem = divmod(size - c, k)
    if rem:
        what = "it" if c == 0 else (f"size - {c}" if c > 0 else f"size + {-c}")
        raise ConstraintsExceededError(
            f"{path}.shape[{axis}] = {size} is not {expr_text} for any integer {root} "
            f"({what} must be divisible by {abs(k)})")
    if r < lo or (hi is not None and r > hi):
        raise ConstraintsExceededError(
            f"{path}.shape[{axis}] = {size} is outside {expr_text} for {root} in {format_range_brackets(lo, hi)}"
            f"{_empty_note(size, lo) if r == 0 else ''}")
    return r


def _empty_note(value: int, lo: int) -> str:
    """Why an empty input is refused by a range starting at 1, and what to do (else "")."""
    if value != 0 or lo != 1:
        return ""
    # torch.export states [2, inf] for such an axis (0/1 specialization) but its module() checks
    # no lower bound, so it runs sizes 0 and 1 unproven; here 1 is proven and 0 needs min=0
    return ("; a size-0 (empty) input is outside every range that starts at 1, the default of Dim, "
            "Dim.AUTO and Dim.DYNAMIC: the program is proven only for the range it states, and an "
            "empty axis can change numpy's semantics (broadcasting, reshape(-1, ...), reductions). "
            "If the model handles empty inputs, export with min=0 on this axis (Dim.AUTO(min=0), "
            "Dim.DYNAMIC(min=0) or Dim('n', min=0)): the export then proves size 0 too, or names the "
            "guard that excludes it")


def assert_range(value: int, lo: int, hi: Optional[int], where: str, name: str) -> None:
    """``lo <= value <= hi`` (``hi`` None: unbounded).

    Raises:
        ConstraintsExceededError: ``x.shape[1] = 513 is outside seq in [1, 512]``; for an empty
            input below a range starting at 1, with why and what to do (export with ``min=0``).
    """
    if value < lo or (hi is not None and value > hi):
        raise ConstraintsExceededError(
            f"{where} = {value} is outside {name} in {format_range_brackets(lo, hi)}{_empty_note(value, lo)}")


def assert_dim(x: Any, path: str, axis: int, expected: int, what: str, detail: str) -> None:
    """``x.shape[axis] == expected``.

    Raises:
        ConstraintsExceededError: ``y.shape[0] = 7 must equal x.shape[0] = 8 (dim dx)``.
    """
    got = x.shape[axis]
    if got != expected:
        raise ConstraintsExceededError(
            f"{path}.shape[{axis}] = {got} must equal {what} = {expected} ({detail})")


def assert_guard(ok: bool, where: str, value: int, text: str, names: tuple, values: tuple) -> None:
    """An extra relation over root sizes holds.

    Raises:
        ConstraintsExceededError: ``x.shape[0] = 6 violates 2*cols == rows (cols = 4, rows = 6)``.
    """
    if not ok:
        shown = ", ".join(f"{n} = {v}" for n, v in zip(names, values))
        raise ConstraintsExceededError(f"{where} = {value} violates {text}" + (f" ({shown})" if shown else ""))


def check_size(ok: bool, text: str, where: str, names: tuple, values: tuple) -> None:
    """A ``tpe.check`` on data-dependent sizes holds at run time (``text``: the condition).

    Raises:
        ConstraintsExceededError: ``tpe.check(u0 >= 2) failed: u0 = 1, at model.py:12  `...```.
    """
    if not ok:
        shown = ", ".join(f"{n} = {v}" for n, v in zip(names, values))
        raise ConstraintsExceededError(f"tpe.check({text}) failed: {shown}, at {where}")


def _int_value(value: Any, path: str) -> int:
    """``value`` as a Python int: an int or a numpy integer scalar (as numpy's own integer
    semantics take it); a bool, a float or anything else is refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ConstraintsExceededError(
            f"{path} must be an int (a dynamic int input of the program), got {type(value).__name__} {value!r:.40}")
    return int(value)


def check_int(value: Any, path: str, k: int, c: int, lo: Optional[int], hi: Optional[int],
              expr_text: str, root: str) -> int:
    """A dynamic int input: check it is an int; bind root ``r`` from ``value == k*r + c``
    (``k = 1, c = 0``: the value itself) and, when ``lo`` is given, check ``lo <= r <= hi``.

    Returns ``r`` (a Python int).

    Raises:
        ConstraintsExceededError: not an int (a bool is refused), or not ``k*r + c`` for an
            integer ``r`` in range (``n = 7 is not 2*m for any integer m``).
    """
    v = _int_value(value, path)
    r, rem = divmod(v - c, k)
    if rem:
        raise ConstraintsExceededError(f"{path} = {v} is not {expr_text} for any integer {root}")
    if lo is not None and (r < lo or (hi is not None and r > hi)):
        raise ConstraintsExceededError(
            f"{path} = {v} is outside {expr_text} for {root} in {format_range_brackets(lo, hi)}")
    return r


def assert_int(value: Any, path: str, expected: int, what: str, detail: str) -> None:
    """A dynamic int input whose size is fixed by other inputs (or, ``what`` empty, specialized
    by a guard at export): an int equal to ``expected``.

    Raises:
        ConstraintsExceededError: not an int, or ``n = 7 must equal x.shape[0] = 8 (dim d)``.
    """
    v = _int_value(value, path)
    if v != expected and not what:
        raise ConstraintsExceededError(f"{path} = {v}, but the program was exported specialized to {path} = "
                                       f"{expected} ({detail})")
    if v != expected:
        raise ConstraintsExceededError(f"{path} = {v} must equal {what} = {expected} ({detail})")


def _no_outputs(ctx: Any, *args: Any, **kwargs: Any) -> tuple:
    return ()


register_op("tpe.check_input", check_input, lambda ctx, x, *a, **k: x.shape, side_effect=True,
            doc="rank, static sizes and dtype of one input; returns it")
register_op("tpe.derived_root", derived_root, _no_outputs, side_effect=True,
            doc="bind a root r from a size k*r + c (divisibility and range of r)")
register_op("tpe.assert_range", assert_range, _no_outputs, side_effect=True,
            doc="a root size lies in its declared range")
register_op("tpe.assert_dim", assert_dim, _no_outputs, side_effect=True,
            doc="a dynamic axis equals its expression over the roots")
register_op("tpe.assert_guard", assert_guard, _no_outputs, side_effect=True,
            doc="an extra relation over root sizes holds")
register_op("tpe.check_int", check_int, _no_outputs, side_effect=True,
            doc="a dynamic int input is an int; bind its root r from value == k*r + c (range of r)")
register_op("tpe.assert_int", assert_int, _no_outputs, side_effect=True,
            doc="a dynamic int input is an int equal to its size over the roots bound elsewhere")
register_op("tpe.check_size", check_size, _no_outputs, side_effect=True,
            doc="a tpe.check(cond) on data-dependent sizes holds (assumed during capture)")
