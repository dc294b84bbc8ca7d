"""Serialization: size expressions, program JSON and the zip archive (see ``archive.py`` for the format)."""
