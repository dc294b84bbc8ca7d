"""Graph argument values <-> tagged JSON: exact types back, malformed values refused."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import sympy

from tensorplay_export.specs.dims import Dim
from tensorplay_export.errors import ArchiveError
from tensorplay_export.records import SourceLoc, ValueRange
from tensorplay_export.serde.values import MAX_INLINE_BYTES, Decoder, Encoder, decode_range

N = sympy.Symbol("N", integer=True, positive=True)

VALUES = [
    None, True, False, 0, -7, 2**70, "text", "", 2.5, -0.0, float("inf"), float("-inf"), 1e-310, 1 + 2j,
    np.float64(2.0), np.float32(1.5), np.float16(0.1), np.int8(-3), np.uint64(2**64 - 1), np.bool_(True),
    np.complex64(1 - 1j), np.longdouble("0.1"), np.datetime64("2020-01-01T10:00"), np.timedelta64(3, "ms"),
    np.str_("hi"), np.bytes_(b"ab"),
    np.dtype("float32"), np.dtype(">i4"), np.dtype("U5"), np.float32, np.int64, float, int, bool,
    slice(1, N, None), slice(None), Ellipsis, N * 2 + 1, sympy.Eq(sympy.Mod(N, 2), 0), sympy.Integer(3),
    (1, (2,), ()), [1, [2, []]], {"a": 1, 3: None, (1, 2): "x", None: 2.0},
    SourceLoc("/tmp/model.py", 12), ValueRange(1, 512), ValueRange(0),
    Dim("S", max=5), Dim("E", min=0), 2 * Dim("x", max=9) + 1, Dim.AUTO, Dim.DYNAMIC, Dim.STATIC,
]


def same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, sympy.Basic):
        return sympy.srepr(a) == sympy.srepr(b)
    return a is b or a == b


def roundtrip(value, **kw):
    enc = Encoder(**kw).value(value)
    return Decoder("m").value(json.loads(json.dumps(enc, allow_nan=False)))


@pytest.mark.parametrize("value", VALUES, ids=[f"{i}-{type(v).__name__}" for i, v in enumerate(VALUES)])
def test_roundtrip_keeps_exact_type_and_value(value):
    assert same(roundtrip(value), value)


def test_nan_float_roundtrips():
    back = roundtrip([float("nan"), np.float32("nan")])
    assert math.isnan(back[0]) and type(back[1]) is np.float32 and np.isnan(back[1])


def test_numpy_float64_is_not_python_float():
    back = roundtrip(np.float64(2.0))
    assert type(back) is np.float64 and back == 2.0


def test_small_arrays_inline_large_arrays_lifted():
    small = np.arange(6, dtype=np.int16).reshape(2, 3)
    back = roundtrip(small)
    assert back.dtype == small.dtype and np.array_equal(back, small)
    big = np.zeros(MAX_INLINE_BYTES // 8 + 1)
    stored = {}
    enc = Encoder(store_array=lambda a: stored.setdefault(f"k{len(stored)}", a) is None or f"k{len(stored) - 1}")
    tree = enc.value(big)
    assert tree == {"k": "array", "v": "k0"}
    assert Decoder("m", arrays=stored).value(tree) is big
    with pytest.raises(ValueError, match="too large"):
        Encoder().value(big)


@pytest.mark.parametrize("value", [object(), np.array([object()]), np.dtype("O"), {1, 2}, b"bytes",
                                   sympy.Dummy("d"), np.dtype([("a", "f4")])])
def test_unsupported_values_refused_on_write(value):
    with pytest.raises(ValueError):
        Encoder().value(value)


def test_node_references_use_the_callback():
    class FakeNode:
        name = "add_1"
    n = FakeNode()
    tree = Encoder(lambda v: v.name if isinstance(v, FakeNode) else None).value((n, 1))
    assert tree == {"k": "tuple", "v": [{"k": "node", "v": "add_1"}, 1]}
    assert Decoder("m", resolve=lambda name: ("resolved", name)).value(tree) == (("resolved", "add_1"), 1)
    with pytest.raises(ArchiveError, match="unexpected node reference"):
        Decoder("m").value(tree)


@pytest.mark.parametrize("obj, words", [
    ({"k": "pickle", "v": "x"}, "unknown value kind"),
    ({"k": "float", "v": "1.0", "extra": 1}, "must have keys"),
    ({"k": "float", "v": "0xzz"}, "malformed float"),
    ({"k": "float", "v": 1.5}, "malformed float"),
    ({"k": "dtype", "v": "O"}, "invalid dtype"),
    ({"k": "dtype", "v": "|O8"}, "invalid dtype"),
    ({"k": "dtype", "v": "i4,f8"}, "invalid dtype"),
    ({"k": "np", "dtype": "<f8", "v": "00"}, "needs 8 bytes"),
    ({"k": "np", "dtype": "<f8", "v": "zz" * 8}, "hexadecimal"),
    ({"k": "pytype", "v": "eval"}, "unknown builtin type"),
    ({"k": "ndarray", "dtype": "<f8", "shape": [10**12], "v": ""}, "invalid shape"),
    ({"k": "ndarray", "dtype": "<f8", "shape": [2], "v": "00"}, "does not match"),
    ({"k": "dict", "v": [[[1], 2]]}, "not hashable"),
    ({"k": "dict", "v": [["a", 1], ["a", 2]]}, "duplicate dict key"),
    ({"k": "range", "lo": 5, "hi": 1}, "empty range"),
    ({"k": "range", "lo": {"k": "float", "v": "nan"}, "hi": None}, "must be integers"),
    ({"k": "array", "v": "nope"}, "unknown stored array"),
    ({"k": "Dim", "name": "1bad", "min": 1, "max": None}, "invalid Dim"),
    ({"k": "Dim", "name": "x", "min": 5, "max": 1}, "invalid Dim"),
    ({"k": "DerivedDim", "root": {"k": "Dim", "name": "x", "min": 1, "max": None}, "scale": 0, "offset": 0},
     "invalid DerivedDim"),
    ({"k": "DimHint", "v": "MAGIC"}, "unknown Dim hint"),
    ({"k": "sym", "v": ["Symbol", "__import__('os').system('x')", {"evil": 1}]}, "assumption"),
    (2**300, "bits"),
    ({"no_k": 1}, "malformed value"),
])
def test_malformed_values_raise_archive_error(obj, words):
    with pytest.raises(ArchiveError, match=words) as info:
        Decoder("models/m/program.json").value(obj)
    assert "models/m/program.json" in str(info.value)


def test_deep_values_refused():
    obj = 1
    for _ in range(1000):
        obj = [obj]
    with pytest.raises(ArchiveError, match="deeper"):
        Decoder("m").value(obj)


def test_decode_range_bounds():
    assert decode_range(1, None, "m") == ValueRange(1, math.inf)
    assert decode_range(0, 0, "m") == ValueRange(0, 0)
    with pytest.raises(ArchiveError):
        decode_range(1.5, 3, "m")
    with pytest.raises(ArchiveError):
        decode_range(True, 3, "m")
