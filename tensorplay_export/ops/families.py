"""Imports every op family module so that each registers its ops (loaded lazily by the registry).

nn.functional's composite ops are registered by the nn package, which capture imports: ops never imports nn.
"""
from __future__ import annotations

import importlib

FAMILIES = ("elementwise", "reduce", "movement", "indexing", "linalg", "creation", "misc", "checks", "scatter",
            "select", "grids", "signal", "stats", "random", "sizes", "fft", "matrix", "lib", "aliasing",
            "sets", "linalg_namespace", "numpy_tail", "polynomial")

for _name in FAMILIES:
    importlib.import_module(f"{__package__}.{_name}")
