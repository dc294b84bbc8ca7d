"""export(): capture a numpy model into an ExportedProgram with a proven shape contract.

Capture (:mod:`.capture.entry`) -> either a ``ConstraintViolationError``
listing every violated guard with verified fixes (:mod:`.violations`), or a
program built by :mod:`.program.build` whose graph starts with the runtime
input checks.
"""
from __future__ import annotations

from typing import Any

from .capture.entry import capture
from .program.build import build_program
from .violations import build_violation_error

__all__ = ["export", "export_for_training"]


def export(model: Any, *args: Any, dynamic_shapes: Any = None, strict: bool = False,
           preserve_module_call_signature: Any = (), **kwargs: Any) -> Any:
    """Capture ``model`` on the example inputs into an ExportedProgram.

    Args:
        model: an ``nn.Module`` or a plain callable over numpy arrays.
        *args, **kwargs: example inputs (pytrees of arrays and constants).
        dynamic_shapes: which sizes may vary (see DESIGN.md, "Conventions for dynamic shapes").
        strict: accepted; validation is identical in both modes.
        preserve_module_call_signature: submodule fqns whose call signatures are recorded.

    Returns:
        ExportedProgram whose ``module()`` checks every call against the contract.

    Raises:
        ConstraintViolationError: the model needs more than the declared dims allow.
        DataDependentError: a guard on a data-dependent size.
        ConstraintsExceededError: an example size is outside its declared range.
        UnsupportedOpError: an op without a shape rule (names the numpy function and line).
        CaptureError: numpy raised inside the model, or the replay check failed.
    """
    result = capture(model, args, kwargs, dynamic_shapes, mode="export",
                     preserve_module_call_signature=tuple(preserve_module_call_signature or ()))
    if result.env.violations:
        raise build_violation_error(result.env.violations, result.dims)
    return build_program(result, model, args, kwargs, dynamic_shapes)


def export_for_training(model: Any, *args: Any, dynamic_shapes: Any = None, **kwargs: Any) -> Any:
    """Like :func:`export`; buffers assigned in ``forward`` are ``BUFFER_MUTATION`` outputs."""
    return export(model, *args, dynamic_shapes=dynamic_shapes, **kwargs)
