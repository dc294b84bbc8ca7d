"""Expect-file of the public signatures of the graph and program layers (and the check ops).

A change here is an API change: update tests/data/program_api.expect deliberately
(the failure message prints the new text).
"""
import enum
import inspect
from pathlib import Path

from tensorplay_export.graph import codegen, interpreter, ir as graph, printing
from tensorplay_export.ops import checks
from tensorplay_export.program import build, exported as program, input_checks, signature

EXPECT = Path(__file__).parent / "data" / "program_api.expect"


def _render() -> str:
    lines = []
    for module in (graph, codegen, interpreter, printing, checks, input_checks, signature, build, program):
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for name in sorted(names):
            obj = getattr(module, name)
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj):
                if issubclass(obj, enum.Enum):
                    lines.append(f"{module.__name__}.{name}: enum {[m.name for m in obj]}")
                    continue
                try:
                    lines.append(f"{module.__name__}.{name}{inspect.signature(obj)}")
                except (TypeError, ValueError):
                    lines.append(f"{module.__name__}.{name}")
                for attr, member in sorted(vars(obj).items()):
                    if attr.startswith("_") and attr not in ("__call__",):
                        continue
                    if isinstance(member, property):
                        lines.append(f"    .{attr} (property)")
                    elif isinstance(member, (staticmethod, classmethod)):
                        lines.append(f"    .{attr}{inspect.signature(member.__func__)} ({type(member).__name__})")
                    elif inspect.isfunction(member):
                        lines.append(f"    .{attr}{inspect.signature(member)}")
            elif inspect.isfunction(obj):
                lines.append(f"{module.__name__}.{name}{inspect.signature(obj)}")
    return "\n".join(lines) + "\n"


def test_public_signatures_match_expect_file():
    text = _render()
    assert EXPECT.read_text() == text, f"public signatures changed; new text:\n{text}"
