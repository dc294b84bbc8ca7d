"""Plain records passed between capture, the solver front end and reports.

Data flows one way: capture appends ``GuardRecord``s while the model runs;
``violations.py`` turns the ones the declared dims do not imply into a
``ConstraintViolationError``; ``draft_export`` turns them into report entries.
"""
from __future__ import annotations

import linecache
import math
from dataclasses import dataclass, field
from typing import Optional

import sympy


@dataclass(frozen=True)
class SourceLoc:
    """Where in the user's code something happened; text is read only when printed."""

    filename: str
    lineno: int

    @property
    def text(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        import os

        base = f"{os.path.basename(self.filename)}:{self.lineno}"
        text = self.text
        return f"{base}  `{text}`" if text else base


@dataclass(frozen=True)
class ValueRange:
    """Inclusive integer range ``[lower, upper]``; ``upper`` is ``math.inf`` when unbounded."""

    lower: int
    upper: float | int = math.inf

    def __contains__(self, value: int) -> bool:
        return self.lower <= value <= self.upper

    def __str__(self) -> str:
        upper = "inf" if self.upper == math.inf else str(int(self.upper))
        return f"[{self.lower}, {upper}]"

    __repr__ = __str__

    @property
    def is_bounded(self) -> bool:
        return self.upper != math.inf


@dataclass
class GuardRecord:
    """One requirement the traced run placed on sizes.

    ``expr`` is a sympy boolean over the root size symbols (derived dims already
    substituted) that held for the example sizes.  ``kind`` is one of
    ``"guard"`` (a Python ``bool()`` on a symbolic size in user code),
    ``"shape"`` (an op's shape rule required it, e.g. broadcasting, reshape),
    ``"specialization"`` (``int()``/``__index__`` pinned a size),
    ``"index_bounds"`` (index values must stay inside an array), or
    ``"data_dependent"`` (it involves an unbacked symbol).
    """

    expr: sympy.Basic
    kind: str
    reason: str
    source: Optional[SourceLoc] = None
    op: Optional[str] = None
    notes: list[str] = field(default_factory=list)


@dataclass
class DimInfo:
    """A user-visible size symbol: its declared range, example size and input sites."""

    name: str
    lower: int
    upper: float | int
    hint: int
    sites: list[str] = field(default_factory=list)  # e.g. ["x.shape[1]", "mask.shape[1]"]
    kind: str = "named"  # "named" | "dynamic" | "auto" | "unbacked"
