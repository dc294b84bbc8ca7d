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

import inspect
import sys
from collections.abc import Mapping
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ..graph.codegen import GraphModule, PythonCode
from ..ops.registry import OPAQUE_PREFIX
from ..errors import CaptureError, ConstraintsExceededError
from ..graph.ir import Graph, Namespace, Node
from ..graph.stored import SizeExpr, holds_stored, mark_stored
from .call_binding import _KINDS, CallBinder, same_constant
from .signature import (
    ConstantArgument, ExportGraphSignature, GraphSignature, InputKind, InputSpec, ModuleCallEntry,
    OutputKind, OutputSpec, TensorArgument,
)

__all__ = ["ExportedProgram", "ExportedModule", "StateModule"]

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

    Ownership: the program keeps its own read-only copy of every state and
    constant array it is given, so writing into the model's arrays after
    ``export`` (``m.fc.weight[...] = 0``) changes nothing the program computes,
    and writing into ``ep.state_dict[...]`` raises numpy's read-only error.  An
    array that is already read-only all the way down to memory nobody can
    write through (another program's copy, an archive loaded with
    ``mmap=True``, which maps the file read-only) is kept as it is, not copied.

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
        if isinstance(graph_signature, GraphSignature):
            graph = _raw_graph(graph_module)  # as it is: a loaded graph's names are all this reads
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
        # a loaded program's keys are stored symbols (SizeExpr): sympy when first read
        self._range_constraints = dict(range_constraints or {})
        self._ranges_stored = any(type(k) is SizeExpr for k in self._range_constraints)
        self._equality_constraints = list(equality_constraints or [])
        self._verifier = verifier
        self._state: dict[str, Any] = {k: _owned(v) for k, v in (state_dict or {}).items()}
        self._constants: dict[str, Any] = {k: _owned(v) for k, v in (constants or {}).items()}
        self._unlifted: Optional[ExportedModule] = None
        self._validate()
        if verifier is not None and hasattr(verifier, "check"):
            verifier.check(self)

    def _validate(self) -> None:
        # names and counts only: neither materializes a loaded graph nor builds a deferred one
        outline = self._graph_module.outline()
        placeholders = outline.placeholders
        specs = self._graph_signature.input_specs
        if len(specs) != len(placeholders):
            raise ValueError(f"graph signature lists {len(specs)} inputs but the graph has "
                             f"{len(placeholders)} placeholders")
        for spec, placeholder in zip(specs, placeholders):
            name = getattr(spec.arg, "name", None)
            if name is not None and not isinstance(spec.arg, ConstantArgument) and name != placeholder:
                raise ValueError(f"input spec {name!r} does not match placeholder {placeholder!r}")
            if spec.kind in _STATE_KINDS and self._lookup_state(spec) is _MISSING:
                raise ValueError(f"no value for lifted {spec.kind.name.lower()} {spec.target!r} "
                                 "(pass it in state_dict= or constants=)")
        n_out = outline.n_outputs
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
        """``sympy.Symbol -> ValueRange`` for every size symbol of the program.

        A loaded program builds the sympy symbols on first access (loading and running
        need none; cold start, issue 19)."""
        if self._ranges_stored:
            self._range_constraints = {k.to_sympy() if type(k) is SizeExpr else k: v
                                       for k, v in self._range_constraints.items()}
            self._ranges_stored = False
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
        """A self-contained module with the lifted state folded back in, taking the user arguments.

        The seed's rule: state placeholders are rewritten into attribute reads
        on a fresh module that owns the parameter, buffer and constant values.
        The result is an :class:`ExportedModule` (a :class:`GraphModule`) whose
        ``.code`` takes the user arguments only and reads ``self.fc.weight``;
        ``m.fc.weight`` is the array.  ``unflatten`` is the other view: it
        rebuilds the call structure (one submodule per module call), where
        ``module()`` is one flat forward over attributes.

        Caching and state (one rule):

        - ``module()`` is cached: every call returns the same module until
          :meth:`invalidate_unlifted`;
        - state changes made through it (buffers its forward writes, arrays
          assigned to its attributes) stay in that module;
        - this program's ``state_dict``, ``named_buffers()`` and ``save`` keep
          the program's own values, whatever the module did;
        - :meth:`invalidate_unlifted` drops the cached module and so its state
          changes: the next ``module()`` starts from the program's values again.
          (The seed's "pass rebind" has no parameter here; this is how state
          changes are dropped.)

        The module's arrays start as the program's, which are read-only (the
        program owns them, see the class docstring): write into a copy and
        assign it (``m.fc.weight = w``).
        """
        if self._unlifted is None:
            self._unlifted = ExportedModule(self)
        return self._unlifted

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A program is not called itself (torch's rule): its :meth:`module` is.

        Raises:
            RuntimeError: always, saying to call ``ep.module()(...)``.
        """
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead: ep.module()(*args, **kwargs) runs it with its input checks")

    def invalidate_unlifted(self) -> None:
        """Drop the cached :meth:`module`, and with it every state change made through it.

        The next ``module()`` call builds a fresh module from the program's own
        values (``state_dict`` and ``constants``, which no module call changes).
        """
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
                           sorted(self.range_constraints.items(), key=lambda kv: str(kv[0])))
        return (f"ExportedProgram:\n{code}\n\nGraph signature:\n    inputs: {inputs}\n    outputs: {outputs}\n"
                f"Range constraints: {{{ranges}}}\n")

    def __repr__(self) -> str:
        return str(self)


_MISSING = object()


def _raw_graph(gm: Any) -> Graph:
    """``gm``'s graph without materializing a loaded graph's stored expressions (for readers of
    names and structure, and codegen, which prints them; everything else reads ``gm.graph``)."""
    built = getattr(gm, "_built_graph", None)
    return built() if built is not None else gm.graph


def _owned(value: Any) -> Any:
    """``value`` as the program keeps it: a read-only array no one else can write.

    An ndarray is copied unless it is read-only down to its memory (a
    read-only array owning its data, a read-only file mapping); the copy is
    then made read-only.
    Non-arrays (custom objects) are kept as given.
    """
    if not isinstance(value, np.ndarray):
        return value
    if not _frozen(value):
        value = value.copy()
        value.setflags(write=False)
    return value


def _frozen(arr: np.ndarray) -> bool:
    """Nobody can write ``arr`` without first making it writable: it is read-only, and so is
    what it views (numpy refuses to make a view writable over a read-only base or buffer)."""
    if arr.flags.writeable:
        return False
    probe = arr.view()
    try:
        probe.setflags(write=True)
    except ValueError:
        return True
    return False


class StateModule:
    """One level of the state hierarchy of :meth:`ExportedProgram.module`: submodules and arrays
    as attributes (``module.sub.fc.weight``), nothing else.

    A ModuleList index is an attribute too: ``getattr(module.layers, "0")``.
    """

    def __repr__(self) -> str:
        return f"StateModule({', '.join(vars(self))})"


# Top-level state names the module cannot hold as plain attributes (they would
# hide its own API); such state is read as ``self._shadowed.<name>``.
_OWN_ATTRS = frozenset({"graph", "op_table", "input_names"})


def _container_for_leaf(call: tuple, spec: Any, arg_names: list) -> Optional[tuple[str, Any]]:
    """The first input (its text and value) where ``spec`` has an array leaf but the call passed a
    list, tuple or dict (``[[1.0, 2.0]]`` for an array input), else None.

    ``call`` is ``(args, kwargs)``; ``spec`` the exported ``(args, kwargs)`` tree spec."""
    args, kwargs = call
    arg_specs, kw_specs = spec.children
    stack: list = []
    if kw_specs.kind == "dict":
        stack += [(kwargs[k], c, str(k)) for k, c in zip(kw_specs.context, kw_specs.children) if k in kwargs]
    if arg_specs.kind == "tuple" and len(args) == len(arg_specs.children):
        stack += [(a, c, arg_names[i] if i < len(arg_names) else f"args[{i}]")
                  for i, (a, c) in reversed(list(enumerate(zip(args, arg_specs.children))))]
    while stack:
        v, sp, where = stack.pop()
        if sp.is_leaf():
            if isinstance(v, (list, tuple, dict)):
                return where, v
        elif sp.kind in ("tuple", "list") and isinstance(v, (list, tuple)) and len(v) == len(sp.children):
            stack += [(v[i], sp.children[i], f"{where}[{i}]") for i in reversed(range(len(v)))]
        elif sp.kind == "dict" and isinstance(v, dict):
            stack += [(v[k], c, f"{where}[{k!r}]") for k, c in zip(sp.context, sp.children) if k in v]
    return None


class ExportedModule(GraphModule):
    """:meth:`ExportedProgram.module`: a :class:`GraphModule` whose forward reads the lifted
    state as attributes, taking the user's arguments only.

    The program's state placeholders become ``get_attr`` nodes, so the generated
    code reads ``self.fc.weight``.  ``m.graph`` is that graph, a copy of the
    program's made when first read; the forward itself is generated from the
    program's graph with the state placeholders read as attributes (the same
    source, without the copy) and shared by every view of the program.  The state
    hierarchy hangs off the module as :class:`StateModule` attributes
    (``m.fc.weight`` is an array, ``m.fc`` a StateModule).
    ``m(*args, **kwargs)`` takes the user arguments as the
    original model did (defaults and keywords bound as eager Python binds them,
    :mod:`.call_binding`), runs the generated code (whose first statements are
    the runtime input checks), writes mutated buffers back into its own
    attributes and rebuilds the output pytree.

    State: the module starts from the program's arrays (shared, read-only: an
    in-place write raises numpy's read-only error; assign a new array instead,
    ``m.fc.weight = w``).  Assignments and buffer mutations stay in this module:
    the program's ``state_dict`` and ``save`` keep the program's values.

    During a capture (another model calling it with traced inputs, or
    ``export(m, ...)``, torch's retraceability) the generated code does not run:
    the graph runs through the capture (:mod:`.retrace`), its sizes over the
    caller's and its input contract as the caller's requirements; ``export(m)``
    lifts the module's current state as parameters and buffers again.

    Raises (on call):
        ConstraintsExceededError: an input breaks the shape contract, or a
            non-array argument differs from its exported value.
        TypeError: wrong input dtype, arguments eager Python would refuse, or
            arguments whose structure differs from the exported call.
    """

    def __init__(self, program: ExportedProgram, stateful: bool = True) -> None:
        sig = program.graph_signature
        specs = list(sig.input_specs)
        state_specs = [s for s in specs if s.kind in _STATE_KINDS]
        paths = {s.target: _attr_path(s.target) for s in state_specs}
        # placeholder name -> attribute path of each state input; the program's graph is read
        # only when this view's source or own graph is (:attr:`_source`): a loaded program's
        # may not be built yet
        self._read_paths = {s.arg.name: paths[s.target] for s in state_specs}
        self._reads_of: Optional[dict[Node, str]] = None
        self._program = program
        owner = program.graph_module
        # the graph this view is of, taken now when it exists: a graph the program is given
        # later is not this view's (its forward is this one's)
        self._source_graph: Optional[Graph] = owner._graph if owner._build is None else None
        if owner.derived_code is None:
            # The first view of this program generates and compiles its forward; the
            # others (module() after invalidate_unlifted, runners, the eager check)
            # share that code: their graphs would be identical copies.
            super().__init__(None, owner.op_table, lint=False, generate=True)  # a view of a linted graph
            owner.derived_code = (self._pycode, self._fn)
        else:
            super().__init__(None, owner.op_table, lint=False)
            self._pycode, self._fn = owner.derived_code
        self._specs = specs
        self._stateful = stateful
        self._paths = paths
        self._shadowed = StateModule()
        for s in state_specs:
            self._set_path(paths[s.target], program._lookup_state(s))
        user_specs = [s for s in specs if s.kind == InputKind.USER_INPUT]
        self._n_user = len(user_specs)
        self._constant_inputs = {k: s.arg.value for k, s in enumerate(user_specs)
                                 if isinstance(s.arg, ConstantArgument)}
        out_specs = sig.output_specs
        self._mutations = [(i, s.target) for i, s in enumerate(out_specs)
                           if s.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION)]
        user_pos = {getattr(s.arg, "name", None): k for k, s in enumerate(user_specs)}
        self._input_mutations = [(i, user_pos[s.target]) for i, s in enumerate(out_specs)
                                 if s.kind == OutputKind.USER_INPUT_MUTATION]
        self._results = [i for i, s in enumerate(out_specs) if s.kind in _RESULT_KINDS]
        root = program.module_call_graph[0].signature if program.module_call_graph else None
        self._in_spec = getattr(root, "in_spec", None)
        self._out_spec = getattr(root, "out_spec", None)
        self._arg_names = list(getattr(root, "forward_arg_names", None) or [])
        self.input_names = [s.arg.name for s in user_specs if hasattr(s.arg, "name")]
        spec = self._in_spec
        two = spec is not None and spec.kind == "tuple" and len(spec.children) == 2
        self._binder = None
        params = getattr(root, "parameters", None)
        if params is not None:
            self._expose_signature(params)
        if two and params is not None:
            def example() -> Optional[tuple[tuple, dict]]:
                ex = program.example_inputs
                return (tuple(ex["args"]), dict(ex["kwargs"])) if ex and "args" in ex else None
            self._binder = CallBinder(params, getattr(root, "forward_name", None), len(spec.children[0].children),
                                      list(spec.children[1].context), example)
        # Fast path: every top-level argument was a single array leaf, so a call
        # with plain ndarrays in the same places needs no pytree walk.
        self._fast = None
        if (two and all(c.is_leaf() for c in spec.children[0].children)
                and all(c.is_leaf() for c in spec.children[1].children)):
            self._fast = (len(spec.children[0].children), tuple(spec.children[1].context))

    # -- the view's graph ---------------------------------------------------------
    @property
    def _source(self) -> Graph:
        """The program's graph as it is (a loaded one keeps its stored expressions: codegen
        prints them), built now if it was deferred; the same graph for this view's life."""
        graph = self._source_graph
        if graph is None:
            graph = self._source_graph = _raw_graph(self._program.graph_module)
        return graph

    @property
    def _reads(self) -> dict[Node, str]:
        """Each state placeholder of :attr:`_source` -> the attribute path it is read from."""
        if self._reads_of is None:
            by_name = self._read_paths
            self._reads_of = {n: by_name[n.name] for n in self._source.placeholders() if n.name in by_name}
        return self._reads_of

    @property
    def _graph(self) -> Graph:
        """This view's own graph: a copy of the program's where each state placeholder is an
        attribute read (``get_attr``), made when first read; loading and running never read
        it (the forward is generated from the program's graph, :meth:`_generate`)."""
        graph = self._own_graph
        if graph is None:
            source = self._source
            graph, mapping = source.copy()
            if holds_stored(source):
                mark_stored(graph)
            for node, path in self._reads.items():  # the state placeholder becomes an attribute read
                mapping[node].op, mapping[node].target = "get_attr", path
            self._own_graph = graph
        return graph

    @_graph.setter
    def _graph(self, graph: Optional[Graph]) -> None:
        self._own_graph = graph

    def _generate(self) -> PythonCode:
        if self._pycode is None and self._own_graph is None:
            # the source of the copy :attr:`_graph` would be, generated without making it
            self._pycode = self._python_code(self._source, self._reads)
        return super()._generate()

    # -- state -----------------------------------------------------------------
    def _set_path(self, path: str, value: Any) -> None:
        *parents, leaf = path.split(".")
        obj = self
        for part in parents:
            child = getattr(obj, part, None)
            if not isinstance(child, StateModule):
                child = StateModule()
                object.__setattr__(obj, part, child)
            obj = child
        object.__setattr__(obj, leaf, value)

    def _get_path(self, path: str) -> Any:
        obj = self
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def _state_of(self, kinds: tuple, persistent_only: bool = False) -> Iterator[tuple[str, Any]]:
        for s in self._specs:
            if s.kind in kinds and not (persistent_only and s.kind == InputKind.BUFFER and not s.persistent):
                yield s.target, self._get_path(self._paths[s.target])

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        """``(fqn, array)`` of every parameter, current values."""
        return self._state_of((InputKind.PARAMETER,))

    def named_buffers(self) -> Iterator[tuple[str, Any]]:
        """``(fqn, array)`` of every buffer (persistent or not), current values, mutations included."""
        return self._state_of((InputKind.BUFFER,))

    def parameters(self) -> Iterator[Any]:
        return (v for _, v in self.named_parameters())

    def buffers(self) -> Iterator[Any]:
        return (v for _, v in self.named_buffers())

    def state_dict(self) -> dict[str, Any]:
        """Parameters and persistent buffers, by fqn (current values, mutations included)."""
        return dict(self._state_of((InputKind.PARAMETER, InputKind.BUFFER), persistent_only=True))

    # -- calling -----------------------------------------------------------------
    def _flatten_user(self, args: tuple, kwargs: dict) -> list:
        from ..pytree import tree_flatten

        spec = self._in_spec
        if self._binder is not None:
            args, kwargs = self._binder.bind(args, kwargs)
        elif spec is not None and spec.kind == "tuple" and len(spec.children) == 2:
            args, kwargs = self._normalize(args, kwargs, spec)
        leaves, got = tree_flatten((tuple(args), dict(kwargs)))
        if spec is not None and got != spec:
            # Dicts built in another key order are the same input to the model.
            leaves, got = tree_flatten(_conform((tuple(args), dict(kwargs)), spec))
        if spec is not None and got != spec:
            container = _container_for_leaf((tuple(args), dict(kwargs)), spec, self._arg_names)
            if container is not None:
                where, value = container
                raise TypeError(f"{where} must be a numpy array (the program was exported with an array there), "
                                f"got a {type(value).__name__}: pass np.asarray({where if where.isidentifier() else '...'})")
            raise TypeError(f"the exported program was called with inputs structured as {got!r}, "
                            f"but it was exported for {spec!r}")
        return leaves

    def _normalize(self, args: tuple, kwargs: dict, spec: Any) -> tuple[tuple, dict]:
        """Without the callable's parameters (an archive written before they were recorded):
        match the exported split of positional/keyword arguments and kwargs order."""
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
            leaves = self._checked_leaves([*args, *kwargs.values()])
        else:
            leaves = self._user_leaves(args, kwargs)
            tracer = _capture_of(leaves)
            if tracer is not None:
                return self._retraced(leaves, tracer)
        if self._input_mutations:
            self._refuse_aliased_written_inputs(leaves)
        outs = GraphModule.forward(self, *leaves)
        if self._stateful:
            for i, target in self._mutations:
                self._set_path(self._paths[target], outs[i])
        return self._finish(leaves, outs)

    forward = __call__

    def _user_leaves(self, args: tuple, kwargs: dict) -> list:
        """The user input values of a call, one per user input spec, checked against the
        exported call's structure and constants.

        Raises:
            TypeError: arguments eager Python would refuse, or structured otherwise.
            ConstraintsExceededError: a non-array argument differs from its exported value.
        """
        return self._checked_leaves(self._flatten_user(args, kwargs))

    def _checked_leaves(self, leaves: list) -> list:
        if len(leaves) != self._n_user:
            raise TypeError(f"the exported program takes {self._n_user} user input values, got {len(leaves)}")
        for k, value in self._constant_inputs.items():
            if not same_constant(leaves[k], value):
                raise ConstraintsExceededError(
                    f"input {self.input_names[k] if k < len(self.input_names) else k} = {leaves[k]!r:.80}, "
                    f"but the program was exported with the constant {value!r:.80}")
        return leaves

    def _finish(self, leaves: list, outs: list) -> Any:
        """After the graph ran: written user inputs updated (as eager numpy changes them), and the
        output pytree rebuilt from the user outputs."""
        for i, k in self._input_mutations:
            dest = leaves[k]
            if isinstance(dest, np.ndarray):
                np.copyto(dest, outs[i])
        results = [outs[i] for i in self._results]
        if self._out_spec is not None:
            from ..pytree import tree_unflatten

            return tree_unflatten(results, self._out_spec)
        return results[0] if len(results) == 1 else tuple(results)

    def _state_updates(self) -> list[tuple[int, str, str]]:
        """``(output index, fqn, "buffer" | "parameter")`` of every state update the program returns."""
        kinds = {OutputKind.BUFFER_MUTATION: "buffer", OutputKind.PARAMETER_MUTATION: "parameter"}
        out_specs = self._program.graph_signature.output_specs
        return [(i, target, kinds[out_specs[i].kind]) for i, target in self._mutations]

    def _retraced(self, leaves: list, tracer: Any) -> Any:
        """A call inside another capture: the graph re-run through it (:mod:`.retrace`).

        Raises:
            CaptureError: the program updates a buffer or parameter of this module (a
                stateful module, called inside another model): the caller's program cannot
                hold this module's state.
        """
        # imported here: only while a capture runs (capture imports sympy, which loading a
        # program must not, issue 19)
        from ..capture.frames import user_source
        from . import retrace

        outs = retrace.retrace(self._program, leaves, lambda spec: self._get_path(self._paths[spec.target]),
                               tracer, user_source(2))
        updates = self._state_updates()
        if updates and self._stateful:
            names = ", ".join(repr(t) for _i, t, _k in updates)
            raise CaptureError(
                f"the model calls an exported module whose forward updates its state ({names}); the "
                f"program being exported cannot hold that module's state, so the update would be lost. "
                f"Export the exported module itself (export(ep.module(), ...) lifts its buffers and "
                f"parameters), or call ExportedProgram.call_exported(ep) (a stateless runner) inside "
                f"the model\n  at {user_source(2)}")
        return self._finish(leaves, outs)

    def _fresh_copy(self, value_of: Callable[[str, Any], Any]) -> "ExportedModule":
        """A new module of the same program whose state is ``value_of(kind, value)`` of this
        module's current state (``kind``: ``"parameter"``, ``"buffer"`` or ``"constant"``), as
        :func:`~tensorplay_export.capture.state.clone_module_tree` clones a Module's."""
        fresh = ExportedModule(self._program, self._stateful)
        kinds = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer"}
        for s in self._specs:
            if s.kind in _STATE_KINDS:
                path = self._paths[s.target]
                fresh._set_path(path, value_of(kinds.get(s.kind, "constant"), self._get_path(path)))
        return fresh

    def _tpe_capture_module(self) -> Any:
        """An ``nn.Module`` over this module's current state whose forward re-runs the program
        through the capture (:func:`.retrace.capture_view`), or None; what ``export(ep.module())``
        captures, so the state is lifted as parameters and buffers again."""
        from .retrace import capture_view  # only while a capture runs: it imports capture (sympy)

        return capture_view(self)

    def _tpe_capture_submodule(self) -> Any:
        """The view :meth:`_tpe_capture_module` gives, for this module held as a plain attribute
        of a model being exported (``self.inner = ep.module()``): its state is lifted under that
        attribute (``inner.linear.weight``) and its updates are the new program's, as torch's
        ``ep.module()`` is a submodule.  None for a stateless runner (``call_exported``), which
        holds no state of its own to place: its arrays stay constants of the new program."""
        return self._tpe_capture_module() if self._stateful else None

    def _refuse_aliased_written_inputs(self, leaves: list) -> None:
        """An input the program writes into may not share memory with another input: eager
        numpy would see the write through the other one (``f(x, x)``, overlapping views),
        the program computes each from its own value.

        Raises:
            ValueError: naming both inputs, saying to pass separate arrays (copies).
        """
        hit = self._aliased_written_input(leaves)
        if hit is not None:
            a, b = hit
            raise ValueError(f"inputs {a} and {b} share memory, and the program writes into {a}: eager numpy "
                             f"would see that write through {b}, the program does not (it was exported "
                             f"for separate arrays); pass separate arrays, e.g. {b}.copy()")

    def _aliased_written_input(self, leaves: list) -> Optional[tuple[str, str]]:
        """``(written, other)``: the names of an input leaf the program writes into and of another
        leaf sharing memory with it (the same array reached twice, ``{"a": L, "b": L}``, or
        overlapping views), else None.  Inputs are flattened leaf by leaf (a pytree, as
        torch.export flattens it), so the program keeps no aliasing between them."""
        for _, k in self._input_mutations:
            dest = leaves[k]
            if not isinstance(dest, np.ndarray):
                continue
            for j, other in enumerate(leaves):
                if j != k and isinstance(other, np.ndarray) and np.may_share_memory(dest, other):
                    return self._input_label(k), self._input_label(j)
        return None

    def _input_label(self, k: int) -> str:
        """The path of user input ``k`` as its input check names it (``d['a'][0]``), else its placeholder."""
        names = self.input_names
        if k >= len(names):
            return f"input {k}"
        for node in self._program.graph.nodes:
            if node.target == "tpe.check_input" and getattr(node.args[0], "name", None) == names[k]:
                return str(node.args[1])
        return names[k]

    def _expose_signature(self, params: list) -> None:
        """``inspect.signature(ep.module())`` (and of its ``forward``) is the exported callable's
        own, ``(x, y, *, mask=None)``, not ``(*args, **kwargs)``: a spec keyed by argument name
        binds to it, so ``export(ep.module(), ..., dynamic_shapes=spec)`` re-exports with the
        spec of the first export (torch's retraceability)."""
        # an argument the export call passed must be passed again (its exported value): no default
        spec = self._in_spec
        given: set = set()
        if spec is not None and spec.kind == "tuple" and len(spec.children) == 2:
            positional = [p.name for p in params if p.kind in ("positional_only", "positional_or_keyword")]
            given = set(positional[:len(spec.children[0].children)]) | set(spec.children[1].context or ())
        try:
            sig = inspect.Signature([
                inspect.Parameter(p.name, _KINDS[p.kind],
                                  default=p.default if p.has_default and p.name not in given
                                  else inspect.Parameter.empty)
                for p in params])
        except (KeyError, ValueError, TypeError):  # an odd stored signature: keep the generic one
            return
        module = self

        def forward(*args: Any, **kwargs: Any) -> Any:
            return module(*args, **kwargs)

        forward.__signature__ = sig
        forward.__name__ = forward.__qualname__ = "forward"
        object.__setattr__(self, "__signature__", sig)
        object.__setattr__(self, "forward", forward)

    def __repr__(self) -> str:
        return f"ExportedModule(\n{self.code})"


def _capture_of(leaves: list) -> Any:
    """The running capture's tracer when a user input of this call is traced, else None.

    Read through ``sys.modules``: when capture was never imported no capture runs, and
    loading and running a program must not import it (it imports sympy, issue 19).
    """
    tracer_module = sys.modules.get("tensorplay_export.capture.tracer")
    if tracer_module is None or tracer_module.CURRENT.get() is None:
        return None
    from .retrace import capturing  # a capture runs: capture is imported already

    return capturing(leaves)


def _attr_path(target: str) -> str:
    """The attribute path a lifted value's fqn gets on the module (``sub.fc.weight``).

    A name that would hide the module's own API (``graph``, ``code``,
    ``forward``, a leading underscore) or that is no dotted identifier path
    goes under ``_shadowed`` instead.
    """
    parts = target.split(".")
    if all(p.isidentifier() or p.isdigit() for p in parts):
        if parts[0] not in _OWN_ATTRS and not parts[0].startswith("_") and not hasattr(ExportedModule, parts[0]):
            return target
        return f"_shadowed.{target}"
    return "_shadowed." + ".".join(Namespace.sanitize(p) for p in parts)


def _conform(value: Any, spec: Any) -> Any:
    """``value`` with every dict reordered to the key order ``spec`` records (same keys only)."""
    kind = getattr(spec, "kind", None)
    if kind == "dict" and type(value) is dict and set(value) == set(spec.context):
        return {k: _conform(value[k], c) for k, c in zip(spec.context, spec.children)}
    if kind in ("tuple", "list") and type(value) in (tuple, list) and len(value) == len(spec.children):
        return type(value)(_conform(v, c) for v, c in zip(value, spec.children))
    return value


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
