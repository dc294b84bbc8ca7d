"""Decomposition tables and the pass that applies them to a program.

A table maps a graph target to a ``builder(graph, node)``.  The builder is
called with the graph's insertion point right before ``node``; it creates the
replacement nodes (``graph.call_function`` with registry primitives, or
:func:`~tensorplay_export.decompositions.traced_builder` over plain numpy code)
and returns the value users of ``node`` should read: a Node, or a list of
Nodes for a multi-output op (one per ``tpe.item`` index).  It may return
``NotImplemented`` to keep the node.

Keys are normalized to registry names, so the op callable (``np.var``,
``nn.functional.softmax``), a method or short name (``"var"``, ``"softmax"``)
and the target string (``"numpy.var"``) address one entry.  A short name
looks up the one entry of that name when its numpy name has none: ``"tanh"``
is the primitive ``numpy.tanh`` (never decomposed), so ``"tanh" in table``
finds the composite ``tpe.nn.tanh`` (``nn.functional.tanh``); a short name
with entries in two namespaces is refused as ambiguous.  The function and
``ndarray`` method forms of an op share their entry (``"numpy.ndarray.var"``
is ``"numpy.var"``): a ``var`` entry rewrites both kinds of node.

Example::

    table = default_decompositions()
    table.remove(np.var)                      # keep numpy.var nodes
    table["softmax"] = my_softmax_builder     # same key as nn.functional.softmax
    ep2 = ep.run_decompositions(table)
"""
from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, Callable, Iterator, Optional

from ...capture.exclusive import exclusive
from ...graph.ir import Node
from ..build import compile_module

__all__ = ["CustomDecompTable", "default_decompositions", "canonical_target", "apply_decompositions",
           "run_decompositions"]

_MAX_ROUNDS = 16


def canonical_target(key: Any) -> Optional[str]:
    """The registry name ``key`` stands for, or None if it names no registered op.

    ``key`` may be an op callable (numpy function, ufunc, ``nn.functional``
    function, ``np.ndarray.var``), an ``OpDef``, a registry name, an ``ndarray``
    method name or a short name (``"softmax"`` -> ``"tpe.nn.softmax"``).  Method
    forms map to the function form when numpy has one.
    """
    from ...ops.registry import OpDef, has_op, lookup_func, lookup_method

    name: Optional[str] = None
    if isinstance(key, str):
        if has_op(key):
            name = key
        elif lookup_method(key) is not None:
            name = lookup_method(key).name
        else:
            name = next((f"{p}{key}" for p in ("numpy.", "tpe.nn.", "tpe.") if has_op(f"{p}{key}")), None)
    elif isinstance(key, OpDef):
        name = key.name
    elif callable(key):
        op_name = getattr(key, "op_name", None)
        if isinstance(op_name, str) and has_op(op_name):
            name = op_name
        else:
            for candidate in (key, getattr(key, "__wrapped__", None)):
                op = lookup_func(candidate) if candidate is not None else None
                if op is not None:
                    name = op.name
                    break
            if name is None and getattr(key, "__objclass__", None) is not None:
                import numpy as np

                if key.__objclass__ is np.ndarray and lookup_method(key.__name__) is not None:
                    name = lookup_method(key.__name__).name
    if name is not None and name.startswith("numpy.ndarray."):
        plain = "numpy." + name[len("numpy.ndarray."):]
        if has_op(plain):
            name = plain
    return name


def _key(key: Any) -> str:
    name = canonical_target(key)
    if name is None:
        raise KeyError(key)
    return name


def _check_value(key: Any, value: Any) -> None:
    if not callable(value):
        raise TypeError(f"decomposition for {key!r} must be a callable builder(graph, node), "
                        f"got {type(value).__name__} {value!r}")


class CustomDecompTable(MutableMapping):
    """A validated mutable mapping from graph targets to ``builder(graph, node)`` callables.

    Args:
        entries: a mapping or iterable of ``(target, builder)`` pairs, applied
            after the defaults (so they override them).
        defaults: start from the built-in decompositions (``default_decompositions()``).

    Keys are stored as registry names (see :func:`canonical_target`); iteration
    yields those names in insertion order.

    Raises:
        TypeError: a value is not callable (on construction and every insertion).
        KeyError: a key names no registered op (insertion), or has no entry (lookup).
    """

    def __init__(self, entries: Mapping[Any, Callable[..., Any]] | Iterable[tuple[Any, Callable[..., Any]]]
                 | None = None, *, defaults: bool = True) -> None:
        self._data: dict[str, Callable[..., Any]] = {}
        if defaults:
            from . import builtin_builders

            self._data.update(builtin_builders())
        if entries is not None:
            self.update(entries)

    # -- the mapping protocol ------------------------------------------------------
    def _entry(self, key: Any) -> Optional[str]:
        """The entry name ``key`` looks up: its registry name, or for a short name whose
        registry name has no entry (``"tanh"`` is the primitive ``numpy.tanh``) the one
        entry of that short name under another namespace (``tpe.nn.tanh``).

        Raises:
            KeyError: a short name with entries under several namespaces (naming them).
        """
        name = canonical_target(key)
        if name in self._data or not isinstance(key, str) or "." in key:
            return name
        hits = [n for n in self._data if n.rsplit(".", 1)[-1] == key]
        if len(hits) > 1:
            raise KeyError(f"{key!r} is ambiguous in this table: {', '.join(hits)}; use the full name")
        return hits[0] if hits else name

    def __getitem__(self, key: Any) -> Callable[..., Any]:
        name = self._entry(key)
        if name is None or name not in self._data:
            raise KeyError(key)
        return self._data[name]

    def __setitem__(self, key: Any, value: Callable[..., Any]) -> None:
        _check_value(key, value)
        name = canonical_target(key)
        if name is None:
            raise KeyError(f"{key!r} names no op in the op registry, so no graph node can have it as target")
        self._data[name] = value

    def __delitem__(self, key: Any) -> None:
        name = self._entry(key)
        if name is None or name not in self._data:
            raise KeyError(key)
        del self._data[name]

    def __contains__(self, key: object) -> bool:
        try:
            name = self._entry(key)
        except (TypeError, KeyError):
            return False
        return name is not None and name in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))

    def __len__(self) -> int:
        return len(self._data)

    def popitem(self) -> tuple[str, Callable[..., Any]]:
        """Remove and return the most recently inserted ``(name, builder)`` pair (LIFO).

        Raises:
            KeyError: the table is empty.
        """
        if not self._data:
            raise KeyError("popitem(): decomposition table is empty")
        return self._data.popitem()

    def setdefault(self, key: Any, default: Any = None) -> Callable[..., Any]:
        """The entry for ``key``; if missing, insert ``default`` (which must be callable) and return it."""
        if key in self:
            return self[key]
        self[key] = default
        return default

    def clear(self) -> None:
        self._data.clear()

    def copy(self) -> "CustomDecompTable":
        """A new table with the same entries (builders shared)."""
        return CustomDecompTable(self._data, defaults=False)

    __copy__ = copy

    @classmethod
    def fromkeys(cls, iterable: Iterable[Any], value: Any = None) -> "CustomDecompTable":
        """A table (no defaults) mapping every key of ``iterable`` to ``value``.

        ``value=None`` (the default) means each key's built-in builder, so
        ``CustomDecompTable.fromkeys(["var", "softmax"])`` is the defaults
        restricted to those ops.

        Raises:
            TypeError: ``value`` is neither None nor callable.
            KeyError: ``value`` is None and a key has no built-in decomposition.
        """
        table = cls(defaults=False)
        builtins = cls(defaults=True) if value is None else None
        for key in iterable:
            if builtins is None:
                table[key] = value
                continue
            name = builtins._entry(key)
            if name is None or name not in builtins._data:
                raise KeyError(f"{key!r} has no built-in decomposition (default_decompositions() lists them)")
            table._data[name] = builtins._data[name]
        return table

    # -- table operations --------------------------------------------------------------
    def remove(self, target: Any) -> Callable[..., Any]:
        """Preserve ``target``: delete its entry and return the builder it had.

        Raises:
            KeyError: ``target`` has no entry.
        """
        name = self._entry(target)
        if name is None or name not in self._data:
            raise KeyError(f"{target!r} has no decomposition entry")
        return self._data.pop(name)

    def materialize(self) -> dict[str, Callable[..., Any]]:
        """A plain ``dict`` of the effective entries (registry name -> builder)."""
        return dict(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CustomDecompTable):
            return self._data == other._data
        if isinstance(other, Mapping):
            try:
                return self._data == {_key(k): v for k, v in other.items()}
            except KeyError:
                return False
        return NotImplemented

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"CustomDecompTable({len(self._data)} entries: {', '.join(self._data)})"


def default_decompositions() -> CustomDecompTable:
    """A fresh, mutable table holding every built-in decomposition."""
    return CustomDecompTable(defaults=True)


# -- the pass --------------------------------------------------------------------------------
def _as_table(decomp_table: Any) -> dict[str, Callable[..., Any]]:
    if decomp_table is None:
        return default_decompositions().materialize()
    if isinstance(decomp_table, CustomDecompTable):
        return decomp_table.materialize()
    if isinstance(decomp_table, (Mapping, list, tuple)):
        return CustomDecompTable(decomp_table, defaults=False).materialize()
    raise TypeError(f"decomp_table must be a CustomDecompTable, a mapping or None, "
                    f"got {type(decomp_table).__name__}")


def _flat_example_inputs(ep: Any) -> Optional[list]:
    """One value per placeholder: lifted state by target, user leaves in order; None if unknown."""
    from ...pytree import tree_flatten
    from ..signature import InputKind

    example = ep.example_inputs or {}
    if "args" not in example and "kwargs" not in example:
        return None
    leaves, _ = tree_flatten((tuple(example.get("args", ())), dict(example.get("kwargs", {}))))
    state = {**ep.constants, **ep.state_dict}
    user = iter(leaves)
    flat = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            try:
                flat.append(next(user))
            except StopIteration:
                return None
        else:
            flat.append(state[spec.target])
    return flat


def _rename_args(value: Any, renames: dict) -> None:
    """Rename TensorArgument-like records (``.name``) in a module call signature, in place."""
    for arg in list(getattr(value, "inputs", None) or []) + list(getattr(value, "outputs", None) or []):
        name = getattr(arg, "name", None)
        if isinstance(name, str) and name in renames:
            arg.name = renames[name]


def apply_decompositions(ep: Any, decomp_table: Any = None) -> Any:
    """A new ExportedProgram with every node whose target has an entry rewritten by its builder.

    Builders run until no node with an entry is left (their output is
    decomposed again, up to 16 rounds).  The copy keeps the signature
    (renamed where an output node was replaced), the runtime input checks, the
    range and equality constraints, the module call graph, the state and the
    example inputs; ``ep`` itself is not modified.

    Raises:
        TypeError: ``decomp_table`` is not a table/mapping/None, or a value is not callable.
        DecompositionError: a builder failed or returned something other than Nodes.
        RuntimeError: the rewritten graph does not lint, or the rewrites never settle.
    """
    from ...graph.codegen import GraphModule
    from . import SESSION, DecompositionError, DecompSession
    from ..build import eliminate_dead_code
    from ..exported import ExportedProgram

    entries = _as_table(decomp_table)
    graph, _ = ep.graph.copy()
    graph.lint()
    signature = ep.graph_signature.clone()
    call_graph = copy.deepcopy(ep.module_call_graph)
    from ..signature import InputKind, InputSpec, TensorArgument

    user_inputs = {getattr(s.arg, "name", None) for s in signature.input_specs if s.kind == InputKind.USER_INPUT}
    # the capture's op overlay (draft programs' opaque ops): the session runs the graph with it,
    # and the new program keeps it
    op_table = getattr(ep.graph_module, "op_table", None)
    session = DecompSession(graph, _flat_example_inputs(ep), ep.range_constraints, user_inputs, op_table)
    names: dict[str, Optional[str]] = {}
    kept: set = set()
    renames: dict[str, str] = {}

    def entry_of(node: Node) -> Optional[str]:
        if node.op != "call_function" or node in kept:
            return None
        if node.target not in names:
            name = canonical_target(node.target)
            names[node.target] = name if name in entries else None
        return names[node.target]

    token = SESSION.set(session)
    try:
        for _round in range(_MAX_ROUNDS):
            todo = [n for n in graph.nodes if entry_of(n) is not None]
            if not todo:
                break
            for node in todo:
                _rewrite(graph, node, entries[entry_of(node)], kept, renames, DecompositionError)
        else:
            left = sorted({n.target for n in graph.nodes if entry_of(n) is not None})
            raise RuntimeError(f"decompositions did not settle after {_MAX_ROUNDS} rounds: builders keep "
                               f"producing {left}")
    finally:
        SESSION.reset(token)
    eliminate_dead_code(graph)
    graph.lint()
    # Arrays builders made from Python data are lifted constants, like export's.
    constants = dict(ep.constants)
    lifted = session.constants
    if lifted:
        by_name = {getattr(s.arg, "name", None): s for s in signature.input_specs}
        specs = []
        for ph in graph.placeholders():
            if ph.name in by_name:
                specs.append(by_name[ph.name])
            elif ph.name in lifted:
                specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(ph.name), ph.name))
                constants[ph.name] = lifted[ph.name]
        signature.input_specs[:] = specs
    # Output specs name the output node's values, position by position.
    for spec, value in zip(signature.output_specs, graph.output_node.args[0]):
        if isinstance(value, Node) and isinstance(getattr(spec.arg, "name", None), str) \
                and type(spec.arg).__name__ == "TensorArgument":
            spec.arg.name = value.name
    for entry in call_graph:
        if entry.signature is not None:
            _rename_args(entry.signature, renames)
    out = ExportedProgram(GraphModule(graph, op_table=op_table, lint=False),  # linted after DCE above
                          signature, example_inputs=ep.example_inputs,
                          dynamic_shapes=ep.dynamic_shapes, module_call_graph=call_graph,
                          range_constraints=dict(ep.range_constraints),
                          equality_constraints=copy.deepcopy(ep.equality_constraints), verifier=ep.verifier,
                          state_dict=ep.state_dict, constants=constants)
    compile_module(out)
    return out


def _rewrite(graph: Any, node: Node, builder: Callable[..., Any], kept: set, renames: dict,
             error: type) -> None:
    """Run one builder on ``node`` and splice its result in."""
    start = node.prev
    with graph.inserting_before(node):
        result = builder(graph, node)
    if result is NotImplemented or result is node:  # the builder keeps the node
        kept.add(node)
        return
    # New nodes inherit the user's line and module path of the node they replace.
    n = start.next
    while n is not node:
        if node.meta.get("source") is not None or "source" not in n.meta:
            n.meta["source"] = node.meta.get("source")
        if node.meta.get("module_path") is not None:
            n.meta["module_path"] = node.meta["module_path"]
        if node.meta.get("module_stack") is not None:
            n.meta["module_stack"] = node.meta["module_stack"]  # unflatten groups calls by it
        n = n.next
    items = [u for u in node.users if u.op == "call_function" and u.target == "tpe.item"]
    if isinstance(result, (list, tuple)):
        if len(items) != len(node.users):
            raise error(f"builder for {node.target} returned {len(result)} values, but {node.name} "
                        "is read directly (not through tpe.item)")
        for item in items:
            value = result[item.args[1]]
            _check_node(value, node, error)
            _splice(graph, item, value, renames)
        graph.erase_node(node)
        return
    _check_node(result, node, error)
    _splice(graph, node, result, renames)


def _check_node(value: Any, node: Node, error: type) -> None:
    if not isinstance(value, Node) or value.graph is not node.graph:
        raise error(f"builder for {node.format_node()} returned {value!r}; it must return a Node "
                    "of the same graph (or a list of Nodes for a multi-output op)")
    want, got = node.meta.get("dtype"), value.meta.get("dtype")
    if want is not None and got is not None and want != got:
        raise error(f"builder for {node.format_node()} produced dtype {got}, but the op gives {want}")


def _splice(graph: Any, old: Node, new: Node, renames: dict) -> None:
    if new is old:
        return
    old.replace_all_uses_with(new)
    for key, value in list(renames.items()):
        if value == old.name:
            renames[key] = new.name
    renames.setdefault(old.name, new.name)
    # Symbols bound by the old node stay bound (by the replacement, whose shape is the same).
    bind = old.meta.get("bind")
    if bind:
        new.meta.setdefault("bind", {}).update(bind)
    graph.erase_node(old)


@exclusive
def run_decompositions(ep: Any, decomp_table: Any = None) -> Any:
    """``ExportedProgram.run_decompositions`` (program.py delegates here)."""
    return apply_decompositions(ep, decomp_table)
