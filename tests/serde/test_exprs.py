"""Size expressions <-> JSON operator trees: exact round trips, strict refusal."""
from __future__ import annotations

import json

import pytest
import sympy
from hypothesis import given, settings, strategies as st

from tensorplay_export.errors import ArchiveError
from tensorplay_export.serde.exprs import decode_expr, encode_expr, register_function


def pos(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, positive=True)


S, N, E, I, LAM, OO, s0 = (pos(n) for n in ("S", "N", "E", "I", "lambda", "oo", "s0"))
t = sympy.Symbol("t", integer=True, nonnegative=True)


def roundtrip(expr):
    tree = json.loads(json.dumps(encode_expr(expr)))
    return decode_expr(tree)


CASES = [
    S + N * E - I, sympy.floor(LAM / 2) * 3 + sympy.Mod(OO, 4), sympy.Max(S, N, 3), sympy.Min(s0, 512),
    sympy.Eq(sympy.Mod(S, 2), 0), sympy.And(S <= 512, sympy.Ne(N, E)), sympy.Or(sympy.Eq(S, 1), S > 7),
    sympy.Not(sympy.And(S > 2, t < 3)), sympy.Piecewise((S, S > 3), (t, True)), sympy.Rational(3, 7) * S,
    sympy.Float(1.5) * S, sympy.Float("0.1", 30), sympy.oo, -sympy.oo, sympy.true, sympy.false,
    sympy.ceiling(S / 3) ** 2, 1 / S, sympy.Abs(S - t), sympy.Integer(2**100), sympy.Integer(-7), sympy.S.Zero,
    S >= t, S < 4, sympy.Xor(S > 1, t > 1), sympy.Implies(S > 1, t > 0), sympy.ITE(S > 1, t > 0, t > 1),
    sympy.Symbol("x"), sympy.Symbol("weird name!", integer=True),
]


@pytest.mark.parametrize("expr", CASES, ids=[str(i) for i in range(len(CASES))])
def test_roundtrip_is_exact(expr):
    back = roundtrip(expr)
    assert back == expr
    assert sympy.srepr(back) == sympy.srepr(expr)


def test_special_names_are_data_not_sympy_constants():
    back = roundtrip(S + N + E + I + LAM)
    assert back.free_symbols == {S, N, E, I, LAM}
    assert all(s.is_integer and s.is_positive for s in back.free_symbols)
    assert sympy.I not in back.atoms() and sympy.E not in back.atoms()


def test_assumptions_are_kept():
    assert roundtrip(t).is_nonnegative and roundtrip(t) != pos("t")


def test_python_int_encodes_as_integer():
    assert encode_expr(5) == 5 and roundtrip(5) == sympy.Integer(5)


@pytest.mark.parametrize("bad", [sympy.nan, sympy.zoo, sympy.Dummy("d"), sympy.sin(S), sympy.I * S])
def test_unsupported_expressions_refused_on_write(bad):
    with pytest.raises(ValueError):
        encode_expr(bad)


@pytest.mark.parametrize("tree, words", [
    (["Add", 1], "arguments"),
    (["Bogus", 1, 2], "unknown expression head"),
    (["Symbol", "x", {"evil": True}], "unsupported assumption"),
    (["Symbol", "x", {"integer": "yes"}], "unsupported assumption"),
    (["Symbol", "", {}], "symbol name"),
    (["Symbol", "x", {"positive": True, "negative": True}], "inconsistent"),
    (["Rational", 2, 4], "lowest terms"),
    (["Rational", 1, 0], "malformed Rational"),
    (["Pow", 2, 1000000000], "exponent"),
    (["Pow", ["Symbol", "x", {}], ["Symbol", "y", {}]], "exponent"),
    (True, "malformed"),
    ("1+1", "malformed"),
    (2**300, "bits"),
    (["oo", 1], "no arguments"),
    (["Piecewise", [1]], "pairs"),
    (["Float", 0, "zz", 0, 1, 53], "hexadecimal"),
    (["Float", 0, "3", -1, 5, 53], "bitcount"),
    (["Mod", ["true"], 2], "must be a number"),
    (["And", 1, 2], "must be a condition"),
    (["Piecewise", [["true"], 1]], "Piecewise pairs"),
])
def test_malformed_trees_raise_archive_error(tree, words):
    with pytest.raises(ArchiveError, match=words) as info:
        decode_expr(tree, "models/m/program.json")
    assert "models/m/program.json" in str(info.value)


def test_deep_tree_refused_without_recursion_error():
    tree = 1
    for _ in range(5000):
        tree = ["floor", tree]
    with pytest.raises(ArchiveError, match="deeper"):
        decode_expr(tree)


def test_node_budget():
    with pytest.raises(ArchiveError, match="nodes"):
        decode_expr(["Add"] + [1] * 200_000)


def test_registered_custom_function():
    class FloorDivX(sympy.Function):
        @classmethod
        def eval(cls, a, b):
            return None

    register_function("FloorDivX", FloorDivX)
    register_function("FloorDivX", FloorDivX)  # idempotent
    e = FloorDivX(S, 2) + 1
    assert roundtrip(e) == e
    with pytest.raises(ValueError):
        register_function("Add", FloorDivX)


_names = st.sampled_from(["S", "N", "E", "I", "lambda", "s0", "batch", "Q"])


def _leaf():
    return st.one_of(st.integers(-50, 50).map(sympy.Integer), _names.map(pos))


_exprs = st.recursive(_leaf(), lambda kids: st.one_of(
    st.tuples(kids, kids).map(lambda p: p[0] + p[1]),
    st.tuples(kids, kids).map(lambda p: p[0] * p[1]),
    st.tuples(kids, st.integers(1, 9)).map(lambda p: sympy.floor(p[0] / p[1])),
    st.tuples(kids, st.integers(1, 9)).map(lambda p: sympy.Mod(p[0], p[1])),
    st.tuples(kids, kids).map(lambda p: sympy.Max(p[0], p[1])),
    st.tuples(kids, kids).map(lambda p: sympy.Min(p[0], p[1])),
    st.tuples(kids, st.integers(0, 3)).map(lambda p: p[0] ** p[1]),
), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_exprs, _exprs)
def test_fuzz_roundtrip(a, b):
    for expr in (a, sympy.Eq(a, b), sympy.And(a <= b + 1, sympy.Ne(a, 3))):
        back = roundtrip(expr)
        assert back == expr and sympy.srepr(back) == sympy.srepr(expr)


def test_symbol_cache_keeps_the_assumption_checks():
    """Decoded symbols are reused by name, but a non-bool assumption is refused every time."""
    from tensorplay_export.errors import ArchiveError
    from tensorplay_export.serde.exprs import decode_expr

    good = ["Symbol", "cache_s", {"integer": True, "positive": True}]
    assert decode_expr(good) is decode_expr(good)
    with pytest.raises(ArchiveError, match="unsupported assumption"):
        decode_expr(["Symbol", "cache_s", {"integer": 1, "positive": True}])


def _grows(x):
    import numpy as np

    return np.zeros(2 ** (x.shape[0] - 1))


def test_a_size_exponent_saves_and_loads_bounded_by_the_programs_ranges():
    """Capture keeps ``2**n`` symbolic (a guard keeps n <= 62); the format stores an integer base to
    a size exponent in a program, whose range constraints keep the exponent within [0, 64]."""
    import io

    import numpy as np
    import pytest

    import tensorplay_export as tpe
    from tensorplay_export import Dim
    from tensorplay_export.serde.exprs import encode_expr

    ep = tpe.export(_grows, np.ones(3), dynamic_shapes={"x": {0: Dim("n", max=20)}})
    buf = io.BytesIO()
    tpe.save(ep, buf)
    loaded = tpe.load(io.BytesIO(buf.getvalue()))
    assert loaded.module()(np.ones(6)).shape == (32,)
    with pytest.raises(tpe.ConstraintsExceededError):
        loaded.module()(np.ones(21))
    # an expression alone has no ranges to bound its exponent by
    n = sympy.Symbol("n", integer=True, positive=True)
    with pytest.raises(ValueError, match="a size in a Pow exponent"):
        encode_expr(2 ** n)


def test_a_size_exponent_beyond_its_bound_is_refused():
    import io
    import json
    import zipfile

    import numpy as np
    import pytest

    import tensorplay_export as tpe
    from tensorplay_export import Dim
    from _shared import with_member

    ep = tpe.export(_grows, np.ones(3), dynamic_shapes={"x": {0: Dim("n", max=20)}})
    buf = io.BytesIO()
    tpe.save(ep, buf)

    def widen(hi):
        def change(body):
            doc = json.loads(body)
            doc["range_constraints"][0][2] = hi
            check = next(nd for nd in doc["graph"]["nodes"] if nd["target"] == "tpe.assert_range")
            check["args"][2] = hi  # the check enforces the widened range too
            return json.dumps(doc).encode()
        return change
    for hi, words in ((100, r"ranges over \[0, 99\]"), (None, r"ranges over \[0, inf\]")):
        data = with_member(buf.getvalue(), "models/model/program.json", widen(hi))
        with pytest.raises(tpe.ArchiveError, match=words):
            tpe.load(io.BytesIO(data))
    assert zipfile.ZipFile(io.BytesIO(buf.getvalue())).testzip() is None
