"""The package layout: a small root, one folder per layer, imports pointing one way.

Every import counts, module-level or inside a function.  The parts are the first
folder under ``tensorplay_export/`` (or the root module itself).  The one circle
allowed is the ``ExportedProgram`` facade: ``program`` imports ``serde`` lazily for
``serialize``/``deserialize`` while ``serde`` builds programs.
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "tensorplay_export"
SOLVER = PKG.parent / "solver"
LAYERS = ("specs", "capture", "ops", "graph", "program", "serde", "nn", "face")
ROOT_MODULES = {"__init__.py", "__main__.py", "errors.py", "records.py", "pytree.py", "export.py",
                "violations.py", "testing.py"}
FACADE = {("program", "serde")}


def _module(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of everything ``path`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    mod = _module(path)
    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] + ([node.module] if node.module else [])
                name = ".".join(base)
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return out


def _part(name: str) -> str | None:
    bits = name.split(".")
    if bits[0] != "tensorplay_export" or len(bits) == 1:
        return None
    return bits[1].removesuffix(".py")


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in PKG.rglob("*.py"):
        src = _part(_module(path)) if path.parent != PKG else path.stem
        if src in (None, "__init__"):
            continue
        for name in _imports(path):
            dst = _part(name)
            if dst and dst != src and dst != "__init__" and ((PKG / dst).is_dir() or (PKG / f"{dst}.py").exists()):
                edges.setdefault(src, set()).add(dst)
    return edges


def _reaches(edges: dict[str, set[str]], start: str, goal: str, skip: set) -> bool:
    seen, todo = set(), [start]
    while todo:
        v = todo.pop()
        for w in edges.get(v, ()):
            if (v, w) in skip or w in seen:
                continue
            if w == goal:
                return True
            seen.add(w)
            todo.append(w)
    return False


def test_small_root_and_one_folder_per_layer():
    assert {p.name for p in PKG.glob("*.py")} == ROOT_MODULES
    assert [d for d in LAYERS if not (PKG / d / "__init__.py").is_file()] == []


def test_no_import_circle_between_parts():
    edges = _edges()
    circles = sorted((a, b) for a in edges for b in edges[a]
                     if (a, b) not in FACADE and _reaches(edges, b, a, FACADE))
    assert circles == [], f"import circles between parts (edge, and a way back): {circles}"


def test_the_arrows_of_the_design():
    edges = _edges()
    assert edges.get("ops", set()) <= {"errors", "records"}, "ops imports only errors and records"
    entries = {"face", "__main__", "testing"}  # the face itself and the users' entry points into it
    assert "face" not in set().union(*(edges.get(p, set()) for p in edges if p not in entries)), \
        "the core never imports the face"
    assert "export" not in edges.get("program", set()), "program (and its decompositions) never imports export"
    assert "nn" not in edges.get("ops", set())
    for path in SOLVER.rglob("*.py"):
        assert not any(n.startswith("tensorplay_export") for n in _imports(path)), f"{path.name} imports the package"


def test_the_checker_sees_a_planted_circle(tmp_path):
    """The circle search is not vacuous: two parts importing each other are found."""
    edges = {"a": {"b"}, "b": {"a", "c"}, "c": set()}
    assert _reaches(edges, "b", "a", set()) and not _reaches(edges, "c", "a", set())
    assert not _reaches(edges, "b", "a", {("b", "a")})
