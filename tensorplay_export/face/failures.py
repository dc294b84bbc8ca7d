"""The records a draft_export report is made of: failures, the kinds table, the program's checks.

:mod:`.draft` fills them, :mod:`.report` renders them; neither reads the other's
text.  A failure about a guard carries its record (``violation`` for a
constraint violation, ``guard`` for any guard), so a renderer asks the record
(``violation.unfixable``, ``guard.cause``) instead of reading the message.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..records import GuardRecord, SourceLoc, Violation

__all__ = ["FailureReport", "KINDS", "dedupe_failures", "NumericalComparison", "StructuralValidation"]

# kind -> heading, in report order
KINDS: dict[str, str] = {
    "constraint_violation": "Constraint violations",
    "auto_specialization": "Specialized Dim.AUTO sizes",
    "data_dependent": "Data-dependent guards",
    "unsupported_op": "Ops without shape rules (run opaquely at the example's sizes)",
    "unsupported_call": "Unsupported calls (capture stopped there: no opaque fallback)",
    "random_numbers": "Random numbers drawn inside the model (pass them as an input)",
    "numpy_error": "Errors raised inside the model",
    "spec_error": "dynamic_shapes does not fit the inputs",
    "example_out_of_range": "Example inputs outside the declared ranges",
    "capture_error": "Capture errors",
    "validation": "Structural validation",
    "mismatch": "Numerical mismatch against eager execution",
}


@dataclass
class FailureReport:
    """One problem draft_export found.

    Attributes:
        kind: one of :data:`KINDS`.
        message: what failed, with values (multi-line text, no fix block).
        source: the model's line (``SourceLoc``: ``.filename``, ``.lineno``, ``.text``) or None.
        fix: fix lines (``refine_dynamic_shapes_from_suggested_fixes`` syntax), one per line, or None.
        violation: for a ``constraint_violation``: its ``records.Violation`` (counterexample,
            fix lines, why no fix applies), the record ``message`` is rendered from; else None.
        guard: the capture's ``records.GuardRecord`` behind the failure (a violation's,
            a data-dependent guard's, the guard that pinned a ``Dim.AUTO`` size), or None.
        pattern: what makes two failures of one source line the same problem (the guard's
            kind, cause and expression with its data-dependent sizes renamed in order; what
            a value read read), set by the code that makes the failure; None: unique.
        count: how many failures of this kind, source line and pattern this one stands for
            (a loop reading ``v.item()`` on one line twice: one failure, ``count == 2``).
    """

    kind: str
    message: str
    source: Optional[SourceLoc] = None
    fix: Optional[str] = None
    violation: Optional[Violation] = None
    guard: Optional[GuardRecord] = None
    pattern: Optional[tuple] = None
    count: int = 1

    @property
    def location(self) -> str:
        """``model.py:12`` (base name), ``cell 3, line 16`` in a notebook, or ``""``."""
        if self.source is None:
            return ""
        return self.source.where

    @property
    def source_text(self) -> str:
        return self.source.text if self.source is not None else ""

    @property
    def summary(self) -> str:
        """The message's first line."""
        return self.message.strip().splitlines()[0] if self.message.strip() else self.kind

    def to_dict(self) -> dict:
        src = None
        if self.source is not None:
            src = {"file": self.source.filename, "line": self.source.lineno, "text": self.source.text}
        return {"kind": self.kind, "message": self.message, "source": src, "fix": self.fix, "count": self.count}


def dedupe_failures(failures: list[FailureReport]) -> list[FailureReport]:
    """One failure per kind, source line and pattern, in first-seen order, with its ``count``.

    A failure without a ``pattern`` or a source line stays as it is.
    """
    out: list[FailureReport] = []
    seen: dict[tuple, FailureReport] = {}
    for f in failures:
        if f.pattern is None or f.source is None:
            out.append(f)
            continue
        key = (f.kind, f.source.filename, f.source.lineno, f.pattern)
        first = seen.get(key)
        if first is None:
            seen[key] = f
            out.append(f)
        else:
            first.count += f.count
    return out


@dataclass
class StructuralValidation:
    """Graph lint + signature check of the draft program (``problems`` empty when ok)."""

    ok: bool
    problems: list[str] = field(default_factory=list)


@dataclass
class NumericalComparison:
    """Draft program vs eager model on the example inputs.

    ``max_abs``/``max_rel``: largest absolute / relative difference over all
    output leaves (0.0 for equal outputs; rel uses ``|a-b| / max(|b|, tiny)``), over the
    positions where both sides are finite.  ``nonfinite``: how many positions hold an
    inf/nan on either side (equal when both are the same inf or both nan, like
    ``numpy.testing.assert_allclose(equal_nan=True)``; any other is a mismatch, in ``note``).
    """

    ok: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    outputs: int = 0
    note: str = ""
    nonfinite: int = 0
