"""Codegen: generated source shape, del after last use, GraphModule, Interpreter.

Size expressions print through graph/printing (tested in test_printing.py)."""
import numpy as np
import pytest
import sympy

from tensorplay_export.graph.codegen import GraphModule
from tensorplay_export.graph.ir import Graph
from tensorplay_export.graph.interpreter import Interpreter

F32 = np.dtype("float32")
OPS = {
    "numpy.add": np.add, "numpy.multiply": np.multiply, "numpy.exp": np.exp,
    "numpy.ndarray.reshape": lambda x, shape: x.reshape(shape), "numpy.ndarray.astype": lambda x, d: x.astype(d),
    "tpe.getitem": lambda x, idx: x[idx], "numpy.zeros": np.zeros, "numpy.sum": np.sum,
}
s = sympy.Symbol("s", integer=True, positive=True)
b = sympy.Symbol("b", integer=True, positive=True)


def build_graph():
    """x: (b, s) float32 -> exp(x + 1.0) reshaped to (b*s,), plus x * np.float64(2)."""
    g = Graph()
    x = g.placeholder("x", meta={"shape": (b, s), "dtype": F32, "bind": {0: b, 1: s}})
    add = g.call_function("numpy.add", (x, 1.0), meta={"shape": (b, s), "dtype": F32})
    exp = g.call_function("numpy.exp", (add,), meta={"shape": (b, s), "dtype": F32})
    flat = g.call_function("numpy.ndarray.reshape", (exp, (b * s,)), meta={"shape": (b * s,), "dtype": F32})
    mul = g.call_function("numpy.multiply", (x, np.float64(2.0)), meta={"shape": (b, s), "dtype": np.dtype("float64")})
    g.output([flat, mul])
    return g


def test_codegen_readable_and_runs():
    gm = GraphModule(build_graph(), OPS)
    assert gm.code == (
        "def forward(self, x):\n"
        "    b = x.shape[0]\n"
        "    s = x.shape[1]\n"
        "    add = numpy_add(x, 1.0)\n"
        "    exp = numpy_exp(add, out=add)\n"  # add dies here: its buffer takes the result
        "    del add\n"
        "    reshape = numpy_ndarray_reshape(exp, (b * s,))\n"
        "    del exp\n"
        "    multiply = numpy_multiply(x, float64_c)\n"  # no del of x: the caller holds it
        "    return [reshape, multiply]\n"
    )
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    flat, mul = gm(x)
    np.testing.assert_allclose(flat, np.exp(x + 1.0).reshape(-1), rtol=1e-6)
    # np.float64 constant kept strong: float32 * np.float64 -> float64 (a Python float would give float32)
    assert mul.dtype == np.float64 and flat.dtype == np.float32
    # new sizes run the same code
    x2 = np.ones((4, 5), np.float32)
    assert gm(x2)[0].shape == (20,)


def test_del_after_last_use_every_value():
    gm = GraphModule(build_graph(), OPS)
    lines = [l.strip() for l in gm.code.splitlines()]
    # an input is never deleted: the caller's argument holds it for the whole call
    assert not [l for l in lines if l.startswith("del ") and "x" in l[4:].split(", ")]
    for name in ("add", "exp"):
        assigned_or_param = [i for i, l in enumerate(lines) if l.startswith(f"{name} =") or f"({name})" in l]
        dels = [i for i, l in enumerate(lines) if l.startswith("del ") and name in l[4:].split(", ")]
        assert len(dels) == 1
        last_use = max(i for i, l in enumerate(lines) if name in l.replace("del ", "@").split("@")[0]
                       and not l.startswith("del"))
        assert dels[0] == last_use + 1


def test_unused_value_and_dtype_constant():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (3,), "dtype": F32})
    g.call_function("numpy.sum", (x,), meta={"shape": ()})           # result unused
    cast = g.call_function("numpy.ndarray.astype", (x, np.dtype("int64")), meta={"shape": (3,)})
    z = g.call_function("numpy.zeros", ((2, 2),), {"dtype": np.dtype("float16")}, meta={"shape": (2, 2)})
    g.output([cast, z, 3])
    gm = GraphModule(g, OPS)
    assert "    numpy_sum(x)\n" in gm.code
    assert "numpy_ndarray_astype(x, int64)" in gm.code
    assert "numpy_zeros((2, 2), dtype=float16)" in gm.code
    cast_v, z_v, three = gm(np.array([1.5, 2.5, 3.5], np.float32))
    assert cast_v.dtype == np.int64 and z_v.dtype == np.float16 and three == 3


def test_names_do_not_collide_with_globals():
    g = Graph()
    x = g.placeholder("numpy_add", meta={"shape": (2,)})
    a = g.call_function("numpy.add", (x, x), meta={"shape": (2,)})
    g.output([a])
    gm = GraphModule(g, OPS)
    assert "add = numpy_add_1(numpy_add, numpy_add)" in gm.code
    np.testing.assert_array_equal(gm(np.ones(2))[0], np.full(2, 2.0))


def test_slices_ellipsis_symbolic_index():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (s, 4), "bind": {0: s}})
    half = g.call_function("tpe.getitem", (x, (slice(None, sympy.floor(s / 2), None), Ellipsis, None)),
                           meta={"shape": (sympy.floor(s / 2), 4, 1)})
    g.output([half, s - 1])
    gm = GraphModule(g, OPS)
    assert "tpe_getitem(x, (slice(None, s // 2, None), ..., None))" in gm.code
    out, n = gm(np.zeros((7, 4)))
    assert out.shape == (3, 4, 1) and n == 6


def test_symbol_used_before_bound_is_an_error():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (s,)})
    r = g.call_function("numpy.ndarray.reshape", (x, (s, 1)), meta={"shape": (s, 1)})
    g.output([r])
    with pytest.raises(RuntimeError, match="symbol\\(s\\) s before any node binds"):
        GraphModule(g, OPS, generate=True)
    lazy = GraphModule(g, OPS)  # generated on first use: the error comes there
    with pytest.raises(RuntimeError, match="before any node binds"):
        lazy(np.zeros(3))


def test_value_bind_from_node():
    """meta['bind'][None]: the node's value is the symbol (an unbacked size computed by an op)."""
    g = Graph()
    x = g.placeholder("x", meta={"shape": (4,)})
    u = sympy.Symbol("u0", integer=True, nonnegative=True)
    cnt = g.call_function("numpy.sum", (x,), meta={"shape": None, "bind": {None: u}}, name_hint="count")
    z = g.call_function("numpy.zeros", ((u + 1,),), meta={"shape": (u + 1,)})
    g.output([z])
    gm = GraphModule(g, {**OPS, "numpy.sum": lambda a: int(np.sum(a))})
    assert "u0 = count" in gm.code
    assert gm(np.array([1, 0, 1, 1]))[0].shape == (4,)


def test_unknown_op_error():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (2,)})
    g.output([g.call_function("nosuch.op", (x,), meta={"shape": (2,)})])
    with pytest.raises(NotImplementedError, match="nosuch.op"):
        GraphModule(g, {"numpy.add": np.add}, generate=True)
    with pytest.raises(NotImplementedError, match="nosuch.op"):
        GraphModule(g, {"numpy.add": np.add}).code


def test_lazy_compile_and_lint_flag():
    """Source and function are made on first use; lint=False skips the construction-time lint."""
    g = build_graph()
    gm = GraphModule(g, OPS)
    assert gm._pycode is None and gm._fn is None
    x = np.ones((2, 3), np.float32)
    assert gm(x)[0].shape == (6,) and gm._fn is not None
    assert gm.code.startswith("def forward(self, x):")
    bad = Graph()
    y = bad.placeholder("y", meta={"shape": (2,)})
    bad.output([bad.call_function("numpy.exp", (y,))])   # no meta['shape']: lint refuses it
    with pytest.raises(RuntimeError, match="meta\\['shape'\\] is missing"):
        GraphModule(bad, OPS)
    assert GraphModule(bad, OPS, lint=False)(np.zeros(2))[0].shape == (2,)
    with pytest.raises(RuntimeError, match="missing"):
        GraphModule(bad, OPS, lint=False).recompile()   # recompile always lints


def test_interpreter_matches_codegen():
    g = build_graph()
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    a = GraphModule(g, OPS)(x)
    b_ = Interpreter(g, OPS).run(x)
    for u, v in zip(a, b_):
        np.testing.assert_array_equal(u, v)
        assert u.dtype == v.dtype


def test_interpreter_error_names_node():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (s,), "bind": {0: s}})
    r = g.call_function("numpy.ndarray.reshape", (x, (s + 1,)), meta={"shape": (s + 1,)})
    g.output([r])
    with pytest.raises(ValueError, match=r"(?s)cannot reshape.*While executing reshape = call_function\[numpy.ndarray.reshape\]"):
        Interpreter(g, OPS).run(np.zeros(3))


def test_interpreter_one_method_per_opcode_subclass():
    seen = []

    class Tracing(Interpreter):
        def call_function(self, target, args, kwargs):
            seen.append(target)
            return super().call_function(target, args, kwargs)

    Tracing(build_graph(), OPS).run(np.ones((2, 2), np.float32))
    assert seen == ["numpy.add", "numpy.exp", "numpy.ndarray.reshape", "numpy.multiply"]


def test_strings_and_names_stay_data():
    """Nothing in a graph (as a loaded archive could carry) becomes code: strings are repr'd, names sanitized."""
    g = Graph()
    x = g.placeholder("x); import os; (", meta={"shape": (2,)})
    evil = "'); __import__('os').system('echo pwned'); ('"
    n = g.call_function("tpe.echo", (x, evil), {"not an identifier": 1}, meta={"shape": (2,)},
                        name_hint="a b")
    g.output([n])
    seen = []
    gm = GraphModule(g, {"tpe.echo": lambda a, s, **kw: seen.append((s, kw)) or a})
    gm(np.zeros(2))
    assert seen == [(evil, {"not an identifier": 1})]
    assert "import os" not in gm.code.replace(repr(evil), "")


def test_array_constant_bound_by_identity():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (3,)})
    table = np.array([1.0, 2.0, 3.0], np.float32)
    g.output([g.call_function("numpy.add", (x, table), meta={"shape": (3,)})])
    gm = GraphModule(g, OPS)
    assert "numpy_add(x, ndarray_c)" in gm.code
    out = gm(np.ones(3, np.float32))[0]
    assert out.dtype == np.float32 and out.tolist() == [2.0, 3.0, 4.0]


def test_type_arguments_print_by_name():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (2,)})
    a = g.call_function("numpy.ndarray.astype", (x, bool), meta={"shape": (2,)})
    b = g.call_function("numpy.ndarray.astype", (x, np.float16), meta={"shape": (2,)})
    g.output([a, b])
    gm = GraphModule(g, OPS)
    assert "numpy_ndarray_astype(x, bool)" in gm.code and "numpy_ndarray_astype(x, np.float16)" in gm.code
    a_v, b_v = gm(np.array([0.0, 2.0]))
    assert a_v.dtype == np.bool_ and b_v.dtype == np.float16


def test_bind_axis_and_keyword_names_must_be_plain_data():
    """Values a loaded archive controls are formatted into source: only exact ints/strs pass."""
    import sympy

    from tensorplay_export.graph.codegen import GraphModule
    from tensorplay_export.graph.ir import Graph

    g = Graph()
    x = g.placeholder("x", meta={"shape": (3,), "dtype": F32,
                                 "bind": {"0]; import os; os.getcwd()  #": sympy.Symbol("n", integer=True)}})
    g.output([x])
    with pytest.raises(TypeError, match="axes must be ints"):
        GraphModule(g, op_table={}).code

    class Sneaky(str):
        def __repr__(self):
            return "__import__('os')"

    g = Graph()
    x = g.placeholder("x", meta={"shape": (3,), "dtype": F32})
    y = g.call_function("op", (x,), {"axis": Sneaky("a")}, meta={"shape": (3,), "dtype": F32})
    g.output([y])
    code = GraphModule(g, op_table={"op": lambda v, axis: v}).code
    assert "__import__" not in code


def test_operand_temporary_written_inline_for_numpy_elision():
    """``x + f(y)`` as eager writes it: the temporary's buffer can be reused by numpy."""
    g = Graph()
    x = g.placeholder("x", meta={"shape": (4,), "dtype": F32})
    y = g.placeholder("y", meta={"shape": (4,), "dtype": F32})
    e = g.call_function("numpy.exp", (x,), meta={"shape": (4,), "dtype": F32})
    a = g.call_function("numpy.add", (y, e), meta={"shape": (4,), "dtype": F32})
    m = g.call_function("numpy.multiply", (a, np.float32(2.0)), meta={"shape": (4,), "dtype": F32})
    sub = g.call_function("numpy.subtract", (x, g.call_function("numpy.exp", (m,), meta={"shape": (4,)})),
                          meta={"shape": (4,), "dtype": F32})
    g.output([sub])
    ops = dict(OPS, **{"numpy.subtract": np.subtract})
    gm = GraphModule(g, ops)
    # add and multiply chain inline; subtract's temporary is on the right (not commutative): a call
    assert "multiply = (y + numpy_exp(x)) * float32_c" in gm.code
    assert "subtract = numpy_subtract(x, exp_1)" in gm.code
    xv, yv = np.arange(4, dtype=np.float32) / 4, np.ones(4, np.float32)
    want = np.subtract(xv, np.exp((yv + np.exp(xv)) * np.float32(2.0)))
    got = gm(xv, yv)[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)
    # an op_table entry that is not the numpy ufunc is called as written
    gm2 = GraphModule(g, dict(ops, **{"numpy.add": lambda p, q: np.add(p, q)}))
    assert "multiply = numpy_add(y, exp) * float32_c" in gm2.code


def test_values_freed_when_eager_frames_free_them():
    """module_stack/source meta: arguments live until their call returns, locals until their frame does."""
    from tensorplay_export.records import SourceLoc

    root, blk, sub = ("", 0), ("blk", 1), ("blk.sub", 2)
    g = Graph()
    x = g.placeholder("x", meta={"shape": (4,), "dtype": F32})

    def op(target, args, stack, line):
        return g.call_function(target, args, meta={"shape": (4,), "dtype": F32, "module_stack": stack,
                                                   "source": SourceLoc("m.py", line)})
    h = op("numpy.exp", (x,), (root,), 1)              # root: `h = exp(x)`, then `blk(h)`
    t = op("numpy.exp", (h,), (root, blk), 10)         # blk line 10: `t = exp(h)`
    u = op("numpy.exp", (t,), (root, blk, sub), 20)    # blk line 11: `v = exp(sub(t))`
    v = op("numpy.exp", (u,), (root, blk), 11)
    w = op("numpy.add", (v, t), (root, blk), 12)       # blk line 12: `w = v + t`
    w2 = op("tpe.getitem", (w, slice(None)), (root, blk), 13)  # blk line 13: `return w[:]`
    z = op("tpe.getitem", (w2, slice(None)), (root,), 2)
    g.output([z])
    gm = GraphModule(g, OPS)
    lines = [ln.strip() for ln in gm.code.splitlines()]

    def freed_after(node):
        return next(lines[i - 1].split(" =")[0] for i, ln in enumerate(lines)
                    if ln.startswith("del ") and node.name in ln[4:].split(", "))
    assert freed_after(h) == w2.name   # blk's argument: held by blk's frame until it returns
    assert freed_after(t) == w2.name   # a local of blk read on a later line: until blk returns
    assert freed_after(u) == v.name    # a temporary: freed at its last use
    assert freed_after(w) == w2.name
    x0 = np.zeros(4, np.float32)
    e = np.exp
    assert np.allclose(gm(x0)[0], e(e(e(e(x0)))) + e(e(x0)))
    # without the meta (a hand-built or loaded graph) values die at their last use
    for n in g.nodes:
        n.meta.pop("module_stack", None)
    lines = [ln.strip() for ln in GraphModule(g, OPS).code.splitlines()]
    assert freed_after(h) == t.name


def test_loop_reassignment_frees_previous_value():
    """A line that runs again in the same call reassigns its variable: the old value dies there."""
    from tensorplay_export.records import SourceLoc

    g = Graph()
    x = g.placeholder("x", meta={"shape": (4,), "dtype": F32})
    cur, made = x, []
    for _ in range(3):  # `h = exp(x)` (line 5); `x = exp(h)` (line 6) in a loop of one frame
        h = g.call_function("numpy.exp", (cur,), meta={"shape": (4,), "module_stack": (("", 0),),
                                                       "source": SourceLoc("m.py", 5)})
        cur = g.call_function("numpy.exp", (h,), meta={"shape": (4,), "module_stack": (("", 0),),
                                                        "source": SourceLoc("m.py", 6)})
        made.append(h)
    g.output([cur])
    lines = [ln.strip() for ln in GraphModule(g, OPS).code.splitlines()]
    # the first h dies when line 5 runs again (the second h), not at the end of the frame
    second_h = next(i for i, ln in enumerate(lines) if ln.startswith(f"{made[1].name} ="))
    assert any(ln.startswith("del ") and made[0].name in ln[4:].split(", ") for ln in lines[second_h:second_h + 2])


class _Holder:
    """A level of attributes (``gm.fc.weight``, ``getattr(gm.layers, '0').bias``)."""


def _attr_graph():
    """y = (x @ fc.weight + layers.0.bias), the weights read as attributes (get_attr)."""
    g = Graph()
    w = g.get_attr("fc.weight", meta={"shape": (3, 2), "dtype": F32})
    bias = g.get_attr("layers.0.bias", meta={"shape": (2,), "dtype": F32})
    x = g.placeholder("x", meta={"shape": (b, 3), "dtype": F32, "bind": {0: b}})
    mm = g.call_function("numpy.matmul", (x, w), meta={"shape": (b, 2), "dtype": F32})
    y = g.call_function("numpy.add", (mm, bias), meta={"shape": (b, 2), "dtype": F32})
    g.output([y])
    return g


def test_attribute_reads_are_one_statement_read_on_every_call():
    ops = {**OPS, "numpy.matmul": np.matmul}
    gm = GraphModule(_attr_graph(), ops)
    code = gm.code
    assert code.startswith(
        "def forward(self, x):\n"
        "    (\n"
        "        fc_weight,  # self.fc.weight\n"
        "        layers_0_bias,  # getattr(self.layers, '0').bias\n"
        "    ) = read_attrs(self)\n")
    # attributes and inputs are held by the module and the caller: never deleted
    assert not [ln for ln in code.splitlines() if ln.strip().startswith("del ")
                and {"fc_weight", "layers_0_bias", "x"} & set(ln.strip()[4:].split(", "))]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w, bias = np.ones((3, 2), np.float32), np.array([1.0, -1.0], np.float32)
    gm.fc, gm.layers = _Holder(), _Holder()   # the attributes the generated code reads on self
    gm.fc.weight = w
    setattr(gm.layers, "0", _Holder())
    getattr(gm.layers, "0").bias = bias
    np.testing.assert_array_equal(gm(x)[0], x @ w + bias)
    gm.fc.weight = np.full((3, 2), 2.0, np.float32)   # read again on the next call
    np.testing.assert_array_equal(gm(x)[0], x @ gm.fc.weight + bias)
    del getattr(gm.layers, "0").bias                  # a missing attribute: getattr's own error
    with pytest.raises(AttributeError, match="bias"):
        gm(x)


def test_single_attribute_read_is_a_plain_statement():
    g = Graph()
    w = g.get_attr("fc.weight", meta={"shape": (3,), "dtype": F32})
    x = g.placeholder("x", meta={"shape": (3,), "dtype": F32})
    y = g.call_function("numpy.add", (x, w), meta={"shape": (3,), "dtype": F32})
    g.output([y])
    assert "    fc_weight = self.fc.weight\n" in GraphModule(g, OPS).code


def test_placeholders_read_as_attributes_generate_the_get_attr_graph_source():
    """python_code(graph, attrs=...) is the source of a copy with those placeholders as get_attr nodes."""
    from tensorplay_export.graph.codegen import python_code

    ops = {**OPS, "numpy.matmul": np.matmul}
    with_attrs = _attr_graph()
    g = Graph()   # the functional form: the same values as placeholders, in the same order
    w = g.placeholder("fc_weight", meta={"shape": (3, 2), "dtype": F32})
    bias = g.placeholder("layers_0_bias", meta={"shape": (2,), "dtype": F32})
    x = g.placeholder("x", meta={"shape": (b, 3), "dtype": F32, "bind": {0: b}})
    mm = g.call_function("numpy.matmul", (x, w), meta={"shape": (b, 2), "dtype": F32})
    y = g.call_function("numpy.add", (mm, bias), meta={"shape": (b, 2), "dtype": F32})
    g.output([y])
    before = str(g)
    code = python_code(g, ops.__getitem__, attrs={w: "fc.weight", bias: "layers.0.bias"})
    assert code.src == GraphModule(with_attrs, ops).code
    assert str(g) == before   # the graph is not changed
    assert python_code(g, ops.__getitem__).src.startswith("def forward(self, fc_weight, layers_0_bias, x):")


def test_graph_nodes_follow_inserts_and_erases_after_a_read():
    from tensorplay_export.graph.ir import Graph

    g = Graph()
    x = g.placeholder("x", meta={"shape": (2,)})
    first = g.nodes
    first.append("not a node")  # the caller's own list
    assert g.nodes == [x]
    y = g.call_function("numpy.negative", (x,), meta={"shape": (2,)})
    with g.inserting_before(y):
        z = g.call_function("numpy.abs", (x,), meta={"shape": (2,)})
    assert g.nodes == [x, z, y]
    g.erase_node(z)
    assert g.nodes == [x, y]
    copy, mapping = g.copy()
    assert [n.name for n in copy.nodes] == ["x", "negative"] and copy.nodes[1] is mapping[y]
