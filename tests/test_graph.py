"""Graph IR: naming, users, insertion, erasure, lint, text dump."""
import keyword

import numpy as np
import pytest
import sympy

from tensorplay_export.graph.ir import Graph, Namespace, Node

F32 = np.dtype("float32")


def small_graph():
    g = Graph()
    s = sympy.Symbol("seq", integer=True, positive=True)
    x = g.placeholder("x", meta={"shape": (2, s), "dtype": F32, "bind": {1: s}})
    y = g.placeholder("y", meta={"shape": (2, s), "dtype": F32})
    a = g.call_function("numpy.add", (x, y), meta={"shape": (2, s), "dtype": F32})
    e = g.call_function("numpy.exp", (a,), meta={"shape": (2, s), "dtype": F32})
    g.output([e, a])
    return g, x, y, a, e


def test_names_unique_and_not_shadowing():
    ns = Namespace()
    assert ns.create("add") == "add"
    assert ns.create("add") == "add_1"
    assert ns.create("add") == "add_2"
    assert ns.create("sum") == "sum_1"          # builtin
    assert ns.create("lambda") == "lambda_1"    # keyword
    assert ns.create("np") == "np_1"
    assert ns.create("self") == "self_1"
    assert ns.create("x.shape[0]") == "x_shape_0_"
    assert ns.create("0abc") == "_0abc"


def test_naming_is_linear_time():
    g = Graph()
    g.placeholder("x", meta={"shape": (2,)})
    for _ in range(20000):
        g.call_function("numpy.add", (), meta={"shape": (2,)})
    names = [n.name for n in g.nodes]
    assert len(set(names)) == len(names)
    assert names[-1] == "add_19999"


def test_graph_nodes_and_users():
    g, x, y, a, e = small_graph()
    assert [n.name for n in g.nodes] == ["x", "y", "add", "exp", "output"]
    assert list(x.users) == [a]
    assert set(a.users) == {e, g.output_node}
    assert a.all_input_nodes == [x, y]
    g.lint()


def test_call_function_name_hint_and_builtin_targets():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (3,)})
    m = g.call_function("numpy.max", (x,), meta={"shape": ()})
    r = g.call_function("numpy.ndarray.reshape", (x, (3, 1)), meta={"shape": (3, 1)}, name_hint="rows")
    g.output([m, r])
    assert m.name == "max_1" and r.name == "rows"
    g.lint()


def test_inserting_before_and_after():
    g, x, y, a, e = small_graph()
    with g.inserting_before(a):
        n1 = g.call_function("numpy.negative", (x,), meta={"shape": x.meta["shape"]})
        n2 = g.call_function("numpy.negative", (n1,), meta={"shape": x.meta["shape"]})
    with g.inserting_after(e):
        n3 = g.call_function("numpy.copy", (e,), meta={"shape": e.meta["shape"]})
    assert [n.name for n in g.nodes] == ["x", "y", "negative", "negative_1", "add", "exp", "copy", "output"]
    assert n2.prev is n1 and n3.next is g.output_node
    g.lint()


def test_replace_all_uses_and_erase():
    g, x, y, a, e = small_graph()
    b = None
    with g.inserting_after(a):
        b = g.call_function("numpy.multiply", (x, y), meta={"shape": a.meta["shape"]})
    changed = a.replace_all_uses_with(b)
    assert set(changed) == {e, g.output_node}
    assert e.args == (b,) and not a.users
    g.erase_node(a)
    assert a.name not in [n.name for n in g.nodes]
    g.lint()
    with pytest.raises(RuntimeError, match="still used"):
        g.erase_node(b)


def test_eliminate_dead_code_and_copy():
    g, x, y, a, e = small_graph()
    g.output_node.args = ([a],)
    assert g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "y", "add", "output"]
    g2, mapping = g.copy()
    g2.lint()
    assert str(g2) == str(g)
    assert mapping[a] is not a and mapping[a].graph is g2
    # new names in the copy stay unique
    assert g2.call_function("numpy.add", (), meta={"shape": ()}).name == "add_1"


def test_text_dump_is_stable():
    g, *_ = small_graph()
    assert str(g) == "\n".join([
        "x = placeholder[x]() :: (2, seq) float32 bind{1: seq}",
        "y = placeholder[y]() :: (2, seq) float32",
        "add = call_function[numpy.add](%x, %y) :: (2, seq) float32",
        "exp = call_function[numpy.exp](%add) :: (2, seq) float32",
        "output = output[output]([%exp, %add])",
    ])


@pytest.mark.parametrize("breaker, message", [
    ("missing_shape", "meta\\['shape'\\] is missing"),
    ("order", "not defined before"),
    ("no_output", "exactly one output"),
    ("opcode", "unknown opcode"),
    ("dup_name", "duplicate name"),
    ("users", "missing from the users"),
    ("placeholder_late", "placeholder after"),
    ("bind", "is not a sympy.Symbol"),
])
def test_lint_failures(breaker, message):
    g, x, y, a, e = small_graph()
    if breaker == "missing_shape":
        del e.meta["shape"]
    elif breaker == "order":
        # move exp before add by relinking
        e._prev._next = e._next
        e._next._prev = e._prev
        a._prev._next = e
        e._prev, e._next = a._prev, a
        a._prev = e
    elif breaker == "no_output":
        g.erase_node(g.output_node)
    elif breaker == "opcode":
        e.op = "call_method"
    elif breaker == "dup_name":
        e.name = "add"
    elif breaker == "users":
        x.users.clear()
    elif breaker == "placeholder_late":
        with g.inserting_before(g.output_node):
            g.placeholder("z", meta={"shape": ()})
    elif breaker == "bind":
        y.meta["bind"] = {0: "seq"}
    with pytest.raises(RuntimeError, match=message):
        g.lint()


def test_unknown_opcode_rejected_at_creation():
    with pytest.raises(ValueError, match="unknown opcode"):
        Graph().create_node("call_method", "w")


def test_node_names_are_identifiers():
    g = Graph()
    p = g.placeholder("extras['scale']", meta={"shape": ()})
    assert p.name.isidentifier() and not keyword.iskeyword(p.name)
    assert p.target == "extras['scale']"
    assert isinstance(p, Node)


def test_input_nodes_given_by_the_caller():
    """create_node(input_nodes=...) skips the argument walk; lint catches a wrong tuple."""
    g = Graph()
    x = g.placeholder("x", meta={"shape": (2,)})
    y = g.placeholder("y", meta={"shape": (2,)})
    a = g.call_function("numpy.add", (x, [y, {"k": x}], slice(None, y)), meta={"shape": (2,)},
                        input_nodes=(x, y))
    walked = g.call_function("numpy.add", (x, [y, {"k": x}], slice(None, y)), meta={"shape": (2,)})
    assert a.all_input_nodes == walked.all_input_nodes == [x, y]
    assert list(x.users) == [a, walked] and list(y.users) == [a, walked]
    g.output([a, walked])
    g.lint()
    with g.inserting_before(g.output_node):
        bad = g.call_function("numpy.exp", (x,), meta={"shape": (2,)}, input_nodes=(y,))
    with pytest.raises(RuntimeError, match="recorded input nodes differ"):
        g.lint()
    del bad
