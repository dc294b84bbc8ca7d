"""One symbolic computation at a time per process.

z3's Python API works in one default context, which is not thread-safe: two threads
deciding guards at once fail at random ("context mismatch", "unreachable") or crash
the process.  Capture also patches numpy's functions for the whole process while it
traces.  The entry points that trace or decide (export, draft_export, compose,
contract diffs, decompositions) therefore run under :data:`LOCK`; the programs they
make run without it, concurrently.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

__all__ = ["LOCK", "exclusive"]

# re-entrant: an entry point calls others (export proves its fixes by exporting again)
LOCK = threading.RLock()

F = TypeVar("F", bound=Callable[..., Any])


def exclusive(fn: F) -> F:
    """``fn`` runs holding :data:`LOCK` (other threads' symbolic work waits)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with LOCK:
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]
