"""The structure of a JSON contract (``tensorplay-export contract --json``), checked before it is read.

A contract file comes from anywhere (a CI artifact, a hand edit), so
:func:`read_contract_document` checks the text and the document up front and
every fault gives one :class:`ContractDocumentError` (a ``ValueError``) that
names the file, the field (``outputs[1].shape_tree[0]``) and what was expected:

- the nesting of arrays and objects is at most :data:`MAX_CONTRACT_DEPTH`, measured
  on the text before it is parsed (``json`` recurses once per level, so a file of
  100 000 ``[`` would otherwise end in a ``RecursionError``);
- each field has the JSON type :meth:`Contract.to_json` writes (the table
  :data:`_CONTRACT`), required fields are present, fields a newer or older writer
  may leave out are optional, unknown fields are ignored;
- ``output_structure`` is a treespec in :func:`tensorplay_export.pytree.treespec_to_json`'s
  form (each container's children, keys and fields consistent).

Expression trees (``shape_tree``, ``symbol``, ``tree``...) are checked here only as
JSON; their operators, symbols and sizes are checked when they are decoded
(:func:`tensorplay_export.serde.exprs.decode_expr`, one node budget per document).
"""
from __future__ import annotations

import itertools
import json
from typing import Any, Callable, Optional

from ..serde.jsonio import MAX_JSON_BYTES, MAX_JSON_DEPTH, outside_strings

__all__ = ["ContractDocumentError", "read_contract_document", "check_contract_document", "MAX_CONTRACT_DEPTH"]

MAX_CONTRACT_DEPTH = MAX_JSON_DEPTH  # as an archive's documents: contract trees nest a few levels per size


class ContractDocumentError(ValueError):
    """A JSON contract that is not one: ``<file>: malformed contract: <field> must be ..., got ...``."""


# -- the text ---------------------------------------------------------------------------------------
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(source: str) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``source``, brackets inside
    strings not counted, found without parsing (no recursion, whatever the depth).

    Strings are cut out as :func:`tensorplay_export.serde.jsonio.loads` counts colons outside
    them (:func:`~tensorplay_export.serde.jsonio.outside_strings`).  On text that is no JSON the
    count may be off; ``json`` then refuses the text where the two readings part, before it has
    nested any deeper than counted.
    """
    outside = outside_strings(source.encode("utf-8")).decode("utf-8")
    return max(itertools.accumulate(map(_STEP.__getitem__, filter(_STEP.__contains__, outside)), initial=0))


def read_contract_document(raw: bytes, where: str, path: Optional[str] = None) -> Any:
    """Parse the bytes of a JSON contract file, bounded in size and nesting.

    ``where`` names the file in messages about its content; ``path`` (default ``where``)
    in the message for a file that is no JSON at all (it may be a broken archive).

    Raises:
        ContractDocumentError: too large, not UTF-8 JSON, or nested deeper than
            :data:`MAX_CONTRACT_DEPTH`.
    """
    path = where if path is None else path
    if len(raw) > MAX_JSON_BYTES:
        raise ContractDocumentError(f"{where}: a JSON contract of {len(raw)} bytes exceeds the limit of "
                                    f"{MAX_JSON_BYTES} bytes")
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ContractDocumentError(f"{path} is neither a program archive nor a JSON contract (not UTF-8 text: "
                                    f"{err.reason} at byte {err.start})") from None
    depth = nesting_depth(source)
    if depth > MAX_CONTRACT_DEPTH:
        raise ContractDocumentError(f"{where}: malformed contract: arrays and objects nested {depth} levels deep, "
                                    f"at most {MAX_CONTRACT_DEPTH} expected")
    try:
        return json.loads(source)
    except json.JSONDecodeError as err:
        raise ContractDocumentError(f"{path} is neither a program archive nor a JSON contract ({err})") from None


# -- the document -----------------------------------------------------------------------------------
# A field's kind is a predicate on its JSON value and the words that say what it must be;
# lists and objects are checked item by item, so the error names the innermost wrong field.
Check = Callable[[Any, str, str], None]


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, (list, dict)) else _type_name(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(where: str, field: str, expected: str, value: Any) -> None:
    raise ContractDocumentError(f"{where}: malformed contract: {field} must be {expected}, got {_shown(value)}")


def _scalar(test: Callable[[Any], bool], expected: str) -> Check:
    def check(value: Any, field: str, where: str) -> None:
        if not test(value):
            _fail(where, field, expected, value)
    return check


STRING = _scalar(lambda v: isinstance(v, str), "a string")
STRING_OR_NULL = _scalar(lambda v: v is None or isinstance(v, str), "a string or null")
BOOL = _scalar(lambda v: isinstance(v, bool), "true or false")
SIZE_BOUND = _scalar(lambda v: type(v) is int and v >= 0, "an integer >= 0")
SIZE_BOUND_OR_NULL = _scalar(lambda v: v is None or (type(v) is int and v >= 0), "an integer >= 0 or null (unbounded)")
# an operator tree ([head, args...]) or a plain integer; the decoder checks the operators
TREE = _scalar(lambda v: isinstance(v, list) and bool(v) and isinstance(v[0], str),
               "an expression tree ([operator, arguments...])")
SIZE_TREE = _scalar(lambda v: (type(v) is int and v >= 0) or (isinstance(v, list) and bool(v) and isinstance(v[0], str)),
                    "a size: an integer >= 0 or an expression tree ([operator, arguments...])")

VALUE_TREE = _scalar(lambda v: type(v) is int or (isinstance(v, list) and bool(v) and isinstance(v[0], str)),
                     "a returned value: an integer or an expression tree ([operator, arguments...])")


def one_of(*choices: str) -> Check:
    return _scalar(lambda v: v in choices, " or ".join(json.dumps(c) for c in choices))


def array_of(item: Check, what: str) -> Check:
    def check(value: Any, field: str, where: str) -> None:
        if not isinstance(value, list):
            _fail(where, field, f"an array of {what}", value)
        for i, v in enumerate(value):
            item(v, f"{field}[{i}]", where)
    return check


def or_null(inner: Check, what: str) -> Check:
    def check(value: Any, field: str, where: str) -> None:
        if value is not None:
            inner(value, field, where)
    return check


def record(fields: dict, what: str, rule: Optional[Callable[[dict, str, str], None]] = None) -> Check:
    """An object with ``fields``: name -> (required, check); unknown names are ignored."""
    def check(value: Any, field: str, where: str) -> None:
        if not isinstance(value, dict):
            _fail(where, field, what, value)
        for name, (required, inner) in fields.items():
            if name in value:
                inner(value[name], f"{field}.{name}" if field else name, where)
            elif required:
                raise ContractDocumentError(f"{where}: malformed contract: {field or 'the document'} has no "
                                            f"{name!r} field ({what} has one)")
        if rule is not None:
            rule(value, field, where)
    return check


def _same_rank(item: dict, field: str, where: str) -> None:
    shape, trees = item.get("shape"), item.get("shape_tree")
    if isinstance(shape, list) and isinstance(trees, list) and len(shape) != len(trees):
        raise ContractDocumentError(f"{where}: malformed contract: {field}.shape has {len(shape)} sizes and "
                                    f"{field}.shape_tree {len(trees)}: one tree per size expected")
    if shape is None and trees is not None:
        _fail(where, f"{field}.shape_tree", "null when shape is null (an output that is not an array)", trees)


INPUT = record({"path": (True, STRING), "dtype": (True, STRING), "shape": (False, array_of(STRING, "strings")),
                "shape_tree": (True, array_of(SIZE_TREE, "sizes"))}, "an input object", _same_rank)
DIM = record({"name": (True, STRING), "symbol": (True, TREE), "min": (True, SIZE_BOUND),
              "max": (True, SIZE_BOUND_OR_NULL), "axis": (False, STRING_OR_NULL), "auto": (False, BOOL),
              "hint": (False, one_of("AUTO", "DYNAMIC"))}, "a dim object",
             lambda d, f, w: None if d["max"] is None or d["max"] >= d["min"] else _fail(
                 w, f"{f}.max", f"null or at least min ({d['min']})", d["max"]))
GUARD = record({"text": (False, STRING), "tree": (True, TREE)}, "a guard object")
OUTPUT = record({"shape": (True, or_null(array_of(_scalar(lambda v: isinstance(v, str) or (type(v) is int and v >= 0),
                                                           "a size (text or an integer >= 0)"), "sizes"), "")),
                 "shape_tree": (False, or_null(array_of(SIZE_TREE, "sizes"), "")), "dtype": (False, STRING_OR_NULL),
                 "value": (False, STRING), "value_tree": (False, VALUE_TREE), "path": (False, STRING)},
                "an output object", _same_rank)
INT_INPUT = record({"path": (True, STRING), "size": (False, STRING), "size_tree": (True, SIZE_TREE)},
                   "an int input object")

_KEY_TYPES = {"str": str, "int": int, "float": (int, float), "bool": bool, "NoneType": type(None)}


def _treespec(node: Any, field: str, where: str) -> None:
    """A treespec node (:func:`tensorplay_export.pytree.treespec_to_json`); depth is already bounded."""
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        _fail(where, field, "a treespec node (an object with a string 'type')", node)
    kind = node["type"]
    if kind in ("leaf", "None"):
        return
    children = node.get("children")
    if not isinstance(children, list):
        _fail(where, f"{field}.children", "an array of treespec nodes", children)
    n = len(children)
    if kind == "dict":
        keys = node.get("keys")
        if not isinstance(keys, list) or len(keys) != n:
            _fail(where, f"{field}.keys", f"an array of {n} keys (one per child)", keys)
        for i, k in enumerate(keys):
            ok = isinstance(k, dict) and isinstance(k.get("t"), str) and k["t"] in _KEY_TYPES and "v" in k and \
                isinstance(k["v"], _KEY_TYPES[k["t"]]) and not (k["t"] in ("int", "float") and isinstance(k["v"], bool))
            if not ok:
                _fail(where, f"{field}.keys[{i}]", 'a key {"t": "str"|"int"|"float"|"bool"|"NoneType", "v": '
                      "a value of that type}", k)
    elif kind not in ("tuple", "list"):  # a namedtuple or a dataclass: named fields
        if kind == "namedtuple":
            STRING(node.get("name"), f"{field}.name", where)
        names = node.get("fields")
        if not isinstance(names, list) or len(names) != n or not all(isinstance(x, str) for x in names):
            _fail(where, f"{field}.fields", f"an array of {n} field names (one per child)", names)
        array_of(STRING, "field names")(node.get("none_fields", []), f"{field}.none_fields", where)
    for i, child in enumerate(children):
        _treespec(child, f"{field}.children[{i}]", where)


_STRINGS = array_of(STRING, "strings")
_CONTRACT = record({
    "format": (True, STRING), "version": (True, _scalar(lambda v: type(v) is int, "an integer")),
    "inputs": (True, array_of(INPUT, "input objects")), "dims": (True, array_of(DIM, "dim objects")),
    "equalities": (False, _STRINGS), "relations": (False, _STRINGS), "divisibility": (False, _STRINGS),
    "guards": (False, array_of(GUARD, "guard objects")), "outputs": (True, array_of(OUTPUT, "output objects")),
    "runtime_checks": (False, _STRINGS), "output_structure": (False, or_null(_treespec, "")),
    "int_inputs": (False, array_of(INT_INPUT, "int input objects")),
}, "a contract object")


def check_contract_document(data: Any, where: str) -> None:
    """Check every field of a parsed contract document (``format`` and ``version`` already checked).

    Raises:
        ContractDocumentError: the first field that is wrong, named with what it must be.
    """
    _CONTRACT(data, "", where)
