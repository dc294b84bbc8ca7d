"""tensorplay_export: capture numpy models into programs with a proven dynamic-shape contract.

The flat public API of ``tensorplay.export`` (see the seed API reference):
the functions ``export``, ``export_for_training``, ``draft_export``, ``dims``,
``refine_dynamic_shapes_from_suggested_fixes``, ``register_dataclass``,
``save``, ``load``, ``package_pt2``, ``load_pt2``, ``default_decompositions``,
``unflatten``, ``check`` (a fact about sizes in model code, as ``torch._check``); the dynamic-shape classes (``Dim``, ``DerivedDim``,
``ShapesCollection``, ``AdditionalInputs``, ``Constraint``,
``EqualityConstraint``); the program classes (``ExportedProgram``,
``ExportGraphSignature``, ``GraphSignature``, the input/output specs and
argument records, module-call records); the errors (``InputDtypeError`` included); ``ValueRange``; and the
model-side package ``nn``.

Names that need sympy or z3 are imported on first access (see ``_LAZY``).
"""
from __future__ import annotations

import sys as _sys
import types as _types

# The load-and-run path (``load``/``load_pt2``, ``ExportedProgram.module()``) imports neither
# sympy nor z3 (cold start, issue 19): names whose modules need them (capture, the solver,
# the face) are imported on first access through ``__getattr__`` below; an import error
# there surfaces on that first access (``from tensorplay_export import *`` and
# ``dir()`` list them all).
from .errors import (ArchiveError, CaptureError, ConstraintsExceededError, ConstraintViolationError,
                     DataDependentError, InputDtypeError, UnsupportedOpError)
from .records import ValueRange
from .program.signature import (
    ConstantArgument, CustomObjArgument, ExportBackwardSignature, ExportGraphSignature, GraphSignature,
    InputKind, InputSpec, ModuleCallEntry, ModuleCallSignature, OutputKind, OutputSpec, SymBoolArgument,
    SymFloatArgument, SymIntArgument, TensorArgument, TokenArgument,
)
from .graph.codegen import GraphModule
from .program.exported import ExportedProgram
from .pytree import register_dataclass
from .serde import PT2ArchiveContents, WeightType, load, load_pt2, package_pt2, save

# name -> module (relative to this package) that defines it, imported on first access
_LAZY = {
    **dict.fromkeys(("AdditionalInputs", "Constraint", "DerivedDim", "Dim", "EqualityConstraint",
                     "ShapesCollection", "dims"), ".specs.dims"),
    "refine_dynamic_shapes_from_suggested_fixes": ".specs.refine",
    "export": ".export", "export_for_training": ".export",
    "DraftExportReport": ".face.draft", "draft_export": ".face.draft",
    "CustomDecompTable": ".program.decompositions.table",
    "default_decompositions": ".program.decompositions.table",
    "FlatArgsAdapter": ".program.unflatten", "UnflattenedModule": ".program.unflatten",
    "unflatten": ".program.unflatten",
    "ComposedContract": ".program.compose", "CompositionError": ".program.compose",
    "compose": ".program.compose",
    "check": ".capture.facts",
}


class _Package(_types.ModuleType):
    """This package's module type: the function ``export`` keeps its name.

    Importing the submodule ``tensorplay_export.export`` for the first time makes the
    import system set the package attribute ``export`` to that submodule; with the function
    imported lazily nothing would set it back (``tpe.export(...)`` would call a module).
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "export" and isinstance(value, _types.ModuleType):
            value = value.export
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    """Import a public name whose module needs sympy or z3 on its first access (PEP 562)."""
    if name == "nn":
        import importlib

        return importlib.import_module(".nn", __name__)
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # later reads skip this hook
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | {"nn"})


__all__ = sorted(
    [
        "ArchiveError", "CaptureError", "ConstraintsExceededError", "ConstraintViolationError",
        "DataDependentError", "UnsupportedOpError", "InputDtypeError", "ValueRange",
        "ConstantArgument", "CustomObjArgument", "ExportBackwardSignature", "ExportGraphSignature",
        "GraphSignature", "InputKind", "InputSpec", "ModuleCallEntry", "ModuleCallSignature", "OutputKind",
        "OutputSpec", "SymBoolArgument", "SymFloatArgument", "SymIntArgument", "TensorArgument",
        "TokenArgument", "GraphModule", "ExportedProgram", "AdditionalInputs", "Constraint", "DerivedDim",
        "Dim", "EqualityConstraint", "ShapesCollection", "dims", "refine_dynamic_shapes_from_suggested_fixes",
        "register_dataclass", "nn", "check",
    ]
    + ["export", "export_for_training", "draft_export", "DraftExportReport", "save", "load", "package_pt2",
       "load_pt2", "PT2ArchiveContents", "WeightType", "default_decompositions", "CustomDecompTable",
       "unflatten", "UnflattenedModule", "FlatArgsAdapter", "compose", "ComposedContract", "CompositionError"]
)
