"""One BLAS thread while a capture runs numpy on the example values.

Capture multiplies small example matrices (batch 2, seq 16): a multithreaded
BLAS spends more time handing work between threads than computing, and on a
loaded 2-core machine one export was measured 5x slower with the default
thread count.  :func:`one_blas_thread` limits the BLAS thread pools (through
``threadpoolctl``) for the duration of a capture and restores them afterwards.

The limit is process-wide while it holds: BLAS calls of other threads during a
capture run single-threaded too.  A numpy without a BLAS threadpoolctl knows is left as it is.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from threadpoolctl import ThreadpoolController

_CONTROLLER: list = []   # the process's ThreadpoolController, made on first use


def _controller() -> Any:
    if not _CONTROLLER:
        # inspecting the loaded libraries costs ~0.5 ms: once per process, not per export
        # (numpy's BLAS is loaded with numpy, before any capture)
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit every BLAS thread pool to one thread inside the ``with`` block; restore after."""
    controller = _controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield
