"""Export's safety net: the built program on the example inputs against the model run eagerly.

The proof covers the guards the tracer sees.  A model can also decide on something
the tracer cannot intercept (``type(n) is int`` is False for a symbolic size; a dict
lookup on a size's hash misses): the traced run then takes another path than eager
numpy, and the program is wrong at every size, the example included.  Comparing the
program with the traced run's own values cannot see that (both took the same path),
so :func:`check_against_eager` runs the model once more, untraced, on copies of the
example inputs and of the module state, runs the built program on the same examples,
and compares everything the program returns: the output pytree's structure, each
leaf's dtype (exactly) and shape, its values (floats within a tolerance for their
precision, NaN equal to NaN; integers, booleans and everything else exactly), the
buffers after the call and the inputs after the call (writes to them).  Python state no
program carries is refused (:mod:`..capture.python_state`): a change to a container the caller
passed (``cache.append(kv)``), and a change to a plain module attribute (``self.seen += n``)
when a second call then gives other outputs than the program's (a stash or a cache the
outputs do not depend on passes).

Cost: one eager forward and one program run, on a *small example* (:func:`small_example`):
each input sliced along its dynamic axes to the smallest sizes >= 2 the program admits
(its range constraints, the relations between its symbols and its input checks, asked
through :class:`~.input_checks.SizeProbe`), so the net costs the same for a (32, 512)
example as for a (2, 16) one.  The paths a model takes by a size's *type* or hash do not
depend on the size, so the small example shows them as the full one would.  When no such
sizes exist (nothing dynamic, no admitted smaller sizes, or a run raises on the small
example) the net runs on the user's example, and says so (:class:`NetReport`, and the
``tensorplay_export.program.eager_check`` logger).  What the small example cannot show:
a difference only at the example's own sizes (overflow of a narrow dtype over a long
axis, a summation order that differs over many terms).  Both runs use one BLAS thread
(:mod:`..capture.blas`): the same summation order on both sides.
"""
from __future__ import annotations

import copy
import logging
import types
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .. import pytree
from ..capture.blas import one_blas_thread
from ..capture.python_state import (attribute_snapshot, changed_attribute, changed_container, container_snapshot,
                                    module_roots, restore_contents, saved_contents)
from ..capture.state import _MODULE_SLOTS, clone_module_tree, rebuilt_container
from ..errors import EagerMismatchError
from .exported import ExportedModule

__all__ = ["check_against_eager", "RunRecord", "run_eager", "run_program", "first_difference", "NetReport",
           "small_example"]

_LOG = logging.getLogger(__name__)

# (rtol, atol) by float itemsize: float16 and bfloat16, float32 (complex64 per part), float64 and wider.
TOLERANCES = {2: (1e-2, 1e-3), 4: (1e-4, 1e-5), 8: (1e-7, 1e-9)}


@dataclass
class RunRecord:
    """What one run on the examples gave: the outputs, the buffers after it, the input leaves after it.

    ``buffers``: fqn -> value (a Module's buffers, first fqn of a shared one; empty for a
    plain function); ``inputs``: (path, leaf) of every ndarray input, after the call.
    """

    outputs: Any
    buffers: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)
    # eager runs of a module: the first plain attribute the call changed (where, before, after),
    # and the module's call, to call it again with that state
    changed: Optional[tuple] = None
    again: Any = None


def _copies(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    # in the inputs' own memory order (a Fortran-order example stays one): whether numpy makes
    # a view or a copy, or refuses a copy (np.array(x, copy=False, order="F")), depends on it
    return pytree.tree_map(lambda v: v.copy(order="K") if isinstance(v, np.ndarray) else v,
                           (tuple(args), dict(kwargs)))


def _array_leaves(args: tuple, kwargs: dict) -> list:
    """(path, leaf) of the ndarray inputs, in flattening order: ``args[0]``, ``kwargs['mask']``."""
    items = pytree.tree_leaves_with_path(tuple(args), "args") + pytree.tree_leaves_with_path(dict(kwargs), "kwargs")
    return [(p, v) for p, v in items if isinstance(v, np.ndarray)]


def _read_only(value: np.ndarray) -> np.ndarray:
    view = value.view(type(value))
    view.flags.writeable = False
    return view


def _state_view(writable: bool):
    """``value_of`` for :func:`clone_module_tree`: buffers copied; parameters read-only views.

    Parameters are rarely written by a forward; sharing them keeps the check at one
    forward's memory.  ``writable``: copy parameters too (the retry after a forward
    that raised, which may have written one).
    """
    def value_of(kind: str, value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return value
        if kind == "buffer":
            return np.array(value, copy=True)
        if writable:
            return np.array(value, copy=True) if type(value) is np.ndarray else copy.deepcopy(value)
        return _read_only(value)
    return value_of


def _eager_model(model: Any, writable: bool) -> tuple[Any, Any]:
    """The callable to run eagerly and the module whose buffers to read after (None for a function)."""
    from ..nn.module import Module

    owner = model.__self__ if isinstance(model, types.MethodType) else model
    if isinstance(owner, ExportedModule):
        # a stateful module of a program: a fresh one with copies of its current state, as a
        # Module's clone, so the net neither sees nor advances the state of the one exported
        fresh = owner._fresh_copy(_state_view(writable))
        return (types.MethodType(model.__func__, fresh) if owner is not model else fresh), fresh
    if not isinstance(owner, Module):
        return model, None
    clones = clone_module_tree(owner, _state_view(writable))
    fresh: dict[int, ExportedModule] = {}
    in_containers = _ContainedState(owner, clones)
    for clone in clones.values():  # plain array attributes (lifted constants) are module state too
        inst = clone.__dict__
        for key, value in list(inst.items()):
            if type(value) is np.ndarray:
                inst[key] = value.copy() if writable else _read_only(value)
            elif type(value) in (list, tuple, dict) and key not in _MODULE_SLOTS:
                inst[key] = in_containers(value)
            elif isinstance(value, ExportedModule) and value._stateful:
                # an exported submodule (self.inner = ep.module()) is module state too: a fresh
                # copy, so the net neither sees nor advances the user's (capture lifts it the same)
                if id(value) not in fresh:
                    fresh[id(value)] = value._fresh_copy(_state_view(writable))
                inst[key] = fresh[id(value)]
    root = clones[id(owner)]
    call = types.MethodType(model.__func__, root) if owner is not model else root
    return _through_clones(call, clones), root


class _ContainedState:
    """A plain container attribute of the tree's clones (``self.ws = [self.lin.weight]``) as the
    run sees it: a copy holding the clone's parameter and buffer views where the user's holds
    the user's arrays, so a write through it (``self.ws[0] += 1``) never reaches the caller's
    parameter; one copy per container (two attributes sharing a list share its copy), and a
    container holding no state is the user's own (as capture's ``state._ContainerStandIns``)."""

    def __init__(self, owner: Any, clones: dict) -> None:
        self.owner, self.clones = owner, clones
        self.state: Optional[dict] = None  # id(user's parameter or buffer) -> the clone's value, on first use
        self.copies: dict[int, Any] = {}

    def _state(self) -> dict:
        if self.state is None:  # most trees hold no container attribute: no walk for them
            self.state = {}
            for _fqn, m in self.owner.named_modules():
                clone = self.clones.get(id(m))
                for store in ("_parameters", "_buffers"):
                    for key, value in (m.__dict__.get(store) or {}).items():
                        if value is not None and clone is not None:
                            self.state[id(value)] = clone.__dict__[store][key]
        return self.state

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, np.ndarray):
            return self._state().get(id(value), value)
        return rebuilt_container(value, lambda v, _path: self(v, depth + 1), self.copies, "", depth)


def _through_clones(call: Any, clones: dict) -> Any:
    """``call`` with every module of the tree it calls run as its clone, however it is reached.

    The clones share plain containers with the user's modules (``self.layers = [self.lin]``),
    so such a call reaches the user's module itself; without this it would write the user's
    buffers, and the net would compare the program with a run that left the clone's unchanged
    (capture redirects the same calls: ``capture.state.make_call_hook``).
    """
    from ..nn.module import _CALL_HOOK

    def hook(module: Any, args: tuple, kwargs: dict) -> Any:
        return clones.get(id(module), module).forward(*args, **kwargs)

    def run(*args: Any, **kwargs: Any) -> Any:
        token = _CALL_HOOK.set(hook)
        try:
            return call(*args, **kwargs)
        finally:
            _CALL_HOOK.reset(token)
    return run


def _buffers_after(module: Any) -> dict:
    """fqn -> value of ``module``'s buffers after a run, an exported submodule's under its
    attribute (``inner.norm.running_mean``, as capture lifts them); empty for a function."""
    from ..nn.module import Module

    if module is None:
        return {}
    buffers = dict(module.named_buffers())
    if not isinstance(module, Module):
        return buffers
    for fqn, m in module.named_modules():
        for key in m.__dict__.get("_exported_submodules") or ():
            value = m.__dict__.get(key)
            if isinstance(value, ExportedModule) and value._stateful:
                prefix = f"{fqn}.{key}" if fqn else key
                for name, buf in value.named_buffers():
                    buffers.setdefault(f"{prefix}.{name}", buf)
    return buffers


def _modules_of(module: Any) -> dict:
    """fqn -> module of an ``nn.Module`` tree (none for a function or an exported module, whose
    state is its buffers)."""
    from ..nn.module import Module

    return dict(module.named_modules()) if isinstance(module, Module) else {}


def _top_level(a: tuple, k: dict) -> list:
    return [(f"args[{i}]", v) for i, v in enumerate(a)] + [(f"kwargs[{key!r}]", v) for key, v in k.items()]


def _container_effect(a: tuple, k: dict, containers: list) -> None:
    """Refuse a change the eager run made to a container the caller passed (see
    :mod:`..capture.python_state`): no program changes the caller's lists, dicts or dataclasses.

    Raises:
        EagerMismatchError: naming the input, with what to do instead.
    """
    path = changed_container(containers, _top_level(a, k))
    if path is not None:
        raise EagerMismatchError(
            f"{path} after the call", "the container the caller passed, as it was", "changed by the model",
            "the model changes a container it was given (appends to a list, adds or removes a key, rebinds "
            "an entry)",
            advice="A program cannot change the caller's lists, dicts or dataclasses, so from the second call "
                   "on it would differ from the model. Return the new values instead (e.g. return the updated "
                   "cache) and let the caller keep them.")


def _attribute_effect(changed: tuple, detail: str) -> EagerMismatchError:
    where, before, after = changed
    return EagerMismatchError(
        where, f"{before} before the call", after,
        f"the model changes Python state of its module (an attribute that is no parameter or buffer), and {detail}",
        advice="A program keeps no Python state, so it differs from the model from the second call on. Keep such "
               "state in a buffer (register_buffer, then assign it: the program carries buffer updates), or pass "
               "it in and return it.")


def run_eager(model: Any, args: tuple, kwargs: dict, saved: Optional[list] = None) -> RunRecord:
    """The model run untraced on copies of the examples and of its state; the user's objects stay as they are.

    ``saved``: :func:`~..capture.python_state.saved_contents` of the module's lists and dicts,
    when the caller may call the module again on the state this run left (a changed plain
    attribute: ``record.again``) and restores them itself; without it they are restored here.

    Raises:
        EagerMismatchError: the model raised when run eagerly (the traced run did not),
            with the model's error as ``__cause__``; or it changed Python state no program
            carries (a plain module attribute, an input container).
    """
    if saved is None:
        own = saved_contents(module_roots(model) + list(args) + list(kwargs.values()))
        try:
            return run_eager(model, args, kwargs, own)
        finally:
            restore_contents(own)
    first: Optional[BaseException] = None
    for writable in (False, True):
        call, module = _eager_model(model, writable)
        a, k = _copies(args, kwargs)
        attributes = attribute_snapshot(_modules_of(module))
        containers = container_snapshot(_top_level(a, k))
        try:
            with one_blas_thread():
                out = call(*a, **k)
        except Exception as err:  # noqa: BLE001 - retried with writable state, then reported
            first = first or err
            if saved is not None:
                restore_contents(saved)
            if module is None:
                break
            continue
        _container_effect(a, k, containers)
        buffers = _buffers_after(module)
        record = RunRecord(out, buffers, _array_leaves(a, k))
        if attributes:
            record.changed = changed_attribute(attributes, _modules_of(module))
            record.again = call
        if record.changed is None and saved is not None:
            restore_contents(saved)  # nothing the outputs could depend on: the next run starts afresh
        return record
    advice = None
    if isinstance(first, FloatingPointError):
        # the model's own np.errstate(...="raise"): capture computes a value only where something
        # reads it, so an error numpy raises in a value nobody read shows only in the eager run
        advice = ("numpy raised it under the model's own np.errstate; capture computes example values only "
                  "where something reads them, so the traced run did not. The program raises the same error "
                  "on such inputs: export from an example the model runs on, or let that np.errstate warn "
                  "instead of raise.")
    raise EagerMismatchError(None, "the model's outputs", f"{type(first).__name__}: {first}",
                             "the model raised when run eagerly on its example inputs, but not while traced",
                             advice=advice) from first


def run_program(ep: Any, args: tuple, kwargs: dict, calls: int = 1) -> RunRecord:
    """``ep`` run on copies of the examples through a fresh stateful module (``ep`` is not changed);
    ``calls`` times, the record of the last call (buffer updates carried from call to call).

    Raises:
        EagerMismatchError: the program raised on its own example inputs.
    """
    module = ExportedModule(ep)
    try:
        with one_blas_thread():
            for _ in range(calls):
                a, k = _copies(args, kwargs)
                out = module(*a, **k)
    except Exception as err:  # noqa: BLE001 - the program must run on the examples it was made from
        raise EagerMismatchError(None, "the eager outputs", f"{type(err).__name__}: {err}",
                                 "the exported program raised on its own example inputs") from err
    return RunRecord(out, dict(module.named_buffers()), _array_leaves(a, k))


def _describe(value: Any) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        kind = "array" if isinstance(value, np.ndarray) else "scalar"
        return f"{arr.dtype} {kind} of shape {arr.shape}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic, np.ndarray))


def _max_abs(e: np.ndarray, g: np.ndarray) -> Optional[float]:
    if e.size == 0 or e.dtype.kind not in "biufc":
        return None
    with np.errstate(all="ignore"):
        d = np.abs(e.astype(np.complex128 if e.dtype.kind == "c" else np.float64)
                   - g.astype(np.complex128 if g.dtype.kind == "c" else np.float64))
    finite = d[np.isfinite(d)]
    return float(finite.max()) if finite.size else None


def leaf_difference(path: str, expected: Any, got: Any) -> Optional[EagerMismatchError]:
    """The error for one leaf (None when it matches): dtype exactly, shape, values per dtype."""
    if not (_is_number(expected) and _is_number(got)):
        try:
            same = type(expected) is type(got) and (expected is got or bool(expected == got))
        except Exception:  # noqa: BLE001 - a value without a plain == is compared by identity only
            same = False
        if same:
            return None
        return EagerMismatchError(path, _describe(expected), _describe(got), "the values differ")
    if not isinstance(expected, (np.ndarray, np.generic)) and not isinstance(got, (np.ndarray, np.generic)) \
            and type(expected) is not type(got):
        return EagerMismatchError(path, _describe(expected), _describe(got), "the Python types differ")
    e, g = np.asarray(expected), np.asarray(got)
    if e.dtype != g.dtype:
        return EagerMismatchError(path, _describe(expected), _describe(got), f"dtype {g.dtype} instead of {e.dtype}",
                                  _max_abs(e, g) if e.shape == g.shape else None)
    if e.shape != g.shape:
        return EagerMismatchError(path, _describe(expected), _describe(got), f"shape {g.shape} instead of {e.shape}")
    if e.dtype.kind in "fc":
        rtol, atol = TOLERANCES.get(min(e.dtype.itemsize // (2 if e.dtype.kind == "c" else 1), 8),
                                    TOLERANCES[8])
        with np.errstate(all="ignore"):
            same = bool(np.all(np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)))
    else:
        same = bool(np.array_equal(g, e))
    if same:
        return None
    return EagerMismatchError(path, _describe(expected), _describe(got), "the values differ", _max_abs(e, g))


def first_difference(expected: RunRecord, got: RunRecord) -> Optional[EagerMismatchError]:
    """The first difference between two runs: outputs (structure, then leaves), buffers, inputs."""
    e_spec, g_spec = pytree.tree_flatten(expected.outputs)[1], pytree.tree_flatten(got.outputs)[1]
    if e_spec != g_spec:
        return EagerMismatchError("output", f"outputs structured as {e_spec!r}", f"{g_spec!r}",
                                  "the output pytree's structure differs")
    got_leaves = [v for _p, v in pytree.tree_leaves_with_path(got.outputs, "output")]
    for (path, e), g in zip(pytree.tree_leaves_with_path(expected.outputs, "output"), got_leaves):
        err = leaf_difference(path, e, g)
        if err is not None:
            return err
    for fqn, e in expected.buffers.items():
        if fqn in got.buffers:
            err = leaf_difference(f"buffer {fqn!r} after the call", e, got.buffers[fqn])
            if err is not None:
                return err
    for (path, e), (_p, g) in zip(expected.inputs, got.inputs):
        err = leaf_difference(f"{path} after the call (written by the model)", e, g)
        if err is not None:
            return err
    return None


@dataclass
class NetReport:
    """Where the safety net ran: ``sizes`` (symbol name -> size) of the small example, or
    None when it ran on the user's example, with ``reason`` saying why."""

    sizes: Optional[dict]
    reason: str = ""


def small_example(ep: Any, args: tuple, kwargs: dict) -> tuple[Optional[tuple], str]:
    """``((args, kwargs, sizes), "")``: the inputs sliced along their dynamic axes to the
    smallest sizes >= 2 (and >= each symbol's lower bound) that the program's own input
    checks admit, never above the example's; or ``(None, reason)`` when there are none.

    Each symbol an input axis names starts at ``max(2, lower bound)``; while the checks
    reject (a relation such as ``seq % 4 == 0`` or ``n == 2*m``), symbols are raised one
    step at a time up to their example size (a bounded search: the common case is the
    first try).  An axis is sliced to its contract size evaluated there (``x[:, :n]``).
    """
    import sympy
    from solver import evaluate

    from .input_checks import SizeProbe, one_root

    try:
        probe = SizeProbe(ep)
    except ValueError:
        return None, "the program has no input checks (no dynamic sizes)"
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    shapes = [probe._shapes.get(node, (None,))[0] for node in probe._user_nodes]
    if len(shapes) != len(leaves):
        return None, "the program's inputs do not line up with the example's leaves"
    hints: dict = {}    # symbol -> example size, from the axes that name it (k*r + c too)
    others: set = set()  # symbols seen only inside other axis sizes
    for leaf, shape in zip(leaves, shapes):
        if shape is None or not isinstance(leaf, np.ndarray) or leaf.ndim != len(shape):
            continue
        for d, n in zip(shape, leaf.shape):
            if not isinstance(d, sympy.Basic) or d.is_Integer:
                continue
            root = one_root(d)
            if root is not None and (n - root[2]) % root[1] == 0:
                hints.setdefault(root[0], (n - root[2]) // root[1])
            else:
                others |= d.free_symbols
    if not hints:
        return None, "no input axis is dynamic"
    if others - set(hints):
        return None, "an input axis's size is not over symbols the example's axes give"
    ranges = probe.ranges
    start = {sym: min(h, max(2, int(ranges[sym].lower) if sym in ranges else 2)) for sym, h in hints.items()}
    values = dict(start)
    for _step in range(64):
        dims = _sliced_shapes(leaves, shapes, values, evaluate)
        if dims is not None and probe({str(s): v for s, v in values.items()}) is None:
            break
        grow = [s for s in sorted(values, key=str) if values[s] < hints[s]]
        if not grow:
            return None, "no smaller sizes are admitted by the program's checks"
        values[grow[0]] += 1
    else:
        return None, "no smaller admitted sizes found within the search's bound"
    if all(values[s] == hints[s] for s in values):
        return None, "the example's sizes are already the smallest admitted"
    small = [leaf[tuple(slice(0, n) for n in d)] if d is not None else leaf for leaf, d in zip(leaves, dims)]
    a, k = pytree.tree_unflatten(small, spec)
    return (tuple(a), dict(k), {str(s): v for s, v in values.items()}), ""


def _sliced_shapes(leaves: list, shapes: list, values: dict, evaluate: Any) -> Optional[list]:
    """Per leaf the shape it is sliced to at ``values`` (None: not sliced), or None when an axis
    would have to grow or go below zero."""
    import sympy

    out: list = []
    for leaf, shape in zip(leaves, shapes):
        if shape is None or not isinstance(leaf, np.ndarray) or leaf.ndim != len(shape):
            out.append(None)
            continue
        dims = []
        for d, n in zip(shape, leaf.shape):
            m = int(evaluate(d, values)) if isinstance(d, sympy.Basic) and not d.is_Integer else n
            if m < 0 or m > n:
                return None
            dims.append(m)
        out.append(tuple(dims) if tuple(dims) != leaf.shape else None)
    return out


def check_against_eager(ep: Any, model: Any, args: tuple, kwargs: dict) -> NetReport:
    """Raise when ``ep`` differs from ``model`` run eagerly, on a small example cut from the
    user's (:func:`small_example`), else on the user's example itself.

    Args:
        ep: the ExportedProgram built from capturing ``model`` on ``(args, kwargs)``.
        model: the user's model (a Module, a bound method or a plain callable); not changed.

    Returns:
        NetReport: the sizes the net ran at (None: the user's example, and why).

    Raises:
        EagerMismatchError: (a ``CaptureError``) naming the first differing output, buffer
            or input, expected vs got (dtype, shape, max abs diff) and what usually causes it;
            also when either run raises on the user's example.
    """
    _refuse_aliased_example(ep, args, kwargs)
    # the module's lists and dicts, and the inputs' (a leaf pytree does not copy: an OrderedDict), as before
    saved = saved_contents(module_roots(model) + list(args) + list(kwargs.values()))
    try:
        return _check_against_eager(ep, model, args, kwargs, saved)
    finally:
        restore_contents(saved)


def aliased_example(ep: Any, args: tuple, kwargs: dict) -> Optional[str]:
    """Why the example is one no program reproduces when its input leaves share memory and the
    program writes into one of them, else None.

    The inputs are flattened leaf by leaf, so the program takes each as its own array and keeps no
    aliasing between them (torch.export flattens the same way): the same list under two keys
    (``{"a": L, "b": L}``) or one array passed twice is fine to read, but a write through one is
    seen through the other by eager numpy and not by the program.  The net runs both on copies
    made leaf by leaf, so it cannot see the difference; the program itself refuses such a call.
    """
    module = ExportedModule(ep)
    if not module._input_mutations:
        return None
    hit = module._aliased_written_input(module._user_leaves(tuple(args), dict(kwargs)))
    if hit is None:
        return None
    a, b = hit
    return (f"the example inputs {a} and {b} share memory (the same array reached twice, e.g. one list under "
            f"two keys, or overlapping views), and the model writes into {a}: eager numpy sees that write "
            f"through {b}, but a program takes each input leaf as its own array (inputs are flattened leaf by "
            f"leaf, as torch.export does; aliasing between them is not kept), and it refuses such a call. "
            f"Export with separate arrays (e.g. copy.deepcopy of the inputs, or {b}.copy()) and call the program "
            f"with separate arrays, or write into a new array inside the model instead of into the input")


def _refuse_aliased_example(ep: Any, args: tuple, kwargs: dict) -> None:
    """Raises ValueError with :func:`aliased_example`'s text when it has one."""
    why = aliased_example(ep, args, kwargs)
    if why is not None:
        raise ValueError(why)


def _check_against_eager(ep: Any, model: Any, args: tuple, kwargs: dict, saved: list) -> NetReport:
    small, reason = small_example(ep, args, kwargs)
    if small is not None:
        s_args, s_kwargs, sizes = small
        try:
            expected, got = run_eager(model, s_args, s_kwargs, saved), run_program(ep, s_args, s_kwargs)
        except EagerMismatchError as err:  # a run raised at these sizes: the user's example decides
            expected = None
            reason = f"a run raised on the small example {sizes}: {err.__cause__!r}"
        if expected is not None:
            on = f"a small example cut from yours ({', '.join(f'{k} = {v}' for k, v in sorted(sizes.items()))})"
            err = first_difference(expected, got) or _second_call(ep, expected, s_args, s_kwargs)
            restore_contents(saved)
            if err is not None:
                raise _ran_on(err, on)
            _check_on_varied_values(ep, model, s_args, s_kwargs, on)
            return NetReport(sizes)
    _LOG.info("eager check on the user's example: %s", reason)
    expected = run_eager(model, args, kwargs, saved)
    err = first_difference(expected, run_program(ep, args, kwargs)) or _second_call(ep, expected, args, kwargs)
    restore_contents(saved)
    if err is not None:
        raise err
    _check_on_varied_values(ep, model, args, kwargs, "the example inputs")
    return NetReport(None, reason)


def _second_call(ep: Any, expected: RunRecord, args: tuple, kwargs: dict) -> Optional[EagerMismatchError]:
    """When the eager call changed a plain module attribute: the error if a second call (eager on the
    state the first left, the program on its own) gives other outputs, else None (a stash or a cache
    the outputs do not depend on)."""
    if expected.changed is None:
        return None
    a, k = _copies(args, kwargs)
    try:
        with one_blas_thread():
            out = expected.again(*a, **k)
    except Exception as err:  # noqa: BLE001 - the model itself fails on its second call
        return _attribute_effect(expected.changed, f"a second call raises eagerly ({type(err).__name__}: {err})")
    got = run_program(ep, args, kwargs, calls=2)
    if first_difference(RunRecord(out), RunRecord(got.outputs)) is not None:
        return _attribute_effect(expected.changed, "a second call gives other outputs than the program's")
    return None


def _ran_on(err: EagerMismatchError, on: str) -> EagerMismatchError:
    """``err`` saying what both runs ran on."""
    return EagerMismatchError(err.path, err.expected, err.got, err.detail, err.max_abs_diff, ran_on=on)


def _check_on_varied_values(ep: Any, model: Any, args: tuple, kwargs: dict, on: str) -> None:
    """The net again with the example's constant float inputs (``np.zeros``, ``np.ones``) given
    seeded values in ``[0.5, 1.5)``: zeros hide a program that scales by the wrong factor
    (``x * (2 if type(n) is int else 1)``).  Int and bool inputs (ids, masks) are kept.  A run
    that raises on the new values proves nothing either way and is let go.

    Raises:
        EagerMismatchError: the runs differ on the varied values.
    """
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    rng = np.random.default_rng(0)
    varied, changed = [], False
    for leaf in leaves:
        if (isinstance(leaf, np.ndarray) and leaf.dtype.kind in "fc" and leaf.size > 1
                and bool(np.all(leaf == leaf.flat[0]))):
            varied.append(rng.uniform(0.5, 1.5, leaf.shape).astype(leaf.dtype))
            changed = True
        else:
            varied.append(leaf)
    if not changed:
        return
    v_args, v_kwargs = pytree.tree_unflatten(varied, spec)
    try:
        expected, got = run_eager(model, tuple(v_args), dict(v_kwargs)), run_program(ep, tuple(v_args), dict(v_kwargs))
    except EagerMismatchError:
        return
    err = first_difference(expected, got)
    if err is not None:
        raise _ran_on(err, f"{on}, its constant float inputs given seeded values in [0.5, 1.5)")
