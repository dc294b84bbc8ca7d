"""The opset: one registry (``registry.py``) and one module per op family.

Import :func:`get_op` / :func:`register_op` from ``tensorplay_export.ops.registry``.
"""
from .registry import ArrayInfo, OpDef, all_ops, get_op, register_op

__all__ = ["ArrayInfo", "OpDef", "all_ops", "get_op", "register_op"]
