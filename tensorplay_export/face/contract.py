"""The shape contract of a program: what it admits, as data; and how two contracts differ.

A :class:`Contract` is read from a program's runtime-check nodes (so it works
the same for a fresh ``ExportedProgram`` and one loaded from an archive):

- ``inputs``: per array input its path, dtype and symbolic shape (``(batch, seq, 8)``);
- ``int_inputs``: per dynamic int input (torch's SymInt input) its path and size (``n``, ``n + 1``);
- ``dims``: each root size symbol's inclusive range;
- ``equalities``: input axes that share one dim (``x.shape[0] == y.shape[0]``);
- ``relations``: axes that are ``k*d + c`` of another axis's dim, and guards tying dims;
- ``divisibility``: axes that must be multiples (``n % 4 == 0``);
- ``outputs``: each output's symbolic shape and dtype; a size output (``return y,
  x.shape[0] * 2 + 1``) has no shape, its kind (``int``/``float``/``bool``) as dtype
  and its expression in ``output_values``.

JSON form (``Contract.to_json``): the texts above plus operator trees
(:mod:`tensorplay_export.serde.exprs`) for every expression, so reading a JSON
contract never parses or evaluates text.

:func:`diff_contracts` decides whether NEW admits fewer input sizes than OLD
with the solver, not by comparing text: over one integer variable per input
axis, NEW refuses a size OLD admits iff ``OLD and not NEW`` is satisfiable, and
then the witness (a concrete input size assignment) is reported.  The listed
changes (narrowed max, new equality, new divisibility...) explain the verdict.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

import sympy

from solver import active_budget, canonicalize
from solver.normalize import flatten_floors

from ..capture.exclusive import exclusive
from ..errors import FIXES_HEADER
from ..graph.printing import format_guard
from ..program.input_checks import one_root as _affine  # k*r + c over one root, any k != 0 (32 - r)
from ..program.build import fold_simple_bounds
from ..records import format_bound, format_range_brackets
from ..specs.dims import spec_dim_names
from ..specs.refine import dynamic_hint_names

__all__ = ["Contract", "ContractDiff", "PackageDiff", "Change", "contract_of", "diff_contracts", "diff_packages",
           "load_contract", "load_contracts", "CONTRACT_FORMAT", "CONTRACT_VERSION"]

CONTRACT_FORMAT = "tensorplay_export.contract"
CONTRACT_VERSION = 1  # 1 (2026-11-29): first version


def _text(expr: Any) -> str:
    if isinstance(expr, int):
        return str(expr)
    if isinstance(expr, sympy.Basic) and expr.is_Integer:
        return str(int(expr))
    return format_guard(expr)


def _divisor(guard: Any) -> Optional[tuple[Any, int]]:
    """``Eq(Mod(e, k), 0)`` -> ``(e, k)``."""
    if isinstance(guard, sympy.Eq):
        for a, b in ((guard.lhs, guard.rhs), (guard.rhs, guard.lhs)):
            if isinstance(a, sympy.Mod) and b == 0 and a.args[1].is_Integer:
                return a.args[0], int(a.args[1])
    return None


@dataclass
class Contract:
    """One program's shape contract (see the module docstring).

    Bounds on a single root among ``guards`` (``s0 <= 512``, accepted on a
    ``Dim.AUTO`` size) are folded into ``ranges`` when the contract is built; then every
    shape, guard and size is simplified under those ranges (``solver.canonicalize``, sound
    for every assignment inside them): a slice ``x[:512]`` of an axis already at most 512
    is ``seq``, not ``Min(512, seq)``, and a guard the ranges decide is dropped.

    Attributes:
        inputs: ``[(path, dtype str, shape tuple of int | sympy.Expr)]``, array inputs in order.
        ranges: root symbol -> ``(lower, upper | None)``.
        guards: sympy booleans over root symbols (extra checks the program runs).
        outputs: ``[(shape tuple | None, dtype str | None)]``.
        runtime_checks: text of checks on data-dependent sizes (not input contract).
        auto_dims: names of the root symbols no user ``Dim`` names (``Dim.AUTO`` / ``Dim.DYNAMIC``
            axes, ``s0``...): the text names the input axis of each (``s0 = x.shape[1]``).
        dynamic_dims: those of ``auto_dims`` that are ``Dim.DYNAMIC`` axes (the others are
            ``Dim.AUTO``), as the text labels them.
        output_values: output index -> size expression, for outputs that are sizes.
        output_paths: per output its place in what the model returns (``out['h']``,
            ``out.pooled``, ``out[0]``), or empty when unknown (shown as ``[i]``).
        int_inputs: ``[(path, int | sympy.Expr)]``, dynamic int inputs (torch's SymInt inputs)
            and their sizes over the root symbols; ``diff`` gives each a variable of its own, as an axis.
        output_structure: the containers around the outputs, as
            :func:`tensorplay_export.pytree.treespec_to_json` writes the output treespec
            (``None`` entries and tuple-or-list included, which ``output_paths`` cannot
            show), or ``None`` when unknown.
    """

    inputs: list = field(default_factory=list)
    ranges: dict = field(default_factory=dict)
    guards: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    runtime_checks: list = field(default_factory=list)
    auto_dims: set = field(default_factory=set)
    output_values: dict = field(default_factory=dict)
    output_paths: list = field(default_factory=list)
    output_structure: Optional[dict] = None
    int_inputs: list = field(default_factory=list)
    dynamic_dims: set = field(default_factory=set)

    def __post_init__(self) -> None:
        self.ranges, self.guards = fold_simple_bounds(self.ranges, list(self.guards))
        # sizes were built while the ranges were still being refined: the final ranges decide
        # Min/Max and relations that the capture could not decide at the time
        simple = self._simplified
        self.inputs = [(p, dt, tuple(simple(d) for d in shape)) for p, dt, shape in self.inputs]
        self.int_inputs = [(p, simple(d)) for p, d in self.int_inputs]
        self.guards = [g for g in (simple(g) for g in self.guards) if g is not sympy.true]
        self.outputs = [(None if shape is None else tuple(simple(d) for d in shape), dt) for shape, dt in self.outputs]
        self.output_values = {i: simple(v) for i, v in self.output_values.items()}

    def _simplified(self, expr: Any) -> Any:
        """``expr`` in the solver's canonical form over :attr:`ranges` (text and ints as they are),
        floor towers folded (``((t + 1) // 4) // 2`` is ``(t + 1) // 8``, a strided conv stack's
        length: ``solver.normalize.flatten_floors``, an identity); as it is once the solver budget
        of the command is spent (simplifying is sound to skip)."""
        if not isinstance(expr, sympy.Basic) or not expr.free_symbols or _budget_spent():
            return expr
        return canonicalize(flatten_floors(expr), self.ranges)

    def hint_of(self, name: str) -> str:
        """``"Dim.DYNAMIC"`` or ``"Dim.AUTO"``: the hint of an unnamed root (one of :attr:`auto_dims`)."""
        return "Dim.DYNAMIC" if name in self.dynamic_dims else "Dim.AUTO"

    # -- derived views -------------------------------------------------------------------
    def sites(self) -> list[tuple[str, Any]]:
        """``("x.shape[1]", expr)`` for every input axis."""
        return [(f"{path}.shape[{axis}]", d) for path, _dt, shape in self.inputs for axis, d in enumerate(shape)]

    def site_range(self, expr: Any) -> tuple[int, Optional[int]]:
        """Range of one axis size (``k*r + c`` over the root's range)."""
        if not isinstance(expr, sympy.Basic) or expr.is_Integer:
            return int(expr), int(expr)
        lo_sum, hi_sum = 0, 0
        poly = sympy.Poly(expr, *sorted(expr.free_symbols, key=lambda s: s.name)) \
            if expr.is_polynomial(*expr.free_symbols) else None
        if poly is None or poly.total_degree() != 1 or not all(c.is_Integer for c in poly.coeffs()):
            return 0, None
        for sym in expr.free_symbols:  # interval arithmetic over sum(k*r) + c
            k = int(expr.coeff(sym))
            lo, hi = self.ranges.get(sym, (0, None))
            if k > 0:
                lo_sum = None if lo_sum is None else lo_sum + k * lo
                hi_sum = None if hi_sum is None or hi is None else hi_sum + k * hi
            else:
                lo_sum = None if lo_sum is None or hi is None else lo_sum + k * hi
                hi_sum = None if hi_sum is None else hi_sum + k * lo
        c = int(expr.subs({s: 0 for s in expr.free_symbols}))
        lo_out = 0 if lo_sum is None else max(0, lo_sum + c)
        return lo_out, (None if hi_sum is None else hi_sum + c)

    def equalities(self) -> list[list[str]]:
        """Groups of axes that share one dim (bare symbol at several sites)."""
        groups: dict = {}
        for site, d in self.sites():
            if isinstance(d, sympy.Symbol):
                groups.setdefault(d, []).append(site)
        return [g for g in groups.values() if len(g) > 1]

    def relations(self) -> list[str]:
        """``z.shape[0] == 2*dx + 1`` for derived axes whose root another axis binds, and relation guards."""
        bare = {d for _s, d in self.sites() if isinstance(d, sympy.Symbol)}
        out = []
        for site, d in self.sites():
            if isinstance(d, sympy.Basic) and not d.is_Integer and not isinstance(d, sympy.Symbol) \
                    and d.free_symbols <= bare:
                out.append(f"{site} == {_text(d)}")
        for g in self.guards:
            if _divisor(g) is None and len(g.free_symbols) > 1:
                out.append(_text(g))
        return out

    def divisibility(self) -> list[str]:
        out = []
        for site, d in self.sites():
            aff = _affine(d)
            if aff is not None and abs(aff[1]) > 1:
                r, k, c = aff
                out.append(f"{site} % {abs(k)} == {c % abs(k)}  ({site} == {_text(d)})")
        for g in self.guards:
            div = _divisor(g)
            if div is not None:
                out.append(f"{_text(div[0])} % {div[1]} == 0")
        return out

    def other_guards(self) -> list[str]:
        return [_text(g) for g in self.guards if _divisor(g) is None and len(g.free_symbols) <= 1]

    # -- text and JSON -----------------------------------------------------------------------
    def describe(self) -> str:
        """Readable multi-line text (``tensorplay-export contract``)."""
        out = ["Inputs:"]
        for path, dtype, shape in self.inputs:
            out.append(f"  {path}: {_shape_text(shape)} {dtype}")
        for path, size in self.int_inputs:
            out.append(f"  {path}: int = {_text(size)}")
        out.append("Dims:")
        axes = _root_site_names(self)
        for sym, (lo, hi) in sorted(self.ranges.items(), key=lambda kv: kv[0].name):
            line = f"  {sym.name} in {format_range_brackets(lo, hi)}"
            if sym.name in self.auto_dims and sym in axes:  # an unnamed size: say which axis it is
                line += f"  ({sym.name} = {axes[sym]}, {self.hint_of(sym.name)})"
            out.append(line)
        for title, items in (("Equalities", [" == ".join(g) for g in self.equalities()]),
                             ("Relations", self.relations()), ("Divisibility", self.divisibility()),
                             ("Other guards", self.other_guards()),
                             ("Runtime checks on data-dependent sizes", self.runtime_checks)):
            if items:
                out.append(f"{title}:")
                out += [f"  {t}" for t in items]
        out.append("Outputs:")
        for i, (shape, dtype) in enumerate(self.outputs):
            where = self.output_paths[i] if i < len(self.output_paths) else f"[{i}]"
            if i in self.output_values:
                value = self.output_values[i]
                out.append(f"  {where}: {dtype} = {value if isinstance(value, str) else _text(value)}")
                continue
            shown = _shape_text(shape) if shape is not None else "(not an array)"
            out.append(f"  {where}: {shown} {dtype or ''}".rstrip())
        return "\n".join(out)

    def to_json(self) -> dict:
        from ..serde.exprs import encode_expr

        def tree(d: Any) -> Any:
            return int(d) if isinstance(d, int) or (isinstance(d, sympy.Basic) and d.is_Integer) else encode_expr(d)

        axes = _root_site_names(self)
        return {
            "format": CONTRACT_FORMAT,
            "version": CONTRACT_VERSION,
            "inputs": [{"path": p, "dtype": dt, "shape": [_text(d) for d in shape],
                        "shape_tree": [tree(d) for d in shape]} for p, dt, shape in self.inputs],
            "dims": [{"name": s.name, "symbol": encode_expr(s), "min": lo, "max": hi,
                      "axis": axes.get(s), "auto": s.name in self.auto_dims,
                      **({"hint": self.hint_of(s.name).removeprefix("Dim.")} if s.name in self.auto_dims else {})}
                     for s, (lo, hi) in sorted(self.ranges.items(), key=lambda kv: kv[0].name)],
            "equalities": [" == ".join(g) for g in self.equalities()],
            "relations": self.relations(),
            "divisibility": self.divisibility(),
            "guards": [{"text": _text(g), "tree": encode_expr(g)} for g in self.guards],
            "outputs": [dict({"shape": None if s is None else [d if isinstance(d, str) else _text(d) for d in s],
                              "shape_tree": None if s is None or any(isinstance(d, str) for d in s)
                              else [tree(d) for d in s], "dtype": dt}, **self._value_json(i),
                             **({"path": self.output_paths[i]} if i < len(self.output_paths) else {}))
                        for i, (s, dt) in enumerate(self.outputs)],
            "runtime_checks": list(self.runtime_checks),
            "output_structure": self.output_structure,
            "int_inputs": [{"path": p, "size": _text(d), "size_tree": tree(d)} for p, d in self.int_inputs],
        }

    def _value_json(self, i: int) -> dict:
        """``{"value": text, "value_tree": tree}`` for a size output, else ``{}``."""
        from ..serde.exprs import encode_expr

        value = self.output_values.get(i)
        if value is None:
            return {}
        if isinstance(value, str):  # read from a JSON contract whose tree was absent
            return {"value": value}
        return {"value": _text(value), "value_tree": encode_expr(value)}

    @classmethod
    def from_json(cls, data: Any, where: str = "<contract>") -> "Contract":
        """Rebuild from :meth:`to_json` output (operator trees; no text is parsed).

        Every field is checked before anything is built (:mod:`.contract_schema`: JSON types,
        required fields, the output treespec), then each expression tree as it is decoded
        (one node budget for the document), and what it must stand for: a dim's ``symbol`` a
        size symbol, a guard a condition, a size a number.

        Raises:
            ValueError: not a contract document, or a malformed field (the message names
                ``where``, the field, and what it must be).
        """
        from ..serde.exprs import ExprBudget
        from .contract_schema import check_contract_document

        if not isinstance(data, dict) or data.get("format") != CONTRACT_FORMAT:
            raise ValueError(f"{where} is not a tensorplay_export contract (format {CONTRACT_FORMAT!r} expected)")
        if data.get("version") != CONTRACT_VERSION:
            raise ValueError(f"{where}: contract version {data.get('version')!r} is not {CONTRACT_VERSION}")
        check_contract_document(data, where)
        budget = ExprBudget()

        def size(tree: Any, field: str) -> Any:
            return tree if type(tree) is int else _decoded(tree, where, field, "size", budget)

        inputs = [(item["path"], item["dtype"], tuple(size(t, f"inputs[{i}].shape_tree[{a}]")
                                                    for a, t in enumerate(item["shape_tree"])))
                  for i, item in enumerate(data["inputs"])]
        ranges, auto, dynamic = {}, set(), set()
        for i, item in enumerate(data["dims"]):
            sym = _decoded(item["symbol"], where, f"dims[{i}].symbol", "symbol", budget)
            ranges[sym] = (item["min"], item["max"])
            if item.get("auto"):  # absent in contracts written before the field: named
                auto.add(sym.name)
            if item.get("hint") == "DYNAMIC":  # absent before 2026-12-02: read as Dim.AUTO
                dynamic.add(sym.name)
        guards = [_decoded(g["tree"], where, f"guards[{i}].tree", "condition", budget)
                  for i, g in enumerate(data.get("guards", []))]
        outputs = []
        for i, o in enumerate(data["outputs"]):  # expressions when the operator trees are there (since 2026-12-01)
            trees = o.get("shape_tree")
            shape = None if o["shape"] is None else tuple(
                size(t, f"outputs[{i}].shape_tree[{a}]") for a, t in enumerate(trees)) if trees is not None \
                else tuple(o["shape"])
            outputs.append((shape, o.get("dtype")))

        def value(o: dict, i: int) -> Any:  # a returned size or bool: its tree, else (older writers) its text
            if "value_tree" not in o:
                return o["value"]
            tree = o["value_tree"]
            return tree if type(tree) is int else _decoded(tree, where, f"outputs[{i}].value_tree", "value", budget)

        values = {i: value(o, i) for i, o in enumerate(data["outputs"]) if "value" in o or "value_tree" in o}
        paths = [o["path"] for o in data["outputs"]] if all("path" in o for o in data["outputs"]) else []
        int_inputs = [(item["path"], size(item["size_tree"], f"int_inputs[{i}].size_tree"))
                      for i, item in enumerate(data.get("int_inputs", []))]  # absent before 2026-12-02: none
        structure = data.get("output_structure")  # absent in contracts written before 2026-12-02
        return cls(inputs, ranges, guards, outputs, list(data.get("runtime_checks", [])), auto, values, paths,
                   structure, int_inputs, dynamic)


_KIND_WORDS = {"size": "a size expression", "value": "a size expression or a condition (a returned bool)", "symbol": "a size symbol ([\"Symbol\", name, assumptions])",
               "condition": "a condition (a relation, And, Or or Not)"}


def _decoded(tree: Any, where: str, field: str, kind: str, budget: Any) -> Any:
    """The expression of one field of a JSON contract, which must be of ``kind`` (see ``_KIND_WORDS``).

    Raises:
        ValueError: the tree is malformed (the decoder's reason) or stands for something else.
    """
    from ..errors import ArchiveError
    from ..serde.exprs import decode_expr

    try:
        expr = decode_expr(tree, field, budget)
    except ArchiveError as err:  # the decoder names the field (as its member) and the fault
        raise ValueError(f"{where}: malformed contract: {err}") from None
    ok = {"size": lambda e: isinstance(e, sympy.Expr),
          "value": lambda e: isinstance(e, (sympy.Expr, sympy.logic.boolalg.Boolean)),
          "symbol": lambda e: isinstance(e, sympy.Symbol),
          "condition": lambda e: isinstance(e, sympy.logic.boolalg.Boolean) and not isinstance(e, sympy.Symbol)}[kind]
    if not ok(expr):
        raise ValueError(f"{where}: malformed contract: {field} must be {_KIND_WORDS[kind]}, got {format_guard(expr)}")
    return expr


def _shape_text(shape: Any) -> str:
    parts = [_text(d) if not isinstance(d, str) else d for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def contract_of(ep: Any) -> Contract:
    """The contract of an ``ExportedProgram`` (read by :func:`program.sizes.read_sizes` from its checks)."""
    from ..program.sizes import read_sizes

    sizes = read_sizes(ep, examples=False)
    inputs = [(i.path, i.dtype, i.shape) for i in sizes.inputs]
    ranges = dict(sizes.ranges)
    int_inputs = _int_inputs(ep.graph)
    for _path, size in int_inputs:  # a root only an int input binds: its range from range_constraints
        for sym in getattr(size, "free_symbols", ()):
            vr = ep.range_constraints.get(sym)
            if sym not in ranges and vr is not None:
                ranges[sym] = (int(vr.lower), None if vr.upper == math.inf else int(vr.upper))
    guards = list(sizes.guards)
    runtime = [_text(g) if isinstance(g, sympy.Basic) else str(g) for g in sizes.runtime]
    outputs = [(o.shape, o.dtype) for o in sizes.outputs]
    values = {i: o.value for i, o in enumerate(sizes.outputs) if o.value is not None}
    named = spec_dim_names(getattr(ep, "dynamic_shapes", None))
    auto = set() if named is None else {r.name for r in ranges if r.name not in named}
    return Contract(inputs, ranges, guards, outputs, runtime, auto, values, _output_paths(ep, len(outputs)),
                    _output_structure(ep), int_inputs, dynamic_hint_names(getattr(ep, "dynamic_shapes", None), auto))


def _int_inputs(graph: Any) -> list:
    """``[(path, size)]`` of the dynamic int inputs, read from their runtime checks: a
    ``tpe.check_int`` binds root ``r`` from ``value == k*r + c``, a ``tpe.assert_int`` ties the
    value to a size over roots bound elsewhere."""
    out = []
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        if n.target == "tpe.check_int":
            r = (n.meta.get("bind") or {}).get(None)
            k, c = n.args[2], n.args[3]
            if r is not None:
                out.append((str(n.args[1]), k * r + c))
        elif n.target == "tpe.assert_int":
            want = n.args[2]
            out.append((str(n.args[1]), int(want) if isinstance(want, int) else sympy.sympify(want)))
    return out


def _out_spec(ep: Any) -> Any:
    entries = getattr(ep, "module_call_graph", None) or []
    return getattr(entries[0].signature, "out_spec", None) if entries and entries[0].signature else None


def _output_structure(ep: Any) -> Optional[dict]:
    """The output treespec in its JSON form, or None when unknown or not writable as JSON."""
    from ..pytree import treespec_to_json

    spec = _out_spec(ep)
    if spec is None:
        return None
    try:
        return treespec_to_json(spec)
    except ValueError:  # a dict key JSON cannot hold exactly: the places of the outputs still compare
        return None


def _output_paths(ep: Any, n: int) -> list:
    """``["out['h']", "out['pooled']"]``: where each output sits in what the model returns
    (its output treespec, as ``run`` prints them); empty when the structure is unknown."""
    from ..pytree import tree_leaves_with_path, tree_unflatten

    spec = _out_spec(ep)
    if spec is None:
        return []
    try:
        paths = [p for p, _leaf in tree_leaves_with_path(tree_unflatten(list(range(n)), spec), "out")]
    except Exception:  # noqa: BLE001 - a dataclass whose class is not registered here: indices only
        return []
    return paths if len(paths) == n else []


def load_contract(path: str, model: Optional[str] = None) -> Contract:
    """A contract from an archive (``.pt2`` zip) or a JSON file written by ``contract --json``;
    ``model``: which program of a multi-model archive (``package_pt2``), else its ``"model"``.

    The contract is data: an archive of a program with dataclass inputs opens
    without the class registered (its name is kept, see
    :func:`tensorplay_export.pytree.unregistered_dataclasses_as_names`).

    Raises:
        ValueError / ArchiveError / OSError: unreadable file (the message names it).
    """
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head.startswith(b"PK"):
        from ..pytree import unregistered_dataclasses_as_names
        from ..serde import load

        with unregistered_dataclasses_as_names():
            return contract_of(load(path) if model is None else program_named(path, model))
    from .contract_schema import read_contract_document

    with open(path, "rb") as fh:
        data = read_contract_document(fh.read(), os.path.basename(path), path)
    if isinstance(data, dict) and "contract" in data and "format" not in data:
        data = data["contract"]  # a `check --json` report holds one
    return Contract.from_json(data, os.path.basename(path))


def load_contracts(path: str) -> Optional[dict]:
    """``{program name: Contract}`` of every program in an archive (one from :func:`save`,
    several from ``package_pt2``), each loaded once; ``None`` for a JSON contract.

    Raises:
        ArchiveError / OSError: unreadable archive.
    """
    with open(path, "rb") as fh:
        if not fh.read(4).startswith(b"PK"):
            return None
    from ..pytree import unregistered_dataclasses_as_names
    from ..serde import load_pt2

    with unregistered_dataclasses_as_names():
        return {name: contract_of(ep) for name, ep in load_pt2(path).exported_programs.items()}


# -- diff ------------------------------------------------------------------------------------------
@dataclass
class Change:
    """One difference between two contracts; ``narrowing`` says whether it refuses sizes OLD admitted.

    ``same``: the change is in how the contract is written, not in what it
    admits (a dropped equality the other checks still imply, decided by the
    solver); it neither narrows nor widens.  ``output``: a change of what the
    program returns (a caller of OLD may break on it), not of what it admits.
    ``undecided``: the solver budget ran out before the question behind the change was
    decided (whether the other side implies it, whether two sizes are equal): it is
    listed as it would be when not implied, tagged ``[undecided]``.
    """

    what: str
    narrowing: bool
    same: bool = False
    output: bool = False
    undecided: bool = False

    def __str__(self) -> str:
        tag = ("[undecided] " if self.undecided else "[output]  " if self.output else "[same]    " if self.same
               else "[narrows] " if self.narrowing else "[widens]  ")
        return f"{tag}{self.what}"


@dataclass
class ContractDiff:
    """Result of :func:`diff_contracts`.

    Attributes:
        narrowed: NEW refuses some input OLD admits (decided by the solver or by a
            signature change); ``None`` when the solver could not decide.
        changes: every listed difference.
        witness: ``{"x.shape[1]": 513, ...}``: sizes OLD admits and NEW refuses, or None.
        reason: one line saying how it was decided.
        fixes: when narrowed, fix lines for NEW's ``dynamic_shapes`` (``n = Dim('n', max=512)``,
            the form :func:`refine_dynamic_shapes_from_suggested_fixes` reads) with which NEW's
            contract admits every size OLD's does, proved by the solver on the two contracts;
            empty when widening NEW's ranges cannot do that.  Whether NEW's model still runs
            at those sizes only a re-export says.
        notes: what else would restore OLD's sizes (an axis that became static), or why no
            fix is given.
        undecided: the questions left undecided because the solver budget of the work
            (:func:`solver.solver_budget`, ``--solver-budget`` on the command line) ran out,
            in words (``whether NEW admits every size OLD admits``, ``new relation/guard: ...``);
            the changes they concern are tagged ``[undecided]``.
    """

    narrowed: Optional[bool]
    changes: list = field(default_factory=list)
    witness: Optional[dict] = None
    reason: str = ""
    outputs_changed: bool = False
    fixes: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    undecided: list = field(default_factory=list)

    @property
    def breaking(self) -> bool:
        """Whether a caller of OLD may break on NEW: it refuses sizes OLD admits, the solver could
        not decide that, what it returns changed (count, dtype, rank or a size), or the solver
        budget ran out before every question was decided; a CI gate fails on this."""
        return self.narrowed is not False or self.outputs_changed or bool(self.undecided)

    def __str__(self) -> str:
        if self.narrowed:
            head = "NEW admits fewer sizes than OLD"
        elif self.narrowed is None:
            head = "could not decide whether NEW admits every size OLD admits"
        else:
            wider = any(not (c.same or c.output or c.narrowing or c.undecided) for c in self.changes)
            head = "NEW admits every size OLD admits" + (
                " (no change)" if not self.changes else "" if not wider else
                " (wider)" if self.outputs_changed else " (wider: not breaking)")
        if self.outputs_changed:
            head += "; what it returns changed"
        out = [head]
        if self.witness:
            out.append("  witness (admitted by OLD, refused by NEW): "
                       + ", ".join(f"{k} = {v}" for k, v in self.witness.items()))
        if self.reason:
            out.append(f"  {self.reason}")
        if self.undecided:
            marked = {c.what for c in self.changes if c.undecided}
            out.append(f"  the solver budget ran out with {len(self.undecided)} question(s) undecided; "
                       "a larger budget may decide them:")
            out += [f"    {q}" for q in self.undecided if q not in marked]
            if marked:
                out.append(f"    and the {len(marked)} change(s) marked [undecided]")
        if self.changes:
            out.append("Changes:")
            out += [f"  {c}" for c in self.changes]
        out += [f"  note: {n}" for n in self.notes]
        if self.fixes:  # last, as in a ConstraintViolationError: refine reads the block
            out += [("To admit every size OLD admits again (proved on the contracts; re-export NEW's model "
                     "with it to check the model still runs there):"), FIXES_HEADER]
            out += [f"  {ln}" for ln in self.fixes]
        return "\n".join(out)

    def to_json(self) -> dict:
        return {"narrowed": self.narrowed, "outputs_changed": self.outputs_changed, "breaking": self.breaking,
                "witness": self.witness, "reason": self.reason, "fixes": list(self.fixes),
                "notes": list(self.notes), "undecided": list(self.undecided),
                "changes": [{"what": c.what, "narrowing": c.narrowing, "same": c.same,
                             **({"output": True} if c.output else {}),
                             **({"undecided": True} if c.undecided else {})} for c in self.changes]}


class _BudgetSpent(Exception):
    """The solver budget ran out while a formula was being built (its text: the budget's reason)."""


def _budget_spent() -> bool:
    budget = active_budget()
    return budget is not None and budget.spent


def _checkpoint() -> None:
    """Stop building a formula once the solver budget is spent: on a contract of hundreds of hard
    guards, substituting sizes into each takes as long as deciding (measured: 4 s for 201 Mod guards).

    Raises:
        _BudgetSpent: the budget of the work asking is spent.
    """
    budget = active_budget()
    if budget is not None and budget.spent:
        raise _BudgetSpent(budget.reason)


def _site_keys(c: Contract) -> list:
    """``[((path, axis), size)]``: every input axis, then every dynamic int input (axis None)."""
    return [((p, a), d) for p, _dt, shape in c.inputs for a, d in enumerate(shape)] + \
        [((p, None), d) for p, d in c.int_inputs]


def _binding(c: Contract, var: dict) -> tuple[dict, list]:
    """Root symbol -> its value over the site variables, and the conditions that binding needs."""
    binding: dict = {}
    conds: list = []
    sites = [(key, d) for key, d in _site_keys(c) if key in var]
    for key, d in sites:  # bind each root at its first bare site, else at a k*r + c site
        if isinstance(d, sympy.Symbol) and d not in binding:
            binding[d] = var[key]
    for key, d in sites:
        aff = _affine(d)
        if aff is not None and aff[0] not in binding:
            r, k, c0 = aff
            v = var[key]
            binding[r] = sympy.floor((v - c0) / k)
            conds += [sympy.Eq(sympy.Mod(v - c0, abs(k)), 0), v >= c0 if k > 0 else v <= c0]
    return binding, conds


def _admits(c: Contract, var: dict) -> Any:
    """The contract as a quantifier-free formula over the site variables ``var[(path, axis)]``
    (``(path, None)``: a dynamic int input's value)."""
    binding, conds = _binding(c, var)
    for key, d in _site_keys(c):
        if key not in var:
            continue
        v = var[key]
        if not isinstance(d, sympy.Basic) or d.is_Integer:
            conds.append(sympy.Eq(v, int(d)))
        elif d.free_symbols <= binding.keys():
            e = d.xreplace(binding)
            if e != v:
                conds.append(sympy.Eq(v, e))
    for sym, (lo, hi) in c.ranges.items():
        if sym in binding:
            conds.append(binding[sym] >= lo)
            if hi is not None:
                conds.append(binding[sym] <= hi)
    for g in c.guards:
        _checkpoint()
        if g.free_symbols <= binding.keys():
            conds.append(g.xreplace(binding))
    conds = [x for x in conds if x is not sympy.true]
    return sympy.And(*conds) if conds else sympy.true


def _site_dims(c: Contract) -> dict:
    return dict(_site_keys(c))


def _site_text(key: tuple) -> str:
    """``x.shape[1]`` for an input axis, ``n`` for a dynamic int input (axis None)."""
    return key[0] if key[1] is None else f"{key[0]}.shape[{key[1]}]"


def _site_congruence(c: Contract, d: Any) -> tuple[int, int]:
    """``(m, r)``: the axis size ``d`` is ``r`` modulo ``m`` (``4*_k + 1`` -> ``(4, 1)``; a guard
    ``_k % 2 == 0`` on its root makes it ``(8, 1)``); ``(1, 0)`` when nothing is known."""
    aff = _affine(d)
    if aff is None:
        return 1, 0
    root, k, c0 = aff
    step = 1
    for g in c.guards:
        div = _divisor(g)
        if div is not None and div[0] == root:
            step = step * div[1] // math.gcd(step, div[1])
    m = abs(k) * step
    return m, c0 % m


def _congruence_text(site: str, m: int, r: int) -> str:
    return f"{site} % {m} == {r}" if r else f"{site} a multiple of {m}"


def _root_site_names(c: Contract) -> dict:
    """Root symbol -> the input axis that binds it (``x.shape[0]``, or ``(z.shape[0] - 1)/2``)."""
    names: dict = {}
    for site, d in [*c.sites(), *c.int_inputs]:  # an int input's site is its path
        if isinstance(d, sympy.Symbol) and d not in names:
            names[d] = site
    for site, d in [*c.sites(), *c.int_inputs]:
        aff = _affine(d)
        if aff is not None and aff[0] not in names:
            r, k, c0 = aff
            if k < 0:  # site = c0 - |k|*r  ->  r = (c0 - site)/|k|
                inner = f"{c0} - {site}" if c0 else f"-{site}"
                names[r] = inner if k == -1 else f"({inner})/{-k}"
                continue
            inner = site if c0 == 0 else f"({site} - {c0})" if c0 > 0 else f"({site} + {-c0})"
            names[r] = inner if k == 1 else f"{inner}/{k}"
    return names


def outputs_by_sites(c: Contract) -> list:
    """``[(shape texts | None, dtype)]`` of the outputs with dim names replaced by input sites
    (a size output: ``[its expression's text]``).

    Output shapes read from JSON are text, so names are replaced as whole words
    (dim names are identifiers); two contracts that differ only in dim names
    give equal lists.
    """
    names = {r.name: site for r, site in _root_site_names(c).items()}
    word = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b") \
        if names else None
    out = []
    for i, (shape, dtype) in enumerate(c.outputs):
        texts = None if shape is None else [d if isinstance(d, str) else _text(d) for d in shape]
        if i in c.output_values:  # a size output: its expression is what is compared
            value = c.output_values[i]
            texts = [value if isinstance(value, str) else _text(value)]
        if texts is not None and word is not None:
            texts = [word.sub(lambda m: names[m.group(1)], t) for t in texts]
        out.append((texts, dtype))
    return out


def _site_named(c: Contract) -> Contract:
    """``c`` with each root renamed after the input axis that binds it (``n`` -> ``x.shape[0]``).

    Two contracts that differ only in dim names then print the same relations
    and guards, so listing changes compares sites, not names.
    """
    repl = {r: sympy.Symbol(n, integer=True, nonnegative=True) for r, n in _root_site_names(c).items()}

    def sub(e: Any) -> Any:  # once the solver budget is spent, texts keep their dim names
        return e.xreplace(repl) if isinstance(e, sympy.Basic) and not _budget_spent() else e

    inputs = [(p, dt, tuple(sub(d) for d in shape)) for p, dt, shape in c.inputs]
    ranges = {repl.get(r, r): v for r, v in c.ranges.items()}
    return Contract(inputs, ranges, [sub(g) for g in c.guards], c.outputs, list(c.runtime_checks),
                    c.auto_dims, {i: sub(v) for i, v in c.output_values.items()})


def _signature_changes(old: Contract, new: Contract) -> list[Change]:
    """Inputs removed or added, and ranks or dtypes changed: each narrows (a call made for OLD fails)."""
    changes = []
    old_in = {p: (dt, len(s)) for p, dt, s in old.inputs} | {p: ("int", 0) for p, _d in old.int_inputs}
    new_in = {p: (dt, len(s)) for p, dt, s in new.inputs} | {p: ("int", 0) for p, _d in new.int_inputs}
    for p in old_in:
        if p not in new_in:
            changes.append(Change(f"input {p} removed", True))
        elif old_in[p][1] != new_in[p][1]:
            changes.append(Change(f"input {p}: rank {old_in[p][1]} -> {new_in[p][1]}", True))
        elif old_in[p][0] != new_in[p][0]:
            changes.append(Change(f"input {p}: dtype {old_in[p][0]} -> {new_in[p][0]}", True))
    for p in new_in:
        if p not in old_in:
            changes.append(Change(f"input {p} added (calls made for OLD lack it)", True))
    return changes


def _asked(holds: "_Holds", cond: Any, implied: Change, otherwise: Change) -> Change:
    """``implied`` when ``holds`` proves ``cond``, ``otherwise`` when it does not; ``otherwise``
    tagged undecided when the solver budget ran out first."""
    got = holds(cond)
    if got is None:
        return Change(otherwise.what, otherwise.narrowing, undecided=True)
    return implied if got else otherwise


def _structural_changes(old: Contract, new: Contract) -> list[Change]:
    changes = _signature_changes(old, new)
    od, nd = _site_dims(old), _site_dims(new)
    for key in od:
        if key not in nd:
            continue
        site = _site_text(key)
        o, n = od[key], nd[key]
        (olo, ohi), (nlo, nhi) = old.site_range(o), new.site_range(n)
        ostatic = not isinstance(o, sympy.Basic) or o.is_Integer
        nstatic = not isinstance(n, sympy.Basic) or n.is_Integer
        if nstatic and not ostatic:
            was = f"{_text(o)} in {format_range_brackets(olo, ohi)}"
            changes.append(Change(f"{site}: now static = {int(n)} (was {was})", True))
            continue
        if ostatic and not nstatic:
            changes.append(Change(f"{site}: now dynamic {_text(n)} (was static {int(o)})", False))
            continue
        if ostatic and nstatic:
            if int(o) != int(n):
                changes.append(Change(f"{site}: static size {int(o)} -> {int(n)}", True))
            continue
        name = _text(n)
        if nlo > olo:
            changes.append(Change(f"{site} ({name}): narrowed min {olo} -> {nlo}", True))
        elif nlo < olo:
            changes.append(Change(f"{site} ({name}): widened min {olo} -> {nlo}", False))
        if _lt(nhi, ohi):
            changes.append(Change(f"{site} ({name}): narrowed max {format_bound(ohi)} -> {format_bound(nhi)}", True))
        elif _lt(ohi, nhi):
            changes.append(Change(f"{site} ({name}): widened max {format_bound(ohi)} -> {format_bound(nhi)}", False))
        (om, orr), (nm, nr) = _site_congruence(old, o), _site_congruence(new, n)
        if (om, orr) != (nm, nr):
            # NEW's class of sizes lies inside OLD's (finer modulus, same residue) or it does not
            inside = nm % om == 0 and nr % om == orr
            was = f" (was {_congruence_text(site, om, orr)})" if om > 1 else ""
            if inside:
                changes.append(Change(f"new divisibility: {_congruence_text(site, nm, nr)}{was}", True))
            else:
                now = _congruence_text(site, nm, nr) if nm > 1 else f"{site} any size"
                changes.append(Change(f"divisibility: {now}{was}", not (om % nm == 0 and orr % nm == nr)))
    oeq = _equal_pairs(old)
    neq = _equal_pairs(new)
    # an equality or relation on one side only may still hold on the other, written another way
    # (a shared dim on one side, a guard on the other): the solver says, so it is not called a change
    old_holds, new_holds = _Holds(old), _Holds(new)
    old_facts, new_facts = _facts(old), _facts(new)
    # a shared dim rewritten as the guard ``a == b`` (or back): one line, not two
    for shared, other, guards_there, guards_here, now in (
            (oeq, neq, new_facts, old_facts, "a guard instead of a shared dim"),
            (neq, oeq, old_facts, new_facts, "a shared dim instead of a guard")):
        for a, b in sorted(shared - other):
            for text in (f"{a} == {b}", f"{b} == {a}"):
                if text in guards_there and text not in guards_here:
                    del guards_there[text]
                    shared.discard((a, b))
                    changes.append(Change(f"equality {a} == {b} now {now}", False, True))
                    break
    for a, b in sorted(neq - oeq):
        changes.append(_asked(old_holds, _site_eq(a, b),
                              Change(f"equality {a} == {b} now shared dim (OLD implied it already)", False, True),
                              Change(f"new equality: {a} == {b}", True)))
    for a, b in sorted(oeq - neq):
        changes.append(_asked(new_holds, _site_eq(a, b),
                              Change(f"equality {a} == {b} no longer a shared dim (NEW still implies it)", False, True),
                              Change(f"equality dropped: {a} == {b}", False)))
    for r in sorted(set(new_facts) - set(old_facts)):
        changes.append(_asked(old_holds, new_facts[r],
                              Change(f"relation/guard {r} now stated (OLD implied it already)", False, True),
                              Change(f"new relation/guard: {r}", True)))
    for r in sorted(set(old_facts) - set(new_facts)):
        changes.append(_asked(new_holds, old_facts[r],
                              Change(f"relation/guard {r} no longer stated (NEW still implies it)", False, True),
                              Change(f"relation/guard dropped: {r}", False)))
    return changes


def _site_var(key: tuple) -> Any:
    """The integer variable of one input axis (or dynamic int input), shared by both contracts of a diff."""
    return sympy.Symbol(f"{key[0]}.int" if key[1] is None else f"{key[0]}.shape[{key[1]}]", integer=True,
                        nonnegative=True)


_SITE = re.compile(r"^(.*)\.shape\[(\d+)\]$")


def _site_eq(a: str, b: str) -> Any:
    ma, mb = _SITE.match(a), _SITE.match(b)
    return sympy.Eq(_site_var((ma.group(1), int(ma.group(2)))), _site_var((mb.group(1), int(mb.group(2)))))


def _facts(c: Contract) -> dict:
    """Relation and guard texts (as :func:`_structural_changes` lists them) -> condition over site
    variables; the condition is None for those the solver budget left no time to build (their
    texts are then sympy's, and name dims, not input axes, when it ran out before any was built)."""
    if _budget_spent():  # nor time to print them factored (sympy.factor: 20 ms a hard guard)
        return {sympy.sstr(g): None for g in c.guards if _divisor(g) is None}
    var = {key: _site_var(key) for key, _d in _site_keys(c)}
    binding, _conds = _binding(c, var)
    named = _site_named(c)
    repl = {r: sympy.Symbol(n, integer=True, nonnegative=True) for r, n in _root_site_names(c).items()}
    back = {repl[r]: binding[r] for r in repl if r in binding}
    out: dict = {}
    texts = named.relations()
    bare = {d for _s, d in named.sites() if isinstance(d, sympy.Symbol)}
    i = 0
    for (p, _dt, shape) in named.inputs:  # the same walk as Contract.relations: derived sites first
        for axis, d in enumerate(shape):
            if isinstance(d, sympy.Basic) and not d.is_Integer and not isinstance(d, sympy.Symbol) \
                    and d.free_symbols <= bare:
                out[texts[i]] = sympy.Eq(var[(p, axis)], d.xreplace(back))
                i += 1
    for g in named.guards:
        if _divisor(g) is None:
            if _budget_spent():
                out[sympy.sstr(g)] = None
            else:
                out[_text(g)] = g.xreplace(back)
    return out


class _Holds:
    """``holds(cond)``: the solver proves ``cond`` for every size the contract admits: True; False
    when not, or undecided within the query's timeout; None when the solver budget ran out first
    (``cond`` None: there was no time to build it)."""

    def __init__(self, c: Contract, timeout_ms: int = 2000) -> None:
        from solver import ShapeSolver

        self.solver = ShapeSolver(timeout_ms=timeout_ms)
        var = {}
        for key, _d in _site_keys(c):
            var[key] = self.solver.declare(_site_var(key).name, lower=0, upper=None)
        self.spent = False
        try:
            self.solver.assume(_admits(c, var))
            self.ok = True
        except _BudgetSpent:
            self.ok, self.spent = False, True
        except Exception:  # noqa: BLE001 - an untranslatable check: nothing is claimed to hold
            self.ok = False

    def __call__(self, cond: Any) -> Optional[bool]:
        if cond is None or self.spent:
            return None
        if not self.ok:
            return False
        try:
            verdict = self.solver.implies(cond)
        except Exception:  # noqa: BLE001 - undecided: the change stays listed as a change
            return False
        return None if verdict.via == "budget" else verdict.status == "proved"


def _equal_pairs(c: Contract) -> set:
    pairs = set()
    sites = c.sites()
    for i, (a, da) in enumerate(sites):
        for b, db in sites[i + 1:]:
            if isinstance(da, sympy.Basic) and not da.is_Integer and da == db:
                pairs.add((a, b))
    return pairs


def _lt(a: Optional[int], b: Optional[int]) -> bool:
    """a < b with None = infinity."""
    if a is None:
        return False
    return b is None or a < b


@exclusive
def diff_contracts(old: Contract, new: Contract, timeout_ms: int = 2000) -> ContractDiff:
    """Does NEW admit fewer input sizes than OLD, and does it return the same?  Decided by the
    solver (``OLD and not NEW`` satisfiable?; each output size equal wherever both admit).

    The verdict is asked first, then the outputs, then what explains the changes, so under a
    solver budget (:func:`solver.solver_budget`) the verdict gets the time first; what the
    budget leaves undecided is listed in ``undecided`` and makes the diff breaking.

    Returns:
        :class:`ContractDiff` with the verdict, a witness when narrowed, the listed changes, and
        whether what the program returns changed (``outputs_changed``; ``breaking`` says either).
    """
    if _signature_changes(old, new):
        outputs = _output_changes(old, new, timeout_ms)
        diff = ContractDiff(True, _structural_changes(old, new) + outputs, None,
                            "the input signature changed (inputs, ranks or dtypes)", any(not c.undecided for c in outputs))
    else:
        diff = _input_diff(old, new, timeout_ms)
        outputs = _output_changes(old, new, timeout_ms)
        if diff.reason != _SAME:  # the same sizes admitted: nothing to explain
            diff.changes = _structural_changes(old, new)
        diff.changes = diff.changes + outputs
        diff.outputs_changed = any(not c.undecided for c in outputs)
    if diff.narrowed:
        diff.fixes, diff.notes = _restoring_fixes(old, new, timeout_ms)
        if not diff.fixes and _budget_spent():
            diff.notes = ["the solver budget ran out before a range fix was proved; a larger budget may find one"]
            diff.undecided.append("which ranges of NEW's dims admit every size OLD admits")
    diff.undecided += [c.what for c in diff.changes if c.undecided]
    return diff


_SAME = "proved: OLD and NEW admit exactly the same sizes"


def _root_values(k: int, c0: int, lo: int, hi: Optional[int]) -> tuple[int, Optional[int]]:
    """The root values ``r`` with ``k*r + c0`` inside ``[lo, hi]`` (``hi`` None: unbounded), r >= 0."""
    if k > 0:  # ceil((lo - c0)/k) <= r <= floor((hi - c0)/k)
        return max(0, -((c0 - lo) // k)), None if hi is None else (hi - c0) // k
    # k < 0: ceil((c0 - hi)/|k|) <= r <= floor((c0 - lo)/|k|)
    return 0 if hi is None else max(0, -((hi - c0) // -k)), (c0 - lo) // -k


def _restoring_fixes(old: Contract, new: Contract, timeout_ms: int) -> tuple[list, list]:
    """Range fixes of NEW's named dims under which NEW admits every size OLD admits (each
    NEW axis ``k*r + c`` must reach OLD's range of that axis), kept only when the solver
    proves them enough; and notes for what a range cannot restore."""
    from dataclasses import replace

    from solver import RangeFix

    od, nd = _site_dims(old), _site_dims(new)
    notes: list = []
    need: dict = {}  # (a changed input signature never gets here: diff_contracts says it first)
    for key, n in nd.items():
        o = od.get(key)
        if o is None or not isinstance(o, sympy.Basic) or o.is_Integer:
            continue
        olo, ohi = old.site_range(o)
        if not isinstance(n, sympy.Basic) or n.is_Integer:
            fix = RangeFix(o.name if isinstance(o, sympy.Symbol) else "d", olo, ohi).line.partition(" = ")[2]
            notes.append(f"{key[0]}.shape[{key[1]}] is static ({int(n)}) in NEW: to admit OLD's sizes it must be "
                         f"dynamic again, e.g. {{{key[1]}: {fix}}} in dynamic_shapes[{key[0]!r}]")
            continue
        aff = _affine(n)
        if aff is None:
            continue
        r, k, c0 = aff
        rlo, rhi = _root_values(k, c0, olo, ohi)
        if r in need:
            plo, phi = need[r]
            rlo, rhi = min(plo, rlo), None if phi is None or rhi is None else max(phi, rhi)
        need[r] = (rlo, rhi)
    ranges = dict(new.ranges)
    fixes = []
    for r, (rlo, rhi) in sorted(need.items(), key=lambda kv: kv[0].name):
        lo, hi = ranges.get(r, (1, None))
        wide = (min(lo, rlo), None if hi is None or rhi is None else max(hi, rhi))
        if wide == (lo, hi):
            continue
        if r.name in new.auto_dims:  # no user Dim to widen: the axis is a hint, which names it
            notes.append(f"{_root_site_names(new).get(r, r.name)} ({new.hint_of(r.name)}) would need the range "
                         f"{format_range_brackets(*wide)}")
            continue
        ranges[r] = wide
        fixes.append(RangeFix(r.name, wide[0], wide[1]).line)
    if notes:
        return [], notes
    if fixes and _admits_all(old, replace(new, ranges=ranges), _site_vars(old, new), timeout_ms):
        return fixes, []
    return [], [("no range of NEW's dims admits every size OLD admits: NEW's model narrowed its contract "
                 "(see the changes); if that is intended, make NEW the baseline")]


def _site_vars(*contracts: Contract) -> dict:
    return {key: _site_var(key) for c in contracts for key, _d in _site_keys(c)}


def _output_changes(old: Contract, new: Contract, timeout_ms: int) -> list[Change]:
    """What the program returns, OLD against NEW.

    Outputs are matched by their place in what the model returns (``out['a']``, ``out[0]``)
    when both contracts record it, so a dict's key order is no change and a renamed key or a
    tuple that became a bare array is; else by position.  A place only one side has is an
    output added or removed; for the others, the dtype, the rank, each size and a returned
    size's value are compared, a size over the same input sizes: equal wherever both admit
    them, asked of the solver (``n + n`` and ``2*n`` are the same size; a size of an input
    only one side has is not compared, the signature change is listed instead).
    """
    from solver import ShapeSolver

    def places(c: Contract) -> Optional[list]:
        paths = c.output_paths
        if len(paths) == len(c.outputs) and all(paths) and len(set(paths)) == len(paths):
            return list(paths)
        return None

    changes: list[Change] = []
    po, pn = places(old), places(new)
    if po is None or pn is None:
        po, pn = [f"out[{i}]" for i in range(len(old.outputs))], [f"out[{i}]" for i in range(len(new.outputs))]
    at_o, at_n = {p: i for i, p in enumerate(po)}, {p: i for i, p in enumerate(pn)}
    for p in po:
        if p not in at_n:
            changes.append(Change(f"{p}: no longer returned", False, output=True))
    for p in pn:
        if p not in at_o:
            changes.append(Change(f"{p}: now returned", False, output=True))
    if old.output_structure is not None and new.output_structure is not None:
        changes += _structure_changes(old.output_structure, new.output_structure, "out")
    s = ShapeSolver(timeout_ms=timeout_ms)
    # one variable per input axis of either side (an input renamed, added or removed has its own)
    var = {key: s.declare(_site_var(key).name, lower=0, upper=None) for c in (old, new) for key, _d in _site_keys(c)}
    one_sided = {var[key] for key, _d in _site_keys(old)} ^ {var[key] for key, _d in _site_keys(new)}
    bind_o, _ = _binding(old, var)
    bind_n, _ = _binding(new, var)
    pending = []

    def compare(what: str, o: Any, n: Any) -> None:
        o_e, n_e = sympy.sympify(o).xreplace(bind_o), sympy.sympify(n).xreplace(bind_n)
        if (o_e.free_symbols | n_e.free_symbols) & one_sided:
            return  # a size of an input one side lacks: the signature change says it, not a size
        conditions = [isinstance(e, sympy.logic.boolalg.Boolean) and not isinstance(e, sympy.Symbol)
                      for e in (o_e, n_e)]
        if conditions[0] != conditions[1]:  # a returned bool that became a size, or back: changed
            pending.append((what, o, n, None))
        elif conditions[0]:
            if o_e != n_e:
                pending.append((what, o, n, sympy.Equivalent(o_e, n_e)))
        elif sympy.expand(o_e - n_e) != 0:
            pending.append((what, o, n, sympy.Eq(o_e, n_e)))

    for p in po:
        if p not in at_n:
            continue
        i, j = at_o[p], at_n[p]
        (oshape, odt), (nshape, ndt) = old.outputs[i], new.outputs[j]
        if odt != ndt:
            changes.append(Change(f"{p}: dtype {odt} -> {ndt}", False, output=True))
        ov, nv = old.output_values.get(i), new.output_values.get(j)
        if ov is not None and nv is not None:
            compare(p, ov, nv)
        elif (ov is None) != (nv is None) and (oshape is None) == (nshape is None):
            changes.append(Change(f"{p}: {'a size' if nv is not None else 'no size'} now", False, output=True))
        if oshape is None or nshape is None:
            if (oshape is None) != (nshape is None):
                now = "an array" if nshape is not None else "no array"
                changes.append(Change(f"{p}: {now} now", False, output=True))
            continue
        if len(oshape) != len(nshape):
            changes.append(Change(f"{p}: rank {len(oshape)} -> {len(nshape)}", False, output=True))
            continue
        for axis, (o, n) in enumerate(zip(oshape, nshape)):
            compare(f"{p}.shape[{axis}]", o, n)
    verdicts: dict = {}  # what -> True (equal), or "budget" (no time was left to ask)
    if pending:
        try:
            # equal wherever both admit the sizes: where only OLD does, NEW refuses the call (a
            # narrowing, listed as one), and NEW's sizes there mean nothing
            s.assume(sympy.And(_admits(old, var), _admits(new, var)))
            for what, _o, _n, same in pending:
                v = s.implies(same) if same is not None else None
                verdicts[what] = "budget" if v is not None and v.via == "budget" else v is not None and v.proved
        except _BudgetSpent:
            verdicts = {q[0]: "budget" for q in pending}
        except Exception:  # noqa: BLE001 - a size the solver cannot read: reported as changed
            pass
    for what, o, n, _same in pending:
        if verdicts.get(what) is not True:
            changes.append(Change(f"{what}: {_text(o)} -> {_text(n)}", False, output=True,
                                  undecided=verdicts.get(what) == "budget"))
    return changes


def _container(node: dict) -> str:
    kind = node.get("type")
    if kind in ("None", "tuple", "list", "dict"):
        return str(kind)
    if kind == "namedtuple":
        return f"namedtuple {node.get('name')}"
    return f"dataclass {kind}"


def _children_by_key(node: dict) -> dict:
    """Key -> (path piece, child node) of one container of a treespec's JSON form; a dict's
    children by key (its order is no change), a dataclass's ``None`` fields as ``None`` nodes."""
    from ..pytree import key_str

    kind, kids = node.get("type"), list(node.get("children") or [])
    if kind in ("tuple", "list"):
        return {i: (key_str(kind, i), c) for i, c in enumerate(kids)}
    if kind == "dict":
        keys = [k.get("v") if isinstance(k, dict) else k for k in node.get("keys") or []]
        return {(type(k).__name__, k): (key_str("dict", k), c) for k, c in zip(keys, kids)}
    out = {f: (key_str(kind, f), c) for f, c in zip(node.get("fields") or [], kids)}
    for f in node.get("none_fields") or []:
        out[f] = (key_str(kind, f), {"type": "None"})
    return out


def _holds_leaves(node: Any) -> bool:
    return isinstance(node, dict) and (node.get("type") == "leaf" or any(
        _holds_leaves(c) for c in node.get("children") or []))


def _structure_changes(o: Any, n: Any, path: str) -> list[Change]:
    """Container changes between two output treespecs (JSON form): a tuple that became a list,
    a ``None`` (or an empty container) returned on one side only.  Leaves are not compared here:
    an output added, removed or changed is found by its place (``out[1]``)."""
    if not isinstance(o, dict) or not isinstance(n, dict) or "leaf" in (o.get("type"), n.get("type")):
        return []
    out = []
    if _container(o) != _container(n):
        out.append(Change(f"{path}: {_container(o)} -> {_container(n)}", False, output=True))
    if "None" in (o.get("type"), n.get("type")):
        return out
    co, cn = _children_by_key(o), _children_by_key(n)
    for key, (piece, child) in co.items():
        if key in cn:
            out += _structure_changes(child, cn[key][1], path + piece)
        elif not _holds_leaves(child):  # nothing there that the places of the outputs would show
            out.append(Change(f"{path}{piece}: {_container(child)} no longer returned", False, output=True))
    for key, (piece, child) in cn.items():
        if key not in co and not _holds_leaves(child):
            out.append(Change(f"{path}{piece}: {_container(child)} now returned", False, output=True))
    return out


def _input_diff(old: Contract, new: Contract, timeout_ms: int) -> ContractDiff:
    """Whether NEW admits every input size OLD admits (the solver decides); no changes listed yet."""
    from solver import ShapeSolver

    s = ShapeSolver(timeout_ms=timeout_ms)
    var: dict = {}
    names: dict = {}
    for key, d in _site_keys(old):
        sym = s.declare(f"v{len(var)}", lower=0, upper=None)
        var[key] = sym
        if isinstance(d, sympy.Basic) and not d.is_Integer:  # static sizes need no witness
            names[sym.name] = _site_text(key)
    question = "whether NEW admits every size OLD admits"
    try:
        s.assume(_admits(old, var))
        verdict = s.implies(_admits(new, var))
    except _BudgetSpent as err:
        return ContractDiff(None, [], None, f"the solver could not decide: {err}", undecided=[question])
    except Exception as err:  # noqa: BLE001 - an untranslatable guard: say so, stay conservative
        return ContractDiff(None, [], None, f"the solver could not decide: {type(err).__name__}: {err}")
    if verdict.status == "proved":
        if _admits_all(new, old, var, timeout_ms):
            # same admitted sizes (e.g. dims renamed, a bound written as a range or as a guard): no change
            return ContractDiff(False, [], None, _SAME)
        return ContractDiff(False, [], None, "proved: every size OLD admits, NEW admits")
    if verdict.status == "refuted":
        cex = verdict.counterexample or {}
        witness = {site: int(cex[k]) for k, site in names.items() if k in cex}
        return ContractDiff(True, [], witness, "refuted: some sizes OLD admits, NEW refuses")
    return ContractDiff(None, [], None, f"the solver could not decide: {verdict.reason}",
                        undecided=[question] if verdict.via == "budget" else [])


def _admits_all(a: Contract, b: Contract, var: dict, timeout_ms: int) -> bool:
    """True when the solver proves every size ``a`` admits, ``b`` admits (over the same site variables)."""
    from solver import ShapeSolver

    s = ShapeSolver(timeout_ms=timeout_ms)
    sites = {}
    for key, v in var.items():
        sites[key] = s.declare(v.name, lower=0, upper=None)
    try:
        s.assume(_admits(a, sites))
        return s.implies(_admits(b, sites)).status == "proved"
    except Exception:  # noqa: BLE001 - undecided means "not proved the same"; the changes stay listed
        return False


def program_named(path: str, model: str) -> Any:
    """The program called ``model`` in the archive at ``path`` (``package_pt2`` writes several).

    Raises:
        KeyError: no program of that name (the message lists the archive's).
    """
    from ..serde import load_pt2

    programs = load_pt2(path).exported_programs
    if model not in programs:
        raise KeyError(f"{path} holds the programs {sorted(programs)}, none named {model!r}")
    return programs[model]


@dataclass
class PackageDiff:
    """:func:`diff_packages`: per program name present in both archives its :class:`ContractDiff`;
    the names OLD holds and NEW lacks (``removed``: a caller of that program breaks) and the
    names only NEW holds (``added``: no caller of OLD uses them)."""

    programs: dict = field(default_factory=dict)
    removed: list = field(default_factory=list)
    added: list = field(default_factory=list)

    @property
    def breaking(self) -> bool:
        return bool(self.removed) or any(d.breaking for d in self.programs.values())

    def __str__(self) -> str:
        broken = sorted(n for n, d in self.programs.items() if d.breaking) + self.removed
        out = [f"{len(broken)} of {len(self.programs) + len(self.removed)} programs of OLD break in NEW"
               + (f": {', '.join(broken)}" if broken else "")]
        out += [f"program {n!r}: removed (NEW does not hold it)" for n in self.removed]
        out += [f"program {n!r}: added" for n in self.added]
        for name, d in sorted(self.programs.items()):
            out.append(f"program {name!r}: " + str(d).replace("\n", "\n  "))
        return "\n".join(out)

    def to_json(self) -> dict:
        return {"breaking": self.breaking, "removed": list(self.removed), "added": list(self.added),
                "programs": {n: d.to_json() for n, d in sorted(self.programs.items())}}


def diff_packages(old: dict, new: dict, timeout_ms: int = 2000) -> PackageDiff:
    """Diff two archives' programs by name (``{name: Contract}``, as :func:`load_contracts` gives)."""
    return PackageDiff({n: diff_contracts(old[n], new[n], timeout_ms) for n in old if n in new},
                       sorted(n for n in old if n not in new), sorted(n for n in new if n not in old))
