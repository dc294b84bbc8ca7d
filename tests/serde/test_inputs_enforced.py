"""A loaded program enforces the input contract it reports (``_check_inputs_enforced``).

``contract`` and ``diff`` read each input's shape from its ``tpe.check_input`` node; an archive
whose checks were removed or edited apart from that shape is refused, so a derived relation
(``y.shape[0] == 2*dx``) or a static size can never be reported and not kept.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

from conftest import archive_bytes
from test_hostile import PROGRAM, edit, expect_error, node


def _both(x, y):
    return x.sum() + y[::2].sum()


def _only_y(y):
    return y[::2].sum()


@pytest.fixture(scope="module")
def related() -> bytes:
    """x: (dx, 3), y: (2*dx,): y's size is tied by a tpe.assert_dim."""
    dx = Dim("dx", max=32)
    ep = tpe.export(_both, np.ones((4, 3), np.float32), np.ones(8, np.float32),
                    dynamic_shapes={"x": {0: dx}, "y": {0: 2 * dx}})
    return archive_bytes(ep)


@pytest.fixture(scope="module")
def derived() -> bytes:
    """y: (2*dx + 1,) alone: dx is bound from y by a tpe.derived_root."""
    dx = Dim("dx", max=32)
    ep = tpe.export(_only_y, np.ones(9, np.float32), dynamic_shapes={"y": {0: 2 * dx + 1}})
    return archive_bytes(ep)


def _drop(*names):
    def fn(doc):
        doc["graph"]["nodes"] = [n for n in doc["graph"]["nodes"] if n["name"] not in names]
    return fn


def _first(doc, target):
    return next(n for n in doc["graph"]["nodes"] if n["target"] == target)


def test_intact_archives_load_and_keep_their_relations(related, derived):
    ep = tpe.load(io.BytesIO(related))
    assert float(ep.module()(np.ones((4, 3), np.float32), np.ones(8, np.float32))) == 16.0
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((4, 3), np.float32), np.ones(7, np.float32))
    ep = tpe.load(io.BytesIO(derived))
    assert float(ep.module()(np.ones(11, np.float32))) == 6.0
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones(10, np.float32))


def test_a_removed_derived_relation_check_is_refused(related):
    expect_error(edit(related, _drop("assert_dim")), PROGRAM, "reports y.shape[0] as 2 * dx,")


def test_a_removed_input_check_is_refused(related):
    expect_error(edit(related, _drop("check_y", "assert_dim")), PROGRAM, "input 'y' has no tpe.check_input")


def test_a_static_size_the_check_does_not_check_is_refused(related):
    def fn(doc):
        node(doc, "check_x")["args"][2]["v"][1] = None  # (None, 3) -> (None, None): 3 unchecked
    expect_error(edit(related, fn), PROGRAM, "reports x.shape[1] as 3")


def test_a_shape_edited_apart_from_its_check_is_refused(related):
    def fn(doc):
        node(doc, "check_x")["meta"]["shape"]["v"][1] = 4  # reports 4, checks 3
    expect_error(edit(related, fn), PROGRAM, "reports x.shape[1] as 4")


def test_a_rank_edited_apart_from_its_check_is_refused(related):
    def fn(doc):
        node(doc, "check_x")["meta"]["shape"]["v"].append(5)
    expect_error(edit(related, fn), PROGRAM, "another rank")


def test_a_derived_root_checking_another_relation_is_refused(derived):
    def fn(doc):
        root = _first(doc, "tpe.derived_root")
        root["args"][3] = 3  # checks 3*dx + 1, reports 2*dx + 1
    expect_error(edit(derived, fn), PROGRAM, "reports y.shape[0] as 2 * dx + 1,")


def test_a_program_built_without_checks_still_loads(hand_program):
    """No input checks at all (the ExportedProgram constructor): nothing reported, nothing to enforce."""
    loaded = tpe.load(io.BytesIO(archive_bytes(hand_program)))
    assert not any(n.target == "tpe.check_input" for n in loaded.graph.nodes)
    np.testing.assert_array_equal(loaded.module()(np.ones(3))[0], hand_program.module()(np.ones(3))[0])


# -- input checks come first --------------------------------------------------------------------
def _move_after_compute(target):
    """Every ``target`` node moved to just before the output: after the ops that use the input."""
    def fn(doc):
        nodes = doc["graph"]["nodes"]
        moved = [n for n in nodes if n["target"] == target]
        rest = [n for n in nodes if n["target"] != target]
        assert moved
        doc["graph"]["nodes"] = rest[:-1] + moved + rest[-1:]
    return fn


@pytest.mark.parametrize("target", ["tpe.assert_range", "tpe.assert_dim"])
def test_an_input_check_moved_after_the_computation_is_refused(related, target):
    expect_error(edit(related, _move_after_compute(target)), PROGRAM,
                 f"({target}) checks the inputs after node")


def _positive_rows(x):
    kept = x[x > 0]  # a data-dependent size u0
    tpe.check(kept.shape[0] <= x.shape[0])  # a check of u0: after the op that makes it
    return kept.reshape(-1, 1) * 2


def test_checks_of_data_dependent_sizes_follow_their_op_and_load():
    ep = tpe.export(_positive_rows, np.array([1.0, -1.0, 2.0, 3.0]), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    calls = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert calls.index("tpe.check_size") > calls.index("tpe.getitem")
    loaded = tpe.load(io.BytesIO(archive_bytes(ep)))
    np.testing.assert_array_equal(loaded.module()(np.array([2.0, -3.0, 5.0])), [[4.0], [10.0]])


# -- the arguments of tpe.check_input --------------------------------------------------------------
def _set_arg(index, value, name="check_x"):
    def fn(doc):
        node(doc, name)["args"][index] = value
    return fn


@pytest.mark.parametrize("index, value", [
    (3, {"k": "node", "v": "x"}),   # the dtype an array: the first call compared arrays
    (1, 7),
    (4, {"k": "node", "v": "x"}),
])
def test_check_input_arguments_of_the_wrong_kind_are_refused(related, index, value):
    expect_error(edit(related, _set_arg(index, value)), PROGRAM, "tpe.check_input takes the positional arguments (input, path")


def test_a_check_must_name_its_input_by_exactly_its_path(related):
    # errors, `contract` and keyword calls name inputs: a path that is not the placeholder's own
    # (another parameter, no parameter, the two inputs' paths swapped) made them disagree
    for path in ("z", "x[0", "y"):
        expect_error(edit(related, _set_arg(1, path)), PROGRAM,
                     f"node 'check_x' names its input {path!r}, but placeholder 'x' is the root call's input 'x'")

    def swap(doc):
        node(doc, "check_x")["args"][1], node(doc, "check_y")["args"][1] = "y", "x"
    expect_error(edit(related, swap), PROGRAM, "names its input 'y', but placeholder 'x'")

    def reorder(doc):  # the parameters reversed: keyword calls would feed x's array to y
        sig = doc["module_call_graph"][0]["signature"]
        sig["forward_arg_names"].reverse()
        sig["parameters"].reverse()
    expect_error(edit(related, reorder), PROGRAM, "names its input 'x', but placeholder 'x' is the root call's input 'y'")


def test_without_a_root_call_the_path_must_give_the_placeholders_name(related):
    def no_call_graph(path):
        def fn(doc):
            doc["module_call_graph"] = []
            node(doc, "check_x")["args"][1] = path
        return fn
    tpe.load(io.BytesIO(edit(related, no_call_graph("x"))))  # as version 1 wrote it
    expect_error(edit(related, no_call_graph("not_an_input")), PROGRAM,
                 "placeholder 'x' is no input of that path (capture names it 'not_an_input')")


def _keyed(d):
    return d["it's]"] * 2 + d[3]


def test_paths_of_dict_keys_with_quotes_and_ints_load():
    a = np.ones(3)
    ep = tpe.export(_keyed, {"it's]": a, 3: a})
    assert sorted(n.args[1] for n in ep.graph.nodes if n.target == "tpe.check_input") == ['d["it\'s]"]', "d[3]"]
    np.testing.assert_array_equal(tpe.load(io.BytesIO(archive_bytes(ep))).module()({"it's]": a, 3: a}), 3 * a)


def test_a_derived_root_moved_after_the_computation_is_refused(derived):
    # tpe.derived_root reads the check_input node (not the placeholder) and holds no size expression
    expect_error(edit(derived, _move_after_compute("tpe.derived_root")), PROGRAM,
                 "(tpe.derived_root) checks the inputs after node")


@pytest.mark.parametrize("target, index, value", [
    ("tpe.derived_root", 3, 0),        # k = 0: ZeroDivisionError at the first call
    ("tpe.derived_root", 2, 9),        # an axis y does not have: IndexError
    ("tpe.derived_root", 2, "a"),
])
def test_every_runtime_check_takes_its_arguments_of_their_kinds(derived, target, index, value):
    def fn(doc):
        _first(doc, target)["args"][index] = value
    expect_error(edit(derived, fn), PROGRAM, f"{target} takes the positional arguments")


def test_a_check_label_passed_as_a_keyword_is_refused(related):
    def fn(doc):
        check = _first(doc, "tpe.assert_range")
        name = check["args"].pop()
        check["kwargs"] = [["name", name + "\nFORGED LINE"]]
    expect_error(edit(related, fn), PROGRAM, "tpe.assert_range takes the positional arguments")
