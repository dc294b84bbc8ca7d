"""Norms, differences, diagonals, 2-d promotion, counting, and metadata functions during capture."""
import numpy as np

from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}


def one(n):
    return (randn(n, 3),)


def test_norm_diff_diag_trace():
    check(lambda x: (np.linalg.norm(x, axis=1, keepdims=True), np.linalg.norm(x), np.diff(x, axis=0),
                     np.diff(x, n=2, axis=1), np.diagonal(x), x.diagonal(1), np.trace(x), np.diag(x[:, 0]),
                     np.atleast_2d(x[:, 0]), np.count_nonzero(x > 0, axis=0)), one, SPEC, sizes=(1, 2, 3, 7),
          ops=["numpy.linalg.norm", "numpy.diff", "numpy.diagonal", "numpy.trace", "numpy.diag", "numpy.atleast_2d",
               "numpy.count_nonzero"])


def test_metadata_functions_answer_without_nodes():
    def f(x):
        y = np.zeros(np.shape(x), dtype=np.result_type(x, np.float64))
        np.copyto(y, x * np.ndim(x) + np.size(x, 0))
        return y
    check(f, one, SPEC)
