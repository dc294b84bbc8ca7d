"""tpe.check on array values (not sizes) during capture: one clear TypeError of tpe.check's own,
saying what is wrong and what to do for values, at the model's line once; not capture's
"runs eagerly, convert the size with int(n)" wrapper, whose advice is about sizes."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.facts import CheckOnValuesError
from tensorplay_export.errors import CaptureError


def on_values(x):
    tpe.check(x.sum() > 0)
    return x


def test_check_on_values_is_its_own_type_error_not_a_capture_wrapper():
    with pytest.raises(CheckOnValuesError) as info:
        tpe.export(on_values, np.ones(3, np.float32), dynamic_shapes={"x": {0: Dim("n")}})
    err = info.value
    assert isinstance(err, TypeError) and not isinstance(err, CaptureError)
    text = str(err)
    assert "int(n)" not in text and "symbolic while export traces" not in text
    assert text.count("tpe.check(x.sum() > 0)") == 1  # the model's line, once
    assert "np.where" in text


def test_draft_reports_it_once_as_a_capture_error():
    report = tpe.draft_export(on_values, np.ones(3, np.float32), dynamic_shapes={"x": {0: Dim("n")}})
    text = str(report)
    assert "CheckOnValuesError" in text and text.count("tpe.check(x.sum() > 0)") == 1


def test_the_advice_for_values_read_from_data_exports():
    def bounded_index(x, idx):
        k = idx.max().item()
        tpe.check(k < x.shape[0])
        return x[k]

    ep = tpe.export(bounded_index, np.ones(5), np.array([1, 3]), dynamic_shapes={"x": {0: Dim("n")}, "idx": None})
    assert ep.module()(np.arange(7.0), np.array([6, 2])) == 6.0
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.arange(3.0), np.array([6, 2]))
