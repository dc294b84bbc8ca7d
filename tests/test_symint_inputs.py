"""Dynamic int inputs (torch's SymInt inputs): an int leaf whose spec entry is a Dim.

torch test/export/test_export.py::test_symint_input_basic and its relatives: an
int input marked ``Dim.DYNAMIC`` / ``Dim.AUTO`` / a named ``Dim`` is a size input
of the program (a ``SymIntArgument`` USER_INPUT), checked at run time (an int,
inside its range), usable as a size, tied to array axes by a shared Dim.
Every program is checked against eager numpy at values other than the example.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import ConstraintsExceededError, ConstraintViolationError
from tensorplay_export.face.contract import contract_of


def _user_specs(ep):
    return [type(s.arg).__name__ for s in ep.graph_signature.input_specs if s.kind == tpe.InputKind.USER_INPUT]


def _same(got, want):
    """Equal values of exactly the same types (a Python int stays an int; arrays: dtype and shape)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert type(got) is type(want), (got, want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want


def mul(x, y):
    return x * y


@pytest.mark.parametrize("spec", [{"x": Dim.DYNAMIC, "y": Dim.AUTO}, {"x": Dim.DYNAMIC, "y": Dim.DYNAMIC},
                                  {"x": Dim("n", min=1, max=100), "y": Dim.AUTO}])
def test_symint_input_basic(spec):
    ep = tpe.export(mul, 4, 5, dynamic_shapes=spec)
    assert _user_specs(ep) == ["SymIntArgument", "SymIntArgument"]
    m = ep.module()
    for x, y in [(3, 6), (4, 5), (1, 1), (97, 13)]:
        _same(m(x, y), mul(x, y))
    assert m(3, 6) == 18


def test_named_dim_range_is_checked_and_named():
    n = Dim("n", min=1, max=100)
    ep = tpe.export(mul, 4, 5, dynamic_shapes={"x": n})
    assert {s.name: (int(v.lower), v.upper) for s, v in ep.range_constraints.items()} == {"n": (1, 100)}
    m = ep.module()
    _same(m(100, 5), 500)
    with pytest.raises(ConstraintsExceededError, match=r"x = 101 is outside n in \[1, 100\]"):
        m(101, 5)
    with pytest.raises(ConstraintsExceededError, match=r"x = 0 is outside n"):
        m(0, 5)
    # y has no Dim: static, the program is specialized to it (today's behaviour)
    with pytest.raises(ConstraintsExceededError, match=r"y = 6.*5"):
        m(3, 6)


def test_value_must_be_an_int():
    ep = tpe.export(mul, 4, 5, dynamic_shapes={"x": Dim.DYNAMIC, "y": Dim.DYNAMIC})
    m = ep.module()
    with pytest.raises(ConstraintsExceededError, match="x must be an int.*bool"):
        m(True, 5)
    with pytest.raises(ConstraintsExceededError, match="y must be an int.*float"):
        m(3, 2.0)
    with pytest.raises(ConstraintsExceededError, match="x must be an int"):
        m(np.array([3]), 5)
    # a numpy integer is an int, as numpy's own integer semantics take it
    assert m(np.int64(7), np.int32(3)) == 21


def test_static_int_input_keeps_specializing():
    ep = tpe.export(mul, 4, 5, dynamic_shapes={"x": None})
    assert _user_specs(ep) == ["ConstantArgument", "ConstantArgument"]
    assert ep.module()(4, 5) == 20
    with pytest.raises(ConstraintsExceededError, match="4"):
        ep.module()(3, 5)


def test_float_input_cannot_be_dynamic():
    with pytest.raises(TypeError, match="only int inputs can be dynamic"):
        tpe.export(mul, 2.5, 3, dynamic_shapes={"x": Dim.DYNAMIC})
    with pytest.raises(TypeError, match="only int inputs can be dynamic"):
        tpe.export(mul, 2.5, 3, dynamic_shapes={"x": Dim("f")})


def test_int_spec_is_the_dim_not_axes():
    with pytest.raises(ValueError, match="the Dim itself, not a dict of axes"):
        tpe.export(mul, 4, 5, dynamic_shapes={"x": {0: Dim("n")}})


def sizes(x, n):
    return np.zeros(n) + x[:n].sum(), x.reshape(n, -1), n * 2


def test_int_used_as_size_with_array_inputs():
    ep = tpe.export(sizes, np.arange(12.0), 3, dynamic_shapes={"x": {0: Dim.AUTO}, "n": Dim.DYNAMIC})
    m = ep.module()
    for length, n in [(12, 3), (12, 4), (20, 5), (7, 7), (30, 6)]:
        x = np.arange(float(length))
        _same(m(x, n), sizes(x, n))
    # the reshape's divisibility is a guard the program checks, naming both sizes
    with pytest.raises(ConstraintsExceededError, match="n"):
        m(np.arange(10.0), 3)


def test_int_refined_by_use_auto_specializes():
    # n used where only n == 2 works: Dim.AUTO accepts the guard, the program is specialized to 2
    def f(x, n):
        return x.reshape(n, 3)

    ep = tpe.export(f, np.arange(6.0), 2, dynamic_shapes={"n": Dim.AUTO})
    _same(ep.module()(np.arange(6.0) + 1, 2), f(np.arange(6.0) + 1, 2))
    with pytest.raises(ConstraintsExceededError, match="n = 3, but the program was exported specialized to n = 2"):
        ep.module()(np.arange(6.0), 3)


def test_int_refined_by_use_auto_range():
    def f(x, n):
        if n > 2:
            return x[: n - 2]
        return x

    ep = tpe.export(f, np.arange(10.0), 5, dynamic_shapes={"x": {0: Dim.AUTO}, "n": Dim.AUTO})
    (sym, vr), = [(s, v) for s, v in ep.range_constraints.items() if str(s) != "s0"]
    assert int(vr.lower) == 3
    for n in (3, 6, 12):
        x = np.arange(12.0)
        _same(ep.module()(x, n), f(x, n))
    with pytest.raises(ConstraintsExceededError, match="n = 2 is outside"):
        ep.module()(np.arange(12.0), 2)


def prefix(x, k):
    return x[:k] * 2, k + 1


def test_int_tied_to_an_array_axis():
    n = Dim("n")
    ep = tpe.export(prefix, np.arange(6.0), 6, dynamic_shapes={"x": {0: n}, "k": n})
    m = ep.module()
    for size in (1, 6, 9, 40):
        x = np.arange(float(size))
        _same(m(x, size), prefix(x, size))
    with pytest.raises(ConstraintsExceededError, match=r"k = 8 must equal x.shape\[0\] = 9 \(dim n\)"):
        m(np.arange(9.0), 8)


def test_int_derived_from_an_array_axis():
    n = Dim("n", max=100)
    ep = tpe.export(prefix, np.arange(6.0), 8, dynamic_shapes={"x": {0: n}, "k": n + 2})
    for size in (1, 5, 50):
        x = np.arange(float(size))
        _same(ep.module()(x, size + 2), prefix(x, size + 2))
    with pytest.raises(ConstraintsExceededError, match="k = 5 must equal n \\+ 2 = 7"):
        ep.module()(np.arange(5.0), 5)


def test_array_axis_derived_from_an_int():
    n = Dim("n", min=0, max=100)

    def f(x, k):
        return x + k, np.ones(k)

    ep = tpe.export(f, np.arange(9.0), 4, dynamic_shapes={"x": {0: 2 * n + 1}, "k": n})
    for k in (0, 1, 4, 20):
        x = np.arange(2.0 * k + 1)
        _same(ep.module()(x, k), f(x, k))
    with pytest.raises(ConstraintsExceededError, match=r"x.shape\[0\] = 8 must equal 2\*n \+ 1"):
        ep.module()(np.arange(8.0), 4)


def test_int_only_through_a_derived_dim():
    n = Dim("n", min=1, max=50)
    ep = tpe.export(lambda k: np.zeros(k), 6, dynamic_shapes={"k": 2 * n})
    for k in (2, 10, 100):
        _same(ep.module()(k), np.zeros(k))
    with pytest.raises(ConstraintsExceededError, match="k = 7 is not 2\\*n for any integer n"):
        ep.module()(7)
    with pytest.raises(ConstraintsExceededError, match="k = 102 is outside 2\\*n for n in \\[1, 50\\]"):
        ep.module()(102)


def branchy(x, k):
    if k > 10:
        return x * k
    return x + k


def test_guard_violation_on_named_int_fixed_in_one_refine_step():
    k = Dim("k", max=100)
    spec = {"k": k}
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(branchy, np.arange(3.0), 8, dynamic_shapes=spec)
    msg = str(info.value)
    assert "k <= 10" in msg and "k = Dim('k', max=10)" in msg
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(msg, spec)
    ep = tpe.export(branchy, np.arange(3.0), 8, dynamic_shapes=refined)
    for v in (1, 3, 10):
        _same(ep.module()(np.arange(3.0), v), branchy(np.arange(3.0), v))
    with pytest.raises(ConstraintsExceededError, match=r"k = 11 is outside k in \[1, 10\]"):
        ep.module()(np.arange(3.0), 11)


def test_int_outputs_stay_python_ints():
    ep = tpe.export(lambda n: (n, n + 1, n // 2, n * 3 - 1), 4, dynamic_shapes=(Dim.DYNAMIC,))
    assert [type(s.arg).__name__ for s in ep.graph_signature.output_specs] == ["SymIntArgument"] * 4
    for n in (1, 7, 50):
        _same(ep.module()(n), (n, n + 1, n // 2, n * 3 - 1))


def test_call_exported_unflatten_run_decompositions():
    n = Dim("n", min=1, max=100)
    ep = tpe.export(prefix, np.arange(6.0), 4, dynamic_shapes={"x": {0: Dim.AUTO}, "k": n})
    x = np.arange(9.0)
    want = prefix(x, 5)
    _same(tpe.ExportedProgram.call_exported(ep)(x, 5), want)
    _same(tpe.unflatten(ep)(x, 5), want)
    _same(ep.run_decompositions().module()(x, 5), want)
    with pytest.raises(ConstraintsExceededError, match="k = 101 is outside n"):
        tpe.ExportedProgram.call_exported(ep)(x, 101)


def test_reexport_of_the_module_keeps_the_int_dynamic():
    n = Dim("n", max=50)

    def f(x, k):
        return x[:k] + k

    ep = tpe.export(f, np.arange(10.0), 4, dynamic_shapes={"x": {0: Dim.AUTO}, "k": n})
    ep2 = tpe.export(ep.module(), np.arange(10.0), 4, dynamic_shapes={"x": {0: Dim.AUTO}, "k": n})
    assert _user_specs(ep2) == ["TensorArgument", "SymIntArgument"]
    for size, k in [(12, 7), (3, 9), (60, 50)]:
        x = np.arange(float(size))
        _same(ep2.module()(x, k), f(x, k))
    with pytest.raises(ConstraintsExceededError, match="k = 51 is outside n"):
        ep2.module()(np.arange(3.0), 51)


def test_save_load_round_trip(tmp_path):
    n = Dim("n", min=1, max=100)
    ep = tpe.export(sizes, np.arange(12.0), 3, dynamic_shapes={"x": {0: Dim.AUTO}, "n": n})
    path = tmp_path / "symint.tpe"
    tpe.save(ep, str(path))
    loaded = tpe.load(str(path))
    assert _user_specs(loaded) == ["TensorArgument", "SymIntArgument"]
    assert {str(s): (int(v.lower), v.upper) for s, v in loaded.range_constraints.items()} == \
        {str(s): (int(v.lower), v.upper) for s, v in ep.range_constraints.items()}
    for length, k in [(12, 4), (30, 5), (100, 100)]:
        x = np.arange(float(length))
        _same(loaded.module()(x, k), sizes(x, k))
    with pytest.raises(ConstraintsExceededError, match="n = 101 is outside n"):
        loaded.module()(np.arange(101.0), 101)
    with pytest.raises(ConstraintsExceededError, match="n must be an int"):
        loaded.module()(np.arange(12.0), 3.0)


def test_contract_shows_the_int_input_and_its_range(tmp_path):
    n = Dim("n", min=1, max=100)
    ep = tpe.export(prefix, np.arange(6.0), 4, dynamic_shapes={"x": {0: Dim.AUTO}, "k": n})
    c = contract_of(ep)
    assert c.int_inputs == [("k", next(s for s in ep.range_constraints if str(s) == "n"))]
    text = c.describe()
    assert "  k: int = n" in text and "  n in [1, 100]" in text
    again = type(c).from_json(c.to_json())
    assert again.int_inputs == c.int_inputs and again.ranges == c.ranges
    auto = contract_of(tpe.export(mul, 4, 5, dynamic_shapes={"x": Dim.AUTO, "y": None}))
    assert "(s0 = x, Dim.AUTO)" in auto.describe()


def test_cli_contract_on_an_archive(tmp_path):
    import subprocess
    import sys

    n = Dim("n", min=2, max=64)
    ep = tpe.export(prefix, np.arange(6.0), 4, dynamic_shapes={"x": {0: Dim.AUTO}, "k": n})
    path = tmp_path / "c.tpe"
    tpe.save(ep, str(path))
    out = subprocess.run([sys.executable, "-m", "tensorplay_export", "contract", str(path)],
                         capture_output=True, text=True, check=True).stdout
    assert "k: int = n" in out and "n in [2, 64]" in out


def test_tied_int_saves_and_loads(tmp_path):
    n = Dim("n")
    ep = tpe.export(prefix, np.arange(6.0), 6, dynamic_shapes={"x": {0: n}, "k": n})
    tpe.save(ep, str(tmp_path / "t.tpe"))
    loaded = tpe.load(str(tmp_path / "t.tpe"))
    x = np.arange(11.0)
    _same(loaded.module()(x, 11), prefix(x, 11))
    with pytest.raises(ConstraintsExceededError, match=r"k = 10 must equal x.shape\[0\] = 11"):
        loaded.module()(x, 10)


def test_additional_inputs_make_a_varying_int_dynamic():
    def f(x, k):
        return x[:k] + k

    sets = tpe.AdditionalInputs()
    sets.add((np.arange(10.0), 4))
    sets.add((np.arange(12.0), 5))
    ep = tpe.export(f, np.arange(10.0), 4, dynamic_shapes=sets)
    assert _user_specs(ep) == ["TensorArgument", "SymIntArgument"]
    sets.verify(ep)
    for size, k in [(7, 3), (12, 5), (30, 29)]:
        x = np.arange(float(size))
        _same(ep.module()(x, k), f(x, k))
    # an int equal to an array axis in every set shares its dim, as two such axes do
    tied = tpe.AdditionalInputs()
    tied.add((np.arange(4.0), 4))
    tied.add((np.arange(5.0), 5))
    ep = tpe.export(f, np.arange(4.0), 4, dynamic_shapes=tied)
    with pytest.raises(ConstraintsExceededError, match="must equal x.shape"):
        ep.module()(np.arange(6.0), 5)


def test_size_probe_asks_about_int_inputs():
    from tensorplay_export.program.input_checks import SizeProbe

    n = Dim("n", min=1, max=100)
    ep = tpe.export(prefix, np.arange(6.0), 4, dynamic_shapes={"x": {0: Dim.AUTO}, "k": n})
    probe = SizeProbe(ep)
    assert set(probe.int_sites) == {"k"}
    assert probe({}) is None and probe({"k": 100}) is None
    assert "k = 101 is outside n" in str(probe({"k": 101}))
    assert "outside n" in str(probe({"n": 0}))


def test_draft_export_with_an_int_input():
    def f(x, k):
        return x[:k] + k

    report = tpe.draft_export(f, np.arange(10.0), 4, dynamic_shapes={"x": {0: Dim.AUTO}, "k": Dim.DYNAMIC})
    ep = report.exported_program
    x = np.arange(9.0)
    _same(ep.module()(x, 6), f(x, 6))


def test_contract_diff_decides_on_int_inputs():
    from tensorplay_export.face.contract import diff_contracts

    def export_with(hi):
        return contract_of(tpe.export(prefix, np.arange(6.0), 4,
                                      dynamic_shapes={"x": {0: Dim.AUTO}, "k": Dim("n", max=hi)}))

    wide, narrow = export_with(100), export_with(50)
    d = diff_contracts(wide, narrow)
    assert d.narrowed is True and d.witness == {"k": 100}
    assert any("k (n): narrowed max 100 -> 50" in c.what for c in d.changes)
    assert diff_contracts(narrow, wide).narrowed is False
    same = diff_contracts(wide, export_with(100))
    assert same.narrowed is False and not same.changes


def test_negative_example_for_a_dynamic_int_is_refused_clearly():
    with pytest.raises(ValueError, match="dynamic int input is a size"):
        tpe.export(mul, -3, 5, dynamic_shapes={"x": Dim.DYNAMIC})
    # an example 0 gives a range from 0, as an axis of size 0 does
    ep = tpe.export(lambda x, k: x * k, np.arange(3.0), 0, dynamic_shapes={"k": Dim.DYNAMIC})
    assert [int(v.lower) for v in ep.range_constraints.values()] == [0]
    _same(ep.module()(np.arange(3.0), 0), np.arange(3.0) * 0)
    _same(ep.module()(np.arange(3.0), 9), np.arange(3.0) * 9)


@pytest.mark.parametrize("spec", [{"k": Dim.DYNAMIC(max=3)}, (None, Dim.DYNAMIC(max=3)), {"k": Dim("n", max=3)}])
def test_example_outside_a_ranged_int_dim_is_fixed_in_one_refine_step(spec):
    with pytest.raises(ConstraintsExceededError) as info:
        tpe.export(prefix, np.arange(6.0), 5, dynamic_shapes=spec)
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(prefix, np.arange(6.0), 5, dynamic_shapes=refined)
    assert [(int(v.lower), int(v.upper)) for v in ep.range_constraints.values()] == [(1, 5)]
    for k in (1, 5):
        _same(ep.module()(np.arange(6.0), k), prefix(np.arange(6.0), k))
    with pytest.raises(ConstraintsExceededError, match="k = 6 is outside"):
        ep.module()(np.arange(6.0), 6)
