"""violations.py: the ConstraintViolationError text, its fixes, and the refine round trip."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pytest
import sympy

import solver
import tensorplay_export as tpe
from tensorplay_export import violations
from tensorplay_export.specs.dims import Dim, _DerivedDim
from tensorplay_export.errors import ConstraintsExceededError, ConstraintViolationError, DataDependentError
from tensorplay_export.records import DimInfo, GuardRecord, SourceLoc
from tensorplay_export.specs.refine import refine_dynamic_shapes_from_suggested_fixes as refine

pytestmark = pytest.mark.z3

MODEL_SRC = """import numpy as np
POS = np.zeros((512, 8))


def model(x, y):
    s = x.shape[1]
    h = x + POS[:s]
    if s == 512:
        return h * 2.0
    z = x.reshape(4, 6)
    w = np.concatenate([x, x]) * y
    return x.reshape(-1, 4)
"""


@pytest.fixture
def loc(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the user's model in the working directory reads ``model.py:7``
    path = tmp_path / "model.py"
    path.write_text(MODEL_SRC)
    return lambda line: SourceLoc(str(path), line)


def sym(name, lower=1):
    return sympy.Symbol(name, integer=True, positive=True) if lower >= 1 else \
        sympy.Symbol(name, integer=True, nonnegative=True)


def info(name, lower, upper, hint, *sites, kind="named"):
    return DimInfo(name, lower, upper, hint, list(sites), kind)


# --- the exact layout (issue 4) ---------------------------------------------------------------

def test_issue4_layout_exactly(loc):
    seq = sym("seq")
    err = violations.build_violation_error(
        [GuardRecord(seq <= 512, "index_bounds", "slice of a 512-row constant", loc(7))],
        {"seq": info("seq", 1, 1024, 16, "x.shape[1]")})
    assert isinstance(err, ConstraintViolationError) and isinstance(err, ValueError)
    assert str(err) == (
        "Constraints violated (seq)!\n"
        "  - Not all values of seq = x.shape[1] in the specified range seq <= 1024 satisfy the guard seq <= 512"
        " (slice of a 512-row constant)\n"
        "    counterexample: seq = 513\n"
        "    at model.py:7  `h = x + POS[:s]`\n"
        "Suggested fixes:\n"
        "  seq = Dim('seq', max=512)")
    assert err.fixes == ["seq = Dim('seq', max=512)"]


def test_plain_guard_has_no_reason_suffix(loc):
    seq = sym("seq")
    err = violations.build_violation_error([GuardRecord(seq <= 512, "guard", "user branch", loc(7))],
                                           {"seq": info("seq", 1, 1024, 16, "x.shape[1]")})
    assert "satisfy the guard seq <= 512\n" in str(err)


def test_conjoined_bounds_one_fix_one_call(loc, monkeypatch):
    seq = sym("seq")
    calls = []
    real = solver.suggest_fixes

    def spy(guards, dims, hints, relations="increasing"):
        calls.append(list(guards))
        assert relations == "linear"
        return real(guards, dims=dims, hints=hints, relations=relations)

    monkeypatch.setattr(solver, "suggest_fixes", spy)
    err = violations.build_violation_error(
        [GuardRecord(seq <= 512, "index_bounds", "", loc(7)),
         GuardRecord(sympy.Ne(seq, 512), "guard", "", loc(8))],
        {"seq": info("seq", 1, None, 7, "x.shape[1]")})
    text = str(err)
    assert len(calls) == 1 and len(calls[0]) == 2
    assert text.count("  - Not all values of seq = x.shape[1] in the specified range seq >= 1") == 2
    assert "satisfy the guard seq != 512" in text and "counterexample: seq = 512" in text
    assert "at model.py:8  `if s == 512:`" in text
    assert text.endswith("Suggested fixes:\n  seq = Dim('seq', max=511)")
    assert refine(text, {"x": {1: Dim("seq")}}) == {"x": {1: Dim("seq", max=511)}}


def test_relation_names_both_dims_and_sites(loc):
    dx, dy = sym("dx"), sym("dy")
    guard = sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))
    err = violations.build_violation_error(
        [GuardRecord(guard, "shape", "broadcast", loc(11))],
        {"dx": info("dx", 1, 100, 8, "x.shape[0]"), "dy": info("dy", 1, 100, 8, "y.shape[0]")})
    text = str(err)
    assert text.startswith("Constraints violated (dx, dy)!\n")
    assert "Not all values of dx = x.shape[0], dy = y.shape[0] in the specified ranges dx <= 100, dy <= 100 " \
           "satisfy the guard dx == 1 or dx == dy or dy == 1" in text
    cex_line = next(l for l in text.splitlines() if "counterexample" in l)
    cex = dict(p.split(" = ") for p in cex_line.split(": ", 1)[1].split(", "))
    d, e = int(cex["dx"]), int(cex["dy"])
    assert d != e and d != 1 and e != 1
    spec = {"x": {0: Dim("dx", max=100)}, "y": {0: Dim("dy", max=100)}}
    out = refine(text, spec)
    assert out["x"][0] is out["y"][0] or out["x"][0] == out["y"][0]


def test_specialization_bullet(loc):
    b = sym("batch")
    err = violations.build_violation_error(
        [GuardRecord(sympy.Eq(b, 4), "specialization", "reshape(4, 6) needs 4*6 elements", loc(10))],
        {"batch": info("batch", 1, 64, 4, "x.shape[0]")})
    text = str(err)
    assert "  - batch = x.shape[0] was specialized to 4 (reshape(4, 6) needs 4*6 elements)\n" in text
    assert "counterexample: batch = " in text and "at model.py:10  `z = x.reshape(4, 6)`" in text
    assert text.endswith("Suggested fixes:\n  batch = 4")
    assert refine(text, {"x": {0: Dim("batch", max=64)}}) == {"x": {0: 4}}


def test_unfixable_has_counterexample_and_sentence_no_fix_block(loc):
    dx, dy = sym("dx"), sym("dy")
    err = violations.build_violation_error(
        [GuardRecord((dx - dy) ** 2 <= 100, "guard", "", loc(11))],
        {"dx": info("dx", 1, 1024, 32, "x.shape[0]"), "dy": info("dy", 1, 1024, 32, "y.shape[0]")})
    text = str(err)
    assert "satisfy the guard (dx - dy)**2 <= 100" in text
    assert "counterexample: dx = " in text
    assert "no suggested fix:" in text and "change the model" in text
    assert "declare y.shape[0] as Dim.AUTO instead of Dim('dy')" in text
    assert "Suggested fixes:" not in text and text.endswith(violations.NO_FIXES_LINE)
    assert err.fixes == [] and [v.unfixable is not None for v in err.violations] == [True]


def test_mixed_fixable_and_unfixable(loc):
    dx, dy, seq = sym("dx"), sym("dy"), sym("seq")
    dims = {"dx": info("dx", 1, 1024, 32, "x.shape[0]"), "dy": info("dy", 1, 1024, 32, "y.shape[0]"),
            "seq": info("seq", 1, 1024, 16, "x.shape[1]")}
    err = violations.build_violation_error(
        [GuardRecord((dx - dy) ** 2 <= 100, "guard", "", loc(11)), GuardRecord(seq <= 512, "guard", "", loc(7))], dims)
    text = str(err)
    assert text.startswith("Constraints violated (dx, dy, seq)!")
    assert text.endswith("Suggested fixes:\n  seq = Dim('seq', max=512)")
    assert text.count("no suggested fix") == 1


def test_divisibility_round_trip(loc):
    n = sym("n")
    err = violations.build_violation_error([GuardRecord(sympy.Eq(sympy.Mod(n, 4), 0), "shape", "", loc(12))],
                                           {"n": info("n", 1, 1000, 8, "x.shape[0]")})
    text = str(err)
    assert "satisfy the guard n % 4 == 0" in text
    assert text.endswith("Suggested fixes:\n  _n = Dim('_n', max=250)\n  n = 4*_n")
    out = refine(text, {"x": {0: Dim("n", max=1000)}})
    d = out["x"][0]
    assert isinstance(d, _DerivedDim) and d.root == Dim("_n", max=250) and d.scale == 4


ROUND_TRIPS = [
    # (guards over the named symbols, dims {name: (lower, upper, hint, site)}, expected refined spec entries)
    ("offset", lambda dx, dy: [sympy.Eq(dx - 1, dy)],
     {"dx": (1, 100, 9), "dy": (1, 100, 8)}, lambda out: out["x"][0] == Dim("dy", max=99) + 1
     and out["y"][0] == Dim("dy", max=99) and out["x"][0].root is out["y"][0]),
    ("double", lambda dx, dy: [sympy.Eq(2 * dx, dy)],
     {"dx": (1, 100, 4), "dy": (1, 100, 8)}, lambda out: out["x"][0] == Dim("dx", max=50)
     and out["y"][0] == 2 * Dim("dx", max=50) and out["y"][0].root is out["x"][0]),
    ("matmul", lambda dx, dy: [sympy.Eq(dy, 16)],
     {"dx": (1, 32, 3), "dy": (1, 64, 16)}, lambda out: out["y"][0] == 16 and out["x"][0] == Dim("dx", max=32)),
    ("branch", lambda dx, dy: [dx > 4],
     {"dx": (1, 64, 8), "dy": (1, 64, 8)}, lambda out: out["x"][0] == Dim("dx", min=5, max=64)),
    ("even", lambda dx, dy: [sympy.Eq(2 * sympy.floor(dy / 2), dy)],
     {"dx": (1, 16, 2), "dy": (1, 64, 10)},
     lambda out: isinstance(out["y"][0], _DerivedDim) and out["y"][0].scale == 2
     and out["y"][0].root.max == 32 and out["y"][0].offset == 0),
]


@pytest.mark.parametrize("name, guards, ranges, check", ROUND_TRIPS, ids=[r[0] for r in ROUND_TRIPS])
def test_round_trip(loc, name, guards, ranges, check):
    dx, dy = sym("dx"), sym("dy")
    sites = {"dx": "x.shape[0]", "dy": "y.shape[0]"}
    dims = {n: info(n, lo, hi, h, sites[n]) for n, (lo, hi, h) in ranges.items()}
    spec = {"x": {0: Dim("dx", min=ranges["dx"][0], max=ranges["dx"][1])},
            "y": {0: Dim("dy", min=ranges["dy"][0], max=ranges["dy"][1])}}
    err = violations.build_violation_error([GuardRecord(g, "shape", "", loc(11)) for g in guards(dx, dy)], dims)
    text = str(err)
    assert "counterexample:" in text and "model.py:11" in text
    out = refine(text, spec)
    assert check(out), (text, out)
    # every size pair the refined spec admits satisfies every guard
    for sizes in _admitted_pairs(out):
        env = {dx: sizes[0], dy: sizes[1]}
        assert all(bool(g.subs(env)) for g in guards(dx, dy)), (sizes, text)


def _admitted_pairs(spec):
    """(x.shape[0], y.shape[0]) for every assignment of the spec's root dims (unbounded roots capped)."""
    entries = [spec["x"][0], spec["y"][0]]
    roots = {d.root.name: d.root for d in entries if isinstance(d, (Dim, _DerivedDim))}
    ranges = [range(r.min, (r.max if r.max is not None else r.min + 50) + 1) for r in roots.values()]
    for combo in itertools.product(*ranges):
        env = dict(zip(roots, combo))
        yield tuple(d if isinstance(d, int) else
                    env[d.name] if isinstance(d, Dim) else d.scale * env[d.root.name] + d.offset
                    for d in entries)


def test_shape_guard_reason_is_shown(loc):
    b = sym("batch")
    err = violations.build_violation_error(
        [GuardRecord(sympy.Eq(6 * b, 24), "shape", "reshape (batch, 6) -> (4, 6)", loc(10))],
        {"batch": info("batch", 1, 64, 4, "x.shape[0]")})
    assert "satisfy the guard 6*batch == 24 (reshape (batch, 6) -> (4, 6))\n" in str(err)
    assert str(err).endswith("Suggested fixes:\n  batch = 4")


def test_dynamic_dim_gets_a_site_named_fix_line_refine_applies(loc):
    s0, dx = sym("x_dim0"), sym("dx")
    dims = {"x_dim0": info("x_dim0", 1, None, 4, "x.shape[0]", kind="dynamic"),
            "dx": info("dx", 1, 16, 2, "y.shape[0]")}
    err = violations.build_violation_error(
        [GuardRecord(sympy.Eq(s0, 4), "specialization", "int() on a size", loc(10)),
         GuardRecord(dx <= 10, "guard", "", loc(8))], dims)
    text = str(err)
    assert text.startswith("Constraints violated (dx, x_dim0)!")
    assert "  - x_dim0 = x.shape[0] was specialized to 4 (int() on a size)" in text
    assert "    x.shape[0] is Dim.DYNAMIC (x_dim0 in [1, inf]); the fix line for x_dim0 below replaces" in text
    assert "Dim.AUTO" in text and "Dim.STATIC" in text
    assert text.endswith("Suggested fixes:\n  dx = Dim('dx', max=10)\n  x_dim0 = 4")
    spec = {"x": {0: Dim.DYNAMIC}, "y": {0: Dim("dx", max=16)}}
    assert refine(text, spec) == {"x": {0: 4}, "y": {0: Dim("dx", max=10)}}


def test_dynamic_dim_range_fix_states_the_known_range(loc):
    s0 = sym("x_dim0")
    err = violations.build_violation_error(
        [GuardRecord(s0 <= 512, "shape", "broadcasting", loc(7))],
        {"x_dim0": info("x_dim0", 1, None, 8, "x.shape[0]", kind="dynamic")})
    text = str(err)
    assert "in the specified range x_dim0 >= 1 satisfy the guard x_dim0 <= 512" in text
    assert "x.shape[0] is Dim.DYNAMIC (x_dim0 in [1, inf])" in text
    assert text.endswith("Suggested fixes:\n  x_dim0 = Dim('x_dim0', max=512)")
    assert [v.fix_lines for v in err.violations] == [("x_dim0 = Dim('x_dim0', max=512)",)]
    assert refine(text, {"x": {0: Dim.DYNAMIC, 1: None}}) == {"x": {0: Dim("x_dim0", max=512), 1: None}}


def test_sum_relation_gets_a_fix_over_two_roots(loc):
    # issue 13 item 8: a + b == c is a relation over two roots, c = a + b (the dim later in input order
    # is the derived one); before, the advice was to declare z.shape[1] as Dim.AUTO
    a, b, c = sym("a"), sym("b"), sym("c")
    dims = {"a": info("a", 1, None, 3, "x.shape[1]"), "b": info("b", 1, None, 4, "y.shape[1]"),
            "c": info("c", 1, None, 7, "z.shape[1]")}
    err = violations.build_violation_error([GuardRecord(sympy.Eq(a + b, c), "shape", "broadcasting", loc(7))],
                                           dims)
    text = str(err)
    assert "no suggested fix" not in text and "Dim.AUTO" not in text
    assert text.endswith("Suggested fixes:\n  c = a + b")
    assert err.fixes == ["c = a + b"] and [v.fix_lines for v in err.violations] == [("c = a + b",)]
    new = refine(text, {"x": {1: Dim("a")}, "y": {1: Dim("b")}, "z": {1: Dim("c")}})
    assert new["z"][1] == Dim("a") + Dim("b") and new["z"][1].root is None
    assert new["z"][1].terms == ((new["x"][1], 1), (new["y"][1], 1))


def test_mixed_case_fix_for_leaves_the_unfixable_guard_without_a_fix(loc):
    h, w = sym("h"), sym("w")
    dims = {"h": info("h", 1, 64, 8, "x.shape[2]"), "w": info("w", 1, 64, 8, "x.shape[3]")}
    err = violations.build_violation_error(
        [GuardRecord(h >= 2, "shape", "", loc(7)), GuardRecord((h - w) ** 2 <= 100, "guard", "", loc(8))], dims)
    assert err.fixes == ["h = Dim('h', min=2, max=64)"]
    assert [v.fix_lines for v in err.violations] == [("h = Dim('h', min=2, max=64)",), ()]
    assert str(err).count(violations.UNFIXABLE_MARK) == 1


def test_deterministic_and_deduplicated(loc):
    a, b = sym("b"), sym("a")
    dims = {"a": info("a", 1, 100, 5, "x.shape[0]"), "b": info("b", 1, 100, 5, "x.shape[1]")}
    recs = [GuardRecord(a <= 50, "guard", "", loc(8)), GuardRecord(b <= 20, "guard", "", loc(8)),
            GuardRecord(a <= 50, "guard", "", loc(8))]
    t1 = str(violations.build_violation_error(recs, dims))
    t2 = str(violations.build_violation_error(list(recs), dims))
    assert t1 == t2 and t1.startswith("Constraints violated (a, b)!") and t1.count("  - ") == 2


def test_empty_violations_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        violations.build_violation_error([], {})


def test_with_a_fake_solver_unknown_verdict(monkeypatch, loc):
    @dataclass
    class V:
        status: str
        counterexample: dict | None = None
        reason: str = ""

    @dataclass
    class FS:
        lines: list = field(default_factory=list)
        unfixable: list = field(default_factory=list)
        checks: list = field(default_factory=list)  # the verdict on each guard, as solver.GuardCheck

    class API:
        calls = []

        @classmethod
        def suggest_fixes(cls, guards, dims, hints, relations="increasing"):
            cls.calls.append((guards, dims, hints))
            checks = [solver.GuardCheck(g, g, V("unknown", None, "timeout after 200 ms")) for g in guards]
            return FS(["n = Dim('n', max=7)", "bogus = 3"], checks=checks)

    monkeypatch.setattr(violations, "_solver_api", lambda: API)
    n = sym("n")
    err = violations.build_violation_error([GuardRecord(n ** 3 <= 400, "guard", "", loc(8))],
                                           {"n": info("n", 1, None, 3, "x.shape[0]")})
    text = str(err)
    assert "counterexample: none found, the solver could not decide this guard (timeout after 200 ms)" in text
    assert API.calls == [([n ** 3 <= 400], {"n": (1, None)}, {"n": 3})]
    # a fix line naming a dim the user cannot write is never printed
    assert text.endswith("Suggested fixes:\n  n = Dim('n', max=7)")


@pytest.mark.parametrize("expr, text", [
    (lambda n, m: sympy.Eq(sympy.Mod(n, 4), 0), "n % 4 == 0"),
    (lambda n, m: sympy.Eq(3 * n, 6 * sympy.floor(n / 2)), "3*n == 6*(n // 2)"),
    (lambda n, m: 2 * sympy.floor((n + 63) / 64) <= 5, "2*((n + 63) // 64) <= 5"),
    (lambda n, m: sympy.Eq(sympy.Mod(2 * n, 4), 0), "2*(n % 2) == 0"),
    (lambda n, m: sympy.Eq(sympy.Mod(n + 1, 4), 0), "(n + 1) % 4 == 0"),
    (lambda n, m: sympy.Eq(sympy.Mod(n * m, 4), 0), "(m*n) % 4 == 0"),
    (lambda n, m: sympy.Eq(sympy.Mod(n, 2 * m), 0), "n % (2*m) == 0"),
    (lambda n, m: sympy.floor(n / (2 * m)) + 1, "n // (2*m) + 1"),
    (lambda n, m: sympy.Ne(n, m), "n != m"),
    (lambda n, m: sympy.Not(sympy.Eq(sympy.Min(n, 3), 3)), "n < 3"),
    (lambda n, m: sympy.Or(sympy.Eq(n, m), sympy.And(n < 3, sympy.Ne(m, 1))), "(m != 1 and n < 3) or n == m"),
])
def test_format_guard(expr, text):
    assert violations.format_guard(expr(sym("n"), sym("m"))) == text


def test_format_range():
    assert violations.format_range("s", 1, 1024) == "s <= 1024"
    assert violations.format_range("s", 2, 1024) == "2 <= s <= 1024"
    assert violations.format_range("s", 0, float("inf")) == "s >= 0"
    assert violations.format_range("s", 1, None) == "s >= 1"


def test_data_dependent_error(loc):
    u0 = sym("u0", 0)
    rec = GuardRecord(u0 > 3, "data_dependent", "", loc(8), op="bool")
    err = violations.data_dependent_error(
        rec, {"u0": info("u0", 0, 10, 6, f"numpy.nonzero at {loc(7)}", kind="unbacked")})
    text = str(err)
    assert isinstance(err, DataDependentError) and isinstance(err, RuntimeError)
    assert text.splitlines()[0] == "Could not guard on data-dependent expression u0 > 3 (the example has u0 = 6)"
    assert "  - u0 is a data-dependent size, produced by numpy.nonzero at model.py:7  `h = x + POS[:s]`; " \
           "its range is [0, 10]" in text
    assert "  asked for at model.py:8  `if s == 512:` (bool)" in text
    assert "np.where" in text
    assert violations.format_data_dependent_error is violations.data_dependent_error


def test_data_dependent_error_keyword_form(loc):
    u0 = sym("u0", 0)
    rec = GuardRecord(u0 > 3, "data_dependent", "", loc(8))
    text = str(violations.data_dependent_error(rec, symbol=u0, op="numpy.nonzero", produced_at=loc(7),
                                               hint=6, upper=10))
    assert "data-dependent expression u0 > 3 (the example has u0 = 6)" in text
    assert "produced by numpy.nonzero at model.py:7  `h = x + POS[:s]`; its range is [0, 10]" in text
    assert "asked for at model.py:8" in text
    text = str(violations.data_dependent_error(rec, symbol=u0, op="numpy.nonzero"))
    assert "(no example value)" in text and "its range is [0, inf]" in text


def test_writable_lines_filter():
    lines = ["_n = Dim('_n', max=250)", "n = 4*_n", "seq = Dim('seq', max=8)", "dy = 2*s0", "s0 = 4"]
    assert violations._writable_lines(lines, {"n", "seq", "dy"}) == lines[:3]
    # the divisibility of a DYNAMIC dim: both the relation and its now unused root are dropped
    assert violations._writable_lines(lines, {"seq"}) == ["seq = Dim('seq', max=8)"]


def test_solver_errors_still_give_a_report(monkeypatch, loc):
    class API:
        @staticmethod
        def suggest_fixes(guards, dims, hints, relations="increasing"):
            raise RuntimeError("unsupported construct: Xor")

    monkeypatch.setattr(violations, "_solver_api", lambda: API)
    n = sym("n")
    text = str(violations.build_violation_error([GuardRecord(n <= 3, "guard", "", loc(8))],
                                                {"n": info("n", 1, 9, 2, "x.shape[0]")}))
    assert "counterexample: none found, the solver could not decide this guard " \
           "(RuntimeError: unsupported construct: Xor)" in text
    assert "no suggested fix: the solver could not synthesize a fix (RuntimeError: unsupported construct: Xor)" \
           in text
    assert "Suggested fixes:" not in text


# --- the acceptance cases, spec side: real specs and inputs, hand-written guards ----------------

from _shared import SHARED_CASES as CASES_DIR  # noqa: E402


def _case_guards(b, s, dx, dy, k, n):
    floor = sympy.floor
    return {
        "case_branch_on_size": [b > 4],
        "case_conjoined_bounds": [s <= 512, sympy.Ne(s, 512)],
        "case_double_relation": [sympy.Eq(2 * dx, dy)],
        "case_equal_dims": [sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))],
        "case_even_pooling": [sympy.Eq(b * s * 3, b * 6 * floor(s / 2))],
        "case_matmul_inner": [sympy.Eq(k, 16)],
        "case_offset_relation": [sympy.Eq(dx - 1, dy)],
        "case_position_table_slice": [s <= 512],
        "case_position_table_take": [s <= 512],
        "case_reshape_divisible": [sympy.Eq(sympy.Mod(n, 4), 0)],
        "case_specialize_constant": [sympy.Eq(6 * b, 24)],
    }


def _load_case(name):
    import importlib.util
    import sys

    sys.path.insert(0, str(CASES_DIR))
    try:
        spec = importlib.util.spec_from_file_location(f"_spec_test_{name}", CASES_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return module


def _contract_admits(model, spec, args, kwargs):
    """Whether the spec alone (ranges, relations, constants) admits these inputs."""
    from tensorplay_export import pytree
    from tensorplay_export.specs.normalize import named_dim_infos, normalize_dynamic_shapes
    from tensorplay_export.errors import ConstraintsExceededError

    try:
        leaves = normalize_dynamic_shapes(model, args, kwargs, spec)
        named_dim_infos(leaves, pytree.tree_leaves((args, kwargs)))
    except (ConstraintsExceededError, ValueError):
        return False
    return True


@pytest.mark.skipif(not CASES_DIR.is_dir(), reason="shared acceptance cases not present")
@pytest.mark.parametrize("case_name", sorted(_case_guards(*[sym(c) for c in "abcdef"])))
def test_violation_case_spec_round_trip(case_name):
    from tensorplay_export import pytree
    from tensorplay_export.specs.normalize import named_dim_infos, normalize_dynamic_shapes

    case = _load_case(case_name)
    syms = {name: sym(name) for name in ("batch", "seq", "dx", "dy", "k", "n")}
    guards = _case_guards(*syms.values())[case_name]
    args, kwargs = case.make_inputs(**case.EXAMPLE)
    spec = case.dynamic_shapes()
    leaves = normalize_dynamic_shapes(case.model, args, kwargs, spec)
    dims = named_dim_infos(leaves, pytree.tree_leaves((args, kwargs)))
    source = SourceLoc(str(CASES_DIR / f"{case_name}.py"), 1)
    err = violations.build_violation_error([GuardRecord(g, "shape", "", source) for g in guards], dims)
    text = str(err)
    assert "Constraints violated" in text and "counterexample:" in text and f"{case_name}.py:1" in text
    refined = refine(text, spec)
    grid = case.EXPECT["grid"]
    for combo in itertools.product(*grid.values()):
        sizes = dict(zip(grid, combo))
        a, kw = case.make_inputs(**sizes)
        assert _contract_admits(case.model, refined, a, kw) == bool(case.EXPECT["admits"](**sizes)), \
            (sizes, text, refined)


def _cex(guard, start, dims, eager=None):
    return violations._counterexample(GuardRecord(guard, "shape", "test", eager=eager), start, dims)


def test_nearest_counterexample():
    seq, dx, dy = sym("seq"), sym("dx"), sym("dy")
    dims = {"seq": info("seq", 1, 1024, 16), "dx": info("dx", 1, 100, 8), "dy": info("dy", 1, 100, 8)}
    assert _cex(seq <= 512, {"seq": 1024}, dims) == {"seq": 513}
    assert _cex(sympy.Ne(seq, 512), {"seq": 512}, dims) == {"seq": 512}
    # relations: change one size of the example when that alone breaks the guard
    guard = sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))
    assert _cex(guard, {"dx": 2, "dy": 3}, dims) == {"dx": 7, "dy": 8}
    dims9 = dict(dims, dx=info("dx", 1, 100, 9))
    # sizes >= 2 where the ranges allow (the solver's dx = dy = 1 is lifted first)
    assert _cex(sympy.Eq(dx - 1, dy), {"dx": 1, "dy": 1}, dims9) == {"dx": 8, "dy": 8}
    # every result still refutes the guard
    got = _cex(dx * dy <= 100, {"dx": 100, "dy": 100}, dims)
    assert not bool((dx * dy <= 100).subs({dx: got["dx"], dy: got["dy"]}))
    assert got == {"dx": 13, "dy": 8}
    # a guard that does not evaluate at concrete sizes keeps the solver's counterexample
    f = sympy.Function("f")
    assert _cex(f(seq) <= 3, {"seq": 900}, dims) == {"seq": 900}


def test_counterexample_avoids_sizes_that_broadcast():
    b, b2, m, n = sym("b"), sym("b2"), sym("m"), sym("n")
    dims = {"b": info("b", 1, 8, 2), "b2": info("b2", 1, 8, 2), "m": info("m", 1, 10, 1), "n": info("n", 1, 10, 5)}
    runs = sympy.Or(sympy.Eq(b, b2), sympy.Eq(b, 1), sympy.Eq(b2, 1))
    # b = 1, b2 = 2 violates b == b2, but numpy broadcasts there: never the witness; the one
    # shown is the example (2, 2) with one size one step away
    for eager in (None, runs):
        got = _cex(sympy.Eq(b, b2), {"b": 1, "b2": 2}, dims, eager=eager)
        assert got in ({"b": 3, "b2": 2}, {"b": 2, "b2": 3}), got
    # m == 1 taken against n: the witness names n too, at a size where numpy fails
    runs = sympy.Or(sympy.Eq(m, n), sympy.Eq(m, 1), sympy.Eq(n, 1))
    assert _cex(sympy.Eq(m, 1), {"m": 2}, dims, eager=runs) == {"m": 2, "n": 5}
    at_two = dict(dims, n=info("n", 1, 10, 2))  # example n = 2: m = 2 would broadcast fine
    assert _cex(sympy.Eq(m, 1), {"m": 2}, at_two, eager=runs) == {"m": 3, "n": 2}
    # ranges that allow only 1 or 2: fall back to what exists
    tight = dict(dims, b=info("b", 1, 1, 1), b2=info("b2", 1, 2, 1))
    assert _cex(sympy.Eq(b, b2), {"b": 1, "b2": 2}, tight) == {"b": 1, "b2": 2}
    # no point outside eager's condition in the ranges: the guard's own witness
    runs_b = sympy.Or(sympy.Eq(b, b2), sympy.Eq(b, 1), sympy.Eq(b2, 1))
    assert _cex(sympy.Eq(b, b2), {"b": 1, "b2": 2}, tight, eager=runs_b) == {"b": 1, "b2": 2}


# --- end to end through export: DYNAMIC fixes and unfixable relations ------------------------

POS_TABLE = np.ones((512, 4), np.float32)


def _pos_model(x):
    return x + POS_TABLE[: x.shape[0]]


def test_export_dynamic_axis_takes_the_tables_bound():
    # torch.export's Dim.DYNAMIC: a refinement is part of the contract, not a violation
    spec = {"x": {0: Dim.DYNAMIC}}
    x = np.ones((8, 4), np.float32)
    ep = tpe.export(_pos_model, x, dynamic_shapes=spec)
    assert [(str(s), v.lower, v.upper) for s, v in ep.range_constraints.items()] == [("x_dim0", 1, 512)]
    for n in (1, 100, 512):
        xn = np.full((n, 4), 2.0, np.float32)
        np.testing.assert_array_equal(ep.module()(xn), _pos_model(xn))
    with pytest.raises(ConstraintsExceededError, match=r"x.shape\[0\] = 513"):
        ep.module()(np.ones((513, 4), np.float32))


def test_export_dynamic_specialization_refines_in_one_step():
    spec = {"x": {0: Dim.DYNAMIC}}
    x = np.ones((8, 4), np.float32)
    with pytest.raises(ConstraintViolationError) as info_:
        tpe.export(lambda x: x + POS_TABLE[:8], x, dynamic_shapes=spec)
    text = str(info_.value)
    assert "x.shape[0] is Dim.DYNAMIC (x_dim0 in [1, inf]), but the model specialized it to the constant 8" in text
    assert text.endswith("Suggested fixes:\n  x_dim0 = 8")
    new = refine(text, spec)
    assert new == {"x": {0: 8}}
    ep = tpe.export(lambda x: x + POS_TABLE[:8], x, dynamic_shapes=new)
    assert ep.module()(np.ones((8, 4), np.float32)).shape == (8, 4)


def _concat_model(x, y, z):
    return np.concatenate([x, y], axis=1) + z


def test_export_sum_relation_fix_works():
    # the fix c = a + b refines in one step; the program admits exactly z.shape[1] == a + b
    a, b, c = Dim("a"), Dim("b"), Dim("c")
    args = (np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 7)))
    spec = {"x": {1: a}, "y": {1: b}, "z": {1: c}}
    with pytest.raises(ConstraintViolationError) as info_:
        tpe.export(_concat_model, *args, dynamic_shapes=spec)
    text = str(info_.value)
    assert text.endswith("Suggested fixes:\n  c = a + b") and "Dim.AUTO" not in text
    new = refine(text, spec)
    assert new["x"][1] is a and new["y"][1] is b and new["z"][1] == a + b
    m = tpe.export(_concat_model, *args, dynamic_shapes=new).module()
    for p, q, r in [(5, 1, 6), (1, 1, 2), (3, 4, 7), (10, 2, 12)]:
        xs, ys, zs = np.ones((2, p)), np.ones((2, q)), np.ones((2, r))
        np.testing.assert_allclose(m(xs, ys, zs), _concat_model(xs, ys, zs))
    for p, q, r in [(5, 1, 7), (3, 4, 8), (3, 4, 6)]:
        with pytest.raises(ConstraintsExceededError, match=r"z.shape\[1\] = \d+ must equal a \+ b"):
            m(np.ones((2, p)), np.ones((2, q)), np.ones((2, r)))


# --- specializations by __index__: the hint fits the construct --------------------------------

INDEX_REASON = ("used as a Python int (__index__: range(), a Python index, a numpy scalar constructor, or indexing "
                "a plain array capture could not reach; register such an array with register_buffer(..., "
                "persistent=False) or pass it as an input)")


@pytest.mark.parametrize("line, reason, hint", [
    ("    for i in range(x.shape[0]):", "range() over a size runs a Python loop for the example's size",
     "replace the loop by array operations over np.arange(...) of the size, which stays symbolic "
     "(the loop unrolls for n = 8 only)"),
    ("    n = len(x)", "len() of an array is a Python int",
     "use x.shape[0] instead of len(x); shape entries stay symbolic in size arithmetic"),
    ("    return x + holder.T[x.shape[0]]", "used as an index into an array capture did not lift",
     "register that array on the module with register_buffer(name, array, persistent=False), or pass it as "
     "an input, so indexing it with a size is traced"),
    ("    return x * np.float32(x.shape[0])", "converted to a numpy scalar",
     "use the size directly in array arithmetic (x * x.shape[0]) instead of converting it"),
])
def test_index_specialization_hint_by_construct(tmp_path, line, reason, hint):
    src = tmp_path / "m.py"
    src.write_text(f"def f(x):\n{line}\n")
    n = sym("n")
    # the cause capture gives a size CPython asks for as a Python int (SymInt.__index__)
    err = violations.build_violation_error(
        [GuardRecord(sympy.Eq(n, 8), "specialization", INDEX_REASON, SourceLoc(str(src), 2), cause="python_int")],
        {"n": info("n", 1, 100, 8, "x.shape[0]")})
    text = str(err)
    assert f"  - n = x.shape[0] was specialized to 8 ({reason})\n" in text
    assert f"    to keep it dynamic: {hint}\n" in text
    assert ("register_buffer" in text) == ("holder.T" in line)
    assert text.endswith("Suggested fixes:\n  n = 8")


def test_other_specialization_reasons_are_kept(loc):
    n = sym("n")
    err = violations.build_violation_error(
        [GuardRecord(sympy.Eq(n, 8), "specialization", "converted with int()", loc(6))],
        {"n": info("n", 1, 100, 8, "x.shape[0]")})
    assert "was specialized to 8 (converted with int())\n" in str(err) and "to keep it dynamic" not in str(err)


def test_sum_relation_over_dynamic_axes_is_inferred():
    D = Dim.DYNAMIC
    args = (np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 7)))
    spec = {"x": {1: D}, "y": {1: D}, "z": {1: D}}
    ep = tpe.export(_concat_model, *args, dynamic_shapes=spec)
    assert sorted(str(s) for s in ep.range_constraints) == ["x_dim1", "y_dim1"]
    m = ep.module()
    for p, q in ((5, 2), (1, 1), (10, 3)):
        xs, ys, zs = np.ones((2, p)), np.full((2, q), 2.0), np.arange(2.0 * (p + q)).reshape(2, p + q)
        np.testing.assert_array_equal(m(xs, ys, zs), _concat_model(xs, ys, zs))
    with pytest.raises(ConstraintsExceededError):
        m(np.ones((2, 5)), np.ones((2, 2)), np.ones((2, 8)))


def _pos_times(x, y):
    return (x + POS_TABLE[: x.shape[0]]) * y


def test_export_dynamic_positional_spec_infers_equality_and_range():
    spec = ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})
    args = (np.ones((8, 4), np.float32), np.ones((8, 4), np.float32))
    ep = tpe.export(_pos_times, *args, dynamic_shapes=spec)
    assert [(str(s), v.lower, v.upper) for s, v in ep.range_constraints.items()] == [("x_dim0", 1, 512)]
    assert [c.sites for c in ep.equality_constraints] == [(("x", 0), ("y", 0))]
    for n in (3, 512):
        a, b = np.full((n, 4), 2.0, np.float32), np.full((n, 4), 3.0, np.float32)
        np.testing.assert_array_equal(ep.module()(a, b), _pos_times(a, b))
    for n, k in ((3, 4), (513, 513)):
        with pytest.raises(ConstraintsExceededError):
            ep.module()(np.ones((n, 4), np.float32), np.ones((k, 4), np.float32))


def test_what_works_suggests_np_where_only_for_a_branch():
    from tensorplay_export.records import DimInfo
    from tensorplay_export.violations import _auto_advice

    a, b = sympy.symbols("a b", integer=True, positive=True)
    dims = {"a": DimInfo("a", 1, 100, 4, ["x.shape[0]"]), "b": DimInfo("b", 1, 100, 4, ["y.shape[0]"])}
    guard = sympy.Le(a * b, 50)
    assert "np.where" in _auto_advice(guard, dims, "branch")
    text = _auto_advice(guard, dims, "reshape")
    assert "np.where" not in text and "its op requires it: a reshape's element count" in text


def test_a_relation_between_two_named_dims_reads_as_torch_words_it():
    """torch's test_derived_dim_basic: header names the derived dim, the bullet says the two must
    always be related, by the fix line."""
    import re as _re

    dimx, dimy = tpe.Dim("dimx", min=3, max=6), tpe.Dim("dimy", min=4, max=7)
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(lambda x, y: x + y[1:], np.ones(5), np.ones(6), dynamic_shapes=({0: dimx}, {0: dimy}))
    text = str(info.value)
    assert _re.search(r"Constraints violated \(dimy\)!(.*\n)*.*The values of dimy.*must always be related to "
                      r"the values of dimx.*by.*(.*\n)*.*Suggested fixes:(.*\n)*.*dimy = dimx \+ 1", text), text
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, ({0: dimx}, {0: dimy}))
    ep = tpe.export(lambda x, y: x + y[1:], np.ones(5), np.ones(6), dynamic_shapes=spec)
    np.testing.assert_array_equal(ep.module()(np.ones(3), np.ones(4)), np.full(3, 2.0))
