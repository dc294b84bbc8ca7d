"""A per-machine cache of a loaded program's generated forward, keyed by its document (issue 19).

Loading an archive generates ``module()``'s forward from the graph (GPT-24: ~880 lines, a
fifth of a warm load).  The source is a function of the program document's bytes and this
package's code alone, so it is kept beside the compiled code (:mod:`..graph.codecache`, same
directory, same trust rules, same atomic writes and tidying) under a key over:

- the entry format, the Python version, numpy's version and the codegen switches;
- the package's code: size and modification time (ns) of every ``.py`` file of
  ``tensorplay_export`` and ``solver``, read once per process (an edited checkout misses);
- the document's bytes.

An entry is JSON: the function's name, its source and one recipe per global
(:attr:`~..graph.codegen.PythonCode.recipes`); a program with a global no recipe can make (an
array constant, a user class) is not kept.  A hit makes the globals again (ops through the
registry, so an op whose implementation changed since is the new one) and compiles the source
through the code cache.  An entry is written only after every check of the load passed, so a
hit also stands for those checks: the loader skips the ones that depend on the document alone
and builds the graph when it is first read (:func:`..serde.program_load._build_program`);
the arrays are checked on every load.  What else those checks read (each op's call signature
and writing flag: an op registered from outside this package can change without its code
changing) is kept as the entry's ``facts`` and must still hold for a hit.  The cache never raises: any unreadable or unexpected
entry is a miss.
"""
from __future__ import annotations

import hashlib
import json
import operator
import os
import sys
from typing import Any, Callable, Optional

import numpy as np

from ..graph import codecache, codegen
from ..graph.codegen import PythonCode, compile_python_code, make_global

__all__ = ["forward_slot", "cached_forward", "store_forward"]

_FORMAT = b"tpe-forward-cache 2"
_SUFFIX = ".forward"
_fingerprint: list[bytes] = []


def _package_fingerprint() -> bytes:
    if not _fingerprint:
        h = hashlib.sha256()
        top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for package in ("tensorplay_export", "solver"):
            for folder, _dirs, files in sorted(os.walk(os.path.join(top, package))):
                for name in sorted(files):
                    if name.endswith(".py"):
                        path = os.path.join(folder, name)
                        try:
                            st = os.stat(path)
                        except OSError:
                            continue
                        h.update(f"{os.path.relpath(path, top)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _fingerprint.append(h.digest())
    return _fingerprint[0]


def _key(document: bytes) -> str:
    h = hashlib.sha256()
    switches = f"{codegen.REUSE_BUFFERS}{codegen.OUT_VARIANTS}{codegen.POOL_BUFFERS}"
    for part in (_FORMAT, sys.version.encode(), np.__version__.encode(), switches.encode(),
                 _package_fingerprint()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    h.update(document)
    return h.hexdigest()


def forward_slot(document: bytes) -> Optional[tuple[str, str, str]]:
    """Where the forward of ``document`` (a program member's bytes) is kept: ``(folder, entry
    path, key)``, or None when the cache is off or its directory is not to be trusted.  Made
    once per load, for the look-up and, on a miss, the write."""
    folder = codecache.cache_dir()
    if folder is None or not codecache.usable_dir(folder):
        return None
    key = _key(document)
    return folder, os.path.join(folder, key + _SUFFIX), key


def _same(a: Any, b: Any) -> bool:
    """``b`` (made from a recipe) stands for ``a`` (the generated global) in the forward."""
    if isinstance(a, np.dtype):
        return isinstance(b, np.dtype) and a == b and a.str == b.str
    if isinstance(a, operator.attrgetter):
        return type(b) is operator.attrgetter and repr(a) == repr(b)
    return a is b


def cached_forward(slot: tuple[str, str, str],
                   facts_hold: Callable[[dict[str, str]], bool] = lambda facts: True,
                   ) -> Optional[tuple[PythonCode, Callable]]:
    """``(PythonCode, function)`` of the forward kept in ``slot`` (:func:`forward_slot`), as
    :meth:`ExportedProgram.module` would generate and compile it; None on a miss, which
    includes ``facts_hold(facts)`` being false for the facts :func:`store_forward` kept."""
    _folder, path, key = slot
    payload = codecache.read_entry(path, _FORMAT, key)
    if payload is None:
        return None
    try:
        entry = json.loads(bytes(payload))
        src, fn_name, recipes, facts = entry["src"], entry["fn_name"], entry["globals"], entry["facts"]
        if type(src) is not str or type(fn_name) is not str or type(recipes) is not dict:
            return None
        if type(facts) is not dict or not all(type(k) is str and type(v) is str for k, v in facts.items()):
            return None
        if not facts_hold(facts):
            return None
        made = {name: make_global(tuple(recipe)) for name, recipe in recipes.items()}
        code = PythonCode(src, made, fn_name, {n: tuple(r) for n, r in recipes.items()})
        fn = compile_python_code(code)
    except Exception:  # noqa: BLE001 - any entry this version cannot use is a miss
        return None
    try:
        os.utime(path)  # used now: kept when the directory is tidied
    except OSError:
        pass
    return code, fn


def store_forward(slot: tuple[str, str, str], code: PythonCode, facts: Optional[dict[str, str]] = None) -> None:
    """Keep ``code`` (the forward generated for the slot's document) in ``slot`` when every global has a recipe
    that makes the same object again, and the source is within the code cache's bounds.

    ``facts``: what the loader read from outside the document and the package's code while
    checking it (name -> text), given to ``facts_hold`` at each look-up (:func:`cached_forward`).
    """
    if code.recipes is None or not (codecache.MIN_SOURCE_CHARS <= len(code.src) <= codecache.MAX_SOURCE_CHARS):
        return
    if set(code.recipes) != set(code.globals):
        return
    try:
        if not all(_same(code.globals[name], make_global(recipe)) for name, recipe in code.recipes.items()):
            return
        payload = json.dumps({"fn_name": code.fn_name, "src": code.src,
                              "globals": {n: list(r) for n, r in code.recipes.items()}, "facts": facts or {}},
                             ensure_ascii=True).encode("ascii")
    except Exception:  # noqa: BLE001 - an op the registry no longer resolves: not kept
        return
    folder, path, key = slot
    codecache.write_entry(folder, path, _FORMAT, key, payload, _SUFFIX)
