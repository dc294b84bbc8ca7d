"""One solver budget for a whole command: `diff`, `contract` and `compose` share `--solver-budget`
seconds over all their questions (each query keeps its own timeout), and what the budget leaves
undecided is reported as undecided, never passed.  A budget too small for anything (a
microsecond) is spent before the first question, so these tests do not depend on timing."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from solver import ShapeSolver, SolverBudget, solver_budget
from tensorplay_export import Dim
from tensorplay_export.face.cli import main
from tensorplay_export.face.contract import Contract, diff_contracts

SPENT = 1e-6  # seconds: over before the first question is asked


def test_a_spent_budget_answers_unknown_and_caches_nothing():
    s = ShapeSolver(timeout_ms=2000)
    n = s.declare("n", upper=8)
    with solver_budget(SPENT) as budget:
        time.sleep(0.001)
        verdict = s.implies(n <= 10)
        assert verdict.status == "unknown" and verdict.via == "budget"
        assert verdict.reason == "the solver budget of 1e-06 s ran out"
        assert budget.refused == 1
    assert s.implies(n <= 10).status == "proved"  # decided once no spent budget is active


def test_without_a_budget_nothing_changes():
    s = ShapeSolver()
    n = s.declare("n", upper=8)
    assert s.implies(n <= 10).proved and s.implies(n <= 4).refuted


def test_an_inner_budget_never_outlasts_the_outer_one():
    with solver_budget(SPENT) as outer:
        time.sleep(0.001)
        with solver_budget(3600) as inner:
            assert outer.spent and inner.spent


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), "10", True])
def test_a_budget_is_a_positive_number_of_seconds(seconds):
    with pytest.raises(ValueError, match="positive number of seconds"):
        SolverBudget(seconds)


def _contracts():
    a, b = (sympy.Symbol(v, integer=True, positive=True) for v in "ab")
    ranges = {a: (1, 64), b: (1, 64)}
    shape = (a, b)
    hard = sympy.Eq(sympy.Mod(a ** 3 + 5 * a * b ** 2 + 11, 101), 17)
    old = Contract([("x", "float32", shape)], dict(ranges), [], [(shape, "float32")])
    new = Contract([("x", "float32", shape)], dict(ranges), [hard], [(shape, "float32")])
    return old, new


def test_diff_under_a_spent_budget_is_undecided_and_breaking():
    old, new = _contracts()
    with solver_budget(SPENT):
        time.sleep(0.001)
        d = diff_contracts(old, new)
    assert d.narrowed is None and d.breaking
    assert d.undecided[0] == "whether NEW admits every size OLD admits"
    (guard,) = [c for c in d.changes if c.undecided]
    assert guard.what.startswith("new relation/guard: ") and str(guard).startswith("[undecided] ")
    assert "the solver budget ran out with 2 question(s) undecided" in str(d)
    assert d.to_json()["undecided"] == d.undecided


def test_diff_with_time_decides_the_same_pair():
    old, new = _contracts()
    d = diff_contracts(new, old)  # dropping the guard admits more: decided, not breaking
    assert d.narrowed is False and not d.breaking and not d.undecided


def _model(x):
    return x * 2


@pytest.fixture
def archives(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = np.ones((4, 3), np.float32)
    for name, hi in (("narrow", 32), ("wide", 64)):
        tpe.save(tpe.export(_model, x, dynamic_shapes={"x": {0: Dim("n", max=hi)}}), f"{name}.pt2")
    return tmp_path


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_cli_reports_what_the_budget_left_undecided_and_fails(archives, capsys):
    code, out, _ = _cli(capsys, "diff", "wide.pt2", "narrow.pt2")
    assert code == 1 and "narrowed max 64 -> 32" in out and "undecided" not in out
    code, out, _ = _cli(capsys, "diff", "narrow.pt2", "wide.pt2", "--solver-budget", str(SPENT))
    assert code == 1
    assert out.startswith("could not decide whether NEW admits every size OLD admits")
    assert "    whether NEW admits every size OLD admits" in out
    assert out.rstrip().endswith("this is not a pass: raise the budget, e.g. --solver-budget 4e-06")
    code, out, _ = _cli(capsys, "diff", "narrow.pt2", "wide.pt2", "--solver-budget", str(SPENT), "--json")
    data = json.loads(out)
    assert code == 1 and data["exit_status"] == 1 and data["breaking"] and data["solver_budget"] == SPENT
    assert data["undecided"] == ["whether NEW admits every size OLD admits"]
    code, out, _ = _cli(capsys, "diff", "narrow.pt2", "wide.pt2", "--solver-budget", "60")
    assert code == 0 and "undecided" not in out


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf", "nan"])
def test_a_bad_budget_is_a_usage_error(archives, capsys, value):
    code, _out, err = _cli(capsys, "diff", "narrow.pt2", "wide.pt2", "--solver-budget", value)
    assert code == 2 and "--solver-budget: a positive number of seconds expected" in err


def test_compose_under_a_spent_budget_is_undecided_and_says_so(archives, capsys):
    code, out, _ = _cli(capsys, "compose", "narrow.pt2", "wide.pt2")
    assert code == 0 and out.startswith("proved")
    code, out, _ = _cli(capsys, "compose", "narrow.pt2", "wide.pt2", "--solver-budget", str(SPENT))
    assert code == 1 and out.startswith("undecided")
    assert "the solver budget of 1e-06 s ran out" in out and "--solver-budget" in out.splitlines()[-1]


def test_contract_under_a_spent_budget_still_shows_the_contract(archives, capsys):
    code, out, err = _cli(capsys, "contract", "wide.pt2", "--solver-budget", str(SPENT))
    assert code == 0 and "n in [1, 64]" in out
    assert err.startswith("note: the solver budget of 1e-06 s ran out: some expressions are shown unsimplified")


# -- the whole command's deadline: what runs between solver queries (sympy) has no budget -----------
def test_the_deadline_interrupts_pure_python_work():
    from tensorplay_export.face.cli import CommandDeadline, _deadline

    start = time.perf_counter()
    with pytest.raises(CommandDeadline):
        with _deadline(0.2):
            while True:  # sympy building a Max of hundreds of terms, in the hostile archive's case
                pass
    assert time.perf_counter() - start < 30
    with _deadline(5):  # a command within its time is untouched, and the timer is gone after it
        pass
    import signal
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("command, status", [("diff", 1), ("contract", 2)])
def test_a_command_past_its_deadline_says_so_and_is_no_pass(archives, capsys, monkeypatch, command, status):
    from tensorplay_export.face import cli

    def spin(opts):
        while True:
            pass
    monkeypatch.setattr(cli, f"cmd_{command}", spin)
    args = [command, "narrow.pt2"] + (["wide.pt2"] if command == "diff" else [])
    code, out, err = _cli(capsys, *args, "--solver-budget", "0.05", "--json")
    assert code == status
    assert json.loads(out) == {"error": json.loads(out)["error"], "exit_status": status}
    assert "stopped after 5.1 s" in err and "this is not a pass: raise the budget" in err
