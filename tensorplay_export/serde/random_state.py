"""What a loaded program may do with generator state: draw from a buffer, write the next state back to it.

Capture emits a random op (``tpe.random.*``, :mod:`..ops.random`) only on a generator
state that is a lifted buffer of the module, or the next state of an earlier draw from
one (``tpe.item(draw, 1)``), and writes a chain's next state back (``BUFFER_MUTATION``)
only to the buffer the chain started from.  An archive doing anything else (drawing
from a constant, so every call repeats the same numbers; writing one generator's
state into another buffer) is not something capture emits, and is refused.
"""
from __future__ import annotations

from typing import Any

from ..graph.ir import Graph, Node
from .jsonio import fail

RANDOM_PREFIX = "tpe.random."


def _state_arg(node: Node) -> Any:
    return node.args[0] if node.args else node.kwargs.get("state")


def check_generator_states(graph: Graph, sig: Any, member: str) -> None:
    """Refuse random ops whose generator state is not a buffer chain, and write-backs across chains.

    Args:
        graph: the loaded graph; ``sig``: its signature (counts already checked against it).

    Raises:
        ArchiveError: naming the node or the output and what capture would have emitted.
    """
    buffer_of = {ph: spec.target for spec, ph in zip(sig.input_specs, graph.placeholders())
                 if spec.kind.name == "BUFFER"}
    chain: dict[Node, str] = {}          # random op node -> the buffer its state chain starts from
    for node in graph.nodes:
        if node.op != "call_function" or not str(node.target).startswith(RANDOM_PREFIX):
            continue
        state = _state_arg(node)
        if isinstance(state, Node) and state in buffer_of:
            chain[node] = buffer_of[state]
        elif isinstance(state, Node) and _next_state_of(state) in chain:
            chain[node] = chain[_next_state_of(state)]
        else:
            what = state.name if isinstance(state, Node) else type(state).__name__
            fail(member, f"node {node.name!r} ({node.target}) draws from {what!r:.80}, which is not a buffer "
                         "(capture draws only from generator state held in a buffer of the module)")
    if not chain:
        return
    out = graph.output_node
    values = list(out.args[0]) if out is not None and out.args and isinstance(out.args[0], (list, tuple)) else []
    for i, (spec, value) in enumerate(zip(sig.output_specs, values)):
        source = _next_state_of(value) if isinstance(value, Node) else None
        if source not in chain:
            continue
        if spec.kind.name == "BUFFER_MUTATION" and spec.target != chain[source]:
            fail(member, f"output {i} writes the generator state drawn from buffer {chain[source]!r} into "
                         f"{spec.target!r:.80} (capture writes a generator's next state back to its own buffer)")


def _next_state_of(node: Any) -> Any:
    """The random op whose next state ``node`` is (``tpe.item(draw, 1)``), else None."""
    if not isinstance(node, Node) or node.target != "tpe.item" or len(node.args) != 2 or node.args[1] != 1:
        return None
    src = node.args[0]
    return src if isinstance(src, Node) and str(src.target).startswith(RANDOM_PREFIX) else None
