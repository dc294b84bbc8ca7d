"""The model's np.errstate travels with the program (node meta 'errstate', written into the
generated source as np.errstate(...)): a stored one must be (kind, mode) pairs of numpy's own
words, anything else is refused at load with ArchiveError."""
from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.errors import ArchiveError

from conftest import archive_bytes, members_of, repack
from _shared import program_bytes, program_doc

PROGRAM = "models/model/program.json"


def quiet_log(x):
    with np.errstate(divide="ignore"):
        y = np.log(np.abs(x))
    return np.where(np.isfinite(y), y, 0.0)


@pytest.fixture(scope="module")
def good() -> bytes:
    ep = tpe.export(quiet_log, np.array([0.0, 1.0, 2.0]), dynamic_shapes={"x": {0: tpe.Dim("n")}})
    return archive_bytes(ep)


def _edit(data: bytes, value) -> bytes:
    members = members_of(data)
    doc = program_doc(members[PROGRAM])
    node = next(n for n in doc["graph"]["nodes"] if "errstate" in n["meta"])
    node["meta"]["errstate"] = value
    members[PROGRAM] = program_bytes(doc)
    return repack(members)


def test_the_programs_errstate_is_the_models_after_load(good):
    program = tpe.load(io.BytesIO(good)).module()
    x = np.array([0.0, 3.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # eager is silent here; so is the program
        np.testing.assert_array_equal(program(x), quiet_log(x))
    assert "np.errstate(divide='ignore'" in program.code


def _pair(k, v):
    return {"k": "tuple", "v": [k, v]}


@pytest.mark.parametrize("value", [
    {"k": "tuple", "v": [_pair("divide", "ignore); import os; (")]},   # source injection
    {"k": "tuple", "v": [_pair("divide", "call")]},                      # needs the model's handler
    {"k": "tuple", "v": [_pair("overflow", "ignore")]},                  # not numpy's kind
    {"k": "tuple", "v": [_pair("divide", "ignore"), _pair("divide", "warn")]},
    {"k": "tuple", "v": []},
    "ignore",
])
def test_a_hostile_errstate_is_refused_at_load(good, value):
    with pytest.raises(ArchiveError, match="errstate"):
        tpe.load(io.BytesIO(_edit(good, value)))


def test_only_the_kinds_the_model_set_are_fixed_the_rest_follow_the_caller():
    def model(x):
        with np.errstate(over="raise"):
            return 1.0 / x

    ep = tpe.export(model, np.arange(1, 7, dtype=np.float32), dynamic_shapes={"x": {0: tpe.Dim("n", max=20)}})
    assert [ln.strip() for ln in ep.module().code.splitlines() if "errstate" in ln] == ["with np.errstate(over='raise'):"]
    with np.errstate(divide="raise"):  # the caller's divide="raise" applies, as in eager
        with pytest.raises(FloatingPointError):
            model(np.arange(4.0, dtype=np.float32))
        with pytest.raises(FloatingPointError):
            ep.module()(np.arange(4.0, dtype=np.float32))
