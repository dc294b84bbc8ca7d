"""Issue 13 items 7 and 8: decreasing derived dims (``32 - dx``) and dims over several roots (``dx + dy``).

Each program is checked over a grid in both directions against eager numpy:
sizes eager numpy runs are admitted and match, the others raise
``ConstraintsExceededError``.
"""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import ConstraintsExceededError, Dim, export

T = np.arange(32 * 3, dtype=np.float64).reshape(32, 3)


def concat_t(x, y):
    return np.concatenate([x, y]) + T


def concat_z(x, y, z):
    return np.concatenate([x, y]) + z


def _rows(n, seed=0):
    return np.random.default_rng(seed + n).standard_normal((n, 3))


def _eager_ok(fn, *arrays):
    try:
        return fn(*arrays)
    except ValueError:
        return None


def check_grid(ep, fn, shapes):
    """Every shape tuple in ``shapes``: admitted iff eager numpy runs, with the same values."""
    m = ep.module()
    admitted = refused = 0
    for rows in shapes:
        arrays = [_rows(r, i) for i, r in enumerate(rows)]
        want = _eager_ok(fn, *arrays)
        if want is None:
            with pytest.raises(ConstraintsExceededError):
                m(*arrays)
            refused += 1
        else:
            np.testing.assert_allclose(m(*arrays), want)
            admitted += 1
    assert admitted and refused
    return admitted, refused


GRID2 = [(a, b) for a in range(0, 35, 3) for b in range(0, 35, 3)] + [(a, 32 - a) for a in range(0, 33)]
GRID3 = [(a, b, c) for a in (1, 2, 5, 9) for b in (1, 3, 4, 8) for c in range(2, 18)]  # z of 1 row broadcasts: outside dx + dy


def test_decreasing_derived_dim_binds_and_checks():
    dx = Dim("dx", max=31)
    ep = export(concat_t, _rows(10), _rows(22), dynamic_shapes={"x": {0: dx}, "y": {0: 32 - dx}})
    assert {str(s): (r.lower, r.upper) for s, r in ep.range_constraints.items()} == {"dx": (1, 31)}
    assert "tpe_assert_dim(check_y, 'y', 0, 32 - dx" in ep.graph_module.code
    # admitted: dx in [1, 31] and dy = 32 - dx; (0, 32) and (32, 0) run eagerly but are outside dx's range
    m = ep.module()
    for bad in [(0, 32), (32, 0), (5, 26)]:
        with pytest.raises(ConstraintsExceededError):
            m(_rows(bad[0]), _rows(bad[1]))
    for a in range(1, 32):
        np.testing.assert_allclose(m(_rows(a), _rows(32 - a)), concat_t(_rows(a), _rows(32 - a)))


def test_decreasing_root_bound_only_through_the_derived_axis():
    dx = Dim("dx", min=16, max=31)
    T64 = np.ones((64, 3))

    def f(y):
        return np.concatenate([y, y]) + T64[:2 * y.shape[0]]

    ep = export(f, _rows(20), dynamic_shapes={"y": {0: 64 - 2 * dx}})
    assert "tpe_derived_root(check_y, 'y', 0, -2, 64, 16, 31" in ep.graph_module.code
    m = ep.module()
    for b in range(0, 66):
        if b % 2 == 0 and 2 <= b <= 32:
            np.testing.assert_allclose(m(_rows(b)), f(_rows(b)))
        else:
            with pytest.raises(ConstraintsExceededError):
                m(_rows(b))


def test_dim_over_two_roots_binds_and_checks():
    dx, dy = Dim("dx"), Dim("dy")
    ep = export(concat_z, _rows(10), _rows(22), _rows(32),
                dynamic_shapes={"x": {0: dx}, "y": {0: dy}, "z": {0: dx + dy}})
    assert sorted(str(s) for s in ep.range_constraints) == ["dx", "dy"]
    check_grid(ep, concat_z, GRID3)


def test_dim_over_two_roots_with_a_negative_coefficient():
    dx, dy = Dim("dx"), Dim("dy")

    def f(x, y, z):
        return np.concatenate([z, y]) + x  # dz + dy == dx

    ep = export(f, _rows(10), _rows(3), _rows(7),
                dynamic_shapes={"x": {0: dx}, "y": {0: dy}, "z": {0: dx - dy}})
    m = ep.module()
    np.testing.assert_allclose(m(_rows(9), _rows(4), _rows(5)), f(_rows(9), _rows(4), _rows(5)))
    with pytest.raises(ConstraintsExceededError, match=r"z.shape\[0\] = 6 must equal dx - dy = 5"):
        m(_rows(9), _rows(4), _rows(6))


def test_dim_over_two_roots_needs_its_roots_bound_elsewhere():
    dx, dy = Dim("dx"), Dim("dy")
    with pytest.raises(ConstraintsExceededError, match="dy is bound by no other input axis"):
        export(lambda x, z: x.sum() + z.sum(), _rows(4), _rows(6), dynamic_shapes={"x": {0: dx}, "z": {0: dx + dy}})
    with pytest.raises(ConstraintsExceededError, match=r"z.shape\[0\] = 12, but it is dx \+ dy = 13"):
        export(concat_z, _rows(10), _rows(3), _rows(12),
               dynamic_shapes={"x": {0: dx}, "y": {0: dy}, "z": {0: dx + dy}})


def test_constraints_of_the_new_forms():
    from tensorplay_export.specs.normalize import normalize_dynamic_shapes

    dx, dy = Dim("dx", max=31), Dim("dy")
    leaves = normalize_dynamic_shapes(concat_z, (_rows(10), _rows(22), _rows(32)), {},
                                      {"x": {0: dx}, "y": {0: 32 - dx}, "z": {0: dx - dy + 1}})
    (cy,), (cz,) = leaves[1].constraints(), leaves[2].constraints()
    assert (cy.root, cy.scale, cy.offset, cy.name, cy.min, cy.max) == ("dx", -1, 32, "32 - dx", 1, 31)
    assert (cz.root, cz.terms, cz.offset, cz.name) == (None, {"dx": 1, "dy": -1}, 1, "dx - dy + 1")


# --- end to end: export fails, one refine, export succeeds (issue 13 items 7 and 8) -------------

def test_decreasing_relation_end_to_end_in_one_refine():
    from tensorplay_export import ConstraintViolationError, refine_dynamic_shapes_from_suggested_fixes

    spec = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}}
    with pytest.raises(ConstraintViolationError) as info:
        export(concat_t, _rows(10), _rows(22), dynamic_shapes=spec)
    text = str(info.value)
    # the dim later in input order is the derived one (dy = 32 - dx, not dx = 32 - dy)
    assert text.endswith("Suggested fixes:\n  dx = Dim('dx', max=31)\n  dy = 32 - dx")
    new = refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert new["y"][0].root is new["x"][0] and (new["y"][0].scale, new["y"][0].offset) == (-1, 32)
    ep = export(concat_t, _rows(10), _rows(22), dynamic_shapes=new)
    assert {str(s): (r.lower, r.upper) for s, r in ep.range_constraints.items()} == {"dx": (1, 31)}
    # both directions over a grid: admitted iff eager runs, except the empty x or y eager also runs
    # (dx >= 1 is declared: Dim's default min)
    grid = [g for g in GRID2 if g[0] >= 1 and g[1] >= 1]
    admitted, refused = check_grid(ep, concat_t, grid)
    assert admitted == 31


def test_decreasing_relation_tie_follows_input_order():
    from tensorplay_export import ConstraintViolationError

    def swapped(y, x):
        return np.concatenate([x, y]) + T

    with pytest.raises(ConstraintViolationError) as info:
        export(swapped, _rows(22), _rows(10), dynamic_shapes={"y": {0: Dim("dy")}, "x": {0: Dim("dx")}})
    assert str(info.value).endswith("Suggested fixes:\n  dy = Dim('dy', max=31)\n  dx = 32 - dy")


def test_relation_over_two_roots_end_to_end_in_one_refine():
    from tensorplay_export import ConstraintViolationError, refine_dynamic_shapes_from_suggested_fixes

    spec = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}, "z": {0: Dim("dz")}}
    args = (_rows(10), _rows(22), _rows(32))
    with pytest.raises(ConstraintViolationError) as info:
        export(concat_z, *args, dynamic_shapes=spec)
    text = str(info.value)
    assert text.endswith("Suggested fixes:\n  dz = dx + dy") and "Dim.AUTO" not in text
    new = refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = export(concat_z, *args, dynamic_shapes=new)
    assert sorted(str(s) for s in ep.range_constraints) == ["dx", "dy"]
    check_grid(ep, concat_z, GRID3)


# --- the contract and the archive ---------------------------------------------------------------

def _programs():
    dx, dy = Dim("dx", max=31), Dim("dy")
    ep_t = export(concat_t, _rows(10), _rows(22), dynamic_shapes={"x": {0: dx}, "y": {0: 32 - dx}})
    ep_z = export(concat_z, _rows(10), _rows(22), _rows(32),
                  dynamic_shapes={"x": {0: Dim("dx")}, "y": {0: dy}, "z": {0: Dim("dx") + dy}})
    return ep_t, ep_z


def test_contract_states_the_new_relations_and_diff_decides_them():
    from tensorplay_export.face.contract import contract_of, diff_contracts

    ep_t, ep_z = _programs()
    ct, cz = contract_of(ep_t), contract_of(ep_z)
    assert ct.relations() == ["y.shape[0] == 32 - dx"] and ct.site_range(ct.inputs[1][2][0]) == (1, 31)
    assert cz.relations() == ["z.shape[0] == dx + dy"] and cz.site_range(cz.inputs[2][2][0]) == (2, None)
    assert diff_contracts(cz, cz).narrowed is False
    narrow = export(concat_z, _rows(10), _rows(22), _rows(32),
                    dynamic_shapes={"x": {0: Dim("dx", max=20)}, "y": {0: Dim("dy")},
                                    "z": {0: Dim("dx", max=20) + Dim("dy")}})
    d = diff_contracts(cz, contract_of(narrow))
    assert d.narrowed is True
    assert diff_contracts(contract_of(narrow), cz).narrowed is False
    # a root seen only through a decreasing form
    dx = Dim("dx", min=16, max=31)
    T64 = np.ones((64, 3))
    ep = export(lambda y: np.concatenate([y, y]) + T64[:2 * y.shape[0]], _rows(20),
                dynamic_shapes={"y": {0: 64 - 2 * dx}})
    c = contract_of(ep)
    assert c.site_range(c.inputs[0][2][0]) == (2, 32) and diff_contracts(c, c).narrowed is False


def test_archive_round_trip_of_the_new_dims(tmp_path):
    import json
    import zipfile

    import tensorplay_export as tpe

    for ep, fn, grid in zip(_programs(), (concat_t, concat_z),
                            ([g for g in GRID2 if g[0] >= 1 and g[1] >= 1], GRID3)):
        path = tmp_path / f"{fn.__name__}.pt2"
        tpe.save(ep, path)
        with zipfile.ZipFile(path) as zf:
            assert int(zf.read("version")) >= 2  # the linear form came with format 2
            doc = json.loads(zf.read("models/model/program.json"))
        text = json.dumps(doc)
        assert '"k": "DerivedDim", "offset": ' in text and '"terms": [[{"k": "Dim"' in text
        loaded = tpe.load(path)
        assert loaded.dynamic_shapes == ep.dynamic_shapes
        check_grid(loaded, fn, grid)


def test_derived_dim_json_forms():
    from tensorplay_export.serde.values import Decoder, _encode_dim

    dx, dy = Dim("dx", max=31), Dim("dy")
    assert _encode_dim(2 * dx + 1) == {"k": "DerivedDim", "root": _encode_dim(dx), "scale": 2, "offset": 1}
    assert _encode_dim(32 - dx) == {"k": "DerivedDim", "terms": [[_encode_dim(dx), -1]], "offset": 32}
    assert _encode_dim(dx - dy + 1) == {"k": "DerivedDim", "terms": [[_encode_dim(dx), 1], [_encode_dim(dy), -1]],
                                        "offset": 1}
    for d in (2 * dx + 1, 32 - dx, dx + dy, dx - dy + 1):
        assert Decoder("m").value(_encode_dim(d)) == d
    from tensorplay_export.errors import ArchiveError

    for bad in ({"k": "DerivedDim", "terms": [], "offset": 0},
                {"k": "DerivedDim", "terms": [[_encode_dim(dx), 1.5]], "offset": 0},
                {"k": "DerivedDim", "terms": [[_encode_dim(dx), 1], [_encode_dim(dx), -1]], "offset": 0},
                {"k": "DerivedDim", "terms": [[_encode_dim(dx), 1]], "offset": 0, "root": None}):
        with pytest.raises(ArchiveError):
            Decoder("m").value(bad)


def test_cli_diff_reads_the_new_relations_from_archives(tmp_path, capsys):
    import tensorplay_export as tpe
    from tensorplay_export.face.cli import main

    _, ep_z = _programs()
    narrow = export(concat_z, _rows(10), _rows(22), _rows(32),
                    dynamic_shapes={"x": {0: Dim("dx", max=20)}, "y": {0: Dim("dy")},
                                    "z": {0: Dim("dx", max=20) + Dim("dy")}})
    tpe.save(ep_z, tmp_path / "old.pt2")
    tpe.save(narrow, tmp_path / "new.pt2")
    assert main(["diff", str(tmp_path / "old.pt2"), str(tmp_path / "new.pt2")]) == 1
    assert "x.shape[0] = 21, y.shape[0] = 1, z.shape[0] = 22" in capsys.readouterr().out
    assert main(["diff", str(tmp_path / "new.pt2"), str(tmp_path / "old.pt2")]) == 0
    assert main(["contract", str(tmp_path / "old.pt2")]) == 0
    assert "z.shape[0] == dx + dy" in capsys.readouterr().out


def test_example_outside_a_decreasing_dim_gets_a_widened_range_or_says_why_not():
    from tensorplay_export import refine_dynamic_shapes_from_suggested_fixes

    spec = {"y": {0: 32 - Dim("dx", min=5, max=20)}}
    with pytest.raises(ConstraintsExceededError) as info:
        export(lambda y: y.sum(), _rows(10), dynamic_shapes=spec)
    assert str(info.value).endswith("Suggested fixes:\n  dx = Dim('dx', min=5, max=22)")
    new = refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    export(lambda y: y.sum(), _rows(10), dynamic_shapes=new)
    with pytest.raises(ConstraintsExceededError) as info:   # 40 rows would need dx = -8
        export(lambda y: y.sum(), _rows(40), dynamic_shapes=spec)
    assert "is not 32 - dx for any integer dx >= 0" in str(info.value) and "min=-8" not in str(info.value)


def test_a_distance_bound_between_two_dims_gets_the_widest_box():
    table = np.arange(60.0).reshape(30, 2)

    def model(x, y):
        k, big = min(x.shape[0], y.shape[0]), max(x.shape[0], y.shape[0])
        return x[:k] + y[:k] + table[big - k]          # needs |n - m| <= 29

    spec = {"x": {0: Dim("n", max=40)}, "y": {0: Dim("m", max=40)}}
    args = np.ones((5, 2)), np.ones((9, 2))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, *args, dynamic_shapes=spec)
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, *args, dynamic_shapes=refined)
    assert {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()} == {"n": (1, 30), "m": (1, 30)}
    for n, m in [(20, 25), (9, 5), (30, 30), (1, 30), (30, 1)]:
        x, y = np.full((n, 2), 2.0), np.full((m, 2), 3.0)
        np.testing.assert_array_equal(ep.module()(x, y), model(x, y))


def test_a_derived_dim_has_torch_fn_over_one_root():
    import pytest

    from tensorplay_export import Dim

    dx, dy = Dim("dx"), Dim("dy")
    assert (dx + 4).fn(5) == 9 and (2 * dx - 1).fn(3) == 5 and (32 - dx).fn(2) == 30
    with pytest.raises(TypeError, match="several roots"):
        (dx + dy).fn


def test_an_example_disagreeing_with_a_derived_dim_says_what_it_got_and_needs():
    """torch's test_derived_dim_basic: "expected ... to be equal to 2*dimx, where dimx = 5, but got 6"."""
    import re

    import numpy as np
    import pytest

    import tensorplay_export as tpe
    from tensorplay_export import Dim

    dimx = Dim("dimx", min=3, max=6)
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        tpe.export(lambda x, y: x[1:] + y[2:], np.ones(5), np.ones(6), dynamic_shapes=({0: dimx}, {0: 2 * dimx}))
    text = str(info.value)
    assert re.search(r"expected y.shape\[0\] to be equal to 2\*dimx, where dimx = 5, but got 6", text), text
    assert "it would need 10" in text
