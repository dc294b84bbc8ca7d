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

from .capture.exclusive import exclusive
from .capture.entry import CaptureResult, capture
from .errors import FIXES_HEADER, CaptureError, ConstraintsExceededError, ConstraintViolationError, \
    DataDependentError, UnsupportedOpError
from .program.build import build_program
from .program.eager_check import check_against_eager
from .program.unflatten import check_preserved_paths
from .program.input_checks import SizeProbe
from .pytree import tree_flatten
from .specs.binding import input_leaf_paths
from .specs.dims import AdditionalInputs, spec_dim_names
from .specs.refine import combine_fix_rounds, dynamic_entry_lines, refine_dynamic_shapes_from_suggested_fixes
from .violations import build_violation_error

# A fix block is printed only once exporting again with it applied has succeeded (or has left
# only guards no fix form expresses): one refine step is then enough by construction.  The
# proof runs on the failure path only, at most this many extra captures and seconds.
MAX_PROOF_CAPTURES = 4
MAX_PROOF_SECONDS = 10.0

__all__ = ["export", "export_for_training"]


@exclusive
def export(model: Any, *args: Any, dynamic_shapes: Any = None, strict: bool = False,
           preserve_module_call_signature: Any = (), **kwargs: Any) -> Any:
    """Capture ``model`` on the example inputs into an ExportedProgram.

    The model runs twice: traced, then once untraced on copies of the examples and of its
    state, whose results the built program must reproduce (the safety net).  When an
    example float array is one constant (``np.ones``, ``np.zeros``) the net runs a third
    time, on seeded values in ``[0.5, 1.5)`` instead of it, since a constant hides a
    program that scales by a wrong factor (``program/eager_check.py``).

    Args:
        model: an ``nn.Module`` or a plain callable over numpy arrays.
        *args, **kwargs: example inputs (pytrees of arrays and constants).
        dynamic_shapes: which sizes may vary; the accepted forms are listed in
            ``tensorplay_export/specs/normalize.py`` and shown in README.md ("A first export").
        strict: accepted; validation is identical in both modes.
        preserve_module_call_signature: submodule fqns whose call signatures are recorded
            (a path naming no submodule raises ValueError listing the known paths).

    Returns:
        ExportedProgram whose ``module()`` checks every call against the contract.

    Raises:
        ConstraintViolationError: the model needs more than the declared dims allow.
        ValueError: a preserve_module_call_signature path names no submodule.
        TypeError: ``model`` is not callable, or the examples do not bind to its signature.
        DataDependentError: a guard on a data-dependent size.
        ConstraintsExceededError: an example size is outside its declared range.
        UnsupportedOpError: an op without a shape rule (names the numpy function and line).
        CaptureError: numpy raised inside the model, or the replay check failed.
        EagerMismatchError: (a CaptureError) the program on the example inputs differs from the
            model run eagerly on copies of them (:mod:`.program.eager_check`).
    """
    if not callable(model):
        raise TypeError(f"export: the model must be callable (a function or an nn.Module), got "
                        f"{type(model).__name__}; the example inputs follow it: export(model, x, ...)")
    preserve = tuple(preserve_module_call_signature or ())
    check_preserved_paths(model, preserve)
    try:
        result = capture(model, args, kwargs, dynamic_shapes, mode="export", preserve_module_call_signature=preserve)
    except ConstraintsExceededError as err:
        if err.fixes:  # an example outside its range: check the widened ranges by capture, then raise
            raise example_range_followup(err, model, args, kwargs, dynamic_shapes, preserve) from None
        raise
    except ConstraintViolationError as err:
        if err.fixes and is_spec_violation(err):  # a derived dim that can go negative: prove its fix too
            raise spec_violation_followup(err, model, args, kwargs, dynamic_shapes, preserve) from None
        raise
    if result.env.violations:
        raise proved_violation_error(model, args, kwargs, dynamic_shapes, result, preserve)
    program = build_program(result, model, args, kwargs, dynamic_shapes)
    if isinstance(dynamic_shapes, AdditionalInputs):
        check_additional_inputs(program, model, dynamic_shapes)
    check_against_eager(program, model, args, kwargs)  # the safety net: what the tracer could not see
    return program


def check_additional_inputs(program: Any, model: Any, sets: AdditionalInputs) -> None:
    """Every example set of ``sets`` must be admitted by ``program``'s input checks.

    The axes that vary across the sets are ``Dim.DYNAMIC`` (or a shared ``Dim``); the
    contract export infers for them can be narrower than the sets (``x + y`` ties two
    DYNAMIC axes the sets give different sizes), as in torch.export, whose export checks
    the sets the same way (``AdditionalInputs.verify``).  Only the checks run (a
    :class:`~tensorplay_export.program.input_checks.SizeProbe` at each set's sizes), not
    the model.

    Raises:
        ConstraintsExceededError: naming the first set outside the contract, the input
            axis, its size and the contract the program states.
    """
    probe = SizeProbe(program)
    for n, (args, kwargs) in enumerate(sets.examples()):
        leaves, _ = tree_flatten((tuple(args), dict(kwargs)))
        sizes = {}
        for path, leaf in zip(input_leaf_paths(model, args, kwargs), leaves):
            for axis, size in enumerate(getattr(leaf, "shape", ())):
                if f"{path}.shape[{axis}]" in probe.sites:
                    sizes[f"{path}.shape[{axis}]"] = int(size)
            if path in probe.int_sites and not hasattr(leaf, "shape"):  # a dynamic int input
                sizes[path] = int(leaf)
        refused = probe(sizes)
        if refused is not None:
            shown = ", ".join(f"{k} = {v}" for k, v in sizes.items())
            raise ConstraintsExceededError(
                f"AdditionalInputs set {n} ({shown}) is outside the exported program's contract: {refused}. "
                f"The axes that vary across the sets are dynamic, and the model's guards refine them "
                f"(ranges, relations: ep.range_constraints and the input checks say which), so the "
                f"program refuses this set; change the model so it handles these sizes, or drop the set.")


@dataclasses.dataclass
class Proof:
    """What exporting again with a fix block applied showed (:func:`prove_fixes`).

    ``fixes``: the block, applicable to the original spec in one refine step;
    ``proved``: a capture with it applied succeeded; ``note``: what could not be
    proved (None when ``proved``); ``later``: violation records of the later rounds.
    """

    fixes: list
    proved: bool
    note: Any = None
    later: list = dataclasses.field(default_factory=list)


def prove_fixes(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any, first_fixes: list, user: set,
                preserve: tuple = (), mode: str = "export", notes: tuple = (), sets: Any = None) -> Proof:
    """Capture again with ``first_fixes`` applied to ``dynamic_shapes``, folding in later rounds' fixes.

    A capture with the fixes applied can meet guards the first one could not express
    (``_dx == dy`` once ``dx = 2*_dx``) or did not reach (a branch on ``b > 10`` once a
    range is widened to admit the example).  Their fixes join the block
    (:func:`combine_fix_rounds`) until a capture succeeds, only guards no fix form
    expresses remain, something else fails, or the bound (:data:`MAX_PROOF_CAPTURES`,
    :data:`MAX_PROOF_SECONDS`) is hit.  Runs on the failure path only.

    Args:
        user: the dims the user's spec names (kept by name in the block).
        mode: the capture mode of the later rounds: ``"draft"`` (``draft_export``) goes on
            past ops without a shape rule and data-dependent reads, so the guards after
            them are proved too; those failures are the report's to name.
        notes: the message's lines refine reads besides the block (where each Dim.DYNAMIC
            axis of a tuple/list spec is, ``specs.refine.dynamic_entry_lines``).
        sets: the ``AdditionalInputs`` the user exported with, or None: later rounds' fixes
            must admit its sets too (:func:`example_set_sizes`).
    """
    notes = list(notes)
    rounds = [list(first_fixes)]
    later: list = []
    deadline = time.monotonic() + MAX_PROOF_SECONDS
    note = (f"these fixes were checked by {MAX_PROOF_CAPTURES} more exports and more may still be needed; "
            "one refine step may not be enough")
    for _ in range(MAX_PROOF_CAPTURES):
        block = combine_fix_rounds(rounds, user)
        try:
            refined = refine_dynamic_shapes_from_suggested_fixes("\n".join([*notes, FIXES_HEADER, *block]),
                                                                 dynamic_shapes)
            again = capture(model, args, kwargs, refined, mode=mode, preserve_module_call_signature=preserve)
        except (ConstraintsExceededError, DataDependentError, UnsupportedOpError, CaptureError,
                ValueError, TypeError) as other:
            first = str(other).splitlines()[0] if str(other) else ""
            note = (f"with these fixes applied, export still fails: {type(other).__name__}: {first}; "
                    "one refine step will not be enough")
            break
        if not again.env.violations:
            return Proof(block, True, None, later)
        nxt = _violation_error(again.env.violations, again.dims, example_set_sizes(sets, model, again.dims))
        later += nxt.violations
        if not nxt.fixes:
            left = "; ".join(v.guard_text for v in nxt.violations)
            note = (f"with these fixes applied, export still needs guards no fix form expresses ({left}); "
                    "one refine step will not be enough: see the bullets for what to change")
            break
        # this round was computed on the spec the combined block refined (its renamed roots):
        # combine it with that block, not with the earlier rounds whose names it may reuse
        rounds = [block, list(nxt.fixes)]
        notes += dynamic_entry_lines(str(nxt))
        if time.monotonic() > deadline:
            note = (f"these fixes were checked for {MAX_PROOF_SECONDS:g} s and more may still be needed; "
                    "one refine step may not be enough")
            break
    return Proof(combine_fix_rounds(rounds, user), False, note, later)


def example_set_sizes(sets: Any, model: Any, dims: dict) -> list:
    """``[{dim name: size}]``, one per example set of an ``AdditionalInputs`` (else ``[]``): each
    named or DYNAMIC dim's size at its first plain input site (``x.shape[0]``) in that set."""
    if not isinstance(sets, AdditionalInputs):
        return []
    from .records import split_site  # noqa: PLC0415 - beside its one use; records is a leaf module

    out = []
    for set_args, set_kwargs in sets.examples():
        leaves, _ = tree_flatten((tuple(set_args), dict(set_kwargs)))
        sizes = {}
        for path, leaf in zip(input_leaf_paths(model, set_args, set_kwargs), leaves):
            for axis, size in enumerate(getattr(leaf, "shape", ())):
                sizes[f"{path}.shape[{axis}]"] = int(size)
        point = {}
        for name, info in dims.items():
            if info.kind not in ("named", "dynamic"):
                continue
            for entry in info.sites:
                site, expr = split_site(entry)
                if expr is None and site in sizes:
                    point[name] = sizes[site]
                    break
        out.append(point)
    return out


def _violation_error(violations: list, dims: dict, points: list) -> ConstraintViolationError:
    """:func:`build_violation_error`, given the other example sets' sizes only when there are some."""
    return build_violation_error(violations, dims, points) if points else build_violation_error(violations, dims)


def proved_violation_error(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any, result: CaptureResult,
                           preserve: tuple = (), mode: str = "export") -> ConstraintViolationError:
    """The violation error of ``result`` with its fix block proved by exporting again (:func:`prove_fixes`).

    ``mode`` is the capture mode of ``result`` (``draft_export`` passes ``"draft"``).

    Returns:
        ConstraintViolationError: the bullets of the first capture, the combined fix
        block, and ``fixes_note`` (None when one refine step is proved enough).
    """
    err = _violation_error(result.env.violations, result.dims, example_set_sizes(dynamic_shapes, model, result.dims))
    if not err.fixes:
        return err
    user = {n for n, d in result.dims.items() if d.kind in ("named", "dynamic")}
    proof = prove_fixes(model, args, kwargs, dynamic_shapes, err.fixes, user, preserve, mode,
                        tuple(dynamic_entry_lines(str(err))), sets=dynamic_shapes)
    if proof.proved and proof.fixes == err.fixes and all(v.unfixable is None for v in err.violations):
        return err
    violations = err.violations
    if proof.proved:  # every guard of the first capture holds under the block: none is unfixable after all
        violations = [dataclasses.replace(v, unfixable=None, what_works=None) for v in violations]
    return ConstraintViolationError(violations=violations, fixes=proof.fixes, fixes_note=proof.note)


def is_spec_violation(err: ConstraintViolationError) -> bool:
    """Whether ``err`` was raised by the spec's own check before capture (every bullet a derived dim
    its root's range lets go negative: ``specs.normalize``), so no capture proved its fixes yet."""
    return bool(err.violations) and all(v.guard.cause == "derived_range" for v in err.violations)


def spec_violation_followup(err: ConstraintViolationError, model: Any, args: tuple, kwargs: dict,
                            dynamic_shapes: Any, preserve_module_call_signature: tuple = (),
                            mode: str = "export") -> ConstraintViolationError:
    """The spec check's violation with its narrowed roots proved by exporting again (:func:`prove_fixes`):
    the guards the model itself needs join the bullets and their fixes the block, so one refine
    step suffices (``dx - 3`` needs ``dx >= 3``, and the model's table ``dx <= 20``)."""
    return _followup(err, ConstraintViolationError, model, args, kwargs, dynamic_shapes,
                     preserve_module_call_signature, mode)


def example_range_followup(err: ConstraintsExceededError, model: Any, args: tuple, kwargs: dict,
                           dynamic_shapes: Any, preserve_module_call_signature: tuple = ()
                           ) -> ConstraintsExceededError:
    """The error for examples outside their ranges, its widened ranges proved by :func:`prove_fixes`.

    Widening a range to admit the example can let in sizes the model refuses (a branch
    on ``b > 10``): the violations the later captures find join the bullets (they are
    over the user's dims) and their fix lines the block, so one refine step suffices.
    """
    return _followup(err, ConstraintsExceededError, model, args, kwargs, dynamic_shapes,
                     preserve_module_call_signature)


def _followup(err: Any, cls: type, model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any,
              preserve: tuple, mode: str = "export") -> Any:
    """``err`` (raised before capture, its fixes unproved) as ``cls`` with the block proved by
    :func:`prove_fixes`: later rounds' violations join its bullets, their fixes the block."""
    # every dim the spec names keeps its name in the block, not only the ones of err's bullets:
    # a fix for another guard (b = 2*_b + 1 beside a widened a) is a line of its own
    user = {n for v in err.violations for n in v.names} | (spec_dim_names(dynamic_shapes) or set())
    proof = prove_fixes(model, args, kwargs, dynamic_shapes, err.fixes, user, preserve, mode)
    return cls(violations=[*err.violations, *proof.later], fixes=proof.fixes, fixes_note=proof.note)


def export_for_training(model: Any, *args: Any, dynamic_shapes: Any = None, **kwargs: Any) -> Any:
    """Like :func:`export`; buffers assigned in ``forward`` are ``BUFFER_MUTATION`` outputs."""
    return export(model, *args, dynamic_shapes=dynamic_shapes, **kwargs)
