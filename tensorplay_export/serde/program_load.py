"""Rebuilding an ExportedProgram from its JSON document and arrays, trusting nothing.

Order of checks: the document's exact key set, format marker, schema version
(newer -> error), opset versions (against ``expected_opset_version``),
``pickle_protocol``; then the graph node by node (opcode, unique identifier
name, op resolved by registry name, references only to earlier nodes, dict
keys of plain types), ``Graph.lint()``'s rules (lint runs when the build leaves one in
doubt, see ``_LINT_RULES``); then signature, ranges, constraints,
module call graph, specs; finally each array against its table entry and its
placeholder's recorded shape/dtype.  Every failure is an ArchiveError naming
``member`` (the JSON member, or the array member it came from).
"""
from __future__ import annotations

import inspect
import marshal
import re
from collections.abc import Iterator, Mapping
from typing import Any, Callable

import numpy as np

from ..errors import ArchiveError, UnsupportedOpError
from ..graph.codegen import GraphOutline
from ..graph.ir import FUNCTIONAL_OPCODES, Graph, Node
from ..graph import stored
from ..graph.stored import SizeExpr, is_number_tree, is_symbol, mark_stored
from ..records import SourceLoc, is_sympy, source_name
from .jsonio import expect, fail, get_dict, get_int, get_list, get_str, loads
from .program_json import (_ARG_KINDS, _TOP_KEYS, FORMAT, SCHEMA_VERSION, SerializedArtifact,
                           check_pickle_protocol)
from .values import Decoder, decode_dtype, decode_range, decode_source_table, encode_range
from .exprs import ExprBudget, decode_stored, size_exponent_problem
from .forward_cache import cached_forward, forward_slot, store_forward
from .random_state import check_generator_states

MAX_NODES = 1_000_000
_DICT_KEY_TYPES = (str, int, float, bool, type(None))

# fetch(table, index, entry) -> ndarray: how the caller supplies arrays (from a zip or a dict)
ArrayFetch = Callable[[str, int, dict], np.ndarray]


def parse_document(data: bytes, member: str) -> dict:
    """Parse and check the top level of a program document (keys, marker, schema, protocol)."""
    doc = get_dict(loads(data, member), member, "program document", _TOP_KEYS)
    expect(doc["format"] == FORMAT, member, f"format marker is {doc['format']!r:.60}, expected {FORMAT!r}")
    version = get_int(doc["schema_version"], member, "schema_version", 1)
    if version > SCHEMA_VERSION:
        fail(member, f"written by a newer tensorplay_export (program schema {version}; this version "
                     f"reads up to {SCHEMA_VERSION}); upgrade to load it")
    opset = doc["opset_version"]
    if not isinstance(opset, dict) or any(type(v) is not int or v < 0 for v in opset.values()):
        fail(member, f"opset_version must map names to non-negative integers, got {opset!r:.100}")
    try:
        check_pickle_protocol(doc["pickle_protocol"])
    except ValueError as err:
        fail(member, str(err))
    return doc


def check_opset(stored: dict, expected: Any, member: str) -> None:
    """Fail naming both versions when ``expected`` (name -> int) disagrees with ``stored``."""
    if expected is None:
        return
    if not isinstance(expected, dict):
        raise TypeError(f"expected_opset_version must be a dict[str, int], got {type(expected).__name__}")
    wrong = {k: v for k, v in expected.items() if stored.get(k) != v}
    if wrong:
        fail(member, f"opset version mismatch: the archive was written with opset_version={stored}, "
                     f"but expected_opset_version={dict(expected)} "
                     f"(differs for {sorted(wrong)})")


_UNEXPECTED = (TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError, ValueError)


def build_program(doc: dict, member: str, fetch: ArrayFetch, example_arrays: Callable[[], dict] | None,
                  **overrides: Any) -> Any:
    """The ExportedProgram of a parsed document (see :func:`_build_program` for the arguments).

    A safety net turns any exception the checks did not anticipate into an
    ArchiveError whose text says ``unanticipated`` (the fuzz tests look for it).
    """
    try:
        return _build_program(doc, member, fetch, example_arrays, **overrides)
    except ArchiveError:
        raise
    except _UNEXPECTED as err:
        fail(member, f"malformed program (unanticipated {type(err).__name__}: {str(err)[:200]})")


def _build_program(doc: dict, member: str, fetch: ArrayFetch, example_arrays: Callable[[], dict] | None,
                   *, state_dict: Any = None, constants: Any = None, example_inputs: Any = None,
                   lazy_examples: bool = False, document: bytes | None = None) -> Any:
    """The ExportedProgram of a parsed document.

    Args:
        doc: output of :func:`parse_document`.
        member: JSON member name for errors.
        fetch: supplies the array of table entry ``index`` (``table`` is
            ``"weights"`` or ``"constants"``).
        example_arrays: returns ``"<i>" -> array`` of the example inputs (None: none stored).
        state_dict / constants: fqn -> array overrides (``deserialize(..., state_dict=...)``).
        example_inputs: override of the example inputs (``{"args", "kwargs"}`` or ``(args, kwargs)``).
        lazy_examples: call ``example_arrays`` when the example inputs are first used
            (archives: :class:`LazyExamples`), not now.
        document: the bytes ``doc`` was parsed from: ``module()``'s forward is then taken from,
            or kept in, the per-machine cache of :mod:`.forward_cache`.
    """
    from ..graph.codegen import GraphModule
    # nn.functional's composite ops are registered by nn (ops never imports nn; capture imports
    # it): a program loaded without any capture in the process names them too, in its nodes and
    # in a cached forward's recipes (looked up before any node is decoded)
    from ..nn import _composites  # noqa: F401
    from ..program.exported import ExportedProgram

    budget = ExprBudget()  # one for every expression of the document
    weights_tab = _table(doc["weights"], member, "weights", {"parameter", "buffer", "non_persistent_buffer"})
    consts_tab = _table(doc["constants"], member, "constants", {"constant", "graph_constant"})
    graph_arrays: dict[str, np.ndarray] = {}
    for i, entry in enumerate(consts_tab):
        if entry["role"] == "graph_constant":
            graph_arrays[entry["fqn"]] = _array(entry, i, "constants", fetch, constants, member)
    slot = forward_slot(document) if document is not None else None
    cached = cached_forward(slot, _op_facts_hold) if slot is not None else None
    # A hit means these exact bytes passed every check below, with this package's code, when the
    # entry was written (the key covers both; an entry is written only after them): what depends
    # on the document alone is not checked again, and the graph is built when first read.  What
    # depends on the arrays still runs: _array checks each against its table entry, and the entry
    # matched its placeholder's shape and dtype when the entry was written.
    hit = cached is not None
    graph = None
    if hit:
        gm = GraphModule.deferred(lambda: _deferred_graph(document, member, graph_arrays),
                                  _outline(doc["graph"]))
    else:
        graph = _build_graph(doc["graph"], member, graph_arrays, budget)
    sig = _signature(doc["signature"], member, budget)
    if graph is not None:
        _check_specs(graph, sig, member)
        check_generator_states(graph, sig, member)
        placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
        specs_by_target: dict[Any, list] = {}  # one pass over the specs, not one per array
        for spec in sig.input_specs:
            specs_by_target.setdefault(spec.target, []).append(spec)
    state: dict[str, np.ndarray] = {}
    lifted: dict[str, np.ndarray] = {}
    for table, tab, overrides, out in (("weights", weights_tab, state_dict, state),
                                       ("constants", consts_tab, constants, lifted)):
        for i, entry in enumerate(tab):
            if entry["role"] == "graph_constant":
                continue
            array = _array(entry, i, table, fetch, overrides, member)
            if graph is not None:
                _check_against_placeholder(entry, array, specs_by_target.get(entry["fqn"], ()), placeholders,
                                           member)
            out[entry["fqn"]] = array
    kwargs = dict(
        example_inputs=_examples(doc["example_inputs"], member, example_arrays, example_inputs, budget,
                                 lazy_examples),
        dynamic_shapes=_dynamic_shapes(doc["dynamic_shapes"], member, budget),
        module_call_graph=_call_graph(doc["module_call_graph"], member, budget),
        range_constraints=_ranges(doc["range_constraints"], member, budget),
        equality_constraints=_equalities(doc["equality_constraints"], member),
    )
    if graph is not None:
        _check_graph(graph, sig, kwargs, budget, member)
        gm = GraphModule(graph, lint=False)  # _build_graph linted it
    try:
        ep = ExportedProgram(gm, sig, state_dict=state, constants=lifted, **kwargs)
    except (ValueError, TypeError, KeyError) as err:
        if isinstance(err, ArchiveError):
            raise
        fail(member, f"inconsistent program: {err}")
    try:
        # The forward module() runs is generated and compiled now, so hostile content (or
        # source Python cannot compile) fails here, as ArchiveError, not at the first call.
        # The module built for that is the program's cached module(): its state is the
        # program's own values, as a first module() call would make it.
        gm.derived_code = cached  # None: module() generates the forward, kept below
        ep.module()
        if slot is not None and not hit:
            store_forward(slot, gm.derived_code[0], _op_facts(graph))
    except (UnsupportedOpError, RuntimeError, ValueError, TypeError, SyntaxError, NotImplementedError,
            KeyError, MemoryError) as err:
        fail(member, f"cannot build the graph module: {type(err).__name__}: {str(err)[:300]}")
    return ep


def _check_graph(graph: Graph, sig: Any, kwargs: dict, budget: ExprBudget, member: str) -> None:
    """The checks that relate the graph to the signature, the ranges and the call graph."""
    inputs = _check_runtime_checks(graph, member)
    if budget.size_exponents:  # 2**n: the exponent bounded by the ranges the input checks enforce
        # (a data-dependent size's range is no check that runs before compute)
        bounds = {sym.name: tuple(encode_range(vr)) for sym, vr in kwargs["range_constraints"].items()
                  if sym.name in inputs}
        for exp in budget.size_exponents:
            problem = size_exponent_problem(exp, bounds)
            if problem is not None:
                fail(member, problem)
    _check_ranges_enforced(graph, kwargs["range_constraints"], member)
    _check_equalities_enforced(graph, kwargs["equality_constraints"], member)
    _check_inputs_enforced(graph, sig, member)
    _check_state_paths(sig, member)
    _check_root_specs(sig, kwargs["module_call_graph"], member)
    _check_input_check_args(graph, sig, kwargs["module_call_graph"], member)


# -- graph ----------------------------------------------------------------------------

def _outline(data: dict) -> GraphOutline:
    """The placeholder names and output count of a document's graph that passed every check
    before (a forward-cache hit), read off the JSON without decoding a node."""
    nodes = data["nodes"]
    return GraphOutline(tuple(raw["name"] for raw in nodes if raw["op"] == "placeholder"),
                        len(nodes[-1]["args"][0]))


def _deferred_graph(document: bytes, member: str, graph_arrays: dict) -> Graph:
    """The graph of ``document``, decoded when a program loaded from a forward-cache hit is
    first inspected (``ep.graph``, ``ep.graph_module.code``)."""
    try:
        return _build_graph(parse_document(document, member)["graph"], member, graph_arrays, ExprBudget())
    except ArchiveError:
        raise
    except _UNEXPECTED as err:
        fail(member, f"malformed program (unanticipated {type(err).__name__}: {str(err)[:200]})")


def _op_fact(target: str) -> str:
    """What the node checks read of op ``target`` (:func:`_resolve_target`), as text; an address
    in a default's repr (``<object at 0x...>``) is dropped, as it differs between processes.

    Raises:
        ArchiveError: the op is not in the registry.
    """
    call, flag = _resolve_target(target, "", target)
    known = _FACTS.get(target)
    if known is not None and known[0] is call and known[1] == flag:
        return known[2]
    text = _ADDRESS.sub("", f"{call}|{flag!r}")
    _FACTS[target] = (call, flag, text)  # str(signature) once per process, as _SIGNATURES
    return text


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_FACTS: dict[str, tuple] = {}


def _op_facts(graph: Graph) -> dict[str, str]:
    """``target -> _op_fact(target)`` of every op the graph calls: kept with its cached forward,
    since an op registered from outside this package can change while the package does not."""
    return {t: _op_fact(t) for t in {n.target for n in graph.nodes if n.op == "call_function"}}


def _op_facts_hold(facts: dict[str, str]) -> bool:
    """Each op of a cached forward's facts still reads as it did when they were kept."""
    try:
        return all(_op_fact(target) == fact for target, fact in facts.items())
    except ArchiveError:  # no longer in the registry
        return False


def _resolve_target(target: str, member: str, node: str) -> tuple:
    """``(call signature or None when it has none to check against, OpDef.writing_flag)`` of the op
    (the op registry is complete: :func:`_build_program` registered nn's composites)."""
    from ..ops.registry import get_op

    try:
        op = get_op(target)
    except UnsupportedOpError:
        fail(member, f"node {node!r} calls unknown op {target!r:.100}: it is not in the op registry")
    if target not in _SIGNATURES:
        # ndarray method ops are thin wrappers (a, *args, **kwargs): numpy's method says what fits
        method = getattr(np.ndarray, target[len("numpy.ndarray."):], None) if target.startswith("numpy.ndarray.") else None
        if method is None:
            _SIGNATURES[target] = op.signature()
        else:
            try:
                _SIGNATURES[target] = inspect.signature(method)
            except (TypeError, ValueError):
                _SIGNATURES[target] = None
    return _SIGNATURES[target], op.writing_flag


_SIGNATURES: dict[str, Any] = {}


class _Position:
    """Stands for the positional argument at ``index`` when a call form is bound once."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


_CALL_FORMS: dict[tuple, tuple] = {}


def _check_call(call: tuple, args: tuple, kwargs: dict, member: str, node: str, target: str) -> None:
    """What the generated call ``target(*args, **kwargs)`` would raise, refused now; and no write
    into an argument.

    Capture never records an ``out=`` argument (a write into the array it names: the
    caller's input, a weight, a constant), nor a flag that makes numpy write into its
    input (``overwrite_input=True``, ``nan_to_num(copy=False)``: the op's ``writing_flag``),
    nor a keyword that is not an ASCII identifier, nor an array method or ``tpe.getitem`` on
    anything but an array.  ``call``: what :func:`_resolve_target` gives.
    """
    for k in kwargs:
        if not source_name(k):  # ASCII: the parser would read ``ｏｕｔ`` as ``out``
            fail(member, f"node {node!r} passes the keyword {k!r:.60}, which is not an ASCII Python identifier")
    if target.startswith("numpy.ndarray.") or target == "tpe.getitem":
        # capture calls these on arrays only; on a constant (a str, a type) they would reach its methods
        if not args or not (type(args[0]) is Node or isinstance(args[0], np.ndarray)):
            fail(member, f"node {node!r} calls {target} on {type(args[0]).__name__ if args else 'nothing'}, "
                         f"not on an array (a node or an inline array)")
    if kwargs.get("out") is not None:
        fail(member, f"node {node!r} passes out= to {target}: capture never writes into an array "
                     f"(it would write into the caller's input or the program's state)")
    sig, flag = call
    if sig is None:
        if flag is not None and flag.param in kwargs and flag.writes(kwargs[flag.param]):
            _fail_writing_flag(member, node, target, flag.param, kwargs[flag.param])
        return
    # Whether the arguments fit, and which positions bind out= and a writing flag, depend only on
    # the number of positional arguments and the keyword names: decided once per such call form.
    key = (target, len(args), tuple(kwargs))
    form = _CALL_FORMS.get(key)
    if form is None:
        try:
            bound = sig.bind(*[_Position(i) for i in range(len(args))], **dict.fromkeys(kwargs))
            out = bound.arguments.get("out")
            at = bound.arguments.get(flag.param) if flag is not None else None
            form = ("ok", out.index if type(out) is _Position else None, at.index if type(at) is _Position else None)
        except TypeError as err:
            form = ("error", str(err))
        if len(_CALL_FORMS) < 4096:
            _CALL_FORMS[key] = form
    if form[0] == "error":
        fail(member, f"node {node!r}: its arguments do not fit {target}: {form[1]}")
    if form[1] is not None and args[form[1]] is not None:
        fail(member, f"node {node!r} passes out= to {target} (positionally): capture never writes into an "
                     f"array (it would write into the caller's input or the program's state)")
    if flag is not None:
        value = args[form[2]] if form[2] is not None else kwargs.get(flag.param, _UNSET)
        if value is not _UNSET and flag.writes(value):
            _fail_writing_flag(member, node, target, flag.param, value)


_UNSET = object()


def _fail_writing_flag(member: str, node: str, target: str, flag: str, value: Any) -> None:
    fail(member, f"node {node!r} passes {flag}={value!r:.20} to {target}, which makes numpy write into its "
                 f"input: capture never records that (it would write into the caller's input or the "
                 f"program's state)")


_NODE_KEYS = frozenset({"op", "name", "target", "args", "kwargs", "meta"})
# the graph's keys by schema: 1, 2 (a source table), 3 (and a meta table)
_GRAPH_KEYS = ({"nodes"}, {"nodes", "source_lines"}, {"nodes", "source_lines", "meta_values"})
_UNRESOLVED = object()
# values that may hold Nodes for Graph.create_node (ir._input_nodes looks inside exactly these)
_HOLDERS = (tuple, list, dict, slice, Node)


def _build_graph(data: Any, member: str, arrays: dict, budget: ExprBudget) -> Graph:
    if not (isinstance(data, dict) and data.keys() in _GRAPH_KEYS):
        get_dict(data, member, "graph", {"nodes"})  # schema 1: no source table
    nodes = get_list(data["nodes"], member, "graph.nodes")
    expect(len(nodes) <= MAX_NODES, member, f"graph has more than {MAX_NODES} nodes")
    graph = Graph()
    by_name: dict[str, Node] = {}

    def resolve(name: str) -> Node:
        if name not in by_name:
            fail(member, f"reference to node {name!r:.80}, which is not defined earlier in the graph")
        return by_name[name]

    # Size expressions stay stored trees (SizeExpr): checked now, printed by codegen, turned
    # into sympy only when something reads the graph (ep.graph: stored.materialize_graph).
    dec = Decoder(member, resolve, arrays, budget, stored=True)
    if "source_lines" in data:
        dec.source_lines = decode_source_table(data["source_lines"], member)
    value = dec.value
    signatures: dict[str, Any] = {}  # target -> call signature, resolved once per load
    dims_ok: dict[int, SizeExpr] = {}  # shape entries _check_meta has passed
    repeated = _Repeats(dec).value
    known = dec.known  # a node's dtype and source line: most were decoded for an earlier node
    table = None  # schema 3: the meta values, each distinct one once
    if "meta_values" in data:
        table = get_list(data["meta_values"], member, "graph.meta_values")
        # Each entry is decoded once, when a node first names it, and shared by every node that
        # names it when it cannot change (_unchanging); a list or dict is decoded per node.  A
        # shared entry costs the expression budget once: it is built once, and what reads meta
        # later (checks, codegen, ep.graph's sympy) converts a shared value once too.
        resolved: list = [_UNRESOLVED] * len(table)

        def entry(i: int) -> Any:
            used.add(i)
            v = value(table[i])
            if _unchanging(v):
                resolved[i] = v
            return v
        used: set[int] = set()
    # What Graph.lint checks, for the graph built here (see _LINT_RULES): ``doubt`` when a
    # node may break a rule; then lint runs and words the problem as it always has.
    doubt, saw_compute, outputs = False, False, 0
    for raw in nodes:
        # exact types first (json.loads builds only these); the checks that name the problem
        # run when a fast test fails
        if type(raw) is not dict or raw.keys() != _NODE_KEYS:
            get_dict(raw, member, "graph node", _NODE_KEYS)
        op, name, target = raw["op"], raw["name"], raw["target"]
        if type(name) is not str or len(name) > 256:
            get_str(name, member, "node name", 256)
        if type(target) is not str or len(target) > 256:
            get_str(target, member, f"target of node {name!r}", 256)
        if op not in FUNCTIONAL_OPCODES:
            fail(member, f"node {name!r} has unknown opcode {op!r:.40}")
        call_sig = None
        if op == "call_function":
            call_sig = signatures.get(target, _UNRESOLVED)
            if call_sig is _UNRESOLVED:
                call_sig = signatures[target] = _resolve_target(target, member, name)
        args, kwargs_raw, meta_raw = raw["args"], raw["kwargs"], raw["meta"]
        if type(args) is not list:
            get_list(args, member, f"args of node {name!r}")
        if type(kwargs_raw) is not list:
            get_list(kwargs_raw, member, f"kwargs of node {name!r}")
        if kwargs_raw:
            if any(not isinstance(p, list) or len(p) != 2 or not isinstance(p[0], str) for p in kwargs_raw):
                fail(member, f"kwargs of node {name!r} must be [name, value] pairs")
            expect(len({k for k, _ in kwargs_raw}) == len(kwargs_raw), member, f"node {name!r} repeats a kwarg")
        if not isinstance(meta_raw, dict):
            fail(member, f"meta of node {name!r} must be an object")
        exprs, dicts = dec.exprs, dec.dicts
        arg_values = []
        refs = []  # the Nodes among the arguments, while every other argument holds none
        for a in args:  # most arguments are references to earlier nodes: looked up here
            # ``k`` is there and ``v`` a string: two keys are exactly those two
            if type(a) is dict and a.get("k") == "node" and type(key := a.get("v")) is str and len(a) == 2:
                ref = by_name.get(key)
                if ref is not None:
                    arg_values.append(ref)
                    if refs is not None:
                        refs.append(ref)
                    continue
            v = value(a)  # anything else, and the message for an unknown name
            arg_values.append(v)
            if refs is not None and isinstance(v, _HOLDERS):
                refs = None  # Nodes may sit inside: create_node finds them
        arg_values = tuple(arg_values)
        kwarg_values = {k: value(v) for k, v in kwargs_raw} if kwargs_raw else {}
        # the walks below look for dicts and size expressions only: skipped when none was built
        if dec.dicts != dicts:
            _check_dict_keys((arg_values, kwarg_values), member, name)
        if op == "call_function":
            _check_call(call_sig, arg_values, kwarg_values, member, name, target)
            if dec.exprs != exprs:
                _check_integer_sizes(target, arg_values, kwarg_values, member, name, dims_ok)
        if table is not None:
            meta = {}
            for k, v in meta_raw.items():
                if type(v) is int:
                    if not 0 <= v < len(table):
                        fail(member, f"meta[{k!r:.60}] of node {name!r} names entry {v} of graph.meta_values, "
                                     f"which has {len(table)} entries")
                    hit = resolved[v]
                    v = hit if hit is not _UNRESOLVED else entry(v)
                elif not (type(v) is str or v is None):
                    fail(member, f"meta[{k!r:.60}] of node {name!r} must be a string, null or an index into "
                                 f"graph.meta_values, got {v!r:.60}")
                meta[k] = v
        else:
            meta = {k: v if type(v) is str or v is None else repeated(v) if k in _REPEATED_META
                    else hit if k in _KNOWN_META and (hit := known(v)) is not None else value(v)
                    for k, v in meta_raw.items()}
        _check_meta(meta, member, name, dims_ok)
        try:
            # the distinct Nodes in first-use order, what create_node would find in the arguments
            inputs = tuple(dict.fromkeys(refs)) if refs is not None and not kwarg_values else None
            node = graph.create_node(op, target, arg_values, kwarg_values, name=name, input_nodes=inputs)
        except (ValueError, TypeError) as err:
            fail(member, f"cannot create node {name!r}: {err}")
        node.meta = meta  # built for this node alone: create_node would copy it
        if node.name != name:
            fail(member, f"node name {name!r:.80} is not a fresh Python identifier (duplicate or reserved)")
        by_name[name] = node
        if outputs:
            doubt = True  # a node after the output
        if op == "placeholder":
            doubt = doubt or saw_compute or bool(arg_values) or bool(kwarg_values)
        elif op == "call_function":
            saw_compute = True
            doubt = doubt or not target
        else:
            outputs += 1
            doubt = doubt or len(arg_values) != 1 or not isinstance(arg_values[0], (list, tuple))
        if op != "output" and "shape" not in meta:
            doubt = True
    if table is not None and len(used) != len(table):
        unused = min(set(range(len(table))) - used)
        fail(member, f"entry {unused} of graph.meta_values is not the meta of any node (a writer stores "
                     f"each value some node uses, once)")
    if doubt or outputs != 1:
        try:
            graph.lint()
        except RuntimeError as err:
            fail(member, f"graph is malformed: {str(err).splitlines()[0]}")
    mark_stored(graph)
    return graph


# Graph.lint's rules (its docstring), and why a graph _build_graph made without doubt keeps
# each one; the graph is linted whenever one is in doubt (tests/serde/test_lint_proof.py keeps
# this list and lint's rules in step).
_LINT_RULES = {
    "belongs to another graph or was erased": "every node is made by graph.create_node; none is erased",
    "unknown opcode": "op is one of FUNCTIONAL_OPCODES, a subset of OPCODES",
    "name is not a usable Python identifier": "Namespace.create keeps a name only if it is identifier "
                                              "characters, not a keyword, builtin or reserved word",
    "duplicate name": "Namespace.create keeps a name only if it is unused; a changed name fails",
    "node after the output node": "doubt",
    "recorded input nodes differ": "create_node computes them from the arguments, or is given the "
                                   "resolved references when no other argument can hold a Node",
    "is not defined before this node": "every Node in the arguments comes from resolve(): an earlier node",
    "missing from the users of": "create_node records each user",
    "as a user, but that node does not read it": "create_node records each user",
    "placeholder after a call_function node": "doubt",
    "placeholder with arguments": "doubt",
    "get_attr": "not among FUNCTIONAL_OPCODES",
    "call_function target must be a registry name string": "target is a str (checked); empty: doubt",
    "output must have args == (list_of_values,)": "doubt",
    "meta['shape'] is missing": "doubt",
    "is not a sympy.Symbol": "_check_meta refuses a bind that is not a symbol first",
    "exactly one output node": "doubt (outputs != 1)",
}


# meta entries most nodes share with many others and that cost most to decode (a model has a
# few shapes; dtypes and source lines have fast decoders of their own)
_REPEATED_META = frozenset({"shape"})
# meta entries of kinds a Decoder looks up when decoded before (Decoder.known)
_KNOWN_META = frozenset({"dtype", "source"})


class _Repeats:
    """Decodes values that recur in a document once each (``dec.value`` for the rest).

    A value's key is its ``marshal`` bytes, which carry every type exactly (``true``,
    ``1`` and ``1.0`` differ, as Python's ``==`` would not have them), so equal keys mean
    equal JSON.  Only results that cannot change are shared (ints, strings, dtypes,
    size expressions, source records and tuples of them); a repeat takes from the
    document's expression budget, and counts in the decoder's tallies, what decoding it
    again would have (its list and tuple items too).
    """

    def __init__(self, dec: Decoder) -> None:
        self.dec = dec
        self.seen: dict[bytes, tuple] = {}

    def value(self, raw: Any) -> Any:
        dec = self.dec
        try:
            key = marshal.dumps(raw)
        except ValueError:  # not plain JSON values (a hand-built document): decode as usual
            return dec.value(raw)
        hit = self.seen.get(key)
        if hit is not None:
            value, nodes, exprs, dicts, items = hit
            if nodes:  # what budget.take does, without a call per repeat
                budget = dec.budget
                budget.left -= nodes
                if budget.left < 0:
                    budget.take(0, dec.member)
            if items:
                dec.take_items(items)
            dec.exprs += exprs
            dec.dicts += dicts
            return value
        left, exprs, dicts, items = dec.budget.left, dec.exprs, dec.dicts, dec.items_left
        value = dec.value(raw)
        if _unchanging(value) and len(self.seen) < 4096:
            self.seen[key] = (value, left - dec.budget.left, dec.exprs - exprs, dec.dicts - dicts,
                              items - dec.items_left)
        return value


def _unchanging(v: Any, depth: int = 0) -> bool:
    t = type(v)
    if t in _UNCHANGING or isinstance(v, np.dtype):
        return True
    return t is tuple and depth < 4 and all(_unchanging(x, depth + 1) for x in v)


_UNCHANGING = frozenset({int, str, bool, float, type(None), SizeExpr, SourceLoc})


# ops whose arguments past the first (the array) are sizes, shapes, axes or indices; keyword
# arguments of the same kind.  A size expression there must have an integer value.
_SIZE_ARGS: dict[str, tuple[slice, frozenset]] = {}
for _names, _where, _kws in [
    (("numpy.reshape", "numpy.ndarray.reshape", "numpy.broadcast_to", "numpy.tile", "numpy.expand_dims",
      "numpy.squeeze", "numpy.swapaxes", "numpy.moveaxis", "numpy.transpose", "numpy.ndarray.transpose",
      "numpy.permute_dims", "numpy.split", "numpy.array_split", "numpy.roll", "numpy.repeat", "numpy.pad",
      "numpy.take", "numpy.flip", "numpy.diag", "numpy.diagonal", "numpy.tril", "numpy.triu"), slice(1, None),
     {"shape", "newshape", "axis", "axes", "reps", "repeats", "indices_or_sections", "shift", "pad_width",
      "indices", "k", "source", "destination", "axis1", "axis2", "offset"}),
    (("numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full", "numpy.eye", "numpy.identity", "numpy.tri"),
     slice(0, 1), {"shape", "N", "M", "k", "n"}),
    (("numpy.zeros_like", "numpy.ones_like", "numpy.empty_like", "numpy.full_like"), slice(0, 0), {"shape"}),
    (("tpe.getitem", "tpe.setitem"), slice(1, 2), {"key"}),
]:
    for _name in _names:
        _SIZE_ARGS[_name] = (_where, frozenset(_kws))


def _check_integer_sizes(target: str, args: tuple, kwargs: dict, member: str, node: str,
                         integers: dict | None = None) -> None:
    """Size expressions used as sizes (shapes, axes, slice bounds, indices) must be integer-valued.

    Generated code computes ``0.5*n`` or ``n**0.5`` as a Python float, which numpy
    refuses as a size at the first call: refused here instead.  Slices count
    everywhere; other positions by the op's table entry above.  ``integers``: the
    ``dims_ok`` of :func:`_check_meta` (``id -> SizeExpr`` known to be integer-valued).
    """
    where, kws = _SIZE_ARGS.get(target, (slice(0, 0), frozenset()))
    sized = list(args[where]) + [v for k, v in kwargs.items() if k in kws]
    stack: list = [(v, True) for v in sized] + [(v, False) for v in list(args) + list(kwargs.values())]
    while stack:
        v, is_size = stack.pop()
        t = type(v)
        if t is int or t is Node:  # the common arguments: neither an expression nor a container
            continue
        if t is SizeExpr and integers is not None and integers.get(id(v)) is v:
            continue  # a shape entry of the document: integer-valued
        if _is_expr(v):
            if is_size and not integer_valued(v):
                fail(member, f"node {node!r} uses {_expr_text(v)} as a size of {target}, but its value is not "
                             "an integer")
        elif isinstance(v, slice):
            stack.extend((p, True) for p in (v.start, v.stop, v.step))
        elif isinstance(v, (list, tuple)):
            stack.extend((x, is_size) for x in v)
        elif isinstance(v, dict):
            stack.extend((x, is_size) for x in v.values())


def _expr_text(e: Any) -> str:
    text = str(e)
    return text if len(text) <= 80 else text[:77] + "..."


def _type_name(v: Any) -> str:
    """The type a message names: a stored expression by its sympy class (``Symbol``, ``Add``)."""
    if type(v) is SizeExpr:
        return v.tree[0] if type(v.tree) is tuple else "Integer"
    return type(v).__name__


def _is_expr(v: Any) -> bool:
    return type(v) is SizeExpr or is_sympy(v)


def integer_valued(e: Any) -> bool:
    """Whether generated code computes ``e`` (a stored or sympy expression) as a Python int
    (structurally, for integer symbols: :func:`~tensorplay_export.graph.stored.integer_valued`)."""
    if type(e) is SizeExpr:
        return stored.integer_valued(e.tree)
    try:
        return stored.integer_valued(stored.sympy_tree(e))
    except ValueError:  # outside the grammar
        return False


_ERR_KINDS = frozenset({"divide", "over", "under", "invalid"})
_ERR_MODES = frozenset({"ignore", "warn", "raise", "print"})


def _check_meta(meta: dict, member: str, node: str, dims_ok: dict | None = None) -> None:
    """The meta keys codegen and the runtime read must have exactly their documented types.

    ``bind`` matters most: codegen writes its axes into the generated source, so an
    axis must be a small int (or None), never text.  ``dims_ok`` (``id -> SizeExpr`` or
    shape tuple, one per document) holds the shape entries and whole shapes that passed
    already: the decoder hands out one SizeExpr per distinct expression and one tuple per
    repeated shape (both immutable), so most shapes are looked up, not checked.
    """
    bind = meta.get("bind")
    if bind is not None:
        if not isinstance(bind, dict):
            fail(member, f"meta['bind'] of node {node!r} must be a dict")
        for axis, sym in bind.items():
            if not (axis is None or (type(axis) is int and 0 <= axis < 64)) or not is_symbol(sym):
                fail(member, f"meta['bind'] of node {node!r} must map axes (int 0..63 or null) to symbols, "
                             f"got {axis!r:.60}: {sym!r:.60}")
    shape = meta.get("shape")
    if dims_ok is not None and dims_ok.get(id(shape)) is shape:
        shape = None  # a shape tuple that passed already (the decoder shares repeated shapes)
    if shape is not None:
        if not isinstance(shape, tuple) or len(shape) > 64:
            fail(member, f"meta['shape'] of node {node!r} must be a tuple of ints and size expressions")
        if dims_ok is None:
            dims_ok = {}
        unchecked = [d for d in shape if type(d) is not int and dims_ok.get(id(d)) is not d]
        if unchecked:
            if any(type(d) is not SizeExpr or not is_number_tree(d.tree) for d in unchecked):
                fail(member, f"meta['shape'] of node {node!r} must be a tuple of ints and size expressions")
            for d in unchecked:
                if not integer_valued(d):
                    fail(member, f"meta['shape'] of node {node!r} holds {_expr_text(d)}, whose value is not "
                                 "an integer")
            for d in unchecked:
                dims_ok[id(d)] = d  # the value keeps the object, so its id is not reused meanwhile
        dims_ok[id(shape)] = shape
    if meta.get("dtype") is not None and not isinstance(meta["dtype"], np.dtype):
        fail(member, f"meta['dtype'] of node {node!r} must be a dtype")
    if "module_path" in meta and not isinstance(meta["module_path"], str):
        fail(member, f"meta['module_path'] of node {node!r} must be a string")
    errstate = meta.get("errstate")
    if errstate is not None and not (  # codegen writes these into the source: exact words only
            isinstance(errstate, tuple) and 0 < len(errstate) <= 4
            and all(isinstance(p, tuple) and len(p) == 2 and p[0] in _ERR_KINDS and p[1] in _ERR_MODES
                    for p in errstate)
            and len({p[0] for p in errstate}) == len(errstate)):
        fail(member, f"meta['errstate'] of node {node!r} must be (kind, mode) pairs with kinds "
                     f"{sorted(_ERR_KINDS)} and modes {sorted(_ERR_MODES)}")


def _check_dict_keys(value: Any, member: str, node: str) -> None:
    """Dict keys in node arguments must be plain str/int/float/bool/None (codegen prints them)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            bad = [k for k in v if type(k) not in _DICT_KEY_TYPES]
            if bad:
                fail(member, f"node {node!r} has a dict key of type {_type_name(bad[0])}; "
                             "only str/int/float/bool/None keys are allowed")
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


# -- records ----------------------------------------------------------------------------

def _argument(data: Any, member: str, budget: ExprBudget) -> Any:
    from ..program import signature as S

    if not isinstance(data, dict) or data.get("k") not in _ARG_KINDS:
        fail(member, f"malformed argument record {data!r:.100}")
    kind = data["k"]
    if kind == "ConstantArgument":
        get_dict(data, member, kind, {"k", "name", "value"})
        value = Decoder(member, budget=budget).value(data["value"])
        # a model may return a constant array (np.sqrt(x.shape) with the sizes pinned): the inline array
        # (no object dtype decodes: the decoder refuses it)
        if not isinstance(value, (int, float, bool, str, type(None), np.ndarray, np.generic)):
            fail(member, f"ConstantArgument value must be int/float/bool/str/None or an inline array, "
                         f"got {type(value).__name__}")
        return S.ConstantArgument(get_str(data["name"], member, "argument name"), value)
    if kind == "CustomObjArgument":
        get_dict(data, member, kind, {"k", "name", "class_fqn"})
        return S.CustomObjArgument(get_str(data["name"], member, "argument name"),
                                   get_str(data["class_fqn"], member, "class_fqn"))
    get_dict(data, member, kind, {"k", "name"})
    return getattr(S, kind)(get_str(data["name"], member, "argument name"))


def _enum(cls: Any, name: Any, member: str, what: str) -> Any:
    if not isinstance(name, str) or name not in cls.__members__:
        fail(member, f"unknown {what} {name!r:.60} (expected one of {sorted(cls.__members__)})")
    return cls[name]


def _signature(data: Any, member: str, budget: ExprBudget) -> Any:
    from ..program import signature as S

    get_dict(data, member, "signature", {"inputs", "outputs"})
    inputs, outputs = [], []
    input_kinds, output_kinds = dict(S.InputKind.__members__), dict(S.OutputKind.__members__)
    for raw in get_list(data["inputs"], member, "signature.inputs"):
        # exact JSON types first; the checks that word the problem run when one fails
        if type(raw) is not dict or raw.keys() != _INPUT_SPEC_KEYS:
            get_dict(raw, member, "input spec", _INPUT_SPEC_KEYS)
        kind = input_kinds.get(raw["kind"]) if type(raw["kind"]) is str else None
        if kind is None:
            kind = _enum(S.InputKind, raw["kind"], member, "input kind")
        target = raw["target"]
        expect(target is None or isinstance(target, str), member, "input spec target must be a string or null")
        expect(raw["persistent"] in (None, True, False), member, "input spec persistent must be a bool or null")
        if kind == S.InputKind.CUSTOM_OBJ:
            fail(member, f"custom object input {target!r} cannot be loaded: archives hold arrays only")
        try:
            inputs.append(S.InputSpec(kind, _tensor_argument(raw["arg"], S) or _argument(raw["arg"], member, budget),
                                      target, raw["persistent"]))
        except ValueError as err:
            fail(member, f"bad input spec: {err}")
    for raw in get_list(data["outputs"], member, "signature.outputs"):
        if type(raw) is not dict or raw.keys() != _OUTPUT_SPEC_KEYS:
            get_dict(raw, member, "output spec", _OUTPUT_SPEC_KEYS)
        kind = output_kinds.get(raw["kind"]) if type(raw["kind"]) is str else None
        if kind is None:
            kind = _enum(S.OutputKind, raw["kind"], member, "output kind")
        expect(raw["target"] is None or isinstance(raw["target"], str), member, "output spec target must be a string or null")
        outputs.append(S.OutputSpec(kind, _tensor_argument(raw["arg"], S) or _argument(raw["arg"], member, budget),
                                    raw["target"]))
    return S.ExportGraphSignature(inputs, outputs)


_INPUT_SPEC_KEYS = frozenset({"kind", "arg", "target", "persistent"})
_OUTPUT_SPEC_KEYS = frozenset({"kind", "arg", "target"})
_NAME_RECORD_KEYS = frozenset({"k", "name"})


def _tensor_argument(data: Any, S: Any) -> Any:
    """The TensorArgument ``data`` records when it is exactly a well-formed one, else None
    (then :func:`_argument` reads it, with its checks and messages)."""
    if (type(data) is dict and data.keys() == _NAME_RECORD_KEYS and data["k"] == "TensorArgument"
            and type(data["name"]) is str and len(data["name"]) <= 4096):
        return S.TensorArgument(data["name"])
    return None


# What capture emits, and so all a loaded program may hold.  A kind joins these tables together
# with the hostile tests of its own rules (parameter mutations, size outputs, generator state, ...).
_INPUT_ARGS = {"USER_INPUT": ("TensorArgument", "ConstantArgument", "SymIntArgument"), "PARAMETER": ("TensorArgument",),
               "BUFFER": ("TensorArgument",), "CONSTANT_TENSOR": ("TensorArgument",)}
# the runtime checks export puts on a dynamic int input (a SymIntArgument USER_INPUT)
_INT_INPUT_CHECKS = frozenset({"tpe.check_int", "tpe.assert_int"})
# a size output (tpe.size_value node, by its kind) and the argument record naming it
_SIZE_OUTPUT_ARGS = {"int": "SymIntArgument", "float": "SymFloatArgument", "bool": "SymBoolArgument"}
# output kinds in the order capture writes them (state write-backs, input write-backs, results)
_OUTPUT_ORDER = {"PARAMETER_MUTATION": 0, "BUFFER_MUTATION": 1, "USER_INPUT_MUTATION": 2, "USER_OUTPUT": 3}


def _check_state_paths(sig: Any, member: str) -> None:
    """Each lifted value gets its own attribute path on ``module()``, none inside another's
    (``bias`` and ``bias.weight`` cannot both be attributes: every call would fail)."""
    from ..program.exported import _STATE_KINDS, ExportedModule, StateModule, _attr_path

    # a name that is a module attribute (state_dict, forward) hangs off _shadowed (_attr_path);
    # a dunder name of the module classes would reach Python's own slots (__class__, __dict__)
    for s in sig.input_specs:
        if s.kind in _STATE_KINDS:
            for part in str(s.target).split("."):
                index = part.isascii() and part.isdigit()  # a ModuleList child: layers.0.weight
                dunder = part.startswith("__") and part.endswith("__") and (
                    hasattr(StateModule, part) or hasattr(ExportedModule, part))
                if not (part.isidentifier() or index) or dunder:
                    fail(member, f"invalid state name {s.target!r:.80}: each dotted part must be an identifier "
                                 f"(or a list index) and none a dunder name of a module ({part!r:.40} is)")
    paths = sorted(_attr_path(s.target) for s in sig.input_specs if s.kind in _STATE_KINDS)
    for a, b in zip(paths, paths[1:]):
        if a == b or b.startswith(a + "."):
            fail(member, f"state names {a!r:.80} and {b!r:.80} collide: module() would hold one inside the "
                         f"other (a weight cannot be a submodule too)")


def _check_root_specs(sig: Any, call_graph: list, member: str) -> None:
    """The root call's tree specs fit the graph: ``(args, kwargs)`` with string keywords, one leaf
    per user input, one per result output (else every call would fail unpacking them)."""
    from ..program.exported import _RESULT_KINDS

    root = call_graph[0].signature if call_graph and call_graph[0].fqn == "" else None
    if root is None:
        return
    n_inputs = sum(1 for s in sig.input_specs if s.kind.name == "USER_INPUT")
    n_results = sum(1 for s in sig.output_specs if s.kind in _RESULT_KINDS)
    spec = root.in_spec
    if spec is not None:
        if (spec.kind != "tuple" or len(spec.children) != 2 or spec.children[0].kind != "tuple"
                or spec.children[1].kind != "dict" or not all(type(k) is str for k in spec.children[1].context)):
            fail(member, "the root call's in_spec must be (args tuple, kwargs dict with string keys)")
        if spec.num_leaves != n_inputs:
            fail(member, f"the root call's in_spec has {spec.num_leaves} leaves for {n_inputs} user inputs")
    if root.out_spec is not None and root.out_spec.num_leaves != n_results:
        fail(member, f"the root call's out_spec has {root.out_spec.num_leaves} leaves for {n_results} results")


def _node(v: Any) -> bool:
    return type(v) is Node


def _text(v: Any) -> bool:
    return type(v) is str


def _int(v: Any) -> bool:
    return type(v) is int


def _int_or_none(v: Any) -> bool:
    return v is None or type(v) is int


def _size(v: Any) -> bool:
    return type(v) is int or type(v) is SizeExpr


def _condition(v: Any) -> bool:
    return type(v) is bool or type(v) is SizeExpr


def _texts(v: Any) -> bool:
    return type(v) is tuple and all(type(t) is str for t in v)


def _sizes(v: Any) -> bool:
    return type(v) is tuple and all(_size(t) for t in v)


def _static(v: Any) -> bool:
    return type(v) is tuple and all(d is None or (type(d) is int and d >= 0) for d in v)


def _dtype(v: Any) -> bool:
    return v is None or isinstance(v, np.dtype)


# The runtime checks' arguments as capture writes them: positional, of these kinds, and the axis
# (where there is one) an axis of the checked array; (argument names, kinds, axis position or None).
_CHECK_ARGS: dict[str, tuple] = {
    "tpe.check_input": ("input, path, static sizes, dtype, shape text", (_node, _text, _static, _dtype, _text), None),
    "tpe.derived_root": ("input, path, axis, k, c, lo, hi, text, name",
                         (_node, _text, _int, _int, _int, _int, _int_or_none, _text, _text), 2),
    "tpe.assert_range": ("value, lo, hi, where, name", (_size, _int, _int_or_none, _text, _text), None),
    "tpe.assert_dim": ("input, path, axis, expected, what, detail", (_node, _text, _int, _size, _text, _text), 2),
    "tpe.assert_guard": ("ok, where, value, text, names, values", (_condition, _text, _size, _text, _texts, _sizes), None),
    "tpe.check_size": ("ok, text, where, names, values", (_condition, _text, _text, _texts, _sizes), None),
    "tpe.check_int": ("value, path, k, c, lo, hi, text, root",
                      (_node, _text, _int, _int, _int_or_none, _int_or_none, _text, _text), None),
    "tpe.assert_int": ("value, path, expected, what, detail", (_node, _text, _size, _text, _text), None),
}


def _check_input_check_args(graph: Graph, sig: Any, call_graph: list, member: str) -> None:
    """Each ``tpe.check_input`` is ``(input, path, static sizes, dtype, shape text)`` with those
    types (a dtype given as an array ran ``==`` on arrays at the first call), checks a
    placeholder once, and names its input by exactly that input's path: the path of its leaf
    in the root call's ``in_spec``, bound to the root call's parameters as Python binds the
    export call (``specs.binding.input_leaf_paths``).  Errors and ``contract`` print the path,
    and keyword calls bind by the parameters: a path edited or swapped with another input's,
    or parameters reordered, made the contract name one input and the program check another.
    """
    checks = [n for n in graph.nodes if n.op == "call_function" and n.target == "tpe.check_input"]
    if not checks:
        return  # a program built by hand checks nothing (_check_inputs_enforced)
    seen: set = set()
    for n in checks:  # their arguments' kinds: _check_runtime_checks
        args = n.args
        if args[0].op != "placeholder":
            fail(member, f"node {n.name!r}: tpe.check_input checks an input placeholder, not node {args[0].name!r}")
        if args[0] in seen:
            fail(member, f"node {n.name!r} checks input {args[0].name!r}, which an earlier check_input checks")
        seen.add(args[0])
    paths = _input_paths(sig, call_graph, member)
    if paths is None:  # no root call (archives of version 1): the path must give the placeholder's name
        from ..specs.binding import leaf_name

        for n in checks:
            name, path = n.args[0].name, n.args[1]
            if name.rstrip("_") != leaf_name(path):
                fail(member, f"node {n.name!r} names its input {path!r:.80}, but placeholder {name!r} is no "
                             f"input of that path (capture names it {leaf_name(path)!r})")
        return
    for n in checks:
        want = paths.get(n.args[0].name)
        if want != n.args[1]:
            fail(member, f"node {n.name!r} names its input {n.args[1]!r:.80}, but placeholder {n.args[0].name!r} "
                         f"is the root call's input {want!r:.80} (its leaf of in_spec, bound to the parameters)")


def _input_paths(sig: Any, call_graph: list, member: str) -> dict | None:
    """``{user input placeholder: its path}`` from the root call's ``in_spec`` and parameters; None
    for an empty ``module_call_graph`` (version 1 wrote none)."""
    import inspect

    from ..program.call_binding import _KINDS
    from ..specs.binding import spec_leaf_paths

    if not call_graph:
        return None
    root = call_graph[0].signature if call_graph[0].fqn == "" else None
    if root is None or root.in_spec is None or not (root.parameters or root.forward_arg_names):
        fail(member, "the program checks its inputs, but its module_call_graph has no root call (fqn '') with "
                     "an in_spec and parameters naming them")
    try:
        params = [inspect.Parameter(p.name, _KINDS[p.kind], default=p.default if p.has_default else inspect.Parameter.empty)
                  for p in root.parameters] if root.parameters else \
            [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in root.forward_arg_names]

        def forward(*args: Any, **kwargs: Any) -> None:
            return None
        forward.__signature__ = inspect.Signature(params)
        paths = spec_leaf_paths(forward, root.in_spec)
    except (KeyError, ValueError, TypeError) as err:
        fail(member, f"the root call's in_spec does not bind to its parameters: {str(err)[:200]}")
    names = [getattr(s.arg, "name", None) for s in sig.input_specs if s.kind.name == "USER_INPUT"]
    return dict(zip(names, paths))


def _check_specs(graph: Graph, sig: Any, member: str) -> None:
    """Refuse input/output specs capture never emits (the allowlists above).

    An input write-back (``USER_INPUT_MUTATION``) is copied into the caller's array
    on every call, so it must name a user input placeholder (never a weight or a
    constant), at most once, carry a value the graph computes, of that input's
    shape and dtype; a ``BUFFER_MUTATION`` must name a buffer.  Each output spec
    names exactly the value the output node returns at its position.
    """
    placeholders = graph.placeholders()
    if len(sig.input_specs) != len(placeholders):
        fail(member, f"the signature lists {len(sig.input_specs)} inputs but the graph has "
                     f"{len(placeholders)} placeholders")
    user_inputs: dict[str, Node] = {}
    params: dict[str, Node] = {}
    buffers = set()
    for spec, ph in zip(sig.input_specs, placeholders):
        kind, arg_kind = spec.kind.name, type(spec.arg).__name__
        if arg_kind not in _INPUT_ARGS.get(kind, ()):
            fail(member, f"input {ph.name!r}: input kind {kind} with a {arg_kind} is not something capture emits")
        if kind != "USER_INPUT" and not isinstance(spec.target, str):
            fail(member, f"input {ph.name!r}: a {kind} input needs a target name")
        if arg_kind == "TensorArgument" and spec.arg.name != ph.name:
            fail(member, f"input spec {spec.arg.name!r:.80} does not match placeholder {ph.name!r}")
        if kind == "USER_INPUT" and arg_kind == "TensorArgument":
            user_inputs[ph.name] = ph
        if arg_kind == "SymIntArgument":
            # a dynamic int input: its placeholder, read first by the int check that binds or ties its size
            if spec.arg.name != ph.name:
                fail(member, f"input spec {spec.arg.name!r:.80} does not match placeholder {ph.name!r}")
            first = next((u for u in graph.nodes if ph in getattr(u, "args", ())[:1]), None)
            if first is None or first.op != "call_function" or first.target not in _INT_INPUT_CHECKS:
                fail(member, f"int input {ph.name!r} must be read first by one of {sorted(_INT_INPUT_CHECKS)} "
                             "(its runtime check), as export writes it")
        if kind == "BUFFER":
            buffers.add(spec.target)
        if kind == "PARAMETER":
            params[spec.target] = ph
    out = graph.output_node
    values = list(out.args[0]) if out is not None and out.args and isinstance(out.args[0], (list, tuple)) else []
    if len(sig.output_specs) != len(values):
        fail(member, f"the signature lists {len(sig.output_specs)} outputs but the graph returns {len(values)} values")
    for n in graph.nodes:  # every size node (outputs, preserved calls' sizes): an expression of a known kind
        if n.op == "call_function" and n.target == "tpe.size_value":
            size_kind = n.args[1] if len(n.args) == 2 and not n.kwargs else None
            if not (isinstance(size_kind, str) and size_kind in _SIZE_OUTPUT_ARGS):
                fail(member, f"size node {n.name!r} has kind {size_kind!r:.40} (expected one of {sorted(_SIZE_OUTPUT_ARGS)})")
            if not _is_expr(n.args[0]):
                fail(member, f"size node {n.name!r} must compute a size expression, not a {type(n.args[0]).__name__}")
    rank, written, buffers_written = 0, set(), set()
    for i, (spec, value) in enumerate(zip(sig.output_specs, values)):
        kind = spec.kind.name
        if kind not in _OUTPUT_ORDER:
            fail(member, f"output {i}: output kind {kind} is not something capture emits")
        if _OUTPUT_ORDER[kind] < rank:
            fail(member, f"output {i}: a {kind} output after a later kind (capture's order is parameter "
                         "write-backs, buffer write-backs, input write-backs, then results)")
        rank = _OUTPUT_ORDER[kind]
        arg_kind = type(spec.arg).__name__
        if isinstance(value, Node):
            if getattr(spec.arg, "name", None) != value.name:
                fail(member, f"output {i}: the spec names {getattr(spec.arg, 'name', spec.arg)!r:.80}, but the "
                             f"graph returns {value.name!r} there")
            size_kind = value.args[1] if value.target == "tpe.size_value" else None
            want = _SIZE_OUTPUT_ARGS[size_kind] if value.target == "tpe.size_value" else "TensorArgument"
            if arg_kind != want:
                what = f"a size ({size_kind})" if size_kind is not None else "an array"
                fail(member, f"output {i}: the graph returns {what} from {value.name!r}, but the spec is a "
                             f"{arg_kind} (a size output is a Sym*Argument naming a tpe.size_value node)")
            if size_kind is not None and kind != "USER_OUTPUT":
                fail(member, f"output {i}: a size output can only be a USER_OUTPUT, not {kind}")
        elif arg_kind != "ConstantArgument":
            fail(member, f"output {i}: the graph returns a constant there, but the spec is a {arg_kind}")
        if kind == "BUFFER_MUTATION":
            if spec.target not in buffers:
                fail(member, f"output {i} writes back to {spec.target!r:.80}, which is not a buffer of the program")
            if spec.target in buffers_written:
                fail(member, f"output {i} writes back to buffer {spec.target!r:.80} twice")
            buffers_written.add(spec.target)
        elif kind == "PARAMETER_MUTATION":
            target = params.get(spec.target) if isinstance(spec.target, str) else None
            if target is None:
                fail(member, f"output {i} writes back to {spec.target!r:.80}, which is not a parameter of the program")
            if ("param", spec.target) in written:
                fail(member, f"output {i} writes back to parameter {spec.target!r:.80} twice")
            written.add(("param", spec.target))
            _check_write_back(value, target, f"output {i} writes back to parameter {spec.target!r}", "parameter",
                              member)
        elif kind == "USER_INPUT_MUTATION":
            target = user_inputs.get(spec.target) if isinstance(spec.target, str) else None
            if target is None:
                fail(member, f"output {i} writes back to {spec.target!r:.80}, which is not a user input array "
                             "(capture writes back only into the caller's own inputs)")
            if spec.target in written:
                fail(member, f"output {i} writes back to input {spec.target!r} twice")
            written.add(spec.target)
            _check_write_back(value, target, f"output {i} writes back to input {spec.target!r}", "input", member)


def _check_write_back(value: Any, target: Node, what: str, role: str, member: str) -> None:
    """A write-back carries a value the graph computes, of the target placeholder's shape and dtype."""
    if not isinstance(value, Node) or value.op != "call_function":
        fail(member, f"{what} a value not computed by the graph")
    for key in ("shape", "dtype"):
        want, got = target.meta.get(key), value.meta.get(key)
        if want is None or got is None or want != got:
            fail(member, f"{what} a value of {key} {got}, but the {role} has {key} {want}")


def _check_ranges_enforced(graph: Graph, ranges: dict, member: str) -> None:
    """``range_constraints`` must be exactly the ranges the graph's checks enforce.

    The contract tools (``tensorplay-export contract``, ``diff``) report
    ``range_constraints``; the program enforces its ``tpe.assert_range`` and
    ``tpe.derived_root`` nodes.  Each such node's bounds must equal its symbol's
    entry, and every symbol an input check binds that has an entry must be
    checked (as export writes them).  Sizes known only at run time (data-dependent
    ``u0``) are bound by ops, not input checks, and are not covered here.
    """
    import math

    checked: dict[SizeExpr, tuple] = {}
    input_bound: dict[SizeExpr, str] = {}
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        if n.target == "tpe.check_input":
            for sym in (n.meta.get("bind") or {}).values():
                input_bound.setdefault(sym, n.name)
            continue
        if n.target == "tpe.assert_range" and len(n.args) >= 3:
            sym, lo, hi = n.args[:3]
        elif n.target == "tpe.derived_root" and len(n.args) >= 7:
            sym, lo, hi = (n.meta.get("bind") or {}).get(None), n.args[5], n.args[6]
        elif n.target == "tpe.check_int" and len(n.args) >= 6:
            if n.args[4] is None:  # a bare int root: its range is a tpe.assert_range of its own
                for sym in (n.meta.get("bind") or {}).values():
                    input_bound.setdefault(sym, n.name)
                continue
            sym, lo, hi = (n.meta.get("bind") or {}).get(None), n.args[4], n.args[5]
        else:
            continue
        if (not is_symbol(sym) or type(lo) is not int
                or not (hi is None or type(hi) is int)):
            fail(member, f"node {n.name!r} ({n.target}) must check a bound symbol against integer bounds")
        text = f"[{lo}, {'inf' if hi is None else hi}]"
        if sym in checked and checked[sym][:2] != (lo, hi):
            fail(member, f"node {n.name!r} checks {sym} in {text}, but node {checked[sym][2]!r} checks it in "
                         f"[{checked[sym][0]}, {'inf' if checked[sym][1] is None else checked[sym][1]}]")
        checked[sym] = (lo, hi, n.name)
        vr = ranges.get(sym)
        if vr is None:
            fail(member, f"node {n.name!r} checks {sym} in {text}, but range_constraints has no entry for it")
        want = (int(vr.lower), None if vr.upper == math.inf else int(vr.upper))
        if want != (lo, hi):
            fail(member, f"range_constraints say {sym} in [{want[0]}, {'inf' if want[1] is None else want[1]}], "
                         f"but node {n.name!r} checks {sym} in {text}: the contract would not be the one the "
                         "program enforces")
    for sym, where in input_bound.items():
        if sym in ranges and sym not in checked:
            fail(member, f"range_constraints bound {sym} (bound by {where!r}), but no check in the graph "
                         "enforces that range")


def _check_equalities_enforced(graph: Graph, equalities: list, member: str) -> None:
    """Each equality constraint must be enforced by the graph's input checks.

    ``contract`` and ``diff`` report ``equality_constraints``; the program enforces an
    axis's size through the input check that binds a symbol there first (generated code
    reads the symbol from that axis) and through ``tpe.assert_dim`` nodes (an axis equal
    to an expression).  Every site of a constraint must get its size from one of those,
    and all sites the same size; an archive whose checks do not tie the sites (a removed
    ``tpe.assert_dim``) would report a contract its program does not keep.
    """
    if not equalities:
        return
    first: dict[tuple, Any] = {}     # (placeholder, axis) -> the symbol its check binds first there
    bound: set = set()
    enforced: dict[tuple, Any] = {}  # (placeholder, axis) -> the expression a tpe.assert_dim checks it against
    check_of: dict[str, str] = {}    # check node name -> its placeholder's name
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        if n.target == "tpe.check_input" and n.args and isinstance(n.args[0], Node):
            check_of[n.name] = n.args[0].name
            for axis, sym in (n.meta.get("bind") or {}).items():
                if sym not in bound and axis is not None:
                    bound.add(sym)
                    first[(n.args[0].name, axis)] = sym
        elif n.target == "tpe.assert_dim" and len(n.args) >= 4 and isinstance(n.args[0], Node):
            owner = check_of.get(n.args[0].name, n.args[0].name)
            enforced[(owner, n.args[2])] = n.args[3]
    for eq in equalities:
        sizes = []
        for site in eq.sites:
            size = first.get(tuple(site), enforced.get(tuple(site)))
            if size is None:
                fail(member, f"equality constraint {eq.name or ''} ties {_sites_text(eq.sites)}, but no check in the "
                             f"graph enforces the size of {site[0]}.shape[{site[1]}]")
            sizes.append(size)
        if any(_expr_text(s) != _expr_text(sizes[0]) for s in sizes[1:]):
            fail(member, f"equality constraint {eq.name or ''} ties {_sites_text(eq.sites)}, but the graph's checks "
                         f"give them the sizes {', '.join(_expr_text(s) for s in sizes)}")


def _check_inputs_enforced(graph: Graph, sig: Any, member: str) -> None:
    """Every array input's contract, as ``contract`` and ``diff`` report it, must be what the
    program checks at run time.

    The contract of an input is its ``tpe.check_input`` node: its path, dtype and
    ``meta["shape"]``.  At run time that node checks the rank, the static sizes (its third
    argument) and the dtype; a dynamic axis gets its size from the symbol the node binds
    there first, from a ``tpe.derived_root`` on that axis (``k*r + c``, binding ``r``) or
    from a ``tpe.assert_dim`` comparing it with an expression.  So every user input array
    must have a check (unless no input has one: a program built by hand through the
    ``ExportedProgram`` constructor, whose contract lists no inputs), each static size of
    its shape must be a checked static size, and
    each dynamic one must be enforced by one of those three nodes, with exactly that
    expression.  An archive with a removed ``tpe.assert_dim`` (a derived relation such as
    ``y.shape[0] == 2*dx``), a removed check, or a shape entry edited away from its
    check would otherwise run on inputs outside the contract it reports.
    """
    checks: dict[str, Node] = {}  # placeholder name -> its check_input node
    enforced: dict[tuple, list] = {}  # (check node name, axis) -> the trees checked there
    bound: set = set()
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        args = n.args
        if n.target == "tpe.check_input" and len(args) >= 3 and isinstance(args[0], Node):
            checks.setdefault(args[0].name, n)
            for axis, sym in (n.meta.get("bind") or {}).items():
                if axis is not None and sym not in bound:  # the first binding gives the size
                    bound.add(sym)
                    enforced.setdefault((n.name, axis), []).append(getattr(sym, "tree", sym))
        elif n.target == "tpe.assert_dim" and len(args) >= 4 and isinstance(args[0], Node):
            enforced.setdefault((args[0].name, args[2]), []).append(getattr(args[3], "tree", args[3]))
        elif n.target == "tpe.derived_root" and len(args) >= 5 and isinstance(args[0], Node):
            r = (n.meta.get("bind") or {}).get(None)
            k, c = args[3], args[4]
            if type(r) is SizeExpr and type(k) is int and type(c) is int and k:
                term = r.tree if k == 1 else ("Mul", k, r.tree)  # sympy's form of k*r + c
                enforced.setdefault((args[0].name, args[2]), []).append(term if c == 0 else ("Add", c, term))
    for spec in sig.input_specs:
        if getattr(spec.kind, "name", "") != "USER_INPUT" or type(spec.arg).__name__ != "TensorArgument":
            continue
        check = checks.get(spec.arg.name)
        if check is None:
            if checks:  # a program built by hand may check nothing; an exported one checks every input
                fail(member, f"input {spec.arg.name!r} has no tpe.check_input node, unlike the program's other "
                             "inputs: it would run on any shape and dtype")
            continue
        shape, static = check.meta.get("shape"), check.args[2]
        if not isinstance(shape, tuple) or not isinstance(static, tuple) or len(shape) != len(static):
            fail(member, f"node {check.name!r} checks {len(static) if isinstance(static, tuple) else '?'} axes "
                         f"of its input, but its meta['shape'] has another rank")
        for axis, (d, want) in enumerate(zip(shape, static)):
            if type(d) is int:
                ok = want == d and type(want) is int
            else:
                ok = want is None and getattr(d, "tree", d) in enforced.get((check.name, axis), ())
            if not ok:
                fail(member, f"node {check.name!r} reports {check.args[1]!s:.80}.shape[{axis}] as "
                             f"{_expr_text(d)}, but no check in the graph enforces that size")


# Checks of the inputs alone (their shapes, dtypes and int values, and guards over the sizes
# these bind): export writes them all before the first computation.
_INPUT_CHECKS = frozenset(_CHECK_ARGS) - {"tpe.check_size"}
_BINDING_CHECKS = frozenset({"tpe.check_input", "tpe.derived_root", "tpe.check_int"})


def _bound_names(n: Any) -> Iterator[str]:
    """Names of the symbols binding check ``n`` binds (its ``meta['bind']``)."""
    for sym in (n.meta.get("bind") or {}).values():
        name = getattr(sym, "name", None)  # a SizeExpr that is no symbol has none
        if isinstance(name, str):
            yield name


def input_symbol_names(graph: Any) -> set:
    """Names of the symbols the input checks bind (``tpe.check_input``, ``tpe.derived_root``,
    ``tpe.check_int``): the sizes of the inputs, checked before anything runs."""
    return {name for n in graph.nodes if n.op == "call_function" and n.target in _BINDING_CHECKS
            for name in _bound_names(n)}


def _check_runtime_checks(graph: Graph, member: str) -> set:
    """The runtime checks are as capture writes them; returns the names of the input symbols.

    - arguments: positional (a label passed as a keyword escaped the label rule and crashed
      ``contract``), of their kinds (:data:`_CHECK_ARGS`), a ``k`` that is no zero divisor and an
      axis the checked array has (``k=0`` raised ZeroDivisionError at the first call, ``axis=9``
      IndexError);
    - texts (paths, labels, shape texts, conditions): printable, one line each, since errors and
      the ``contract``/``diff`` reports print them as lines (a newline forged a second
      ``Outputs:``; capture writes a ``tpe.check`` message as its repr);
    - order: every check of the inputs alone precedes the first computation.  That is one of
      :data:`_INPUT_CHECKS` that reads an input array or int (or the check_input reading one),
      or whose expressions read symbols the inputs bind and no other (a guard over a
      data-dependent size, ``u0``, follows the op that makes it).  Moved after the ops, a
      refused input (``n = 20000`` against ``n <= 64``) was computed on first (``np.outer``
      allocating gigabytes) and refused only afterwards.
    """
    inputs: set = set()
    first = None  # the first call that computes
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        spec = _CHECK_ARGS.get(n.target)
        if spec is None:
            if first is None:
                first = n
            continue
        names, kinds, axis_at = spec
        args = n.args
        ok = not n.kwargs and len(args) == len(kinds) and all(kind(a) for kind, a in zip(kinds, args))
        if ok and n.target in ("tpe.derived_root", "tpe.check_int"):
            ok = args[3 if n.target == "tpe.derived_root" else 2] != 0
        if ok and axis_at is not None:
            shape = args[0].meta.get("shape")
            ok = isinstance(shape, tuple) and 0 <= args[axis_at] < len(shape)
        if not ok:
            fail(member, f"node {n.name!r}: {n.target} takes the positional arguments ({names}) of their kinds "
                         "(sizes as ints or size expressions, a nonzero k, an axis of the checked array), "
                         f"got {len(args)} positional and {len(n.kwargs)} keyword")
        for kind, a in zip(kinds, args):
            if (kind is _text and not a.isprintable()) or (kind is _texts and not all(t.isprintable() for t in a)):
                fail(member, f"node {n.name!r} ({n.target}) has the text {a!r:.80}, which is not one printable "
                             "line; the checks' texts are printed as lines of errors and reports")
        if n.target in _BINDING_CHECKS:
            inputs.update(_bound_names(n))
        if first is None or n.target not in _INPUT_CHECKS:
            continue
        # an input, or the check_input that reads one (tpe.derived_root, tpe.assert_dim take that)
        on_input = type(args[0]) is Node and (args[0].op == "placeholder" or args[0].target in _BINDING_CHECKS)
        read = {t[1] for a in args if type(a) is SizeExpr for t in stored.tree_symbols(a.tree)}
        read.update(t[1] for a in args if type(a) is tuple for v in a if type(v) is SizeExpr
                    for t in stored.tree_symbols(v.tree))
        if on_input or (read and read <= inputs):
            fail(member, f"node {n.name!r} ({n.target}) checks the inputs after node {first.name!r} "
                         f"({first.target}) computes on them; export writes every input check before the "
                         "first computation, so that an input outside the contract is refused before "
                         "anything runs on it")
    return inputs


def _sites_text(sites: tuple) -> str:
    return ", ".join(f"{p}.shape[{a}]" for p, a in sites)


def _ranges(data: Any, member: str, budget: ExprBudget) -> dict:
    out: dict = {}
    for item in get_list(data, member, "range_constraints"):
        if not isinstance(item, list) or len(item) != 3:
            fail(member, f"range constraint must be [symbol, lower, upper], got {item!r:.80}")
        sym = decode_stored(item[0], member, budget)  # ep.range_constraints makes it sympy when read
        if not is_symbol(sym):
            fail(member, f"range constraint key must be a symbol, got {sym}")
        if sym in out:
            fail(member, f"symbol {sym.name!r} has two range constraints")
        rng = decode_range(item[1], item[2], member)
        # a size symbol's own assumptions bound it too: what it says and what is checked must agree
        facts = dict(sym.tree[2]) if type(sym) is SizeExpr and len(sym.tree) > 2 else {}
        least = 1 if facts.get("positive") else 0 if facts.get("nonnegative") else None
        if least is not None and rng.lower is not None and rng.lower < least:
            fail(member, f"range of {sym.name!r} starts at {rng.lower}, below {least}, the least value its "
                         f"symbol admits ({'positive' if least else 'nonnegative'})")
        out[sym] = rng
    return out


def _equalities(data: Any, member: str) -> list:
    from ..specs.dims import EqualityConstraint

    out = []
    for raw in get_list(data, member, "equality_constraints"):
        get_dict(raw, member, "equality constraint", {"sites", "name"})
        sites = get_list(raw["sites"], member, "equality constraint sites")
        if any(not isinstance(s, list) or len(s) != 2 or not isinstance(s[0], str) or type(s[1]) is not int
               for s in sites):
            fail(member, "equality constraint sites must be [input name, axis] pairs")
        expect(len(sites) >= 2, member, "an equality constraint ties two or more sites")
        expect(raw["name"] is None or isinstance(raw["name"], str), member, "equality constraint name must be a string")
        out.append(EqualityConstraint(tuple((p, a) for p, a in sites), raw["name"]))
    return out


def _treespec(data: Any, member: str) -> Any:
    from ..pytree import treespec_from_json

    if data is None:
        return None
    try:
        return treespec_from_json(data)
    except ArchiveError as err:
        fail(member, str(err))
    except (TypeError, ValueError, AttributeError, KeyError) as err:
        fail(member, f"malformed treespec: {err}")


def _call_graph(data: Any, member: str, budget: ExprBudget) -> list:
    from ..program.signature import ModuleCallEntry, ModuleCallSignature

    out = []
    for raw in get_list(data, member, "module_call_graph"):
        get_dict(raw, member, "module call entry", {"fqn", "signature"})
        fqn = get_str(raw["fqn"], member, "module fqn")
        sig = raw["signature"]
        if sig is not None:
            get_dict(sig, member, "module call signature",
                     {"inputs", "outputs", "in_spec", "out_spec", "forward_arg_names"},
                     frozenset({"parameters", "forward_name"}))
            names = sig["forward_arg_names"]
            if names is not None and (not isinstance(names, list) or any(not isinstance(n, str) for n in names)):
                fail(member, "forward_arg_names must be a list of strings")
            sig = ModuleCallSignature(
                [_argument(a, member, budget) for a in get_list(sig["inputs"], member, "module call inputs")],
                [_argument(a, member, budget) for a in get_list(sig["outputs"], member, "module call outputs")],
                _treespec(sig["in_spec"], member), _treespec(sig["out_spec"], member), names)
            if "parameters" in raw["signature"]:
                sig.parameters = _call_parameters(raw["signature"]["parameters"], member, budget)
                name = raw["signature"].get("forward_name")
                sig.forward_name = None if name is None else get_str(name, member, "forward_name", 256)
        out.append(ModuleCallEntry(fqn, sig))
    return out


_PARAMETER_KINDS = ("positional_only", "positional_or_keyword", "var_positional", "keyword_only", "var_keyword")


def _call_parameters(data: Any, member: str, budget: ExprBudget) -> list:
    from ..program.signature import CallParameter

    out = []
    for raw in get_list(data, member, "call parameters"):
        get_dict(raw, member, "call parameter", {"name", "kind", "has_default", "default_stored", "default"})
        name = get_str(raw["name"], member, "parameter name", 256)
        if not name.isidentifier() or raw["kind"] not in _PARAMETER_KINDS:
            fail(member, f"call parameter {name!r:.40} has a bad name or kind {raw['kind']!r:.40}")
        if type(raw["has_default"]) is not bool or type(raw["default_stored"]) is not bool:
            fail(member, f"call parameter {name!r}: has_default and default_stored must be booleans")
        default = (Decoder(member, budget=budget).value(raw["default"])
                   if raw["has_default"] and raw["default_stored"] else None)
        out.append(CallParameter(name, raw["kind"], raw["has_default"], default, raw["default_stored"]))
    return out


def _dynamic_shapes(data: Any, member: str, budget: ExprBudget) -> Any:
    if isinstance(data, dict) and set(data) == {"v"}:
        return Decoder(member, budget=budget).value(data["v"])
    if isinstance(data, dict) and set(data) == {"unstored"} and isinstance(data["unstored"], str):
        return None
    fail(member, f"malformed dynamic_shapes record {data!r:.80}")


def _examples(data: Any, member: str, arrays: Callable[[], dict] | None, override: Any,
              budget: ExprBudget, lazy: bool) -> Any:
    """The example inputs; with ``lazy``, their arrays (``sample`` leaves) are read when first used."""
    from ..pytree import tree_unflatten

    if override is not None and not _is_sample_dict(override):
        if isinstance(override, tuple) and len(override) == 2:
            return {"args": tuple(override[0]), "kwargs": dict(override[1])}
        return override
    if data is None:
        return None
    get_dict(data, member, "example_inputs", {"spec", "leaves"})
    spec = _treespec(data["spec"], member)
    if spec is None:
        fail(member, "example_inputs.spec must be a treespec, got null")
    dec = Decoder(member, budget=budget)
    leaves, wanted = [], []
    for raw in get_list(data["leaves"], member, "example_inputs.leaves"):
        if isinstance(raw, dict) and raw.get("k") == "sample":
            key = raw.get("v")
            if set(raw) != {"k", "v"} or not isinstance(key, str):
                fail(member, f"example input refers to a missing sample array {key!r:.40}")
            wanted.append((len(leaves), key))
            leaves.append(None)
        else:
            leaves.append(dec.value(raw))

    def unflatten(values: list) -> dict:
        try:
            args, kwargs = tree_unflatten(values, spec)
        except (ValueError, TypeError, IndexError, StopIteration) as err:
            fail(member, f"example inputs do not match their treespec: {err}")
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            fail(member, "example inputs must be an (args tuple, kwargs dict) pair")
        return {"args": args, "kwargs": kwargs}

    eager = unflatten(list(leaves))  # the structure is checked now, the arrays when used
    if not wanted:
        return eager

    def build() -> dict:
        samples = override if override is not None else (arrays() if arrays is not None else {})
        values = list(leaves)
        for i, key in wanted:
            if key not in samples:
                fail(member, f"example input refers to a missing sample array {key!r:.40}")
            values[i] = samples[key]
        return unflatten(values)

    return LazyExamples(build, member) if lazy and override is None else build()


class LazyExamples(Mapping):
    """``{"args": ..., "kwargs": ...}`` whose arrays are read from the archive on first access.

    A damaged ``sample_inputs.npz`` is reported then, as an ArchiveError naming it.
    Copying or pickling gives the plain dict.
    """

    def __init__(self, build: Callable[[], dict], member: str) -> None:
        self._build = build
        self._member = member
        self._value: dict | None = None

    def _resolve(self) -> dict:
        if self._value is None:
            try:
                value = self._build()
            except ArchiveError:
                raise
            except _UNEXPECTED as err:
                fail(self._member, f"malformed example inputs (unanticipated {type(err).__name__}: "
                                   f"{str(err)[:200]})")
            self._value, self._build = value, None
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._resolve()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(("args", "kwargs"))

    def __len__(self) -> int:
        return 2

    def __reduce__(self) -> Any:
        return (dict, (self._resolve(),))

    def __repr__(self) -> str:
        if self._value is None:
            return "<example inputs: read from the archive when first used>"
        return repr(self._value)


def _is_sample_dict(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and k.isdigit() for k in value)


# -- arrays -------------------------------------------------------------------------------

def _table(data: Any, member: str, what: str, roles: set[str]) -> list[dict]:
    out = []
    seen: set[str] = set()
    for raw in get_list(data, member, what):
        # exact JSON types first; the checks that word the problem run when one fails
        if type(raw) is not dict or raw.keys() != _TABLE_KEYS:
            get_dict(raw, member, f"{what} entry", _TABLE_KEYS)
        fqn, role, shape = raw["fqn"], raw["role"], raw["shape"]
        if type(fqn) is not str or len(fqn) > 1024:
            get_str(fqn, member, f"{what} fqn", 1024)
        if fqn in seen:
            fail(member, f"{what} lists {fqn!r} twice")
        seen.add(fqn)
        if not (isinstance(role, str) and role in roles):
            fail(member, f"{what} entry {fqn!r} has role {role!r:.40}, expected one of {sorted(roles)}")
        if type(shape) is not list:
            get_list(shape, member, f"shape of {fqn!r}")
        if len(shape) > 64 or any(type(n) is not int or n < 0 for n in shape):
            fail(member, f"{what} entry {fqn!r} has an invalid shape {shape!r:.80}")
        out.append({"fqn": fqn, "role": role, "dtype": decode_dtype(raw["dtype"], member),
                    "shape": tuple(shape)})
    return out


_TABLE_KEYS = frozenset({"fqn", "role", "dtype", "shape"})


def _array(entry: dict, index: int, table: str, fetch: ArrayFetch, overrides: Any, member: str) -> np.ndarray:
    fqn = entry["fqn"]
    if overrides is not None and fqn in overrides:
        array, where = overrides[fqn], f"{table}[{fqn!r}]"
    else:
        array, where = fetch(table, index, entry), None
    if not isinstance(array, np.ndarray):
        fail(where or member, f"{fqn!r} must be a numpy array, got {type(array).__name__}")
    if array.dtype != entry["dtype"] or tuple(array.shape) != entry["shape"]:
        fail(where or member, f"{table} entry {fqn!r}: array has dtype {array.dtype.str} and shape "
                              f"{tuple(array.shape)}, the program expects {entry['dtype'].str} {entry['shape']}")
    return array


def _check_against_placeholder(entry: dict, array: np.ndarray, specs: Any, placeholders: dict, member: str) -> None:
    """``array`` has the shape and dtype the placeholders of its input specs (``specs``: those
    whose target is the entry's fqn) record."""
    for spec in specs:
        if spec.target != entry["fqn"] or getattr(spec.arg, "name", None) not in placeholders:
            continue
        meta = placeholders[spec.arg.name].meta
        shape, dtype = meta.get("shape"), meta.get("dtype")
        if shape != array.shape and isinstance(shape, tuple) and all(type(d) is int for d in shape):
            fail(member, f"{entry['fqn']!r} has shape {tuple(array.shape)}, but its placeholder "
                         f"{spec.arg.name!r} expects {shape}")
        if isinstance(dtype, np.dtype) and dtype != array.dtype:
            fail(member, f"{entry['fqn']!r} has dtype {array.dtype}, but its placeholder "
                         f"{spec.arg.name!r} expects {dtype}")


def deserialize_program(artifact: Any, state_dict: Any = None, constants: Any = None,
                        example_inputs: Any = None, *, expected_opset_version: Any = None) -> Any:
    """Rebuild an ExportedProgram from :func:`serialize_program` output.

    Args:
        artifact: a :class:`SerializedArtifact`, or the program JSON bytes alone
            (then ``state_dict``/``constants`` must supply every array; without
            sample arrays the program's ``example_inputs`` is empty).
        state_dict: fqn -> array overriding the artifact's parameters/buffers.
        constants: fqn -> array overriding the artifact's constants.
        example_inputs: ``{"args", "kwargs"}`` / ``(args, kwargs)`` to attach, or
            ``"<i>" -> array`` sample leaves.
        expected_opset_version: ``{name: int}`` that must match the recorded opsets.
    Raises:
        ArchiveError: anything malformed, unknown or inconsistent (names the part).
    """
    member = "exported_program"
    if isinstance(artifact, SerializedArtifact):
        data, arrays = artifact.exported_program, artifact
    elif isinstance(artifact, (bytes, bytearray, memoryview, str)):
        data = artifact.encode("utf-8") if isinstance(artifact, str) else bytes(artifact)
        arrays = SerializedArtifact(data)
    else:
        raise TypeError(f"deserialize takes a SerializedArtifact or JSON bytes, got {type(artifact).__name__}")
    doc = parse_document(data, member)
    check_opset(doc["opset_version"], expected_opset_version, member)
    if example_inputs is None and not arrays.example_inputs:
        # The program bytes alone (or an artifact without its samples): the sample
        # inputs are documentation, not part of the contract; the program has none.
        doc = {**doc, "example_inputs": None}
    sources = {"weights": arrays.state_dict, "constants": arrays.constants}

    def fetch(table: str, index: int, entry: dict) -> np.ndarray:
        source = sources[table]
        if entry["fqn"] not in source:
            fail(f"{table}[{entry['fqn']!r}]", "array missing from the artifact")
        return source[entry["fqn"]]

    return build_program(doc, member, fetch, lambda: dict(arrays.example_inputs), state_dict=state_dict,
                         constants=constants, example_inputs=example_inputs)
