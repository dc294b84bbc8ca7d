"""``ExportedProgram``: a captured graph with its state, signature and shape contract.

The graph is functional: every lifted parameter, buffer and constant is a
placeholder ahead of the user inputs (one :class:`InputSpec` each), and buffers
written by ``forward`` come back as ``BUFFER_MUTATION`` outputs ahead of the
user outputs.  :meth:`ExportedProgram.module` folds the state back in: the
returned :class:`ExportedModule` takes the user's ``(*args, **kwargs)`` exactly
as the original model did, runs the generated code (whose first statements are
the runtime input checks), writes mutated buffers back into its own state and
rebuilds the output pytree.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ..graph.codegen import GraphModule
from ..ops.registry import OPAQUE_PREFIX
from ..errors import ConstraintsExceededError
from ..graph.ir import Graph, Node
from .signature import (
    ConstantArgument, ExportGraphSignature, GraphSignature, InputKind, InputSpec, ModuleCallEntry,
    OutputKind, OutputSpec, TensorArgument,
)

__all__ = ["ExportedProgram", "ExportedModule"]

_STATE_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ)
_RESULT_KINDS = (OutputKind.USER_OUTPUT, OutputKind.LOSS_OUTPUT)


class ExportedProgram:
    """A validated graph together with its state and example bindings.

    Args:
        graph_module: the :class:`GraphModule` running the functional graph
            (flat inputs: one per placeholder; flat outputs: one per output spec).
        graph_signature: :class:`ExportGraphSignature` (one spec per placeholder
            and per output value, in graph order) or a compact
            :class:`GraphSignature` (converted with the graph's names).
        example_inputs: ``{"args": tuple, "kwargs": dict}`` the program was
            captured with (a ``(args, kwargs)`` pair is accepted too).
        dynamic_shapes: the user's spec, kept as given.
        module_call_graph: :class:`ModuleCallEntry` list; entry 0 is the root
            (``fqn == ""``) whose signature holds ``in_spec`` (of ``(args, kwargs)``),
            ``out_spec`` and ``forward_arg_names``.
        range_constraints: ``sympy.Symbol -> ValueRange`` (inclusive bounds).
        equality_constraints: list of ``EqualityConstraint``.
        verifier: optional object with ``check(program)``, called on construction.
        state_dict: fqn -> value of every lifted parameter and buffer
            (non-persistent buffers may be given here or in ``constants``).
        constants: fqn -> value of lifted constant tensors, custom objects and
            (optionally) non-persistent buffers.

    Raises:
        ValueError: the signature disagrees with the graph (counts, names) or
            lifted state is missing.
    """

    def __init__(self, graph_module: GraphModule, graph_signature: ExportGraphSignature | GraphSignature,
                 example_inputs: Any = None, dynamic_shapes: Any = None,
                 module_call_graph: Optional[list[ModuleCallEntry]] = None,
                 range_constraints: Optional[dict] = None, equality_constraints: Optional[list] = None,
                 verifier: Any = None, *, state_dict: Optional[Mapping[str, Any]] = None,
                 constants: Optional[Mapping[str, Any]] = None) -> None:
        self._graph_module = graph_module
        graph = graph_module.graph
        if isinstance(graph_signature, GraphSignature):
            outs = graph.output_node.args[0] if graph.output_node is not None else []
            graph_signature = graph_signature.to_export_signature(
                [n.name for n in graph.placeholders()],
                [v.name if isinstance(v, Node) else str(v) for v in outs])
        self._graph_signature = graph_signature
        if isinstance(example_inputs, tuple) and len(example_inputs) == 2:
            example_inputs = {"args": tuple(example_inputs[0]), "kwargs": dict(example_inputs[1])}
        self._example_inputs = example_inputs if example_inputs is not None else {}
        self._dynamic_shapes = dynamic_shapes
        self._module_call_graph = list(module_call_graph or [])
        self._range_constraints = dict(range_constraints or {})
        self._equality_constraints = list(equality_constraints or [])
        self._verifier = verifier
        self._state: dict[str, Any] = dict(state_dict or {})
        self._constants: dict[str, Any] = dict(constants or {})
        self._unlifted: Optional[ExportedModule] = None
        self._validate()
        if verifier is not None and hasattr(verifier, "check"):
            verifier.check(self)

    def _validate(self) -> None:
        placeholders = self.graph.placeholders()
        specs = self._graph_signature.input_specs
        if len(specs) != len(placeholders):
            raise ValueError(f"graph signature lists {len(specs)} inputs but the graph has "
                             f"{len(placeholders)} placeholders")
        for spec, node in zip(specs, placeholders):
            name = getattr(spec.arg, "name", None)
            if name is not None and not isinstance(spec.arg, ConstantArgument) and name != node.name:
                raise ValueError(f"input spec {name!r} does not match placeholder {node.name!r}")
            if spec.kind in _STATE_KINDS and self._lookup_state(spec) is _MISSING:
                raise ValueError(f"no value for lifted {spec.kind.name.lower()} {spec.target!r} "
                                 "(pass it in state_dict= or constants=)")
        out = self.graph.output_node
        n_out = len(out.args[0]) if out is not None else 0
        if len(self._graph_signature.output_specs) != n_out:
            raise ValueError(f"graph signature lists {len(self._graph_signature.output_specs)} outputs "
                             f"but the graph returns {n_out} values")

    def _lookup_state(self, spec: InputSpec) -> Any:
        if spec.target in self._state and spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            return self._state[spec.target]
        return self._constants.get(spec.target, _MISSING)

    # -- the seed's attributes -------------------------------------------------------
    @property
    def opaque_ops(self) -> tuple:
        """Sorted names of the overlay ops (``tpe.opaque.*``) the graph calls; ``()`` for every ``export`` program.

        Opaque ops are draft_export's stand-ins for numpy functions without a shape
        rule: they exist only in the capturing process (``graph_module.op_table``),
        never in the registry, so a serializer refuses a program with any (loading
        could not resolve them).
        """
        table = self._graph_module.op_table
        if not table:
            return ()
        return tuple(sorted({n.target for n in self._graph_module.graph.nodes
                             if n.op == "call_function" and n.target in table
                             and n.target.startswith(OPAQUE_PREFIX)}))

    @property
    def graph_module(self) -> GraphModule:
        return self._graph_module

    @property
    def graph(self) -> Graph:
        return self._graph_module.graph

    @property
    def graph_signature(self) -> ExportGraphSignature:
        return self._graph_signature

    @property
    def example_inputs(self) -> dict[str, Any]:
        """``{"args": tuple, "kwargs": dict}`` used for capture."""
        return self._example_inputs

    @property
    def dynamic_shapes(self) -> Any:
        return self._dynamic_shapes

    @property
    def module_call_graph(self) -> list[ModuleCallEntry]:
        return self._module_call_graph

    @property
    def range_constraints(self) -> dict:
        """``sympy.Symbol -> ValueRange`` for every size symbol of the program."""
        return self._range_constraints

    @property
    def equality_constraints(self) -> list:
        return self._equality_constraints

    @property
    def verifier(self) -> Any:
        return self._verifier

    @property
    def code(self) -> str:
        """Python source of the captured graph's generated forward."""
        return self._graph_module.code

    @property
    def state_dict(self) -> dict[str, Any]:
        """Values of the lifted parameters and persistent buffers, keyed by fqn, in input order."""
        out = {}
        for spec in self._graph_signature.input_specs:
            if spec.kind == InputKind.PARAMETER or (spec.kind == InputKind.BUFFER and spec.persistent):
                out[spec.target] = self._lookup_state(spec)
        return out

    @property
    def tensor_constants(self) -> dict[str, Any]:
        """Lifted non-parameter, non-buffer tensor values (``CONSTANT_TENSOR`` inputs), by fqn."""
        return {s.target: self._lookup_state(s) for s in self._graph_signature.input_specs
                if s.kind == InputKind.CONSTANT_TENSOR}

    @property
    def constants(self) -> dict[str, Any]:
        """Every lifted value that is not in ``state_dict``: constants, custom objects,
        non-persistent buffers."""
        return {s.target: self._lookup_state(s) for s in self._graph_signature.input_specs
                if s.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ)
                or (s.kind == InputKind.BUFFER and not s.persistent)}

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        for spec in self._graph_signature.input_specs:
            if spec.kind == InputKind.PARAMETER:
                yield spec.target, self._lookup_state(spec)

    def named_buffers(self) -> Iterator[tuple[str, Any]]:
        """Every lifted buffer, persistent or not."""
        for spec in self._graph_signature.input_specs:
            if spec.kind == InputKind.BUFFER:
                yield spec.target, self._lookup_state(spec)

    def parameters(self) -> Iterator[Any]:
        """Iterate over the captured module's parameters."""
        for _, value in self.named_parameters():
            yield value

    def buffers(self) -> Iterator[Any]:
        """Iterate over the captured module's buffers."""
        for _, value in self.named_buffers():
            yield value

    # -- running -----------------------------------------------------------------
    def module(self) -> "ExportedModule":
        """A self-contained callable taking the user arguments, with the lifted state folded in.

        The module owns a copy of the state mapping (arrays are shared, not
        copied); buffers the program mutates are written back into the module's
        state, not into this program.  The result is cached until
        :meth:`invalidate_unlifted`.
        """
        if self._unlifted is None:
            self._unlifted = ExportedModule(self)
        return self._unlifted

    def invalidate_unlifted(self) -> None:
        """Drop the cached module so the next :meth:`module` call rebuilds it (state changes dropped)."""
        self._unlifted = None

    @staticmethod
    def call_exported(program: "ExportedProgram") -> Callable[..., Any]:
        """A function running ``program`` on user ``(*args, **kwargs)`` through the flat contract.

        Each call flattens the arguments, prepends the program's lifted state,
        runs the graph (input checks included) and rebuilds the user outputs.
        It is stateless: buffer mutations are returned by the graph but not
        kept anywhere (use :meth:`module` for a stateful module).
        """
        runner = ExportedModule(program, stateful=False)

        def call(*args: Any, **kwargs: Any) -> Any:
            return runner(*args, **kwargs)
        call.__doc__ = f"Run the exported program (inputs {runner.input_names})."
        return call

    def run_decompositions(self, decomp_table: Any = None) -> "ExportedProgram":
        """Return a copied program after applying registered graph rewrites.

        Args:
            decomp_table: a ``CustomDecompTable`` or mapping from graph target (the op
                callable, a method name such as ``"var"``, or the registry name such as
                ``"numpy.var"``) to a builder ``builder(graph, node) -> value``; the
                builder creates the replacement nodes and returns the value users
                consume.  *optional*, defaults to ``default_decompositions()``.

        Returns:
            A new ``ExportedProgram`` with the same signature, contract (input checks,
            range and equality constraints) and numerics; ``self`` is untouched.
            Nodes whose target has no entry are left as they are.

        Raises:
            DecompositionError: a builder's nodes need a size requirement the
                program's contract does not imply.
        """
        from .decompositions.table import run_decompositions as _run

        return _run(self, decomp_table)

    def serialize(self, opset_version: Any = None, pickle_protocol: int = 4) -> Any:
        """Return serialized program artifacts (JSON program + arrays).

        Args:
            opset_version: *optional* ``{namespace: int}`` recorded in the document.
            pickle_protocol: validated (0..5) and recorded only; nothing is pickled.

        Returns:
            ``serde.SerializedArtifact``: the program JSON bytes (graph, signature,
            contract, module call graph, dynamic_shapes) plus the state dict,
            constants and example inputs as dicts of numpy arrays.
        """
        from ..serde import serialize_program

        return serialize_program(self, opset_version=opset_version, pickle_protocol=pickle_protocol)

    @classmethod
    def deserialize(cls, artifact: Any, state_dict: Any = None, constants: Any = None,
                    example_inputs: Any = None) -> "ExportedProgram":
        """Rebuild a program from :meth:`serialize` artifacts.

        ``state_dict``/``constants``/``example_inputs`` override the arrays carried by
        the artifact.  Never runs code from it: ops resolve through the op registry
        by name only.

        Raises:
            ArchiveError: anything malformed, unknown or unsafe in the artifact.
        """
        from ..serde import deserialize_program

        return deserialize_program(artifact, state_dict=state_dict, constants=constants,
                                   example_inputs=example_inputs)

    # -- printing -----------------------------------------------------------------
    def __str__(self) -> str:
        code = "\n".join(f"    {line}" for line in self.code.rstrip().splitlines())
        sig = self._graph_signature
        def specs(specs: list) -> str:
            return ", ".join(f"{getattr(s.arg, 'name', '?')}: {s.kind.name}" + (f" {s.target}" if s.target else "")
                             for s in specs)
        inputs, outputs = specs(sig.input_specs), specs(sig.output_specs)
        ranges = ", ".join(f"{sym}: {vr}" for sym, vr in
                           sorted(self._range_constraints.items(), key=lambda kv: str(kv[0])))
        return (f"ExportedProgram:\n{code}\n\nGraph signature:\n    inputs: {inputs}\n    outputs: {outputs}\n"
                f"Range constraints: {{{ranges}}}\n")

    def __repr__(self) -> str:
        return str(self)


_MISSING = object()


class ExportedModule:
    """The callable view of an :class:`ExportedProgram` with its state folded back in.

    ``m(*args, **kwargs)`` takes the user arguments as the original model did.

    Raises (on call):
        ConstraintsExceededError: an input breaks the shape contract, or a
            constant (non-array) input differs from the exported value.
        TypeError: wrong input dtype, or arguments whose structure differs from
            the exported call.
    """

    def __init__(self, program: ExportedProgram, stateful: bool = True) -> None:
        self._program = program
        self._gm = program.graph_module
        sig = program.graph_signature
        self._specs = list(sig.input_specs)
        self._stateful = stateful
        # Own copy of the mapping, so write-backs do not reach the program.
        self._state = {s.target: program._lookup_state(s) for s in self._specs if s.kind in _STATE_KINDS}
        self._user_positions = [i for i, s in enumerate(self._specs) if s.kind == InputKind.USER_INPUT]
        self._constant_inputs = {k: s.arg.value for k, s in
                                 enumerate(s for s in self._specs if s.kind == InputKind.USER_INPUT)
                                 if isinstance(s.arg, ConstantArgument)}
        self._template = [None] * len(self._specs)
        out_specs = sig.output_specs
        self._mutations = [(i, s.target) for i, s in enumerate(out_specs)
                           if s.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION)]
        self._input_mutations = [(i, s.target) for i, s in enumerate(out_specs)
                                 if s.kind == OutputKind.USER_INPUT_MUTATION]
        self._results = [i for i, s in enumerate(out_specs) if s.kind in _RESULT_KINDS]
        root = program.module_call_graph[0].signature if program.module_call_graph else None
        self._in_spec = getattr(root, "in_spec", None)
        self._out_spec = getattr(root, "out_spec", None)
        self._arg_names = list(getattr(root, "forward_arg_names", None) or [])
        self.input_names = [s.arg.name for s in self._specs if s.kind == InputKind.USER_INPUT
                            and hasattr(s.arg, "name")]
        self._state_positions = [(i, s.target) for i, s in enumerate(self._specs) if s.kind in _STATE_KINDS]
        # Fast path: every top-level argument was a single array leaf, so a call
        # with plain ndarrays in the same places needs no pytree walk.
        spec = self._in_spec
        self._fast = None
        if (spec is not None and spec.kind == "tuple" and len(spec.children) == 2
                and all(c.is_leaf() for c in spec.children[0].children)
                and all(c.is_leaf() for c in spec.children[1].children)):
            self._fast = (len(spec.children[0].children), tuple(spec.children[1].context))

    # -- state views ---------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._gm.graph

    @property
    def code(self) -> str:
        return self._gm.code

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        for s in self._specs:
            if s.kind == InputKind.PARAMETER:
                yield s.target, self._state[s.target]

    def named_buffers(self) -> Iterator[tuple[str, Any]]:
        for s in self._specs:
            if s.kind == InputKind.BUFFER:
                yield s.target, self._state[s.target]

    def parameters(self) -> Iterator[Any]:
        return (v for _, v in self.named_parameters())

    def buffers(self) -> Iterator[Any]:
        return (v for _, v in self.named_buffers())

    def state_dict(self) -> dict[str, Any]:
        """Parameters and persistent buffers, by fqn (current values, mutations included)."""
        return {s.target: self._state[s.target] for s in self._specs
                if s.kind == InputKind.PARAMETER or (s.kind == InputKind.BUFFER and s.persistent)}

    # -- calling -----------------------------------------------------------------
    def _flatten_user(self, args: tuple, kwargs: dict) -> list:
        from ..pytree import tree_flatten

        spec = self._in_spec
        if spec is not None and spec.kind == "tuple" and len(spec.children) == 2:
            args, kwargs = self._normalize(args, kwargs, spec)
        leaves, got = tree_flatten((tuple(args), dict(kwargs)))
        if spec is not None and got != spec:
            # Dicts built in another key order are the same input to the model.
            leaves, got = tree_flatten(_conform((tuple(args), dict(kwargs)), spec))
        if spec is not None and got != spec:
            raise TypeError(f"the exported program was called with inputs structured as {got!r}, "
                            f"but it was exported for {spec!r}")
        return leaves

    def _normalize(self, args: tuple, kwargs: dict, spec: Any) -> tuple[tuple, dict]:
        """Match the exported split of positional/keyword arguments and kwargs order."""
        n_args = len(spec.children[0].children)
        kw_order = list(spec.children[1].context)
        if len(args) < n_args and self._arg_names:
            args = list(args)
            kwargs = dict(kwargs)
            for name in self._arg_names[len(args):n_args]:
                if name not in kwargs:
                    break
                args.append(kwargs.pop(name))
        elif len(args) > n_args and self._arg_names:
            extra = dict(zip(self._arg_names[n_args:len(args)], args[n_args:]))
            args, kwargs = args[:n_args], {**extra, **kwargs}
        if list(kwargs) != kw_order and set(kwargs) == set(kw_order):
            kwargs = {k: kwargs[k] for k in kw_order}
        return tuple(args), kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast
        if (fast is not None and len(args) == fast[0] and tuple(kwargs) == fast[1]
                and all(type(a) is np.ndarray for a in args) and all(type(v) is np.ndarray for v in kwargs.values())):
            leaves = [*args, *kwargs.values()]
        else:
            leaves = self._flatten_user(args, kwargs)
        if len(leaves) != len(self._user_positions):
            raise TypeError(f"the exported program takes {len(self._user_positions)} user input values, "
                            f"got {len(leaves)}")
        for k, value in self._constant_inputs.items():
            if not _same_constant(leaves[k], value):
                raise ConstraintsExceededError(
                    f"input {self.input_names[k] if k < len(self.input_names) else k} = {leaves[k]!r}, "
                    f"but the program was exported with the constant {value!r}")
        flat = self._template.copy()
        for spec_i, leaf in zip(self._user_positions, leaves):
            flat[spec_i] = leaf
        state = self._state
        for i, target in self._state_positions:
            flat[i] = state[target]
        outs = self._gm(*flat)
        if self._stateful:
            for i, target in self._mutations:
                state[target] = outs[i]
        for i, target in self._input_mutations:
            pos = next(k for k, s in enumerate(self._specs) if getattr(s.arg, "name", None) == target)
            dest = flat[pos]
            if isinstance(dest, np.ndarray):
                np.copyto(dest, outs[i])
        results = [outs[i] for i in self._results]
        if self._out_spec is not None:
            from ..pytree import tree_unflatten

            return tree_unflatten(results, self._out_spec)
        return results[0] if len(results) == 1 else tuple(results)

    forward = __call__

    def __repr__(self) -> str:
        return f"ExportedModule(\n{self.code})"


def _conform(value: Any, spec: Any) -> Any:
    """``value`` with every dict reordered to the key order ``spec`` records (same keys only)."""
    kind = getattr(spec, "kind", None)
    if kind == "dict" and type(value) is dict and set(value) == set(spec.context):
        return {k: _conform(value[k], c) for k, c in zip(spec.context, spec.children)}
    if kind in ("tuple", "list") and type(value) in (tuple, list) and len(value) == len(spec.children):
        return type(value)(_conform(v, c) for v, c in zip(value, spec.children))
    return value


def _same_constant(got: Any, want: Any) -> bool:
    try:
        return type(got) is type(want) and bool(got == want)
    except Exception:  # an object whose == is not a plain bool
        return got is want


def signature_from_graph(graph: Graph, kinds: Mapping[str, tuple] | None = None) -> ExportGraphSignature:
    """A signature treating every placeholder as a user input and every output as a user output,
    except placeholders named in ``kinds`` (``name -> (InputKind, target[, persistent])``).

    A convenience for hand-built graphs and tests.
    """
    kinds = dict(kinds or {})
    inputs = []
    for node in graph.placeholders():
        kind, target, *rest = kinds.get(node.name, (InputKind.USER_INPUT, None))
        persistent = rest[0] if rest else (True if kind == InputKind.BUFFER else None)
        inputs.append(InputSpec(kind, TensorArgument(node.name), target, persistent))
    outs = graph.output_node.args[0] if graph.output_node is not None else []
    outputs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(v.name) if isinstance(v, Node)
                          else ConstantArgument(f"out{i}", v)) for i, v in enumerate(outs)]
    return ExportGraphSignature(inputs, outputs)
