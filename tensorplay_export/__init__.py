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

Every name is imported plainly: an import error anywhere fails ``import tensorplay_export``.
"""
from __future__ import annotations

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
from .specs.dims import (
    AdditionalInputs, Constraint, DerivedDim, Dim, EqualityConstraint, ShapesCollection, dims,
)
from .specs.refine import refine_dynamic_shapes_from_suggested_fixes
from .pytree import register_dataclass
from . import nn

from .export import export, export_for_training
from .capture.facts import check
from .face.draft import DraftExportReport, draft_export
from .serde import PT2ArchiveContents, WeightType, load, load_pt2, package_pt2, save
from .program.decompositions.table import CustomDecompTable, default_decompositions
from .program.unflatten import FlatArgsAdapter, UnflattenedModule, unflatten
from .program.compose import ComposedContract, CompositionError, compose

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
