"""Helpers shared by the reliability suite: hypothesis profiles, case loading, eager comparison.

Profiles (registered on import, never loaded globally so other suites keep their own settings):

- ``ci`` (default): few examples per property, no deadline, derandomized so CI is reproducible;
  the whole ``tests/reliability`` folder runs in well under 3 minutes on 2 cores.
- ``nightly``: many examples, random seeds (hypothesis prints the seed of any failure);
  select it with ``TPE_HYPOTHESIS_PROFILE=nightly``.

Tests decorate each ``@given`` with :func:`rel_settings` (optionally scaling the example count),
which reads the selected profile.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, settings

PROFILE_ENV = "TPE_HYPOTHESIS_PROFILE"
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
             HealthCheck.function_scoped_fixture]
# The explain phase re-runs a failure hundreds of times to annotate lines; shrinking is enough here.
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)
settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, phases=_PHASES,
                          suppress_health_check=_SUPPRESS, print_blob=True, database=None)
settings.register_profile("nightly", max_examples=400, deadline=None, derandomize=False, phases=_PHASES,
                          suppress_health_check=_SUPPRESS, print_blob=True)


def profile_name() -> str:
    name = os.environ.get(PROFILE_ENV, "ci")
    if name not in ("ci", "nightly"):
        raise ValueError(f"{PROFILE_ENV}={name!r}: use 'ci' or 'nightly'")
    return name


def rel_settings(scale: float = 1.0, **overrides: Any) -> settings:
    """Settings of the selected profile with ``max_examples`` scaled by ``scale`` (at least 1)."""
    base = settings.get_profile(profile_name())
    n = max(1, int(round(base.max_examples * scale)))
    return settings(base, max_examples=n, **overrides)


# -- acceptance cases ---------------------------------------------------------------------------

from _shared import NO_CASES, NONDETERMINISTIC, SHARED_CASES, case_files, case_params, load_case  # noqa: F401  (one rule for the shared cases)


# -- eager comparison ---------------------------------------------------------------------------

def copy_tree(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(copy_tree(v) for v in value)
    return value


def leaves(value: Any) -> list:
    if isinstance(value, dict):
        return [a for k in value for a in leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in leaves(v)]
    return [np.asarray(value)]


def skeleton(value: Any) -> Any:
    if isinstance(value, dict):
        return ("dict", tuple((k, skeleton(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(skeleton(v) for v in value))
    return "leaf"


def assert_same(got: Any, want: Any, where: str) -> None:
    """Same structure, shapes and dtypes exactly; values allclose (rtol 1e-5, atol 1e-6)."""
    assert skeleton(got) == skeleton(want), f"{where}: output structure {skeleton(got)} vs eager {skeleton(want)}"
    for i, (x, y) in enumerate(zip(leaves(got), leaves(want))):
        assert x.shape == y.shape, f"{where}: output {i} shape {x.shape} vs eager {y.shape}"
        assert x.dtype == y.dtype, f"{where}: output {i} dtype {x.dtype} vs eager {y.dtype}"
        if x.dtype.kind in "OUSVb":
            assert np.array_equal(x, y), f"{where}: output {i} differs from eager"
        else:
            assert np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True), \
                f"{where}: output {i} differs from eager"


def run_eager(model: Any, args: tuple, kwargs: dict) -> tuple[Any, BaseException | None]:
    """The eager result on copies of the inputs, or the exception numpy raised."""
    try:
        with np.errstate(all="ignore"):
            return model(*copy_tree(args), **copy_tree(kwargs)), None
    except Exception as err:  # noqa: BLE001 - any eager failure is data for the caller
        return None, err
