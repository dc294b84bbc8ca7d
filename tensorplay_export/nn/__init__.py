"""tensorplay_export.nn: a torch-like module system and layers over numpy arrays."""

from tensorplay_export.nn.module import IncompatibleKeys, Module, Parameter

__all__ = ["Module", "Parameter", "IncompatibleKeys"]
