"""Graph IR: a small, closed set of nodes that capture builds and codegen runs.

A :class:`Graph` is a doubly linked list of :class:`Node` objects in execution
order.  It hands out unique Python-identifier names in O(1) (amortized), keeps
each node's ``users`` up to date, and checks its own invariants in
:meth:`Graph.lint`.  The IR knows nothing of how it was captured: ops are named
by op-registry strings (``"numpy.add"``), never by Python objects, so a graph
can be serialized to JSON and resolved again by name.

Allowed argument values (what serialization must handle): :class:`Node`,
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, numpy scalars
(exact type kept: ``np.float64(2.0)`` is not ``2.0``), ``np.dtype``, ``slice``,
``Ellipsis``, ``sympy.Expr`` / ``sympy.Basic`` booleans (symbolic sizes), and
tuples / lists / dicts (str keys) of these.
"""
from __future__ import annotations

import builtins
import contextlib
import keyword
import re
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ..records import is_sympy, source_name, sympy, sympy_class

OPCODES = ("placeholder", "get_attr", "call_function", "output")
# Opcodes of a program's functional graph (what an archive may hold): state is a
# placeholder there; ``get_attr`` appears only in ``ExportedProgram.module()``.
FUNCTIONAL_OPCODES = ("placeholder", "call_function", "output")

# Names generated code must never bind: keywords, builtins (pyexpr prints
# min()/max()), the numpy module alias, the method receiver and codegen's helpers.
_RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"np", "self", "forward", "math_floor"}
_NOT_IDENT = re.compile(r"[^0-9a-zA-Z_]")


class Namespace:
    """Unique identifiers in O(1) amortized time.

    ``create("add")`` returns ``add``, then ``add_1``, ``add_2``...; a keyword,
    builtin or reserved base gets a suffix (``sum`` -> ``sum_1``).
    """

    def __init__(self, reserved: Optional[frozenset[str] | set[str]] = None) -> None:
        self._used: set[str] = set()
        self._counters: dict[str, int] = {}
        self._reserved = _RESERVED if reserved is None else reserved

    @staticmethod
    def sanitize(base: str) -> str:
        """Turn any text into a Python identifier (``x.shape`` -> ``x_shape``)."""
        if type(base) is str and base.isascii() and base.isidentifier():
            return base  # ASCII identifier characters, no leading digit: nothing to replace
        name = _NOT_IDENT.sub("_", str(base)) or "_"
        if name[0].isdigit():
            name = f"_{name}"
        return name

    def create(self, base: str) -> str:
        base = self.sanitize(base)
        if base not in self._used and base not in self._reserved:
            self._used.add(base)
            return base
        n = self._counters.get(base, 0)
        while True:
            n += 1
            candidate = f"{base}_{n}"
            if candidate not in self._used and candidate not in self._reserved:
                break
        self._counters[base] = n
        self._used.add(candidate)
        return candidate

    def add(self, name: str) -> None:
        """Mark an existing name as taken (raises ValueError if already taken)."""
        if name in self._used:
            raise ValueError(f"name {name!r} is already used in this graph")
        self._used.add(name)

    def discard(self, name: str) -> None:
        self._used.discard(name)

    def __contains__(self, name: str) -> bool:
        return name in self._used or name in self._reserved


def _map_leaves(value: Any, kind: type, fn: Callable[[Any], Any]) -> Any:
    """Rebuild ``value`` with every ``kind`` instance replaced by ``fn(leaf)``.

    Recurses into tuples, lists, dicts and slices; everything else is returned as is.
    """
    if isinstance(value, kind):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map_leaves(v, kind, fn) for v in value)
    if isinstance(value, list):
        return [_map_leaves(v, kind, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_leaves(v, kind, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(_map_leaves(value.start, kind, fn), _map_leaves(value.stop, kind, fn),
                     _map_leaves(value.step, kind, fn))
    return value


def map_arg(value: Any, fn: Callable[["Node"], Any]) -> Any:
    """Rebuild ``value`` with every Node replaced by ``fn(node)``.

    Recurses into tuples, lists, dicts and slices; everything else is returned as is.
    """
    return _map_leaves(value, Node, fn)


def map_exprs(value: Any, fn: Callable[[sympy.Basic], Any]) -> Any:
    """Rebuild ``value`` with every sympy expression (symbolic int or bool) replaced by ``fn(expr)``."""
    return _map_leaves(value, sympy_class(), fn)


def _iter_leaves(value: Any, kind: type) -> Iterator[Any]:
    """Every ``kind`` instance inside an argument value, in order (duplicates included)."""
    if isinstance(value, kind):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _iter_leaves(v, kind)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _iter_leaves(v, kind)
    elif isinstance(value, slice):
        for v in (value.start, value.stop, value.step):
            yield from _iter_leaves(v, kind)


def iter_nodes(value: Any) -> Iterator["Node"]:
    """Every Node inside an argument value, in order (duplicates included)."""
    return _iter_leaves(value, Node)


def _input_nodes(args: tuple, kwargs: dict) -> tuple["Node", ...]:
    """Distinct Nodes in ``args`` and ``kwargs``, first-use order (what iter_nodes yields, deduplicated).

    A loop over the common flat case (Nodes and scalars at the top level) with
    recursion only into containers: no generator frames per value.
    """
    found: dict[Node, None] = {}
    for v in args:
        if type(v) is Node:
            found[v] = None
        elif isinstance(v, (tuple, list, dict, slice, Node)):
            _collect(v, found)
    if kwargs:
        for v in kwargs.values():
            if type(v) is Node:
                found[v] = None
            elif isinstance(v, (tuple, list, dict, slice, Node)):
                _collect(v, found)
    return tuple(found)


def _collect(value: Any, found: dict) -> None:
    if isinstance(value, Node):
        found[value] = None
    elif isinstance(value, (tuple, list)):
        for v in value:
            _collect(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, found)
    elif isinstance(value, slice):
        _collect(value.start, found)
        _collect(value.stop, found)
        _collect(value.step, found)


def iter_exprs(value: Any) -> Iterator[sympy.Basic]:
    """Every sympy expression inside an argument value (symbolic ints and bools)."""
    return _iter_leaves(value, sympy_class())


class Node:
    """One operation of a :class:`Graph`.

    Opcodes (``op``):

    - ``"placeholder"``: a graph input.  ``target`` is the input's name (the
      generated function's parameter); ``args``/``kwargs`` are empty.
    - ``"get_attr"``: an attribute of the module running the graph (``self``).
      ``target`` is a dotted path (``"fc.weight"``, ``"layers.0.bias"``);
      ``args``/``kwargs`` are empty.  Only the graph of
      ``ExportedProgram.module()`` has them (its lifted state read back as attributes).
    - ``"call_function"``: ``target`` is an op-registry name (``"numpy.add"``,
      ``"numpy.ndarray.reshape"``, ``"tpe.check_input"``); the op's callable is
      called with ``args``/``kwargs``, in which Nodes stand for the values
      they produced and sympy expressions for symbolic ints/bools.
    - ``"output"``: the single graph result.  ``target`` is ``"output"`` and
      ``args == (values,)`` with ``values`` a flat list of Nodes / constants.

    ``meta`` keys (all optional except ``shape`` on array-valued nodes, which
    :meth:`Graph.lint` requires on placeholders and call_function nodes unless
    ``meta["shape"]`` is explicitly ``None`` for a non-array value):

    - ``"shape"``: ``tuple[int | sympy.Expr, ...]`` symbolic shape, or None;
    - ``"dtype"``: ``np.dtype``;
    - ``"source"``: ``records.SourceLoc`` of the user's line, or None;
    - ``"module_path"``: dotted fqn of the module whose forward made the node;
    - ``"bind"``: ``{axis: sympy.Symbol}`` symbols whose runtime value is this
      node's ``.shape[axis]``; the key ``None`` means the node's value itself
      is the (int) value of the symbol.  Codegen emits the binding right after
      the node.

    ``users`` maps every node that reads this one to None (an ordered set).
    """

    __slots__ = ("graph", "name", "op", "target", "_args", "_kwargs", "meta", "users",
                 "_inputs", "_prev", "_next", "_erased")

    def __init__(self, graph: Optional["Graph"], name: str, op: str, target: str,
                 args: tuple = (), kwargs: Optional[dict] = None, meta: Optional[dict] = None,
                 input_nodes: Optional[tuple] = None) -> None:
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.meta: dict = dict(meta) if meta else {}
        self.users: dict[Node, None] = {}
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        # what _set_inputs does for a node that reads nothing yet (a graph builds thousands)
        self._args: tuple = tuple(args)
        self._kwargs: dict = dict(kwargs) if kwargs else {}
        self._inputs: tuple[Node, ...] = _input_nodes(self._args, self._kwargs) if input_nodes is None else input_nodes
        for new in self._inputs:
            new.users[self] = None

    # -- inputs ---------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._set_inputs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict) -> None:
        self._set_inputs(self._args, dict(value))

    def _set_inputs(self, args: tuple, kwargs: dict, inputs: Optional[tuple] = None) -> None:
        for old in self._inputs:
            old.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        self._inputs = _input_nodes(args, kwargs) if inputs is None else inputs
        for new in self._inputs:
            new.users[self] = None

    @property
    def all_input_nodes(self) -> list["Node"]:
        """Distinct Nodes read by this node, first-use order."""
        return list(self._inputs)

    def replace_all_uses_with(self, replacement: Any) -> list["Node"]:
        """Make every user read ``replacement`` instead of this node; returns the users changed."""
        users = list(self.users)
        for user in users:
            swap = (lambda n: replacement if n is self else n)
            user._set_inputs(map_arg(user._args, swap), map_arg(user._kwargs, swap))
        return users

    def replace_input_with(self, old: "Node", new: Any) -> None:
        swap = (lambda n: new if n is old else n)
        self._set_inputs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # -- navigation ----------------------------------------------------------
    @property
    def next(self) -> "Node":
        return self._next

    @property
    def prev(self) -> "Node":
        return self._prev

    # -- printing ------------------------------------------------------------
    def format_node(self) -> str:
        """One stable line: ``name = op[target](args) :: shape dtype``."""
        parts = [_fmt(a) for a in self._args]
        parts += [f"{k}={_fmt(v)}" for k, v in self._kwargs.items()]
        text = f"{self.name} = {self.op}[{self.target}]({', '.join(parts)})"
        if "shape" in self.meta and self.meta["shape"] is not None:
            text += f" :: ({', '.join(str(d) for d in self.meta['shape'])}{',' if len(self.meta['shape']) == 1 else ''})"
            dtype = self.meta.get("dtype")
            if dtype is not None:
                text += f" {np.dtype(dtype)}"
        bind = self.meta.get("bind")
        if bind:
            text += " bind{" + ", ".join(f"{k}: {v}" for k, v in bind.items()) + "}"
        return text

    def __repr__(self) -> str:
        return self.name


def _fmt(value: Any) -> str:
    """Stable text of an argument value for dumps and error messages."""
    if isinstance(value, Node):
        return f"%{value.name}"
    if isinstance(value, tuple):
        inner = ", ".join(_fmt(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, slice):
        return f"slice({_fmt(value.start)}, {_fmt(value.stop)}, {_fmt(value.step)})"
    if isinstance(value, np.dtype):
        return f"dtype({value})"
    if value is Ellipsis:
        return "..."
    if is_sympy(value):
        return str(value)
    return repr(value)


class Graph:
    """An ordered, linted container of :class:`Node` objects.

    Nodes are appended at the insertion point (the end, unless inside
    :meth:`inserting_before` / :meth:`inserting_after`).  Names are unique
    identifiers that shadow no keyword, builtin, ``np`` or ``self``.
    """

    _order: Optional[list[Node]] = None  # see __init__ (the class value serves graphs pickled before it)

    def __init__(self) -> None:
        self._root = Node(None, "_root", "root", "")
        self._namespace = Namespace()
        self._insert_before: Node = self._root   # insert new nodes before this one
        self._len = 0
        # the nodes in execution order, kept until a node is inserted or erased: codegen, the
        # loader's checks and the module view each ask for them (a walk of the list each time)
        self._order: Optional[list[Node]] = None

    # -- iteration -----------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """A snapshot list of the nodes in execution order."""
        order = self._order
        if order is None:
            order = []
            n = self._root._next
            while n is not self._root:
                order.append(n)
                n = n._next
            self._order = order
        return list(order)  # the caller's own list

    def __len__(self) -> int:
        return self._len

    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.op == "placeholder"]

    @property
    def output_node(self) -> Optional[Node]:
        last = self._root._prev
        return last if last.op == "output" else None

    # -- construction --------------------------------------------------------
    def create_node(self, op: str, target: str, args: tuple = (), kwargs: Optional[dict] = None,
                    name: Optional[str] = None, meta: Optional[dict] = None,
                    input_nodes: Optional[tuple] = None) -> Node:
        """Create a node at the insertion point; ``name`` is a hint made unique.

        ``input_nodes``: the distinct Nodes inside ``args``/``kwargs`` in
        first-use order, when the caller already has them (capture does): the
        node then costs O(inputs) instead of a walk of the arguments.  Giving a
        wrong tuple breaks ``users``; :meth:`lint` reports it.

        Raises:
            ValueError: unknown ``op``.
        """
        if op not in OPCODES:
            raise ValueError(f"unknown opcode {op!r}; expected one of {OPCODES}")
        unique = self._namespace.create(name or _hint_from_target(target))
        node = Node(self, unique, op, target, args, kwargs, meta,
                    None if input_nodes is None else tuple(input_nodes))
        before = self._insert_before
        node._prev, node._next = before._prev, before
        before._prev._next = node
        before._prev = node
        self._len += 1
        self._order = None
        return node

    def placeholder(self, name: str, meta: Optional[dict] = None) -> Node:
        """A graph input; ``target`` keeps ``name`` as given, ``node.name`` is its identifier."""
        return self.create_node("placeholder", name, name=name, meta=meta)

    def get_attr(self, target: str, meta: Optional[dict] = None, name_hint: Optional[str] = None) -> Node:
        """A read of attribute path ``target`` (``"fc.weight"``) on the module running the graph."""
        return self.create_node("get_attr", target, name=name_hint or target.replace(".", "_"), meta=meta)

    def call_function(self, target: str, args: tuple = (), kwargs: Optional[dict] = None,
                      meta: Optional[dict] = None, name_hint: Optional[str] = None,
                      input_nodes: Optional[tuple] = None) -> Node:
        """A call of op-registry name ``target`` (e.g. ``"numpy.add"``); ``input_nodes`` as for create_node."""
        return self.create_node("call_function", target, args, kwargs, name=name_hint, meta=meta,
                                input_nodes=input_nodes)

    def output(self, values: list) -> Node:
        """The graph result: a flat list of Nodes / constants."""
        return self.create_node("output", "output", (list(values),), name="output")

    @contextlib.contextmanager
    def inserting_before(self, node: Optional[Node] = None):
        """New nodes go right before ``node`` (None: at the end) inside the ``with`` block."""
        saved = self._insert_before
        self._insert_before = self._root if node is None else node
        try:
            yield
        finally:
            self._insert_before = saved

    @contextlib.contextmanager
    def inserting_after(self, node: Node):
        """New nodes go right after ``node`` (in creation order) inside the ``with`` block."""
        with self.inserting_before(node._next):
            yield

    def erase_node(self, node: Node) -> None:
        """Remove a node nobody reads.

        Raises:
            RuntimeError: the node still has users.
        """
        if node.users:
            raise RuntimeError(f"cannot erase node {node.name!r}: still used by "
                               f"{[u.name for u in node.users]}")
        if node._erased or node.graph is not self:
            raise RuntimeError(f"node {node.name!r} is not in this graph")
        node._set_inputs((), {})
        node._prev._next = node._next
        node._next._prev = node._prev
        if self._insert_before is node:
            self._insert_before = node._next
        node._erased = True
        self._namespace.discard(node.name)
        self._len -= 1
        self._order = None

    def replace_all_uses_with(self, old: Node, new: Any) -> list[Node]:
        return old.replace_all_uses_with(new)

    def eliminate_dead_code(self, is_impure: Optional[Callable[[Node], bool]] = None) -> bool:
        """Erase call_function nodes without users; True if any went.

        Kept: nodes for which ``is_impure(node)`` is true and nodes that bind
        symbols (``meta["bind"]``).  Programs pass the op registry's
        side-effect flag (the runtime input checks) as ``is_impure``.
        """
        changed = False
        for node in reversed(self.nodes):
            if (node.op == "call_function" and not node.users and not node.meta.get("bind")
                    and not (is_impure and is_impure(node))):
                self.erase_node(node)
                changed = True
        return changed

    def copy(self) -> tuple["Graph", dict[Node, Node]]:
        """An independent copy (meta dicts copied shallowly) and the old->new node map."""
        new = Graph()
        mapping: dict[Node, Node] = {}
        for node in self.nodes:
            args = map_arg(node.args, mapping.__getitem__)
            kwargs = map_arg(node.kwargs, mapping.__getitem__)
            copy = Node(new, node.name, node.op, node.target, args, kwargs, node.meta)
            if "bind" in copy.meta:
                copy.meta["bind"] = dict(copy.meta["bind"])
            new._namespace.add(node.name)
            before = new._root
            copy._prev, copy._next = before._prev, before
            before._prev._next = copy
            before._prev = copy
            new._len += 1
            new._order = None
            mapping[node] = copy
        return new, mapping

    # -- checking ------------------------------------------------------------
    def lint(self) -> None:
        """Check the graph's invariants.

        Checks: known opcodes; every node belongs to this graph; names unique,
        valid identifiers and not reserved; every input is defined earlier
        (topological order) and in this graph; ``users`` agrees with the
        inputs; placeholders come first (get_attr nodes may sit among them);
        get_attr targets are dotted paths; exactly one output, last; placeholder,
        get_attr and call_function nodes carry ``meta["shape"]`` (None allowed for
        non-array values) and ``meta["bind"]`` names sympy Symbols.

        Raises:
            RuntimeError: naming the node and the broken rule, followed by the graph dump.
        """
        from .stored import is_symbol

        seen: set[Node] = set()
        names: set[str] = set()
        saw_compute = False
        outputs = 0

        def fail(msg: str) -> None:
            raise RuntimeError(f"lint: node {node.name!r}: {msg}\n{self}")
        for node in self.nodes:
            if node.graph is not self or node._erased:
                fail("belongs to another graph or was erased")
            if node.op not in OPCODES:
                fail(f"unknown opcode {node.op!r}")
            if not source_name(node.name) or node.name in _RESERVED:
                fail("name is not a usable Python identifier")
            if node.name in names:
                fail("duplicate name")
            names.add(node.name)
            if outputs:
                fail("node after the output node")
            if node._inputs != _input_nodes(node._args, node._kwargs):
                fail("its recorded input nodes differ from the Nodes in its arguments")
            for inp in node._inputs:
                if inp not in seen:
                    fail(f"input %{inp.name} is not defined before this node in this graph")
                if node not in inp.users:
                    fail(f"missing from the users of %{inp.name}")
            for user in node.users:
                if node not in user._inputs:
                    fail(f"lists %{user.name} as a user, but that node does not read it")
            if node.op == "placeholder":
                if saw_compute:
                    fail("placeholder after a call_function node")
                if node.args or node.kwargs:
                    fail("placeholder with arguments")
            elif node.op == "get_attr":
                if node.args or node.kwargs:
                    fail("get_attr with arguments")
                if not isinstance(node.target, str) or not all(p.isidentifier() or p.isdigit()
                                                              for p in node.target.split(".")):
                    fail(f"get_attr target must be a dotted attribute path, got {node.target!r}")
            elif node.op == "call_function":
                saw_compute = True
                if not isinstance(node.target, str) or not node.target:
                    fail(f"call_function target must be a registry name string, got {node.target!r}")
            else:
                outputs += 1
                if len(node.args) != 1 or not isinstance(node.args[0], (list, tuple)):
                    fail("output must have args == (list_of_values,)")
            if node.op != "output":
                if "shape" not in node.meta:
                    fail("meta['shape'] is missing")
                for key, sym in (node.meta.get("bind") or {}).items():
                    if not is_symbol(sym):  # a sympy Symbol, or a loaded program's stored one
                        fail(f"meta['bind'][{key!r}] = {sym!r} is not a sympy.Symbol")
            seen.add(node)
        if outputs != 1:
            raise RuntimeError(f"lint: graph must end with exactly one output node, found {outputs}\n{self}")

    # -- printing ------------------------------------------------------------
    def __str__(self) -> str:
        """Stable text dump, one node per line in execution order."""
        return "\n".join(n.format_node() for n in self.nodes)

    def __repr__(self) -> str:
        return f"<Graph with {self._len} nodes>"


def _hint_from_target(target: str) -> str:
    """``"numpy.ndarray.reshape"`` -> ``"reshape"``; ``"tpe.check_input"`` -> ``"check_input"``."""
    return str(target).rsplit(".", 1)[-1] or "node"
