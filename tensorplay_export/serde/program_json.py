"""ExportedProgram <-> one JSON document plus named arrays (the ``serialize()`` artifact).

The document (``program.json`` in an archive) is a JSON object with exactly
these keys (values described in ``archive.py``'s format section):
``format``, ``schema_version``, ``opset_version``, ``pickle_protocol``, ``graph``,
``signature``, ``range_constraints``, ``equality_constraints``,
``module_call_graph``, ``dynamic_shapes``, ``example_inputs``, ``weights``,
``constants``.

Arrays never go into the JSON: lifted state (``weights``: parameters and
buffers; ``constants``: constant tensors and large arrays used as node
arguments) are listed in tables whose i-th entry is the i-th array, and the
example inputs' array leaves are numbered in leaf order.  Loading rebuilds
the graph node by node; each ``call_function`` target must resolve through
the op registry, each node reference must name an earlier node, and the
graph must pass ``Graph.lint()`` before any code is generated for it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ArchiveError
from ..graph.ir import Node
from ..records import ValueRange, sympy
from .exprs import collecting_size_exponents, encode_expr, size_exponent_problem
from .jsonio import canonical, dumps
from .values import Encoder, encode_dtype, encode_range, source_table

FORMAT = "tensorplay_export.program"
# 1 (2026-11-29): first version; 2 (2026-12-02): graph.source_lines, each line's text;
# 3 (2026-12-02): graph.meta_values, each distinct node meta value once (:func:`intern_meta`)
SCHEMA_VERSION = 3
OPSET_NAME = "tensorplay_export"
OPSET_VERSION = 1  # bump when an op's name, arguments or semantics change
_TOP_KEYS = {"format", "schema_version", "opset_version", "pickle_protocol", "graph", "signature",
             "range_constraints", "equality_constraints", "module_call_graph", "dynamic_shapes",
             "example_inputs", "weights", "constants"}


class WeightType(enum.IntEnum):
    """Role a packaged weight plays in the captured program (``role`` in the weight tables)."""

    PARAMETER = 1
    BUFFER = 2
    NON_PERSISTENT_BUFFER = 3
    CONSTANT = 4
    GRAPH_CONSTANT = 5  # a large array used directly as a node argument


@dataclass
class SerializedArtifact:
    """What :func:`serialize_program` returns (``ExportedProgram.serialize()``).

    Attributes:
        exported_program: the program JSON document, UTF-8 bytes (deterministic).
        state_dict: fqn -> array of every parameter and buffer (persistent or not).
        constants: fqn -> array of lifted constants; ``"graph:<i>"`` -> array used
            directly as a node argument.
        example_inputs: ``"<i>"`` -> array leaf ``i`` of the example inputs.
    """

    exported_program: bytes
    state_dict: dict[str, np.ndarray] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    example_inputs: dict[str, np.ndarray] = field(default_factory=dict)


def normalize_opset(opset_version: Any, what: str = "opset_version") -> dict[str, int]:
    """``{name: int}`` with this package's opset filled in; TypeError/ValueError when malformed."""
    out = {OPSET_NAME: OPSET_VERSION}
    if opset_version is None:
        return out
    if not isinstance(opset_version, dict):
        raise TypeError(f"{what} must be a dict[str, int], got {type(opset_version).__name__}")
    for key, value in opset_version.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{what} must map names to non-negative ints, got {key!r}: {value!r}")
        out[key] = int(value)
    return out


def check_pickle_protocol(pickle_protocol: Any) -> int:
    """Validate ``pickle_protocol`` (an int in 0..5); it is recorded, never used (no pickle)."""
    if isinstance(pickle_protocol, bool) or not isinstance(pickle_protocol, int) or not 0 <= pickle_protocol <= 5:
        raise ValueError(f"pickle_protocol must be an int in 0..5, got {pickle_protocol!r}")
    return int(pickle_protocol)


# ----------------------------------------------------------------------------- writing

def serialize_program(ep: Any, opset_version: Any = None, pickle_protocol: int = 4) -> SerializedArtifact:
    """Serialize an ExportedProgram to JSON bytes and arrays (no pickle anywhere).

    Args:
        ep: the program.
        opset_version: ``{name: int}`` recorded in the document (this package's
            opset is always included).
        pickle_protocol: validated (int in 0..5) and recorded only.
    Returns:
        a :class:`SerializedArtifact`; same program -> same bytes.
    Raises:
        ArchiveError: a value the format cannot store (custom objects, object
            arrays, unsupported sympy functions), naming the node or input; or a
            draft program that calls opaque ops (they exist only in the process
            that captured them, so the archive could never be loaded).
        ValueError/TypeError: bad ``opset_version`` / ``pickle_protocol``.
    """
    opaque = tuple(getattr(ep, "opaque_ops", ()) or ())
    if opaque:
        raise ArchiveError(
            f"cannot serialize a draft program that calls opaque ops {', '.join(opaque)}: they ran numpy "
            f"without a shape rule and are not in the op registry, so no process could load them. "
            f"Fix the failures draft_export reported, then export() and save that program.")
    opset = normalize_opset(opset_version)
    protocol = check_pickle_protocol(pickle_protocol)
    ep.graph.lint()
    try:  # loading generates and compiles the source: never write a program that step refuses
        ep.graph_module.compile()
    except (RuntimeError, SyntaxError, NotImplementedError, KeyError, TypeError, MemoryError) as err:
        raise ArchiveError(f"cannot serialize: the program's generated source does not compile "
                           f"({type(err).__name__}: {str(err)[:300]})") from None
    art = SerializedArtifact(b"")
    graph_arrays: list[np.ndarray] = []

    def store(array: np.ndarray) -> str:
        key = f"graph:{len(graph_arrays)}"
        graph_arrays.append(array)
        art.constants[key] = array
        return key

    names = {id(n): n.name for n in ep.graph.nodes}
    enc = Encoder(lambda v: names.get(id(v)) if isinstance(v, Node) else None, store)
    doc: dict[str, Any] = {
        "format": FORMAT, "schema_version": SCHEMA_VERSION, "opset_version": opset,
        "pickle_protocol": protocol,
    }
    with collecting_size_exponents() as size_exponents:  # 2**n: bounded by the ranges, as load checks
        nodes = [_encode_node(n, enc) for n in ep.graph.nodes]
        doc["graph"] = {"nodes": nodes, "meta_values": intern_meta(nodes),
                        "source_lines": source_table(enc.source_lines)}
        doc["signature"] = _guard("signature", lambda: _encode_signature(ep.graph_signature, enc))
        doc["range_constraints"] = _guard("range_constraints", lambda: _encode_ranges(ep.range_constraints))
        doc["equality_constraints"] = _guard("equality_constraints",
                                             lambda: [_encode_equality(c) for c in ep.equality_constraints])
        doc["module_call_graph"] = _guard("module_call_graph",
                                          lambda: [_encode_call_entry(e, enc) for e in ep.module_call_graph])
        doc["dynamic_shapes"] = _encode_dynamic_shapes(ep.dynamic_shapes, enc)
        doc["example_inputs"] = _guard("example_inputs", lambda: _encode_examples(ep.example_inputs, enc, art))
    if size_exponents:  # bounded by the inputs' sizes alone, as the loader bounds them
        from .program_load import input_symbol_names

        inputs = input_symbol_names(ep.graph)
        bounds = {entry[0][1]: (entry[1], entry[2]) for entry in doc["range_constraints"] if entry[0][1] in inputs}
        for exp in size_exponents:
            problem = size_exponent_problem(exp, bounds)
            if problem is not None:
                raise ArchiveError(f"cannot serialize: {problem}")
    doc["weights"], doc["constants"] = _guard("state", lambda: _encode_state(ep, art, len(graph_arrays)))
    art.exported_program = dumps(doc)
    art._doc = doc  # what the bytes hold, so saving need not parse them again (not a field)
    return art


def _guard(what: str, fn: Any) -> Any:
    try:
        return fn()
    except ArchiveError:
        raise
    except (ValueError, TypeError) as err:
        raise ArchiveError(f"cannot serialize {what}: {err}") from None


def intern_meta(nodes: list) -> list:
    """Move each node's encoded meta values into one table, each distinct value once.

    Args:
        nodes: encoded nodes (``{op, name, target, args, kwargs, meta}``), changed in place:
            every meta value that is not a string or null becomes the index of its entry.
    Returns:
        ``graph.meta_values``: the distinct values in order of first use, node by node and key by
        key in sorted order (deterministic).

    Why: a model's nodes share a few shapes, dtypes, source records and module stacks, and
    spelling each out per node made the JSON most of a document (GPT-24: 387 -> 259 KB), its
    parse most of a load, and made the loader decode each value once per node.
    """
    table: list = []
    index: dict[bytes, int] = {}
    for node in nodes:
        meta = node["meta"]
        for key in sorted(meta):  # the order the document lists them: a loaded program saves alike
            value = meta[key]
            if value is None or type(value) is str:
                continue
            text = canonical(value)  # equal JSON, equal bytes
            at = index.get(text)
            if at is None:
                at = index[text] = len(table)
                table.append(value)
            meta[key] = at
    return table


def _encode_node(node: Any, enc: Encoder) -> dict:
    try:
        meta: dict[str, Any] = {}
        for key, value in node.meta.items():
            if not isinstance(key, str):
                continue
            try:
                meta[key] = enc.value(value)
            except (ValueError, TypeError):
                if key in ("shape", "dtype", "bind"):  # the contract needs these: never drop them
                    raise
                # other meta (example values, caches) is optional and may not be storable
        return {"op": node.op, "name": node.name, "target": node.target,
                "args": [enc.value(a) for a in node.args],
                "kwargs": [[k, enc.value(v)] for k, v in node.kwargs.items()], "meta": meta}
    except (ValueError, TypeError) as err:
        raise ArchiveError(f"cannot serialize node {node.name!r} ({node.target}): {err}") from None


def _encode_argument(arg: Any, enc: Encoder) -> dict:
    kind = type(arg).__name__
    if kind == "ConstantArgument":
        return {"k": kind, "name": arg.name, "value": enc.value(arg.value)}
    if kind == "CustomObjArgument":
        return {"k": kind, "name": arg.name, "class_fqn": arg.class_fqn}
    if kind in _ARG_KINDS:
        return {"k": kind, "name": arg.name}
    raise ValueError(f"unknown argument record {arg!r}")


def _encode_signature(sig: Any, enc: Encoder) -> dict:
    return {
        "inputs": [{"kind": s.kind.name, "arg": _encode_argument(s.arg, enc), "target": s.target,
                    "persistent": s.persistent} for s in sig.input_specs],
        "outputs": [{"kind": s.kind.name, "arg": _encode_argument(s.arg, enc), "target": s.target}
                    for s in sig.output_specs],
    }


def _encode_ranges(ranges: dict) -> list:
    items = []
    for sym, vr in ranges.items():
        lo, hi = encode_range(vr if isinstance(vr, ValueRange) else (vr.lower, vr.upper))
        items.append((sym.name, sympy.srepr(sym), [encode_expr(sym), lo, hi]))
    return [entry for _, _, entry in sorted(items, key=lambda t: (t[0], t[1]))]


def _encode_equality(c: Any) -> dict:
    sites = [[str(path), int(axis)] for path, axis in c.sites]
    return {"sites": sites, "name": c.name}


def _encode_call_entry(entry: Any, enc: Encoder) -> dict:
    from ..pytree import treespec_to_json

    sig = entry.signature
    if sig is None:
        return {"fqn": entry.fqn, "signature": None}
    return {"fqn": entry.fqn, "signature": {
        "inputs": [_encode_argument(a, enc) for a in sig.inputs],
        "outputs": [_encode_argument(a, enc) for a in sig.outputs],
        "in_spec": None if sig.in_spec is None else treespec_to_json(sig.in_spec),
        "out_spec": None if sig.out_spec is None else treespec_to_json(sig.out_spec),
        "forward_arg_names": None if sig.forward_arg_names is None else list(sig.forward_arg_names),
        **_encode_call_parameters(sig),
    }}


def _encode_call_parameters(sig: Any) -> dict:
    """The callable's parameters (root entry), so a loaded ``module()`` binds calls as eager does.

    A default the archive cannot write as plain data is recorded without its value
    (``default_stored`` false): a loaded program then accepts the argument omitted only.
    """
    params = getattr(sig, "parameters", None)
    if params is None:
        return {}
    enc = Encoder(store_array=None)
    return {"parameters": [{"name": p.name, "kind": p.kind, "has_default": p.has_default,
                            "default_stored": p.default_stored,
                            "default": enc.value(p.default) if p.has_default and p.default_stored else None}
                           for p in params],
            "forward_name": getattr(sig, "forward_name", None)}


def _encode_dynamic_shapes(spec: Any, enc: Encoder) -> Any:
    """The user's spec structurally; a spec keyed by array identity (ShapesCollection,
    AdditionalInputs) cannot be stored and is recorded as ``{"unstored": type name}``."""
    try:
        return {"v": Encoder(store_array=None).value(spec)}
    except (ValueError, TypeError):
        return {"unstored": type(spec).__name__}


def _encode_examples(examples: Any, enc: Encoder, art: SerializedArtifact) -> Any:
    from ..pytree import tree_flatten, treespec_to_json

    if not examples:
        return None
    args, kwargs = examples.get("args", ()), examples.get("kwargs", {})
    leaves, spec = tree_flatten((tuple(args), dict(kwargs)))
    out = []
    for leaf in leaves:
        if isinstance(leaf, np.ndarray):
            key = str(len(art.example_inputs))
            encode_dtype(leaf.dtype)
            art.example_inputs[key] = np.asarray(leaf)
            out.append({"k": "sample", "v": key})
        else:
            out.append(Encoder().value(leaf))
    return {"spec": treespec_to_json(spec), "leaves": out}


def _encode_state(ep: Any, art: SerializedArtifact, n_graph_arrays: int) -> tuple[list, list]:
    sig = ep.graph_signature
    state, consts = ep.state_dict, ep.constants
    weights, constants = [], []
    for spec in sig.input_specs:
        kind = spec.kind.name
        if kind == "CUSTOM_OBJ":
            raise ArchiveError(f"cannot serialize custom object {spec.target!r}: archives store arrays only")
        if kind not in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            continue
        value = state[spec.target] if spec.target in state else consts.get(spec.target)
        if value is None:
            raise ArchiveError(f"no value for lifted {kind.lower()} {spec.target!r}")
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise ArchiveError(f"cannot serialize {spec.target!r}: object arrays would need pickle")
        if kind == "CONSTANT_TENSOR":
            role = WeightType.CONSTANT
        elif kind == "PARAMETER":
            role = WeightType.PARAMETER
        else:
            role = WeightType.BUFFER if spec.persistent else WeightType.NON_PERSISTENT_BUFFER
        entry = {"fqn": spec.target, "role": role.name.lower(), "dtype": encode_dtype(array.dtype),
                 "shape": list(array.shape)}
        if role == WeightType.CONSTANT:
            if str(spec.target).startswith("graph:"):
                raise ArchiveError(f"lifted constant name {spec.target!r} clashes with the 'graph:<i>' names")
            constants.append(entry)
            art.constants[spec.target] = array
        else:
            weights.append(entry)
            art.state_dict[spec.target] = array
    for i in range(n_graph_arrays):
        array = np.asarray(art.constants[f"graph:{i}"])
        constants.append({"fqn": f"graph:{i}", "role": "graph_constant", "dtype": encode_dtype(array.dtype),
                          "shape": list(array.shape)})
    return weights, constants


_ARG_KINDS = ("TensorArgument", "SymIntArgument", "SymFloatArgument", "SymBoolArgument",
              "ConstantArgument", "CustomObjArgument", "TokenArgument")
