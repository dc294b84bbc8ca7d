"""Graph argument values <-> tagged JSON, keeping exact Python/numpy types.

Node args, kwargs and meta hold Node references, Python and numpy scalars,
dtypes, slices, Ellipsis, containers and sympy expressions.  Each kind has one
JSON form; compound kinds are objects tagged by ``"k"``:

==================  ==============================================================
value               JSON
==================  ==============================================================
None, bool, int     ``null``, ``true``/``false``, integer (``|n| < 2**MAX_INT_BITS``)
str                 string
list                array of values
float               ``{"k": "float", "v": float.hex(x)}`` (exact; ``inf``, ``-inf``, ``nan``)
complex             ``{"k": "complex", "re": hex, "im": hex}``
tuple               ``{"k": "tuple", "v": [values]}``
dict                ``{"k": "dict", "v": [[key, value], ...]}`` (insertion order)
Node                ``{"k": "node", "v": name}``
numpy scalar        ``{"k": "np", "dtype": dtype, "v": hex of the item's bytes}`` (exact type)
np.dtype            ``{"k": "dtype", "v": dtype}``
numpy scalar type   ``{"k": "nptype", "v": dtype}`` (``np.float32`` the class)
int/float/...       ``{"k": "pytype", "v": "float"}`` (the builtin class as a dtype argument)
slice               ``{"k": "slice", "v": [start, stop, step]}``
Ellipsis            ``{"k": "ellipsis"}``
sympy expression    ``{"k": "sym", "v": operator tree}`` (see :mod:`.exprs`; a stored
                    :class:`~tensorplay_export.graph.stored.SizeExpr` writes its own tree)
small ndarray       ``{"k": "ndarray", "dtype": dtype, "shape": [...], "v": hex}`` (<= MAX_INLINE_BYTES)
larger ndarray      ``{"k": "array", "v": key}``: stored beside the JSON (``.npy``) under ``key``
Dim                 ``{"k": "Dim", "name": str, "min": int, "max": int | null}``
DerivedDim          ``{"k": "DerivedDim", "root": Dim, "scale": int, "offset": int}`` (``k*dx + c``, k >= 1)
                    or (format version 2) ``{"k": "DerivedDim", "terms": [[Dim, int], ...],
                    "offset": int}`` for the other linear forms (``32 - dx``, ``dx + dy``)
Dim.AUTO/...        ``{"k": "DimHint", "v": "AUTO" | "DYNAMIC" | "STATIC"}``, a ranged hint with ``"min"``, ``"max"``
dataclass           ``{"k": "dataclass", "type": serialized name, "v": [[field, value], ...]}``
                    (only classes registered with ``register_dataclass``, resolved by that name)
SourceLoc           ``{"k": "source", "file": str, "line": int}`` (its text: the graph's ``source_lines``)
ValueRange          ``{"k": "range", "lo": int, "hi": int | null}`` (null = unbounded)
==================  ==============================================================

``dtype`` is ``np.dtype.str`` of a non-structured, non-object dtype, e.g.
``"<f8"``, ``"|b1"``, ``"<U5"``, ``"<M8[s]"``; the reader accepts only strings of
that shape, so no object dtype can come back.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import numpy as np

from ..graph.stored import SizeExpr
from ..records import SourceLoc, ValueRange, is_sympy
from .exprs import MAX_INT_BITS, ExprBudget, decode_expr, decode_stored, encode_tree
from ..errors import ArchiveError
from .jsonio import MAX_JSON_DEPTH, control_in_text, fail, short_repr as _short

MAX_INLINE_BYTES = 1 << 16  # inline ndarray constants in node args
# items of the lists and tuples of one document: generated code writes them out as literals,
# and compiling a million-item literal takes tens of seconds and gigabytes (arrays are .npy members)
MAX_LITERAL_ITEMS = 200_000
# characters of the strings of one document: generated code writes string arguments out as
# literals too (capture's are labels and subscripts of a few dozen characters; GPT-24's
# document holds about 30,000 in all), so 250 strings of 1 MB in a deflated 10 MB archive
# grew a load by more than a gigabyte of source and compiler state
MAX_LITERAL_CHARS = 4 << 20
MAX_NDIM = 64
MAX_DIM_TERMS = 64  # roots in one DerivedDim over several roots
_DTYPE_RE = re.compile(r"^[<>|][biufcmMUSV][0-9]{1,6}(\[[0-9]*[a-zA-Z]{1,3}\])?$")
_PYTYPES = {"int": int, "float": float, "bool": bool, "complex": complex, "str": str}


def encode_dtype(dtype: np.dtype) -> str:
    """``dtype.str`` for a plain dtype; ValueError for object/structured dtypes."""
    dtype = np.dtype(dtype)
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"cannot store dtype {dtype}: object and structured dtypes are not supported")
    text = dtype.str
    if not _DTYPE_RE.match(text):
        raise ValueError(f"cannot store dtype {dtype} ({text!r})")
    return text


def decode_dtype(text: Any, member: str) -> np.dtype:
    """Parse a stored dtype string; only the plain forms :func:`encode_dtype` writes."""
    if type(text) is str:  # every node's meta names one of a few dtypes: each parsed once
        known = _DTYPES.get(text)
        if known is not None:
            return known
    dtype = _parse_dtype(text, member)
    if type(text) is str and len(_DTYPES) < 1024:
        _DTYPES[text] = dtype  # dtypes are immutable values: one instance serves every node
    return dtype


_DTYPES: dict[str, np.dtype] = {}


def _parse_dtype(text: Any, member: str) -> np.dtype:
    if not isinstance(text, str) or not _DTYPE_RE.match(text):
        fail(member, f"invalid dtype {text!r:.60} (expected a plain dtype string like '<f8')")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError) as err:
        fail(member, f"invalid dtype {text!r}: {err}")
    if dtype.hasobject or dtype.fields is not None:
        fail(member, f"dtype {text!r} is not allowed")
    return dtype


class Encoder:
    """Encodes values; ``node_name(v)`` names graph Nodes, ``store_array(a)`` lifts big arrays.

    Args:
        node_name: returns the node name when ``v`` is a graph Node, else None.
        store_array: takes an ndarray larger than ``MAX_INLINE_BYTES`` and returns
            the key under which the caller stores it (``{"k": "array", "v": key}``);
            None refuses such arrays.
    """

    def __init__(self, node_name: Callable[[Any], str | None] = lambda v: None,
                 store_array: Callable[[np.ndarray], str] | None = None) -> None:
        self.node_name = node_name
        self.store_array = store_array
        # (file, line) -> the line's text, for the graph's source table (:func:`source_table`)
        self.source_lines: dict[tuple, str] = {}
        self.items_left = MAX_LITERAL_ITEMS  # what a loader accepts (Decoder.take_items): saved alike
        self.chars_left = MAX_LITERAL_CHARS

    def _take_items(self, n: int) -> None:
        self.items_left -= n
        if self.items_left < 0:
            raise ArchiveError(
                f"cannot serialize: the program's lists, tuples and dicts hold more than {MAX_LITERAL_ITEMS} items (a "
                "long Python list in the model, such as an index list): no loader accepts that; pass it as an "
                "array instead (np.asarray(IDX)), which the archive stores as an .npy member")

    def value(self, value: Any, _depth: int = 0) -> Any:
        """Encode one value (see the module table); ValueError names an unsupported type."""
        if _depth > MAX_JSON_DEPTH - 30:
            raise ValueError(f"value nested deeper than {MAX_JSON_DEPTH - 30} levels")
        d = _depth + 1
        name = self.node_name(value)
        if name is not None:
            return {"k": "node", "v": name}
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, np.generic):  # before float/str: np.float64 and np.str_ subclass them
            if value.dtype.kind in "US":
                text = str(value) if value.dtype.kind == "U" else bytes(value).decode("latin-1")
                code = control_in_text(text)
                if code is not None:
                    raise ArchiveError(f"cannot serialize: a numpy string scalar holds the control character "
                                       f"U+{code:04X} ({text[:40]!r}); archive text is printed to terminals: remove it")
            return {"k": "np", "dtype": encode_dtype(value.dtype), "v": value.tobytes().hex()}
        if isinstance(value, int):
            if abs(value).bit_length() >= MAX_INT_BITS:
                raise ValueError(f"integer {value} has more than {MAX_INT_BITS} bits")
            return int(value)
        if isinstance(value, float):
            return {"k": "float", "v": float(value).hex()}
        if isinstance(value, complex):
            return {"k": "complex", "re": value.real.hex(), "im": value.imag.hex()}
        if isinstance(value, str):
            self.chars_left -= len(value)
            if self.chars_left < 0:
                raise ArchiveError(
                    f"cannot serialize: the program's strings hold more than {MAX_LITERAL_CHARS} characters: no "
                    "loader accepts that; pass long text as an array (np.frombuffer(text.encode(), np.uint8))")
            return str(value)
        if isinstance(value, tuple):
            self._take_items(len(value))
            return {"k": "tuple", "v": [self.value(v, d) for v in value]}
        if isinstance(value, list):
            self._take_items(len(value))
            return [self.value(v, d) for v in value]
        if isinstance(value, dict):
            self._take_items(len(value))  # a pair counts as an item, as the loader counts it
            return {"k": "dict", "v": [[self.value(k, d), self.value(v, d)] for k, v in value.items()]}
        if isinstance(value, np.dtype):
            return {"k": "dtype", "v": encode_dtype(value)}
        if isinstance(value, type) and issubclass(value, np.generic):
            return {"k": "nptype", "v": encode_dtype(np.dtype(value))}
        if isinstance(value, type) and _PYTYPES.get(value.__name__) is value:
            return {"k": "pytype", "v": value.__name__}
        if isinstance(value, slice):
            return {"k": "slice", "v": [self.value(v, d) for v in (value.start, value.stop, value.step)]}
        if value is Ellipsis:
            return {"k": "ellipsis"}
        if type(value) is SizeExpr or is_sympy(value):
            return {"k": "sym", "v": encode_tree(value)}
        if isinstance(value, np.ndarray):
            return self._array(value)
        if isinstance(value, SourceLoc):
            key = (str(value.filename), int(value.lineno))
            if key not in self.source_lines:
                self.source_lines[key] = source_text(value)
            return {"k": "source", "file": key[0], "line": key[1]}
        if isinstance(value, ValueRange):
            lo, hi = encode_range(value)
            return {"k": "range", "lo": lo, "hi": hi}
        dim = _encode_dim(value)
        if dim is not None:
            return dim
        entry = _dataclass_entry(type(value))
        if entry is not None:
            return {"k": "dataclass", "type": entry.name,
                    "v": [[f, self.value(getattr(value, f), d)] for f in entry.fields]}
        raise ValueError(f"cannot store a value of type {type(value).__qualname__}: {value!r:.80}")

    def _array(self, value: np.ndarray) -> dict:
        arr = value if value.flags.c_contiguous else value.copy(order="C")  # keeps 0-d shape
        encode_dtype(arr.dtype)  # refuses object arrays early, with the dtype named
        if arr.nbytes <= MAX_INLINE_BYTES or self.store_array is None:
            if arr.nbytes > MAX_INLINE_BYTES:
                raise ValueError(f"an inline array of {arr.nbytes} bytes is too large; lift it as a constant")
            return {"k": "ndarray", "dtype": encode_dtype(arr.dtype), "shape": list(arr.shape),
                    "v": arr.tobytes().hex()}
        return {"k": "array", "v": self.store_array(value)}


def _encode_dim(value: Any) -> dict | None:
    """Dim / DerivedDim / Dim hints as structured JSON (no import unless such a value shows up)."""
    kind = type(value).__name__
    if kind not in ("Dim", "_DerivedDim", "_DimHint"):
        return None
    from ..specs import dims as ds

    if type(value) is ds.Dim:
        return {"k": "Dim", "name": value.name, "min": value.min, "max": value.max}
    if type(value) is ds._DerivedDim:
        if value.root is not None and value.scale >= 1:  # the version-1 form, kept for these dims
            return {"k": "DerivedDim", "root": _encode_dim(value.root), "scale": value.scale, "offset": value.offset}
        return {"k": "DerivedDim", "terms": [[_encode_dim(r), k] for r, k in value.terms],
                "offset": value.offset}
    if isinstance(value, ds._DimHint):
        if value.ranged:  # Dim.AUTO(min=, max=): the range travels with the hint
            return {"k": "DimHint", "v": value.kind, "min": value.min, "max": value.max}
        return {"k": "DimHint", "v": value.kind}
    return None


def _dataclass_entry(cls: type) -> Any:
    """The pytree registration of a dataclass type registered with ``register_dataclass``, or None."""
    from .. import pytree

    return pytree._BY_CLASS.get(cls)


def encode_value(value: Any, node_name: Callable[[Any], str | None] = lambda v: None) -> Any:
    """Shorthand for ``Encoder(node_name).value(value)`` (no array lifting)."""
    return Encoder(node_name).value(value)


class Decoder:
    """Inverse of :class:`Encoder`.

    Args:
        member: archive member named in errors.
        resolve: node name -> Node (raise ArchiveError for unknown names); None refuses node refs.
        arrays: key -> ndarray for lifted arrays (``{"k": "array"}``).
        budget: the document's :class:`~.exprs.ExprBudget`, shared by every
            decoder of one document (None: a fresh one).
        stored: size expressions come back as checked
            :class:`~tensorplay_export.graph.stored.SizeExpr` values, no sympy built
            (a loaded graph's node arguments and meta); otherwise as sympy.
    Raises (from :meth:`value`):
        ArchiveError: unknown tag, malformed field, bad dtype, oversize inline array,
            unknown node or array key.
    """

    def __init__(self, member: str, resolve: Callable[[str], Any] | None = None,
                 arrays: dict[str, np.ndarray] | None = None, budget: ExprBudget | None = None,
                 stored: bool = False) -> None:
        self.member = member
        self.resolve = resolve
        self.arrays = arrays or {}
        self.budget = budget if budget is not None else ExprBudget()
        self.stored = stored
        # How many size expressions and dicts this decoder has built: a caller skips a walk
        # that looks only for those when a value added none (program_load's node checks).
        self.exprs = 0
        self.dicts = 0
        # (name, assumption items) -> the SizeExpr of a stored symbol already checked: the
        # same few symbols recur in every shape of a document
        self._symbols: dict[tuple, Any] = {}
        self._sources: dict[tuple, SourceLoc] = {}
        self.items_left = MAX_LITERAL_ITEMS
        self.chars_left = MAX_LITERAL_CHARS
        self.source_lines: dict[tuple, str] = {}  # (file, line) -> stored text (the graph's table)

    def take_items(self, n: int) -> None:
        """Count ``n`` list or tuple items against :data:`MAX_LITERAL_ITEMS` (per document)."""
        self.items_left -= n
        if self.items_left < 0:
            fail(self.member, f"the document's lists, tuples and dicts hold more than {MAX_LITERAL_ITEMS} items; large "
                              "constants belong in array members, and generated code writes these out as literals")

    def take_chars(self, n: int) -> None:
        """Count ``n`` string characters against :data:`MAX_LITERAL_CHARS` (per document)."""
        self.chars_left -= n
        if self.chars_left < 0:
            fail(self.member, f"the document's strings hold more than {MAX_LITERAL_CHARS} characters; generated "
                              "code writes them out as literals, and capture writes labels of a few dozen")

    def value(self, obj: Any, _depth: int = 0) -> Any:
        member = self.member
        if _depth > MAX_JSON_DEPTH:
            fail(member, f"value nested deeper than {MAX_JSON_DEPTH} levels")
        # exact JSON types first (json.loads yields only these): the decoder runs for every
        # argument and meta entry of every node, so the common cases cost one type test;
        # a tagged object of a one-form kind with exactly its keys goes straight to its
        # decoder (anything else reaches the checks below, which name the problem)
        t = type(obj)
        if t is dict:
            kind = obj.get("k")
            if type(kind) is str:
                one = _ONE_FORM.get(kind)
                if one is not None and obj.keys() == one[0]:
                    return one[1](self, obj, _depth + 1)
        elif t is str:
            self.take_chars(len(obj))
            return obj
        elif obj is None or t is bool:
            return obj
        elif t is int:
            if obj.bit_length() >= MAX_INT_BITS:  # bit_length ignores the sign
                fail(member, f"integer has more than {MAX_INT_BITS} bits")
            return obj
        elif t is list:
            self.take_items(len(obj))
            return [self.value(v, _depth + 1) for v in obj]
        if t is not dict or type(obj.get("k")) is not str:
            if isinstance(obj, (bool, str)):  # subclasses from a hand-built document
                return obj
            if isinstance(obj, list):
                return [self.value(v, _depth + 1) for v in obj]
            if not isinstance(obj, dict) or not isinstance(obj.get("k"), str):
                fail(member, f"malformed value {_short(obj)}")
        kind = obj["k"]
        decoder = _DECODERS.get(kind)
        if decoder is None:
            fail(member, f"unknown value kind {kind!r:.60}")
        keys, fn = decoder
        if isinstance(keys, tuple):  # several forms (DerivedDim: version 1 and version 2)
            if set(obj) not in keys:
                forms = " or ".join(str(sorted(k)) for k in keys)
                fail(member, f"value of kind {kind!r} must have keys {forms}, got {sorted(obj)}")
        elif obj.keys() != keys:
            fail(member, f"value of kind {kind!r} must have keys {sorted(keys)}, got {sorted(obj)}")
        return fn(self, obj, _depth + 1)


    def known(self, obj: Any) -> Any:
        """What :meth:`value` returns for ``obj`` when it is exactly a dtype or source record this
        decoder (or, for dtypes, the process) decoded before, else None (then ``value`` decodes it,
        with its checks: both kinds decode to values that are never None)."""
        if type(obj) is dict:
            kind = obj.get("k")
            # "k" is there and the other keys hold exactly typed values: the length says no more
            if kind == "dtype":
                text = obj.get("v")
                if type(text) is str and len(obj) == 2:
                    return _DTYPES.get(text)
            elif kind == "source":
                file, line = obj.get("file"), obj.get("line")
                if type(file) is str and type(line) is int and len(obj) == 3:
                    return self._sources.get((file, line))
        return None


def decode_value(obj: Any, member: str, resolve: Callable[[str], Any] | None = None) -> Any:
    """Shorthand for ``Decoder(member, resolve).value(obj)``."""
    return Decoder(member, resolve).value(obj)


def _hex_float(text: Any, member: str) -> float:
    if not isinstance(text, str) or len(text) > 40:
        fail(member, f"malformed float {text!r:.60}")
    try:
        return float.fromhex(text)
    except ValueError:
        fail(member, f"malformed float {text!r}")


def _hex_bytes(text: Any, member: str, limit: int) -> bytes:
    if not isinstance(text, str) or len(text) > 2 * limit:
        fail(member, f"hex payload missing or larger than {limit} bytes")
    try:
        return bytes.fromhex(text)
    except ValueError:
        fail(member, "hex payload is not valid hexadecimal")


def _dec_np(dec: Decoder, o: dict, d: int) -> Any:
    member = dec.member
    dtype = decode_dtype(o["dtype"], member)
    raw = _hex_bytes(o["v"], member, 4096)
    if len(raw) != dtype.itemsize:
        fail(member, f"numpy scalar of dtype {dtype.str} needs {dtype.itemsize} bytes, got {len(raw)}")
    if dtype.itemsize == 0:  # np.str_(''), np.bytes_(b''), np.void(b''): no bytes to read a value from
        return dtype.type("" if dtype.kind == "U" else b"")
    value = np.frombuffer(raw, dtype=dtype)[0]
    if dtype.kind in "US":  # text printed as it is (a label): held to the JSON strings' rule
        code = control_in_text(str(value) if dtype.kind == "U" else bytes(value).decode("latin-1"))
        if code is not None:
            fail(member, f"a numpy string scalar holds the control character U+{code:04X}; archive text is printed "
                         "to terminals, and no writer of this format stores one")
    return value


def _dec_ndarray(dec: Decoder, o: dict, d: int) -> np.ndarray:
    member = dec.member
    dtype = decode_dtype(o["dtype"], member)
    shape = o["shape"]
    if (not isinstance(shape, list) or len(shape) > MAX_NDIM
            or any(type(n) is not int or n < 0 or n > MAX_INLINE_BYTES for n in shape)):
        fail(member, f"inline array has an invalid shape {_short(shape)}")
    raw = _hex_bytes(o["v"], member, MAX_INLINE_BYTES)
    if math.prod(shape) * dtype.itemsize != len(raw):
        fail(member, f"inline array of shape {tuple(shape)} and dtype {dtype.str} does not match its {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _dec_dict(dec: Decoder, o: dict, d: int) -> dict:
    dec.dicts += 1
    member = dec.member
    items = o["v"]
    if not isinstance(items, list) or any(not isinstance(p, list) or len(p) != 2 for p in items):
        fail(member, "dict value must be a list of [key, value] pairs")
    dec.take_items(len(items))  # a pair counts as an item: a dict is decoded per node that names it
    out: dict = {}
    for k, v in items:
        key = dec.value(k, d)
        try:
            hash(key)
        except TypeError:
            fail(member, f"dict key {_short(k)} is not hashable")
        if key in out:
            fail(member, f"duplicate dict key {key!r:.60}")
        out[key] = dec.value(v, d)
    return out


def _dec_slice(dec: Decoder, o: dict, d: int) -> slice:
    parts = o["v"]
    if not isinstance(parts, list) or len(parts) != 3:
        fail(dec.member, "slice must be [start, stop, step]")
    return slice(*(dec.value(p, d) for p in parts))


def _dec_tuple(dec: Decoder, o: dict, d: int) -> tuple:
    items = o["v"]
    if not isinstance(items, list):
        fail(dec.member, "tuple value must hold a list")
    dec.take_items(len(items))
    out = []
    for v in items:  # shapes, indices, module stacks: the common items need no value() call
        t = type(v)
        if t is dict and d <= MAX_JSON_DEPTH:
            kind = v.get("k")
            inner = v.get("v")
            # "k" is there and "v" a list: two keys are exactly those two
            if kind == "tuple" and type(inner) is list and len(v) == 2:
                # a tuple of plain items inside a tuple (a module stack's entries): built here,
                # its items and characters charged to the document's budgets as value() would
                chars = 0
                for x in inner:
                    tx = type(x)
                    if tx is str:
                        chars += len(x)
                    elif not ((tx is int and -_INT_BOUND < x < _INT_BOUND) or x is None or tx is bool):
                        out.append(_dec_tuple(dec, v, d + 1))
                        break
                else:
                    dec.take_items(len(inner))
                    if chars:
                        dec.take_chars(chars)
                    out.append(tuple(inner))
                continue
            one = _ONE_FORM.get(kind) if type(kind) is str else None
            out.append(one[1](dec, v, d + 1) if one is not None and v.keys() == one[0] else dec.value(v, d))
        elif t is str:
            dec.take_chars(len(v))
            out.append(v)
        elif (t is int and -_INT_BOUND < v < _INT_BOUND) or v is None or t is bool:
            out.append(v)
        else:
            out.append(dec.value(v, d))
    return tuple(out)


_INT_BOUND = 1 << (MAX_INT_BITS - 1)  # |x| < this exactly when x.bit_length() < MAX_INT_BITS


def _dec_sym(dec: Decoder, o: dict, d: int) -> Any:
    dec.exprs += 1
    tree = o["v"]
    if not dec.stored:
        return decode_expr(tree, dec.member, dec.budget)
    if type(tree) is list and len(tree) == 3 and tree[0] == "Symbol" and type(tree[1]) is str \
            and type(tree[2]) is dict and all(map(_IS_BOOL, tree[2].values())):
        # exact bools in the key: 1 == True would otherwise find the entry of a checked symbol
        key = (tree[1], tuple(tree[2].items()))
        found = dec._symbols.get(key)
        if found is None:
            found = dec._symbols[key] = decode_stored(tree, dec.member, dec.budget)
        else:  # what decode_stored takes for a symbol
            budget = dec.budget
            budget.left -= 1
            if budget.left < 0:
                budget.take(0, dec.member)
        return found
    return decode_stored(tree, dec.member, dec.budget)


_IS_BOOL = bool.__instancecheck__  # bool has no subclasses: exactly True and False


def _dec_dtype(dec: Decoder, o: dict, d: int) -> np.dtype:
    known = _DTYPES.get(o["v"]) if type(o["v"]) is str else None
    return known if known is not None else decode_dtype(o["v"], dec.member)


def _dec_node(dec: Decoder, o: dict, d: int) -> Any:
    if not isinstance(o["v"], str) or dec.resolve is None:
        fail(dec.member, f"unexpected node reference {_short(o)}")
    return dec.resolve(o["v"])


def _dec_array(dec: Decoder, o: dict, d: int) -> np.ndarray:
    if not isinstance(o["v"], str) or o["v"] not in dec.arrays:
        fail(dec.member, f"reference to unknown stored array {_short(o['v'])}")
    return dec.arrays[o["v"]]


def _dec_dim(dec: Decoder, o: dict, d: int) -> Any:
    from ..specs import dims as ds

    kind = o["k"]
    try:
        if kind == "DimHint":
            if o["v"] not in ("AUTO", "DYNAMIC", "STATIC"):
                fail(dec.member, f"unknown Dim hint {o['v']!r:.40}")
            hint = getattr(ds.Dim, o["v"])
            if "min" not in o:
                return hint
            if o["v"] == "STATIC" or any(v is not None and type(v) is not int for v in (o["min"], o["max"])):
                fail(dec.member, f"malformed ranged Dim hint {_short(o)}")
            return hint(min=o["min"], max=o["max"])
        if kind == "Dim":
            if not isinstance(o["name"], str) or any(v is not None and type(v) is not int
                                                     for v in (o["min"], o["max"])):
                fail(dec.member, f"malformed Dim {_short(o)}")
            return ds.Dim(o["name"], min=o["min"], max=o["max"])
        if "terms" in o:  # format version 2: sum(k*root) + offset
            terms = o["terms"]
            if not isinstance(terms, list) or not terms or len(terms) > MAX_DIM_TERMS \
                    or type(o["offset"]) is not int:
                fail(dec.member, f"malformed DerivedDim {_short(o)}")
            pairs = []
            for t in terms:
                if not isinstance(t, list) or len(t) != 2 or type(t[1]) is not int:
                    fail(dec.member, f"malformed DerivedDim term {_short(t)}")
                root = dec.value(t[0], d)
                if type(root) is not ds.Dim:
                    fail(dec.member, f"malformed DerivedDim term {_short(t)}")
                pairs.append((root, t[1]))
            return ds._DerivedDim(terms=pairs, offset=o["offset"])
        root = dec.value(o["root"], d)
        if type(root) is not ds.Dim or type(o["scale"]) is not int or type(o["offset"]) is not int:
            fail(dec.member, f"malformed DerivedDim {_short(o)}")
        return ds._DerivedDim(root, o["scale"], o["offset"])
    except (TypeError, ValueError, NotImplementedError) as err:
        if isinstance(err, ArchiveError):
            raise
        fail(dec.member, f"invalid {kind}: {err}")


def _dec_dataclass(dec: Decoder, o: dict, d: int) -> Any:
    from .. import pytree

    entry = pytree._BY_NAME.get(o["type"]) if isinstance(o["type"], str) else None
    if entry is None and isinstance(o["type"], str) and pytree.keeping_names():
        items = o["v"]
        if not isinstance(items, list) or any(not isinstance(p, list) or len(p) != 2 or not isinstance(p[0], str)
                                              for p in items):
            fail(dec.member, f"dataclass {o['type']!r:.80} must list [field, value] pairs")
        return pytree.UnresolvedDataclass(o["type"], tuple((f, dec.value(v, d)) for f, v in items))
    if entry is None:
        fail(dec.member, f"unknown dataclass type {o['type']!r:.80}: register it with "
                         f"register_dataclass(cls, serialized_type_name=...) before loading")
    items = o["v"]
    if (not isinstance(items, list) or any(not isinstance(p, list) or len(p) != 2 for p in items)
            or [p[0] for p in items] != list(entry.fields)):
        fail(dec.member, f"dataclass {entry.name!r} must list exactly the fields {list(entry.fields)}")
    if dec.stored:  # a dataclass's fields are the user's values: sympy, as captured
        dec = Decoder(dec.member, dec.resolve, dec.arrays, dec.budget)
    try:
        return entry.cls(**{f: dec.value(v, d) for f, v in items})
    except (TypeError, ValueError) as err:
        if isinstance(err, ArchiveError):
            raise
        fail(dec.member, f"cannot build dataclass {entry.name!r}: {err}")


def _dec_pytype(dec: Decoder, o: dict, d: int) -> type:
    if not isinstance(o["v"], str) or o["v"] not in _PYTYPES:
        fail(dec.member, f"unknown builtin type {o['v']!r:.40} (allowed: {sorted(_PYTYPES)})")
    return _PYTYPES[o["v"]]


MAX_SOURCE_TEXT = 400  # characters of a stored source line


def source_text(loc: SourceLoc) -> str:
    """The text an archive stores for ``loc``: its line, one line of printable characters,
    at most :data:`MAX_SOURCE_TEXT` long."""
    text = "".join(c if c.isprintable() else " " for c in loc.text)
    return text if len(text) <= MAX_SOURCE_TEXT else text[:MAX_SOURCE_TEXT - 3] + "..."


# A stored text's ``:`` is written as U+001F (which json writes ``\u001f``): the loader proves a
# document free of duplicate keys by counting its ``:`` bytes against the keys it parsed, which
# colons inside strings would send to the exact (slow) count.  Stored texts are printable, so
# U+001F never stands for itself.
_COLON, _COLON_STAND_IN = ":", "\x1f"


def source_table(lines: dict) -> list:
    """The graph's ``source_lines`` member: ``[[file, line, text], ...]`` sorted, one per source
    line the document's records name (the text is stored once, not in every node's record;
    ``:`` written as U+001F)."""
    return [[f, n, t.replace(_COLON, _COLON_STAND_IN)] for (f, n), t in sorted(lines.items())]


def decode_source_table(data: Any, member: str) -> dict:
    """``(file, line) -> text`` of a stored ``source_lines`` table (checked: one printable line of
    at most :data:`MAX_SOURCE_TEXT` characters each)."""
    if not isinstance(data, list):
        fail(member, "graph.source_lines must be a list of [file, line, text] entries")
    out = {}
    for entry in data:
        if not (type(entry) is list and len(entry) == 3 and type(entry[0]) is str and type(entry[1]) is int
                and type(entry[2]) is str):
            fail(member, f"graph.source_lines entries must be [file, line, text], got {entry!r:.80}")
        text = entry[2].replace(_COLON_STAND_IN, _COLON)
        if len(text) > MAX_SOURCE_TEXT or not text.isprintable():
            fail(member, f"source text must be one printable line of at most {MAX_SOURCE_TEXT} characters")
        if not entry[0].isprintable():
            fail(member, f"the file name {entry[0]!r:.80} of a source line is not printable text")
        out[(entry[0], entry[1])] = text
    return out


def _dec_source(dec: Decoder, o: dict, d: int) -> SourceLoc:
    if not isinstance(o["file"], str) or type(o["line"]) is not int:
        fail(dec.member, "source location needs a file name and an integer line")
    key = (o["file"], o["line"])
    found = dec._sources.get(key)  # frozen records: one per source line of a document
    if found is None:
        # the text the document stored for it ("" when none: schema 1); never the named file's
        found = dec._sources[key] = SourceLoc(o["file"], o["line"], dec.source_lines.get(key, ""))
    return found


def _dec_range(dec: Decoder, o: dict, d: int) -> ValueRange:
    return decode_range(o["lo"], o["hi"], dec.member)


def decode_range(lo: Any, hi: Any, member: str) -> ValueRange:
    """``ValueRange(lo, hi or inf)`` from stored integers; refuses NaN, floats, lo > hi."""
    if type(lo) is not int or (hi is not None and type(hi) is not int):
        fail(member, f"range bounds must be integers (upper may be null), got [{lo!r:.30}, {hi!r:.30}]")
    if hi is not None and lo > hi:
        fail(member, f"empty range [{lo}, {hi}]")
    if max(abs(lo), abs(hi or 0)).bit_length() >= MAX_INT_BITS:
        fail(member, f"range bound has more than {MAX_INT_BITS} bits")
    return ValueRange(lo, math.inf if hi is None else hi)


def encode_range(vr: Any) -> list:
    """``[lower, upper | null]`` for a ValueRange (or a ``(lo, hi)`` pair)."""
    lo, hi = (vr.lower, vr.upper) if isinstance(vr, ValueRange) else vr
    if isinstance(lo, float) and math.isnan(lo) or isinstance(hi, float) and math.isnan(hi):
        raise ValueError(f"range {vr} has a NaN bound")
    if hi is None or hi == math.inf or (is_sympy(hi) and hi.is_infinite and hi > 0):
        return [int(lo), None]
    return [int(lo), int(hi)]


_DECODERS: dict[str, tuple[Any, Callable[..., Any]]] = {  # keys: a set, or a tuple of sets (forms)
    "float": ({"k", "v"}, lambda dec, o, d: _hex_float(o["v"], dec.member)),
    "complex": ({"k", "re", "im"},
                lambda dec, o, d: complex(_hex_float(o["re"], dec.member), _hex_float(o["im"], dec.member))),
    "tuple": ({"k", "v"}, _dec_tuple),
    "dict": ({"k", "v"}, _dec_dict),
    "node": ({"k", "v"}, _dec_node),
    "array": ({"k", "v"}, _dec_array),
    "np": ({"k", "dtype", "v"}, _dec_np),
    "dtype": ({"k", "v"}, _dec_dtype),
    "nptype": ({"k", "v"}, lambda dec, o, d: decode_dtype(o["v"], dec.member).type),
    "pytype": ({"k", "v"}, _dec_pytype),
    "slice": ({"k", "v"}, _dec_slice),
    "ellipsis": ({"k"}, lambda dec, o, d: Ellipsis),
    "sym": ({"k", "v"}, _dec_sym),
    "ndarray": ({"k", "dtype", "shape", "v"}, _dec_ndarray),
    "source": ({"k", "file", "line"}, _dec_source),
    "range": ({"k", "lo", "hi"}, _dec_range),
    "Dim": ({"k", "name", "min", "max"}, _dec_dim),
    "DerivedDim": (({"k", "root", "scale", "offset"}, {"k", "terms", "offset"}), _dec_dim),
    "DimHint": (({"k", "v"}, {"k", "v", "min", "max"}), _dec_dim),
    "dataclass": ({"k", "type", "v"}, _dec_dataclass),
}

# kinds with one key set (all but DerivedDim and DimHint): the decoder's fast path
_ONE_FORM = {kind: (frozenset(keys), fn) for kind, (keys, fn) in _DECODERS.items() if not isinstance(keys, tuple)}
