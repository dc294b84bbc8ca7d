"""The op registry: conventions, lookups, and that every op has an impl, a rule and a test."""
from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.errors import UnsupportedOpError
from tensorplay_export.ops.registry import all_ops, get_op, lookup_func, lookup_method, register_op


def test_register_without_shape_rule_fails():
    with pytest.raises(TypeError, match="shape rule"):
        register_op("test.no_rule", np.add, None)


def test_unknown_op_name_raises_unsupported():
    with pytest.raises(UnsupportedOpError, match="not in the op registry"):
        get_op("numpy.does_not_exist")


def test_lookups():
    assert lookup_func(np.add).name == "numpy.add"
    assert lookup_func(np.concatenate).name == "numpy.concatenate"
    assert lookup_method("reshape").name == "numpy.ndarray.reshape"
    assert lookup_func(np.linalg.eig) is None


def test_unsupported_numpy_function_names_function_and_line():
    with pytest.raises(UnsupportedOpError, match=r"numpy.linalg.eig.*\n.*test_ops_registry.py:\d+"):
        tpe.export(lambda x: np.linalg.eig(x), np.eye(3))


def test_every_op_has_impl_rule_and_a_test():
    text = "".join(p.read_text() for p in Path(__file__).parent.glob("test_ops_*.py"))
    text += "".join(p.read_text() for p in Path(__file__).parent.parent.glob("nn/*.py"))
    missing = []
    for name, op in all_ops().items():
        assert callable(op.impl) and callable(op.shape_rule), name
        if name.startswith(("tpe.nn.", "tpe.check", "tpe.assert", "tpe.derived")):
            continue  # nn composites and runtime checks are tested by their owners
        short = name.rsplit(".", 1)[-1]
        if name not in text and f"np.{short}" not in text and f".{short}(" not in text and f'"{short}"' not in text:
            missing.append(name)
    # the long tail of ufuncs shares one rule (tested through many ufuncs above)
    missing = [m for m in missing if not isinstance(get_op(m).impl, np.ufunc)]
    assert not missing, f"ops without a test: {missing}"


def test_op_table_overlay_and_opaque_ops_never_enter_the_registry():
    from tensorplay_export.ops.registry import make_opaque_op, resolve_op

    before = set(all_ops())
    op = make_opaque_op("numpy.linalg.inv", np.linalg.inv)
    assert op.name == "tpe.opaque.numpy.linalg.inv" and op.impl is np.linalg.inv
    assert set(all_ops()) == before
    overlay = {op.name: op}
    assert resolve_op(op.name, overlay) is op
    assert resolve_op("numpy.add", overlay) is get_op("numpy.add")
    with pytest.raises(UnsupportedOpError):
        resolve_op(op.name)
