"""Contract soundness of every acceptance case under randomly drawn sizes.

For each ``case_*.py`` of the shared acceptance folder (imported by path, as
``check_cases.py`` does): export it (a violation case after one refine), then
draw sizes inside and outside the case's expected contract (0, 1, the grid's
boundaries and their neighbours, random values) and require

- sizes ``EXPECT["admits"]`` accepts: ``module()`` runs and equals eager numpy
  (same structure, shapes and dtypes, ``allclose``), also after save/load;
- every other size: ``ConstraintsExceededError`` -- never a numpy error, a
  wrong shape or a silent result.
"""
from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import tensorplay_export as tpe

from _rel_util import NO_CASES, assert_same, case_files, case_params, load_case, rel_settings, run_eager

CASES = case_files()
_PROGRAMS: dict[Path, tuple] = {}


def exported(path: Path):
    """(case module, program, loaded program) for a case; None program for data-dependent cases."""
    if path in _PROGRAMS:
        return _PROGRAMS[path]
    case = load_case(path)
    args, kwargs = case.make_inputs(**case.EXAMPLE)
    spec = case.dynamic_shapes()
    outcome = case.EXPECT["outcome"]
    if outcome == "ok":
        ep = tpe.export(case.model, *args, dynamic_shapes=spec, **kwargs)
    elif outcome == "violation":
        with pytest.raises(tpe.ConstraintViolationError) as info:
            tpe.export(case.model, *args, dynamic_shapes=spec, **kwargs)
        refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
        ep = tpe.export(case.model, *args, dynamic_shapes=refined, **kwargs)
    else:
        ep = None
    loaded = None
    if ep is not None:
        buf = io.BytesIO()
        tpe.save(ep, buf)
        buf.seek(0)
        loaded = tpe.load(buf)
    _PROGRAMS[path] = (case, ep, loaded)
    return _PROGRAMS[path]


def size_pool(values: list[int]) -> list[int]:
    """0, 1, 2, every grid value and its neighbours, and midpoints between grid values."""
    pool = {0, 1, 2}
    ordered = sorted(set(values))
    for v in ordered:
        pool |= {v - 1, v, v + 1}
    for a, b in zip(ordered, ordered[1:]):
        pool.add((a + b) // 2)
    return sorted(p for p in pool if p >= 0)


def split_pool(case) -> tuple[list[dict], list[dict]]:
    """Every combination of the per-dim pools, split into admitted and refused size dicts."""
    grid = case.EXPECT["grid"]
    names = list(grid)
    pools = [size_pool(grid[n]) for n in names]
    admitted, refused = [], []
    for combo in itertools.product(*pools):
        sizes = dict(zip(names, combo))
        (admitted if case.EXPECT["admits"](**sizes) else refused).append(sizes)
    return admitted, refused


def sizes_strategy(case):
    grid = case.EXPECT["grid"]
    admitted, refused = split_pool(case)
    top = {n: 2 * max(v) + 2 for n, v in grid.items()}
    anywhere = st.fixed_dictionaries({n: st.integers(0, top[n]) for n in grid})
    parts = [anywhere]
    if admitted:
        parts.append(st.sampled_from(admitted))
    if refused:
        parts.append(st.sampled_from(refused))
    return st.one_of(*parts)


def undecided(case, sizes: dict) -> bool:
    """A size 0 where the case's grid never tries 0: its predicate was not written for it.

    (``case_auto_relation_kept`` admits ``rows == 2*cols``, which holds at 0/0, but AUTO dims
    are >= 1 by design.)  Such sizes may run or be refused; they must never fail otherwise.
    """
    grid = case.EXPECT["grid"]
    return any(v == 0 and 0 not in grid[n] for n, v in sizes.items())


def check_sizes(case, program, sizes: dict, label: str) -> None:
    args, kwargs = case.make_inputs(**sizes)
    admitted = case.EXPECT["admits"](**sizes)
    module = program.module()
    if admitted and undecided(case, sizes):
        want, err = run_eager(case.model, args, kwargs)
        try:
            got = module(*args, **kwargs)
        except tpe.ConstraintsExceededError:
            return
        assert err is None, f"{label} {sizes}: the program runs where eager raised {err!r}"
        assert_same(got, want, f"{label} {sizes}")
    elif admitted:
        want, err = run_eager(case.model, args, kwargs)
        assert err is None, f"{label} {sizes}: the case admits it but eager raised {err!r}"
        try:
            got = module(*args, **kwargs)
        except tpe.ConstraintsExceededError as refused:
            pytest.fail(f"{label} {sizes}: refused but the contract admits it: {refused}")
        assert_same(got, want, f"{label} {sizes}")
    else:
        try:
            got = module(*args, **kwargs)
        except tpe.ConstraintsExceededError:
            return
        except Exception as other:  # noqa: BLE001
            pytest.fail(f"{label} {sizes}: {type(other).__name__} instead of ConstraintsExceededError: {other}")
        pytest.fail(f"{label} {sizes}: accepted (output {type(got).__name__}) but the contract refuses it")


if not CASES:
    def test_acceptance_cases_present():
        pytest.skip(NO_CASES)
else:
    @pytest.mark.parametrize("path", case_params(CASES))
    def test_case_contract_under_random_sizes(path):
        case, ep, loaded = exported(path)
        if ep is None:
            pytest.skip(f"{path.name}: data-dependent case, export gives no program to check")

        @rel_settings(scale=1.5)
        @given(sizes=sizes_strategy(case))
        def prop(sizes):
            check_sizes(case, ep, sizes, "exported")
            check_sizes(case, loaded, sizes, "saved+loaded")

        prop()

    @pytest.mark.parametrize("path", case_params(CASES))
    def test_case_grid_boundaries_exhaustive(path):
        """Every pool combination (grid values, neighbours, 0/1/2) -- no randomness."""
        case, ep, _loaded = exported(path)
        if ep is None:
            pytest.skip(f"{path.name}: data-dependent case, export gives no program to check")
        admitted, refused = split_pool(case)
        for sizes in (admitted + refused)[:400]:
            check_sizes(case, ep, sizes, "exported")
