"""Mutation through views (issue 16 item 2): the program computes what eager numpy computes,
writes seen through every alias, inputs written back as eager writes them."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.program.signature import OutputKind


def through_transpose(x):
    y = x.T
    y += 1.0
    return x * 2.0, y.sum(axis=0)


def through_slice_of_model_array(x):
    m = np.zeros((x.shape[0], 3))
    row = m[0]
    row[:] = 7.0
    col = m[:, 1]         # a sibling view made before the next write: sees it
    m[1] = 5.0
    return m + x, col * 1.0


def through_reshape(x):
    flat = x.reshape(-1)
    flat[1:3] = 0.0
    tail = x[1:]
    tail *= 3.0
    return x.copy()


def view_of_view(x):
    y = np.swapaxes(x, 0, 1)[::2]
    y[0] = -1.0
    z = x.T               # made after the write
    return z + 0.0, x.sum()


def out_into_a_view(x):
    np.multiply(x[:, 0], 10.0, out=x[:, 2])
    return x[:, 2] + x[:, 0]


def view_outlives_writes_to_its_base(x):
    first = x[0]
    x += 1.0
    x[1:] *= 2.0
    return first * 1.0, x.mean(axis=0)


MODELS = [through_transpose, through_slice_of_model_array, through_reshape, view_of_view, out_into_a_view,
          view_outlives_writes_to_its_base]


def _x(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 3))


def _as_list(v):
    return list(v) if isinstance(v, tuple) else [v]


@pytest.mark.parametrize("model", MODELS, ids=lambda f: f.__name__)
def test_program_matches_eager_and_writes_inputs_back(model, tmp_path):
    ep = tpe.export(model, _x(4), dynamic_shapes={"x": {0: Dim("n", min=2, max=64)}})
    tpe.save(ep, tmp_path / "v.pt2")
    for program in (ep, tpe.load(tmp_path / "v.pt2"), ep.run_decompositions()):
        run = program.module()
        for n in (2, 5, 64):
            a, b = _x(n, n), _x(n, n)
            got, want = _as_list(run(a)), _as_list(model(b))
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w)
            np.testing.assert_allclose(a, b)   # the caller's input changed exactly as eager changed it


def test_an_input_written_through_a_view_is_a_user_input_mutation():
    ep = tpe.export(through_transpose, _x(4), dynamic_shapes={"x": {0: Dim("n")}})
    kinds = [s.kind for s in ep.graph_signature.output_specs]
    assert kinds[0] == OutputKind.USER_INPUT_MUTATION


class Damp(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.ones((3, 2), np.float32))
        self.register_buffer("seen", np.zeros(3, np.float32))

    def forward(self, x):
        head = self.w[:2]
        head *= 0.5                      # a parameter written through a view
        self.seen[:] += x.sum(axis=0)    # a buffer written through a view
        return x @ self.w


def test_parameters_and_buffers_written_through_views_are_their_mutations():
    model = Damp()
    ep = tpe.export_for_training(model, np.ones((2, 3), np.float32), dynamic_shapes={"x": {0: Dim("n")}})
    kinds = {s.kind.name: s.target for s in ep.graph_signature.output_specs if s.target}
    assert kinds == {"PARAMETER_MUTATION": "w", "BUFFER_MUTATION": "seen"}
    np.testing.assert_array_equal(model.w, np.ones((3, 2)))   # export did not write the model
    run, eager = ep.module(), Damp()
    for n in (1, 4, 9):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_allclose(run(x), eager(x), rtol=1e-6)
    np.testing.assert_allclose(run.state_dict()["w"], eager.w, rtol=1e-6)
    np.testing.assert_allclose(dict(run.named_buffers())["seen"], eager.seen, rtol=1e-5)


@pytest.mark.parametrize("make", [
    lambda a: a.T, lambda a: a.transpose(), lambda a: a.transpose(2, 0, 1), lambda a: a.transpose((1, 2, 0)),
    lambda a: np.transpose(a, (0, 2, 1)), lambda a: np.transpose(a, axes=(2, 1, 0)),
    lambda a: np.swapaxes(a, 0, 2), lambda a: a.swapaxes(1, -1), lambda a: np.moveaxis(a, 0, -1),
    lambda a: np.moveaxis(a, [0, 1], [2, 0]), lambda a: np.squeeze(a[:, :1]), lambda a: a.reshape(a.shape[0], -1),
    lambda a: np.expand_dims(a, 1), lambda a: a.ravel(), lambda a: np.atleast_2d(a),
    lambda a: a.astype(a.dtype, copy=False), lambda a: np.flip(a, 1), lambda a: np.fliplr(a), lambda a: np.flipud(a),
    lambda a: np.flip(a), lambda a: np.permute_dims(a, (1, 0, 2)), lambda a: a[1:, ::-1].T,
], ids=[f"make{i}" for i in range(22)])
def test_every_followed_view_op_writes_back_to_its_base(make):
    def model(x):
        v = make(x)
        v *= 3.0
        v[0] = -1.0
        return x + 0.0

    ep = tpe.export(model, np.arange(24.0).reshape(2, 3, 4), dynamic_shapes={"x": {0: Dim("n", min=2)}})
    for n in (2, 5):
        a = np.arange(n * 12.0).reshape(n, 3, 4)
        b = a.copy()
        np.testing.assert_allclose(ep.module()(a), model(b))
        np.testing.assert_allclose(a, b)


_SCRATCH = np.zeros((6, 4), np.float32)


def test_a_write_into_an_array_the_model_does_not_own_is_refused():
    # eager numpy changes the module global; a program cannot, so export refuses (no silent drop)
    def model(x):
        y = x.copy()
        y[0] = 0.0                                      # a write into its own array: fine
        np.multiply(x, 2, out=_SCRATCH[: x.shape[0]])   # L_scratch
        return y + 1

    with pytest.raises(tpe.CaptureError, match=r"writes into '_SCRATCH'.*register_buffer") as info:
        tpe.export(model, np.ones((6, 4), np.float32), dynamic_shapes={"x": {0: tpe.Dim("r", max=6)}})
    assert "L_scratch" in str(info.value)  # the line of that write, not of the model's first write
