"""numpy.fft transforms and numpy.linalg matrix functions (eigh and slogdet returned whole are in
tests/test_namedtuple_io.py): output sizes on the transformed /
matrix axes, their requirements (a transform of at least one point, square matrices, solve's
row count), and numpy's values at sizes other than the example, through save and load."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe

SPEC = {"x": {0: tpe.Dim("n", min=2, max=64), 1: tpe.Dim("m", min=3, max=48)}}
SIZES = ((2, 3), (3, 6), (7, 9), (16, 12), (33, 48))


def _x(n, m):
    return (np.arange(n * m, dtype=np.float32).reshape(n, m) * 7 % 23) + 1


def _gram(x):
    return x.T @ x + np.eye(x.shape[1], dtype=x.dtype)


MODELS = {
    "rfft_axis0": lambda x: np.abs(np.fft.rfft(x, axis=0)),
    "rfft_fixed_n": lambda x: np.fft.rfft(x, n=16, axis=1).real,
    "fft_imag": lambda x: np.fft.fft(x).imag,
    "irfft_roundtrip": lambda x: np.fft.irfft(np.fft.rfft(x, axis=0), n=x.shape[0], axis=0),
    "irfft_default_length": lambda x: np.fft.irfft(x.astype(np.complex64)),
    "ifft": lambda x: np.fft.ifft(x, axis=0).real,
    "hfft_ihfft": lambda x: np.fft.hfft(np.fft.ihfft(x, axis=0), n=x.shape[0], axis=0),
    "ifft2_fftn_ifftn": lambda x: np.fft.ifft2(np.fft.fftn(x)).real + np.fft.ifftn(x).imag,
    "irfft2": lambda x: np.fft.irfft2(np.fft.rfft2(x), s=x.shape),
    "fft2": lambda x: np.abs(np.fft.fft2(x)),
    "rfft2": lambda x: np.abs(np.fft.rfft2(x)),
    "irfftn_axes": lambda x: np.fft.irfftn(np.fft.rfftn(x), s=x.shape, axes=(0, 1)),
    "fftshift": lambda x: np.fft.fftshift(x, axes=0) + np.fft.ifftshift(x),
    "inv": lambda x: np.linalg.inv(_gram(x)),
    "solve_vector": lambda x: np.linalg.solve(_gram(x), x.T @ x[:, 0]),
    "solve_matrix": lambda x: np.linalg.solve(_gram(x), x.T),
    "det": lambda x: np.linalg.det(x.T @ x / 100 + np.eye(x.shape[1])),
    "cholesky": lambda x: np.linalg.cholesky(_gram(x)),
    "pinv": lambda x: np.linalg.pinv(x),
    "eigvalsh": lambda x: np.linalg.eigvalsh(x.T @ x),
    "eigh": lambda x: (lambda r: r.eigenvalues + np.abs(r.eigenvectors).sum(axis=0))(np.linalg.eigh(_gram(x))),
    "eigh_upper": lambda x: np.abs(np.linalg.eigh(_gram(x), UPLO="U")[1]),
    "slogdet": lambda x: (lambda r: r.sign * r.logabsdet)(np.linalg.slogdet(_gram(x))),
    "slogdet_batched": lambda x: np.stack(np.linalg.slogdet(np.stack([_gram(x), -_gram(x)]))),
    "matrix_power": lambda x: np.linalg.matrix_power(x.T @ x / 1000, 3),
    # factorizations of a dynamic (n, m) matrix: K = min(n, m) sizes stay symbolic
    "qr_reduced": lambda x: (lambda q, r: (q @ r)[:, :1] + np.abs(r).sum(axis=0))(*np.linalg.qr(x)),
    "qr_fields": lambda x: np.abs(np.linalg.qr(x).R)[:1] + np.abs(np.linalg.qr(x, mode="complete").Q).sum(axis=0)[:1].T,
    "qr_mode_r": lambda x: np.abs(np.linalg.qr(x, mode="r")),
    "qr_raw_tau": lambda x: np.abs(np.linalg.qr(x, mode="raw")[1]),
    "svd_values": lambda x: np.linalg.svd(x, compute_uv=False),
    "svd_thin": lambda x: (lambda u, s, vh: (u * s) @ vh)(*np.linalg.svd(x, full_matrices=False)),
    "svd_fields": lambda x: np.linalg.svd(x).S + np.abs(np.linalg.svd(x).Vh).sum(axis=0)[: min(x.shape)],
    "svdvals": lambda x: np.linalg.svdvals(x),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_values_and_shapes_match_numpy_at_other_sizes(name):
    model = MODELS[name]
    ep = tpe.export(model, _x(4, 6), dynamic_shapes=SPEC)
    assert sorted((r.lower, r.upper) for r in ep.range_constraints.values()) == [(2, 64), (3, 48)]
    for n, m in SIZES:
        x = _x(n, m)
        got, want = ep.module()(x), model(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-4)


def test_save_and_load_keep_the_transform_sizes(tmp_path):
    model = MODELS["rfft2"]
    tpe.save(tpe.export(model, _x(4, 6), dynamic_shapes=SPEC), tmp_path / "p.pt2")
    loaded = tpe.load(tmp_path / "p.pt2")
    x = _x(7, 9)
    assert loaded.module()(x).shape == (7, 5)
    np.testing.assert_allclose(loaded.module()(x), model(x), rtol=2e-5)


def test_a_transform_of_zero_points_is_a_violation_with_a_fix():
    def model(x):
        return np.abs(np.fft.rfft(x, n=x.shape[0] - 2, axis=0))

    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, _x(4, 6), dynamic_shapes=SPEC)
    assert "n = Dim('n', min=3, max=64)" in str(info.value)


def test_a_non_square_inverse_asks_for_equal_dims():
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(lambda x: np.linalg.inv(x), _x(5, 5) + 10 * np.eye(5, dtype=np.float32), dynamic_shapes=SPEC)
    assert "must be square" in str(info.value) and "m = n" in str(info.value)


def test_solve_rows_must_match():
    def model(a, b):
        return np.linalg.solve(a, b)

    spec = {"a": {0: tpe.Dim("n", max=16), 1: tpe.Dim("n", max=16)}, "b": {0: tpe.Dim("k", max=16)}}
    with pytest.raises(tpe.ConstraintViolationError, match="k = n"):
        tpe.export(model, np.eye(4), np.ones(4), dynamic_shapes=spec)


def test_qr_and_svd_return_numpy_namedtuples_during_capture():
    seen = []

    def model(x):
        qr, svd = np.linalg.qr(x), np.linalg.svd(x, full_matrices=False)
        seen.append((type(qr), type(svd), qr._fields, svd._fields))
        return np.abs(qr.Q[:, :1]) * svd.S[:1]

    ep = tpe.export(model, _x(4, 6), dynamic_shapes=SPEC)
    want = (type(np.linalg.qr(np.eye(2))), type(np.linalg.svd(np.eye(2))), ("Q", "R"), ("U", "S", "Vh"))
    assert seen == [want, want]  # the traced run and the eager check both see numpy's types
    targets = {n.target for n in ep.graph.nodes if n.op == "call_function"}
    assert {"numpy.linalg.qr", "numpy.linalg.svd"} <= targets
    for n, m in SIZES:
        np.testing.assert_allclose(ep.module()(_x(n, m)), model(_x(n, m)), rtol=2e-5, atol=1e-4)
    assert {n.target for n in tpe.export(lambda x: np.linalg.svd(x, False, False), _x(4, 6),
                                         dynamic_shapes=SPEC).graph.nodes} >= {"tpe.linalg.svd_values"}
    assert "tpe.linalg.qr_r" in {n.target for n in tpe.export(MODELS["qr_mode_r"], _x(4, 6),
                                                              dynamic_shapes=SPEC).graph.nodes}
