"""Runtime input checks: every ConstraintsExceededError kind, dtype TypeError, placement, cost."""
import re

import numpy as np
import pytest
import sympy

from tensorplay_export.program.build import eliminate_dead_code
from tensorplay_export.graph.codegen import GraphModule
from tensorplay_export.errors import ConstraintsExceededError
from tensorplay_export.graph.ir import Graph
from tensorplay_export.graph.interpreter import Interpreter
from tensorplay_export.records import ValueRange
from tensorplay_export.program.input_checks import InputContract, InputSite, insert_input_checks

F32 = np.dtype("float32")
OPS = {"numpy.add": np.add, "numpy.concatenate": np.concatenate,
       "numpy.ndarray.reshape": lambda x, shape: x.reshape(shape)}


def sym(name, lower=1):
    return sympy.Symbol(name, integer=True, positive=True) if lower >= 1 else \
        sympy.Symbol(name, integer=True, nonnegative=True)


batch, seq, dx = sym("batch"), sym("seq"), sym("dx")


def attention_like():
    """x: (batch, seq, 8), y: (batch, seq, 8) -> x + y; seq in [1, 512]."""
    g = Graph()
    x = g.placeholder("x", meta={"shape": (batch, seq, 8), "dtype": F32, "bind": {0: batch, 1: seq}})
    y = g.placeholder("y", meta={"shape": (batch, seq, 8), "dtype": F32})
    g.output([g.call_function("numpy.add", (x, y), meta={"shape": (batch, seq, 8), "dtype": F32})])
    contract = InputContract(
        sites=[InputSite("x", "x", (batch, seq, 8), F32), InputSite("y", "y", (batch, seq, 8), F32)],
        ranges={batch: ValueRange(1), seq: ValueRange(1, 512)}, names={})
    inserted = insert_input_checks(g, contract)
    g.lint()
    return g, inserted


def arr(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


def run_both(g, *inputs):
    """Run through codegen and the interpreter; both must agree (raise the same message)."""
    gm = GraphModule(g, OPS)
    results = []
    for fn in (gm, Interpreter(g, OPS).run):
        try:
            results.append(("ok", fn(*inputs)))
        except (ConstraintsExceededError, TypeError) as err:
            results.append((type(err), str(err)))
    assert results[0][0] == results[1][0]
    if results[0][0] != "ok":
        assert results[0][1] == results[1][1]
        raise results[0][0](results[0][1])
    return results[0][1]


def test_checks_come_first_and_code_reads_well():
    g, inserted = attention_like()
    ops = [n.target for n in g.nodes if n.op == "call_function"]
    assert ops[:len(inserted)] == [n.target for n in inserted]
    assert ops[-1] == "numpy.add"
    code = GraphModule(g, OPS).code
    assert "check_x = tpe_check_input(x, 'x', (None, None, 8), float32, '(batch, seq, 8)')" in code
    assert "    batch = check_x.shape[0]\n    seq = check_x.shape[1]\n" in code
    assert "tpe_assert_range(seq, 1, 512, 'x.shape[1]', 'seq')" in code
    assert "tpe_assert_dim(check_y, 'y', 0, batch, 'x.shape[0]', 'dim batch')" in code
    # the placeholder's binds moved to the check node: nothing reads x.shape before the rank check
    assert "= x.shape" not in code


def test_admitted_sizes_run():
    g, _ = attention_like()
    for b, s in [(1, 1), (3, 512), (2, 17)]:
        out, = run_both(g, arr(b, s, 8), arr(b, s, 8))
        assert out.shape == (b, s, 8)


@pytest.mark.parametrize("x_shape, y_shape, message", [
    ((2, 513, 8), (2, 513, 8), "x.shape[1] = 513 is outside seq in [1, 512]"),
    ((2, 0, 8), (2, 0, 8), "x.shape[1] = 0 is outside seq in [1, 512]; a size-0 (empty) input is outside every "
                           "range that starts at 1, the default of Dim, Dim.AUTO and Dim.DYNAMIC: the program is "
                           "proven only for the range it states, and an empty axis can change numpy's semantics "
                           "(broadcasting, reshape(-1, ...), reductions). If the model handles empty inputs, export "
                           "with min=0 on this axis (Dim.AUTO(min=0), Dim.DYNAMIC(min=0) or Dim('n', min=0)): the "
                           "export then proves size 0 too, or names the guard that excludes it"),
    ((2, 5, 8), (3, 5, 8), "y.shape[0] = 3 must equal x.shape[0] = 2 (dim batch)"),
    ((2, 5, 8), (2, 4, 8), "y.shape[1] = 4 must equal x.shape[1] = 5 (dim seq)"),
    ((2, 5, 9), (2, 5, 8), "x.shape[2] = 9 must be 8 (static in (batch, seq, 8))"),
    ((2, 5), (2, 5, 8), "x has rank 2 (shape (2, 5)), but the contract expects rank 3: (batch, seq, 8)"),
])
def test_shape_errors(x_shape, y_shape, message):
    g, _ = attention_like()
    with pytest.raises(ConstraintsExceededError, match=re.escape(message) + "$"):
        run_both(g, arr(*x_shape), arr(*y_shape))


def test_dtype_error():
    g, _ = attention_like()
    with pytest.raises(TypeError, match=re.escape("y has dtype float64, but the program expects float32; "
                                                  "cast it first, e.g. y.astype(np.float32)")):
        run_both(g, arr(2, 5, 8), arr(2, 5, 8, dtype=np.float64))


def test_not_an_array():
    g, _ = attention_like()
    with pytest.raises(ConstraintsExceededError, match=re.escape("y must be an array of shape (batch, seq, 8), got list")):
        run_both(g, arr(2, 5, 8), [1, 2])


def relation_graph(extra_guards=(), names=None, ranges=None):
    """x: (dx, 4), y: (2*dx + 1, 4) -> concatenate along axis 0."""
    g = Graph()
    x = g.placeholder("x", meta={"shape": (dx, 4), "dtype": F32})
    y = g.placeholder("y", meta={"shape": (2 * dx + 1, 4), "dtype": F32})
    c = g.call_function("numpy.concatenate", ((x, y),), meta={"shape": (3 * dx + 1, 4), "dtype": F32})
    g.output([c])
    insert_input_checks(g, InputContract(
        sites=[InputSite("x", "x", (dx, 4), F32), InputSite("y", "y", (2 * dx + 1, 4), F32)],
        ranges=ranges or {dx: ValueRange(1, 10)}, guards=list(extra_guards), names=names or {}))
    g.lint()
    return g


def test_derived_relation():
    g = relation_graph()
    assert run_both(g, arr(3, 4), arr(7, 4))[0].shape == (10, 4)
    with pytest.raises(ConstraintsExceededError,
                       match=re.escape("y.shape[0] = 8 must equal 2*dx + 1 = 7 (dx from x.shape[0])")):
        run_both(g, arr(3, 4), arr(8, 4))


def test_derived_root_binding_divisibility_and_range():
    """n only appears as 4*_n: bind _n = size // 4, check divisibility and _n's range."""
    n = sym("_n")
    g = Graph()
    x = g.placeholder("x", meta={"shape": (4 * n, 3), "dtype": F32})
    r = g.call_function("numpy.ndarray.reshape", (x, (n, 12)), meta={"shape": (n, 12), "dtype": F32})
    g.output([r])
    insert_input_checks(g, InputContract([InputSite("x", "x", (4 * n, 3), F32)], {n: ValueRange(1, 250)}))
    g.lint()
    code = GraphModule(g, OPS).code
    assert "_n = root_n" in code and "tpe_derived_root(check_x, 'x', 0, 4, 0, 1, 250, '4*_n', '_n')" in code
    assert run_both(g, arr(8, 3))[0].shape == (2, 12)
    with pytest.raises(ConstraintsExceededError,
                       match=re.escape("x.shape[0] = 6 is not 4*_n for any integer _n (it must be divisible by 4)")):
        run_both(g, arr(6, 3))
    with pytest.raises(ConstraintsExceededError,
                       match=re.escape("x.shape[0] = 1004 is outside 4*_n for _n in [1, 250]")):
        run_both(g, arr(1004, 3))
    with pytest.raises(ConstraintsExceededError, match=re.escape("x.shape[0] = 0 is outside 4*_n for _n in [1, 250]")):
        run_both(g, arr(0, 3))


def test_derived_root_with_offset():
    r = sym("r")
    g = Graph()
    x = g.placeholder("x", meta={"shape": (2 * r + 1,), "dtype": F32})
    g.output([x])
    insert_input_checks(g, InputContract([InputSite("x", "x", (2 * r + 1,), F32)], {r: ValueRange(1)}))
    run_both(g, arr(5))
    with pytest.raises(ConstraintsExceededError, match=re.escape("size - 1 must be divisible by 2")):
        run_both(g, arr(6))


def test_extra_guard_message_uses_display_names():
    rows, cols = sym("s0"), sym("s1")
    g = Graph()
    x = g.placeholder("x", meta={"shape": (rows, cols), "dtype": F32})
    g.output([x])
    insert_input_checks(g, InputContract(
        [InputSite("x", "x", (rows, cols), F32)], {rows: ValueRange(1), cols: ValueRange(1)},
        guards=[sympy.Eq(2 * cols, rows)], names={rows: "rows", cols: "cols"}))
    run_both(g, arr(6, 3))
    with pytest.raises(ConstraintsExceededError,
                       match=re.escape("x.shape[0] = 6 violates 2*cols == rows (rows = 6, cols = 4)")):
        run_both(g, arr(6, 4))


def test_divisibility_guard_and_unbounded_range_text():
    g = relation_graph(extra_guards=[sympy.Eq(sympy.Mod(dx, 2), 0)], ranges={dx: ValueRange(2)})
    run_both(g, arr(4, 4), arr(9, 4))
    with pytest.raises(ConstraintsExceededError, match=re.escape("x.shape[0] = 3 violates dx % 2 == 0 (dx = 3)")):
        run_both(g, arr(3, 4), arr(7, 4))
    with pytest.raises(ConstraintsExceededError, match=re.escape("x.shape[0] = 1 is outside dx in [2, inf]")):
        run_both(g, arr(1, 4), arr(3, 4))


def test_insert_errors():
    g = Graph()
    x = g.placeholder("x", meta={"shape": (dx,)})
    g.output([x])
    with pytest.raises(ValueError, match="no placeholder named 'z'"):
        insert_input_checks(g, InputContract([InputSite("z", "z", (dx,))]))
    with pytest.raises(ValueError, match="no input axis binds"):
        insert_input_checks(g, InputContract([InputSite("x", "x", (dx,))], guards=[sympy.Eq(seq, 2)]))


def test_dead_code_elimination_keeps_checks():
    g, inserted = attention_like()
    with g.inserting_before(g.output_node):
        g.call_function("numpy.add", (g.placeholders()[0], 1.0), meta={"shape": (batch, seq, 8)})
    assert eliminate_dead_code(g)  # the program layer's: it keeps the registry's side-effect ops
    assert [n.name for n in g.nodes if n.op == "call_function"][:len(inserted)] == [n.name for n in inserted]
    assert sum(1 for n in g.nodes if n.target == "numpy.add") == 1


def test_derived_root_negative_offset_text():
    r = sym("r")
    g = Graph()
    x = g.placeholder("x", meta={"shape": (3 * r - 1,), "dtype": F32})
    g.output([x])
    insert_input_checks(g, InputContract([InputSite("x", "x", (3 * r - 1,), F32)], {r: ValueRange(1, 4)}))
    run_both(g, arr(5))
    with pytest.raises(ConstraintsExceededError,
                       match=re.escape("x.shape[0] = 6 is not 3*r - 1 for any integer r (size + 1 must be divisible by 3)")):
        run_both(g, arr(6))
    with pytest.raises(ConstraintsExceededError, match=re.escape("x.shape[0] = 14 is outside 3*r - 1 for r in [1, 4]")):
        run_both(g, arr(14))
