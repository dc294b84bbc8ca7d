"""Writes through arrays numpy makes either a view or a copy (capture/views.py, ops/aliasing.py).

``reshape``, ``ravel``, ``ascontiguousarray``, ``astype(copy=False)``... return a view of
their argument only when its sizes and memory layout allow one.  The program must decide
as numpy does on *its* call's arrays, not as numpy decided at capture: every model here is
run eagerly and through the program at many sizes of the contract (1, 2, the example, past
it, the maximum) on C-contiguous, strided (``big[::2]``) and Fortran-order inputs, and the
outputs *and* the caller's input after the call must be eager's.
"""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.program.signature import OutputKind

SIZES = (1, 2, 3, 8, 9, 12, 64)
SPEC = {"x": {0: Dim("n", max=64)}}
EXAMPLE = np.arange(24, dtype=np.float32).reshape(8, 3)


def c_order(n):
    return np.arange(n * 3, dtype=np.float32).reshape(n, 3) + 1.0


def strided(n):
    big = np.arange(2 * n * 3, dtype=np.float32).reshape(2 * n, 3) + 1.0
    return big[::2]


def fortran(n):
    return np.asfortranarray(c_order(n))


LAYOUTS = {"C": c_order, "strided": strided, "F": fortran}


def eager_and_program(model, run, make, n):
    """(eager result, program result, caller's input after eager, after the program)."""
    a, b = make(n), make(n)
    assert a.strides == b.strides
    want, got = model(a), run(b)
    return want, got, a, b


def assert_same(want, got):
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
        assert g.shape == w.shape and g.dtype == w.dtype


def check_everywhere(model, run, sizes=SIZES, layouts=LAYOUTS):
    for name, make in layouts.items():
        for n in sizes:
            want, got, a, b = eager_and_program(model, run, make, n)
            try:
                assert_same(want, got)
                np.testing.assert_array_equal(b, a)  # the caller's input: as eager left it
            except AssertionError as err:
                raise AssertionError(f"{model.__name__}: {name} input, n = {n}: {err}") from None


# -- the fresh user's repros -------------------------------------------------------------------
def strided_rows_reshaped(x):
    h = x * 1.0                # a fresh array
    y = h[::8].reshape(-1)     # a view of h while h[::8] has one row (n <= 8), a copy from n = 9
    y[0] = -100.0
    return h.sum(axis=0)


def transpose_raveled(x):
    h = x * 1.0
    y = h.T.ravel()            # a view of h only at n = 1 (h.T is contiguous then)
    y[0] = -100.0
    return h.sum(axis=0)


def input_reshaped(x):
    y = x.reshape(-1)          # a view of a C-contiguous x, a copy of a strided or Fortran-order one
    y[0] = -1.0
    return x.sum(axis=0)


def input_rows_reshaped(x):
    y = x[::2].reshape(-1)     # a view while x[::2] is contiguous (n <= 2 for a C input)
    y[0] = 7.0
    return y * 1


def input_written_through_base(x):
    y = x.reshape(-1)          # made before the write: sees it only when it is a view
    x[0, 0] = 5.0
    return y * 1.0


def written_then_reshaped(x):
    h = x * 1.0
    s = h[::2]                 # always a view of h, strided
    s[0, 0] = 3.0              # the program's s is now a compact copy: its layout is not eager's
    y = s.reshape(-1)          # eager: a copy while s has more than one row
    y[1] = -5.0
    return h.sum(axis=0), s * 1.0


def fortran_order_reshape(x):
    y = x.reshape(-1, order="F")   # a view of a Fortran-order x (or of one row), else a copy
    y[0] = 9.0
    return x * 1.0


def astype_without_copy(x):
    y = x.astype(np.float32, copy=False)   # x itself (a float32 input)
    y[0, 1] = 4.0
    return x + 0.0


def two_possible_views(x):
    y = x.T.reshape(-1)        # a view at n = 1 only
    z = y.reshape(3, -1)       # a view of y always: the write reaches x iff y is a view
    z[0, 0] = -2.0
    return y * 1.0, x.sum(axis=0)


REPROS = [strided_rows_reshaped, transpose_raveled, input_reshaped, input_rows_reshaped,
          input_written_through_base, written_then_reshaped, fortran_order_reshape, astype_without_copy,
          two_possible_views]


@pytest.fixture(scope="module")
def programs():
    return {m.__name__: tpe.export(m, EXAMPLE.copy(), dynamic_shapes=SPEC) for m in REPROS}


@pytest.mark.parametrize("model", REPROS, ids=lambda m: m.__name__)
def test_program_decides_view_or_copy_as_numpy_does(model, programs):
    check_everywhere(model, programs[model.__name__].module())


def test_the_decision_is_a_node_of_the_program(programs):
    code = programs["strided_rows_reshaped"].graph_module.code
    assert "tpe_is_view(" in code and "tpe_where_view(" in code


def test_input_reached_through_a_possible_view_is_an_input_mutation(programs):
    specs = programs["input_reshaped"].graph_signature.output_specs
    assert [s.kind for s in specs] == [OutputKind.USER_INPUT_MUTATION, OutputKind.USER_OUTPUT]


@pytest.mark.parametrize("make", [strided, fortran], ids=["strided", "F"])
def test_read_only_input_eager_does_not_write(make, programs):
    """No write at all into the caller's array where eager makes a copy: a read-only input works."""
    run = programs["input_reshaped"].module()
    for n in (2, 8, 64):
        a, b = make(n), make(n)
        a.flags.writeable = b.flags.writeable = False
        assert_same(input_reshaped(a), run(b))
        np.testing.assert_array_equal(b, make(n))


def rows_transposed_reshaped(x):
    rows = x[:2]               # always a view of x
    y = rows.T.reshape(-1)     # a view only where rows.T is contiguous
    y[0] = -3.0
    return x * 1.0


@pytest.mark.parametrize("make", [strided, fortran, c_order], ids=["strided", "F", "C"])
def test_read_only_input_behind_a_chain_of_views(make):
    """x[:2].T.reshape(-1): a write reaches x only where the last link is a view; where it is
    not, the program writes nothing into a read-only x (every base above the possible view
    keeps its very value)."""
    ep = tpe.export(rows_transposed_reshaped, EXAMPLE.copy(), dynamic_shapes={"x": {0: Dim("n", min=2, max=64)}})
    check_everywhere(rows_transposed_reshaped, ep.module(), sizes=(2, 3, 8, 64))
    for n in (2, 8):
        a = make(n)
        a.flags.writeable = False
        try:
            want = rows_transposed_reshaped(a)
        except ValueError:      # eager writes into x (a view): read-only raises, and so does the program
            with pytest.raises(ValueError, match="read-only"):
                ep.module()(a)
            continue
        assert_same(want, ep.module()(a))
        np.testing.assert_array_equal(a, make(n))


def test_read_only_input_where_eager_writes_raises_as_eager(programs):
    run = programs["input_reshaped"].module()
    a = c_order(4)
    a.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        input_reshaped(a)
    with pytest.raises(ValueError, match="read-only"):
        run(a)


def test_static_export_at_the_example_follows_other_layouts():
    ep = tpe.export(input_reshaped, EXAMPLE.copy())
    check_everywhere(input_reshaped, ep.module(), sizes=(8,))


@pytest.mark.parametrize("model", [strided_rows_reshaped, input_reshaped, written_then_reshaped],
                         ids=lambda m: m.__name__)
def test_saved_and_loaded_program_decides_at_run_time(model, programs, tmp_path):
    path = tmp_path / f"{model.__name__}.pt2"
    tpe.save(programs[model.__name__], path)
    loaded = tpe.load(path)
    assert "tpe_is_view(" in loaded.graph_module.code
    check_everywhere(model, loaded.module(), sizes=(1, 2, 8, 9, 64))


def test_decomposed_program_decides_at_run_time(programs):
    decomposed = programs["input_reshaped"].run_decompositions()
    assert "tpe_is_view(" in decomposed.graph_module.code
    check_everywhere(input_reshaped, decomposed.module(), sizes=(1, 2, 8, 64))


@pytest.mark.parametrize("model", [strided_rows_reshaped, input_rows_reshaped, input_reshaped],
                         ids=lambda m: m.__name__)
def test_draft_export_program_decides_at_run_time(model):
    report = tpe.draft_export(model, EXAMPLE.copy(), dynamic_shapes=SPEC)
    assert report.successful(), str(report)
    check_everywhere(model, report.exported_program.module(), sizes=(1, 2, 8, 9, 64))


def test_write_through_a_layout_ordered_ravel_is_refused():
    def model(x):
        y = x.ravel(order="K")   # element order follows the memory layout: not followed
        y[0] = 1.0
        return x * 1.0

    with pytest.raises(tpe.UnsupportedOpError, match=r"write through the result of numpy.ravel with "
                                                     r"order='K'.*view or a copy.*\n  at .*`y\[0\] = 1.0`"):
        tpe.export(model, EXAMPLE.copy(), dynamic_shapes=SPEC)

    def into_base(x):
        y = x.ravel(order="A")   # y's elements would follow x's layout: not followed
        x[0, 0] = 1.0
        return y * 1.0

    with pytest.raises(tpe.UnsupportedOpError, match=r"write into the base of the result of numpy.ravel with "
                                                     r"order='A'.*\n  at .*`x\[0, 0\] = 1.0`"):
        tpe.export(into_base, EXAMPLE.copy(), dynamic_shapes=SPEC)


def test_reading_a_possible_view_adds_no_node():
    def model(x):
        return x.reshape(-1) * 2.0

    ep = tpe.export(model, EXAMPLE.copy(), dynamic_shapes=SPEC)
    assert "is_view" not in ep.graph_module.code
    assert [s.kind for s in ep.graph_signature.output_specs] == [OutputKind.USER_OUTPUT]


# -- np.ascontiguousarray / np.asarray(order=...) / np.asfortranarray --------------------------------
# capture hands these to the registered ops (numpy.ascontiguousarray, numpy.asfortranarray),
# never the traced argument itself: numpy makes a view or a copy by the argument's layout.


def ascontiguous_transpose(x):
    y = np.ascontiguousarray(x.T)   # a copy for n > 1, a view at n = 1
    y[0] = 7.0
    return y


def ascontiguous_written_through_transpose(x):
    y = np.ascontiguousarray(x.T)
    y.T[0] = 7.0
    return y


def asarray_order_c(x):
    y = np.asarray(x.T, order="C")
    y[0] = 7.0
    return y


def asfortran(x):
    y = np.asfortranarray(x)        # a view of a Fortran-order x (or of one row)
    y[0] = 7.0
    return y


@pytest.mark.parametrize("model", [ascontiguous_transpose, ascontiguous_written_through_transpose,
                                   asarray_order_c, asfortran], ids=lambda m: m.__name__)
def test_layout_conversions_decide_at_run_time(model):
    ep = tpe.export(model, EXAMPLE.copy(), dynamic_shapes=SPEC)
    check_everywhere(model, ep.module(), sizes=(1, 2, 8, 64))


def test_draft_export_of_ascontiguousarray_leaves_the_input_alone():
    report = tpe.draft_export(ascontiguous_transpose, EXAMPLE.copy(), dynamic_shapes=SPEC)
    assert report.successful(), str(report)
    check_everywhere(ascontiguous_transpose, report.exported_program.module(), sizes=(1, 2, 8, 64))


# -- layouts generated code must keep (graph/codegen.py) -----------------------------------------
# tpe.is_view asks numpy about the program's own arrays, so an operand must have eager's memory
# layout.  Two codegen rewrites can give a result another layout than eager's fresh array: a
# result written into a dead buffer (``np.add(exp, exp_1, out=exp)`` takes exp's Fortran order
# where eager's ``np.add(b, a)`` of mixed operands is C order), and an operator expression whose
# temporary numpy reuses (``a + np.exp(x)``: elided into the Fortran-order temporary; eager's
# named operands give C order).  Neither may touch a node whose value reaches a layout-observing
# op (``OpDef.observes_layout``).
def mixed_layout_reused_buffer(x, y):
    b = np.exp(x)              # Fortran order for a Fortran-order x
    a = np.exp(y)              # C order
    z = y.sum()                # a statement between: no operator expression
    c = np.add(b, a)           # eager: a new C-order array; generated code may write it into b
    r = c.reshape(-1)          # eager: a view of c
    r[0] = -50.0
    return c * 1.0, z          # elementwise: values that do not depend on the layout


def mixed_layout_operator_expression(x, y):
    a = y * 1.0                # C order
    b = np.exp(x)              # Fortran order for a Fortran-order x
    c = a + b                  # eager: named operands, a new C-order array
    r = c.reshape(-1)
    r[0] = -50.0
    return c * 1.0


@pytest.mark.parametrize("model,rows", [(mixed_layout_reused_buffer, 8), (mixed_layout_operator_expression, 1000)],
                         ids=["reused-buffer", "operator-expression"])
def test_generated_code_keeps_the_layout_the_runtime_check_observes(model, rows):
    n = Dim("n", max=4096)
    ex = np.ones((8, 300)), np.ones((8, 300))
    ep = tpe.export(model, *ex, dynamic_shapes={"x": {0: n}, "y": {0: n}})
    x = np.asfortranarray(np.linspace(0.0, 1.0, rows * 300).reshape(rows, 300))
    y = np.linspace(1.0, 2.0, rows * 300).reshape(rows, 300)
    want = model(x.copy(order="K"), y.copy())
    got = ep.module()(x.copy(order="K"), y.copy())
    assert (want[0] if isinstance(want, tuple) else want)[0, 0] == -50.0
    assert_same(want, got)


def array_copy_none_fortran(x):
    y = np.array(x, copy=None, order="F")   # numpy: x itself when x is Fortran-ordered, else a copy
    y[0, 0] = 99.0
    return y * 1.0, x.sum()


def test_np_array_with_copy_none_is_a_possible_view():
    ep = tpe.export(array_copy_none_fortran, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim("b", max=16)}})
    for b in (1, 2, 3, 16):
        for make in (lambda a: a, np.asfortranarray, lambda a: np.ascontiguousarray(a)):
            x = make(np.arange(b * 4, dtype=np.float64).reshape(b, 4))
            xe, xp = x.copy(order="K"), x.copy(order="K")
            (want, ws), (got, gs) = array_copy_none_fortran(xe), ep.module()(xp)
            np.testing.assert_array_equal(got, want)
            assert gs == ws
            np.testing.assert_array_equal(xp, xe)
