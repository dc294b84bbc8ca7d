"""Ports of torch.export scenarios about the programs a dynamic spec gives: a grid check of
admitted sizes before and after save/load against eager numpy, draft_export reports over
dataclass and keyword inputs and data reads, state written by a forward, export_for_training,
calls by keyword.  Conventions as in test_torch_export_dynamic.py.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from test_torch_export_dynamic import agrees, arr, roundtrip, same

TABLE12 = np.arange(12, dtype=np.float64)


def _dx(max=12):
    return Dim("dx", max=max)


# name -> (model, example sizes of its 1-d inputs, spec, set of admitted size tuples on 0..13)
GRID_CASES = {
    "offset": (lambda x, y: x + y[1:], (4, 5), {"x": {0: _dx()}, "y": {0: _dx() + 1}},
               lambda a, b: 1 <= a <= 12 and b == a + 1),
    "scale": (lambda x, y: np.repeat(x, 3) + y, (2, 6), {"x": {0: _dx()}, "y": {0: 3 * _dx()}},
              lambda a, b: 1 <= a <= 12 and b == 3 * a),
    "decreasing": (lambda x, y: np.concatenate([x, y]) * 2, (4, 8),
                   {"x": {0: _dx(11)}, "y": {0: 12 - _dx(11)}}, lambda a, b: 1 <= a <= 11 and a + b == 12),
    "sum_of_roots": (lambda x, y, z: np.concatenate([x, y]) - z, (2, 3, 5),
                     {"x": {0: _dx()}, "y": {0: Dim("dy", max=12)}, "z": {0: _dx() + Dim("dy", max=12)}},
                     lambda a, b, c: 1 <= a <= 12 and 1 <= b <= 12 and c == a + b),
    "auto_sum": (lambda x, y, z: np.concatenate([x, y]) - z, (2, 3, 5),
                 {"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}, "z": {0: Dim.AUTO}},
                 lambda a, b, c: a >= 1 and b >= 1 and c == a + b),
    "auto_divisible": (lambda x: x.reshape(-1, 3).sum(axis=1), (6,), {"x": {0: Dim.AUTO}},
                       lambda a: a >= 1 and a % 3 == 0),
    "auto_table": (lambda x: x + TABLE12[: x.shape[0]], (6,), {"x": {0: Dim.AUTO}}, lambda a: 1 <= a <= 12),
    "auto_stride": (lambda x, y: x[::2] + y, (7, 4), {"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}},
                    lambda a, b: a >= 1 and b == (a + 1) // 2),
    "auto_order": (lambda x, y: x[: y.shape[0]] + y, (5, 3), {"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}},
                   lambda a, b: b >= 1 and a >= b),
    "divisible_root": (lambda x: x.reshape(4, -1), (8,), {"x": {0: 4 * Dim("_k", max=3)}},
                       lambda a: a in (4, 8, 12)),
    "hidden_root": (lambda x, y: x + y[1:], (6, 7), {"x": {0: 2 * Dim("d", max=6)}, "y": {0: 2 * Dim("d", max=6) + 1}},
                    lambda a, b: a in range(2, 13, 2) and b == a + 1),
    "empty_allowed": (lambda x, y: np.concatenate([x, y]).cumsum(), (0, 2),
                      {"x": {0: Dim("a", min=0, max=5)}, "y": {0: Dim("b", min=0, max=5)}},
                      lambda a, b: a <= 5 and b <= 5),
}


@pytest.mark.parametrize("name", sorted(GRID_CASES))
def test_admitted_sizes_on_a_grid_before_and_after_save_load(name):
    model, example, spec, admits = GRID_CASES[name]
    rng = np.random.default_rng(7)
    ep = tpe.export(model, *[rng.standard_normal(n) for n in example], dynamic_shapes=spec)
    programs = (ep.module(), roundtrip(ep).module())
    sizes_range = range(0, 14) if len(example) < 3 else range(0, 8)
    admitted = 0
    for sizes in itertools.product(sizes_range, repeat=len(example)):
        inputs = [rng.standard_normal(n) for n in sizes]
        if admits(*sizes):
            admitted += 1
            want = model(*inputs)
            for prog in programs:
                same(prog(*inputs), want)
        else:
            for prog in programs:
                with pytest.raises(tpe.ConstraintsExceededError):
                    prog(*inputs)
    assert admitted >= 2


# --- draft_export over other input kinds -------------------------------------------------------

@dataclasses.dataclass
class Feats:
    a: np.ndarray
    b: np.ndarray


tpe.register_dataclass(Feats, serialized_type_name="tests.ports.torch_programs.Feats")

TABLE8 = np.arange(8.0)


def test_draft_export_over_a_dataclass_input_in_field_dict_form():
    def model(p):
        return p.a + TABLE8[: p.a.shape[0]] + p.b.sum()

    spec = {"p": {"a": {0: Dim("n")}, "b": None}}
    report = tpe.draft_export(model, Feats(np.ones(3), np.ones(3)), dynamic_shapes=spec)
    assert [f.kind for f in report.failures] == ["constraint_violation"]
    assert "n = Dim('n', max=8)" in str(report)
    agrees(report.exported_program, model, Feats(arr(5).astype(np.float64), np.ones(3)))
    spec2 = tpe.refine_dynamic_shapes_from_suggested_fixes(str(report), spec)
    ep = tpe.export(model, Feats(np.ones(3), np.ones(3)), dynamic_shapes=spec2)
    agrees(ep, model, Feats(np.ones(8), np.ones(3)))


def test_draft_export_with_keyword_inputs():
    def model(x, *, y):
        return x + y[1:]

    spec = {"x": {0: Dim("a")}, "y": {0: Dim("b")}}
    report = tpe.draft_export(model, arr(3), y=arr(4), dynamic_shapes=spec)
    assert "b = a + 1" in str(report)
    ep = tpe.export(model, arr(3), y=arr(4),
                    dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(str(report), spec))
    agrees(ep, model, arr(9), y=arr(10))


def test_draft_export_takes_the_examples_value_of_an_int_read():
    def model(x):
        return np.ones(int(x.sum()))

    report = tpe.draft_export(model, np.ones(3), dynamic_shapes={"x": {0: Dim("n")}})
    assert [f.kind for f in report.failures] == ["data_dependent"]
    assert "int(x.sum())" in report.failures[0].source.text
    dp = report.exported_program
    agrees(dp, model, np.ones(3))
    agrees(dp, model, np.array([0.5, 2.5]))  # another input with the same read value
    with pytest.raises(tpe.ConstraintsExceededError):
        dp.module()(np.ones(4))


def test_draft_program_check_of_an_item_read_names_the_value():
    def model(x):
        k = x.max().item()
        return x * k

    report = tpe.draft_export(model, np.ones(3), dynamic_shapes={"x": {0: Dim("n")}})
    with pytest.raises(tpe.ConstraintsExceededError, match="4.0"):
        report.exported_program.module()(np.arange(5.0))


def test_draft_export_of_a_model_that_raises():
    report = tpe.draft_export(lambda x: x + np.where, np.ones(3))
    assert report.exported_program is None
    assert report.failures and report.failures[0].source is not None


def test_draft_export_of_a_spec_naming_no_input():
    report = tpe.draft_export(lambda x: x + 1, np.ones(3), dynamic_shapes={"z": {0: Dim("n")}})
    assert [f.kind for f in report.failures] == ["spec_error"]
    assert "'z'" in report.failures[0].message
    with pytest.raises(ValueError):
        report.raise_on_failure()


# --- state, training export, calls ------------------------------------------------------------

class Counter(tpe.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", np.zeros(1))

    def forward(self, x):
        self.seen += x.shape[0]
        return x * 2


def test_buffer_written_with_a_dynamic_size():
    c = Counter()
    ep = tpe.export(c, np.ones((3, 2)), dynamic_shapes={"x": {0: Dim("b")}})
    m = ep.module()
    m(np.ones((5, 2)))
    m(np.ones((4, 2)))
    np.testing.assert_array_equal(m.seen, [9.0])
    np.testing.assert_array_equal(c.seen, [0.0])  # the program owns its state (README)
    m2 = roundtrip(ep).module()
    m2(np.ones((7, 2)))
    np.testing.assert_array_equal(m2.seen, [7.0])


def test_export_for_training_keeps_the_dynamic_contract():
    c = Counter()
    ep = tpe.export_for_training(c, np.ones((3, 2)), dynamic_shapes={"x": {0: Dim("b", max=10)}})
    same(ep.module()(np.ones((6, 2))), np.ones((6, 2)) * 2)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((11, 2)))


def test_program_called_by_keyword_binds_as_eager():
    def model(x, y):
        return x - y

    n = Dim("n")
    ep = tpe.export(model, arr(3), arr(3), dynamic_shapes={"x": {0: n}, "y": {0: n}})
    x, y = arr(4), arr(4)
    same(ep.module()(y=y, x=x), model(x, y))
    same(roundtrip(ep).module()(x, y=y), model(x, y))
    with pytest.raises(TypeError):
        ep.module()(x, y, x)


# --- ops whose sizes come from two AUTO inputs: admitted exactly where eager runs --------------

OPS_OVER_TWO_SIZES = {
    "negative_slice_by_other": lambda x, y: x[-y.shape[0]:] * 2,
    "split_then_broadcast": lambda x, y: np.array_split(x, 3)[0] + y.sum(),
    "pad_by_other": lambda x, y: np.pad(x, (y.shape[0], 1)),
    "roll_by_other": lambda x, y: np.roll(x, y.shape[0]),
    "stack_of_clamped_slices": lambda x, y: np.stack([x[: y.shape[0]], y[: x.shape[0]]]),
    "linspace_of_a_size": lambda x, y: np.linspace(0, 1, x.shape[0]) + x,
    "eye_of_a_size": lambda x, y: np.eye(x.shape[0]) @ x,
    "tril_of_two_sizes": lambda x, y: np.tril(np.ones((x.shape[0], y.shape[0]))),
    "outer_flattened": lambda x, y: np.outer(x, y).reshape(-1),
    "kron": lambda x, y: np.kron(x, y),
    "convolve_full": lambda x, y: np.convolve(x, y, mode="full"),
    "convolve_valid": lambda x, y: np.convolve(x, y, mode="valid"),
    "second_difference": lambda x, y: np.diff(x, n=2) + y.sum(),
    "strided_by_other": lambda x, y: x[::-1].cumsum()[:: y.shape[0]],
    "searchsorted": lambda x, y: np.searchsorted(np.sort(x), y),
    "take_modulo": lambda x, y: np.take(x, np.arange(y.shape[0]) % x.shape[0]),
    "meshgrid_sum": lambda x, y: np.meshgrid(x, y)[0] + np.meshgrid(x, y)[1],
    "histogram_bins_from_size": lambda x, y: np.histogram(x, bins=y.shape[0] + 1)[0],
    "top_k_by_sort": lambda x, y: np.sort(x)[-y.shape[0]:],
    "partition_needs_k_below_n": lambda x, y: np.partition(x, y.shape[0] - 1)[: y.shape[0]],
}


@pytest.mark.parametrize("name", sorted(OPS_OVER_TWO_SIZES))
def test_auto_program_admits_exactly_where_eager_runs(name):
    model = OPS_OVER_TWO_SIZES[name]
    rng = np.random.default_rng(3)
    ep = tpe.export(model, rng.standard_normal(6), rng.standard_normal(2),
                    dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}})
    programs = (ep.module(), roundtrip(ep).module())
    admitted = 0
    for a, b in itertools.product(range(1, 10), repeat=2):
        x, y = rng.standard_normal(a), rng.standard_normal(b)
        try:
            want = model(x, y)
        except (ValueError, IndexError):
            for prog in programs:
                with pytest.raises(tpe.ConstraintsExceededError):
                    prog(x, y)
            continue
        admitted += 1
        for prog in programs:
            same(prog(x, y), want)
    assert admitted >= 40


# --- draft_export failure kinds, as torch's draft-export tests list them ------------------------

def test_draft_export_runs_an_op_without_a_rule_opaquely_at_the_example_size():
    def model(x):
        return np.apply_along_axis(np.sum, 0, x) + 1

    report = tpe.draft_export(model, np.ones((3, 2)), dynamic_shapes={"x": {0: Dim("n")}})
    assert sorted(f.kind for f in report.failures) == ["constraint_violation", "unsupported_op"]
    assert report.fixes_blocked_by == ["unsupported_op"]
    dp = report.exported_program
    x = np.random.default_rng(0).standard_normal((3, 2))
    same(dp.module()(x), model(x))
    with pytest.raises(tpe.ConstraintsExceededError):
        dp.module()(np.ones((4, 2)))
    with pytest.raises(tpe.UnsupportedOpError):
        tpe.export(model, np.ones((3, 2)))


def test_draft_export_reports_a_read_in_a_loop_once_with_its_count():
    def model(x):
        out = x
        for i in range(3):
            out = out + int(x[i])
        return out

    report = tpe.draft_export(model, np.arange(4.0), dynamic_shapes={"x": {0: Dim("n", min=3)}})
    assert [(f.kind, f.count) for f in report.failures] == [("data_dependent", 3)]
    dp = report.exported_program
    agrees(dp, model, np.array([0.0, 1.0, 2.0, 9.0, 9.0]))
    with pytest.raises(tpe.ConstraintsExceededError):
        dp.module()(np.array([1.0, 1.0, 2.0, 3.0]))


def test_draft_export_assumes_an_unbacked_size_read_as_an_int():
    def model(x):
        k = int(np.nonzero(x)[0].shape[0])
        return np.ones(k)

    report = tpe.draft_export(model, np.array([1, 0, 1]), dynamic_shapes={"x": {0: Dim("n")}})
    assert [f.kind for f in report.failures] == ["data_dependent"]
    dp = report.exported_program
    agrees(dp, model, np.array([1, 1, 0, 0]))
    with pytest.raises(tpe.ConstraintsExceededError):
        dp.module()(np.array([1, 1, 1]))
    with pytest.raises(tpe.DataDependentError):
        tpe.export(model, np.array([1, 0, 1]), dynamic_shapes={"x": {0: Dim("n")}})


def test_draft_export_of_an_input_mutation_writes_back_as_eager():
    def model(x):
        x += 1
        return x.sum()

    report = tpe.draft_export(model, np.ones(3), dynamic_shapes={"x": {0: Dim("n")}})
    assert report.successful()
    a, b = np.zeros(5), np.zeros(5)
    same(report.exported_program.module()(a), model(b))
    np.testing.assert_array_equal(a, b)
