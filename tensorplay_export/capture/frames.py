"""The one rule for "is this frame the user's code", and which functions capture reads through.

A guard, a specialization or a numpy error is reported at the innermost frame
that is the user's: not inside ``tensorplay_export`` (``nn`` included: a guard
raised inside a layer points at the user's call ``self.conv(x)``), numpy,
sympy, or the standard library (a size hashed inside ``collections.Counter``
points at the model's ``Counter(x.shape)``; packages installed into
``site-packages`` stay the user's).  Frames of
generated code (``<tpe-graph-N>``), numpy's dispatch shims and frozen modules
are library frames; other pseudo-files (``<string>``, ``<ipython-input-...>``,
notebook cells) are the user's.  Like torch's ``uninteresting_files()``, the
answer per file name is cached.
"""
from __future__ import annotations

import os
import sys
import sysconfig
import types
from typing import Any, Optional

import numpy
import sympy

from ..records import SourceLoc

__all__ = ["PACKAGE_DIR", "is_library_file", "mark_library_file", "user_source", "error_source", "is_user_function",
           "asked_by_library"]

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY_DIRS = (PACKAGE_DIR, os.path.dirname(numpy.__file__) + os.sep, os.path.dirname(sympy.__file__) + os.sep)
_STDLIB_DIRS = tuple(sorted({os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")}))
_INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_LIBRARY_PSEUDO = ("<__array_function__", "<frozen", "<tpe-graph-")
_CACHE: dict[str, bool] = {}


def is_library_file(filename: str) -> bool:
    """Whether frames of ``filename`` are library code (see the module docstring)."""
    hit = _CACHE.get(filename)
    if hit is None:
        if filename.startswith("<"):
            hit = filename.startswith(_LIBRARY_PSEUDO)
        else:
            path = os.path.abspath(filename)
            hit = path.startswith(_LIBRARY_DIRS) or (path.startswith(_STDLIB_DIRS)
                                                     and not any(d in path for d in _INSTALLED))
        _CACHE[filename] = hit
    return hit


def mark_library_file(filename: str) -> None:
    """Treat ``filename``'s frames as library code from now on (the CLI's console script)."""
    _CACHE[filename] = True
    _CACHE[os.path.abspath(filename)] = True


def user_source(depth: int = 1) -> Optional[SourceLoc]:
    """(file, line) of the innermost user frame on the current stack, starting ``depth`` frames up.

    When that frame is in another file than the model's own (a helper the model calls),
    ``caller`` is the model's line that led there (see :func:`_is_capture_frame`)."""
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_code.co_filename
        if not is_library_file(name):
            model, outer = frame, frame.f_back
            while outer is not None and not _is_capture_frame(outer.f_code.co_filename):
                if not is_library_file(outer.f_code.co_filename):
                    model = outer
                outer = outer.f_back
            return SourceLoc(name, frame.f_lineno, caller=_caller(name, model.f_code.co_filename, model.f_lineno))
        frame = frame.f_back
    return None


def error_source(err: BaseException) -> Optional[SourceLoc]:
    """The innermost user frame of ``err``'s traceback, or None (``caller`` as in :func:`user_source`)."""
    found = model = None
    entered = True  # the next user frame is the model's own: capture just called it
    tb = err.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if _is_capture_frame(name):
            entered = True
        elif not is_library_file(name):
            found = (name, tb.tb_lineno)
            if entered:
                model, entered = found, False
        tb = tb.tb_next
    return None if found is None else SourceLoc(*found, caller=_caller(found[0], *model))


def _is_capture_frame(filename: str) -> bool:
    """Whether the frame is this package's own machinery that runs the model (capture, export):
    the user frame just inside the innermost such frame is the model's own.  ``nn`` layers
    are not: the model calls them, and they call the user's submodules."""
    return filename.startswith(PACKAGE_DIR) and not filename.startswith(_NN_DIR)


def _caller(inner_file: str, model_file: str, model_line: int) -> Optional[SourceLoc]:
    return SourceLoc(model_file, model_line) if model_file != inner_file else None


_NN_DIR = os.path.join(PACKAGE_DIR, "nn") + os.sep


# Functions defined in these modules run as they are; every other plain Python function that
# capture reaches (the model's, nn's layers and functionals) is cloned so that its globals are
# read through capture (module-level arrays become traced constants).  This is not the frame
# rule above: nn's frames are library frames for reporting, but nn's functions are traced through.
_UNTRACED_MODULES = ("numpy", "sympy", "z3", "solver", "tensorplay_export.capture", "tensorplay_export.ops",
                     "tensorplay_export.export")


def is_user_function(fn: Any) -> bool:
    """Whether capture clones ``fn`` to read its globals through the capture view."""
    if not isinstance(fn, types.FunctionType):
        return False
    module = fn.__globals__.get("__name__", "") or ""
    return not module.startswith(_UNTRACED_MODULES)


# Who sees a size as what it is (capture/symbolic.py): this package and sympy get the real
# SymInt from ``__class__`` and may not hash one.  numpy's Python code is on the model's side
# here (``np.isscalar(n)`` must answer as in eager), unlike in the reporting rule above.
_OWN_DIRS = (PACKAGE_DIR, os.path.dirname(sympy.__file__) + os.sep)
_OWN_CACHE: dict[str, bool] = {}


def asked_by_library(depth: int = 2) -> bool:
    """Whether the Python frame ``depth`` levels up from here is this package's or sympy's.

    Called from a size's ``__class__`` or ``__hash__`` (frame 1): ``hash()`` and
    ``isinstance()`` are C builtins without a frame, so frame 2 is the code that called them.
    """
    name = sys._getframe(depth).f_code.co_filename
    hit = _OWN_CACHE.get(name)
    if hit is None:
        hit = _OWN_CACHE[name] = os.path.abspath(name).startswith(_OWN_DIRS)
    return hit
