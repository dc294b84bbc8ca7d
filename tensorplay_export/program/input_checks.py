"""Runtime input checks: the dynamic-shape contract as assertion nodes in the graph.

Export ends by calling :func:`insert_input_checks`, which puts ``tpe.*`` check
nodes ahead of all compute, so the contract travels with the program (codegen,
save/load, decompositions, ``call_exported``).  The generated code reads::

    check_x = tpe_check_input(x, 'x', (None, None, 8), float32, '(batch, seq, 8)')
    batch = check_x.shape[0]
    seq = check_x.shape[1]
    del check_x
    check_y = tpe_check_input(y, 'y', (None, None, 8), float32, '(batch, seq, 8)')
    tpe_assert_range(batch, 1, None, 'x.shape[0]', 'batch')
    tpe_assert_range(seq, 1, 512, 'x.shape[1]', 'seq')
    tpe_assert_dim(check_y, 'y', 0, batch, 'x.shape[0]', 'dim batch')
    tpe_assert_dim(check_y, 'y', 1, seq, 'x.shape[1]', 'dim seq')
    del check_y
    add = numpy_add(x, y)

Each check is a call with plain int comparisons (well under 2% of a call).

Checks, in this order: per input, rank + static sizes + dtype
(``tpe.check_input``); roots bound only through a derived size ``k*r + c``
(``tpe.derived_root``: divisibility and range of ``r``); range of each
directly bound root (``tpe.assert_range``); every other dynamic axis equals
its expression (``tpe.assert_dim``: repeated symbols, derived relations);
extra guards (``tpe.assert_guard``).  Shape problems raise
:class:`~tensorplay_export.errors.ConstraintsExceededError`; a wrong dtype
raises :class:`InputDtypeError` (a ``TypeError``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..errors import ConstraintsExceededError
from ..graph.interpreter import Interpreter
from ..graph.ir import Graph, Node
from ..graph.printing import format_guard
from ..records import ValueRange, sympy
from solver.forms import affine as _affine

__all__ = ["InputSite", "IntSite", "InputContract", "insert_input_checks", "SizeProbe"]  # (one_root: for the contract reader)


@dataclass
class InputSite:
    """One array input as the contract sees it.

    ``path``: user-facing path (``"x"``, ``"extras['scale']"``); ``placeholder``:
    name of its placeholder node; ``shape``: ``tuple[int | sympy.Expr]`` over
    root symbols; ``dtype``: expected ``np.dtype`` (None: not checked).
    """

    path: str
    placeholder: str
    shape: tuple
    dtype: Optional[np.dtype] = None


@dataclass
class IntSite:
    """One dynamic int input (torch's SymInt input) as the contract sees it.

    ``path``: user-facing path (``"n"``); ``placeholder``: its placeholder's name;
    ``size``: an int, a root symbol or ``k*r + c`` over one root (``sympy.Expr``).
    """

    path: str
    placeholder: str
    size: Any


@dataclass
class InputContract:
    """What every call of the program must satisfy.

    ``ranges``: root symbol -> inclusive :class:`ValueRange`; ``guards``: extra
    sympy booleans over root symbols (accepted AUTO guards, divisibility,
    relations); ``names``: display names of symbols (default ``symbol.name``).
    """

    sites: list[InputSite]
    ranges: dict = field(default_factory=dict)
    guards: list = field(default_factory=list)
    names: dict = field(default_factory=dict)
    int_sites: list = field(default_factory=list)   # IntSite per dynamic int input


# -- inserting the checks ----------------------------------------------------------

def one_root(expr: Any) -> Optional[tuple]:
    """``k*r + c`` over one symbol with integers ``k != 0`` and ``c`` -> ``(r, k, c)`` (``32 - r`` too)."""
    aff = _affine(expr)
    if aff is not None:
        return aff
    neg = _affine(-expr) if isinstance(expr, sympy.Expr) else None
    return None if neg is None else (neg[0], -neg[1], -neg[2])


def _bound(value: Any) -> Optional[int]:
    return None if value is None or value == math.inf else int(value)


def insert_input_checks(graph: Graph, contract: InputContract) -> list[Node]:
    """Insert the contract's assertion nodes ahead of all compute in ``graph``.

    Args:
        graph: a captured graph whose placeholders include every
            ``site.placeholder``.  Binds of input symbols on those placeholders
            move to the check nodes (so a wrong rank fails cleanly before any
            ``x.shape[i]`` is read).
        contract: the sites, root ranges, extra guards and display names.

    Returns:
        The inserted nodes, in order.

    Raises:
        ValueError: a site names no placeholder, a dynamic size is not a root
            symbol or ``k*r + c`` expression over bound roots, or a guard uses
            a symbol no input binds.
    """
    names = dict(contract.names)
    by_name: dict[str, Node] = {}
    for n in graph.placeholders():
        by_name.setdefault(n.name, n)
        by_name.setdefault(n.target, n)
    first_compute = next((n for n in graph.nodes if n.op != "placeholder"), None)
    disp = (lambda s: names.get(s, s.name))
    bound_at: dict[sympy.Symbol, str] = {}       # symbol -> "x.shape[1]" text of its binding site
    inserted: list[Node] = []
    checks: list[tuple[InputSite, Node]] = []
    with graph.inserting_before(first_compute):
        # 1. rank, static sizes, dtype; bind bare root symbols at their first site.
        for site in contract.sites:
            ph = by_name.get(site.placeholder)
            if ph is None:
                raise ValueError(f"input site {site.path!r}: no placeholder named {site.placeholder!r}")
            shape = tuple(sympy.sympify(d) if isinstance(d, sympy.Basic) else d for d in site.shape)
            static = tuple(int(d) if not isinstance(d, sympy.Basic) or d.is_Integer else None for d in shape)
            text = "(" + ", ".join(format_guard(d, names) if isinstance(d, sympy.Basic) else str(d)
                                   for d in shape) + ("," if len(shape) == 1 else "") + ")"
            dtype = None if site.dtype is None else np.dtype(site.dtype)
            chk = graph.call_function("tpe.check_input", (ph, site.path, static, dtype, text),
                                      meta={"shape": shape, "dtype": dtype},
                                      name_hint=f"check_{ph.name}")
            moved = ph.meta.pop("bind", None) or {}
            bind = dict(moved)
            for axis, d in enumerate(shape):
                if isinstance(d, sympy.Symbol) and d not in bound_at and axis not in bind:
                    bind[axis] = d
            for axis, sym in bind.items():
                bound_at.setdefault(sym, f"{site.path}.shape[{axis}]")
            chk.meta["bind"] = bind
            inserted.append(chk)
            checks.append((site, chk))
        # 1b. dynamic int inputs that are a bare root: check the type, bind the root.
        int_left: list = []
        derived_done: set[sympy.Symbol] = set()
        for site in contract.int_sites:
            ph = by_name.get(site.placeholder)
            if ph is None:
                raise ValueError(f"int input {site.path!r}: no placeholder named {site.placeholder!r}")
            ph.meta.pop("bind", None)
            size = sympy.sympify(site.size)
            if isinstance(size, sympy.Symbol) and size not in bound_at:
                inserted.append(graph.call_function(
                    "tpe.check_int", (ph, site.path, 1, 0, None, None, disp(size), disp(size)),
                    meta={"shape": None, "bind": {None: size}}, name_hint=f"check_{ph.name}"))
                bound_at[size] = site.path
            else:
                int_left.append((site, ph, size))
        # 2. roots seen only through k*r + c: bind r = (size - c) // k with its checks.
        for site, chk in checks:
            for axis, d in enumerate(chk.meta["shape"]):
                if not isinstance(d, sympy.Basic) or d.is_Integer or isinstance(d, sympy.Symbol):
                    continue
                aff = one_root(d)
                if aff is None or aff[0] in bound_at:
                    continue
                r, k, c = aff
                vr = contract.ranges.get(r, ValueRange(0))
                node = graph.call_function(
                    "tpe.derived_root",
                    (chk, site.path, axis, k, c, int(vr.lower), _bound(vr.upper), format_guard(d, names), disp(r)),
                    meta={"shape": None, "bind": {None: r}}, name_hint=f"root_{disp(r).lstrip('_') or 'r'}")
                bound_at[r] = f"{site.path}.shape[{axis}]"
                derived_done.add(r)
                inserted.append(node)
        # 2b. int inputs k*r + c whose root no axis binds: bind r = (value - c) // k.
        for site, ph, size in list(int_left):
            aff = one_root(size) if not size.is_Integer and not isinstance(size, sympy.Symbol) else None
            if aff is None or aff[0] in bound_at:
                continue
            r, k, c = aff
            vr = contract.ranges.get(r, ValueRange(0))
            inserted.append(graph.call_function(
                "tpe.check_int", (ph, site.path, k, c, int(vr.lower), _bound(vr.upper), format_guard(size, names),
                                  disp(r)),
                meta={"shape": None, "bind": {None: r}}, name_hint=f"root_{disp(r).lstrip('_') or 'r'}"))
            bound_at[r] = site.path
            derived_done.add(r)
            int_left.remove((site, ph, size))
        # 3. ranges of directly bound roots.
        for sym, vr in contract.ranges.items():
            if sym not in bound_at or sym in derived_done:
                continue
            lo, hi = int(vr.lower), _bound(vr.upper)
            inserted.append(graph.call_function(
                "tpe.assert_range", (sym, lo, hi, bound_at[sym], disp(sym)), meta={"shape": None}))
        # 4. every other dynamic axis equals its expression.
        for site, chk in checks:
            for axis, d in enumerate(chk.meta["shape"]):
                if not isinstance(d, sympy.Basic) or d.is_Integer:
                    continue
                here = f"{site.path}.shape[{axis}]"
                missing = d.free_symbols - bound_at.keys()
                if missing:
                    raise ValueError(f"input site {here}: size {d} uses {sorted(map(str, missing))}, "
                                     "which no input axis binds (a size over several roots needs each root bound at an axis of its own)")
                if isinstance(d, sympy.Symbol):
                    if bound_at[d] == here:
                        continue
                    what, detail = bound_at[d], f"dim {disp(d)}"
                else:
                    aff = one_root(d)
                    if aff is not None and bound_at[aff[0]] == here:
                        continue
                    what = format_guard(d, names)
                    detail = ", ".join(f"{disp(s)} from {bound_at[s]}"
                                       for s in sorted(d.free_symbols, key=lambda s: s.name))
                inserted.append(graph.call_function(
                    "tpe.assert_dim", (chk, site.path, axis, d, what, detail), meta={"shape": None}))
        # 4b. every other int input equals its size over roots bound elsewhere (or its static value).
        for site, ph, size in int_left:
            missing = size.free_symbols - bound_at.keys()
            if missing:
                raise ValueError(f"int input {site.path}: size {size} uses {sorted(map(str, missing))}, "
                                 "which no input binds")
            if size.is_Integer:
                what, detail = "", "a guard of the model pinned its dim to the example's value"
            elif isinstance(size, sympy.Symbol):
                what, detail = bound_at[size], f"dim {disp(size)}"
            else:
                what = format_guard(size, names)
                detail = ", ".join(f"{disp(s)} from {bound_at[s]}" for s in sorted(size.free_symbols, key=lambda s: s.name))
            inserted.append(graph.call_function(
                "tpe.assert_int", (ph, site.path, int(size) if size.is_Integer else size, what, detail),
                meta={"shape": None}, name_hint=f"check_{ph.name}"))
        # 5. extra guards.
        order = list(bound_at)
        for guard in contract.guards:
            guard = sympy.sympify(guard)
            if guard is sympy.true:
                continue
            syms = sorted(guard.free_symbols, key=order.index if guard.free_symbols <= bound_at.keys()
                          else (lambda s: 0))
            missing = guard.free_symbols - bound_at.keys()
            if missing:
                raise ValueError(f"guard {guard} uses {sorted(map(str, missing))}, which no input axis binds")
            first = syms[0] if syms else None
            where = bound_at[first] if first is not None else "input"
            inserted.append(graph.call_function(
                "tpe.assert_guard",
                (guard, where, first if first is not None else 0, format_guard(guard, names),
                 tuple(disp(s) for s in syms), tuple(syms)),
                meta={"shape": None}))
    return inserted


# -- asking the checks about sizes ----------------------------------------------------

class SizeProbe:
    """Runs a program's input checks (only them) on inputs of chosen sizes.

    ``probe(sizes)`` builds, for every array input, a zero-strided array of the
    size its contract shape gives at ``sizes`` (``symbol name -> int``; symbols
    left out take their example size, else their range's lower bound) and runs
    the check nodes at the top of the graph through the one Interpreter.  It
    returns None when the checks admit the call, else the
    :class:`ConstraintsExceededError` they raised.  So what is admitted is what
    the program itself decides, not a reading of its records.

    Args:
        program: an ExportedProgram whose graph starts with the checks
            :func:`insert_input_checks` inserted.

    Raises (on construction):
        ValueError: the graph has no input checks.
    """

    def __init__(self, program: Any) -> None:
        from ..ops.registry import has_side_effect
        from ..pytree import tree_flatten
        from .signature import ConstantArgument, InputKind

        graph = program.graph
        specs = program.graph_signature.input_specs
        user = [s for s in specs if s.kind == InputKind.USER_INPUT]
        placeholders = graph.placeholders()
        by_name = {n.name: n for n in placeholders}
        self._user_nodes = [by_name[s.arg.name] for s in user if getattr(s.arg, "name", None) in by_name]
        self._constants = {by_name[s.arg.name]: s.arg.value for s in user
                           if isinstance(s.arg, ConstantArgument) and s.arg.name in by_name}
        # lifted state (parameters, buffers, constants) keeps its value in every run: a node at
        # the top of the graph may read one (tpe.item_size of a constant array binds a size)
        lifted = {**program.state_dict, **program.constants}
        self._state = {by_name[s.arg.name]: lifted[s.target] for s in specs
                       if s.kind != InputKind.USER_INPUT and s.target in lifted
                       and getattr(s.arg, "name", None) in by_name}
        checks: list[Node] = []
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op != "call_function" or not has_side_effect(node.target):
                break
            checks.append(node)
        if not checks:
            raise ValueError("the program has no input checks to ask (was it built by export?)")
        self._checks = checks
        self._shapes = {n.args[0]: (n.meta["shape"], n.meta.get("dtype")) for n in checks
                        if n.target == "tpe.check_input"}
        # "x.shape[1]" -> (placeholder, axis, contract size) of every dynamic input axis
        self.sites = {f"{n.args[1]}.shape[{axis}]": (n.args[0], axis, sympy.sympify(d))
                      for n in checks if n.target == "tpe.check_input"
                      for axis, d in enumerate(n.meta["shape"])
                      if isinstance(d, sympy.Basic) and not d.is_Integer}
        # dynamic int inputs: path -> (placeholder, size over the roots), from their checks
        self.int_sites: dict = {}
        for n in checks:
            if n.target == "tpe.check_int" and (n.meta.get("bind") or {}).get(None) is not None:
                self.int_sites[n.args[1]] = (n.args[0], n.args[2] * n.meta["bind"][None] + n.args[3])
            elif n.target == "tpe.assert_int":
                self.int_sites[n.args[1]] = (n.args[0], sympy.sympify(n.args[2]))
        self._int_nodes = {node: expr for node, expr in self.int_sites.values()}
        self.symbols = {str(s): s for s in program.range_constraints}
        self.ranges = dict(program.range_constraints)
        # example sizes of the symbols an input axis names directly
        self.hints: dict = {}
        ex = program.example_inputs
        if ex and "args" in ex:
            leaves, _ = tree_flatten((tuple(ex["args"]), dict(ex["kwargs"])))
            for node, leaf in zip(self._user_nodes, leaves):
                if isinstance(self._int_nodes.get(node), sympy.Symbol) and isinstance(leaf, (int, np.integer)):
                    self.hints.setdefault(self._int_nodes[node], int(leaf))
                    continue
                shape = self._shapes.get(node, (None,))[0]
                if shape is None or not hasattr(leaf, "shape") or len(leaf.shape) != len(shape):
                    continue
                for d, n in zip(shape, leaf.shape):
                    if isinstance(d, sympy.Symbol):
                        self.hints.setdefault(d, int(n))

    def __call__(self, sizes: dict) -> Optional[ConstraintsExceededError]:
        """``sizes``: symbol name (``"seq"``), input axis (``"x.shape[1]"``) or dynamic int
        input (``"n"``, its path) -> int.

        An input axis takes the size as given, so a size its contract cannot
        have (``x.shape[1] = 4*_h + 1``) reaches the checks as it would in a call.
        """
        from solver import evaluate

        values = {sym: int(vr.lower) for sym, vr in self.ranges.items()}
        values.update(self.hints)
        at_axis: dict = {}
        for name, size in sizes.items():
            if name in self.symbols:
                values[self.symbols[name]] = int(size)
            elif name in self.sites:
                node, axis, expr = self.sites[name]
                at_axis[(node, axis)] = int(size)
                root = one_root(expr)
                if root is not None and (int(size) - root[2]) % root[1] == 0:
                    values[root[0]] = (int(size) - root[2]) // root[1]  # the other axes over that root follow
            elif name in self.int_sites:
                node, expr = self.int_sites[name]
                at_axis[(node, None)] = int(size)
                root = one_root(expr) if not expr.is_Integer else None
                if root is not None and (int(size) - root[2]) % root[1] == 0:
                    values[root[0]] = (int(size) - root[2]) // root[1]
            else:
                raise KeyError(f"no size symbol or input axis {name!r} in the program; symbols: "
                               f"{sorted(self.symbols)}, axes: {sorted(self.sites)}")
        flat = []
        for node in self._user_nodes:
            if node in self._constants:
                flat.append(self._constants[node])
                continue
            if node in self._int_nodes:  # a dynamic int input: its size at these values
                flat.append(at_axis[(node, None)] if (node, None) in at_axis else
                            int(evaluate(self._int_nodes[node], values)))
                continue
            shape, dtype = self._shapes.get(node, ((), None))
            dims = [at_axis[(node, i)] if (node, i) in at_axis else
                    int(evaluate(sympy.sympify(d), values)) if isinstance(d, sympy.Basic) else int(d)
                    for i, d in enumerate(shape)]
            if any(d < 0 for d in dims):
                return ConstraintsExceededError(f"sizes {sizes} give the input {node.name} the shape {tuple(dims)}")
            flat.append(np.broadcast_to(np.zeros((), dtype or np.float32), tuple(dims)))
        try:
            Interpreter(self._checks[0].graph).run(*flat, initial_env=self._state,
                                                   nodes=[*self._user_nodes, *self._checks])
        except ConstraintsExceededError as err:
            return err
        except (ArithmeticError, ValueError, TypeError) as err:
            # a check with no value at these sizes (7 // (n // 3) at n = 2): the program raises there
            return ConstraintsExceededError(f"sizes {sizes}: the program's checks have no value there "
                                            f"({type(err).__name__}: {err})")
        return None
