"""export(): capture a numpy model into an ExportedProgram with a proven shape contract.

Capture (:mod:`.capture.entry`) -> either a ``ConstraintViolationError``
listing every violated guard with verified fixes (:mod:`.violations`), or a
program built by :mod:`.program.build` whose graph starts with the runtime
input checks.
"""
from __future__ import annotations

from typing import Any

from .capture.entry import capture
from .errors import ConstraintsExceededError
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
    pmcs = tuple(preserve_module_call_signature or ())
    try:
        result = capture(model, args, kwargs, dynamic_shapes, mode="export", preserve_module_call_signature=pmcs)
    except ConstraintsExceededError as err:
        if err.fixes:  # an example outside its range: check the widened ranges by capture, then raise
            raise example_range_followup(err, model, args, kwargs, dynamic_shapes, pmcs) from None
        raise
    if result.env.violations:
        raise build_violation_error(result.env.violations, result.dims)
    return build_program(result, model, args, kwargs, dynamic_shapes)


_FOLLOWUP_ROUNDS = 3  # extra captures after widening ranges for out-of-range examples


def example_range_followup(err: ConstraintsExceededError, model: Any, args: tuple, kwargs: dict,
                           dynamic_shapes: Any, preserve_module_call_signature: tuple = ()
                           ) -> ConstraintsExceededError:
    """The error for examples outside their ranges, its fixes checked by capture.

    Widening a range to admit the example can let in sizes the model refuses (a branch
    on ``b > 10``): capture again with the refined spec (bounded, ``_FOLLOWUP_ROUNDS``);
    the violations it finds join the bullets and their fix lines the block (a later
    line for a dim replaces the earlier one: it was computed on the widened range), so
    one refine step suffices.  Other capture failures are left to the next export,
    which reports them with their own error.
    """
    from .specs.refine import parse_fix_line, refine_dynamic_shapes_from_suggested_fixes

    violations = list(err.violations)
    fixes: dict[str, str] = {parse_fix_line(line).name: line for line in err.fixes}
    for _round in range(_FOLLOWUP_ROUNDS):
        block = ConstraintsExceededError(violations=violations, fixes=list(fixes.values()))
        try:
            spec_next = refine_dynamic_shapes_from_suggested_fixes(str(block), dynamic_shapes)
            result = capture(model, args, kwargs, spec_next, mode="export",
                             preserve_module_call_signature=preserve_module_call_signature)
        except Exception:  # noqa: BLE001 - the next export reports it with its own kind
            break
        if not result.env.violations:
            break
        more = build_violation_error(result.env.violations, result.dims)
        violations += more.violations
        new = {parse_fix_line(line).name: line for line in more.fixes}
        if not new or all(fixes.get(k) == v for k, v in new.items()):
            break
        fixes.update(new)
    return ConstraintsExceededError(violations=violations, fixes=list(fixes.values()))


def export_for_training(model: Any, *args: Any, dynamic_shapes: Any = None, **kwargs: Any) -> Any:
    """Like :func:`export`; buffers assigned in ``forward`` are ``BUFFER_MUTATION`` outputs."""
    return export(model, *args, dynamic_shapes=dynamic_shapes, **kwargs)
