"""In-place parameter updates in forward (issue 16 item 3): a PARAMETER_MUTATION output module() applies."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.program.signature import OutputKind


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.linspace(0.5, 2.0, 4).astype(np.float32))

    def forward(self, x):
        np.multiply(self.w, 2, out=self.w)
        return x * self.w


class Nudge(nn.Module):
    """Updates through an in-place operator and a slice assignment, in a submodule."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.lin.bias += 0.25
        self.lin.weight[0] = 1.0
        return self.lin(x)


SPEC = {"x": {0: Dim("n", max=32)}}


def _x(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)


@pytest.mark.parametrize("cls, targets", [(Scale, ["w"]), (Nudge, ["lin.weight", "lin.bias"])])
def test_in_place_updates_are_parameter_mutations_applied_like_eager(cls, targets):
    model = cls()
    before = {k: v.copy() for k, v in model.state_dict().items()}
    ep = tpe.export_for_training(model, _x(3), dynamic_shapes=SPEC)
    # exporting did not change the caller's parameters
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    kinds = [s for s in ep.graph_signature.output_specs if s.kind == OutputKind.PARAMETER_MUTATION]
    assert sorted(s.target for s in kinds) == sorted(targets)
    run, eager = ep.module(), cls()
    eager.load_state_dict({k: v.copy() for k, v in before.items()})
    for step, n in enumerate((5, 1, 32)):
        np.testing.assert_allclose(run(_x(n, step)), eager(_x(n, step)), rtol=1e-6)
        for k, v in eager.state_dict().items():
            np.testing.assert_allclose(run.state_dict()[k], v, rtol=1e-6)


def test_parameter_mutation_survives_save_load_and_decompositions(tmp_path):
    ep = tpe.export_for_training(Scale(), _x(3), dynamic_shapes=SPEC)
    tpe.save(ep, tmp_path / "s.pt2")
    for program in (tpe.load(tmp_path / "s.pt2"), ep.run_decompositions()):
        assert program.graph_signature.parameters_to_mutate
        run, eager = program.module(), Scale()
        for n in (2, 7):
            np.testing.assert_allclose(run(_x(n)), eager(_x(n)), rtol=1e-6)


def test_the_stateless_runner_does_not_keep_updates():
    ep = tpe.export_for_training(Scale(), _x(3), dynamic_shapes=SPEC)
    call = tpe.ExportedProgram.call_exported(ep)
    first = call(_x(2))
    np.testing.assert_allclose(call(_x(2)), first)
    np.testing.assert_allclose(first, _x(2) * Scale().w * 2)
