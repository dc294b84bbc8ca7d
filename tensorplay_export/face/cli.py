"""``tensorplay-export``: shape-contract checks for CI.

Subcommands::

    tensorplay-export check TARGET [--format text|json|github]   draft_export; exit 0 contract holds, 1 not
    tensorplay-export export TARGET -o model.pt2                  export + save; exit 1 with the fixes
    tensorplay-export contract ARCHIVE [--format text|json]       the contract of a saved program (or JSON)
    tensorplay-export diff OLD NEW [--format text|json|github]    exit 1 when NEW admits fewer sizes than OLD
    tensorplay-export show ARCHIVE                                the program's code and graph
    tensorplay-export run ARCHIVE [--import MODULE]               run it on its sample inputs
    tensorplay-export compose A [B] [--map out0=x] [--steps N [--initial past=0]] [--format ...]
                                                                  exit 0 when A's outputs always fit B's inputs

``TARGET`` is ``path/to/file.py:function``; the function takes no arguments and
returns ``(model, args, dynamic_shapes)`` or ``(model, args, kwargs, dynamic_shapes)``.
``--json`` is an alias of ``--format json``.  ``--format github`` prints GitHub
Actions workflow commands (``::error file=F,line=L::message``, the message's
``%``, CR and LF escaped as ``%25``, ``%0D``, ``%0A`` and, in properties, ``:``
and ``,`` as ``%3A`` and ``%2C``, as the workflow-commands documentation
specifies), one per failure at the model's source line, then the plain fix block.

``contract``, ``diff`` and ``compose`` share one solver budget per command
(``--solver-budget SECONDS``, default 8, counted from the command's start): every
solver query has its own timeout, and the budget bounds them all together (a
contract of hundreds of hard guards asked each its full timeout).  What the budget leaves undecided is said, never
passed: ``diff`` lists it as ``[undecided]`` and exits 1, ``compose`` reports the
composition undecided (exit 1), ``contract`` shows expressions it had no time to
simplify as they are; each says how to raise the budget.  The budget bounds the solver;
the whole command, sympy's simplification included, stops at twice the budget plus 5 s
(a hostile archive's ``Max`` of hundreds of terms spent minutes in sympy): ``diff`` and
``compose`` then exit 1 (not a pass), ``contract`` exits 2, each saying so.

``contract``, ``show``, ``diff`` and ``compose`` read archives as data: a program
whose inputs or outputs are registered dataclasses opens without the class
(its name is kept).  ``run`` builds instances, so it needs the class:
``--import MODULE`` (a module name or a ``.py`` file, repeatable) imports what
registers it first.  A class of a script saved by ``python train.py`` is stored as
``train.Batch`` (the name ``import train`` gives), so ``--import train.py`` finds it.

``diff`` exits 1 when NEW refuses a size OLD admits (it prints a witness, and
a ``Suggested fixes:`` block of range fixes for NEW's ``dynamic_shapes`` that
``refine_dynamic_shapes_from_suggested_fixes`` reads, when widening NEW's ranges
restores OLD's sizes), when the solver cannot decide, or when what the program
returns changed (an output's dtype, rank or a size, an output or a ``None``
added or dropped, a tuple that became a list).  Two archives holding several
programs (``package_pt2``) are diffed program by program, by name, unless
``--model`` picks one; a program NEW lacks breaks, one NEW adds does not.

Exit status 2 means a usage error (bad arguments, missing file, bad target, a
target function that raises, a target whose ``dynamic_shapes`` does not fit its
own inputs (an argument or an axis the model lacks, a malformed entry), an output
path that cannot be written, an archive or contract that cannot be read: the
message names the file and, for ``diff`` and ``compose``, its side).  Errors print one line (``error: ...``); with
``--format json`` stdout also gets ``{"error": ..., "exit_status": 2}``;
``--debug`` prints the traceback before it and keeps the same exit status.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import signal
import sys
import threading
import traceback
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

__all__ = ["main", "load_target", "UsageError"]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input: exit status 2."""


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    # soft_wrap: never insert line breaks (fix lines must stay one per line for refine)
    console = Console(stderr=stderr, soft_wrap=True, highlight=False)

    def closed() -> None:  # rich's own handler exits with 1, this CLI's "contract does not hold"
        raise BrokenPipeError

    console.on_broken_pipe = closed
    return console


def load_target(target: str) -> tuple[Any, tuple, dict, Any]:
    """Import ``file.py:function`` and call it -> ``(model, args, kwargs, dynamic_shapes)``.

    Raises:
        UsageError: malformed target, missing file or function, wrong return value.
    """
    path, sep, func = target.rpartition(":")
    if not sep or not path or not func.isidentifier():
        raise UsageError(f"TARGET must be path/to/file.py:function, got {target!r}")
    _file(path)
    module = import_file(path, what=target)
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
    _check_spec_fits(func, model, tuple(args), dict(kwargs), dynamic_shapes)
    return model, tuple(args), dict(kwargs), dynamic_shapes


def _check_spec_fits(func: str, model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any) -> None:
    """The target's ``dynamic_shapes`` must fit its own inputs (argument names, nesting, axes,
    ranks, the kinds of spec entries), or the target is wrong: a usage error, as a target
    returning the wrong tuple is, never exit 1, which says the model's contract broke.

    Checked by the spec normalization capture runs first (no tracing); example sizes outside
    a declared range are not checked here: that is a contract failure with a fix, for
    ``check`` and ``export`` to report.

    Raises:
        UsageError: the spec names an argument the model lacks, an axis the input lacks, ...
    """
    from ..specs.normalize import normalize_dynamic_shapes

    try:
        normalize_dynamic_shapes(model, args, kwargs, dynamic_shapes)
    except (TypeError, ValueError) as err:  # the documented errors of a spec that does not fit
        raise UsageError(f"{func}(): dynamic_shapes does not fit the inputs: {err}") from err


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def _file(path: str) -> str:
    """``path`` when it names a file; a directory or a missing path is a usage error saying which."""
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory: give the path of a file")
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


# -- GitHub Actions workflow commands ------------------------------------------------------------
def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def gh_annotation(level: str, message: str, *, file: Optional[str] = None, line: Optional[int] = None,
                  title: Optional[str] = None) -> str:
    """One workflow command: ``::error file=F,line=L,title=T::message`` (escaped as GitHub specifies).

    ``file`` is made relative to the working directory when it lies below it
    (the checkout root in a CI job), so the annotation lands on the diff.
    """
    props = []
    if file:
        rel = os.path.relpath(file)
        props.append(f"file={_gh_prop(file if rel.startswith('..') else rel)}")
        if line:
            props.append(f"line={int(line)}")
    if title:
        props.append(f"title={_gh_prop(title)}")
    return f"::{level}{' ' + ','.join(props) if props else ''}::{_gh_data(message)}"


def _model_location(model: Any) -> tuple[Optional[str], Optional[int]]:
    """``(file, line)`` of the model's definition (its ``forward`` for a module), or ``(None, None)``."""
    import inspect

    fn = getattr(type(model), "forward", None) if not inspect.isroutine(model) else model
    try:
        return inspect.getsourcefile(fn), inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return None, None


def _print_plain(lines: Sequence[str]) -> None:
    for ln in lines:
        sys.stdout.write(ln + "\n")


def import_file(path: str, what: str) -> Any:
    """Import the Python file ``path`` as the module its file name names (``models.py`` -> ``models``).

    The same name as ``import models`` from the file's folder gives, so classes
    stored in an archive (a dataclass input's type) read ``models.Batch`` whether
    the program was exported through the CLI or from Python, the archive's bytes
    do not depend on the process, and ``--import models.py`` or
    ``--import models`` finds them again.  When that name is taken by another
    module, the name is ``_tpe_file_<digest of the path>`` (still stable).

    Raises:
        UsageError: not a Python file, or importing it raised (naming ``what``).
    """
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    known = sys.modules.get(stem)
    if known is not None and os.path.abspath(getattr(known, "__file__", "") or "") == path:
        return known
    name = stem if stem.isidentifier() and known is None else \
        "_tpe_file_" + hashlib.sha1(path.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{what}: cannot import {path} (not a Python file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # noqa: BLE001 - the user's module raised: a usage error naming it
        del sys.modules[name]
        raise UsageError(f"{what} raised {type(err).__name__}: {err}") from err
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


# -- archives and imports ------------------------------------------------------------------------
def import_modules(names: Sequence[str]) -> None:
    """Import each ``--import`` value: a ``.py`` file path or a module name (the working directory on sys.path).

    A script's classes register under the name importing it gives (``train.Batch``,
    also when the script ran as ``python train.py``: :func:`..pytree.default_type_name`);
    an archive naming them ``__main__.Batch`` (saved before that rule) loads too.

    Raises:
        UsageError: the file or module does not exist, or importing it raised (named).
    """
    from .. import pytree

    for name in names or ():
        if name.endswith(".py") or os.sep in name:
            if not os.path.isfile(name):
                raise UsageError(f"--import {name}: no such file")
            pytree.accept_main_names(import_file(name, what=f"--import {name}").__name__)
            continue
        sys.path.insert(0, os.getcwd())
        try:
            pytree.accept_main_names(importlib.import_module(name).__name__)
        except ModuleNotFoundError as err:
            raise UsageError(f"--import {name}: no module named {err.name!r}") from err
        except Exception as err:  # noqa: BLE001
            raise UsageError(f"--import {name} raised {type(err).__name__}: {err}") from err
        finally:
            sys.path.remove(os.getcwd())


def read_program(path: str, model: Optional[str] = None) -> Any:
    """Load an archive as data: registered dataclasses resolve, unregistered ones keep their names.

    The program's contract, code and graph are all there; calling it with a
    dataclass input needs the class registered (``--import``).  ``model``: the
    program of that name in a multi-model archive (``--model``).
    """
    from .. import pytree

    with pytree.unregistered_dataclasses_as_names():
        return load_program(path, model)


def load_program(path: str, model: Optional[str] = None) -> Any:
    """The archive's program (``model``: which one of several); a multi-model archive without
    ``--model`` is a usage error listing its programs."""
    from ..errors import ArchiveError
    from ..serde import load
    from .contract import program_named

    if model is not None:
        try:
            return program_named(_file(path), model)
        except KeyError as err:
            raise UsageError(f"{err.args[0]}; pass --model with one of them") from None
    try:
        return load(_file(path))
    except ArchiveError:
        _refuse_several_programs(path)
        raise


def _refuse_several_programs(path: str) -> None:
    """After a load without ``--model`` failed: a usage error naming the programs when the
    archive holds several (``package_pt2``); nothing otherwise (the load's own error stands)."""
    from ..errors import ArchiveError
    from ..serde import load_pt2

    try:
        names = sorted(load_pt2(_file(path)).exported_programs)
    except (ArchiveError, OSError, ValueError):
        return
    if len(names) > 1:
        raise UsageError(f"{path} holds {len(names)} programs {names}: pass --model NAME") from None


@contextmanager
def _reading(path: str, role: str = "") -> Iterator[None]:
    """An archive or contract that cannot be read is a usage error naming the file (and which
    side of a diff it is): exit 2, never 1, which says a contract broke."""
    from ..errors import ArchiveError

    try:
        yield
    except ArchiveError as err:
        raise UsageError(f"cannot read {role + ' ' if role else ''}{path}: {err}") from err
    except ValueError as err:  # a file that is no contract: the message names it already
        raise UsageError(f"{role + ': ' if role else ''}{err}") from err


def read_contract(path: str, model: Optional[str] = None, role: str = "") -> Any:
    from ..errors import ArchiveError
    from .contract import load_contract

    with _reading(path, role):
        try:
            return load_contract(_file(path), model)
        except KeyError as err:
            raise UsageError(f"{err.args[0]}; pass --model with one of them") from None
        except ArchiveError:
            if model is None:
                _refuse_several_programs(path)
            raise


# -- subcommands -------------------------------------------------------------------------------------
def _failure_record(f: Any) -> dict:
    """A failure for ``--format json``: the draft's fields plus its guard, counterexample and fixes."""
    from .report import shown_fix

    data = dict(f.to_dict(), fix=shown_fix(f))
    v, g = f.violation, f.guard
    from ..graph.printing import format_guard

    data["guard"] = v.guard_text if v is not None else (format_guard(g.expr) if g is not None else None)
    data["guard_kind"] = g.kind if g is not None else None
    data["cause"] = g.cause if g is not None else None
    data["counterexample"] = dict(v.counterexample) if v is not None and v.counterexample else None
    data["fixes"] = list(v.fix_lines) if v is not None else (shown_fix(f) or "").splitlines()
    data["unfixable"] = v.unfixable if v is not None else None
    data["undecided"] = v.undecided if v is not None else None
    return data


def cmd_check(opts: argparse.Namespace) -> int:
    from .contract import contract_of
    from .draft import draft_export
    from .failures import KINDS

    import_modules(opts.imports)
    model, args, kwargs, spec = load_target(opts.target)
    report = draft_export(model, *args, dynamic_shapes=spec, **kwargs)
    ok = report.successful()
    status = EXIT_OK if ok else EXIT_FAIL
    if opts.format == "json":
        data = report.to_dict()
        data["failures"] = [_failure_record(f) for f in report.failures]
        data["kinds"] = sorted({f.kind for f in report.failures})
        data["exit_status"] = status
        data["contract"] = contract_of(report.exported_program).to_json() if report.exported_program else None
        _emit_json(data)
        return status
    if opts.format == "github":
        from .report import shown_fix, status_line

        lines = []
        fallback = _model_location(model)  # a failure with no line of its own (an example outside its range)
        for f in report.failures:
            fix = shown_fix(f)
            msg = f.message.rstrip() + (f"\nfix: {'; '.join(fix.splitlines())}" if fix else "")
            file, line = (f.source.filename, f.source.lineno) if f.source else fallback
            lines.append(gh_annotation("error", msg, file=file, line=line, title=KINDS.get(f.kind, f.kind)))
        lines.append(status_line(report))
        if report.fixes:
            from ..errors import FIXES_HEADER

            lines += ["", FIXES_HEADER] + [f"  {ln}" for ln in report.fixes]
        elif ok:
            lines.append("contract holds")
        _print_plain(lines)
        return status
    con = _print_headed(str(report), ok)
    if ok:
        con.print("contract holds", style="green", markup=False)
    return status


def cmd_export(opts: argparse.Namespace) -> int:
    from ..export import export
    from ..serde import save

    _writable_output(opts.output)  # before the (slow) export: a bad path is a usage error
    import_modules(opts.imports)
    model, args, kwargs, spec = load_target(opts.target)
    try:
        ep = export(model, *args, dynamic_shapes=spec, **kwargs)
    except Exception as err:  # noqa: BLE001 - the model, its spec or its contract failed: 1, as `check` says
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
    import_modules(opts.imports)
    c = read_contract(opts.archive, opts.model)  # several programs and no --model: a usage error naming them
    if opts.format == "json":
        _emit_json(c.to_json())
    else:
        _console().print(c.describe(), markup=False)
    if opts.budget.spent:  # the contract is right, only not in its simplest form
        _console(stderr=True).print(f"note: the solver budget of {opts.solver_budget:g} s ran out: some "
                                    f"expressions are shown unsimplified; raise it, e.g. --solver-budget "
                                    f"{4 * opts.solver_budget:g}", markup=False)
    return EXIT_OK


def _all_contracts(path: str, role: str) -> Optional[dict]:
    """``{name: Contract}`` of every program of an archive, None for a JSON contract."""
    from .contract import load_contracts

    with _reading(path, role):
        return load_contracts(_file(path))


def cmd_diff(opts: argparse.Namespace) -> int:
    """Diff two contracts; two archives holding several programs (``package_pt2``) without
    ``--model`` are diffed program by program, by name (a program NEW lacks breaks)."""
    from .contract import diff_contracts, diff_packages

    import_modules(opts.imports)
    if opts.model is not None:
        old, new = read_contract(opts.old, opts.model, "OLD"), read_contract(opts.new, opts.model, "NEW")
    else:
        olds, news = _all_contracts(opts.old, "OLD"), _all_contracts(opts.new, "NEW")
        several = [(role, path, sorted(c)) for role, path, c in (("OLD", opts.old, olds), ("NEW", opts.new, news))
                   if c is not None and len(c) > 1]
        if several and (olds is None or news is None):
            role, path, names = several[0]
            raise UsageError(f"{role} {path} holds {len(names)} programs {names} and the other is one JSON "
                             "contract: pass --model NAME")
        if several:
            return _report_package_diff(opts, diff_packages(olds, news))
        old = next(iter(olds.values())) if olds else read_contract(opts.old, None, "OLD")
        new = next(iter(news.values())) if news else read_contract(opts.new, None, "NEW")
    d = diff_contracts(old, new)
    status = EXIT_FAIL if d.breaking else EXIT_OK
    hint = _budget_hint(opts, len(d.undecided))
    if opts.format == "json":
        _emit_json(dict(d.to_json(), exit_status=status, solver_budget=opts.solver_budget))
    elif opts.format == "github":
        text = str(d) + (f"\n{hint}" if hint else "")
        head, _, rest = text.partition("\n")
        lines = [gh_annotation("error", text, file=opts.new, title=head)] if d.breaking else []
        _print_plain(lines + [head] + ([rest] if rest else []))
    else:
        con = _print_headed(str(d), not d.breaking)
        if hint:
            con.print(hint, style="bold red", markup=False)
    return status


def _budget_hint(opts: argparse.Namespace, undecided: int) -> Optional[str]:
    """What to do when the solver budget left ``undecided`` questions (None when it left none)."""
    if not undecided:
        return None
    return (f"the solver budget of {opts.solver_budget:g} s ran out with {undecided} question(s) undecided "
            f"(listed above); this is not a pass: raise the budget, e.g. --solver-budget {4 * opts.solver_budget:g}")


def _report_package_diff(opts: argparse.Namespace, d: Any) -> int:
    status = EXIT_FAIL if d.breaking else EXIT_OK
    hint = _budget_hint(opts, sum(len(pd.undecided) for pd in d.programs.values()))
    if opts.format == "json":
        _emit_json(dict(d.to_json(), exit_status=status, solver_budget=opts.solver_budget))
    elif opts.format == "github":
        lines = [gh_annotation("error", f"program {n!r} removed", file=opts.new, title="program removed")
                 for n in d.removed]
        lines += [gh_annotation("error", str(pd), file=opts.new,
                                title=f"program {n!r}: {str(pd).splitlines()[0]}")
                  for n, pd in sorted(d.programs.items()) if pd.breaking]
        _print_plain(lines + [str(d)] + ([hint] if hint else []))
    else:
        con = _print_headed(str(d), not d.breaking)
        if hint:
            con.print(hint, style="bold red", markup=False)
    return status


def cmd_show(opts: argparse.Namespace) -> int:
    import_modules(opts.imports)
    with _reading(opts.archive):
        ep = read_program(opts.archive, opts.model)
    con = _console()
    con.print("Code:", style="bold", markup=False)
    con.print(ep.code.rstrip(), markup=False)
    con.print("")
    con.print("Graph:", style="bold", markup=False)
    con.print(str(ep.graph).rstrip(), markup=False)
    return EXIT_OK


def cmd_run(opts: argparse.Namespace) -> int:
    """Run the program on its stored sample inputs (the class of a dataclass input must be registered)."""
    from ..errors import ArchiveError, ConstraintsExceededError
    from ..pytree import tree_leaves_with_path

    import_modules(opts.imports)
    try:
        ep = load_program(opts.archive, opts.model)
    except ArchiveError as err:
        with _reading(opts.archive):
            try:
                read_program(opts.archive, opts.model)  # loads when class names may stay names: a class is missing
            except ArchiveError:
                raise err from None
        raise UsageError(f"{err}; pass --import MODULE naming the module that registers it") from err
    samples = ep.example_inputs
    if samples is None:
        raise UsageError(f"{opts.archive} stores no sample inputs to run on")
    try:
        out = ep.module()(*samples["args"], **samples["kwargs"])
    except ConstraintsExceededError as err:
        _print_headed(f"the program refused its own sample inputs\n{err}", False)
        return EXIT_FAIL
    con = _console()
    con.print(f"ran {opts.archive} on its sample inputs", style="green", markup=False)
    for path, leaf in tree_leaves_with_path(out, "out"):
        shape = getattr(leaf, "shape", None)
        con.print(f"  {path}: {tuple(shape) if shape is not None else type(leaf).__name__}"
                  f" {getattr(leaf, 'dtype', '')}".rstrip(), markup=False)
    return EXIT_OK


def _parse_map(items: Sequence[str]) -> Optional[dict]:
    """``["out0=x", "out1=mask"]`` -> ``{"out0": "x", "out1": "mask"}`` (None when empty)."""
    if not items:
        return None
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise UsageError(f"--map takes OUTPUT=INPUT (e.g. out0=x), got {item!r}")
        if key in out:
            raise UsageError(f"--map names output {key!r} twice")
        out[key] = value
    return out


def _parse_initial(items: Sequence[str]) -> Optional[dict]:
    """``["past=0", "b=1:8"]`` -> ``{"past": 0, "b": (1, 8)}`` (None when empty)."""
    if not items:
        return None
    out: dict = {}
    for item in items:
        name, sep, value = item.partition("=")
        lo, colon, hi = value.partition(":")
        try:
            out[name] = (int(lo), int(hi)) if colon else int(lo)
        except ValueError:
            raise UsageError(f"--initial takes DIM=N or DIM=LOW:HIGH (e.g. past=0), got {item!r}") from None
        if not sep or not name:
            raise UsageError(f"--initial takes DIM=N or DIM=LOW:HIGH (e.g. past=0), got {item!r}")
    return out


def cmd_compose(opts: argparse.Namespace) -> int:
    from ..errors import ConstraintViolationError
    from ..program.compose import CompositionError, compose

    import_modules(opts.imports)
    with _reading(opts.producer, "PRODUCER"):
        producer = read_program(opts.producer)
    same = opts.consumer is None or os.path.samefile(opts.producer, _file(opts.consumer))
    with _reading(opts.consumer or "", "CONSUMER"):
        consumer = producer if same else read_program(opts.consumer)
    if opts.consumer is None and opts.steps is None:
        raise UsageError("compose needs a CONSUMER archive, or --steps N to compose PRODUCER with itself")
    if opts.steps is not None and opts.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {opts.steps}")
    mapping = _parse_map(opts.map)
    initial = _parse_initial(opts.initial)
    if initial is not None and opts.steps is None:
        raise UsageError("--initial is for loops: pass --steps N as well")
    from ..pytree import unregistered_dataclasses_as_names

    try:
        kwargs = {} if opts.steps is None else {"steps": opts.steps, "initial": initial}
        with unregistered_dataclasses_as_names():  # compose reads sizes (and example sizes), never runs
            result = compose(producer, consumer, mapping, **kwargs)
    except CompositionError as err:  # the pair cannot be wired as asked: a usage error
        raise UsageError(str(err)) from err
    except ConstraintViolationError as err:
        return _report_refuted(opts, err)
    return _report_composed(opts, result)


def _report_refuted(opts: argparse.Namespace, err: Any) -> int:
    witness = getattr(err, "witness", None)
    if opts.format == "json":
        initial = getattr(err, "initial", None)
        _emit_json({"verdict": "refuted", "exit_status": EXIT_FAIL, "message": str(err),
                    "witness": None if witness is None else witness.to_json(),
                    "fixes": list(getattr(err, "fixes", []) or []),
                    "step": getattr(err, "step", None),
                    "initial": None if initial is None else {k: list(v) for k, v in initial.items()},
                    "mismatches": [vars(m) for m in getattr(err, "mismatches", [])],
                    "violations": [{"guard": v.guard_text, "rule": v.reason, "counterexample": v.counterexample,
                                    "fixes": list(v.fix_lines), "unfixable": v.unfixable,
                                    "source": None if v.source is None else
                                    {"file": v.source.filename, "line": v.source.lineno}}
                                   for v in err.violations]})
        return EXIT_FAIL
    if opts.format == "github":
        lines = []
        for v in getattr(err, "violations", []) or []:
            src = v.guard.source
            lines.append(gh_annotation("error", "\n".join(_violation_text(v)),
                                       file=src.filename if src else None,
                                       line=src.lineno if src else None, title="programs do not compose"))
        _print_plain(lines + [str(err)])
        return EXIT_FAIL
    _print_headed("the programs do not compose\n" + str(err), False)
    return EXIT_FAIL


def _violation_text(v: Any) -> list:
    from ..errors import violation_lines

    return violation_lines(v)


def _report_composed(opts: argparse.Namespace, result: Any) -> int:
    ok = result.verdict == "proved"
    status = EXIT_OK if ok else EXIT_FAIL
    refused = opts.budget.refused if not ok else 0  # queries the spent budget answered "unknown"
    hint = None if not refused else (
        f"the solver budget of {opts.solver_budget:g} s ran out ({refused} solver question(s) not asked); "
        f"raise it, e.g. --solver-budget {4 * opts.solver_budget:g}")
    if opts.format == "json":
        _emit_json(dict(result.to_json(), exit_status=status, solver_budget=opts.solver_budget,
                        solver_budget_ran_out=bool(refused)))
    elif opts.format == "github":
        text = result.describe() + (f"\n{hint}" if hint else "")
        lines = [] if ok else [gh_annotation("warning", text, title="composition undecided")]
        _print_plain(lines + [text])
    else:
        con = _print_headed(result.describe(), ok)
        if hint:
            con.print(hint, style="bold red", markup=False)
    return status


def _add_format(parser: argparse.ArgumentParser, choices: Sequence[str]) -> None:
    parser.add_argument("--format", choices=list(choices), default="text",
                        help="output format (default text)")
    parser.add_argument("--json", dest="format", action="store_const", const="json",
                        help="alias of --format json")


def _add_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="import MODULE (a module name or a .py file) first, e.g. to register dataclasses;"
                             " repeatable")


DEFAULT_SOLVER_BUDGET = 8.0  # seconds, reading the archives included: a real model's diff takes well under one


def _seconds(text: str) -> float:
    """``--solver-budget``'s value: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"a positive number of seconds expected, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensorplay-export",
                                description="Shape-contract checks for numpy models exported with tensorplay_export.")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser("check", help="draft_export TARGET; exit 0 when the contract holds, 1 when not")
    c.add_argument("target", metavar="TARGET", help="path/to/file.py:function")
    _add_format(c, ("text", "json", "github"))
    c.set_defaults(run=cmd_check)
    e = sub.add_parser("export", help="export TARGET and save the program")
    e.add_argument("target", metavar="TARGET", help="path/to/file.py:function")
    e.add_argument("-o", "--output", required=True, help="archive to write (e.g. model.pt2)")
    e.set_defaults(run=cmd_export)
    k = sub.add_parser("contract", help="the shape contract of a saved program")
    k.add_argument("archive", metavar="ARCHIVE", help="program archive or JSON contract")
    _add_format(k, ("text", "json"))
    k.set_defaults(run=cmd_contract)
    d = sub.add_parser("diff", help="exit 1 when NEW admits fewer sizes than OLD or returns something else")
    d.add_argument("old", metavar="OLD", help="archive or JSON contract")
    d.add_argument("new", metavar="NEW", help="archive or JSON contract")
    _add_format(d, ("text", "json", "github"))
    d.set_defaults(run=cmd_diff)
    s = sub.add_parser("show", help="the code and graph of a saved program")
    s.add_argument("archive", metavar="ARCHIVE")
    s.set_defaults(run=cmd_show)
    r = sub.add_parser("run", help="run a saved program on its sample inputs (--import registers dataclasses)")
    r.add_argument("archive", metavar="ARCHIVE")
    r.set_defaults(run=cmd_run)
    m = sub.add_parser("compose", help="exit 0 when PRODUCER's outputs always fit CONSUMER's inputs")
    m.add_argument("producer", metavar="PRODUCER", help="program archive whose outputs feed CONSUMER")
    m.add_argument("consumer", metavar="CONSUMER", nargs="?", default=None,
                   help="program archive (default with --steps: PRODUCER itself)")
    m.add_argument("--map", action="append", default=[], metavar="OUT=IN",
                   help="bind output OUT (out0, out1, ...) to input IN; repeatable (default: by position)")
    m.add_argument("--steps", type=int, default=None, metavar="N",
                   help="a loop: N calls, each fed the outputs of the one before")
    m.add_argument("--initial", action="append", default=[], metavar="DIM=N|DIM=LOW:HIGH",
                   help="a loop's first call: narrow a dim (e.g. past=0); repeatable")
    _add_format(m, ("text", "json", "github"))
    m.set_defaults(run=cmd_compose)
    for parser in (k, d, m):
        parser.add_argument("--solver-budget", type=_seconds, default=DEFAULT_SOLVER_BUDGET, metavar="SECONDS",
                            help="solver time for the whole command, over all its questions; what is left "
                                 f"undecided is reported, never passed (default {DEFAULT_SOLVER_BUDGET:g})")
    for parser in (k, d, s, r):
        parser.add_argument("--model", metavar="NAME", default=None,
                            help="the program of that name in an archive holding several (package_pt2)")
    for parser in (c, e, k, d, s, r, m):
        _add_import(parser)
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    return p


EXIT_PIPE_CLOSED = 141  # stdout's reader closed the pipe (128 + SIGPIPE, as shells report it)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 contract does not hold / narrowed, 2 usage
    error, 141 the reader of stdout closed the pipe).

    With ``--debug`` an error also prints its traceback; the status does not change.
    """
    parser = build_parser()
    if os.path.basename(sys.argv[0]) == "tensorplay-export" and os.path.isfile(sys.argv[0]):
        # The console script is not the user's code: a diagnostic raised with no model frame
        # on the stack (an example outside its range) must not point at it.
        from ..capture.frames import mark_library_file

        mark_library_file(sys.argv[0])
    try:
        opts = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
    debug = getattr(opts, "debug", False)
    # --debug only adds the traceback: the exit status is the same with and without it
    try:
        with _budget(opts):
            status = opts.run(opts)
        sys.stdout.flush()  # a closed pipe fails here, inside the handler below, not at exit
        return status
    except CommandDeadline as err:
        text = (f"{opts.command} stopped after {err.seconds:g} s (twice the solver budget plus 5 s): the archives' "
                f"size expressions cost more to reason about than the budget allows; this is not a pass: raise "
                f"the budget, e.g. --solver-budget {4 * opts.solver_budget:g}")
        return _fail(opts, debug, text, EXIT_USAGE if opts.command == "contract" else EXIT_FAIL)
    except BrokenPipeError:
        # the reader went away (`... | head -1`): no verdict was lost, only text; say so the way
        # a shell reports a writer stopped by SIGPIPE (128 + 13), never as "contract broken"
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except UsageError as err:
        return _fail(opts, debug, str(err))
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 - one clear line for CI logs; --debug for the traceback
        text = " ".join(str(err).split()) or type(err).__name__
        return _fail(opts, debug, f"{type(err).__name__}: {text}")


@contextmanager
def _budget(opts: argparse.Namespace) -> Iterator[None]:
    """The command's solver budget (``opts.budget``), from its start: reading an archive
    simplifies its guards, which on hostile input takes as long as deciding them."""
    seconds = getattr(opts, "solver_budget", None)
    if seconds is None:
        yield
        return
    from solver import solver_budget

    with solver_budget(seconds) as opts.budget, _deadline(2 * seconds + 5):
        yield


class CommandDeadline(BaseException):
    """The command ran past :func:`_deadline`'s limit (raised by its alarm; a BaseException, as
    KeyboardInterrupt is, so no ``except Exception`` on the way turns it into a verdict)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"stopped after {seconds:g} s")
        self.seconds = seconds


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`CommandDeadline` in the command once ``seconds`` of wall time have passed.

    The solver budget bounds z3; what runs between its queries (sympy building and simplifying
    an archive's expressions) has no budget of its own, so the whole command gets this one.
    An interval timer's SIGALRM interrupts Python between bytecodes; where there is none (not
    the main thread, no ``setitimer``) nothing is installed.
    """
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise CommandDeadline(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _fail(opts: argparse.Namespace, debug: bool, message: str, status: int = EXIT_USAGE) -> int:
    """Exit status ``status`` (2) with ``error: message`` on stderr (after the traceback with
    ``--debug``); with ``--format json`` stdout also gets ``{"error": message, "exit_status": status}``,
    so a CI step that parses stdout reads a document, not nothing."""
    if debug:
        traceback.print_exc(file=sys.stderr)
    if getattr(opts, "format", None) == "json":
        _emit_json({"error": message, "exit_status": status})
    _console(stderr=True).print(f"error: {message}", style="red", markup=False)
    return status


def run() -> None:
    sys.exit(main())
