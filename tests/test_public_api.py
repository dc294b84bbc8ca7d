"""The flat public API: every seed name is exported."""
import inspect

import tensorplay_export as tpe

SEED_FUNCTIONS = ["default_decompositions", "dims", "draft_export", "export_for_training", "export", "load_pt2",
                  "load", "package_pt2", "refine_dynamic_shapes_from_suggested_fixes", "register_dataclass",
                  "save", "unflatten"]
SEED_CLASSES = ["AdditionalInputs", "ConstantArgument", "Constraint", "CustomDecompTable", "CustomObjArgument",
                "Dim", "EqualityConstraint", "ExportBackwardSignature", "ExportedProgram", "ExportGraphSignature",
                "FlatArgsAdapter", "GraphSignature", "InputKind", "InputSpec", "ModuleCallEntry",
                "ModuleCallSignature", "OutputKind", "OutputSpec", "PT2ArchiveContents", "ShapesCollection",
                "SymBoolArgument", "SymFloatArgument", "SymIntArgument", "TensorArgument", "TokenArgument",
                "UnflattenedModule", "WeightType"]
SEED_OTHER = ["DerivedDim", "ConstraintsExceededError"]
EXTRA = ["nn", "ConstraintViolationError", "DataDependentError", "UnsupportedOpError", "ArchiveError", "ValueRange"]

def test_seed_counts():
    assert len(SEED_FUNCTIONS) == 12 and len(SEED_CLASSES) == 27


def test_every_seed_name_is_exported():
    wanted = SEED_FUNCTIONS + SEED_CLASSES + SEED_OTHER + EXTRA
    missing = sorted(n for n in wanted if not hasattr(tpe, n))
    assert not missing, f"names the seed lists but the package lacks: {missing}"
    assert not [n for n in wanted if n not in tpe.__all__]


def test_kinds_of_present_names():
    for n in SEED_FUNCTIONS:
        if hasattr(tpe, n):
            assert callable(getattr(tpe, n)) and not inspect.isclass(getattr(tpe, n)), n
    for n in SEED_CLASSES:
        if hasattr(tpe, n):
            assert inspect.isclass(getattr(tpe, n)), n
    assert issubclass(tpe.ConstraintsExceededError, RuntimeError)
    assert issubclass(tpe.ConstraintViolationError, ValueError)
    assert issubclass(tpe.ArchiveError, ValueError)


def test_all_names_resolve():
    for n in tpe.__all__:
        assert hasattr(tpe, n), n


def test_input_dtype_error_is_public():
    from tensorplay_export.errors import InputDtypeError

    assert tpe.InputDtypeError is InputDtypeError and "InputDtypeError" in tpe.__all__
    assert issubclass(tpe.InputDtypeError, TypeError)
