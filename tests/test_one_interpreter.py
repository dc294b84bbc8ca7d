"""One interpreter and one size evaluator (issue 12, point 3).

Mechanical: the replay check, unflatten's module views and the decomposition
tracer run graphs through ``graph.interpreter.Interpreter`` (no loop of their
own), only the interpreter and generated code call op implementations of graph
nodes, and every size evaluation goes through ``solver.evaluate``.
Behaviour: the interpreter's initial environment, symbol bindings and regions;
the evaluator on every construct sizes are made of.
"""
import ast
import inspect
import random
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy

import solver
import solver.decide
import solver.evaluation
import solver.witnesses
import tensorplay_export.capture.shape_env as shape_env
import tensorplay_export.violations as violations
from solver import UnboundSymbolError, evaluate
from tensorplay_export.capture.replay import ReplayInterpreter, run_graph
from tensorplay_export.graph.interpreter import Interpreter
from tensorplay_export.graph.ir import Graph
from tensorplay_export.program.decompositions._trace import _ExampleValues
from tensorplay_export.program.unflatten import _CallInterpreter

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "tensorplay_export"
RUNNERS = {  # module -> what it runs
    "capture/replay.py": "the replay check",
    "program/unflatten.py": "a module view's call",
    "program/decompositions/_trace.py": "the decomposition tracer's example values",
}
OPCODES = {"placeholder", "call_function", "output"}

s = sympy.Symbol("s", integer=True, positive=True)
t = sympy.Symbol("t", integer=True, nonnegative=True)
u = sympy.Symbol("u", integer=True)


def _tree(rel: str) -> ast.Module:
    return ast.parse((PKG / rel).read_text(), filename=rel)


def _outside_nested_defs(body: list) -> list:
    """Every AST node under ``body``, not descending into nested functions or classes."""
    out, todo = [], list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.append(child)
    return out


def _opcodes_compared(nodes: list) -> set:
    """Opcode strings compared against some ``<x>.op`` in ``nodes``."""
    found = set()
    for n in nodes:
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(isinstance(x, ast.Attribute) and x.attr == "op" for x in sides):
                for x in sides:
                    if isinstance(x, ast.Constant) and x.value in OPCODES:
                        found.add(x.value)
                    if isinstance(x, (ast.Tuple, ast.Set, ast.List)):
                        found |= {e.value for e in x.elts if isinstance(e, ast.Constant) and e.value in OPCODES}
    return found


def _dispatches_on_op(nodes: list) -> bool:
    """``getattr(obj, <x>.op)``: calling a method named by the opcode."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
               and len(n.args) >= 2 and isinstance(n.args[1], ast.Attribute) and n.args[1].attr == "op"
               for n in nodes)


# -- mechanical: one interpreter ------------------------------------------------------------------

@pytest.mark.parametrize("rel", sorted(RUNNERS))
def test_runner_goes_through_the_interpreter(rel):
    tree = _tree(rel)
    subclasses = {c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                  and any(isinstance(b, ast.Name) and b.id == "Interpreter" for b in c.bases)}
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    used = ({"Interpreter"} | subclasses) & called
    assert used, f"{rel} ({RUNNERS[rel]}) neither instantiates Interpreter nor a subclass of it"


@pytest.mark.parametrize("rel", sorted(RUNNERS))
def test_runner_has_no_node_loop_of_its_own(rel):
    tree = _tree(rel)
    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        body = _outside_nested_defs(loop.body + loop.orelse)
        where = f"{rel}:{loop.lineno}"
        assert len(_opcodes_compared(body)) < 2, f"{where}: a loop dispatching on node.op (a node runner)"
        assert not _dispatches_on_op(body), f"{where}: a loop calling getattr(..., node.op)"
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "resolve_op" not in names | attrs, f"{rel} resolves ops itself: the Interpreter runs them"
    assert "impl" not in attrs, f"{rel} calls op implementations itself: the Interpreter runs them"
    assert not {"map_arg", "map_exprs", "xreplace", "subs"} & (names | attrs), \
        f"{rel} substitutes node values or sizes itself: Interpreter.fetch and solver.evaluate do"


def test_only_the_interpreter_and_generated_code_run_graph_nodes():
    """Op implementations are called by the registry (``OpDef.__call__``), capture (each traced
    call on its example) and the two ways to run a graph; a sixth runner would show up here."""
    allowed = {"graph/interpreter.py", "graph/codegen.py", "capture/tracer.py"}
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel in allowed or rel.startswith("ops/"):
            continue
        tree = ast.parse(path.read_text(), filename=rel)
        offenders += [f"{rel}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "impl"]
    assert not offenders, f"op implementations called outside the Interpreter and codegen: {offenders}"


def test_interpreter_has_one_method_per_opcode():
    for op in OPCODES:
        assert callable(getattr(Interpreter, op)), op
    for cls in (ReplayInterpreter, _CallInterpreter, _ExampleValues):
        assert issubclass(cls, Interpreter)
        assert "run" not in vars(cls), f"{cls.__name__} overrides the driver instead of a hook"


# -- mechanical: one size evaluator ---------------------------------------------------------------

def _calls(fn) -> set:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
            for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}


def test_every_size_evaluation_goes_through_solver_evaluate():
    assert solver.evaluate is solver.evaluation.evaluate is solver.decide.evaluate
    for fn in (shape_env.ShapeEnv.hint, solver.witnesses._value, Interpreter.eval_expr, _CallInterpreter.eval_expr):
        calls = _calls(fn)
        assert "evaluate" in calls, fn.__qualname__
        assert not {"xreplace", "subs"} & calls, f"{fn.__qualname__} substitutes sizes itself"
    source = (PKG / "graph" / "interpreter.py").read_text()
    assert "pyexpr" not in source and "xreplace" not in source


def test_the_evaluator_is_sympy_level():
    tree = ast.parse(Path(solver.evaluation.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "tensorplay_export" not in imported and "numpy" not in imported


# -- the interpreter: initial environment, symbols, regions ---------------------------------------

class Counting(Interpreter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ran = []

    def call_function(self, target, args, kwargs):
        self.ran.append(target)
        return super().call_function(target, args, kwargs)


OPS = {"numpy.add": np.add, "numpy.multiply": np.multiply, "numpy.ones": np.ones,
       "numpy.ndarray.reshape": lambda x, shape: x.reshape(shape), "numpy.sum": lambda a: int(np.sum(a))}


def chain():
    """x -> add(x, 1) -> multiply(., 2) -> output; y unused by the chain but an output too."""
    g = Graph()
    x = g.placeholder("x", meta={"shape": (s,), "bind": {0: s}})
    y = g.placeholder("y", meta={"shape": (3,)})
    a = g.call_function("numpy.add", (x, 1), meta={"shape": (s,)})
    m = g.call_function("numpy.multiply", (a, 2), meta={"shape": (s,)})
    g.output([m, y])
    return g, x, y, a, m


def test_run_on_positional_inputs():
    g, *_ = chain()
    out = Interpreter(g, OPS).run(np.arange(4.0), np.zeros(3))
    np.testing.assert_array_equal(out[0], (np.arange(4.0) + 1) * 2)
    with pytest.raises(TypeError, match="graph takes 2 inputs, got 1"):
        Interpreter(g, OPS).run(np.arange(4.0))


def test_initial_env_nodes_are_not_run():
    g, x, y, a, m = chain()
    interp = Counting(g, OPS)
    out = interp.run(np.zeros(3), initial_env={x: np.arange(4.0), a: np.full(4, 10.0)})
    assert interp.ran == ["numpy.multiply"]          # add came from the initial env
    np.testing.assert_array_equal(out[0], np.full(4, 20.0))
    # the placeholders not in initial_env take the positional inputs, in graph order
    with pytest.raises(TypeError, match="graph takes 1 inputs, got 2"):
        Counting(g, OPS).run(np.zeros(3), np.zeros(3), initial_env={x: np.arange(4.0)})
    out = Interpreter(g, OPS).run(initial_env={x: np.arange(2.0), y: "why"})
    assert out[1] == "why"


def test_initial_env_is_copied_and_values_are_freed_after_last_use():
    g, x, y, a, m = chain()
    given = {x: np.arange(4.0)}
    interp = Interpreter(g, OPS)
    interp.run(np.zeros(3), initial_env=given)
    assert list(given) == [x]
    assert a not in interp.env and x not in interp.env   # dead after multiply
    keep = type("Keep", (Interpreter,), {"free_values": False})(g, OPS)
    keep.run(np.arange(4.0), np.zeros(3))
    assert {x, y, a, m} <= set(keep.env)


def test_symbols_evaluate_sizes_no_node_binds():
    """A size that appears only as ``2*s + 1`` needs ``s`` from the caller."""
    g = Graph()
    z = g.call_function("numpy.ones", ((2 * s + 1, sympy.floor(s / 2)),), meta={"shape": (2 * s + 1, sympy.floor(s / 2))})
    g.output([z, sympy.Eq(sympy.Mod(s, 2), 1), s * 0.5])
    out, odd, half = Interpreter(g, OPS).run(symbols={s: 5})
    assert out.shape == (11, 2) and odd is True and half == 2.5
    out, *_ = Interpreter(g, OPS).run(symbols={s: sympy.Integer(3)})   # sympy ints are fine
    assert out.shape == (7, 1)
    with pytest.raises(RuntimeError, match="symbol s is used before any node binds it"):
        Interpreter(g, OPS).run()


def test_bindings_first_wins_and_given_symbols_count():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (4,)})
    n = g.call_function("numpy.sum", (x,), meta={"shape": None, "bind": {None: u}})
    z = g.call_function("numpy.ones", ((u + 1,),), meta={"shape": (u + 1,)})
    g.output([z])
    ones = np.ones(4)
    interp = Interpreter(g, OPS)
    assert interp.run(ones)[0].shape == (5,) and interp.symbols == {u: 4}
    assert Interpreter(g, OPS).run(ones, symbols={u: 1})[0].shape == (2,)   # as generated code: first wins
    # the replay check takes what the graph computes over capture's example size
    assert ReplayInterpreter(g, OPS).run(ones, symbols={u: 1})[0].shape == (5,)
    assert run_graph(g, {"x": ones}, {u: sympy.Integer(1)}, OPS)[0].shape == (5,)
    assert n.meta["bind"] == {None: u}


def test_nodes_run_a_region_with_its_inputs_given():
    g, x, y, a, m = chain()
    interp = Counting(g, OPS)
    assert interp.run(initial_env={a: np.ones(2)}, nodes=[m]) is None   # no output node in the region
    np.testing.assert_array_equal(interp.env[m], [2.0, 2.0])   # a region's result is read by the output: kept
    assert interp.ran == ["numpy.multiply"]
    with pytest.raises(RuntimeError, match="node add is read before it has a value"):
        Interpreter(g, OPS).run(nodes=[m])


def test_errors_name_the_node_and_subclass_hooks_change_messages():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (s,), "bind": {0: s}})
    r = g.call_function("numpy.ndarray.reshape", (x, (2 * t + 1,)), meta={"shape": (2 * t + 1,)})
    g.output([r])
    with pytest.raises(RuntimeError, match=r"(?s)symbol t is used before.*While executing reshape"):
        Interpreter(g, OPS).run(np.zeros(3))
    with pytest.raises(RuntimeError, match=r"module view 'enc': the sizes \['t'\] cannot be derived"):
        _CallInterpreter("enc", g, OPS).run(initial_env={x: np.zeros(3)}, nodes=[r])
    assert _CallInterpreter("enc", g, OPS).run(initial_env={x: np.zeros(3)}, symbols={t: 1}, nodes=[r]) is None


def test_example_values_compute_nodes_added_after_the_run():
    """The decomposition tracer reads nodes builders inserted after its run; they run on demand."""
    g, x, y, a, m = chain()
    interp = _ExampleValues(g, OPS)
    interp.run(np.arange(3.0), np.zeros(3))
    assert {x, y, a, m} <= set(interp.env)
    with g.inserting_before(m):
        b = g.call_function("numpy.add", (a, a), meta={"shape": (s,)})
        c = g.call_function("numpy.sum", (b,), meta={"shape": None, "bind": {None: u}})
    assert interp.fetch(c) == 2 * sum(np.arange(3.0) + 1)
    assert b in interp.env and interp.symbols[u] == interp.env[c] and interp.symbols[s] == 3


# -- the one size evaluator ------------------------------------------------------------------------

@pytest.mark.parametrize("expr, values, want", [
    (sympy.Integer(7), {}, 7),
    (2 * s + 1, {s: 5}, 11),
    (s * t - 3, {s: 5, t: 2}, 7),
    ((s + 1) ** 2, {s: 2}, 9),
    (sympy.floor((s + 63) / 64), {s: 65}, 2),
    (sympy.floor((s + 63) / 64), {s: 64}, 1),
    (sympy.ceiling(s / 4), {s: 9}, 3),
    (sympy.floor(s / 3 + t / 2), {s: 4, t: 3}, 2),
    (sympy.floor(u / 2), {u: -3}, -2),
    (sympy.Mod(s, 4), {s: 10}, 2),
    (sympy.Mod(u, 3), {u: -1}, 2),
    (sympy.Min(s, 512), {s: 1000}, 512),
    (sympy.Max(s - 1, t, 2), {s: 1, t: 0}, 2),
    (sympy.Abs(u), {u: -4}, 4),
    (sympy.Piecewise((s, s > 3), (t, True)), {s: 5, t: 1}, 5),
    (sympy.Piecewise((s, s > 3), (t, True)), {s: 2, t: 1}, 1),
    (s / 2, {s: 5}, 2.5),
    (s / 2, {s: 6}, 3),
    (2.5 * s, {s: 2}, 5.0),
    (sympy.Eq(sympy.Mod(s, 4), 0), {s: 8}, True),
    (sympy.Ne(s, t), {s: 2, t: 2}, False),
    (s <= 512, {s: 513}, False),
    (sympy.Lt(s - 1, 511, evaluate=False), {s: 10}, True),
    (sympy.And(s >= 2, sympy.Eq(sympy.Mod(s, 2), 0)), {s: 4}, True),
    (sympy.Or(s > 9, t < 1), {s: 3, t: 4}, False),
    (sympy.Not(s > 1), {s: 1}, True),
    (sympy.Xor(s > 1, t > 1), {s: 2, t: 0}, True),
    (sympy.true, {}, True),
    (s < sympy.oo, {s: 10 ** 30}, True),
    (3, {}, 3),
])
def test_evaluate(expr, values, want):
    got = evaluate(expr, values)
    assert got == want and type(got) is type(want), (expr, got)


def test_evaluate_types_follow_the_value():
    assert type(evaluate(s / 2, {s: 6})) is int          # exact arithmetic: 6/2 is the int 3
    assert type(evaluate(2.0 * s, {s: 3})) is float      # a float in the expression stays a float
    assert type(evaluate(s > 1, {s: 3})) is bool


def test_evaluate_missing_symbol_is_a_clear_error():
    with pytest.raises(UnboundSymbolError, match=r"no value for 's', 't' in s \+ 2\*t") as info:
        evaluate(s + 2 * t, {})
    assert info.value.symbols == (s, t) and isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="no value for 't'"):
        evaluate(s + t, {s: 1})


def test_evaluate_reads_values_by_symbol_or_name():
    assert evaluate(s + 1, {"s": 3}) == 4
    assert evaluate(s + 1, {sympy.Symbol("s"): 3}) == 4          # same name, other assumptions
    assert evaluate(s + 1, {s: np.int64(3)}) == 4


def test_evaluate_corner_cases_give_sympys_answer():
    assert evaluate(sympy.Eq(s / (t - 2), 1), {s: 5, t: 2}) is False   # zoo != 1
    with pytest.raises(ValueError, match="did not reduce to a constant"):
        evaluate(1 / (s - 5), {s: 5})
    assert np.isnan(evaluate(sympy.Piecewise((s, s > 30)), {s: 1}))
    assert evaluate(sympy.sqrt(s), {s: 9}) == 3
    f = sympy.Function("opaque_size")
    with pytest.raises(ValueError, match="did not reduce"):
        evaluate(f(s) + 1, {s: 2})


def test_evaluate_agrees_with_sympy_substitution():
    rng = random.Random(0)
    exprs = [sympy.floor((s + 63) / 64), sympy.ceiling((3 * s - 1) / 4), sympy.floor(s / 3 + u / 2),
             sympy.ceiling(s * u / 6 - sympy.Rational(1, 3)), sympy.Mod(2 * s + u, 7), sympy.Min(s, u + 3) * 2,
             sympy.Max(sympy.floor(s / 2), u), sympy.floor(s / (u * u + 1)), (s - u) ** 3, sympy.Eq(s * u, 12),
             sympy.Piecewise((sympy.floor(s / 2), sympy.Eq(sympy.Mod(s, 2), 0)), (u, True)),
             sympy.And(s > u, sympy.Or(sympy.Eq(u, 0), s < 2 * u + 5)), 2 * s + sympy.Rational(1, 2) * u]
    for expr in exprs:
        for _ in range(100):
            a, b = rng.randint(1, 60), rng.randint(-20, 20)
            r = expr.xreplace({s: sympy.Integer(a), u: sympy.Integer(b)})
            want = bool(r) if r in (sympy.true, sympy.false) else (int(r) if r.is_Integer else float(r))
            got = evaluate(expr, {s: a, u: b})
            assert got == want and type(got) is type(want), (expr, a, b, got, want)
