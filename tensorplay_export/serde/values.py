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
sympy expression    ``{"k": "sym", "v": operator tree}`` (see :mod:`.exprs`)
small ndarray       ``{"k": "ndarray", "dtype": dtype, "shape": [...], "v": hex}`` (<= MAX_INLINE_BYTES)
SourceLoc           ``{"k": "source", "file": str, "line": int}``
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
import sympy

from ..records import SourceLoc, ValueRange
from .exprs import MAX_INT_BITS, decode_expr, encode_expr
from .jsonio import MAX_JSON_DEPTH, fail

MAX_INLINE_BYTES = 1 << 16  # inline ndarray constants in node args
MAX_NDIM = 64
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
    if not isinstance(text, str) or not _DTYPE_RE.match(text):
        fail(member, f"invalid dtype {text!r:.60} (expected a plain dtype string like '<f8')")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError) as err:
        fail(member, f"invalid dtype {text!r}: {err}")
    if dtype.hasobject or dtype.fields is not None:
        fail(member, f"dtype {text!r} is not allowed")
    return dtype


def encode_value(value: Any, node_name: Callable[[Any], str | None], _depth: int = 0) -> Any:
    """Encode one argument value.

    Args:
        value: the value (see the module table for supported kinds).
        node_name: returns the node name when ``value`` is a graph Node, else None.
    Raises:
        ValueError: a value of an unsupported type (names the type).
    """
    if _depth > MAX_JSON_DEPTH - 30:
        raise ValueError(f"value nested deeper than {MAX_JSON_DEPTH - 30} levels")
    d = _depth + 1
    name = node_name(value)
    if name is not None:
        return {"k": "node", "v": name}
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, np.generic):  # before float/str: np.float64 and np.str_ subclass them
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
        return str(value)
    if isinstance(value, tuple):
        return {"k": "tuple", "v": [encode_value(v, node_name, d) for v in value]}
    if isinstance(value, list):
        return [encode_value(v, node_name, d) for v in value]
    if isinstance(value, dict):
        return {"k": "dict", "v": [[encode_value(k, node_name, d), encode_value(v, node_name, d)]
                                   for k, v in value.items()]}
    if isinstance(value, np.dtype):
        return {"k": "dtype", "v": encode_dtype(value)}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"k": "nptype", "v": encode_dtype(np.dtype(value))}
    if isinstance(value, type) and _PYTYPES.get(value.__name__) is value:
        return {"k": "pytype", "v": value.__name__}
    if isinstance(value, slice):
        return {"k": "slice", "v": [encode_value(v, node_name, d) for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"k": "ellipsis"}
    if isinstance(value, sympy.Basic):
        return {"k": "sym", "v": encode_expr(value)}
    if isinstance(value, np.ndarray):
        if value.nbytes > MAX_INLINE_BYTES:
            raise ValueError(f"an inline array of {value.nbytes} bytes is too large; lift it as a constant")
        arr = np.ascontiguousarray(value)
        return {"k": "ndarray", "dtype": encode_dtype(arr.dtype), "shape": list(arr.shape),
                "v": arr.tobytes().hex()}
    if isinstance(value, SourceLoc):
        return {"k": "source", "file": str(value.filename), "line": int(value.lineno)}
    if isinstance(value, ValueRange):
        hi = None if value.upper == math.inf else int(value.upper)
        return {"k": "range", "lo": int(value.lower), "hi": hi}
    raise ValueError(f"cannot store a value of type {type(value).__qualname__}: {value!r:.80}")


def decode_value(obj: Any, member: str, resolve: Callable[[str], Any], _depth: int = 0) -> Any:
    """Inverse of :func:`encode_value`.

    Args:
        obj: parsed JSON.
        member: archive member for error messages.
        resolve: maps a node name to the Node (raises ArchiveError for unknown names).
    Raises:
        ArchiveError: unknown tag, malformed field, bad dtype, oversize inline array.
    """
    if _depth > MAX_JSON_DEPTH:
        fail(member, f"value nested deeper than {MAX_JSON_DEPTH} levels")
    d = _depth + 1
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if type(obj) is int:
        if abs(obj).bit_length() >= MAX_INT_BITS:
            fail(member, f"integer has more than {MAX_INT_BITS} bits")
        return obj
    if isinstance(obj, list):
        return [decode_value(v, member, resolve, d) for v in obj]
    if not isinstance(obj, dict) or not isinstance(obj.get("k"), str):
        fail(member, f"malformed value {_short(obj)}")
    kind = obj["k"]
    decoder = _DECODERS.get(kind)
    if decoder is None:
        fail(member, f"unknown value kind {kind!r:.60}")
    keys, fn = decoder
    if set(obj) != keys:
        fail(member, f"value of kind {kind!r} must have keys {sorted(keys)}, got {sorted(obj)}")
    return fn(obj, member, resolve, d)


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


def _dec_np(o: dict, member: str, resolve: Any, d: int) -> Any:
    dtype = decode_dtype(o["dtype"], member)
    raw = _hex_bytes(o["v"], member, 4096)
    if len(raw) != dtype.itemsize:
        fail(member, f"numpy scalar of dtype {dtype.str} needs {dtype.itemsize} bytes, got {len(raw)}")
    return np.frombuffer(raw, dtype=dtype)[0]


def _dec_ndarray(o: dict, member: str, resolve: Any, d: int) -> np.ndarray:
    dtype = decode_dtype(o["dtype"], member)
    shape = o["shape"]
    if (not isinstance(shape, list) or len(shape) > MAX_NDIM
            or any(type(n) is not int or n < 0 or n > MAX_INLINE_BYTES for n in shape)):
        fail(member, f"inline array has an invalid shape {_short(shape)}")
    raw = _hex_bytes(o["v"], member, MAX_INLINE_BYTES)
    if math.prod(shape) * dtype.itemsize != len(raw):
        fail(member, f"inline array of shape {tuple(shape)} and dtype {dtype.str} does not match its {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _dec_dict(o: dict, member: str, resolve: Any, d: int) -> dict:
    items = o["v"]
    if not isinstance(items, list) or any(not isinstance(p, list) or len(p) != 2 for p in items):
        fail(member, "dict value must be a list of [key, value] pairs")
    out: dict = {}
    for k, v in items:
        key = decode_value(k, member, resolve, d)
        try:
            hash(key)
        except TypeError:
            fail(member, f"dict key {_short(k)} is not hashable")
        if key in out:
            fail(member, f"duplicate dict key {key!r:.60}")
        out[key] = decode_value(v, member, resolve, d)
    return out


def _dec_slice(o: dict, member: str, resolve: Any, d: int) -> slice:
    parts = o["v"]
    if not isinstance(parts, list) or len(parts) != 3:
        fail(member, "slice must be [start, stop, step]")
    return slice(*(decode_value(p, member, resolve, d) for p in parts))


def _dec_tuple(o: dict, member: str, resolve: Any, d: int) -> tuple:
    if not isinstance(o["v"], list):
        fail(member, "tuple value must hold a list")
    return tuple(decode_value(v, member, resolve, d) for v in o["v"])


def _dec_node(o: dict, member: str, resolve: Any, d: int) -> Any:
    if not isinstance(o["v"], str):
        fail(member, "node reference must be a name")
    return resolve(o["v"])


def _dec_pytype(o: dict, member: str, resolve: Any, d: int) -> type:
    if o["v"] not in _PYTYPES:
        fail(member, f"unknown builtin type {o['v']!r:.40} (allowed: {sorted(_PYTYPES)})")
    return _PYTYPES[o["v"]]


def _dec_source(o: dict, member: str, resolve: Any, d: int) -> SourceLoc:
    if not isinstance(o["file"], str) or type(o["line"]) is not int:
        fail(member, "source location needs a file name and an integer line")
    return SourceLoc(o["file"], o["line"])


def _dec_range(o: dict, member: str, resolve: Any, d: int) -> ValueRange:
    lo, hi = o["lo"], o["hi"]
    return decode_range(lo, hi, member)


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
    if hi is None or hi == math.inf or hi is sympy.oo:
        return [int(lo), None]
    return [int(lo), int(hi)]


_DECODERS: dict[str, tuple[set, Callable[..., Any]]] = {
    "float": ({"k", "v"}, lambda o, m, r, d: _hex_float(o["v"], m)),
    "complex": ({"k", "re", "im"}, lambda o, m, r, d: complex(_hex_float(o["re"], m), _hex_float(o["im"], m))),
    "tuple": ({"k", "v"}, _dec_tuple),
    "dict": ({"k", "v"}, _dec_dict),
    "node": ({"k", "v"}, _dec_node),
    "np": ({"k", "dtype", "v"}, _dec_np),
    "dtype": ({"k", "v"}, lambda o, m, r, d: decode_dtype(o["v"], m)),
    "nptype": ({"k", "v"}, lambda o, m, r, d: decode_dtype(o["v"], m).type),
    "pytype": ({"k", "v"}, _dec_pytype),
    "slice": ({"k", "v"}, _dec_slice),
    "ellipsis": ({"k"}, lambda o, m, r, d: Ellipsis),
    "sym": ({"k", "v"}, lambda o, m, r, d: decode_expr(o["v"], m)),
    "ndarray": ({"k", "dtype", "shape", "v"}, _dec_ndarray),
    "source": ({"k", "file", "line"}, _dec_source),
    "range": ({"k", "lo", "hi"}, _dec_range),
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
