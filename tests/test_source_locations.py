"""How a user's source line is named in messages: a path that finds the file, and the model's
own call line when the guard was raised in a helper the model calls."""
import importlib
import os
import sys

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.records import SourceLoc, display_location

HELPER = """import numpy as np
def check_mult(x, k):
    n = x.shape[1]
    assert n % k == 0, "bad"
    return x.reshape(x.shape[0], n // k, k)
def deep(x):
    return check_mult(x, 8)
"""

MODEL = """import {pkg}
def model(x):
    return {pkg}.deep(x).sum(-1)
"""


def _import_from(tmp_path, monkeypatch, pkg):
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text(HELPER)
    (tmp_path / f"{pkg}_model.py").write_text(MODEL.format(pkg=pkg))
    monkeypatch.syspath_prepend(str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the names must not depend on the working directory
    importlib.invalidate_caches()
    return importlib.import_module(f"{pkg}_model")


def _violation_site(model):
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones((2, 16), np.float32), dynamic_shapes={"x": {1: Dim("t")}})
    return [line.strip() for line in str(info.value).splitlines() if line.strip().startswith("at ")]


def test_a_guard_in_a_helper_package_names_the_package_file_and_the_models_call(tmp_path, monkeypatch):
    mod = _import_from(tmp_path, monkeypatch, "helperpkg_srcloc")
    sites = _violation_site(mod.model)
    assert sites == ["at helperpkg_srcloc/__init__.py:4  `assert n % k == 0, \"bad\"`, called from "
                     "helperpkg_srcloc_model.py:3  `return helperpkg_srcloc.deep(x).sum(-1)`"]


def test_a_guard_in_the_models_own_file_has_no_caller(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def model(x):
        assert x.shape[1] % 8 == 0
        return x

    (site,) = _violation_site(model)
    assert site.startswith(f"at test_source_locations.py:{model.__code__.co_firstlineno + 1}  `assert")
    assert "called from" not in site


def test_a_file_is_named_from_its_import_root_then_the_working_directory_then_in_full(tmp_path, monkeypatch):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "m.py").write_text("x = 1\n")
    path = str(tmp_path / "a" / "b" / "m.py")
    monkeypatch.chdir(tmp_path)
    assert display_location(path, 1) == os.path.join("a", "b", "m.py") + ":1"
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    assert display_location(path, 1) == os.path.join("b", "m.py") + ":1"
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.startswith(str(tmp_path))])
    monkeypatch.chdir(tmp_path / "a" / "b")
    assert display_location(str(tmp_path / "a" / "other.py"), 2) == str(tmp_path / "a" / "other.py") + ":2"
    assert display_location("<string>", 3) == "<string>:3"


def test_a_package_module_is_named_from_the_package_root(tmp_path, monkeypatch):
    (tmp_path / "top" / "sub").mkdir(parents=True)
    for folder in ("top", os.path.join("top", "sub")):
        (tmp_path / folder / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path / "top" / "sub")  # a package file is named the same from anywhere
    path = str(tmp_path / "top" / "sub" / "__init__.py")
    assert display_location(path, 4) == os.path.join("top", "sub", "__init__.py") + ":4"


def test_the_caller_prints_after_the_line_and_does_not_change_equality(tmp_path):
    inner = SourceLoc(str(tmp_path / "h.py"), 4, stored="assert ok")
    outer = SourceLoc(str(tmp_path / "m.py"), 9, stored="return h(x)")
    called = SourceLoc(inner.filename, 4, stored="assert ok", caller=outer)
    assert str(called) == f"{inner}, called from {outer}"
    assert called == inner and hash(called) == hash(inner)


def test_an_error_raised_inside_capture_after_the_users_line_is_placed_at_that_line():
    # numpy.random.* is refused by capture's own code, called from the model's line: the
    # traceback ends in capture frames after the user's one
    def model(x):
        return x + np.random.rand(3, 4)

    with pytest.raises(tpe.UnsupportedOpError) as info:
        tpe.export(model, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim("n")}})
    assert f"test_source_locations.py:{model.__code__.co_firstlineno + 1}" in str(info.value)
    assert "called from" not in str(info.value)
