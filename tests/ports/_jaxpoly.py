"""Harness for the ports of jax's shape-polymorphism scenarios onto tensorplay_export.

A scenario is a numpy model, a maker of its inputs from named sizes, a ``dynamic_shapes``
spec (built fresh per test: ``Dim`` objects are cheap), the example sizes, sizes inside
the contract (the program must equal eager numpy there: values, shape and dtype) and
sizes outside it (the program must refuse them with ``ConstraintsExceededError`` naming
the input axis).  ``roundtrip=True`` also saves the program, loads it back and checks
the loaded program the same way.
"""
from __future__ import annotations

import copy
import io
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.errors import ConstraintsExceededError


def rand(shape, dtype=np.float32, seed: int = 0) -> np.ndarray:
    """Values that differ per element and per shape, exact in float32 (multiples of 1/8)."""
    rng = np.random.default_rng(seed + 7919 * len(shape) + sum(int(s) for s in shape))
    vals = rng.integers(-40, 40, size=shape)
    if np.issubdtype(np.dtype(dtype), np.floating):
        return (vals / 8).astype(dtype)
    return vals.astype(dtype)


@dataclass
class Case:
    """One ported scenario: see the module docstring."""

    id: str
    fn: Callable[..., Any]
    make: Callable[..., tuple]
    spec: Callable[[], Any]
    example: dict
    ok: list = field(default_factory=list)
    bad: list = field(default_factory=list)
    roundtrip: bool = False
    exact: bool = True

    def __repr__(self) -> str:  # pytest ids
        return self.id


def assert_same(got, want, *, exact: bool = True, where: str = "") -> None:
    """Structure, shape, dtype and values of ``got`` equal eager's ``want``."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{where}: expected a sequence, got {type(got)}"
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, exact=exact, where=f"{where}[{i}]")
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, f"{where}: shape {g.shape} != eager {w.shape}"
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != eager {w.dtype}"
    if exact:
        np.testing.assert_array_equal(g, w, err_msg=where)
    else:
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=where)


def check_program(run, case: Case, label: str) -> None:
    for sizes in [case.example, *case.ok]:
        args = case.make(**sizes)
        want = case.fn(*copy.deepcopy(args))
        got = run(*copy.deepcopy(args))
        assert_same(got, want, exact=case.exact, where=f"{label} at {sizes}")
    for sizes in case.bad:
        with pytest.raises(ConstraintsExceededError, match=r"shape\[\d+\] = \d+|must|outside|expected"):
            run(*case.make(**sizes))


def ranges(ep) -> dict:
    return {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()}


def run_case(case: Case):
    """Export at the example, check the program inside and outside the contract."""
    ep = tpe.export(case.fn, *case.make(**case.example), dynamic_shapes=case.spec())
    check_program(ep.module(), case, "program")
    if case.roundtrip:
        buf = io.BytesIO()
        tpe.save(ep, buf)
        buf.seek(0)
        loaded = tpe.load(buf)
        assert ranges(loaded) == ranges(ep)
        check_program(loaded.module(), case, "loaded program")
    return ep


def params(cases, xfails: dict[str, str] | None = None):
    """pytest params of ``cases``; ids in ``xfails`` are strict xfails with that reason."""
    xfails = xfails or {}
    out = []
    for c in cases:
        marks = [pytest.mark.xfail(strict=True, reason=xfails[c.id])] if c.id in xfails else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    unknown = set(xfails) - {c.id for c in cases}
    assert not unknown, f"xfail ids without a case: {unknown}"
    return out
