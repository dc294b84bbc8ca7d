"""export(): capture a numpy model into an ExportedProgram with a proven shape contract.

Capture (:mod:`.capture.entry`) -> either a ``ConstraintViolationError``
listing every violated guard with verified fixes (:mod:`.violations`), or a
program built by :mod:`.program.build` whose graph starts with the runtime
input checks.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

from .capture.entry import CaptureResult, capture
from .errors import FIXES_HEADER, CaptureError, ConstraintsExceededError, ConstraintViolationError, \
    DataDependentError, UnsupportedOpError
from .program.build import build_program
from .specs.refine import combine_fix_rounds, refine_dynamic_shapes_from_suggested_fixes
from .violations import build_violation_error

# A fix block is printed only once exporting again with it applied has succeeded (or has left
# only guards no fix form expresses): one refine step is then enough by construction.  The
# proof runs on the failure path only, at most this many extra captures and seconds.
MAX_PROOF_CAPTURES = 4
MAX_PROOF_SECONDS = 10.0

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
    preserve = tuple(preserve_module_call_signature or ())
    result = capture(model, args, kwargs, dynamic_shapes, mode="export", preserve_module_call_signature=preserve)
    if result.env.violations:
        raise proved_violation_error(model, args, kwargs, dynamic_shapes, result, preserve)
    return build_program(result, model, args, kwargs, dynamic_shapes)


def proved_violation_error(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any, result: CaptureResult,
                           preserve: tuple = ()) -> ConstraintViolationError:
    """The violation error of ``result`` with a fix block proved by exporting again.

    Round 0's fixes (verified by the solver against the guards capture saw) are
    applied to ``dynamic_shapes`` and the model is captured again: a capture can
    meet guards the first one could not express (``_dx == dy`` once ``dx = 2*_dx``)
    or did not reach.  Their fixes join the block (:func:`combine_fix_rounds`), until
    a capture succeeds (proved), only guards no fix form expresses remain, something
    else fails, or the bound (:data:`MAX_PROOF_CAPTURES`, :data:`MAX_PROOF_SECONDS`)
    is hit.  Whatever is not proved is said in ``err.fixes_note``.

    Returns:
        ConstraintViolationError: the bullets of the first capture, the combined
        fix block, and the note (None when one refine step is proved enough).
    """
    err = build_violation_error(result.env.violations, result.dims)
    if not err.fixes:
        return err
    user = {n for n, d in result.dims.items() if d.kind in ("named", "dynamic")}
    rounds = [list(err.fixes)]
    deadline = time.monotonic() + MAX_PROOF_SECONDS
    note = (f"these fixes were checked by {MAX_PROOF_CAPTURES} more exports and more may still be needed; "
            "one refine step may not be enough")
    proved = False
    for _ in range(MAX_PROOF_CAPTURES):
        block = combine_fix_rounds(rounds, user)
        try:
            refined = refine_dynamic_shapes_from_suggested_fixes("\n".join([FIXES_HEADER, *block]), dynamic_shapes)
            again = capture(model, args, kwargs, refined, mode="export", preserve_module_call_signature=preserve)
        except (ConstraintsExceededError, DataDependentError, UnsupportedOpError, CaptureError,
                ValueError, TypeError) as other:
            first = str(other).splitlines()[0] if str(other) else ""
            note = (f"with these fixes applied, export still fails: {type(other).__name__}: {first}; "
                    "one refine step will not be enough")
            break
        if not again.env.violations:
            proved, note = True, None
            break
        nxt = build_violation_error(again.env.violations, again.dims)
        if not nxt.fixes:
            left = "; ".join(v.guard_text for v in nxt.violations)
            note = (f"with these fixes applied, export still needs guards no fix form expresses ({left}); "
                    "one refine step will not be enough: see the bullets for what to change")
            break
        rounds.append(list(nxt.fixes))
        if time.monotonic() > deadline:
            note = (f"these fixes were checked for {MAX_PROOF_SECONDS:g} s and more may still be needed; "
                    "one refine step may not be enough")
            break
    if len(rounds) == 1 and proved:
        return err
    violations = err.violations
    if proved:  # every guard of the first capture holds under the block: none is unfixable after all
        violations = [dataclasses.replace(v, unfixable=None, what_works=None) for v in violations]
    return ConstraintViolationError(violations=violations, fixes=combine_fix_rounds(rounds, user),
                                    fixes_note=note)


def export_for_training(model: Any, *args: Any, dynamic_shapes: Any = None, **kwargs: Any) -> Any:
    """Like :func:`export`; buffers assigned in ``forward`` are ``BUFFER_MUTATION`` outputs."""
    return export(model, *args, dynamic_shapes=dynamic_shapes, **kwargs)
