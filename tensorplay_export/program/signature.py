"""What each graph input and output means: the program's signature records.

An exported graph is functional: module state is lifted into placeholders
(parameters ``p_<fqn>``, buffers ``b_<fqn>``, constants ``c_<fqn>``) ahead of
the user inputs, and state written by ``forward`` comes back as extra outputs
ahead of the user outputs.  :class:`ExportGraphSignature` records one
:class:`InputSpec` per placeholder and one :class:`OutputSpec` per output
value, in graph order.  All records are small dataclasses holding only
strings, ints, floats, bools and None, so they serialize to JSON directly
(``CustomObjArgument.fake_val`` excepted: it is never serialized).
"""
from __future__ import annotations

import copy
import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Union

__all__ = [
    "InputKind", "OutputKind", "TensorArgument", "SymIntArgument", "SymFloatArgument",
    "SymBoolArgument", "ConstantArgument", "CustomObjArgument", "TokenArgument", "ArgumentSpec",
    "InputSpec", "OutputSpec", "ExportGraphSignature", "GraphSignature", "ExportBackwardSignature",
    "ModuleCallSignature", "ModuleCallEntry", "CallParameter",
]


class InputKind(enum.Enum):
    """Role of a graph input."""

    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()
    CUSTOM_OBJ = enum.auto()
    TOKEN = enum.auto()


class OutputKind(enum.Enum):
    """Role of a graph output."""

    USER_OUTPUT = enum.auto()
    BUFFER_MUTATION = enum.auto()
    GRADIENT_TO_PARAMETER = enum.auto()
    GRADIENT_TO_USER_INPUT = enum.auto()
    USER_INPUT_MUTATION = enum.auto()
    LOSS_OUTPUT = enum.auto()
    TOKEN = enum.auto()
    PARAMETER_MUTATION = enum.auto()  # a parameter written in place (np.multiply(w, 2, out=w))


@dataclass
class TensorArgument:
    """An array value; ``name`` is its graph node name."""

    name: str


@dataclass
class SymIntArgument:
    """A symbolic int value; ``name`` is its graph node (or symbol) name."""

    name: str


@dataclass
class SymFloatArgument:
    """A symbolic float value."""

    name: str


@dataclass
class SymBoolArgument:
    """A symbolic bool value."""

    name: str


@dataclass
class ConstantArgument:
    """A constant input/output (``value`` is baked into the program)."""

    name: str
    value: Union[int, float, bool, str, None]


@dataclass
class CustomObjArgument:
    """An opaque object; ``class_fqn`` names its class, ``fake_val`` is a capture-time stand-in."""

    name: str
    class_fqn: str
    fake_val: Any = None


@dataclass
class TokenArgument:
    """An ordering token (side-effect sequencing)."""

    name: str


ArgumentSpec = Union[TensorArgument, SymIntArgument, SymFloatArgument, SymBoolArgument,
                     ConstantArgument, CustomObjArgument, TokenArgument]
_NAMED = (TensorArgument, SymIntArgument, SymFloatArgument, SymBoolArgument, CustomObjArgument,
          TokenArgument)


@dataclass
class InputSpec:
    """One graph input: its ``kind``, the ``arg`` it binds, the state ``target`` (fqn) if lifted.

    ``persistent`` is set (True/False) exactly for ``BUFFER`` inputs.
    """

    kind: InputKind
    arg: ArgumentSpec
    target: Optional[str] = None
    persistent: Optional[bool] = None

    def __post_init__(self) -> None:
        if self.kind == InputKind.BUFFER and self.persistent is None:
            raise ValueError(f"buffer input {self.target!r} needs persistent=True/False")
        if self.kind != InputKind.BUFFER and self.persistent is not None:
            raise ValueError(f"persistent is only meaningful for buffers, not {self.kind.name}")


@dataclass
class OutputSpec:
    """One graph output: its ``kind``, the ``arg`` it returns, the state ``target`` it writes."""

    kind: OutputKind
    arg: ArgumentSpec
    target: Optional[str] = None


@dataclass
class ExportBackwardSignature:
    """Gradient outputs of a joint forward-backward program."""

    gradients_to_parameters: dict[str, str]
    gradients_to_user_inputs: dict[str, str]
    loss_output: str


def _arg_name(arg: ArgumentSpec) -> Optional[str]:
    return arg.name if isinstance(arg, _NAMED) else None


@dataclass
class ExportGraphSignature:
    """Describe lifted state, user values, mutations, and graph outputs.

    Args:
        input_specs: one per placeholder, in graph order.
        output_specs: one per output value, in graph order.
    """

    input_specs: list[InputSpec]
    output_specs: list[OutputSpec]

    # -- inputs ---------------------------------------------------------------
    def _targets(self, kind: InputKind) -> tuple[str, ...]:
        return tuple(s.target for s in self.input_specs if s.kind == kind and s.target is not None)

    @property
    def parameters(self) -> tuple[str, ...]:
        """Fqns of lifted parameters, in input order."""
        return self._targets(InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple[str, ...]:
        """Fqns of lifted buffers (persistent or not), in input order."""
        return self._targets(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self) -> tuple[str, ...]:
        return tuple(s.target for s in self.input_specs
                     if s.kind == InputKind.BUFFER and s.persistent is False)

    @property
    def lifted_tensor_constants(self) -> tuple[str, ...]:
        return self._targets(InputKind.CONSTANT_TENSOR)

    @property
    def lifted_custom_objs(self) -> tuple[str, ...]:
        return self._targets(InputKind.CUSTOM_OBJ)

    @property
    def user_inputs(self) -> tuple[Union[str, int, float, bool, None], ...]:
        """Placeholder names of the user inputs (a constant input gives its value)."""
        out = []
        for s in self.input_specs:
            if s.kind == InputKind.USER_INPUT:
                out.append(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name)
        return tuple(out)

    @property
    def inputs_to_parameters(self) -> dict[str, str]:
        """Placeholder name -> parameter fqn."""
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self) -> dict[str, str]:
        """Placeholder name -> buffer fqn."""
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.BUFFER}

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict[str, str]:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.CONSTANT_TENSOR}

    @property
    def inputs_to_lifted_custom_objs(self) -> dict[str, str]:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.CUSTOM_OBJ}

    @property
    def input_tokens(self) -> tuple[str, ...]:
        return tuple(s.arg.name for s in self.input_specs if s.kind == InputKind.TOKEN)

    # -- outputs --------------------------------------------------------------
    @property
    def user_outputs(self) -> tuple[Union[str, int, float, bool, None], ...]:
        """Node names of the user outputs (a constant output gives its value)."""
        out = []
        for s in self.output_specs:
            if s.kind == OutputKind.USER_OUTPUT:
                out.append(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name)
        return tuple(out)

    @property
    def buffers_to_mutate(self) -> dict[str, str]:
        """Output node name -> buffer fqn it is written back to."""
        return {s.arg.name: s.target for s in self.output_specs if s.kind == OutputKind.BUFFER_MUTATION}

    @property
    def parameters_to_mutate(self) -> dict[str, str]:
        """Output node name -> parameter fqn it is written back to (an in-place update in ``forward``)."""
        return {s.arg.name: s.target for s in self.output_specs if s.kind == OutputKind.PARAMETER_MUTATION}

    @property
    def user_inputs_to_mutate(self) -> dict[str, str]:
        """Output node name -> user input placeholder it is written back to."""
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind == OutputKind.USER_INPUT_MUTATION}

    @property
    def output_tokens(self) -> tuple[str, ...]:
        return tuple(s.arg.name for s in self.output_specs if s.kind == OutputKind.TOKEN)

    @property
    def backward_signature(self) -> Optional[ExportBackwardSignature]:
        """The gradient outputs, or None when the program has no loss output."""
        loss = [s.arg.name for s in self.output_specs if s.kind == OutputKind.LOSS_OUTPUT]
        if not loss:
            return None
        return ExportBackwardSignature(
            {s.arg.name: s.target for s in self.output_specs if s.kind == OutputKind.GRADIENT_TO_PARAMETER},
            {s.arg.name: s.target for s in self.output_specs if s.kind == OutputKind.GRADIENT_TO_USER_INPUT},
            loss[0])

    @property
    def assertion_dep_token(self) -> Optional[Mapping[int, str]]:
        """Position -> name of the assertion dependency token output, if present.

        That is a ``TOKEN`` output not threaded from a ``TOKEN`` input (runtime
        assertions produce it).  The checks this package inserts are plain
        statements and need no token, so this is normally None.
        """
        inputs = set(self.input_tokens)
        for i, s in enumerate(self.output_specs):
            if s.kind == OutputKind.TOKEN and s.arg.name not in inputs:
                return {i: s.arg.name}
        return None

    # -- queries and edits ------------------------------------------------------
    def is_param(self, name: str) -> bool:
        """Whether placeholder ``name`` carries a lifted parameter."""
        return name in self.inputs_to_parameters

    def is_buffer(self, name: str) -> bool:
        """Whether placeholder ``name`` carries a lifted buffer."""
        return name in self.inputs_to_buffers

    def get_param_to_buffer(self) -> dict[str, str]:
        """Parameter fqn -> buffer fqn holding its gradient.

        A ``GRADIENT_TO_PARAMETER`` output whose value is also written to a
        buffer (a ``BUFFER_MUTATION`` output of the same node) binds the two.
        """
        to_buffer = self.buffers_to_mutate
        return {s.target: to_buffer[s.arg.name] for s in self.output_specs
                if s.kind == OutputKind.GRADIENT_TO_PARAMETER and s.arg.name in to_buffer}

    def replace_all_uses(self, old: str, new: str) -> None:
        """Rename graph value ``old`` to ``new`` in every input and output spec."""
        if not isinstance(old, str) or not isinstance(new, str):
            raise TypeError(f"replace_all_uses takes names (str), got {old!r}, {new!r}")
        for spec in (*self.input_specs, *self.output_specs):
            if _arg_name(spec.arg) == old:
                spec.arg.name = new
        for spec in self.output_specs:
            if spec.kind == OutputKind.USER_INPUT_MUTATION and spec.target == old:
                spec.target = new

    def get_replace_hook(self, replace_inputs: bool = False) -> Callable[[Any, Any, Any], None]:
        """A hook ``hook(old, new, user)`` for passes that replace node ``old`` by ``new``.

        When ``user`` is the output node (or None), output specs naming ``old``
        are renamed; with ``replace_inputs=True`` input specs are renamed too.
        ``old``/``new``/``user`` may be graph Nodes or names.
        """
        def name_of(v: Any) -> str:
            return v if isinstance(v, str) else v.name

        def hook(old: Any, new: Any, user: Any = None) -> None:
            old_name, new_name = name_of(old), name_of(new)
            if user is None or getattr(user, "op", "output") == "output":
                for spec in self.output_specs:
                    if _arg_name(spec.arg) == old_name:
                        spec.arg.name = new_name
            if replace_inputs:
                for spec in self.input_specs:
                    if _arg_name(spec.arg) == old_name:
                        spec.arg.name = new_name
        return hook

    def clone(self) -> "ExportGraphSignature":
        """Deep copy: specs and argument records are duplicated, not shared."""
        return copy.deepcopy(self)


@dataclass
class GraphSignature:
    """Compact signature for callers that build signatures directly.

    Placeholders are, in order: parameters, buffers, user inputs.  Parameters
    and buffers are fqns; ``non_persistent_buffers`` is a subset of ``buffers``;
    ``user_inputs`` are placeholder names.
    """

    parameters: tuple[str, ...]
    buffers: tuple[str, ...]
    non_persistent_buffers: tuple[str, ...]
    user_inputs: tuple[str, ...]

    def to_export_signature(self, placeholder_names: list[str], output_names: list[str]) -> ExportGraphSignature:
        """The full signature for a graph with these placeholder / output names.

        Raises:
            ValueError: the number of placeholders disagrees.
        """
        kinds = ([(InputKind.PARAMETER, t) for t in self.parameters]
                 + [(InputKind.BUFFER, t) for t in self.buffers]
                 + [(InputKind.USER_INPUT, None) for _ in self.user_inputs])
        if len(kinds) != len(placeholder_names):
            raise ValueError(f"GraphSignature lists {len(kinds)} inputs but the graph has "
                             f"{len(placeholder_names)} placeholders")
        inputs = [InputSpec(kind, TensorArgument(name), target,
                            (target not in self.non_persistent_buffers) if kind == InputKind.BUFFER else None)
                  for (kind, target), name in zip(kinds, placeholder_names)]
        outputs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(n)) for n in output_names]
        return ExportGraphSignature(inputs, outputs)


@dataclass(frozen=True)
class CallParameter:
    """One parameter of the exported callable, as :class:`inspect.Parameter` has it.

    ``kind`` is the lower-case name of ``inspect.Parameter.kind``
    (``"positional_or_keyword"``, ``"var_positional"``, ...).  ``default`` is
    the default value when ``has_default`` (a plain constant; for a default the
    archive cannot store, ``has_default`` is true and ``default`` is None with
    ``default_stored`` False).  The program's calls are bound to these
    parameters as eager Python binds them (:mod:`.call_binding`).
    """

    name: str
    kind: str
    has_default: bool = False
    default: Any = None
    default_stored: bool = True


@dataclass
class ModuleCallSignature:
    """The flat inputs/outputs of one module call and the pytree specs to rebuild them.

    ``in_spec`` describes ``(args, kwargs)``; ``out_spec`` the output structure.
    Two attributes beyond the seed's constructor (set after construction, root
    entry only): ``parameters`` lists the callable's :class:`CallParameter`
    records (None when Python gives no signature, or for an archive written
    before they were recorded) and ``forward_name`` its name, so a call of
    ``module()`` takes the same arguments, defaults included, as the model did.
    """

    inputs: list[ArgumentSpec]
    outputs: list[ArgumentSpec]
    in_spec: Any = None
    out_spec: Any = None
    forward_arg_names: Optional[list[str]] = None
    parameters: Optional[list[CallParameter]] = field(default=None, init=False)
    forward_name: Optional[str] = field(default=None, init=False)


@dataclass
class ModuleCallEntry:
    """One recorded module (``fqn`` ``""`` is the root) and its call signature."""

    fqn: str
    signature: Optional[ModuleCallSignature] = None
