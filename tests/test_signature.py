"""Signature records: constructors as in the seed, derived views, edits."""
import inspect

import pytest

from tensorplay_export.graph.ir import Graph
from tensorplay_export.program.signature import (
    ConstantArgument, CustomObjArgument, ExportBackwardSignature, ExportGraphSignature, GraphSignature,
    InputKind, InputSpec, ModuleCallEntry, ModuleCallSignature, OutputKind, OutputSpec, SymBoolArgument,
    SymFloatArgument, SymIntArgument, TensorArgument, TokenArgument)


def sig():
    return ExportGraphSignature(
        input_specs=[
            InputSpec(InputKind.PARAMETER, TensorArgument("p_lin_weight"), "lin.weight"),
            InputSpec(InputKind.BUFFER, TensorArgument("b_running"), "running", persistent=True),
            InputSpec(InputKind.BUFFER, TensorArgument("b_cache"), "cache", persistent=False),
            InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument("c_table"), "table"),
            InputSpec(InputKind.USER_INPUT, TensorArgument("x")),
            InputSpec(InputKind.USER_INPUT, ConstantArgument("flag", True)),
        ],
        output_specs=[
            OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument("add_1"), "running"),
            OutputSpec(OutputKind.USER_OUTPUT, TensorArgument("matmul")),
            OutputSpec(OutputKind.USER_OUTPUT, ConstantArgument("out1", 3)),
        ])


def test_seed_constructor_signatures():
    expected = {
        TensorArgument: ["name"], SymIntArgument: ["name"], SymFloatArgument: ["name"],
        SymBoolArgument: ["name"], TokenArgument: ["name"], ConstantArgument: ["name", "value"],
        CustomObjArgument: ["name", "class_fqn", "fake_val"],
        InputSpec: ["kind", "arg", "target", "persistent"], OutputSpec: ["kind", "arg", "target"],
        ExportGraphSignature: ["input_specs", "output_specs"],
        GraphSignature: ["parameters", "buffers", "non_persistent_buffers", "user_inputs"],
        ExportBackwardSignature: ["gradients_to_parameters", "gradients_to_user_inputs", "loss_output"],
        ModuleCallSignature: ["inputs", "outputs", "in_spec", "out_spec", "forward_arg_names"],
        ModuleCallEntry: ["fqn", "signature"],
    }
    for cls, params in expected.items():
        assert list(inspect.signature(cls).parameters) == params, cls
    assert [k.name for k in InputKind] == ["USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR", "CUSTOM_OBJ", "TOKEN"]
    assert [k.name for k in OutputKind] == ["USER_OUTPUT", "BUFFER_MUTATION", "GRADIENT_TO_PARAMETER",
                                            "GRADIENT_TO_USER_INPUT", "USER_INPUT_MUTATION", "LOSS_OUTPUT", "TOKEN",
                                            "PARAMETER_MUTATION"]


def test_views():
    s = sig()
    assert s.parameters == ("lin.weight",)
    assert s.buffers == ("running", "cache")
    assert s.non_persistent_buffers == ("cache",)
    assert s.lifted_tensor_constants == ("table",)
    assert s.user_inputs == ("x", True)
    assert s.user_outputs == ("matmul", 3)
    assert s.inputs_to_parameters == {"p_lin_weight": "lin.weight"}
    assert s.inputs_to_buffers == {"b_running": "running", "b_cache": "cache"}
    assert s.buffers_to_mutate == {"add_1": "running"}
    assert s.is_param("p_lin_weight") and not s.is_param("b_running")
    assert s.is_buffer("b_cache") and not s.is_buffer("x")
    assert s.assertion_dep_token is None
    assert s.backward_signature is None


def test_buffer_persistence_validated():
    with pytest.raises(ValueError, match="persistent"):
        InputSpec(InputKind.BUFFER, TensorArgument("b"), "b")
    with pytest.raises(ValueError, match="only meaningful for buffers"):
        InputSpec(InputKind.PARAMETER, TensorArgument("p"), "p", persistent=True)


def test_clone_is_deep():
    s = sig()
    c = s.clone()
    c.input_specs[0].arg.name = "renamed"
    assert s.input_specs[0].arg.name == "p_lin_weight"
    assert c == ExportGraphSignature(c.input_specs, c.output_specs)


def test_replace_all_uses_and_hook():
    s = sig()
    s.replace_all_uses("matmul", "mm")
    assert s.user_outputs == ("mm", 3)
    s.replace_all_uses("x", "x_in")
    assert s.user_inputs == ("x_in", True)
    with pytest.raises(TypeError):
        s.replace_all_uses(1, "y")

    g = Graph()
    old = g.placeholder("x_in", meta={"shape": ()})
    new = g.placeholder("x2", meta={"shape": ()})
    out = g.output([new])
    s.get_replace_hook()(old, new, out)            # outputs only: x_in is an input
    assert s.user_inputs == ("x_in", True)
    s.get_replace_hook(replace_inputs=True)(old, new, out)
    assert s.user_inputs == ("x2", True)
    s.get_replace_hook()("mm", "mm2", None)
    assert s.user_outputs == ("mm2", 3)


def test_param_to_buffer_and_backward_and_tokens():
    s = ExportGraphSignature(
        [InputSpec(InputKind.PARAMETER, TensorArgument("p_w"), "w"),
         InputSpec(InputKind.BUFFER, TensorArgument("b_w_grad"), "w_grad", persistent=True),
         InputSpec(InputKind.USER_INPUT, TensorArgument("x"))],
        [OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument("grad"), "w_grad"),
         OutputSpec(OutputKind.LOSS_OUTPUT, TensorArgument("loss")),
         OutputSpec(OutputKind.GRADIENT_TO_PARAMETER, TensorArgument("grad"), "w"),
         OutputSpec(OutputKind.GRADIENT_TO_USER_INPUT, TensorArgument("gx"), "x"),
         OutputSpec(OutputKind.TOKEN, TokenArgument("dep_token0"))])
    assert s.get_param_to_buffer() == {"w": "w_grad"}
    assert s.backward_signature == ExportBackwardSignature({"grad": "w"}, {"gx": "x"}, "loss")
    assert s.assertion_dep_token == {4: "dep_token0"}


def test_compact_graph_signature():
    gs = GraphSignature(("w",), ("running", "cache"), ("cache",), ("x",))
    full = gs.to_export_signature(["p_w", "b_running", "b_cache", "x"], ["out"])
    assert full.parameters == ("w",) and full.non_persistent_buffers == ("cache",)
    assert full.user_inputs == ("x",) and full.user_outputs == ("out",)
    with pytest.raises(ValueError, match="lists 4 inputs but the graph has 3"):
        gs.to_export_signature(["p_w", "b_running", "x"], [])


def test_module_call_records():
    entry = ModuleCallEntry("encoder.layer0", ModuleCallSignature([TensorArgument("x")], [TensorArgument("y")]))
    assert entry.signature.in_spec is None and entry.signature.forward_arg_names is None
    assert ModuleCallEntry("").signature is None
    assert CustomObjArgument("o", "mod.Cls").fake_val is None
