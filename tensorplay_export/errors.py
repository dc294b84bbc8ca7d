"""The exception classes every layer of ``tensorplay_export`` raises.

Each one subclasses the builtin a caller would already catch for that kind of
failure, so code written against plain numpy errors keeps working.
"""
from __future__ import annotations


class ConstraintViolationError(ValueError):
    """Export-time: the model needs more than the declared ``dynamic_shapes`` allow.

    The text lists every violated guard (``Constraints violated (names)!``), each
    with a counterexample and the model's source line, then a
    ``Suggested fixes:`` block that
    :func:`refine_dynamic_shapes_from_suggested_fixes` accepts.
    """


class DataDependentError(RuntimeError):
    """Export-time: a guard depends on a data-dependent (unbacked) size."""


class UnsupportedOpError(NotImplementedError):
    """Capture reached a numpy function or method that has no shape rule."""


class ConstraintsExceededError(RuntimeError):
    """A runtime input violated the declared dynamic-shape contract.

    Raised by the assertions inserted into captured graphs and by export-time
    validation when an example input falls outside a declared range.  It is a
    RuntimeError so callers written against plain runtime failures keep
    working.
    """


class ArchiveError(ValueError):
    """Anything wrong in a saved archive or serialized artifact (names the member)."""


class CaptureError(RuntimeError):
    """Capture itself failed: numpy raised inside the model, or a replay mismatch."""


class InputDtypeError(TypeError):
    """An input's dtype differs from the one the program was exported with."""
