"""Inputs that share memory, when the program writes into one of them: eager numpy would see
the write through the other (``f(x, x)``, overlapping views), the program computes each from its
own value, so the call is refused with what to pass instead.  Programs that write no input
take aliased inputs as they are."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

SPEC = {"a": {0: Dim("n", max=16)}, "b": {0: Dim("m", max=16)}}


def writes_a_reads_b(a, b):
    a += 1.0
    return b * 1.0


def reads_both(a, b):
    return a + b


def test_a_written_input_sharing_memory_with_another_is_refused():
    ep = tpe.export(writes_a_reads_b, np.zeros(4), np.zeros(4), dynamic_shapes=SPEC)
    m = ep.module()
    x = np.zeros(4)
    with pytest.raises(ValueError, match=r"^inputs a and b share memory, and the program writes into a: .*"
                                         r"pass separate arrays, e.g. b.copy\(\)$"):
        m(x, x)
    big = np.zeros(8)
    with pytest.raises(ValueError, match="share memory"):
        m(big[:4], big[2:6])           # overlapping views
    assert not big.any()               # refused before anything was written
    a, b = big[:4], big[4:8]           # views of one buffer that do not overlap: fine
    np.testing.assert_array_equal(m(a, b), np.zeros(4))
    np.testing.assert_array_equal(big, [1, 1, 1, 1, 0, 0, 0, 0])


def test_aliased_inputs_of_a_program_that_writes_none_run():
    n = Dim("n", max=16)
    ep = tpe.export(reads_both, np.zeros(4), np.zeros(4), dynamic_shapes={"a": {0: n}, "b": {0: n}})
    x = np.arange(5.0)
    np.testing.assert_array_equal(ep.module()(x, x), reads_both(x, x))


# --- aliased input containers: one list under two keys ---------------------------------------
# Inputs are flattened leaf by leaf (as torch.export flattens pytrees), so the program takes each
# leaf as its own array: aliasing between the entries is not kept.


def reads_both_entries(d):
    return d["a"][0] * 2 + d["b"][1]


def writes_through_a(d):
    x = d["a"][0]
    x += 1.0
    return d["b"][0] * 1.0


def test_one_list_under_two_keys_exports_and_the_program_takes_aliased_or_separate_lists():
    n = Dim("n", max=16)
    shared = [np.ones((3, 2)), np.arange(6.0).reshape(3, 2)]
    ep = tpe.export(reads_both_entries, {"a": shared, "b": shared},
                    dynamic_shapes={"d": {"a": [{0: n}, {0: n}], "b": [{0: n}, {0: n}]}})
    assert [s.arg.name for s in ep.graph_signature.input_specs] == ["d_a_0", "d_a_1", "d_b_0", "d_b_1"]
    again = [np.full((5, 2), 2.0), np.arange(10.0).reshape(5, 2)]
    np.testing.assert_array_equal(ep.module()({"a": again, "b": again}), reads_both_entries({"a": again, "b": again}))
    other = {"a": [np.ones((5, 2)), np.zeros((5, 2))], "b": [np.zeros((5, 2)), np.full((5, 2), 7.0)]}
    np.testing.assert_array_equal(ep.module()(other), reads_both_entries(other))


def test_a_write_through_one_of_two_aliased_entries_is_refused_at_export_naming_both_paths():
    shared = [np.zeros((3, 2))]
    with pytest.raises(ValueError, match=r"^the example inputs d\['a'\]\[0\] and d\['b'\]\[0\] share memory .*"
                                         r"the model writes into d\['a'\]\[0\].*Export with separate arrays"):
        tpe.export(writes_through_a, {"a": shared, "b": shared})
    assert not shared[0].any()  # the user's example is left as it was
    ep = tpe.export(writes_through_a, {"a": [np.zeros((3, 2))], "b": [np.zeros((3, 2))]})
    with pytest.raises(ValueError, match=r"^inputs d\['a'\]\[0\] and d\['b'\]\[0\] share memory"):
        ep.module()({"a": shared, "b": shared})


def test_draft_export_reports_a_write_through_one_of_two_aliased_entries():
    shared = [np.zeros((3, 2))]
    report = tpe.draft_export(writes_through_a, {"a": shared, "b": shared})
    (failure,) = report.failures
    assert failure.kind == "mismatch" and failure.message.startswith(
        "the example inputs d['a'][0] and d['b'][0] share memory")
