"""draft_export: capture a model and report every shape problem instead of raising.

:func:`draft_export` runs the same capture as ``export`` (its ``"draft"``
mode) and turns each problem into a :class:`FailureReport`:

- ``constraint_violation``: a guard the declared dims do not imply (with the
  verified fix lines of one ``solver.suggest_fixes`` call over all of them, the
  block proved by capturing again with it applied, as ``export`` proves its own);
- ``auto_specialization``: a ``Dim.AUTO`` size the model pinned to a constant;
- ``data_dependent``: a guard on a data-dependent size (``np.nonzero``...),
  assumed as the example took it and checked at run time by the program;
- ``unsupported_op``: a numpy function without a shape rule; the draft program
  runs it opaquely, with the sizes it sees pinned to the example's;
- ``unsupported_call``: a call capture refuses outright (a write through an unfollowed
  view, an unsupported ``ufunc.at``, ``x.flat`` writes...): capture stops there, no opaque
  fallback exists for it;
- ``random_numbers``: the model draws random numbers (``numpy.random``), which no
  program can reproduce: capture stops there, the fix is to pass them as an input;
- ``numpy_error``: the model itself raised on its example inputs;
- ``spec_error`` / ``example_out_of_range``: the ``dynamic_shapes`` spec does not
  fit the inputs;
- ``capture_error`` / ``validation`` / ``mismatch``: capture failed, the program
  failed its structural check, or it differs numerically from eager execution.

The program (``report.exported_program``) is None exactly when no program
could be built: the examples do not fit the spec, the model raised on its
example, or capture aborted (random numbers, a spec or capture error).
Otherwise it is built on what the example did.  When ``successful()`` is
False, that program holds on the example's path only: violated guards, data-
dependent branches and opaque ops' sizes become runtime checks (a call off
the path raises ``ConstraintsExceededError``), so it is sound for every call it
accepts but it is not a proven contract, and ``export`` refuses the same model.  The records
(:class:`FailureReport` and the kinds table) live in :mod:`.failures`, rendering
in :mod:`.report`; a failure about a guard carries the core's record of it, read
by field, never by its text.  The core knows nothing of either.
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional

import numpy as np
import sympy

from ..capture.exclusive import exclusive
from .. import pytree
from ..capture.draft_log import DraftLog
from ..capture.frames import error_source
from ..errors import (
    CaptureError, ConstraintsExceededError, ConstraintViolationError, DataDependentError,
    UnsupportedOpError, data_dependent_lines, unfixable_note, violation_lines,
)
from ..program.eager_check import aliased_example
from ..specs.dims import AdditionalInputs
from .failures import KINDS, FailureReport, NumericalComparison, StructuralValidation, dedupe_failures

__all__ = ["draft_export", "DraftExportReport", "BLOCKING_KINDS", "FailureReport", "NumericalComparison", "StructuralValidation",
           "KINDS"]


# Failure kinds that make export() raise whatever dynamic_shapes says: no fix line addresses them.
BLOCKING_KINDS = ("data_dependent", "unsupported_op", "unsupported_call", "random_numbers", "numpy_error",
                  "spec_error", "capture_error")


class DraftExportReport:
    """What :func:`draft_export` returns.

    Attributes:
        failures: list of :class:`FailureReport`, in report order.
        exported_program: the draft ``ExportedProgram``; None exactly when no program
            could be built (examples outside the spec, the model raised on its example,
            capture aborted).  With failures it holds on the example's path only
            (violated guards are runtime checks): not a proven contract.
        validation: :class:`StructuralValidation` or None (no program).
        comparison: :class:`NumericalComparison` or None (no program or no eager result).
        fixes: every fix line, in one verified set (the ``Suggested fixes:`` block).
        fixes_blocked_by: the kinds of the failures no fix line addresses that make
            ``export`` fail whatever the fixes (an op without a shape rule, a data-dependent
            read, ...: :data:`BLOCKING_KINDS`), in report order; empty when there are no
            fixes or nothing else blocks export.  The report then says plainly that the
            fixes do not make export succeed.
        fixes_note: what exporting again with the block applied could not prove (more rounds
            may be needed, or only guards no fix form expresses remain), None when one refine
            step is proved enough for every guard; the report prints it before the block.
        accepted: text of guards accepted on ``Dim.AUTO``/``Dim.DYNAMIC`` sizes (part of the contract, not failures).
        model_name: for headings.
    """

    def __init__(self, failures: list, exported_program: Any = None, validation: Any = None,
                 comparison: Any = None, fixes: Optional[list] = None, accepted: Optional[list] = None,
                 model_name: str = "model", fixes_note: Optional[str] = None) -> None:
        order = list(KINDS)
        self.failures = sorted(failures, key=lambda f: order.index(f.kind) if f.kind in order else len(order))
        self.exported_program = exported_program
        self.validation = validation
        self.comparison = comparison
        self.fixes = list(fixes or [])
        self.fixes_blocked_by: list[str] = []
        if self.fixes:
            for f in self.failures:
                if f.kind in BLOCKING_KINDS and f.kind not in self.fixes_blocked_by:
                    self.fixes_blocked_by.append(f.kind)
        self.fixes_note = fixes_note if self.fixes else None
        self.accepted = list(accepted or [])
        self.model_name = model_name

    def successful(self) -> bool:
        """True when there is a program and no failure of any kind."""
        return self.exported_program is not None and not self.failures

    def by_kind(self) -> dict[str, list[FailureReport]]:
        out: dict[str, list[FailureReport]] = {}
        for f in self.failures:
            out.setdefault(f.kind, []).append(f)
        return out

    def raise_on_failure(self) -> None:
        """Raise when there are failures; the text is the whole report (fix block included).

        Raises:
            ConstraintViolationError: a violation is among the failures (so
                ``refine_dynamic_shapes_from_suggested_fixes(str(err), spec)`` works).
            DataDependentError / UnsupportedOpError / ConstraintsExceededError / CaptureError:
                for the first failure's kind otherwise.
        """
        if not self.failures and self.exported_program is not None:
            return
        kinds = {f.kind for f in self.failures}
        if "example_out_of_range" in kinds and any(f.violation is not None for f in self.failures):
            raise ConstraintsExceededError(str(self), fixes=self.fixes, violations=[
                f.violation for f in self.failures if f.violation is not None])
        if "constraint_violation" in kinds:
            raise ConstraintViolationError(str(self), fixes=self.fixes, violations=[
                f.violation for f in self.failures if f.violation is not None])
        if "data_dependent" in kinds:
            cls: type = DataDependentError
        elif kinds & {"unsupported_op", "unsupported_call", "random_numbers"}:
            cls = UnsupportedOpError
        elif "example_out_of_range" in kinds:
            cls = ConstraintsExceededError
        elif "spec_error" in kinds:
            cls = ValueError
        else:
            cls = CaptureError
        raise cls(str(self))

    def to_dict(self) -> dict:
        from .report import report_to_dict

        return report_to_dict(self)

    def __str__(self) -> str:
        from .report import render_text

        return render_text(self)

    def __repr__(self) -> str:
        state = "successful" if self.successful() else f"{len(self.failures)} failure(s)"
        return f"<DraftExportReport {self.model_name}: {state}>"

    def _repr_html_(self) -> str:
        from .report import render_html

        return render_html(self)

    def _repr_markdown_(self) -> str:
        from .report import render_markdown

        return render_markdown(self)


_AT_LINE = re.compile(r"\n\s*at [^\n]*$")


def _strip_at(message: str) -> str:
    """Drop a trailing ``at file:line `code``` line (the report prints the source itself)."""
    return _AT_LINE.sub("", message.rstrip())


def _copy_tree(value: Any) -> Any:
    """Copies of every array leaf, so eager runs never touch the user's examples."""
    return pytree.tree_map(lambda v: v.copy() if isinstance(v, np.ndarray) else v, value)


def _run_eager(model: Any, args: tuple, kwargs: dict) -> tuple[Any, Optional[BaseException]]:
    """The model's outputs on copies of the examples, run on a clone of its module tree whose
    parameters are read-only views of the user's (buffers copied; parameters copied only when
    the forward writes one): the user's model and examples stay as they are, and no parameter
    is copied for the common forward (``program.eager_check.run_eager``, the net's own run)."""
    from ..errors import EagerMismatchError
    from ..program.eager_check import run_eager

    try:
        return run_eager(model, args, kwargs).outputs, None
    except EagerMismatchError as err:  # the model raised: its own error is the report's
        return None, err.__cause__ if err.__cause__ is not None else err


# -- failures from a capture ------------------------------------------------------------------------
def _violation_failures(result: Any, model: Any, args: tuple, kwargs: dict,
                        dynamic_shapes: Any) -> tuple[list[FailureReport], list[str], Optional[str]]:
    """One failure per violated guard, the fix block and its note (None: one refine step is proved enough).

    The block is proved as export proves its own (:func:`..export.proved_violation_error`):
    by capturing again with it applied, in draft mode so the guards past an op without a
    shape rule or a data-dependent read are proved too (those failures are named apart,
    ``fixes_blocked_by``).
    """
    from ..export import proved_violation_error

    err = proved_violation_error(model, args, kwargs, dynamic_shapes, result, mode="draft")
    out = _violation_reports(err.violations)
    return out, list(err.fixes), err.fixes_note or (unfixable_note(err.violations) if err.fixes else None)


def _violation_reports(violations: list) -> list[FailureReport]:
    """One report entry per violation record: its bullet (the report prints the source line
    itself), its fix lines (None for a guard no fix expresses); an example outside its range
    is ``example_out_of_range``, any other ``constraint_violation``."""
    out = []
    for v in violations:
        head, *rest = violation_lines(v, source=False)
        message = "\n".join([head] + [f"  {ln}" for ln in rest])
        kind = "example_out_of_range" if v.example is not None else "constraint_violation"
        out.append(FailureReport(kind, message, v.source, "\n".join(v.fix_lines) or None, violation=v, guard=v.guard))
    return out


def _auto_failures(result: Any) -> list[FailureReport]:
    """One failure per Dim.AUTO size the model pinned to a constant (with how to keep it dynamic)."""
    from .. import violations

    env = result.env
    out = []
    for sym, value in env.replacements.items():
        if not (isinstance(value, sympy.Basic) and value.is_Integer):
            continue
        name = env.names.get(sym, sym.name)
        info = result.dims.get(name)
        sites = " = ".join(info.sites) if info is not None and info.sites else name
        rec = next((r for r in env.accepted if sym in r.expr.free_symbols and r.source is not None), None)
        if rec is None:
            rec = next((r for r in env.accepted if isinstance(r.expr, sympy.Eq) and r.source is not None
                        and any(env.replacements.get(s) == value for s in r.expr.free_symbols)), None)
        reason, hint = (violations.specialization_reason(rec, name, int(value)) if rec is not None
                        else ("", None))
        why = f" ({reason})" if reason else ""
        message = (f"{sites} is Dim.AUTO but the model pinned it to {int(value)}{why}; the program accepts "
                   f"only {int(value)} there")
        if hint:
            message += f"\nto keep it dynamic: {hint}"
        out.append(FailureReport("auto_specialization", message, rec.source if rec else None, None, guard=rec))
    return out


def _data_dependent_failures(result: Any) -> list[FailureReport]:
    from .. import violations

    env = result.env
    out = []
    for rec in env.data_dependent:
        unbacked = sorted((s for s in rec.expr.free_symbols if env.kinds.get(s) == "unbacked"), key=str)
        sym = unbacked[0] if unbacked else None
        try:
            op, produced = env.unbacked_source.get(sym, ("?", None)) if sym is not None else ("?", None)
            err = violations.data_dependent_error(rec, symbol=sym, op=op, produced_at=produced,
                                                  hint=env.hints.get(sym), lower=0,
                                                  upper=env.ranges.get(sym, (0, None))[1])
            # the report prints the source line itself: no "asked for at" line
            lines = data_dependent_lines(err.guard, err.guard_text, err.symbols, asked_for=False)
        except Exception:  # noqa: BLE001 - the record itself still says what happened
            lines = [f"guard on a data-dependent size: {rec.expr}"]
        taken = violations.format_guard(rec.expr)
        lines.append(f"draft_export assumed {taken} (as the example took it); the program checks it at run time")
        out.append(FailureReport("data_dependent", "\n".join(lines), rec.source, None, guard=rec,
                                 pattern=_guard_pattern(rec, env)))
    return out


def _guard_pattern(rec: Any, env: Any) -> tuple:
    """A guard's kind, cause and expression with its data-dependent sizes renamed in order of name.

    ``u0 > 1`` and ``u1 > 1`` asked on one line (a loop) are the same pattern.
    """
    unbacked = sorted((s for s in rec.expr.free_symbols if env.kinds.get(s) == "unbacked"), key=str)
    renamed = rec.expr.xreplace({s: sympy.Symbol(f"_data_dependent_{i}") for i, s in enumerate(unbacked)})
    return (rec.kind, rec.cause, sympy.srepr(renamed))


def _value_failures(state: DraftLog) -> list[FailureReport]:
    """One failure per read kind and source line (a loop reading ``v.item()`` once per iteration),
    naming every value the example read there."""
    grouped: dict[tuple, list] = {}
    for what, shown, src in state.values:
        grouped.setdefault((what, src), []).append(shown)
    out = []
    for (what, src), shown in grouped.items():
        values = f"value {shown[0]}" if len(shown) == 1 else f"values {', '.join(map(str, shown))}"
        out.append(FailureReport(
            "data_dependent",
            f"the model {what} of an array (data-dependent: export() refuses it); draft_export took the example's "
            f"{values} and the program checks {'it' if len(shown) == 1 else 'each'} at run time", src, None,
            pattern=("value_read", what),
            count=len(shown)))
    return out


def _unsupported_failures(state: DraftLog) -> list[FailureReport]:
    out = []
    for qualname, src in state.unsupported:
        out.append(FailureReport(
            "unsupported_op",
            f"{qualname} has no shape rule: the draft program runs it at the example's sizes (every size it "
            f"sees is pinned); export() refuses it. Rewrite it with supported numpy ops.", src, None,
            pattern=("unsupported_op", qualname)))
    return out


# -- checks of the program ---------------------------------------------------------------------------
def _validate(ep: Any) -> StructuralValidation:
    problems = []
    try:
        ep.graph.lint()
    except Exception as err:  # noqa: BLE001
        problems.append(f"graph lint: {err}")
    placeholders = ep.graph.placeholders()
    specs = ep.graph_signature.input_specs
    if len(placeholders) != len(specs):
        problems.append(f"signature lists {len(specs)} inputs, graph has {len(placeholders)} placeholders")
    for spec, node in zip(specs, placeholders):
        name = getattr(spec.arg, "name", None)
        if name is not None and type(spec.arg).__name__ != "ConstantArgument" and name != node.name:
            problems.append(f"input spec {name!r} does not match placeholder {node.name!r}")
    out = ep.graph.output_node
    n_out = len(out.args[0]) if out is not None else 0
    if n_out != len(ep.graph_signature.output_specs):
        problems.append(f"signature lists {len(ep.graph_signature.output_specs)} outputs, graph returns {n_out}")
    for node in ep.graph.nodes:
        if node.op == "call_function" and not node.target.startswith("tpe.assert") and \
                not node.target.startswith("tpe.derived") and "shape" not in node.meta:
            problems.append(f"node {node.name} ({node.target}) has no shape in meta")
    return StructuralValidation(not problems, problems)


def _leaves(value: Any) -> list:
    return pytree.tree_flatten(value)[0]


def _compare(ep: Any, eager: Any, args: tuple, kwargs: dict) -> NumericalComparison:
    from ..capture.blas import one_blas_thread

    try:
        with one_blas_thread():  # as the eager run: small examples, the same summation order
            got = ep.module()(*_copy_tree(args), **_copy_tree(kwargs))
    except Exception as err:  # noqa: BLE001
        return NumericalComparison(False, math.inf, math.inf, 0,
                                   f"the program raised on the example inputs: {type(err).__name__}: {err}")
    finally:
        ep.invalidate_unlifted()  # mutated buffers stay out of the program's module
    g, w = _leaves(got), _leaves(eager)
    if len(g) != len(w):
        return NumericalComparison(False, math.inf, math.inf, len(w),
                                   f"the program returns {len(g)} values, eager returns {len(w)}")
    max_abs = max_rel = 0.0
    notes: list[str] = []
    nonfinite = 0
    for i, (a, b) in enumerate(zip(g, w)):
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        if a_arr.shape != b_arr.shape:
            notes.append(f"output {i}: shape {a_arr.shape} vs eager {b_arr.shape}")
            max_abs = max_rel = math.inf
            continue
        if a_arr.dtype != b_arr.dtype:
            notes.append(f"output {i}: dtype {a_arr.dtype} vs eager {b_arr.dtype}")
        if a_arr.dtype.kind not in "biufc" or b_arr.dtype.kind not in "biufc":
            if not np.array_equal(a_arr, b_arr):
                notes.append(f"output {i}: values differ")
                max_abs = max_rel = math.inf
            continue
        if a_arr.size == 0:
            continue
        x, y = a_arr.astype(np.complex128 if a_arr.dtype.kind == "c" else np.float64), \
            b_arr.astype(np.complex128 if b_arr.dtype.kind == "c" else np.float64)
        d_abs, d_rel, bad, same_nonfinite, close = _diff(x, y)
        max_abs, max_rel = max(max_abs, d_abs), max(max_rel, d_rel)
        nonfinite += same_nonfinite + bad
        if bad:
            notes.append(f"output {i}: {bad} inf/nan position(s) where eager has a different value")
        if not close:
            scope = " over finite positions" if same_nonfinite + bad else ""
            notes.append(f"output {i}: max abs diff {d_abs:.3g}{scope}")
    return NumericalComparison(not notes, max_abs, max_rel, len(w), "; ".join(notes), nonfinite)


def _diff(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int, int, bool]:
    """Compare like ``numpy.testing.assert_allclose(rtol=1e-5, atol=1e-6, equal_nan=True)``.

    Positions where both are nan, or both the same inf, are equal; a position where only
    one side is inf/nan, or the infs differ in sign, is a mismatch.  Returns ``(max_abs,
    max_rel, mismatched non-finite positions, equal non-finite positions, finite positions
    close)``; the diffs are over the positions where both are finite.  numpy's
    RuntimeWarnings (``inf - inf``, overflow) stay inside.
    """
    with np.errstate(all="ignore"):
        finite = np.isfinite(x) & np.isfinite(y)
        nan_x, nan_y = np.isnan(x), np.isnan(y)
        same = (nan_x & nan_y) | (~nan_x & ~nan_y & (x == y))
        bad = int(np.count_nonzero(~finite & ~same))
        equal_nonfinite = int(np.count_nonzero(~finite & same))
        if not finite.any():
            return 0.0, 0.0, bad, equal_nonfinite, True
        xf, yf = x[finite], y[finite]
        diff = np.abs(xf - yf)
        rel = diff / np.maximum(np.abs(yf), np.finfo(np.float64).tiny)
        max_abs = float(np.max(diff))
        max_rel = float(np.max(np.where(diff == 0, 0.0, rel)))
        close = bool(np.all(diff <= 1e-6 + 1e-5 * np.abs(yf)))
    return max_abs, max_rel, bad, equal_nonfinite, close


# -- the entry point -----------------------------------------------------------------------------------
def _model_name(model: Any) -> str:
    return getattr(model, "__qualname__", None) or type(model).__name__


@exclusive
def draft_export(model: Any, *args: Any, dynamic_shapes: Any = None, **kwargs: Any) -> DraftExportReport:
    """Capture a program, reporting failures instead of raising them.

    Args:
        model: an ``nn.Module`` or a plain callable over numpy arrays.
        *args, **kwargs: example inputs (the model is run on copies; its state is restored).
        dynamic_shapes: as for ``export``.

    Returns:
        :class:`DraftExportReport`: ``failures`` (each with kind, message, source
        line, fix), ``exported_program`` (None exactly when no program could be
        built; when ``successful()`` is False it holds on the example's path only,
        its violated guards checked at run time, and is not a proven contract),
        ``validation`` (graph lint + signature) and ``comparison`` (max abs/rel
        difference against eager execution on the examples).

    Raises:
        Nothing for problems of the model or its shapes; ``KeyboardInterrupt`` and
        other non-``Exception`` signals pass through.
    """
    name = _model_name(model)
    kwargs = dict(kwargs)
    out_of_range = _check_examples(model, tuple(args), kwargs, dynamic_shapes)
    if out_of_range is not None:  # as export does: the examples must fit the spec before the model runs
        failures, fixes, note = out_of_range
        return DraftExportReport(failures, fixes=fixes, model_name=name, fixes_note=note)
    eager, eager_err = _run_eager(model, args, kwargs)
    if eager_err is not None:
        msg = f"the model raised {type(eager_err).__name__} on its example inputs: {eager_err}"
        return DraftExportReport([FailureReport("numpy_error", msg, error_source(eager_err), None)],
                                 model_name=name)
    return _draft(model, tuple(args), kwargs, dynamic_shapes, eager, name)


def _check_examples(model: Any, args: tuple, kwargs: dict,
                    dynamic_shapes: Any) -> Optional[tuple[list[FailureReport], list[str], Optional[str]]]:
    """``(example_out_of_range failures, their fix lines, the proof's note)`` when an example size
    does not fit ``dynamic_shapes``, else None (the note: what exporting with the widened ranges
    could not prove, the model failing on the example itself say; None when it succeeds).

    One failure per violation record of the error (each with its widened range as its fix;
    the report's fix block is the error's), or one failure with the error's text when it
    has no records (two sites of one dim disagree).

    Runs the same example check as capture (``capture.entry.make_symbols``) before the model
    runs, so examples that break a declared relation (``y.shape[0] != 2*dx``) are named as
    such rather than as whatever numpy error the model hits on them.  Spec errors are left
    to capture, which reports them with their kind.
    """
    from ..specs.normalize import input_leaf_paths, normalize_dynamic_shapes
    from ..capture.entry import make_symbols, new_solver
    from ..capture.shape_env import ShapeEnv

    try:
        specs = normalize_dynamic_shapes(model, args, kwargs, dynamic_shapes)
        leaves, _ = pytree.tree_flatten((args, kwargs))
        paths = input_leaf_paths(model, args, kwargs)
        make_symbols(ShapeEnv(new_solver(), "draft"), leaves, specs, paths)
    except ConstraintsExceededError as err:
        if not err.violations:
            return [_capture_failure(err)], [], None
        if err.fixes:  # as export does: the widened ranges are checked by capture, their violations join
            from ..export import example_range_followup

            err = example_range_followup(err, model, args, kwargs, dynamic_shapes)
        return _violation_reports(err.violations), list(err.fixes), err.fixes_note
    except Exception:  # noqa: BLE001 - anything else is capture's to report
        return None
    return None


def _draft(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any, eager: Any,
           name: str) -> DraftExportReport:
    from ..capture.entry import capture
    from ..program.build import build_program

    state = DraftLog()  # filled by capture even when it raises part-way
    try:
        result = capture(model, args, kwargs, dynamic_shapes, mode="draft", draft_log=state)
    except ConstraintViolationError as err:
        from ..export import is_spec_violation, spec_violation_followup

        if not (err.fixes and is_spec_violation(err)):
            return DraftExportReport([_capture_failure(err)], model_name=name)
        # a derived dim that can go negative, caught before capture: its fix proved as export proves it
        err = spec_violation_followup(err, model, args, kwargs, dynamic_shapes, mode="draft")
        return DraftExportReport(_violation_reports(err.violations), fixes=list(err.fixes), model_name=name,
                                 fixes_note=err.fixes_note)
    except Exception as err:  # noqa: BLE001 - every failure becomes a report entry
        return DraftExportReport(dedupe_failures(_value_failures(state) + _unsupported_failures(state))
                                 + [_capture_failure(err)], model_name=name)

    failures: list[FailureReport] = []
    fixes: list[str] = []
    note = None
    if result.env.violations:
        try:
            vf, fixes, note = _violation_failures(result, model, args, kwargs, dynamic_shapes)
            failures += vf
        except Exception as err:  # noqa: BLE001
            failures += [FailureReport("constraint_violation", f"{r.expr} ({r.reason})", r.source, None, guard=r)
                         for r in result.env.violations]
            failures.append(FailureReport("capture_error", f"no fixes: {type(err).__name__}: {err}", None, None))
    failures += _auto_failures(result)
    failures += _data_dependent_failures(result)
    failures += _value_failures(state)
    failures += _unsupported_failures(state)
    failures = dedupe_failures(failures)  # one per guard pattern and source line (a loop asks again)
    accepted = _accepted_text(result)

    # The draft program checks what the example did: violated guards join its runtime checks
    # (capture already put a check after each data-dependent guard and value read).
    problems = list(state.problems)
    try:
        ep = build_program(result, model, args, kwargs, dynamic_shapes, extra_guards=result.env.violations)
    except Exception as err:  # noqa: BLE001
        failures.append(FailureReport("capture_error", f"could not build the program: {type(err).__name__}: {err}",
                                      error_source(err), None))
        return DraftExportReport(failures, None, fixes=fixes, accepted=accepted, model_name=name, fixes_note=note)
    if isinstance(dynamic_shapes, AdditionalInputs):  # as export: every set inside the inferred contract
        from ..export import check_additional_inputs

        try:
            check_additional_inputs(ep, model, dynamic_shapes)
        except ConstraintsExceededError as err:
            failures.append(FailureReport("example_out_of_range", str(err), None, None))
    validation = _validate(ep)
    validation.problems[:0] = problems
    validation.ok = not validation.problems
    if not validation.ok:
        failures.append(FailureReport("validation", "\n".join(validation.problems), None, None))
    aliased = aliased_example(ep, args, kwargs)  # export refuses it (the comparison runs on copies)
    if aliased is not None:
        failures.append(FailureReport("mismatch", aliased, None, None))
    comparison = _compare(ep, eager, args, kwargs)
    if not comparison.ok:
        failures.append(FailureReport("mismatch", comparison.note, None, None))
    return DraftExportReport(failures, ep, validation, comparison, fixes, accepted, name, fixes_note=note)


def _accepted_text(result: Any) -> list[str]:
    from ..violations import format_guard

    out = []
    for rec in result.env.accepted:
        if rec.expr.free_symbols and not (isinstance(rec.expr, sympy.Eq) and any(
                result.env.replacements.get(s) is not None and result.env.replacements[s].is_Integer
                for s in rec.expr.free_symbols)):
            where = f"  (at {rec.source})" if rec.source is not None else ""
            out.append(f"{format_guard(rec.expr)}{where}")
    return out


def _capture_failure(err: BaseException) -> FailureReport:
    """A capture that stopped: classify the exception."""
    src = error_source(err)
    text = _strip_at(str(err))
    if isinstance(err, UnsupportedOpError):
        # an UnsupportedOpError reaching here stopped capture: no opaque op ran, so it is not filed
        # under the opaque ops' heading
        return FailureReport("random_numbers" if err.random_draw else "unsupported_call", text, src, None)
    if isinstance(err, DataDependentError):
        return FailureReport("data_dependent", text + "\n(draft_export cannot continue past this one: the model "
                             "reads array values to decide control flow)", src, None, guard=err.guard)
    if isinstance(err, ConstraintsExceededError):
        return FailureReport("example_out_of_range", text, src, None)
    if isinstance(err, (ValueError, TypeError, NotImplementedError)) and src is None:
        return FailureReport("spec_error", f"{type(err).__name__}: {text}", None, None)
    if isinstance(err, CaptureError) and err.raised_by is not None:  # numpy raised inside an op of the model
        return FailureReport("numpy_error", text, src, None)
    return FailureReport("capture_error", f"{type(err).__name__}: {text}", src, None)
