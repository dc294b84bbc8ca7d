"""refine_dynamic_shapes_from_suggested_fixes: every fix form, spec shapes, sharing, errors."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay_export.specs.dims import AdditionalInputs, Dim, ShapesCollection, _DerivedDim
from tensorplay_export.specs.refine import (
    ConstFix, RangeFix, RelationFix, parse_fix_line, parse_suggested_fixes,
    refine_dynamic_shapes_from_suggested_fixes as refine,
)


def message(*fix_lines: str, tail: str = "") -> str:
    body = "\n".join(f"  {line}" for line in fix_lines)
    return ("Constraints violated (seq)!\n"
            "  - Not all values of seq = x.shape[1] in the specified range seq <= 1024 satisfy the guard seq <= 512\n"
            "    counterexample: seq = 513\n"
            "    at model.py:12  `return x + POS[:s]`\n"
            f"Suggested fixes:\n{body}\n{tail}")


# --- parsing --------------------------------------------------------------------------------

@pytest.mark.parametrize("line, want", [
    ("seq = Dim('seq', max=512)", RangeFix("seq", None, 512, "seq = Dim('seq', max=512)")),
    ("seq = Dim('seq', min=2, max=512)", RangeFix("seq", 2, 512, "seq = Dim('seq', min=2, max=512)")),
    ('seq = Dim("seq", min=0)', RangeFix("seq", 0, None, 'seq = Dim("seq", min=0)')),
    ("S = Dim('S')", RangeFix("S", None, None, "S = Dim('S')")),
    ("lambda = Dim('lambda', max=3)", RangeFix("lambda", None, 3, "lambda = Dim('lambda', max=3)")),
    ("batch = 4", ConstFix("batch", 4, "batch = 4")),
    ("dy = dx", RelationFix("dy", "dx", 1, 0, "dy = dx")),
    ("dx = dy + 1", RelationFix("dx", "dy", 1, 1, "dx = dy + 1")),
    ("dx = dy - 1", RelationFix("dx", "dy", 1, -1, "dx = dy - 1")),
    ("dy = 2*dx", RelationFix("dy", "dx", 2, 0, "dy = 2*dx")),
    ("dy = 2*dx + 1", RelationFix("dy", "dx", 2, 1, "dy = 2*dx + 1")),
    ("n = 4*_n", RelationFix("n", "_n", 4, 0, "n = 4*_n")),
    ("n = _n*4", RelationFix("n", "_n", 4, 0, "n = _n*4")),
])
def test_parse_forms(line, want):
    assert parse_fix_line(line) == want


@pytest.mark.parametrize("line, msg", [
    ("seq = Dim('other', max=5)", "named 'other' but assigned to 'seq'"),
    ("seq = Dim('seq', mx=5)", "cannot read 'mx=5'"),
    ("seq = Dim('seq', max=5, max=6)", "cannot read 'max=6'"),
    ("seq = Dim('seq', max=5.5)", "cannot read"),
    ("dy = dx * dz", "cannot apply fix line"),
    ("dy = 2*dx*3", "cannot apply fix line"),
    ("dy = dx + 1.5", "cannot apply fix line"),
    ("dy = dx - dx", "dims cancel out"),
    ("dy = 2 - dy", "through itself"),
    ("dy = dx + + dz", "cannot apply fix line"),
    ("dy == dx", "cannot apply fix line"),
    ("__import__('os').system('true')", "cannot apply fix line"),
    ("dy = Dim", "malformed"),
])
def test_parse_malformed(line, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        parse_fix_line(line)


def test_block_stops_at_blank_line_and_ignores_counterexample():
    text = message("seq = Dim('seq', max=512)", tail="\nmore = text that is not a fix\n")
    assert [f.name for f in parse_suggested_fixes(text)] == ["seq"]


def test_missing_or_empty_block():
    with pytest.raises(ValueError, match="no 'Suggested fixes:' block"):
        refine("Constraints violated (seq)!\n    counterexample: seq = 513\n", {"x": {1: Dim("seq")}})
    with pytest.raises(ValueError, match="has no fix lines"):
        refine("Suggested fixes:\n\nseq = 4\n", {"x": {1: Dim("seq")}})


# --- applying -------------------------------------------------------------------------------

def test_range_on_dict_spec_keeps_other_dims():
    batch, seq = Dim("batch", max=64), Dim("seq", max=1024)
    spec = {"x": {0: batch, 1: seq}}
    out = refine(message("seq = Dim('seq', max=512)"), spec)
    assert out == {"x": {0: batch, 1: Dim("seq", max=512)}}
    assert out["x"][0] is batch
    assert spec["x"][1] is seq  # the input spec is not mutated


def test_shared_dims_stay_shared_tuple_and_nested():
    b = Dim("batch", max=32)
    spec = ({0: b}, {"scale": {0: b}, "bias": None, "more": [(b, None)]})
    out = refine(message("batch = Dim('batch', max=16)"), spec)
    new = out[0][0]
    assert new == Dim("batch", max=16)
    assert out[1]["scale"][0] is new and out[1]["more"][0][0] is new
    assert isinstance(out, tuple) and isinstance(out[1]["more"], list) and isinstance(out[1]["more"][0], tuple)
    assert out[1]["bias"] is None


def test_constant():
    b = Dim("batch", max=64)
    out = refine(message("batch = 4"), {"x": {0: b}, "y": [b, None]})
    assert out == {"x": {0: 4}, "y": [4, None]}


def test_equality_makes_one_shared_object():
    dx, dy = Dim("dx", max=100), Dim("dy", max=100)
    out = refine(message("dy = dx"), {"x": {0: dx}, "y": {0: dy}})
    assert out["x"][0] is dx and out["y"][0] is dx


def test_offset_relation_with_refined_root():
    dx, dy = Dim("dx", max=100), Dim("dy", max=100)
    out = refine(message("dx = dy + 1", "dy = Dim('dy', max=99)"), {"x": {0: dx}, "y": {0: dy}})
    new_dy = out["y"][0]
    assert new_dy == Dim("dy", max=99)
    assert isinstance(out["x"][0], _DerivedDim) and out["x"][0].root is new_dy
    assert (out["x"][0].scale, out["x"][0].offset) == (1, 1)


def test_multiple_relation_range_after_relation_line():
    dx, dy = Dim("dx", max=100), Dim("dy", max=100)
    out = refine(message("dy = 2*dx", "dx = Dim('dx', max=50)"), [{0: dx}, {0: dy, 1: dy}])
    assert out[0][0] == Dim("dx", max=50)
    d = out[1][0]
    assert isinstance(d, _DerivedDim) and d.root is out[0][0] and (d.scale, d.offset) == (2, 0)
    assert out[1][1] is d


def test_new_root_divisibility():
    n = Dim("n", max=1000)
    out = refine(message("_n = Dim('_n', max=250)", "n = 4*_n"), {"x": {0: n}})
    d = out["x"][0]
    assert isinstance(d, _DerivedDim) and d.root == Dim("_n", max=250) and d.scale == 4


def test_derived_dim_in_spec_is_rebased():
    dx = Dim("dx", max=100)
    spec = {"x": {0: dx}, "y": {0: dx + 1}, "z": {0: dx + 1}}
    out = refine(message("dx = Dim('dx', max=20)"), spec)
    assert out["y"][0].root is out["x"][0] and out["y"][0].offset == 1 and out["z"][0] is out["y"][0]
    out = refine(message("dx = 5"), spec)
    assert out == {"x": {0: 5}, "y": {0: 6}, "z": {0: 6}}
    out = refine(message("_dx = Dim('_dx', max=10)", "dx = 2*_dx"), spec)
    assert out["y"][0].root == Dim("_dx", max=10) and (out["y"][0].scale, out["y"][0].offset) == (2, 1)


def test_chained_relations_fold_to_root():
    a, b, c = Dim("a"), Dim("b"), Dim("c")
    out = refine(message("c = 2*b + 1", "b = a + 3"), {"x": (a, b, c)})
    d = out["x"][2]
    assert d.root is a and (d.scale, d.offset) == (2, 7)


def test_relation_to_constant_root():
    out = refine(message("a = 4", "b = 2*a"), {"x": (Dim("a"), Dim("b"))})
    assert out == {"x": (4, 8)}


def test_shapes_collection_spec():
    x = np.zeros((3, 4))
    seq = Dim("seq")
    sc = ShapesCollection()
    sc[x] = {1: seq}
    out = refine(message("seq = Dim('seq', max=8)"), sc)
    assert isinstance(out, ShapesCollection) and out[x] == {1: Dim("seq", max=8)}


def test_hints_and_statics_untouched():
    spec = {"x": {0: Dim.AUTO, 1: Dim.DYNAMIC, 2: None, 3: Dim("k")}, "y": None}
    out = refine(message("k = 16"), spec)
    assert out == {"x": {0: Dim.AUTO, 1: Dim.DYNAMIC, 2: None, 3: 16}, "y": None}


# --- errors ---------------------------------------------------------------------------------

def test_unknown_dim():
    with pytest.raises(ValueError, match="names dim 'zz', which is not in dynamic_shapes .its named dims: seq"):
        refine(message("zz = Dim('zz', max=5)"), {"x": {1: Dim("seq")}})


def test_unknown_relation_root():
    with pytest.raises(ValueError, match="relates 'seq' to 'q'"):
        refine(message("seq = 2*q"), {"x": {1: Dim("seq")}})


def test_conflicting_and_cyclic_lines():
    spec = {"x": (Dim("a"), Dim("b"))}
    with pytest.raises(ValueError, match="both define 'a'"):
        refine(message("a = 4", "a = 5"), spec)
    with pytest.raises(ValueError, match="cycle"):
        refine(message("a = b + 1", "b = a + 1"), spec)


def test_negative_sizes_refused():
    spec = {"x": (Dim("a"), Dim("b"))}
    with pytest.raises(ValueError, match="negative"):
        refine(message("a = -1"), spec)
    with pytest.raises(ValueError, match="negative size"):
        refine(message("a = 0", "b = a - 1"), spec)


def test_additional_inputs_refused():
    with pytest.raises(ValueError, match="AdditionalInputs"):
        refine(message("a = 4"), AdditionalInputs())


def test_malformed_line_in_message():
    with pytest.raises(ValueError, match="cannot apply fix line 'seq <= 512'"):
        refine(message("seq <= 512"), {"x": {1: Dim("seq")}})


# --- Dim.DYNAMIC axes, named by their site ---------------------------------------------------

def test_dynamic_axis_by_site_name_dict_nested_and_per_axis_tuple():
    spec = {"x": {0: Dim.DYNAMIC, 1: Dim.DYNAMIC}, "extras": {"scale": (Dim.DYNAMIC, None)}}
    got = refine(message("x_dim1 = Dim('x_dim1', max=512)", "extras_scale_dim0 = 4"), spec)
    assert got == {"x": {0: Dim.DYNAMIC, 1: Dim("x_dim1", max=512)}, "extras": {"scale": (4, None)}}


def test_dynamic_axis_in_positional_spec_and_relation_to_named_dim():
    batch = Dim("batch", max=8)
    spec = ({0: batch}, {0: Dim.DYNAMIC})
    got = refine(message("y_dim0 = batch"), spec)
    assert got[1][0] is got[0][0] is batch


def test_dynamic_root_of_a_relation_becomes_one_shared_dim():
    spec = {"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}}
    got = refine(message("y_dim0 = x_dim0"), spec)
    assert got["x"][0] == Dim("x_dim0") and got["y"][0] is got["x"][0]


def test_dynamic_axis_ambiguous_in_positional_spec_says_why():
    with pytest.raises(ValueError, match="write dynamic_shapes as a dict keyed by argument name"):
        refine(message("y_dim0 = Dim('y_dim0', max=4)"), ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}))
    # with a dict spec the same message applies
    got = refine(message("y_dim0 = Dim('y_dim0', max=4)"), {"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}})
    assert got == {"x": {0: Dim.DYNAMIC}, "y": {0: Dim("y_dim0", max=4)}}


def test_positional_placements_that_agree_are_applied():
    # x_dim0 and y_dim0 could be either axis, but every placement gives the same spec
    got = refine(message("x_dim0 = Dim('x_dim0', max=512)", "y_dim0 = x_dim0"),
                 ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}))
    assert got[0][0] == Dim("x_dim0", max=512) and got[1][0] is got[0][0]


def test_dynamic_axis_in_shapes_collection():
    x = np.zeros((3, 4))
    sc = ShapesCollection()
    sc[x] = {1: Dim.DYNAMIC}
    got = refine(message("x_dim1 = Dim('x_dim1', max=9)"), sc)
    assert got[x] == {1: Dim("x_dim1", max=9)}


def test_no_block_message_is_neutral_and_says_what_to_do():
    with pytest.raises(ValueError) as info:
        refine("Constraints violated (a)!\n  something", {"x": {0: Dim("a")}})
    assert str(info.value).startswith("nothing to apply: the message has no 'Suggested fixes:' block.")


def test_refine_reads_decreasing_relations_and_relations_over_several_dims():
    dx, dy, dz = Dim("dx"), Dim("dy"), Dim("dz")
    spec = {"x": {0: dx}, "y": {0: dy}, "z": {0: dz}}
    out = refine(
        "Suggested fixes:\n  dx = Dim('dx', max=31)\n  dy = 32 - dx", spec)
    assert out["y"][0] == 32 - Dim("dx", max=31) and out["y"][0].root is out["x"][0]
    assert (out["y"][0].scale, out["y"][0].offset) == (-1, 32)
    out = refine("Suggested fixes:\n  dy = 64 - 2*dx", spec)
    assert (out["y"][0].root, out["y"][0].scale, out["y"][0].offset) == (dx, -2, 64)
    out = refine("Suggested fixes:\n  dz = dx + dy", spec)
    assert out["z"][0].root is None and out["z"][0].terms == ((dx, 1), (dy, 1))
    assert out["x"][0] is dx and out["y"][0] is dy
    out = refine("Suggested fixes:\n  dz = dx - dy + 1", spec)
    assert out["z"][0].terms == ((dx, 1), (dy, -1)) and out["z"][0].offset == 1
    # rebased on refined roots, and folded to a constant when the roots cancel out
    out = refine(
        "Suggested fixes:\n  dx = Dim('dx', max=9)", {"x": {0: dx}, "y": {0: dy}, "z": {0: dx + dy}})
    assert out["z"][0].terms[0][0] is out["x"][0] and out["x"][0].max == 9
    out = refine("Suggested fixes:\n  dy = 32 - dx\n  dz = dx + dy", spec)
    assert out["z"][0] == 32
    assert parse_fix_line("dy = 32 - dx").line == "dy = 32 - dx"
    import tensorplay_export.specs.refine as refine_mod
    for form in ("dy = 32 - dx", "64 - 2*dx", "dz = dx + dy", "dx - dy + 1"):
        assert form in refine_mod.__doc__


def test_combine_rounds_composes_relations_over_several_dims():
    from tensorplay_export.specs.refine import combine_fix_rounds as _combine

    assert _combine([["dx = 2*_dx"], ["dz = dx + dy", "_dx = Dim('_dx', max=9)"]],
                              {"dx", "dy", "dz"}) == ["_dx = Dim('_dx', max=9)", "dx = 2*_dx", "dz = 2*_dx + dy"]
    assert _combine([["dy = 32 - dx"], ["dz = dx + dy"]], {"dx", "dy", "dz"}) == ["dy = 32 - dx", "dz = 32"]


@pytest.mark.parametrize("guard", ["dx == (dy + 1) // 2", "dx == Max(1, dy)", "dx <= 8"])
def test_no_fixes_text_quotes_a_guard_with_parentheses_whole(guard):
    text = ("Constraints violated (dx, dy)!\n"
            f"  - Not all values of dx = x.shape[0] in the specified range dx >= 1 satisfy the guard {guard} "
            "(a slice of y (step 2))\n"
            "No suggested fixes: no fix form makes these guards hold\n")
    with pytest.raises(ValueError) as info:
        refine(text, {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}})
    assert f"makes {guard} hold" in str(info.value)
    # without a reason in parentheses the guard is kept as it is
    with pytest.raises(ValueError) as info:
        refine(text.replace(" (a slice of y (step 2))", ""), {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}})
    assert f"makes {guard} hold" in str(info.value)


# --- registered dataclass instances as specs ---------------------------------------------------

import dataclasses  # noqa: E402

import tensorplay_export as tpe  # noqa: E402


@dataclasses.dataclass
class _Pair:
    a: np.ndarray
    b: np.ndarray


tpe.register_dataclass(_Pair, serialized_type_name="tests.test_refine._Pair")
_T8 = np.arange(8.0)


def _pair_model(p):
    return p.a + _T8[: p.a.shape[0]], p.b[1:] * p.a


def _check_pair_program(ep, top):
    """``ep`` of ``_pair_model`` admits a in [1, 8] with b = a + 1 (eager's results) and refuses the rest."""
    for n in (1, 3, 8):
        p = _Pair(np.arange(n * 1.0), np.arange(n + 1.0))
        for want, have in zip(_pair_model(p), ep.module()(p)):
            np.testing.assert_array_equal(have, want)
    for a, b in ((9, 10), (top, top + 1), (4, 4)):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(_Pair(np.ones(a), np.ones(b)))


def test_dataclass_spec_instance_is_refined_field_by_field():
    spec = {"p": _Pair(a={0: Dim("a")}, b={0: Dim("b")})}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_pair_model, _Pair(np.ones(4), np.ones(5)), dynamic_shapes=spec)
    assert "one refine step will not be enough" not in str(info.value)
    got = refine(str(info.value), spec)
    inner = got["p"]
    assert type(inner) is _Pair and inner.a[0].max == 8
    assert inner.b[0] == inner.a[0] + 1
    ep = tpe.export(_pair_model, _Pair(np.ones(4), np.ones(5)), dynamic_shapes=got)
    _check_pair_program(ep, 12)


def test_dataclass_spec_of_dynamic_axes_infers_the_contract():
    # Dim.DYNAMIC takes what the model needs (torch.export's rule): a <= 8 and b = a + 1
    spec = {"p": _Pair(a={0: Dim.DYNAMIC}, b={0: Dim.DYNAMIC})}
    ep = tpe.export(_pair_model, _Pair(np.ones(4), np.ones(5)), dynamic_shapes=spec)
    assert sorted((str(s), v.lower, v.upper) for s, v in ep.range_constraints.items()) == [("p_a_dim0", 1, 8)]
    _check_pair_program(ep, 12)


def test_dataclass_spec_with_a_named_dim_beside_a_dynamic_one_refines_what_remains_on_the_named():
    # a := b - 1 first (the DYNAMIC axis is constrained first); a's range [1, 8] then bounds b
    spec = (_Pair(a={0: Dim.DYNAMIC}, b={0: Dim("b")}),)
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_pair_model, _Pair(np.ones(4), np.ones(5)), dynamic_shapes=spec)
    assert "Constraints violated (b)!" in str(info.value)
    got = refine(str(info.value), spec)
    assert type(got[0]) is _Pair and got[0].a == {0: Dim.DYNAMIC} and got[0].b[0] == Dim("b", min=2, max=9)
    ep = tpe.export(_pair_model, _Pair(np.ones(4), np.ones(5)), dynamic_shapes=got)
    _check_pair_program(ep, 12)


def test_dataclass_spec_keeps_untouched_fields_and_dims():
    keep = Dim("keep")
    spec = {"p": _Pair(a={0: Dim("a")}, b={0: keep}), "q": None}
    got = refine(message("a = Dim('a', max=8)"), spec)
    assert got["p"] == _Pair(a={0: Dim("a", max=8)}, b={0: keep}) and got["p"].b[0] is keep
    assert spec["p"].a[0] == Dim("a")  # the input spec is not changed in place


# --- Dim.DYNAMIC in a positional spec: the message says which entry holds each input --------------

def test_positional_dynamic_axes_take_the_relations_and_ranges_the_model_needs():
    def model(a, w, b):
        return a + _T8[: a.shape[0]], b[1:] * a, w * 2

    spec = [{0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}, (Dim.DYNAMIC,)]
    ep = tpe.export(model, np.ones(4), np.ones(3), np.ones(5), dynamic_shapes=spec)
    assert {str(s): (v.lower, v.upper) for s, v in ep.range_constraints.items()} == \
        {"a_dim0": (1, 8), "w_dim0": (1, float("inf"))}
    for n, m in ((1, 7), (8, 2), (5, 40)):
        args = (np.arange(n * 1.0), np.arange(m * 1.0), np.arange(n + 1.0))
        for want, have in zip(model(*args), ep.module()(*args)):
            np.testing.assert_array_equal(have, want)
    for n, k in ((9, 10), (4, 4)):   # a beyond the table, b not a + 1
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(np.ones(n), np.ones(3), np.ones(k))


def test_positional_dynamic_axis_specialized_is_placed_by_the_entry_the_message_gives():
    def model(a, w, b):
        return a * 2, w * 2, b + _T8[:4]      # b is pinned to 4

    spec = [{0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}, (Dim.DYNAMIC,)]
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones(4), np.ones(4), np.ones(4), dynamic_shapes=spec)
    text = str(info.value)
    assert "b_dim0 = b.shape[0] was specialized to 4" in text
    assert "In a tuple/list dynamic_shapes its input is entry 2." in text
    assert "will not be enough" not in text  # export's own proof placed the fix too
    got = refine(text, spec)
    assert type(got) is list and got[0] == got[1] == {0: Dim.DYNAMIC} and got[2] == (4,)
    ep = tpe.export(model, np.ones(4), np.ones(4), np.ones(4), dynamic_shapes=got)
    args = (np.arange(7.0), np.arange(2.0), np.arange(4.0))
    for want, have in zip(model(*args), ep.module()(*args)):
        np.testing.assert_array_equal(have, want)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones(4), np.ones(4), np.ones(5))


def test_entry_notes_pick_between_positional_placements():
    lines = ("x_dim0 = Dim('x_dim0', max=8)",)
    note = ("    x.shape[0] is Dim.DYNAMIC (x_dim0 in [1, inf]); the fix line for x_dim0 below replaces that "
            "Dim.DYNAMIC (...), or Dim.STATIC. In a tuple/list dynamic_shapes its input is entry {}.\n")
    spec = ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})
    for entry in (0, 1):
        text = message(*lines).replace("Suggested fixes:", note.format(entry) + "Suggested fixes:")
        got = refine(text, spec)
        assert got[entry] == {0: Dim("x_dim0", max=8)} and got[1 - entry] == {0: Dim.DYNAMIC}
    # a dict spec names its inputs: the entry is not needed and not used
    text = message(*lines).replace("Suggested fixes:", note.format(1) + "Suggested fixes:")
    assert refine(text, {"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}})["x"] == {0: Dim("x_dim0", max=8)}


# -- divisibility of a Dim.DYNAMIC axis: the modulus is part of the contract -----------------------
@pytest.mark.parametrize("spec", [({0: Dim.DYNAMIC},), {"y": {0: Dim.DYNAMIC}}], ids=["tuple", "dict"])
def test_divisibility_of_a_dynamic_axis_is_inferred_for_tuple_and_dict_specs(spec):
    def model(y):
        return y.reshape(-1, 4).sum(1)

    y = np.ones((8,), np.float32)
    ep = tpe.export(model, y, dynamic_shapes=spec)
    assert [(v.lower, v.upper) for v in ep.range_constraints.values()] == [(4, float("inf"))]
    for n in (4, 12, 40):
        yn = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(ep.module()(yn), model(yn))
    for n in (6, 2):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(np.ones((n,), np.float32))


def test_two_positional_dynamic_axes_each_keep_their_own_modulus():
    def model(x, y):
        return x.reshape(-1, 4).sum(1) + y.reshape(-1, 2).sum()

    x, y = np.ones((8,), np.float32), np.ones((12,), np.float32)
    ep = tpe.export(model, x, y, dynamic_shapes=({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}))
    for n, m in ((8, 12), (16, 4), (4, 2)):
        a, b = np.arange(n, dtype=np.float32), np.arange(m, dtype=np.float32)
        np.testing.assert_array_equal(ep.module()(a, b), model(a, b))
    for n, m in ((6, 4), (8, 3)):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(np.ones((n,), np.float32), np.ones((m,), np.float32))


