"""``tensorplay-export``: shape-contract checks for CI.

Subcommands::

    tensorplay-export check TARGET [--json]          draft_export; exit 0 contract holds, 1 not (fixes printed)
    tensorplay-export export TARGET -o model.pt2     export + save; exit 1 with the fixes when export fails
    tensorplay-export contract ARCHIVE [--json]      the contract of a saved program (or a JSON contract)
    tensorplay-export diff OLD NEW [--json]          exit 1 when NEW admits fewer sizes than OLD
    tensorplay-export show ARCHIVE                   the program's code and graph

``TARGET`` is ``path/to/file.py:function``; the function takes no arguments and
returns ``(model, args, dynamic_shapes)`` or ``(model, args, kwargs, dynamic_shapes)``.
Exit status 2 means a usage error (bad arguments, missing file, bad target, a
target function that raises, an output path that cannot be written).
Errors print one line (``error: ...``); ``--debug`` prints the traceback before
it and keeps the same exit status.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import traceback
from typing import Any, Optional, Sequence

__all__ = ["main", "load_target", "UsageError"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input: exit status 2."""


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    # soft_wrap: never insert line breaks (fix lines must stay one per line for refine)
    return Console(stderr=stderr, soft_wrap=True, highlight=False)


def load_target(target: str) -> tuple[Any, tuple, dict, Any]:
    """Import ``file.py:function`` and call it -> ``(model, args, kwargs, dynamic_shapes)``.

    Raises:
        UsageError: malformed target, missing file or function, wrong return value.
    """
    path, sep, func = target.rpartition(":")
    if not sep or not path or not func.isidentifier():
        raise UsageError(f"TARGET must be path/to/file.py:function, got {target!r}")
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    path = os.path.abspath(path)
    name = f"_tpe_target_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path} (not a Python file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(path))
    fn = getattr(module, func, None)
    if not callable(fn):
        raise UsageError(f"{os.path.basename(path)} has no function {func!r}")
    got = fn()
    if not isinstance(got, tuple) or len(got) not in (3, 4):
        raise UsageError(f"{func}() must return (model, args, dynamic_shapes) or "
                         f"(model, args, kwargs, dynamic_shapes), got {type(got).__name__}"
                         + (f" of length {len(got)}" if isinstance(got, tuple) else ""))
    if len(got) == 3:
        model, args, dynamic_shapes = got
        kwargs: dict = {}
    else:
        model, args, kwargs, dynamic_shapes = got
    if not isinstance(args, (tuple, list)):
        args = (args,)
    if not isinstance(kwargs, dict):
        raise UsageError(f"{func}(): kwargs must be a dict, got {type(kwargs).__name__}")
    return model, tuple(args), dict(kwargs), dynamic_shapes


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def _file(path: str) -> str:
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    return path


def _print_headed(text: str, ok: bool) -> Any:
    """Print ``text`` with its first line bold green (``ok``) or bold red; return the console."""
    con = _console()
    head, _, rest = text.partition("\n")
    con.print(head, style="bold green" if ok else "bold red", markup=False)
    if rest:
        con.print(rest, markup=False)
    return con


# -- subcommands -------------------------------------------------------------------------------------
def cmd_check(opts: argparse.Namespace) -> int:
    from .contract import contract_of
    from .draft import draft_export

    model, args, kwargs, spec = load_target(opts.target)
    report = draft_export(model, *args, dynamic_shapes=spec, **kwargs)
    ok = report.successful()
    if opts.json:
        data = report.to_dict()
        data["contract"] = contract_of(report.exported_program).to_json() if report.exported_program else None
        _emit_json(data)
        return EXIT_OK if ok else EXIT_FAIL
    con = _print_headed(str(report), ok)
    if ok:
        con.print("contract holds", style="green", markup=False)
    return EXIT_OK if ok else EXIT_FAIL


def cmd_export(opts: argparse.Namespace) -> int:
    from ..errors import (
        CaptureError, ConstraintsExceededError, ConstraintViolationError, DataDependentError,
        UnsupportedOpError,
    )
    from ..export import export
    from ..serde import save

    _writable_output(opts.output)  # before the (slow) export: a bad path is a usage error
    model, args, kwargs, spec = load_target(opts.target)
    try:
        ep = export(model, *args, dynamic_shapes=spec, **kwargs)
    except (ConstraintViolationError, DataDependentError, UnsupportedOpError, ConstraintsExceededError,
            CaptureError) as err:
        con = _console()
        con.print(f"export failed: {type(err).__name__}", style="bold red", markup=False)
        con.print(str(err), markup=False)
        return EXIT_FAIL
    try:
        save(ep, opts.output)
    except OSError as err:  # the archive is written to a temporary file first: name the user's path
        raise UsageError(f"cannot write {opts.output}: {err.strerror or err}") from err
    _console().print(f"saved {opts.output}", style="green", markup=False)
    return EXIT_OK


def _writable_output(path: str) -> None:
    """Raise UsageError naming ``path`` when its folder is missing or not writable, or it is a folder."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: the directory {os.path.dirname(path) or folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {path}: the directory {os.path.dirname(path) or folder} is not writable")


def cmd_contract(opts: argparse.Namespace) -> int:
    from .contract import load_contract

    c = load_contract(_file(opts.archive))
    if opts.json:
        _emit_json(c.to_json())
    else:
        _console().print(c.describe(), markup=False)
    return EXIT_OK


def cmd_diff(opts: argparse.Namespace) -> int:
    from .contract import diff_contracts, load_contract

    old, new = load_contract(_file(opts.old)), load_contract(_file(opts.new))
    d = diff_contracts(old, new)
    if opts.json:
        _emit_json(d.to_json())
    else:
        _print_headed(str(d), d.narrowed is False)
    return EXIT_OK if d.narrowed is False else EXIT_FAIL


def cmd_show(opts: argparse.Namespace) -> int:
    from ..serde import load

    ep = load(_file(opts.archive))
    con = _console()
    con.print("Code:", style="bold", markup=False)
    con.print(ep.code.rstrip(), markup=False)
    con.print("")
    con.print("Graph:", style="bold", markup=False)
    con.print(str(ep.graph).rstrip(), markup=False)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensorplay-export",
                                description="Shape-contract checks for numpy models exported with tensorplay_export.")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser("check", help="draft_export TARGET; exit 0 when the contract holds, 1 when not")
    c.add_argument("target", metavar="TARGET", help="path/to/file.py:function")
    c.add_argument("--json", action="store_true", help="print a machine-readable report")
    c.set_defaults(run=cmd_check)
    e = sub.add_parser("export", help="export TARGET and save the program")
    e.add_argument("target", metavar="TARGET", help="path/to/file.py:function")
    e.add_argument("-o", "--output", required=True, help="archive to write (e.g. model.pt2)")
    e.set_defaults(run=cmd_export)
    k = sub.add_parser("contract", help="the shape contract of a saved program")
    k.add_argument("archive", metavar="ARCHIVE", help="program archive or JSON contract")
    k.add_argument("--json", action="store_true", help="print the contract as JSON")
    k.set_defaults(run=cmd_contract)
    d = sub.add_parser("diff", help="exit 1 when NEW admits fewer sizes than OLD")
    d.add_argument("old", metavar="OLD", help="archive or JSON contract")
    d.add_argument("new", metavar="NEW", help="archive or JSON contract")
    d.add_argument("--json", action="store_true", help="print the diff as JSON")
    d.set_defaults(run=cmd_diff)
    s = sub.add_parser("show", help="the code and graph of a saved program")
    s.add_argument("archive", metavar="ARCHIVE")
    s.set_defaults(run=cmd_show)
    for parser in (c, e, k, d, s):
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 contract does not hold / narrowed, 2 usage error).

    With ``--debug`` an error also prints its traceback; the status does not change.
    """
    parser = build_parser()
    try:
        opts = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
    debug = getattr(opts, "debug", False)
    # --debug only adds the traceback: the exit status is the same with and without it
    try:
        return opts.run(opts)
    except UsageError as err:
        if debug:
            traceback.print_exc(file=sys.stderr)
        _console(stderr=True).print(f"error: {err}", style="red", markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 - one clear line for CI logs; --debug for the traceback
        if debug:
            traceback.print_exc(file=sys.stderr)
        text = " ".join(str(err).split()) or type(err).__name__
        _console(stderr=True).print(f"error: {type(err).__name__}: {text}", style="red", markup=False)
        return EXIT_USAGE


def run() -> None:
    sys.exit(main())
