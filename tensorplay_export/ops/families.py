"""Imports every op family module so that each registers its ops (loaded lazily by the registry)."""
from __future__ import annotations

import importlib

FAMILIES = ("elementwise", "reduce", "movement", "indexing", "linalg", "creation", "misc", "scatter", "select",
            "grids", "signal", "stats")

# nn.functional composites register their own rules (owned by the nn package).
EXTERNAL = ("tensorplay_export.nn._composites",)

for _name in FAMILIES:
    try:
        importlib.import_module(f"{__package__}.{_name}")
    except ModuleNotFoundError as err:  # a family not written yet must not break the others
        if err.name != f"{__package__}.{_name}":
            raise

for _name in EXTERNAL:
    try:
        importlib.import_module(_name)
    except ModuleNotFoundError as err:
        if err.name != _name:
            raise
