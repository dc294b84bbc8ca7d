"""Import cost (issue 19, goal 4): the modules on the load-and-run path import without sympy.

Each check runs in a fresh interpreter where ``import sympy`` raises (``sys.modules["sympy"]
= None``), so any module that imports it at import time, or evaluates a ``sympy.X`` there
(a default argument, a dict keyed by sympy classes), fails to import.  The package's
``__init__`` is skipped (its module object is made by hand) because it imports the archive
decoder, whose size expressions are still sympy's; every other module is imported for real.
``records.sympy`` (the module imported on first attribute read) is what they use instead.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "tensorplay_export"

# modules that may import sympy, and why; every other module of the package must not
MAY_IMPORT_SYMPY = {
    # export-time layers: capture, the solver front end and the face are off the load path
    "tensorplay_export.capture": "capture", "tensorplay_export.face": "face",
    "tensorplay_export.violations": "solver front end", "tensorplay_export.export": "capture",
    "tensorplay_export.testing": "face", "tensorplay_export.__main__": "face",
    # import the solver (z3) or capture: export, refine, unflatten and decompositions only
    "tensorplay_export.specs.refine": "solver", "tensorplay_export.program.unflatten": "solver",
    "tensorplay_export.program.input_checks": "solver", "tensorplay_export.program.compose": "solver",
    "tensorplay_export.program.eager_check": "capture",
    "tensorplay_export.program.retrace": "capture (imported only while a capture runs)", "tensorplay_export.program.decompositions": "capture",
    # builds programs from capture results (export time only)
    "tensorplay_export.program.build": "capture results",
}


def _all_modules() -> list[str]:
    names = []
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def _checked_modules() -> list[str]:
    def allowed(name: str) -> bool:
        return name == "tensorplay_export" or any(name == m or name.startswith(m + ".") for m in MAY_IMPORT_SYMPY)

    return [m for m in _all_modules() if not allowed(m)]


_PRELUDE = """
import json, sys, types
sys.modules["sympy"] = None  # any `import sympy` now raises ImportError
package = types.ModuleType("tensorplay_export")
package.__path__ = [sys.argv[1]]
sys.modules["tensorplay_export"] = package
"""


def _run(body: str, *args: str) -> dict:
    code = _PRELUDE + textwrap.dedent(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, str(PKG), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_list_of_modules_is_real():
    modules = _all_modules()
    checked = _checked_modules()
    # the load path's modules are among the checked ones; the allowed list names real modules
    for name in ("tensorplay_export.ops.registry", "tensorplay_export.nn.functional", "tensorplay_export.graph.ir",
                 "tensorplay_export.program.call_binding", "tensorplay_export.specs.dims", "tensorplay_export.pytree"):
        assert name in checked
    for name in MAY_IMPORT_SYMPY:
        assert name in modules, f"{name} is not a module of the package"


def test_load_path_modules_import_without_sympy():
    got = _run("""
        import importlib, traceback
        failed = {}
        for name in sys.argv[2:]:
            try:
                importlib.import_module(name)
            except ImportError as err:
                failed[name] = traceback.format_exception_only(type(err), err)[-1].strip()
        ops = 0
        if not failed:
            from tensorplay_export.ops.registry import all_ops
            ops = len(all_ops())
        print(json.dumps({"failed": failed, "ops": ops, "sympy": sys.modules["sympy"] is None}))
    """, *_checked_modules())
    assert got["failed"] == {}
    assert got["ops"] > 100  # every op family module was imported, not just the registry
    assert got["sympy"]  # still blocked: nothing replaced the entry


def test_running_a_graph_needs_no_sympy():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = _run("""
        import numpy as np
        from tensorplay_export.graph.interpreter import Interpreter
        from tensorplay_export.graph.ir import Graph, iter_exprs, map_exprs
        from tensorplay_export.ops.ctx import as_dim, is_static
        g = Graph()
        x = g.placeholder("x", meta={"shape": (3, 4)})
        y = g.call_function("numpy.add", (x, 1.5), meta={"shape": (3, 4)})
        r = g.call_function("numpy.ndarray.reshape", (y, (6, 2)), meta={"shape": (6, 2)})
        s = g.call_function("numpy.sum", (r,), {"axis": 0}, meta={"shape": (2,)})
        g.output([s, r])
        g.lint()
        text = str(g)
        arg = ((3, [4, slice(0, 2, None)]), {"k": 5})
        out = Interpreter(g).run(np.asarray(json.loads(sys.argv[2]), np.float32))
        print(json.dumps({"sum": out[0].tolist(), "shape": list(out[1].shape), "text": "reshape" in text,
                          "exprs": list(iter_exprs(arg)), "same": map_exprs(arg, str) == arg,
                          "static": [is_static(4), is_static(2.5), as_dim(7)],
                          "sympy": sys.modules["sympy"] is None}))
    """, json.dumps(x.tolist()))
    want = (x + 1.5).reshape(6, 2)
    assert got["sum"] == want.sum(axis=0).tolist() and got["shape"] == [6, 2]
    assert got["text"] and got["exprs"] == [] and got["same"]
    assert got["static"] == [True, False, 7]
    assert got["sympy"]


def test_records_sympy_imports_on_first_read():
    code = textwrap.dedent("""
        import json, sys
        from tensorplay_export.records import is_sympy, sympy, sympy_class
        before = ["sympy" in sys.modules, is_sympy(3), sympy_class().__name__]
        three = sympy.Integer(3)
        after = ["sympy" in sys.modules, is_sympy(three), is_sympy(3), sympy_class() is sys.modules["sympy"].Basic,
                 isinstance(sympy.Symbol("n"), sympy_class("Symbol")), int(three) + 1]
        print(json.dumps({"before": before, "after": after}))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # records alone (the package __init__ skipped, as above, since it imports sympy today)
    done = subprocess.run([sys.executable, "-c", _PRELUDE.replace('sys.modules["sympy"] = None', "") + code,
                           str(PKG)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["before"] == [False, False, "_NoSympyClass"]
    assert got["after"] == [True, True, False, True, True, 4]
