"""tests/ops/opset_inventory.py: every public numpy callable is covered, refused with a reason, or listed
as missing with a reason; the list of missing ones is exact (a new op or a new gap updates it)."""
import pytest

from opset_inventory import MISSING, inventory, main


@pytest.fixture(scope="module")
def inv():
    return inventory()


def test_every_missing_callable_has_a_reason(inv):
    assert not [name for name, why in inv["missing"].items() if not why]


def test_the_missing_list_is_exact(inv):
    stale = sorted(set(MISSING) - set(inv["missing"]))
    assert not stale, f"covered or refused now, drop them from MISSING: {stale}"


def test_aliases_and_long_tail_are_covered(inv):
    for name in ("numpy.linalg.vecdot", "numpy.linalg.cross", "numpy.linalg.matrix_transpose", "numpy.linalg.outer",
                 "numpy.linalg.matrix_norm", "numpy.linalg.vector_norm", "numpy.linalg.diagonal",
                 "numpy.linalg.trace", "numpy.linalg.tensordot", "numpy.linalg.matmul", "numpy.linalg.svdvals",
                 "numpy.take_along_axis", "numpy.put_along_axis", "numpy.diff", "numpy.pad", "numpy.roll",
                 "numpy.nan_to_num", "numpy.clip", "numpy.hsplit", "numpy.unwrap", "numpy.unique_counts",
                 "ndarray.fill", "ndarray.sort", "ndarray.shape", "ndarray.T"):
        assert name in inv["covered"], name
    assert inv["covered"]["numpy.linalg.matmul"] == "numpy.linalg.matmul"  # its own op, not np.matmul's


def test_closed_gaps_are_covered(inv):
    for name in ("numpy.i0", "numpy.unpackbits", "numpy.packbits", "numpy.diag_indices", "numpy.diag_indices_from",
                 "numpy.polyval", "numpy.polyadd", "numpy.polysub", "numpy.polymul", "numpy.polyder", "numpy.polyint",
                 "numpy.polyfit", "numpy.linalg.tensorinv", "numpy.linalg.tensorsolve", "ndarray.device",
                 "ndarray.to_device"):
        assert name in inv["covered"], name


def test_refusals_are_listed_with_their_reason(inv):
    assert "np.resize(a, new_shape)" in inv["refused"]["ndarray.resize"]  # an ndarray method's refusal
    assert "Python bool" in inv["refused"]["numpy.allclose"]
    assert "np.linalg.eigh" in inv["refused"]["numpy.linalg.eig"]
    assert "numpy.allclose" not in inv["missing"]


def test_script_prints_the_missing_ones(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("covered ") and "numpy.mask_indices: takes a Python function" in out
    assert "numpy.linalg.vecdot" not in out

