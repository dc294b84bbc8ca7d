"""The exception classes every layer of ``tensorplay_export`` raises.

Each one subclasses the builtin a caller would already catch for that kind of
failure, so code written against plain numpy errors keeps working.

The two export-time shape errors carry records: ``ConstraintViolationError``
declares its ``violations`` (``records.Violation``) and ``fixes``,
``DataDependentError`` its ``guard`` and data-dependent ``symbols``, and both
render their text from those fields (:func:`violation_lines`,
:func:`data_dependent_lines`).  Code that needs to know what went wrong reads the
fields; only people (and ``refine``, which reads pasted text) read the text.
The marker phrases of that text are defined here, once.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .records import DimInfo, ExampleOutside, GuardRecord, Violation, format_range_brackets

# The phrases of a ConstraintViolationError's text that refine_dynamic_shapes_from_suggested_fixes
# reads back from a pasted message (its job); everyone else reads the records.
FIXES_HEADER = "Suggested fixes:"   # starts the block of fix lines, the last part of the text
UNFIXABLE_MARK = "no suggested fix:"  # starts the sentence of a bullet whose guard no fix line can fix
WHAT_WORKS_MARK = "What works:"       # then, in that sentence, what to do instead
NO_FIXES_HEAD = "No suggested fixes:"
# ends the note of a Dim.DYNAMIC axis a fix line names: its input's entry in a tuple/list spec, then "."
DYNAMIC_ENTRY_MARK = "In a tuple/list dynamic_shapes its input is entry"
# Printed last when no fix line applies; refine recognizes it and says there is nothing to apply.
NO_FIXES_LINE = (f"{NO_FIXES_HEAD} no fix form makes these guards hold; "
                 "each bullet above says what was searched and what to change instead")

_DATA_DEPENDENT_ADVICE = ("A data-dependent size is known only at run time, so export cannot pick a branch for it: "
                          "compute both sides and select with np.where, or move the check out of the exported "
                          "function, or, when the condition holds for every input the model is given, state it "
                          "before this line with tpe.check(<the condition on that size>) (as torch._check): "
                          "the branch is then decided and the program checks the fact at run time.")


def example_outside_head(e: ExampleOutside) -> str:
    """``x.shape[0] = 20 is outside b in [1, 8]``; ``y.shape[0] = 3 is outside 2*b for b in [1, 8]``."""
    within = f" for {e.root}" if e.dim != e.root else ""
    return f"{e.site} = {e.size} is outside {e.dim}{within} in {format_range_brackets(e.lower, e.upper)}"


def violation_lines(v: Violation, *, source: bool = True) -> list[str]:
    """One violation as lines: the head (``Not all values of ...``), then its details, unindented.

    ``source=False`` leaves out the ``at file:line`` line (a report that prints the
    source itself).
    """
    known = {d.name: d for d in v.dims}

    def sites(name: str) -> str:
        info = known.get(name)
        return info.where() if info is not None else name

    where = ", ".join(sites(n) for n in v.names)
    why = f" ({v.reason})" if v.reason else ""
    if v.example is not None:
        lines = [example_outside_head(v.example)]
    elif v.related_by is not None:
        derived, root, line = v.related_by
        lines = [f"The values of {sites(derived)} must always be related to the values of {sites(root)} by "
                 f"{line}{why}"]
    elif v.specialized_to is not None:
        lines = [f"{where} was specialized to {v.specialized_to}{why}"]
    else:
        plural = "s" if len(v.names) > 1 else ""
        lines = [f"Not all values of {where} in the specified range{plural} {', '.join(v.ranges)} "
                 f"satisfy the guard {v.guard_text}{why}"]
    if v.counterexample:
        cex = v.counterexample
        lines.append(f"counterexample: {', '.join(f'{k} = {cex[k]}' for k in sorted(cex))}")
    elif v.undecided is not None:
        lines.append(f"counterexample: none found, the solver could not decide this guard ({v.undecided})")
    if source and v.source is not None:
        lines.append(f"at {v.source}")
    lines += [f"note: {note}" for note in v.notes]
    if v.keep_dynamic:
        lines.append(f"to keep it dynamic: {v.keep_dynamic}")
    lines += list(v.dynamic_notes)
    if v.unfixable is not None:
        works = f". {WHAT_WORKS_MARK} {v.what_works}" if v.what_works else ""
        lines.append(f"{UNFIXABLE_MARK} {v.unfixable}{works}")
    return lines


class ConstraintViolationError(ValueError):
    """Export-time: the model needs more than the declared ``dynamic_shapes`` allow.

    The text lists every violated guard (``Constraints violated (names)!``), each
    with a counterexample and the model's source line, then a
    ``Suggested fixes:`` block that
    :func:`refine_dynamic_shapes_from_suggested_fixes` accepts.

    Args:
        message: the text; by default rendered from ``violations`` and ``fixes``
            (draft_export passes its whole report instead).
        violations: one ``records.Violation`` per violated guard, in capture order.
        fixes: every fix line, one verified set (the ``Suggested fixes:`` block).
        fixes_note: what the re-export that proves the block could not prove (None:
            exporting with the block applied succeeds, so one refine step is enough).

    Attributes:
        violations, fixes, fixes_note: as passed.
    """

    def __init__(self, message: Optional[str] = None, *, violations: Sequence[Violation] = (),
                 fixes: Sequence[str] = (), fixes_note: Optional[str] = None) -> None:
        self.violations: list[Violation] = list(violations)
        self.fixes: list[str] = list(fixes)
        self.fixes_note = fixes_note
        super().__init__(self.render() if message is None else message)

    def render(self) -> str:
        """The text from the fields: the bullets, then the fix block (or ``NO_FIXES_LINE``)."""
        return render_violations(self.violations, self.fixes, self.fixes_note)


def unfixable_note(violations: Sequence[Violation]) -> Optional[str]:
    """What to say before a fix block printed beside guards no fix line expresses, else None.

    The block fixes the other guards only, so one refine step will not be enough: the
    guards whose bullets carry ``UNFIXABLE_MARK`` still stop export until the model changes
    (the note does not quote the mark: refine reads it).
    """
    stuck = [v.guard_text for v in violations if v.unfixable is not None]
    if not stuck:
        return None
    return (f"these fixes do not make {'; '.join(stuck)} hold (the bullets above without a fix), so one refine "
            f"step will not be enough: export will still stop at {'that guard' if len(stuck) == 1 else 'those guards'} "
            f"until the model changes")


def render_violations(violations: Sequence[Violation], fixes: Sequence[str], note: Optional[str] = None) -> str:
    """The violation layout: ``Constraints violated (names)!``, one bullet per violation,
    then the ``Suggested fixes:`` block (or ``NO_FIXES_LINE``); ``note`` (what exporting
    again with the block applied could not prove) stands just before the block.  A block
    printed beside guards no fix line expresses gets a note saying one refine step will not
    be enough, and why, when ``note`` does not say so already.

    The one renderer of that layout (``ConstraintViolationError`` and an example outside
    its declared range, ``ConstraintsExceededError``, both print it).  What a ``Dim.DYNAMIC``
    axis's note says is the same in every violation it is part of: it is printed once.
    """
    # the dims the fix changes (torch's header): a relation names its derived dim only
    names = sorted({n for v in violations for n in ((v.related_by[0],) if v.related_by else v.names)})
    out = [f"Constraints violated ({', '.join(names)})!"]
    shown: set[str] = set()  # a Dim.DYNAMIC axis's note is said once, at its first violation
    for v in violations:
        repeated = shown.intersection(v.dynamic_notes)
        shown.update(v.dynamic_notes)
        head, *rest = [ln for ln in violation_lines(v) if ln not in repeated]
        out.append(f"  - {head}")
        out += [f"    {ln}" for ln in rest]
    if fixes:
        note = note or unfixable_note(violations)
        if note:
            out.append(f"Note: {note}.")
        out.append(FIXES_HEADER)
        out += [f"  {ln}" for ln in fixes]
    else:
        out.append(NO_FIXES_LINE)
    return "\n".join(out)


def data_dependent_lines(guard: GuardRecord, guard_text: str, symbols: Sequence[DimInfo], *,
                         asked_for: bool = True) -> list[str]:
    """The text of a guard on data-dependent sizes, as lines.

    ``asked_for=False`` leaves out the ``asked for at file:line`` line (a report that
    prints the source itself).
    """
    example = ", ".join(f"{d.name} = {d.hint}" for d in symbols if d.hint is not None)
    what = f"the example has {example}" if example else "no example value"
    out = [f"Could not guard on data-dependent expression {guard_text} ({what})"]
    for d in symbols:
        producer = f"produced by {d.sites[0]}" if d.sites else "produced by a data-dependent op"
        out.append(f"  - {d.name} is a data-dependent size, {producer}; its range is {d.range}")
    if asked_for:
        asked = f"{guard.source}" if guard.source is not None else "an unknown line"
        op = f" ({guard.op})" if guard.op else ""
        out.append(f"  asked for at {asked}{op}")
    out += [f"  note: {note}" for note in guard.notes]
    out.append(_DATA_DEPENDENT_ADVICE)
    return out


class DataDependentError(RuntimeError):
    """Export-time: a guard depends on a data-dependent (unbacked) size.

    Args:
        message: the text; by default rendered from the fields below (a read of
            array values, which has no guard, passes its own).
        guard: the guard the model asked for (``source`` = the line that asked), or None.
        guard_text: that guard as printed (``u0 > 3``).
        symbols: the data-dependent sizes it involves: name, example value
            (``hint``), known range, and in ``sites[0]`` the op and line that made it.

    Attributes:
        guard, guard_text, symbols: as passed.
    """

    def __init__(self, message: Optional[str] = None, *, guard: Optional[GuardRecord] = None,
                 guard_text: str = "", symbols: Sequence[DimInfo] = ()) -> None:
        self.guard = guard
        self.guard_text = guard_text
        self.symbols: tuple[DimInfo, ...] = tuple(symbols)
        if message is None:
            if guard is None:
                raise TypeError("DataDependentError needs a message or the guard it is about")
            message = "\n".join(data_dependent_lines(guard, guard_text, self.symbols))
        super().__init__(message)


class UnsupportedOpError(NotImplementedError):
    """Capture reached a numpy function or method that has no shape rule.

    ``random_draw`` is True when the function draws random numbers (no program can
    reproduce them; draft_export reports that under its own kind).
    """

    def __init__(self, *args: Any, random_draw: bool = False) -> None:
        super().__init__(*args)
        self.random_draw = random_draw


class ConstraintsExceededError(RuntimeError):
    """A runtime input violated the declared dynamic-shape contract.

    Raised by the assertions inserted into captured graphs and by export-time
    validation when an example input falls outside a declared range.  It is a
    RuntimeError so callers written against plain runtime failures keep
    working.

    At export time, an example outside its declared range carries records:
    ``violations`` (one ``records.Violation`` per dim, its ``example`` field set)
    and ``fixes`` (the widened ranges), and its text is the violation layout of
    :func:`render_violations`, so ``refine_dynamic_shapes_from_suggested_fixes``
    applies its ``Suggested fixes:`` block.  A runtime check passes its message.

    Attributes:
        violations, fixes: as passed (empty for a runtime check).
        fixes_note: what the re-export that proves the widened ranges could not prove (the
            model fails on the example itself, say), as for ``ConstraintViolationError``;
            None when exporting with the fixes applied succeeds.
    """

    def __init__(self, *args: Any, violations: Sequence[Violation] = (), fixes: Sequence[str] = (),
                 fixes_note: Optional[str] = None) -> None:
        self.violations: list[Violation] = list(violations)
        self.fixes: list[str] = list(fixes)
        self.fixes_note = fixes_note
        if not args and self.violations:
            args = (self.render(),)
        super().__init__(*args)

    def render(self) -> str:
        """The text from the fields (the violation layout), as ``ConstraintViolationError`` renders it."""
        return render_violations(self.violations, self.fixes, self.fixes_note)


class ArchiveError(ValueError):
    """Anything wrong in a saved archive or serialized artifact (names the member)."""


class CaptureError(RuntimeError):
    """Capture itself failed: numpy raised inside the model, or a replay mismatch.

    ``raised_by`` names the op whose numpy implementation raised on the example
    values (the model's own error, in ``__cause__``); None for other failures.
    """

    def __init__(self, *args: Any, raised_by: Optional[str] = None) -> None:
        super().__init__(*args)
        self.raised_by = raised_by


class NumpySizeError(CaptureError):
    """numpy raised on the example because a size requirement of the op is false there.

    ``x.reshape(-1, 4)`` at ``x.shape[0] = 6`` raises numpy's ValueError; a model written
    EAFP-style catches it (``except ValueError:`` then pads).  The instance the model sees
    is also of numpy's builtin kind (:func:`numpy_size_error`: a ``NumpySizeValueError`` is a
    ValueError, a ``NumpySizeIndexError`` an IndexError), so its handler runs as eagerly,
    and capture has recorded the branch: a guard that the requirement is false.  Raised out
    of the model uncaught, capture turns it back into the plain :class:`CaptureError` it
    reports for any numpy error (:meth:`uncaught`): same class and text as without a handler.

    Attributes:
        raised_by: the op whose numpy implementation raised (as for CaptureError).
        requirement: the sympy condition on sizes numpy needs, false at the example.
    """

    def __init__(self, *args: Any, raised_by: Optional[str] = None, requirement: Any = None) -> None:
        super().__init__(*args, raised_by=raised_by)
        self.requirement = requirement

    def uncaught(self) -> CaptureError:
        """The plain CaptureError of this numpy error (numpy's own error stays its ``__cause__``)."""
        err = CaptureError(*self.args, raised_by=self.raised_by)
        err.__cause__ = self.__cause__
        return err


_NUMPY_SIZE_ERRORS: dict = {}


def numpy_size_error(kind: type) -> Optional[type]:
    """The :class:`NumpySizeError` class that is also of ``kind``'s builtin exception kinds.

    ``kind``: the class numpy raised.  A class of numpy's that only names a kind
    (``numpy.linalg.LinAlgError``) is a base itself, so ``except LinAlgError:`` catches it; one
    with its own ``__init__`` or ``__str__`` (``numpy.exceptions.AxisError``, made from an
    axis number) is not, its builtin kinds are (for AxisError: ValueError and IndexError).
    None when ``kind`` has no builtin kind below ``Exception`` or Python cannot combine it
    with RuntimeError (an instance lay-out conflict).
    """
    builtin = [c for c in kind.__mro__ if c.__module__ == "builtins" and issubclass(c, Exception)
               and c is not Exception]
    bases = tuple(c for c in builtin if not any(o is not c and issubclass(o, c) for o in builtin))
    if not bases:
        return None
    own = [c for c in kind.__mro__ if c.__module__ != "builtins"]
    if own and not any(k in c.__dict__ for c in own for k in ("__init__", "__new__", "__str__", "__reduce__")):
        bases = (kind,)
    if bases not in _NUMPY_SIZE_ERRORS:
        name = "NumpySize" + "".join(b.__name__ for b in bases)  # NumpySizeValueError, NumpySizeLinAlgError
        try:
            cls = type(name, (NumpySizeError, *bases), {
                "__module__": NumpySizeError.__module__,
                "__doc__": f"A NumpySizeError that is also a {' and a '.join(b.__name__ for b in bases)}."})
        except TypeError:  # instance lay-out conflict
            cls = None
        _NUMPY_SIZE_ERRORS[bases] = cls
    return _NUMPY_SIZE_ERRORS[bases]


class InputDtypeError(TypeError):
    """An input's dtype differs from the one the program was exported with."""


# What usually makes a traced run take another path than eager numpy (named in EagerMismatchError).
EAGER_MISMATCH_CAUSES = (
    "a Python-level check of a size's type (`type(n) is int`; a size is symbolic while tracing), "
    "hashing a size (a dict or set lookup on `x.shape[0]`, `hash(x.shape)`), or reading values through "
    "a route the tracer cannot see (`.ctypes`, `.tolist()` of a buffer, a C extension, module state "
    "changed behind the model's back)")


class EagerMismatchError(CaptureError):
    """The exported program, run on the example inputs, differs from the model run eagerly on them.

    Export's safety net (``program.eager_check``): the model is also run untraced (plain
    numpy, on copies of the example inputs and of the module state) and every output,
    buffer update and input write of the program is compared with it.

    Fields:
        path: where the first difference is (``output[0]``, ``output['logits']``,
            ``buffer 'bn.running_var'``, ``input x``); None when the runs could not be compared.
        expected, got: what eager numpy gave and what the program gave (dtype and shape,
            or the value of a non-array output).
        max_abs_diff: the largest absolute difference (None when shapes or dtypes differ).
        detail: what differed, in words (``dtype float32 vs float64``, ``the model raised ...``).
        ran_on: what both ran on (the example inputs, a small example cut from them, or
            those with their constant float inputs given seeded values).
    """

    def __init__(self, path: Optional[str], expected: str, got: str, detail: str,
                 max_abs_diff: Optional[float] = None, ran_on: str = "the example inputs",
                 advice: Optional[str] = None) -> None:
        self.path, self.expected, self.got, self.detail = path, expected, got, detail
        self.max_abs_diff = max_abs_diff
        self.ran_on = ran_on
        where = f" at {path}" if path is not None else ""
        diff = f", max abs diff {max_abs_diff:.4g}" if max_abs_diff is not None else ""
        advice = advice or (
            f"The traced run took another path than eager numpy. That usually comes from {EAGER_MISMATCH_CAUSES}. "
            "Compare sizes (`n == 4`) instead of testing their type or hashing them, and pass values the model "
            "reads as inputs.")
        super().__init__(
            f"the exported program differs from the model run eagerly (plain numpy, untraced) on "
            f"{ran_on}{where}: {detail}; expected {expected}, got {got}{diff}.\n{advice}")
