"""A time budget for a whole piece of work (one CLI command), over every query it asks.

The per-query timeout (``ShapeSolver(timeout_ms=...)``) bounds one z3 call, not a
command: a contract with hundreds of hard guards asks hundreds of questions, each
allowed its full timeout.  Inside ``with solver_budget(seconds):`` every
:class:`~solver.decide.ShapeSolver` query also sees the budget:

- once it is spent, a query that the cache does not answer is ``"unknown"`` at once
  (``Verdict.via == "budget"``), and is not cached (another budget may decide it);
- z3 is given at most the time left (its own timeout is then the smaller of the two);
- the exact enumeration that follows a z3 time-out is skipped.

The budget is wall-clock time from entering the block: the symbolic preparation
between queries (sympy building and simplifying formulas) counts too, because on
hostile input that is where much of the time goes.  Callers that do such
preparation between queries check :attr:`SolverBudget.spent` themselves.  z3 honours
its timeout only between steps of its own, so one query can still overrun what was
left (measured: a 2 s timeout over 201 nonlinear ``Mod`` guards took 26 s).

With no budget active (the default, e.g. during capture) nothing changes.  Budgets
nest: an inner one never outlasts the outer one.
"""
from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager
from typing import Iterator, Optional

__all__ = ["SolverBudget", "solver_budget", "active_budget"]


class SolverBudget:
    """``seconds`` of deciding, counted from creation (see the module docstring).

    Attributes:
        seconds: the budget as given.
        refused: queries answered ``"unknown"`` because the budget was spent.

    Raises:
        ValueError: ``seconds`` is not a positive number.
    """

    def __init__(self, seconds: float, parent: Optional["SolverBudget"] = None) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise ValueError(f"a solver budget is a positive number of seconds, got {seconds!r}")
        self.seconds = float(seconds)
        self._deadline = time.monotonic() + self.seconds
        if parent is not None:
            self._deadline = min(self._deadline, parent._deadline)
        self.refused = 0

    def remaining_ms(self) -> int:
        """Milliseconds left (0 when spent)."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))

    @property
    def spent(self) -> bool:
        return time.monotonic() >= self._deadline

    @property
    def reason(self) -> str:
        """The reason of a verdict the budget left undecided."""
        return f"the solver budget of {self.seconds:g} s ran out"


_ACTIVE: contextvars.ContextVar[Optional[SolverBudget]] = contextvars.ContextVar("solver_budget", default=None)


def active_budget() -> Optional[SolverBudget]:
    """The budget of the innermost ``with solver_budget(...)`` block, or None."""
    return _ACTIVE.get()


@contextmanager
def solver_budget(seconds: float) -> Iterator[SolverBudget]:
    """Every solver query inside the block shares ``seconds`` of time (see the module docstring).

    Raises:
        ValueError: ``seconds`` is not a positive number.
    """
    budget = SolverBudget(seconds, _ACTIVE.get())
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)
