"""The admitted region over two dims: decided by the program's own checks, checked against calls."""
import importlib.util

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.face.region import admitted_region, report_region


def patches(x):
    n, h, w = x.shape
    return x.reshape(n, h // 4, 4, w).sum(axis=2)[:, :, : w - 1] * 2


@pytest.fixture(scope="module")
def program():
    _h = tpe.Dim("_h", max=8)
    spec = {"x": {1: 4 * _h, 2: tpe.Dim("w", min=2, max=20)}}
    return tpe.export(patches, np.ones((2, 16, 12), np.float32), dynamic_shapes=spec)


def _runs(ep, h, w):
    try:
        ep.module()(np.ones((2, h, w), np.float32))
    except tpe.ConstraintsExceededError:
        return False
    return True


def test_every_cell_agrees_with_a_call(program):
    region = admitted_region(program, "x.shape[2]", "x.shape[1]", xs=range(0, 24), ys=range(0, 36))
    kinds = {c for row in region.cells for c in row}
    assert kinds == {"admitted", "range", "relation"}
    for h in region.ys:
        for w in region.xs:
            cell = region.at(w, h)
            assert (cell == "admitted") == _runs(program, h, w), (h, w, cell)
            if cell != "admitted":
                inside = 4 <= h <= 32 and 2 <= w <= 20
                assert cell == ("relation" if inside else "range"), (h, w, cell)
    assert region.at(12, 13) == "relation" and region.at(12, 16) == "admitted" and region.at(21, 16) == "range"
    admitted = [(w, h) for h in region.ys for w in region.xs if region.at(w, h) == "admitted"]
    for w, h in admitted[::17]:  # and the admitted ones compute what eager computes
        x = np.random.default_rng(h * 31 + w).standard_normal((2, h, w)).astype(np.float32)
        np.testing.assert_allclose(program.module()(x), patches(x), rtol=1e-6)


def test_symbols_text_and_html(program):
    region = admitted_region(program, "w", "_h")
    assert region.xs == tuple(range(0, 23)) and region.ys == tuple(range(0, 11))
    rows = region.text().splitlines()
    assert rows[0] == "rows _h: 0..10; columns w: 0..22"
    assert rows[1 + 4] == " 4 ..###################.."   # _h = 4: w admitted from 2 to 20
    assert rows[1 + 9].strip().endswith("." * 23)         # _h = 9 is outside [1, 8]
    html = region._repr_html_()
    assert html.count("<td") == 23 * 11 and "refused by range" in html
    with pytest.raises(KeyError, match="axes: \\['x.shape\\[1\\]', 'x.shape\\[2\\]'\\]"):
        admitted_region(program, "h", "w")


def test_plot_needs_matplotlib(program):
    region = admitted_region(program, "w", "_h", xs=[2, 3], ys=[1, 2])
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(ImportError, match="pip install matplotlib"):
            region.plot()
    else:
        import matplotlib

        matplotlib.use("Agg")
        ax = region.plot()
        assert ax.get_xlabel() == "w" and ax.get_ylabel() == "_h"


def test_draft_report_shows_the_region_of_its_program():
    def f(x, y):
        return x[:, :8] * y[:, :8]

    x, y = np.ones((3, 10), np.float32), np.ones((3, 10), np.float32)
    d = tpe.Dim
    report = tpe.draft_export(f, x, y, dynamic_shapes={"x": {1: d("a", max=30)}, "y": {1: d("b", max=30)}})
    ep = report.exported_program
    assert ep is not None and not report.successful()  # Min(8, a) == Min(8, b) is a violated guard
    shown = report_region(ep)
    assert (shown.x_dim, shown.y_dim) == ("a", "b") and len(shown.xs) == len(shown.ys) == 24
    region = admitted_region(ep, "a", "b", xs=[7, 8, 30], ys=[7, 8, 30])
    for a in (7, 8, 30):
        for b in (7, 8, 30):
            want = "admitted" if min(8, a) == min(8, b) else "relation"
            assert region.at(a, b) == want
            assert (want == "admitted") == _call_admits(ep, a, b)
    assert "Sizes the program admits" in report._repr_html_()


def _call_admits(ep, a, b):
    try:
        ep.module()(np.ones((3, a), np.float32), np.ones((3, b), np.float32))
    except tpe.ConstraintsExceededError:
        return False
    return True
