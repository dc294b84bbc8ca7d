"""Python source generation for graphs, and :class:`GraphModule`, which runs it.

Generated code is meant to be read (here ``ep.module()``'s forward of a linear layer and
a tanh)::

    def forward(self, x):
        (
            p_fc_weight,  # self.fc.weight
            p_fc_bias,  # self.fc.bias
        ) = read_attrs(self)
        check_x = tpe_check_input(x, 'x', (None, 8), float32, '(seq, 8)')
        seq = check_x.shape[0]
        del check_x
        tpe_assert_range(seq, 2, 512, 'x.shape[0]', 'seq')
        linear = tpe_nn_linear_out(x, p_fc_weight, p_fc_bias, out=None)
        tanh = numpy_tanh(linear, out=linear)
        del linear
        reshape = numpy_ndarray_reshape(tanh, -1)
        del tanh
        return [reshape]

One statement per node, except that a run of attribute reads (``get_attr`` nodes: the
module's weights) is one statement through an ``operator.attrgetter`` global, each path
beside its name (:meth:`_Emitter.attribute_reads`); symbols are bound from ``meta["bind"]``
right after the node that provides them; each computed value is deleted after its last use
(the capture-traps study measured 1.8x eager for an interpreter that keeps every value,
0.98x for this), while inputs and attributes, which the caller and the module hold for the
whole call anyway, are not; op callables, dtypes and numpy scalar constants are globals of
the compiled function, bound by name, so constants keep their exact numpy type
(``np.float64(2.0)`` is not ``2.0``).

Generated code also knows what eager Python cannot: when a value is read for the last
time.  A ufunc result or a composite's result is written into a dead buffer of the same
shape and dtype (``out=<name>``, :meth:`_Emitter.reused_buffers`), and composites run
through their out-variants (``tpe_nn_gelu_out(..., out=None)``: ``OpDef.out_impl``, the
same operations, each pass after the first in place), bit-identical to eager (issue 19).
"""
from __future__ import annotations

import dataclasses
import functools
import linecache
import math
import operator
import re
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional

import numpy as np

from ..errors import UnsupportedOpError
from ..ops.registry import resolve_op
from ..records import SourceLoc, is_sympy, source_name
from .ir import _RESERVED, Graph, Namespace, Node
from .printing import python_tree, tree_text
from .stored import SizeExpr, holds_stored, materialize_graph, symbol_key, tree_symbols

__all__ = ["python_code", "GraphModule", "GraphOutline", "PythonCode", "attr_text", "compile_python_code",
           "make_global"]


# -- source generation ----------------------------------------------------------

class PythonCode:
    """Result of :func:`python_code`: ``src`` text and the ``globals`` it needs.

    ``recipes``: global name -> how to make that global again in another process, a tuple
    of plain values (``("np",)``, ``("math_floor",)``, ``("op", target)``, ``("op_out", target)``,
    ``("dtype", dtype.str)``, ``("attrgetter", *paths)``); None when some global is an object
    only this process holds (an array, a class), so the code cannot be kept across processes.
    """

    def __init__(self, src: str, globals_: dict[str, Any], fn_name: str,
                 recipes: Optional[dict[str, tuple]] = None) -> None:
        self.src = src
        self.globals = globals_
        self.fn_name = fn_name
        self.recipes = recipes


class _Emitter:
    # The passes over every node read ``Node._args``/``_kwargs``, what the ``args``/``kwargs``
    # properties return: a property read is a Python call, a few per node in every pass.

    def __init__(self, graph: Graph, resolve: Callable[[str], Callable],
                 resolve_out: Optional[Callable[[str], Optional[Callable]]] = None,
                 attrs: Optional[Mapping[Node, str]] = None) -> None:
        self.graph = graph
        # one registry look-up per op name, however many nodes call it
        self.resolve = functools.cache(resolve)
        self.resolve_out = functools.cache(resolve_out) if resolve_out is not None else (lambda target: None)
        nodes = graph.nodes
        self.nodes = nodes
        # node -> attribute path it reads on ``self``: get_attr nodes and the placeholders of ``attrs``
        self.attrs = {n: n.target for n in nodes if n.op == "get_attr"}
        self.attrs.update(attrs or {})
        # Global/variable names must not collide with node names either.
        self.ns = Namespace(_RESERVED | {n.name for n in nodes})
        self.globals: dict[str, Any] = {"np": np, "math_floor": math.floor}
        self.recipes: Optional[dict[str, tuple]] = {"np": ("np",), "math_floor": ("math_floor",)}
        self.ns.add("math_floor")
        self.op_names: dict[Any, str] = {}
        self.dtype_names: dict[np.dtype, str] = {}
        self.const_ids: dict[int, str] = {}
        # symbol key (its tree, :func:`~.stored.symbol_key`) -> variable name: a loaded
        # program's stored symbols and a captured program's sympy ones name alike
        self.sym_names: dict[tuple, str] = {}
        self.trees: dict[Any, Any] = {}  # sympy expression -> its tree (shapes repeat)
        self.texts: dict[Any, str] = {}  # tree -> its Python text
        self.into: set[Node] = set()  # composite calls that have an out-variant (:meth:`writes_into`)
        self.attr_texts: dict[str, str] = {}  # attribute path -> its source text (:meth:`attr_text`)

    # values ---------------------------------------------------------------
    def glob(self, hint: str, value: Any, recipe: Optional[tuple] = None) -> str:
        name = self.ns.create(hint)
        self.globals[name] = value
        if recipe is None:
            self.recipes = None  # a global only this process can make
        elif self.recipes is not None:
            self.recipes[name] = recipe
        return name

    def const(self, value: Any, hint: str) -> str:
        key = id(value)
        if key not in self.const_ids:
            self.const_ids[key] = self.glob(hint, value)
        return self.const_ids[key]

    def arg(self, v: Any, node: Node) -> str:
        # exact types only: a str/int subclass could carry its own __repr__ into the source
        t = type(v)
        if t is int or t is str or t is bool or v is None:
            return repr(v)
        if isinstance(v, Node):
            return v.name
        if v is Ellipsis:
            return "..."
        if type(v) is float:
            return repr(v) if math.isfinite(v) else f"float('{v}')"
        if type(v) is complex and math.isfinite(v.real) and math.isfinite(v.imag):
            return repr(v)
        if isinstance(v, tuple):
            inner = ", ".join(self.arg(a, node) for a in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if isinstance(v, list):
            return "[" + ", ".join(self.arg(a, node) for a in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{self.arg(k, node)}: {self.arg(a, node)}" for k, a in v.items()) + "}"
        if isinstance(v, slice):
            return f"slice({self.arg(v.start, node)}, {self.arg(v.stop, node)}, {self.arg(v.step, node)})"
        if isinstance(v, np.dtype):
            if v not in self.dtype_names:
                hint = str(v) if v.fields is None else "dtype"
                simple = v.fields is None and v.subdtype is None and v.metadata is None
                self.dtype_names[v] = self.glob(hint, v, ("dtype", v.str) if simple else None)
            return self.dtype_names[v]
        if type(v) is SizeExpr or is_sympy(v):
            return self.expr(v, node)
        if isinstance(v, type):
            # Builtins are never shadowed in generated code; numpy scalar types print as np.<name>.
            if v in (bool, int, float, complex, str, object):
                return v.__name__
            if getattr(np, v.__name__, None) is v:
                return f"np.{v.__name__}"
            return self.const(v, v.__name__)
        if isinstance(v, np.generic):
            return self.const(v, f"{type(v).__name__}_c")
        # Arrays and any other object: bound by identity, exact value kept.
        return self.const(v, f"{type(v).__name__}_c")

    def expr(self, v: Any, node: Node) -> str:
        """A size expression (stored tree or sympy) as Python over the bound symbols' variables."""
        if type(v) is SizeExpr:
            tree = v.tree
        else:
            tree = self.trees.get(v)
            if tree is None:
                tree = self.trees[v] = python_tree(v)
        if type(tree) is int:
            return repr(tree)
        text = self.texts.get(tree)
        if text is None:
            names = self.sym_names
            missing = {t[1] for t in tree_symbols(tree) if t not in names}
            if missing:
                raise RuntimeError(
                    f"codegen: node {node.name!r} uses symbol(s) "
                    f"{', '.join(sorted(missing))} before any node binds them (meta['bind'])")
            # a symbol keeps its first variable: the text of a tree printed once stays right
            text = self.texts[tree] = tree_text(tree, names)
        return text

    # statements -------------------------------------------------------------
    def binds(self, node: Node, lines: list[str]) -> None:
        for axis, sym in (node.meta.get("bind") or {}).items():
            if axis is not None and type(axis) is not int:
                # the axis is formatted into source: anything but a plain int is refused
                raise TypeError(f"codegen: node {node.name!r} binds {sym} at axis {axis!r}; axes must be ints")
            key = symbol_key(sym)
            if key in self.sym_names:
                continue  # first binding wins; runtime checks verify the others
            var = self.ns.create(key[1])
            self.sym_names[key] = var
            lines.append(f"{var} = {node.name}" if axis is None else f"{var} = {node.name}.shape[{axis}]")

    def call_text(self, n: Node, out: Optional[Node] = None) -> str:
        """``f(args, kwargs)``; with ``out``, a dead buffer for n's result: ``f(args, kwargs, out=out)``.

        A composite with an out-variant (``OpDef.out_impl``) is called through it, ``out=None``
        without a dead buffer (:data:`OUT_VARIANTS`): its passes write into the arrays it made.
        """
        key: Any = n.target
        variant = out is not None or (OUT_VARIANTS and n in self.into)
        if variant and not isinstance(self.resolve(n.target), np.ufunc):
            key = (n.target, "out")
            if key not in self.op_names:
                self.op_names[key] = self.glob(n.target.replace(".", "_") + "_out", self.resolve_out(n.target),
                                               ("op_out", n.target))
        elif n.target not in self.op_names:
            self.op_names[n.target] = self.glob(n.target.replace(".", "_"), self.resolve(n.target),
                                                ("op", n.target))
        call_args = [a.name if type(a) is Node else self.arg(a, n) for a in n._args]
        for k, v in n._kwargs.items():
            if type(k) is not str:
                raise TypeError(f"codegen: node {n.name!r} has a non-string keyword {k!r}")
            call_args.append(f"{k}={self.arg(v, n)}" if source_name(k) else f"**{{{k!r}: {self.arg(v, n)}}}")
        if key != n.target or out is not None:
            call_args.append(f"out={'None' if out is None else out.name}")
        return f"{self.op_names[key]}({', '.join(call_args)})"

    def inlined_operands(self, nodes: list[Node], index: dict[Node, int],
                         free_at: dict[Node, int]) -> dict[Node, Node]:
        """``{A: B}``: A's call is written inside B's operator expression (``B = x + A(...)``).

        This is how eager code reads ``x + f(y)``: the operand is a temporary
        nobody else holds, so numpy reuses its buffer for the result (temporary
        elision, refcount 1) instead of allocating another array; a named local
        in generated code always has a second reference and never gets this.
        Only for a binary ufunc the registry maps to the plain numpy ufunc
        (``+ - * /`` on an array computes exactly that ufunc), A the node right
        before B, read once and only by B, array-valued, binding nothing and
        dying at B.  A chain of such operands nests one parenthesis per link, so
        a chain is cut after ``_MAX_INLINE_DEPTH`` links (Python's parser refuses
        200 nested parentheses).
        """
        out: dict[Node, Node] = {}
        depth: dict[Node, int] = {}  # links of inlined operands nested inside a node's text
        for i, b in enumerate(nodes):
            spec = _ELIDABLE.get(b.target) if b.op == "call_function" else None
            if spec is None or i == 0 or len(b._args) != 2 or b._kwargs:
                continue
            a = nodes[i - 1]
            if a.meta.get("errstate") != b.meta.get("errstate"):
                continue  # each runs under its own np.errstate (a statement of its own)
            if (a.op != "call_function" or a.users.keys() != {b} or a.meta.get("bind")
                    or not isinstance(a.meta.get("shape"), tuple) or free_at.get(a) != i
                    or sum(1 for v in b._args if v is a) != 1):
                continue
            if not (b._args[0] is a or (spec[1] and b._args[1] is a)):
                continue
            if self.resolve(b.target) is not spec[2]:
                continue  # an op_table override: call it as written
            if depth.get(a, 0) >= _MAX_INLINE_DEPTH:
                continue  # a gets a statement of its own; b starts a new chain
            out[a] = b
            depth[b] = depth.get(a, 0) + 1
        return out

    def fresh_ufunc(self, n: Node) -> Optional[np.ufunc]:
        """The plain numpy ufunc ``n`` calls with positional operands only, when its result is a
        new array of its own (one output, an array shape in meta), else None."""
        if n.op != "call_function" or n._kwargs:
            return None
        fn = self.resolve(n.target)
        shape = n.meta.get("shape")
        if (not isinstance(fn, np.ufunc) or fn.nout != 1 or fn.nin != len(n._args)
                or not isinstance(shape, tuple) or not shape or not isinstance(n.meta.get("dtype"), np.dtype)):
            return None  # an op_table override, a reduction-like call, or a 0-d result (a numpy scalar)
        return fn

    def writes_into(self, n: Node) -> Optional[Callable]:
        """The out-variant (``OpDef.out_impl``) of composite call ``n`` whose result is an array of its
        own (an array shape and dtype in meta, one output), else None."""
        if n.op != "call_function" or isinstance(self.resolve(n.target), np.ufunc):
            return None
        shape = n.meta.get("shape")
        if not isinstance(shape, tuple) or not shape or not isinstance(n.meta.get("dtype"), np.dtype):
            return None
        return self.resolve_out(n.target)

    def reused_buffers(self, nodes: list[Node], index: dict[Node, int], last_use: dict[Node, int],
                       inlined: dict[Node, Node], fresh: set[Node]) -> dict[Node, Node]:
        """``{B: A}``: B's result is written into A's buffer (``B = np.add(A, x, out=A)``,
        ``B = tpe_nn_gelu_out(A, 'tanh', out=A)``).

        Eager numpy allocates a new array for every result; generated code knows each
        value's last use (``last_use``: index of its last reader).  A is reused only where
        numpy semantics cannot tell:

        - B is a plain ufunc call (``fresh``, :meth:`fresh_ufunc`), or a composite with an
          out-variant (``self.into``, :meth:`writes_into`) whose first argument is A, appearing
          once among its arguments; B's result has A's shape and dtype (meta), so ``out=A``
          computes the same loops into the same dtype: bit-identical;
        - A owns its data (one of those two kinds of call, whose results are new arrays nobody
          else refers to): never an input, a weight, a constant or a view of another value;
        - every reader of A owns its result too (none can hold a view of A), and B is the
          last of them, so no later statement reads A's old values, and nothing returned
          or bound (``meta['bind']``) is A;
        - neither is part of an operator expression (:meth:`inlined_operands`), whose
          temporary numpy already reuses.

        A composite B with no such argument takes a buffer that died earlier (its last reader
        ran before B; the most recently dead of B's shape and dtype, by the same rules): ``B =
        tpe_nn_linear_out(x, w, b, out=D)``.  D's name then lives until B's statement
        (:meth:`emit` moves its ``del``), so the buffer is held instead of freed and allocated
        again; composites' out-variants check at run time that ``out`` has the memory order
        their result would have and otherwise return a new array (``OpDef.out_impl``).
        """
        out: dict[Node, Node] = {}
        if not REUSE_BUFFERS:
            return out
        into = self.into
        owns = fresh | into
        targets = set(inlined.values())
        # values whose buffer may be taken (once): owned, read only by owners, bound to nothing
        free = {a for a in owns if a not in inlined and not a.meta.get("bind") and a.users.keys() <= owns}
        dying: dict[int, list[Node]] = {}
        for n, i in last_use.items():
            if n in free and isinstance(n.meta.get("shape"), tuple):
                dying.setdefault(i, []).append(n)
        pool: dict[tuple, list[Node]] = {}  # (shape, dtype) -> dead buffers, the most recently dead last

        for i, b in enumerate(nodes):
            pick = None
            if (b in fresh or b in into) and not (b in inlined or b in targets or b.meta.get("bind")):
                if b in fresh:
                    candidates = b._args
                elif b._args and _mentions(b, b._args[0]) == 1:
                    candidates = b._args[:1]
                else:
                    candidates = ()
                key = (b.meta.get("shape"), b.meta.get("dtype"))
                for a in candidates:
                    if (isinstance(a, Node) and a in free and last_use[a] == i
                            and (a.meta.get("shape"), a.meta.get("dtype")) == key):
                        pick = a
                        break
                if pick is None and b in into and POOL_BUFFERS:
                    dead = pool.get(key)
                    while dead and pick is None:
                        d = dead.pop()
                        if d in free:
                            pick = d
            if pick is not None:
                out[b] = pick
                free.discard(pick)  # taken
            for d in dying.get(i, ()):
                if d in free:
                    pool.setdefault((d.meta.get("shape"), d.meta.get("dtype")), []).append(d)
        return out

    def attribute_reads(self, reads: list[Node], body: list[str]) -> None:
        """One statement reading a run of attributes, then the symbols they bind.

        Two or more go through one ``operator.attrgetter`` global (the same getattr chain,
        the same AttributeError, read on every call, so an array assigned to the module's
        attribute is the one the next call uses), with each path as a comment: Python
        compiles one statement of a few hundred names far faster than as many statements
        (GPT-24, 292 weights: its forward compiled in 5.8 ms instead of 8.4, medians of
        one run, issue 19)."""
        reads = [n for n in reads if n.users or n.meta.get("bind")]
        if len(reads) == 1:
            body.append(f"{reads[0].name} = {attr_text(self.attrs[reads[0]])}")
        elif reads:
            paths = tuple(self.attrs[n] for n in reads)
            getter = self.glob("read_attrs", operator.attrgetter(*paths), ("attrgetter",) + paths)
            body.append("(")
            body.extend(f"    {n.name},  # {self.attr_text(self.attrs[n])}" for n in reads)
            body.append(f") = {getter}(self)")
        for n in reads:
            if n.meta.get("bind"):
                self.binds(n, body)

    def attr_text(self, path: str) -> str:
        """:func:`attr_text` of ``path``; a module's weights share their parents (``h.0.attn.c_attn``
        for its weight and bias), each parent's text made once."""
        parent, dot, part = path.rpartition(".")
        if not dot:
            return attr_text(path)
        text = self.attr_texts.get(parent)
        if text is None:
            text = self.attr_texts[parent] = attr_text(parent)
        return attr_text(part, text)

    def emit(self, fn_name: str) -> PythonCode:
        nodes = self.nodes
        index = dict(zip(nodes, range(len(nodes))))
        position = index.__getitem__
        last_use = {n: max(map(position, n.users)) for n in nodes if n.users}
        calls = [n for n in nodes if n.op == "call_function"]
        fresh = {n for n in calls if self.fresh_ufunc(n) is not None}
        self.into = {n for n in calls if self.writes_into(n) is not None}
        free_at = _free_points(nodes, last_use)
        dies_at: dict[int, list[Node]] = {}
        for n, i in free_at.items():
            dies_at.setdefault(i, []).append(n)
        # A value whose memory layout an op reads (tpe.is_view: did numpy make a view?) must get
        # eager's layout: it is never written into another value's buffer (out=) nor into an
        # elided operand's temporary, either of which may be laid out otherwise.
        observed = _layout_observed(calls)
        inlined = {a: b for a, b in self.inlined_operands(nodes, index, free_at).items() if b not in observed}
        reuse = {b: a for b, a in self.reused_buffers(nodes, index, last_use, inlined, fresh).items()
                 if b not in observed}
        for b, a in reuse.items():
            if free_at[a] < index[b]:  # a buffer that died earlier: its name lives until b has it
                dies_at[free_at[a]].remove(a)
                free_at[a] = index[b]
                dies_at.setdefault(index[b], []).append(a)
        pending: dict[Node, str] = {}   # B -> text of its inlined operand A's call
        pending_dead: list[Node] = []

        attrs = self.attrs
        params = [n.name for n in nodes if n.op == "placeholder" and n not in attrs]
        body: list[str] = []
        reads: list[Node] = []  # a run of attribute reads, one statement when the run ends
        for i, n in enumerate(nodes):
            if n in attrs:
                reads.append(n)
                continue
            if reads:
                self.attribute_reads(reads, body)
                reads = []
            binds = n.meta.get("bind")
            if n.op == "placeholder":
                if binds:
                    self.binds(n, body)
                continue
            if n.op == "output":
                values = n._args[0]
                body.append(f"return [{', '.join(self.arg(v, n) for v in values)}]")
                break
            if n in pending:
                sym = _ELIDABLE[n.target][0]
                texts = [pending.pop(n) if isinstance(v, Node) and v in inlined else _paren(self.arg(v, n))
                         for v in n._args]
                call = f"{texts[0]} {sym} {texts[1]}"
                if n in inlined:
                    call = f"({call})"
            else:
                call = self.call_text(n, reuse.get(n))
            dead = dies_at.get(i, ())
            if n in inlined:
                pending[inlined[n]] = call
                pending_dead += dead
                continue
            errstate = n.meta.get("errstate")
            indent = ""
            if errstate:  # the model's np.errstate around this op: warnings and "raise" as in eager
                body.append(f"with np.errstate({', '.join(f'{k}={v!r}' for k, v in errstate)}):")
                indent = "    "
            if n.users or binds:
                body.append(f"{indent}{n.name} = {call}")
                if binds:
                    self.binds(n, body)
                if not n.users:
                    body.append(f"del {n.name}")
            else:
                body.append(f"{indent}{call}")  # an assertion or another value nobody reads
            if pending_dead:
                dead = pending_dead + list(dead)
                pending_dead = []
            if dead:
                names = [d.name for d in dead if d not in inlined]
                if names:
                    body.append(f"del {', '.join(names)}")
        else:
            if reads:
                self.attribute_reads(reads, body)
            body.append("return []")
        header = f"def {fn_name}({', '.join(['self'] + params)}):"
        src = header + "\n    " + "\n    ".join(body) + "\n"  # each statement indented
        return PythonCode(src, self.globals, fn_name, self.recipes)


# registry name -> (operator, commutative, the ufunc the registry must resolve it to)
_ELIDABLE = {"numpy.add": ("+", True, np.add), "numpy.multiply": ("*", True, np.multiply),
             "numpy.subtract": ("-", False, np.subtract), "numpy.true_divide": ("/", False, np.true_divide),
             "numpy.divide": ("/", False, np.divide)}


# Off only to measure what each buys (benchmarks/bench_runtime.py builds modules without them):
# results written into dead buffers (``out=<name>``), and composites run through their
# out-variants when no dead buffer is there (``out=None``).
REUSE_BUFFERS = True
OUT_VARIANTS = True
POOL_BUFFERS = True  # composites also take buffers that died before their statement

_MAX_INLINE_DEPTH = 32  # nested inlined operands per statement, far below the parser's 200


def _mentions(n: Node, value: Node) -> int:
    """How many times ``value`` is among n's arguments (positional, keyword, inside tuples/lists/dicts)."""
    count = 0
    todo = [n._args, n._kwargs.values()] if n._kwargs else [n._args]
    while todo:
        for v in todo.pop():
            if v is value:
                count += 1
            elif isinstance(v, (tuple, list)):
                todo.append(v)
            elif isinstance(v, dict):
                todo.append(v.values())
    return count


def attr_text(path: str, receiver: str = "self") -> str:
    """Source reading attribute path ``path`` of ``receiver``: ``self.fc.weight``;
    a part that is no ASCII identifier (a ModuleList index, ``ｖ``) reads through getattr,
    by its exact string: ``getattr(self.layers, '0').weight``."""
    text = receiver
    for part in path.split("."):
        text = f"{text}.{part}" if source_name(part) else f"getattr({text}, {part!r})"
    return text


def _paren(text: str) -> str:
    """Operand text safe next to a binary operator."""
    return text if text.isidentifier() or _NUMBER.fullmatch(text) else f"({text})"


_NUMBER = re.compile(r"[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?")


def _free_points(nodes: list[Node], last_use: dict[Node, int]) -> dict[Node, int]:
    """Index of the statement after which each call's value is deleted (``last_use``: index of
    each value's last reader; values nobody reads are absent).

    Inputs and attribute reads are never deleted: the caller's arguments and the
    module's attributes hold them for the whole call, so a ``del`` would free
    nothing.  At the latest, a call's value dies at its last use.  Captured nodes carry
    ``meta["module_stack"]`` (the module calls they ran in) and ``meta["source"]``
    (the user's line); with them a value lives as long as eager Python keeps it:

    - a value passed into a module call stays alive until that call returns
      (the callee's frame holds its argument);
    - a value read on a later line of the same call sits in a local variable:
      alive until the call returns, or until its own line runs again in that
      call (a loop reassigning the variable).

    Why not free earlier: glibc returns the top of the heap to the system once
    more than its trim threshold is free there, and the next layer faults the
    pages in again.  Freeing exactly when eager does keeps the allocation
    pattern, and so the page faults, of the eager model (bench_runtime GPT:
    109k -> 48k minor faults per call, eager 48k).  Peak memory is eager's.
    """
    stacks = [n.meta.get("module_stack") for n in nodes]
    ends: dict[Any, int] = {}  # module call -> index of its last node
    last = len(stacks) - 1
    for i, stack in enumerate(stacks):
        # the last node of a run in the same calls (a run is usually a whole layer)
        if stack and (i == last or stacks[i + 1] != stack):
            for call in stack:
                ends[call] = i
    lines: dict[tuple, list[int]] = {}  # (module call, source line) -> indices of its nodes
    for i, n in enumerate(nodes):
        stack = stacks[i]
        src = n.meta.get("source")
        if stack and src is not None:
            # a SourceLoc is keyed by its fields (equal exactly when they are): hashing the
            # dataclass runs Python code; the three-part key equals no two-part one
            key = (stack[-1], src.filename, src.lineno) if type(src) is SourceLoc else (stack[-1], src)
            at = lines.get(key)
            if at is None:
                lines[key] = [i]
            else:
                at.append(i)
    next_same: dict[Node, int] = {}  # node -> index of the next node of its line in its call
    for at in lines.values():
        for i, j in zip(at, at[1:]):
            next_same[nodes[i]] = j
    free_at: dict[Node, int] = {}
    for n, at in last_use.items():
        if n.op != "call_function":
            continue
        stack = n.meta.get("module_stack")
        if stack:
            src = n.meta.get("source")
            for u in n.users:
                ustack = u.meta.get("module_stack") or ()
                if ustack != stack:
                    k = 0
                    while k < len(stack) and k < len(ustack) and stack[k] == ustack[k]:
                        k += 1
                    if 0 < k < len(ustack) and ustack[k] in ends:
                        at = max(at, ends[ustack[k]])  # an argument of the call ustack[k]
                        continue
                    if not ustack or ustack[-1] != stack[-1]:
                        continue
                # read in the same call on another line: a local variable of that call (two
                # SourceLocs compared by their fields: the dataclass's __eq__ runs Python code)
                usrc = u.meta.get("source")
                if src is None or usrc is src or usrc is None:
                    continue
                if (usrc.lineno != src.lineno or usrc.filename != src.filename
                        if type(usrc) is SourceLoc and type(src) is SourceLoc else usrc not in (None, src)):
                    at = max(at, min(ends[stack[-1]], next_same.get(n, len(nodes))))
        free_at[n] = at
    return free_at


def _observes_layout(target: Any) -> bool:
    try:
        return resolve_op(target).observes_layout
    except UnsupportedOpError:  # a name only an op_table overlay knows
        return False


def _layout_observed(calls: list[Node]) -> set[Node]:
    """Every node whose value reaches an op that reads its operands' memory layout
    (``OpDef.observes_layout``), through any chain of arguments."""
    out: set[Node] = set()
    observes: dict[str, bool] = {}  # one registry look-up per op name, however many nodes call it
    stack = []
    for n in calls:
        flag = observes.get(n.target)
        if flag is None:
            flag = observes[n.target] = _observes_layout(n.target)
        if flag:
            stack.append(n)
    while stack:
        for a in stack.pop().all_input_nodes:
            if a not in out:
                out.add(a)
                stack.append(a)
    return out


def python_code(graph: Graph, resolve: Callable[[str], Callable], fn_name: str = "forward",
                resolve_out: Optional[Callable[[str], Optional[Callable]]] = None,
                attrs: Optional[Mapping[Node, str]] = None) -> PythonCode:
    """Generate the source of ``graph`` as ``def forward(self, <placeholders>): ...``.

    Args:
        graph: the graph (not modified).
        resolve: registry name -> callable, for the op globals.
        fn_name: name of the generated function.
        resolve_out: registry name -> the op's out-variant (``OpDef.out_impl``) or None; without
            it only plain ufunc calls write into dead buffers.
        attrs: placeholder -> attribute path (``"fc.weight"``): that placeholder is read from
            ``self`` as a ``get_attr`` node with this target would be, and is no parameter.  The
            source is the one generated for a copy of ``graph`` with those placeholders turned
            into get_attr nodes, without the copy (``ExportedProgram.module()``).

    Raises:
        RuntimeError: a symbol is used before a node binds it.
        solver.UnsupportedExpressionError: a symbolic expression codegen cannot print
            (:func:`~tensorplay_export.graph.printing.tree_text`).
    """
    return _Emitter(graph, resolve, resolve_out, attrs).emit(fn_name)


_COUNTER = [0]


def make_global(recipe: tuple) -> Any:
    """The global a :attr:`PythonCode.recipes` entry names, made in this process (ops through
    the registry, as generation resolves them).

    Raises:
        KeyError: a recipe kind this version does not know, or an op without an out-variant.
        UnsupportedOpError: the registry has no op of that name.
    """
    kind = recipe[0]
    if kind == "np":
        return np
    if kind == "math_floor":
        return math.floor
    if kind == "op":
        return resolve_op(recipe[1]).impl
    if kind == "op_out":
        impl = resolve_op(recipe[1]).out_impl
        if impl is None:
            raise KeyError(recipe[1])
        return impl
    if kind == "dtype":
        return np.dtype(recipe[1])
    if kind == "attrgetter" and len(recipe) > 1 and all(type(p) is str for p in recipe[1:]):
        return operator.attrgetter(*recipe[1:])
    raise KeyError(kind)


def compile_python_code(code: PythonCode) -> Callable:
    """The function ``code`` defines, compiled (through :mod:`.codecache`) and run in a fresh
    namespace of its globals; its source is registered with ``linecache`` so tracebacks show
    the generated line.  Raises what ``compile()`` raises."""
    from .codecache import compile_source

    _COUNTER[0] += 1
    filename = f"<tpe-graph-{_COUNTER[0]}>"
    linecache.cache[filename] = (len(code.src), None, code.src.splitlines(True), filename)
    namespace = dict(code.globals)
    exec(compile_source(code.src, filename), namespace)  # cached across processes
    return namespace[code.fn_name]


@dataclasses.dataclass(frozen=True)
class GraphOutline:
    """What a program checks of its graph's structure before running it: the placeholder names
    in graph order, and how many values the output node returns."""

    placeholders: tuple[str, ...]
    n_outputs: int


class GraphModule:
    """Runs a :class:`Graph` through generated Python source.

    Args:
        graph: the graph to run.
        op_table: an op overlay, ``registry name -> OpDef`` (e.g. draft's opaque
            ops) or ``-> callable`` (replaces the implementation); other names are
            resolved through the op registry (:func:`~tensorplay_export.ops.registry.resolve_op`).
        lint: run :meth:`Graph.lint` now (default).  Export passes False for
            the graphs capture builds through the Graph API (their invariants
            hold by construction) unless a debug flag asks for it; loaded and
            rewritten graphs are always linted.
        generate: generate and compile the source now (:meth:`compile`), so
            codegen and compiler errors (a symbol used before it is bound, an
            unprintable expression, source too deeply nested) raise here;
            export and load ask for this.  Otherwise the source is
            generated and compiled on first use (``gm(...)``, ``gm.code``),
            as for the scratch graphs of passes that may never run.

    ``gm(*flat_inputs)`` takes one value per placeholder, in graph order, and
    returns the output node's values as a list.  ``gm.code`` is the source.
    """

    def __init__(self, graph: Graph, op_table: Optional[Mapping[str, Any]] = None, *,
                 lint: bool = True, generate: bool = False) -> None:
        self._graph = graph
        self._build: Optional[Callable[[], Graph]] = None  # a deferred graph's builder (:meth:`deferred`)
        self._outline: Optional[GraphOutline] = None
        self.op_table = op_table
        self._fn: Optional[Callable] = None
        self._pycode: Optional[PythonCode] = None
        # Compiled code of a view derived from this graph (``ExportedProgram.module()``'s
        # attribute-reading forward), shared by every such view; recompile() drops it.
        self.derived_code: Optional[tuple[PythonCode, Callable]] = None
        if lint:
            graph.lint()
        if generate:
            self.compile()

    @classmethod
    def deferred(cls, build: Callable[[], Graph], outline: GraphOutline) -> GraphModule:
        """A module whose graph ``build()`` makes when something first reads it (:attr:`graph`,
        :attr:`code`, a call); until then :meth:`outline` answers from ``outline``.

        A program loaded from a document this machine loaded before runs from its cached
        forward (issue 19) and needs no graph until someone inspects it.  ``build`` raises
        what building raises, at that first read, and again at the next one.
        """
        gm = cls(None, lint=False)
        gm._build, gm._outline = build, outline
        gm._build_lock = threading.Lock()  # threads reading it first share one build
        return gm

    def _built_graph(self) -> Graph:
        """The graph as it is (a loaded one keeps its stored expressions), built now if deferred."""
        graph = self._graph
        if graph is None and self._build is not None:
            with self._build_lock:
                graph = self._graph
                if graph is None:
                    graph = self._build()
                    self._graph = graph  # before the builder goes: a reader sees one or the other
                    self._build = self._outline = None
        return graph

    def outline(self) -> GraphOutline:
        """The placeholder names and the output count, without building a deferred graph."""
        if self._build is not None:  # deferred(): set with its outline, cleared with it
            return self._outline
        graph = self._built_graph()
        out = graph.output_node
        return GraphOutline(tuple(n.name for n in graph.placeholders()),
                            len(out.args[0]) if out is not None else 0)

    @property
    def graph(self) -> Graph:
        """The graph; a loaded graph's stored size expressions become sympy expressions on first
        read (:func:`~.stored.materialize_graph`), since whoever reads it may reason about them."""
        graph = self._built_graph()
        if holds_stored(graph):
            materialize_graph(graph)
        return graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        self._graph = graph
        self._build = self._outline = None

    def compile(self) -> GraphModule:
        """Generate and compile the source now, if not done yet (the eager hook for load/save).

        Raises what codegen or Python's compiler raises (``RuntimeError``,
        ``UnsupportedExpressionError``, ``SyntaxError``, ``RecursionError``, ...).
        """
        if self._fn is None:
            self._compile()
        return self

    def recompile(self) -> None:
        """Re-lint, re-generate and re-compile now, after the graph changed."""
        self._built_graph().lint()
        self._fn = self._pycode = None
        self.derived_code = None
        self._compile()

    def _generate(self) -> PythonCode:
        if self._pycode is None:
            self._pycode = self._python_code(self._built_graph())
        return self._pycode

    def _python_code(self, graph: Graph, attrs: Optional[Mapping[Node, str]] = None) -> PythonCode:
        """:func:`python_code` of ``graph`` with this module's ops (``op_table`` over the registry)."""
        table = self.op_table
        return python_code(graph, lambda t: resolve_op(t, table).impl,
                           resolve_out=lambda t: resolve_op(t, table).out_impl, attrs=attrs)

    def _compile(self) -> Callable:
        self._fn = compile_python_code(self._generate())
        return self._fn

    @property
    def code(self) -> str:
        """The generated Python source of ``forward``."""
        return self._generate().src

    def forward(self, *flat_inputs: Any) -> list:
        fn = self._fn
        return (fn if fn is not None else self._compile())(self, *flat_inputs)

    __call__ = forward

    def print_readable(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"GraphModule(\n{self.code})"
