"""Serialization: size expressions, program JSON and the zip archive.

The archive format is specified in the docstring of :mod:`.archive`.
``ExportedProgram.serialize``/``deserialize`` delegate to
:func:`serialize_program` / :func:`deserialize_program`.
"""
from .archive import (FORMAT_MARKER, FORMAT_VERSION, PT2ArchiveContents, Runner, load, load_pt2,
                      package_pt2, save)
from .program_json import SerializedArtifact, WeightType, serialize_program
from .program_load import deserialize_program

__all__ = ["save", "load", "package_pt2", "load_pt2", "PT2ArchiveContents", "WeightType", "Runner",
           "SerializedArtifact", "serialize_program", "deserialize_program", "FORMAT_MARKER",
           "FORMAT_VERSION"]
